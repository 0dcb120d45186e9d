"""The in-sandbox runner: a warm interpreter that forks the processes of each run.

Loaded by the slot's bootstrap (``python -I -S``, standard library only) together with
``rk_wire``, ``rk_serve`` and ``rk_judge``. It starts once per sandbox slot and stays root inside
the sandbox's namespaces, with only the capabilities it needs to set uids and kill, so nothing it
forks can signal it or read its memory.

An assert-style run forks two processes under two different unprivileged uids:

- the candidate's process (``rk_serve``) runs the program and then only answers calls;
- the test process (``rk_judge``) runs the task's tests, calling into the candidate's process
  over a pipe pair, and writes the verdicts on a descriptor only it and the runner hold.

A stdin/stdout run forks the candidate's process alone; its stdout is compared on the host.

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
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import rk_judge
import rk_serve
import rk_wire

PROTO_IN = 0
PROTO_OUT = 1
WORK_ROOT = "/tmp"
# exit codes of a stdin/stdout run's child; the candidate can fake them, which only fails it
EXIT_COMPILE_ERROR = 65
EXIT_RUNTIME_ERROR = 66
EXIT_HARNESS_ERROR = 71


# -- killing everything a run left behind -----------------------------------------------------------


def _processes_of(uids: set[int]) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if os.stat(f"/proc/{pid}").st_uid not in uids:
                continue
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            found.append(pid)
    return found


def _kill_all(uids: list[int] | None, sessions: list[int]) -> None:
    """SIGKILL every live process of ``uids`` until none is left (a fork bomb re-forks meanwhile)."""
    if not uids:
        # isolation "none": the runs' sessions are all we can find
        for session in sessions:
            with contextlib.suppress(OSError):
                os.killpg(session, signal.SIGKILL)
        return
    wanted = set(uids)
    rounds = 0
    while True:
        pids = _processes_of(wanted)
        if not pids:
            return
        rounds += 1
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if rounds > 2000:
            raise RuntimeError(f"processes of uids {sorted(wanted)} survive SIGKILL: {pids[:10]}")
        time.sleep(0.001 if rounds < 50 else 0.01)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


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


def _enter(request: dict[str, Any], fds: dict[int, int], workdir: str, uid: int | None) -> None:
    """In a fresh child: only ``fds`` (target -> source) stay open, then drop to ``uid`` and limits."""
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
    _apply_limits(request["limits"], request["timeout"])
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


def _fork(body: Callable[[], int]) -> int:
    """Fork a child that runs ``body()`` and exits with its code; the parent gets the pid."""
    pid = os.fork()
    if pid:
        return pid
    code = EXIT_HARNESS_ERROR
    try:
        code = body()
    except BaseException:
        code = EXIT_HARNESS_ERROR
    finally:
        os._exit(code)


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


def _watch(captures: dict[int, _Capture], pid: int, deadline: float) -> tuple[int | None, bool]:
    """Pump ``captures`` until ``pid`` exits or ``deadline``; returns (wait status or None, timed out)."""
    for fd in captures:
        os.set_blocking(fd, False)
    pidfd = os.pidfd_open(pid)
    open_fds = set(captures)
    status = None
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, True
            ready, _, _ = select.select([*open_fds, pidfd], [], [], remaining)
            for fd in ready:
                if fd != pidfd and not captures[fd].pump():
                    open_fds.discard(fd)
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                return status, False
    finally:
        os.close(pidfd)


def _finish(
    captures: dict[int, _Capture], pids: list[int], uids: list[int] | None, statuses: dict[int, int | None]
) -> None:
    """Kill whatever the run left (background processes, a fork bomb), reap, drain the pipes."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _kill_all(uids, pids)
    for pid in pids:
        if pid not in statuses:
            try:
                statuses[pid] = os.waitpid(pid, 0)[1]
            except ChildProcessError:
                statuses[pid] = None
    for capture in captures.values():
        while True:
            ready, _, _ = select.select([capture.fd], [], [], 0.05)
            if not ready or not capture.pump():
                break
        os.close(capture.fd)
    _reap()


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


