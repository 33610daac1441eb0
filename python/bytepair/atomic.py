"""Write files so that a crash or a full disk never leaves a half-written file:
write a temporary file in the same directory, fsync it, then rename it over the
target (`os.replace` is atomic on POSIX and Windows)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file beside `path` for binary writing; on a clean exit it
    replaces `path`, on an exception it is removed and `path` is left as it was.

    Raises:
        OSError: the directory is missing or not writable, or the disk is full
            (the message names the path).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Replace the file at `path` with `data`, atomically."""
    with atomic_open(path) as f:
        f.write(data)
