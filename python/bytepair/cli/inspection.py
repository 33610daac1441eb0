"""``bytepair inspect``, ``stats``, ``show`` and ``curve``: the command lines
of the inspection tools (`bytepair.inspection`), which hold the work."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from dataclasses import asdict
from pathlib import Path

from bytepair.cli.args import MAX_IDS, id_count, input_path, positive_int, progress_bars
from bytepair.inspection.curve import compression_curve, plot_curve, write_csv
from bytepair.inspection.report import (
    TextStats,
    file_stats,
    format_inspection,
    format_stats_table,
    format_token,
    inspect_tokenizer,
)
from bytepair.inspection.show import render_html, render_terminal, summary, token_views


def cmd_inspect(args: argparse.Namespace) -> int:
    """``bytepair inspect``: print `inspect_tokenizer` as text or JSON."""
    from bytepair.tokenizer import Tokenizer

    info = inspect_tokenizer(Tokenizer.load(args.tokenizer), top=args.top)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
    else:
        print(format_inspection(info, name=str(args.tokenizer)))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    """``bytepair stats``: bytes/chars per token and tokens per word of files,
    for one tokenizer or two side by side."""
    from bytepair.tokenizer import Tokenizer

    paths = [args.tokenizer] + ([args.compare] if args.compare else [])
    toks = [Tokenizer.load(p) for p in paths]
    names = [str(p) for p in paths]
    rows: list[tuple[str, list[TextStats]]] = []
    for f in args.files:
        if os.path.isdir(f):
            raise IsADirectoryError(f"{f}: is a directory, expected a text file")
        rows.append((str(f), [file_stats(t, f, args.errors) for t in toks]))
    if len(rows) > 1:
        total = [TextStats() for _ in toks]
        for _, results in rows:
            total = [a + b for a, b in zip(total, results)]
        rows.append(("total", total))
    if args.json:
        out = [
            {"file": label}
            | {k: v for k, v in asdict(results[0]).items() if k not in _PER_TOKENIZER}
            | {
                "tokenizers": [
                    {"tokenizer": n}
                    | r.as_dict()
                    | {"top_superwords": _top_superwords(t, r, args.top)}
                    for n, t, r in zip(names, toks, results)
                ]
            }
            for label, results in rows
        ]
        print(json.dumps(out, indent=2))
    else:
        print(format_stats_table(names, rows))
        _, totals = rows[-1]
        for name, t, r in zip(names, toks, totals):
            top = _top_superwords(t, r, args.top)
            if top:
                listed = ", ".join(f"{e['token']} {e['count']:,}" for e in top)
                print(f"\nmost frequent superword tokens of {name}: {listed}")
    return 0


# TextStats fields that belong to one tokenizer, not to the file.
_PER_TOKENIZER = ("tokens", "superwords", "superword_counts")


def _top_superwords(tok, stats: TextStats, n: int) -> list[dict]:
    """The `n` superword tokens `stats` saw most often: id, token, occurrences."""
    return [
        {"id": i, "token": format_token(tok.vocab[i]), "count": c}
        for i, c in stats.top_superwords(n)
    ]


def register_inspect(sub: "argparse._SubParsersAction") -> None:
    """Add ``bytepair inspect`` to the CLI's subcommands."""
    p = sub.add_parser(
        "inspect",
        help="summarise a tokenizer: sizes, pattern, token lengths, odd tokens, superwords",
    )
    p.add_argument(
        "tokenizer",
        type=input_path,
        metavar="TOKENIZER",
        help="a file Tokenizer.load reads (tokenizer.json), - for stdin",
    )
    p.add_argument(
        "--json", action="store_true", help="print JSON (all ids of tokens that are not UTF-8)"
    )
    p.add_argument(
        "--top",
        type=id_count,
        default=10,
        metavar="N",
        help="longest tokens, first merges and first superword tokens to list",
    )
    p.set_defaults(run=cmd_inspect)


def register_stats(sub: "argparse._SubParsersAction") -> None:
    """Add ``bytepair stats`` to the CLI's subcommands."""
    p = sub.add_parser("stats", help="bytes/token, chars/token and tokens/word of files")
    p.add_argument(
        "files", nargs="+", type=input_path, metavar="FILE", help="UTF-8 text files, - for stdin"
    )
    p.add_argument("-t", "--tokenizer", required=True, type=input_path)
    p.add_argument("--compare", metavar="OTHER", help="a second tokenizer, shown side by side")
    p.add_argument(
        "--errors", choices=("strict", "replace"), default="strict", help="bytes that are not UTF-8"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--top",
        type=id_count,
        default=10,
        metavar="N",
        help="superword tokens (two words or more) to list, most frequent first",
    )
    p.set_defaults(run=cmd_stats)


