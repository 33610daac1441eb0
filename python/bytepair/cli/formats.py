"""``bytepair convert`` and ``info``: the command lines of `bytepair.formats`."""

from __future__ import annotations

import argparse
import sys

from bytepair import _core
from bytepair.cli.args import input_path, save_tokenizer_json
from bytepair.formats.detect import _FORMAT_NAMES, FORMATS, convert, info, load
from bytepair.inspection.report import printable


def _special_arg(text: str) -> tuple[str, int]:
    token, sep, number = text.rpartition("=")
    if not sep or not token or not number.isdigit():
        raise argparse.ArgumentTypeError(f"expected TOKEN=ID, got {text!r}")
    return token, int(number)


def cmd_info(args: argparse.Namespace) -> int:
    d = info(args.file)
    # Everything read from the file is escaped: a hostile file must not send terminal escapes.
    specials = ", ".join(f"{printable(t)}={i}" for t, i in d["special_tokens"].items()) or "(none)"
    n_special = len(d["special_tokens"])
    pattern = (
        f"{d['pattern']} (preset: {_core.resolve_pattern(d['pattern'])})"
        if d["preset"]
        else d["pattern"]
    )
    pattern = printable(pattern)
    print(
        f"format          {_FORMAT_NAMES[d['format']]} ({d['format']})\n"
        f"files           {printable(', '.join(d['files']))}\n"
        f"vocab size      {d['vocab_size']:,} ({d['vocab_size'] - n_special:,} tokens + "
        f"{n_special} special; largest id {d['max_id']:,})\n"
        f"merges          {d['merges']:,}\n"
        f"special tokens  {specials}\n"
        f"pattern         {pattern}"
        + (f"\npipeline        {printable(d['pipeline'])}" if d["pipeline"] else "")
    )
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    specials = dict(args.special_token) if args.special_token else None
    if args.output == "-":
        return _convert_to_stdout(args, specials)
    written = convert(
        args.input, args.output, args.to, pattern=args.pattern, special_tokens=specials
    )
    print(f"wrote {', '.join(written)}", file=sys.stderr)
    return 0


def _convert_to_stdout(args: argparse.Namespace, specials: dict[str, int] | None) -> int:
    """``convert IN -``: a tokenizer.json on stdout (the other formats are two
    files, or lose the pattern and special tokens)."""
    if args.to not in (None, "hf"):
        raise ValueError(f"OUT - (stdout) writes --to hf only; --to {args.to} needs a file name")
    save_tokenizer_json(load(args.input, pattern=args.pattern, special_tokens=specials), "-")
    return 0


def register_commands(sub: "argparse._SubParsersAction") -> None:
    """Add ``convert`` and ``info`` to the ``bytepair`` command line."""
    c = sub.add_parser(
        "convert",
        help="convert a tokenizer between tokenizer.json, tekken.json, .tiktoken and GPT-2 files",
    )
    c.add_argument(
        "input",
        type=input_path,
        metavar="IN",
        help="tokenizer.json, tekken.json, vocab.json or merges.txt, .tiktoken[.gz], or a "
        "directory; - for stdin",
    )
    c.add_argument(
        "output",
        metavar="OUT",
        help="X.json (hf), X_tekken.json (tekken), X.tiktoken (+ X.tiktoken.json), DIR/ (gpt2), or "
        "- (tokenizer.json to stdout)",
    )
    c.add_argument(
        "--to", choices=FORMATS, default=None, help="output format (default: from OUT's name)"
    )
    c.add_argument(
        "--pattern", default=None, help="pattern for a .tiktoken input without a sidecar"
    )
    c.add_argument(
        "--special-token",
        action="append",
        type=_special_arg,
        default=[],
        metavar="TOKEN=ID",
        help="special token of a .tiktoken input without a sidecar (repeatable)",
    )
    c.set_defaults(run=cmd_convert)
    i = sub.add_parser(
        "info",
        help="describe a tokenizer file: format, vocab size, merges, special tokens, pattern",
    )
    i.add_argument("file", type=input_path, metavar="FILE", help="a tokenizer file, - for stdin")
    i.set_defaults(run=cmd_info)
