"""The step every dataset engine runs (this process, Ray, Spark), so that all of
them write the same token shards (`bytepair.dataset.shards` drives a run).

The driver plans the run as *tasks* of consecutive input files and hands an
engine a `TaskRun`: the `ShardSpec`, the tokenizer, the output folder and the
tasks still to do. For each ``(task, paths)`` the engine calls, on any worker::

    record = encode_task(task, paths, spec, tok, out_dir, num_threads)

which writes that task's shards (``shard-<task>-<k>.bin`` and its index) and
its record (``_progress/task-<task>.json``: `bytepair.folders`, which also
holds the resume rules) straight into `out_dir`, and returns the record, a
small dict; the engine hands the records back to the driver, which writes the
manifest last. Ids never pass through the driver.

Retries: every file is written atomically and a task writes only its own
names, so a task may be rerun (a retried cluster task, a resumed run) and
overwrites what an earlier attempt wrote; the driver keeps a finished task's
shards on resume only if they match its record.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bytepair.atomic import atomic_open, atomic_write
from bytepair.counts.sources import document_batches, infer_format, separated_batches
from bytepair.dataset.megatron import megatron_index
from bytepair.folders import HashingWriter, write_task_record

if TYPE_CHECKING:
    import numpy

    from bytepair.tokenizer import Tokenizer

# Text cut at a separator is read in batches of this many bytes per encoding
# thread (1 MiB: ~0.5 MB of ids), at most 16 MiB (memory stays bounded on many
# cores). Against 16 MiB batches at any thread count, on enwiki.txt's 723k
# lines: the encoding starts after the first MiB, only a small last batch is
# hashed and written after it, and the allocator reuses the batch buffers
# instead of faulting in fresh 16 MiB mappings; the Python side's CPU halved
# (0.15 -> 0.08 s beside 0.26 s of encoding) and the encoding pool's idle time
# in a run fell by two thirds (bench/HISTORY.md).
SEPARATED_BATCH_BYTES_PER_THREAD = 1 << 20
SEPARATED_BATCH_BYTES_MAX = 16 << 20


@dataclass(frozen=True)
class ShardSpec:
    """How documents become shards; the same in every worker and pinned by
    the manifest (a rerun with another spec does not resume)."""

    tokenizer_sha256: str
    format: str | None  # input format: text, jsonl, parquet; None: each file's by its extension
    field: str  # JSON Lines key
    column: str  # Parquet column
    separator: str | None  # text files
    errors: str
    eot: int | None
    dtype: str  # uint16 or uint32 (megatron: int32)
    shard_size: int
    layout: str


@dataclass
class TaskRun:
    """What an engine runs: `encode_task(task, paths, spec, tok, out_dir,
    num_threads)` for each ``(task, paths)`` of `todo` (the tasks an earlier
    run did not finish). `num_threads` None: the engine's default."""

    todo: list[tuple[int, list[str]]]
    spec: ShardSpec
    tok: "Tokenizer"
    out_dir: str
    num_threads: int | None


def shard_name(task: int, k: int) -> str:
    """The name (without extension) of task `task`'s shard `k`: ``shard-00002-00000``."""
    return f"shard-{task:05d}-{k:05d}"


