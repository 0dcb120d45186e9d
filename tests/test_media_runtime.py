"""In-process media on candidates and runtime objects handed to factories (rank-local decoded media)."""

from __future__ import annotations

from pathlib import Path

import pytest
from media_fixtures import ListDecoder

import rewardkit
from rewardkit import (
    PreflightError,
    RegistrationError,
    RewardContractError,
    RewardProviderSpec,
    resolve_catalog,
)
from rewardkit.contracts import KNOWN_NEEDS, RewardCandidate

HERE = Path(__file__).parent
IN_PROCESS = (*KNOWN_NEEDS, "media")


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


@pytest.fixture
def catalog():
    return resolve_catalog("media_fixtures:catalog")


def test_media_reaches_the_provider_as_the_same_object(catalog):
    decoder = ListDecoder(factor=2.0)
    bound = catalog.bind("latent-mean", {}, IN_PROCESS, runtime={"decoder": decoder})
    latent = [1.0, 2.0, 3.0]
    request = bound.prepare("g", [{"trajectory_id": "a", "completion": "", "media": latent}])
    assert request.candidates[0].media is latent
    result = bound.evaluate(request)
    assert result.items[0].result.terms == {"mean": 4.0}
    assert decoder.calls == 1


def test_a_candidate_without_media_is_a_contract_error(catalog):
    bound = catalog.bind("latent-mean", {}, IN_PROCESS, runtime={"decoder": ListDecoder()})
    with pytest.raises(RewardContractError, match="in-process media") as caught:
        bound.prepare(
            "g",
            [
                {"trajectory_id": "a", "completion": "", "media": [1.0]},
                {"trajectory_id": "b", "completion": ""},
            ],
        )
    assert caught.value.rule == "missing-media" and caught.value.trajectory_id == "b"


def test_providers_needing_media_are_refused_where_media_cannot_travel(catalog):
    # The service, `rewardkit score` and Ray actors bind with the JSON-suppliable inputs only.
    with pytest.raises(PreflightError, match=r"in-process media.*rewardkit\.load\(config, runtime="):
        catalog.bind("latent-mean", {}, KNOWN_NEEDS, runtime={"decoder": ListDecoder()})


def test_a_missing_runtime_object_names_how_to_pass_it(catalog):
    for runtime in (None, {}, {"other": 1}):
        with pytest.raises(PreflightError, match=r"needs runtime object\(s\) \['decoder'\]"):
            catalog.bind("latent-mean", {}, IN_PROCESS, runtime=runtime)


def test_the_attestation_enters_the_identity_and_the_object_does_not(catalog):
    def identity(decoder, **params):
        return catalog.bind("latent-mean", params, IN_PROCESS, runtime={"decoder": decoder}).identity

    first = identity(ListDecoder(factor=1.0))
    assert identity(ListDecoder(factor=5.0)) == first  # another object, same attestation
    assert identity(ListDecoder(revision="r2")) != first
    assert identity(ListDecoder(), offset=1.0) != first
    assert first != catalog.entry("latent-mean").identity  # the runtime part is in it


def test_a_refused_attestation_fails_preflight(catalog):
    decoder = ListDecoder()
    decoder.output_range = "zero_to_one"
    with pytest.raises(PreflightError, match="output_range"):
        catalog.bind("latent-mean", {}, IN_PROCESS, runtime={"decoder": decoder})


def test_media_is_not_compared_or_shown():
    one = RewardCandidate("a", "x", media=[1.0])
    other = RewardCandidate("a", "x", media=[2.0])
    assert one == other and "media" not in repr(one)


def test_spec_checks_runtime_names_and_identity_callable():
    def factory(**params):
        return None

    with pytest.raises(RegistrationError, match="runtime"):
        RewardProviderSpec("p", factory, (), "1", ("t",), runtime=("Bad Name",))
    with pytest.raises(RegistrationError, match="runtime_identity"):
        RewardProviderSpec("p", factory, (), "1", ("t",), runtime=("decoder",), runtime_identity="x")
    with pytest.raises(RegistrationError, match="unknown needs"):
        RewardProviderSpec("p", factory, ("latent",), "1", ("t",))


# -- rewardkit.load(config, runtime=...) -----------------------------------------------------------

CONFIG = {"rl": {"group_size": 1, "reward": {"provider": "latent-mean", "catalog": "media_fixtures:catalog"}}}


def test_load_hands_runtime_objects_and_media_to_the_provider():
    decoder = ListDecoder(factor=3.0)
    with rewardkit.load(CONFIG, runtime={"decoder": decoder}) as reward:
        batch = reward.score(
            [{"group_id": "g", "rollouts": [{"trajectory_id": "a", "completion": "", "media": [1.0]}]}]
        )
        ((_, scored),) = batch.candidates()
        assert scored.final == 3.0 and decoder.calls == 1
        assert reward.providers[0].identity == reward.validation().providers[0].identity


def test_load_without_runtime_refuses_a_provider_that_needs_it():
    with pytest.raises(PreflightError, match="in-process media"):
        rewardkit.load(CONFIG)


def test_runtime_objects_cannot_go_to_a_service_or_ray():
    remote = {"rl": {**CONFIG["rl"], "reward": {**CONFIG["rl"]["reward"], "service": "http://127.0.0.1:9"}}}
    with pytest.raises(PreflightError, match=r"cannot travel to rl\.reward\.service"):
        rewardkit.load(remote, runtime={"decoder": ListDecoder()})
