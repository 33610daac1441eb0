"""tiktoken: ``.tiktoken`` rank files and live ``tiktoken.Encoding`` objects.

A ``.tiktoken`` file (openai/tiktoken, ``tiktoken.load.load_tiktoken_bpe``)
has one line per token, ``base64(token bytes) rank``; the rank is both the
token id and its merge priority. It holds neither the pre-tokenization pattern
nor the special tokens, so `save_tiktoken` writes them to a sidecar JSON file
beside it (``<path>.json``: ``{"pat_str": ..., "special_tokens": {...}}``, the
names tiktoken's ``Encoding`` uses) and `from_tiktoken` reads it back. Files
named after OpenAI's encodings (``cl100k_base.tiktoken``, ``o200k_base.tiktoken``,
``r50k_base``, ``p50k_base``, optionally gzipped) need no sidecar: their
pattern and special tokens are the ones tiktoken publishes.

The merge table is recovered from the ranks (`tables.merges_from_ranks`).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bytepair import _core
from bytepair.atomic import recover_file_sets, write_file_set
from bytepair.formats.hf_regex import preset_name
from bytepair.formats.reading import build_tokenizer, maybe_gunzip, parse_json
from bytepair.formats.tables import merges_from_ranks, ranks_of

if TYPE_CHECKING:
    import tiktoken

    from bytepair.tokenizer import Tokenizer

SIDECAR_SUFFIX = ".json"

# OpenAI's encodings as tiktoken_ext.openai_public defines them: preset,
# special tokens, number of ranks in the file (to recognise it by name safely).
KNOWN_ENCODINGS: dict[str, tuple[str, dict[str, int], int]] = {
    "r50k_base": ("gpt2", {"<|endoftext|>": 50256}, 50256),
    "p50k_base": ("gpt2", {"<|endoftext|>": 50256}, 50280),
    "cl100k_base": (
        "cl100k",
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        100256,
    ),
    "o200k_base": ("o200k", {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, 199998),
}
_B64_LINE = re.compile(rb"^[A-Za-z0-9+/]+={0,2} \d+$")


def read_bytes_maybe_gzip(path: str | os.PathLike) -> bytes:
    """The content of `path`, gunzipped when it starts with the gzip magic bytes.

    Raises:
        ValueError: damaged or truncated gzip data; the message names `path`.
    """
    with open(path, "rb") as f:
        return maybe_gunzip(f.read(), source=os.fspath(path))


def looks_like_rank_file(head: bytes) -> bool:
    """Whether the first line of `head` is a ``base64 rank`` line."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    return bool(_B64_LINE.match(first))


def parse_ranks(data: bytes, *, source: str) -> tuple[dict[bytes, int], dict[bytes, int]]:
    """Parse ``.tiktoken`` content.

    Returns:
        (token bytes -> rank, token bytes -> 1-based line number).

    Raises:
        ValueError: a line that is not ``base64 rank``, invalid base64, a token
            listed twice; the message names `source` and the line.
    """
    ranks: dict[bytes, int] = {}
    lines: dict[bytes, int] = {}
    for n, line in enumerate(data.split(b"\n"), 1):
        fields = line.split()
        if not fields:
            continue
        # More than 10 digits is beyond 2**32 anyway (and int() refuses thousands of them).
        if len(fields) != 2 or not fields[1].isdigit() or len(fields[1]) > 10:
            raise ValueError(f"{source}: line {n}: expected 'base64-token rank', got {line[:80]!r}")
        try:
            token = base64.b64decode(fields[0], validate=True)
        except binascii.Error as e:
            raise ValueError(
                f"{source}: line {n}: invalid base64 {fields[0][:80]!r} ({e})"
            ) from None
        if token in ranks:
            raise ValueError(
                f"{source}: line {n}: token {token!r} is already on line {lines[token]}"
            )
        ranks[token] = int(fields[1])
        lines[token] = n
    if not ranks:
        raise ValueError(f"{source}: no ranks (an empty file)")
    return ranks, lines


def _encoding_name(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".gz", ".tiktoken"):
        name = name.removesuffix(suffix)
    return name


def read_sidecar(path: str) -> tuple[str, dict[str, int]] | None:
    """(pattern, special tokens) from ``<path>.json`` if that file exists.

    Raises:
        ValueError: the sidecar is not JSON, or lacks ``pat_str`` (a string) or
            has ``special_tokens`` that is not an object of string -> integer.
    """
    side = path + SIDECAR_SUFFIX
    if not os.path.isfile(side):
        return None
    with open(side, "rb") as f:
        doc = parse_json(f.read(), source=side)
    if not isinstance(doc, dict) or not isinstance(doc.get("pat_str"), str):
        raise ValueError(
            f"{side}: expected an object with a 'pat_str' string (the pre-tokenization pattern)"
        )
    specials = doc.get("special_tokens", {})
    if not isinstance(specials, dict) or not all(type(i) is int for i in specials.values()):
        raise ValueError(f"{side}: 'special_tokens' must be an object of string -> integer id")
    return doc["pat_str"], specials


