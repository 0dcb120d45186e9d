"""Deliberately weak rewards kept as acceptance fixtures of ``rewardkit audit`` (issue 43).

Each config beside this module selects one weak reward over data without reference solutions
(prompts, a final answer or tests, and the policy's completions), and ``rewardkit audit CONFIG``
with no ``--family`` must exit 4 naming the attack in ``EXPECTED``. The providers come by catalog
path ``weak_rewards:catalog`` (the tests put this folder's parent on ``PYTHONPATH``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

import rewardkit
from rewardkit import RewardProviderSpec

# config file -> an attack the audit must report as leaking for it
EXPECTED: dict[str, str] = {
    "length.yaml": "generic-length-padding",
    "substring_math.yaml": "generic-hedge-marked",
    "code_in_process.yaml": "code-exit-at-load",
    "gsm8k_length_bonus.yaml": "generic-length-padding",
    "gsm8k_last_number.yaml": "generic-list-unmarked",
}


@rewardkit.provider(name="pays-length", revision="1")
def pays_length(completion: str, prompt: str) -> float:
    """A "reward model" that pays for length: the first reward hack everyone meets."""
    return min(1.0, len(completion.split()) / 200.0)


@rewardkit.provider(name="length-bonus", revision="1")
def length_bonus(completion: str) -> float:
    """A small bonus for thorough answers, meant to sit beside a sound verifier."""
    return min(1.0, len(completion.split()) / 100.0)


@rewardkit.provider(name="substring-math", revision="1")
def substring_math(completion: str, reference: Any) -> float:
    """A math check that pays any completion containing the reference anywhere."""
    return float(str(reference).strip() in completion)


@rewardkit.provider(name="tests-in-process", revision="1")
def tests_in_process(completion: str, reference: Any) -> float:
    """A code reward that runs the program and its asserts in one child process, unsandboxed, and pays
    when that process exits with status 0: the candidate shares its process with the tests."""
    tests = reference if isinstance(reference, Mapping) else json.loads(reference)
    program = re.findall(r"```(?:python|py)?\n(.*?)```", completion, re.S)
    source = "\n".join(
        [program[-1] if program else completion, *tests.get("test_imports", ()), *tests["test_list"]]
    )
    with tempfile.TemporaryDirectory() as workdir:
        try:
            done = subprocess.run(
                [sys.executable, "-c", source], cwd=workdir, capture_output=True, timeout=10, check=False
            )
        except subprocess.TimeoutExpired:
            return 0.0
    return float(done.returncode == 0)


def catalog() -> list[RewardProviderSpec]:
    return [pays_length, length_bonus, substring_math, tests_in_process]
