"""Count pre-tokens on Apache Spark into a word-counts artifact (see
`bytepair.counts.artifact`; the steps shared with the other engines are
`bytepair.counts.protocol`).

The Spark engine runs the Rust counter inside ``DataFrame.mapInArrow``: each
map task counts its whole partition in one `_core.WordCounter` (so each word
leaves a task once, already summed: the map-side combine is ours), then Spark
shuffles by word (``repartition(parts, "word")``), sums, sorts within each
partition and writes Parquet. A second small job (one task per part) re-writes
each Spark output file as one part of our format (`write_part`: binary
``word``, int64 ``count``, zstd, strictly increasing words, checked) and returns
its rows and SHA-256; the driver writes the manifest (`finish`). Word counts
never reach the driver.

Two entry points:
- `count_files_on_spark` (``bytepair.count(..., engine="spark")``): files read
  by Spark's ``binaryFile`` source, each file's bytes counted by the same readers
  as the local engine (`bytepair.counts.sources.count_file`), so counts, totals and
  errors are those of the local engine. A file is one row: at most 2 GiB
  (Spark's limit for one binary value), and it is not split across tasks.
- `count_words`: a DataFrame you already hold (any Spark source), one string
  or binary column of documents; null documents are skipped.

Totals (documents, bytes) travel with the word counts, as one row per map task
with a null word, and what a task's memory budget dropped (distinct words,
pre-tokens) as a row with the empty word (never a pre-token), so a retried or
recomputed task is counted once, as Spark guarantees for shuffle data
(accumulators in a transformation may count twice); the highest minimum count
a budget applied is a max, which a retry cannot change, taken by an accumulator.
With `max_memory` each map task counts within it (lossy counting); Spark's
shuffle and aggregation spill to disk on their own, and the parts are written
a batch at a time.

The artifact folder must be on a filesystem that the driver and every executor
see at the same path (local mode, or a shared mount): Spark writes into its
staging folder and the driver reads from it. Spark's hash partitioning is not
the local engine's bucket hash, so the manifest's ``bucket_hash`` is null: the
same word may be in a different part than in a local artifact (the content is
the same). pyspark is imported only when a function here runs.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bytepair.counts.artifact import WordCounts
from bytepair.counts.engines.spark_parts import rewrite_parts
from bytepair.counts.protocol import SHARDS, check_max_memory, finish, staging_dir
from bytepair.counts.sources import (
    CountSpec,
    SourceStats,
    arrow_documents,
    count_file,
    input_size,
    is_remote,
    local_path,
)
from bytepair.progress import ProgressBar

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

# mapInArrow output: a word and its count; a row with a null word carries a
# task's totals instead (documents in `count`, text bytes in `bytes`), one with
# the empty word what its budget dropped (words in `count`, pre-tokens in `bytes`).
_SCHEMA = "word binary, count long, bytes long"
_BATCH_ROWS = 1 << 16  # rows per Arrow batch handed back to Spark


# -- the map: one Rust counter per partition ------------------------------------------


def _count_partition_of_files(
    batches: Iterator["pa.RecordBatch"],
    spec: CountSpec,
    names: dict[str, str],
    fail_once: str | None,
    done: tuple[Any, Any] | None = None,
    budget: tuple[int | None, Any] = (None, None),
) -> Iterator["pa.RecordBatch"]:
    """mapInArrow function over ``binaryFile`` rows (path, content): count every
    file of the partition with `count_file`, then yield its word counts.
    `done`: (files, bytes) accumulators for the driver's progress bar;
    `budget`: (max_memory of the task's counts, the max-accumulator of the
    minimum counts it applied)."""
    counter, stats = spec.counter(budget[0]), SourceStats()
    threads = task_threads()
    for batch in batches:
        paths, contents = batch.column(0).to_pylist(), batch.column(1)
        for i, path in enumerate(paths):
            name = names.get(_spark_name(path), path)
            content = contents[i].as_py()
            stats += count_file(counter, name, spec, num_threads=threads, content=content)
            if done is not None:
                done[0].add(1)
                done[1].add(len(content))
    _maybe_fail(fail_once)
    yield from _counted_batches(counter, stats, budget[1])


def _count_partition_of_texts(
    batches: Iterator["pa.RecordBatch"],
    spec: CountSpec,
    column: str,
    fail_once: str | None,
    budget: tuple[int | None, Any] = (None, None),
) -> Iterator["pa.RecordBatch"]:
    """mapInArrow function over one string or binary column: documents go to
    Rust as Arrow buffers, a batch at a time; nulls are skipped. `budget` as
    for `_count_partition_of_files`."""
    from pyspark import TaskContext

    counter, stats = spec.counter(budget[0]), SourceStats()
    threads, replace = task_threads(), spec.errors == "replace"
    context = TaskContext.get()
    source = f"DataFrame column {column!r}, partition {context.partitionId() if context else 0}"
    for batch in batches:
        present = batch.column(0).drop_null()
        if len(present):
            data, offsets, _ = arrow_documents(present, source, 0, column)
            counter.count_documents(data, offsets, source, None, threads, replace, None)
            stats += SourceStats(documents=len(present), bytes=len(data))
    _maybe_fail(fail_once)
    yield from _counted_batches(counter, stats, budget[1])


def _counted_batches(counter, stats: SourceStats, min_counts: Any) -> Iterator["pa.RecordBatch"]:
    """The counter's words as (word, count, null) batches, then one totals row
    (null word, documents, bytes) and, when its budget dropped words, one
    pruned row (empty word, words, pre-tokens; the minimum count goes to the
    accumulator `min_counts`). Built from the Rust buffers, no per-word objects."""
    import pyarrow as pa

    words_dropped, pre_tokens_dropped, min_count = counter.pruned
    if min_count and min_counts is not None:
        min_counts.add(min_count)
    ((data, offsets, counts),) = counter.to_buckets(1)
    n = len(counts) // 8
    words = pa.Array.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    count_col = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(counts)])
    no_bytes = pa.nulls(min(n, _BATCH_ROWS), pa.int64())
    for start in range(
        0, n, _BATCH_ROWS
    ):  # int32 offsets (Spark's binary) hold any slice of this size
        size = min(_BATCH_ROWS, n - start)
        yield pa.RecordBatch.from_arrays(
            [
                words.slice(start, size).cast(pa.binary()),
                count_col.slice(start, size),
                no_bytes.slice(0, size),
            ],
            ["word", "count", "bytes"],
        )
    yield pa.RecordBatch.from_arrays(
        [
            pa.array([None] + ([b""] if words_dropped else []), pa.binary()),
            pa.array([stats.documents] + ([words_dropped] if words_dropped else []), pa.int64()),
            pa.array([stats.bytes] + ([pre_tokens_dropped] if words_dropped else []), pa.int64()),
        ],
        ["word", "count", "bytes"],
    )


class _MaxParam:
    """Spark accumulator of a maximum (`pyspark.AccumulatorParam`): a task
    retried or recomputed adds the same value again, which a max ignores."""

    def zero(self, value: int) -> int:
        return 0

    def addInPlace(self, a: int, b: int) -> int:  # noqa: N802 (pyspark's name)
        return max(a, b)


def task_threads() -> int:
    """Threads for the running Spark task: the cores Spark gave it
    (``spark.task.cpus``); 1 outside a task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return max(1, context.cpus()) if context is not None else 1


