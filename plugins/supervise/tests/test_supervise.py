"""Process-tree supervision: every PID ends on stop, on failure to start, and when the owner dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rewardkit_supervise import ProcessTree, StartError, session_pids

# A server-like tree: the main process ignores SIGTERM (as vLLM does while starting), and a
# child leaves the process group and ignores SIGTERM too (as an engine process that outlives
# its parent would).
STUBBORN = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    print("ready", flush=True)
    while True:
        time.sleep(1)
    """
)


def _wait_for(predicate, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_stop_kills_a_tree_that_ignores_sigterm(tmp_path):
    tree = ProcessTree([sys.executable, "-c", STUBBORN], log_path=tmp_path / "log", grace_s=0.5)
    with tree:
        tree.wait_ready(lambda: "ready" in tree.log_tail(), timeout_s=10)
        assert _wait_for(lambda: len(tree.pids()) == 2)
        session = tree.pid
    assert session_pids(session) == []


def test_exit_before_ready_reports_the_log_tail(tmp_path):
    tree = ProcessTree(
        [
            sys.executable,
            "-c",
            "print('loading weights'); print('missing model.safetensors'); raise SystemExit(3)",
        ],
        log_path=tmp_path / "log",
    )
    tree.start()
    with pytest.raises(StartError) as caught:
        tree.wait_ready(lambda: False, timeout_s=10)
    assert "code 3" in str(caught.value) and "missing model.safetensors" in str(caught.value)


def test_start_timeout_stops_everything(tmp_path):
    tree = ProcessTree([sys.executable, "-c", STUBBORN], log_path=tmp_path / "log", grace_s=0.3)
    tree.start()
    with pytest.raises(StartError, match="not ready after 1 s"):
        tree.wait_ready(lambda: False, timeout_s=1)
    assert session_pids(tree.pid) == []


def test_owner_killed_leaves_nothing(tmp_path):
    """The owner gets SIGKILL (no finally runs); the watchdog ends the tree."""
    owner = textwrap.dedent(
        f"""
        import sys, time
        from rewardkit_supervise import ProcessTree
        log = {str(tmp_path / "log")!r}
        tree = ProcessTree([sys.executable, "-c", {STUBBORN!r}], log_path=log, grace_s=0.3)
        tree.start()
        tree.wait_ready(lambda: "ready" in tree.log_tail(), timeout_s=10)
        print(tree.pid, flush=True)
        time.sleep(60)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    session = int(process.stdout.readline())
    assert _wait_for(lambda: len(session_pids(session)) == 2)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert _wait_for(lambda: session_pids(session) == [], timeout_s=15), session_pids(session)
