r"""Looking inside a tokenizer: merge traces, a summary of what it holds, and
what texts cost in tokens.

* `format_token`, `format_merge`, `print_trace`: merges as people read them,
  one line each, e.g. ``step 1: ('u', 'g') -> 'ug' (count 20)``; what
  ``train(..., trace=N)`` and ``bytepair train --trace N`` print;
* `inspect_tokenizer` / `format_inspection`: vocabulary size, merges, special
  tokens, pattern, a histogram of token lengths in bytes, the longest tokens and
  the tokens that are not valid UTF-8 on their own (``bytepair inspect``);
* `text_stats` / `file_stats`: bytes, characters, whitespace-separated words and
  tokens of a text, and the ratios between them (``bytepair stats``);
* `superword_ids`: the tokens that bridge a space (SuperBPE's superwords, two
  words or more), which both reports count and list.

Not here: the coloured view of a text (`bytepair.inspection.show`), compression against
vocabulary size (`bytepair.inspection.curve`). This module only reads tokenizers; the
counting loops over tokens run in the Rust core (`Tokenizer.encode_blocks`).

>>> import bytepair
>>> tok = bytepair.train_from_counts({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 258)
>>> print_trace(tok, 2)
step 1: ('u', 'g') -> 'ug' (count 20)
step 2: ('u', 'n') -> 'un' (count 16)
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from bytepair.textfile import read_text_blocks

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer


# ---- tokens and merges as text -------------------------------------------------


def printable(text: str) -> str:
    r"""`text` with every character that is not printable (control characters,
    ESC, line and paragraph separators, format characters) written as its
    Python escape, so text read from a file cannot drive the terminal. Other
    characters, backslashes included, are left as they are (a regex stays
    readable).

    >>> printable("a\x1b[31mb\u2028")
    'a\\x1b[31mb\\u2028'
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def format_token(token: bytes | str) -> str:
    r"""A token as a quoted one-line string: printable characters as they are;
    other characters escaped as Python escapes them (``\n``, ``\x00``,
    ``\u200b``); bytes that are not part of valid UTF-8 as ``\xNN``; backslash
    and quote escaped, so the text is unambiguous.

    Args:
        token: the token's bytes (or a str, for character-level merges).

    Returns:
        str, quoted with single quotes.

    >>> print(format_token(b"ug"), format_token(b" \n"),
    ...       format_token(b"\xe2\x80"), format_token("</w>"))
    'ug' ' \n' '\xe2\x80' '</w>'
    """
    is_bytes = not isinstance(token, str)
    text = token.decode("utf-8", "surrogateescape") if is_bytes else token
    out = []
    for c in text:
        if is_bytes and 0xDC80 <= ord(c) <= 0xDCFF:  # a byte that surrogateescape kept aside
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        elif c in "\\'":
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        else:
            out.append(repr(c)[1:-1])
    return "'" + "".join(out) + "'"


def format_merge(step: int, left: bytes | str, right: bytes | str, count: int | None = None) -> str:
    """One merge as a line: ``step 1: ('u', 'g') -> 'ug' (count 20)``.

    Args:
        step: 1-based position of the merge in the table (rank + 1).
        left, right: the two parts (bytes, or str for character-level merges).
        count: the pair count when the merge was chosen; None leaves it out.

    >>> format_merge(3, b"h", b"ug", 15)
    "step 3: ('h', 'ug') -> 'hug' (count 15)"
    """
    pair = f"({format_token(left)}, {format_token(right)})"
    line = f"step {step}: {pair} -> {format_token(left + right)}"
    return line if count is None else f"{line} (count {count})"


def trace_lines(
    merges: Sequence[tuple[bytes, bytes]] | Sequence[tuple[str, str]],
    counts: Sequence[int] | None,
    limit: int,
) -> list[str]:
    """`format_merge` lines for the first `limit` merges.

    Args:
        merges: the merge table in rank order.
        counts: pair count of each merge when learned (``TrainingStats.merge_counts``),
            or None when unknown (a tokenizer loaded from a file).
        limit: how many merges to show (fewer if the table is shorter).
    """
    return [
        format_merge(r + 1, a, b, counts[r] if counts is not None and r < len(counts) else None)
        for r, (a, b) in enumerate(merges[: max(limit, 0)])
    ]


