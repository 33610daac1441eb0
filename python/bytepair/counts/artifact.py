"""The word-counts artifact: `WordCounts` opens, checks, reads and merges one.

Counting pre-tokens is embarrassingly parallel; the merge loop is not. So
counting can run anywhere (a process pool, Ray, Spark) and write *word counts*,
and training reads them on one node (`bytepair.train_from_counts`).

The artifact is a folder::

    counts/
      part-00000.parquet    word: binary, count: int64; sorted by word, each word once
      part-00001.parquet    (a word is in exactly one part)
      _manifest.json        written last: format version, bytepair version, pattern
                            (name and full regex), special tokens, text decoding
                            policy, totals, what a memory budget dropped
                            (version 2), and each part's rows and SHA-256

A folder without ``_manifest.json`` is not an artifact (a run killed halfway
leaves none): `WordCounts.open` refuses it. Artifacts are built in a hidden
staging folder beside the destination and moved into place when complete.

Every engine writes it with the steps of `bytepair.counts.protocol` (count
shards into bucket files, reduce each bucket into one part, write the manifest
last); the part files themselves are `bytepair.counts.parts`.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from bytepair import _core
from bytepair.atomic import atomic_open
from bytepair.counts.manifest import check_word_counts_manifest
from bytepair.counts.parts import (
    add_part,
    load_part,
    open_part,
    part_batches,
    part_name,
    release_arrow_memory,
    write_part,
)
from bytepair.counts.protocol import (
    FORMAT,
    FORMAT_VERSION,
    bucket_paths,
    finish,
    reduce_bucket,
    shard_dir,
    staging_dir,
    sum_pruned,
)
from bytepair.counts.sources import MANIFEST, CountSpec
from bytepair.folders import read_manifest
from bytepair.folders import sha256_file as _sha256_file

# -- reading an artifact ---------------------------------------------------------


@dataclass(frozen=True)
class _Totals:
    """What was counted: documents, input bytes, pre-tokens, distinct words."""

    documents: int
    bytes: int
    pre_tokens: int
    distinct: int


@dataclass(frozen=True)
class _Pruned:
    """What the counting workers' memory budget dropped: distinct words (a
    word dropped by two workers counts twice), their pre-tokens (occurrences
    the totals do not hold), and the highest minimum count applied (a word
    dropped was seen fewer times in the text its worker had counted before);
    `max_memory` is the budget of each worker in bytes, None for none. All
    0 when nothing was dropped (and for artifacts of format version 1)."""

    max_memory: int | None = None
    words: int = 0
    pre_tokens: int = 0
    min_count: int = 0


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
                version, with a malformed field (the message names it:
                `counts.manifest.check_word_counts_manifest`), or that names a
                part file that is missing.
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
        check_word_counts_manifest(manifest, manifest_path)
        parts = manifest["parts"]
        for part in parts:
            if not os.path.isfile(os.path.join(path, part["path"])):
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
        t = self.manifest["totals"]
        return _Totals(t["documents"], t["bytes"], t["pre_tokens"], t["distinct"])

    @property
    def pruned(self) -> _Pruned:
        """What the counting workers' memory budget dropped (see `_Pruned`)."""
        return _Pruned(**self.manifest.get("pruned", {}))

    @property
    def pattern(self) -> str:
        """The full pre-tokenization regex the words were made with."""
        return self.manifest["pattern"]["regex"]

    @property
    def pattern_name(self) -> str | None:
        """The preset name (``gpt2``, ``cl100k``, ``o200k``, ``llama3``, ``qwen2``,
        ``superbpe``), or None for a custom regex."""
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

    def load_into(
        self,
        counter: _core.WordCounter,
        *,
        verify: bool = True,
        max_memory: int | None = None,
        run: dict[str, int] | None = None,
        sample: bool = True,
    ) -> None:
        """Stream every part into a Rust counter, as Arrow buffers (no Python
        dict), as rows: each word of an artifact is in one part, so its rows
        are kept as they come (``WordCounter.load_rows``), never summed.
        With `verify`, each part's SHA-256 and row count are checked first.
        `max_memory` (bytes): keep only the words the merge loop can hold within
        it. With `sample` (default), threshold sampling (Duffield, Lund and
        Thorup 2005): every word counted at least t times exactly, and a hash
        sample of the rarer ones, a word counted c < t times kept with
        probability c/t and counted t times, so the pair counts stay unbiased;
        t is the smallest threshold whose sample fits, and the same artifact
        gives the same sample. Without, every word counted at least t times
        for the smallest t that fits (exactly the most frequent words).
        `run`: ``{"ids", "merges"}`` of the training run, which set what the
        merge loop holds per word and per merge (``"fold": True`` folds the
        words dropped into pieces instead, only with ``sample=False``)."""
        if verify:
            self.verify()
        for part, path in zip(self.manifest["parts"], self.part_paths()):
            rows = open_part(path).metadata.num_rows
            if rows != part["rows"]:
                raise ValueError(f"{path}: {rows} rows, the manifest says {part['rows']}")
            load_part(counter, path, max_memory, sample=sample, **(run or {}))
        if max_memory is not None:
            # Rows cut at special tokens (parts made elsewhere) were summed apart
            # from the rows: fit them too (a sample of a sample, at a threshold
            # t' >= t, keeps a word with probability c/t * t/t': still unbiased).
            counter.fit_training_budget(max_memory, **(run or {}), sample=sample)
        release_arrow_memory()  # pyarrow's buffers, before training

    def items(self) -> Iterator[tuple[bytes, int]]:
        """Every (word bytes, count), part by part (each part sorted by word)."""
        import numpy as np

        for path in self.part_paths():
            for data, offsets, counts in part_batches(path):
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
        larger count of the two). Runs on this machine, bucket by bucket. What
        their budgets dropped adds up (``max_memory``: the larger budget).

        Raises:
            ValueError: the two were counted with different specs.
        """
        if (self.pattern, self.special_tokens) != (other.pattern, other.special_tokens):
            raise ValueError(
                f"cannot merge {self.path} and {other.path}: counted with different patterns or "
                "special tokens"
            )
        parts = parts or max(len(self.manifest["parts"]), len(other.manifest["parts"]))
        staging = staging_dir(os.fspath(out))
        inputs = self.part_paths() + other.part_paths()
        for shard_id, path in enumerate(inputs):  # re-bucket each input part
            counter = _core.WordCounter("gpt2", [])
            add_part(counter, path)
            tmp = shard_dir(staging, shard_id)
            os.makedirs(tmp)
            for bucket, buffers in enumerate(counter.to_buckets(parts)):
                write_part(os.path.join(tmp, part_name(bucket)), *buffers)
        shard_ids = range(len(inputs))
        written = [
            reduce_bucket(bucket_paths(staging, shard_ids, b), os.path.join(staging, part_name(b)))
            for b in range(parts)
        ]
        a, b = self.totals, other.totals
        totals = {"documents": a.documents + b.documents, "bytes": a.bytes + b.bytes}
        budgets = [c.pruned.max_memory for c in (self, other) if c.pruned.max_memory is not None]
        pruned = sum_pruned(
            [(c.pruned.words, c.pruned.pre_tokens, c.pruned.min_count) for c in (self, other)]
        )
        path = finish(
            staging,
            os.fspath(out),
            self.spec,
            written,
            totals,
            engine="merge",
            max_memory=max(budgets, default=None),
            pruned=pruned,
        )
        return WordCounts.open(path)

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
