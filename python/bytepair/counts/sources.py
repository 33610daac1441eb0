"""Read corpus documents, for counting (`bytepair.count`) and for encoding
datasets (`bytepair.encode_dataset`): plain text files, JSON Lines and Parquet,
from local paths, folders, globs or any fsspec URL (``s3://``, ``gs://``,
``hf://``...), each possibly compressed (``.gz``, ``.bz2``, ``.xz``, ``.zst``).

What one *document* is (pre-tokens never span two documents):
- ``text``: a whole file (local uncompressed files are counted in blocks by the
  Rust reader, cut only at safe boundaries; compressed files are decompressed
  as a stream and counted in blocks cut at the same boundaries; remote files
  are read whole), or, with a `separator`, the text between two separator
  strings (empty pieces are not documents);
- ``jsonl``: one line's JSON object, its `text_field` string;
- ``parquet``: one row's `text_field` column (string or binary).

`document_batches` yields them as Arrow buffers (data back to back, n + 1
int64 offsets), in batches of about 16 MiB, which reach Rust as they are:
never one Python object per document.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import io
import lzma
import os
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from bytepair import _core
from bytepair.encoding.text import check_encodable

FORMATS = ("text", "jsonl", "parquet")
# A folder holding one is an output (word counts, token shards), never an input
MANIFEST = "_manifest.json"
_EXTENSIONS = {
    ".txt": "text",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}
COMPRESSED = (".gz", ".bz2", ".xz", ".zst")
_BATCH_BYTES = 16 << 20  # JSON block / Parquet batch size handed to Rust at a time
_PARQUET_ROWS = 8192


def check_special_tokens(special_tokens: Sequence[str]) -> tuple[str, ...]:
    """The special tokens of counting and training, checked: a sequence (not a
    single str, TypeError) of distinct non-empty strs that are valid Unicode (no
    lone surrogate), else ValueError naming the token at fault. The one check
    `count`, `train` and `CountSpec` share."""
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a sequence of strings, not a single string")
    tokens = tuple(special_tokens)
    seen = set()
    for t in tokens:
        if not isinstance(t, str) or not t:
            raise ValueError(f"special token {t!r} must be a non-empty str")
        if t in seen:
            raise ValueError(f"special token {t!r} is given twice")
        try:
            t.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"special token {t!r} holds a lone surrogate: not text UTF-8 can hold"
            ) from None
        seen.add(t)
    return tokens


@dataclass(frozen=True)
class CountSpec:
    """How text becomes word counts. Every worker counts with the same spec, and
    the word-counts manifest pins it, so counts made apart add up exactly.

    Attributes:
        pattern: pre-tokenization preset (``gpt2``, ``cl100k``, ``o200k``) or regex.
        special_tokens: strings that split the text and are never counted.
        format: ``text``, ``jsonl`` or ``parquet`` (see the module docs).
        text_field: JSON key / Parquet column holding the text (jsonl, parquet).
        errors: ``strict`` (bytes that are not UTF-8 raise, naming the file and
            byte offset) or ``replace`` (U+FFFD). JSON text is decoded by the
            JSON parser, which always rejects bad UTF-8.
    """

    pattern: str = "gpt2"
    special_tokens: tuple[str, ...] = ()
    format: str = "text"
    text_field: str = "text"
    errors: str = "strict"

    def __post_init__(self) -> None:
        check_encodable(self.pattern, "pattern")
        object.__setattr__(self, "special_tokens", check_special_tokens(self.special_tokens))
        if self.format not in FORMATS:
            raise ValueError(f"format={self.format!r}: expected one of {', '.join(FORMATS)}")
        if self.errors not in ("strict", "replace"):
            raise ValueError(f"errors={self.errors!r}: expected 'strict' or 'replace'")

    @property
    def regex(self) -> str:
        """The full pre-tokenization regex (presets resolved)."""
        return _core.resolve_pattern(self.pattern)

    def counter(self, max_memory: int | None = None) -> _core.WordCounter:
        """An empty Rust counter for this spec (ValueError: invalid pattern);
        `max_memory` (bytes): its counts' budget, past which the rarest words
        are dropped (lossy counting, ``count::Limits::max_memory``)."""
        return _core.WordCounter(self.pattern, list(self.special_tokens), max_memory=max_memory)


@dataclass
class SourceStats:
    """Documents and bytes (UTF-8 text bytes, as read) counted from inputs."""

    documents: int = 0
    bytes: int = 0

    def __iadd__(self, other: "SourceStats") -> "SourceStats":
        self.documents += other.documents
        self.bytes += other.bytes
        return self


def is_remote(path: str) -> bool:
    """True for an fsspec URL other than ``file://`` (read through fsspec)."""
    return "://" in path and not path.startswith("file://")


