"""Private spool files: a large array written once to local disk and streamed from there.

A decoded video is hundreds of MiB. Serialising it to ``bytes`` and posting those bytes holds the
array, the serialised copy and the request body in memory at once; writing it with
``numpy.save(..., allow_pickle=False)`` into a spool file and streaming the file holds only the
array. ``Spool`` checks the free space of its folder before writing (one sample per active rank
plus the NumPy header, because every rank of a job may spool at the same time), creates the file
mode 0600 with a unique name, and removes it on every path: success, error, cancellation.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from rewardkit.plugin import RewardkitError

SPOOL_PREFIX = "rewardkit-spool-"


class SpoolError(RewardkitError):
    """The spool folder is missing, not writable or too full for the payload."""


def npy_header_bytes(shape: tuple[int, ...], dtype: np.dtype | type) -> int:
    """The size of the header ``numpy.save`` writes before the data of a C-ordered array."""
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": tuple(shape),
    }
    buffer = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buffer, header)
    except ValueError:  # a header over 64 KiB needs format 2.0
        buffer = io.BytesIO()
        np.lib.format.write_array_header_2_0(buffer, header)
    return buffer.tell()


def spool_bytes(array: np.ndarray, prefix: bytes = b"") -> int:
    """Bytes a spool file of ``array`` takes: the prefix, the NumPy header and the data."""
    return len(prefix) + npy_header_bytes(array.shape, array.dtype) + array.nbytes


def check_capacity(directory: str | os.PathLike[str], sample_bytes: int, active_ranks: int = 1) -> None:
    """Fail unless ``directory`` has room for ``active_ranks`` samples of ``sample_bytes`` each."""
    if type(active_ranks) is not int or active_ranks < 1:
        raise SpoolError(f"active_ranks must be a positive integer, got {active_ranks!r}")
    try:
        free = shutil.disk_usage(directory).free
    except OSError as error:
        raise SpoolError(f"spool folder {os.fspath(directory)!r} cannot be used: {error}") from None
    needed = sample_bytes * active_ranks
    if free < needed:
        raise SpoolError(
            f"spool folder {os.fspath(directory)!r} has {_mib(free)} free but needs {_mib(needed)} "
            f"({active_ranks} active rank(s) x {_mib(sample_bytes)} per sample, NumPy header included); "
            "point spool_dir at larger actor-local storage or free space"
        )


def _mib(count: int) -> str:
    return f"{count / 2**20:.1f} MiB"


class Spool:
    """One private spool file: ``create``, ``write``, stream ``path``, then ``remove`` (idempotent).

    ``with Spool.create(...) as spool:`` removes the file when the block ends, however it ends.
    """

    def __init__(self, path: Path, expected_bytes: int) -> None:
        self.path = path
        self.expected_bytes = expected_bytes
        self.size = 0

    @classmethod
    def create(
        cls,
        expected_bytes: int,
        *,
        directory: str | os.PathLike[str] | None = None,
        active_ranks: int = 1,
    ) -> Spool:
        """Check capacity for ``expected_bytes`` per rank and create an empty file (mode 0600)."""
        folder = os.fspath(directory) if directory is not None else tempfile.gettempdir()
        check_capacity(folder, expected_bytes, active_ranks)
        try:
            handle, name = tempfile.mkstemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-", suffix=".npy", dir=folder)
        except OSError as error:
            raise SpoolError(f"cannot create a spool file in {folder!r}: {error}") from None
        os.close(handle)
        return cls(Path(name), expected_bytes)

    def write(self, array: np.ndarray, prefix: bytes = b"") -> int:
        """Write ``prefix`` then ``array`` in NumPy format (no pickles); returns the file size.

        A C-contiguous array is written straight from its buffer, with no copy in memory. The file
        must still exist: a write that starts after ``remove`` (an abandoned write thread, its
        caller cancelled) raises ``FileNotFoundError`` rather than creating the file again, and one
        under way when ``remove`` runs finishes into the unlinked file, which nothing can see.
        """
        descriptor = os.open(self.path, os.O_WRONLY | os.O_TRUNC)  # never O_CREAT
        with os.fdopen(descriptor, "wb") as handle:  # a BufferedWriter: numpy writes it with tofile
            handle.write(prefix)
            np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
            handle.flush()
            self.size = handle.tell()
        return self.size

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


@contextlib.contextmanager
def spooled(
    array: np.ndarray,
    *,
    prefix: bytes = b"",
    directory: str | os.PathLike[str] | None = None,
    active_ranks: int = 1,
) -> Iterator[Spool]:
    """Write ``prefix`` + ``array`` to a fresh spool file; the file is gone when the block ends."""
    with Spool.create(spool_bytes(array, prefix), directory=directory, active_ranks=active_ranks) as spool:
        spool.write(array, prefix)
        yield spool
