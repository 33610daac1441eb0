"""`bytepair.count`: count pre-tokens of many files into a word-counts artifact,
on this machine (``engine="local"``, a process pool), on Ray or on Spark.

Every engine runs the same two functions of `bytepair.counts.artifact`
(`_count_shard` per group of files of about equal bytes, then `_reduce_bucket`
per bucket) or, on Spark, the same Rust counter inside ``mapInArrow``; all give
the same artifact content as counting in one process.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any


from bytepair.progress import ProgressBar
from bytepair.counts.sources import CountSpec, check_inputs, compression_of, input_size, is_remote
from bytepair.counts.artifact import (
    BUCKET_HASH, MANIFEST, WordCounts, _bucket_paths, _build_manifest, _commit, _count_shard, _part_name, _plan_shards,
    _reduce_bucket, _staging_dir,
)

ENGINES = ("local", "ray", "spark")
_EXTENSIONS = {".txt": "text", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


def expand_inputs(inputs: str | os.PathLike | Sequence[str | os.PathLike], out: str | None = None) -> list[str]:
    """Paths as strings; a local folder stands for every non-hidden file below
    it, in sorted order, leaving out word-counts artifacts (folders with a
    manifest) and `out`, so that ``count DIR -o DIR/counts`` never counts its
    own earlier output; a glob (``*``, ``?``, ``[``; ``**`` spans folders) that
    is not an existing path stands for the files it matches, sorted (fsspec's
    glob for URLs). Raises ValueError for no input at all, FileNotFoundError
    for a glob that matches no file."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    skip = os.path.realpath(out) if out is not None and not is_remote(out) else None

    def is_input_dir(path: str) -> bool:
        return os.path.realpath(path) != skip and not os.path.exists(os.path.join(path, MANIFEST))

    paths: list[str] = []
    for item in _expand_globs(map(os.fspath, inputs)):
        if not is_remote(item) and os.path.isdir(item):
            for root, dirs, files in os.walk(item):
                if not is_input_dir(root):
                    dirs[:] = []
                    continue
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                paths += [os.path.join(root, f) for f in sorted(files) if not f.startswith((".", "_"))]
        else:
            paths.append(item)
    if not paths:
        raise ValueError(f"no input files in {[os.fspath(i) for i in inputs]!r}")
    return paths


def _expand_globs(items: Iterable[str]) -> Iterator[str]:
    for item in items:
        if not glob.has_magic(item) or (not is_remote(item) and os.path.exists(item)):
            yield item
            continue
        if is_remote(item):
            import fsspec

            fs, _ = fsspec.core.url_to_fs(item)
            protocol = item.split("://", 1)[0]
            found = [f"{protocol}://{p}" for p in sorted(fs.glob(item))]
        else:
            found = sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
        if not found:
            raise FileNotFoundError(f"{item}: no file matches this glob")
        yield from found


def infer_format(paths: Sequence[str]) -> str:
    """``jsonl`` or ``parquet`` when every file has that extension (after a
    compression suffix such as ``.gz``: ``x.jsonl.gz`` is JSON Lines), else ``text``."""
    kinds = {_EXTENSIONS.get(os.path.splitext(_uncompressed_name(p))[1].lower(), "text") for p in paths}
    return kinds.pop() if len(kinds) == 1 else "text"


def _uncompressed_name(path: str) -> str:
    return os.path.splitext(path)[0] if compression_of(path) else path


def count(
    inputs: str | os.PathLike | Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    engine: str = "local",
    pattern: str = "gpt2",
    special_tokens: Sequence[str] = (),
    parts: int | None = None,
    format: str | None = None,
    text_field: str = "text",
    errors: str = "strict",
    num_workers: int | None = None,
    shards: int | None = None,
    progress: bool | None = None,
    **engine_options: Any,
) -> WordCounts:
    """Count the pre-tokens of `inputs` into a word-counts artifact at `out`.

    Train from it with ``bytepair.train_from_counts(WordCounts, vocab_size)``:
    the merges equal those of `bytepair.train` on the same files.

    Args:
        inputs: files, folders (every non-hidden file below, sorted), globs
            or fsspec URLs; ``.gz``, ``.bz2``, ``.xz`` and ``.zst`` files are
            decompressed (.zst needs the zstandard package). For ``text`` each
            file is one document.
        out: the artifact folder (created; an older artifact there is replaced
            only once the new one is complete).
        engine: ``local`` (a process pool on this machine), ``ray`` (Ray Core
            tasks; joins the running cluster or starts a local one) or ``spark``
            (the active SparkSession, or a local one).
        pattern, special_tokens: as in `bytepair.train`.
        parts: number of Parquet parts (word buckets) in the artifact; default:
            the number of workers.
        format: ``text``, ``jsonl`` or ``parquet``; default: from the file
            extensions (``.jsonl``, ``.parquet``), else ``text``.
        text_field: the JSON key / Parquet column with the text.
        errors: ``strict`` or ``replace`` (bytes that are not UTF-8).
        num_workers: worker processes (local; default one per core) or tasks in
            flight (ray).
        shards: groups of input files, one counting task each (default: enough
            for every worker; a file is never split).
        progress: progress bars on stderr (files and bytes counted); default
            when stderr is a terminal.
        engine_options: passed to the engine (ray: ``runtime_env``,
            ``max_retries``; spark: ``spark``, a SparkSession).

    Returns:
        WordCounts: the opened artifact.

    Raises:
        FileNotFoundError / IsADirectoryError: a missing input.
        ValueError: an unknown engine or format, a bad pattern or special
            token, bad input text (names the file, record and byte offset).
        ImportError: the engine's package (ray, pyspark) is not installed.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: expected one of {', '.join(ENGINES)}")
    paths = expand_inputs(inputs, os.fspath(out))
    check_inputs(paths)
    spec = CountSpec(pattern, tuple(special_tokens), format or infer_format(paths), text_field, errors)
    spec.counter()  # a bad pattern fails here, before any worker starts
    for name, value in (("parts", parts), ("num_workers", num_workers), ("shards", shards)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name}={value!r} must be a positive integer")
    show = sys.stderr.isatty() if progress is None else bool(progress)
    if engine == "ray":
        from bytepair.counts.engines.on_ray import count_on_ray

        return count_on_ray(paths, spec, os.fspath(out), parts=parts, num_tasks=num_workers, shards=shards,
                            progress=show, **engine_options)
    if engine == "spark":
        from bytepair.counts.engines.on_spark import count_files_on_spark

        return count_files_on_spark(paths, spec, os.fspath(out), parts=parts, progress=show, **engine_options)
    if engine_options:
        raise TypeError(f"unexpected options for the local engine: {', '.join(engine_options)}")
    return count_locally(paths, spec, os.fspath(out), parts=parts, num_workers=num_workers, shards=shards,
                         progress=show)


def count_locally(
    paths: list[str],
    spec: CountSpec,
    out: str,
    *,
    parts: int | None = None,
    num_workers: int | None = None,
    shards: int | None = None,
    progress: bool = False,
    _fail_once: str | None = None,
) -> WordCounts:
    """The reference engine: `_count_shard` and `_reduce_bucket` in a pool of
    `num_workers` processes. The pool is loky's (joblib's process pool): its
    workers start clean, without forking this process (whose Rust and tqdm
    threads would not survive a fork) and without re-running the caller's
    ``__main__`` as multiprocessing's "spawn" does (which breaks scripts
    without a ``__main__`` guard and code piped to python). A shard that fails
    with anything but an input error (ValueError, OSError) is retried once; its
    retry replaces, never adds to, what the failed attempt wrote. A failed or
    interrupted run removes its staging folder; workers exit if the driver dies."""
    cores = os.cpu_count() or 1
    sizes = [input_size(p) for p in paths]
    workers = num_workers or cores
    plan = _plan_shards(sizes, shards or workers)
    workers = min(workers, len(plan))
    parts = parts or max(1, workers)
    threads = max(1, cores // workers)
    staging = _staging_dir(out)
    totals = {"documents": 0, "bytes": 0}
    try:
        import loky  # here, not at import time: `import bytepair` stays light

        with loky.ProcessPoolExecutor(workers, initializer=_exit_with_parent, initargs=(os.getpid(),)) as pool, \
                ProgressBar(sum(sizes), "counting", unit="B", scale=True, enabled=progress) as bar:

            def submit(shard_id: int) -> Future:
                files = [paths[i] for i in plan[shard_id]]
                return pool.submit(_count_shard, files, spec, staging, shard_id, parts, num_threads=threads,
                                   _fail_after_write=_fail_once)

            pending = {submit(s): (s, 0) for s in range(len(plan))}
            files_done = 0
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    shard_id, attempt = pending.pop(fut)
                    error = fut.exception()
                    if error is not None:
                        if attempt == 0 and not isinstance(error, (ValueError, OSError, BrokenProcessPool)):
                            pending[submit(shard_id)] = (shard_id, 1)
                            continue
                        raise error
                    stats = fut.result()
                    totals["documents"] += stats["documents"]
                    totals["bytes"] += stats["bytes"]
                    files_done += stats["files"]
                    bar.update_to(bar.n + sum(sizes[i] for i in plan[shard_id]))
                    bar.set_postfix(files=f"{files_done}/{len(paths)}")
            written = list(pool.map(
                _reduce_bucket,
                [_bucket_paths(staging, range(len(plan)), b) for b in range(parts)],
                [os.path.join(staging, _part_name(b)) for b in range(parts)],
            ))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # a failed or interrupted run leaves nothing behind
        raise
    return finish(staging, out, spec, written, totals, engine="local")


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: exit when the driver dies (kill -9, OOM). loky's idle
    workers otherwise outlive a killed driver, each holding its memory."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="bytepair-parent-watch", daemon=True).start()


def finish(
    staging: str, out: str, spec: CountSpec, written: Sequence[dict[str, Any]], totals: dict[str, int], *, engine: str
) -> WordCounts:
    """Write the manifest for the reduced parts (part b = bucket b) and _commit."""
    parts = [{"path": _part_name(b), **w} for b, w in enumerate(written)]
    totals = {**totals, "pre_tokens": sum(p["pre_tokens"] for p in parts), "distinct": sum(p["rows"] for p in parts)}
    return _commit(staging, out, _build_manifest(spec, totals, parts, engine=engine, bucket_hash=BUCKET_HASH))
