"""A python grader's ``grade(sample, item)`` run in the code sandbox (``rewardkit_rl.code.sandbox``).

The program sent is a fixed harness; the grader's source, the sample and the item travel as its
standard input, with a nonce drawn per run. The harness silences what the grader prints and
answers one line, the nonce then JSON, on a copy of the standard output taken before the grader
ran; the host reads only that line. A grade that is not a finite number, and any exception, are
the guide's "invalid": the candidate's 0 (what the grader does depends on the candidate's text
alone, so it is charged as it stands). A run that times out or dies without answering could be
the sandbox's fault: it is decided by reproduction (``rewardkit.plugin.reproduce``): a canary
grader run in the same slot, then the candidate once more alone.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rewardkit.plugin import (
    CanaryFailed,
    CancelScope,
    Charged,
    Fault,
    RerunBudget,
    RewardProviderResult,
    current,
    reproduce,
    rerun_budget,
    usable_cpus,
)
from rewardkit_rl.code.sandbox import PoolOnFirstUse, SandboxConfig, SandboxError, SandboxPool, Slot

HARNESS = """
import io, json, math, os, sys
job = json.loads(sys.stdin.read())
answer_fd = os.dup(1)
sys.stdout = io.StringIO()  # what the grader prints is not its grade


def answer(payload):
    os.write(answer_fd, (job["nonce"] + json.dumps(payload) + "\\n").encode())


try:
    scope = {"__name__": "grader", "__builtins__": __builtins__}
    exec(compile(job["source"], "grader.py", "exec"), scope)
    grade = scope.get("grade")
    if not callable(grade):
        answer({"invalid": "the source defines no grade(sample, item) function"})
    else:
        value = grade(job["sample"], job["item"])
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            answer({"invalid": "grade returned " + repr(value)[:200] + ", not a finite number"})
        else:
            answer({"grade": float(value)})
except BaseException as error:
    answer({"invalid": (type(error).__name__ + ": " + str(error))[:500]})
"""
CANARY_SOURCE = "def grade(sample, item):\n    return float(sample['output_text'] == item['canary'])\n"
CANARY_NAME = "a python grader comparing one known string (must grade 1.0)"


@dataclass(frozen=True)
class Run:
    """What one run answered: a grade, or why it is invalid."""

    grade: float | None
    invalid: str | None


class PythonRunner:
    """Runs ``source``'s grade in sandbox slots, at most ``usable_cpus()`` at once; the pool starts on
    first use and ``close()`` stops it."""

    def __init__(self, source: str, *, timeout_s: float, memory_mb: int, isolation: str) -> None:
        self.source = source
        self.config = SandboxConfig(isolation=isolation, timeout_s=timeout_s, memory_mb=memory_mb)  # type: ignore[arg-type]
        self.size = usable_cpus()
        self._sandboxes = PoolOnFirstUse(self.size, "openai-python", cancel_queued=True)

    def _started(self) -> tuple[SandboxPool, ThreadPoolExecutor]:
        return self._sandboxes.started(self.config)

    def close(self) -> None:
        self._sandboxes.close()

    def grade_all(
        self, jobs: list[tuple[dict[str, Any], dict[str, Any]]]
    ) -> list[RewardProviderResult | Run]:
        """One result per ``(sample, item)``: a ``Run``, or a charge or an error already decided."""
        pool, executor = self._started()
        # The request's scope and the batch's rerun budget, passed by hand: the executor's threads
        # do not see this thread's context.
        scope, budget = current(), rerun_budget()
        futures = [executor.submit(self._grade, pool, sample, item, scope, budget) for sample, item in jobs]
        return [future.result() for future in futures]

    def _grade(
        self,
        pool: SandboxPool,
        sample: dict[str, Any],
        item: dict[str, Any],
        scope: CancelScope,
        budget: RerunBudget,
    ) -> RewardProviderResult | Run:
        try:
            with pool.lease(scope) as slot:
                first = self._attempt(slot, self.source, sample, item)
                if not isinstance(first, Fault):
                    return first
                verdict = reproduce(
                    first,
                    canary_name=CANARY_NAME,
                    canary=lambda: self._canary_failure(slot),
                    rerun=lambda: self._attempt(slot, self.source, sample, item),
                    budget=budget,
                )
        except CanaryFailed as error:
            scope.raise_if_cancelled()
            return RewardProviderResult.fail(f"sandbox: {error}")
        except SandboxError as error:  # the pool is closed or cannot start: the infrastructure's
            scope.raise_if_cancelled()
            return RewardProviderResult.fail(f"sandbox: {error}")
        if isinstance(verdict, Charged):
            return verdict.result({"score": 0.0}, diagnostic="python_fault")
        return verdict

    def _attempt(
        self, slot: Slot, source: str, sample: Mapping[str, Any], item: Mapping[str, Any]
    ) -> Run | Fault:
        nonce = secrets.token_hex(16)
        job = {"source": source, "sample": sample, "item": item, "nonce": nonce}
        request = {
            "mode": "io",
            "program": HARNESS,
            "tests": [],
            "setup": "",
            "trusted": "",
            "expose": [],
            "module_name": "__main__",
            "stdin": json.dumps(job, ensure_ascii=False),
            "timeout": self.config.timeout_s,
            "limits": self.config.limits(),
            "output_cap": self.config.output_limit_bytes,
        }
        try:
            response = slot.run(request)
        except SandboxError as error:
            slot.scope.raise_if_cancelled()
            return Fault("sandbox_failure", f"the sandbox failed under the grader ({error})")
        answer = _answer(str(response.get("stdout", "")), nonce)
        if answer is not None:
            return answer
        if response.get("timed_out"):
            return Fault("timeout", f"the python grader ran past {self.config.timeout_s:g} s")
        return Fault(
            "no_answer", f"the python grader's process ended without a grade ({response.get('program')})"
        )

    def _canary_failure(self, slot: Slot) -> str | None:
        canary = secrets.token_hex(8)
        outcome = self._attempt(slot, CANARY_SOURCE, {"output_text": canary}, {"canary": canary})
        if isinstance(outcome, Fault):
            return outcome.detail
        return None if outcome.grade == 1.0 else f"the canary graded {outcome.grade} ({outcome.invalid})"


def _answer(stdout: str, nonce: str) -> Run | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(nonce):
            try:
                payload = json.loads(line[len(nonce) :])
            except ValueError:
                return None
            grade = payload.get("grade") if isinstance(payload, dict) else None
            if isinstance(grade, float):
                return Run(grade, None)
            return Run(
                None, str(payload.get("invalid", "no grade")) if isinstance(payload, dict) else "no grade"
            )
    return None
