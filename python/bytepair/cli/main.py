"""The `bytepair` command line: train, encode, decode.

    bytepair train [FILE...] --vocab-size N [--special-token T]... [-o tokenizer.json]
    bytepair encode -t tokenizer.json FILE -o ids.npy
    bytepair encode -t tokenizer.json INPUT... -o OUT_DIR   (token shards: cli/dataset.py)
    bytepair decode -t tokenizer.json ids.npy [-o out.txt]

`-` is standard input as a FILE and standard output as `-o`; results go to
stdout or the output file, messages to stderr (none with `-q`).
    bytepair count | counts ...                   (cli/counts.py)
    bytepair inspect | show | stats | curve ...   (cli/inspection.py)
    bytepair convert IN OUT [--to tiktoken|hf|gpt2]; bytepair info FILE   (cli/formats.py)

With no FILE, `train` uses the running Python's standard library sources (found
with `sysconfig`), a real corpus present on every machine.
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import signal
import sys
import sysconfig
import time

from bytepair import __version__
from bytepair.cli.args import (
    MAX_IDS,
    add_input_options,
    chosen_parser,
    id_count,
    in_cli_words,
    input_path,
    int_between,
    load_ids,
    memory_budget,
    output_file,
    pair_count,
    positive_int,
    probability,
    progress_bars,
    save_tokenizer_json,
    seed_value,
)
from bytepair.cli.encode_file import cmd_encode
from bytepair.cli.superbpe_flags import add_superbpe_flags, superbpe_summary
from bytepair.tokenizer import Tokenizer
from bytepair.train import train, train_from_counts

_DECODE_BLOCK_IDS = 1 << 20


def default_corpus() -> list[str]:
    """The .py files of this Python's standard library, sorted."""
    stdlib = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True))
    return [f for f in files if "site-packages" not in f and os.path.isfile(f)]


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1 << 20) if sys.platform == "darwin" else rss / 1024


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GiB"


def _train_from_counts(args: argparse.Namespace):
    if args.files:
        raise ValueError("give either FILEs or --from-counts, not both")
    if args.weight:
        raise ValueError(
            "--weight applies to counting; --from-counts trains on counts made already"
        )
    from bytepair.counts.artifact import WordCounts

    counts = WordCounts.open(args.from_counts)
    specials = _special_tokens(args)
    pieces = WordCounts.open(args.superbpe_counts) if args.superbpe_counts else None
    return train_from_counts(
        counts,
        args.vocab_size,
        special_tokens=specials or None,
        pattern=args.pattern,
        num_threads=args.threads,
        progress=progress_bars(args),
        superbpe_counts=pieces,
        max_memory=args.max_memory,
        **_training_options(args),
    ), f"{counts.path} (word counts)"


def _special_tokens(args: argparse.Namespace) -> list[str] | dict[str, int | None]:
    """--special-token T (next free id) and --special-token-id T=ID (fixed), in order given."""
    if not args.special_token_id:
        return args.special_token
    fixed = dict(args.special_token_id)
    return {t: None for t in args.special_token if t not in fixed} | fixed


def _training_options(args: argparse.Namespace) -> dict:
    """The keyword arguments every train* function takes from the flags."""
    return dict(
        trace=args.trace,
        min_frequency=args.min_frequency,
        max_token_length=args.max_token_length,
        reserve_special_tokens=args.reserve_special_tokens,
        base=_load_base(args.base),
        superbpe_transition=args.superbpe_transition,
        superbpe_pattern=args.superbpe_pattern,
        superbpe_max_words=args.superbpe_max_words or None,
    )


def _load_base(name: str | None) -> Tokenizer | None:
    """--base: a tokenizer file or folder (Tokenizer.load), else an encoding name
    (bytepair.get_encoding)."""
    if name is None:
        return None
    if os.path.exists(name):
        return Tokenizer.load(name)
    from bytepair.formats.by_name import get_encoding, list_encodings

    try:
        return get_encoding(name)
    except (KeyError, ValueError) as e:
        raise ValueError(
            f"--base {name}: neither a tokenizer file nor a known encoding "
            f"({', '.join(list_encodings())}): {e}"
        ) from None


def _name_value(kind):
    """argparse type of NAME=VALUE flags (--weight GLOB=W, --special-token-id T=ID):
    split at the last '=', VALUE converted by `kind`."""

    def parse(text: str):
        name, sep, value = text.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            return name, kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not NAME={kind.__name__.upper()}"
            ) from None

    return parse


