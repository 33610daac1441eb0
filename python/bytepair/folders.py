"""Output folders whose ``_manifest.json`` is written last (word counts,
token shards): reading that manifest, and the SHA-256 of the files it lists
(`sha256_file` after the fact, `HashingWriter` while a file is written)."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from bytepair.counts.sources import MANIFEST


def sha256_file(path: str) -> str:
    """Hex SHA-256 of the file at `path`, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class HashingWriter:
    """A binary file wrapper that feeds what is written through it to `digest`
    (a ``hashlib`` object), so a file's SHA-256 needs no second read. `close`
    only marks it closed: pyarrow closes its sink, while the real file belongs
    to the caller (`bytepair.atomic.atomic_open`)."""

    def __init__(self, f, digest):
        self._f, self._digest = f, digest
        self.closed = False

    def write(self, b) -> int:
        self._digest.update(b)
        return self._f.write(b)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self.closed = True


def read_manifest(path: str, format: str, version: int, kind: str, missing: str) -> dict[str, Any]:
    """The ``_manifest.json`` of the output folder `path` (word counts, token
    shards), checked to be of `format` and at most `version`.

    Raises:
        FileNotFoundError: no folder (named as a `kind` folder), or no manifest
            in it (the message ends with `missing`).
        ValueError: not JSON, another format, or a newer version (names the file).
    """
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such {kind} folder")
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.exists(manifest_path):
        raise FileNotFoundError(f"{path}: no {MANIFEST}: {missing}")
    try:
        with open(manifest_path, "rb") as f:
            manifest = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{manifest_path}: not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != format:
        raise ValueError(f"{manifest_path}: not a bytepair {kind} manifest (format != {format!r})")
    found = manifest.get("format_version")
    if not isinstance(found, int) or found > version:
        raise ValueError(
            f"{manifest_path}: format_version {found!r}; this bytepair reads up to {version}"
        )
    return manifest
