"""The Reward Service refuses, at its preflight, a configuration whose meaning it would change: a
validation selection from a catalog other than the training one (the service loads one catalog),
and a provider that needs in-process media (no request can carry it). In process both are accepted
(the core's ``tests/test_worker.py`` and ``tests/test_media_runtime.py``). The catalogs are the
core tests' fixture modules, importable through this folder's conftest."""

from __future__ import annotations

import pytest

from rewardkit import PreflightError
from rewardkit.config import load_config
from rewardkit_service.app import RewardService, ServiceSettings

# the configuration of tests/test_media_runtime.py: a provider that needs in-process media
MEDIA = {"rl": {"group_size": 1, "reward": {"provider": "latent-mean", "catalog": "media_fixtures:catalog"}}}


def test_the_reward_service_refuses_a_validation_catalog_it_would_ignore():
    config = {
        "rl": {
            "reward": {"provider": "keyed", "catalog": "worker_fixtures:catalog"},
            "validation": {"reward": {"provider": "constant", "catalog": "catalog_fixtures:team_catalog"}},
        }
    }
    service = RewardService(load_config(config), ServiceSettings())
    with pytest.raises(PreflightError, match="validation selects from the training catalog"):
        service.preflight()
    assert not service.ready


def test_the_reward_service_refuses_a_provider_that_needs_media():
    service = RewardService(load_config(MEDIA), ServiceSettings())
    with pytest.raises(PreflightError, match=r"in-process media.*not through the Reward Service"):
        service.preflight()
    assert not service.ready
