"""Reward hacks against code-tests: programs written to be scored as correct without being correct.

Separate from the sandbox-escape suite (test_code_adversarial.py): these programs do not try to
leave the sandbox, they try to forge the verdict from inside their own process: objects that
equal everything, patched builtins and modules, forged verdict lines, exits and exceptions at
the right moment, tracing and heap hunting for the harness, protocol abuse. Each runs in one
group beside an honest candidate, in both reference formats (MBPP ``test_list`` and HumanEval
``check(candidate)``). The honest one must score 1 and every hack below 1.

Needs root, bubblewrap and a writable pids cgroup (CI has all three).
"""

from __future__ import annotations

import os
import time

import pytest
from process_table import live_processes_of

from rewardkit.seam.catalog import resolve_catalog

# Each hack below is built to pass all of these when tests run in the candidate's own interpreter.
ASSERTS = [
    "assert sort_desc([3, 1, 2]) == [3, 2, 1]",
    "assert sort_desc([]) == []",
    "assert len(sort_desc([4, 5, 5])) == 3",
    "assert sort_desc([7]) in [[7]]",
    "assert not sort_desc([])",
    "assert math.isclose(sum(sort_desc([0.5, 0.25])), 0.75)",
]
MBPP = {"test_list": ASSERTS, "test_imports": ["import math"]}
HUMANEVAL = {
    "prompt": 'import math\n\n\ndef sort_desc(xs):\n    """Return xs sorted from largest to smallest."""\n',
    "test": "def check(candidate):\n"
    + "".join(f"    {line.replace('sort_desc(', 'candidate(')}\n" for line in ASSERTS),
    "entry_point": "sort_desc",
}
REFERENCES = {"mbpp": MBPP, "humaneval": HUMANEVAL}
HONEST = "def sort_desc(xs):\n    return sorted(xs, reverse=True)\n"
WRONG = "def sort_desc(xs):\n    return list(xs)\n"

# A liar that behaves like the input list in every way but equality.
LIAR = (
    "class Liar:\n"
    "    def __init__(self, xs):\n        self.xs = list(xs)\n"
    "    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n    __hash__ = lambda s: 0\n"
    "    __len__ = lambda s: len(s.xs)\n    __iter__ = lambda s: iter(s.xs)\n"
    "    __bool__ = lambda s: bool(s.xs)\n"
)
# Calls the harness's own reporting with every test passed, then leaves before anything else runs.
FORGE = (
    "import gc, os, sys\n"
    "def forge():\n"
    "    count = 1\n    frame = sys._getframe()\n"
    "    while frame is not None:\n"
    "        request = frame.f_locals.get('request')\n"
    "        if isinstance(request, dict) and 'tests' in request:\n"
    "            count = len(request['tests'])\n"
    "        frame = frame.f_back\n"
    "    for obj in gc.get_objects():\n"
    "        if callable(obj) and getattr(obj, '__name__', '') == 'report':\n"
    "            try:\n"
    "                obj('program', 'ok', '-')\n"
    "                for index in range(count):\n                    obj('test', index, 'pass')\n"
    "                obj('end', '-', '-')\n"
    "            except Exception:\n                pass\n"
    "    os._exit(0)\n"
)

