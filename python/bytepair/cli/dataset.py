"""The shell side of token datasets: ``bytepair encode INPUT... -o OUT_DIR``
(when it writes shards rather than one .npy; see `writes_dataset`) and
``bytepair shards inspect OUT_DIR``."""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

from bytepair.cli.args import byte_size, message, progress_bars
from bytepair.counts.sources import FORMATS
from bytepair.dataset.shards import (
    DEFAULT_SHARD_SIZE,
    ENGINES,
    LAYOUTS,
    TokenShards,
    encode_dataset,
)

# Flags that only a dataset has: giving one makes `encode` write a dataset.
_DATASET_FLAGS = (
    "shard_size",
    "layout",
    "input_format",
    "field",
    "column",
    "separator",
    "eot",
    "no_eot",
    "engine",
    "ray_address",
)


def writes_dataset(args: argparse.Namespace) -> bool:
    """`bytepair encode` writes a dataset folder unless it is given exactly
    one FILE (not a folder or glob), an output that is ``-`` or not a folder,
    and no dataset flag: then it writes one .npy, as it always did."""
    inputs, out = args.inputs, args.output
    return (
        len(inputs) > 1
        or os.path.isdir(inputs[0])
        or (glob.has_magic(inputs[0]) and not os.path.exists(inputs[0]))
        or (out != "-" and (os.path.isdir(out) or out.endswith(os.sep)))
        or any(getattr(args, flag) not in (None, False) for flag in _DATASET_FLAGS)
    )


def cmd_encode_dataset(args: argparse.Namespace) -> int:
    if args.output == "-":
        raise ValueError(
            "a dataset (several INPUTs, a folder, or a dataset flag) is written to a folder: "
            "give -o OUT_DIR, not -o -"
        )
    if args.output.endswith(".npy"):
        raise ValueError(
            f"-o {args.output}: a dataset is a folder of shards; give a folder name "
            "(one FILE and no dataset flag writes a .npy)"
        )
    if args.dropout:
        raise ValueError("--dropout is for one FILE to .npy, not for datasets")
    if args.special not in (None, "text"):
        raise ValueError(
            f"--special {args.special}: a dataset encodes special-token strings in documents as "
            "plain text (--special text); the end-of-document token is --eot"
        )
    if args.eot is not None and args.no_eot:
        raise ValueError("give --eot TOKEN or --no-eot, not both")
    if args.separator is not None and args.separator == "":
        raise ValueError("--separator must not be empty")
    options = {"address": args.ray_address} if args.ray_address else {}
    if options and args.engine != "ray":
        raise ValueError(
            f"--ray-address is for --engine ray, not --engine {args.engine or 'local'}"
        )
    # NumPy's OpenBLAS starts a thread per core when imported, which spins
    # for ~0.1 s looking for work this command never gives it, taking CPU
    # from the encoding threads (enwiki.txt, one document per line, whole
    # process: 810 -> 727 ms of CPU on one thread, 856 -> 801 on two). It
    # works only before NumPy is imported, and only if the user set nothing.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    start = time.perf_counter()
    try:
        ds = encode_dataset(
            args.inputs,
            args.output,
            args.tokenizer,
            field=args.field,
            column=args.column,
            separator=args.separator,
            eot=False if args.no_eot else args.eot or True,
            shard_size=args.shard_size or DEFAULT_SHARD_SIZE,
            format=args.input_format,
            layout=args.layout or "shards",
            errors=args.errors,
            num_threads=args.threads,
            engine=args.engine or "local",
            progress=progress_bars(args),
            **options,
        )
    except ValueError as e:
        raise ValueError(_in_cli_words(str(e))) from None
    m, seconds = ds.manifest, time.perf_counter() - start
    message(
        args,
        f"wrote {ds.path}: {m['documents']:,} documents, {m['tokens']:,} tokens ({m['dtype']}) in "
        f"{len(m['shards'])} shards, {m['bytes'] / max(m['tokens'], 1):.3f} bytes/token, "
        f"{m['tokens'] / max(seconds, 1e-9):,.0f} tokens/s",
    )
    return 0


