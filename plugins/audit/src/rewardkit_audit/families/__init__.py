"""Attack families for the core's built-in providers (gsm8k, arithmetic, exact-match, countdown,
constant, nonempty), registered like any plugin's.

- ``answer`` (``answer.py``): ``gsm8k``, ``arithmetic`` and any provider that needs a reference.
- ``exact`` (``exact.py``): ``exact-match``.
- ``countdown`` (``countdown.py``): ``countdown``, under either policy.
- ``any-text`` (``any_text.py``): ``constant`` and ``nonempty``.
"""

from __future__ import annotations

from rewardkit import hookimpl
from rewardkit.plugin import RewardAttackRegistrar
from rewardkit_audit.families import answer, any_text, countdown, exact

MODULES = (answer, exact, countdown, any_text)


@hookimpl
def register_reward_attacks(register: RewardAttackRegistrar) -> None:
    """Register each built-in family, then its attacks."""
    for module in MODULES:
        register(module.family())
        for attack in module.attacks():
            register(attack)
