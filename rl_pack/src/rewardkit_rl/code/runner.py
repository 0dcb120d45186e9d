"""The in-sandbox runner: a warm interpreter that forks one child per program run.

This file is executed by ``python -I -S -c <source>`` inside the sandbox, so it uses only the
standard library and never imports rewardkit. It starts once per sandbox slot; each request forks
a child (no interpreter start-up per run), which drops to the slot's unprivileged uid, applies the
rlimits and runs the candidate. The runner itself stays root inside the sandbox's namespaces (with
only the capabilities it needs to set uids and kill), so the candidate can neither signal it nor
read its memory.

Protocol on fds 0 and 1: 4-byte big-endian length, then UTF-8 JSON, both ways. The first frame
the runner writes is ``{"ready": true}``.

Why a nonce: the child reports each test's outcome on a private pipe, and the runner accepts a
report only when it carries the nonce drawn for that run. A program that calls ``sys.exit``,
``os._exit``, kills itself or prints look-alike lines produces no valid report, so the tests it
skipped count as not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import secrets
import select
import shutil
import signal
import struct
import sys
import time
import traceback

PROTO_IN = 0
PROTO_OUT = 1
RESULT_FD = 3
WORK_ROOT = "/tmp"


def _read_exact(fd: int, count: int) -> bytes | None:
    chunks = []
    while count:
        chunk = os.read(fd, count)
        if not chunk:
            return None
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int) -> dict | None:
    header = _read_exact(fd, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    body = _read_exact(fd, size)
    if body is None:
        return None
    return json.loads(body.decode("utf-8"))


def _write_frame(fd: int, payload: dict) -> None:
    body = json.dumps(payload).encode("utf-8")
    data = struct.pack(">I", len(body)) + body
    while data:
        written = os.write(fd, data)
        data = data[written:]


# -- killing everything a run left behind -----------------------------------------------------------


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            found.append(pid)
    return found


def _kill_uid(uid: int | None, session: int) -> int:
    """SIGKILL every live process of ``uid`` until none is left (a fork bomb re-forks meanwhile)."""
    if uid is None:
        # isolation "none": the run's session is all we can find
        with contextlib.suppress(OSError):
            os.killpg(session, signal.SIGKILL)
        return 0
    rounds = 0
    while True:
        pids = _processes_of(uid)
        if not pids:
            return rounds
        rounds += 1
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if rounds > 2000:
            raise RuntimeError(f"processes of uid {uid} survive SIGKILL: {pids[:10]}")
        time.sleep(0.001 if rounds < 50 else 0.01)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# -- the child ---------------------------------------------------------------------------------------


def _apply_limits(limits: dict, timeout: float) -> None:
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


def _child(
    request: dict,
    nonce: str,
    stdin_path: str | None,
    out_w: int,
    err_w: int,
    result_w: int,
    workdir: str,
    uid: int | None,
) -> None:
    """Runs in the forked child; never returns."""
    code = 70
    try:
        os.setsid()
        stdin_fd = os.open(stdin_path or "/dev/null", os.O_RDONLY)
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.dup2(result_w, RESULT_FD)
        os.closerange(RESULT_FD + 1, 65536)
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
        code = _harness(request, nonce)
    except BaseException:  # the harness itself failed: no report, so nothing passes
        code = 71
    finally:
        os._exit(code)


def _harness(request: dict, nonce: str) -> int:
    """Run the program, then each test, reporting every outcome with the nonce."""
    write = os.write
    prefix = nonce.encode("ascii") + b" "
    tag = request["mode"]

    def report(*fields: object) -> None:
        write(RESULT_FD, prefix + " ".join(str(field) for field in fields).encode("ascii") + b"\n")

    # Tests are compiled into an immutable tuple before any candidate code runs.
    tests = tuple(compile(source, f"<test {index}>", "exec") for index, source in enumerate(request["tests"]))
    setup = compile(request["setup"], "<test setup>", "exec") if request["setup"] else None
    try:
        program = compile(request["program"], "solution.py", "exec")
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as error:
        report("program", "compile_error", type(error).__name__)
        return 0
    namespace = {"__name__": request["module_name"], "__builtins__": __builtins__, "__file__": "solution.py"}
    flush = sys.stdout.flush
    try:
        exec(program, namespace)
    except SystemExit as error:
        if tag != "io" or error.code not in (None, 0):
            report("program", "runtime_error", "SystemExit")
            return 0
    except BaseException as error:
        report("program", "runtime_error", type(error).__name__)
        return 0
    if tag == "io":
        try:  # noqa: SIM105 (the candidate may have patched contextlib)
            flush()
        except BaseException:
            pass
        report("program", "ok", "-")
        report("end", "-", "-")
        return 0
    report("program", "ok", "-")
    if setup is not None:
        try:
            exec(setup, namespace)
        except BaseException as error:
            report("setup", "error", type(error).__name__)
            return 0
    for index, test in enumerate(tests):
        try:
            exec(test, namespace)
        except AssertionError:
            report("test", index, "fail")
        except BaseException as error:  # SystemExit inside a test is an error, not a pass
            report("test", index, "error:" + type(error).__name__)
        else:
            report("test", index, "pass")
    try:  # noqa: SIM105 (the candidate may have patched contextlib)
        flush()
    except BaseException:
        pass
    report("end", "-", "-")
    return 0


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


def _parse_reports(raw: bytes, nonce: str, mode: str, test_count: int) -> dict:
    """Turn the child's report lines into verdicts; anything without the nonce is a forgery."""
    program = "no_report"
    tests = ["not_run"] * test_count
    ended = False
    forged = False
    expected = 0
    prefix = nonce + " "
    for line in raw.decode("ascii", "replace").splitlines():
        if not line.startswith(prefix):
            forged = True
            continue
        fields = line[len(prefix) :].split(" ")
        if len(fields) != 3:
            forged = True
            continue
        kind, first, second = fields
        if kind == "program":
            program = first
        elif kind == "setup":
            program = "setup_error"
        elif kind == "test" and mode != "io":
            if first != str(expected) or expected >= test_count:
                forged = True
                continue
            tests[expected] = second
            expected += 1
        elif kind == "end":
            ended = True
        else:
            forged = True
    if forged:
        tests = ["forged"] * test_count
    return {"program": program, "tests": tests, "ended": ended and not forged, "forged": forged}