def print_trace(tok: "Tokenizer", limit: int, file: TextIO | None = None) -> None:
    """Print the first `limit` merges of `tok`, one line each, with their pair
    counts when `tok` was trained in this process (``tok.training_stats``).

    Args:
        tok: a Tokenizer.
        limit: number of merges to print (non-negative).
        file: where to print (default: ``sys.stdout`` at call time).
    """
    stats = getattr(tok, "training_stats", None)
    counts = stats.merge_counts if stats is not None else None
    out = sys.stdout if file is None else file
    for line in trace_lines(tok.merges, counts, limit):
        print(line, file=out)
    out.flush()


# ---- superwords ------------------------------------------------------------


def word_count(token: bytes) -> int:
    """Words in a token: maximal runs of bytes other than the space (0x20), as
    SuperBPE counts them (``Ġ`` in its byte-level strings).

    >>> word_count(b" by the way"), word_count(b", and"), word_count(b"  ")
    (3, 2, 0)
    """
    return sum(1 for w in token.split(b" ") if w)


def superword_ids(tok: "Tokenizer") -> list[int]:
    """Ids of the ordinary tokens of two words or more (`word_count`): the
    superwords of a SuperBPE tokenizer (``" by the way"``, ``". The"``), in id
    order, which for a tokenizer we train is the order learned (most frequent
    first). Ordinary BPE has none: its pre-tokens never hold a space after text."""
    special = set(tok.special_tokens.values())
    return sorted(i for i, b in tok.vocab.items() if i not in special and word_count(b) >= 2)


def _superword_summary(tok: "Tokenizer", top: int) -> dict[str, Any]:
    ids = superword_ids(tok)
    return {
        "count": len(ids),
        "by_words": dict(sorted(Counter(word_count(tok.vocab[i]) for i in ids).items())),
        "first": [_token_entry(i, tok.vocab[i]) for i in ids[:top]],
    }


# ---- inspection ------------------------------------------------------------


def _token_entry(token_id: int, token: bytes) -> dict[str, Any]:
    return {"id": token_id, "bytes": len(token), "token": format_token(token), "hex": token.hex()}


def inspect_tokenizer(tok: "Tokenizer", top: int = 10) -> dict[str, Any]:
    """What a tokenizer holds, as a JSON-ready dict.

    Special tokens are counted apart: the length histogram, longest tokens and
    UTF-8 check cover the other vocabulary entries (the byte-level tokens).

    Args:
        tok: a Tokenizer.
        top: how many longest tokens and first merges to list.

    Returns:
        dict with keys ``vocab_size``, ``n_vocab`` (largest id + 1), ``merges``
        (count), ``special_tokens`` (str -> id), ``pattern`` (as given: preset
        name or regex), ``pattern_regex`` (resolved), ``length_histogram``
        ({length in bytes: number of tokens}), ``mean_token_bytes``,
        ``longest`` and ``first_merges`` (lists of dicts with ``token`` as
        `format_token` shows it and ``hex``), ``not_utf8`` (``count``,
        ``single_bytes``: how many of them are one byte, ``ids``: all of them),
        ``superwords`` (``count``, ``by_words``: {words: tokens}, ``first``:
        the first `top` in id order, see `superword_ids`).

    >>> import bytepair
    >>> info = inspect_tokenizer(bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, []))
    >>> info["length_histogram"], info["not_utf8"]["count"]
    ({1: 256}, 128)
    """
    special_ids = set(tok.special_tokens.values())
    tokens = sorted((i, b) for i, b in tok.vocab.items() if i not in special_ids)
    histogram = Counter(len(b) for _, b in tokens)
    not_utf8 = []
    for i, b in tokens:
        try:
            b.decode("utf-8")
        except UnicodeDecodeError:
            not_utf8.append(i)
    longest = sorted(tokens, key=lambda t: (-len(t[1]), t[0]))[:top]
    first = [
        {
            "rank": r,
            "left": format_token(a),
            "right": format_token(b),
            "token": format_token(a + b),
            "hex": (a + b).hex(),
        }
        for r, (a, b) in enumerate(tok.merges[:top])
    ]
    return {
        "vocab_size": tok.vocab_size,
        "n_vocab": tok.n_vocab,
        "merges": len(tok.merges),
        "special_tokens": dict(tok.special_tokens),
        "pattern": tok.pattern,
        "pattern_regex": tok.pattern_regex,
        "length_histogram": dict(sorted(histogram.items())),
        "mean_token_bytes": sum(len(b) for _, b in tokens) / len(tokens) if tokens else 0.0,
        "longest": [_token_entry(i, b) for i, b in longest],
        "first_merges": first,
        "not_utf8": {
            "count": len(not_utf8),
            "single_bytes": sum(1 for i in not_utf8 if len(tok.vocab[i]) == 1),
            "ids": not_utf8,
        },
        "superwords": _superword_summary(tok, top),
    }


