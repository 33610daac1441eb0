"""The ``_manifest.json`` of a word-counts artifact (`bytepair.counts.artifact`):
the check `WordCounts.open` runs on every field.

A manifest is checked whole before anything reads it: each field against its
type (`SCHEMA`), then what the fields must agree on (the pattern name and its
regex, each part listed once, the totals and the parts' sums). A malformed
manifest is a ValueError naming the file and the field, e.g.
``counts/_manifest.json: totals.bytes: expected a non-negative integer, got -1``.
"""

from __future__ import annotations

import json
from typing import Any

from bytepair.counts.protocol import pattern_entry
from bytepair.counts.sources import FORMATS, CountSpec, check_special_tokens
from bytepair.folders import (
    FieldError,
    check_manifest,
    file_name,
    list_of,
    natural,
    one_of,
    optional,
    record,
    sha256_hex,
    string,
)
from bytepair.formats.hf_regex import PRESETS

# The patterns a manifest names are the core's presets, `PRESETS` (``superbpe``:
# SuperBPE's stage-2 pieces), as `protocol.pattern_entry` writes them.

SCHEMA = record(
    bytepair_version=string,
    engine=string,
    pattern=record(name=optional(one_of(*PRESETS)), regex=string),
    special_tokens=list_of(string),
    text=record(format=one_of(*FORMATS), text_field=string, errors=one_of("strict", "replace")),
    totals=record(documents=natural, bytes=natural, pre_tokens=natural, distinct=natural),
    bucket_hash=optional(string),
    parts=list_of(record(path=file_name, rows=natural, pre_tokens=natural, sha256=sha256_hex)),
)


def _positive(value: Any) -> None:
    """An integer > 0 (a JSON true is not one)."""
    if type(value) is not int or value <= 0:
        raise FieldError(f"expected a positive number of bytes, got {json.dumps(value)[:60]}")


# Format version 2 adds what the counting workers' memory budget dropped: the
# budget (bytes, or null for none), distinct words, pre-tokens, and the highest
# minimum count applied (0 when nothing was dropped).
SCHEMA_V2 = record(
    pruned=record(
        max_memory=optional(_positive), words=natural, pre_tokens=natural, min_count=natural
    )
)


def check_word_counts_manifest(manifest: Any, manifest_path: str) -> None:
    """Every field of a word-counts manifest, and what they must agree on.

    Raises:
        ValueError: naming `manifest_path` and the field: a wrong type or a
            negative count, a pattern name that is not its regex's preset (a
            name is never trusted over the regex), a regex that does not
            compile, a bad special token, a part listed twice (its counts would
            be added twice), totals that are not the parts' sums, or (format
            version 2) a malformed ``pruned``.
    """
    check_manifest(manifest, SCHEMA, manifest_path)
    if manifest.get("format_version", 1) >= 2:
        check_manifest(manifest, SCHEMA_V2, manifest_path)
    check_manifest(manifest, _agreement, manifest_path)


def _agreement(manifest: dict[str, Any]) -> None:
    """What the fields `SCHEMA` checked one by one must agree on."""
    entry = manifest["pattern"]
    if entry["name"] is not None and pattern_entry(entry["name"]) != entry:
        raise (
            FieldError(f"{entry['name']!r} does not name the preset whose regex the manifest holds")
            .under("name")
            .under("pattern")
        )
    try:
        check_special_tokens(manifest["special_tokens"])
    except ValueError as e:
        raise FieldError(str(e)).under("special_tokens") from None
    try:
        CountSpec(entry["regex"], tuple(manifest["special_tokens"])).counter()
    except ValueError as e:  # a regex that does not compile
        raise FieldError(str(e)).under("regex").under("pattern") from None
    seen: set[str] = set()
    for i, part in enumerate(manifest["parts"]):
        if part["path"] in seen:
            raise (
                FieldError(
                    f"part {part['path']!r} is listed twice (its counts would be added twice)"
                )
                .under(i)
                .under("parts")
            )
        seen.add(part["path"])
    totals = manifest["totals"]
    for key, field in (("distinct", "rows"), ("pre_tokens", "pre_tokens")):
        summed = sum(p[field] for p in manifest["parts"])
        if totals[key] != summed:
            raise (
                FieldError(f"{totals[key]:,}, but the parts' {field} add up to {summed:,}")
                .under(key)
                .under("totals")
            )
