"""The ``math`` verifier: extraction, the exact fast path, and the killable worker pool."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_math_attribution import SPIN, verifier_with_markers

import rewardkit
from rewardkit import PreflightError, RewardContractError, resolve_catalog
from rewardkit.contracts import RewardCandidate, RewardContext, RewardGroupRequest, RewardProviderResult
from rewardkit_rl.verifiers.math_answers import extract_answer, fast_verdict, visible
from rewardkit_rl.verifiers.math_verifier import MathVerifier

TIMEOUT_S = 2.0
# An answer the workers compute on until they are killed. (A power tower used to be one; the cost
# guards now refuse it before any worker, see test_math_attribution.py.)
HANG = f"The result is \\boxed{{{SPIN}}}"


def shared_data() -> Path:
    root = os.environ.get("REWARDKIT_SHARED_DATA")
    path = Path(root) if root else Path(__file__).resolve().parents[2] / "testdata" / "shared"
    if not path.is_dir():
        pytest.fail(f"shared data not found at {path}; set REWARDKIT_SHARED_DATA")
    return path


def child_pids() -> set[int]:
    """Live child processes of this test process (every thread's children)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        text = (task / "children").read_text().split()
        pids.update(int(pid) for pid in text)
    return pids


def zombies(pids: set[int]) -> list[int]:
    found = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                found.append(pid)
        except FileNotFoundError:
            pass
    return found


@pytest.fixture(scope="module")
def verifier() -> Iterator[MathVerifier]:
    before = child_pids()
    with verifier_with_markers(timeout_s=TIMEOUT_S, workers=2) as provider:  # the real check, and SPIN
        yield provider
    leftover = child_pids() - before
    assert leftover == set(), f"worker processes left behind: {leftover}"


def request(reference: object, *completions: str, group: str = "g") -> RewardGroupRequest:
    candidates = tuple(RewardCandidate(f"c{index}", text) for index, text in enumerate(completions))
    return RewardGroupRequest(group, candidates, RewardContext(reference=reference))


def results(verifier: MathVerifier, reference: object, *completions: str) -> list[RewardProviderResult]:
    return [item.result for item in verifier.evaluate(request(reference, *completions)).items]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("so \\boxed{1} then \\boxed{\\frac{1}{2}}", "1, \\frac{1}{2}"),  # two boxes state a list
        ("so \\boxed{\\frac{1}{2}} then \\boxed{0.5}", "\\frac{1}{2}"),  # one value, stated twice
        ("<think>x</think><answer>42</answer>", "42"),
        ("<answer>The value is \\boxed{7}</answer>", "7"),
        ("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct.", "\\frac{3}{4}"),
        ("the final answer is 12.", "12"),
    ],
)
def test_extraction(text: str, answer: str) -> None:
    found = extract_answer(text)
    assert found is not None and found[0] == answer


# Found by ``rewardkit audit`` against revision 4, which paid each of these (reference, completion).
HEDGES_REVISION_4_PAID = [
    ("4", "$\\boxed{5}$ or $\\boxed{4}$"),
    ("4", "$\\boxed{5} \\boxed{4}$"),
    ("4", "\\boxed{5}\\boxed{4}"),
    ("\\frac{1}{9}", "$\\boxed{\\frac{1}{8}}$ or $\\boxed{\\frac{1}{9}}$"),
    ("4", "Final answer: $4$ or $5$"),
    ("4", "Final answer: $4$, $5$"),
    ("4", "Final answer: $4$ (or maybe $5$)"),
    ("4", "Final answer: \\(4\\) or \\(5\\)"),
    ("\\frac{1}{9}", "The final answer is $\\frac{1}{9}$ or $\\frac{1}{8}$."),
    ("4", "\\boxed{5}\\phantom{\\boxed{4}}"),
    ("4", "\\boxed{5}\\color{white}{\\boxed{4}}"),
    ("4", "$\\boxed{5}\\textcolor{white}{\\boxed{4}}$"),
    ("4", "$\\boxed{5}\\vphantom{\\boxed{4}}$"),
    ("4", "$\\boxed{5}$ ${\\color[rgb]{1,1,1} \\boxed{4}}$"),
    ("x+1", "\\boxed{x+2} or \\boxed{x+1}"),
    ("(1, 2]", "\\boxed{(1, 3]} \\boxed{(1, 2]}"),
]