HACKS = {
    # -- values that lie about themselves ------------------------------------------------------------
    "always_equal": LIAR + "def sort_desc(xs):\n    return Liar(xs)\n",
    "bool_by_caller": "import linecache, sys\n"
    + LIAR.replace(
        "    __bool__ = lambda s: bool(s.xs)\n",
        "    def __bool__(self):\n        # falsy exactly when the asserting line says 'not'\n"
        "        frame = sys._getframe(1)\n"
        "        return 'not' not in linecache.getline(frame.f_code.co_filename, frame.f_lineno)\n",
    )
    + "def sort_desc(xs):\n    return Liar(xs)\n",
    "len_override": "class L(list):\n    __eq__ = lambda s, o: True\n"
    "    def __len__(self):\n        return list.__len__(self)\n"
    "def sort_desc(xs):\n    return L(xs)\n",
    "iter_override": "class L(list):\n"
    "    def __iter__(self):\n        return iter(sorted(list.copy(self), reverse=True))\n"
    "    def __eq__(self, other):\n        return list(iter(self)) == other\n"
    "def sort_desc(xs):\n    return L(xs)\n",
    "hash_override": "class H(list):\n    __eq__ = lambda s, o: True\n    __hash__ = lambda s: 0\n"
    "def sort_desc(xs):\n    return H(xs)\n",
    "int_subclass_elements": "class I(int):\n    __eq__ = lambda s, o: True\n    __hash__ = int.__hash__\n"
    "def sort_desc(xs):\n    return [I(0) if isinstance(x, int) else x for x in xs]\n",
    "float_subclass_sum": "class F(float):\n    __eq__ = lambda s, o: True\n    __hash__ = float.__hash__\n"
    "    __add__ = __radd__ = lambda s, o: F(0.75)\n"
    "def sort_desc(xs):\n    return [F(0) for x in xs]\n",
    "str_subclass": "class S(str):\n    __eq__ = lambda s, o: True\n    __hash__ = str.__hash__\n"
    "    __len__ = lambda s: 3\n"
    "def sort_desc(xs):\n    return S('') if not xs else S('x' * len(xs))\n",
    "self_referential": "def sort_desc(xs):\n    out = list(xs)\n    out.append(out)\n    return out\n",
    "huge_value": "def sort_desc(xs):\n    return [[list(range(1000))] * 1000] * 10\n",
    # -- patching what the tests use ------------------------------------------------------------------
    "patched_exec": "import builtins\nbuiltins.exec = lambda *a, **k: None\n" + WRONG,
    "patched_assertion_error": "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n"
    + WRONG,
    "patched_math_operator_unittest": "import math, operator, unittest\n"
    "math.isclose = lambda *a, **k: True\noperator.eq = lambda a, b: True\n"
    "unittest.TestCase.assertEqual = lambda *a, **k: None\n"
    + LIAR
    + "def sort_desc(xs):\n    return Liar(xs)\n",
    "patched_harness_modules": "import sys\nfor name, module in list(sys.modules.items()):\n"
    "    if name.startswith('rk_'):\n        for attr in list(vars(module)):\n"
    "            if callable(getattr(module, attr)) and not attr.startswith('__'):\n"
    "                try:\n                    setattr(module, attr, lambda *a, **k: True)\n"
    "                except Exception:\n                    pass\n" + WRONG,
    # -- forging the verdict channel --------------------------------------------------------------------
    "frame_nonce_forgery": "import os, sys\nnonce = None\nframe = sys._getframe()\n"
    "while frame is not None:\n"
    "    nonce = nonce or frame.f_locals.get('nonce')\n"
    "    count = len(frame.f_locals.get('request', {}).get('tests', [])) or 6\n"
    "    frame = frame.f_back\n"
    "if nonce:\n"
    "    lines = f'{nonce} program ok -\\n' + ''.join(f'{nonce} test {i} pass\\n' for i in range(count))\n"
    "    lines += f'{nonce} end - -\\n'\n"
    "else:\n"
    "    lines = 'program ok -\\n' + ''.join(f'test {i} pass\\n' for i in range(6)) + 'end\\n'\n"
    "for fd in range(3, 64):\n"
    "    try:\n        os.write(fd, lines.encode())\n    except OSError:\n        pass\n"
    "os._exit(0)\n",
    "gc_hunt_for_report": FORGE + WRONG + "forge()\n",
    "forged_reply_frames": "import json, os, struct\n" + "def sort_desc(xs):\n"
    "    for fd in range(3, 16):\n"
    "        for payload in ({'v': ['l', 3, 2, 1]}, {'v': True}, {'e': ['AssertionError', '']}):\n"
    "            body = json.dumps(payload).encode()\n"
    "            try:\n                os.write(fd, struct.pack('>I', len(body)) + body)\n"
    "            except OSError:\n                pass\n    return list(xs)\n",
    "closed_descriptors": "import os\nos.closerange(0, 1024)\n" + WRONG,
    "atexit_forgery": "import atexit\n" + FORGE + "atexit.register(forge)\n"
    "def sort_desc(xs):\n    raise SystemExit(0)\n",
    # -- exits and interrupts at the right moment -----------------------------------------------------
    "system_exit_in_call": "def sort_desc(xs):\n    raise SystemExit(0)\n",
    "keyboard_interrupt_in_call": "def sort_desc(xs):\n    raise KeyboardInterrupt\n",
    "os_exit_in_call": "import os\ndef sort_desc(xs):\n    os._exit(0)\n",
    "exit_before_tests": "import sys\n" + WRONG + "sys.exit(0)\n",
    # -- tracing ------------------------------------------------------------------------------------------
    "settrace_skips_asserts": "import sys\n"
    "def tracer(frame, event, arg):\n"
    "    if event == 'exception' and arg[0] is AssertionError:\n"
    "        raise SystemExit(0)\n"
    "    return tracer\n"
    "sys.settrace(tracer)\n"
    + LIAR.replace("    __eq__ = lambda s, o: True\n", "")
    + "def sort_desc(xs):\n    return Liar(xs)\n",
}


