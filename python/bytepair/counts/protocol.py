"""The steps every counting engine runs (local process pool, Ray, Spark), so that
all of them write the same word-counts artifact (`bytepair.counts.artifact`).

A run, driven by one process (the *driver*)::

    groups = plan_shards(sizes, shards)             # input indices per shard
    staging = staging_dir(out, run_plan(...))       # hidden folder beside `out`
    done = finished_shards(staging, ...)            # a resumed run's finished shards
    for each other shard s, on any worker:          # map
        count_shard(files of groups[s], spec, staging, s, parts, max_memory=...)
    for each bucket b < parts, on any worker:       # reduce (unless finished)
        written[b] = reduce_bucket(bucket_paths(staging, range(len(groups)), b),
                                   join(staging, part_name(b)), max_memory=...)
    path = finish(staging, out, spec, written, totals, engine=...)  # on the driver

Workers write into `staging`, which every worker and the driver must see at
the same path; they return only small dicts, so word counts never pass through
the driver. A word goes to bucket ``xxh3_64(word, seed) % parts``
(`BUCKET_HASH`, ``src/wordcounts.rs``), so a word is in exactly one part.
Spark runs its own map and shuffle (`engines.on_spark`) and then writes the
same parts (`bytepair.counts.parts.write_part`) and calls `finish`.

Memory: with `max_memory`, each shard's counter prunes the rarest words past
that budget (lossy counting: `CountSpec.counter`), and what it dropped is
summed into the manifest (``pruned``); the reduce merges the shards' sorted
bucket files a batch at a time (`bytepair.counts.parts.merge_parts`), exact
and within its budget whatever the bucket holds.

Retries: `count_shard` writes its shard folder under a temporary name and
renames it into place, replacing an earlier attempt, and `reduce_bucket`
writes its part atomically; so any step may be rerun after a failure without
counting anything twice. The artifact appears at `out` only when `finish`
renames the staging folder, manifest included.

Resuming (`bytepair.folders`): the staging folder holds the run's plan
(``_progress/plan.json``) and a record per finished shard and part (their
inputs and SHA-256). A failed run removes its staging folder; one killed or
interrupted (Ctrl-C) leaves it, and the next run to the same `out` with the
same plan takes it over once its driver is gone and counts only the shards
(and reduces only the parts) not finished (`staging_dir`, `finished_shards`,
`finished_part`); a staging folder with another plan is removed.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import numbers
import os
import shutil
import socket
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from bytepair import _core
from bytepair.atomic import atomic_write
from bytepair.counts.parts import READ_ROWS, merge_parts, part_name, write_part
from bytepair.counts.sources import MANIFEST, CountSpec, SourceStats, count_file
from bytepair.folders import (
    PROGRESS,
    finished_record,
    read_plan,
    sha256_file,
    write_plan,
    write_task_record,
)
from bytepair.formats.hf_regex import PRESETS

FORMAT = "bytepair-word-counts"
# 2: the manifest says what a memory budget dropped ("pruned"); version 1
# artifacts (none dropped) are read as they are.
FORMAT_VERSION = 2
BUCKET_HASH = "xxh3_64(word, seed=0x6279746570616972) % parts"
SHARDS = "_shards"  # the map's output inside a staging folder; removed by `commit`
# Input bytes per shard by default (at least one shard per worker): a progress
# step, and what a killed run counts again at most per worker.
SHARD_BYTES = 1 << 30
OWNER = "_owner.json"  # host and pid of the driver that made a staging folder


# -- the driver's plan ----------------------------------------------------------------


def plan_shards(sizes: Sequence[int], shards: int) -> list[list[int]]:
    """Group input indices (of files of `sizes` bytes) into at most `shards`
    groups of about equal total size: largest first, each to the lightest
    group; each group sorted, empty groups dropped. A file is never split."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(shards, len(sizes))))]
    heap = [(0, g) for g in range(len(groups))]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        load, g = heapq.heappop(heap)
        groups[g].append(i)
        heapq.heappush(heap, (load + sizes[i], g))
    return [sorted(g) for g in groups if g]


# A budget below this leaves too little room for the counts of one block of
# text per thread, and would prune nearly every word.
MIN_MAX_MEMORY = 64 << 20


def check_max_memory(max_memory: int | None) -> int | None:
    """`max_memory` as an int (bytes); ValueError unless None or an integer of
    at least `MIN_MAX_MEMORY` (64 MiB)."""
    if max_memory is None:
        return None
    if (
        isinstance(max_memory, bool)
        or not isinstance(max_memory, numbers.Integral)
        or max_memory < MIN_MAX_MEMORY
    ):
        raise ValueError(
            f"max_memory={max_memory!r} must be None or a number of bytes of at least "
            f"{MIN_MAX_MEMORY:,} (64 MiB)"
        )
    return int(max_memory)


