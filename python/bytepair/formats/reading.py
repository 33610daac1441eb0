"""What every reader does with an untrusted file: parse JSON, gunzip, decode
UTF-8 and build the Tokenizer, turning each failure into a ValueError that
names the file (the loaders' documented contract), whatever layer failed.

Fuzzing the loaders (fuzz/fuzz_loaders.py, fuzz/README.md) met these failures escaping as
other types: RecursionError from deeply nested JSON, EOFError and zlib.error
from a damaged .gz, UnicodeDecodeError from a merges.txt that is not UTF-8,
UnicodeEncodeError from a pattern or special token holding a lone surrogate
(valid JSON: ``"\\ud800"``), ValueErrors of the Tokenizer that did not
say which file they came from, and two special tokens sharing an id (loaded,
then each decoded as the other).
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

GZIP_MAGIC = b"\x1f\x8b"


def parse_json(data: bytes | str, *, source: str) -> Any:
    """``json.loads(data)``; ValueError naming `source` on any failure
    (syntax, encoding, nesting too deep, an integer too long to convert)."""
    try:
        return json.loads(data)
    except (
        ValueError,
        RecursionError,
    ) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{source}: not valid JSON: {str(e)[:200]}") from None


#: A compressed tokenizer file may inflate to at most this many bytes (o200k's
#: ranks are 3.6 MB): a 2 MB gzip bomb once inflated to 4.2 GB before parsing.
MAX_INFLATED_BYTES = 1 << 30


def gunzip(data: bytes, *, source: str, limit: int = -1) -> bytes:
    """The decompressed content of gzip `data`: its first `limit` bytes when
    limit >= 0, else all of it, which must be at most MAX_INFLATED_BYTES.
    ValueError naming `source` when the data is damaged, truncated, or
    inflates past that bound."""
    whole = limit < 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_INFLATED_BYTES + 1 if whole else limit)
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"{source}: not a valid gzip file: {e}") from None
    if whole and len(out) > MAX_INFLATED_BYTES:
        raise ValueError(
            f"{source}: inflates to more than {MAX_INFLATED_BYTES:,} bytes; "
            "not a tokenizer file (a gzip bomb?)"
        )
    return out


def maybe_gunzip(data: bytes, *, source: str, limit: int = -1) -> bytes:
    """`data`, gunzipped when it starts with the gzip magic bytes."""
    return gunzip(data, source=source, limit=limit) if data[:2] == GZIP_MAGIC else data


def decode_utf8(data: bytes, *, source: str) -> str:
    """`data` as UTF-8 text; ValueError naming `source` and the line of the first invalid byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(
            f"{source}: line {line}: not UTF-8 (byte {data[e.start]:#04x} at offset {e.start})"
        ) from None


def check_unicode(text: str, *, source: str, what: str) -> None:
    """A string read from JSON may hold a lone surrogate (``"\\ud800"``), which
    no UTF-8 text can contain; ValueError naming `source` and `what`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"{source}: {what} {text[:80]!r} holds a lone surrogate {text[e.start]!r}, which is "
            "not valid Unicode"
        ) from None


# The class `build_tokenizer` makes: `bytepair.tokenizer.Tokenizer`, which hands
# itself over here when it is defined (`register_tokenizer_class`). That module
# imports this package (the Tokenizer's load and save methods call the readers
# and writers here), so this package does not import it back: the formats build
# a Tokenizer without an import cycle. `import bytepair` (which any import of a
# bytepair module runs first) imports bytepair.tokenizer, so the class is
# always registered before a file is read.
_tokenizer_class: "type[Tokenizer] | None" = None


def register_tokenizer_class(cls: "type[Tokenizer]") -> None:
    """Make `cls` the class `build_tokenizer` builds (called by bytepair.tokenizer)."""
    global _tokenizer_class
    _tokenizer_class = cls


def build_tokenizer(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Mapping[str, int],
    pattern: str,
    *,
    source: str,
    pipeline: Any = None,
    rank_table: Any = None,
) -> "Tokenizer":
    """`Tokenizer(...)` from what a file held (`pipeline`: a tokenizer.json
    pipeline, `formats.hf_pipeline.HFPipeline`); its errors (a merge whose parts are
    not in the vocabulary, an id out of range, a pattern that does not compile,
    ...) are re-raised as ValueError prefixed with `source`; two special tokens
    with one id are an error too. `rank_table`: a `_core.RankTable` (read by
    the core, consistent), used in place of `vocab` and `merges`."""
    check_unicode(pattern, source=source, what="pattern")
    holder: dict[int, str] = {}
    for token, i in special_tokens.items():
        check_unicode(token, source=source, what="special token")
        # The Tokenizer accepts this, then decodes both tokens as the last one.
        if i in holder:
            raise ValueError(
                f"{source}: special tokens {holder[i]!r} and {token!r} have the same id {i}"
            )
        holder[i] = token
    try:
        # Every caller checked the merges (check_merges) or recovered them from ranks.
        return _tokenizer_class(
            vocab,
            merges,
            special_tokens=dict(special_tokens),
            pattern=pattern,
            pipeline=pipeline,
            _merges_checked=True,
            _rank_table=rank_table,
        )
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None
