"""The shell side of word counts: ``bytepair count`` and ``bytepair counts
inspect | merge | export`` (``bytepair train --from-counts`` lives in cli.py)."""

from __future__ import annotations

import argparse
import sys
import time

from bytepair.cli.args import (
    add_input_options,
    id_count,
    input_path,
    memory_budget,
    output_file,
    positive_int,
    progress_bars,
)
from bytepair.counts.artifact import WordCounts
from bytepair.counts.count import ENGINES, count
from bytepair.inspection.report import format_token, printable
from bytepair.train_plan import TrainingStats


def cmd_count(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    counts = count(
        args.inputs,
        args.output,
        engine=args.engine,
        pattern=args.pattern,
        special_tokens=args.special_token,
        parts=args.parts,
        format=args.format,
        text_field=args.text_field,
        errors=args.errors,
        num_workers=args.workers,
        max_memory=args.max_memory,
        progress=progress_bars(args),
        **engine_options(args),
    )
    t = counts.totals
    seconds = time.perf_counter() - start
    if args.quiet:
        return 0
    print(
        f"wrote {counts.path} ({len(counts.manifest['parts'])} parts, engine {args.engine})\n"
        f"  documents   {t.documents:,}\n"
        f"  input       {t.bytes / 1e6:,.1f} MB ({t.bytes / 1e6 / max(seconds, 1e-9):,.1f} MB/s)\n"
        f"  pre-tokens  {t.pre_tokens:,} ({t.distinct:,} distinct words)\n"
        + (f"  pruned      {pruned_line(counts)}\n" if counts.pruned.words else "")
        + f"  time        {seconds:.2f} s"
    )
    return 0


def pruned_line(counts: WordCounts) -> str:
    """What the counting workers' budget dropped, in one line."""
    p, t = counts.pruned, counts.totals
    if not p.words:
        budget = "" if p.max_memory is None else f" (budget {_size(p.max_memory)} per worker)"
        return f"none: exact counts{budget}"
    share = p.pre_tokens / max(p.pre_tokens + t.pre_tokens, 1)
    return (
        f"{p.words:,} distinct words seen < {p.min_count} times ({p.pre_tokens:,} pre-tokens, "
        f"{share:.2%} of all) to stay within {_size(p.max_memory)} per worker"
    )


def training_pruned_line(s: TrainingStats) -> str:
    """The `bytepair train` summary line of what --max-memory left out ("" when nothing was)."""
    if s.pruned_sampled:
        return (
            f"  sampled        words seen < {s.pruned_min_count} times, each kept standing for "
            f"{s.pruned_min_count}: {s.pruned_words:,} distinct ({s.pruned_pre_tokens:,} "
            "pre-tokens) left out to stay within --max-memory\n"
        )
    if s.pruned_words:
        return (
            f"  pruned         {s.pruned_words:,} distinct words seen < {s.pruned_min_count} "
            f"times ({s.pruned_pre_tokens:,} pre-tokens) to stay within --max-memory\n"
        )
    return ""


def _size(nbytes: int | None) -> str:
    return "no budget" if nbytes is None else f"{nbytes / (1 << 20):,.0f} MiB"


def engine_options(args: argparse.Namespace) -> dict[str, str]:
    """``--ray-address`` for the Ray engine (refused with the others)."""
    if args.ray_address is None:
        return {}
    if args.engine != "ray":
        raise ValueError(f"--ray-address is for --engine ray, not --engine {args.engine}")
    return {"address": args.ray_address}


def format_counts(counts: WordCounts, top: int) -> str:
    """What `bytepair counts inspect` prints."""
    m, t = counts.manifest, counts.totals
    pattern = m["pattern"]["name"] or m["pattern"]["regex"]
    lines = [
        f"{counts.path}: word counts ({m['engine']} engine, bytepair {m['bytepair_version']})",
        f"  pattern         {printable(pattern)}",
        f"  special tokens  {', '.join(map(repr, m['special_tokens'])) or '(none)'}",
        f"  text            {m['text']['format']}, errors={m['text']['errors']}"
        + (f", field {m['text']['text_field']!r}" if m["text"]["format"] != "text" else ""),
        f"  documents       {t.documents:,}",
        f"  input bytes     {t.bytes:,}",
        f"  pre-tokens      {t.pre_tokens:,}",
        f"  distinct words  {t.distinct:,} in {len(m['parts'])} parts",
        f"  pruned          {pruned_line(counts)}",
    ]
    if top:
        lines.append(f"  top {top} words:")
        lines += [f"    {c:>14,}  {format_token(w)}" for w, c in counts.most_common(top)]
    return "\n".join(lines)


def cmd_counts_inspect(args: argparse.Namespace) -> int:
    counts = WordCounts.open(args.counts)
    if args.verify:
        counts.verify()
    print(format_counts(counts, args.top))
    if args.verify:
        print("  checksums       all parts match the manifest")
    return 0


def cmd_counts_merge(args: argparse.Namespace) -> int:
    if len(args.counts) < 2:
        # One folder once exited 0 and wrote nothing at -o.
        raise ValueError(f"merge needs at least two COUNTS folders, got {len(args.counts)}")
    first, *rest = [WordCounts.open(p) for p in args.counts]
    merged = first
    for other in rest:
        merged = merged.merge(other, args.output, parts=args.parts)
    print(f"wrote {merged!r}", file=sys.stderr)
    return 0


def cmd_counts_export(args: argparse.Namespace) -> int:
    if not args.tsv:
        raise ValueError("choose an export format: --tsv FILE")
    with output_file(args.tsv) as out:
        n = WordCounts.open(args.counts).export_tsv(out)
    if args.tsv != "-":
        print(
            f"wrote {args.tsv} ({n:,} lines: word<TAB>count, most frequent first)", file=sys.stderr
        )
    return 0


def register_count(sub: "argparse._SubParsersAction") -> None:
    c = sub.add_parser(
        "count", help="count pre-tokens of files into a word-counts folder (any engine)"
    )
    c.add_argument(
        "inputs",
        nargs="+",
        type=input_path,
        metavar="INPUT",
        help="files (.gz/.bz2/.xz/.zst too), folders, globs or fsspec URLs; - for stdin",
    )
    c.add_argument("-o", "--output", required=True, help="word-counts folder to write")
    c.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local process pool (default), ray or spark",
    )
    c.add_argument("--pattern", default="gpt2", help="gpt2 (default), cl100k, o200k, or a regex")
    c.add_argument("--special-token", action="append", default=[], metavar="T", help="repeatable")
    c.add_argument(
        "--parts",
        type=positive_int,
        default=None,
        help="Parquet parts to write (default: one per worker)",
    )
    c.add_argument(
        "--workers", type=positive_int, default=None, help="worker processes / tasks in flight"
    )
    c.add_argument(
        "--max-memory",
        type=memory_budget,
        default=None,
        metavar="SIZE",
        help="memory budget of each worker's counts and of each reduce task, e.g. 4G (at least "
        "64M); past it a worker drops the rarest words, and the manifest says how many "
        "(default: no bound, exact counts)",
    )
    add_input_options(c)
    c.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to join (auto, ray://host:10001); default: the running one or a new "
        "local one",
    )
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bars, no summary")
    c.set_defaults(run=cmd_count)


def register_counts(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("counts", help="inspect, merge or export word-counts folders")
    s = p.add_subparsers(dest="counts_command", required=True)
    i = s.add_parser("inspect", help="totals, pattern and the most frequent words")
    i.add_argument("counts", metavar="COUNTS")
    i.add_argument(
        "--top", type=id_count, default=10, help="most frequent words to list (default 10)"
    )
    i.add_argument("--verify", action="store_true", help="also check every part's SHA-256")
    i.set_defaults(run=cmd_counts_inspect)
    m = s.add_parser("merge", help="sum word-counts folders counted with the same pattern")
    m.add_argument("counts", nargs="+", metavar="COUNTS")
    m.add_argument("-o", "--output", required=True)
    m.add_argument("--parts", type=positive_int, default=None)
    m.set_defaults(run=cmd_counts_merge)
    e = s.add_parser("export", help="write the counts as a TSV dictionary (word<TAB>count)")
    e.add_argument("counts", metavar="COUNTS")
    e.add_argument("--tsv", required=True, metavar="FILE", help="TSV file to write, - for stdout")
    e.set_defaults(run=cmd_counts_export)
