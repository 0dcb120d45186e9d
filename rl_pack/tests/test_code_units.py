"""Extraction, comparison, reference parsing, settings and the sandbox-error contract."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from rewardkit.contracts.errors import PreflightError, RewardContractError
from rewardkit.scoring.capacity import usable_cpus
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_rl.code.compare import outputs_match
from rewardkit_rl.code.extraction import extract_program
from rewardkit_rl.code.reference import parse_reference
from rewardkit_rl.code.sandbox import SandboxConfig


def test_extract_takes_last_python_block_defining_the_entry_point():
    text = "Here:\n```python\ndef f():\n    return 1\n```\nUsage:\n```python\nprint(f())\n```\n"
    assert extract_program(text, "f") == "def f():\n    return 1\n"
    assert extract_program(text) == "print(f())\n"


def test_extract_ignores_other_languages_and_handles_unclosed_fence():
    text = "```bash\nrm -rf /\n```\n```py\nx = 1\n"
    assert extract_program(text) == "x = 1\n"


def test_extract_keeps_a_plain_continuation_verbatim():
    assert extract_program("    return 1") == "    return 1"


@pytest.mark.parametrize(
    ("actual", "expected", "mode", "match"),
    [
        ("1 2\r\n3  \n\n", "1 2\n3\n", "exact", True),
        ("1  2\n3", "1 2\n3\n", "exact", False),
        ("1  2\n3", "1 2 3", "token", True),
        ("1 2", "1 2 3", "token", False),
        ("0.3333333", "0.333333333", "float", True),
        ("0.34", "0.333333333", "float", False),
        ("abc 1.0", "abc 1", "float", True),
        ("nan", "nan", "float", True),
        ("inf", "1e308", "float", False),
    ],
)
def test_outputs_match(actual, expected, mode, match):
    assert outputs_match(actual, expected, mode) is match


def test_unknown_compare_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown compare mode"):
        outputs_match("a", "a", "fuzzy")


def test_reference_shapes():
    mbpp = parse_reference({"test_list": ["assert f(1) == 1"], "test_imports": ["import math"]})
    assert (mbpp.mode, mbpp.case_count, mbpp.setup) == ("asserts", 1, "import math")
    human = parse_reference(
        {"test": "def check(candidate):\n    assert candidate() == 1", "entry_point": "g"}
    )
    assert human.tests[0].endswith("check(g)\n")
    io = parse_reference('{"inputs": ["1\\n"], "outputs": ["1\\n"]}')
    assert (io.mode, io.case_count) == ("io", 1)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ([1, 2], "must be a mapping"),
        ("not json", "not JSON"),
        ({"foo": 1}, "has no tests"),
        ({"test_list": []}, "empty list"),
        ({"test_list": "assert x"}, "list of strings"),
        ({"test_list": ["assert ("]}, r"test_list\[0\] does not compile"),
        ({"inputs": ["1"], "outputs": []}, "1 inputs but 0 outputs"),
        ({"test": "", "entry_point": "f"}, "non-empty"),
        ({"test": "pass", "entry_point": "not an id"}, "not an identifier"),
    ],
)
def test_bad_references_say_what_is_wrong(reference, message):
    with pytest.raises(RewardContractError, match=message):
        parse_reference(reference)


def test_program_joins_humaneval_prompt():
    plan = parse_reference(
        {"prompt": "import math\n\ndef f(x):\n", "test": "assert True", "entry_point": "f"}
    )
    assert plan.program_from("    return 1") == "import math\n\ndef f(x):\n    return 1"
    full = "```python\ndef f(x):\n    return math.floor(x)\n```"
    assert plan.program_from(full) == "import math\n\n\ndef f(x):\n    return math.floor(x)\n"


def test_bad_settings_fail_in_preflight_with_the_reason():
    catalog = resolve_catalog()
    with pytest.raises(PreflightError, match="timeout_s must be a positive number"):
        catalog.bind("code-tests", {"timeout_s": 0})
    with pytest.raises(PreflightError, match="isolation must be 'bwrap' or 'none'"):
        catalog.bind("code-tests", {"isolation": "docker"})
    with pytest.raises(PreflightError, match="compare must be one of"):
        catalog.bind("code-tests", {"compare": "fuzzy"})
    with pytest.raises(PreflightError, match="concurrency"):
        catalog.bind("code-tests", {"concurrency": 0})
    with pytest.raises(ValueError, match="cgroup_pids_max"):
        SandboxConfig(cgroup_pids_max=2)


def test_factory_starts_nothing():
    bound = resolve_catalog().bind("code-tests", {})
    assert bound.provider._pool is None
    assert bound.provider.concurrency >= 1


def test_sandbox_that_cannot_start_is_an_error_per_candidate(tmp_path):
    not_bwrap = tmp_path / "bwrap"
    not_bwrap.write_text("#!/bin/sh\necho 'bwrap: no namespaces here' >&2\nexit 1\n")
    not_bwrap.chmod(0o755)
    bound = resolve_catalog().bind("code-tests", {})
    provider = bound.provider
    object.__setattr__(provider.config, "bwrap_path", str(not_bwrap))
    try:
        rollouts = [
            {
                "trajectory_id": t,
                "completion": "def f():\n    return 1",
                "reference": {"test_list": ["assert f() == 1"]},
            }
            for t in ("a", "b")
        ]
        for item in bound.score_group("g", rollouts).items:
            assert item.result.status == "error"
            assert item.result.reason.startswith("sandbox: ")
            assert "no namespaces here" in item.result.reason
    finally:
        provider.close()


def test_isolation_none_runs_trusted_code(monkeypatch):
    monkeypatch.setenv("REWARDKIT_ALLOW_UNSANDBOXED", "1")
    bound = resolve_catalog().bind("code-tests", {"isolation": "none", "concurrency": 1})
    try:
        reference = {"test_list": ["assert f() == 1", "assert f() == 2"]}
        result = (
            bound.score_group(
                "g", [{"trajectory_id": "a", "completion": "def f():\n    return 1", "reference": reference}]
            )
            .items[0]
            .result
        )
        assert dict(result.terms) == {"pass_rate": 0.5, "all_passed": 0.0}
    finally:
        bound.provider.close()


def test_diagnostics_count_statuses():
    bound = resolve_catalog().bind("code-tests", {"cgroup": "required", "concurrency": 1, "timeout_s": 2.0})
    try:
        reference = {"test_list": ["assert f(1) == 1", "assert f(2) == 3", "assert f(None) == 0"]}
        items = bound.score_group(
            "g",
            [
                {"trajectory_id": "a", "completion": "def f(x):\n    return x + 0", "reference": reference},
                {"trajectory_id": "b", "completion": "def f(x) return x", "reference": reference},
            ],
        ).items
        first = {d.name: d.value for d in items[0].result.diagnostics}
        assert first["cases_passed"] == 1 and first["cases_failed"] == 1 and first["cases_error"] == 1
        assert first["runtime_error"] == 1.0 and first["compile_error"] == 0.0
        second = {d.name: d.value for d in items[1].result.diagnostics}
        assert second["compile_error"] == 1.0 and items[1].result.terms["pass_rate"] == 0.0
    finally:
        bound.provider.close()


def test_sandboxes_never_outnumber_the_cpus():
    """Timeouts are wall-clock: more sandboxes than CPUs would time out correct programs."""
    provider = resolve_catalog().bind("code-tests", {"concurrency": 64}).provider
    assert provider.concurrency == usable_cpus()
    assert resolve_catalog().bind("code-tests", {"concurrency": 1}).provider.concurrency == 1


# Run in a fresh interpreter pinned to one CPU: the caps are read when the modules load.
_PINNED_CAPS = """
import json
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_rl.code import sandbox
catalog = resolve_catalog()
print(json.dumps({
    "sandbox": sandbox.USABLE_CPUS,
    "code_default": catalog.bind("code-tests").provider.concurrency,
    "code_asked_64": catalog.bind("code-tests", {"concurrency": 64}).provider.concurrency,
    "math_workers": catalog.bind("math").provider.workers,
}))
"""


def test_a_process_pinned_to_one_cpu_runs_one_sandbox_and_one_math_worker():
    """``taskset -c 0`` on a bigger host: the caps follow the CPUs the process may use, not the
    host's count, or correct programs time out waiting for a CPU."""
    taskset = shutil.which("taskset")
    assert taskset is not None, "taskset (util-linux) is needed: apt-get install util-linux"
    env = {**os.environ, "REWARDKIT_STRICT_PLUGINS": "1"}
    done = subprocess.run(
        [taskset, "-c", "0", sys.executable, "-c", _PINNED_CAPS], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    caps = json.loads(done.stdout.strip().splitlines()[-1])
    assert caps == {"sandbox": 1, "code_default": 1, "code_asked_64": 1, "math_workers": 1}