def _maybe_fail(marker: str | None) -> None:
    """Fault injection for tests: fail the first task that gets here, after counting."""
    if marker is not None and not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("injected failure (first attempt)")


def _spark_name(path: str) -> str:
    """A local file as Spark's ``binaryFile`` names it: ``file:/a/b``."""
    return "file:" + path[len("file://") :] if path.startswith("file:///") else path


# -- the driver: shuffle, write, re-write as parts, commit ----------------------------------


def count_words(
    df: "DataFrame",
    text_col: str = "text",
    out: str | os.PathLike = "counts",
    *,
    pattern: str = "gpt2",
    special_tokens: Sequence[str] = (),
    parts: int | None = None,
    errors: str = "strict",
    max_memory: int | None = None,
    spark: "SparkSession | None" = None,
    _fail_once: str | None = None,
) -> WordCounts:
    """Count the pre-tokens of the documents in column `text_col` of `df` into a
    word-counts artifact at `out` (algorithm: the module docs; Spark's
    ``DataFrame.mapInArrow`` runs the Rust counter on each partition).

    >>> df = spark.createDataFrame([("low lower",), (None,)], "text string")  # doctest: +SKIP
    >>> counts = count_words(df, "text", "counts", parts=2)                  # doctest: +SKIP
    >>> counts.totals.documents, counts.totals.pre_tokens, dict(counts.items())  # doctest: +SKIP
    (1, 2, {b'low': 1, b' lower': 1})

    Args:
        df: a Spark DataFrame; only `text_col` is read.
        text_col: a string or binary column, one document per row (a pre-token
            never spans two rows); null rows are skipped and not counted as
            documents.
        out: the artifact folder, on a filesystem the driver and executors
            share (an older artifact there is replaced once the new one is complete).
        pattern, special_tokens: as in `bytepair.train`.
        parts: number of Parquet parts; default: Spark's default parallelism.
        errors: ``strict`` (bytes of a binary column that are not UTF-8 raise)
            or ``replace`` (U+FFFD).
        max_memory: the budget in bytes of each map task's counts (lossy
            counting past it; the manifest says what was dropped); None: exact.
        spark: unused here beyond `df`'s own session (accepted for symmetry).

    Returns:
        WordCounts: the opened artifact; totals count non-null documents and
        their bytes (UTF-8).

    Raises:
        ValueError: no column `text_col`, a column that is not string or
            binary, a bad pattern, special token or `parts`, or bad UTF-8 in
            strict mode (the message of the worker's error).
    """
    from pyspark.sql.types import BinaryType, StringType

    spec = CountSpec(pattern, tuple(special_tokens), "text", text_col, errors)
    spec.counter()  # a bad pattern fails here, before any task starts
    if text_col not in df.columns:
        raise ValueError(
            f"no column {text_col!r} in the DataFrame (columns: {', '.join(df.columns)})"
        )
    kind = df.schema[text_col].dataType
    if not isinstance(kind, (StringType, BinaryType)):
        raise ValueError(f"column {text_col!r} is {kind.simpleString()}, expected string or binary")
    max_memory = check_max_memory(max_memory)
    min_counts = df.sparkSession.sparkContext.accumulator(0, _MaxParam())
    fn = functools.partial(
        _count_partition_of_texts,
        spec=spec,
        column=text_col,
        fail_once=_fail_once,
        budget=(max_memory, min_counts),
    )
    counted = df.select(text_col).mapInArrow(fn, _SCHEMA)
    return _write_artifact(
        counted,
        spec,
        os.fspath(out),
        _check_parts(parts, df.sparkSession),
        budget=(max_memory, min_counts),
    )


