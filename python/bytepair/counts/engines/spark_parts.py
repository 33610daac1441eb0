"""Spark's output as parts of the word-counts artifact: each Spark partition's
sorted Parquet file(s) rewritten as one part (`bytepair.counts.parts.PartWriter`),
a batch at a time, by one Spark task per part, with the totals rows taken out
(see `bytepair.counts.engines.on_spark`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from bytepair.counts.parts import PartWriter, part_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_SPARK_PART = re.compile(r"^part-(\d+)-.*\.parquet$")


def rewrite_parts(
    session: "SparkSession",
    scratch: str,
    staging: str,
    parts: int,
    run_action: Callable[[Callable[[], Any]], Any],
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Spark's output file(s) of partition i -> part i (`PartWriter`: our
    schema, zstd, SHA-256), one Spark task per part, so the words stay on the
    executors; partitions Spark wrote no file for become empty parts. Returns
    (what was written for each part, in part order; {"documents", "bytes",
    "pruned_words", "pruned_pre_tokens"} of the totals rows), small.
    `run_action` runs the Spark job (`on_spark.run_action`: workers' errors
    come back as they were raised)."""
    by_partition: dict[int, list[str]] = {}
    for name in sorted(os.listdir(scratch)):
        m = _SPARK_PART.match(name)
        if m:
            by_partition.setdefault(int(m.group(1)), []).append(os.path.join(scratch, name))
    if any(i >= parts for i in by_partition):
        raise RuntimeError(
            f"Spark wrote partitions {sorted(by_partition)}, expected at most {parts}"
        )
    jobs = [(i, by_partition.get(i, []), staging) for i in range(parts)]
    results = run_action(
        lambda: session.sparkContext.parallelize(jobs, len(jobs)).map(_rewrite_part).collect()
    )
    totals = {
        key: sum(r[2][key] for r in results)
        for key in ("documents", "bytes", "pruned_words", "pruned_pre_tokens")
    }
    return [r[1] for r in sorted(results, key=lambda r: r[0])], totals


def _rewrite_part(
    job: tuple[int, list[str], str],
) -> tuple[int, dict[str, Any], dict[str, int]]:
    """One Spark task: rewrite partition i's files as part i, a batch at a
    time (`PartWriter`), checking that the words strictly increase (sorted,
    each once), as a part's must; returns (i, what the writer wrote, the
    totals of the totals rows: documents, bytes, pruned_words, pruned_pre_tokens)."""
    import pyarrow.parquet as pq

    i, files, staging = job
    totals = {"documents": 0, "bytes": 0, "pruned_words": 0, "pruned_pre_tokens": 0}
    last = None
    with PartWriter(os.path.join(staging, part_name(i))) as writer:
        for path in files:
            for batch in pq.ParquetFile(path).iter_batches(columns=["word", "count", "bytes"]):
                data, offsets, counts, first, last_word = _batch_buffers(batch, totals, path)
                if first is None:
                    continue
                if last is not None and first <= last:
                    raise RuntimeError(f"{path}: Spark's output is not sorted by word")
                writer.write(data, offsets, counts)
                last = last_word
    return i, writer.written, totals


def _batch_buffers(
    batch, totals: dict[str, int], path: str
) -> tuple[bytes, bytes, bytes, bytes | None, bytes | None]:
    """(data, offsets, counts, first word, last word) of one batch of a Spark
    partition's rows, with its totals rows (null word: documents, bytes; empty
    word: pruned words, pre-tokens) added to `totals` and left out. Checks that
    the words strictly increase within the batch."""
    import pyarrow as pa
    import pyarrow.compute as pc

    words, counts, nbytes = batch.column(0), batch.column(1), batch.column(2)
    stats = pc.is_null(words)
    totals["documents"] += int(pc.sum(counts.filter(stats)).as_py() or 0)
    totals["bytes"] += int(pc.sum(nbytes.filter(stats)).as_py() or 0)
    valid = pc.is_valid(words)
    dropped = pc.and_(valid, pc.equal(pc.binary_length(words), 0))
    totals["pruned_words"] += int(pc.sum(counts.filter(dropped)).as_py() or 0)
    totals["pruned_pre_tokens"] += int(pc.sum(nbytes.filter(dropped)).as_py() or 0)
    keep = pc.and_(valid, pc.invert(dropped))
    words = words.filter(keep).cast(pa.large_binary())
    counts = counts.filter(keep).cast(pa.int64())
    if len(words) == 0:
        return b"", np.zeros(1, "<i8").tobytes(), b"", None, None
    if (
        len(words) > 1
        and not pc.all(pc.less(words.slice(0, len(words) - 1), words.slice(1))).as_py()
    ):
        raise RuntimeError(f"{path}: Spark's output is not sorted by word, each word once")
    if counts.null_count:
        raise RuntimeError(f"{path}: a null count in Spark's output")
    _, offsets_buf, data_buf = words.buffers()
    offsets = np.frombuffer(offsets_buf, "<i8", count=len(words) + 1, offset=words.offset * 8)
    start, end = int(offsets[0]), int(offsets[-1])
    data = b"" if data_buf is None else data_buf.slice(start, end - start).to_pybytes()
    count_bytes = np.frombuffer(
        counts.buffers()[1], "<i8", count=len(counts), offset=counts.offset * 8
    ).tobytes()
    return (
        data,
        (offsets - start).tobytes(),
        count_bytes,
        words[0].as_py(),
        words[len(words) - 1].as_py(),
    )
