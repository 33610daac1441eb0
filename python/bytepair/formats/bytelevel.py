"""GPT-2's printable form of byte-level tokens.

Byte-level BPE files (GPT-2's ``vocab.json``/``merges.txt``, HuggingFace
``tokenizer.json``) store tokens as printable strings: GPT-2's
``bytes_to_unicode`` table (openai/gpt-2, ``src/encoder.py``) maps each of the
256 bytes to one visible character (printable Latin-1 bytes map to themselves,
the rest to U+0100 and up), so ``b" the"`` is stored as ``"Ġthe"``.

The core has the same table (``bytepair_core::byte_level``, behind
``_core.byte_level_tables``, the fast path of loading a vocabulary). This
module builds it independently from GPT-2's definition and stays the
reference: it words the errors and serves the writers, and
``tests/test_formats.py`` checks that the two tables agree.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import lru_cache


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (256 entries).

    >>> bytes_to_unicode()[ord(" ")], bytes_to_unicode()[ord("a")]
    ('Ġ', 'a')
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    """The inverse of `bytes_to_unicode`: printable character -> byte."""
    return {c: b for b, c in bytes_to_unicode().items()}


def token_to_str(token: bytes) -> str:
    """Bytes -> GPT-2 printable form (``b" hi"`` -> ``"Ġhi"``).

    >>> token_to_str(b" hi\\n")
    'ĠhiĊ'
    """
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def str_to_token(text: str, *, where: str = "") -> bytes:
    """GPT-2 printable form -> bytes (``"Ġhi"`` -> ``b" hi"``).

    Raises:
        ValueError: a character outside the 256-entry table; the message names
            `where` (e.g. the file and key being read) and the character.
    """
    # Two C-level passes (loading o200k's tokenizer.json decodes 600k of these):
    # a search for a character outside the table, then translate + latin-1.
    bad = _not_byte_level().search(text)
    if bad is not None:
        raise ValueError(f"{where}: {text!r} is not a byte-level token (character {bad.group()!r})")
    return text.translate(_to_latin1()).encode("latin-1")


def strs_to_tokens(texts: list[str], where: "Callable[[int], str]") -> list[bytes]:
    """`str_to_token` of every string of `texts`, in two C-level passes over
    them joined (one printable character is one byte, so each token is a
    slice of the decoded whole); the error of the first bad string names
    ``where(its index)``."""
    joined = "".join(texts)
    if _not_byte_level().search(joined) is not None:
        for n, text in enumerate(texts):
            str_to_token(text, where=where(n))
    data = joined.translate(_to_latin1()).encode("latin-1")
    ends = list(itertools.accumulate(map(len, texts)))
    return list(map(data.__getitem__, map(slice, [0, *ends[:-1]], ends)))


@lru_cache(maxsize=1)
def _to_latin1() -> dict[int, str]:
    """str.translate table: printable character -> the character of its byte's code."""
    return {ord(c): chr(b) for c, b in unicode_to_bytes().items()}


@lru_cache(maxsize=1)
def _not_byte_level() -> re.Pattern[str]:
    """Matches a character that is not in GPT-2's table."""
    return re.compile("[^" + "".join(re.escape(c) for c in unicode_to_bytes()) + "]")


def is_byte_level(text: str) -> bool:
    """Whether every character of `text` is one of the 256 printable byte characters."""
    return _not_byte_level().search(text) is None
