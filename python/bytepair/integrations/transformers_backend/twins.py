"""Split regexes that pre-tokenize like one of bytepair's presets except at
the end of a text, so that a tokenizer with one of them can encode most texts
on the preset's scanner instead of fancy-regex (several times faster).

Llama 3's regex (its tokenizer.json's Split) is cl100k's but for two branches:
cl100k has ``\\s++$`` (a whitespace run that ends the text, whole) before
``\\s*[\\r\\n]`` and ends with ``\\s``; Llama 3 has ``\\s*[\\r\\n]+`` and ends with
``\\s+``. The other branches match the same text (``'(?i:[sdmt]|ll|ve|re)`` and
``(?i:'s|'t|'re|'ve|'m|'ll|'d)`` take the same contractions; their possessive
and greedy quantifiers cannot backtrack into a different match). In a
whitespace run followed by a non-space character both take the run up to its
last line break (``\\s*[\\r\\n]`` and ``\\s*[\\r\\n]+`` backtrack to the same
place), then all but the last character (``\\s+(?!\\S)``), then that one
(``\\s`` and ``\\s+`` both take one, as the next character is not a space). A
run that ends the text is one pre-token for cl100k; Llama 3 also takes it
whole, unless it holds a line break followed by other whitespace (``"\\n  "``),
which it splits after that line break. The end of a text is also the end of
each piece before an added token. So a text with no line break followed by
other whitespace at such an end gets the same pre-tokens from both; `Twin.fits`
tells (conservatively: Python's ``\\s`` holds every character Rust's does).
"""

from __future__ import annotations

import re

from bytepair.formats.hf import unwrap_gaps

LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# regex -> the preset that splits like it except at text ends
TWINS = {LLAMA3: "cl100k"}


class Twin:
    """A bytepair Tokenizer like `bp` on the preset its regex twins, and the
    check of which texts it encodes as `bp` does."""

    def __init__(self, bp, preset: str):
        from bytepair.tokenizer import Tokenizer

        self.tok = Tokenizer._trusted(bp.vocab, bp.merges, bp.special_tokens, preset)
        self.core = self.tok._core
        self._guards: dict[tuple, re.Pattern] = {}

    def fits(self, text: str, allowed: list[str]) -> bool:
        """Whether `text` pre-tokenizes alike with both regexes, when the added
        tokens in `allowed` cut it into pieces."""
        guard = self._guards.get(tuple(allowed))
        if guard is None:
            ends = "|".join(map(re.escape, sorted(allowed, key=len, reverse=True)))
            ahead = rf"\Z|(?={ends})" if ends else r"\Z"
            guard = self._guards[tuple(allowed)] = re.compile(rf"[\r\n][^\S\r\n]+(?:{ahead})")
        return guard.search(text) is None


def twin_of(bp) -> Twin | None:
    """The `Twin` of a bytepair Tokenizer whose pattern (no pipeline) is in `TWINS`."""
    if bp.pipeline is not None:
        return None
    preset = TWINS.get(unwrap_gaps(bp.pattern) or bp.pattern)
    return None if preset is None else Twin(bp, preset)
