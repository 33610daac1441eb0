"""Huge and pathological inputs: bytepair's time and peak memory as input grows.

Three parts, each in fresh child processes (peak RSS = the child's VmHWM):

* ``--train-sizes``: training (vocab 32000, ``<|endoftext|>``, all cores) on
  mixed corpora of growing size, built by concatenating the files of
  ../shared/corpora (``--mix all``: every file, ~130 MB; ``--mix english``: the
  English prose, ~73 MB) split into paragraphs, shuffled differently for each
  copy (so no two copies are the same text, but the distinct words stay those
  of the sources). bytepair against HuggingFace tokenizers (and rustbpe if asked) on
  the same file: seconds, MB/s, seconds per GB, peak RSS.
* ``--pathological``: 10, 50, 100 MB of (a) enwiki with every whitespace
  character removed (no newline at all) and (b) one repeated character, trained
  (vocab 32000) and encoded (with the GPT-2 ranks); MB/s at each size shows
  whether time is linear.
* ``--encode-size``: ``bytepair encode`` (the CLI: streamed, ids to a .npy) on
  the mixed corpus of that size: MB/s and peak RSS, which must not grow with
  the file.

Generated files go to bench/out/huge/ (git-ignored) and are reused.

Usage::

    python bench/bench_huge.py --mix english --train-sizes 4G               # vs HF on 4 GB (HF: ~30
    min) python bench/bench_huge.py --train-sizes 10M 100M 1G 4G --tools bytepair --encode-size 4G
    python bench/bench_huge.py --pathological 10M 50M 100M
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import common
from common import parse_size, size_label
from common import write_new as _write_new

HUGE_DIR = common.OUT_DIR / "huge"
MIXES = common.MIXES


# ---- building inputs ---------------------------------------------------------------


def mixed_corpus(size: int, mix: str = "all") -> Path:
    """`size` bytes of the paragraphs of the `mix` corpus files, reshuffled for each copy."""
    name = "mixed" if mix == "all" else mix
    return _write_new(
        HUGE_DIR / f"{name}-{size_label(size)}.txt", common.shuffled_paragraphs(MIXES[mix], size)
    )


def no_whitespace_corpus(size: int) -> Path:
    """enwiki with every whitespace byte removed, repeated up to `size` bytes: one
    line of words glued together, cut only at letter|punctuation positions."""

    def chunks():
        text = b"".join(common.corpus_path("enwiki.txt").read_bytes().split())
        left = size
        while left > 0:
            piece = text[:left]
            if len(piece) < len(text):  # never end inside a UTF-8 sequence
                piece = piece.decode("utf-8", "ignore").encode("utf-8")
                left = len(piece)
            yield piece
            left -= len(piece)

    return _write_new(HUGE_DIR / f"nospace-{size_label(size)}.txt", chunks())


def one_char_corpus(size: int) -> Path:
    """`size` bytes of "a": one pre-token of `size` bytes."""
    block = b"a" * (1 << 20)
    return _write_new(
        HUGE_DIR / f"onechar-{size_label(size)}.txt",
        (block[: min(len(block), size - k)] for k in range(0, size, len(block))),
    )


# ---- child side --------------------------------------------------------------------


def child_encode_cli(path: str, tokenizer: str) -> dict:
    """`bytepair encode FILE -t TOK -o ...npy` in this process."""
    from bytepair.cli import main

    out = HUGE_DIR / "ids.npy"
    start = time.perf_counter()
    rc = main(["encode", path, "-t", tokenizer, "-o", str(out), "--quiet"])
    seconds = time.perf_counter() - start
    out.unlink()
    assert rc == 0
    return {"seconds": seconds}


def child_encode_api(path: str, tokenizer: str) -> dict:
    """Tokenizer.encode on the whole file, one call, one thread (text read first)."""
    import bytepair

    tok = bytepair.Tokenizer.load(tokenizer)
    text = Path(path).read_text(encoding="utf-8")
    start = time.perf_counter()
    ids = tok.encode_ordinary(text)
    seconds = time.perf_counter() - start
    assert tok.decode(ids[:1000]) == text[: len(tok.decode(ids[:1000]))]
    return {"seconds": seconds, "tokens": len(ids)}


def child_main(args: argparse.Namespace) -> None:
    job = {"encode-cli": child_encode_cli, "encode-api": child_encode_api}[args.job]
    result = job(args.path, args.tokenizer)
    result["rss_mib"] = common.peak_rss_mib()
    common.emit(result)


# ---- parent side -----------------------------------------------------------------


def run_job(job: str, path: Path, tokenizer: Path) -> dict:
    return common.run_child(
        Path(__file__), ["--job", job, "--path", str(path), "--tokenizer", str(tokenizer)]
    )


def train_row(tool: str, path: Path, vocab_size: int, threads: int | None) -> dict:
    import bench_train

    common.log(f"train {tool} on {path.name} ...")
    r = bench_train.run_child_once(tool, path, vocab_size, threads, None)
    r["mb"] = path.stat().st_size / common.MB
    common.log(
        f"  {r['seconds']:.1f} s, {r['mb'] / r['seconds']:.1f} MB/s, peak RSS {r['rss_mib']:.0f} "
        "MiB"
    )
    return r


def train_sizes(
    sizes: list[int], mix: str, tools: list[str], vocab_size: int, threads: int | None
) -> tuple[str, dict]:
    results: dict = {}
    rows = []
    for size in sizes:
        path = mixed_corpus(size, mix)
        per_tool = {tool: train_row(tool, path, vocab_size, threads) for tool in tools}
        results[size_label(size)] = per_tool
        ours = per_tool.get("bytepair")
        for tool, r in per_tool.items():
            rows.append(
                [
                    path.name,
                    tool,
                    common.fmt(r["seconds"], 1),
                    common.fmt(r["mb"] / r["seconds"], 1),
                    common.fmt(r["seconds"] / (r["mb"] / 1000), 1),
                    common.fmt(r["rss_mib"], 0),
                    ""
                    if tool == "bytepair" or ours is None
                    else common.fmt(common.ratio(r["seconds"], ours["seconds"]), 1) + "x",
                ]
            )
    table = common.markdown_table(
        ["corpus", "tool", "seconds", "MB/s", "s per GB", "peak RSS MiB", "time vs bytepair"], rows
    )
    return table, results


def pathological(sizes: list[int], vocab_size: int, tokenizer: Path) -> tuple[str, dict]:
    results: dict = {}
    rows = []
    for kind, build in (
        ("no whitespace", no_whitespace_corpus),
        ("one repeated char", one_char_corpus),
    ):
        for size in sizes:
            path = build(size)
            trained = train_row("bytepair", path, vocab_size, None)
            common.log(f"encode {path.name} ...")
            encoded = run_job("encode-api", path, tokenizer)
            mb = path.stat().st_size / common.MB
            results[f"{kind} {size_label(size)}"] = {"train": trained, "encode": encoded}
            rows.append(
                [
                    kind,
                    size_label(size),
                    common.fmt(mb / trained["seconds"], 1),
                    common.fmt(trained["rss_mib"], 0),
                    common.fmt(mb / encoded["seconds"], 1),
                    common.fmt(encoded["rss_mib"], 0),
                ]
            )
    table = common.markdown_table(
        [
            "input",
            "size",
            "train MB/s",
            "train peak RSS MiB",
            "encode MB/s (1 call, 1 thread)",
            "encode peak RSS MiB",
        ],
        rows,
    )
    return table, results


def encode_file(size: int, mix: str, tokenizer: Path) -> tuple[str, dict]:
    path = mixed_corpus(size, mix)
    common.log(f"bytepair encode {path.name} ...")
    r = run_job("encode-cli", path, tokenizer)
    mb = path.stat().st_size / common.MB
    table = common.markdown_table(
        ["input", "MB", "seconds", "MB/s", "peak RSS MiB"],
        [
            [
                path.name,
                common.fmt(mb, 0),
                common.fmt(r["seconds"], 1),
                common.fmt(mb / r["seconds"], 1),
                common.fmt(r["rss_mib"], 0),
            ]
        ],
    )
    return table, r


def gpt2_tokenizer_file() -> Path:
    """The GPT-2 ranks (../shared/corpora/cs336 vocab.json + merges.txt) as tokenizer.json."""
    path = HUGE_DIR / "gpt2.json"
    if not path.exists():
        import bytepair

        cs336 = common.DEFAULT_CORPORA / "cs336"
        tok = bytepair.Tokenizer.from_gpt2_files(
            cs336 / "gpt2_vocab.json", cs336 / "gpt2_merges.txt"
        )
        HUGE_DIR.mkdir(parents=True, exist_ok=True)
        tok.save(path)
    return path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--train-sizes", nargs="*", type=parse_size, default=[], metavar="SIZE")
    p.add_argument(
        "--mix", choices=sorted(MIXES), default="all", help="corpus files to build inputs from"
    )
    p.add_argument(
        "--tools", nargs="+", default=["bytepair", "hf"], choices=["bytepair", "hf", "rustbpe"]
    )
    p.add_argument("--pathological", nargs="*", type=parse_size, default=[], metavar="SIZE")
    p.add_argument("--encode-size", type=parse_size, default=None, metavar="SIZE")
    p.add_argument("--vocab-size", type=int, default=32000)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", default="huge.json")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--tokenizer", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    sys.path.insert(0, str(Path(__file__).parent))
    print(f"machine: {os.cpu_count()} cores; bytepair build {common.bytepair_build()}")
    raw: dict = {}
    if args.train_sizes:
        table, raw["train"] = train_sizes(
            args.train_sizes, args.mix, args.tools, args.vocab_size, args.threads
        )
        print(
            f"\n### Training on {args.mix!r} corpora, vocab {args.vocab_size}\n\n{table}",
            flush=True,
        )
    if args.pathological:
        table, raw["pathological"] = pathological(
            args.pathological, args.vocab_size, gpt2_tokenizer_file()
        )
        print(f"\n### Pathological inputs\n\n{table}", flush=True)
    if args.encode_size:
        table, raw["encode"] = encode_file(args.encode_size, args.mix, gpt2_tokenizer_file())
        print(f"\n### bytepair encode (CLI, streamed) with the GPT-2 ranks\n\n{table}", flush=True)
    common.log(f"raw results: {common.save_json(args.json, raw)}")


if __name__ == "__main__":
    main()
