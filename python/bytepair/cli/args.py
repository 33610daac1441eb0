"""Argument types and stream helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

from bytepair.atomic import atomic_open

# `-` as an input is read through this path, so every reader that takes a path
# (the Rust file counter included) reads the pipe.
STDIN_PATH = "/dev/stdin"


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1 (a thread, part or worker count)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def byte_size(text: str) -> int:
    """argparse type: a size in bytes, with an optional binary unit suffix
    (``512M``, ``4G``, ``1.5g``, ``4GiB``; K, M, G, T are powers of 1024)."""
    number = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = number[-1:] if number[-1:] in _SIZE_UNITS else ""
    try:
        value = float(number[: len(number) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 512M or 4G") from None
    if not value >= 0 or value * _SIZE_UNITS[unit] >= 1 << 62:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 512M or 4G")
    return int(value * _SIZE_UNITS[unit])


def add_input_options(p: argparse.ArgumentParser) -> None:
    """The flags of how inputs are read, shared by `count` and `train`."""
    from bytepair.counts.sources import FORMATS

    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="default: from the file extensions, else text",
    )
    p.add_argument(
        "--text-field",
        "--field",
        "--column",
        dest="text_field",
        default="text",
        metavar="F",
        help="JSON key / Parquet column (default: text)",
    )
    p.add_argument(
        "--errors", choices=("strict", "replace"), default="strict", help="bytes that are not UTF-8"
    )


def input_path(text: str) -> str:
    """argparse type for an input file: ``-`` is standard input."""
    if text != "-":
        return text
    if not os.path.exists(STDIN_PATH):
        raise argparse.ArgumentTypeError(
            f"- (standard input) needs {STDIN_PATH}, which this system lacks"
        )
    return STDIN_PATH


@contextlib.contextmanager
def output_file(path: str) -> Iterator[BinaryIO]:
    """A binary file to write a result to: standard output for ``-``, else
    `path` written atomically (a temporary file renamed on success)."""
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with atomic_open(path) as f:
        yield f


def save_tokenizer_json(tok, path: str) -> None:
    """Write `tok` as a tokenizer.json to `path` (atomically), or to stdout for ``-``."""
    if path != "-":
        tok.save(path)
        return
    from bytepair.formats.hf import to_hf_json

    with output_file("-") as out:
        out.write(to_hf_json(tok).encode("utf-8"))


def progress_bars(args: argparse.Namespace) -> bool | None:
    """The `progress` argument for a command: off with ``-q``, else None, which
    means "when stderr is a terminal" (no bars in pipes, logs or CI)."""
    return False if args.quiet else None


def message(args: argparse.Namespace, text: str) -> None:
    """Print a message (not a result) to stderr, unless ``-q``."""
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr)
