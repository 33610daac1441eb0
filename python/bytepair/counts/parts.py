"""The Parquet files of word counts: one *part* holds ``word: binary, count:
int64`` rows, sorted by word, each word once, zstd-compressed.

Every engine writes its parts with `write_part` (from the Arrow buffers of
`_core.WordCounter.to_buckets`) and reads them back with `part_batches` /
`add_part`, which accept parts written by any engine (binary or large_binary
words, any integer count type). No Python object is made per word.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from bytepair import _core
from bytepair.atomic import atomic_open
from bytepair.folders import HashingWriter

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.parquet

READ_ROWS = 1 << 16  # rows per batch when a part is read


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
    pa, pq = _pyarrow()
    import numpy as np

    n = len(counts) // 8
    words = pa.Array.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    count_col = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(counts)])
    table = pa.table({"word": words, "count": count_col})
    digest = hashlib.sha256()
    with atomic_open(path) as f:
        pq.write_table(table, HashingWriter(f, digest), compression="zstd")
    # Exact past 2**64 (a numpy uint64 sum wraps): the high and low 32 bits
    # apart, each summing below 2**64 for fewer than 2**32 rows.
    values = np.frombuffer(counts, dtype="<i8").view(np.uint64)
    high = int((values >> np.uint64(32)).sum(dtype=np.uint64))
    low = int((values & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))
    total = (high << 32) + low
    return {"rows": n, "pre_tokens": total, "sha256": digest.hexdigest()}


def open_part(path: str) -> "pyarrow.parquet.ParquetFile":
    """A part's Parquet reader; ValueError naming the file if it is not Parquet."""
    pa, pq = _pyarrow()
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, ValueError) as e:
        # ValueError: pyarrow's UnicodeDecodeError on a bad column name.
        raise ValueError(f"{path}: not a word-counts part (Parquet): {e}") from None


def _batches_of(
    pf: "pyarrow.parquet.ParquetFile", path: str, batch_rows: int
) -> Iterator["pyarrow.RecordBatch"]:
    """The record batches of a part; damaged data is a ValueError naming the file."""
    pa, _ = _pyarrow()
    batches = pf.iter_batches(batch_size=batch_rows, columns=["word", "count"])
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
