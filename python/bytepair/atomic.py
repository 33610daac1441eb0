"""Write files so that a crash, a kill or a full disk never leaves a half-written
file: the data goes to a temporary file in the target's directory, is fsynced,
then renamed over the target (`os.replace` is atomic on POSIX and Windows).

On Linux the temporary file is anonymous (``O_TMPFILE``) until it is complete,
so even SIGKILL mid-write leaves nothing behind; elsewhere it is a hidden
``.NAME.*.tmp`` file that is removed on any Python exception (including
KeyboardInterrupt). New files get the usual ``0o666 & ~umask`` mode.

A set of files that is only valid whole (two or three files of one tokenizer)
is written with `write_file_set`: all under temporary names, then renamed, with
a journal that lets the next load or save finish or undo a set interrupted
between its renames (`recover_file_sets`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import socket
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


# ---- sets of files ------------------------------------------------------------------
#
# A tokenizer saved as two or three files (vocab.json + merges.txt, a .tiktoken
# file and its sidecar, a transformers folder) is only valid whole: a new file
# beside an old one does not load, or loads as something else. `write_file_set`
# writes every file under a temporary name first and renames only when all are
# complete, and a journal in the directory says which set is being written:
#
#   1. journal ``.bytepair-set-ID.json`` written, state "writing"
#   2. every file written to ``.NAME.ID.tmp`` and fsynced
#   3. journal rewritten, state "committed" (the new set is whole on disk)
#   4. each temporary file renamed over its target
#   5. journal removed
#
# `recover_file_sets` (run by every save of a set and by every load) finishes
# what a killed writer left: a committed set is renamed into place (its files
# are complete), a set still being written by a process that is gone is rolled
# back (its temporary files removed; the old set was never touched).

SET_JOURNAL_PREFIX = ".bytepair-set-"
_SET_FORMAT = "bytepair-file-set"


def write_file_set(files: dict[str | os.PathLike, bytes]) -> None:
    """Replace the files at the keys of `files` (all in one directory) with
    their values, as one change: after a crash, a kill or a full disk, either
    every file is the new one or (once `recover_file_sets` ran) every file is
    the old one.

    Raises:
        OSError: the directory is missing or not writable, the disk is full;
            the exception's ``filename`` is the file being written. The old
            files are then intact and no temporary file is left.
    """
    targets = [os.path.abspath(os.fspath(p)) for p in files]
    directory = os.path.dirname(targets[0])
    if any(os.path.dirname(t) != directory for t in targets):
        raise ValueError(f"a file set lives in one directory, got {targets}")
    recover_file_sets(directory)
    set_id = secrets.token_hex(6)
    journal = os.path.join(directory, f"{SET_JOURNAL_PREFIX}{set_id}.json")
    moves = [(f".{os.path.basename(t)}.{set_id}.tmp", os.path.basename(t)) for t in targets]
    try:
        _write_journal(journal, "writing", moves)
    except OSError as e:  # a missing or read-only directory: say which file was wanted
        raise _naming(e, targets[0]) from e
    try:
        for (tmp, _), target, data in zip(moves, targets, files.values()):
            _write_new_file(os.path.join(directory, tmp), data, target)
        _write_journal(journal, "committed", moves)
    except BaseException:
        _roll_back(directory, journal, moves)
        raise
    _finish(directory, journal, moves)


def recover_file_sets(directory: str | os.PathLike) -> None:
    """Finish or undo what an interrupted `write_file_set` left in `directory`
    (see the section comment). Sets another live process is writing are left
    alone. Nothing to do costs one directory listing.

    Raises:
        OSError: a committed set could not be renamed into place (a read-only
            directory): the message names the journal and its files.
    """
    directory = os.fspath(directory) or "."
    try:
        names = [n for n in os.listdir(directory) if n.startswith(SET_JOURNAL_PREFIX)]
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        journal = os.path.join(directory, name)
        record = _read_journal(journal)
        if record is None:
            continue
        moves = [tuple(m) for m in record["files"]]
        if record["state"] == "committed":
            try:
                _finish(directory, journal, moves)
            except OSError as e:
                raise type(e)(
                    e.errno,
                    f"{e.strerror}; a save of {', '.join(t for _, t in moves)} was interrupted "
                    f"after its new files were written and cannot be finished here ({journal})",
                    journal,
                ) from e
        elif not _writer_alive(record):
            with contextlib.suppress(OSError):  # leftovers only: the old set is whole
                _roll_back(directory, journal, moves)


def _write_new_file(tmp: str, data: bytes, target: str) -> None:
    try:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), _FILE_MODE
        )
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise _naming(e, target) from e


def _write_journal(journal: str, state: str, moves: list[tuple[str, str]]) -> None:
    record = {
        "format": _SET_FORMAT,
        "state": state,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "files": [list(m) for m in moves],
    }
    atomic_write(journal, json.dumps(record).encode())


def _read_journal(journal: str) -> dict | None:
    """The journal's record, or None if it is gone or not one of ours."""
    try:
        with open(journal, "rb") as f:
            record = json.loads(f.read())
        ok = (
            record["format"] == _SET_FORMAT
            and record["state"] in ("writing", "committed")
            and all(
                isinstance(m, list) and len(m) == 2 and all(_plain_name(x) for x in m)
                for m in record["files"]
            )
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if ok else None


def _plain_name(name: object) -> bool:
    """A file name in the journal's own directory (never a path elsewhere)."""
    return isinstance(name, str) and name not in ("", ".", "..") and os.path.basename(name) == name


def _finish(directory: str, journal: str, moves: list[tuple[str, str]]) -> None:
    """Rename every temporary file of a committed set over its target (one
    already renamed, by this writer or a recovery, is skipped), then drop the journal."""
    for tmp, target in moves:
        with contextlib.suppress(FileNotFoundError):
            os.replace(os.path.join(directory, tmp), os.path.join(directory, target))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(journal)


def _roll_back(directory: str, journal: str, moves: list[tuple[str, str]]) -> None:
    """Remove the temporary files of a set that was not committed, then its journal."""
    for tmp, _ in moves:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, tmp))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(journal)


def _writer_alive(record: dict) -> bool:
    """Whether the process that wrote a journal may still be writing: another
    host's, or a live process of this host (this one included)."""
    if record.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(record["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, KeyError, OverflowError):
        return True
    return True
