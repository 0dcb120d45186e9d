"""Catalog resolution, preflight and identity hashes."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest
from helpers import fake_distribution

from rewardkit import (
    IdentityMismatchError,
    PreflightError,
    RegistrationError,
    RewardProviderSpec,
    UnknownNameError,
    resolve_catalog,
)
from rewardkit.contracts.frozen import NotJSONError
from rewardkit.contracts.identity import canonical_json, provider_identity
from rewardkit.job.provenance import ProviderRecord, RevisionNotBumpedWarning, check_resume, record_of

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def test_dotted_path_catalog_adds_providers():
    catalog = resolve_catalog("catalog_fixtures:team_catalog")
    assert "team-length" in catalog.names() and "exact-match" in catalog.names()
    assert catalog.ref == "catalog_fixtures:team_catalog"
    bound = catalog.bind("team-length", {"scale": 2.0})
    result = bound.score_group("g", [{"trajectory_id": "a", "completion": "abc"}])
    assert result.items[0].result.terms == {"length": 6.0}


def test_catalog_cannot_override_a_built_in():
    with pytest.raises(RegistrationError, match="override the built-in provider 'nonempty'"):
        resolve_catalog("catalog_fixtures:overriding_catalog")


@pytest.mark.parametrize(
    "ref,needle",
    [
        ("catalog_fixtures:exploding_catalog", "raised RuntimeError: catalog needs a database"),
        ("catalog_fixtures:not_specs_catalog", "not a RewardProviderSpec"),
        ("no_such_module:catalog", "cannot import catalog 'no_such_module:catalog'"),
        ("catalog_fixtures:missing", "cannot import catalog"),
    ],
)
def test_bad_catalogs_fail_clearly(ref: str, needle: str):
    with pytest.raises(PreflightError, match=needle):
        resolve_catalog(ref)


def test_unknown_catalog_name_lists_known_ones():
    with pytest.raises(UnknownNameError, match="unknown catalog 'team'"):
        resolve_catalog("team")


def test_catalog_registered_by_a_plugin_is_selectable_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None
):
    source = """
from rewardkit import hookimpl
import catalog_fixtures

@hookimpl
def register_catalogs(register):
    register("team", catalog_fixtures.team_catalog)
