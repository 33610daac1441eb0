"""`bytepair.count`: count pre-tokens of many files into a word-counts artifact,
on this machine (``engine="local"``, a process pool), on Ray or on Spark.

Every engine runs the steps of `bytepair.counts.protocol` (`count_shard` per
group of files of about equal bytes, then `reduce_bucket` per bucket, then
`finish`) or, on Spark, the same Rust counter inside ``mapInArrow`` before
`finish`; all give the same artifact content as counting in one process.
The local and Ray engines resume a killed run from its finished shards.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from bytepair.counts.artifact import WordCounts
from bytepair.counts.parts import part_name
from bytepair.counts.protocol import (
    bucket_paths,
    check_max_memory,
    count_shard,
    default_shards,
    finish,
    finished_part,
    finished_shards,
    interrupted,
    plan_shards,
    reduce_bucket,
    run_plan,
    staging_dir,
    sum_pruned,
)
from bytepair.counts.sources import CountSpec, check_inputs, expand_inputs, infer_format, input_size
from bytepair.progress import ProgressBar

ENGINES = ("local", "ray", "spark")


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
    max_memory: int | None = None,
    progress: bool | None = None,
    **engine_options: Any,
) -> WordCounts:
    """Count the pre-tokens of `inputs` into a word-counts artifact at `out`.

    Train from it with ``bytepair.train_from_counts(WordCounts, vocab_size)``:
    the merges equal those of `bytepair.train` on the same files.

    Args:
        inputs: files, folders (every non-hidden file below, sorted), globs
            or fsspec URLs; ``.gz``, ``.bz2``, ``.xz`` and ``.zst`` files are
            decompressed. For ``text`` each file is one document.
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
        shards: groups of input files, one counting task each (default: one
            per worker, and one per GiB of input past that; a file is never
            split).
        max_memory: a budget in bytes (at least 64 MiB) for the counts of each
            shard (a worker's) and for each reduce task; None (default): no
            bound, exact counts. Past it a shard drops the rarest words (lossy
            counting, as `bytepair.train`'s `max_memory`) and the manifest says
            what was dropped (``WordCounts.pruned``); the reduce merges sorted
            files a batch at a time, exact at any size.
        progress: progress bars on stderr (files and bytes counted); default
            when stderr is a terminal.

    A killed or interrupted run (local and Ray engines) leaves its finished
    shards in a hidden staging folder beside `out`; the same call again
    resumes from them (`bytepair.counts.protocol`).
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
    spec = CountSpec(
        pattern, tuple(special_tokens), format or infer_format(paths), text_field, errors
    )
    spec.counter()  # a bad pattern fails here, before any worker starts
    for name, value in (("parts", parts), ("num_workers", num_workers), ("shards", shards)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{name}={value!r} must be a positive integer")
    max_memory = check_max_memory(max_memory)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    if engine == "ray":
        from bytepair.counts.engines.on_ray import count_on_ray

        return count_on_ray(
            paths,
            spec,
            os.fspath(out),
            parts=parts,
            num_tasks=num_workers,
            shards=shards,
            max_memory=max_memory,
            progress=show,
            **engine_options,
        )
    if engine == "spark":
        from bytepair.counts.engines.on_spark import count_files_on_spark

        return count_files_on_spark(
            paths,
            spec,
            os.fspath(out),
            parts=parts,
            max_memory=max_memory,
            progress=show,
            **engine_options,
        )
    if engine_options:
        raise TypeError(f"unexpected options for the local engine: {', '.join(engine_options)}")
    return count_locally(
        paths,
        spec,
        os.fspath(out),
        parts=parts,
        num_workers=num_workers,
        shards=shards,
        max_memory=max_memory,
        progress=show,
    )


def count_locally(
    paths: list[str],
    spec: CountSpec,
    out: str,
    *,
    parts: int | None = None,
    num_workers: int | None = None,
    shards: int | None = None,
    max_memory: int | None = None,
    progress: bool = False,
    _fail_once: str | None = None,
    _kill_after_shards: int | None = None,
) -> WordCounts:
    """The reference engine: `count_shard` and `reduce_bucket` in a pool of
    `num_workers` processes. The pool is loky's (joblib's process pool): its
    workers start clean, without forking this process (whose Rust and tqdm
    threads would not survive a fork) and without re-running the caller's
    ``__main__`` as multiprocessing's "spawn" does (which breaks scripts
    without a ``__main__`` guard and code piped to python). A shard that fails
    with anything but an input error (ValueError, OSError) is retried once; its
    retry replaces, never adds to, what the failed attempt wrote. A failed run
    removes its staging folder; a killed or interrupted one leaves it for the
    next run with the same plan to resume (`bytepair.counts.protocol`).
    Workers exit if the driver dies. `_kill_after_shards` (tests): SIGKILL
    this process once that many shards have finished."""
    cores = os.cpu_count() or 1
    sizes = [input_size(p) for p in paths]
    workers = num_workers or cores
    groups = plan_shards(sizes, shards or default_shards(sizes, workers))
    workers = min(workers, len(groups))
    parts = parts or max(1, workers)
    threads = max(1, cores // workers)
    plan = run_plan(spec, paths, sizes, groups, parts, max_memory=max_memory)
    staging = staging_dir(out, plan)
    done = finished_shards(staging, paths, groups)
    try:
        import loky  # here, not at import time: `import bytepair` stays light

        with (
            loky.ProcessPoolExecutor(
                workers, initializer=_exit_with_parent, initargs=(os.getpid(),)
            ) as pool,
            ProgressBar(sum(sizes), "counting", unit="B", scale=True, enabled=progress) as bar,
        ):

            def submit(shard_id: int) -> Future:
                files = [paths[i] for i in groups[shard_id]]
                return pool.submit(
                    count_shard,
                    files,
                    spec,
                    staging,
                    shard_id,
                    parts,
                    num_threads=threads,
                    max_memory=max_memory,
                    _fail_after_write=_fail_once,
                )

            def shard_done(shard_id: int) -> None:
                bar.update_to(bar.n + sum(sizes[i] for i in groups[shard_id]))
                files = sum(done[s]["files"] for s in done)
                bar.set_postfix(files=f"{files}/{len(paths)}", shards=f"{len(done)}/{len(groups)}")

            for shard_id in done:
                shard_done(shard_id)
            pending = {submit(s): (s, 0) for s in range(len(groups)) if s not in done}
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    shard_id, attempt = pending.pop(fut)
                    error = fut.exception()
                    if error is not None:
                        if attempt == 0 and not isinstance(
                            error, (ValueError, OSError, BrokenProcessPool)
                        ):
                            pending[submit(shard_id)] = (shard_id, 1)
                            continue
                        raise error
                    done[shard_id] = fut.result()
                    shard_done(shard_id)
                    if _kill_after_shards is not None and len(done) >= _kill_after_shards:
                        os.kill(os.getpid(), signal.SIGKILL)
            written = _reduce_locally(pool, staging, len(groups), parts, max_memory)
    except KeyboardInterrupt:
        interrupted(staging, len(done), len(groups))
        raise
    except BaseException:
        # A failed run leaves nothing behind (it would fail again the same way).
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return WordCounts.open(
        finish(
            staging,
            out,
            spec,
            written,
            _totals(done.values()),
            engine="local",
            max_memory=max_memory,
            pruned=sum_pruned([d["pruned"] for d in done.values()]),
        )
    )


def _reduce_locally(
    pool: Any, staging: str, shards: int, parts: int, max_memory: int | None
) -> list[dict[str, Any]]:
    """Every bucket's part, from an earlier run when it finished it, else
    reduced now in the pool."""
    inputs = [bucket_paths(staging, range(shards), b) for b in range(parts)]
    written = [finished_part(staging, inputs[b], b) for b in range(parts)]
    todo = [b for b in range(parts) if written[b] is None]
    futures = {
        b: pool.submit(
            reduce_bucket, inputs[b], os.path.join(staging, part_name(b)), max_memory=max_memory
        )
        for b in todo
    }
    for b, fut in futures.items():
        written[b] = fut.result()
    return written


def _totals(stats: Any) -> dict[str, int]:
    """Documents and bytes of the shards' `count_shard` stats."""
    stats = list(stats)
    return {
        "documents": sum(s["documents"] for s in stats),
        "bytes": sum(s["bytes"] for s in stats),
    }


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: exit when the driver dies (kill -9, OOM). loky's idle
    workers otherwise outlive a killed driver, each holding its memory."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="bytepair-parent-watch", daemon=True).start()
