"""The steps every counting engine runs (local process pool, Ray, Spark), so that
all of them write the same word-counts artifact (`bytepair.counts.artifact`).

A run, driven by one process (the *driver*)::

    staging = staging_dir(out)                      # hidden folder beside `out`
    plan = plan_shards(sizes, shards)               # input indices per shard
    for each shard s, on any worker:                # map
        count_shard(files of plan[s], spec, staging, s, parts)
    for each bucket b < parts, on any worker:       # reduce
        written[b] = reduce_bucket(bucket_paths(staging, range(len(plan)), b),
                                   join(staging, part_name(b)))
    path = finish(staging, out, spec, written, totals, engine=...)  # on the driver

Workers write into `staging`, which every worker and the driver must see at
the same path; they return only small dicts, so word counts never pass through
the driver. A word goes to bucket ``xxh3_64(word, seed) % parts``
(`BUCKET_HASH`, ``src/wordcounts.rs``), so a word is in exactly one part.
Spark runs its own map and shuffle (`engines.on_spark`) and then writes the
same parts (`bytepair.counts.parts.write_part`) and calls `finish`.

Retries: `count_shard` writes its shard folder under a temporary name and
renames it into place, replacing an earlier attempt, and `reduce_bucket`
writes its part atomically; so any step may be rerun after a failure without
counting anything twice. The artifact appears at `out` only when `finish`
renames the staging folder, manifest included; an interrupted run leaves at
most a staging folder, which the engine removes (or the next run, once its
driver is gone: `staging_dir`).
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from bytepair import _core
from bytepair.atomic import atomic_write
from bytepair.counts.parts import add_part, part_name, write_part
from bytepair.counts.sources import MANIFEST, CountSpec, SourceStats, count_file

FORMAT = "bytepair-word-counts"
FORMAT_VERSION = 1
BUCKET_HASH = "xxh3_64(word, seed=0x6279746570616972) % parts"
SHARDS = "_shards"  # the map's output inside a staging folder; removed by `commit`
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


def staging_dir(out: str) -> str:
    """Make and return a fresh hidden folder beside `out`
    (``.<name>.partial-<random>``, on the same filesystem, for the final rename)
    holding ``_owner.json`` (host and pid of this driver). Staging folders of
    `out` left by a driver of this host that is gone (kill -9, OOM: no chance to
    clean up) are removed first; those of live drivers or other hosts are left
    alone."""
    out = os.path.abspath(out)
    prefix = f".{os.path.basename(out)}.partial-"
    parent = os.path.dirname(out)
    for name in os.listdir(parent) if os.path.isdir(parent) else ():
        if name.startswith(prefix) and _abandoned(os.path.join(parent, name)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    path = os.path.join(parent, prefix + uuid.uuid4().hex[:12])
    os.makedirs(path)
    atomic_write(
        os.path.join(path, OWNER),
        json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode(),
    )
    return path


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
    on_bytes: Callable[[int], None] | None = None,
    _fail_after_write: str | None = None,
) -> dict[str, Any]:
    """Count the documents of `inputs` in one map and write it as `parts` bucket
    files, ``shard_dir(staging, shard_id)/part-BBBBB.parquet`` for every bucket
    B < `parts` (an empty bucket is an empty part).

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
        on_bytes: called with the running count of input bytes counted.
        _fail_after_write: tests' fault injection: a marker file; the first
            attempt to create it fails after writing its buckets.

    Returns:
        small stats: ``{"shard", "files", "documents", "bytes", "pre_tokens",
        "distinct"}`` (ints; `distinct` counts this shard's words only).

    Raises:
        as `bytepair.counts.sources.count_file` (the message names the file).
    """
    counter = spec.counter()
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
    for bucket, (data, offsets, counts) in enumerate(counter.to_buckets(parts)):
        write_part(os.path.join(temporary, part_name(bucket)), data, offsets, counts)
    if _fail_after_write is not None and not os.path.exists(_fail_after_write):
        # Fault injection for tests: fail once, after the output was written.
        open(_fail_after_write, "w").close()
        raise RuntimeError(f"shard {shard_id}: injected failure (first attempt)")
    if os.path.exists(final):  # an earlier attempt of this shard completed
        shutil.rmtree(final)
    os.rename(temporary, final)
    return {
        "shard": shard_id,
        "files": len(inputs),
        "documents": stats.documents,
        "bytes": stats.bytes,
        "pre_tokens": counter.total(),
        "distinct": len(counter),
    }


# -- the reduce: one bucket of every shard ------------------------------------------


def bucket_paths(staging: str, shard_ids: Sequence[int], bucket: int) -> list[str]:
    """The files of `bucket` written by each of `shard_ids` (`reduce_bucket`'s input)."""
    return [os.path.join(shard_dir(staging, s), part_name(bucket)) for s in shard_ids]


def reduce_bucket(paths: Sequence[str], out: str) -> dict[str, Any]:
    """Sum the word counts of `paths` (one bucket from every shard) and write one
    sorted part to `out` (atomically: a rerun replaces it whole).

    Returns:
        ``{"rows", "pre_tokens", "sha256"}`` of the part (see `write_part`).

    Raises:
        ValueError: a file that is not a valid part (names it), or a summed
            count beyond 2**63 - 1 (Parquet INT64).
    """
    counter = _core.WordCounter("gpt2", [])  # a container only: nothing is pre-tokenized
    for p in paths:
        add_part(counter, p)
    ((data, offsets, counts),) = counter.to_buckets(1)
    return write_part(out, data, offsets, counts)


# -- the driver's end: manifest and commit -----------------------------------------------


def pattern_entry(pattern: str) -> dict[str, str | None]:
    """``{"name": preset or None, "regex": full regex}`` for the manifest."""
    regex = _core.resolve_pattern(pattern)
    names = ("gpt2", "cl100k", "o200k", "superbpe")
    name = next((p for p in names if _core.resolve_pattern(p) == regex), None)
    return {"name": name, "regex": regex}


def build_manifest(
    spec: CountSpec,
    totals: dict[str, int],
    parts: Sequence[dict[str, Any]],
    *,
    engine: str,
    bucket_hash: str | None,
) -> dict[str, Any]:
    """The artifact's ``_manifest.json`` content: format and versions, `engine`,
    the spec (pattern, special tokens, text policy), `totals` (documents,
    bytes, pre_tokens, distinct), `bucket_hash` (None when the parts are not
    our buckets) and the `parts` entries (path, rows, pre_tokens, sha256)."""
    from bytepair import __version__

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
) -> str:
    """The driver's last step: `written[b]` is what `reduce_bucket` (or
    `write_part`) returned for part b, written as ``staging/part_name(b)``;
    `totals` holds the run's ``documents`` and ``bytes``. Adds ``pre_tokens``
    and ``distinct`` from the parts, builds the manifest and `commit`s.
    Returns the artifact's absolute path (open it with `WordCounts.open`)."""
    parts = [{"path": part_name(b), **w} for b, w in enumerate(written)]
    totals = {
        **totals,
        "pre_tokens": sum(p["pre_tokens"] for p in parts),
        "distinct": sum(p["rows"] for p in parts),
    }
    return commit(
        staging, out, build_manifest(spec, totals, parts, engine=engine, bucket_hash=bucket_hash)
    )
