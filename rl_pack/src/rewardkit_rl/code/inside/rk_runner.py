"""The in-sandbox runner: a warm interpreter, and the zygote that forks every process of a run.

Loaded by the slot's bootstrap (``python -I -S``, standard library only) together with
``rk_wire``, ``rk_procs``, ``rk_seccomp``, ``rk_isolate``, ``rk_serve`` and ``rk_judge``. It starts once
per sandbox slot and stays root inside the sandbox's namespaces, so nothing it forks can signal it
or read its memory; once it has forked the zygote it keeps only the capabilities it needs to set
uids and kill (CAP_SYS_ADMIN and CAP_SETPCAP go, before any request is read).

Before it reads any request it forks the **zygote**, and every process of every run is a child of
the zygote, never of the runner. The zygote never reads request data: it takes the seccomp filter
(``rk_seccomp``, inherited by everything it forks) and keeps blank children ready, each waiting on
a socket of its own for one order from the runner (a role, a uid, a work dir, and its pipes'
descriptors). Only that child then reads its own job (its program, or its tests) from its own
pipe. So no process of a run holds another process's data, an earlier request's, or a sibling
candidate's: the candidate's memory holds its own program and nothing else, and the tests travel
to the test process only, after the candidate's process exists.

Isolated, each blank child for a candidate is pid 2 of a pid namespace and a mount namespace of
its own, with a ``/proc`` of that namespace (``rk_isolate``). Pid 1 runs no candidate code: for
an assert-style run it is the run's blank test process (a ``PAIR``: the test process must outlive
the candidate anyway, and when it ends the kernel ends the namespace, so the run costs no process
more than without one); for a stdin/stdout run it is an ``_init`` that only reaps and hands the
candidate's exit status to the zygote. So no run sees another's pids or moves them: whatever an
earlier run forked, a candidate is pid 2, its children 3, 4, ..., and its ``/proc`` lists its own
processes and pid 1 only. The candidate is not pid 1 because the kernel shields a namespace's
pid 1 from every signal with the default action sent from inside (SIGKILL included):
``os.kill(0, SIGKILL)``, its own SIGTERM or an alarm would no longer end it. The zygote forks both
ahead of the run, and hands each mount namespace to a closer process once the run is over
(dropping the last reference waits for an RCU grace period).

An assert-style run has two processes under two fresh unprivileged uids (the host hands out new
ones for every run and never reuses them while the slot lives):

- the candidate's process (``rk_serve``) runs the program and then only answers calls;
- the test process (``rk_judge``) runs the task's tests, calling into the candidate's process
  over a pipe pair, and writes the verdicts on a descriptor only it and the runner hold.

A stdin/stdout run forks the candidate's process alone; its stdout is compared on the host.

A run ends for certain: at its end (or deadline) its children of the zygote are SIGKILLed (a
candidate's init, pid 1 of its namespace, takes every process of it along), then every live
non-root process of the sandbox until none is left (``rk_procs``: a zombie leader with live
threads is alive), and the pipes are drained for at most ``DRAIN_S`` and ``output_cap`` bytes,
so no leftover can keep the runner from answering. A run that hit its deadline reports its
processes' CPU time and run-queue wait (read before the kill), for diagnostics.

Nothing of a run outlives it. After the kill its work dirs are removed, and ``/tmp`` and
``/dev/shm`` must be empty again (a run can write neither outside its own work dir: ``/tmp`` is
0711 and ``/dev/shm`` root's 0755); anything left there fails the request, and the host starts
the slot afresh, so no later run sees it. Abstract Unix sockets and timers die with the processes
that held them. Kernel objects that outlive every process (SysV IPC, POSIX message queues, keys)
cannot be made at all, nor can sockets of any family but ``AF_UNIX``, whose state (a TCP
connection in ``TIME_WAIT``) would outlive the run in the slot's network namespace (``rk_seccomp``).

Protocol with the host on fds 0 and 1: ``rk_wire`` frames both ways. The first frame the runner
writes is ``{"ready": true}``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import time
import traceback
from typing import Any

import rk_isolate
import rk_judge
import rk_procs
import rk_seccomp
import rk_serve
import rk_wire

PROTO_IN = 0
PROTO_OUT = 1
WORK_ROOT = "/tmp"
# Writable places of the sandbox's file system that a run might reach; both are empty between runs.
_SHARED_DIRS = (WORK_ROOT, "/dev/shm")
# exit codes of a stdin/stdout run's child; the candidate can fake them, which only fails it
EXIT_COMPILE_ERROR = 65
EXIT_RUNTIME_ERROR = 66
EXIT_HARNESS_ERROR = 71
# After the kill, draining a run's pipes never takes longer than this, whatever is left writing.
DRAIN_S = 0.5
_ORDER_BYTES = 1 << 16


# -- killing everything a run left behind -----------------------------------------------------------


def _kill_all(isolated: bool, pids: list[int]) -> None:
    """SIGKILL what the run left (background processes, daemons, a fork bomb, a zombie leader's
    threads): every live non-root process of the sandbox, whatever uid of whichever run it has."""
    if not isolated:
        # isolation "none": the runs' sessions are all we can find
        for session in pids:
            with contextlib.suppress(OSError):
                os.killpg(session, signal.SIGKILL)
        return
    rk_procs.kill_all(lambda uid: uid != 0)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _check_nothing_left() -> None:
    """Raise if a run left anything in ``/tmp`` or ``/dev/shm`` (the runner's own files included).

    Nothing there may outlive a run: the next run of the slot could read it. The error makes the
    host start the slot afresh (a new tmpfs) rather than trust a sweep of whatever is there.
    """
    for folder in _SHARED_DIRS:
        with contextlib.suppress(FileNotFoundError):
            left = os.listdir(folder)
            if left:
                raise RuntimeError(f"the run left {len(left)} entries in {folder}: {sorted(left)[:5]}")


# -- a forked child ------------------------------------------------------------------------------------


def _apply_limits(limits: dict[str, int], timeout: float) -> None:
    cpu = int(timeout) + 1
    pairs = (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (limits["memory_bytes"],) * 2),
        (resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2),
        (resource.RLIMIT_NOFILE, (limits["open_files"],) * 2),
        (resource.RLIMIT_NPROC, (limits["processes"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    )
    for which, value in pairs:
        resource.setrlimit(which, value)


def _enter(fds: dict[int, int], workdir: str, uid: int | None) -> None:
    """In a fresh child: only ``fds`` (target -> source) stay open, then drop to ``uid``."""
    os.setsid()
    # via high numbers first, so that no target overwrites a source still to be moved
    high = {target: fcntl.fcntl(source, fcntl.F_DUPFD, 512) for target, source in fds.items()}
    for target, source in high.items():
        os.dup2(source, target)
    keep = max(fds) + 1
    os.closerange(keep, 65536)
    for fd in range(keep):
        if fd not in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
    os.chdir(workdir)
    if uid is not None:  # from root to another uid: the effective and permitted sets empty too
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.umask(0o077)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(
        {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8"}
    )
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.argv = ["solution.py"]
    sys.path[:0] = [workdir]


# -- the zygote ------------------------------------------------------------------------------------

# The descriptor a child reads its job from, per role; the others are its pipes (see the runs below).
_JOB_FD = {"io": 3, "candidate": 5, "tests": 6}


def _child(order: dict[str, Any], fds: list[int]) -> None:
    """A blank child of the zygote: take its descriptors, drop to its uid, read its own job, run it."""
    code = EXIT_HARNESS_ERROR
    try:
        role = order["role"]
        _enter(dict(zip(order["targets"], fds, strict=True)), order["workdir"], order["uid"])
        job = rk_wire.read_frame(_JOB_FD[role])
        os.close(_JOB_FD[role])
        _apply_limits(job["limits"], job["timeout"])
        if role == "io":
            code = _io_program(job)
        elif role == "candidate":
            rk_serve.serve(job["program"], job["module_name"], job["expose"], 3, 4)
            code = 0
        else:
            rk_judge.judge(job, 5, 4, 3)
            code = 0
    except BaseException:
        code = EXIT_HARNESS_ERROR
    finally:
        os._exit(code)


def _spare(link: socket.socket) -> None:
    """A blank child that waits for its one order (and its descriptors) from the runner."""
    message, fds, _, _ = socket.recv_fds(link, _ORDER_BYTES, 16)
    if not message:
        os._exit(0)
    _child(json.loads(message), fds)


def _init(candidate: int, status_out: int) -> None:
    """Pid 1 of a candidate's namespace, forever after ``candidate`` (pid 2) forked: reap every
    process of the namespace until ``candidate`` ends, then hand its raw wait status to the zygote
    on ``status_out`` and exit (the kernel then kills whatever of the namespace is left).

    This process exists so that the candidate is not pid 1: the kernel drops every signal with the
    default action sent to a namespace's pid 1 from inside the namespace (SIGKILL and SIGSTOP
    included), so a candidate that was pid 1 would survive ``os.kill(0, SIGKILL)``, its own SIGTERM
    or an alarm, and its orphans would be its own children. It runs no candidate code, holds no
    capability and no descriptor but ``status_out``, and is root: no process of the run (a
    non-root uid) can signal or trace it.
    """
    code = 0
    try:
        os.closerange(3, status_out)
        os.closerange(status_out + 1, 65536)
        rk_isolate.drop_capabilities(tuple(range(64)))
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == candidate:
                os.write(status_out, status.to_bytes(4, "little"))
                return
    except BaseException:
        code = EXIT_HARNESS_ERROR
    finally:
        os._exit(code)


def _zygote(channel: socket.socket, isolated: bool) -> None:
    """The zygote's loop, until the runner goes: fork spare children on request, each with a
    socket of its own that goes to the runner, and report the exit statuses of children.

    Isolated, the zygote takes the seccomp filter first, so every process of every run inherits
    it from birth (a filter can never be removed); it allows the forks and uid drops that follow.
    Isolated, a candidate's spare is pid 2 of a pid and mount namespace of its own, whose pid 1 is
    an ``_init`` (stdin/stdout) or the run's test process (a pair, assert style); see
    ``_fork_spare``. The zygote keeps CAP_SYS_ADMIN to make them and never reads request data.
    """
    if isolated:
        rk_seccomp.install()
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (PROTO_IN, PROTO_OUT):  # the host's protocol is the runner's alone
        os.dup2(devnull, fd)
    os.close(devnull)
    # A mount namespace of each candidate, held until the runner has its status: the last process to
    # leave a mount namespace waits for an RCU grace period (milliseconds on a busy host), so none of
    # a run's processes does, nor the zygote, which hands each to the closer once the run is over.
    # They hold nothing of a run: its processes, all of its pid namespace, are gone.
    held: dict[int, int] = {}
    closer = _start_closer(channel)
    # the read end of each namespace's init's status pipe, by the init's pid
    status_of: dict[int, int] = {}
    while True:
        message = channel.recv(_ORDER_BYTES)
        if not message:
            return
        order = json.loads(message)
        if order["op"] == "wait":
            # a run's two roles share one pid when they are a pair: wait for it once
            waited = {pid: _status(pid, status_of.pop(pid, None)) for pid in dict.fromkeys(order["pids"])}
            channel.send(json.dumps({"statuses": [waited[pid] for pid in order["pids"]]}).encode())
            done = [held.pop(pid) for pid in waited if pid in held]
            if done:
                socket.send_fds(closer, [b"close"], done)
                for fd in done:
                    os.close(fd)  # the closer holds each now: this close is never the last one
        for kind in order.get("spares", []):
            pid, links, status_in = _fork_spare(kind, channel)
            if status_in is not None:
                status_of[pid] = status_in
            if kind != PLAIN:
                with contextlib.suppress(OSError):  # a child that failed is gone: nothing to hold
                    held[pid] = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
            announce = {"spare": pid, "kind": kind}
            socket.send_fds(channel, [json.dumps(announce).encode()], [link.fileno() for link in links])
            for link in links:
                link.close()


# The kinds of spare the zygote forks: a blank child (``PLAIN``: the test process, or any role
# unsandboxed); a candidate's blank child as pid 2 of a namespace of its own under an ``_init``
# (``INIT``: stdin/stdout runs); and a ``PAIR`` for an assert-style run: the blank test process as
# pid 1 of a namespace of its own and the candidate's blank child as its pid 2, so that the run
# costs no process more than without a namespace (the test process, which must outlive the
# candidate anyway, is its init: when it ends, the kernel ends the namespace).
PLAIN, INIT, PAIR = "plain", "init", "pair"


def _fork_spare(kind: str, channel: socket.socket) -> tuple[int, list[socket.socket], int | None]:
    """Fork one spare of ``kind``; returns the pid of the zygote's child, the runner's ends of the
    links (the test process's first for a pair), and the read end of an init's status pipe."""
    count = 2 if kind == PAIR else 1
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(count)]
    mine = [first for first, _ in pairs]
    theirs = [second for _, second in pairs]
    if kind == PLAIN:
        pid = os.fork()
        if pid == 0:
            channel.close()
            theirs[0].close()
            _spare(mine[0])
        mine[0].close()
        return pid, theirs, None
    status_in, status_out = os.pipe() if kind == INIT else (None, None)
    pid = rk_isolate.fork_into_own_namespaces()
    if pid == 0:  # pid 1 of the new namespace: mount its /proc, fork the candidate's spare
        channel.close()
        for link in theirs:
            link.close()
        if status_in is not None:
            os.close(status_in)
        rk_isolate.mount_own_proc()
        candidate = os.fork()
        if candidate == 0:  # pid 2: the candidate's blank child
            if status_out is not None:
                os.close(status_out)
            if kind == PAIR:
                mine[0].close()
            _spare(mine[-1])
        if status_out is not None:
            _init(candidate, status_out)
        mine[1].close()
        _spare(mine[0])  # a pair's pid 1: the blank test process
    for link in mine:
        link.close()
    if status_out is not None:
        os.close(status_out)
    return pid, theirs, status_in


def _start_closer(channel: socket.socket) -> socket.socket:
    """Fork the zygote's closer, which closes the mount namespaces it is sent; returns its socket.

    Dropping the last reference to a mount namespace waits for an RCU grace period: the closer
    waits, in its own time, so the zygote forks the next run's spares at once. It runs no
    candidate code and holds nothing but the namespaces (root, in the slot's namespaces)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if os.fork() == 0:
        code = 0
        try:
            channel.close()
            ours.close()
            _close_what_comes(theirs)
        except BaseException:
            code = EXIT_HARNESS_ERROR
        finally:
            os._exit(code)
    theirs.close()
    return ours


def _close_what_comes(link: socket.socket) -> None:
    """The closer's loop: close every descriptor sent on ``link`` until the zygote goes."""
    while True:
        message, fds, _, _ = socket.recv_fds(link, 16, 64)
        for fd in fds:
            os.close(fd)
        if not message:
            return


def _status(pid: int, status_in: int | None) -> int:
    """The exit status of child ``pid`` once it has ended; for a namespace's init, the status its
    spare (the run's process) ended with, which the init wrote on ``status_in`` before it exited.
    An init killed first (the run's deadline or end: it takes its namespace along) wrote none: its
    own status, SIGKILL, is the run process's too."""
    _, status = os.waitpid(pid, 0)
    if status_in is None:
        return status
    try:
        written = os.read(status_in, 4)
    finally:
        os.close(status_in)
    return int.from_bytes(written, "little") if len(written) == 4 else status


class Zygote:
    """The runner's handle on its zygote (forked at once, before any request is read).

    The zygote keeps blank children ready (one per role of a run), so a run's processes start
    without waiting for a fork: the runner hands a spare its order and descriptors, and asks for
    the next ones, which the zygote forks while the run goes on.

    Isolated, a candidate's spare has a pid namespace of its own (``_fork_spare``): an assert-style
    run takes a ``PAIR`` (its test process is the namespace's pid 1), a stdin/stdout run an
    ``INIT`` spare. Only what a candidate can observe must not depend on earlier runs.
    """

    def __init__(self, isolated: bool) -> None:
        self.isolated = isolated
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                self.channel.close()
                _zygote(theirs, isolated)
            except BaseException:
                code = EXIT_HARNESS_ERROR
            finally:
                os._exit(code)
        theirs.close()
        # blank children by kind: [(pid, links)] (a pair's test process's link first)
        self.spares: dict[str, list[tuple[int, list[socket.socket]]]] = {PLAIN: [], INIT: [], PAIR: []}
        self.used: list[str] = []  # the kinds of the spares spawned since the last refill
        self._send({"op": "spares", "spares": [PAIR, INIT] if isolated else [PLAIN, PLAIN]})

    def _send(self, order: dict[str, Any]) -> None:
        self.channel.send(json.dumps(order).encode())

    def _receive(self) -> dict[str, Any]:
        """The zygote's next message; a spare it announces joins ``spares``."""
        message, fds, _, _ = socket.recv_fds(self.channel, _ORDER_BYTES, 2)
        if not message:
            raise RuntimeError("the zygote is gone")
        answer = json.loads(message)
        if "spare" in answer:
            links = [socket.socket(fileno=fd) for fd in fds]
            self.spares[answer["kind"]].append((answer["spare"], links))
        return answer

    def _take(self, kind: str) -> tuple[int, list[socket.socket]]:
        while not self.spares[kind]:
            self._receive()
        self.used.append(kind)
        return self.spares[kind].pop(0)

    def spawn(self, uid_of: dict[str, int | None], workdirs: dict[str, str],
              fds_of: dict[str, dict[int, int]]) -> list[int]:  # fmt: skip
        """Start one blank child per role (in order), each holding its ``fds`` (its descriptor ->
        ours, which are closed here); returns their pids (isolated, an assert-style run's two
        roles are a pair with one pid: the test process's, whose end ends the candidate's)."""
        if self.isolated and set(fds_of) == {"candidate", "tests"}:
            pid, links = self._take(PAIR)
            taken = {"tests": (pid, links[0]), "candidate": (pid, links[1])}
        else:
            kinds = {role: INIT if self.isolated else PLAIN for role in fds_of}
            kinds["tests"] = PLAIN
            taken = {}
            for role in fds_of:
                pid, links = self._take(kinds[role])
                taken[role] = (pid, links[0])
        pids = []
        for role, fds in fds_of.items():
            pid, link = taken[role]
            order = {"role": role, "uid": uid_of[role], "workdir": workdirs[role], "targets": list(fds)}
            socket.send_fds(link, [json.dumps(order).encode()], list(fds.values()))
            link.close()
            pids.append(pid)
        for fd in {fd for fds in fds_of.values() for fd in fds.values()}:
            os.close(fd)
        return pids

    def refill(self) -> None:
        """Ask for new spares in place of those spawned since the last call. The runner asks once
        it has answered, so the zygote forks them while the host reads the answer and sends the
        next request, not while a run competes with it for the slot's CPU."""
        if self.used:
            self._send({"op": "spares", "spares": self.used})
            self.used = []

    def wait(self, pids: list[int]) -> dict[int, int]:
        """The exit statuses of ``pids`` (children it spawned), once each has ended."""
        self._send({"op": "wait", "pids": pids})
        while True:
            answer = self._receive()
            if "statuses" in answer:
                return dict(zip(pids, answer["statuses"], strict=True))


class _Job:
    """A child's job on its own pipe. What fits in the pipe is written before the child exists, so
    the child starts on it at once; ``finish`` writes the rest once the child reads."""

    def __init__(self, fd: int, job: dict[str, Any]) -> None:
        self.fd = fd
        self.rest = memoryview(rk_wire.frame(job))
        os.set_blocking(fd, False)
        with contextlib.suppress(BlockingIOError):
            self.rest = self.rest[os.write(fd, self.rest) :]
        os.set_blocking(fd, True)

    def finish(self) -> None:
        try:
            while self.rest:
                self.rest = self.rest[os.write(self.fd, self.rest) :]
        except OSError:
            pass  # the child died before reading its job: its exit status tells
        finally:
            os.close(self.fd)


def _io_program(request: dict[str, Any]) -> int:
    try:
        code = compile(request["program"], "solution.py", "exec")
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return EXIT_COMPILE_ERROR
    status = 0
    try:
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__, "__file__": "solution.py"})
    except SystemExit as error:
        status = 0 if error.code in (None, 0) else EXIT_RUNTIME_ERROR
    except BaseException:
        status = EXIT_RUNTIME_ERROR
    try:
        sys.stdout.flush()
    except BaseException:
        status = EXIT_RUNTIME_ERROR
    return status