def count_files_on_spark(
    paths: Sequence[str],
    spec: CountSpec,
    out: str,
    *,
    parts: int | None = None,
    max_memory: int | None = None,
    progress: bool = False,
    spark: "SparkSession | None" = None,
    _fail_once: str | None = None,
) -> WordCounts:
    """The Spark engine of `bytepair.count`: files read by Spark's ``binaryFile``
    source (each file one row), counted per partition by `count_file` in
    ``mapInArrow`` (see the module docs). Counts and totals equal the local engine's.

    Args:
        paths: input files (local paths or URLs Spark's filesystems read, such
            as ``hdfs://`` or ``s3a://``), read as `spec.format`.
        spec: pattern, special tokens, format and decoding policy.
        out: the artifact folder, on a filesystem the driver and executors share.
        parts: number of Parquet parts; default: Spark's default parallelism.
        max_memory: the budget in bytes of each map task's counts (lossy
            counting past it); None: exact counts.
        progress: a bar of files and bytes counted on the driver (updated as
            map tasks finish; Spark's own console bar is off on a session
            created here, so the two do not overwrite each other).
        spark: the SparkSession to run on; default: the active one, else a new
            ``local[*]`` session, stopped when done.

    Returns:
        WordCounts: the opened artifact.

    Raises:
        ValueError: bad input text (the message names the file, as the local
            engine's does; Spark retries the task first), a bad `parts`, or a
            file whose name starts with ``_`` or ``.`` (Spark's file sources
            skip those without a word).
        ImportError: pyspark, or pandas (its ``mapInArrow`` needs it), is not
            installed.
    """
    _check_names(paths)
    empty = _empty_local_files(paths, spec)
    session, created = spark_session(spark)
    try:
        # Workers name files as the caller did: Spark reports ``file:/abs/path``.
        names = {
            "file:" + os.path.abspath(local_path(p)) if not is_remote(p) else p: p for p in paths
        }
        files = (
            session.read.format("binaryFile")
            .load([_spark_key(p) for p in paths])
            .select("path", "content")
        )
        done = (
            (session.sparkContext.accumulator(0), session.sparkContext.accumulator(0))
            if progress
            else None
        )
        budget = (max_memory, session.sparkContext.accumulator(0, _MaxParam()))
        fn = functools.partial(
            _count_partition_of_files,
            spec=spec,
            names=names,
            fail_once=_fail_once,
            done=done,
            budget=budget,
        )
        with _ProgressFromAccumulators(done, paths, skipped=empty):
            return _write_artifact(
                files.mapInArrow(fn, _SCHEMA),
                spec,
                out,
                _check_parts(parts, session),
                documents=empty if spec.format == "text" else 0,
                budget=budget,
            )
    finally:
        if created:
            session.stop()


