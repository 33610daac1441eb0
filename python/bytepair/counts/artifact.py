"""The word-counts artifact, and the two functions every counting engine runs.

Counting pre-tokens is embarrassingly parallel; the merge loop is not. So
counting can run anywhere (a process pool, Ray, Spark) and write *word counts*,
and training reads them on one node (`bytepair.train_from_counts`).

The artifact is a folder::

    counts/
      part-00000.parquet    word: binary, count: int64; sorted by word, each word once
      part-00001.parquet    (a word is in exactly one part)
      _manifest.json        written last: format version, bytepair version, pattern
                            (name and full regex), special tokens, text decoding
                            policy, totals, and each part's rows and SHA-256

A folder without ``_manifest.json`` is not an artifact (a run killed halfway
leaves none): `WordCounts.open` refuses it. Artifacts are built in a hidden
staging folder beside the destination and moved into place when complete.

Engines run the same two functions:
1. `_count_shard`: count a group of input files in one map, write it as `parts`
   bucket files (bucket = XXH3-64 of the word with a fixed seed, mod `parts`;
   see ``src/wordcounts.rs``), return small stats only. Retrying a shard
   replaces its output as a whole, so a retried task never counts twice.
2. `_reduce_bucket`: sum one bucket's files from every shard into one sorted part.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from bytepair import _core
from bytepair.atomic import atomic_open, atomic_write
from bytepair.counts.sources import MANIFEST, CountSpec, SourceStats, count_file
from bytepair.folders import read_manifest
from bytepair.folders import sha256_file as _sha256_file

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.parquet

FORMAT = "bytepair-word-counts"
FORMAT_VERSION = 1
BUCKET_HASH = "xxh3_64(word, seed=0x6279746570616972) % parts"
SHARDS = "_shards"
_READ_ROWS = 1 << 16


def _pyarrow():
    """pyarrow and pyarrow.parquet, imported on first use (as numpy is, by the
    functions that read Arrow buffers): `import bytepair` stays light."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq


def _part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


# -- parts: Parquet files of (word, count) ------------------------------------


def _write_part(path: str, data: bytes, offsets: bytes, counts: bytes) -> dict[str, Any]:
    """Write one part from Arrow buffers (see `_core.WordCounter.to_buckets`),
    atomically. Returns ``{"rows", "pre_tokens", "sha256"}`` of what was written."""
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
        pq.write_table(table, _HashingWriter(f, digest), compression="zstd")
    # Exact past 2**64 (a numpy uint64 sum wraps): the high and low 32 bits
    # apart, each summing below 2**64 for fewer than 2**32 rows.
    values = np.frombuffer(counts, dtype="<i8").view(np.uint64)
    high = int((values >> np.uint64(32)).sum(dtype=np.uint64))
    low = int((values & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))
    total = (high << 32) + low
    return {"rows": n, "pre_tokens": total, "sha256": digest.hexdigest()}


class _HashingWriter:
    """A binary file wrapper that hashes what is written through it."""

    def __init__(self, f, digest):
        self._f, self._digest = f, digest
        self.closed = False

    def write(self, b) -> int:
        self._digest.update(b)
        return self._f.write(b)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:  # pyarrow closes its sink; the real file is atomic_open's
        self.closed = True


def _open_part(path: str) -> "pyarrow.parquet.ParquetFile":
    """A part's Parquet reader; ValueError naming the file if it is not Parquet."""
    pa, pq = _pyarrow()
    try:
        return pq.ParquetFile(path)
    except (
        pa.ArrowException,
        ValueError,
    ) as e:  # ValueError: pyarrow's UnicodeDecodeError on a bad column name
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


def _part_batches(path: str, batch_rows: int = _READ_ROWS) -> Iterator[tuple[bytes, bytes, bytes]]:
    """(data, offsets, counts) buffers of a part, `batch_rows` rows at a time.
    Reads parts written by any engine (binary or large_binary words).

    Raises:
        ValueError: not a Parquet file, or columns other than word: binary,
            count: integer (names the file).
    """
    pa, _ = _pyarrow()
    import numpy as np

    pf = _open_part(path)
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


def _add_part(counter: _core.WordCounter, path: str, unique: bool = True) -> None:
    """Sum the rows of the part at `path` into `counter` (streamed in batches).
    ValueError names the file for a bad part (negative count, repeated word...)."""
    for data, offsets, counts in _part_batches(path):
        try:
            counter.add_columns(data, offsets, counts, unique)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


# -- the two engine functions --------------------------------------------------


def _shard_dir(out_dir: str, shard_id: int) -> str:
    return os.path.join(out_dir, SHARDS, f"shard-{shard_id:05d}")


