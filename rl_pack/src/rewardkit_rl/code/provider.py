"""The ``code-tests`` provider: run each candidate's program against the reference's tests.

A candidate can only hurt itself. What its program causes is a verdict on it (every term 0, the
reason set, a diagnostic = 1), never an error, but only on evidence that the run caused it: the
runner saw it exit, crash, overflow its output, hit its rlimits, leave processes behind
(``sandbox_broken_by_candidate``), or pass its deadline while it ran or slept on its own (its CPU
time at least ``starved_cpu_share`` of the timeout, or its run-queue wait at most
``starved_wait_share`` of it). A run that timed out starved of CPU by the machine is run again once
(``starved_reruns``); starved twice, it is an infrastructure error. A host-level failure (a slot
that does not start, a runner that stops answering) is an infrastructure error too, unless running
the same candidate in a fresh slot fails again *and* a canary program then passes in a fresh slot:
then the candidate broke the sandbox and is charged. Infrastructure errors are results with
``status="error"``, which the composition's ``onError`` turns into a failed batch by default.
"""

from __future__ import annotations

import concurrent.futures
import threading
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypedDict

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
from rewardkit_rl.code.sandbox import USABLE_CPUS, SandboxConfig, SandboxError, SandboxPool, Slot

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
    "sandbox_broken_by_candidate",
    "starved_reruns",
)
# A program that must pass in any working sandbox; run after a candidate broke one twice.
CANARY = "print(sum(range(10)))\n"
CANARY_OUTPUT = "45"


@dataclass(frozen=True)
class CaseOutcome:
    """The verdicts of one candidate: one status per case, plus what went wrong overall."""

    statuses: tuple[str, ...]
    compile_error: bool = False
    runtime_error: bool = False
    timeout: bool = False
    truncated: bool = False
    broken: str | None = None  # how the candidate broke the sandbox, when it did
    starved_reruns: int = 0

    def result(self) -> RewardProviderResult:
        if self.broken is not None:
            statuses = tuple("fail:sandbox_broken" for _ in self.statuses)
            return _result(statuses, self, f"code-tests: the candidate {self.broken}")
        return _result(self.statuses, self, self._reason())

    def _reason(self) -> str | None:
        if self.timeout:
            return "code-tests: the program ran past its deadline"
        if self.compile_error:
            return "code-tests: the program does not compile"
        if self.truncated:
            return "code-tests: the program's output passed its limit"
        if self.runtime_error:
            return "code-tests: the program failed while it ran"
        return None


