"""Encode a corpus into token shards for training a language model:
`encode_dataset` writes them (on this machine's cores, or on Ray), `TokenShards`
reads them back.

The inputs are read by the corpus readers of counting (`bytepair.counts.sources`:
files, folders, globs, compressed files, JSON Lines, Parquet, fsspec URLs), and a
*document* is what they say (a whole text file, the text between two
`separator` strings, a JSON record, a Parquet row). Each document is encoded on
its own (special-token strings in it are plain text, as with
`encode_ordinary` and nanoGPT's ``prepare.py``) and the end-of-document token
follows it. The output folder::

    tokens/
      shard-00000-00000.bin          ids back to back, little-endian uint16 when the
                                     vocabulary fits (n_vocab <= 65536), else uint32:
                                     np.memmap(path, dtype=manifest["dtype"]) as is
      shard-00000-00000.offsets.npy  int64, documents + 1: document i is ids[o[i]:o[i+1]]
      ...
      _manifest.json                 written last: format and version, tokenizer
                                     SHA-256, dtype, eot, documents, tokens, and each
                                     shard's documents, tokens and SHA-256

With ``layout="megatron"`` each shard is instead Megatron-LM's pair
``shard-*.bin`` + ``shard-*.idx`` (the ``MMapIndexedDataset`` / ``IndexedDataset``
layout of megatron/core/datasets/indexed_dataset.py, one sequence per
document), which Megatron-LM and NeMo read by its prefix.

Shards and resumption: the inputs (in the order given) are grouped into
*tasks* of consecutive files of about 64 MiB (a file is never split), and task
t writes ``shard-t-k`` for k = 0, 1, ...: each shard closes after the document
that brings it to `shard_size` tokens. The grouping depends on the inputs
alone, so the output is the same for any engine and thread count. Every file is
written atomically; a finished task records its shards (with SHA-256) in
``_progress/task-t.json``; a rerun into the same folder with the same inputs
and settings skips the tasks whose record and shards check out and redoes the
rest (a redone task overwrites its own shards only); the manifest comes last.
The task itself, which every engine runs, is `bytepair.dataset.protocol`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from bytepair import _core
from bytepair.atomic import atomic_write
from bytepair.counts.sources import (
    FORMATS,
    MANIFEST,
    check_inputs,
    expand_inputs,
    input_size,
    is_remote,
)
from bytepair.dataset.protocol import ShardSpec, TaskRun, encode_task
from bytepair.dataset.reader import FORMAT, FORMAT_VERSION, TokenShards
from bytepair.encoding.text import check_encodable
from bytepair.folders import (
    PROGRESS,
    finished_record,
    plan_digest,
    read_plan,
    write_plan,
)
from bytepair.folders import sha256_file as _sha256_file
from bytepair.progress import ProgressBar

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

LAYOUTS = ("shards", "megatron")
ENGINES = ("local", "ray", "spark")
DEFAULT_SHARD_SIZE = 1 << 27  # tokens: 256 MiB of uint16 per shard
TASK_BYTES = 64 << 20  # input bytes grouped into one task


def tokenizer_sha256(tok: "Tokenizer") -> str:
    """SHA-256 of what fixes the ids: the regex, the special tokens and every
    (id, bytes) of the vocabulary, in id order (not of any file format)."""
    digest = hashlib.sha256()
    digest.update(json.dumps([tok.pattern_regex, sorted(tok.special_tokens.items())]).encode())
    # Each (id, length) as two little-endian u64, then the token's bytes, in
    # id order, built by the core in one buffer (a Python loop over the
    # tokens took 6-7 ms of every encode_dataset call, before any encoding).
    digest.update(_core.packed_vocab(tok.vocab))
    return digest.hexdigest()


def _eot_id(tok: "Tokenizer", eot: str | bool | None) -> int | None:
    """The id to append to each document: True = the tokenizer's
    ``<|endoftext|>`` if it has one; a str = that special token; None/False = none."""
    if eot is None or eot is False:
        return None
    if eot is True:
        return tok.special_tokens.get("<|endoftext|>")
    if eot not in tok.special_tokens:
        raise ValueError(
            f"eot {eot!r} is not a special token of this tokenizer "
            f"(it has {', '.join(map(repr, tok.special_tokens)) or 'none'})"
        )
    return tok.special_tokens[eot]


def _plan_tasks(sizes: Sequence[int], task_bytes: int) -> list[list[int]]:
    """Consecutive input indices grouped into tasks of about `task_bytes`."""
    tasks: list[list[int]] = [[]]
    load = 0
    for i, size in enumerate(sizes):
        if tasks[-1] and load + size > task_bytes:
            tasks.append([])
            load = 0
        tasks[-1].append(i)
        load += size
    return tasks if tasks[-1] else []


def _shard_intact(out_dir: str, shard: dict[str, Any]) -> bool:
    """True if both files of a shard exist with the SHA-256 the record holds."""
    try:
        return (
            _sha256_file(os.path.join(out_dir, shard["name"] + ".bin")) == shard["sha256"]
            and _sha256_file(os.path.join(out_dir, shard["index"])) == shard["index_sha256"]
        )
    except OSError:
        return False


def _finished_task(out_dir: str, task: int, paths: list[str]) -> dict[str, Any] | None:
    """The record of an earlier run's task `task` if it is complete: the same
    inputs, and every shard present with its checksum. Else None (redo it)."""
    return finished_record(
        out_dir, task, paths, lambda r: all(_shard_intact(out_dir, s) for s in r["shards"])
    )


# -- the driver ------------------------------------------------------------------


def encode_dataset(
    inputs: str | os.PathLike | Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    tokenizer: "Tokenizer | str | os.PathLike",
    *,
    field: str | None = None,
    column: str | None = None,
    separator: str | None = None,
    eot: str | bool | None = True,
    shard_size: int = DEFAULT_SHARD_SIZE,
    format: str | None = None,
    layout: str = "shards",
    errors: str = "strict",
    num_threads: int | None = None,
    engine: str = "local",
    progress: bool | None = None,
    task_bytes: int = TASK_BYTES,
    **engine_options: Any,
) -> "TokenShards":
    """Encode every document of `inputs` into token shards in `out_dir`.

    Args:
        inputs: files, folders (every non-hidden file below, sorted), globs or
            fsspec URLs, ``.gz``/``.bz2``/``.xz``/``.zst`` decompressed; the
            document order of the output is this order.
        out_dir: the output folder (created). If it holds an unfinished run
            with the same inputs and settings, that run is resumed.
        tokenizer: a `Tokenizer`, a tokenizer file or an encoding name
            (``gpt2``, ``cl100k_base``...).
        field: the JSON Lines key with the text (default ``text``).
        column: the Parquet column with the text (default ``text``).
        separator: text files: the string between two documents (e.g.
            ``"<|endoftext|>"``); default: each file is one document.
        eot: the special token appended to every document: True (default)
            the tokenizer's ``<|endoftext|>`` if it has one, a str names
            another special token, None or False appends none.
        shard_size: tokens per shard (a shard closes after the document that
            reaches it; the last shard of each task is shorter).
        format: the input format of every file, ``text``, ``jsonl`` or
            ``parquet``; default: each file's from its extension (``.jsonl``,
            ``.json``, ``.ndjson``, ``.parquet``, before ``.gz``...; else text).
        layout: ``shards`` (ids + offsets.npy per shard) or ``megatron``
            (Megatron-LM ``.bin`` + ``.idx`` per shard).
        errors: ``strict`` (bytes that are not UTF-8 raise, naming the file,
            record and byte offset) or ``replace`` (U+FFFD).
        num_threads: encoding threads (default: one per core); on Ray, the
            threads of each task (default 1, one CPU per task).
        engine: ``local`` (this process), ``ray`` or ``spark`` (one cluster
            task per task of inputs; `bytepair.dataset.on_ray`, `on_spark`).
        progress: a bar of input bytes and tokens on stderr (default: when
            stderr is a terminal).
        task_bytes: input bytes per task (tests use small ones).
        engine_options: ray: ``address``, ``runtime_env``, ``max_retries``;
            spark: ``spark`` (a SparkSession; default the active one or a local one).

    Returns:
        TokenShards: the finished dataset.

    Raises:
        FileNotFoundError, IsADirectoryError: a missing input, a glob matching nothing.
        FileExistsError: `out_dir` holds something else than a run of this
            dataset (another dataset, other settings, other files).
        ValueError: a bad argument, bad input (names the file, record and offset).
    """
    import numpy as np

    from bytepair.tokenizer import Tokenizer

    tok = tokenizer if isinstance(tokenizer, Tokenizer) else _load_tokenizer(os.fspath(tokenizer))
    out_dir = os.fspath(out_dir)
    if is_remote(out_dir):
        raise ValueError(f"{out_dir}: token shards are written to a local (or mounted) folder")
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: expected one of {', '.join(ENGINES)}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r}: expected one of {', '.join(LAYOUTS)}")
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size={shard_size!r} must be a positive number of tokens")
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors={errors!r}: expected 'strict' or 'replace'")
    if separator == "":
        raise ValueError("separator must not be empty")
    if separator is not None:
        check_encodable(separator, "separator")
    paths = expand_inputs(inputs, out_dir)
    check_inputs(paths)
    paths = [p if is_remote(p) else os.path.abspath(p) for p in paths]
    if format is not None and format not in FORMATS:
        raise ValueError(f"format={format!r}: expected one of {', '.join(FORMATS)}")
    if separator is not None and format not in (None, "text"):
        raise ValueError(
            f"separator is for text files; {format} inputs have one document per record"
        )
    dtype = "uint16" if tok.n_vocab <= 1 << 16 else "int32" if layout == "megatron" else "uint32"
    spec = ShardSpec(
        tokenizer_sha256(tok),
        format,
        field or "text",
        column or "text",
        separator,
        errors,
        _eot_id(tok, eot),
        dtype,
        shard_size,
        layout,
    )
    sizes = [input_size(p) for p in paths]
    tasks = [[paths[i] for i in group] for group in _plan_tasks(sizes, task_bytes)]
    plan = {"spec": asdict(spec), "tasks": tasks, "sizes": sizes}
    if _already_done(out_dir, plan):
        return TokenShards.open(out_dir)
    _start_or_resume(out_dir, plan)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    records: list[dict[str, Any] | None] = [
        _finished_task(out_dir, t, task) for t, task in enumerate(tasks)
    ]
    run = TaskRun(
        [(t, tasks[t]) for t, r in enumerate(records) if r is None], spec, tok, out_dir, num_threads
    )
    with ProgressBar(sum(sizes), "encoding", unit="B", scale=True, enabled=show) as bar:
        counter = _Progress(bar, [r for r in records if r is not None])
        if engine == "ray":
            from bytepair.dataset.on_ray import encode_tasks_on_ray

            finished = encode_tasks_on_ray(run, counter.task_done, **engine_options)
        elif engine == "spark":
            from bytepair.dataset.on_spark import encode_tasks_on_spark

            finished = encode_tasks_on_spark(run, counter.task_done, **engine_options)
        else:
            if engine_options:
                raise TypeError(
                    f"unexpected options for the local engine: {', '.join(engine_options)}"
                )
            finished = {
                t: encode_task(
                    t, paths, spec, tok, out_dir, num_threads, on_batch=counter.batch_done
                )
                for t, paths in run.todo
            }
        records = [finished.get(t, r) for t, r in enumerate(records)]
    manifest = _build_manifest(spec, plan, records, np.dtype(dtype).name)
    atomic_write(os.path.join(out_dir, MANIFEST), (json.dumps(manifest, indent=1) + "\n").encode())
    shutil.rmtree(os.path.join(out_dir, PROGRESS), ignore_errors=True)
    return TokenShards.open(out_dir)


class _Progress:
    """The bar of input bytes, with the tokens written after it: fed per batch
    (local engine) or per finished task (cluster engines)."""

    def __init__(self, bar: ProgressBar, finished: list[dict[str, Any]]):
        self.bar = bar
        self.bytes = sum(r["bytes"] for r in finished)
        self.tokens = sum(r["tokens"] for r in finished)
        self.batch_done(0, 0)

    def batch_done(self, nbytes: int, tokens: int) -> None:
        self.bytes += nbytes
        self.tokens += tokens
        self.bar.update_to(self.bytes)
        self.bar.set_postfix(tokens=f"{self.tokens:,}")

    def task_done(self, record: dict[str, Any]) -> None:
        self.batch_done(record["bytes"], record["tokens"])


def _load_tokenizer(name_or_path: str) -> "Tokenizer":
    """A tokenizer file, else an encoding name (``cl100k_base``)."""
    from bytepair.formats.by_name import get_encoding, list_encodings
    from bytepair.tokenizer import Tokenizer

    if not os.path.exists(name_or_path) and name_or_path in list_encodings():
        return get_encoding(name_or_path)
    return Tokenizer.load(name_or_path)


def _already_done(out_dir: str, plan: dict[str, Any]) -> bool:
    """True if `out_dir` holds this very dataset, finished; FileExistsError if
    it holds another one."""
    path = os.path.join(out_dir, MANIFEST)
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        manifest = json.load(f)
    if manifest.get("format") == FORMAT and manifest.get("plan") == plan_digest(plan):
        return True
    raise FileExistsError(
        f"{out_dir}: holds another dataset or word counts ({MANIFEST}); "
        "choose another output folder or remove it"
    )


def _start_or_resume(out_dir: str, plan: dict[str, Any]) -> None:
    """Create `out_dir` (empty or missing) with its plan, or check that the
    unfinished run in it had the same plan (then its finished tasks are kept)."""
    earlier = read_plan(out_dir)
    if earlier is not None:
        if earlier == plan:
            return
        raise FileExistsError(
            f"{out_dir}: holds an unfinished run with other inputs or settings; "
            "rerun that command to finish it, or remove the folder"
        )
    if os.path.isdir(out_dir) and os.listdir(out_dir):
        raise FileExistsError(
            f"{out_dir}: not empty and not a dataset of bytepair; choose an empty or new folder"
        )
    write_plan(out_dir, plan)


def _build_manifest(
    spec: ShardSpec, plan: dict[str, Any], records: list[Any], dtype: str
) -> dict[str, Any]:
    from bytepair import __version__

    shards = [s for r in records for s in r["shards"]]
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "bytepair_version": __version__,
        "layout": spec.layout,
        "tokenizer_sha256": spec.tokenizer_sha256,
        "dtype": dtype,
        "byteorder": "little",
        "eot": spec.eot,
        "documents": sum(r["documents"] for r in records),
        "tokens": sum(r["tokens"] for r in records),
        "bytes": sum(r["bytes"] for r in records),
        "shard_size": spec.shard_size,
        "input": {
            "format": spec.format or "by extension",
            "field": spec.field,
            "column": spec.column,
            "separator": spec.separator,
            "errors": spec.errors,
            "files": sum(len(t) for t in plan["tasks"]),
        },
        "plan": plan_digest(plan),
        "shards": shards,
    }
