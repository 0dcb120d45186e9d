"""The ``code-tests`` provider: run each candidate's program against the reference's tests."""

from __future__ import annotations

import concurrent.futures
import threading
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rewardkit.cancellation import NEVER, CancelScope, current
from rewardkit.contracts import (
    MetricContribution,
    RewardCandidate,
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
)
from rewardkit_rl.code.compare import COMPARE_MODES, CompareMode, outputs_match
from rewardkit_rl.code.reference import TestPlan, parse_reference
from rewardkit_rl.code.sandbox import CPU_COUNT, SandboxConfig, SandboxError, SandboxPool

TERMS = ("pass_rate", "all_passed")
DIAGNOSTICS = (
    "cases_total",
    "cases_passed",
    "cases_failed",
    "cases_error",
    "cases_timeout",
    "timeout",
    "runtime_error",
    "compile_error",
    "output_truncated",
)


@dataclass(frozen=True)
class CaseOutcome:
    """The verdicts of one candidate: one status per case, plus what went wrong overall."""

    statuses: tuple[str, ...]
    compile_error: bool = False
    runtime_error: bool = False
    timeout: bool = False
    truncated: bool = False

    def result(self) -> RewardProviderResult:
        counts = Counter(status.split(":", 1)[0] for status in self.statuses)
        total = len(self.statuses)
        passed = counts["pass"]
        diagnostics = (
            ("cases_total", total),
            ("cases_passed", passed),
            ("cases_failed", total - passed - counts["error"] - counts["timeout"]),
            ("cases_error", counts["error"]),
            ("cases_timeout", counts["timeout"]),
            ("timeout", self.timeout),
            ("runtime_error", self.runtime_error or counts["error"] > 0),
            ("compile_error", self.compile_error),
            ("output_truncated", self.truncated),
        )
        return RewardProviderResult(
            terms={"pass_rate": passed / total, "all_passed": float(passed == total)},
            diagnostics=tuple(MetricContribution(name, float(value)) for name, value in diagnostics),
        )


def _verdict_lines(text: str, test_count: int) -> tuple[str, list[str], bool]:
    """(program status, one status per test, whether the run ended) from the test process's lines."""
    program = "no_report"
    tests = ["not_run"] * test_count
    ended = False
    for line in text.splitlines():
        fields = line.split(" ")
        if fields[0] == "program" and len(fields) == 3:
            program = fields[1]
        elif fields[0] == "test" and len(fields) == 3 and fields[1].isdigit() and int(fields[1]) < test_count:
            tests[int(fields[1])] = fields[2]
        elif fields == ["end"]:
            ended = True
    return program, tests, ended


def outcome_of_asserts(response: dict[str, Any], test_count: int) -> CaseOutcome | RewardProviderResult:
    """Read the runner's answer for an assert-style run (a skip when a case cannot be judged)."""
    program, tests, ended = _verdict_lines(response["verdicts"], test_count)
    timed_out = bool(response["timed_out"])
    skips = [status[5:] for status in tests if status.startswith("skip:")]
    if skips:
        return RewardProviderResult.skip(f"code-tests: the tests cannot be judged here: {skips[0]}")
    statuses = []
    for status in tests:
        if status == "not_run":
            status = "timeout" if timed_out else "fail:not_run"
        statuses.append(status)
    # A pass counts only when the test process finished its run.
    if not ended:
        statuses = [status if status != "pass" else "fail:no_end" for status in statuses]
    return CaseOutcome(
        statuses=tuple(statuses),
        compile_error=program == "compile_error",
        runtime_error=program in ("runtime_error", "setup_error", "no_report"),
        timeout=timed_out,
        truncated=bool(response["truncated"]),
    )


