from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

# In the test extra (pip install -e .[test]); a missing install must fail the suite, not skip it.
import datasets
import pytest

from rewardkit.config import DataConfig, load_config
from rewardkit.contracts.errors import DataError, RewardkitError
from rewardkit.job.data import (
    PreparedRow,
    check_group_sizes,
    iter_rollout_groups,
    load_prompt_rows,
    read_rollouts,
)

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "testdata" / "config"
SHARED_DATA = Path(os.environ.get("REWARDKIT_SHARED_DATA", REPO / "testdata" / "shared"))
BOTH = ("prompt", "reference")


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def data_error(function: Any, *args: Any, **kwargs: Any) -> DataError:
    with pytest.raises(DataError) as caught:
        function(*args, **kwargs)
    assert isinstance(caught.value, RewardkitError)
    return caught.value


# ================================================================ JSONL prompt rows


def test_jsonl_maps_columns_and_keeps_only_mapped_fields(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {
                "messages": [{"role": "user", "content": "Follow the constraints."}],
                "reward_input": {"constraint_ids": ["rule"], "arguments": {"count": 3}},
                "source_id": "row-1",
            },
            {"messages": "plain prompt", "reward_input": 7, "source_id": "row-2"},
        ],
    )
    data = DataConfig(path=str(path), prompt_column="messages", response_column="reward_input")
    rows = load_prompt_rows(data, BOTH)
    assert rows == [
        PreparedRow(
            index=0,
            prompt=[{"role": "user", "content": "Follow the constraints."}],
            reference={"constraint_ids": ["rule"], "arguments": {"count": 3}},
            representations={},
        ),
        PreparedRow(index=1, prompt="plain prompt", reference=7, representations={}),
    ]


def test_jsonl_skips_blank_lines_and_counts_lines_for_errors(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "a"}, "", "   ", {"question": "b"}])
    error = data_error(load_prompt_rows, DataConfig(path=str(path)))
    assert (error.row, error.column, error.path) == (4, "prompt", str(path))
    assert str(error).startswith(f"{path}, line 4, column 'prompt': missing prompt column 'prompt'")
    assert "(columns: question)" in str(error) and "Set rl.data.prompt_column" in str(error)


def test_reference_may_be_null_unless_needed(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "a", "ans": 1}, {"prompt": "b", "ans": None}])
    data = DataConfig(path=str(path), response_column="ans")
    assert [row.reference for row in load_prompt_rows(data)] == [1, None]
    error = data_error(load_prompt_rows, data, BOTH)
    assert (error.row, error.column) == (2, "ans")
    assert "the reference is null" in str(error)


@pytest.mark.parametrize("needs", [("prompt",), BOTH])
def test_a_mapped_column_missing_from_a_row_is_an_error_listing_its_columns(
    tmp_path: Path, needs: tuple[str, ...]
) -> None:
    # A misspelt mapping used to be read as "no reference" when the provider did not need one.
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "a", "answer": 1}])
    error = data_error(load_prompt_rows, DataConfig(path=str(path), reference_column="answr"), needs)
    assert (error.row, error.column) == (1, "answr")
    assert "missing reference column 'answr', mapped by rl.data.reference_column" in str(error)
    assert "columns: answer, prompt" in str(error)


def test_rows_with_canonical_fields_need_no_mapping(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "a", "reference": "1"}, {"prompt": "b"}])
    rows = load_prompt_rows(DataConfig(path=str(path)))
    assert [(row.prompt, row.reference) for row in rows] == [("a", "1"), ("b", None)]
    error = data_error(load_prompt_rows, DataConfig(path=str(path)), BOTH)
    assert (error.row, error.column) == (2, "reference")


@pytest.mark.parametrize(
    ("row", "column", "expected"),
    [
        ({"prompt": None, "ans": 1}, "prompt", "the prompt is null"),
        ({"prompt": "p", "ans": None}, "ans", "the reference is null"),
        ('{"prompt": "p", "ans": NaN}', None, "NaN is not a JSON value"),
        ('{"prompt": "p", "ans": {"x": Infinity}}', None, "Infinity is not a JSON value"),
        ('{"prompt": "p", "ans": ', None, "not valid JSON"),
        ("[1, 2]", None, "expected a JSON object, got list"),
        ('"just a string"', None, "expected a JSON object, got str"),
    ],
)
def test_bad_rows_name_line_and_column(tmp_path: Path, row: Any, column: str | None, expected: str) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "ok", "ans": 0}, row])
    error = data_error(load_prompt_rows, DataConfig(path=str(path), response_column="ans"), BOTH)
    assert error.row == 2
    assert error.column == column
    assert expected in str(error)
    assert f"{path}, line 2" in str(error)


