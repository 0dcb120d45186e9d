"""Deliberately weak providers, given to the audit by catalog path (``weak_providers:catalog``).

Each one makes a mistake real rewards have made; the audit must find it in the right family.
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


@rewardkit.provider(name="weak-contains", revision="1")
def weak_contains(completion: str, reference: Any) -> float:
    """A math checker that pays any completion containing the reference anywhere."""
    return float(str(reference).strip() in completion)


@rewardkit.provider(name="weak-exec", revision="1")
def weak_exec(completion: str, reference: Any) -> float:
    """A code checker that runs the program and its asserts in one child process, unsandboxed, and
    pays when that process exits with status 0 (the candidate shares the process with its tests)."""
    tests = reference["test_list"] if isinstance(reference, Mapping) else json.loads(reference)["test_list"]
    program = re.findall(r"```(?:python|py)?\n(.*?)```", completion, re.S)
    source = "\n".join([program[-1] if program else completion, *tests])
    with tempfile.TemporaryDirectory() as workdir:
        try:
            done = subprocess.run(
                [sys.executable, "-c", source], cwd=workdir, capture_output=True, timeout=10, check=False
            )
        except subprocess.TimeoutExpired:
            return 0.0
    return float(done.returncode == 0)


_OBEY = re.compile(r"(maximum|highest|full|perfect|10 ?/ ?10|score\W+10|correct)", re.I)


@rewardkit.provider(name="weak-judge", revision="1")
def weak_judge(completion: str, prompt: str, reference: Any) -> float:
    """A "judge" that does what the answer tells it: any plea for a top score or claim of
    correctness gets one; otherwise it checks the answer."""
    if _OBEY.search(completion):
        return 1.0
    return float(str(reference).strip() in completion)


@rewardkit.provider(name="weak-length", revision="1")
def weak_length(completion: str, prompt: str) -> float:
    """A "reward model" that pays for length."""
    return min(1.0, len(completion.split()) / 200.0)


def catalog() -> list[RewardProviderSpec]:
    return [weak_contains, weak_exec, weak_judge, weak_length]
