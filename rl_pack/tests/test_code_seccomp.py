"""The sandbox's seccomp filter (``rk_seccomp``): what it refuses, and what keeps working under it.

Every check runs in a fresh ``python -I -S`` subprocess (as in the sandbox), so the filter never
lands on the pytest process. The control tests run the same calls without the filter and show
they succeed there, so a refusal seen under the filter is the filter's doing.
"""

from __future__ import annotations

import ast
import errno
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[1] / "src" / "rewardkit_rl" / "code" / "inside" / "rk_seccomp.py"

# Written out here, not read from the module, so a wrong number there cannot hide.
NRS = {
    "x86_64": {
        "clone": 56,
        "setns": 308,
        "clone3": 435,
        "socket": 41,
        "socketpair": 53,
        "io_uring_setup": 425,
    },
    "aarch64": {
        "clone": 220,
        "setns": 268,
        "clone3": 435,
        "socket": 198,
        "socketpair": 199,
        "io_uring_setup": 425,
    },
}

PRELUDE = f"""
import ctypes, errno, importlib.util, os, subprocess, sys, threading
spec = importlib.util.spec_from_file_location("rk_seccomp", {str(MODULE)!r})
rk_seccomp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rk_seccomp)
NR = {NRS!r}[os.uname().machine]
CLONE_NEWUSER, CLONE_NEWUTS, SIGCHLD = 0x10000000, 0x04000000, 17
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def syscall(*args):
    ctypes.set_errno(0)
    rc = libc.syscall(*[ctypes.c_long(a) for a in args])
    return rc, ctypes.get_errno()

def unshare(flags):
    if hasattr(os, "unshare"):
        os.unshare(flags)
    elif libc.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
"""


def run_check(body: str, *, filtered: bool = True) -> None:
    code = PRELUDE + ("rk_seccomp.install()\n" if filtered else "") + textwrap.dedent(body)
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


def test_machine_is_supported():
    machine = os.uname().machine
    assert machine in NRS, f"rk_seccomp supports x86_64 and aarch64 only; this machine is {machine!r}"


