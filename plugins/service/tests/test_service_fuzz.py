"""Fuzz every endpoint of the running Reward Service from its own OpenAPI document (schemathesis):
valid and invalid bodies alike must never produce a 500 or crash the server, and every answer
must match the status codes and schemas the document declares."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance
from service_fixtures import start_server

from rewardkit_service.models import openapi_document
from rewardkit_service.testing import ServerProcess

TOKEN = "fuzz-token-5b1e"
SCHEMA = schemathesis.openapi.from_dict(openapi_document("0"))
STATUSES: Counter[int] = Counter()  # what the fuzzing got back, checked at the end


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = "rl.reward.provider: gsm8k\nrewards.max_inflight: 64\n"
    process = start_server(tmp_path_factory.mktemp("fuzz"), config, env={"REWARDKIT_TOKENS": TOKEN})
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output


@SCHEMA.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_input_gives_a_server_error(case, fuzz_server):
    response = case.call(base_url=fuzz_server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    STATUSES[response.status_code] += 1
    checks = [status_code_conformance, response_schema_conformance]
    if not _asked_for_timeout(case, response):
        checks.append(not_a_server_error)
    case.validate_response(response, checks=checks)


def _asked_for_timeout(case, response) -> bool:
    """A 504 ``timeout`` is the documented answer to a request whose own ``request_timeout_s``
    (fuzzed down to 1e-279 s) passed: the client asked for it, the server did not fail."""
    if response.status_code != 504 or not isinstance(case.body, dict):
        return False
    timeout = case.body.get("request_timeout_s")
    return isinstance(timeout, (int, float)) and timeout < 1 and response.json()["error"]["code"] == "timeout"


def test_server_survived_the_fuzzing(fuzz_server):
    import urllib.request

    with urllib.request.urlopen(fuzz_server.url + "/healthz", timeout=10) as reply:
        assert reply.status == 200
    assert fuzz_server.process is not None and fuzz_server.process.poll() is None
    assert "Traceback" not in fuzz_server.output, fuzz_server.output
    print(f"fuzzing answers by status: {dict(STATUSES)}")
    # Both valid and invalid bodies were generated and reached the handlers.
    assert STATUSES[200] > 0 and STATUSES[400] > 0 and 500 not in STATUSES, STATUSES
