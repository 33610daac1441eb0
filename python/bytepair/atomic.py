"""Write files so that a crash, a kill or a full disk never leaves a half-written
file: the data goes to a temporary file in the target's directory, is fsynced,
then renamed over the target (`os.replace` is atomic on POSIX and Windows).

On Linux the temporary file is anonymous (``O_TMPFILE``) until it is complete,
so even SIGKILL mid-write leaves nothing behind; elsewhere it is a hidden
``.NAME.*.tmp`` file that is removed on any Python exception (including
KeyboardInterrupt). New files get the usual ``0o666 & ~umask`` mode.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from typing import BinaryIO

_FILE_MODE = 0o666  # the kernel applies the umask


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file beside `path` for binary writing; on a clean exit it
    replaces `path`, on an exception it is removed and `path` is left as it was.

    Raises:
        OSError: the directory is missing or not writable, the disk is full or a
            file-size limit is hit; the exception's ``filename`` is `path`.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, named_tmp = _open_temporary(directory, os.path.basename(path))
    except OSError as e:
        raise _naming(e, path) from e
    linked_tmp = named_tmp
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
            if linked_tmp is None:
                linked_tmp = _link_anonymous(f.fileno(), directory, os.path.basename(path))
        os.replace(linked_tmp, path)
    except BaseException as e:
        if linked_tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(linked_tmp)
        if isinstance(e, OSError) and e.filename is None:
            raise _naming(e, path) from e
        raise


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Replace the file at `path` with `data`, atomically (see `atomic_open`)."""
    with atomic_open(path) as f:
        f.write(data)


def _open_temporary(directory: str, name: str) -> tuple[int, str | None]:
    """(fd, None) for an anonymous file where the OS has one, else (fd, its path)."""
    if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(directory, os.O_TMPFILE | os.O_WRONLY, _FILE_MODE), None
        except OSError as e:
            if not _tmpfile_unsupported(e):
                raise
    tmp = _temporary_name(directory, name)
    return os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), _FILE_MODE
    ), tmp


def _tmpfile_unsupported(e: OSError) -> bool:
    """O_TMPFILE is refused by old kernels and some filesystems (NFS, overlay)."""
    return e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL)


def _link_anonymous(fd: int, directory: str, name: str) -> str:
    """Give the complete anonymous file a hidden name in `directory`:
    linkat(AT_SYMLINK_FOLLOW) on its /proc/self/fd entry, as open(2) documents.
    (A dir fd makes Python call linkat; plain link() would not follow /proc's link.)"""
    tmp = _temporary_name(directory, name)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(
            f"/proc/self/fd/{fd}", os.path.basename(tmp), dst_dir_fd=dir_fd, follow_symlinks=True
        )
    finally:
        os.close(dir_fd)
    return tmp


def _temporary_name(directory: str, name: str) -> str:
    return os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")


def _naming(e: OSError, path: str) -> OSError:
    """The same error, with `path` as its filename (so the message names it)."""
    return type(e)(e.errno, e.strerror or str(e), path)
