"""A real local Ray cluster on 127.0.0.1 for the whole session, stopped (and checked gone) at the end.

The tests must run in a private network namespace, where loopback is the only interface, so no
Ray traffic can leave the machine: ``tox -e ray`` does that with ``unshare -n``. Run outside one,
the session fails at once with the command to use.

Actors import the test catalog (ray_catalog.py, here) by its dotted path: the cluster fixture puts
this folder on the workers' PYTHONPATH, wherever pytest is started from.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from rewardkit.seam.plugins import reset_plugins

HERE = Path(__file__).resolve().parent
CPUS = 2
CONFINE = "unshare -n sh -c 'ip link set lo up && pytest plugins/ray/tests'"

# The suite treats a plugin that fails to load as a failure, never as a warning.
os.environ.setdefault("REWARDKIT_STRICT_PLUGINS", "1")


@pytest.fixture
def fresh_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reload plugins for one test (after changing the plugin environment), and again after it."""
    reset_plugins()
    yield
    monkeypatch.undo()
    reset_plugins()


def _interfaces() -> list[str]:
    # Asked of the kernel for this process's network namespace (/sys/class/net may show the host's).
    return sorted(name for _, name in socket.if_nameindex())


def _processes_with(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and int(entry.name) != os.getpid():
            found.append(f"{entry.name}: {cmdline[:160]}")
    return found


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[dict]:
    interfaces = _interfaces()
    if interfaces != ["lo"]:
        pytest.fail(
            f"the Ray tests must run where loopback is the only network interface (found {interfaces}) "
            f"so Ray cannot talk over another address; run them with `tox -e ray` or {CONFINE}",
            pytrace=False,
        )
    # Actors import the test catalog module by its dotted path, like a customer's catalog.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, str(HERE))
    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        num_cpus=CPUS,
        log_to_driver=False,
    )
    session = ray.get_runtime_context().get_session_name()
    try:
        yield {"session": session, "nodes": ray.nodes()}
    finally:
        ray.shutdown()
        deadline = time.monotonic() + 20
        left = _processes_with(session)
        while left and time.monotonic() < deadline:
            time.sleep(0.5)
            left = _processes_with(session)
        assert not left, f"Ray processes of session {session} outlived ray.shutdown(): {left}"
