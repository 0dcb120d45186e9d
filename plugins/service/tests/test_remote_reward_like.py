"""The Reward Service client is a ``RewardLike``: every member, every call the protocol promises."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_fixtures import CORE_TESTS, start_server

import rewardkit
from rewardkit.seam.protocols import RewardLike, protocol_gaps
from rewardkit_service.client import RemoteReward

CATALOG = "remote_fixtures:catalog"


def test_remote_reward_and_its_validation_reward_are_reward_like(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(CORE_TESTS))
    served = "\n".join(
        [
            f"rl.reward.catalog: {CATALOG}",
            "rl.reward.provider: mixed",
            "rl.group_size: 4",
            "rewards.service.allow: {providers: {constant: {}}, components: any}",  # the validation reward
        ]
    )
    with start_server(tmp_path, served) as server:
        config = {
            "rl": {
                "reward": {"provider": "mixed", "catalog": CATALOG, "service": server.url},
                "validation": {"reward": "constant"},
                "group_size": 4,
            }
        }
        with rewardkit.load(config) as remote:
            assert type(remote) is RemoteReward
            validation = remote.validation()
            for backend in (remote, validation):
                assert isinstance(backend, RewardLike)
                assert protocol_gaps(backend) == []
            assert remote.catalog is None  # resolved in the service
            assert (remote.namespace, validation.namespace) == ("train", "val")
            assert remote.spec_identity == remote.spec.to_json()
