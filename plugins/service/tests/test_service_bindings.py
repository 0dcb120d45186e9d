"""Every binding builds its reward on the configured backend: a Reward Service when
``rl.reward.service`` is set (routed ``by_data_source`` selections included), and never silently in
process. A live service on loopback scores what the bindings send (its rollout counter moves and
the values are the in-process ones); a dead service URL fails every binding. The Ray backend is
tested on a real cluster in ``plugins/ray/tests/test_bindings_ray.py``, the Ray backend without Ray
and the local backend in rewardkit-bindings' ``tests/test_bindings_backends.py``."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator

import pytest
from service_fixtures import start_server

import rewardkit_bindings.openrlhf as openrlhf_binding
import rewardkit_bindings.trl as trl_binding
import rewardkit_bindings.verl as verl_binding
from rewardkit_bindings.loading import forget_rewards
from rewardkit_service.client import RemoteReward, RemoteServiceError
from rewardkit_service.testing import ServerProcess

SPEC = {"components": [{"provider": "exact-match", "weight": 2.0}, {"provider": "nonempty", "weight": 0.5}]}
SERVER_CONFIG = """\
rl.reward.spec:
  components: [{provider: exact-match, weight: 2.0}, {provider: nonempty, weight: 0.5}]
rewards.service.allow:
  providers: {gsm8k: {}}
  components: any
"""
DEAD = "http://127.0.0.1:9"  # the discard port: nothing listens there


def client(url: str, **extra: object) -> dict:
    return {"rl.reward.spec": SPEC, "rl.reward.service": url, "rewards.deadline_s": 2, **extra}


def local(config: dict) -> dict:
    return {key: value for key, value in config.items() if key != "rl.reward.service"}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    forget_rewards()
    yield
    forget_rewards()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(tmp_path_factory.mktemp("bindings-svc"), SERVER_CONFIG)
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output


def scored_rollouts(server: ServerProcess) -> float:
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as reply:
        text = reply.read().decode()
    found = re.search(r'rewardkit_rollouts_total\{endpoint="/v1/score"\} ([0-9.e+]+)', text)
    return float(found.group(1)) if found else 0.0


# -- TRL -----------------------------------------------------------------------------------------

TRL_ARGS = {
    "prompts": ["p1", "p1", "p2", "p2"],
    "completions": ["four", "five", "six", ""],
    "answer": ["four", "four", "six", "six"],
}


def test_trl_scores_in_the_service(server):
    config = client(server.url, **{"rl.group_size": 2, "rl.data.response_column": "answer"})
    bound = trl_binding.binding(config)
    assert isinstance(bound.reward, RemoteReward)
    assert bound.slices_per_rank is False  # the service scores whole groups
    before = scored_rollouts(server)
    total = bound.functions()[0]
    got = total(**TRL_ARGS)
    assert scored_rollouts(server) - before == 4
    forget_rewards()
    want = trl_binding.binding(local(config)).functions()[0](**TRL_ARGS)
    assert got == want == [2.5, 0.5, 2.5, 0.0]


def test_trl_with_a_dead_service_fails_instead_of_scoring_in_process():
    config = client(DEAD, **{"rl.group_size": 2, "rl.data.response_column": "answer"})
    with pytest.raises(RemoteServiceError, match=r"127\.0\.0\.1:9"):
        trl_binding.reward_funcs(config)


# -- verl ----------------------------------------------------------------------------------------


def test_verl_scores_every_selection_in_the_service(server):
    config = client(server.url, **{"rl.reward.by_data_source": {"gsm": {"provider": "gsm8k"}}})
    before = scored_rollouts(server)
    out = verl_binding.compute_score_batch(["gsm", "other"], ["#### 4", "four"], ["4", "four"], config=config)
    assert scored_rollouts(server) - before == 2  # the routed row went to the service too
    assert [row["score"] for row in out] == [1.0, 2.5]
    forget_rewards()
    assert (
        verl_binding.compute_score_batch(["gsm"], ["#### 4"], ["4"], config=local(config))[0]["score"] == 1.0
    )


@pytest.mark.parametrize("data_source", ["other", "gsm"], ids=["default", "routed"])
def test_verl_with_a_dead_service_fails_for_every_selection(data_source):
    config = client(DEAD, **{"rl.reward.by_data_source": {"gsm": {"provider": "gsm8k"}}})
    with pytest.raises(RemoteServiceError, match=r"127\.0\.0\.1:9"):
        verl_binding.compute_score(data_source, "#### 4", "4", {}, config=config)


# -- OpenRLHF ------------------------------------------------------------------------------------


def test_openrlhf_scores_in_the_service(server):
    config = client(server.url)
    before = scored_rollouts(server)
    out = openrlhf_binding.reward_func(["Q: four", "Q: "], ["Q:", "Q:"], ["four", "four"], config=config)
    assert scored_rollouts(server) - before == 2
    assert list(out["rewards"]) == [2.5, 0.0]


def test_openrlhf_with_a_dead_service_fails():
    with pytest.raises(RemoteServiceError, match=r"127\.0\.0\.1:9"):
        openrlhf_binding.reward_func(["Q: four"], ["Q:"], ["four"], config=client(DEAD))
