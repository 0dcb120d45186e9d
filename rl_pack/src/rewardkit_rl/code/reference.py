"""Reading the tests out of a reference: MBPP asserts, HumanEval ``check``, stdin/stdout cases."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rewardkit.plugin import RewardContractError
from rewardkit_rl.code.extraction import defines, extract_program
from rewardkit_rl.code.names import names_for_tests


@dataclass(frozen=True)
class TestPlan:
    """What to run for one reference.

    ``mode="asserts"``: the program runs once in the candidate's process; the test process runs
    ``trusted`` (the task's own code, e.g. HumanEval prompt helpers), takes the candidate's
    top-level names listed in ``expose`` (see ``names.py``), runs ``setup``, then each entry of ``tests``
    (one case per entry). ``mode="io"``: the program runs once per case with ``inputs[i]`` on
    stdin, and its stdout is compared with ``outputs[i]``. ``unsupported`` says why the tests
    cannot be judged across processes (every candidate is then skipped).
    """

    mode: Literal["asserts", "io"]
    tests: tuple[str, ...] = ()
    setup: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    prompt: str | None = None
    entry_point: str | None = None
    trusted: str = ""
    expose: tuple[str, ...] = ()
    unsupported: str | None = None

    @property
    def case_count(self) -> int:
        return len(self.tests) if self.mode == "asserts" else len(self.inputs)

    def program_from(self, completion: str) -> str:
        """The program to run for ``completion`` (HumanEval: joined with the prompt)."""
        code = extract_program(completion, self.entry_point)
        if self.prompt is None or not self.entry_point:
            return code
        if defines(code, self.entry_point):
            # A complete function: keep the prompt's imports and helpers, drop its stub.
            return task_code(self.prompt, self.entry_point) + "\n" + code
        return self.prompt + code


def task_code(prompt: str, entry_point: str) -> str:
    """The prompt's imports and helpers: everything before the entry point's stub."""
    stub = re.search(rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", prompt, re.M)
    return prompt[: stub.start()] if stub else prompt


def _strings(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise RewardContractError(
            f"code-tests: reference {what} must be a list of strings, got {value!r:.80}"
        )
    bad = [index for index, item in enumerate(value) if not isinstance(item, str)]
    if bad:
        raise RewardContractError(f"code-tests: reference {what}[{bad[0]}] is not a string")
    return tuple(value)


def _check_compiles(source: str, what: str) -> None:
    try:
        compile(source, what, "exec")
    except (SyntaxError, ValueError) as error:
        raise RewardContractError(f"code-tests: reference {what} does not compile: {error}") from None


_SINGLETONS = (None, True, False, Ellipsis)


def _identity_check(sources: tuple[str, ...]) -> str | None:
    """Why the tests cannot be judged with values copied across processes, or None.

    Values come back from the candidate's process as copies, so ``x is y`` between a result
    and anything but None/True/False/... would be judged wrongly; such tests are not supported.
    """
    for index, source in enumerate(sources):
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            for position, op in enumerate(node.ops):
                if not isinstance(op, (ast.Is, ast.IsNot)):
                    continue
                pair = operands[position : position + 2]
                if not any(isinstance(side, ast.Constant) and side.value in _SINGLETONS for side in pair):
                    line = getattr(node, "lineno", "?")
                    return (
                        f"test {index} line {line} compares identity ('is'), which cannot be judged on copies"
                    )
    return None


def parse_reference(reference: Any) -> TestPlan:
    """Build the ``TestPlan`` of a reference, or raise ``RewardContractError`` saying what is wrong.

    Accepted shapes (a JSON string holding one of them is decoded first):

    - ``{"test_list": [...], "test_imports": [...]}`` (MBPP): one case per assert;
    - ``{"test": "...", "entry_point": "f", "prompt": "..."?}`` (HumanEval): one case, the test
      code followed by ``check(f)`` when it defines ``check``;
    - ``{"inputs": [...], "outputs": [...]}``: stdin/stdout cases.
    """
    if isinstance(reference, str):
        try:
            reference = json.loads(reference)
        except json.JSONDecodeError as error:
            raise RewardContractError(
                f"code-tests: the reference is a string that is not JSON ({error}); give a mapping"
            ) from None
    if not isinstance(reference, Mapping):
        raise RewardContractError(
            f"code-tests: the reference must be a mapping, got {type(reference).__name__}"
        )
    entry_point = reference.get("entry_point")
    if entry_point is not None and (not isinstance(entry_point, str) or not entry_point.isidentifier()):
        raise RewardContractError(f"code-tests: reference entry_point {entry_point!r} is not an identifier")
    prompt = reference.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise RewardContractError("code-tests: reference prompt must be a string")
    if "test_list" in reference:
        tests = _strings(reference["test_list"], "test_list")
        setup = "\n".join(_strings(reference.get("test_imports", ()), "test_imports"))
        for index, test in enumerate(tests):
            _check_compiles(test, f"test_list[{index}]")
        _check_compiles(setup, "test_imports")
        names = names_for_tests(tests, "", setup, entry_point)
        plan = TestPlan(
            "asserts",
            tests=tests,
            setup="".join(f"import {module}\n" for module in names.stdlib_imports) + setup,
            entry_point=entry_point,
            expose=names.expose,
            unsupported=_identity_check(tests),
        )
    elif "test" in reference:
        test = reference["test"]
        if not isinstance(test, str) or not test.strip():
            raise RewardContractError("code-tests: reference test must be non-empty Python source")
        _check_compiles(test, "test")
        if entry_point and re.search(r"^def\s+check\s*\(", test, re.M):
            test = f"{test}\n\ncheck({entry_point})\n"
        # The prompt is the task's code: its helpers run trusted in the test process, and only
        # the entry point is taken from the candidate.
        trusted = task_code(prompt, entry_point) if prompt is not None and entry_point else ""
        _check_compiles(trusted, "prompt (before the entry point)")
        names = names_for_tests((test,), trusted, "", entry_point)
        plan = TestPlan(
            "asserts",
            tests=(test,),
            setup="".join(f"import {module}\n" for module in names.stdlib_imports),
            prompt=prompt,
            entry_point=entry_point,
            trusted=trusted,
            expose=names.expose,
            unsupported=_identity_check((test,)),
        )
    elif "inputs" in reference or "outputs" in reference:
        inputs = _strings(reference.get("inputs"), "inputs")
        outputs = _strings(reference.get("outputs"), "outputs")
        if len(inputs) != len(outputs):
            raise RewardContractError(
                f"code-tests: reference has {len(inputs)} inputs but {len(outputs)} outputs"
            )
        plan = TestPlan("io", inputs=inputs, outputs=outputs)
    else:
        raise RewardContractError(
            "code-tests: the reference has no tests; give test_list (+test_imports), test "
            f"(+entry_point) or inputs/outputs; got keys {sorted(map(str, reference))}"
        )
    if plan.case_count == 0:
        raise RewardContractError("code-tests: the reference has an empty list of tests")
    return plan
