"""The ``code-tests`` provider: run each candidate's program against the reference's tests.

A candidate can only hurt itself. What its program causes is a verdict on it (its failed cases
count, the reason set, a diagnostic = 1), never an error. A program's own deterministic outcomes
are charged as the runner reports them: its exit status or exception, a compile error, output over
the cap, rlimit hits, processes left behind (``sandbox_broken_by_candidate``).

A fault that *could* be the infrastructure's, a run that timed out or a slot that failed under it
(a slot that did not start, a runner that stopped answering), is decided by reproduction
(``rewardkit.scoring.reproduction``), never from figures the program controls: a canary program drawn for
this fault (it adds two random numbers, so no candidate can recognise it) runs in the same slot with
the same limits and timeout, then the faulting run is run once more, alone in that slot. It faults
again: the candidate's (a timed-out case stays ``timeout``, a failed slot is
``sandbox_broken_by_candidate``), with the evidence in the ``reproduction`` note. It does not: the
second answer is the candidate's. The canary fails: an infrastructure error (``status="error"``,
naming the canary), which the composition's ``onError`` turns into a failed batch by default. Past
the batch's rerun budget (``reruns.per_batch`` of the spec) the canary alone decides.
"""

from __future__ import annotations

import concurrent.futures
import secrets
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from rewardkit.plugin import (
    NEVER,
    REPRODUCTION_NOTE,
    CanaryFailed,
    CancelScope,
    Charged,
    Fault,
    MetricContribution,
    RerunBudget,
    RewardCandidate,
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    current,
    reproduce,
    rerun_budget,
)
from rewardkit_rl.code.compare import COMPARE_MODES, CompareMode, outputs_match
from rewardkit_rl.code.reference import TestPlan, parse_reference
from rewardkit_rl.code.sandbox import (
    USABLE_CPUS,
    PoolOnFirstUse,
    SandboxConfig,
    SandboxError,
    SandboxPool,
    Slot,
)

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
    "reruns",
)
# Params of revision 3's starvation rule: accepted so existing configs load, ignored, refused in 0.3.
DEPRECATED_PARAMS = ("starved_cpu_share", "starved_wait_share")
CANARY_NAME = "a program adding two numbers drawn for this fault, run in the same slot with the same limits"
_TIMED_OUT = "the program ran past its deadline"
_LEFT_RUNNING = "the candidate left processes running that the sandbox had to be restarted to end"


@dataclass(frozen=True)
class CaseOutcome:
    """The verdicts of one candidate: one status per case, plus what went wrong overall.

    ``charges`` are the faults that reproduced (their evidence goes in the reason and the
    ``reproduction`` note); ``unreproduced`` says which faults did not (the note only);
    ``reruns`` counts the candidate's runs made again to find out."""

    statuses: tuple[str, ...]
    compile_error: bool = False
    runtime_error: bool = False
    timeout: bool = False
    truncated: bool = False
    broken: str | None = None  # how the candidate broke the sandbox, when it did
    reruns: int = 0
    charges: tuple[Charged, ...] = ()
    unreproduced: tuple[str, ...] = ()

    def result(self) -> RewardProviderResult:
        if self.broken is not None:
            statuses = tuple("fail:sandbox_broken" for _ in self.statuses)
            return _result(statuses, self, f"code-tests: {self.broken}")
        return _result(self.statuses, self, self._reason())

    def _reason(self) -> str | None:
        if self.timeout:
            timed_out = [charge for charge in self.charges if charge.fault.kind == "timeout"]
            return f"code-tests: {timed_out[0].reason if timed_out else _TIMED_OUT}"
        if self.compile_error:
            return "code-tests: the program does not compile"
        if self.truncated:
            return "code-tests: the program's output passed its limit"
        if self.runtime_error:
            return "code-tests: the program failed while it ran"
        if any(status == "error:CandidateGone" for status in self.statuses):
            return (
                "code-tests: the program's process broke its channel to the tests (a reply garbled, "
                "cut short or missing, as when a process it forked writes into that channel)"
            )
        return None

    def with_decisions(self, decided: list[_Decided]) -> CaseOutcome:
        """This outcome with what reproducing the faults of ``decided`` (its runs) found."""
        return replace(
            self,
            reruns=self.reruns + sum(run.reruns for run in decided),
            charges=self.charges + tuple(run.charged for run in decided if run.charged is not None),
            unreproduced=self.unreproduced + tuple(run.unreproduced for run in decided if run.unreproduced),
        )


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
        ("reruns", outcome.reruns),
    )
    evidence = [charge.evidence for charge in outcome.charges] + list(outcome.unreproduced)
    return RewardProviderResult(
        terms={"pass_rate": passed / total, "all_passed": float(passed == total)},
        diagnostics=tuple(MetricContribution(name, float(value)) for name, value in diagnostics),
        reason=reason if passed < total else None,
        notes={REPRODUCTION_NOTE: "; ".join(evidence)} if evidence else None,
    )