def test_needing_a_reference_without_a_reference_column(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "a"}])
    error = data_error(load_prompt_rows, DataConfig(path=str(path)), BOTH)
    # The message names the column that was looked for, the key that maps another, and the columns.
    assert "missing reference column 'reference': rl.data.reference_column is not set" in str(error)
    assert "(columns: prompt)" in str(error)


def test_unknown_need_is_refused(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "a"}])
    error = data_error(load_prompt_rows, DataConfig(path=str(path)), ("prompt", "image"))
    assert "unknown needs ['image']" in str(error)


def test_missing_empty_and_unset_sources(tmp_path: Path) -> None:
    assert "file not found" in str(data_error(load_prompt_rows, DataConfig(path=str(tmp_path / "no.jsonl"))))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    assert "no rows" in str(data_error(load_prompt_rows, DataConfig(path=str(empty))))
    assert "rl.data.path is not set" in str(data_error(load_prompt_rows, DataConfig()))


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"prompt": "a"}\n{"prompt": "\xff"}\n')
    error = data_error(load_prompt_rows, DataConfig(path=str(path)))
    assert "not UTF-8" in str(error)


def test_real_gsm8k_file_through_a_config(tmp_path: Path) -> None:
    gsm8k = SHARED_DATA / "grade-school-math" / "grade_school_math" / "data" / "test.jsonl"
    assert gsm8k.is_file(), f"shared data missing at {gsm8k}; set REWARDKIT_SHARED_DATA"
    config_path = tmp_path / "run.yaml"
    config_path.write_text(
        f"rl.data: {{path: {gsm8k}, prompt_column: question, response_column: answer}}\n"
        "rl.reward.provider: gsm8k\n",
        encoding="utf-8",
    )
    rows = load_prompt_rows(load_config(config_path).rl.data, BOTH)
    assert len(rows) == 1319
    assert rows[0].prompt.startswith("Janet")
    assert "#### 18" in rows[0].reference
    assert all(row.representations == {} for row in rows)
    assert [row.index for row in rows] == list(range(1319))


# ================================================================ datasets (HF) source

HF_ROWS = [
    {"question": "1 + 1", "answer": "2", "source_id": "a", "difficulty": 1},
    {"question": "2 + 3", "answer": "5", "source_id": "b", "difficulty": 2},
    {"question": "7 * 6", "answer": "42", "source_id": "c", "difficulty": 3},
]


@pytest.fixture
def hf_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(HF_ROWS).save_to_disk(str(folder))
    return folder


@pytest.fixture
def items_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A customer module with row maps, importable as ``rk_items``."""
    package = tmp_path / "customer"
    package.mkdir()
    (package / "rk_items.py").write_text(
        textwrap.dedent(
            """
            def rewrite(row):
                return {**row, "question": "Q: " + row["question"], "source_id": row["source_id"].upper()}

            def adds(row):
                return {**row, "new_column": 1}

            def drops(row):
                return {key: value for key, value in row.items() if key != "difficulty"}

            def renames(row):
                row = dict(row)
                row["prompt"] = row.pop("question")
                return row

            def not_a_row(row):
                return [row]

            def explodes(row):
                if row["source_id"] == "b":
                    raise KeyError("customer bug")
                return row

            NOT_CALLABLE = 3
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(package))
    return "rk_items"


def hf(path: Path, **extra: Any) -> DataConfig:
    return DataConfig(
        path=str(path), source="hf", prompt_column="question", response_column="answer", **extra
    )


def test_hf_folder_keeps_unmapped_columns_in_representations(hf_folder: Path) -> None:
    rows = load_prompt_rows(hf(hf_folder), BOTH)
    assert [row.prompt for row in rows] == ["1 + 1", "2 + 3", "7 * 6"]
    assert [row.reference for row in rows] == ["2", "5", "42"]
    assert [dict(row.representations) for row in rows] == [
        {"source_id": "a", "difficulty": 1},
        {"source_id": "b", "difficulty": 2},
        {"source_id": "c", "difficulty": 3},
    ]
    assert [row.index for row in rows] == [0, 1, 2]


