"""rewardkit-rl plugin: trained reward models as providers (entry point ``rl-reward-models``).

``reward-model`` scores each candidate with one scalar-head model, in process (torch) or on a
server (vLLM ``/classify`` or ``/pooling``, OpenRLHF ``/get_reward``); ``reward-model-ensemble``
combines several and reports their disagreement. Registering imports neither torch nor
transformers (the ``[rm]`` extra): the model loads on the first scoring call. See
docs/reward_models.md.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import RewardProviderSpec, hookimpl
from rewardkit_rl.reward_models.params import EnsembleParams, RewardModelParams
from rewardkit_rl.reward_models.provider import (
    DIAGNOSTICS,
    ENSEMBLE_DIAGNOSTICS,
    TERMS,
    EnsembleProvider,
    RewardModelProvider,
)

# 2: a sequence-classification checkpoint is read where transformers reads it (the last token
# that is not the config's pad id), no longer at the last real token; scores differ when
# pad == eos and the text ends with eos, so runs under revision 1 are not resumed as this code.
# 3: an empty completion is a verdict charged to it at empty_completion_score, no longer an error
# (which onError scored, 0 by default: above what many answers get from a centred model).
REVISION = "3"
# Tokenization and the forward pass depend on these packages' versions.
SCORING_PACKAGES = ("torch", "transformers", "tokenizers")
# What the `[rm]` extra brings and scoring in process imports; `rewardkit providers` says
# "needs rewardkit-rl[rm]" while one is missing (registering imports neither).
RM_MODULES = ("torch", "transformers")
RM_EXTRA = "rewardkit-rl[rm]"
SCORING = {
    "score": "sequence classification: head at the last token that is not the config's pad id (the "
    "last token without one), as transformers reads it; backbone + head: at the last real token "
    "(attention mask), as OpenRLHF reads it; position ids over real tokens",
    "vllm_read": "a decoder classifier's trailing pad-id run is not sent, so vLLM's last token is "
    "transformers' position",
    "formats": {
        "chat": "chat template over the prompt's messages + an assistant message, no extra special tokens",
        "plain": "prompt + separator + completion with the tokenizer's special tokens",
    },
    "normalisation": "(raw - score_mean) / score_std, then per_token (/ completion tokens) or linear "
    "(- length_penalty * completion tokens / 1000)",
    "wire": {
        "vllm-classify": "POST /classify token ids, use_activation false, probs[0]",
        "vllm-pooling": "POST /pooling task classify, token ids, use_activation false, data[0]",
        "openrlhf": "POST /get_reward query = decoded cut ids, rewards[i]",
    },
    "failure_policy": "per candidate: an empty completion is charged at empty_completion_score; a "
    "prompt filling max_tokens under right truncation and a non-finite score are errors; a failed "
    "request fails the group",
}

REWARD_MODEL = RewardProviderSpec(
    name="reward-model",
    factory=RewardModelProvider,
    params_schema=RewardModelParams,
    needs=("prompt",),
    revision=REVISION,
    terms=TERMS,
    diagnostics=DIAGNOSTICS,
    semantic_identity=SCORING,
    scoring_packages=SCORING_PACKAGES,
    extra_modules=RM_MODULES,
    extra=RM_EXTRA,
    cacheable=True,  # a forward pass of the same prompt and completion: one per distinct answer
    description="A trained reward model's scalar score of prompt + completion (sequence classification "
    "with num_labels=1, or a backbone plus a scalar head), in process or through vLLM / OpenRLHF.",
)

REWARD_MODEL_ENSEMBLE = RewardProviderSpec(
    name="reward-model-ensemble",
    factory=EnsembleProvider,
    params_schema=EnsembleParams,
    needs=("prompt",),
    revision=REVISION,
    terms=TERMS,
    diagnostics=ENSEMBLE_DIAGNOSTICS,
    semantic_identity={
        "member": SCORING,
        "combine": {"mean": "mean", "min": "min", "mean_minus_std": "mean - k * population std"},
        "disagreement": "population std of the members' normalised scores",
    },
    scoring_packages=SCORING_PACKAGES,
    extra_modules=RM_MODULES,
    extra=RM_EXTRA,
    description="Several reward models combined by mean, min or mean - k*std; diagnostics disagreement, "
    "member_min and member_max show where they disagree (reward hacking).",
)


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    """Registers ``reward-model`` and ``reward-model-ensemble``."""
    register(REWARD_MODEL)
    register(REWARD_MODEL_ENSEMBLE)
