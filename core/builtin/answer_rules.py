"""Built-in plugin registering the exact-answer rewards: arithmetic, gsm8k, countdown."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rewardkit.builtin.answers import EXTRACTED_ANSWER, score_arithmetic, score_gsm8k
from rewardkit.builtin.countdown import countdown_provider
from rewardkit.contracts import RewardProviderSpec
from rewardkit.scoring.pointwise import map_candidates
from rewardkit.seam.hookspecs import hookimpl

# Bump when extraction or comparison changes what gsm8k or arithmetic score. 2: a final answer must
# state one number ("18 or 19", "18 \\pm 1", "18^2" state none; `rewardkit audit` found them paid).
# 3: markers are found as a reader sees them (look-alike letters, invisible characters: issue 41).
ANSWER_RULES_REVISION = "3"
# 2: the <answer> tags are found as a reader sees them, invisible characters leave the expression.
COUNTDOWN_REVISION = "2"
# Each shows the text it read as the answer beside its breakdown entry (display only).
_answer_spec = partial(
    RewardProviderSpec, needs=("reference",), terms=("task",), cheap=True, notes=(EXTRACTED_ANSWER,)
)


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    for spec in (
        _answer_spec(
            name="gsm8k",
            revision=ANSWER_RULES_REVISION,
            factory=partial(map_candidates, score_gsm8k),
            diagnostics=("extracted",),
            semantic_identity={"compare": "exact-rational", "forms": "hash,boxed,tag,line,answer-is,bare"},
            description="1 when the final answer (#### N, \\boxed{N}, A: N, 'the answer is N') equals the "
            "GSM8K gold number exactly (param: fallback_last_number=false).",
        ),
        _answer_spec(
            name="arithmetic",
            revision=ANSWER_RULES_REVISION,
            factory=partial(map_candidates, score_arithmetic),
            diagnostics=("extracted",),
            semantic_identity={"compare": "exact-rational", "reference": "number-or-expression"},
            description="1 when the final answer equals the exact value of the reference number or "
            "+-*/ expression (param: fallback_last_number=false).",
        ),
        _answer_spec(
            name="countdown",
            revision=COUNTDOWN_REVISION,
            factory=countdown_provider,
            diagnostics=("extracted", "valid"),
            semantic_identity={"compare": "exact-rational", "answer": "last <answer> block"},
            description="1 when the last <answer> reaches reference.target using each of "
            "reference.numbers once (param: policy=strict|lenient).",
        ),
    ):
        register(spec)
