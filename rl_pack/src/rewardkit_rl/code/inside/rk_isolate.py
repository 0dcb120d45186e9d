"""Capabilities the slot gives up for good, once, before the runner forks anything.

Standard library only (``ctypes``); loaded as the top-level module ``rk_isolate`` under
``python -I -S`` like the other in-sandbox modules.

bwrap leaves the slot's bounding set nearly full (it only empties the effective, permitted and
ambient sets of what ``--cap-add`` does not name) and its inheritable set holding the slot's
capabilities. Neither gives a candidate anything today (no_new_privs, a non-root uid), but a
capability a process of a run can see in its sets is one bug away from one it holds. So the
runner empties the bounding, inheritable and ambient sets and drops CAP_SETPCAP (the one
capability that could undo that) before it forks the zygote (``limit_capabilities``); every
process of every run then shows CapInh, CapPrm, CapEff, CapBnd and CapAmb all 0 once it leaves
root for its run's uid. That costs nothing per run.
"""

from __future__ import annotations

import ctypes
import errno
import os

CAP_SETPCAP = 8

_PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# The lines of /proc/<pid>/status that hold capability sets.
CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")

_LIBC = ctypes.CDLL(None, use_errno=True)


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
    unused = [ctypes.c_ulong(0)] * 3
    while _LIBC.prctl(ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(capability), *unused) == 0:
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