@pytest.mark.parametrize(("reference", "text"), HEDGES_REVISION_4_PAID)
def test_several_answers_and_invisible_ones_are_not_paid(
    verifier: MathVerifier, reference: str, text: str
) -> None:
    result = results(verifier, reference, text)[0]
    assert result.status == "scored" and result.terms["task"] == 0.0, result
    several = {d.name: d.value for d in result.diagnostics}["several_answers"]
    assert several == (0.0 if "phantom" in text or "color" in text else 1.0)


def test_what_renders_is_read(verifier: MathVerifier) -> None:
    scored = results(
        verifier,
        "4",
        "Fill in $3 + \\boxed{\\phantom{2}} = 7$: the box holds $\\boxed{4}$.",  # MATH's placeholder box
        "$\\boxed{4}$, that is $\\boxed{\\frac{8}{2}}$",  # one value, spelled twice
        "{\\color{red} \\boxed{4}}",  # a visible colour
        "$\\boxed{4}$ \\color{white} $\\boxed{4}$",  # \\color outside maths is not a switch
        "\\boxed{\\phantom{4}5}",
        "\\boxed{\\color{white} 4}",
        "\\phantom{\\boxed{4}} Final answer: $5$",
    )
    assert [result.terms["task"] for result in scored] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert visible("a\\phantom{b}c\\textcolor{#fff}{d}e{\\color{white}f}g") == "a c e{ }g"


def test_several_boxes_state_the_list_they_make(verifier: MathVerifier) -> None:
    scored = results(
        verifier,
        "(2, 2), (6, 2)",
        "$$\\boxed{(2, 2)} \\quad \\text{and} \\quad \\boxed{(6, 2)}$$",
        "\\boxed{(6, 2)}",
        "\\boxed{(2, 2)} \\boxed{(6, 3)}",
    )
    assert [result.terms["task"] for result in scored] == [1.0, 0.0, 0.0]


def test_fast_path_only_decides_what_is_exact() -> None:
    assert fast_verdict("\\frac{1}{2}", "\\dfrac{1}{2}") is True
    assert fast_verdict("12", "12.0") is True
    assert fast_verdict("12", "13") is False
    assert fast_verdict("\\frac{1}{3}", "2/6") is True
    assert fast_verdict("\\frac{1}{3}", "0.333333") is None  # decimals go to math-verify
    assert fast_verdict("\\sqrt{2}", "2^{1/2}") is None


def test_equivalence_through_math_verify(verifier: MathVerifier) -> None:
    scored = results(
        verifier,
        "\\frac{\\sqrt{3}}{2}",
        "\\boxed{\\frac{\\sqrt3}{2}}",
        "\\boxed{\\frac{1}{2}\\sqrt{3}}",
        "\\boxed{\\sqrt{3}}",
        "no answer at all",
    )
    assert [result.terms["task"] for result in scored] == [1.0, 1.0, 0.0, 0.0]
    diagnostics = {d.name: d.value for d in scored[3].diagnostics}
    assert diagnostics["extracted"] == 0.0


def test_unparseable_gold_skips_the_whole_group(verifier: MathVerifier) -> None:
    scored = results(verifier, "\\frac{", "\\boxed{\\frac{}", "\\boxed{1}")
    assert [result.status for result in scored] == ["skipped", "skipped"]
    assert "could not be parsed" in (scored[0].reason or "")
    assert results(verifier, "   ", "\\boxed{1}")[0].status == "skipped"


def test_bad_reference_type_is_a_contract_error(verifier: MathVerifier) -> None:
    with pytest.raises(RewardContractError, match="string \\(LaTeX\\) or number reference, got dict"):
        verifier.evaluate(request({"answer": "1"}, "\\boxed{1}"))


def test_params_are_checked_in_preflight() -> None:
    catalog = resolve_catalog()
    assert catalog.bind("math").provider._pool is None  # factories start no process
    for params, message in (
        ({"timeout_s": 0}, "timeout_s must be in"),
        ({"timeout_s": "5"}, "timeout_s must be a number"),
        ({"workers": -1}, "workers must be an integer"),
        ({"timeot_s": 1}, "timeot_s"),
    ):
        with pytest.raises(PreflightError, match=message):
            catalog.bind("math", params)


