"""The value codec between the candidate's process and the test process, and the name rules.

The decoder is what stands between candidate-controlled bytes and the tests: it must build only
exact built-in values, refuse anything malformed, and never let a subclass's overrides through.
"""

from __future__ import annotations

import json
import math
import os

import pytest

from rewardkit_rl.code.names import names_for_tests
from rewardkit_rl.code.reference import parse_reference
from rewardkit_rl.code.sandbox import load_inside_modules

INSIDE = load_inside_modules()
wire = INSIDE["rk_wire"]
judge = INSIDE["rk_judge"]


def roundtrip(value: object) -> object:
    return wire.decode(json.loads(json.dumps(wire.Encoder().encode(value))))


PLAIN = [
    None,
    True,
    False,
    0,
    -(10**40),
    2**200,
    1.5,
    -0.0,
    math.inf,
    1e-310,
    3 + 4j,
    "héllo\udc80",
    b"\x00\xff",
    [1, [2, (3, 4)]],
    (1,),
    {"a": 1, (1, 2): [3], 4: {5}},
    {1, 2, 3},
    frozenset({"x", (1, 2)}),
]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_plain_values_cross_exactly(value):
    back = roundtrip(value)
    assert back == value and type(back) is type(value)
    assert repr(back) == repr(value)


def test_nan_crosses():
    assert math.isnan(roundtrip(math.nan))


def test_subclasses_cross_as_their_base_value_read_through_the_base_type():
    class Lying(list):
        def __eq__(self, other):
            return True

        def __iter__(self):
            return iter([9, 9])

    class Big(int):
        def __eq__(self, other):
            return True

    back = roundtrip(Lying([1, 2]))
    assert back == [1, 2] and type(back) is list
    number = roundtrip(Big(5))
    assert number == 5 and type(number) is int and number != 6


def test_deep_and_self_referential_values_are_refused():
    nested: list = []
    nested.append(nested)
    with pytest.raises(wire.Unsupported):
        wire.Encoder().encode(nested)
    deep: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.Unsupported):
        wire.Encoder().encode(deep)


@pytest.mark.parametrize(
    "data",
    [
        {"a": 1},  # a bare JSON object is never a value
        [],
        ["?", 1],
        ["d", 1],  # odd dict
        ["d", ["l"], 1],  # unhashable key
        ["s", ["l", 1]],  # unhashable member
        ["i", "zz"],
        ["c", 1, "x"],
        ["p", 1, "T", True],  # a handle where none may appear
        ["m", "os"],  # a module where none may appear
    ],
    ids=repr,
)
def test_malformed_wire_data_is_refused(data):
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_decoder_refuses_deep_nesting():
    data: list = ["l"]
    for _ in range(wire.MAX_DEPTH + 5):
        data = ["l", data]
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_frames_refuse_oversize_and_non_json():
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, (10).to_bytes(4, "big") + b"not json!!")
        with pytest.raises(wire.WireError):
            wire.read_frame(read_fd)
        os.write(write_fd, (wire.MAX_FRAME_BYTES + 1).to_bytes(4, "big"))
        with pytest.raises(wire.WireError):
            wire.read_frame(read_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_a_proxy_is_equal_only_to_itself_and_truthy():
    proxy = judge.CandidateObject(None, wire.Handle(1, "Liar", False))
    assert proxy == proxy and proxy != 1
    assert (proxy == [1]) is False and ([1] == proxy) is False  # noqa: SIM300 (the reflected side matters)
    assert bool(proxy) is True
    assert hash(proxy) == object.__hash__(proxy)


def test_only_builtin_exception_types_are_rebuilt():
    assert type(judge._exception_from(["ValueError", "bad"])) is ValueError
    assert type(judge._exception_from(["SystemExit", "0"])) is judge.CandidateError
    assert type(judge._exception_from(["KeyboardInterrupt", ""])) is judge.CandidateError
    assert type(judge._exception_from(["MyError", "x"])) is judge.CandidateError
    assert type(judge._exception_from("junk")) is judge.CandidateGone


def test_names_the_candidate_may_answer_for():
    names = names_for_tests(("assert set(similar(a, b)) == set((4, 5))",), "", "", None)
    assert names.expose == ("a", "b", "similar") and names.stdlib_imports == ()
    # MBPP 126: the task's function is named like a builtin, and is the only thing called
    assert names_for_tests(("assert sum(10, 15) == 6",), "", "", None).expose == ("sum",)
    # a module used as a module is imported by the tests, never taken from the candidate
    names = names_for_tests(("assert math.isclose(area(2), 12.56, rel_tol=0.01)",), "", "", None)
    assert names.expose == ("area",) and names.stdlib_imports == ("math",)
    # HumanEval: the prompt's helpers are the task's; only the entry point is the candidate's
    names = names_for_tests(
        ("def check(candidate):\n    assert poly(candidate(1)) == 0\ncheck(f)\n",),
        "def poly(x): ...",
        "",
        "f",
    )
    assert names.expose == ("f",)


def test_identity_comparisons_make_a_task_unsupported():
    plan = parse_reference({"test_list": ["assert f([1]) is not None", "assert f(x) is x"]})
    assert plan.unsupported and "identity" in plan.unsupported
    assert parse_reference({"test_list": ["assert f(1) is True", "assert g() is None"]}).unsupported is None