def is_plain_local(path: str) -> bool:
    """A local, uncompressed file: one the Rust reader streams itself."""
    return not is_remote(path) and compression_of(path) is None


def local_path(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def input_size(path: str) -> int:
    """Size in bytes of an input file, local or remote (for planning and progress)."""
    if is_remote(path):
        import fsspec

        fs, p = fsspec.core.url_to_fs(path)
        return int(fs.size(p))
    return os.path.getsize(local_path(path))


def expand_inputs(
    inputs: str | os.PathLike | Sequence[str | os.PathLike], out: str | None = None
) -> list[str]:
    """Paths as strings, in the order given; a local folder stands for every
    non-hidden file below it, in sorted order, leaving out output folders
    (word counts, token shards: folders with a manifest) and `out`, so that
    ``count DIR -o DIR/counts`` never reads its own earlier output; a local
    path with ``*?[`` that names no file is a glob (``**`` recursive), its
    matches sorted.

    Raises:
        FileNotFoundError: a glob that matches nothing.
        ValueError: no input at all (an empty folder).
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    skip = os.path.realpath(out) if out is not None and not is_remote(out) else None

    def is_input_dir(path: str) -> bool:
        return os.path.realpath(path) != skip and not os.path.exists(os.path.join(path, MANIFEST))

    def expand(item: str) -> list[str]:
        if is_remote(item):
            return _remote_glob(item) if glob.has_magic(item) else [item]
        if os.path.isdir(item):
            found = []
            for root, dirs, files in os.walk(item):
                if not is_input_dir(root):
                    dirs[:] = []
                    continue
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                found += [
                    os.path.join(root, f) for f in sorted(files) if not f.startswith((".", "_"))
                ]
            return found
        if glob.has_magic(item) and not os.path.exists(local_path(item)):
            matches = sorted(glob.glob(local_path(item), recursive=True))
            if not matches:
                raise FileNotFoundError(f"{item}: no file matches this pattern")
            return [p for m in matches for p in expand(m)]
        return [item]

    paths = [p for item in map(os.fspath, inputs) for p in expand(item)]
    if not paths:
        raise ValueError(f"no input files in {[os.fspath(i) for i in inputs]!r}")
    return paths


def _remote_glob(url: str) -> list[str]:
    """The files an fsspec URL with ``*?[`` matches, sorted (FileNotFoundError: none)."""
    import fsspec

    fs, _ = fsspec.core.url_to_fs(url)
    protocol = url.split("://", 1)[0]
    found = [f"{protocol}://{p}" for p in sorted(fs.glob(url))]
    if not found:
        raise FileNotFoundError(f"{url}: no file matches this pattern")
    return found


def compression_of(path: str) -> str | None:
    """The compression suffix of `path` (``.gz``, ``.bz2``, ``.xz``, ``.zst``), or None."""
    suffix = os.path.splitext(path)[1].lower()
    return suffix if suffix in COMPRESSED else None


def infer_format(paths: Sequence[str]) -> str:
    """``jsonl`` or ``parquet`` when every file has that extension (before a
    compression suffix: ``a.jsonl.gz`` is JSON Lines), else ``text``."""

    def kind(p: str) -> str:
        suffix = compression_of(p)
        stem = p[: -len(suffix)] if suffix else p
        return _EXTENSIONS.get(os.path.splitext(stem)[1].lower(), "text")

    kinds = {kind(p) for p in paths}
    return kinds.pop() if len(kinds) == 1 else "text"


def check_inputs(paths: list[str]) -> None:
    """FileNotFoundError / IsADirectoryError for a local input that is missing or a folder."""
    for p in paths:
        if is_remote(p):
            continue
        lp = local_path(p)
        if os.path.isdir(lp):
            raise IsADirectoryError(f"{p}: is a directory, expected a file")
        if not os.path.exists(lp):
            raise FileNotFoundError(f"{p}: no such file")


def count_file(
    counter: _core.WordCounter,
    path: str,
    spec: CountSpec,
    *,
    num_threads: int | None = None,
    on_bytes: Callable[[int], None] | None = None,
    content: bytes | None = None,
) -> SourceStats:
    """Add the pre-tokens of every document of the file at `path` to `counter`.

    `on_bytes(n)` is called with the running count of this file's bytes counted.
    `content`: the file's bytes, already read elsewhere (Spark's ``binaryFile``
    source); they are counted as the file would be, and `path` only names it.

    Raises:
        FileNotFoundError, OSError: the file cannot be read.
        ValueError: bad UTF-8 (names the file, record and byte offset), a JSON
            line that does not parse, or a record without a string `text_field`
            (names the file and record number).
    """
    replace = spec.errors == "replace"
    if spec.format == "text" and is_plain_local(path) and content is None:
        counter.count_files([local_path(path)], num_threads, 1 << 20, replace, on_bytes)
        return SourceStats(documents=1, bytes=os.path.getsize(local_path(path)))
    if spec.format == "text" and compression_of(path):
        return _count_compressed_text(counter, path, spec, num_threads, on_bytes, content)
    stats = SourceStats()
    for data, offsets, first in document_batches(
        path, spec.format, spec.text_field, content=content
    ):
        done = stats.bytes
        counter.count_documents(
            data,
            offsets,
            path,
            None if spec.format == "text" else first,
            num_threads,
            replace,
            None if on_bytes is None else (lambda n: on_bytes(done + n)),
        )
        stats.documents += (len(offsets) // 8) - 1
        stats.bytes += len(data)
    return stats


def _count_compressed_text(
    counter: _core.WordCounter,
    path: str,
    spec: CountSpec,
    num_threads: int | None,
    on_bytes: Callable[[int], None] | None,
    content: bytes | None,
) -> SourceStats:
    """One compressed text document, decompressed as a stream and counted in
    blocks cut where the counter's cut rule allows (the cuts the Rust reader
    takes in a plain file), so it counts exactly as the file uncompressed."""
    from bytepair.encoding.text import safe_blocks
    from bytepair.textfile import decode_text_blocks

    done = 0
    batch: list[str] = []

    def flush() -> None:
        counter.count_texts(batch, num_threads)
        batch.clear()

    def read(n: int) -> None:
        nonlocal done
        done = n

    with _open(path, content) as f:
        for block in safe_blocks(
            decode_text_blocks(f, path, spec.errors, read), counter.chars_after_last_cut
        ):
            batch.append(block)
            if len(batch) >= 16:
                flush()
                if on_bytes is not None:
                    on_bytes(done)
        flush()
    return SourceStats(documents=1, bytes=done)


def document_batches(
    path: str,
    format: str,
    text_field: str = "text",
    *,
    content: bytes | None = None,
) -> Iterator[tuple[bytes, bytes, int]]:
    """The documents of one input file, in batches: ``(data, offsets, first)``
    with the documents' bytes back to back in `data`, n + 1 little-endian
    int64 `offsets`, and the index of the batch's first document in the file.

    Args:
        path: a local path or fsspec URL; ``.gz``/``.bz2``/``.xz``/``.zst``
            are decompressed (not Parquet, which must seek).
        format: ``text``, ``jsonl`` or ``parquet`` (see the module docs).
        text_field: the JSON key / Parquet column with the text.
        content: the file's bytes, already read elsewhere (`path` only names it).

    Raises:
        OSError: the file cannot be read.
        ValueError: a JSON line that does not parse, a record without a string
            `text_field`, a file that is not Parquet (each naming the file).
    """
    if format == "text":  # one document, whole
        with _open(path, content) as f:
            data = f.read()
        yield data, struct.pack("<2q", 0, len(data)), 0
        return
    if compression_of(path) and format == "parquet":
        raise ValueError(
            f"{path}: a compressed Parquet file cannot be read (Parquet compresses inside the file)"
        )
    batches = (
        _json_batches(path, text_field, content)
        if format == "jsonl"
        else _parquet_batches(path, text_field, content)
    )
    first = 0
    for column in batches:
        yield arrow_documents(column, path, first, text_field)
        first += len(column)


def separated_batches(
    path: str, separator: str, batch_bytes: int, content: bytes | None = None
) -> Iterator["_core.DocumentBatch"]:
    """The documents of a text file cut at every `separator`, in batches of
    about `batch_bytes` bytes (a document held whole), for
    ``CoreBPE.encode_documents``: each batch is read into a reused buffer and
    its documents are ranges of it (`_core.SeparatedReader`: no copy of the
    text, no Python object per document). Empty pieces (a separator at the
    start or end, two in a row) are dropped. `path`, `content`: as
    `document_batches`.

    Raises:
        OSError: the file cannot be read.
    """
    with _open(path, content) as f:
        reader = _core.SeparatedReader(f, separator.encode("utf-8"), batch_bytes)
        while (batch := reader.next_batch()) is not None:
            yield batch


def _open(path: str, content: bytes | None = None):
    """A binary file object for `path`, decompressed by its suffix."""
    if content is not None:
        raw = io.BytesIO(content)
    elif is_remote(path):
        import fsspec

        raw = fsspec.open(path, "rb").open()
    else:
        raw = open(local_path(path), "rb")
    kind = compression_of(path)
    if kind == ".gz":
        return gzip.GzipFile(fileobj=raw)
    if kind == ".bz2":
        return bz2.BZ2File(raw)
    if kind == ".xz":
        return lzma.LZMAFile(raw)
    if (
        kind == ".zst"
    ):  # pyarrow (a dependency already) has zstd; the standard library has it from 3.14
        import pyarrow as pa

        return pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")
    return raw


def _json_batches(path: str, text_field: str, content: bytes | None = None):
    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema([(text_field, pa.large_string())])
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    first = 0  # the records of the blocks before this one
    for lines in _whole_line_blocks(path, content):
        # Arrow parses an in-memory block of whole lines: its streaming reader
        # (open_json) read ahead from the Python file on an Arrow thread that
        # outlived a parse error and aborted the interpreter at exit
        # ("terminate called without an active exception", apache/arrow#34314)
        # in ~1 run of 20, with use_threads=False too.
        options = pj.ReadOptions(block_size=len(lines) + 1, use_threads=False)
        try:
            table = pj.read_json(pa.BufferReader(lines), read_options=options, parse_options=parse)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            if str(e).startswith("Empty JSON stream"):  # blank lines only: no records
                continue
            where = re.sub(r"in row (\d+)", lambda m: f"in record {first + int(m[1])}", str(e))
            raise ValueError(
                f"{path}: not JSON Lines with a string field {text_field!r}: {where}"
            ) from None
        column = table.column(0).combine_chunks()
        first += len(column)
        yield column


def _whole_line_blocks(path: str, content: bytes | None) -> Iterator[bytes]:
    """The bytes of `path` in blocks of about `_BATCH_BYTES` that end at a
    newline (the last one at the end of the file); a line longer than a
    block makes a longer block."""
    held = b""  # the start of a line the next block continues
    with _open(path, content) as f:
        while block := f.read(_BATCH_BYTES):
            buffer = held + block
            end = buffer.rfind(b"\n") + 1
            held = buffer[end:]
            if end:
                yield buffer[:end]
    if held.strip():
        yield held


def _parquet_batches(path: str, text_field: str, content: bytes | None = None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    with _open(path, content) as f:
        try:
            pf = pq.ParquetFile(f)
        except pa.ArrowException as e:
            raise ValueError(f"{path}: not a Parquet file: {e}") from None
        names = pf.schema_arrow.names
        if text_field not in names:
            raise ValueError(f"{path}: no column {text_field!r} (columns: {', '.join(names)})")
        kind = pf.schema_arrow.field(text_field).type
        if not (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
            or pa.types.is_string_view(kind)
        ):
            raise ValueError(f"{path}: column {text_field!r} is {kind}, expected string or binary")
        for batch in pf.iter_batches(batch_size=_PARQUET_ROWS, columns=[text_field]):
            yield batch.column(0)


def arrow_documents(column, path: str, first: int, field: str) -> tuple[bytes, bytes, int]:
    """The documents of an Arrow string or binary array `column` (records
    `first`, `first` + 1, ... of `path`, read from `field`) as the buffers the
    Rust counter and encoder take: (data, back to back; offsets, n + 1
    little-endian int64; `first`). ValueError naming the record for a null."""
    # Imported here: `import bytepair` stays light (numpy is slow to import and
    # starts OpenBLAS threads).
    import numpy as np
    import pyarrow as pa

    if column.null_count:
        bad = first + column.is_null().index(True).as_py()
        raise ValueError(f"{path}: record {bad} has no {field!r} text (null or missing)")
    column = column.cast(pa.large_binary())
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(
        offsets_buf, dtype="<i8", count=len(column) + 1, offset=column.offset * 8
    )
    start, end = int(offsets[0]), int(offsets[-1])
    data = b"" if data_buf is None else data_buf.slice(start, end - start).to_pybytes()
    return data, (offsets - start).tobytes(), first
