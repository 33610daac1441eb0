"""`bytepair encode FILE -o ids.npy`: one text file (or a pipe) to a .npy
array of ids (`bytepair encode INPUT... -o OUT_DIR`, token shards, is
cli/dataset.py)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import sys
import tempfile

from bytepair.cli.args import message, output_file
from bytepair.progress import ProgressBar
from bytepair.textfile import read_text_blocks
from bytepair.tokenizer import Tokenizer

_COPY_BLOCK_BYTES = 16 << 20
# numpy.lib.format's GROWTH_AXIS_MAX_DIGITS: numpy pads a header with spaces
# so that its shape can grow in place to any 21-digit count.
_NPY_GROWTH_DIGITS = 21


def _special_policy(choice: str) -> dict:
    return {
        "allow": {"allowed_special": "all"},
        "raise": {},
        "text": {"disallowed_special": ()},
    }[choice]


def cmd_encode(args: argparse.Namespace) -> int:
    from bytepair.cli.dataset import cmd_encode_dataset, writes_dataset

    if writes_dataset(args):
        return cmd_encode_dataset(args)
    args.file, args.special = args.inputs[0], args.special or "raise"
    tok = Tokenizer.load(args.tokenizer)
    itemsize = 2 if tok.n_vocab <= 1 << 16 else 4  # little-endian uint16 / uint32
    size = os.path.getsize(args.file) if os.path.isfile(args.file) else None  # None: a pipe
    # A regular file is read, encoded on every thread and written by the core.
    by_core = size is not None and not args.dropout and tok.pipeline is None and os.name == "posix"
    encode = _FileEncoder(tok, args, itemsize, by_core)
    with ProgressBar(
        size, "encoding", unit="B", scale=True, enabled=not args.quiet and sys.stderr.isatty()
    ) as bar:
        encode.on_read = bar.update_to
        if by_core and args.output != "-":
            # The ids go straight into the output after a header of the length
            # every count's has (no copy from a scratch file, ~30 ms for the
            # 30 MB of ids of enwiki.txt); the count is filled in at the end.
            with output_file(args.output) as out:
                out.write(_npy_header(itemsize, 0))
                count = encode.into(out)
                os.pwrite(out.fileno(), _npy_header(itemsize, count), 0)
        else:
            # Ids go to an anonymous scratch file first (the .npy header needs the
            # final count), then into the output atomically: a kill leaves neither behind.
            scratch_dir = os.path.dirname(os.path.abspath(args.output))
            with tempfile.TemporaryFile(dir=scratch_dir) as raw:
                count = encode.into(raw)
                raw.seek(0)
                with output_file(args.output) as out:
                    out.write(_npy_header(itemsize, count))
                    shutil.copyfileobj(raw, out, _COPY_BLOCK_BYTES)
    where = "stdout" if args.output == "-" else args.output
    message(
        args,
        f"wrote {where}: {count:,} tokens (uint{8 * itemsize}), {encode.read / max(count, 1):.3f} "
        "bytes/token",
    )
    return 0


class _FileEncoder:
    """Encodes `args.file` into an open binary file (after what it holds):
    by the core (`by_core`: it reads, encodes on every thread and writes), or
    one block at a time in Python (a pipe, BPE-dropout, a tokenizer.json
    pipeline). `read` is the input bytes read so far, `on_read` told of them."""

    def __init__(self, tok: Tokenizer, args: argparse.Namespace, itemsize: int, by_core: bool):
        self.tok, self.args, self.itemsize, self.by_core = tok, args, itemsize, by_core
        self.read = 0
        self.on_read = None

    def _done(self, n: int) -> None:
        self.read = n
        if self.on_read is not None:
            self.on_read(n)

    def into(self, out) -> int:
        """Encode, writing the ids to `out`; returns how many were written."""
        args, tok = self.args, self.tok
        policy = _special_policy(args.special)
        try:
            if self.by_core:
                allowed, disallowed = tok._special_policy(
                    policy.get("allowed_special", frozenset()),
                    policy.get("disallowed_special", "all"),
                )
                out.flush()
                count, self.read = tok._core.encode_file(
                    args.file,
                    out.fileno(),
                    self.itemsize,
                    allowed,
                    disallowed,
                    args.errors == "replace",
                    args.threads,
                    self._done,
                )
                return count
            if args.dropout:
                policy |= {"dropout": args.dropout, "seed": args.seed}
            count = 0
            for ids in tok.encode_blocks(
                read_text_blocks(args.file, args.errors, self._done), **policy
            ):
                out.write(ids.astype(f"<u{self.itemsize}", copy=False).data)
                count += len(ids)
            return count
        except ValueError as e:
            _reword_disallowed_special(e, args.file, self.read)
            raise


def _npy_header(itemsize: int, count: int) -> bytes:
    """The .npy header (format 1.0, numpy's NEP 1) of a 1-D array of `count`
    little-endian unsigned ints of `itemsize` bytes, byte for byte as
    ``numpy.lib.format.write_array_header_1_0`` writes it: always 128 bytes.
    Written here because importing NumPy took 40-70 ms of the command's start-up."""
    text = f"{{'descr': '<u{itemsize}', 'fortran_order': False, 'shape': ({count},), }}"
    text += " " * (_NPY_GROWTH_DIGITS - len(str(count)))
    # magic (6) + version (2) + length (2) + text + newline, padded to 64 bytes.
    text += " " * (-(10 + len(text) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin-1")


def _reword_disallowed_special(error: ValueError, path: str, read: int) -> None:
    """Raise a disallowed-special-token error again in CLI words (flags, not
    keyword arguments); any other error is left alone."""
    hint = "--special allow encodes it as the special token's id, --special text as plain text"
    if str(error).startswith(
        f"{path}: the text holds the special-token string "
    ):  # the core's file encoder
        raise ValueError(f"{error}; {hint}") from None
    match = re.match(
        r"Encountered text corresponding to disallowed special token (.+) at character offset",
        str(error),
    )
    if match is None:
        return
    raise ValueError(
        f"{path}: the text holds the special-token string {match.group(1)} (in the first {read:,} "
        f"bytes); {hint}"
    ) from None
