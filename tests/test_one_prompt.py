"""``check_one_prompt``: a group is the completions of one prompt, whatever shape its prompts take.

The usual group (every rollout a dict with the same str prompt) passes at C speed; anything else
must reach the type-strict loop and get its verdict there, never an error from the fast check.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from rewardkit.contracts.errors import RewardContractError
from rewardkit.scoring.batch_input import check_one_prompt


class Str(str):
    pass


class LoudEquality:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("compared")

    __hash__ = object.__hash__


def rows(*prompts: Any) -> list[dict[str, Any]]:
    return [{"trajectory_id": f"t{k}", "completion": "c", "prompt": p} for k, p in enumerate(prompts)]


@pytest.mark.parametrize(
    "prompts",
    [("p", "p", "p"), ("p", None, "p"), (None, None), ({"k": [1]}, {"k": [1]}), (1, 1)],
    ids=["equal strs", "some left out", "none at all", "equal JSON", "equal ints"],
)
def test_one_prompt_passes(prompts: tuple[Any, ...]) -> None:
    check_one_prompt("g", rows(*prompts))
    check_one_prompt("g", tuple(rows(*prompts)))  # any sequence, not only lists


@pytest.mark.parametrize(
    "prompts",
    [
        ("p", "q"),
        ("p", Str("p")),  # a str subclass is another type
        (1, 1.0),
        (1, True),
        ("p", np.array([1, 2])),  # == would answer an array, not a bool
        ("p", LoudEquality()),  # == would raise
        (LoudEquality(), "p"),
    ],
    ids=[
        "two strs",
        "str subclass",
        "int and float",
        "int and bool",
        "an array",
        "raising eq",
        "raising eq first",
    ],
)
def test_two_prompts_are_refused_by_the_strict_rule(prompts: tuple[Any, ...]) -> None:
    with pytest.raises(RewardContractError) as caught:
        check_one_prompt("g", rows(*prompts))
    assert caught.value.rule == "mixed-prompts"


def test_a_rollout_that_is_not_a_dict_is_left_to_the_adapter() -> None:
    check_one_prompt("g", [{"prompt": "p"}, "not a mapping", {"prompt": "q"}])  # the adapter names it


def test_looking_at_prompts_does_not_change_the_rollouts() -> None:
    lazy: defaultdict[str, Any] = defaultdict(lambda: "made up")
    lazy.update(trajectory_id="t0", completion="c")
    group = [lazy, {"trajectory_id": "t1", "completion": "c", "prompt": "p"}]
    check_one_prompt("g", group)  # the first has no prompt: nothing to differ from
    assert "prompt" not in lazy