class _ProgressFromAccumulators:
    """A driver-side bar of files and bytes counted, read twice a second from
    the map tasks' accumulators (Spark merges them into the driver as each task
    ends, so the bar moves per finished task). A retried task adds its files
    again; the bar is capped at the total. `skipped`: empty files, which Spark
    never hands to a task."""

    def __init__(self, done: tuple[Any, Any] | None, paths: Sequence[str], *, skipped: int = 0):
        self.done, self.files, self.skipped = done, len(paths), skipped
        self.total = sum(input_size(p) for p in paths) if done is not None else 0
        self.stop = threading.Event()

    def __enter__(self) -> "_ProgressFromAccumulators":
        if self.done is not None:
            self.bar = ProgressBar(self.total, "counting", unit="B", scale=True)
            self.thread = threading.Thread(
                target=self._poll, name="bytepair-spark-progress", daemon=True
            )
            self.thread.start()
        return self

    def _poll(self) -> None:
        while True:
            stopping = self.stop.wait(0.5)
            self.bar.update_to(min(self.total, self.done[1].value))
            self.bar.set_postfix(
                files=f"{min(self.files, self.skipped + self.done[0].value)}/{self.files}"
            )
            if stopping:
                return

    def __exit__(self, *exc) -> None:
        if self.done is not None:
            self.stop.set()
            self.thread.join()
            self.bar.__exit__(*exc)


def _empty_local_files(paths: Sequence[str], spec: CountSpec) -> int:
    """Spark's file sources skip empty files, so the driver accounts for the
    local ones as the local engine does: a text document each (no words); not
    a Parquet file (ValueError). Empty remote files are not seen at all."""
    empty = [p for p in paths if not is_remote(p) and os.path.getsize(local_path(p)) == 0]
    if empty and spec.format == "parquet":
        raise ValueError(f"{empty[0]}: not a Parquet file: the file is empty")
    return len(empty)