@pytest.fixture(scope="module")
def bound():
    provider = resolve_catalog().bind(
        "code-tests", {"cgroup": "required", "timeout_s": 3.0, "concurrency": 2, "memory_mb": 512}
    )
    yield provider
    provider.provider.close()


def _score(bound, program: str, reference: dict):
    rollouts = [
        {"trajectory_id": "honest", "completion": f"```python\n{HONEST}```", "reference": reference},
        {"trajectory_id": "hack", "completion": f"```python\n{program}```", "reference": reference},
    ]
    honest, hack = (item.result for item in bound.score_group("g", rollouts).items)
    assert not live_processes_of(set(bound.provider._pool.uids)), "processes left running after the run"
    return honest, hack


@pytest.mark.parametrize("form", sorted(REFERENCES))
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_scores_below_one_beside_an_honest_candidate(bound, name, form):
    honest, hack = _score(bound, HACKS[name], REFERENCES[form])
    assert honest.status == "scored" and honest.terms["all_passed"] == 1.0, honest
    assert hack.status == "scored", f"a hack must be a wrong answer, not {hack.status}: {hack.reason}"
    assert hack.terms["pass_rate"] < 1.0 and hack.terms["all_passed"] == 0.0, hack.terms


# Tests that lean on builtins and on a module they never import (the candidate's import served
# them when everything shared one namespace).
SHADOW_ASSERTS = [
    "assert sorted(sort_desc([3, 1, 2]), reverse=True) == [3, 2, 1]",
    "assert len(sort_desc([1, 2])) == 2",
    "assert math.isclose(sum(sort_desc([0.5])), 0.5)",
]
SHADOW_REFERENCES = {
    "mbpp": {"test_list": SHADOW_ASSERTS},
    "humaneval": {
        "prompt": 'def sort_desc(xs):\n    """Return xs sorted from largest to smallest."""\n',
        "test": "def check(candidate):\n"
        + "".join(f"    {line.replace('sort_desc(', 'candidate(')}\n" for line in SHADOW_ASSERTS),
        "entry_point": "sort_desc",
    },
}
SHADOWING = (
    "def sorted(value, reverse=False):\n    return [3, 2, 1]\n"
    "def len(value):\n    return 2\n"
    "def sum(value):\n    return 0.5\n"
    "class math:\n    isclose = staticmethod(lambda *a, **k: True)\n"
    "def sort_desc(xs):\n    return []\n"
)


@pytest.mark.parametrize("form", sorted(SHADOW_REFERENCES))
def test_shadowed_builtins_and_modules_answer_nothing(bound, form):
    honest, hack = _score(bound, SHADOWING, SHADOW_REFERENCES[form])
    assert honest.status == "scored" and honest.terms["all_passed"] == 1.0, honest
    assert hack.status == "scored" and hack.terms["pass_rate"] == 0.0, hack.terms