def from_tiktoken(
    path: str | os.PathLike,
    *,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
    data: bytes | None = None,
) -> "Tokenizer":
    """Read a ``.tiktoken`` rank file (plain or gzipped) and recover its merges.

    Args:
        path: the rank file (``base64(token) rank`` per line).
        data: the file's content (gunzipped) when it was read already: a pipe
            can be read only once. `path` then names it and finds its sidecar.
        pattern: pre-tokenization regex or preset name. None: from the sidecar
            ``<path>.json``, else from the file name for OpenAI's encodings.
        special_tokens: string -> id. None: from the sidecar or the file name,
            else none.

    Returns:
        a Tokenizer with ids = ranks, whose ids equal
        ``tiktoken.Encoding(mergeable_ranks=..., pat_str=..., special_tokens=...)``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a malformed line, duplicate tokens or ranks, ranks that are
            not a BPE table (a token that is not the merge of two lower-ranked
            tokens; the message names its line), or no pattern known for the file.
    """
    path = os.fspath(path)
    recover_file_sets(os.path.dirname(path))  # a save interrupted between its two files
    data = read_bytes_maybe_gzip(path) if data is None else data
    # The core parses a valid file and recovers its merges; anything else is
    # read again here, where the error gets its words (or a file the core
    # refuses but Python's base64 accepts loads all the same).
    tables = _core.rank_table(data)
    if tables is None:
        ranks, lines = parse_ranks(data, source=path)
    if pattern is None or special_tokens is None:
        side = read_sidecar(path)
        known = KNOWN_ENCODINGS.get(_encoding_name(path))
        if (
            side is None
            and known is not None
            and known[2] == len(ranks if tables is None else tables)
        ):
            side = known[0], known[1]
        if side is None and pattern is None:
            raise ValueError(
                f"{path}: a .tiktoken file holds no pre-tokenization pattern and there is no "
                f"sidecar {path + SIDECAR_SUFFIX}; pass pattern= (e.g. 'cl100k', 'o200k', 'gpt2' "
                "or a regex) and special_tokens="
            )
        if side is not None:
            pattern = side[0] if pattern is None else pattern
            special_tokens = side[1] if special_tokens is None else special_tokens
    if tables is not None:
        return build_tokenizer(
            {}, [], special_tokens or {}, preset_name(pattern), source=path, rank_table=tables
        )
    return _tokenizer_from_ranks(
        ranks, pattern, special_tokens or {}, source=path, where=lambda t: f" (line {lines[t]})"
    )


def _tokenizer_from_ranks(
    ranks: Mapping[bytes, int],
    pattern: str,
    specials: Mapping[str, int],
    *,
    source: str,
    where=None,
):
    merges = merges_from_ranks(ranks, source=source, where=where)
    return build_tokenizer(
        {r: t for t, r in ranks.items()}, merges, specials, preset_name(pattern), source=source
    )


def from_tiktoken_encoding(enc: "tiktoken.Encoding") -> "Tokenizer":
    """A Tokenizer equal to a live ``tiktoken.Encoding`` (its ranks, pattern and
    special tokens: ``enc._mergeable_ranks``, ``enc._pat_str``, ``enc._special_tokens``).

    Raises:
        TypeError: `enc` lacks those attributes.
        ValueError: its ranks are not a BPE table (see `from_tiktoken`).
    """
    try:
        ranks, pat, specials = enc._mergeable_ranks, enc._pat_str, enc._special_tokens
    except AttributeError:
        raise TypeError(f"expected a tiktoken.Encoding, got {type(enc).__name__}") from None
    return _tokenizer_from_ranks(
        ranks, pat, specials, source=f"<tiktoken.Encoding {getattr(enc, 'name', '?')}>"
    )


def _import_tiktoken():
    try:
        import tiktoken
    except ImportError as e:
        raise ImportError(
            "Tokenizer.to_tiktoken needs the tiktoken package: pip install tiktoken "
            "(save_tiktoken writes a .tiktoken file without it)"
        ) from e
    return tiktoken


def to_tiktoken(tok: "Tokenizer", name: str | None = None) -> "tiktoken.Encoding":
    """A ``tiktoken.Encoding`` with `tok`'s ranks (= ids), pattern and special
    tokens, which encodes to the same ids.

    Raises:
        ImportError: tiktoken is not installed (the message says how to install it).
        ValueError: `tok` has no tiktoken form: ids not increasing in merge order,
            a multi-byte token no merge makes, the same bytes under two ids.
    """
    tiktoken = _import_tiktoken()
    ranks = ranks_of(tok)
    return tiktoken.Encoding(
        name=name or f"bytepair_{preset_name(tok.pattern_regex)[:20]}",
        pat_str=tok.pattern_regex,
        mergeable_ranks=ranks,
        special_tokens=dict(tok.special_tokens),
    )


def save_tiktoken(tok: "Tokenizer", path: str | os.PathLike) -> tuple[str, str]:
    """Write `tok`'s ranks as a ``.tiktoken`` file (lines sorted by rank, as
    OpenAI's files are; ``tiktoken.load.load_tiktoken_bpe`` reads it) and the
    sidecar ``<path>.json`` with ``pat_str`` and ``special_tokens``, as one
    change (`atomic.write_file_set`: a crash or a full disk never leaves a new
    rank file beside an old sidecar). tiktoken is not needed.

    Returns:
        (rank file path, sidecar path).

    Raises:
        ValueError: as `to_tiktoken`.
    """
    path = os.fspath(path)
    ranks = ranks_of(tok, purpose=".tiktoken")
    body = b"".join(
        base64.b64encode(t) + b" %d\n" % r for t, r in sorted(ranks.items(), key=lambda kv: kv[1])
    )
    sidecar: dict[str, Any] = {
        "pat_str": tok.pattern_regex,
        "special_tokens": dict(sorted(tok.special_tokens.items(), key=lambda kv: kv[1])),
    }
    side = (json.dumps(sidecar, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    write_file_set({path: body, path + SIDECAR_SUFFIX: side})
    return path, path + SIDECAR_SUFFIX