def _result(statuses: tuple[str, ...], outcome: CaseOutcome, reason: str | None) -> RewardProviderResult:
    """The result of a candidate's case statuses; ``reason`` says what the candidate caused."""
    counts = Counter(status.split(":", 1)[0] for status in statuses)
    total = len(statuses)
    passed = counts["pass"]
    diagnostics = (
        ("cases_total", total),
        ("cases_passed", passed),
        ("cases_failed", total - passed - counts["error"] - counts["timeout"]),
        ("cases_error", counts["error"]),
        ("cases_timeout", counts["timeout"]),
        ("timeout", outcome.timeout),
        ("runtime_error", outcome.runtime_error or counts["error"] > 0),
        ("compile_error", outcome.compile_error),
        ("output_truncated", outcome.truncated),
        ("sandbox_broken_by_candidate", outcome.broken is not None),
        ("starved_reruns", outcome.starved_reruns),
    )
    return RewardProviderResult(
        terms={"pass_rate": passed / total, "all_passed": float(passed == total)},
        diagnostics=tuple(MetricContribution(name, float(value)) for name, value in diagnostics),
        reason=reason if passed < total else None,
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
        starved_cpu_share: float = 0.5,
        starved_wait_share: float = 0.25,
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
        # Timeouts are wall-clock: more sandboxes than CPUs would fail correct programs, so the pool
        # is bounded by the CPUs this process may use.
        self.concurrency = min(concurrency or USABLE_CPUS, USABLE_CPUS)
        self.compare: CompareMode = compare  # type: ignore[assignment]
        self.tolerances = (float_rel_tol, float_abs_tol)
        self.starved_shares = (starved_cpu_share, starved_wait_share)
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
                with pool.lease(scope) as slot:
                    response = self._attributed(slot, self._request(plan, program))
                if "broken" in response:
                    return CaseOutcome(
                        ("fail:sandbox_broken",) * plan.case_count, broken=response["broken"]
                    ).result()
                outcome = outcome_of_asserts(response, plan.case_count)
                if isinstance(outcome, RewardProviderResult):
                    return outcome
                outcome = replace(outcome, starved_reruns=response["starved_reruns"])
            else:
                outcome = self._run_io(pool, plan, program, scope)
        except SandboxError as error:
            scope.raise_if_cancelled()
            return RewardProviderResult.fail(f"sandbox: {error}")
        scope.raise_if_cancelled()
        return outcome.result()

    # -- who caused it ---------------------------------------------------------------------------

    def _starved(self, response: dict[str, Any]) -> bool:
        """Timed out while the machine, not the program, held the time: little CPU, long run-queue
        waits, and no more runnable threads than CPUs (a run with more, a fork bomb say, waited on
        itself)."""
        if not response.get("timed_out") or "cpu_s" not in response:
            return False
        cpu_share, wait_share = self.starved_shares
        timeout = self.config.timeout_s
        return (
            response["cpu_s"] < cpu_share * timeout
            and response["wait_s"] > wait_share * timeout
            and response["runnable"] <= USABLE_CPUS
        )

    def _attributed(self, slot: Slot, request: dict[str, Any]) -> dict[str, Any]:
        """One run, with its faults charged only on evidence (see the module docstring).

        Returns the runner's answer (with ``starved_reruns``), or ``{"broken": why}`` when the
        candidate broke the sandbox; raises ``SandboxError`` for an infrastructure failure.
        """
        reruns = 0
        while True:
            try:
                response = slot.run(request)
            except SandboxError as error:
                return self._after_host_failure(slot, request, error)
            if response.get("left_running"):
                return {"broken": "left processes running that the sandbox had to be restarted to end"}
            if not self._starved(response):
                return {**response, "starved_reruns": reruns}
            if reruns:
                raise SandboxError(
                    f"the program's run was starved of CPU twice (it ran {response['cpu_s']:.2f} s of "
                    f"its {self.config.timeout_s:g} s and waited {response['wait_s']:.2f} s for a CPU): "
                    "the machine is overloaded (a co-located trainer?); give the sandbox its own cores"
                )
            reruns += 1

    def _after_host_failure(self, slot: Slot, request: dict[str, Any], error: SandboxError) -> dict[str, Any]:
        slot.scope.raise_if_cancelled()  # a cancelled request's slot was killed on purpose
        try:
            response = slot.run(request)  # a fresh slot: the failure stopped the old one
        except SandboxError as again:
            slot.scope.raise_if_cancelled()
            canary = self._canary_error(slot)
            if canary is not None:
                raise SandboxError(f"{error} (and a canary program failed too: {canary})") from again
            return {"broken": f"broke the sandbox twice in fresh slots ({again}) where a canary passed"}
        return {**response, "starved_reruns": 0}

    def _canary_error(self, slot: Slot) -> str | None:
        """Why a trivial program fails in a fresh slot, or None when it passes."""
        config = self.config
        request = {
            "mode": "io",
            "program": CANARY,
            "stdin": "",
            "timeout": config.timeout_s,
            "limits": config.limits(),
            "output_cap": config.output_limit_bytes,
        }
        try:
            response = slot.run(request)
        except SandboxError as error:
            return str(error)
        if response["program"] != "ok" or response["stdout"].strip() != CANARY_OUTPUT:
            return f"it answered {response['program']} with {response['stdout'][:80]!r}"
        return None

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
        reruns = 0
        with pool.lease(scope) as slot:
            for index, (given, expected) in enumerate(zip(plan.inputs, plan.outputs)):
                response = self._attributed(slot, self._request(plan, program, stdin=given))
                if "broken" in response:
                    return CaseOutcome(("fail:sandbox_broken",) * len(plan.inputs), broken=response["broken"])
                reruns += response["starved_reruns"]
                if response["program"] == "compile_error":
                    # deterministic: no other case can do better
                    rest = ["fail:compile_error"] * (len(plan.inputs) - index)
                    return CaseOutcome(
                        tuple(statuses + rest), compile_error=True, starved_reruns=reruns, **_io_flags(flags)
                    )
                statuses.append(self._io_status(response, expected, flags))
        return CaseOutcome(tuple(statuses), starved_reruns=reruns, **_io_flags(flags))

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


class _IOFlags(TypedDict):
    runtime_error: bool
    timeout: bool
    truncated: bool


def _io_flags(flags: dict[str, bool]) -> _IOFlags:
    return {"runtime_error": flags["runtime"], "timeout": flags["timeout"], "truncated": flags["truncated"]}


def _shutdown(pool: SandboxPool, executor: ThreadPoolExecutor) -> None:
    executor.shutdown(wait=True)
    pool.close()