def test_suite_has_the_promised_breadth():
    assert len(HACKS) >= 11


@pytest.mark.parametrize("form", sorted(REFERENCES))
def test_the_wrong_program_alone_fails_and_the_honest_one_passes(bound, form):
    honest, wrong = _score(bound, WRONG, REFERENCES[form])
    assert honest.terms["all_passed"] == 1.0
    assert wrong.terms["all_passed"] == 0.0


# -- the candidate's process holds nothing but its own program ----------------------------------------
#
# One slot (concurrency 1), so every run below goes through the same warm runner, one after another:
# earlier requests, siblings and later batches all share it, as they would in training.

# A test's secret is "rkSECRET:" and 32 hex digits, in an assert message (so in the test's source,
# which only the test process may hold) or in a sibling's program. The hunter knows only the shape,
# never a value, so nothing it finds can be its own. It also plants a control value in its own heap
# and must find that one: a scan that reads nothing cannot pass.
HUNTER = r"""
import ctypes, gc, os, re, sys

ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self/mem becomes this uid's

PREFIX = ("rk" + "SECRET:").encode()
SHAPE = re.compile(re.escape(PREFIX) + rb"[0-9a-f]{32}")
CONTROL = ("rk" + "CONTROL:").encode() + os.urandom(16).hex().encode()
found = set()
control_seen = []


def scan(data):
    if not isinstance(data, bytes):
        data = str(data).encode("utf-8", "replace")
    found.update(SHAPE.findall(data))
    if CONTROL in data:
        control_seen.append(True)


def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


# gc: every string held by a tracked container
for obj in gc.get_objects():
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple, set)) else ()
    try:
        for item in list(items):
            if isinstance(item, (str, bytes)):
                scan(item)
    except Exception:
        pass
# frames above this program's import
frame = sys._getframe()
while frame is not None:
    scan(repr(frame.f_locals))
    frame = frame.f_back
# environment, /proc of every process, files anywhere outside the system trees
scan(repr(dict(os.environ)))
for entry in os.listdir("/proc"):
    if entry.isdigit():
        for name in ("cmdline", "environ", "maps", "status"):
            scan(read(f"/proc/{entry}/{name}"))
        scan(read(f"/proc/{entry}/mem", 4096))
SYSTEM = ("/proc", "/sys", "/dev", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if not os.path.join(top, d).startswith(SYSTEM)]
    for name in files:
        scan(read(os.path.join(top, name)))
scan(CONTROL)  # the control is in the heap now, whatever the scans above kept
# every readable mapping of this process, byte for byte
mem = os.open("/proc/self/mem", os.O_RDONLY)
with open("/proc/self/maps") as maps:
    regions = [line.split()[:2] for line in maps]
control_seen.clear()
for span, perms in regions:
    if not perms.startswith("r"):
        continue
    start, end = (int(part, 16) for part in span.split("-"))
    tail = b""
    while start < end:
        size = min(1 << 20, end - start)
        try:
            chunk = os.pread(mem, size, start)
        except OSError:
            break
        scan(tail + chunk)
        tail = chunk[-64:]
        start += size
CLEAN = bool(control_seen) and not found


def sort_desc(xs):
    return sorted(xs, reverse=True) if CLEAN else []
"""


def _secret() -> str:
    return "rkSECRET:" + os.urandom(16).hex()


def _with_secret(form: str, secret: str) -> dict:
    asserts = [*ASSERTS, f"assert sort_desc([2, 9]) == [9, 2], {secret!r}"]
    if form == "mbpp":
        return {"test_list": asserts, "test_imports": ["import math"]}
    body = "".join(f"    {line.replace('sort_desc(', 'candidate(')}\n" for line in asserts)
    return {**HUMANEVAL, "test": "def check(candidate):\n" + body}


def _sibling(secret: str) -> str:
    return f"```python\nNOTE = {secret!r}\n{HONEST}```"