def default_shards(sizes: Sequence[int], workers: int) -> int:
    """Shards when none are asked for: one per worker, more for inputs past
    `SHARD_BYTES` a worker."""
    return max(workers, math.ceil(sum(sizes) / SHARD_BYTES))


def run_plan(
    spec: CountSpec,
    paths: Sequence[str],
    sizes: Sequence[int],
    groups: Sequence[Sequence[int]],
    parts: int,
    *,
    max_memory: int | None,
) -> dict[str, Any]:
    """What fixes a run's output (the plan a resumed run must share): the spec,
    the inputs and their sizes, the shards' files, the parts and the budget
    (not the threads: counts within a budget do not depend on them)."""
    return {
        "spec": [
            spec.pattern,
            list(spec.special_tokens),
            spec.format,
            spec.text_field,
            spec.errors,
        ],
        "inputs": list(paths),
        "sizes": list(sizes),
        "shards": [list(g) for g in groups],
        "parts": parts,
        "max_memory": max_memory,
    }


def staging_dir(out: str, plan: dict[str, Any] | None = None) -> str:
    """The hidden folder beside `out` (``.<name>.partial-<random>``, on the
    same filesystem, for the final rename) where a run with `plan` builds the
    artifact; it holds ``_owner.json`` (host and pid of this driver) and the plan.

    Staging folders of `out` left by a driver of this host that is gone (kill
    -9, OOM, Ctrl-C) are taken over when they hold the same `plan` (the run
    resumes there) and removed otherwise; those of live drivers or other hosts
    are left alone. Without one to resume, a fresh folder is made."""
    out = os.path.abspath(out)
    prefix = f".{os.path.basename(out)}.partial-"
    parent = os.path.dirname(out)
    resumed = None
    for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else ():
        path = os.path.join(parent, name)
        if name.startswith(prefix) and _abandoned(path):
            if resumed is None and plan is not None and read_plan(path) == plan:
                resumed = path
            else:
                shutil.rmtree(path, ignore_errors=True)
    path = resumed or os.path.join(parent, prefix + uuid.uuid4().hex[:12])
    os.makedirs(path, exist_ok=True)
    atomic_write(
        os.path.join(path, OWNER),
        json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode(),
    )
    if plan is not None and resumed is None:
        write_plan(path, plan)
    return path


def interrupted(staging: str, done: int, shards: int) -> None:
    """Tell the user that an interrupted run can resume (its staging folder stays)."""
    print(
        f"interrupted: {done} of {shards} shards are counted and kept in {staging}; "
        "run the same command again to resume",
        file=sys.stderr,
    )