# -- one run, seen from the runner ------------------------------------------------------------------


class _Capture:
    """Keeps the first ``cap`` bytes of a pipe and counts (then drops) the rest."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def pump(self) -> bool:
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.total += len(chunk)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        return True


def _workdir(name: str, uid: int | None) -> str:
    path = f"{WORK_ROOT}/{name}"
    os.mkdir(path, 0o700)
    if uid is not None:
        os.chown(path, uid, uid)
    return path


def _watch(captures: dict[int, _Capture], pid: int, deadline: float) -> bool:
    """Pump ``captures`` until ``pid`` exits or ``deadline``; returns whether the deadline came first."""
    for fd in captures:
        os.set_blocking(fd, False)
    pidfd = os.pidfd_open(pid)
    open_fds = set(captures)
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            ready, _, _ = select.select([*open_fds, pidfd], [], [], remaining)
            for fd in ready:
                if fd != pidfd and not captures[fd].pump():
                    open_fds.discard(fd)
            if pidfd in ready:
                return False
    finally:
        os.close(pidfd)


class _Run:
    """One run's processes, seen from the runner: spawned by the zygote, ended by ``finish``."""

    def __init__(self, zygote: Zygote, uids: list[int] | None, timeout: float) -> None:
        self.zygote = zygote
        self.uids = uids
        self.pids: list[int] = []
        self.started = time.monotonic()
        self.deadline = self.started + timeout

    def usage(self) -> dict[str, float]:
        """CPU, run-queue wait and runnable threads of the run's live processes (read at the
        deadline, before the kill)."""
        if self.uids is None:
            pids = self.pids
        else:
            mine = set(self.uids)
            pids = rk_procs.live_processes(mine.__contains__)
        cpu, wait, runnable = rk_procs.usage(pids)
        return {"cpu_s": cpu, "wait_s": wait, "runnable": runnable}

    def finish(self, captures: dict[int, _Capture]) -> dict[int, int]:
        """Kill whatever the run left, collect the exit statuses, drain the pipes for a bounded time."""
        for pid in self.pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        # A candidate's init (pid 1 of its namespace) is gone only once every process of it is;
        # the sweep is for the test process's forks, runs without namespaces (isolation "none"),
        # and a safety net for the others.
        statuses = self.zygote.wait(self.pids)
        _kill_all(self.uids is not None, self.pids)
        stop = time.monotonic() + DRAIN_S
        for capture in captures.values():
            while capture.total <= capture.cap:
                remaining = stop - time.monotonic()
                if remaining <= 0:
                    break
                ready, _, _ = select.select([capture.fd], [], [], min(remaining, 0.05))
                if not ready or not capture.pump():
                    break
            os.close(capture.fd)
        _reap()
        return statuses