def test_hf_items_fn_rewrites_values_before_mapping(hf_folder: Path, items_module: str) -> None:
    rows = load_prompt_rows(hf(hf_folder, items_fn=f"{items_module}:rewrite"), BOTH)
    assert [row.prompt for row in rows] == ["Q: 1 + 1", "Q: 2 + 3", "Q: 7 * 6"]
    assert [row.representations["source_id"] for row in rows] == ["A", "B", "C"]
    assert [row.reference for row in rows] == ["2", "5", "42"]


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        ("adds", "added ['new_column'] and removed []"),
        ("drops", "added [] and removed ['difficulty']"),
        ("renames", "added ['prompt'] and removed ['question']"),
        ("not_a_row", "returned list, not a row mapping"),
    ],
)
def test_hf_items_fn_must_keep_row_keys(
    hf_folder: Path, items_module: str, function: str, expected: str
) -> None:
    error = data_error(load_prompt_rows, hf(hf_folder, items_fn=f"{items_module}:{function}"), BOTH)
    assert (error.row, error.column, error.row_label) == (0, None, "row")
    assert f"{hf_folder}, row 0" in str(error)
    assert expected in str(error)


def test_hf_items_fn_failure_names_the_row(hf_folder: Path, items_module: str) -> None:
    error = data_error(load_prompt_rows, hf(hf_folder, items_fn=f"{items_module}:explodes"), BOTH)
    assert error.row == 1
    assert "customer bug" in str(error)
    assert isinstance(error.__cause__, KeyError)


@pytest.mark.parametrize(
    ("dotted", "expected"),
    [
        ("rk_items:missing", "cannot be imported"),
        ("no_such_module_xyz:fn", "cannot be imported"),
        ("rk_items:NOT_CALLABLE", "is not callable"),
    ],
)
def test_hf_items_fn_that_cannot_be_used(
    hf_folder: Path, items_module: str, dotted: str, expected: str
) -> None:
    error = data_error(load_prompt_rows, hf(hf_folder, items_fn=dotted), BOTH)
    assert expected in str(error) and dotted in str(error)


def test_hf_missing_column_names_it(hf_folder: Path) -> None:
    data = DataConfig(path=str(hf_folder), source="hf", prompt_column="prompt")
    error = data_error(load_prompt_rows, data)
    assert error.column == "prompt"
    assert "missing prompt column 'prompt'" in str(error) and "question" in str(error)


def test_hf_mapped_column_missing_is_an_error_even_when_not_needed(hf_folder: Path) -> None:
    data = DataConfig(path=str(hf_folder), source="hf", prompt_column="question", reference_column="answr")
    error = data_error(load_prompt_rows, data)
    assert error.column == "answr"
    assert "mapped by rl.data.reference_column" in str(error) and "answer" in str(error)


def test_hf_null_reference_names_the_row(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(
        [{"question": "q1", "answer": "1"}, {"question": "q2", "answer": None}]
    ).save_to_disk(str(folder))
    error = data_error(load_prompt_rows, hf(folder), BOTH)
    assert (error.row, error.column) == (1, "answer")
    assert "the reference is null" in str(error)


def test_hf_non_json_reference_names_row_and_column(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    rows = [{"question": "q1", "answer": {"tol": 0.5}}, {"question": "q2", "answer": {"tol": float("nan")}}]
    datasets.Dataset.from_list(rows).save_to_disk(str(folder))
    error = data_error(load_prompt_rows, hf(folder), BOTH)
    assert (error.row, error.column) == (1, "answer")
    assert "not JSON-compatible at $.tol" in str(error)


def test_hf_splits(tmp_path: Path) -> None:
    folder = tmp_path / "dict"
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(HF_ROWS), "test": datasets.Dataset.from_list(HF_ROWS[:1])}
    ).save_to_disk(str(folder))
    assert len(load_prompt_rows(hf(folder, split="test"), BOTH)) == 1
    assert "choose one with rl.data.split" in str(data_error(load_prompt_rows, hf(folder), BOTH))
    error = data_error(load_prompt_rows, hf(folder, split="validation"), BOTH)
    assert "no split 'validation'" in str(error) and "['test', 'train']" in str(error)


