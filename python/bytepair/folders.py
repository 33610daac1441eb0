"""Output folders whose ``_manifest.json`` is written last (word counts,
token shards): reading that manifest, and the SHA-256 of the files it lists."""

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