@pytest.fixture(scope="module")
def one_slot():
    provider = resolve_catalog().bind(
        "code-tests", {"cgroup": "required", "timeout_s": 20.0, "concurrency": 1, "memory_mb": 1024}
    )
    yield provider
    provider.provider.close()


@pytest.mark.parametrize("form", sorted(REFERENCES))
def test_memory_hunts_find_no_test_of_any_request_and_no_sibling_program(one_slot, form):
    # An earlier request in the slot, its own tests and candidate carrying secrets.
    earlier = _with_secret(form, _secret())
    rollouts = [{"trajectory_id": "earlier", "completion": _sibling(_secret()), "reference": earlier}]
    [before] = (item.result for item in one_slot.score_group("earlier", rollouts).items)
    assert before.terms["all_passed"] == 1.0, before
    # This request: a sibling with a secret runs first in the same slot, then the hunter.
    current = _with_secret(form, _secret())
    rollouts = [
        {"trajectory_id": "sibling", "completion": _sibling(_secret()), "reference": current},
        {"trajectory_id": "hunter", "completion": f"```python\n{HUNTER}```", "reference": current},
    ]
    sibling, hunter = (item.result for item in one_slot.score_group("current", rollouts).items)
    assert sibling.terms["all_passed"] == 1.0, sibling
    assert hunter.status == "scored" and hunter.terms["all_passed"] == 1.0, (
        f"the hunter found a test, an expected value or a sibling's program: {hunter}"
    )
    assert not live_processes_of(set(one_slot.provider._pool.uids))


def test_the_hunter_finds_a_secret_in_its_own_memory(one_slot):
    # The hunter is not blind: given a secret of its own, it finds it (and fails on purpose).
    program = f"MINE = {_secret()!r}\n{HUNTER}"
    rollouts = [{"trajectory_id": "h", "completion": f"```python\n{program}```", "reference": MBPP}]
    [hunter] = (item.result for item in one_slot.score_group("own", rollouts).items)
    assert hunter.status == "scored" and hunter.terms["all_passed"] == 0.0, hunter
    diagnostics = {contribution.name: contribution.value for contribution in hunter.diagnostics}
    # It ran to the end and answered [] (which passes the two empty-list asserts only).
    assert diagnostics["runtime_error"] == 0.0 and diagnostics["cases_passed"] == 2.0, hunter


# A forked child whose main thread leaves with pthread_exit while another thread lives on: /proc shows
# its leader as a zombie ("Z") while the process runs. The candidate's own process is killed by pid
# at the end of the run; this one must be found. A killer thread signals every process its uid may
# signal; a drip thread writes a byte to stdout every 10 ms.
_LIVES_ON = (
    "import ctypes, os, threading, time\n"
    "def forever():\n"
    "    while True:\n"
    "        {action}\n"
    "        time.sleep(0.01)\n"
    "if os.fork() == 0:\n"
    "    threading.Thread(target=forever, daemon=True).start()\n"
    "    time.sleep(0.05)\n"
    "    ctypes.CDLL(None).pthread_exit(None)\n"
    "time.sleep(0.3)  # the child's leader is a zombie before this run ends\n"
)
SABOTEUR = _LIVES_ON.format(
    action="try:\n            os.kill(-1, 9)\n        except OSError:\n            pass"
)
DRIP = _LIVES_ON.format(action="os.write(1, b'.')")


@pytest.fixture(scope="module")
def quick_slot():
    provider = resolve_catalog().bind(
        "code-tests", {"cgroup": "required", "timeout_s": 1.5, "concurrency": 1, "memory_mb": 512}
    )
    yield provider
    provider.provider.close()


