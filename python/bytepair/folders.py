"""Output folders whose ``_manifest.json`` is written last (word counts,
token shards): reading that manifest, checking its fields, and the SHA-256 of
the files it lists (`sha256_file` after the fact, `HashingWriter` while a file
is written)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
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
    if type(found) is not int or not 1 <= found <= version:
        raise ValueError(
            f"{manifest_path}: format_version {found!r}; this bytepair reads up to {version}"
        )
    return manifest


# -- the fields of a manifest ------------------------------------------------------
#
# A manifest is read back by other machines and later releases, and may have
# been edited by hand: each reader checks every field it uses against a schema
# made of the checks below (`record`, `list_of`, `natural`...), so a malformed
# field is a ValueError naming the file and the field (``totals.bytes``), not a
# TypeError or a wrong result much later.

Check = Callable[[Any], None]


class FieldError(ValueError):
    """A field that fails its check: `problem`, at `path` (keys and list indices)."""

    def __init__(self, problem: str, path: tuple[str | int, ...] = ()):
        super().__init__(problem)
        self.problem, self.path = problem, path

    def under(self, key: str | int) -> "FieldError":
        return FieldError(self.problem, (key, *self.path))

    def where(self) -> str:
        """``totals.bytes``, ``parts[2].sha256``."""
        text = ""
        for key in self.path:
            text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
        return text or "the manifest"


def _shown(value: Any) -> str:
    return json.dumps(value)[:60]


def natural(value: Any) -> None:
    """An integer >= 0 (a JSON true is not one)."""
    if type(value) is not int or value < 0:
        raise FieldError(f"expected a non-negative integer, got {_shown(value)}")


def string(value: Any) -> None:
    if not isinstance(value, str):
        raise FieldError(f"expected a string, got {_shown(value)}")


def sha256_hex(value: Any) -> None:
    """A SHA-256 digest, 64 lowercase hex digits."""
    if not isinstance(value, str) or len(value) != 64 or set(value) - set("0123456789abcdef"):
        raise FieldError(f"expected a SHA-256 hex digest, got {_shown(value)}")


def file_name(value: Any) -> None:
    """A plain file name inside the folder (no directory part: a manifest
    never points outside its folder)."""
    string(value)
    if value in ("", ".", "..") or os.path.basename(value) != value or "\\" in value:
        raise FieldError(f"expected a file name inside the folder, got {_shown(value)}")


def one_of(*values: Any) -> Check:
    def check(value: Any) -> None:
        if value not in values or type(value) is bool:
            raise FieldError(
                f"expected one of {', '.join(map(_shown, values))}, got {_shown(value)}"
            )

    return check


def optional(inner: Check) -> Check:
    """`inner`, or null."""

    def check(value: Any) -> None:
        if value is not None:
            inner(value)

    return check


def list_of(item: Check) -> Check:
    def check(value: Any) -> None:
        if not isinstance(value, list):
            raise FieldError(f"expected a list, got {_shown(value)}")
        for i, x in enumerate(value):
            try:
                item(x)
            except FieldError as e:
                raise e.under(i) from None

    return check


def record(**fields: Check) -> Check:
    """An object holding (at least) these keys, each passing its check."""

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise FieldError(f"expected an object with {', '.join(fields)}, got {_shown(value)}")
        for key, inner in fields.items():
            if key not in value:
                raise FieldError("missing").under(key)
            try:
                inner(value[key])
            except FieldError as e:
                raise e.under(key) from None

    return check


def check_manifest(manifest: Any, schema: Check, manifest_path: str) -> None:
    """`schema(manifest)`; ValueError naming `manifest_path` and the field at fault."""
    try:
        schema(manifest)
    except FieldError as e:
        raise ValueError(f"{manifest_path}: {e.where()}: {e.problem}") from None