def encode_task(
    task: int,
    paths: Sequence[str],
    spec: ShardSpec,
    tok: "Tokenizer",
    out_dir: str,
    num_threads: int | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Encode the documents of `paths` (in order) into shards ``shard-<task>-<k>``
    of `out_dir`, k = 0, 1, ..., then record them in ``_progress/task-<task>.json``.

    A shard closes after the document that brings it to `spec.shard_size`
    tokens. Each shard is two files, written atomically: ``<name>.bin`` (the
    ids, `spec.dtype` little-endian) and its document index (`.offsets.npy`,
    or `.idx` for the megatron layout). Rerunning a task overwrites its own
    files and no others.

    Args:
        task: the task's number (names its shards and record).
        paths: its input files or URLs, read as `spec` says.
        spec, tok: how documents become ids (`tok` must hash to
            `spec.tokenizer_sha256`; not checked here).
        out_dir: the output folder, which exists and holds ``_progress/``.
        num_threads: encoding threads (None: one per core).
        on_batch: called as ``on_batch(input bytes, tokens)`` after each batch.

    Returns:
        the record: ``{"task", "inputs", "bytes", "documents", "tokens",
        "shards"}``, each shard ``{"name", "documents", "tokens", "sha256",
        "index", "index_sha256"}``.

    Raises:
        ValueError, OSError: bad input (names the file, record and offset).
    """
    import numpy as np

    itemsize = np.dtype(spec.dtype).itemsize
    shards = _ShardWriter(task, spec, out_dir, itemsize)
    read = 0
    queued: collections.deque[Future] = collections.deque()
    with ThreadPoolExecutor(1, thread_name_prefix="bytepair-write") as writer:
        try:
            for ids, lengths, nbytes in _encoded_batches(paths, spec, tok, num_threads):
                read += nbytes
                if on_batch is not None:
                    on_batch(nbytes, len(ids) // itemsize)
                # An earlier batch's error is raised here; at most a few
                # batches wait for the writer (memory stays bounded).
                while queued and (queued[0].done() or len(queued) >= _QUEUED_BATCHES):
                    queued.popleft().result()
                if len(lengths):
                    queued.append(writer.submit(shards.add, memoryview(ids), lengths))
            queued.append(writer.submit(shards.close))
            while queued:
                queued.popleft().result()
        except BaseException:
            for future in queued:
                future.cancel()
            writer.submit(shards.abandon).result()
            raise
    record = {
        "task": task,
        "inputs": list(paths),
        "bytes": read,
        "documents": sum(s["documents"] for s in shards.records),
        "tokens": sum(s["tokens"] for s in shards.records),
        "shards": shards.records,
    }
    write_task_record(out_dir, task, record)
    return record


# Encoded batches waiting for the writer thread, at most.
_QUEUED_BATCHES = 8


class _ShardWriter:
    """Cuts encoded batches into a task's shards and writes them; every method
    runs on the task's writer thread, in order, while the calling thread
    encodes the next batches (cutting, hashing and writing a batch took about
    as long as encoding it on two threads, and the encoding threads waited
    for it). A shard closes after the document that brings it to
    `spec.shard_size` tokens. Every `SYNC_BYTES` it also flushes what it
    wrote to disk (`fdatasync`), so that the fsync closing the file
    (`atomic_open`) has at most that much left (a 30 MB fsync took ~15 ms on
    this VM's disk). `records` are the finished shards' manifest entries."""

    SYNC_BYTES = 4 << 20

    def __init__(self, task: int, spec: ShardSpec, out_dir: str, itemsize: int) -> None:
        self.task, self.spec, self.out_dir, self.itemsize = task, spec, out_dir, itemsize
        self.records: list[dict[str, Any]] = []
        self._open: contextlib.ExitStack | None = None  # the shard being written

    def add(self, ids: memoryview, lengths: "numpy.ndarray") -> None:
        """Write a batch's `ids` (bytes) of documents of `lengths` ids."""
        import numpy as np

        while len(lengths):
            if self._open is None:
                self._start()
            ends = np.cumsum(lengths)
            room = self.spec.shard_size - self._tokens
            take = min(int(np.searchsorted(ends, room)) + 1, len(lengths))
            size = int(ends[take - 1])
            self._write(ids[: size * self.itemsize])
            self._lengths.append(lengths[:take])
            self._tokens += size
            ids, lengths = ids[size * self.itemsize :], lengths[take:]
            if self._tokens >= self.spec.shard_size:
                self._finish()

    def close(self) -> None:
        """Finish the last shard."""
        if self._open is not None:
            self._finish()

    def abandon(self) -> None:
        """Remove the unfinished shard (the task failed)."""
        if self._open is not None:
            stack, self._open = self._open, None
            stack.__exit__(RuntimeError, RuntimeError("abandoned"), None)

    def _start(self) -> None:
        self._name = shard_name(self.task, len(self.records))
        self._open = contextlib.ExitStack()
        f = self._open.enter_context(atomic_open(os.path.join(self.out_dir, self._name + ".bin")))
        self._digest = hashlib.sha256()
        self._out, self._fd = HashingWriter(f, self._digest), f.fileno()
        self._lengths: list[numpy.ndarray] = []
        self._tokens = self._unsynced = 0

    def _write(self, data: memoryview) -> None:
        self._out.write(data)
        self._unsynced += len(data)
        if self._unsynced >= self.SYNC_BYTES:
            _fdatasync(self._fd)
            self._unsynced = 0

    def _finish(self) -> None:
        import numpy as np

        stack, self._open = self._open, None
        stack.close()  # fsync and rename (atomic_open)
        lengths = np.concatenate(self._lengths)
        self.records.append(
            {
                "name": self._name,
                "documents": len(lengths),
                "tokens": self._tokens,
                "sha256": self._digest.hexdigest(),
                **_write_index(self.out_dir, self._name, lengths, self.spec),
            }
        )


_fdatasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


def _encoded_batches(
    paths: Sequence[str],
    spec: ShardSpec,
    tok: "Tokenizer",
    num_threads: int | None,
) -> Iterator[tuple[bytes, "numpy.ndarray", int]]:
    """(ids bytes, per-document id counts, input bytes) per batch of documents,
    the next batch read while this one is encoded."""
    import numpy as np

    itemsize = np.dtype(spec.dtype).itemsize
    cores = os.cpu_count() or 1
    threads = min(num_threads or cores, cores)  # capped at the cores, as the core's pools are
    batch_bytes = min(SEPARATED_BATCH_BYTES_PER_THREAD * threads, SEPARATED_BATCH_BYTES_MAX)

    def batches():
        for path in paths:
            kind = spec.format or infer_format([path])
            if kind == "text" and spec.separator:
                for batch in separated_batches(path, spec.separator, batch_bytes):
                    yield path, batch, None, batch.first, batch.document_bytes
                continue
            field = spec.field if kind == "jsonl" else spec.column
            # One document per file: errors name the file alone.
            whole = kind == "text"
            for data, offsets, first in document_batches(path, kind, field):
                yield path, data, offsets, None if whole else first, len(data)

    for path, data, offsets, record, nbytes in _read_ahead(batches()):
        ids, lengths = tok._core.encode_documents(
            data,
            offsets,
            path,
            record,
            [],
            [],
            spec.eot,
            itemsize,
            spec.errors == "replace",
            num_threads,
        )
        yield ids, np.frombuffer(lengths, dtype="<i8"), nbytes


def _read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """`items`, the next one produced on a helper thread while the caller
    works on this one (reading, decompressing and JSON parsing overlap encoding)."""
    done = object()
    with ThreadPoolExecutor(1, thread_name_prefix="bytepair-read") as reader:
        ahead = reader.submit(next, items, done)
        while (item := ahead.result()) is not done:
            ahead = reader.submit(next, items, done)
            yield item


def _write_index(
    out_dir: str, name: str, lengths: "numpy.ndarray", spec: ShardSpec
) -> dict[str, str]:
    """Write a shard's document index beside its ids; returns its manifest entry."""
    import numpy as np

    if spec.layout == "megatron":
        path = os.path.join(out_dir, name + ".idx")
        data = megatron_index(lengths, spec.dtype)
        atomic_write(path, data)
    else:
        path = os.path.join(out_dir, name + ".offsets.npy")
        offsets = np.zeros(len(lengths) + 1, dtype="<i8")
        np.cumsum(lengths, out=offsets[1:])
        buffer = io.BytesIO()  # hashed as written, not read back
        np.save(buffer, offsets, allow_pickle=False)
        data = buffer.getbuffer()
        atomic_write(path, data)
    return {"index": os.path.basename(path), "index_sha256": hashlib.sha256(data).hexdigest()}