def test_program_assembles_for_both_machines_and_refuses_others():
    spec = importlib.util.spec_from_file_location("rk_seccomp", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # loading installs nothing
    for machine in NRS:
        code = module.program(machine)
        assert len(code) % 8 == 0 and 0 < len(code) // 8 < 256
        assert code[-4:] == (0x7FFF0000).to_bytes(4, "little")  # falls through to ALLOW
    with pytest.raises(RuntimeError, match="riscv64"):
        module.program("riscv64")


def test_unshare_newuser_is_refused():
    run_check("""
        try:
            unshare(CLONE_NEWUSER)
        except PermissionError:
            print("OK")
        else:
            print("unshare(CLONE_NEWUSER) succeeded")
    """)


def test_clone_newuser_is_refused():
    run_check("""
        rc, err = syscall(NR["clone"], CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
        if rc == 0:
            os._exit(0)  # the filter failed and this is the child: leave at once
        if rc > 0:
            os.waitpid(rc, 0)
            sys.exit("clone(CLONE_NEWUSER) created a child")
        assert err == errno.EPERM, errno.errorcode.get(err, err)
        print("OK")
    """)


def test_clone3_answers_enosys():
    # NULL args and size 0: should the call get through, the kernel answers EINVAL, never a child.
    run_check("""
        rc, err = syscall(NR["clone3"], 0, 0)
        assert (rc, err) == (-1, errno.ENOSYS), (rc, errno.errorcode.get(err, err))
        print("OK")
    """)


def test_setns_is_refused():
    run_check("""
        fd = os.open("/proc/self/ns/uts", os.O_RDONLY)
        rc, err = syscall(NR["setns"], fd, 0)
        assert (rc, err) == (-1, errno.EPERM), (rc, errno.errorcode.get(err, err))
        print("OK")
    """)


def test_scheduling_changes_are_refused_and_reading_is_allowed():
    run_check("""
        os.getpriority(os.PRIO_PROCESS, 0)
        policy = os.sched_getscheduler(0)
        os.sched_getparam(0)
        for call in (
            lambda: os.setpriority(os.PRIO_PROCESS, 0, 19),
            lambda: os.sched_setscheduler(0, policy, os.sched_param(0)),
            lambda: os.sched_setparam(0, os.sched_param(0)),
        ):
            try:
                call()
            except PermissionError:
                continue
            sys.exit("a scheduling change got through")
        print("OK")
    """)


def test_filter_reaches_threads_started_before_install():
    # TSYNC: a thread that already exists when the filter goes on gets it too.
    code = PRELUDE + textwrap.dedent("""
        go, done, seen = threading.Event(), threading.Event(), []
        def worker():
            go.wait()
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
                seen.append("allowed")
            except PermissionError:
                seen.append("refused")
            done.set()
        threading.Thread(target=worker).start()
        rk_seccomp.install()
        go.set()
        done.wait(10)
        assert seen == ["refused"], seen
        print("OK")
    """)
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stdout + proc.stderr


def test_threads_fork_and_subprocess_still_work():
    run_check("""
        box = []
        t = threading.Thread(target=box.append, args=(1,))
        t.start()
        t.join()
        assert box == [1]
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 7, status
        assert subprocess.run(["/bin/true"]).returncode == 0
        assert subprocess.run([sys.executable, "-I", "-S", "-c", "pass"]).returncode == 0
        print("OK")
    """)


def test_other_unshare_flags_are_allowed():
    # Run as root, unshare(CLONE_NEWUTS) succeeds; the filter must not turn it into EPERM.
    assert os.geteuid() == 0, "this check needs root (the test machines run as root)"
    run_check("""
        unshare(CLONE_NEWUTS)
        print("OK")
    """)


def test_control_without_filter_the_refused_calls_succeed():
    assert os.geteuid() == 0, "this check needs root (the test machines run as root)"
    run_check(
        """
        pid = os.fork()
        if pid == 0:
            try:
                unshare(CLONE_NEWUSER)
            except OSError:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "unshare(CLONE_NEWUSER) failed without the filter"
        rc, err = syscall(NR["clone3"], 0, 0)
        assert (rc, err) == (-1, errno.EINVAL), (rc, errno.errorcode.get(err, err))
        fd = os.open("/proc/self/ns/uts", os.O_RDONLY)
        assert syscall(NR["setns"], fd, 0) == (0, 0)
        os.setpriority(os.PRIO_PROCESS, 0, 19)
        print("OK")
        """,
        filtered=False,
    )


# Calls whose kernel objects outlive every process of a run; written out here, like NRS.
OUTLIVING = {
    "x86_64": {
        **{"shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67},
        **{"semget": 64, "semop": 65, "semtimedop": 220, "semctl": 66},
        **{"msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71},
        **{"mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243},
        **{"mq_notify": 244, "mq_getsetattr": 245, "add_key": 248, "request_key": 249, "keyctl": 250},
    },
    "aarch64": {
        **{"shmget": 194, "shmat": 196, "shmctl": 195, "shmdt": 197},
        **{"semget": 190, "semop": 193, "semtimedop": 192, "semctl": 191},
        **{"msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187},
        **{"mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183},
        **{"mq_notify": 184, "mq_getsetattr": 185, "add_key": 217, "request_key": 218, "keyctl": 219},
    },
}
# Every argument -1: each call fails at once without the filter (bad id, key, size or pointer);
# msgget(-1, -1) creates a queue, so both runs start in a private ipc namespace of their own.
OUTLIVING_CHECK = f"""
    CLONE_NEWIPC = 0x08000000
    unshare(CLONE_NEWIPC)
    INSTALL
    answers = {{}}
    for name, nr in {OUTLIVING!r}[os.uname().machine].items():
        answers[name] = syscall(nr, -1, -1, -1, -1, -1)
    print(answers)
"""


def _outliving_answers(filtered: bool) -> dict[str, tuple[int, int]]:
    install = "rk_seccomp.install()" if filtered else "pass"
    code = PRELUDE + textwrap.dedent(OUTLIVING_CHECK.replace("INSTALL", install))
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


def test_sysv_ipc_message_queue_and_keyring_calls_answer_enosys():
    assert os.geteuid() == 0, "this check needs root (for the control's private ipc namespace)"
    machine = os.uname().machine
    filtered = _outliving_answers(filtered=True)
    assert filtered == dict.fromkeys(OUTLIVING[machine], (-1, errno.ENOSYS))
    # Control: without the filter the kernel itself answers each call (so ENOSYS above is the filter's).
    unfiltered = _outliving_answers(filtered=False)
    assert [name for name, (_, err) in unfiltered.items() if err == errno.ENOSYS] == []


# Families a run may not make sockets of: inet (their TCP state outlives the run in the slot's
# network namespace), netlink and packet (the namespace's tables), vsock (not namespaced at all).
AF_VSOCK = 40
REFUSED_FAMILIES = {"AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17, "AF_VSOCK": AF_VSOCK}


def test_sockets_of_every_family_but_unix_answer_eafnosupport():
    run_check(f"""
        import socket
        for name, family in {REFUSED_FAMILIES!r}.items():
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                rc, err = syscall(NR["socket"], family, kind, 0)
                assert (rc, err) == (-1, errno.EAFNOSUPPORT), (name, kind, rc, errno.errorcode.get(err, err))
            rc, err = syscall(NR["socketpair"], family, socket.SOCK_STREAM, 0, 0)
            assert (rc, err) == (-1, errno.EAFNOSUPPORT), (name, "pair", rc, errno.errorcode.get(err, err))
        # The kernel reads the family as an int: bits above 32 must not smuggle AF_INET past the rule.
        rc, err = syscall(NR["socket"], (1 << 32) | socket.AF_INET, socket.SOCK_STREAM, 0)
        assert (rc, err) == (-1, errno.EAFNOSUPPORT), (rc, errno.errorcode.get(err, err))
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=1)
        except OSError as error:
            assert error.errno == errno.EAFNOSUPPORT, error
        else:
            sys.exit("socket.create_connection made an inet socket")
        print("OK")
    """)


def test_unix_sockets_pipes_and_event_loops_work_under_the_filter():
    run_check("""
        import asyncio, multiprocessing, socket, tempfile
        left, right = socket.socketpair()
        left.sendall(b"ping")
        assert right.recv(4) == b"ping"
        with tempfile.TemporaryDirectory() as folder:
            for address in ("\\0rk-seccomp-" + str(os.getpid()), folder + "/sock"):
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.bind(address)
                server.listen()
                client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                client.connect(address)
                connection, _ = server.accept()
                client.sendall(b"pong")
                assert connection.recv(4) == b"pong"
                for each in (connection, client, server):
                    each.close()
        parent, child = multiprocessing.Pipe()
        pid = os.fork()
        if pid == 0:
            child.send(41)
            os._exit(0)
        assert parent.recv() == 41
        os.waitpid(pid, 0)
        assert asyncio.run(asyncio.sleep(0, result=7)) == 7  # its self-pipe is a unix socketpair
        out = subprocess.run([sys.executable, "-I", "-S", "-c", "print(6)"], capture_output=True, text=True)
        assert out.stdout.strip() == "6", out
        print("OK")
    """)


def test_io_uring_answers_enosys():
    # A NULL params pointer: should the call get through, the kernel answers EFAULT, never a ring.
    run_check("""
        rc, err = syscall(NR["io_uring_setup"], 1, 0)
        assert (rc, err) == (-1, errno.ENOSYS), (rc, errno.errorcode.get(err, err))
        print("OK")
    """)


def test_control_without_filter_inet_sockets_and_io_uring_reach_the_kernel():
    run_check(
        """
        import socket
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as inet:
            inet.bind(("127.0.0.1", 0))
        rc, err = syscall(NR["io_uring_setup"], 1, 0)
        assert rc == -1 and err != errno.ENOSYS, (rc, errno.errorcode.get(err, err))
        print("OK")
        """,
        filtered=False,
    )