def _exit_fields(status: int | None) -> dict[str, int | None]:
    if status is None:
        return {"signal": None, "exit_code": None}
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status), "exit_code": None}
    return {"signal": None, "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}


def _output_fields(out: _Capture, err: _Capture, cap: int) -> dict[str, Any]:
    return {
        "stdout": bytes(out.kept).decode("utf-8", "replace"),
        "stdout_bytes": out.total,
        "stderr_tail": bytes(err.kept[-2000:]).decode("utf-8", "replace"),
        "truncated": out.total > cap,
    }


def _limits(request: dict[str, Any]) -> dict[str, Any]:
    return {"limits": request["limits"], "timeout": request["timeout"]}


def _run_io(zygote: Zygote, request: dict[str, Any], uids: list[int] | None, counter: int) -> dict[str, Any]:
    uid = uids[0] if uids else None
    workdir = _workdir(f"run-{counter}", uid)
    stdin_path = f"{WORK_ROOT}/stdin-{counter}"
    with open(stdin_path, "w", encoding="utf-8") as handle:
        handle.write(request.get("stdin") or "")
    os.chmod(stdin_path, 0o444)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    job_r, job_w = os.pipe()
    run = _Run(zygote, uids, request["timeout"])
    job = _Job(job_w, {"program": request["program"], **_limits(request)})
    stdin = os.open(stdin_path, os.O_RDONLY)
    run.pids += zygote.spawn({"io": uid}, {"io": workdir}, {"io": {0: stdin, 1: out_w, 2: err_w, 3: job_r}})
    job.finish()
    cap = request["output_cap"]
    captures = {out_r: _Capture(out_r, cap), err_r: _Capture(err_r, cap)}
    timed_out = _watch(captures, run.pids[0], run.deadline)
    usage = run.usage() if timed_out else {}
    statuses = run.finish(captures)
    shutil.rmtree(workdir, ignore_errors=True)
    os.unlink(stdin_path)
    exit_fields = _exit_fields(statuses[run.pids[0]])
    code = exit_fields["exit_code"]
    programs: dict[int | None, str] = {0: "ok", EXIT_COMPILE_ERROR: "compile_error"}
    program = programs.get(code, "runtime_error")
    return {
        "program": program,
        "timed_out": timed_out,
        **usage,
        **exit_fields,
        **_output_fields(captures[out_r], captures[err_r], cap),
        "elapsed": time.monotonic() - run.started,
    }


def _run_asserts(
    zygote: Zygote, request: dict[str, Any], uids: list[int] | None, counter: int
) -> dict[str, Any]:
    candidate_uid, test_uid = uids if uids else (None, None)
    candidate_dir = _workdir(f"run-{counter}", candidate_uid)
    test_dir = _workdir(f"tests-{counter}", test_uid)
    calls_r, calls_w = os.pipe()
    replies_r, replies_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    result_r, result_w = os.pipe()
    candidate_job_r, candidate_job_w = os.pipe()
    tests_job_r, tests_job_w = os.pipe()
    run = _Run(zygote, uids, request["timeout"])
    candidate_job = _Job(
        candidate_job_w,
        {**{key: request[key] for key in ("program", "module_name", "expose")}, **_limits(request)},
    )
    null = os.open("/dev/null", os.O_RDWR)
    fds = {
        "candidate": {0: null, 1: out_w, 2: err_w, 3: calls_r, 4: replies_w, 5: candidate_job_r},
        "tests": {0: null, 1: null, 2: null, 3: result_w, 4: replies_r, 5: calls_w, 6: tests_job_r},
    }
    uid_of = {"candidate": candidate_uid, "tests": test_uid}
    run.pids += zygote.spawn(uid_of, {"candidate": candidate_dir, "tests": test_dir}, fds)
    candidate_job.finish()
    # The tests exist outside the runner only once the candidate's process does, and only there.
    tests_job = _Job(tests_job_w, {**{key: request[key] for key in ("tests", "setup", "trusted", "expose")},
                                   **_limits(request)})  # fmt: skip
    tests_job.finish()
    cap = request["output_cap"]
    captures = {
        out_r: _Capture(out_r, cap),
        err_r: _Capture(err_r, cap),
        result_r: _Capture(result_r, 1 << 20),
    }
    # The run is over when the test process is; the candidate's process is killed with the rest.
    timed_out = _watch(captures, run.pids[1], run.deadline)
    usage = run.usage() if timed_out else {}
    statuses = run.finish(captures)
    shutil.rmtree(candidate_dir, ignore_errors=True)
    shutil.rmtree(test_dir, ignore_errors=True)
    return {
        "verdicts": bytes(captures[result_r].kept).decode("ascii", "replace"),
        "timed_out": timed_out,
        **usage,
        **_exit_fields(statuses[run.pids[0]]),
        **_output_fields(captures[out_r], captures[err_r], cap),
        "elapsed": time.monotonic() - run.started,
    }


def main() -> None:
    global WORK_ROOT
    isolated = len(sys.argv) > 1 and json.loads(sys.argv[1]) is True
    if isolated:
        rk_seccomp.program(os.uname().machine)  # a machine the filter does not know: refuse to start
        # The slot's CPU, for the runner and all it forks; no run may leave it (the filter).
        os.sched_setaffinity(0, {json.loads(sys.argv[2])})
        os.chmod(WORK_ROOT, 0o711)  # candidates may enter their own run dir, never list or write /tmp
        rk_isolate.limit_capabilities()  # for good, for every process of the slot
    else:
        # Unsandboxed, /tmp is the host's: never change its mode or share its names with other
        # runners. The host made this folder for the slot and removes it when the slot stops.
        WORK_ROOT = json.loads(sys.argv[2])
    zygote = Zygote(isolated)  # before any request exists in this process
    if isolated:  # only the zygote makes namespaces; the runner, which reads requests, cannot
        rk_isolate.drop_capabilities((rk_isolate.CAP_SYS_ADMIN,))
    rk_wire.write_frame(PROTO_OUT, {"ready": True, "pid": os.getpid()})
    counter = 0
    while True:
        request = rk_wire.read_frame(PROTO_IN)
        if request is None:
            return
        counter += 1
        uids = request["uids"] if isolated else None
        try:
            run = _run_io if request["mode"] == "io" else _run_asserts
            response = run(zygote, request, uids, counter)
            if isolated:
                _check_nothing_left()
        except BaseException as error:
            response = {"error": f"runner: {type(error).__name__}: {error}", "trace": traceback.format_exc()}
        rk_wire.write_frame(PROTO_OUT, response)
        zygote.refill()
