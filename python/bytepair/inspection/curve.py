"""Compression against vocabulary size: train once, evaluate every prefix.

A prefix of a merge table is itself a valid tokenizer: the 256 byte tokens plus
the first k merges (plus the special tokens) encode any text, and the first k
merges are exactly what training would have learned with a vocabulary of
256 + k. So one training run to the largest size gives the whole curve:

* `prefix_tokenizer`: the tokenizer made of the first k merges of another;
* `compression_curve`: bytes and characters per token on held-out text for
  each vocabulary size;
* `write_csv` / `plot_curve`: the numbers as CSV, and bytes per token against
  vocabulary size as a PNG (matplotlib, Agg backend: no display needed);
* `cmd_curve`: ``bytepair curve``.

matplotlib is an optional dependency (``pip install 'bytepair[plot]'``): it is
large and only this command draws, so the core package does not pull it in.

Not here: statistics for one tokenizer (`bytepair.inspection.report.text_stats`).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bytepair.atomic import atomic_open, atomic_write
from bytepair.inspection.report import TextStats, text_stats

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

CSV_FIELDS = (
    "vocab_size",
    "merges",
    "tokens",
    "bytes",
    "chars",
    "bytes_per_token",
    "chars_per_token",
)


@dataclass
class CurvePoint:
    """Held-out compression of the tokenizer with the first ``merges`` merges
    (``vocab_size`` ids in all, special tokens included)."""

    vocab_size: int
    merges: int
    stats: TextStats

    def row(self) -> dict[str, float]:
        """The CSV row (see `CSV_FIELDS`)."""
        s = self.stats
        return {
            "vocab_size": self.vocab_size,
            "merges": self.merges,
            "tokens": s.tokens,
            "bytes": s.bytes,
            "chars": s.chars,
            "bytes_per_token": round(s.bytes_per_token, 6),
            "chars_per_token": round(s.chars_per_token, 6),
        }


def prefix_tokenizer(tok: "Tokenizer", num_merges: int) -> "Tokenizer":
    """The tokenizer made of the single bytes and the first `num_merges` merges
    of `tok` (with its ids, special tokens, pattern and tokenizer.json pipeline).

    Args:
        tok: a byte-level BPE tokenizer (all 256 single bytes in its vocabulary).
        num_merges: 0 <= num_merges <= len(tok.merges).

    Raises:
        ValueError: `num_merges` out of range, or a single byte missing from the vocab.

    >>> import bytepair
    >>> tok = bytepair.train_from_counts({"hug": 10, "pug": 5}, 258)
    >>> prefix_tokenizer(tok, 1).encode("hug")
    [104, 256]
    """
    from bytepair.tokenizer import Tokenizer

    if not 0 <= num_merges <= len(tok.merges):
        raise ValueError(f"num_merges={num_merges} is outside [0, {len(tok.merges)}]")
    special_ids = set(tok.special_tokens.values())
    ids: dict[bytes, int] = {}
    for i, b in sorted(tok.vocab.items()):
        if i not in special_ids:
            ids.setdefault(b, i)
    merges = tok.merges[:num_merges]
    keep = [bytes([b]) for b in range(256)] + [a + b for a, b in merges]
    missing = next((b for b in keep if b not in ids), None)
    if missing is not None:
        raise ValueError(
            f"token {missing!r} is not in the vocabulary: not a byte-level BPE tokenizer"
        )
    vocab = {ids[b]: b for b in keep}
    return Tokenizer(
        vocab,
        merges,
        special_tokens=dict(tok.special_tokens),
        pattern=tok.pattern,
        pipeline=tok.pipeline,
    )


def compression_curve(
    tok: "Tokenizer", eval_texts: Sequence[str], vocab_sizes: Sequence[int]
) -> list[CurvePoint]:
    """Bytes and characters per token on `eval_texts` for each vocabulary size,
    using the prefixes of `tok`'s merge table.

    Args:
        tok: the tokenizer trained to the largest size.
        eval_texts: held-out text (strings taken as one text; special-token
            strings count as plain text).
        vocab_sizes: total ids wanted (256 + merges + special tokens), each in
            [256 + specials, tok's size].

    Returns:
        list of CurvePoint, sorted by vocabulary size.

    Raises:
        ValueError: a size outside that range.
    """
    n_special = len(tok.special_tokens)
    points = []
    for size in sorted(set(vocab_sizes)):
        merges = size - 256 - n_special
        if not 0 <= merges <= len(tok.merges):
            raise ValueError(
                f"vocab size {size} is outside [{256 + n_special}, "
                f"{256 + n_special + len(tok.merges)}] (256 bytes + {n_special} special tokens + "
                f"up to {len(tok.merges)} merges)"
            )
        points.append(
            CurvePoint(size, merges, text_stats(prefix_tokenizer(tok, merges), eval_texts))
        )
    return points


def write_csv(points: Sequence[CurvePoint], path: str | os.PathLike) -> None:
    """Write the points as CSV with the header `CSV_FIELDS`."""
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=CSV_FIELDS)
    w.writeheader()
    for p in points:
        w.writerow(p.row())
    atomic_write(path, text.getvalue().encode("utf-8"))


def plot_curve(
    points: Sequence[CurvePoint],
    path: str | os.PathLike,
    *,
    title: str = "Compression vs vocabulary size",
    size: tuple[float, float] = (8.0, 5.0),
    dpi: int = 100,
) -> None:
    """Plot bytes per token (and characters per token, when they differ)
    against vocabulary size (log-2 axis) and save a PNG of
    ``size[0] * dpi`` x ``size[1] * dpi`` pixels.

    Raises:
        ImportError: matplotlib is not installed (``pip install 'bytepair[plot]'``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [p.vocab_size for p in points]
    bpt = [p.stats.bytes_per_token for p in points]
    cpt = [p.stats.chars_per_token for p in points]
    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    try:
        ax.plot(xs, bpt, marker="o", color="#1f77b4", label="bytes per token")
        if any(abs(b - c) > 1e-3 * b for b, c in zip(bpt, cpt)):
            ax.plot(
                xs, cpt, marker="s", linestyle="--", color="#ff7f0e", label="characters per token"
            )
        for x, y in zip(xs, bpt):
            ax.annotate(
                f"{y:.2f}",
                (x, y),
                textcoords="offset points",
                xytext=(0, 8),
                ha="center",
                fontsize=8,
            )
        if len(xs) > 1:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs], rotation=45 if len(xs) > 6 else 0)
        ax.minorticks_off()
        ax.set_xlabel("vocabulary size (256 bytes + merges + special tokens)")
        ax.set_ylabel("held-out bytes per token (higher = shorter sequences)")
        ax.set_title(title)
        ax.margins(x=0.05, y=0.12)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right")
        fig.tight_layout()
        with atomic_open(path) as f:
            fig.savefig(f, format="png")
    finally:
        plt.close(fig)
