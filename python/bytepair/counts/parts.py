"""The Parquet files of word counts: one *part* holds ``word: binary, count:
int64`` rows, sorted by word, each word once, zstd-compressed.

Every engine writes its parts with `write_part` (from the Arrow buffers of
`_core.WordCounter.to_buckets`) and reads them back with `part_batches` /
`add_part`, which accept parts written by any engine (binary or large_binary
words, any integer count type). No Python object is made per word.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bytepair import _core
from bytepair.atomic import atomic_open
from bytepair.folders import HashingWriter

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.parquet

READ_ROWS = 1 << 16  # rows per batch when a part is read
# Rows per Parquet row group of a part: readers decode a row group at a time,
# so this bounds what reading one part holds (a few MB, where row groups of
# a million rows held tens of MB per column).
GROUP_ROWS = 1 << 16


def _pyarrow():
    """pyarrow and pyarrow.parquet, imported on first use (as numpy is, by the
    functions that read Arrow buffers): `import bytepair` stays light."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq


def part_name(index: int) -> str:
    """The file name of part (or bucket) `index`: ``part-00007.parquet``."""
    return f"part-{index:05d}.parquet"


def write_part(path: str, data: bytes, offsets: bytes, counts: bytes) -> dict[str, Any]:
    """Write one part at `path`, atomically, from Arrow buffers: `data` the
    words back to back, `offsets` n + 1 little-endian int64, `counts` n
    little-endian int64 (one bucket of `_core.WordCounter.to_buckets`).

    Returns:
        ``{"rows": n, "pre_tokens": sum of the counts (exact past 2**64),
        "sha256": hex digest of the file}``: a manifest part entry without its path.
    """
    with PartWriter(path) as writer:
        writer.write(data, offsets, counts)
    return writer.written


def open_part(path: str) -> "pyarrow.parquet.ParquetFile":
    """A part's Parquet reader; ValueError naming the file if it is not Parquet."""
    pa, pq = _pyarrow()
    try:
        # No pre-buffering: it held each row group's raw column chunks besides
        # the decoded batch (~30 MiB more RSS when reading a part, no faster
        # on a local file).
        return pq.ParquetFile(path, pre_buffer=False)
    except (pa.ArrowException, ValueError) as e:
        # ValueError: pyarrow's UnicodeDecodeError on a bad column name.
        raise ValueError(f"{path}: not a word-counts part (Parquet): {e}") from None


def _batches_of(
    pf: "pyarrow.parquet.ParquetFile", path: str, batch_rows: int
) -> Iterator["pyarrow.RecordBatch"]:
    """The record batches of a part; damaged data is a ValueError naming the file."""
    pa, _ = _pyarrow()
    # One thread: decoding the two columns on pyarrow's pool left each
    # thread's allocations resident (~30 MiB more RSS after reading a part).
    batches = pf.iter_batches(batch_size=batch_rows, columns=["word", "count"], use_threads=False)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError, ValueError) as e:
            raise ValueError(f"{path}: damaged word-counts part: {e}") from None
        yield batch


def part_batches(path: str, batch_rows: int = READ_ROWS) -> Iterator[tuple[bytes, bytes, bytes]]:
    """(data, offsets, counts) buffers of a part, `batch_rows` rows at a time, in
    the layout `write_part` takes. Reads parts written by any engine (binary or
    large_binary words).

    Raises:
        ValueError: not a Parquet file, or columns other than word: binary,
            count: integer (names the file).
    """
    pa, _ = _pyarrow()
    import numpy as np

    pf = open_part(path)
    schema = pf.schema_arrow
    if (
        "word" not in schema.names
        or "count" not in schema.names
        or not (
            pa.types.is_binary(schema.field("word").type)
            or pa.types.is_large_binary(schema.field("word").type)
        )
        or not pa.types.is_integer(schema.field("count").type)
    ):
        raise ValueError(f"{path}: expected columns word: binary and count: int64, got {schema}")
    for batch in _batches_of(pf, path, batch_rows):
        try:
            words = batch.column(0).cast(pa.large_binary())
            counts = batch.column(1).cast(pa.int64())  # a uint64 count past 2**63 fails here
        except pa.ArrowException as e:
            raise ValueError(f"{path}: {e}") from None
        if words.null_count or counts.null_count:
            raise ValueError(f"{path}: null word or count")
        _, offsets_buf, data_buf = words.buffers()
        offsets = np.frombuffer(
            offsets_buf, dtype="<i8", count=len(words) + 1, offset=words.offset * 8
        )
        start, end = int(offsets[0]), int(offsets[-1])
        data = b"" if data_buf is None else data_buf.slice(start, end - start).to_pybytes()
        count_bytes = np.frombuffer(
            counts.buffers()[1], dtype="<i8", count=len(counts), offset=counts.offset * 8
        )
        yield data, (offsets - start).tobytes(), count_bytes.tobytes()


def add_part(counter: _core.WordCounter, path: str, unique: bool = True) -> None:
    """Sum the rows of the part at `path` into `counter` (streamed in batches).
    ValueError names the file for a bad part (negative count, repeated word...)."""
    for data, offsets, counts in part_batches(path):
        try:
            counter.add_columns(data, offsets, counts, unique)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


