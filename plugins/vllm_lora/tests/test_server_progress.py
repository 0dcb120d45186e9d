"""``VllmServer`` says when it starts (with its log's path) and when it is ready; no vLLM needed.

The server command is a stub that answers ``/v1/models`` on the port it is given, the way vLLM's
API server does once it is up, so this runs wherever the core does.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import rewardkit_vllm.server as server_module
from rewardkit_supervise import StartError, session_pids
from rewardkit_vllm.server import VllmServer

STUB = """\
#!{python}
import http.server, json, sys, time
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
name = args[args.index("--served-model-name") + 1]
print("stub server: loading", flush=True)
time.sleep({delay})
if {fail}:
    print("stub server: engine died", flush=True)
    sys.exit(7)

class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({{"object": "list", "data": [{{"id": name}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Models).serve_forever()
"""


def _stub(tmp_path: Path, *, delay: float = 0.5, fail: bool = False) -> str:
    path = tmp_path / "fake-python"
    path.write_text(STUB.format(python=sys.executable, delay=delay, fail=fail))
    path.chmod(0o755)
    return str(path)


@pytest.fixture(autouse=True)
def _a_vllm_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "installed_build", lambda: ("vllm", "0.0-stub"))


def test_the_start_says_where_the_log_is_and_when_the_server_is_ready(tmp_path):
    said: list[str] = []
    server = VllmServer(
        "/models/tiny", "tiny", log_dir=tmp_path, python=_stub(tmp_path), grace_s=2, say=said.append
    )
    with server:
        assert len(said) == 2, said
        session = server.tree.pid
        assert session_pids(session)
    starting, ready = said
    assert starting.startswith(f"starting the vLLM server for tiny on {server.base_url} ")
    assert starting.endswith(f"log {server.log_path})")
    assert server.log_path.parent == tmp_path and "stub server: loading" in server.log_path.read_text()
    assert re.fullmatch(r"vLLM server for tiny ready after \d+ s", ready), ready
    assert session_pids(session) == []


def test_a_server_that_dies_while_starting_was_announced_with_its_log(tmp_path):
    said: list[str] = []
    server = VllmServer(
        "/models/tiny", "tiny", log_dir=tmp_path, python=_stub(tmp_path, delay=0, fail=True), say=said.append
    )
    with pytest.raises(StartError, match="exited with code 7") as raised:
        server.start()
    [starting] = said  # announced, never "ready"
    assert str(server.log_path) in starting and "engine died" in str(raised.value)