def _count_shard(
    inputs: Sequence[str],
    spec: CountSpec,
    out_dir: str,
    shard_id: int,
    parts: int,
    *,
    num_threads: int | None = None,
    on_bytes: Callable[[int], None] | None = None,
    _fail_after_write: str | None = None,
) -> dict[str, Any]:
    """Count the documents of `inputs` in one map and write it as `parts` bucket
    files under ``out_dir/_shards/shard-NNNNN/`` (see module docs).

    The GIL is released while Rust reads, pre-tokenizes and counts. The shard's
    folder is written under a temporary name and renamed when complete, so a
    retried shard replaces an earlier attempt instead of adding to it.

    Args:
        inputs: file paths or fsspec URLs, read as `spec.format`.
        spec: pattern, special tokens, format and decoding policy.
        out_dir: the artifact's staging folder (shared by every worker).
        shard_id: this shard's number (names its folder).
        parts: number of buckets.
        num_threads: counting threads (default: one per core).
        on_bytes: called with the running count of input bytes counted.

    Returns:
        small stats: ``{"shard", "files", "documents", "bytes", "pre_tokens", "distinct"}``.

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
    final = _shard_dir(out_dir, shard_id)
    temporary = f"{final}.tmp-{uuid.uuid4().hex[:12]}"
    os.makedirs(temporary)
    for bucket, (data, offsets, counts) in enumerate(counter.to_buckets(parts)):
        _write_part(os.path.join(temporary, _part_name(bucket)), data, offsets, counts)
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


def _bucket_paths(out_dir: str, shard_ids: Sequence[int], bucket: int) -> list[str]:
    """The files of `bucket` written by each of `shard_ids` (input of `_reduce_bucket`)."""
    return [os.path.join(_shard_dir(out_dir, s), _part_name(bucket)) for s in shard_ids]


def _reduce_bucket(paths: Sequence[str], out: str) -> dict[str, Any]:
    """Sum the word counts of `paths` (one bucket from every shard) and write one
    sorted part to `out` (atomically). Returns ``{"rows", "pre_tokens", "sha256"}``.

    Raises:
        ValueError: a file that is not a valid part (names it), or a summed
            count beyond 2**63 - 1 (Parquet INT64).
    """
    counter = _core.WordCounter("gpt2", [])  # a container only: nothing is pre-tokenized
    for p in paths:
        _add_part(counter, p)
    ((data, offsets, counts),) = counter.to_buckets(1)
    return _write_part(out, data, offsets, counts)


# -- shards, manifest, staging --------------------------------------------------


def _plan_shards(sizes: Sequence[int], shards: int) -> list[list[int]]:
    """Group input indices into at most `shards` groups of about equal total size
    (largest first, each to the lightest group); empty groups are dropped."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(shards, len(sizes))))]
    heap = [(0, g) for g in range(len(groups))]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        load, g = heapq.heappop(heap)
        groups[g].append(i)
        heapq.heappush(heap, (load + sizes[i], g))
    return [sorted(g) for g in groups if g]


def _pattern_entry(pattern: str) -> dict[str, str | None]:
    """``{"name": preset or None, "regex": full regex}`` for the manifest."""
    regex = _core.resolve_pattern(pattern)
    name = next((p for p in ("gpt2", "cl100k", "o200k") if _core.resolve_pattern(p) == regex), None)
    return {"name": name, "regex": regex}


def _check_parts(parts: Any) -> None:
    """The manifest's part list: each part once, with its row count and its
    SHA-256 (mandatory: a manifest without them would turn verification off)."""
    if not isinstance(parts, list):
        raise TypeError("parts is not a list")
    seen = set()
    for part in parts:
        if (
            not isinstance(part, dict)
            or not isinstance(part["path"], str)
            or type(part["rows"]) is not int
        ):
            raise TypeError(f"part {part!r} needs a str path and an int rows")
        digest = part["sha256"]
        if (
            not isinstance(digest, str)
            or len(digest) != 64
            or set(digest) - set("0123456789abcdef")
        ):
            raise ValueError(
                f"part {part['path']!r}: sha256 {digest!r} is not a SHA-256 hex digest"
            )
        if part["path"] in seen:
            raise ValueError(
                f"part {part['path']!r} is listed twice (its counts would be added twice)"
            )
        seen.add(part["path"])


def _check_pattern(entry: Any) -> None:
    """The manifest's pattern: a regex, and a preset name only where the name
    is a preset whose regex it is (a name is never trusted over the regex)."""
    if not isinstance(entry, dict) or not isinstance(entry["regex"], str):
        raise TypeError("pattern needs a str regex")
    name = entry["name"]
    if name is not None and (not isinstance(name, str) or _pattern_entry(name) != entry):
        raise ValueError(
            f"pattern name {name!r} does not name the preset whose regex the manifest holds"
        )