class CodeTestsProvider:
    """Group provider: candidates of a group run concurrently, at most ``concurrency`` at once.

    Construction is light: the sandbox pool starts on the first ``evaluate``.
    """

    def __init__(
        self,
        *,
        timeout_s: float = 6.0,
        memory_mb: int = 1024,
        max_processes: int = 16,
        output_limit_bytes: int = 1 << 20,
        isolation: str = "bwrap",
        cgroup: str = "auto",
        concurrency: int | None = None,
        compare: str = "token",
        float_rel_tol: float = 1e-6,
        float_abs_tol: float = 1e-6,
    ) -> None:
        if compare not in COMPARE_MODES:
            raise ValueError(f"code-tests: compare must be one of {list(COMPARE_MODES)}, got {compare!r}")
        if concurrency is not None and (
            not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1
        ):
            raise ValueError(f"code-tests: concurrency must be a positive integer, got {concurrency!r}")
        self.config = SandboxConfig(
            isolation=isolation,  # type: ignore[arg-type]
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            max_processes=max_processes,
            output_limit_bytes=output_limit_bytes,
            cgroup=cgroup,  # type: ignore[arg-type]
        )
        # Timeouts are wall-clock: more sandboxes than CPUs would fail correct programs (seed 000).
        self.concurrency = min(concurrency or CPU_COUNT, CPU_COUNT)
        self.compare: CompareMode = compare  # type: ignore[assignment]
        self.tolerances = (float_rel_tol, float_abs_tol)
        self._pool: SandboxPool | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------

    def _started(self) -> tuple[SandboxPool, ThreadPoolExecutor]:
        with self._lock:
            if self._pool is None or self._executor is None:
                self._pool = SandboxPool(self.config, self.concurrency)
                self._executor = ThreadPoolExecutor(self.concurrency, thread_name_prefix="code-tests")
                weakref.finalize(self, _shutdown, self._pool, self._executor)
            return self._pool, self._executor

    def close(self) -> None:
        """Stop every sandbox slot; a later ``evaluate`` starts new ones."""
        with self._lock:
            pool, executor = self._pool, self._executor
            self._pool = self._executor = None
        if pool is not None and executor is not None:
            _shutdown(pool, executor)

    # -- scoring -----------------------------------------------------------------------------------

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        plan = parse_reference(request.context.reference)
        pool, executor = self._started()
        # The request's scope, passed on by hand: this executor's threads do not see our context.
        scope = current()
        futures = [
            executor.submit(self.score, pool, plan, candidate, scope) for candidate in request.candidates
        ]
        try:
            items = tuple(
                RewardCandidateResult(candidate.trajectory_id, future.result())
                for candidate, future in zip(request.candidates, futures)
            )
        except BaseException:
            for future in futures:  # a cancelled request's cases that have not started never start
                future.cancel()
            if scope.cancelled:
                # The running ones were killed and end at once: wait, so that when the request
                # ends its sandboxes are reaped and their slots free.
                concurrent.futures.wait(futures)
            raise
        return RewardGroupResult(request.group_id, items)

    def score(
        self, pool: SandboxPool, plan: TestPlan, candidate: RewardCandidate, scope: CancelScope = NEVER
    ) -> RewardProviderResult:
        """Score one candidate; a sandbox that cannot run it makes the result an error.

        When ``scope`` is cancelled, a case not started never starts and a running one is killed;
        either raises the scope's error, since a killed program has no verdict.
        """
        scope.raise_if_cancelled()
        program = plan.program_from(candidate.completion)
        if plan.unsupported:
            return RewardProviderResult.skip(
                f"code-tests: the tests cannot be judged here: {plan.unsupported}"
            )
        try:
            if plan.mode == "asserts":
                response = pool.run(self._request(plan, program), scope)
                outcome = outcome_of_asserts(response, plan.case_count)
                if isinstance(outcome, RewardProviderResult):
                    return outcome
            else:
                outcome = self._run_io(pool, plan, program, scope)
        except SandboxError as error:
            scope.raise_if_cancelled()
            return RewardProviderResult.fail(f"sandbox: {error}")
        scope.raise_if_cancelled()
        return outcome.result()

    def _request(self, plan: TestPlan, program: str, stdin: str | None = None) -> dict[str, Any]:
        config = self.config
        return {
            "mode": plan.mode,
            "program": program,
            "tests": list(plan.tests),
            "setup": plan.setup,
            "trusted": plan.trusted,
            "expose": list(plan.expose),
            "module_name": "__main__" if plan.mode == "io" else "solution",
            "stdin": stdin,
            "timeout": config.timeout_s,
            "limits": config.limits(),
            "output_cap": config.output_limit_bytes,
        }

    def _run_io(self, pool: SandboxPool, plan: TestPlan, program: str, scope: CancelScope) -> CaseOutcome:
        statuses: list[str] = []
        flags = {"runtime": False, "timeout": False, "truncated": False}
        with pool.lease(scope) as slot:
            for index, (given, expected) in enumerate(zip(plan.inputs, plan.outputs)):
                response = slot.run(self._request(plan, program, stdin=given))
                if response["program"] == "compile_error":
                    # deterministic: no other case can do better
                    rest = ["fail:compile_error"] * (len(plan.inputs) - index)
                    return CaseOutcome(tuple(statuses + rest), compile_error=True, **_io_flags(flags))
                statuses.append(self._io_status(response, expected, flags))
        return CaseOutcome(tuple(statuses), **_io_flags(flags))

    def _io_status(self, response: dict[str, Any], expected: str, flags: dict[str, bool]) -> str:
        if response["timed_out"]:
            flags["timeout"] = True
            return "timeout"
        if response["program"] != "ok":
            flags["runtime"] = True
            return "error:" + str(response["program"])
        if response["truncated"]:
            flags["truncated"] = True
            return "fail:output_limit"
        rel_tol, abs_tol = self.tolerances
        if outputs_match(response["stdout"], expected, self.compare, rel_tol, abs_tol):
            return "pass"
        return "fail:wrong_output"


def _io_flags(flags: dict[str, bool]) -> dict[str, bool]:
    return {"runtime_error": flags["runtime"], "timeout": flags["timeout"], "truncated": flags["truncated"]}


def _shutdown(pool: SandboxPool, executor: ThreadPoolExecutor) -> None:
    executor.shutdown(wait=True)
    pool.close()
