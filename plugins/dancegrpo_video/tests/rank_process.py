"""One rank of the two-rank test: ``python rank_process.py RANK PORT OUT CONFIG_JSON``.

Joins a gloo process group on 127.0.0.1:PORT, loads the reward with its own decoder, runs every
step of ``rank_steps.STEPS`` through ``rewardkit_media.ranks.score_on_ranks`` and writes what it
got (or the error it raised) to ``OUT/<step>-rank<RANK>.json``.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist
from rank_steps import GROUP_SIZE, STEPS, WORLD, rank_groups
from video_helpers import IdentityDecoder

import rewardkit
from rewardkit_media.ranks import RankScoringError, score_on_ranks


def outcome(reward, step: str, rank: int) -> dict:
    try:
        scores = score_on_ranks(reward, rank_groups(step, rank), group_size=GROUP_SIZE)
    except RankScoringError as error:
        cause = error.__cause__
        return {
            "error": {
                "type": type(error).__name__,
                "message": str(error),
                "rank": error.rank,
                "kind": error.kind,
                "cause": type(cause).__name__ if cause is not None else None,
            }
        }
    return {
        "rank": scores.rank,
        "world": scores.world,
        "metrics": scores.metrics,
        "groups": [
            {
                "group_id": group.group_id,
                "trajectories": [candidate.trajectory_id for candidate in group.candidates],
                "finals": [candidate.final for candidate in group.candidates],
                "advantages": [candidate.advantage for candidate in group.candidates],
            }
            for group in scores.groups
        ],
        "scorer_revisions": dict(scores.scorer_revisions),
        "run_record": [dict(record) for record in scores.run_record],
    }


def main() -> None:
    rank, port, out, config = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4])
    # the timeout turns a collective that never completes into an error instead of a hang
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=WORLD,
        timeout=timedelta(seconds=60),
    )
    try:
        with rewardkit.load(config, runtime={"decoder": IdentityDecoder()}) as reward:
            for step in STEPS:
                (out / f"{step}-rank{rank}.json").write_text(json.dumps(outcome(reward, step, rank)))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
