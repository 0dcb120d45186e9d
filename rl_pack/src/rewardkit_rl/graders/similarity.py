"""text_similarity's metrics, in the standard library (no nltk, rapidfuzz or rouge-score to install).

Each returns a number in [0, 1] for ``(candidate, reference)``, following the library OpenAI's guide
names for it; where that library has a choice, the choice is said here (docs/protocols.md repeats it):

- ``fuzzy_match``: rapidfuzz ``fuzz.ratio`` / 100, the normalised Indel similarity on characters:
  2 * LCS / (len(a) + len(b)); two empty strings are 1.
- ``bleu``: nltk ``sentence_bleu`` defaults: whitespace tokens, BLEU-4 with uniform weights, the
  brevity penalty, no smoothing (a sentence with no matching 4-gram scores 0).
- ``gleu``: nltk ``sentence_gleu`` (Google BLEU): n-grams of 1 to 4 tokens pooled, min(precision, recall).
- ``rouge_1`` .. ``rouge_5``, ``rouge_l``: rouge-score's F-measure with its default tokenizer
  (lower case, runs of anything but a-z and 0-9 split tokens, no stemming).

``meteor`` (WordNet synonyms and a stemmer) and ``cosine`` (OpenAI's embeddings) are refused at
load: neither can be reproduced here without a model or corpus this package does not ship.

The longest common subsequence is the bit-parallel algorithm of Allison and Dix (one big-integer
step per element of the second sequence), so a long candidate costs milliseconds, never a
quadratic table an adversary could make huge.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence

SUPPORTED = ("fuzzy_match", "bleu", "gleu", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l")
REFUSED = {
    "meteor": "needs WordNet synonyms and a stemmer (nltk data), which this import does not ship",
    "cosine": "needs OpenAI's text-embedding-3-large embeddings (evals only)",
}


def lcs_length(first: Sequence[Hashable], second: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence (Allison-Dix bit vectors over ``first``)."""
    if not first or not second:
        return 0
    masks: dict[Hashable, int] = {}
    for position, element in enumerate(first):
        masks[element] = masks.get(element, 0) | (1 << position)
    width = (1 << len(first)) - 1
    row = width
    for element in second:
        matched = row & masks.get(element, 0)
        row = ((row + matched) | (row - matched)) & width
    return len(first) - row.bit_count()


def fuzzy_match(candidate: str, reference: str) -> float:
    total = len(candidate) + len(reference)
    return 1.0 if total == 0 else 2 * lcs_length(reference, candidate) / total


def _ngrams(tokens: Sequence[str], order: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[start : start + order]) for start in range(len(tokens) - order + 1))


def bleu(candidate: str, reference: str) -> float:
    hypothesis, truth = candidate.split(), reference.split()
    if not hypothesis:
        return 0.0
    logs = []
    for order in range(1, 5):
        made = _ngrams(hypothesis, order)
        total = sum(made.values())
        matched = sum((made & _ngrams(truth, order)).values())
        if total == 0 or matched == 0:
            return 0.0  # nltk without smoothing: any order with no match makes the score 0
        logs.append(math.log(matched / total) / 4)
    brevity = 1.0 if len(hypothesis) > len(truth) else math.exp(1 - len(truth) / len(hypothesis))
    return brevity * math.exp(sum(logs))


def gleu(candidate: str, reference: str) -> float:
    hypothesis, truth = candidate.split(), reference.split()
    made: Counter[tuple[str, ...]] = Counter()
    wanted: Counter[tuple[str, ...]] = Counter()
    for order in range(1, 5):
        made += _ngrams(hypothesis, order)
        wanted += _ngrams(truth, order)
    made_total, wanted_total = sum(made.values()), sum(wanted.values())
    if made_total == 0 or wanted_total == 0:
        return 0.0
    matched = sum((made & wanted).values())
    return min(matched / made_total, matched / wanted_total)


_NOT_TOKEN = re.compile(r"[^a-z0-9]+")


def rouge_tokens(text: str) -> list[str]:
    return _NOT_TOKEN.sub(" ", text.lower()).split()


def _f_measure(matched: int, made: int, wanted: int) -> float:
    if matched == 0 or made == 0 or wanted == 0:
        return 0.0
    precision, recall = matched / made, matched / wanted
    return 2 * precision * recall / (precision + recall)


def rouge_n(order: int) -> Callable[[str, str], float]:
    def score(candidate: str, reference: str) -> float:
        made, wanted = _ngrams(rouge_tokens(candidate), order), _ngrams(rouge_tokens(reference), order)
        return _f_measure(sum((made & wanted).values()), sum(made.values()), sum(wanted.values()))

    return score


def rouge_l(candidate: str, reference: str) -> float:
    made, wanted = rouge_tokens(candidate), rouge_tokens(reference)
    return _f_measure(lcs_length(wanted, made), len(made), len(wanted))


METRICS: dict[str, Callable[[str, str], float]] = {
    "fuzzy_match": fuzzy_match,
    "bleu": bleu,
    "gleu": gleu,
    **{f"rouge_{order}": rouge_n(order) for order in range(1, 6)},
    "rouge_l": rouge_l,
}
