"""``vllm-lora`` and ``endpoint`` against one real shared vLLM server (private network namespace)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import assert_gone, complete, vllm_processes

from rewardkit.checkpoint_serving.contract import list_models
from rewardkit.contracts.errors import RewardkitError
from rewardkit.seam.catalog import serving_strategies
from rewardkit_vllm import VllmLoraStrategy
from rewardkit_vllm.testing import greedy

PROMPT = "the cat is"


@pytest.fixture(scope="module")
def lora(models, tmp_path_factory):
    before = vllm_processes()
    strategy = (
        serving_strategies()
        .get("vllm-lora")
        .value.factory(
            base_model=str(models["base"]),
            max_lora_rank=8,
            max_loras=2,
            dtype="float32",
            max_model_len=256,
            log_dir=str(tmp_path_factory.mktemp("lora-logs")),
            grace_s=5,
            start_timeout_s=900,  # generous: a loaded 2-core machine has taken 300 s
        )
    )
    assert isinstance(strategy, VllmLoraStrategy)
    strategy.url()
    session = strategy._server.tree.pid
    yield strategy
    strategy.close()
    assert_gone(session)
    assert vllm_processes() <= before, "a server process was left behind"


def test_two_adapters_and_the_base_at_once_each_equal_transformers(lora, models):
    expected = {
        "a1": greedy(models["base"], PROMPT, 8, adapter=models["a1"]).split(),
        "a2": greedy(models["base"], PROMPT, 8, adapter=models["a2"]).split(),
        "base": greedy(models["base"], PROMPT, 8).split(),
    }
    assert expected["a1"] != expected["base"] and expected["a2"] != expected["base"], (
        "adapters change nothing"
    )
    with lora.serve(str(models["a1"])) as one, lora.serve(str(models["a2"])) as two, lora.serve(None) as base:
        listed = list_models(lora.url())
        assert {one.model, two.model, base.model} <= set(listed)
        assert one.checkpoint and two.checkpoint and one.checkpoint.sha256 != two.checkpoint.sha256
        # requests in flight together, so base and adapter requests share batches
        jobs = {"a1": one.model, "a2": two.model, "base": base.model}
        with ThreadPoolExecutor(6) as pool:
            futures = {
                (key, round_): pool.submit(complete, lora.url(), model, PROMPT)
                for key, model in jobs.items()
                for round_ in range(2)
            }
        for (key, _), future in futures.items():
            assert future.result().split() == expected[key], key
        names = (one.model, two.model, base.model)
    listed = list_models(lora.url())
    assert not set(names) & set(listed), f"adapters still loaded after the block: {listed}"


def test_a_taken_name_is_a_clear_error(lora, models):
    lora.load(models["a1"], "taken")
    try:
        with pytest.raises(RewardkitError, match="name is taken"):
            lora.load(models["a2"], "taken")
    finally:
        lora.unload("taken")


def test_an_adapter_over_the_rank_limit_is_refused(lora, models):
    refused = pytest.raises(RewardkitError, match="rank 16, over this server's --max-lora-rank 8")
    with refused, lora.serve(str(models["big"])):
        pass
    # sent anyway, the server's own refusal is named too, and the server keeps serving
    with pytest.raises(RewardkitError, match="max-lora-rank"):
        lora.load(models["big"], "big")
    with lora.serve(str(models["a1"])) as served:
        assert (
            complete(lora.url(), served.model, PROMPT).split()
            == greedy(models["base"], PROMPT, 8, adapter=models["a1"]).split()
        )


def test_endpoint_strategy_against_the_running_server(lora, models):
    endpoint = serving_strategies().get("endpoint").value.factory(base_url=lora.url(), model="base")
    with endpoint.serve(None) as served:
        assert served.strategy == "endpoint" and served.base_url == lora.url()
        assert (
            complete(served.base_url, served.model, PROMPT).split()
            == greedy(models["base"], PROMPT, 8).split()
        )