def cmd_train(args: argparse.Namespace) -> int:
    if args.from_counts:
        start = time.perf_counter()
        tok, source = _train_from_counts(args)
        return _report_training(args, tok, source, start)
    files, errors = args.files, args.errors
    if not files:
        files, errors = default_corpus(), "replace"
        print(
            f"no FILE given: training on this Python's standard library sources "
            f"({len(files)} .py files under {sysconfig.get_paths()['stdlib']}; "
            "the few test files that are not UTF-8 are read with errors=replace)",
            file=sys.stderr,
        )
    start = time.perf_counter()
    tok = train(
        files,
        args.vocab_size,
        special_tokens=_special_tokens(args),
        pattern=args.pattern,
        num_threads=args.threads,
        progress=progress_bars(args),
        errors=errors,
        max_memory=args.max_memory,
        weights=dict(args.weight) or None,
        format=args.format,
        text_field=args.text_field,
        **_training_options(args),
    )
    return _report_training(
        args, tok, f"{len(tok.training_stats.sources) or len(files)} source(s)", start
    )


def _report_training(args: argparse.Namespace, tok, source: str, start: float) -> int:
    save_tokenizer_json(tok, args.output)
    total = time.perf_counter() - start
    s = tok.training_stats
    # With weights the tokens count each source w times, so the bytes must too.
    weighted_bytes = sum(n * w for _, n, w in s.sources) if s.sources else s.input_bytes
    bpt = weighted_bytes / s.tokens if s.tokens else float("nan")
    if args.quiet:
        return 0
    from bytepair.cli.counts import training_pruned_line

    pruned = training_pruned_line(s)
    sources = (
        "".join(f"    {_fmt_bytes(n):>10}  x {w:g}  {name}\n" for name, n, w in s.sources)
        if args.weight
        else ""
    )
    stop = {
        "no_pair": " (stopped early: no pair left)",
        "min_frequency": " (stopped early: below --min-frequency)",
    }
    held = f"{s.base_ids:,} ids of the base" if s.base_ids else "256 bytes"
    superbpe = superbpe_summary(s)
    new_specials = tok.vocab_size - (s.base_ids or 256) - s.merges
    print(
        f"wrote {'tokenizer.json to stdout' if args.output == '-' else args.output}\n"
        f"  input          {_fmt_bytes(s.input_bytes)} in {source}\n{sources}"
        f"  {'stage-2 pieces' if s.superbpe_transition else 'pre-tokens    '} {s.pre_tokens:,} "
        f"({s.distinct_words:,} distinct)\n{pruned}"
        f"  merges         {s.merges:,} learned{stop.get(s.stop_reason, '')}\n{superbpe}"
        f"  vocab size     {tok.vocab_size:,} ({held} + {s.merges:,} merges + {new_specials} "
        "special)\n"
        f"  time           {total:.2f} s (counting {s.count_seconds:.2f} s, merging "
        f"{s.merge_seconds:.2f} s)\n"
        f"  peak memory    {peak_rss_mb():.0f} MiB\n"
        f"  bytes/token    {bpt:.3f} on the training text ({s.tokens:,} tokens)",
        file=sys.stderr if args.output == "-" else sys.stdout,
    )
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    tok = Tokenizer.load(args.tokenizer)
    ids = load_ids(args.ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise ValueError(
            f"{args.ids}: expected a 1-D integer array, got shape {ids.shape} dtype {ids.dtype}"
        )

    def write(out) -> None:
        for start in range(0, len(ids), _DECODE_BLOCK_IDS):
            out.write(tok.decode_bytes(ids[start : start + _DECODE_BLOCK_IDS].tolist()))

    with output_file(args.output) as out:
        write(out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bytepair", description="Train and use byte-level BPE tokenizers."
    )
    p.add_argument("--version", action="version", version=f"bytepair {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a tokenizer on text files")
    t.add_argument(
        "files",
        nargs="*",
        type=input_path,
        metavar="INPUT",
        help="files (text, .jsonl, .parquet; .gz/.bz2/.xz/.zst too), folders, globs or fsspec "
        "URLs; - for stdin (default: Python's stdlib sources)",
    )
    t.add_argument(
        "--vocab-size",
        type=id_count,
        required=True,
        help="256 bytes (or the --base's ids) + merges + special tokens",
    )
    t.add_argument(
        "--special-token",
        action="append",
        default=[],
        metavar="T",
        help="repeatable, e.g. '<|endoftext|>'",
    )
    t.add_argument(
        "--special-token-id",
        action="append",
        default=[],
        metavar="T=ID",
        type=_name_value(int),
        help="a special token at a fixed id, in the block after the merges (repeatable)",
    )
    t.add_argument(
        "--reserve-special-tokens",
        type=id_count,
        default=0,
        metavar="N",
        help="add N placeholder special tokens <|reserved_special_token_{i}|>",
    )
    t.add_argument("--pattern", default=None, help="gpt2 (default), cl100k, o200k, or a regex")
    t.add_argument(
        "--base",
        default=None,
        metavar="FILE|NAME",
        help="extend this tokenizer (a file bytepair loads, or gpt2, cl100k_base...): keep its "
        "ids, merges, special tokens and pattern; learn --vocab-size minus its ids new merges",
    )
    add_superbpe_flags(t)
    t.add_argument(
        "--min-frequency",
        type=pair_count,
        default=0,
        metavar="K",
        help="no merge of a pair counted fewer than K times",
    )
    t.add_argument(
        "--max-token-length",
        type=int_between(1, MAX_IDS),
        default=None,
        metavar="N",
        help="no token longer than N bytes",
    )
    t.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="GLOB=W",
        type=_name_value(float),
        help="multiply the counts of the inputs GLOB names by W (repeatable; a data mixture)",
    )
    add_input_options(t)
    t.add_argument(
        "--from-counts",
        metavar="COUNTS",
        default=None,
        help="train from a word-counts folder (bytepair count) instead of FILEs; "
        "pattern and special tokens default to the folder's",
    )
    t.add_argument(
        "--threads", type=positive_int, default=None, help="counting threads (default: all cores)"
    )
    t.add_argument(
        "--max-memory",
        type=memory_budget,
        default=None,
        metavar="SIZE",
        help="memory budget of the word counts and the merge loop, e.g. 4G (at least 64M); past "
        "it the rarest words are dropped (with --from-counts a hash sample of them stays, each "
        "standing for several) and the summary says how many (default: no bound)",
    )
    t.add_argument(
        "-o", "--output", default="tokenizer.json", help="tokenizer.json to write (- for stdout)"
    )
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bars, no summary")
    t.add_argument(
        "--trace",
        type=id_count,
        default=0,
        metavar="N",
        help="print the first N merges with their counts",
    )
    t.set_defaults(run=cmd_train)

    e = sub.add_parser(
        "encode",
        help="encode a text file to a .npy array of ids, or a corpus to token shards",
        description="One FILE -> a .npy of ids (uint16 if the vocabulary fits, else uint32). "
        "Several INPUTs, a folder or glob, -o an existing folder or ending in /, or any dataset "
        "flag -> a dataset folder OUT_DIR of token shards (bytepair shards inspect OUT_DIR).",
    )
    e.add_argument(
        "inputs",
        nargs="+",
        type=input_path,
        metavar="INPUT",
        help="UTF-8 text file, - for stdin; for a dataset also folders, globs, .gz/.bz2/.xz/.zst, "
        ".jsonl, .parquet, fsspec URLs",
    )
    e.add_argument("-t", "--tokenizer", required=True, type=input_path)
    e.add_argument(
        "-o",
        "--output",
        required=True,
        help=".npy file or - for stdout (one FILE), else the dataset folder OUT_DIR",
    )
    e.add_argument(
        "--special",
        choices=("raise", "allow", "text"),
        default=None,
        help="special-token strings in the text: fail (default for one FILE, as tiktoken's "
        "encode), emit their ids, or encode them as text (always, for a dataset)",
    )
    e.add_argument(
        "--errors", choices=("strict", "replace"), default="strict", help="bytes that are not UTF-8"
    )
    e.add_argument(
        "--dropout",
        type=probability,
        default=0.0,
        metavar="P",
        help="BPE-dropout: skip each merge with probability P (subword regularization; default 0)",
    )
    e.add_argument(
        "--seed",
        type=seed_value,
        default=0,
        metavar="S",
        help="seed of --dropout's draws (default 0)",
    )
    e.add_argument(
        "--threads", type=positive_int, default=None, help="encoding threads (default: all cores)"
    )
    e.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no messages")
    from bytepair.cli.dataset import add_dataset_flags, register_shards

    add_dataset_flags(e)
    e.set_defaults(run=cmd_encode)

    d = sub.add_parser("decode", help="decode a .npy array of ids back to text")
    d.add_argument(
        "ids", type=input_path, metavar="IDS.npy", help="a .npy array of ids, - for stdin"
    )
    d.add_argument("-t", "--tokenizer", required=True, type=input_path)
    d.add_argument("-o", "--output", default="-", help="output file (default: - for stdout)")
    d.set_defaults(run=cmd_decode)
    # Counting on many workers, and word-counts folders.
    from bytepair.cli.counts import register_count, register_counts

    register_count(sub)
    register_counts(sub)
    register_shards(sub)
    # Converting between file formats.
    from bytepair.cli.formats import register_commands

    register_commands(sub)
    # Looking inside a tokenizer.
    from bytepair.cli import inspection

    inspection.register_inspect(sub)
    inspection.register_show(sub)
    inspection.register_stats(sub)
    inspection.register_curve(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("bytepair: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`bytepair decode ... | head`): stop quietly, with the
        # status of a process killed by SIGPIPE, as Unix tools do. Python would
        # report the error again when it flushes stdout at exit; point stdout at
        # /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except (OSError, ValueError, OverflowError, UnicodeError) as e:
        text = in_cli_words(str(e), chosen_parser(parser, args))
        print(f"bytepair {args.command}: error: {text}", file=sys.stderr)
        return 1
    except Exception as e:
        # A bug, not the input's fault: still one line, and the traceback on demand.
        if os.environ.get("BYTEPAIR_TRACEBACK"):
            raise
        print(
            f"bytepair {args.command}: internal error: {type(e).__name__}: {e} "
            "(BYTEPAIR_TRACEBACK=1 shows where; please report it)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