def _run(request: dict, uid: int | None, counter: int) -> dict:
    nonce = secrets.token_hex(16)
    workdir = f"{WORK_ROOT}/run-{counter}"
    os.mkdir(workdir, 0o700)
    if uid is not None:
        os.chown(workdir, uid, uid)
    stdin_path = None
    if request.get("stdin") is not None:
        stdin_path = f"{WORK_ROOT}/stdin-{counter}"
        with open(stdin_path, "w", encoding="utf-8") as handle:
            handle.write(request["stdin"])
        os.chmod(stdin_path, 0o444)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    started = time.monotonic()
    deadline = started + request["timeout"]
    try:
        pid = os.fork()
    except OSError as error:
        for fd in (out_r, out_w, err_r, err_w, res_r, res_w):
            os.close(fd)
        return {"error": f"fork failed: {error}"}
    if pid == 0:
        for fd in (out_r, err_r, res_r):
            os.close(fd)
        _child(request, nonce, stdin_path, out_w, err_w, res_w, workdir, uid)
    for fd in (out_w, err_w, res_w):
        os.close(fd)
    cap = request["output_cap"]
    captures = {out_r: _Capture(out_r, cap), err_r: _Capture(err_r, cap), res_r: _Capture(res_r, 1 << 20)}
    for fd in captures:
        os.set_blocking(fd, False)
    pidfd = os.pidfd_open(pid)
    timed_out = False
    status = None
    open_fds = set(captures)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([*open_fds, pidfd], [], [], remaining)
        for fd in ready:
            if fd == pidfd:
                continue
            if not captures[fd].pump():
                open_fds.discard(fd)
        if pidfd in ready:
            _, status = os.waitpid(pid, 0)
            break
    # Whatever the child left running (background processes, a fork bomb) dies here.
    if status is None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _kill_uid(uid, pid)
    if status is None:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = None
    os.close(pidfd)
    for fd in list(open_fds):
        while captures[fd].pump():
            select.select([fd], [], [], 0.05)
    for fd in captures:
        os.close(fd)
    _reap()
    elapsed = time.monotonic() - started
    shutil.rmtree(workdir, ignore_errors=True)
    if stdin_path:
        os.unlink(stdin_path)
    verdict = _parse_reports(bytes(captures[res_r].kept), nonce, request["mode"], len(request["tests"]))
    signalled = None
    exit_code = None
    if status is not None:
        if os.WIFSIGNALED(status):
            signalled = os.WTERMSIG(status)
        elif os.WIFEXITED(status):
            exit_code = os.WEXITSTATUS(status)
    out, err = captures[out_r], captures[err_r]
    return {
        **verdict,
        "timed_out": timed_out,
        "signal": signalled,
        "exit_code": exit_code,
        "stdout": bytes(out.kept).decode("utf-8", "replace"),
        "stdout_bytes": out.total,
        "stderr_tail": bytes(err.kept[-2000:]).decode("utf-8", "replace"),
        "truncated": out.total > cap,
        "elapsed": elapsed,
    }


def main() -> None:
    uid = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
    os.chmod(WORK_ROOT, 0o711)  # candidates may enter their own run dir, never list or write /tmp
    _write_frame(PROTO_OUT, {"ready": True, "pid": os.getpid()})
    counter = 0
    while True:
        request = _read_frame(PROTO_IN)
        if request is None:
            return
        counter += 1
        try:
            response = _run(request, uid, counter)
        except BaseException as error:
            response = {"error": f"runner: {type(error).__name__}: {error}", "trace": traceback.format_exc()}
        _write_frame(PROTO_OUT, response)


if __name__ == "__main__":
    main()
