"""rewardkit-rl plugin: OpenAI grader specs as rewardkit rewards (``rl.reward.grader``).

Registers the key ``grader`` of a reward selection (``expansion``) and the six providers a grader
becomes (``openai-string-check``, ``openai-text-similarity``, ``openai-score-model``,
``openai-label-model``, ``openai-python``, ``openai-multi``). See docs/protocols.md, "OpenAI grader
specs". Importing this module is light: the providers' code loads when a reward is built.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewardkit import RewardExpansionSpec, RewardProviderSpec, hookimpl
from rewardkit.plugin import ProviderRegistrar, RewardExpansionRegistrar

REVISION = "1"
# How each type grades, beyond its params (which hold the grader itself): part of the identity.
SEMANTICS = {
    "string_check": "eq/ne/like/ilike on the rendered input and reference, look-alike letters folded",
    "text_similarity": (
        "look-alike letters folded; fuzzy_match = rapidfuzz fuzz.ratio/100; bleu = nltk sentence_bleu "
        "(no smoothing); gleu = nltk sentence_gleu; rouge_n/rouge_l = rouge-score F-measure, default "
        "tokenizer, no stemming"
    ),
    "score_model": "nih-rubric judge: messages as written are the rubric, item values and the sample fenced; "
    "range is the judge's scale, read back on it",
    "label_model": "nih-rubric judge on a scale of label numbers 1..n; 1 when the label chosen passes",
    "python": "grade(sample, item) in the bwrap code sandbox; invalid = 0 charged; a timeout or a death "
    "decided by reproduction beside a canary",
    "multi": "sub-graders as above, then calculate_output (AST whitelist, floats); an invalid sub-grade = 0",
    "templates": "item = the reference object (or {prompt, reference, reference_field: reference}); "
    "sample = output_text, output_json",
}
PROVIDER_TYPES = {
    "openai-string-check": "string_check",
    "openai-text-similarity": "text_similarity",
    "openai-score-model": "score_model",
    "openai-label-model": "label_model",
    "openai-python": "python",
    "openai-multi": "multi",
}


def _expand(value: Any, base_dir: Path | None) -> dict[str, Any]:
    from rewardkit_rl.graders.expansion import expand_grader

    return expand_grader(value, base_dir)


def _factory(kind: str) -> Callable[..., Any]:
    def build(**params: Any) -> Any:
        from rewardkit_rl.graders.providers import GraderProvider

        return GraderProvider(kind, **params)

    return build


@hookimpl
def register_reward_expansions(register: RewardExpansionRegistrar) -> None:
    """Registers ``rl.reward.grader``."""
    register(RewardExpansionSpec("grader", _expand, "an OpenAI grader spec (JSON, inline or a file path)"))


@hookimpl
def register_reward_providers(register: ProviderRegistrar) -> None:
    """Registers the ``openai-*`` grader providers."""
    from rewardkit_rl.graders.params import DIAGNOSTICS, NOTES, TERMS, GraderParams

    for name, kind in PROVIDER_TYPES.items():
        register(
            RewardProviderSpec(
                name=name,
                factory=_factory(kind),
                params_schema=GraderParams,
                needs=("prompt", "reference"),
                sandboxed=kind in ("python", "multi"),
                revision=REVISION,
                terms=TERMS,
                diagnostics=DIAGNOSTICS,
                notes=NOTES,
                semantic_identity={"grader_type": kind, "semantics": SEMANTICS},
                description=f"an OpenAI {kind} grader (rl.reward.grader); term score",
            )
        )
