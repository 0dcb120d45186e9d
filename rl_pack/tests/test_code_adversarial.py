"""Hostile programs against the real bubblewrap sandbox.

Each attack runs in a group beside a correct and a wrong candidate: the attack gets its verdict,
the neighbours are still scored right, the host is untouched and no process of the sandbox's
uids is left afterwards. Needs root and a writable pids cgroup (CI has both); without them the
provider's start fails and these tests fail loudly.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from process_table import live_processes_of

from rewardkit.seam.catalog import resolve_catalog

REFERENCE = {"test_list": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]}
GOOD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def bound():
    provider = resolve_catalog().bind(
        "code-tests", {"cgroup": "required", "timeout_s": 2.0, "concurrency": 2, "memory_mb": 512}
    )
    yield provider
    pool = provider.provider._pool
    provider.provider.close()
    if pool is not None:
        assert not live_processes_of(set(pool.uids)), "sandbox processes survived close()"
        for slot in pool._slots:
            assert slot.cgroup is None


def _score(bound, attack: str, reference=REFERENCE):
    rollouts = [
        {"trajectory_id": "good", "completion": f"```python\n{GOOD}```", "reference": reference},
        {"trajectory_id": "attack", "completion": attack, "reference": reference},
        {"trajectory_id": "wrong", "completion": WRONG, "reference": reference},
    ]
    items = bound.score_group("g", rollouts).items
    good, hostile, wrong = (item.result for item in items)
    assert good.status == "scored" and good.terms["all_passed"] == 1.0, good
    assert wrong.status == "scored" and wrong.terms["all_passed"] == 0.0, wrong
    assert hostile.status == "scored", hostile.reason
    assert not live_processes_of(set(bound.provider._pool.uids)), "processes left running after the run"
    return hostile, {d.name: d.value for d in hostile.diagnostics}


FAILING_ATTACKS = {
    "fork_bomb": GOOD
    + "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    "memory_bomb": GOOD + "chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 24))\n",
    "infinite_loop": GOOD + "while True:\n    pass\n",
    "sleep_past_limit": GOOD + "import time\ntime.sleep(30)\n",
    "sys_exit_before_tests": GOOD + "import sys\nsys.exit(0)\n",
    "os_exit_before_tests": GOOD + "import os\nos._exit(0)\n",
    "kill_own_group": GOOD + "import os, signal\nos.kill(0, signal.SIGKILL)\n",
    "fake_markers": WRONG + "print('PASSED 2/2'); print('ok program ok -'); print('end - -')\n",
    "forged_report_fd": WRONG
    + "import os\nfor fd in range(3, 10):\n    try:\n        os.write(fd, b'0' * 32 + b' test 0 pass\\n')\n"
    "    except OSError:\n        pass\n",
    "patch_assertion_error": WRONG
    + "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n",
    "patch_harness_globals": WRONG
    + "import sys, os\nmain = sys.modules['__main__']\nfor name in list(vars(main)):\n"
    "    if not name.startswith('__'):\n        setattr(main, name, None)\nos.write = lambda *a: 0\n",
    "del_raises_exit": WRONG
    + "class Bad:\n    def __del__(self):\n        raise SystemExit(0)\nb = Bad()\ndel b\n"
    "keep = Bad()\n",
    "exit_inside_test": "def add(a, b):\n    raise SystemExit(0)\n",
}


@pytest.mark.parametrize("name", sorted(FAILING_ATTACKS))
def test_attack_fails_and_is_contained(bound, name):
    hostile, diagnostics = _score(bound, FAILING_ATTACKS[name])
    assert hostile.terms == {"pass_rate": 0.0, "all_passed": 0.0}
    if name in ("fork_bomb", "infinite_loop", "sleep_past_limit"):
        assert diagnostics["timeout"] == 1.0
    if name == "memory_bomb":
        assert diagnostics["runtime_error"] == 1.0


def test_fork_bomb_never_reaches_the_host_process_table(bound):
    before = len([e for e in os.listdir("/proc") if e.isdigit()])
    _score(bound, FAILING_ATTACKS["fork_bomb"])
    after = len([e for e in os.listdir("/proc") if e.isdigit()])
    assert after - before < 50


def test_loopback_server_is_unreachable(bound):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                accepted.append(server.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    attack = (
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        "s.sendall(b'pwned')\n" + GOOD
    )
    hostile, diagnostics = _score(bound, attack)
    thread.join()
    server.close()
    assert not accepted, "the sandbox reached a loopback server on the host"
    assert hostile.terms["all_passed"] == 0.0 and diagnostics["runtime_error"] == 1.0


def test_writes_outside_the_sandbox_do_not_land(bound, tmp_path):
    targets = [tmp_path / "escape.txt", Path("/etc/rewardkit-escape"), Path("/usr/rewardkit-escape")]
    tmp_path.chmod(0o777)
    attack = (
        "written = []\n"
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n        open(path, 'w').write('x')\n        written.append(path)\n"
        "    except OSError:\n        pass\n" + GOOD
    )
    hostile, _ = _score(bound, attack)
    assert hostile.terms["all_passed"] == 1.0  # the program is correct; its writes just fail
    for target in targets:
        assert not target.exists(), f"{target} was written from inside the sandbox"


def test_host_secrets_are_not_readable(bound, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    secret.chmod(0o644)
    tmp_path.chmod(0o755)
    root_secret = Path("/root/.rewardkit-test-secret")
    root_secret.write_text("hunter2")
    try:
        # add() is right only when no secret could be read
        attack = (
            "leaked = False\n"
            f"for path in [{str(secret)!r}, {str(root_secret)!r}]:\n"
            "    try:\n        leaked = leaked or 'hunter2' in open(path).read()\n"
            "    except OSError:\n        pass\n"
            "def add(a, b):\n    return a + b + (100 if leaked else 0)\n"
        )
        hostile, _ = _score(bound, attack)
        assert hostile.terms["all_passed"] == 1.0, "a host secret was readable"
    finally:
        root_secret.unlink()


def test_killing_the_runner_is_refused(bound):
    attack = (
        "import os, signal\nrefused = 0\n"
        "for pid in (os.getppid(), 1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n"
        "    except PermissionError:\n        refused += 1\n"
        "def add(a, b):\n    return a + b if refused == 2 else 0\n"
    )
    starts = [slot.starts for slot in bound.provider._started()[0]._slots]
    hostile, _ = _score(bound, attack)
    assert hostile.terms["all_passed"] == 1.0
    assert [slot.starts for slot in bound.provider._pool._slots] == starts, "a runner was restarted"


def test_background_processes_do_not_outlive_the_run(bound):
    attack = (
        "import os, subprocess\n"
        "subprocess.Popen(['/bin/sh', '-c', 'sleep 300'], start_new_session=True)\n"
        "if os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(300)\n    os._exit(0)\n" + GOOD
    )
    hostile, _ = _score(bound, attack)  # _score checks that no sandbox process is left
    assert hostile.terms["all_passed"] == 1.0


def test_stdout_flood_is_capped(bound):
    attack = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n" + GOOD
    hostile, diagnostics = _score(bound, attack)
    assert diagnostics["output_truncated"] == 1.0
    assert hostile.terms["all_passed"] == 1.0  # the tests ran and passed; only output was dropped


def test_stdout_flood_fails_an_io_case(bound):
    reference = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    items = bound.score_group(
        "io",
        [
            {
                "trajectory_id": "flood",
                "completion": "print('3')\nprint('x' * (100 << 20))",
                "reference": reference,
            },
            {
                "trajectory_id": "ok",
                "completion": "a, b = map(int, input().split())\nprint(a + b)",
                "reference": reference,
            },
        ],
    ).items
    flood, ok = (item.result for item in items)
    assert flood.terms["all_passed"] == 0.0
    assert ok.terms["all_passed"] == 1.0


def test_harness_survives_tmp_wipe(bound):
    attack = "import shutil, os\nshutil.rmtree('/tmp', ignore_errors=True)\nos.chdir('/')\n" + GOOD
    hostile, _ = _score(bound, attack)
    assert hostile.terms["all_passed"] == 1.0
