"""The batches of the two-rank test, shared by the test and the rank processes it starts.

Groups of 4 trajectories over 2 ranks, split as a trainer may split them: group ``a`` 2 + 2,
``b`` 1 + 3, ``c`` wholly on rank 1. Every latent is made from a seed, so the test scores the
same whole batch in one process. A fault is put in the failing rank's first group: when several
chunks of a batch fail, the worker reports the first chunk's error.
"""

from __future__ import annotations

import math

import torch

GROUP_SIZE = 4
WORLD = 2
# group -> how many of its trajectories each rank holds, in rank order
SPLIT = {"a": (2, 2), "b": (1, 3), "c": (0, 4)}
# What each launch runs, in order; every rank runs every step (a failed step included).
STEPS = ("scores", "decoder-fails-on-rank-1", "service-fails-on-rank-0", "scores-again")
FAULT_MARK = "[inject-service-fault]"


def latent(group_id: str, index: int) -> torch.Tensor:
    seed = 1000 * (ord(group_id) - ord("a")) + index
    generator = torch.Generator().manual_seed(seed)
    return torch.rand((1, 3, 2, 6, 8), generator=generator) * 2 - 1


def rollout(step: str, group_id: str, index: int) -> dict:
    media = latent(group_id, index)
    prompt = f"a dancer, take {group_id}"
    owner = 0 if index < SPLIT[group_id][0] else 1
    if step == "decoder-fails-on-rank-1" and owner == 1 and group_id == "a":
        media = torch.full_like(media, math.nan)  # the decoded video is not finite: refused on rank 1
    if step == "service-fails-on-rank-0" and owner == 0 and group_id == "a":
        prompt += " " + FAULT_MARK  # the reference service answers this prompt's task malformed
    return {"trajectory_id": f"{group_id}-{index}", "completion": "", "prompt": prompt, "media": media}


def rank_groups(step: str, rank: int) -> list[dict]:
    """What rank ``rank`` holds at ``step``: its piece of each group, under the group's own id."""
    groups = []
    for group_id, counts in SPLIT.items():
        first = sum(counts[:rank])
        indices = range(first, first + counts[rank])
        if indices:
            groups.append(
                {"group_id": group_id, "rollouts": [rollout(step, group_id, index) for index in indices]}
            )
    return groups


def whole_batch(step: str) -> list[dict]:
    """The same batch as whole groups, for scoring in one process."""
    return [
        {"group_id": group_id, "rollouts": [rollout(step, group_id, index) for index in range(GROUP_SIZE)]}
        for group_id in SPLIT
    ]