def _spark_key(path: str) -> str:
    """The path as given to Spark: local paths absolute (Spark's default
    filesystem may be HDFS), URLs as they are; glob characters escaped, so
    ``a[1].txt`` names that file (Spark would expand it as a pattern)."""
    path = path if is_remote(path) else "file://" + os.path.abspath(local_path(path))
    return re.sub(r"([{}\[\]*?\\])", r"\\\1", path)


def _check_names(paths: Sequence[str]) -> None:
    """ValueError for a file Spark's file sources would skip without a word:
    names starting with ``_`` or ``.`` (hidden, or Spark's own metadata)."""
    for p in paths:
        if os.path.basename(p.rstrip("/")).startswith(("_", ".")):
            raise ValueError(
                f"{p}: Spark's file sources skip files whose names start with '_' or '.'; "
                "rename it, or count with engine='local'"
            )


def spark_session(spark: "SparkSession | None") -> tuple["SparkSession", bool]:
    """(`spark`, or the active session, or a new ``local[*]`` one; whether it
    was created here, so the caller stops it when done). Python workers of a
    session made here run this interpreter, so they import the same bytepair."""
    from pyspark.sql import SparkSession

    if spark is not None:
        return spark, False
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[*]")
        .appName("bytepair count")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    return session, True


def _check_parts(parts: int | None, session: "SparkSession") -> int:
    if parts is None:
        return max(1, session.sparkContext.defaultParallelism)
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"parts={parts!r} must be a positive integer")
    return parts


def _write_artifact(
    counted: "DataFrame",
    spec: CountSpec,
    out: str,
    parts: int,
    *,
    documents: int = 0,
    budget: tuple[int | None, Any] = (None, None),
) -> WordCounts:
    """Shuffle by word, sum, sort, write with Spark; re-write as our parts;
    `finish`. A failed or interrupted run removes its staging folder (Spark
    retries failed tasks itself; a killed Spark count starts over).
    `budget`: (the map tasks' max_memory, the accumulator of their minimum counts)."""
    from pyspark.sql import functions as F

    staging = staging_dir(out)
    try:
        scratch = os.path.join(staging, SHARDS, "spark")  # `commit` removes SHARDS
        # Each task already summed its words, so a map-side combine would gain
        # nothing: repartition first, and the aggregate reuses that partitioning
        # (one shuffle, not two).
        summed = (
            counted.repartition(parts, "word")
            .groupBy("word")
            .agg(F.sum("count").alias("count"), F.sum("bytes").alias("bytes"))
            .sortWithinPartitions("word")
        )
        run_action(
            lambda: (
                summed.write.mode("overwrite")
                .option("compression", "zstd")
                .parquet("file://" + scratch)
            )
        )
        written, totals = rewrite_parts(counted.sparkSession, scratch, staging, parts, run_action)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    totals["documents"] += documents
    max_memory, min_counts = budget
    pruned = (totals.pop("pruned_words"), totals.pop("pruned_pre_tokens"))
    min_count = min_counts.value if min_counts is not None and pruned[0] else 0
    # Spark's hash partitioning is not our bucket hash: no `bucket_hash` in the manifest.
    path = finish(
        staging,
        out,
        spec,
        written,
        totals,
        engine="spark",
        bucket_hash=None,
        max_memory=max_memory,
        pruned=(*pruned, min_count),
    )
    return WordCounts.open(path)


def run_action(action: Callable[[], Any]) -> Any:
    """Run a Spark action (``action()``); a ValueError raised in a Python worker (bad input
    text) comes back as a ValueError with the worker's message, not wrapped in
    Spark's PythonException / Py4JJavaError."""
    try:
        return action()
    except ValueError:
        raise
    except Exception as e:
        found = re.findall(r"^ValueError: (.+)$", str(e), re.M)
        if found:
            raise ValueError(found[-1]) from None
        raise
