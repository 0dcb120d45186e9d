"""A candidate's process in a pid namespace and ``/proc`` of its own; capabilities the slot gives up.

Standard library only (``ctypes``); loaded as the top-level module ``rk_isolate`` under
``python -I -S`` like the other in-sandbox modules.

Why a pid namespace per run: the slot's pid namespace serves run after run, so its pid counter is
shared state. A run that forks k times moves every later run's pids (its own pid, its children's,
the last pid in ``/proc/loadavg``, the pids of the slot's processes listed in ``/proc``): a
program could encode which test failed in its fork count, and a later candidate read it.

A pid namespace alone hides nothing: ``/proc`` shows the pid namespace it was mounted for, so the
slot's ``/proc`` would still list the slot's pids, and ``/proc/self`` would name the outer pid. So
the zygote makes pid 1 of each candidate's namespace with ``clone(CLONE_NEWPID | CLONE_NEWNS)``
(``fork_into_own_namespaces``): it mounts a ``/proc`` of that namespace in its new mount namespace
(``mount_own_proc``), then forks the candidate's blank process (pid 2), and is either the run's
test process (assert style) or an init that only reaps (stdin/stdout; ``rk_runner._fork_spare``).
So a candidate is pid 2, its forks take 3, 4, ..., and its ``/proc`` lists its own processes and
pid 1 only, whatever any earlier run did. The candidate is not pid 1 itself: the kernel drops
every signal with the default action sent to a namespace's pid 1 from inside it (SIGKILL
included), so a program that ends itself with a signal would go on. When pid 1 ends (or is
killed) the kernel kills every process of its namespace.

Capabilities: making those namespaces and mounting ``/proc`` needs CAP_SYS_ADMIN, which in a slot
without a user namespace is the host's. The slot starts with it and CAP_SETPCAP. Before it forks
the zygote, the runner empties its bounding, inheritable and ambient sets and drops CAP_SETPCAP
(``limit_capabilities``), so nothing in the slot can ever gain a capability again (by ``execve``
or otherwise); then it drops CAP_SYS_ADMIN from itself, before it reads any request. The zygote,
which reads no request data, keeps CAP_SYS_ADMIN; each namespace's pid 1 drops it as soon as its ``/proc`` is
mounted, before it forks the candidate's process (an init drops every other one after). A run's
process then sets its uid to a non-zero one, which empties its effective and permitted sets: it
holds no capability at all.
Without CAP_SYS_ADMIN a candidate can neither mount (to remount a read-only bind writable, or
uncover the slot's ``/proc``) nor make namespaces.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal

import rk_seccomp

CAP_SETPCAP = 8
CAP_SYS_ADMIN = 21

_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18

_PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# The lines of /proc/<pid>/status that hold capability sets.
CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")

# PyDLL keeps the GIL across the call (as os.fork does), so a cloned child resumes the interpreter
# exactly where its parent left it; the other calls do not care.
_LIBC = ctypes.PyDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _check(result: int, what: str) -> None:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def fork_into_own_namespaces() -> int:
    """Fork a child that is pid 1 of a new pid namespace, in a new mount namespace; like ``os.fork``,
    returns 0 in the child and its pid (in the caller's namespace) in the caller.

    Python 3.11 has no ``os.unshare``, and ``unshare(CLONE_NEWPID)`` could serve one namespace per
    process only, so this is the raw ``clone`` syscall with fork's semantics (no new stack, SIGCHLD
    to the parent). The child skips the interpreter's after-fork hooks (``os.register_at_fork``
    callbacks, lock re-initialisation): harmless because the caller must be single-threaded (the
    zygote is: no lock is held by another thread) and nothing the candidate can observe depends
    on them. The caller must hold CAP_SYS_ADMIN.
    """
    flags = _CLONE_NEWPID | _CLONE_NEWNS | signal.SIGCHLD
    zero = ctypes.c_ulong(0)
    number = ctypes.c_long(rk_seccomp.number("clone"))
    pid = int(_LIBC.syscall(number, ctypes.c_ulong(flags), zero, zero, zero, zero))
    _check(pid, "clone(CLONE_NEWPID | CLONE_NEWNS)")
    return pid


def _mount(source: bytes | None, target: bytes, kind: bytes | None, flags: int) -> None:
    _check(_LIBC.mount(source, target, kind, ctypes.c_ulong(flags), None), f"mount {target!r}")


def mount_own_proc() -> None:
    """In a child of ``fork_into_own_namespaces``: mount a ``/proc`` of the new pid namespace over
    the slot's, then give up CAP_SYS_ADMIN for good (the run's process is forked from here).

    Mounted over, not in place of, the slot's ``/proc``: unmounting that one would cost every run a
    wait for an RCU grace period, and only a process with CAP_SYS_ADMIN could uncover it. Nor are
    parts of the new ``/proc`` covered read-only as bwrap covers the slot's (``sys``, ``irq``...):
    those guard against root, and a run's process leaves root before its program runs.
    """
    # Private first, so that nothing below propagates back into the slot's mount namespace.
    _mount(None, b"/", None, _MS_REC | _MS_PRIVATE)
    _mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    drop_capabilities((CAP_SYS_ADMIN,))


def _set_capabilities(remove: tuple[int, ...], inheritable: bool) -> None:
    """Take ``remove`` out of the effective and permitted sets; empty the inheritable set unless
    ``inheritable`` (the kernel then empties the ambient set, which must lie within it)."""
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_LIBC.capget(ctypes.byref(header), data), "capget")
    for capability in remove:
        word, bit = divmod(capability, 32)
        keep = ~(1 << bit) & 0xFFFFFFFF
        data[word].effective &= keep
        data[word].permitted &= keep
        data[word].inheritable &= keep
    if not inheritable:
        for half in data:  # the low and high 32 capabilities
            half.inheritable = 0
    _check(_LIBC.capset(ctypes.byref(header), data), "capset")


def drop_capabilities(capabilities: tuple[int, ...]) -> None:
    """Remove ``capabilities`` from the calling process's effective, permitted and inheritable sets
    (and so from its ambient set): it cannot get them back, nor can anything it forks."""
    _set_capabilities(capabilities, inheritable=True)


def limit_capabilities() -> None:
    """Once per slot, in the runner before it forks anything: empty the bounding set (no
    ``execve`` can grant a capability again), the inheritable and ambient sets (none passes through
    one), and drop CAP_SETPCAP (nothing could undo the rest); then read them back.

    Raises RuntimeError if any is left, so the slot does not start.
    """
    capability = 0
    while (
        _LIBC.prctl(ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(capability), *[ctypes.c_ulong(0)] * 3) == 0
    ):
        capability += 1
    # The kernel answers EINVAL past its last capability; anything else is a failure.
    if ctypes.get_errno() != errno.EINVAL:
        _check(-1, f"drop capability {capability} from the bounding set")
    _set_capabilities((CAP_SETPCAP,), inheritable=False)
    sets = capability_sets()
    left = {name: sets.get(name) for name in ("CapBnd", "CapInh", "CapAmb") if sets.get(name) != 0}
    if left or sets["CapEff"] & (1 << CAP_SETPCAP):
        raise RuntimeError(f"rk_isolate: capabilities left after limiting them: {sets}")


def capability_sets(pid: int | str = "self") -> dict[str, int]:
    """The capability sets of process ``pid`` as ``/proc/<pid>/status`` shows them."""
    found: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            if name in CAPABILITY_SETS:
                found[name] = int(value, 16)
    return found
