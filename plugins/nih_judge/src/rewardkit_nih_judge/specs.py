"""The catalog entries of ``nih-rubric`` and ``nih-compare``.

``semantic_identity`` holds what no param says: the wire protocol, how a verdict is read and
normalised, how candidate text is fenced, and the failure policy (what is charged to a candidate
and on what evidence). Everything else that changes a score (judge model and
revision, the judge-content hash, sampling, timeout/retry/concurrency settings, the credential
*reference*) is a param, and the catalog hashes the normalised params into the identity.
"""

from __future__ import annotations

from rewardkit.plugin import RewardProviderSpec
from rewardkit_nih_judge.compare import COMPARE_DIAGNOSTICS, make_compare_judge
from rewardkit_nih_judge.params import CompareParams, RubricParams
from rewardkit_nih_judge.rubric import RUBRIC_DIAGNOSTICS, RubricJudge, make_rubric_judge

FAILURE_POLICY = {
    "unreadable": "asked again parse_retries times; then decided by reproduction: a canary (the same task "
    "with other answers of the group a verdict read, drawn per request) asked live, then the candidate once "
    "more alone; unreadable again: charged (verdict_unreadable); read: that verdict counts",
    "off_scale": "asked again parse_retries times; then decided by reproduction as unreadable (off_scale)",
    "refused": "finish_reason content_filter, a message refusal, or a 400/422 naming a content filter or "
    "policy: decided by reproduction as unreadable (verdict_refused)",
    "too_long": "a 413, or a 400/422 naming the context length: charged (too_long_for_judge) once a canary "
    "shows the task fits, without a rerun",
    "comparisons": "each candidate of a failed comparison (listwise: of a failed two-answer ring comparison) "
    "is compared again with another partner drawn per request, in both orders, after a canary comparison "
    "of two other answers; a charged candidate forfeits its comparisons",
    "canary": "a canary that fails is an error naming it; past the batch's reruns.per_batch the canary "
    "alone decides",
    "transport": "retries on 408/5xx/timeouts/connection errors within the group deadline and the endpoint's "
    "retries_per_minute, a 429 waited out for its Retry-After (never charged)",
    "request_failed": "a request that still failed before the deadline (any error answer but 429, a timeout "
    "of timeout_s, a dropped connection, a reply without a message): decided by reproduction as unreadable "
    "(request_failed); rubric: one canary per group for its failed requests",
    "undecided": "a request stopped by the group deadline (an attempt it cut short included) or a 429 that "
    "outlasts it, or a cache error: never charged; one canary per group (rubric: an answer to the task; "
    "compare: two answers compared): it fails too, the error names it and the server; it passes, rubric "
    "asks the candidate once more alone (within reruns.per_batch), compare's error says the canary passed",
    "never": "a failed verdict is never scored 0 unless it reproduced beside a canary that passed",
}
FENCE = (
    "HMAC-SHA256 markers per slot (key from identity material and a secret), <data-M> lines, imitating "
    "lines prefixed [data] (compared as rewardkit.contracts.text skeletons), control tokens of chat-template "
    "families broken, look-alike control tokens marked"
)
VERDICT = (
    "after a leading <think>...</think>: the one JSON object between the question's verdict lines "
    "(<verdict-T>, T an HMAC of its fence markers, stated in the system message only), text outside them "
    "ignored; without them, exactly one JSON object, optionally in a ```json fence"
)
# The wire protocol per param ``api``; the completions prompt's layout is here because it is what
# the judge reads around the messages (``prompts.completion_prompt``).
PROTOCOL = (
    "openai chat-completions (api chat: system and user messages) or completions (api completions: one "
    "prompt, each message's text followed by a blank line, no chat template); response_format "
    "json_schema, then json_object, then none"
)


def _repeats_its_verdicts(judge: object) -> bool:
    """A rubric judge at temperature 0 says the same of the same answer to the same task: equal
    answers are asked once (``cacheable``). Sampled, each answer is a draw of its own."""
    # Anything else (a wrapper, such as the conformance kit's recorder) is not known to repeat itself.
    return isinstance(judge, RubricJudge) and judge.settings.temperature == 0


RUBRIC = RewardProviderSpec(
    name="nih-rubric",
    factory=make_rubric_judge,
    needs=("prompt",),
    revision="7",
    terms=("score",),
    diagnostics=RUBRIC_DIAGNOSTICS,
    semantic_identity={
        "protocol": PROTOCOL,
        "fence": FENCE,
        "verdict": VERDICT + ' holding "score"',
        "normalisation": "(s - lo) / (hi - lo)",
        "failure_policy": FAILURE_POLICY,
    },
    description="an LLM judge grades each candidate against a rubric (OpenAI-compatible API)",
    params_schema=RubricParams,
    cacheable=_repeats_its_verdicts,
)

COMPARE = RewardProviderSpec(
    name="nih-compare",
    factory=make_compare_judge,
    needs=("prompt",),
    revision="7",
    terms=("score",),
    diagnostics=COMPARE_DIAGNOSTICS,
    semantic_identity={
        "protocol": PROTOCOL,
        "fence": FENCE,
        "verdict": VERDICT + ' holding "winner" or "ranking"',
        "pairwise": "pairs in both orders, win 1 / tie 0.5 / loss 0, mean over pairs; round robin or rings",
        "listwise": "ranked as given and reversed; 1 - mean rank / (n - 1)",
        "contradiction": "two orders naming the same position count as a tie (position_flips)",
        "failure_policy": FAILURE_POLICY,
    },
    description="an LLM judge compares a group's candidates pairwise or as a ranking (OpenAI-compatible API)",
    params_schema=CompareParams,
)

SPECS = (RUBRIC, COMPARE)
