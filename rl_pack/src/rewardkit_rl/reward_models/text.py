"""What a reward model reads: prompt and completion formatted, tokenized and cut to its limit.

The chat template renders ``[*prompt messages, {"role": "assistant", "content": completion}]``
(a string prompt is one user message) and is tokenized without adding special tokens (the
template writes them); the plain template is ``prompt + separator + completion``, tokenized with
the tokenizer's own special tokens. Inputs longer than ``max_tokens`` lose their oldest tokens
(``truncation: left``) or their newest (``right``); every cut is counted, never silent. The
tokenizer is used under a lock: a fast tokenizer is not safe to call from several threads.

``pooled_index`` is where a sequence-classification model's score is read, by transformers' own
rule, so that every backend reads the position a plain ``transformers`` forward would.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.plugin import thaw


def pooled_index(ids: Sequence[int], pad_token_id: int | None) -> int:
    """Where transformers' ``*ForSequenceClassification`` reads the score of ``ids`` sent alone.

    With a ``pad_token_id`` in the model's config it is the last token that is not that id (0 when
    every token is), whatever the attention mask says: when pad == eos (TRL's ``RewardTrainer``
    sets it so for tokenizers without a pad token) and the text ends with eos, the score is read
    at the token before the trailing eos run, which is what the model was trained on. Without a
    ``pad_token_id`` it is the last token.
    """
    if pad_token_id is None:
        return len(ids) - 1
    for index in range(len(ids) - 1, -1, -1):
        if ids[index] != pad_token_id:
            return index
    return 0


class CandidateProblem(Exception):
    """This candidate cannot be scored; the message says why (it becomes the error's reason)."""


class EmptyCompletion(CandidateProblem):
    """The completion is empty or only whitespace: what the candidate's own text caused, so a verdict
    on it (``empty_completion_score``, charged), never an error a policy could learn to prefer."""


@dataclass(frozen=True)
class Encoded:
    """One candidate as the model reads it: token ids after the cut, and what the cut removed."""

    ids: tuple[int, ...]
    completion_tokens: int
    dropped: int

    @property
    def truncated(self) -> bool:
        return self.dropped > 0


def chat_messages(prompt: Any, completion: str) -> list[dict[str, Any]]:
    """The conversation a chat template renders: the prompt's messages, then the completion."""
    if prompt is None:
        messages: list[dict[str, Any]] = []
    elif isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, Sequence) and all(isinstance(item, Mapping) for item in prompt):
        messages = [dict(thaw(item)) for item in prompt]
        for index, message in enumerate(messages):
            if not isinstance(message.get("role"), str) or "content" not in message:
                raise CandidateProblem(
                    f"prompt message {index} has no role and content; a chat prompt is a list of "
                    '{"role": ..., "content": ...} mappings'
                )
    else:
        raise CandidateProblem(
            f"the prompt is {type(prompt).__name__}; a reward model reads a string or a list of chat messages"
        )
    return [*messages, {"role": "assistant", "content": completion}]


class Formatter:
    """Turns (prompt, completion) into ``Encoded`` for one tokenizer and one set of settings."""

    def __init__(
        self, tokenizer: Any, *, template: str, separator: str, max_tokens: int, truncation: str
    ) -> None:
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if template == "chat" and not has_template:
            raise CandidateProblem("template chat, but the tokenizer has no chat template")
        self.tokenizer = tokenizer
        self.chat = template == "chat" or (template == "auto" and has_template)
        self.separator = separator
        self.max_tokens = max_tokens
        self.truncation = truncation
        self._lock = threading.Lock()

    def text(self, prompt: Any, completion: str) -> str:
        """The formatted text (before tokenization and before any cut)."""
        if self.chat:
            rendered = self.tokenizer.apply_chat_template(chat_messages(prompt, completion), tokenize=False)
            if not isinstance(rendered, str):
                raise CandidateProblem("the chat template did not render text")
            return rendered
        if prompt is None:
            return completion
        if not isinstance(prompt, str):
            raise CandidateProblem(
                "template plain needs a string prompt, but the prompt is a list of messages; use "
                "template chat (or auto with a tokenizer that has a chat template)"
            )
        return prompt + self.separator + completion

    def encode(self, prompt: Any, completion: str) -> Encoded:
        """The cut token ids; ``CandidateProblem`` when the candidate cannot be scored."""
        if not completion.strip():
            raise EmptyCompletion(
                "the completion is empty (or only whitespace): a reward model has nothing of it to score"
            )
        text = self.text(prompt, completion)
        with self._lock:
            ids = list(self.tokenizer(text, add_special_tokens=not self.chat)["input_ids"])
            completion_tokens = len(self.tokenizer(completion, add_special_tokens=False)["input_ids"])
        dropped = max(0, len(ids) - self.max_tokens)
        if dropped:
            if self.truncation == "left":
                ids = ids[dropped:]
            else:
                if dropped >= completion_tokens:
                    raise CandidateProblem(
                        f"the prompt alone fills max_tokens ({self.max_tokens}): with truncation right "
                        "nothing of the completion would be scored"
                    )
                ids = ids[: self.max_tokens]
        return Encoded(tuple(ids), completion_tokens, dropped)

    def decode(self, ids: Sequence[int]) -> str:
        """Text a server that tokenizes by itself turns back into ``ids`` (special tokens kept)."""
        with self._lock:
            return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))
