"""``rewardkit.load(config)``: the way for a trainer to score rollouts; ``Reward`` scores in process.

A ``Reward`` resolves its catalog and constructs every selected provider up front (preflight:
nothing is scored if any provider cannot be built or fed), then scores batches of complete groups
with ``score`` (threads) or ``ascore`` (asyncio), or a group at a time as generation finishes them
with ``stream()`` / ``astream()`` (``rewardkit.scoring.stream``). Past ``rewards.max_inflight`` rollouts
callers
wait for capacity until ``rewards.deadline_s``, then get ``BackpressureTimeout``: never a silent drop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from rewardkit.config import RewardkitConfig, RewardSelection, check_deadline, load_config
from rewardkit.contracts import IN_PROCESS_NEEDS, KNOWN_NEEDS
from rewardkit.contracts.errors import ConfigError, PreflightError, RewardkitError
from rewardkit.job.provenance import ProviderRecord, check_resume_all
from rewardkit.scoring import shared_results
from rewardkit.scoring.advantages import EPSILON
from rewardkit.scoring.backpressure import InflightLimiter
from rewardkit.scoring.cancellation import CancelScope, current, entered, run_bounded
from rewardkit.scoring.capacity import usable_cpus
from rewardkit.scoring.composition import RewardSpec, RewardSpecError
from rewardkit.scoring.reproduction import RerunBudget
from rewardkit.scoring.split_batch import SplitBatchFinisher
from rewardkit.scoring.stream import AsyncRewardStream, RewardStream
from rewardkit.scoring.worker import GroupLike, RewardWorker, ScoredBatch, as_batch
from rewardkit.seam.catalog import Catalog, resolve_catalog, reward_backends
from rewardkit.seam.extensions import LOCAL_BACKEND
from rewardkit.seam.extras import (
    KNOWN_BACKENDS,
    KNOWN_SERVICE_BACKEND,
    SERVICE_BACKEND,
    Known,
    import_optional,
)
from rewardkit.seam.protocols import RewardLike

DEFAULT_THREADS = 8


def spec_of(selection: RewardSelection) -> RewardSpec:
    """The composed spec a selection stands for (one provider is a one-component spec)."""
    if selection.spec is not None:
        try:
            return RewardSpec.parse(selection.spec)
        except RewardSpecError as error:
            raise ConfigError(str(error), key="rl.reward.spec") from None
    assert selection.provider is not None
    return RewardSpec.single(selection.provider, selection.params, selection.term)


def optimised_term_note(selection: RewardSelection, spec: RewardSpec, catalog: Catalog) -> str | None:
    """For a provider selected by name that declares several terms, a line saying which one is
    optimised (only ``final`` reaches the advantage) and how to choose another; else ``None``."""
    if selection.provider is None:
        return None
    terms = catalog.entry(selection.provider).spec.terms
    if len(terms) < 2:
        return None
    chosen = spec.components[0].term
    others = [term for term in terms if term != chosen]
    how = (
        "chosen by rl.reward.term"
        if selection.term is not None
        else f"its first; choose another with rl.reward.term={others[0]}"
    )
    return f"provider {selection.provider!r} declares terms {list(terms)}; optimising {chosen!r} ({how})"


def available_inputs(config: RewardkitConfig) -> tuple[str, ...]:
    """Which canonical inputs the configured data may supply: all of them (only reading a row can
    tell; a row without an input its provider needs is refused there, naming the column)."""
    del config  # the same for every source; the parameter stays for the callers (Reward, Ray actors)
    return KNOWN_NEEDS


class Reward:
    """A resolved, preflighted reward: ``score(groups)`` / ``ascore(groups)``."""

    def __init__(
        self,
        config: RewardkitConfig,
        selection: RewardSelection | None = None,
        *,
        namespace: str = "train",
        group_size: int | None = None,
        catalog: Catalog | None = None,
        runtime: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.selection = selection or config.rl.reward
        # In-process objects (a decoder) for providers that declare them; with them, this process
        # also hands candidates their in-process media.
        self.runtime = dict(runtime) if runtime is not None else None
        self.catalog = catalog or resolve_catalog(self.selection.catalog)
        self.worker = RewardWorker(
            spec_of(self.selection),
            self.catalog,
            group_size=group_size if group_size is not None else config.rl.group_size,
            namespace=namespace,
            scaling=config.rl.advantage_scaling,
            advantage_std=config.rl.advantage_std,
            advantage_eps=config.rl.advantage_eps if config.rl.advantage_eps is not None else EPSILON,
            available_inputs=available_inputs(config) + (IN_PROCESS_NEEDS if runtime is not None else ()),
            runtime=self.runtime,
        )
        self.limiter = InflightLimiter(config.rewards.max_inflight)
        self._threads = config.rewards.concurrency or min(DEFAULT_THREADS, usable_cpus() * 4)
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._released = False
        self._children: list[Reward] = []  # validation rewards made here, closed with this one
        self._validation: Reward | None = None
        _LIVE.add(self)

    @property
    def spec(self) -> RewardSpec:
        """The composed spec, with every component's term resolved."""
        return self.worker.spec

    @property
    def providers(self) -> tuple[ProviderRecord, ...]:
        """What a run persists: catalog reference, provider, revision, identity, code fingerprint."""
        return self.worker.records

    @property
    def needs(self) -> tuple[str, ...]:
        return self.worker.needs

    @property
    def namespace(self) -> str:
        return self.worker.namespace

    @property
    def spec_identity(self) -> dict[str, Any]:
        """What a run records of the spec and compares on resume: the spec with params normalised."""
        return self.worker.spec_identity

    def check_resume(self, recorded: Sequence[ProviderRecord], strict: bool | None = None) -> None:
        """Refuse to resume pending work recorded under other provider identities."""
        check_resume_all(recorded, self.providers, strict)

    def _executor_for(self, groups: Sequence[GroupLike]) -> ThreadPoolExecutor | None:
        if self._released:
            raise RewardkitError("this Reward is closed; load() a new one")
        if len(groups) < 2 or self._threads < 2:
            return None
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="rewardkit-score")
            return self._executor

    def _admission(self, deadline_s: float | None, progress: Callable[[int], None] | None = None) -> Any:
        budget = check_deadline(deadline_s) if deadline_s is not None else self.config.rewards.deadline_s
        deadline = time.monotonic() + budget
        timeout_at = current().deadline  # no wait for capacity outlives the call's own timeout
        if timeout_at is not None:
            deadline = min(deadline, timeout_at)

        @contextmanager
        def admit(weight: int) -> Iterator[float]:
            with self.limiter.admit(weight, deadline) as waited:
                yield waited
            if progress is not None:
                progress(weight)

        return admit

    def score(
        self,
        groups: Iterable[GroupLike],
        *,
        deadline_s: float | None = None,
        timeout_s: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ScoredBatch:
        """Score complete groups: per-candidate ``final``, breakdown and advantage, and metrics. ``timeout_s``
        (default ``rewards.request_timeout_s``) bounds the whole call: past it the work is cancelled (queued
        groups dropped, sandboxes and judge calls stopped) and ``RequestTimeout`` raised; ``deadline_s``
        bounds the wait for capacity. ``groups`` is read once; ``progress(n)`` gets the rollouts scored since
        the last call."""
        batch = as_batch(groups)
        return run_bounded(
            self._timeout(timeout_s),
            lambda: self.worker.evaluate(
                batch, self._executor_for(batch), self._admission(deadline_s, progress), self.limiter.capacity
            ),
        )

    def process(
        self, groups: Iterable[GroupLike], *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> ScoredBatch:
        """Score and write ``reward``/``advantage`` into the trajectories, all or nothing."""
        batch = as_batch(groups)
        return run_bounded(
            self._timeout(timeout_s),
            lambda: self.worker.process(
                batch, self._executor_for(batch), self._admission(deadline_s), self.limiter.capacity
            ),
        )

    async def ascore(
        self, groups: Iterable[GroupLike], *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> ScoredBatch:
        """``score`` for asyncio, off the event loop; cancelling the awaiting task cancels the scoring too."""
        scope = CancelScope()
        with entered(scope):  # to_thread runs score in a copy of this context: it sees the scope
            try:
                return await asyncio.to_thread(
                    self.score, as_batch(groups), deadline_s=deadline_s, timeout_s=timeout_s
                )
            except asyncio.CancelledError:
                scope.cancel("the task awaiting ascore() was cancelled")
                raise

    def stream(self, *, deadline_s: float | None = None, timeout_s: float | None = None) -> RewardStream:
        """One batch scored a group at a time: ``with reward.stream() as s: s.submit(group)`` returns a
        future of the group's ``ScoredGroup`` once it is scored; ``s.close()`` (or leaving the block)
        returns the batch as ``score`` on those groups would. ``submit`` waits for capacity up to
        ``deadline_s`` (default ``rewards.deadline_s``); ``timeout_s`` (default
        ``rewards.request_timeout_s``) bounds each group's scoring. A cheap reward's group is scored in
        ``submit``'s thread, as ``score`` scores it. Not under ``batch`` scaling, where no advantage is
        known before the last group. See ``rewardkit.scoring.stream`` for failures."""
        if self._released:
            raise RewardkitError("this Reward is closed; load() a new one")
        rl = self.config.rl
        if rl.advantage_scaling == "batch":
            raise ConfigError(
                "batch scaling divides every advantage by the spread of the whole batch, so no group's "
                "advantage is known before the last group is scored; stream under group or none scaling, "
                "or score whole batches with score()",
                key="rl.advantage_scaling",
            )
        wait_s = check_deadline(deadline_s) if deadline_s is not None else self.config.rewards.deadline_s
        bound = self._timeout(timeout_s)
        # One batch for equal answers: what a batch starting here shares (its own results, or the
        # run's under across_batches), entered again around each group's scoring.
        shared = shared_results.for_new_batch()

        def score_one_group(group: GroupLike) -> ScoredBatch:
            return run_bounded(bound, lambda: self.worker.evaluate([group]))

        return RewardStream(
            score_one_group,
            SplitBatchFinisher(
                self.worker.scaling, std=self.worker.advantage_std, eps=self.worker.advantage_eps
            ),
            threads=self._threads,
            limiter=self.limiter,
            deadline_s=wait_s,
            rerun_budget=RerunBudget(self.worker.spec.reruns.per_batch),
            shared=shared,
            # The criterion score() uses to score in the calling thread (docs/performance.md).
            in_submitting_thread=self.worker.cheap,
        )

    def astream(
        self, *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> AsyncRewardStream:
        """``stream`` for asyncio: ``async with reward.astream() as s: await s.submit(group)``."""
        return AsyncRewardStream(self.stream(deadline_s=deadline_s, timeout_s=timeout_s))

    def _timeout(self, timeout_s: float | None) -> float | None:
        if timeout_s is not None:
            return check_deadline(timeout_s, "timeout_s")
        return self.config.rewards.request_timeout_s

    def validation(self) -> Reward:
        """The held-out reward (``rl.validation.reward``), from the same catalog, namespace ``val``;
        built once (by ``load``, so a wrong one fails before any training)."""
        with self._executor_lock:
            if self._validation is not None:
                return self._validation
        validation = self.config.rl.validation
        chosen = self.selection
        if validation is not None and validation.reward is not None:
            wanted = validation.reward
            if isinstance(wanted, str):
                chosen = RewardSelection(provider=wanted, catalog=self.selection.catalog)
            elif wanted.catalog is None:
                chosen = wanted.model_copy(update={"catalog": self.selection.catalog})
            else:
                chosen = wanted
            if chosen.catalog != self.selection.catalog:
                raise PreflightError(
                    f"rl.validation.reward must use the training catalog {self.selection.catalog!r}, "
                    f"not {chosen.catalog!r}: validation selects from the same catalog"
                )
        size = validation.n_generation if validation is not None else None
        child = Reward(
            self.config, chosen, namespace="val", group_size=size, catalog=self.catalog, runtime=self.runtime
        )
        with self._executor_lock:
            self._children.append(child)
            self._validation = child
        return child

    def close(self) -> None:
        """Release its threads, every provider's processes and sandboxes, and its validation
        rewards. Idempotent; also run at exit."""
        with self._executor_lock:
            if self._released:
                return
            self._released = True
            executor, self._executor = self._executor, None
            children, self._children = self._children, []
        _LIVE.discard(self)
        if executor is not None:
            executor.shutdown(wait=True)
        try:
            for child in children:
                child.close()
        finally:
            self.worker.close()

    def __enter__(self) -> Reward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_REWARD_IS_REWARD_LIKE: type[RewardLike] = Reward  # checked by the type checker

# Rewards not yet closed; whatever a caller forgot is closed at interpreter exit, so no provider
# process (a math worker, a sandbox) outlives the program.
_LIVE: weakref.WeakSet[Reward] = weakref.WeakSet()


@atexit.register
def _close_live_rewards() -> None:
    for reward in list(_LIVE):
        with contextlib.suppress(Exception):
            reward.close()


def build_reward(
    config: RewardkitConfig,
    selection: RewardSelection | None = None,
    *,
    group_size: int | None = None,
    runtime: Mapping[str, Any] | None = None,
) -> RewardLike:
    """The reward for ``selection`` (default ``rl.reward``) on the configured backend, the one dispatch, for
    ``load`` and every trainer binding: the selection's ``service`` or ``rl.reward.service`` scores in that
    Reward Service (the backend registered as ``service``), ``rewards.backend: NAME`` on the backend
    registered as NAME (``register_reward_backends``: ``ray``'s reward actors), else in this process.
    Nothing falls back: a missing distribution is ``MissingExtraError`` with its install line, an
    unreachable service or cluster fails here, ``runtime`` with either is a ``PreflightError``."""
    selection = selection or config.rl.reward
    service = selection.service or config.rl.reward.service
    known: Known | None
    if service is not None:
        where, name, known = "rl.reward.service", SERVICE_BACKEND, KNOWN_SERVICE_BACKEND
    else:
        name = config.rewards.backend
        where, known = f"rewards.backend: {name}", KNOWN_BACKENDS.get(name)
    remote = name != LOCAL_BACKEND
    if runtime is not None and remote:
        raise PreflightError(
            f"runtime objects {sorted(runtime)} live in this process and cannot travel to {where}; "
            "score providers that need them in-process"
        )
    if not remote:
        return Reward(config, selection, group_size=group_size, runtime=runtime)
    backend = _backend_class(name, where, known)
    return backend(config, selection, group_size=group_size)


def _backend_class(name: str, where: str, known: Known | None) -> Callable[..., RewardLike]:
    """The class of backend ``name`` (``register_reward_backends``), imported now; a known one whose
    distribution is missing is its one-line install error, nothing falls back to scoring here."""
    backends = reward_backends()
    if name not in backends and known is not None:
        raise known.missing(where)
    target = backends.get(name).value.target
    if not isinstance(target, str):
        return target
    module, _, attribute = target.partition(":")
    backend: Callable[..., RewardLike] = import_optional(module, attribute, where)
    return backend


def load(
    config: RewardkitConfig | Mapping[str, Any] | str | os.PathLike[str],
    overrides: Sequence[str] = (),
    *,
    runtime: Mapping[str, Any] | None = None,
) -> RewardLike:
    """Resolve and preflight the reward a configuration (``RewardkitConfig``, mapping or YAML/TOML path)
    selects, on the backend ``build_reward`` picks. ``runtime`` passes in-process objects (``{"decoder":
    decoder}``) to the factories declaring them and lets rollouts carry ``media`` (so no service or Ray)."""
    if not isinstance(config, RewardkitConfig):
        config = load_config(config, overrides)
    elif overrides:
        raise PreflightError("overrides apply when loading a file or mapping, not to a RewardkitConfig")
    reward = build_reward(config, runtime=runtime)
    validation = config.rl.validation
    if validation is not None and validation.reward is not None:
        # Preflight the held-out reward with the training one: a misspelt validation provider must
        # fail here, not when the trainer first validates, hours in.
        try:
            reward.validation()
        except BaseException:
            reward.close()
            raise
    return reward
