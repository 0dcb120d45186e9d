"""A seccomp-BPF filter for the sandbox: refuse namespace, scheduling, IPC, keyring and inet calls.

Standard library only (``ctypes``); loaded as the top-level module ``rk_seccomp`` under
``python -I -S``. ``install()`` puts the filter on every thread of the calling process (the
``seccomp()`` syscall with ``SECCOMP_FILTER_FLAG_TSYNC``, or ``prctl(PR_SET_SECCOMP)`` for the
calling thread where the kernel lacks it), after setting ``no_new_privs``. A filter is inherited
by every process forked afterwards and can never be removed.

Rules, on x86-64 and aarch64 only:

- a syscall of any other architecture (e.g. i386 through ``int 0x80`` on x86-64) kills the
  process; an x32 syscall on x86-64 answers ``ENOSYS``;
- ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` in their flags answer ``EPERM``; other flags,
  so ordinary ``fork`` and thread creation, are allowed. User namespaces are a large kernel
  attack surface that a candidate program must not reach;
- ``clone3`` always answers ``ENOSYS``: a filter cannot read the flags in its argument struct,
  so letting it through would bypass the ``clone`` rule. glibc falls back to ``clone`` on
  ``ENOSYS``, so threads, ``fork`` and ``posix_spawn`` keep working;
- ``setns`` answers ``EPERM``;
- ``setpriority``, ``sched_setscheduler``, ``sched_setparam`` and ``sched_setattr`` answer
  ``EPERM``, so a program cannot make itself look starved by the host (reading stays allowed);
- ``sched_setaffinity`` answers ``EPERM``: a slot's processes stay on the CPU the host pinned the
  slot to, so one candidate cannot crowd a sibling's CPU and make it look starved;
- the SysV IPC calls (``shmget``, ``shmat``, ``shmctl``, ``shmdt``, ``semget``, ``semop``,
  ``semtimedop``, ``semctl``, ``msgget``, ``msgsnd``, ``msgrcv``, ``msgctl``), the POSIX message
  queue calls (``mq_open``, ``mq_unlink``, ``mq_timedsend``, ``mq_timedreceive``, ``mq_notify``,
  ``mq_getsetattr``) and the kernel keyring calls (``add_key``, ``request_key``, ``keyctl``)
  answer ``ENOSYS``, as on a kernel built without them. Their objects outlive the process that
  made them: SysV objects and message queues live as long as the slot's ipc namespace (many
  runs), a uid's keyring as long as the host's user namespace (forever, whatever uid a run had).
  A run could leave a note for a later run, or memory no rlimit counts and no kill frees. Python
  needs none of them (``multiprocessing`` uses files in ``/dev/shm``);
- ``socket`` and ``socketpair`` answer ``EAFNOSUPPORT`` (as on a kernel built without the
  family) for every address family but ``AF_UNIX``. The slot's network namespace serves run after
  run, and inet sockets leave state in it that outlives them: a closed TCP connection stays in
  ``TIME_WAIT`` (listed in ``/proc/net/tcp``) for a minute, and ephemeral port choice and the
  TCP metrics cache carry over too. Other families reach past the namespace altogether
  (``AF_VSOCK`` is not namespaced, and reaches the hypervisor on a VM) or need capabilities a run
  never has. Unix sockets (path and abstract) die with the processes that hold them, so
  ``socketpair``, ``multiprocessing.Pipe``, subprocess pipes and asyncio's event loop keep
  working; an honest test program needs no other family (the namespace has no network beyond
  loopback). On x86-64 and aarch64 ``socketcall`` does not exist for 64-bit programs, and the
  32-bit ABIs that have it end the process (the arch rule above);
- ``io_uring_setup``, ``io_uring_enter`` and ``io_uring_register`` answer ``ENOSYS``: io_uring
  runs operations (``IORING_OP_SOCKET`` among them) that no syscall filter sees;
- everything else is allowed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

# Classic BPF opcodes (linux/bpf_common.h).
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

# Return actions (linux/seccomp.h).
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16  # both arches are little-endian, so the low 32 bits of args[0] come first

_CLONE_NEWUSER = 0x10000000
_AF_UNIX = 1  # the one address family a run may make sockets of (see the module docstring)
_X32_SYSCALL_BIT = 0x40000000

_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_MODE_FILTER = 2
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1

# Calls whose kernel objects outlive the calling process (see the module docstring): each answers ENOSYS.
_OUTLIVING_CALLS = (
    *("shmget", "shmat", "shmctl", "shmdt"),
    *("semget", "semop", "semtimedop", "semctl"),
    *("msgget", "msgsnd", "msgrcv", "msgctl"),
    *("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
    *("add_key", "request_key", "keyctl"),
)
# io_uring performs socket(), open() and more from the kernel's side, where no filter looks.
_IO_URING_CALLS = ("io_uring_setup", "io_uring_enter", "io_uring_register")

# Per machine: audit arch and syscall numbers (x86-64: asm/unistd_64.h; aarch64: asm-generic/unistd.h).
_ARCHES: dict[str, dict[str, int]] = {
    "x86_64": {
        "audit_arch": 0xC000003E,
        "seccomp": 317,
        "clone": 56,
        "unshare": 272,
        "setns": 308,
        "clone3": 435,
        "setpriority": 141,
        "sched_setparam": 142,
        "sched_setscheduler": 144,
        "sched_setattr": 314,
        "sched_setaffinity": 203,
        "shmget": 29,
        "shmat": 30,
        "shmctl": 31,
        "shmdt": 67,
        "semget": 64,
        "semop": 65,
        "semtimedop": 220,
        "semctl": 66,
        "msgget": 68,
        "msgsnd": 69,
        "msgrcv": 70,
        "msgctl": 71,
        "mq_open": 240,
        "mq_unlink": 241,
        "mq_timedsend": 242,
        "mq_timedreceive": 243,
        "mq_notify": 244,
        "mq_getsetattr": 245,
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
        "socket": 41,
        "socketpair": 53,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
    },
    "aarch64": {
        "audit_arch": 0xC00000B7,
        "seccomp": 277,
        "clone": 220,
        "unshare": 97,
        "setns": 268,
        "clone3": 435,
        "setpriority": 140,
        "sched_setparam": 118,
        "sched_setscheduler": 119,
        "sched_setattr": 274,
        "sched_setaffinity": 122,
        "shmget": 194,
        "shmat": 196,
        "shmctl": 195,
        "shmdt": 197,
        "semget": 190,
        "semop": 193,
        "semtimedop": 192,
        "semctl": 191,
        "msgget": 186,
        "msgsnd": 189,
        "msgrcv": 188,
        "msgctl": 187,
        "mq_open": 180,
        "mq_unlink": 181,
        "mq_timedsend": 182,
        "mq_timedreceive": 183,
        "mq_notify": 184,
        "mq_getsetattr": 185,
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
        "socket": 198,
        "socketpair": 199,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
    },
}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _errno(value: int) -> bytes:
    return _op(_RET_K, _RET_ERRNO | value)


def _refuse(nr: int, value: int) -> list[bytes]:
    # On a match fall through to the return; otherwise jump over it.
    return [_op(_JEQ_K, nr, 0, 1), _errno(value)]


def _refuse_newuser(nr: int) -> list[bytes]:
    # Loading args[0] replaces nr in the accumulator, so this block must end in returns.
    return [
        _op(_JEQ_K, nr, 0, 4),
        _op(_LD_W_ABS, _OFF_ARG0_LOW),
        _op(_JSET_K, _CLONE_NEWUSER, 0, 1),
        _errno(errno.EPERM),
        _op(_RET_K, _RET_ALLOW),
    ]


def _unix_sockets_only(nr: int) -> list[bytes]:
    # args[0] is the address family (an int, so its low 32 bits are all of it). Like the clone
    # block, loading it replaces nr in the accumulator, so this block must end in returns.
    return [
        _op(_JEQ_K, nr, 0, 4),
        _op(_LD_W_ABS, _OFF_ARG0_LOW),
        _op(_JEQ_K, _AF_UNIX, 0, 1),
        _op(_RET_K, _RET_ALLOW),
        _errno(errno.EAFNOSUPPORT),
    ]


def number(name: str) -> int:
    """The number of syscall ``name`` on this machine (one the filter knows)."""
    return _ARCHES[os.uname().machine][name]


def program(machine: str) -> bytes:
    """The filter for ``machine`` (an ``os.uname().machine`` value) as packed ``sock_filter``s."""
    nrs = _ARCHES.get(machine)
    if nrs is None:
        raise RuntimeError(f"rk_seccomp: no seccomp filter for machine {machine!r} (x86_64, aarch64 only)")
    code = [
        _op(_LD_W_ABS, _OFF_ARCH),
        # The syscall numbers below mean nothing under another arch, so that case ends the process.
        _op(_JEQ_K, nrs["audit_arch"], 1, 0),
        _op(_RET_K, _RET_KILL_PROCESS),
        _op(_LD_W_ABS, _OFF_NR),
    ]
    if machine == "x86_64":
        # x32 numbers are the x86-64 ones plus this bit, so they would slip past every rule below.
        code += [_op(_JSET_K, _X32_SYSCALL_BIT, 0, 1), _errno(errno.ENOSYS)]
    code += _refuse(nrs["clone3"], errno.ENOSYS)
    code += _refuse(nrs["setns"], errno.EPERM)
    for name in ("setpriority", "sched_setparam", "sched_setscheduler", "sched_setattr", "sched_setaffinity"):
        code += _refuse(nrs[name], errno.EPERM)
    for name in (*_OUTLIVING_CALLS, *_IO_URING_CALLS):
        code += _refuse(nrs[name], errno.ENOSYS)
    code += _unix_sockets_only(nrs["socket"])
    code += _unix_sockets_only(nrs["socketpair"])
    code += _refuse_newuser(nrs["clone"])
    code += _refuse_newuser(nrs["unshare"])
    code.append(_op(_RET_K, _RET_ALLOW))
    return b"".join(code)


def install() -> None:
    """Install the filter on the calling process; OSError if the kernel refuses, RuntimeError on
    a machine other than x86-64 or aarch64."""
    machine = os.uname().machine
    code = program(machine)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ulong = ctypes.c_ulong
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
    rc = libc.syscall(
        ctypes.c_long(_ARCHES[machine]["seccomp"]),
        ulong(_SECCOMP_SET_MODE_FILTER),
        ulong(_SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(prog),
    )
    if rc == 0:
        return
    if rc > 0:
        # TSYNC names the thread it could not move onto the filter (one with a diverging filter).
        raise OSError(errno.EBUSY, f"seccomp TSYNC: thread {rc} cannot take the filter")
    err = ctypes.get_errno()
    if err not in (errno.ENOSYS, errno.EINVAL):
        raise OSError(err, f"seccomp(SECCOMP_SET_MODE_FILTER): {os.strerror(err)}")
    # Kernels without seccomp() (ENOSYS) or without TSYNC (EINVAL): filter this thread only.
    if libc.prctl(_PR_SET_SECCOMP, ulong(_SECCOMP_MODE_FILTER), ctypes.byref(prog), ulong(0), ulong(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")