@dataclass(frozen=True)
class RunFault(Fault):
    """A fault of one run that could be the infrastructure's; ``response`` is the runner's answer
    when there was one (a timed-out run), None when the slot failed under the run."""

    response: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class _Decided:
    """One run once its fault, if any, was decided: the answer to read (None when the candidate
    broke the sandbox, ``broken`` saying how), the charge when the fault reproduced, what did not
    reproduce, and how many times the run was made again."""

    response: dict[str, Any] | None
    broken: str | None = None
    charged: Charged | None = None
    unreproduced: str | None = None
    reruns: int = 0


@dataclass(frozen=True)
class Canary:
    """A program that passes in any working slot, drawn afresh for each fault (two random numbers
    to add), so that no candidate can tell it from a real task or know its answer in advance."""

    plan: TestPlan
    program: str

    @classmethod
    def drawn(cls, mode: str) -> Canary:
        first, second = secrets.randbelow(10**9), secrets.randbelow(10**9)
        if mode == "io":
            plan = parse_reference({"inputs": [f"{first} {second}\n"], "outputs": [str(first + second)]})
            return cls(plan, "first, second = map(int, input().split())\nprint(first + second)\n")
        name = f"add_{secrets.token_hex(4)}"
        plan = parse_reference({"test_list": [f"assert {name}({first}, {second}) == {first + second}"]})
        return cls(plan, f"def {name}(first, second):\n    return first + second\n")

    def failure(self, response: dict[str, Any]) -> str | None:
        """Why the runner's ``response`` to this canary is not a pass, or None."""
        if response.get("left_running"):
            return "it left processes running"
        if response["timed_out"]:
            return "it ran past its deadline"
        if self.plan.mode == "io":
            if response["program"] != "ok" or not outputs_match(
                response["stdout"], self.plan.outputs[0], "token", 0.0, 0.0
            ):
                return f"it answered {response['program']} with {response['stdout'][:80]!r}"
            return None
        outcome = outcome_of_asserts(response, 1)
        if not isinstance(outcome, CaseOutcome) or outcome.statuses != ("pass",):
            shown = outcome.statuses if isinstance(outcome, CaseOutcome) else outcome.reason
            return f"its test did not pass ({shown})"
        return None


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
        starved_cpu_share: float | None = None,
        starved_wait_share: float | None = None,
    ) -> None:
        if compare not in COMPARE_MODES:
            raise ValueError(f"code-tests: compare must be one of {list(COMPARE_MODES)}, got {compare!r}")
        if concurrency is not None and (
            not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1
        ):
            raise ValueError(f"code-tests: concurrency must be a positive integer, got {concurrency!r}")
        given = zip(DEPRECATED_PARAMS, (starved_cpu_share, starved_wait_share), strict=True)
        warn_deprecated([name for name, value in given if value is not None])
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
        self._sandboxes = PoolOnFirstUse(self.concurrency, "code-tests")

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def _pool(self) -> SandboxPool | None:
        return self._sandboxes.pool

    def _started(self) -> tuple[SandboxPool, ThreadPoolExecutor]:
        return self._sandboxes.started(self.config)

    def close(self) -> None:
        """Stop every sandbox slot; a later ``evaluate`` starts new ones."""
        self._sandboxes.close()

    # -- scoring -----------------------------------------------------------------------------------

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        plan = parse_reference(request.context.reference)
        pool, executor = self._started()
        # The request's scope and its batch's rerun budget, passed on by hand: this executor's
        # threads do not see our context.
        scope = current()
        budget = rerun_budget()
        futures = [
            executor.submit(self.score, pool, plan, candidate, scope, budget)
            for candidate in request.candidates
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
        self,
        pool: SandboxPool,
        plan: TestPlan,
        candidate: RewardCandidate,
        scope: CancelScope = NEVER,
        budget: RerunBudget | None = None,
    ) -> RewardProviderResult:
        """Score one candidate; a slot whose canary fails makes the result an error.

        ``budget``: the batch's reruns (this thread's ``rerun_budget()`` when None). When ``scope``
        is cancelled, a case not started never starts and a running one is killed; either raises
        the scope's error, since a killed program has no verdict.
        """
        scope.raise_if_cancelled()
        budget = budget or rerun_budget()
        program = plan.program_from(candidate.completion)
        if plan.unsupported:
            return RewardProviderResult.skip(
                f"code-tests: the tests cannot be judged here: {plan.unsupported}"
            )
        try:
            with pool.lease(scope) as slot:
                if plan.mode == "asserts":
                    outcome = self._run_asserts(slot, plan, program, budget)
                else:
                    outcome = self._run_io(slot, plan, program, budget)
        except CanaryFailed as error:
            scope.raise_if_cancelled()
            return RewardProviderResult.fail(f"sandbox: {error}")
        except SandboxError as error:  # the pool is closed or its uids are spent
            scope.raise_if_cancelled()
            return RewardProviderResult.fail(f"sandbox: {error}")
        scope.raise_if_cancelled()
        return outcome if isinstance(outcome, RewardProviderResult) else outcome.result()

    def _run_asserts(
        self, slot: Slot, plan: TestPlan, program: str, budget: RerunBudget
    ) -> CaseOutcome | RewardProviderResult:
        decided = self._decided(slot, self._request(plan, program), budget)
        if decided.response is None:
            broken = ("fail:sandbox_broken",) * plan.case_count
            return CaseOutcome(broken, broken=decided.broken).with_decisions([decided])
        outcome = outcome_of_asserts(decided.response, plan.case_count)
        if isinstance(outcome, RewardProviderResult):
            return outcome
        return outcome.with_decisions([decided])

    def _run_io(self, slot: Slot, plan: TestPlan, program: str, budget: RerunBudget) -> CaseOutcome:
        statuses: list[str] = []
        flags = {"runtime": False, "timeout": False, "truncated": False}
        decisions: list[_Decided] = []
        # One run per case, but one candidate: it is scored again once at most, whatever number of
        # its cases fault, so a program that times out on every case leaves the batch's other
        # reruns to its siblings; its later faults are decided by a canary alone.
        share = _CandidateReruns(budget)
        for index, (given, expected) in enumerate(zip(plan.inputs, plan.outputs)):
            decided = self._decided(slot, self._request(plan, program, stdin=given), share)
            decisions.append(decided)
            if decided.response is None:
                broken = ("fail:sandbox_broken",) * len(plan.inputs)
                return CaseOutcome(broken, broken=decided.broken).with_decisions(decisions)
            response = decided.response
            if response["program"] == "compile_error":
                # deterministic: no other case can do better
                rest = ["fail:compile_error"] * (len(plan.inputs) - index)
                outcome = CaseOutcome(tuple(statuses + rest), compile_error=True, **_io_flags(flags))
                return outcome.with_decisions(decisions)
            statuses.append(self._io_status(response, expected, flags))
        return CaseOutcome(tuple(statuses), **_io_flags(flags)).with_decisions(decisions)

    # -- who caused it ---------------------------------------------------------------------------

    def _attempt(self, slot: Slot, request: dict[str, Any]) -> dict[str, Any] | RunFault:
        """One run in ``slot``: the runner's answer, or the fault that could be the infrastructure's."""
        try:
            response = slot.run(request)
        except SandboxError as error:
            slot.scope.raise_if_cancelled()  # a cancelled request's slot was killed on purpose
            return RunFault("sandbox_failure", f"the sandbox failed under the program ({error})")
        # Processes the runner could not end are the run's own doing, whether or not it timed out.
        if response["timed_out"] and not response.get("left_running"):
            return RunFault("timeout", _TIMED_OUT, response)
        return response

    def _decided(self, slot: Slot, request: dict[str, Any], budget: RerunBudget) -> _Decided:
        """One run, with a fault that could be the infrastructure's decided by reproduction (see the
        module docstring); raises ``CanaryFailed`` when the slot fails its canary."""
        first = self._attempt(slot, request)
        if not isinstance(first, RunFault):
            return _answered(first)
        again: list[dict[str, Any] | RunFault] = []

        def rerun() -> dict[str, Any] | RunFault:
            again.append(self._attempt(slot, request))  # the slot is leased: the run is alone in it
            return again[-1]

        had_its_rerun = isinstance(budget, _CandidateReruns) and budget.asked
        verdict = reproduce(
            first,
            canary_name=CANARY_NAME,
            canary=lambda: self._canary_failure(slot, request["mode"]),
            rerun=rerun,
            budget=budget,
        )
        reruns = len(again)
        if isinstance(verdict, Charged) and had_its_rerun:
            verdict = replace(verdict, evidence=_ONE_RERUN_SPENT)
        if isinstance(verdict, Charged):
            # A timed-out answer, the second's when there is one, says which cases had run.
            answers = [fault.response for fault in (*again, first) if isinstance(fault, RunFault)]
            response = next((answer for answer in answers if answer is not None), None)
            if response is None:
                broken = f"the candidate broke the sandbox: {verdict.reason}"
                return _Decided(None, broken=broken, charged=verdict, reruns=reruns)
            if verdict.fault.kind != "timeout":  # the slot failed first, then the run timed out
                verdict = Charged(Fault("timeout", _TIMED_OUT), verdict.evidence, verdict.rerun)
            return _Decided(response, charged=verdict, reruns=reruns)
        unreproduced = (
            f"not reproduced: {first.detail} on its first run; scored again alone after a canary "
            "passed, it did not, and the second run counts"
        )
        return replace(_answered(verdict), unreproduced=unreproduced, reruns=reruns)

    def _canary_failure(self, slot: Slot, mode: str) -> str | None:
        """Why a canary drawn now fails in ``slot`` (restarted if a failure stopped it), or None."""
        canary = Canary.drawn(mode)
        try:
            stdin = canary.plan.inputs[0] if canary.plan.inputs else None
            response = slot.run(self._request(canary.plan, canary.program, stdin=stdin))
        except SandboxError as error:
            slot.scope.raise_if_cancelled()
            return str(error)
        return canary.failure(response)

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


