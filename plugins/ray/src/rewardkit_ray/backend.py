"""``RayReward``: the ``Reward`` surface, with groups scored by a pool of reward actors on Ray.

Selected by ``rewards.backend: ray`` (``rewards.ray.address``, ``rewards.ray.num_actors``).

* Identity: the driver preflights the reward itself (so a bad configuration fails before any
  actor starts), then starts ``num_actors`` actors. Each resolves the same persisted catalog
  reference, builds its own providers and compares its provider records with the driver's; any
  difference refuses the whole reward with both identity hashes, before anything is scored.
* Spreading and back-pressure: each group is admitted by the same ``rewards.max_inflight``
  limiter as in-process scoring (callers wait until ``deadline_s``, never dropped), then sent to
  the least-loaded live actor, with at most ``DEPTH`` groups queued per actor so a slow actor does
  not collect a backlog while others idle.
* Actor loss: scoring has no side effects, so a group whose actor dies is rescored on another live
  actor. When no actor is left the batch fails with ``ActorsLostError`` and nothing is returned or
  written: annotation and the report run on the driver only once every group is staged.
* Equality: actors return each group's compositions and provider results; the driver finishes
  the whole batch in one ``RewardWorker.finish`` call, the one in-process scoring makes, so a batch
  equals in-process scoring exactly, advantages and metrics included. Nothing is merged from
  parts, so the split-batch finisher (``rewardkit.scoring.split_batch``) has nothing to do here.

A Ray session is started only when none is running (``ray.init`` with the configured address, or
a local instance on 127.0.0.1 without a dashboard) and is shut down by the last ``close()`` of a
``RayReward`` that started it. A trainer that already runs Ray (verl, OpenRLHF) keeps its session.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError, RayTaskError

from rewardkit.plugin import (
    CancelScope,
    Catalog,
    GroupLike,
    IdentityMismatchError,
    PreflightError,
    Reward,
    RewardkitConfig,
    RewardkitError,
    RewardLike,
    RewardSelection,
    ScoredBatch,
    as_batch,
    available_inputs,
    batch_parts,
    current,
    run_bounded,
)
from rewardkit_ray.actor import RewardActor
from rewardkit_ray.section import RayConfig
from rewardkit_ray.wire import staged_from_wire

DEPTH = 2  # groups in flight per actor, so an actor never idles between calls
STARTUP_TIMEOUT_S = 120.0
ActorOptions = Callable[[int], Mapping[str, Any]]


class ActorsLostError(RewardkitError):
    """Every reward actor died; the batch was not scored and nothing was published."""


class _Session:
    """Whether rewardkit started the Ray session, and how many ``RayReward``s still use it."""

    lock = threading.Lock()
    users = 0
    owned = False

    @classmethod
    def enter(cls, address: str | None) -> None:
        with cls.lock:
            if not ray.is_initialized():
                if address in (None, "local") and not os.environ.get("RAY_ADDRESS"):
                    # A private local instance on loopback: nothing listens on other interfaces.
                    ray.init(
                        address="local",
                        _node_ip_address="127.0.0.1",
                        include_dashboard=False,
                        log_to_driver=False,
                    )
                else:
                    ray.init(address=address, log_to_driver=False)
                cls.owned = True
            cls.users += 1

    @classmethod
    def leave(cls) -> None:
        with cls.lock:
            cls.users -= 1
            if cls.users == 0 and cls.owned:
                ray.shutdown()
                cls.owned = False


@dataclass
class _Slot:
    index: int
    handle: Any
    where: str
    in_flight: int = 0
    scored: int = 0
    alive: bool = True
    death: str = ""


@dataclass
class _Stats:
    groups_scored: int = 0
    groups_rescored: int = 0
    actors_lost: int = 0
    lost: list[str] = field(default_factory=list)


class _ActorPool:
    """Live actors and their queue depth; hands out the least-loaded one, waits when all are full."""

    def __init__(self, slots: list[_Slot]) -> None:
        self.slots = slots
        self.stats = _Stats()
        self._cond = threading.Condition()

    def take(self) -> _Slot:
        with self._cond:
            while True:
                alive = [slot for slot in self.slots if slot.alive]
                if not alive:
                    raise ActorsLostError(
                        f"all {len(self.slots)} reward actors died ({'; '.join(self.stats.lost)}); the "
                        "batch was not scored and nothing was published. Check the actors' logs "
                        "(memory, node loss) and create a new RayReward"
                    )
                free = [slot for slot in alive if slot.in_flight < DEPTH]
                if free:
                    slot = min(free, key=lambda s: (s.in_flight, s.index))
                    slot.in_flight += 1
                    return slot
                self._cond.wait()

    def give_back(self, slot: _Slot, scored: bool) -> None:
        with self._cond:
            slot.in_flight -= 1
            if scored:
                slot.scored += 1
                self.stats.groups_scored += 1
            self._cond.notify_all()

    def lost(self, slot: _Slot, error: BaseException) -> None:
        with self._cond:
            if slot.alive:
                slot.alive = False
                slot.death = f"{slot.where}: {type(error).__name__}"
                self.stats.actors_lost += 1
                self.stats.lost.append(slot.death)
            self.stats.groups_rescored += 1
            self._cond.notify_all()


class RayReward(Reward):
    """A ``Reward`` whose groups are scored by Ray reward actors (see the module docstring).

    ``actor_options(index)`` may return extra ``.options()`` for actor ``index`` (resources,
    scheduling strategy, ``runtime_env``); by default each actor reserves one CPU.
    """

    def __init__(
        self,
        config: RewardkitConfig,
        selection: RewardSelection | None = None,
        *,
        namespace: str = "train",
        group_size: int | None = None,
        catalog: Catalog | None = None,
        actor_options: ActorOptions | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
    ) -> None:
        # Driver preflight first: a configuration that cannot work fails before Ray is touched.
        super().__init__(config, selection, namespace=namespace, group_size=group_size, catalog=catalog)
        settings = config.section("rewards.ray", RayConfig) or RayConfig()
        self.num_actors = settings.num_actors
        self._actor_options = actor_options
        self._closed = False
        self._pool: _ActorPool | None = None
        _Session.enter(settings.address)
        try:
            self._pool = _ActorPool(self._start_actors(startup_timeout_s))
        except BaseException:
            self._stop_actors()
            _Session.leave()
            self._closed = True
            raise
        self._dispatch = ThreadPoolExecutor(
            self.num_actors * DEPTH, thread_name_prefix="rewardkit-ray-dispatch"
        )

    # -- start-up and identity -------------------------------------------------------------------

    def _start_actors(self, timeout_s: float) -> list[_Slot]:
        remote_class = ray.remote(RewardActor)
        worker = self.worker
        driver_records = [record.to_json() for record in self.providers]
        handles: list[Any] = []  # Ray's stubs type a handle's methods as plain functions, with no .remote
        for index in range(self.num_actors):
            # Providers are thread-safe (in-process scoring runs them in threads), so an actor takes
            # its queued groups concurrently: one group's Python work overlaps another's wait on
            # a provider's own worker processes, as it does in-process.
            options: dict[str, Any] = {
                "num_cpus": 1,
                "max_concurrency": DEPTH,
                "max_restarts": 0,
                "max_task_retries": 0,
            }
            if self._actor_options is not None:
                options.update(self._actor_options(index))
            handles.append(
                remote_class.options(**options).remote(
                    index,
                    self.catalog.ref,
                    worker.spec.to_json(),
                    driver_records,
                    group_size=worker.group_size,
                    namespace=worker.namespace,
                    scaling=worker.scaling,
                    available_inputs=available_inputs(self.config),
                )
            )
        self._handles = handles
        try:
            hellos = ray.get([handle.handshake.remote() for handle in handles], timeout=timeout_s)
        except GetTimeoutError:
            raise PreflightError(
                f"{self.num_actors} reward actors did not start within {timeout_s:.0f}s; each needs "
                f"one CPU and the cluster has {ray.cluster_resources().get('CPU', 0):g}. Lower "
                "rewards.ray.num_actors or add nodes"
            ) from None
        except (RayActorError, RayTaskError) as error:
            raise PreflightError(f"a reward actor failed to start: {error}") from error
        refusals = [hello["refusal"] for hello in hellos if hello["refusal"]]
        if refusals:
            raise IdentityMismatchError(
                f"{len(refusals)} of {self.num_actors} reward actors refuse to score for this driver: "
                + " | ".join(refusals)
                + ". Every actor must resolve the same catalog to the same providers: install the "
                "same provider code on every node"
            )
        for hello in hellos:
            for message in hello["warnings"]:
                warnings.warn(message, stacklevel=3)
        return [_Slot(hello["index"], handle, hello["where"]) for hello, handle in zip(hellos, handles)]

    # -- properties -------------------------------------------------------------------------------

    @property
    def actors(self) -> tuple[Any, ...]:
        """The actor handles, in start order (dead ones included)."""
        return tuple(self._handles)

    @property
    def stats(self) -> dict[str, Any]:
        """Groups scored and rescored, and actors alive and lost, since this reward started."""
        pool = self._require_pool()
        return {
            "groups_scored": pool.stats.groups_scored,
            "groups_rescored": pool.stats.groups_rescored,
            "actors_alive": sum(slot.alive for slot in pool.slots),
            "actors_lost": pool.stats.actors_lost,
            "groups_per_actor": [slot.scored for slot in pool.slots],
        }

    def _require_pool(self) -> _ActorPool:
        if self._closed or self._pool is None:
            raise RewardkitError("this RayReward is closed; create a new one to score")
        return self._pool

    # -- scoring ----------------------------------------------------------------------------------

    def _stage_on_actors(
        self,
        groups: Sequence[GroupLike],
        deadline_s: float | None,
        progress: Callable[[int], None] | None = None,
    ) -> list:
        pool = self._require_pool()
        parts = batch_parts(groups)
        admit = self._admission(deadline_s, progress)
        scope = current()  # the dispatch threads check the caller's request scope
        futures: list[Future] = [
            self._dispatch.submit(self._stage_one, pool, group_id, rollouts, admit, scope)
            for group_id, rollouts in parts
        ]
        try:
            staged = [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return [
            (group_id, rollouts, composed, results)
            for (group_id, rollouts), (composed, results) in zip(parts, staged)
        ]

    def _stage_one(
        self,
        pool: _ActorPool,
        group_id: str,
        rollouts: Sequence[Mapping[str, Any]],
        admit: Any,
        scope: CancelScope,
    ) -> tuple:
        scope.raise_if_cancelled()  # a cancelled request's queued groups are dropped
        with admit(len(rollouts) if hasattr(rollouts, "__len__") else 1):
            while True:
                scope.raise_if_cancelled()
                slot = pool.take()
                scored = False
                try:
                    wire = _get_unless_cancelled(slot.handle.stage.remote(group_id, _plain(rollouts)), scope)
                    scored = True
                except (RayActorError, ActorUnavailableError) as error:
                    # The actor died with this group queued or running: rescore it elsewhere.
                    pool.lost(slot, error)
                    continue
                except RayTaskError as error:
                    # The actor's own error (a provider failure under onError: raise, a contract
                    # violation): the same exception in-process scoring would have raised.
                    cause = error.cause if isinstance(error.cause, BaseException) else error
                    raise cause from None
                finally:
                    pool.give_back(slot, scored)
                return staged_from_wire(wire)

    def score(
        self,
        groups: Iterable[GroupLike],
        *,
        deadline_s: float | None = None,
        timeout_s: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ScoredBatch:
        """Score complete groups on the actors; equal to ``Reward.score`` on the same groups.

        ``timeout_s`` (default ``rewards.request_timeout_s``) bounds the call: past it, groups not
        yet sent are dropped and the call raises ``RequestTimeout`` without waiting for the actors;
        a group an actor is already scoring runs to its end there (Ray cannot interrupt a running
        task of a threaded actor). ``progress(n)`` is called as groups come back.
        """
        batch = as_batch(groups)
        return run_bounded(
            self._timeout(timeout_s),
            lambda: self.worker.finish(self._stage_on_actors(batch, deadline_s, progress)),
        )

    def process(
        self, groups: Iterable[GroupLike], *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> ScoredBatch:
        """Score on the actors and write ``reward``/``advantage`` into the trajectories, all or nothing."""
        batch = as_batch(groups)
        return run_bounded(
            self._timeout(timeout_s),
            lambda: self.worker.process_with(batch, lambda: self._stage_on_actors(batch, deadline_s)),
        )

    def compose_on_actor(self, spec: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
        """Compose one candidate's outcomes on a live actor (how the shared vectors reach actor code)."""
        slot = self._require_pool().take()
        try:
            return ray.get(slot.handle.compose.remote(spec, components))
        except RayTaskError as error:
            cause = error.cause if isinstance(error.cause, BaseException) else error
            raise cause from None
        finally:
            self._require_pool().give_back(slot, False)

    # -- shutdown ---------------------------------------------------------------------------------

    def _stop_actors(self) -> None:
        for handle in getattr(self, "_handles", ()):
            # An actor that is already gone needs no stopping.
            with contextlib.suppress(Exception):
                ray.kill(handle, no_restart=True)
        self._handles = []

    def close(self) -> None:
        """Stop the actors, and the Ray session when this process started it and nobody else uses it."""
        if self._closed:
            return
        self._closed = True
        self._dispatch.shutdown(wait=True, cancel_futures=True)
        self._stop_actors()
        _Session.leave()
        super().close()

    def __enter__(self) -> RayReward:
        return self


_RAY_REWARD_IS_REWARD_LIKE: type[RewardLike] = RayReward  # checked by the type checker


def _plain(rollouts: Sequence[Mapping[str, Any]]) -> Any:
    """Rollouts as sent to an actor: mappings the trainer owns may be of any picklable type."""
    return rollouts if isinstance(rollouts, list) else list(rollouts)


def _get_unless_cancelled(ref: Any, scope: CancelScope, poll_s: float = 0.05) -> Any:
    """``ray.get(ref)``, given up (and the task cancelled where Ray can) once ``scope`` is cancelled."""
    while True:
        ready, _ = ray.wait([ref], timeout=poll_s)
        if ready:
            return ray.get(ready[0])
        if scope.cancelled:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
            scope.raise_if_cancelled()
