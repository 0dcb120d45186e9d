"""The ``format`` verifier: the completion is made of the expected tagged blocks, in order.

By default ``<think>...</think>`` then ``<answer>...</answer>``, each exactly once, with only
whitespace around and between them. ``tags`` changes the blocks and their order;
``allow_outside_text`` permits text outside the blocks. Every block must hold something besides
a letter or a digit (``rewardkit.contracts.text.is_blank``): a block of whitespace, punctuation, symbols,
blank-rendering or invisible characters is empty, and an empty block is the tags without the
format (revision 1 paid ``<think></think><answer></answer>``, revision 2 a block of braille blanks).

The completion is read as a reader sees it (``rewardkit.contracts.text.fold_lookalikes``): NFKC, invisible
characters removed, and look-alike characters read as the ASCII they imitate, so a tag written
with a Cyrillic ``а`` or Canadian syllabics ``ᐸ`` ``ᐳ`` counts as the tag (and as a second copy of
it), and an invisible character inside a tag does not hide it.
"""

from __future__ import annotations

import re

from rewardkit.plugin import (
    MappedProvider,
    MetricContribution,
    RewardCandidate,
    RewardContext,
    RewardProviderResult,
    fold_lookalikes,
    is_blank,
    map_candidates,
)
from rewardkit.plugin import normalise_text as normalise

_TAG_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
# 1 paid blocks holding nothing ("<think></think><answer></answer>"); 2 paid blocks of blank-rendering
# characters or punctuation, and missed look-alike tags.
REVISION = "3"


def check_format(text: str, tags: tuple[str, ...], allow_outside_text: bool) -> tuple[bool, int]:
    """``(well_formed, tags_found)``: tags_found counts tags appearing as exactly one block (an
    empty block counts as found, but the completion is not well formed)."""
    # Tags are found in the folded text, blocks and the text between them are read in the
    # normalised one: the two have the same length, character for character.
    shown = normalise(text)
    text = fold_lookalikes(text)
    spans: list[tuple[int, int]] = []  # the blocks found, in the order of ``tags``
    found = 0
    empty = False
    for tag in tags:
        opening, closing = f"<{tag}>", f"</{tag}>"
        if text.count(opening) != 1 or text.count(closing) != 1:
            continue
        start, end = text.find(opening), text.find(closing)
        if end < start:
            continue
        found += 1
        empty = empty or is_blank(shown[start + len(opening) : end])
        spans.append((start, end + len(closing)))
    if found != len(tags) or empty:
        return False, found
    cursor = 0
    for start, end in spans:
        if start < cursor:
            return False, found
        if not allow_outside_text and shown[cursor:start].strip():
            return False, found
        cursor = end
    if not allow_outside_text and shown[cursor:].strip():
        return False, found
    return True, found


def score_format(
    candidate: RewardCandidate,
    context: RewardContext,
    *,
    tags: tuple[str, ...] = ("think", "answer"),
    allow_outside_text: bool = False,
) -> RewardProviderResult:
    """1 when the completion is exactly the expected tagged blocks in order, else 0."""
    ok, found = check_format(candidate.completion, tuple(tags), allow_outside_text)
    return RewardProviderResult(
        terms={"format": float(ok)}, diagnostics=(MetricContribution("tags_found", found / len(tags)),)
    )


def format_provider(
    *, tags: list[str] | tuple[str, ...] = ("think", "answer"), allow_outside_text: bool = False
) -> MappedProvider:
    """Factory: checks the tag names (letters, digits, ``_``/``-``; distinct) in preflight."""
    if isinstance(tags, str) or not isinstance(tags, (list, tuple)) or not tags:
        raise ValueError(f"format: tags must be a non-empty list of tag names, got {tags!r}")
    bad = [tag for tag in tags if not isinstance(tag, str) or not _TAG_NAME.match(tag)]
    if bad:
        raise ValueError(f"format: invalid tag names {bad!r}; use letters, digits, '_' or '-'")
    if len(set(tags)) != len(tags):
        raise ValueError(f"format: tags must be distinct, got {list(tags)!r}")
    if not isinstance(allow_outside_text, bool):
        raise ValueError(f"format: allow_outside_text must be true or false, got {allow_outside_text!r}")
    return map_candidates(score_format, tags=tuple(tags), allow_outside_text=allow_outside_text)
