"""Wall time to evaluate one checkpoint: ``vllm-lora`` against ``vllm-serve``, and the statistics.

One checkpoint of ``--prompts`` prompts x ``--samples`` samples (tiny random Llama, float32,
``max_tokens`` 16), scored by ``nonempty``: through ``vllm-serve`` (a server started for the
checkpoint, its start-up included) and through ``vllm-lora`` (an adapter loaded into a warm
shared server; that server's start is reported apart). Then the statistics of a step: the
paired cluster-robust t interval and a 10,000-resample bootstrap over 5,000 records.
Needs a vLLM build (tox env ``vllm``); run in a private network namespace:

    unshare -n sh -c "ip link set lo up && python benchmarks/checkpoint_eval.py"
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import report

from rewardkit.config import load_config
from rewardkit.scoring.reward import load
from rewardkit_checkpoints.evaluate import evaluate, load_records
from rewardkit_stats import paired_interval
from rewardkit_vllm import VllmLoraStrategy, VllmServeStrategy
from rewardkit_vllm.testing import WORDS, build_lora_adapter, build_tiny_llama


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--samples", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = Path(tempfile.mkdtemp(prefix="rk-ckpt-bench-"))
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "cache"))
    base = build_tiny_llama(root / "base")
    adapter = build_lora_adapter(base, root / "adapter")
    with open(root / "prompts.jsonl", "w", encoding="utf-8") as out:
        for index in range(args.prompts):
            prompt = " ".join(WORDS[(index + offset) % len(WORDS)] for offset in range(4))
            out.write(json.dumps({"id": str(index), "prompt": prompt, "cluster": str(index % 20)}) + "\n")
    config = load_config(
        {
            "rl": {"group_size": args.samples, "reward": {"provider": "nonempty"}},
            "checkpoints": {
                "dir": str(root),
                "log_dir": str(root / "logs"),
                "prompts": {
                    "path": str(root / "prompts.jsonl"),
                    "id_column": "id",
                    "cluster_column": "cluster",
                },
                "generation": {"n": args.samples, "temperature": 1.0, "max_tokens": 16, "concurrency": 16},
            },
        }
    )
    assert config.checkpoints is not None
    reward = load(config)
    records = load_records(config.checkpoints)
    settings = {
        "dtype": "float32",
        "max_model_len": 256,
        "log_dir": str(root / "server-logs"),
        "start_timeout_s": 900,
    }
    rows = []
    started = time.perf_counter()
    with VllmServeStrategy(**settings).serve(str(base)) as served:
        ready = time.perf_counter()
        evaluate("serve", served, reward, records, config.checkpoints)
    done = time.perf_counter()
    rows.append(
        {"path": "vllm-serve (start included)", "seconds": done - started, "of which start": ready - started}
    )
    lora = VllmLoraStrategy(base_model=str(base), **settings)
    warm_started = time.perf_counter()
    lora.url()
    warm = time.perf_counter() - warm_started
    try:
        started = time.perf_counter()
        with lora.serve(str(adapter)) as served:
            ready = time.perf_counter()
            evaluate("lora", served, reward, records, config.checkpoints)
        done = time.perf_counter()
    finally:
        lora.close()
    rows.append(
        {
            "path": "vllm-lora (adapter load included)",
            "seconds": done - started,
            "of which start": ready - started,
        }
    )
    rows.append(
        {"path": "vllm-lora shared server start (once per run)", "seconds": warm, "of which start": warm}
    )
    rng = np.random.default_rng(0)
    base_values = rng.binomial(4, 0.6, 5000) / 4
    step_values = rng.binomial(4, 0.58, 5000) / 4
    clusters = np.repeat(np.arange(250), 20)
    started = time.perf_counter()
    paired_interval(base_values, step_values, clusters=clusters)
    rows.append(
        {
            "path": "stats: cluster-robust t, 5,000 records",
            "seconds": time.perf_counter() - started,
            "of which start": 0.0,
        }
    )
    started = time.perf_counter()
    paired_interval(base_values, step_values, method="bootstrap", resamples=10_000)
    rows.append(
        {
            "path": "stats: bootstrap, 5,000 records x 10,000",
            "seconds": time.perf_counter() - started,
            "of which start": 0.0,
        }
    )
    reward.close()
    report("checkpoint_eval", rows, {"prompts": args.prompts, "samples": args.samples})


if __name__ == "__main__":
    main()