_ONE_RERUN_SPENT = (
    "not scored again: one rerun per candidate, not per test case, and an earlier case of this "
    "candidate had it; a canary passed on the worker"
)


class _CandidateReruns(RerunBudget):
    """One candidate's share of its batch's reruns, for a candidate run once per test case: the
    first of its faults asks the batch for a rerun (which may have none left); every later one is
    refused, so the canary alone decides it."""

    def __init__(self, batch: RerunBudget) -> None:
        super().__init__(batch.per_batch)
        self.batch = batch
        self.asked = False

    def take(self) -> bool:
        with self._lock:
            first, self.asked = not self.asked, True
            self.canaries += 1
        return self.batch.take() if first else False


def _answered(response: dict[str, Any]) -> _Decided:
    """A run the runner answered: its answer, or the charge for processes it left running."""
    if response.get("left_running"):
        return _Decided(None, broken=_LEFT_RUNNING)
    return _Decided(response)


def warn_deprecated(names: list[str]) -> None:
    """Warn that the params ``names`` of the removed starvation rule are ignored (they still load)."""
    if names:
        warnings.warn(
            f"code-tests: params {names} are deprecated and ignored: a timed-out run is charged only when "
            "it times out again alone in its slot after a canary passed there (docs/code_rewards.md"
            "#who-caused-it), never from its CPU figures; remove them, they are refused from 0.3",
            FutureWarning,
            stacklevel=3,
        )


class _IOFlags(TypedDict):
    runtime_error: bool
    timeout: bool
    truncated: bool


def _io_flags(flags: dict[str, bool]) -> _IOFlags:
    return {"runtime_error": flags["runtime"], "timeout": flags["timeout"], "truncated": flags["truncated"]}
