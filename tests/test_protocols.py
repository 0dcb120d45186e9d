"""``RewardLike``: the in-process ``Reward`` implements it, member by member and call by call, and
``protocol_gaps`` names what a backend that falls short lacks. The Reward Service client and the Ray
backend are checked the same way in their distributions' tests (a live service, a live cluster);
all three are also assigned to ``type[RewardLike]`` in their modules, which the type checker checks."""

from __future__ import annotations

from typing import Any

from rewardkit import Reward
from rewardkit.config import load_config
from rewardkit.seam.catalog import Catalog
from rewardkit.seam.protocols import RewardLike, protocol_gaps

SPEC = {"components": [{"provider": "exact-match", "weight": 2.0}, {"provider": "nonempty", "weight": 0.5}]}


def _config(**rl: Any) -> Any:
    return load_config({"rl": {"reward": {"spec": SPEC}, "group_size": 2, **rl}})


def test_reward_and_its_validation_reward_are_reward_like() -> None:
    with Reward(_config(validation={"reward": "nonempty"})) as reward:
        validation = reward.validation()
        for backend in (reward, validation):
            assert isinstance(backend, RewardLike)
            assert protocol_gaps(backend) == []
        assert isinstance(reward.catalog, Catalog)
        assert (reward.namespace, validation.namespace) == ("train", "val")
        # what a run records: the spec with the catalog's defaults filled into every params
        assert reward.spec.to_json()["components"][0]["params"] == {}
        assert reward.spec_identity["components"][0]["params"] == {
            "case_sensitive": False,
            "collapse_whitespace": True,
        }


class _ShortOfTheProtocol:
    """Has every name, but not every call: the shape ``isinstance`` cannot tell from a real backend."""

    config = selection = namespace = spec = spec_identity = providers = needs = catalog = None

    def score(self, groups: Any, *, deadline_s: float | None = None) -> Any: ...

    def ascore(
        self, groups: Any, *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> Any: ...

    def process(
        self, groups: Any, deadline_s: float | None = None, *, timeout_s: float | None = None
    ) -> Any: ...

    def validation(self, namespace: str) -> Any: ...

    def close(self, **options: Any) -> None: ...

    def __enter__(self) -> Any: ...


def test_protocol_gaps_names_every_call_that_would_fail_where_isinstance_says_yes() -> None:
    short = _ShortOfTheProtocol()
    assert not isinstance(short, RewardLike)  # no __exit__
    short_with_exit = type("WithExit", (_ShortOfTheProtocol,), {"__exit__": lambda self, *exc: None})()
    assert isinstance(short_with_exit, RewardLike)
    assert protocol_gaps(short_with_exit) == [
        "score: no parameter 'timeout_s'",
        "score: no parameter 'progress'",
        "ascore: async expected",
        "process: parameter 'deadline_s' is positional or keyword, not keyword-only",
        "validation: extra parameter 'namespace' has no default",
    ]
    assert protocol_gaps(short) == [*protocol_gaps(short_with_exit), "__exit__: missing"]