def format_inspection(info: dict[str, Any], name: str = "tokenizer", examples: int = 8) -> str:
    """`inspect_tokenizer`'s dict as a report for people (what ``bytepair
    inspect`` prints): a summary, a bar chart of token lengths, the longest
    tokens, the first merges and tokens that are not valid UTF-8 alone.

    Args:
        info: the dict `inspect_tokenizer` returns.
        name: what to call the tokenizer in the heading (e.g. its path).
        examples: how many ids of tokens that are not UTF-8 to show.
    """
    lines = [name]
    specials = info["special_tokens"]
    special_text = ", ".join(f"{format_token(t)} = {i}" for t, i in specials.items()) or "none"
    pattern = info["pattern"]
    pattern_text = (
        pattern if pattern == info["pattern_regex"] else f"{pattern} = {info['pattern_regex']}"
    )
    pattern_text = printable(pattern_text)
    lines += [
        f"  vocab size      {info['vocab_size']:,} (largest id + 1 = {info['n_vocab']:,})",
        f"  merges          {info['merges']:,}",
        f"  special tokens  {len(specials)}: {special_text}",
        f"  pattern         {pattern_text}",
        f"  mean length     {info['mean_token_bytes']:.2f} bytes per token (vocabulary entries, "
        "unweighted)",
        "",
        "token lengths in bytes (number of tokens)",
    ]
    hist = info["length_histogram"]
    peak = max(hist.values(), default=1)
    for length, n in hist.items():
        bar = "#" * max(1, round(40 * n / peak))
        lines.append(f"  {length:>4}  {n:>7,}  {bar}")
    lines += ["", "longest tokens"]
    for t in info["longest"]:
        lines.append(f"  id {t['id']:>7}  {t['bytes']:>3} bytes  {t['token']}")
    if info["first_merges"]:
        lines += ["", "first merges"]
        lines += [
            f"  rank {m['rank']:>4}: ({m['left']}, {m['right']}) -> {m['token']}"
            for m in info["first_merges"]
        ]
    bad = info["not_utf8"]
    lines += [
        "",
        f"not valid UTF-8 on their own: {bad['count']:,} tokens "
        f"({bad['single_bytes']:,} single bytes, {bad['count'] - bad['single_bytes']:,} longer)",
    ]
    sw = info.get("superwords")
    if sw and sw["count"]:
        share = sw["count"] / max(info["vocab_size"], 1)
        words = ", ".join(f"{n:,} of {w} words" for w, n in sw["by_words"].items())
        lines += [
            "",
            f"superword tokens (two words or more): {sw['count']:,} ({share:.1%}): {words}",
        ]
        lines += [f"  id {t['id']:>7}  {t['token']}" for t in sw["first"]]
    return "\n".join(lines)


# ---- text statistics -----------------------------------------------------------


