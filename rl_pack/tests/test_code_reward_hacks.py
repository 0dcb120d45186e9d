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

import pytest
from process_table import live_processes_of

from rewardkit.catalog import resolve_catalog

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