def wait_for_full_pool(verifier: MathVerifier) -> None:
    """A killed worker's replacement takes a couple of seconds to start; measure a healthy pool."""
    pool = verifier.pool
    deadline = time.monotonic() + 60
    while len(pool.pids()) < pool.size and time.monotonic() < deadline:
        time.sleep(0.05)


def check_hang_group(verifier: MathVerifier) -> float:
    wait_for_full_pool(verifier)
    started = time.monotonic()
    scored = results(verifier, "x + 1", HANG, "\\boxed{1 + x}", "\\boxed{x+2}", "\\boxed{x+1}")
    elapsed = time.monotonic() - started
    # Charged (0) once the timeout reproduced on a worker whose canary passed, never a pass
    # (test_math_attribution.py pins down the rule).
    hang = scored[0]
    assert {d.name: d.value for d in hang.diagnostics}["timeout"] == 1.0
    assert hang.status == "scored" and hang.terms == {"task": 0.0} and hang.charge == "deterministic", hang
    assert hang.notes["reproduction"].startswith("reproduced:"), hang
    assert [result.terms["task"] for result in scored[1:]] == [1.0, 0.0, 1.0]
    return elapsed


# A hang costs its timeout twice (the comparison, then its rerun), plus the canary on a leased
# worker, which may wait for a killed worker's replacement to start: a bound that shows the hang
# was cut, not a speed figure.
HANG_BOUND_S = 2 * TIMEOUT_S + 20.0


def test_hang_times_out_from_the_main_thread(verifier: MathVerifier) -> None:
    assert check_hang_group(verifier) < HANG_BOUND_S


def test_hang_times_out_from_a_thread_pool(verifier: MathVerifier) -> None:
    def normal_group(index: int) -> list[float]:
        scored = results(verifier, f"x + {index}", f"\\boxed{{{index} + x}}", "\\boxed{y}")
        return [result.terms["task"] for result in scored]

    wait_for_full_pool(verifier)
    with ThreadPoolExecutor(max_workers=4) as executor:
        hang = executor.submit(check_hang_group, verifier)
        others = [executor.submit(normal_group, index) for index in range(6)]
        assert hang.result() < HANG_BOUND_S
        assert [future.result() for future in others] == [[1.0, 0.0]] * 6


def test_hang_times_out_inside_an_event_loop(verifier: MathVerifier) -> None:
    async def main() -> tuple[float, float]:
        in_loop = check_hang_group(verifier)  # called directly on the loop thread
        via_executor = await asyncio.get_running_loop().run_in_executor(None, check_hang_group, verifier)
        return in_loop, via_executor

    in_loop, via_executor = asyncio.run(main())
    assert in_loop < HANG_BOUND_S and via_executor < HANG_BOUND_S


def test_timed_out_workers_are_killed_and_reaped(verifier: MathVerifier) -> None:
    pool = verifier.pool
    before = set(pool.pids())
    replaced = pool.replaced
    check_hang_group(verifier)
    assert pool.replaced == replaced + 2  # the hang's worker, then its rerun's
    deadline = time.monotonic() + 60
    while len(pool.pids()) < pool.size and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pool.pids()) == pool.size
    assert not (before - set(pool.pids())) & child_pids(), "a killed worker is still a child"
    assert zombies(child_pids()) == []


def test_junk_inputs_get_a_defined_verdict(verifier: MathVerifier) -> None:
    junk = [
        "",
        "\x00\x01\xff binary \ufffd",
        "\\boxed{" * 20_000,
        "}" * 10_000 + "\\boxed{1",
        "x" * 1_000_000,
        "\\boxed{" + "1+" * 5_000 + "1}",
        "<answer>" * 50_000 + "</answer>",
        "\\boxed{__import__('os').system('echo hacked')}",
    ]
    started = time.monotonic()
    scored = results(verifier, "2", *junk)
    assert time.monotonic() - started < TIMEOUT_S + 5
    assert all(result.status == "scored" and result.terms["task"] == 0.0 for result in scored)


