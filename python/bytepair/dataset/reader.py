"""`TokenShards`: read a dataset of token shards that `encode_dataset` wrote
(the folder layout is in `bytepair.dataset.shards`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from bytepair.counts.sources import MANIFEST
from bytepair.dataset.megatron import read_megatron_index
from bytepair.folders import (
    FieldError,
    check_manifest,
    file_name,
    list_of,
    natural,
    one_of,
    optional,
    read_manifest,
    record,
    sha256_hex,
    string,
)
from bytepair.folders import sha256_file as _sha256_file

if TYPE_CHECKING:
    import numpy

FORMAT = "bytepair-token-shards"
FORMAT_VERSION = 1

# Every field `TokenShards` and `bytepair shards inspect` read.
SCHEMA = record(
    bytepair_version=string,
    layout=one_of("shards", "megatron"),
    tokenizer_sha256=sha256_hex,
    dtype=one_of("uint16", "uint32", "int32"),
    byteorder=one_of("little"),
    eot=optional(natural),
    documents=natural,
    tokens=natural,
    bytes=natural,
    shard_size=natural,
    input=record(format=string, errors=one_of("strict", "replace"), files=natural),
    shards=list_of(
        record(
            name=file_name,
            index=file_name,
            documents=natural,
            tokens=natural,
            sha256=sha256_hex,
            index_sha256=sha256_hex,
        )
    ),
)


def _sums_agree(manifest: dict[str, Any]) -> None:
    """The totals are the shards' sums (a reader indexes documents by them)."""
    for key in ("documents", "tokens"):
        summed = sum(s[key] for s in manifest["shards"])
        if manifest[key] != summed:
            raise FieldError(f"{manifest[key]:,}, but the shards add up to {summed:,}").under(key)


class TokenShards:
    """A finished dataset of token shards (see the module docs), memory-mapped.

    ``len(ds)`` is the number of documents, ``ds[i]`` the ids of document i
    (a numpy array, EOT included), ``ds.tokens`` all ids in order (one
    memmap per shard, chained), ``ds.verify()`` checks every SHA-256.

    >>> import bytepair, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.txt").write_text("hi<|endoftext|>ho")
    >>> tok = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    >>> ds = bytepair.encode_dataset(
    ...     d / "a.txt", d / "out", tok, separator="<|endoftext|>", progress=False
    ... )
    >>> len(ds), ds[1].tolist(), ds.manifest["tokens"]
    (2, [104, 111, 256], 6)
    """

    def __init__(self, path: str, manifest: dict[str, Any]):
        self.path = path
        self.manifest = manifest
        self._shards: list[tuple[Any, Any]] | None = None
        self._starts: Any = None

    @classmethod
    def open(cls, path: str | os.PathLike) -> "TokenShards":
        """Open the dataset at `path` (reads the manifest; shards are mapped on use).

        Raises:
            FileNotFoundError: no folder, or no manifest (an unfinished run:
                rerun its command to finish it).
            ValueError: a manifest of another format or a newer version, with a
                malformed field (the message names the file and the field), or
                one that names a missing shard.
        """
        path = os.fspath(path)
        manifest = read_manifest(
            path,
            FORMAT,
            FORMAT_VERSION,
            "token-shards",
            "not a finished dataset (an interrupted encode? run it again to resume)",
        )
        manifest_path = os.path.join(path, MANIFEST)
        check_manifest(manifest, SCHEMA, manifest_path)
        check_manifest(manifest, _sums_agree, manifest_path)
        names = [name for s in manifest["shards"] for name in (s["name"] + ".bin", s["index"])]
        for name in names:
            if not os.path.isfile(os.path.join(path, name)):
                raise ValueError(f"{manifest_path}: shard file {name!r} is missing")
        return cls(path, manifest)

    def __repr__(self) -> str:
        m = self.manifest
        return (
            f"TokenShards({self.path!r}: {m['documents']:,} documents, {m['tokens']:,} tokens, "
            f"{len(m['shards'])} shards)"
        )

    def __len__(self) -> int:
        return int(self.manifest["documents"])

    @property
    def dtype(self) -> "numpy.dtype":
        import numpy as np

        return np.dtype(self.manifest["dtype"]).newbyteorder("<")

    def shard_arrays(self) -> list[tuple["numpy.ndarray", "numpy.ndarray"]]:
        """(ids memmap, int64 document offsets) of every shard, in order."""
        import numpy as np

        if self._shards is None:
            shards = []
            for s in self.manifest["shards"]:
                bin_path = os.path.join(self.path, s["name"] + ".bin")
                ids = (
                    np.memmap(bin_path, dtype=self.dtype, mode="r")
                    if s["tokens"]
                    else np.zeros(0, dtype=self.dtype)
                )
                shards.append((ids, self._offsets(s)))
            self._shards = shards
            self._starts = np.cumsum([0] + [s["documents"] for s in self.manifest["shards"]])
        return self._shards

    def _offsets(self, shard: dict[str, Any]) -> "numpy.ndarray":
        import numpy as np

        path = os.path.join(self.path, shard["index"])
        if self.manifest["layout"] == "megatron":
            lengths = read_megatron_index(path)[0]
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            return offsets
        return np.load(path, mmap_mode="r", allow_pickle=False)

    def __getitem__(self, i: int) -> "numpy.ndarray":
        import numpy as np

        shards = self.shard_arrays()
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"document {i} out of range ({n} documents)")
        i %= n
        s = int(np.searchsorted(self._starts, i, side="right")) - 1
        ids, offsets = shards[s]
        j = i - int(self._starts[s])
        return np.asarray(ids[int(offsets[j]) : int(offsets[j + 1])])

    @property
    def tokens(self) -> "numpy.ndarray":
        """Every id in document order: the one shard's memmap, or (several
        shards) their concatenation in memory; for a big dataset iterate
        `shard_arrays` instead."""
        import numpy as np

        arrays = [ids for ids, _ in self.shard_arrays()]
        return (
            arrays[0]
            if len(arrays) == 1
            else np.concatenate(arrays)
            if arrays
            else np.zeros(0, self.dtype)
        )

    def verify(self) -> None:
        """Check the SHA-256 of every shard file against the manifest.

        Raises:
            ValueError: names the first file that does not match (changed,
                truncated or corrupt).
        """
        for s in self.manifest["shards"]:
            for name, digest in (
                (s["name"] + ".bin", s["sha256"]),
                (s["index"], s["index_sha256"]),
            ):
                if _sha256_file(os.path.join(self.path, name)) != digest:
                    raise ValueError(
                        f"{os.path.join(self.path, name)}: SHA-256 does not match the manifest "
                        "(changed or corrupt)"
                    )