def _build_manifest(
    spec: CountSpec,
    totals: dict[str, int],
    parts: Sequence[dict[str, Any]],
    *,
    engine: str,
    bucket_hash: str | None,
) -> dict[str, Any]:
    from bytepair import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "bytepair_version": __version__,
        "engine": engine,
        "pattern": _pattern_entry(spec.pattern),
        "special_tokens": list(spec.special_tokens),
        "text": {"format": spec.format, "text_field": spec.text_field, "errors": spec.errors},
        "totals": {
            k: int(totals.get(k, 0)) for k in ("documents", "bytes", "pre_tokens", "distinct")
        },
        "bucket_hash": bucket_hash,
        "parts": list(parts),
    }


OWNER = "_owner.json"


def _staging_dir(out: str) -> str:
    """A fresh hidden folder beside `out`, on the same filesystem (for the final
    rename), holding ``_owner.json`` (host and pid of this driver). Staging
    folders of `out` left by a driver of this host that is gone (kill -9, OOM:
    no chance to clean up) are removed first; those of live drivers or other
    hosts are left alone."""
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


def _commit(staging: str, out: str, manifest: dict[str, Any]) -> "WordCounts":
    """Write the manifest last, then move `staging` to `out`, replacing an older
    artifact there (which stays intact until the final rename)."""
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
    return WordCounts.open(out)


# -- reading an artifact ---------------------------------------------------------


@dataclass(frozen=True)
class _Totals:
    """What was counted: documents, input bytes, pre-tokens, distinct words."""

    documents: int
    bytes: int
    pre_tokens: int
    distinct: int