def test_hf_split_on_a_single_dataset_folder(hf_folder: Path) -> None:
    error = data_error(load_prompt_rows, hf(hf_folder, split="train"), BOTH)
    assert "holds one dataset, not splits" in str(error)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_hf_local_data_files(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"rows{suffix}"
    dataset = datasets.Dataset.from_list(HF_ROWS)
    {".jsonl": dataset.to_json, ".parquet": dataset.to_parquet, ".csv": dataset.to_csv}[suffix](str(path))
    rows = load_prompt_rows(hf(path), BOTH)
    assert [row.prompt for row in rows] == ["1 + 1", "2 + 3", "7 * 6"]
    assert rows[2].representations["source_id"] == "c"


def test_hf_bad_paths(tmp_path: Path) -> None:
    odd = tmp_path / "rows.xlsx"
    odd.write_text("x", encoding="utf-8")
    assert "cannot read '.xlsx' with datasets" in str(data_error(load_prompt_rows, hf(odd), BOTH))
    assert "not found" in str(data_error(load_prompt_rows, hf(tmp_path / "absent"), BOTH))
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "save_to_disk" in str(data_error(load_prompt_rows, hf(plain), BOTH))


def test_hf_without_datasets_says_how_to_install(hf_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` raise ImportError
    error = data_error(load_prompt_rows, hf(hf_folder), BOTH)
    assert "pip install datasets" in str(error)


# ================================================================ rollouts


def test_rollouts_fixture_groups_and_ids() -> None:
    path = CONFIGS / "rollouts.jsonl"
    groups = read_rollouts(path, prompt_column="question", response_column="answer", needs=BOTH)
    assert [group.group_id for group in groups] == ["q1", "q2"]
    assert [group.first_row for group in groups] == [1, 3]
    q1, q2 = groups
    assert [rollout["row"] for rollout in q1.rollouts] == [1, 2, 4, 6]  # grouped by id, file order kept
    assert [rollout["trajectory_id"] for rollout in q1.rollouts] == ["q1/0", "q1/1", "q1/2", "q1/3"]
    assert [rollout["trajectory_id"] for rollout in q2.rollouts] == ["q2-first", "q2/1", "q2/2", "q2/3"]
    assert q1.rollouts[0] == {
        "group_id": "q1",
        "trajectory_id": "q1/0",
        "completion": "2 + 3 = 5. A: 5",
        "prompt": "What is 2 + 3?",
        "reference": "5",
        "completion_token_count": 9,
        "finish_reason": "stop",
        "row": 1,
    }
    assert q1.rollouts[2]["finish_reason"] == "length"
    assert "extra_field" not in q2.rollouts[3] and "completion_token_count" not in q2.rollouts[3]
    check_group_sizes(groups, 4, path=str(path))
    check_group_sizes(groups, None)


def test_rollouts_unneeded_columns_are_carried_when_present(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "r.jsonl",
        [{"group_id": "g", "completion": "a", "prompt": "p1"}, {"group_id": "g", "completion": "b"}],
    )
    (group,) = read_rollouts(path)
    assert group.rollouts[0]["prompt"] == "p1"
    assert "prompt" not in group.rollouts[1]
    assert "reference" not in group.rollouts[0]


def test_integer_ids_are_read_as_strings(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [{"group_id": 7, "trajectory_id": 0, "completion": "a"}])
    (group,) = read_rollouts(path)
    assert group.group_id == "7" and group.rollouts[0]["trajectory_id"] == "0"


def test_wrong_group_size_names_group_and_first_row(tmp_path: Path) -> None:
    path = CONFIGS / "rollouts.jsonl"
    groups = read_rollouts(path, prompt_column="question", response_column="answer", needs=BOTH)
    error = data_error(check_group_sizes, groups, 8, path=str(path))
    assert (error.row, error.column) == (1, "group_id")
    assert "group 'q1' has 4 rollout(s) but rl.group_size is 8 (its rows: 1, 2, 4, 6)" in str(error)
    assert str(path) in str(error)
    assert "positive integer" in str(data_error(check_group_sizes, groups, 0))


def good(**extra: Any) -> dict[str, Any]:
    return {"group_id": "g", "question": "q", "answer": {"n": 1}, "completion": "c", **extra}


@pytest.mark.parametrize(
    ("bad", "column", "expected"),
    [
        ({k: v for k, v in good().items() if k != "group_id"}, "group_id", "missing group_id"),
        (good(group_id=["g"]), "group_id", "group_id must be a string"),
        (good(group_id=True), "group_id", "group_id must be a string"),
        (good(group_id="  "), "group_id", "group_id is empty"),
        ({k: v for k, v in good().items() if k != "completion"}, "completion", "completion is missing"),
        (good(completion=3), "completion", "completion is not a string (int)"),
        (
            {k: v for k, v in good().items() if k != "question"},
            "question",
            "missing prompt column 'question'",
        ),
        ({k: v for k, v in good().items() if k != "answer"}, "answer", "missing reference column 'answer'"),
        (good(answer=None), "answer", "the reference is null"),
        (good(trajectory_id={"id": 1}), "trajectory_id", "trajectory_id must be a string"),
        (good(completion_token_count=-1), "completion_token_count", "non-negative integer"),
        (good(completion_token_count=2.5), "completion_token_count", "non-negative integer"),
        (good(finish_reason=1), "finish_reason", "finish_reason must be a string"),
        (
            '{"group_id": "g", "question": "q", "answer": NaN, "completion": "c"}',
            None,
            "NaN is not a JSON value",
        ),
        ('{"group_id": "g", "completion": "c"', None, "not valid JSON"),
        ("42", None, "expected a JSON object, got int"),
    ],
)
def test_bad_rollout_rows_name_line_and_column(
    tmp_path: Path, bad: Any, column: str | None, expected: str
) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [good(), bad])
    error = data_error(read_rollouts, path, prompt_column="question", response_column="answer", needs=BOTH)
    assert error.row == 2
    assert error.column == column
    assert expected in str(error)
    assert f"{path}, line 2" in str(error)


def test_duplicate_trajectory_id_names_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "r.jsonl",
        [good(trajectory_id="t"), good(trajectory_id="u"), good(trajectory_id="t")],
    )
    error = data_error(read_rollouts, path, prompt_column="question", response_column="answer", needs=BOTH)
    assert (error.row, error.column) == (3, "trajectory_id")
    assert "already used on line 1" in str(error)


def test_generated_id_colliding_with_a_given_one(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [good(trajectory_id="g/1"), good()])
    error = data_error(read_rollouts, path, prompt_column="question", response_column="answer", needs=BOTH)
    assert error.row == 2 and "'g/1'" in str(error)


def test_a_group_shares_one_reference_type_strictly(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [good(answer={"n": 1}), good(answer={"n": 1.0})])
    error = data_error(read_rollouts, path, prompt_column="question", response_column="answer", needs=BOTH)
    assert (error.row, error.column) == (2, "answer")
    assert "differs from the one on line 1" in str(error)
    # The same difference is fine when the provider does not need the reference.
    (group,) = read_rollouts(path, prompt_column="question", response_column="answer", needs=("prompt",))
    assert [rollout["reference"] for rollout in group.rollouts] == [{"n": 1}, {"n": 1.0}]


def test_rollouts_need_a_reference_column_when_the_provider_does(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [good()])
    error = data_error(read_rollouts, path, prompt_column="question", needs=BOTH)
    assert (error.row, error.column) == (1, "reference")
    assert "rl.data.reference_column is not set" in str(error)
    assert "answer, completion, group_id, question" in str(error)


def test_rollouts_with_prompt_and_reference_fields_need_no_mapping(tmp_path: Path) -> None:
    rows = [{"group_id": "g", "prompt": "q", "reference": "#### 3", "completion": c} for c in "ab"]
    (group,) = read_rollouts(write_jsonl(tmp_path / "r.jsonl", rows), needs=BOTH)
    assert [(r["prompt"], r["reference"]) for r in group.rollouts] == [("q", "#### 3")] * 2


def test_a_misspelt_prompt_column_on_rollouts_is_an_error(tmp_path: Path) -> None:
    # The prompt is not needed here: before, the misspelt column was silently read as no prompt.
    path = write_jsonl(tmp_path / "r.jsonl", [good()])
    error = data_error(read_rollouts, path, prompt_column="questoin", response_column="answer", needs=())
    assert (error.row, error.column) == (1, "questoin")
    assert "missing prompt column 'questoin', mapped by rl.data.prompt_column" in str(error)
    assert "answer, completion, group_id, question" in str(error)
    streamed = iter_rollout_groups(path, prompt_column="questoin", response_column="answer")
    with pytest.raises(DataError, match=r"mapped by rl\.data\.prompt_column"):
        list(streamed)


def test_empty_rollouts_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("", encoding="utf-8")
    assert "no rollouts" in str(data_error(read_rollouts, path))
