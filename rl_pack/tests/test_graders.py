"""OpenAI grader specs (``rl.reward.grader``) imported and scored through ``rewardkit.load(...).score``.

Each type is taken from the examples of the protocols note (section 3, OpenAI graders); every
expected grade below is worked out by hand in the comment beside it, never by the code under test.
The python grader runs in the real bubblewrap sandbox; the model graders are in
test_graders_judge.py (a judge on loopback).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.contracts.errors import ConfigError
from rewardkit.plugin import CompositionError

STRING_CHECK = {
    "type": "string_check", "name": "exact", "input": "{{ sample.output_text }}",
    "reference": "{{ item.answer }}", "operation": "eq",
}  # fmt: skip
TEXT_SIMILARITY = {
    "type": "text_similarity", "name": "sim", "input": "{{ sample.output_text }}",
    "reference": "{{ item.answer }}", "evaluation_metric": "fuzzy_match",
}  # fmt: skip
PYTHON = {
    "type": "python", "name": "py", "image_tag": "2025-05-08",
    "source": "def grade(sample, item) -> float:\n"
              "    return float(sample['output_text'].strip() == item['answer'])",
}  # fmt: skip
MULTI = {
    "type": "multi", "name": "combo",
    "graders": {
        "name_ok": {"type": "text_similarity", "name": "n", "input": "{{ sample.output_json.name }}",
                    "reference": "{{ item.name }}", "evaluation_metric": "fuzzy_match"},
        "email_ok": {"type": "string_check", "name": "e", "input": "{{ sample.output_json.email }}",
                     "reference": "{{ item.email }}", "operation": "eq"},
    },
    "calculate_output": "(name_ok + email_ok) / 2",
}  # fmt: skip


def config(grader: Any, size: int) -> dict[str, Any]:
    return {"rl": {"group_size": size, "reward": {"grader": grader}}}


def grade_all(grader: Any, reference: Any, completions: Sequence[str], prompt: str = "q") -> list[Any]:
    """The candidates of one group, scored by the reward ``grader`` becomes."""
    rollouts = [
        {"trajectory_id": f"t{index}", "completion": text, "reference": reference, "prompt": prompt}
        for index, text in enumerate(completions)
    ]
    with rewardkit.load(config(grader, len(rollouts))) as reward:
        return [candidate for _, candidate in reward.score([("g", rollouts)]).candidates()]


def finals(grader: Any, reference: Any, completions: Sequence[str]) -> list[float | None]:
    return [candidate.final for candidate in grade_all(grader, reference, completions)]


# -- string_check ---------------------------------------------------------------------------------


def test_string_check_example_is_one_component_scored_exactly() -> None:
    with rewardkit.load(config(STRING_CHECK, 1)) as reward:
        (component,) = reward.spec.components
        assert (component.name, component.provider, component.term) == (
            "exact",
            "openai-string-check",
            "score",
        )
        assert component.params["grader"] == STRING_CHECK  # the grader is the reward's identity
    # eq is case-sensitive and exact; a zero-width space is gone after normalisation, as for every rule
    assert finals(STRING_CHECK, "42", ["42", "42 ", "The answer is 42", "4\u200b2"]) == [1.0, 0.0, 0.0, 1.0]


def test_string_check_compares_letters_as_a_reader_sees_them() -> None:
    # "P\u0430ris" has a Cyrillic a: it reads "Paris", so it is equal (eq 1) and not unequal (ne 0)
    assert finals(STRING_CHECK, "Paris", ["P\u0430ris"]) == [1.0]
    assert finals({**STRING_CHECK, "operation": "ne"}, "Paris", ["P\u0430ris", "Lyon"]) == [0.0, 1.0]


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        ("ne", [0.0, 1.0, 1.0]),  # "Paris" equals only the first
        ("neq", [0.0, 1.0, 1.0]),  # the guide's prose spelling of ne
        ("like", [1.0, 1.0, 0.0]),  # contains "Paris", case-sensitive
        ("ilike", [1.0, 1.0, 1.0]),  # contains "paris" ignoring case
    ],
)
def test_string_check_operations(operation: str, expected: list[float]) -> None:
    grader = {**STRING_CHECK, "operation": operation}
    assert finals(grader, "Paris", ["Paris", "It is Paris.", "it is PARIS"]) == expected


def test_an_object_reference_is_the_items_fields() -> None:
    grader = {**STRING_CHECK, "input": "{{ sample.output_text }}", "reference": "{{ item.meta.answer }}"}
    assert finals(grader, {"meta": {"answer": "7"}}, ["7", "8"]) == [1.0, 0.0]


# -- text_similarity ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "completion", "reference", "expected"),
    [
        # LCS("kitten", "sitting") = "ittn", 4: 2 * 4 / (6 + 7)
        ("fuzzy_match", "kitten", "sitting", 8 / 13),
        ("fuzzy_match", "same", "same", 1.0),
        # "the cat sat on the mat" against "the cat sat on a mat": n-gram precisions 5/6, 3/5, 2/4,
        # 1/3, equal lengths (no brevity penalty): (5/6 * 3/5 * 2/4 * 1/3) ** (1/4)
        ("bleu", "the cat sat on the mat", "the cat sat on a mat", (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25),
        ("bleu", "mat", "the cat sat on a mat", 0.0),  # no 2-gram at all: 0 without smoothing
        # 1- to 4-grams pooled: 18 in each, 5 + 3 + 2 + 1 = 11 shared
        ("gleu", "the cat sat on the mat", "the cat sat on a mat", 11 / 18),
        # unigrams: 5 of 6 shared each way; bigrams 3 of 5; LCS "the cat sat on mat" 5 of 6
        ("rouge_1", "The cat sat on the mat", "the cat sat on a mat", 5 / 6),
        ("rouge_2", "the cat sat on the mat", "the cat sat on a mat", 3 / 5),
        ("rouge_l", "the cat, sat on the mat!", "the cat sat on a mat", 5 / 6),
        # 5-grams: "a b c d e f" has 2, "a b c d e" 1, sharing 1: P = 1/2, R = 1, F = 2/3
        ("rouge_5", "a b c d e f", "a b c d e", 2 / 3),
    ],
)
def test_text_similarity_metrics(metric: str, completion: str, reference: str, expected: float) -> None:
    grader = {**TEXT_SIMILARITY, "evaluation_metric": metric}
    (value,) = finals(grader, reference, [completion])
    assert value == pytest.approx(expected, abs=1e-12)


def test_text_similarity_pass_threshold_is_accepted_and_the_grade_is_still_the_similarity() -> None:
    grader = {**TEXT_SIMILARITY, "pass_threshold": 0.9}
    assert finals(grader, "sitting", ["kitten"]) == [pytest.approx(8 / 13)]


@pytest.mark.parametrize("metric", ["meteor", "cosine"])
def test_metrics_that_need_a_model_or_corpus_are_refused_by_name(metric: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"grader.evaluation_metric: '{metric}' is not supported.*supported: \["
    ):
        rewardkit.load(config({**TEXT_SIMILARITY, "evaluation_metric": metric}, 1))


# -- multi ----------------------------------------------------------------------------------------


def test_multi_example_averages_its_graders() -> None:
    reference = {"name": "Ada Lovelace", "email": "ada@example.com"}
    completions = [
        json.dumps(reference),  # both right: (1 + 1) / 2
        json.dumps({"name": "Ada Lovelace", "email": "ada@example.org"}),  # (1 + 0) / 2
        # "Ada Lovelac" against "Ada Lovelace": LCS 11, 2 * 11 / 23; email right: (22/23 + 1) / 2
        json.dumps({"name": "Ada Lovelac", "email": "ada@example.com"}),
    ]
    candidates = grade_all(MULTI, reference, completions)
    assert [c.final for c in candidates] == [1.0, 0.5, pytest.approx((22 / 23 + 1) / 2)]
    grades = json.loads(candidates[1].breakdown["combo"]["grades"])
    assert grades == {"name_ok": 1.0, "email_ok": 0.0}


def test_multi_charges_a_sample_that_is_not_json_or_lacks_a_field() -> None:
    reference = {"name": "Ada", "email": "a@b"}
    candidates = grade_all(MULTI, reference, ["not json", json.dumps({"name": "Ada"})])
    assert [c.final for c in candidates] == [0.0, 0.0]
    assert "not valid JSON" in candidates[0].breakdown["combo"]["reason"]
    assert "no field 'email'" in candidates[1].breakdown["combo"]["reason"]
    assert candidates[0].diagnostics["openai-multi"]["invalid_variable"] == 1.0


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("min(name_ok, email_ok) ^ 2", 0.25),  # min(1, 0.5) squared: ^ is a power
        ("max(name_ok, email_ok) ** 3 - abs(-email_ok)", 0.5),  # 1 - 0.5
        ("floor(email_ok * 10) / 10 + ceil(0.2) + sqrt(4) + log(exp(1))", 4.5),  # 0.5 + 1 + 2 + 1
        ("-name_ok + +2", 1.0),
    ],
)
def test_multi_formulas_use_the_allowed_arithmetic(formula: str, expected: float) -> None:
    grader = {
        **MULTI,
        "graders": {
            "name_ok": {
                **STRING_CHECK,
                "input": "{{ sample.output_json.name }}",
                "reference": "{{ item.name }}",
            },
            "email_ok": {
                **TEXT_SIMILARITY,
                "input": "{{ sample.output_json.e }}",
                "reference": "{{ item.e }}",
            },
        },
        "calculate_output": formula,
    }
    # name_ok: "x" equals "x", 1; email_ok: "aa" against "ab", LCS 1: 2 * 1 / 4 = 0.5
    completion = json.dumps({"name": "x", "e": "aa"})
    assert finals(grader, {"name": "x", "e": "ab"}, [completion]) == [pytest.approx(expected)]


@pytest.mark.parametrize(
    ("formula", "refused"),
    [
        ("__import__('os').system('true')", "Call"),
        ("name_ok.real + 1", "Attribute"),
        ("name_ok[0]", "Subscript"),
        ("(lambda: 1)()", "Call"),
        ("lambda: 1", "Lambda"),
        ("[name_ok for name_ok in (1, 2)][0]", "Subscript"),
        ("sum(x for x in (name_ok, email_ok))", "Call"),
        ("[x for x in (1,)]", "ListComp"),
        ("{x: 1 for x in (1,)}", "DictComp"),
        ("open('f')", "Call"),
        ("min(name_ok, email_ok, key=abs)", "Call"),
        ("max(*[name_ok])", "Call"),
        ("'text'", "Constant"),
        ("True + name_ok", "Constant"),
        ("name_ok if email_ok else 0", "IfExp"),
        ("name_ok < email_ok", "Compare"),
        ("name_ok and email_ok", "BoolOp"),
        ("name_ok % 2", "BinOp"),
        ("name_ok // 2", "BinOp"),
        ("~1", "UnaryOp"),
        ("(name_ok := 1)", "NamedExpr"),
        ("f'{name_ok}'", "JoinedStr"),
    ],
)
def test_multi_formulas_refuse_anything_but_arithmetic(formula: str, refused: str) -> None:
    with pytest.raises(ConfigError, match=rf"grader.calculate_output: {refused} .* is not allowed"):
        rewardkit.load(config({**MULTI, "calculate_output": formula}, 1))


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("name_ok + unknown", r"unknown name 'unknown'; the graders are \['email_ok', 'name_ok'\]"),
        ("import os", "not a formula"),
        ("name_ok; email_ok", "not a formula"),
        ("abs(name_ok, email_ok)", "abs takes 1 argument"),
        ("", "expected a formula"),
    ],
)
def test_multi_formulas_that_are_not_formulas_are_refused(formula: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        rewardkit.load(config({**MULTI, "calculate_output": formula}, 1))


def test_a_formula_without_a_finite_value_charges_zero() -> None:
    # 9 ** 9 ** 9 overflows a float instead of building a huge integer; a division by zero is no value
    for formula in ("9 ** 9 ** 9 * name_ok", "name_ok / (email_ok - email_ok)"):
        (candidate,) = grade_all({**MULTI, "calculate_output": formula}, {"name": "a", "email": "b"},
                                 [json.dumps({"name": "a", "email": "b"})])  # fmt: skip
        assert candidate.final == 0.0
        assert candidate.diagnostics["openai-multi"]["formula_error"] == 1.0


def test_multi_inside_multi_is_refused() -> None:
    nested = {**MULTI, "graders": {"inner": MULTI}, "calculate_output": "inner"}
    with pytest.raises(
        ConfigError, match=r"grader\.graders\.inner: a multi grader cannot hold another multi"
    ):
        rewardkit.load(config(nested, 1))


# -- what is refused, and where -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grader", "message"),
    [
        ({**STRING_CHECK, "foo": 1}, r"grader: unsupported field\(s\) \['foo'\] in a string_check grader"),
        ({**STRING_CHECK, "operation": "regex"}, r"grader.operation: 'regex' is not one of"),
        (
            {**STRING_CHECK, "input": "{{ sample.output_tools[0].function.name }}"},
            "grader.input: .* is not supported",
        ),
        ({**STRING_CHECK, "reference": "{{ sample.choices }}"}, "grader.reference: .* is not supported"),
        ({**STRING_CHECK, "reference": "{{ row.answer }}"}, "unknown namespace 'row'"),
        ({**STRING_CHECK, "reference": "{{ item.answer "}, "is not closed"),
        ({"type": "endpoint", "name": "x"}, "grader.type: unknown grader type 'endpoint'"),
        (
            {**MULTI, "graders": {**MULTI["graders"], "email_ok": {**STRING_CHECK, "extra": True}}},
            r"grader.graders.email_ok: unsupported field\(s\) \['extra'\]",
        ),
        ({**PYTHON, "source": "def grade(:"}, "grader.source does not compile"),
        ({**PYTHON, "source": "#" * (256 * 1024 + 1)}, "more than 262144 bytes"),
    ],
)
def test_unsupported_fields_and_variables_are_named_with_where_they_are(grader: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        rewardkit.load(config(grader, 1))
    assert "rl.reward" in str(raised.value)


def test_the_grader_comes_alone() -> None:
    with pytest.raises(
        ConfigError, match=r"'grader' stands for a whole composed spec; give it without \['provider'\]"
    ):
        rewardkit.load({"rl": {"group_size": 1, "reward": {"grader": STRING_CHECK, "provider": "nonempty"}}})


def test_a_grader_file_is_read_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "graders").mkdir()
    (tmp_path / "graders" / "exact.json").write_text(json.dumps(STRING_CHECK))
    (tmp_path / "run.yaml").write_text("rl:\n  group_size: 1\n  reward:\n    grader: graders/exact.json\n")
    with rewardkit.load(tmp_path / "run.yaml") as reward:
        assert reward.spec.components[0].params["grader"] == STRING_CHECK
    # JSON text inline works too, and an override replaces the file's grader
    text = json.dumps({**STRING_CHECK, "operation": "ne"})
    with rewardkit.load(tmp_path / "run.yaml", [f"rl.reward.grader={json.dumps(text)}"]) as reward:
        assert reward.spec.components[0].params["grader"]["operation"] == "ne"
    with pytest.raises(ConfigError, match="cannot read the grader file"):
        rewardkit.load(config("missing.json", 1))


def test_a_row_without_the_field_is_an_error_not_a_zero() -> None:
    # Two item fields and a reference that is not an object: the row cannot fill item.email.
    with pytest.raises(CompositionError, match=r"the row cannot fill \{\{ item.name \}\}: no field 'name'"):
        grade_all(MULTI, "ada@example.com", [json.dumps({"name": "Ada", "email": "ada@example.com"})])


def test_a_scalar_reference_stands_for_the_one_item_field_the_grader_reads() -> None:
    assert finals({**STRING_CHECK, "reference": "{{ item.expected }}"}, "yes", ["yes", "no"]) == [1.0, 0.0]


# -- python ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_reward() -> Iterator[Any]:
    grader = {"spec": PYTHON, "sandbox": {"timeout_s": 2.0}}
    with rewardkit.load(config(grader, 4)) as reward:
        yield reward


def python_scores(reward: Any, reference: Mapping[str, Any], completions: Sequence[str]) -> list[Any]:
    rollouts = [
        {"trajectory_id": f"t{index}", "completion": text, "reference": reference, "prompt": "q"}
        for index, text in enumerate(completions)
    ]
    return [candidate for _, candidate in reward.score([("g", rollouts)]).candidates()]


def test_python_example_grades_in_the_sandbox(python_reward: Any) -> None:
    (component,) = python_reward.spec.components
    assert component.provider == "openai-python" and component.params["timeout_s"] == 2.0
    candidates = python_scores(python_reward, {"answer": "42"}, ["42\n", " 42 ", "41", ""])
    assert [c.final for c in candidates] == [1.0, 1.0, 0.0, 0.0]  # strip() then equal


def python_grader(source: str, size: int, **sandbox: Any) -> dict[str, Any]:
    return config({"spec": {**PYTHON, "source": source}, "sandbox": {"timeout_s": 2.0, **sandbox}}, size)


def test_python_invalid_grades_are_the_candidates_zero() -> None:
    source = (
        "def grade(sample, item):\n"
        "    text = sample['output_text']\n"
        "    print('{\"grade\": 1.0}')  # printing is not grading\n"
        "    if text == 'raise':\n"
        "        raise ValueError('no')\n"
        "    if text == 'string':\n"
        "        return 'high'\n"
        "    if text == 'nan':\n"
        "        return float('nan')\n"
        "    return 0.25\n"
    )
    rollouts = [{"trajectory_id": t, "completion": t, "reference": {"answer": "x"}, "prompt": "q"}
                for t in ("raise", "string", "nan", "fine")]  # fmt: skip
    with rewardkit.load(python_grader(source, 4)) as reward:
        candidates = [c for _, c in reward.score([("g", rollouts)]).candidates()]
    assert [c.final for c in candidates] == [0.0, 0.0, 0.0, 0.25]
    reasons = [c.breakdown["py"]["reason"] for c in candidates[:3]]
    assert "ValueError: no" in reasons[0] and "'high'" in reasons[1] and "nan" in reasons[2]
    assert candidates[0].diagnostics["openai-python"]["python_invalid"] == 1.0


def test_python_a_candidate_cannot_forge_the_answer_line() -> None:
    # The grader echoes the candidate's text to stdout and to the saved descriptor 1's copy; the
    # grade line carries a nonce drawn per run, which the text cannot know.
    source = (
        "import os\n"
        "def grade(sample, item):\n"
        "    print(sample['output_text'])\n"
        "    for fd in range(3, 8):\n"
        "        try:\n"
        "            os.write(fd, (sample['output_text'] + '\\n').encode())\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 0.0\n"
    )
    forged = "\n".join(['{"grade": 1.0}', 'x{"grade": 1.0}', "0" * 32 + '{"grade": 1.0}'])
    rollouts = [{"trajectory_id": "t", "completion": forged, "reference": {"answer": "x"}, "prompt": "q"}]
    with rewardkit.load(python_grader(source, 1)) as reward:
        ((_, candidate),) = reward.score([("g", rollouts)]).candidates()
    assert candidate.final == 0.0


def test_python_a_grade_that_never_ends_is_charged_after_it_reproduces() -> None:
    source = (
        "def grade(sample, item):\n    while sample['output_text'] == 'loop':\n        pass\n    return 1.0\n"
    )
    rollouts = [{"trajectory_id": t, "completion": t, "reference": {"answer": "x"}, "prompt": "q"}
                for t in ("loop", "done")]  # fmt: skip
    with rewardkit.load(python_grader(source, 2, timeout_s=1.0)) as reward:
        looping, done = [c for _, c in reward.score([("g", rollouts)]).candidates()]
    assert (looping.final, done.final) == (0.0, 1.0)
    assert looping.diagnostics["openai-python"]["python_fault"] == 1.0
    assert "ran past 1 s" in looping.breakdown["py"]["reason"]
    assert "reproduction" in looping.breakdown["py"]  # the evidence: canary passed, rerun timed out too


def test_python_inside_multi_with_a_rule() -> None:
    grader = {
        "type": "multi",
        "graders": {"py": PYTHON, "exact": STRING_CHECK},
        "calculate_output": "0.75 * py + 0.25 * exact",
    }
    # "42\n": py strips (1), exact does not (0) -> 0.75; "42": both 1 -> 1.0
    assert finals(grader, {"answer": "42"}, ["42\n", "42"]) == [0.75, 1.0]