def test_a_group_decided_by_exact_match_needs_no_worker_process() -> None:
    """Issue 46: an idle math reward's next group cost twice what it costs hot. Measured, that group
    never reached a worker (its answers are all decided by the exact normalised comparison in the
    calling thread), so the extra cost is the calling thread's own work run on cold CPU caches, not a
    worker waking up. This pins the half that code controls: such a group starts no worker process
    and pays no round trip, one answer per box or several boxes stating one value."""
    reference = "\\frac{3}{8}"
    completions = {
        "spelled": "So the probability is \\boxed{\\frac{3}{8}}.",
        "slash": "Hence \\boxed{ 3/8 }",  # spaces inside the box: stripped, as before
        "decimal": "\\boxed{0.375}",
        "dfrac": "\\[ \\boxed{\\dfrac{3}{8}} \\]",
        "same value twice": "\\boxed{\\frac{3}{8}} or \\boxed{\\frac{6}{16}}",  # one answer, stated again
        "wrong number": "\\boxed{5}",
        "two values": "\\boxed{5} \\boxed{\\frac{3}{8}}",  # a list: never the one number
        "no answer": "I am not sure.",
    }
    rollouts = [
        {"trajectory_id": name, "completion": text, "reference": reference}
        for name, text in completions.items()
    ]
    before = child_pids()
    with rewardkit.load({"rl.group_size": len(rollouts), "rl.reward.provider": "math"}) as reward:
        scored = {
            candidate.trajectory_id: candidate
            for _, candidate in reward.score([("g", rollouts)]).candidates()
        }
        started = child_pids() - before
    assert started == set(), f"worker processes started for a group decided by exact match: {started}"
    finals = {name: candidate.final for name, candidate in scored.items()}
    assert finals == {
        "spelled": 1.0,
        "slash": 1.0,
        "decimal": 1.0,
        "dfrac": 1.0,
        "same value twice": 1.0,
        "wrong number": 0.0,
        "two values": 0.0,
        "no answer": 0.0,
    }
    assert all(candidate.diagnostics["math"]["fast_path"] == 1.0 for candidate in scored.values())
    several = {name for name, candidate in scored.items() if candidate.diagnostics["math"]["several_answers"]}
    assert several == {"two values"}
    assert scored["slash"].breakdown["math"]["extracted_answer"] == "3/8"
    assert scored["same value twice"].breakdown["math"]["extracted_answer"] == "\\frac{3}{8}"


def test_close_leaves_no_process_and_reopens_lazily() -> None:
    before = child_pids()
    provider = MathVerifier(timeout_s=TIMEOUT_S, workers=1)
    assert results(provider, "x^2", "\\boxed{x^{2}}")[0].terms["task"] == 1.0
    assert child_pids() - before
    provider.close()
    assert child_pids() - before == set()
    provider.close()  # idempotent


def test_hendrycks_equivalence_cases(verifier: MathVerifier) -> None:
    """hendrycks/math's normaliser cases, as data: gold vs prediction with the expected verdict."""
    rows = [json.loads(line) for line in (shared_data() / "math/math_equivalence_test_cases.jsonl").open()]
    wrong = []
    for row in rows:
        scored = results(verifier, row["gold"], f"\\boxed{{{row['pred']}}}")[0]
        got = scored.status == "scored" and scored.terms["task"] == 1.0
        if got != row["expected_is_equiv"]:
            wrong.append((row["test_function"], row["gold"], row["pred"], row["expected_is_equiv"]))
    # Listed and explained in docs/verifiers.md; anything else is a regression.
    assert len(rows) == 16
    assert wrong == KNOWN_HENDRYCKS_DIFFERENCES


# hendrycks' string normaliser treats a comma list as ordered; math-verify (and this verifier)
# compares it as a set, which is what MATH's "enter all solutions, separated by commas" means.
KNOWN_HENDRYCKS_DIFFERENCES: list[tuple[str, str, str, bool]] = [
    ("test_order", "10, 4, -2", "4, 10, -2", False),
    ("test_decimals", "0.1, 4, 2", "4, .1, 2", False),
]


def test_math_responses_agree_with_the_labels(verifier: MathVerifier) -> None:
    path = shared_data() / "Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
    rows = [json.loads(line) for line in path.open()]
    groups = [request(row["gt"], *row["code"], group=str(row["idx"])) for row in rows]
    labels = [label for row in rows for label in row["score"]]
    scored = [item.result for group in verifier.evaluate_many(groups) for item in group.items]
    assert len(scored) == 400
    agree = sum(
        (r.status == "scored" and r.terms["task"] == 1.0) == label for r, label in zip(scored, labels)
    )
    assert agree / len(labels) >= 0.995
