"""Upload one decoded video to the media reward service: streamed from a spool file vs the naive way.

    python benchmarks/media.py [--frames 121 --height 704 --width 1280] [--repeats 3]

The sample is the seed's production shape, uint8 [1, 3, 121, 704, 1280] (about 312 MiB). Each
way runs in a fresh process that first builds the sample, then scores it against the reference
server (``rewardkit_media.testing`` in count-only mode, in its own process so that its memory is
not counted): enqueue, then pull.

- ``streamed``: ``MediaServiceClient.score`` — ``numpy.save`` into a private spool file, the body
  streamed from that file, the file removed.
- ``naive``: ``numpy.save`` into a ``BytesIO``, the JSON line prepended to its bytes, and those bytes
  posted in one request (what a client without a spool does).

Reported per way: wall time of serialise + upload + pull, and the peak RSS *above* the process's
RSS once the sample exists, as a multiple of the sample's size (the target for ``streamed`` is at
most 1.2x; the naive way holds several copies). Writes ``benchmarks/results/media.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

KEYS = {"dance_grpo": ["overall_reward"]}
TOKEN_ENV = "RK_BENCH_MEDIA_TOKEN"


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(way: str, url: str, shape: tuple[int, ...], spool_dir: str) -> dict:
    """One measurement, in this (fresh) process."""
    import numpy as np

    from rewardkit.transport import HttpClient
    from rewardkit_media.service import MediaServiceClient

    sample = np.empty(shape, dtype=np.uint8)
    sample[...] = np.arange(shape[-1], dtype=np.uint8)  # every page written: resident
    metadata = {"media_type": "video", "video_infos": [{"video_fps": 16.0}], "prompts": ["benchmark"]}
    client = MediaServiceClient(
        enqueue_url=url + "/api/reward/enqueue",
        pull_url=url + "/api/reward/pull",
        token_env=TOKEN_ENV,
        reward_types=KEYS,
        enqueue_timeout_s=300.0,
        spool_dir=spool_dir,
    )
    baseline = _rss_kib()
    assert _peak_kib() <= baseline + 16 * 1024, "the peak before the upload must be the sample itself"
    started = time.perf_counter()
    if way == "streamed":
        asyncio.run(client.score(sample, metadata, time.monotonic() + 600.0))
    else:

        async def naive() -> None:
            buffer = io.BytesIO()
            np.save(buffer, sample, allow_pickle=False)
            body = client.header(metadata) + buffer.getvalue()
            async with HttpClient(url, token_env=TOKEN_ENV, timeout_s=300.0) as http:
                answer = await http.request("POST", "/api/reward/enqueue", data=body, retry=False)
                uuid = answer.json()["uuid"]
                form = f"uuid={uuid}&type=dance_grpo".encode()
                headers = {"Content-Type": "application/x-www-form-urlencoded"}
                await http.request("POST", "/api/reward/pull", data=form, headers=headers)

        asyncio.run(naive())
    seconds = time.perf_counter() - started
    extra = max(0, _peak_kib() - baseline) * 1024
    return {"way": way, "seconds": seconds, "extra_peak_bytes": extra, "sample_bytes": sample.nbytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=121)
    parser.add_argument("--height", type=int, default=704)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=3, metavar=("WAY", "URL", "SPOOL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    shape = (1, 3, args.frames, args.height, args.width)
    if args.child:
        way, url, spool = args.child
        print(json.dumps(child(way, url, shape, spool)))
        return

    from _report import report

    os.environ.setdefault(TOKEN_ENV, "benchmark-token")
    server = subprocess.Popen(
        [sys.executable, "-m", "rewardkit_media.testing", "--count-only", "--keys", json.dumps(KEYS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    rows = []
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="rk-bench-spool-") as spool:
            for _ in range(args.repeats):
                for way in ("streamed", "naive"):
                    size = [
                        "--frames",
                        str(args.frames),
                        "--height",
                        str(args.height),
                        "--width",
                        str(args.width),
                    ]
                    command = [sys.executable, __file__, *size, "--child", way, url, spool]
                    result = json.loads(
                        subprocess.run(command, capture_output=True, text=True, check=True).stdout
                    )
                    result["extra_peak_x_sample"] = result["extra_peak_bytes"] / result["sample_bytes"]
                    result["sample_mib"] = result["sample_bytes"] / 2**20
                    rows.append(result)
            left = os.listdir(spool)
    finally:
        server.terminate()
        server.wait(30)
    summary = {}
    for way in ("streamed", "naive"):
        mine = [row for row in rows if row["way"] == way]
        summary[way] = {
            "median_seconds": sorted(row["seconds"] for row in mine)[len(mine) // 2],
            "max_extra_peak_x_sample": max(row["extra_peak_x_sample"] for row in mine),
        }
    summary["naive_over_streamed_peak"] = summary["naive"]["max_extra_peak_x_sample"] / max(
        summary["streamed"]["max_extra_peak_x_sample"], 1e-9
    )
    summary["spool_files_left"] = len(left)
    report(
        "media",
        [{key: row[key] for key in ("way", "sample_mib", "seconds", "extra_peak_x_sample")} for row in rows],
        {"shape": list(shape), "summary": summary},
    )
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
