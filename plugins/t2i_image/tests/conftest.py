"""A reference media service on loopback and a tiny torch decoder (nothing downloaded)."""

from __future__ import annotations

import os

import pytest
from image_helpers import TOKEN_ENV

from rewardkit_media.testing import ReferenceMediaService
from rewardkit_t2i import PICKSCORE_REWARD_TYPES


@pytest.fixture(autouse=True)
def token(monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "t2i-test-token")


@pytest.fixture
def service():
    with ReferenceMediaService(PICKSCORE_REWARD_TYPES) as server:
        yield server


@pytest.fixture
def spool_dir(tmp_path):
    folder = tmp_path / "spool"
    folder.mkdir()
    yield folder
    assert os.listdir(folder) == [], "a spool file was left behind"


@pytest.fixture
def params(service, spool_dir):
    return {
        "revision": "pickscore-test-2026-12",
        "enqueue_url": service.enqueue_url,
        "pull_url": service.pull_url,
        "token_env": TOKEN_ENV,
        "deadline_s": 10.0,
        "poll_interval_s": 0.01,
        "max_poll_interval_s": 0.05,
        "spool_dir": str(spool_dir),
    }
