"""Spool files: capacity checked first, NumPy format without pickles, private, always removed."""

from __future__ import annotations

import io
import os
import stat
from collections import namedtuple

import numpy as np
import pytest

from rewardkit_media import spool as spool_module
from rewardkit_media.spool import Spool, SpoolError, check_capacity, npy_header_bytes, spool_bytes, spooled


def test_the_file_is_the_prefix_then_numpy_save_bytes(tmp_path):
    array = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(1, 2, 3, 4)
    with spooled(array, prefix=b'{"a":1}\n', directory=tmp_path) as spool:
        data = spool.path.read_bytes()
        assert spool.size == len(data) == spool_bytes(array, b'{"a":1}\n')
        assert stat.S_IMODE(os.stat(spool.path).st_mode) == 0o600
        line, _, payload = data.partition(b"\n")
        assert line == b'{"a":1}'
        expected = io.BytesIO()
        np.save(expected, array, allow_pickle=False)
        assert payload == expected.getvalue()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("shape", [(1, 3, 2, 4, 5), (1, 7, 9, 3), (1,)])
def test_header_size_matches_numpy_save(shape):
    array = np.zeros(shape, dtype=np.uint8)
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    assert npy_header_bytes(shape, np.uint8) == buffer.tell() - array.nbytes


def test_the_seed_figure_one_121x704x1280_video_is_about_312_mib():
    sample = 1 * 3 * 121 * 704 * 1280 + npy_header_bytes((1, 3, 121, 704, 1280), np.uint8)
    assert round(sample / 2**20) == 312
    assert 2.43 < 8 * sample / 2**30 < 2.45  # eight concurrent ranks: about 2.44 GiB


def test_the_spool_is_removed_when_the_block_raises(tmp_path):
    with pytest.raises(RuntimeError), spooled(np.zeros(4, np.uint8), directory=tmp_path):
        assert len(os.listdir(tmp_path)) == 1
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_pickles_are_refused(tmp_path):
    with pytest.raises(ValueError), spooled(np.array([object()]), directory=tmp_path):
        pass
    assert os.listdir(tmp_path) == []


Usage = namedtuple("Usage", "total used free")


def test_capacity_counts_one_sample_per_active_rank(tmp_path, monkeypatch):
    monkeypatch.setattr(spool_module.shutil, "disk_usage", lambda path: Usage(10_000, 0, 1_000))
    check_capacity(tmp_path, 500, active_ranks=2)
    with pytest.raises(SpoolError, match=r"needs .*2 active rank\(s\)"):
        check_capacity(tmp_path, 501, active_ranks=2)
    with pytest.raises(SpoolError, match="needs"):
        Spool.create(600, directory=tmp_path, active_ranks=2)
    assert os.listdir(tmp_path) == []  # refused before anything was created


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(SpoolError, match="cannot be used"):
        check_capacity(tmp_path / "absent", 1)


@pytest.mark.parametrize("ranks", [0, -1, 1.5, True])
def test_active_ranks_must_be_a_positive_integer(tmp_path, ranks):
    with pytest.raises(SpoolError, match="active_ranks"):
        check_capacity(tmp_path, 1, active_ranks=ranks)


def test_remove_is_idempotent(tmp_path):
    spool = Spool.create(10, directory=tmp_path)
    spool.remove()
    spool.remove()
    assert os.listdir(tmp_path) == []
