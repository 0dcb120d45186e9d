"""Every error rewardkit raises on purpose. Each message says what is wrong, where, and what to do."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice closest to a misspelt ``word`` (for "did you mean ...?"), or ``None``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return close[0] if close else None


class RewardkitError(Exception):
    """Base class of rewardkit's own errors."""


class RewardContractError(RewardkitError):
    """A request, a result or a provider broke the reward contract; ``group_id`` and
    ``trajectory_id`` say where, when known, and also appear in the message."""

    def __init__(
        self,
        message: str,
        *,
        group_id: str | None = None,
        trajectory_id: str | None = None,
        rule: str | None = None,
    ) -> None:
        where = [f"group {group_id!r}"] if group_id is not None else []
        where += [f"candidate {trajectory_id!r}"] if trajectory_id is not None else []
        prefix = f"[{', '.join(where)}] " if where else ""
        tag = f" (rule: {rule})" if rule else ""
        super().__init__(f"{prefix}{message}{tag}")
        self.message = message
        self.group_id = group_id
        self.trajectory_id = trajectory_id
        self.rule = rule


class RegistrationError(RewardkitError):
    """A plugin registered something invalid, or a name twice."""


class NameConflictError(RegistrationError):
    """Two plugins registered one name, or a plugin tried to override a built-in: fatal (an invalid
    registration fails that plugin alone), since which owner wins is not for the loader to guess."""


class UnknownNameError(RewardkitError, LookupError):
    """A name asked for is not registered at this extension point."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        known_list = sorted(known)
        shown = ", ".join(known_list) if known_list else "(none)"
        close = nearest(name, known_list)
        hint = f"; did you mean {close!r}?" if close is not None else ""
        super().__init__(
            f"unknown {kind} {name!r}{hint} (known {kind}s: {shown}). "
            f"Is the plugin that provides {name!r} installed? (`rewardkit plugins` lists what loaded)"
        )
        self.kind = kind
        self.name = name
        self.known = tuple(known_list)


class BindingError(RewardkitError, ValueError):
    """A trainer handed a binding something it cannot score; the message says which sample and why."""


class PluginLoadError(RewardkitError):
    """A plugin failed to import or register while strict plugin loading was on."""


class IdentityMismatchError(RewardkitError):
    """Pending work was recorded under one provider identity and is being resumed under another."""


class ProviderError(RewardkitError):
    """A provider raised while scoring a group; the original exception is the ``__cause__``."""

    def __init__(self, message: str, *, group_id: str | None = None) -> None:
        super().__init__(f"[group {group_id!r}] {message}" if group_id is not None else message)
        self.group_id = group_id


class PreflightError(RewardkitError):
    """A selected provider cannot be constructed or cannot be fed by the configured data."""


class SelectionRefused(PreflightError):
    """A Reward Service refused a client's reward selection (HTTP 403): ``field`` names what. Only the
    configured reward or ``rewards.service.allow`` may be selected; some params never are."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class ConfigError(RewardkitError):
    """A configuration file, mapping or ``key=value`` override is invalid; ``key`` (the full dotted
    key at fault, when known) and ``source`` (the file or override) also appear in the message."""

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None) -> None:
        where = [part for part in (source, key) if part]
        prefix = f"{': '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{message}")
        self.key = key
        self.source = source


class DataError(RewardkitError):
    """A data or rollouts row breaks the data contract. ``row`` is the 1-based line of a JSONL file or
    the 0-based index of a dataset (``row_label`` says which); each of it, ``column`` and ``path``,
    when known, is in the message."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: int | None = None,
        column: str | None = None,
        row_label: str = "line",
    ) -> None:
        where = [str(path)] if path is not None else []
        where += [f"{row_label} {row}"] if row is not None else []
        where += [f"column {column!r}"] if column is not None else []
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{message}")
        self.path = path
        self.row = row
        self.column = column
        self.row_label = row_label


class RequestCancelled(RewardkitError):
    """The work of a request was cancelled before it finished: its client went away, or its
    caller cancelled it. Nothing of the request was returned; queued groups were not scored and
    running sandboxes, worker processes and judge calls were stopped."""


class RequestTimeout(RequestCancelled, TimeoutError):
    """The request's timeout (``request_timeout_s``) passed before it was answered; its work was
    cancelled as for ``RequestCancelled``. Not retried: raise the timeout or send smaller requests."""