def cmd_show(args: argparse.Namespace) -> int:
    """``bytepair show``: draw the tokens of TEXT (or of the file -f) in the
    terminal, or write them as an HTML page with --html."""
    from bytepair.atomic import atomic_write
    from bytepair.tokenizer import Tokenizer

    if (args.text is None) == (args.file is None):
        raise ValueError("give either TEXT or -f FILE (one of them)")
    if args.text == "-":  # as `cat -`: the text is standard input
        args.file, args.text = input_path("-"), None
    if args.file is not None:
        with open(args.file, encoding="utf-8", errors=args.errors, newline="") as f:
            text = f.read()
    else:
        text = args.text
    tok = Tokenizer.load(args.tokenizer)
    views = token_views(tok, text, allowed_special="all" if args.special == "allow" else set())
    if args.html:
        name = args.file if args.file is not None else "text"
        page = render_html(views, title=f"bytepair · {name} · {args.tokenizer}", show_ids=args.ids)
        atomic_write(args.html, page.encode("utf-8"))
        print(f"wrote {args.html}: {summary(views)}", file=sys.stderr)
        return 0
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    # NO_COLOR leaves rich's colour system set but strips the colours: use markers.
    console.print(render_terminal(views, None if console.no_color else console.color_system))
    if args.ids:
        console.print("ids: " + ", ".join(str(v.id) for v in views))
    console.print(summary(views), style="dim")
    return 0


def register_show(sub: "argparse._SubParsersAction") -> None:
    """Add ``bytepair show`` to the CLI's subcommands."""
    p = sub.add_parser(
        "show", help="show how a text splits into tokens (terminal colours or --html page)"
    )
    p.add_argument(
        "text", nargs="?", metavar="TEXT", help="the text to show, - for stdin (or -f FILE)"
    )
    p.add_argument("-t", "--tokenizer", required=True, type=input_path)
    p.add_argument(
        "-f", "--file", type=input_path, help="read the text from a UTF-8 file (- for stdin)"
    )
    p.add_argument("--ids", action="store_true", help="also print the token ids")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML page instead")
    p.add_argument(
        "--special",
        choices=("allow", "text"),
        default="allow",
        help="special-token strings in the text: show as special tokens (default) or as text",
    )
    p.add_argument(
        "--errors", choices=("strict", "replace"), default="strict", help="bytes that are not UTF-8"
    )
    p.set_defaults(run=cmd_show)


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
        if not 0 < sizes[-1] <= MAX_IDS:
            raise argparse.ArgumentTypeError(
                f"{part!r} is not a vocabulary size (1 to {MAX_IDS:,}: token ids are 32-bit)"
            )
    if not sizes:
        raise argparse.ArgumentTypeError("no vocabulary size given")
    return sizes


def cmd_curve(args: argparse.Namespace) -> int:
    """``bytepair curve``: train once to the largest size, evaluate each prefix
    on held-out text, print a table, write the CSV and the PNG."""
    from bytepair.train import train

    try:
        import matplotlib  # noqa: F401  (fail before training, not after)
    except ImportError:
        print(
            "bytepair curve: error: the plot needs matplotlib: pip install 'bytepair[plot]'",
            file=sys.stderr,
        )
        return 1
    for f in args.eval:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"{f}: no such file (--eval)")
    sizes = sorted(set(args.vocab_sizes))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # an early stop is reported below
        tok = train(
            args.files,
            sizes[-1],
            pattern=args.pattern,
            num_threads=args.threads,
            progress=progress_bars(args),
            errors=args.errors,
        )
    available = 256 + len(tok.merges)
    if sizes[-1] > available:
        print(
            f"note: no pair left at vocab size {available}: it replaces the larger sizes",
            file=sys.stderr,
        )
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
        print(
            f"{p.vocab_size:>8} {p.merges:>8} {s.tokens:>12,} {s.bytes_per_token:>12.3f} "
            f"{s.chars_per_token:>12.3f}"
        )
    print(f"wrote {args.output} and {csv_path}", file=sys.stderr)
    return 0


def register_curve(sub: "argparse._SubParsersAction") -> None:
    """Add ``bytepair curve`` to the CLI's subcommands."""
    p = sub.add_parser(
        "curve", help="plot held-out bytes/token against vocabulary size (train once)"
    )
    p.add_argument(
        "files",
        nargs="+",
        type=input_path,
        metavar="FILE",
        help="UTF-8 training text files, - for stdin",
    )
    p.add_argument(
        "--vocab-sizes",
        type=parse_sizes,
        required=True,
        metavar="N,N,...",
        help="vocabulary sizes, e.g. 512,1024,2048 (k suffix = x1024)",
    )
    p.add_argument(
        "--eval",
        action="append",
        required=True,
        metavar="HELDOUT",
        help="held-out UTF-8 text to measure on (repeatable)",
    )
    p.add_argument(
        "-o", "--output", default="curve.png", help="PNG to write; the CSV goes next to it (.csv)"
    )
    p.add_argument("--pattern", default="gpt2", help="gpt2 (default), cl100k, o200k, or a regex")
    p.add_argument(
        "--threads", type=positive_int, default=None, help="counting threads (default: all cores)"
    )
    p.add_argument(
        "--errors", choices=("strict", "replace"), default="strict", help="bytes that are not UTF-8"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=cmd_curve)
