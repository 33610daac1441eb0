"""Argument types and stream helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from bytepair.atomic import atomic_open

if TYPE_CHECKING:
    import numpy

# `-` as an input is read through this path, so every reader that takes a path
# (the Rust file counter included) reads the pipe.
STDIN_PATH = "/dev/stdin"


#: Token ids are 32-bit: no vocabulary, merge count or id reaches this.
MAX_IDS = 1 << 32
#: Upper bound of a count flag (threads, workers, parts): far above any machine,
#: far below what would make the core overflow or a loop run for ever.
MAX_COUNT = 1 << 16


def int_between(low: int, high: int):
    """argparse type: an integer in [low, high] (a flag's bounds, so a value
    such as ``-1`` or ``10**20`` is a usage error naming the flag, never an
    overflow deep in the core)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text} must be at least {low:,}")
        if value > high:
            raise argparse.ArgumentTypeError(f"{text} must be at most {high:,}")
        return value

    parse.__name__ = "integer"
    return parse


#: argparse type: a thread, part or worker count.
positive_int = int_between(1, MAX_COUNT)
#: argparse type: a number of ids (vocabulary sizes, special tokens, merges to print).
id_count = int_between(0, MAX_IDS)
#: argparse type: a pair count (counts are 64-bit).
pair_count = int_between(0, (1 << 64) - 1)


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


# The API's names of values the CLI takes under another flag name.
_FLAG_OF_KEYWORD = {
    "num_threads": "threads",
    "num_workers": "workers",
    "vocab_size": "vocab_sizes",
}


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The (sub)parser of the subcommand `args` ran (``counts inspect``: the innermost)."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or getattr(args, subs[0].dest, None) not in subs[0].choices:
            return parser
        parser = subs[0].choices[getattr(args, subs[0].dest)]


def in_cli_words(text: str, parser: argparse.ArgumentParser) -> str:
    """An API error message in the words of `parser`'s command line: each
    ``keyword=value`` (``vocab_size=-1``) of a value a flag sets becomes
    ``--flag value`` (``--vocab-size -1``)."""
    flags = {
        a.dest: next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
        for a in parser._actions
        if a.option_strings
    }
    for keyword, dest in _FLAG_OF_KEYWORD.items():
        if keyword not in flags and dest in flags:
            flags[keyword] = flags[dest]
    for keyword, flag in flags.items():
        if flag in text:  # worded for both already ("errors='replace' / --errors replace")
            continue
        text = re.sub(rf"(?<![\w-]){re.escape(keyword)}=", f"{flag} ", text)
    return text


def memory_budget(text: str) -> int:
    """argparse type of --max-memory: a size (`byte_size`) of at least 64M."""
    from bytepair.counts.protocol import MIN_MAX_MEMORY

    value = byte_size(text)
    if value < MIN_MAX_MEMORY:
        raise argparse.ArgumentTypeError(f"{text} is below the least budget, 64M")
    return value


def probability(text: str) -> float:
    """argparse type of --dropout: a float in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a probability in [0, 1)")
    return value


def seed_value(text: str) -> int:
    """argparse type of --seed: an integer in [0, 2**64)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 2**64)")
    return value


def load_ids(path: str) -> "numpy.ndarray":
    """The .npy array at `path`, memory-mapped; never unpickled (a .npy of
    Python objects, an .npz archive or any other file is refused with a
    one-line error)."""
    import numpy as np

    if os.path.isfile(path):
        with open(path, "rb") as f:
            head = f.read(6)
        data = None
    else:  # a pipe: numpy needs to seek, so read it whole, once
        with open(path, "rb") as f:
            data = f.read()
        head = data[:6]
    if not head:
        raise ValueError(f"{path}: an empty file, not a .npy array of ids")
    if head.startswith(b"PK"):
        raise ValueError(
            f"{path}: an .npz archive, not a .npy array of ids (save one array with numpy.save)"
        )
    if head != np.lib.format.MAGIC_PREFIX:
        raise ValueError(f"{path}: not a .npy file (it does not start with numpy's magic bytes)")
    try:
        if data is None:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError) as e:
        # numpy's own words name its keyword arguments (allow_pickle=): not ours to show.
        objects = "pickled" in str(e) or "Python objects" in str(e)
        why = "it holds Python objects" if objects else str(e) or type(e).__name__
        raise ValueError(f"{path}: not a .npy array of integer ids ({why})") from None