@dataclass
class TextStats:
    """Sizes of one text (or several, added up) and its length in tokens.

    ``bytes`` counts UTF-8 bytes, ``chars`` Unicode code points, ``words``
    maximal runs of non-whitespace (``str.split()``), ``tokens`` token ids.
    """

    bytes: int = 0
    chars: int = 0
    words: int = 0
    tokens: int = 0
    # Tokens that are superwords (`superword_ids`), and their ids -> occurrences.
    superwords: int = 0
    superword_counts: dict[int, int] = field(default_factory=dict, repr=False)

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else float("nan")

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else float("nan")

    @property
    def tokens_per_word(self) -> float:
        return self.tokens / self.words if self.words else float("nan")

    def __add__(self, other: "TextStats") -> "TextStats":
        counts = Counter(self.superword_counts) + Counter(other.superword_counts)
        return TextStats(
            self.bytes + other.bytes,
            self.chars + other.chars,
            self.words + other.words,
            self.tokens + other.tokens,
            self.superwords + other.superwords,
            dict(counts),
        )

    def top_superwords(self, n: int) -> list[tuple[int, int]]:
        """The `n` superword ids seen most often, with their occurrences (ties: lower id first)."""
        return sorted(self.superword_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def as_dict(self) -> dict[str, float | None]:
        """Counts and ratios, JSON-ready (a ratio is None when its denominator is 0)."""
        ratios = {
            "bytes_per_token": self.bytes_per_token,
            "chars_per_token": self.chars_per_token,
            "tokens_per_word": self.tokens_per_word,
        }
        plain = {k: v for k, v in asdict(self).items() if k != "superword_counts"}
        return plain | {k: None if v != v else v for k, v in ratios.items()}


def text_stats(tok: "Tokenizer", texts: Iterable[str]) -> TextStats:
    """Bytes, characters, words and tokens of the concatenation of `texts`.

    Special-token strings count as plain text (``disallowed_special=()``). The
    texts stream through `Tokenizer.encode_blocks`, so memory stays bounded.

    Args:
        tok: the tokenizer.
        texts: strings, taken as one text (a word may span two of them).

    Returns:
        TextStats (superword tokens counted too, see `superword_ids`).

    >>> import bytepair
    >>> s = text_stats(bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, []), ["hé ", "llo"])
    >>> (s.bytes, s.chars, s.words, s.tokens)
    (7, 6, 2, 7)
    """
    stats = TextStats()

    def counted() -> Iterator[str]:
        ends_in_word = False
        for text in texts:
            if not text:
                continue
            stats.bytes += len(text.encode("utf-8", "surrogatepass"))
            stats.chars += len(text)
            stats.words += len(text.split())
            if ends_in_word and not text[0].isspace():
                stats.words -= 1  # one word cut in two by the block boundary
            ends_in_word = not text[-1].isspace()
            yield text

    import numpy as np

    superwords = np.zeros(tok.n_vocab, dtype=bool)
    superwords[superword_ids(tok)] = True
    seen = np.zeros(tok.n_vocab, dtype=np.int64)
    for ids in tok.encode_blocks(counted(), disallowed_special=()):
        stats.tokens += len(ids)
        if superwords.any():
            hits = ids[superwords[ids]]
            seen += np.bincount(hits, minlength=tok.n_vocab)
    nonzero = np.flatnonzero(seen)
    stats.superword_counts = dict(zip(nonzero.tolist(), seen[nonzero].tolist()))
    stats.superwords = int(seen.sum())
    return stats


def file_stats(tok: "Tokenizer", path: str | os.PathLike, errors: str = "strict") -> TextStats:
    """`text_stats` of a UTF-8 file, read in blocks.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not UTF-8 and ``errors="strict"`` (names the
            file and byte offset).
    """
    return text_stats(tok, read_text_blocks(path, errors))


# ---- the commands ----------------------------------------------------------------


def _ratio_rows(results: list[TextStats]) -> list[tuple[str, list[str]]]:
    return [
        ("tokens", [f"{r.tokens:,}" for r in results]),
        ("bytes/token", [f"{r.bytes_per_token:.3f}" for r in results]),
        ("chars/token", [f"{r.chars_per_token:.3f}" for r in results]),
        ("tokens/word", [f"{r.tokens_per_word:.3f}" for r in results]),
        ("superwords", [f"{r.superwords / r.tokens:.1%}" if r.tokens else "-" for r in results]),
    ]


def format_stats_table(
    names: Sequence[str], rows: Sequence[tuple[str, Sequence[TextStats]]]
) -> str:
    """The ``bytepair stats`` table: per text, one column per tokenizer.

    Args:
        names: the tokenizers' names (column headings).
        rows: ``(label, [TextStats per tokenizer])`` for each file (and the total).
    """
    width = max(12, *(len(n) for n in names)) + 2
    lines = []
    for label, results in rows:
        s = results[0]
        lines.append(f"{label}: {s.bytes:,} bytes, {s.chars:,} chars, {s.words:,} words")
        lines.append(" " * 14 + "".join(f"{n:>{width}}" for n in names))
        for metric, cells in _ratio_rows(list(results)):
            lines.append(f"  {metric:<12}" + "".join(f"{c:>{width}}" for c in cells))
        if len(results) > 1 and s.tokens:
            ratio = results[1].tokens / s.tokens
            lines.append(f"  {names[1]} needs {ratio:.3f}x the tokens of {names[0]}")
        lines.append("")
    return "\n".join(lines).rstrip()
