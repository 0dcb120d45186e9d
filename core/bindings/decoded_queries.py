"""The response inside a decoded query (prompt and generated text together, special tokens kept), as
OpenRLHF sends it to a reward function and the Reward Service's OpenRLHF route receives it. In the core,
as both the OpenRLHF binding and the Reward Service cut queries this way (``rewardkit.plugin``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardkit.contracts.errors import BindingError

# End-of-sequence markers of common chat templates; OpenRLHF decodes with special tokens kept.
EOS_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<eos>")
# BOS markers a decoded query may start with before the prompt text (special tokens are kept).
BOS_MARKERS: tuple[str, ...] = ("<|begin_of_text|>", "<|startoftext|>", "<s>", "<bos>")


def _prefix_end(query: str, prompt: str) -> int | None:
    """Where ``prompt`` ends in ``query`` when the query starts with it, else None; runs of whitespace
    may differ (decoding with ``clean_up_tokenization_spaces``), every other character may not."""
    if query.startswith(prompt):  # the usual case, without a Python loop over every character
        at = len(prompt)
    else:
        at = 0
        for char in prompt:
            if char.isspace():
                continue
            while at < len(query) and query[at].isspace():
                at += 1
            if at >= len(query) or query[at] != char:
                return None
            at += 1
    if prompt[-1:].isspace():  # a prompt that ends in whitespace owns the query's whitespace there
        while at < len(query) and query[at].isspace():
            at += 1
    return at


def response_of(query: str, prompt: str, index: int, eos_markers: Sequence[str] = EOS_MARKERS) -> str:
    """A decoded query after its prompt (cut only from the front, after BOS markers) without trailing
    EOS markers; a query that does not start with its prompt is refused: a guess could score wrong text."""
    return strip_eos(generated_part(query, prompt, index), eos_markers)


def generated_part(query: str, prompt: str, index: int) -> str:
    """What follows the prompt in a decoded query, EOS markers kept (see ``response_of``)."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        raise BindingError(
            f"sample {index}: query and prompt must be text, got {type(query).__name__} and "
            f"{type(prompt).__name__}"
        )
    start = 0
    # No BOS marker is a prefix of another, so at most one leads at a time.
    markers = [marker for marker in BOS_MARKERS if not prompt.startswith(marker)]
    while leading := [marker for marker in markers if query.startswith(marker, start)]:
        start += len(leading[0])
    end = _prefix_end(query[start:], prompt)
    if end is None:
        raise BindingError(
            f"sample {index}: the query does not start with its prompt, so the response cannot be separated "
            f"(prompt starts {prompt[:60]!r}, query starts {query[:60]!r}). OpenRLHF sends the decoded "
            "prompt followed by the response; a prompt longer than the prompt budget is cut from the left "
            "(raise --prompt_max_len / --max_len), and a tokenizer that rewrites more than whitespace "
            "(unknown tokens, normalisers) cannot be matched"
        )
    return query[start + end :]


def strip_eos(response: str, eos_markers: Sequence[str] = EOS_MARKERS) -> str:
    """``response`` without its trailing end-of-sequence markers."""
    stripped = True
    while stripped:
        stripped = False
        for marker in eos_markers:
            if marker and response.endswith(marker):
                response = response[: -len(marker)]
                stripped = True
    return response
