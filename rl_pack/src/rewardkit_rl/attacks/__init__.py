"""Attacks on rewards: candidates that try to win a reward without solving the task.

``answer_key`` is a fixed, task-independent program (read the tests out of the candidate's own
process and answer every call from them) that the security audit and the tests reuse. The
``*_family`` modules are the rl pack's attack families for ``rewardkit audit``, registered here
through the pack's ``rl-attacks`` entry point: a package apart from the providers', so adding or
changing an attack never changes a provider's code fingerprint.
"""

from __future__ import annotations

from rewardkit import hookimpl
from rewardkit.plugin import RewardAttackRegistrar


@hookimpl
def register_reward_attacks(register: RewardAttackRegistrar) -> None:
    """Registers the families code, math, choice, format, overlong, repetition and reward-model."""
    from rewardkit_rl.attacks import code_family, format_family, math_family, reward_model_family

    code_family.register_all(register)
    math_family.register_attacks(register)
    format_family.register_attacks(register)
    reward_model_family.register_attacks(register)
