"""Reward-model throughput: token-budget buckets against fixed-size batches padded to the longest.

A ``LlamaForSequenceClassification`` (num_labels=1) is built from a config with random weights
and a word-level tokenizer and saved to a temporary folder; ``reward-model`` loads it from there.
One group of ``--count`` candidates with a long-tailed mix of lengths (log-normal, median about
200 tokens, clipped to 32..2,048) is scored through the provider's whole path (template,
tokenizer, batching, forward pass, results): once with its token-budget buckets (sorted by
length, at most ``--budget`` padded tokens per pass) and once with the batching swapped for
fixed batches of ``--batch-size`` in arrival order, each padded to its longest. Each way runs in
its own process, so its peak RSS is its own; the model loads and warms up before the clock
starts. Reported per way: real tokens/s, padded tokens computed, wall seconds, peak RSS and the
RSS added by scoring, and the speed ratio (target: at least 1.5x on CPU).

Run: ``python benchmarks/reward_model.py`` (CPU, float32). On a CUDA machine,
``python benchmarks/reward_model.py --preset 0.5b --device cuda`` builds a model of about 0.5B
parameters (Qwen2-0.5B's shape as a Llama) and runs it in bfloat16.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import report

WORDS = [f"w{index}" for index in range(4000)]
PRESETS = {
    # hidden, layers, heads, kv heads, intermediate
    "small": (256, 4, 4, 4, 1024),
    "0.5b": (896, 24, 14, 2, 4864),
}


def build(folder: Path, preset: str) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForSequenceClassification, PreTrainedTokenizerFast

    vocab = {token: index for index, token in enumerate(["<pad>", "<unk>", "<bos>", "<eos>", *WORDS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    hidden, layers, heads, kv_heads, intermediate = PRESETS[preset]
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        num_labels=1,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    LlamaForSequenceClassification(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def lengths(count: int, seed: int) -> list[int]:
    """A long-tailed mix: log-normal around 200 tokens, clipped to 32..2,048."""
    generator = random.Random(seed)
    return [min(2048, max(32, int(math.exp(generator.gauss(math.log(200), 1.0))))) for _ in range(count)]


def group(sizes: list[int], seed: int) -> list[dict]:
    generator = random.Random(seed + 1)
    return [
        {"trajectory_id": f"t{index}", "completion": " ".join(generator.choices(WORDS, k=size)), "prompt": ""}
        for index, size in enumerate(sizes)
    ]


def run_one(args: argparse.Namespace) -> dict:
    """One way, in this process: load, warm up, then time one group."""
    from rewardkit.seam.catalog import resolve_catalog
    from rewardkit_rl.reward_models import batching, provider

    params = {
        "model": args.folder,
        "template": "plain",
        "max_tokens": 4096,
        "batch_tokens": args.budget,
        "device": args.device,
        "dtype": "auto",
    }
    bound = resolve_catalog().bind("reward-model", params)
    if args.way == "fixed":
        provider.token_budget_batches = lambda sizes, budget: batching.fixed_size_batches(
            len(sizes), args.batch_size
        )
    sizes = lengths(args.count, args.seed)
    rows = group(sizes, args.seed)
    bound.score_group("warm", group([64] * 4, 99))  # loads the model
    torch = __import__("torch")
    if args.device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    result = bound.score_group("g", rows)
    if args.device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    assert all(item.result.status == "scored" for item in result.items)
    tokens = [
        int(next(m.value for m in item.result.diagnostics if m.name == "input_tokens"))
        for item in result.items
    ]
    batches = (
        batching.fixed_size_batches(len(tokens), args.batch_size)
        if args.way == "fixed"
        else batching.token_budget_batches(tokens, args.budget)
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    row = {
        "way": args.way,
        "sequences": len(tokens),
        "real_tokens": sum(tokens),
        "padded_tokens": batching.padded_tokens(tokens, batches),
        "passes": len(batches),
        "seconds": seconds,
        "tokens_per_s": sum(tokens) / seconds,
        "peak_rss_mib": peak / 1024,
        "scoring_rss_mib": (peak - rss_before) / 1024,
        "scores": [item.result.terms["score"] for item in result.items],
    }
    if args.device == "cuda":
        row["peak_cuda_mib"] = torch.cuda.max_memory_allocated() / 2**20
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=96, help="candidates in the group")
    parser.add_argument("--budget", type=int, default=16384, help="padded tokens per bucket")
    parser.add_argument("--batch-size", type=int, default=8, help="the fixed-size baseline's batch")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--way", choices=["buckets", "fixed"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.way:
        print(json.dumps(run_one(args)))
        return
    with tempfile.TemporaryDirectory(prefix="rm-bench-") as root:
        folder = Path(root) / "model"
        build(folder, args.preset)
        env = {**os.environ, "REWARDKIT_CACHE_DIR": str(Path(root) / "cache"), "HF_HUB_OFFLINE": "1"}
        rows = []
        for way in ("fixed", "buckets"):
            command = [sys.executable, __file__, "--way", way, "--folder", str(folder)]
            for flag in ("count", "budget", "batch_size", "preset", "device", "seed"):
                command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{way} failed:\n{done.stderr[-3000:]}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    fixed, buckets = rows
    drift = max(abs(a - b) for a, b in zip(fixed.pop("scores"), buckets.pop("scores")))
    speedup = buckets["tokens_per_s"] / fixed["tokens_per_s"]
    print(f"speed-up of buckets over fixed batches: {speedup:.2f}x; largest score difference {drift:.2e}")
    report(
        f"reward_model_{args.device}_{args.preset}",
        rows,
        {
            "speedup": speedup,
            "max_score_difference": drift,
            "settings": {k: v for k, v in vars(args).items() if k not in ("way", "folder")},
        },
    )


if __name__ == "__main__":
    main()
