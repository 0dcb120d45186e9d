"""The streamed, cached SHA-256 of a model folder."""

from __future__ import annotations

import os

import pytest

from rewardkit.artifacts import folder_hash as module
from rewardkit.artifacts import folder_identity
from rewardkit.contracts.errors import RewardkitError


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REWARDKIT_CACHE_DIR", str(tmp_path / "cache"))


def _folder(root, files):
    root.mkdir()
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


def test_content_decides_the_hash_not_the_location(tmp_path):
    files = {"config.json": b"{}", "model.safetensors": b"\x00" * (3 << 20), "sub/tok.json": b"[]"}
    first = folder_identity(_folder(tmp_path / "a", files))
    second = folder_identity(_folder(tmp_path / "b", files))
    assert first.sha256 == second.sha256 and first.path != second.path
    assert first.files == 3 and first.bytes == (3 << 20) + 4


@pytest.mark.parametrize(
    "change",
    ["edit", "rename", "add", "remove"],
)
def test_any_change_changes_the_hash(tmp_path, change):
    root = _folder(tmp_path / "m", {"a.bin": b"abc", "b.bin": b"def"})
    before = folder_identity(root).sha256
    if change == "edit":
        (root / "a.bin").write_bytes(b"abd")
    elif change == "rename":
        (root / "a.bin").rename(root / "c.bin")
    elif change == "add":
        (root / "extra").write_bytes(b"")
    else:
        (root / "b.bin").unlink()
    assert folder_identity(root).sha256 != before


def test_cached_files_are_not_read_again(tmp_path, monkeypatch):
    root = _folder(tmp_path / "m", {"w.bin": os.urandom(1 << 16)})
    first = folder_identity(root)
    monkeypatch.setattr(module, "_file_sha256", lambda path: pytest.fail(f"{path} was read again"))
    assert folder_identity(root) == first


def test_an_empty_or_missing_folder_is_an_error(tmp_path):
    with pytest.raises(RewardkitError, match="does not exist"):
        folder_identity(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RewardkitError, match="holds no files"):
        folder_identity(tmp_path / "empty")