def _run_io(request: dict[str, Any], uids: list[int] | None, counter: int) -> dict[str, Any]:
    uid = uids[0] if uids else None
    workdir = _workdir(f"run-{counter}", uid)
    stdin_path = f"{WORK_ROOT}/stdin-{counter}"
    with open(stdin_path, "w", encoding="utf-8") as handle:
        handle.write(request.get("stdin") or "")
    os.chmod(stdin_path, 0o444)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.monotonic()

    def child() -> int:
        stdin = os.open(stdin_path, os.O_RDONLY)
        _enter(request, {0: stdin, 1: out_w, 2: err_w}, workdir, uid)
        return _io_program(request)

    pid = _fork(child)
    os.close(out_w)
    os.close(err_w)
    cap = request["output_cap"]
    captures = {out_r: _Capture(out_r, cap), err_r: _Capture(err_r, cap)}
    status, timed_out = _watch(captures, pid, started + request["timeout"])
    statuses = {} if status is None else {pid: status}
    _finish(captures, [pid], uids, statuses)
    shutil.rmtree(workdir, ignore_errors=True)
    os.unlink(stdin_path)
    exit_fields = _exit_fields(statuses[pid])
    code = exit_fields["exit_code"]
    program = {0: "ok", EXIT_COMPILE_ERROR: "compile_error"}.get(code, "runtime_error")
    return {
        "program": program,
        "timed_out": timed_out,
        **exit_fields,
        **_output_fields(captures[out_r], captures[err_r], cap),
        "elapsed": time.monotonic() - started,
    }


def _run_asserts(request: dict[str, Any], uids: list[int] | None, counter: int) -> dict[str, Any]:
    candidate_uid, test_uid = uids if uids else (None, None)
    candidate_dir = _workdir(f"run-{counter}", candidate_uid)
    test_dir = _workdir(f"tests-{counter}", test_uid)
    calls_r, calls_w = os.pipe()
    replies_r, replies_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    result_r, result_w = os.pipe()
    started = time.monotonic()
    devnull = os.open("/dev/null", os.O_RDWR)

    def candidate() -> int:
        _enter(
            request, {0: devnull, 1: out_w, 2: err_w, 3: calls_r, 4: replies_w}, candidate_dir, candidate_uid
        )
        rk_serve.serve(request["program"], request["module_name"], request["expose"], 3, 4)
        return 0

    def tests() -> int:
        _enter(
            request,
            {0: devnull, 1: devnull, 2: devnull, 3: result_w, 4: replies_r, 5: calls_w},
            test_dir,
            test_uid,
        )
        rk_judge.judge(request, 5, 4, 3)
        return 0

    pids = [_fork(candidate), _fork(tests)]
    for fd in (calls_r, calls_w, replies_r, replies_w, out_w, err_w, result_w, devnull):
        os.close(fd)
    cap = request["output_cap"]
    captures = {
        out_r: _Capture(out_r, cap),
        err_r: _Capture(err_r, cap),
        result_r: _Capture(result_r, 1 << 20),
    }
    # The run is over when the test process is; the candidate's process is killed with the rest.
    status, timed_out = _watch(captures, pids[1], started + request["timeout"])
    statuses = {} if status is None else {pids[1]: status}
    _finish(captures, pids, uids, statuses)
    shutil.rmtree(candidate_dir, ignore_errors=True)
    shutil.rmtree(test_dir, ignore_errors=True)
    return {
        "verdicts": bytes(captures[result_r].kept).decode("ascii", "replace"),
        "timed_out": timed_out,
        **_exit_fields(statuses[pids[0]]),
        **_output_fields(captures[out_r], captures[err_r], cap),
        "elapsed": time.monotonic() - started,
    }


def main() -> None:
    uids = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
    os.chmod(WORK_ROOT, 0o711)  # candidates may enter their own run dir, never list or write /tmp
    rk_wire.write_frame(PROTO_OUT, {"ready": True, "pid": os.getpid()})
    counter = 0
    while True:
        request = rk_wire.read_frame(PROTO_IN)
        if request is None:
            return
        counter += 1
        try:
            run = _run_io if request["mode"] == "io" else _run_asserts
            response = run(request, uids, counter)
        except BaseException as error:
            response = {"error": f"runner: {type(error).__name__}: {error}", "trace": traceback.format_exc()}
        rk_wire.write_frame(PROTO_OUT, response)
