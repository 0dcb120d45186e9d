"""Who a failed verdict is charged to: the candidate whose fault reproduces beside a canary.

A question whose verdict stayed unreadable or off the scale after the re-asks, that the judge
refused for its content, or whose request failed (a 5xx, a timeout, a dropped connection: a
payload can bring a model server down) *could* be the judge's fault as much as the candidate's. It is decided
with the core's one rule (``rewardkit.scoring.reproduction``): a **canary** is asked live, to the same
judge with the same prompt layout and limits, holding answers drawn per request from the group
(other candidates' answers a live verdict read, never the suspect's text, never a fixed public
list: ``stand_ins``); it passes when its verdict is readable and on the scale. Then the suspect
is asked once more, alone and live (a comparative judge compares it with another partner, drawn
the same way, in both orders). It fails again: charged (every term at its worst, the reason, the
kind's diagnostic = 1, the evidence in the ``reproduction`` note). It reads: that second verdict
counts. The canary fails: the judge's fault, an error that names the canary. Past the batch's
rerun budget (the spec's ``reruns.per_batch``), the canary alone decides.

A refusal for length (``too_long``) needs no rerun: the request held the task and the
candidate's text, and a canary (the same task with another answer, asked live) shows the task
fits, so the length is the candidate's. What says nothing about the request (a 429 that outlasts
the deadline, the group's deadline, the cache: ``infra``) is never charged; a rerun that fails
that way decides nothing either, and the candidate is an error.

When the group holds no other answer a live verdict read (a group of one, or every answer failed
alike), the stand-in is the task's own text given as an answer: it is drawn from the row, not from
a public list, but a candidate can recognise it, so a payload that behaves only beside it escapes
its charge (it hurts no sibling by that).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rewardkit.plugin import CanaryFailed, Charged, Fault, MetricContribution, RewardProviderResult
from rewardkit_nih_judge.client import Exchange, JudgeFailure

# failure kind -> the diagnostic set to 1 when it is charged
CHARGES: Mapping[str, str] = {
    "unreadable": "verdict_unreadable",
    "off_scale": "off_scale",
    "refused": "verdict_refused",
    "too_long": "too_long_for_judge",
    "request_failed": "request_failed",
}
CHARGE_DIAGNOSTICS = tuple(CHARGES.values())
WORST = {"score": 0.0}
TASK_AS_ANSWER = "the task's own text, given as an answer"
ENDPOINT = "endpoint"  # what a judge's canary runs on (CanaryFailed's ``where``)

Outcome = Exchange | JudgeFailure
# Stand-ins are drawn from the operating system's randomness: no seed a candidate could learn.
_DRAW = random.SystemRandom()


def chargeable(outcome: Outcome) -> bool:
    """A failure the candidate's text can have caused (to be decided by reproduction)."""
    return isinstance(outcome, JudgeFailure) and outcome.kind in CHARGES


def fault_of(failure: JudgeFailure) -> Fault:
    """The ``reproduction`` fault of a chargeable ``failure``: its diagnostic and its reason."""
    return Fault(CHARGES[failure.kind], failure.reason)


def uncharged() -> tuple[MetricContribution, ...]:
    """The charge diagnostics of a candidate that was not charged: 0 each, so their means are rates."""
    return tuple(MetricContribution(name, 0.0) for name in CHARGE_DIAGNOSTICS)


def charge(charged: Charged, diagnostics: tuple[MetricContribution, ...]) -> RewardProviderResult:
    """The candidate's verdict for a fault that is its own: score 0, the reason, the kind's
    diagnostic = 1 (the other charge diagnostics 0), the evidence in the ``reproduction`` note."""
    name = charged.fault.kind
    zeros = tuple(MetricContribution(other, 0.0) for other in CHARGE_DIAGNOSTICS if other != name)
    return charged.result(WORST, diagnostic=name, diagnostics=(*diagnostics, *zeros))


def at_endpoint(failed: CanaryFailed) -> str:
    """``failed``'s message in a judge's words: its canary was asked of the same endpoint."""
    return str(CanaryFailed(failed.fault, failed.canary, failed.why, where=ENDPOINT))


def why_failed(outcomes: Iterable[Outcome]) -> str | None:
    """A canary's verdict: None when every question of it was read, else why one was not."""
    return next((outcome.reason for outcome in outcomes if isinstance(outcome, JudgeFailure)), None)


def again(outcomes: Sequence[Outcome]) -> Fault | None:
    """What a suspect asked again alone said: None when it was read, the ``Fault`` when it failed
    in a way its text can cause; a failure of the infrastructure is raised (it decides nothing)."""
    failures = [outcome for outcome in outcomes if isinstance(outcome, JudgeFailure)]
    for failure in failures:
        if not chargeable(failure):
            raise failure
    return fault_of(failures[0]) if failures else None


@dataclass(frozen=True)
class StandIn:
    """A text asked in a candidate's place, as a canary or as a comparison partner."""

    text: str
    name: str


def stand_ins(
    texts: Sequence[str],
    ids: Sequence[str],
    suspect: int,
    clean: Collection[int],
    count: int,
    task: str,
    avoid: Collection[int] = (),
) -> list[StandIn]:
    """``count`` stand-ins for ``suspect``, drawn per request from the answers of the group that a
    live verdict read (``clean``) other than the suspect's own text: first those not in ``avoid``
    (the partners it failed with), then those. Fewer such answers than ``count``: the ones drawn
    stand again (an answer compared with itself); none: the task's own text (see the module doc)."""
    own = texts[suspect]
    pool = [index for index in clean if index != suspect and texts[index] != own]
    preferred = [index for index in pool if index not in avoid]
    rest = [index for index in pool if index in avoid]
    order = _DRAW.sample(preferred, len(preferred)) + _DRAW.sample(rest, len(rest))
    drawn = [StandIn(texts[index], f"the answer of {ids[index]!r}") for index in order[:count]]
    while len(drawn) < count:
        drawn.append(drawn[0] if drawn else StandIn(task, TASK_AS_ANSWER))
    return drawn


async def canary_decides(
    fault: Fault, canary_name: str, canary: Callable[[], Awaitable[str | None]]
) -> Charged:
    """A fault that needs no rerun (a refusal for length): the candidate's when the canary passes;
    ``CanaryFailed`` when it does not."""
    why = await canary()
    if why is not None:
        raise CanaryFailed(fault, canary_name, why, where=ENDPOINT)
    return Charged(
        fault, f"the judge read the same task with another answer just now ({canary_name})", rerun=False
    )