def _abandoned(staging: str) -> bool:
    """True for a staging folder whose driver ran on this host and has exited."""
    try:
        with open(os.path.join(staging, OWNER)) as f:
            owner = json.load(f)
        host, pid = owner["host"], int(owner["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False  # not ours to judge (being created, or an older bytepair)
    if host != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


# -- the map: one shard of inputs ------------------------------------------------------


def shard_dir(staging: str, shard_id: int) -> str:
    """The folder of shard `shard_id`'s buckets: ``staging/_shards/shard-00003``."""
    return os.path.join(staging, SHARDS, f"shard-{shard_id:05d}")


def count_shard(
    inputs: Sequence[str],
    spec: CountSpec,
    staging: str,
    shard_id: int,
    parts: int,
    *,
    num_threads: int | None = None,
    max_memory: int | None = None,
    on_bytes: Callable[[int], None] | None = None,
    _fail_after_write: str | None = None,
) -> dict[str, Any]:
    """Count the documents of `inputs` in one map and write it as `parts` bucket
    files, ``shard_dir(staging, shard_id)/part-BBBBB.parquet`` for every bucket
    B < `parts` (an empty bucket is an empty part), then record the shard as
    finished (``_progress/task-<shard_id>.json``: its inputs, stats and the
    buckets' SHA-256).

    The GIL is released while Rust reads, pre-tokenizes and counts. The shard's
    folder is written under a temporary name and renamed when complete, so a
    retried shard replaces an earlier attempt instead of adding to it.

    Args:
        inputs: file paths or fsspec URLs, read as `spec.format`.
        spec: pattern, special tokens, format and decoding policy.
        staging: the run's staging folder (shared by every worker).
        shard_id: this shard's number (names its folder).
        parts: number of buckets.
        num_threads: counting threads (default: one per core).
        max_memory: the budget in bytes of this shard's counts; past it the
            rarest words are dropped (lossy counting), and said so in the
            stats. None: exact counts.
        on_bytes: called with the running count of input bytes counted.
        _fail_after_write: tests' fault injection: a marker file; the first
            attempt to create it fails after writing its buckets.

    Returns:
        small stats: ``{"shard", "files", "documents", "bytes", "pre_tokens",
        "distinct", "pruned"}`` (`distinct` counts this shard's words only;
        `pruned`: [distinct words, pre-tokens, highest minimum count] the
        budget dropped).

    Raises:
        as `bytepair.counts.sources.count_file` (the message names the file).
    """
    counter = spec.counter(max_memory)
    stats = SourceStats()
    for path in inputs:
        done = stats.bytes
        stats += count_file(
            counter,
            path,
            spec,
            num_threads=num_threads,
            on_bytes=None if on_bytes is None else (lambda n: on_bytes(done + n)),
        )
    final = shard_dir(staging, shard_id)
    temporary = f"{final}.tmp-{uuid.uuid4().hex[:12]}"
    os.makedirs(temporary)
    buckets = [
        write_part(os.path.join(temporary, part_name(bucket)), data, offsets, counts)["sha256"]
        for bucket, (data, offsets, counts) in enumerate(counter.to_buckets(parts))
    ]
    if _fail_after_write is not None and not os.path.exists(_fail_after_write):
        # Fault injection for tests: fail once, after the output was written.
        open(_fail_after_write, "w").close()
        raise RuntimeError(f"shard {shard_id}: injected failure (first attempt)")
    if os.path.exists(final):  # an earlier attempt of this shard completed
        shutil.rmtree(final)
    os.rename(temporary, final)
    result = {
        "shard": shard_id,
        "files": len(inputs),
        "documents": stats.documents,
        "bytes": stats.bytes,
        "pre_tokens": counter.total(),
        "distinct": len(counter),
        "pruned": list(counter.pruned),
    }
    record = {"inputs": list(inputs), "stats": result, "buckets": buckets}
    write_task_record(staging, shard_id, record)
    return result


def finished_shards(
    staging: str, paths: Sequence[str], groups: Sequence[Sequence[int]]
) -> dict[int, dict[str, Any]]:
    """The shards an earlier run in `staging` finished, with the stats
    `count_shard` returned: those whose record names the same files and whose
    bucket files all match its SHA-256 (the others are counted again)."""

    def intact(shard: int, record: dict[str, Any]) -> bool:
        folder = shard_dir(staging, shard)
        return all(
            sha256_file(os.path.join(folder, part_name(b))) == digest
            for b, digest in enumerate(record["buckets"])
        )

    finished = {}
    for shard, group in enumerate(groups):
        files = [paths[i] for i in group]
        record = finished_record(staging, shard, files, lambda r, s=shard: intact(s, r))
        if record is not None:
            finished[shard] = record["stats"]
    return finished


# -- the reduce: one bucket of every shard ------------------------------------------


def bucket_paths(staging: str, shard_ids: Sequence[int], bucket: int) -> list[str]:
    """The files of `bucket` written by each of `shard_ids` (`reduce_bucket`'s input)."""
    return [os.path.join(shard_dir(staging, s), part_name(bucket)) for s in shard_ids]


def reduce_bucket(
    paths: Sequence[str], out: str, *, max_memory: int | None = None
) -> dict[str, Any]:
    """Sum the word counts of `paths` (one bucket from every shard, each sorted)
    into one sorted part at `out` (atomically: a rerun replaces it whole) by a
    merge of the sorted files (`merge_parts`), then record it as finished
    (``_progress/part-<bucket>.json`` beside `out`).

    Args:
        paths: the bucket's file from each shard.
        out: the part to write, ``staging/part-BBBBB.parquet``.
        max_memory: bytes the merge may hold: a batch of each file at a time,
            sized to it (at least 1,024 rows each); None: 65,536 rows each.

    Returns:
        ``{"rows", "pre_tokens", "sha256"}`` of the part (see `write_part`).

    Raises:
        ValueError: a file that is not a valid part (names it), or a summed
            count beyond 2**63 - 1 (Parquet INT64).
    """
    rows = READ_ROWS
    if max_memory is not None:
        # ~4 copies of a batch live at once (Parquet, Arrow, bytes, Rust), ~64 bytes a row.
        rows = max(1 << 10, min(READ_ROWS, max_memory // (256 * max(len(paths), 1))))
    written = merge_parts(paths, out, rows)
    write_task_record(
        os.path.dirname(out), _bucket_of(out), {"inputs": list(paths), "part": written}, "part"
    )
    return written


def _bucket_of(part: str) -> int:
    """The bucket number in a part's file name (``part-00007.parquet`` -> 7)."""
    return int(os.path.basename(part)[len("part-") : -len(".parquet")])


def finished_part(staging: str, paths: Sequence[str], bucket: int) -> dict[str, Any] | None:
    """What `reduce_bucket` returned for `bucket` in an earlier run in
    `staging`, if its record names the same files and the part still matches
    its SHA-256; else None (reduce it again)."""
    part = os.path.join(staging, part_name(bucket))
    record = finished_record(
        staging,
        bucket,
        paths,
        lambda r: sha256_file(part) == r["part"]["sha256"],
        "part",
    )
    return None if record is None else record["part"]


# -- the driver's end: manifest and commit -----------------------------------------------


def pattern_entry(pattern: str) -> dict[str, str | None]:
    """``{"name": preset or None, "regex": full regex}`` for the manifest."""
    regex = _core.resolve_pattern(pattern)
    name = next((p for p in PRESETS if _core.resolve_pattern(p) == regex), None)
    return {"name": name, "regex": regex}


def sum_pruned(pruned: Sequence[Sequence[int]]) -> list[int]:
    """What budgets dropped, summed over shards or artifacts: [distinct words
    (a word dropped in two shards counts twice), pre-tokens, highest minimum count]."""
    return [
        sum(p[0] for p in pruned),
        sum(p[1] for p in pruned),
        max((p[2] for p in pruned), default=0),
    ]


def build_manifest(
    spec: CountSpec,
    totals: dict[str, int],
    parts: Sequence[dict[str, Any]],
    *,
    engine: str,
    bucket_hash: str | None,
    max_memory: int | None = None,
    pruned: Sequence[int] = (0, 0, 0),
) -> dict[str, Any]:
    """The artifact's ``_manifest.json`` content: format and versions, `engine`,
    the spec (pattern, special tokens, text policy), `totals` (documents,
    bytes, pre_tokens, distinct: what the parts hold), what the workers'
    memory budget `max_memory` dropped (`pruned`: distinct words, pre-tokens,
    highest minimum count), `bucket_hash` (None when the parts are not our
    buckets) and the `parts` entries (path, rows, pre_tokens, sha256)."""
    from bytepair import __version__

    words, pre_tokens, min_count = (int(x) for x in pruned)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "bytepair_version": __version__,
        "engine": engine,
        "pattern": pattern_entry(spec.pattern),
        "special_tokens": list(spec.special_tokens),
        "text": {"format": spec.format, "text_field": spec.text_field, "errors": spec.errors},
        "totals": {
            k: int(totals.get(k, 0)) for k in ("documents", "bytes", "pre_tokens", "distinct")
        },
        "pruned": {
            "max_memory": max_memory,
            "words": words,
            "pre_tokens": pre_tokens,
            "min_count": min_count,
        },
        "bucket_hash": bucket_hash,
        "parts": list(parts),
    }


def commit(staging: str, out: str, manifest: dict[str, Any]) -> str:
    """Remove the map's output, write the manifest last, then rename `staging`
    to `out`, replacing an older artifact there (which stays intact until the
    final rename). Returns the artifact's absolute path.

    Raises:
        FileExistsError: `out` exists and is not a word-counts folder (nor empty).
    """
    shutil.rmtree(os.path.join(staging, SHARDS), ignore_errors=True)
    shutil.rmtree(os.path.join(staging, PROGRESS), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(staging, OWNER))
    atomic_write(os.path.join(staging, MANIFEST), (json.dumps(manifest, indent=1) + "\n").encode())
    out = os.path.abspath(out)
    old = None
    if os.path.lexists(out):
        if (
            os.path.isdir(out)
            and not os.path.islink(out)
            and (os.path.exists(os.path.join(out, MANIFEST)) or not os.listdir(out))
        ):
            old = f"{staging}.old"
            os.rename(out, old)
        else:
            raise FileExistsError(
                f"{out}: exists and is not a word-counts folder; not replacing it"
            )
    os.rename(staging, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return out


def finish(
    staging: str,
    out: str,
    spec: CountSpec,
    written: Sequence[dict[str, Any]],
    totals: dict[str, int],
    *,
    engine: str,
    bucket_hash: str | None = BUCKET_HASH,
    max_memory: int | None = None,
    pruned: Sequence[int] = (0, 0, 0),
) -> str:
    """The driver's last step: `written[b]` is what `reduce_bucket` (or
    `write_part`) returned for part b, written as ``staging/part_name(b)``;
    `totals` holds the run's ``documents`` and ``bytes``; `max_memory` and
    `pruned` the workers' budget and what it dropped (`sum_pruned`). Adds
    ``pre_tokens`` and ``distinct`` from the parts, builds the manifest and
    `commit`s. Returns the artifact's absolute path (open it with `WordCounts.open`)."""
    parts = [{"path": part_name(b), **w} for b, w in enumerate(written)]
    totals = {
        **totals,
        "pre_tokens": sum(p["pre_tokens"] for p in parts),
        "distinct": sum(p["rows"] for p in parts),
    }
    manifest = build_manifest(
        spec,
        totals,
        parts,
        engine=engine,
        bucket_hash=bucket_hash,
        max_memory=max_memory,
        pruned=pruned,
    )
    return commit(staging, out, manifest)
