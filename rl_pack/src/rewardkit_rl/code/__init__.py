"""rewardkit-rl plugin: the ``code-tests`` provider (programs run against tests in a sandbox).

Registered through the ``rewardkit`` entry-point group. See docs/code_rewards.md.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import RewardProviderSpec, hookimpl
from rewardkit_rl.code.params import CodeTestsParams
from rewardkit_rl.code.provider import DIAGNOSTICS, TERMS, CodeTestsProvider

# 3 decided whose a timeout was from the CPU and run-queue figures of the threads alive at the
# deadline (a program could look "starved" and fail the batch); 4 reruns it beside a canary; 5 runs
# each candidate in a pid namespace of its own (its pids no longer depend on earlier runs) and, with
# stdin/stdout tests, scores a candidate again once at most, not once per faulting case.
REVISION = "5"


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    """Registers ``code-tests``."""
    register(
        RewardProviderSpec(
            name="code-tests",
            factory=CodeTestsProvider,
            params_schema=CodeTestsParams,
            needs=("reference",),
            sandboxed=True,
            cacheable=True,  # the same program against the same tests: one run for equal answers
            revision=REVISION,
            terms=TERMS,
            diagnostics=DIAGNOSTICS,
            semantic_identity={
                "runner": "bwrap-zygote-two-process-fresh-uids-seccomp",
                "defaults": {
                    "timeout_s": 6.0,
                    "memory_mb": 1024,
                    "max_processes": 16,
                    "output_limit_bytes": 1 << 20,
                    "isolation": "bwrap",
                    "compare": "token",
                },
            },
            description="Runs the completion's program against the reference's tests in a bubblewrap "
            "sandbox (MBPP asserts, HumanEval check, stdin/stdout cases); terms pass_rate, all_passed.",
        )
    )
