"""Who a failed verdict is charged to: a candidate can only hurt itself, and only on evidence.

A question whose verdict stayed unreadable or off the scale after the re-asks, or that the server
refused for its length, is a verdict on the candidate whose text it held (every term at its worst,
the reason, a diagnostic = 1) when, and only when, the same judge gave a readable verdict to
another question of the group (not one read back from the cache), or to a *canary*: the same
task with a fixed plain answer (``CANARY_ANSWERS``), asked live. Without that evidence the judge
itself is the likelier fault and the failure stays an error (infrastructure). Transport errors,
408/429/5xx, timeouts and the deadline are always errors.

Charges on an unreadable or off-scale verdict are ``nondeterministic`` (the core voids them as a
batch's infrastructure fault when too many candidates are charged on them); a refusal for length
is ``deterministic``. Comparisons hold two or more candidates, so before one is charged each
suspect is *probed*: compared with a canary answer in both orders; a suspect whose probe fails
the same way is charged, one whose probe reads is not (see ``compare``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rewardkit.contracts import MetricContribution, RewardProviderResult
from rewardkit_nih_judge.client import Exchange, JudgeFailure

# failure kind -> (diagnostic, deterministic evidence)
CHARGES: Mapping[str, tuple[str, bool]] = {
    "unreadable": ("verdict_unreadable", False),
    "off_scale": ("off_scale", False),
    "too_long": ("too_long_for_judge", True),
}
CHARGE_DIAGNOSTICS = tuple(diagnostic for diagnostic, _ in CHARGES.values())
CANARY_ANSWERS = ("I do not know.", "I am not sure.")
UNPROVEN = (
    "not charged to the candidate: no other verdict of this judge in the group was readable, nor a canary's"
)

Outcome = Exchange | JudgeFailure


def chargeable(outcome: Outcome) -> bool:
    """A failure the candidate's text can have caused."""
    return isinstance(outcome, JudgeFailure) and outcome.kind in CHARGES


def readable(outcomes: Iterable[Outcome]) -> bool:
    """Whether any of ``outcomes`` is a verdict the judge gave just now (not from the cache)."""
    return any(isinstance(outcome, Exchange) and not outcome.cached for outcome in outcomes)


def uncharged() -> tuple[MetricContribution, ...]:
    """The charge diagnostics of a candidate that was not charged: 0 each, so their means are rates."""
    return tuple(MetricContribution(name, 0.0) for name in CHARGE_DIAGNOSTICS)


def charge(
    failure: JudgeFailure,
    diagnostics: tuple[MetricContribution, ...],
    worst: Mapping[str, float],
    evidence: str,
) -> RewardProviderResult:
    """The candidate's verdict for ``failure``; ``evidence`` says why it is the candidate's."""
    name, deterministic = CHARGES[failure.kind]
    zeros = tuple(MetricContribution(other, 0.0) for other in CHARGE_DIAGNOSTICS if other != name)
    return RewardProviderResult.charged(
        f"charged to this candidate: {failure.reason} ({evidence})",
        name,
        worst,
        deterministic=deterministic,
        diagnostics=(*diagnostics, *zeros),
    )


def unproven(reason: str, failures: Iterable[Outcome]) -> str:
    """``reason`` of an error, saying why it was not charged when it could have been."""
    return f"{reason}; {UNPROVEN}" if any(chargeable(outcome) for outcome in failures) else reason