class WordCounts:
    """An opened word-counts artifact (see module docs); nothing is loaded until used.

    >>> import bytepair, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.txt").write_text("low lower lowest")
    >>> wc = bytepair.count([d / "a.txt"], d / "counts", num_workers=1, progress=False)
    >>> len(wc), wc.totals.pre_tokens, wc.most_common(1)
    (3, 3, [(b' lower', 1)])
    """

    def __init__(self, path: str, manifest: dict[str, Any]):
        self.path = path
        self.manifest = manifest

    @classmethod
    def open(cls, path: str | os.PathLike) -> "WordCounts":
        """Open the artifact folder at `path` (reads the manifest only).

        Raises:
            FileNotFoundError: no folder, or no ``_manifest.json`` in it (an
                unfinished or interrupted count is not an artifact).
            ValueError: a manifest that is not JSON, of another format or a newer
                version, or that names a part file that is missing.
        """
        path = os.fspath(path)
        manifest_path = os.path.join(path, MANIFEST)
        manifest = read_manifest(
            path,
            FORMAT,
            FORMAT_VERSION,
            "word-counts",
            "not a word-counts artifact (an unfinished or interrupted count?)",
        )
        try:
            parts = manifest["parts"]
            _check_parts(parts)
            _check_pattern(manifest["pattern"])
            if not isinstance(manifest["special_tokens"], list):
                raise TypeError(
                    f"special_tokens is {type(manifest['special_tokens']).__name__}, not a list"
                )
            CountSpec(manifest["pattern"]["regex"], tuple(manifest["special_tokens"]))
            _Totals(**manifest["totals"])
        except (KeyError, TypeError) as e:
            raise ValueError(f"{manifest_path}: missing or malformed key ({e!r})") from None
        except ValueError as e:
            raise ValueError(f"{manifest_path}: {e}") from None
        for part in parts:
            if os.path.basename(part["path"]) != part["path"] or not os.path.isfile(
                os.path.join(path, part["path"])
            ):
                raise ValueError(f"{manifest_path}: part {part['path']!r} is missing")
        return cls(path, manifest)

    def __repr__(self) -> str:
        t = self.totals
        return (
            f"WordCounts({self.path!r}: {t.distinct} distinct words, {t.pre_tokens} pre-tokens, "
            f"{len(self.manifest['parts'])} parts)"
        )

    def __len__(self) -> int:
        """Number of distinct words."""
        return self.totals.distinct

    @property
    def totals(self) -> _Totals:
        return _Totals(**self.manifest["totals"])

    @property
    def pattern(self) -> str:
        """The full pre-tokenization regex the words were made with."""
        return self.manifest["pattern"]["regex"]

    @property
    def pattern_name(self) -> str | None:
        """The preset name (``gpt2``, ``cl100k``, ``o200k``), or None for a custom regex."""
        return self.manifest["pattern"]["name"]

    @property
    def special_tokens(self) -> tuple[str, ...]:
        return tuple(self.manifest["special_tokens"])

    @property
    def spec(self) -> CountSpec:
        text = self.manifest["text"]
        return CountSpec(
            self.pattern_name or self.pattern,
            self.special_tokens,
            text["format"],
            text["text_field"],
            text["errors"],
        )

    def part_paths(self) -> list[str]:
        return [os.path.join(self.path, p["path"]) for p in self.manifest["parts"]]

    def verify(self) -> None:
        """Check every part's SHA-256 against the manifest (reads every byte).
        ValueError names the first part that differs."""
        for part, path in zip(self.manifest["parts"], self.part_paths()):
            if _sha256_file(path) != part["sha256"]:
                raise ValueError(
                    f"{path}: SHA-256 differs from the manifest (a damaged or replaced part)"
                )

    def load_into(self, counter: _core.WordCounter, *, verify: bool = True) -> None:
        """Stream every part into a Rust counter, as Arrow buffers (no Python dict).
        With `verify`, each part's SHA-256 and row count are checked first."""
        if verify:
            self.verify()
        for part, path in zip(self.manifest["parts"], self.part_paths()):
            rows = _open_part(path).metadata.num_rows
            if rows != part["rows"]:
                raise ValueError(f"{path}: {rows} rows, the manifest says {part['rows']}")
            _add_part(counter, path)

    def items(self) -> Iterator[tuple[bytes, int]]:
        """Every (word bytes, count), part by part (each part sorted by word)."""
        import numpy as np

        for path in self.part_paths():
            for data, offsets, counts in _part_batches(path):
                o = np.frombuffer(offsets, dtype="<i8").tolist()
                for i, c in enumerate(np.frombuffer(counts, dtype="<i8").tolist()):
                    yield data[o[i] : o[i + 1]], c

    def most_common(self, n: int | None = None) -> list[tuple[bytes, int]]:
        """The `n` most frequent words (all if None), count descending, ties by bytes."""
        if n is None:
            return sorted(self.items(), key=lambda wc: (-wc[1], wc[0]))
        return heapq.nsmallest(n, self.items(), key=lambda wc: (-wc[1], wc[0]))

    def merge(
        self, other: "WordCounts", out: str | os.PathLike, *, parts: int | None = None
    ) -> "WordCounts":
        """Sum this artifact and `other` (same pattern, special tokens and decoding
        policy) into a new artifact at `out`, with `parts` parts (default: the
        larger count of the two). Runs on this machine, bucket by bucket.

        Raises:
            ValueError: the two were counted with different specs.
        """
        if (self.pattern, self.special_tokens) != (other.pattern, other.special_tokens):
            raise ValueError(
                f"cannot merge {self.path} and {other.path}: counted with different patterns or special tokens"
            )
        parts = parts or max(len(self.manifest["parts"]), len(other.manifest["parts"]))
        staging = _staging_dir(os.fspath(out))
        inputs = self.part_paths() + other.part_paths()
        for shard_id, path in enumerate(inputs):  # re-bucket each input part
            counter = _core.WordCounter("gpt2", [])
            _add_part(counter, path)
            tmp = _shard_dir(staging, shard_id)
            os.makedirs(tmp)
            for bucket, buffers in enumerate(counter.to_buckets(parts)):
                _write_part(os.path.join(tmp, _part_name(bucket)), *buffers)
        shard_ids = range(len(inputs))
        written = [
            {
                "path": _part_name(b),
                **_reduce_bucket(
                    _bucket_paths(staging, shard_ids, b), os.path.join(staging, _part_name(b))
                ),
            }
            for b in range(parts)
        ]
        a, b = self.totals, other.totals
        totals = {
            "documents": a.documents + b.documents,
            "bytes": a.bytes + b.bytes,
            "pre_tokens": sum(p["pre_tokens"] for p in written),
            "distinct": sum(p["rows"] for p in written),
        }
        manifest = _build_manifest(
            self.spec, totals, written, engine="merge", bucket_hash=BUCKET_HASH
        )
        return _commit(staging, os.fspath(out), manifest)

    def export_tsv(self, path: str | os.PathLike | BinaryIO) -> int:
        """Write ``word<TAB>count`` lines, most frequent first, to `path`
        (atomically) or to an open binary file. Words are UTF-8 with ``\\\\``,
        ``\\t``, ``\\n``, ``\\r`` escaped as backslash sequences and bytes that are
        not UTF-8 as ``\\xHH``. Returns the number of lines."""
        rows = self.most_common()
        if hasattr(path, "write"):
            _write_tsv(path, rows)
        else:
            with atomic_open(path) as f:
                _write_tsv(f, rows)
        return len(rows)


def _write_tsv(f: BinaryIO, rows: list[tuple[bytes, int]]) -> None:
    for word, count in rows:
        f.write(_escape_word(word).encode() + b"\t" + str(count).encode() + b"\n")


_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_word(word: bytes) -> str:
    """A word as one TSV field (see `WordCounts.export_tsv`)."""
    text = word.decode("utf-8", errors="surrogateescape")
    return "".join(
        _ESCAPES.get(ch) or (f"\\x{ord(ch) - 0xDC00:02x}" if "\udc80" <= ch <= "\udcff" else ch)
        for ch in text
    )
