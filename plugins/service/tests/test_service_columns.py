"""The Reward Service reads the configuration's column mapping: a client may name the prompt and the
reference as the configured data does (``rl.data.reference_column: answer``), over real HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from service_fixtures import start_server

from rewardkit_service.testing import ServerProcess

CONFIG = """
rl.reward.provider: gsm8k
rl.group_size: 2
rl.data.prompt_column: question
rl.data.reference_column: answer
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(tmp_path_factory.mktemp("columns"), CONFIG)
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output


def post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    async def go() -> tuple[int, dict[str, Any]]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, data=json.dumps(body).encode()) as reply,
        ):
            return reply.status, json.loads(await reply.read())

    return asyncio.run(go())


def group(**fields: Any) -> dict[str, Any]:
    completions = ("The answer is 3.", "The answer is 4.")
    return {
        "group_id": "g",
        "rollouts": [
            {"trajectory_id": f"t{n}", "completion": text, **fields} for n, text in enumerate(completions)
        ],
    }


def finals(reply: dict[str, Any]) -> list[float]:
    return [candidate["final"] for candidate in reply["groups"][0]["candidates"]]


def test_the_configured_column_names_are_accepted_as_well_as_the_canonical_ones(server: ServerProcess):
    status, mapped = post(server.url + "/v1/score", {"groups": [group(question="1 + 2?", answer="#### 3")]})
    assert status == 200, mapped
    status, canonical = post(
        server.url + "/v1/score", {"groups": [group(prompt="1 + 2?", reference="#### 3")]}
    )
    assert status == 200, canonical
    assert finals(mapped) == finals(canonical) == [1.0, 0.0]
    # The breakdown shows the text the verifier read, as `rewardkit score`'s lines do.
    shown = [c["breakdown"]["gsm8k"]["extracted_answer"] for c in mapped["groups"][0]["candidates"]]
    assert shown == ["3", "4"]
    # Both names with the same value say one thing: accepted.
    status, both = post(server.url + "/v1/score", {"groups": [group(answer="#### 3", reference="#### 3")]})
    assert (status, finals(both)) == (200, [1.0, 0.0])


def test_both_names_with_different_values_get_a_400_naming_both(server: ServerProcess):
    status, reply = post(server.url + "/v1/score", {"groups": [group(answer="#### 3", reference="#### 4")]})
    assert status == 400, reply
    message = reply["error"]["message"]
    assert message.startswith("groups[0]: rollouts[0] gives 'reference' and 'answer'"), message
    assert "rl.data.reference_column" in message and "send one of them" in message
    # Type-strict: the number 3 and the text "3" are different references.
    status, reply = post(server.url + "/v1/score", {"groups": [group(answer=3, reference="3")]})
    assert status == 400 and "'answer'" in reply["error"]["message"]


def test_an_unconfigured_name_is_still_refused(server: ServerProcess):
    status, reply = post(server.url + "/v1/score", {"groups": [group(gold="#### 3")]})
    assert status == 400
    assert "gold" in reply["error"]["message"]
