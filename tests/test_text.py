"""``rewardkit.contracts.text``: the one normaliser for candidate text, checked against its documented
policy."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardkit.contracts import text_tables
from rewardkit.contracts.text import fold_lookalikes, has_invisible, is_blank, normalise, skeleton, visible

INVISIBLE = {chr(point) for start, end in text_tables.INVISIBLE for point in range(start, end + 1)}


def test_invisible_characters_are_removed_and_blank_ones_read_as_spaces():
    for char in "\u200b\u200c\u200d\u2060\ufeff\u00ad\u202e\u2066\ufe0f\U000e0041\ufff9\u0600\u180e\x00\x7f":
        assert visible(f"a{char}b") == "ab", hex(ord(char))
        assert has_invisible(f"a{char}b")
    for char in "\u2800\u3164\u115f\u1160\uffa0":
        assert visible(f"a{char}b") == "a b", hex(ord(char))
    for char in "\t\n\r\x0b\x0c\x85\u00a0\u3000":  # whitespace stays whitespace
        assert visible(f"a{char}b").split() == ["a", "b"]
    assert not has_invisible("plain text, 中文, عربى, 👍🏽")


def test_normalise_is_nfkc_of_visible_text():
    assert normalise("\uff21\U0001d401\ufb01 \u2460") == "ABfi 1"
    assert normalise("e\u200b\u0301") == "\u00e9"  # composed once the invisible character is gone
    assert normalise("ascii stays") == "ascii stays"


def test_skeleton_folds_case_and_confusables_but_keeps_i_and_l_apart():
    assert skeleton("\u0410nswer t\u043e gr\u0430de") == skeleton("ANSWER TO GRADE") == "answer to grade"
    assert skeleton("R\u0443bric") != skeleton("Rubric")  # Cyrillic u is not Latin u in TR39
    assert skeleton("Rubr\u0456c") == skeleton("RUBRIC") == "rubric"
    assert skeleton("\u0412\u0410D") == skeleton("\u0432ad") == "bad"  # upper and lower Cyrillic ve
    assert skeleton("fail") != skeleton("fall") and skeleton("FAIL") == "fail"
    assert skeleton("\u1438think\u1433") == "<think>"  # Canadian syllabics
    assert skeleton("Ans\ufe0fwer") == "answer"


def test_blank_means_no_letter_or_digit():
    for text in ("", " ", "...", "\u2800\u3164", "\u200b\ufe0f", "- * ~", "\u221e", "\U000e0041"):
        assert is_blank(text), repr(text)
    for text in ("0", "x", "\u0663", "\u4e03", "\u0628", "\u2460"):
        assert not is_blank(text), repr(text)


def test_fold_lookalikes_keeps_offsets_and_case():
    assert fold_lookalikes("\u1438\u0430nsw\u0435r\u1433 \u0412") == "<answer> B"
    assert fold_lookalikes("\u2212", punctuation=False) == "\u2212" and fold_lookalikes("\u2212") == "-"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_the_fast_paths_agree_with_the_definitions(text):
    shown = "".join(
        "" if char in INVISIBLE else " " if ord(char) in text_tables.BLANK else char for char in text
    )
    assert visible(text) == shown
    assert normalise(text) == unicodedata.normalize("NFKC", shown)
    assert len(fold_lookalikes(text)) == len(normalise(text))
    assert is_blank(text) == (not any(char.isalnum() for char in normalise(text)))


def test_the_tables_record_where_they_come_from():
    assert text_tables.CONFUSABLES_VERSION == "13.0.0"
    assert len(text_tables.CONFUSABLES_SHA256) == 64
    assert text_tables.SKELETON.count("\n") > 2000
