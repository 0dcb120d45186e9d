"""A reference media service on loopback and tiny torch decoders (nothing downloaded)."""

from __future__ import annotations

import os

import pytest
from video_helpers import TOKEN, TOKEN_ENV

from rewardkit_dancegrpo import DANCEGRPO_REWARD_TYPES
from rewardkit_media.testing import ReferenceMediaService


@pytest.fixture(autouse=True)
def token(monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)


@pytest.fixture
def service():
    with ReferenceMediaService(DANCEGRPO_REWARD_TYPES) as server:
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
        "revision": "videoalign-test-2026-12",
        "enqueue_url": service.enqueue_url,
        "pull_url": service.pull_url,
        "token_env": TOKEN_ENV,
        "fps": 16.0,
        "deadline_s": 10.0,
        "poll_interval_s": 0.01,
        "max_poll_interval_s": 0.05,
        "spool_dir": str(spool_dir),
    }
