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

Not here: statistics for one tokenizer (`bytepair.inspect.text_stats`).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import atomic_open, atomic_write
from .inspect import TextStats, text_stats

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

CSV_FIELDS = ("vocab_size", "merges", "tokens", "bytes", "chars", "bytes_per_token", "chars_per_token")


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
            "vocab_size": self.vocab_size, "merges": self.merges, "tokens": s.tokens, "bytes": s.bytes,
            "chars": s.chars, "bytes_per_token": round(s.bytes_per_token, 6),
            "chars_per_token": round(s.chars_per_token, 6),
        }


def prefix_tokenizer(tok: "Tokenizer", num_merges: int) -> "Tokenizer":
    """The tokenizer made of the single bytes and the first `num_merges` merges
    of `tok` (with its ids, special tokens and pattern).

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
    from .tokenizer import Tokenizer

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
        raise ValueError(f"token {missing!r} is not in the vocabulary: not a byte-level BPE tokenizer")
    vocab = {ids[b]: b for b in keep}
    return Tokenizer(vocab, merges, special_tokens=dict(tok.special_tokens), pattern=tok.pattern)


def compression_curve(tok: "Tokenizer", eval_texts: Sequence[str], vocab_sizes: Sequence[int]) -> list[CurvePoint]:
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
                f"vocab size {size} is outside [{256 + n_special}, {256 + n_special + len(tok.merges)}] "
                f"(256 bytes + {n_special} special tokens + up to {len(tok.merges)} merges)"
            )
        points.append(CurvePoint(size, merges, text_stats(prefix_tokenizer(tok, merges), eval_texts)))
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
            ax.plot(xs, cpt, marker="s", linestyle="--", color="#ff7f0e", label="characters per token")
        for x, y in zip(xs, bpt):
            ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
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


def parse_sizes(text: str) -> list[int]:
    """``"512,1024,2k"`` -> ``[512, 1024, 2048]`` (a ``k`` suffix multiplies by 1024).

    >>> parse_sizes("512, 1024,4k")
    [512, 1024, 4096]
    """
    sizes = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        try:
            sizes.append(int(part[:-1]) * 1024 if part.endswith("k") else int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a vocabulary size") from None
    if not sizes:
        raise argparse.ArgumentTypeError("no vocabulary size given")
    return sizes


def cmd_curve(args: argparse.Namespace) -> int:
    """``bytepair curve``: train once to the largest size, evaluate each prefix
    on held-out text, print a table, write the CSV and the PNG."""
    from .train import train

    try:
        import matplotlib  # noqa: F401  (fail before training, not after)
    except ImportError:
        print("bytepair curve: error: the plot needs matplotlib: pip install 'bytepair[plot]'", file=sys.stderr)
        return 1
    for f in args.eval:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"{f}: no such file (--eval)")
    sizes = sorted(set(args.vocab_sizes))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # an early stop is reported below
        tok = train(args.files, sizes[-1], pattern=args.pattern, num_threads=args.threads,
                    progress=not args.quiet, errors=args.errors)
    available = 256 + len(tok.merges)
    if sizes[-1] > available:
        print(f"note: no pair left at vocab size {available}: it replaces the larger sizes", file=sys.stderr)
        sizes = [s for s in sizes if s < available] + [available]
    eval_texts = []
    for f in args.eval:
        with open(f, encoding="utf-8", errors=args.errors, newline="") as fh:
            eval_texts.append(fh.read())
    # Files are separate documents for training; for evaluation a newline between
    # them changes nothing that matters, and a word never spans two of them.
    joined = ["\n".join(eval_texts)]
    points = compression_curve(tok, joined, sizes)
    csv_path = Path(args.output).with_suffix(".csv")
    write_csv(points, csv_path)
    train_name = ", ".join(os.path.basename(f) for f in args.files)
    eval_name = ", ".join(os.path.basename(f) for f in args.eval)
    plot_curve(points, args.output, title=f"trained on {train_name}, evaluated on {eval_name}")
    print(f"{'vocab':>8} {'merges':>8} {'tokens':>12} {'bytes/token':>12} {'chars/token':>12}")
    for p in points:
        s = p.stats
        print(f"{p.vocab_size:>8} {p.merges:>8} {s.tokens:>12,} {s.bytes_per_token:>12.3f} {s.chars_per_token:>12.3f}")
    print(f"wrote {args.output} and {csv_path}", file=sys.stderr)
    return 0


def register_curve(sub: "argparse._SubParsersAction") -> None:
    """Add ``bytepair curve`` to the CLI's subcommands."""
    p = sub.add_parser("curve", help="plot held-out bytes/token against vocabulary size (train once)")
    p.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 training text files")
    p.add_argument("--vocab-sizes", type=parse_sizes, required=True, metavar="N,N,...",
                   help="vocabulary sizes, e.g. 512,1024,2048 (k suffix = x1024)")
    p.add_argument("--eval", action="append", required=True, metavar="HELDOUT",
                   help="held-out UTF-8 text to measure on (repeatable)")
    p.add_argument("-o", "--output", default="curve.png", help="PNG to write; the CSV goes next to it (.csv)")
    p.add_argument("--pattern", default="gpt2", help="gpt2 (default), cl100k, o200k, or a regex")
    p.add_argument("--threads", type=int, default=None, help="counting threads (default: all cores)")
    p.add_argument("--errors", choices=("strict", "replace"), default="strict", help="bytes that are not UTF-8")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=cmd_curve)
