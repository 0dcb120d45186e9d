"""The in-sandbox runner: a warm interpreter, and the zygote that forks every process of a run.

Loaded by the slot's bootstrap (``python -I -S``, standard library only) together with
``rk_wire``, ``rk_procs``, ``rk_seccomp``, ``rk_isolate``, ``rk_serve`` and ``rk_judge``. It starts
once per sandbox slot and stays root inside the sandbox's namespaces, with only the capabilities it
needs to set uids and kill, so nothing it forks can signal it or read its memory; before it forks
anything it empties its bounding, inheritable and ambient sets and drops CAP_SETPCAP
(``rk_isolate``), so no process of a run sees a capability in any of its sets.

Before it reads any request it forks the **zygote**, and every process of every run is a child of
the zygote, never of the runner. The zygote never reads request data: it takes the seccomp filter
(``rk_seccomp``, inherited by everything it forks) and keeps blank children ready, each waiting on
a socket of its own for one order from the runner (a role, a uid, a work dir, and its pipes'
descriptors). Only that child then reads its own job (its program, or its tests) from its own
pipe. So no process of a run holds another process's data, an earlier request's, or a sibling
candidate's: the candidate's memory holds its own program and nothing else, and the tests travel
to the test process only, after the candidate's process exists.

An assert-style run has two processes under two fresh unprivileged uids (the host hands out new
ones for every run and never reuses them while the slot lives):

- the candidate's process (``rk_serve``) runs the program and then only answers calls;
- the test process (``rk_judge``) runs the task's tests, calling into the candidate's process
  over a pipe pair, and writes the verdicts on a descriptor only it and the runner hold.

A stdin/stdout run forks the candidate's process alone; its stdout is compared on the host.

A run ends for certain: at its end (or deadline) every live non-root process of the sandbox is
SIGKILLed until none is left (``rk_procs``: a zombie leader with live threads is alive), and the
pipes are drained for at most ``DRAIN_S`` and ``output_cap`` bytes, so no leftover can keep the
runner from answering. A run that hit its deadline reports its processes' CPU time and run-queue
wait (read before the kill), so the host can tell a program that used its time from a starved one.

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
    if uid is not None:
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


def _zygote(channel: socket.socket, isolated: bool) -> None:
    """The zygote's loop, until the runner goes: fork spare children on request, each with a
    socket of its own that goes to the runner, and report the exit statuses of children.

    Isolated, the zygote takes the seccomp filter first, so every process of every run inherits
    it from birth (a filter can never be removed); it allows the forks and uid drops that follow.
    """
    if isolated:
        rk_seccomp.install()
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (PROTO_IN, PROTO_OUT):  # the host's protocol is the runner's alone
        os.dup2(devnull, fd)
    os.close(devnull)
    while True:
        message = channel.recv(_ORDER_BYTES)
        if not message:
            return
        order = json.loads(message)
        if order["op"] == "wait":
            statuses = [os.waitpid(pid, 0)[1] for pid in order["pids"]]
            channel.send(json.dumps({"statuses": statuses}).encode())
        for _ in range(order.get("spares", 0)):
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            pid = os.fork()
            if pid == 0:
                channel.close()
                theirs.close()
                _spare(mine)
            mine.close()
            socket.send_fds(channel, [json.dumps({"spare": pid}).encode()], [theirs.fileno()])
            theirs.close()


class Zygote:
    """The runner's handle on its zygote (forked at once, before any request is read).

    The zygote keeps blank children ready (``SPARES`` per run), so a run's processes start without
    waiting for a fork: the runner hands a spare its order and descriptors, and asks for the next
    ones, which the zygote forks while the run goes on.
    """

    SPARES = 2

    def __init__(self, isolated: bool) -> None:
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
        self.spares: list[tuple[int, socket.socket]] = []
        self._send({"op": "spares", "spares": self.SPARES})

    def _send(self, order: dict[str, Any]) -> None:
        self.channel.send(json.dumps(order).encode())

    def _receive(self) -> dict[str, Any]:
        """The zygote's next message; a spare it announces joins ``spares``."""
        message, fds, _, _ = socket.recv_fds(self.channel, _ORDER_BYTES, 1)
        if not message:
            raise RuntimeError("the zygote is gone")
        answer = json.loads(message)
        if "spare" in answer:
            self.spares.append((answer["spare"], socket.socket(fileno=fds[0])))
        return answer

    def spawn(self, uid_of: dict[str, int | None], workdirs: dict[str, str],
              fds_of: dict[str, dict[int, int]]) -> list[int]:  # fmt: skip
        """Start one blank child per role (in order), each holding its ``fds`` (its descriptor ->
        ours, which are closed here); returns their pids."""
        pids = []
        for role, fds in fds_of.items():
            while not self.spares:
                self._receive()
            pid, link = self.spares.pop(0)
            order = {"role": role, "uid": uid_of[role], "workdir": workdirs[role], "targets": list(fds)}
            socket.send_fds(link, [json.dumps(order).encode()], list(fds.values()))
            link.close()
            pids.append(pid)
        for fd in {fd for fds in fds_of.values() for fd in fds.values()}:
            os.close(fd)
        self._send({"op": "spares", "spares": len(pids)})
        return pids

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
        statuses = self.zygote.wait(self.pids)  # once they are gone, only what they forked is left
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
        rk_isolate.limit_capabilities()  # for good, for every process of the slot, before any fork
    else:
        # Unsandboxed, /tmp is the host's: never change its mode or share its names with other
        # runners. The host made this folder for the slot and removes it when the slot stops.
        WORK_ROOT = json.loads(sys.argv[2])
    zygote = Zygote(isolated)  # before any request exists in this process
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