def load_part(
    counter: _core.WordCounter,
    path: str,
    max_memory: int | None = None,
    sample: bool = False,
    **run: int,
) -> None:
    """Append the rows of the part at `path` to `counter` as rows
    (``WordCounter.load_rows``: each word of an artifact is in one part, so
    nothing is summed), within the training budget `max_memory` of a run of
    `run` (``ids``, ``merges``), keeping a sample of the rare words when
    `sample`. ValueError names the file for a bad part."""
    for data, offsets, counts in part_batches(path):
        try:
            counter.load_rows(data, offsets, counts, max_memory, sample=sample, **run)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        if max_memory is not None:
            # pyarrow's allocator keeps each batch's freed buffers for reuse:
            # ~120 MiB over a part of 4 M words, past a budget of 64 MiB.
            release_arrow_memory()


def release_arrow_memory() -> None:
    """Give pyarrow's freed buffers back to the system (its allocator keeps
    them for reuse), before work that needs the memory more (training)."""
    _pyarrow()[0].default_memory_pool().release_unused()


def _last_word(data: bytes, offsets: bytes) -> bytes:
    """The last word of a batch in Arrow buffers (a part's batches are sorted)."""
    import numpy as np

    start, end = np.frombuffer(offsets, dtype="<i8")[-2:].tolist()
    return data[start:end]


def _first_word(data: bytes, offsets: bytes) -> bytes:
    import numpy as np

    return data[: int(np.frombuffer(offsets, dtype="<i8", count=2, offset=0)[1])]


def merge_parts(paths: Sequence[str], out: str, batch_rows: int = READ_ROWS) -> dict[str, Any]:
    """Sum the parts at `paths` (each sorted, each word once) into one sorted
    part at `out`, atomically, holding only a batch of `batch_rows` rows of
    each input at a time: a k-way merge (`_core.merge_runs`), so memory does
    not grow with the words of the bucket. Each round merges the rows up to
    the smallest last word among the inputs' current batches (no later batch
    holds a word at or below it), then refills the inputs it used up.

    Returns:
        ``{"rows", "pre_tokens", "sha256"}`` of the part (as `write_part`).

    Raises:
        ValueError: a file that is not a valid part (names it), a part out of
            order, or a summed count beyond 2**63 - 1 (Parquet INT64).
    """
    readers = [part_batches(p, batch_rows) for p in paths]
    runs: dict[int, list[Any]] = {}  # input -> [data, offsets, counts, first row not taken]
    last: dict[int, bytes] = {}  # input -> last word of its batch before

    def refill(i: int) -> None:
        for data, offsets, counts in readers[i]:
            if counts:
                if i in last and _first_word(data, offsets) <= last[i]:
                    raise ValueError(f"{paths[i]}: words out of order (a part is sorted)")
                last[i] = _last_word(data, offsets)
                runs[i] = [data, offsets, counts, 0]
                return
        runs.pop(i, None)

    for i in range(len(readers)):
        refill(i)
    with PartWriter(out) as writer:
        while runs:
            order = sorted(runs)
            upto = min(last[i] for i in order)
            try:
                data, offsets, counts, taken = _core.merge_runs(
                    [tuple(runs[i]) for i in order], upto
                )
            except ValueError as e:
                raise ValueError(f"{out}: merging {len(paths)} parts: {e}") from None
            for i, next_row in zip(order, taken):
                runs[i][3] = next_row
                if next_row * 8 == len(runs[i][2]):
                    refill(i)
            writer.write(data, offsets, counts)
    return writer.written


class PartWriter:
    """Write one part at `path` a batch at a time (atomically, as `write_part`
    does whole): ``with PartWriter(path) as w: w.write(data, offsets, counts)``,
    batches in word order; ``w.written`` is then ``{"rows", "pre_tokens",
    "sha256"}``. Row groups of `GROUP_ROWS` rows; what it holds is one row group."""

    def __init__(self, path: str):
        self.path = path
        self.written: dict[str, Any] = {}

    def __enter__(self) -> "PartWriter":
        pa, pq = _pyarrow()
        self._digest = hashlib.sha256()
        self._schema = pa.schema([("word", pa.large_binary()), ("count", pa.int64())])
        self._file = atomic_open(self.path)
        sink = HashingWriter(self._file.__enter__(), self._digest)
        self._writer = pq.ParquetWriter(sink, self._schema, compression="zstd")
        self._pending: list[Any] = []
        self._rows = self._pre_tokens = 0
        return self

    def write(self, data: bytes, offsets: bytes, counts: bytes) -> None:
        """Add rows (Arrow buffers, as `write_part` takes them)."""
        pa, _ = _pyarrow()
        n = len(counts) // 8
        words = pa.Array.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        count_col = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(counts)])
        self._pending.append(pa.RecordBatch.from_arrays([words, count_col], schema=self._schema))
        self._rows += n
        self._pre_tokens += _exact_sum(counts)
        if sum(b.num_rows for b in self._pending) >= GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            pa, _ = _pyarrow()
            self._writer.write_table(pa.Table.from_batches(self._pending, self._schema), GROUP_ROWS)
            self._pending = []

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if kind is None:
                self._flush()
            self._writer.close()
        finally:
            self._file.__exit__(kind, value, traceback)
        if kind is None:
            self.written = {
                "rows": self._rows,
                "pre_tokens": self._pre_tokens,
                "sha256": self._digest.hexdigest(),
            }


def _exact_sum(counts: bytes) -> int:
    """Sum of little-endian int64 counts, exact past 2**64 (a numpy uint64 sum
    wraps): the high and low 32 bits apart, each summing below 2**64 for fewer
    than 2**32 rows."""
    import numpy as np

    values = np.frombuffer(counts, dtype="<i8").view(np.uint64)
    high = int((values >> np.uint64(32)).sum(dtype=np.uint64))
    low = int((values & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))
    return (high << 32) + low