def _in_cli_words(text: str) -> str:
    """A ValueError of `encode_dataset` with its keyword names as flags."""
    for word, flag in (
        ("shard_size=", "--shard-size "),
        ("separator", "--separator"),
        ("eot ", "--eot "),
        ("layout=", "--format "),
        ("format=", "--input-format "),
        ("field (", "--field ("),
        ("column (", "--column ("),
        ("errors=", "--errors "),
    ):
        text = text.replace(word, flag)
    return text


def format_shards(ds: TokenShards) -> str:
    """What `bytepair shards inspect` prints."""
    m = ds.manifest
    sizes = [s["tokens"] for s in m["shards"]]
    return "\n".join(
        [
            f"{ds.path}: token shards ({m['layout']} layout, bytepair {m['bytepair_version']})",
            f"  tokenizer       sha256 {m['tokenizer_sha256'][:16]}...",
            f"  dtype           {m['dtype']} (little-endian), eot {m['eot']}",
            f"  input           {m['input']['files']} files, {m['input']['format']}, "
            f"{m['bytes']:,} bytes",
            f"  documents       {m['documents']:,}",
            f"  tokens          {m['tokens']:,} ({m['bytes'] / max(m['tokens'], 1):.3f} "
            "bytes/token)",
            f"  shards          {len(sizes)} of "
            f"{min(sizes, default=0):,}-{max(sizes, default=0):,} tokens (target "
            f"{m['shard_size']:,})",
        ]
    )


def cmd_shards_inspect(args: argparse.Namespace) -> int:
    ds = TokenShards.open(args.dataset)
    if args.verify:
        ds.verify()
    print(format_shards(ds))
    if args.verify:
        print("  checksums       all shards match the manifest")
    return 0


def add_dataset_flags(e: argparse.ArgumentParser) -> None:
    """The flags `bytepair encode` takes for a dataset."""
    g = e.add_argument_group(
        "datasets (several INPUTs, a folder or glob, -o an existing folder or ending in /, or any "
        "flag below: writes a folder of token shards and _manifest.json, resumable)"
    )
    g.add_argument(
        "--shard-size",
        type=byte_size,
        default=None,
        metavar="N",
        help=f"tokens per shard, e.g. 100M (default {DEFAULT_SHARD_SIZE:,}; K/M/G are powers of "
        "1024)",
    )
    g.add_argument(
        "--format",
        dest="layout",
        choices=LAYOUTS,
        default=None,
        help="shards: ids + offsets.npy per shard (default); megatron: Megatron-LM .bin/.idx per "
        "shard",
    )
    g.add_argument(
        "--input-format",
        choices=FORMATS,
        default=None,
        help="default: each file's from its extension (.jsonl, .parquet, before "
        ".gz/.bz2/.xz/.zst), else text",
    )
    g.add_argument(
        "--field", default=None, metavar="KEY", help="JSON Lines key with the text (default: text)"
    )
    g.add_argument(
        "--column", default=None, metavar="COL", help="Parquet column with the text (default: text)"
    )
    g.add_argument(
        "--separator",
        default=None,
        metavar="S",
        help="text files: the string between two documents (default: a file is one document)",
    )
    g.add_argument(
        "--eot",
        default=None,
        metavar="TOKEN",
        help="special token after each document (default: <|endoftext|> if the tokenizer has it)",
    )
    g.add_argument("--no-eot", action="store_true", help="no token after each document")
    g.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="local (default: this machine's cores), ray or spark",
    )
    g.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to join (with --engine ray)",
    )


def register_shards(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser(
        "shards", help="inspect token-shard datasets (bytepair encode INPUT... -o OUT_DIR)"
    )
    s = p.add_subparsers(dest="shards_command", required=True)
    i = s.add_parser("inspect", help="documents, tokens, dtype and shards of a dataset")
    i.add_argument("dataset", metavar="OUT_DIR")
    i.add_argument("--verify", action="store_true", help="also check every shard's SHA-256")
    i.set_defaults(run=cmd_shards_inspect)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run `bytepair encode` or `bytepair shards`")
