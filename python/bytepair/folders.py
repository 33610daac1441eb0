"""Output folders whose ``_manifest.json`` is written last (word counts,
token shards): reading that manifest, checking its fields, the SHA-256 of
the files it lists (`sha256_file` after the fact, `HashingWriter` while a file
is written), and the progress records that let a killed run resume.

Resuming (token shards, word counts): a run writes its *plan* (inputs, their
sizes, every setting that changes the output) to ``_progress/plan.json``
before any work, and each finished task a record ``_progress/task-NNNNN.json``
(its inputs and the SHA-256 of what it wrote). A rerun with the same plan
keeps the tasks whose record holds its inputs and whose files still match
(`finished_record`) and redoes the others; another plan does not resume. The
folder ``_progress/`` goes when the manifest is written.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from bytepair.atomic import atomic_write
from bytepair.counts.sources import MANIFEST

PROGRESS = "_progress"  # plan and task records of an unfinished run
PLAN = "plan.json"


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


# -- progress records of a resumable run ---------------------------------------------


def plan_digest(plan: dict[str, Any]) -> str:
    """SHA-256 of a plan (JSON, keys sorted): what a manifest pins."""
    return hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()


def read_plan(folder: str) -> dict[str, Any] | None:
    """The plan an earlier run of `folder` wrote, or None (none, or unreadable)."""
    try:
        with open(os.path.join(folder, PROGRESS, PLAN), "rb") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_plan(folder: str, plan: dict[str, Any]) -> None:
    """Record `plan` (JSON) as the plan of the run in `folder` (made if needed)."""
    os.makedirs(os.path.join(folder, PROGRESS), exist_ok=True)
    atomic_write(os.path.join(folder, PROGRESS, PLAN), json.dumps(plan).encode())


def task_record_path(folder: str, task: int, kind: str = "task") -> str:
    """Where task `task` of the run in `folder` records that it finished:
    ``folder/_progress/<kind>-00002.json``."""
    return os.path.join(folder, PROGRESS, f"{kind}-{task:05d}.json")


def write_task_record(folder: str, task: int, record: dict[str, Any], kind: str = "task") -> None:
    """Record (atomically) that task `task` finished, with `record` (JSON)."""
    os.makedirs(os.path.join(folder, PROGRESS), exist_ok=True)
    atomic_write(task_record_path(folder, task, kind), json.dumps(record).encode())


def finished_record(
    folder: str,
    task: int,
    inputs: Sequence[str],
    intact: Callable[[dict[str, Any]], bool],
    kind: str = "task",
) -> dict[str, Any] | None:
    """The record of an earlier run's task `task` if it is complete: it names
    the same `inputs` and `intact(record)` holds (its files are there with the
    SHA-256 it recorded). Else None: redo the task."""
    try:
        with open(task_record_path(folder, task, kind), "rb") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("inputs") != list(inputs):
        return None
    try:
        return record if intact(record) else None
    except (OSError, KeyError, TypeError, ValueError):
        return None