def test_a_process_that_outlives_its_run_cannot_touch_a_later_batch(quick_slot):
    rollouts = [{"trajectory_id": "saboteur", "completion": f"```python\n{SABOTEUR}```", "reference": MBPP}]
    [saboteur] = (item.result for item in quick_slot.score_group("sabotage", rollouts).items)
    assert saboteur.status == "scored" and saboteur.terms["all_passed"] == 0.0, saboteur
    assert not live_processes_of(set(quick_slot.provider._pool.uids)), "the saboteur outlived its run"
    later = [
        {"trajectory_id": f"honest{i}", "completion": f"```python\n{HONEST}```", "reference": MBPP}
        for i in range(3)
    ]
    results = [item.result for item in quick_slot.score_group("later", later).items]
    assert [result.terms["all_passed"] for result in results] == [1.0, 1.0, 1.0], results


def test_an_output_drip_from_a_leftover_thread_scores_zero_and_fails_nothing_else():
    import rewardkit

    config = {
        "rl": {
            "reward": {
                "provider": "code-tests",
                "params": {"timeout_s": 1.5, "cgroup": "required", "concurrency": 1},
            },
            "group_size": 3,
        },
    }
    programs = [HONEST, DRIP, HONEST]
    group = {
        "group_id": "drip",
        "rollouts": [
            {"trajectory_id": f"t{i}", "completion": f"```python\n{p}```", "reference": MBPP}
            for i, p in enumerate(programs)
        ],
    }
    with rewardkit.load(config) as reward:  # onError: raise, the default
        started = time.monotonic()
        batch = reward.score([group])
        elapsed = time.monotonic() - started
        [bound] = reward.worker.providers.values()
        assert not live_processes_of(set(bound.provider._pool.uids))
    finals = [candidate.final for _, candidate in batch.candidates()]
    assert finals == [1.0, 0.0, 1.0], batch
    # The drip's run ends at its deadline plus a bounded drain, not at the host's grace.
    print(f"\n[drip] batch of 3 scored in {elapsed:.2f} s")


WRITE_BACK = {"test_list": ["items = []\nassert grow(items) == 1\nassert grow(items) == 2"]}
GROW = "def grow(xs):\n    xs.append(0)\n    return len(xs)\n"
GROW_MODULE = "import os\ndef grow(xs):\n    xs.append(os)\n    return len(xs)\n"


def test_a_module_written_back_into_a_test_argument_fails_the_test(bound):
    rollouts = [
        {"trajectory_id": "honest", "completion": f"```python\n{GROW}```", "reference": WRITE_BACK},
        {"trajectory_id": "hack", "completion": f"```python\n{GROW_MODULE}```", "reference": WRITE_BACK},
    ]
    honest, hack = (item.result for item in bound.score_group("g", rollouts).items)
    assert honest.status == "scored" and honest.terms["all_passed"] == 1.0, honest
    assert hack.status == "scored" and hack.terms["all_passed"] == 0.0, hack


# errno of unshare(CLONE_NEWUSER), of clone(CLONE_NEWUSER | SIGCHLD) and of clone3 (0: it worked).
NAMESPACES = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "CLONE = {'x86_64': 56, 'aarch64': 220}[os.uname().machine]\n"
    "def errno_of(result):\n"
    "    return ctypes.get_errno() if result == -1 else 0\n"
    "def probe():\n"
    "    out = [errno_of(libc.unshare(0x10000000))]\n"
    "    pid = libc.syscall(CLONE, 0x10000000 | 17, 0, 0, 0, 0)\n"
    "    if pid == 0:\n"
    "        os._exit(0)\n"
    "    if pid > 0:\n"
    "        os.waitpid(pid, 0)\n"
    "    out.append(errno_of(pid))\n"
    "    out.append(errno_of(libc.syscall(435, None, 0)))\n"
    "    return out\n"
)


def test_user_namespaces_are_refused_inside_the_sandbox(bound):
    import errno

    reference = {"test_list": [f"assert probe() == [{errno.EPERM}, {errno.EPERM}, {errno.ENOSYS}]"]}
    rollouts = [{"trajectory_id": "ns", "completion": f"```python\n{NAMESPACES}```", "reference": reference}]
    [probe] = (item.result for item in bound.score_group("ns", rollouts).items)
    assert probe.status == "scored" and probe.terms["all_passed"] == 1.0, probe