"""
    fake_distribution(tmp_path, "acme-catalogs", {"catalogs": "fake_catalogs"}, {"fake_catalogs": source})
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        catalog = resolve_catalog("team")
        assert catalog.entry("team-length").owner.distribution == "acme-catalogs"
        assert "team-length" not in resolve_catalog().names(), "a catalog adds names only when selected"
    finally:
        sys.modules.pop("fake_catalogs", None)


def test_preflight_rejects_unknown_params():
    with pytest.raises(PreflightError, match=r"provider 'exact-match' .* rejected params \['case'\]"):
        resolve_catalog().bind("exact-match", {"case": True})


def test_preflight_rejects_a_factory_that_returns_no_provider():
    with pytest.raises(PreflightError, match="has no evaluate"):
        resolve_catalog("catalog_fixtures:broken_factory_catalog").bind("no-evaluate")


def test_preflight_reports_a_factory_that_raises():
    with pytest.raises(PreflightError, match="failed to construct: OSError: tried to load a model"):
        resolve_catalog("catalog_fixtures:broken_factory_catalog").bind("explodes")


def test_preflight_rejects_a_missing_required_input():
    with pytest.raises(
        PreflightError, match=r"needs \['reference'\] but the data supplies only \['prompt'\]"
    ):
        resolve_catalog().bind("exact-match", {}, available_inputs=("prompt",))


def test_preflight_rejects_non_json_params():
    with pytest.raises(PreflightError, match="params are not JSON"):
        resolve_catalog().bind("constant", {"value": float("nan")})


# -- identity ----------------------------------------------------------------------------------


def test_canonical_json_is_sorted_compact_and_type_strict():
    assert canonical_json({"b": 1, "a": [1.0, True, None]}) == '{"a":[1.0,true,null],"b":1}'
    assert len({canonical_json(value) for value in (1, 1.0, True)}) == 3
    with pytest.raises(NotJSONError, match=r"\$.x: non-finite"):
        canonical_json({"x": float("inf")})
    with pytest.raises(NotJSONError, match="set is not a JSON type"):
        canonical_json({1, 2})


def spec(**changes: object) -> RewardProviderSpec:
    fields: dict[str, object] = {
        "name": "p",
        "factory": lambda: None,
        "needs": ("reference",),
        "revision": "1",
        "terms": ("task",),
        "diagnostics": (),
        "semantic_identity": {"judge": "m"},
    }
    fields.update(changes)
    return RewardProviderSpec(**fields)  # type: ignore[arg-type]


def test_identity_is_64_hex_and_covers_every_semantic_field():
    base = provider_identity(spec())
    assert len(base) == 64 and int(base, 16) >= 0
    assert provider_identity(spec()) == base, "deterministic"
    variants = [
        spec(name="q"),
        spec(revision="2"),
        spec(needs=()),
        spec(terms=("other",)),
        spec(diagnostics=("d",)),
        spec(semantic_identity={"judge": "n"}),
        spec(semantic_identity={"judge": "m", "timeout": 1}),
        spec(semantic_identity={"judge": "m", "timeout": 1.0}),
    ]
    hashes = {provider_identity(variant) for variant in variants}
    assert base not in hashes and len(hashes) == len(variants)
    assert provider_identity(spec(), {"policy": "strict"}) != base
    assert provider_identity(spec(description="docs only")) == base, "a description is not semantics"


def test_identity_does_not_depend_on_the_factory_object():
    assert provider_identity(spec(factory=lambda: 1)) == provider_identity(spec(factory=lambda: 2))


def test_invalid_specs_are_refused():
    for changes, needle in [
        ({"name": "Bad Name"}, "invalid provider name"),
        ({"needs": ("answer",)}, "unknown needs"),
        ({"terms": ()}, "at least one term"),
        ({"terms": "task"}, "must be a tuple"),
        ({"revision": " "}, "revision must be"),
        ({"terms": ("a", "a")}, "duplicate entries"),
        ({"factory": "not callable"}, "not callable"),
        ({"diagnostics": ("bad/name",)}, "invalid"),
    ]:
        with pytest.raises(RegistrationError, match=needle):
            spec(**changes)


def test_a_secret_value_never_appears_in_identity_listing_or_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    secret = "sk-PLANTED-5e1f0c2a9b"
    monkeypatch.setenv("TEAM_JUDGE_KEY", secret)
    from rewardkit.cli import main

    catalog = resolve_catalog("catalog_fixtures:team_catalog")
    entry = catalog.entry("team-length")
    outputs = [json.dumps(entry.describe()), repr(entry.spec), canonical_json(entry.spec.semantic_identity)]
    assert main(["providers", "--json", "--catalog", "catalog_fixtures:team_catalog"]) == 0
    assert main(["show", "team-length", "--catalog", "catalog_fixtures:team_catalog"]) == 0
    try:
        catalog.bind("team-length", {"scale": "x" * 3, "bogus": 1})
    except PreflightError as error:
        outputs.append(str(error))
    result = catalog.bind("team-length").score_group("g", [{"trajectory_id": "a", "completion": "x"}])
    outputs.append(repr(result))
    captured = capsys.readouterr()
    outputs += [captured.out, captured.err]
    assert "TEAM_JUDGE_KEY" in outputs[0], "the credential reference is part of the identity"
    for output in outputs:
        assert secret not in output


# -- provenance ----------------------------------------------------------------------------------


def test_resume_refuses_another_identity_showing_both_hashes():
    bound = resolve_catalog().bind("exact-match")
    recorded = record_of(bound, None)
    other = record_of(resolve_catalog().bind("exact-match", {"case_sensitive": True}), None)
    with pytest.raises(IdentityMismatchError) as caught:
        check_resume(recorded, other)
    assert recorded.identity in str(caught.value) and other.identity in str(caught.value)
    check_resume(recorded, record_of(bound, None))


def test_code_change_without_revision_bump_warns_or_fails_in_strict_mode():
    current = record_of(resolve_catalog().bind("exact-match"), None)
    recorded = ProviderRecord(**{**current.to_json(), "code_fingerprint": "0" * 64})
    with pytest.warns(RevisionNotBumpedWarning, match="bump the revision"):
        check_resume(recorded, current, strict=False)
    with pytest.raises(IdentityMismatchError, match="changed since the recorded run"):
        check_resume(recorded, current, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_resume(current, current)


def test_provider_record_round_trips_and_names_missing_fields():
    record = record_of(resolve_catalog().bind("nonempty"), "catalog_fixtures:team_catalog")
    assert ProviderRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    with pytest.raises(ValueError, match="lacks 'identity'"):
        ProviderRecord.from_json({"catalog": None, "provider": "x", "revision": "1", "code_fingerprint": ""})
