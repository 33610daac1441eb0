"""Read UTF-8 text files (or pipes) in blocks, with byte-exact progress and
errors that name the file and byte offset."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

BLOCK_BYTES = 1 << 20


def read_text_blocks(
    path: str | os.PathLike,
    errors: str = "strict",
    on_read: Callable[[int], None] | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[str]:
    """Yield the text of the UTF-8 file at `path` in blocks of about
    `block_bytes` bytes (a character split by a block edge goes to the next
    block), calling ``on_read(bytes read so far)`` after each read. Newlines are
    kept as they are (no ``\\r\\n`` translation). Works on pipes and FIFOs.

    Raises:
        OSError: the file cannot be opened or read (FileNotFoundError, ...).
        ValueError: with ``errors="strict"``, bytes that are not UTF-8; the
            message names the file and the byte offset of the first bad byte.
            ``errors="replace"`` decodes them to U+FFFD instead.
    """
    with open(path, "rb") as f:
        yield from decode_text_blocks(f, os.fspath(path), errors, on_read, block_bytes)


def decode_text_blocks(
    f: BinaryIO,
    name: str,
    errors: str = "strict",
    on_read: Callable[[int], None] | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[str]:
    """`read_text_blocks` of an open binary stream (a decompressor, a remote
    file); errors name it `name`."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    done = 0
    while True:
        data = f.read(block_bytes)
        held = len(decoder.getstate()[0])  # bytes of a character cut by the last block
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{name}: invalid UTF-8 at byte offset {done - held + e.start} "
                f"(use errors='replace' / --errors replace to replace bad bytes)"
            ) from None
        done += len(data)
        if on_read is not None:
            on_read(done)
        if text:
            yield text
        if not data:
            return
