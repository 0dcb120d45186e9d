"""The built-in ``endpoint`` strategy and the serving contract, against a real loopback server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import pytest
from aiohttp import web

from rewardkit.checkpoint_serving import ServedModel
from rewardkit.contracts.errors import RewardkitError
from rewardkit.seam.catalog import serving_strategies


@pytest.fixture
def openai_models():
    """A server whose /v1/models lists 'tiny' (and records the Authorization header)."""
    seen: list[str] = []
    ready = threading.Event()
    state: dict = {}

    async def models(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({"object": "list", "data": [{"id": "tiny", "object": "model"}]})

    def run() -> None:
        loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_get("/v1/models", models)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        state.update(loop=loop, runner=runner, url=f"http://127.0.0.1:{runner.addresses[0][1]}")
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    yield state["url"], seen
    state["loop"].call_soon_threadsafe(state["loop"].stop)
    thread.join(10)


def test_endpoint_yields_a_served_model_with_its_identity(openai_models, tmp_path, monkeypatch):
    url, seen = openai_models
    monkeypatch.setenv("RK_ENDPOINT_TOKEN", "tok-123")
    monkeypatch.setenv("REWARDKIT_CACHE_DIR", str(tmp_path / "cache"))
    checkpoint = tmp_path / "step-10"
    checkpoint.mkdir()
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    strategy = (
        serving_strategies()
        .get("endpoint")
        .value.factory(base_url=url, model="tiny", token_env="RK_ENDPOINT_TOKEN")
    )
    with strategy.serve(str(checkpoint)) as served:
        assert isinstance(served, ServedModel)
        assert (served.base_url, served.model, served.strategy) == (url, "tiny", "endpoint")
        assert served.checkpoint is not None and served.checkpoint.path == str(checkpoint)
        identity = served.identity()
    assert seen == ["Bearer tok-123"]
    assert identity["settings"] == {"base_url": url, "model": "tiny", "token_env": "RK_ENDPOINT_TOKEN"}
    assert "tok-123" not in json.dumps(identity)
    # the same bytes in another folder: same identity hash, different recorded path
    other = tmp_path / "copy"
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"weights")
    with strategy.serve(str(other)) as again:
        assert again.identity_hash() == served.identity_hash()
        assert again.identity()["checkpoint_path"] != identity["checkpoint_path"]


def test_endpoint_without_the_model_names_what_is_listed(openai_models):
    url, _ = openai_models
    strategy = (
        serving_strategies().get("endpoint").value.factory(base_url=url, model="big", ready_timeout_s=1)
    )
    with (
        pytest.raises(RewardkitError, match=r"'big' is not served .* lists \['tiny'\]"),
        strategy.serve(None),
    ):
        pass


def test_cli_lists_serving_strategies_with_their_distribution():
    out = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "serving", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {row["name"]: row for row in json.loads(out)}
    assert rows["endpoint"]["distribution"] == "rewardkit-core"
    plugins = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rewardkit.cli", "plugins", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    provides = {row["name"]: row["provides"] for row in plugins}
    assert provides["rewardkit.checkpoint_serving.endpoint"] == {"serving": ["endpoint"]}
