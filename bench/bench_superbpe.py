"""SuperBPE benchmarks (issue 35): encoding speed, training time and memory,
and compression, each printed as a markdown table.

``encode``: a SuperBPE and an ordinary BPE tokenizer of the same vocabulary
size are trained on the first ``--train-mb`` MB of each corpus (cached in
bench/out), and ``--encode-mb`` MB from the end of the corpus (text neither
saw) is encoded in one call on one thread: bytepair with the SuperBPE file,
HF tokenizers with the same tokenizer.json (``encode(text,
add_special_tokens=False)``), and bytepair with the BPE file. Each measurement
is a fresh child process, the tools interleaved and their order rotated every
round; medians of ``--rounds``. The ids of bytepair and HF must be equal
(checked in the first round). Throughput in MB/s of UTF-8 input.

``train``: ``bytepair.train(files, V, superbpe_transition=T)`` on a file, with
and without ``--max-memory``: wall time (each stage's counting and merging),
peak RSS of the child, what the budget left out of stage 2's sample. An input
of ``--huge-gb`` GB is made from the corpora (shuffled paragraphs, as
bench_huge makes them) in ``--huge-dir``, outside the project, and deleted
after unless ``--keep``.

``quality``: bytes per token on held-out text for BPE and SuperBPE at equal
vocabulary sizes: each corpus is cut at 90% (at a line), both train on the
first part and encode the rest. ``--transitions`` are fractions of the
vocabulary where stage 2 starts. A run that stops early (the corpus holds no
pair to merge) is marked: its vocabulary is too big for the corpus.

Usage::

    python bench/bench_superbpe.py encode --corpus enwiki code --vocab 32000 --rounds 5
    python bench/bench_superbpe.py train --corpus enwiki --vocab 32000 --max-memory 256M
    python bench/bench_superbpe.py train --huge-gb 4 --vocab 32000 --max-memory 2G
    python bench/bench_superbpe.py quality --corpus enwiki code --vocab-sizes 32000 64000 128000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

from common import (
    MB,
    MIXES,
    OUT_DIR,
    corpus_label,
    corpus_path,
    emit,
    median,
    parse_size,
    peak_rss_mib,
    run_child,
    shuffled_paragraphs,
    thread_env,
    write_new,
)

SCRIPT = Path(__file__).resolve()
EOT = "<|endoftext|>"


# ---- text and tokenizers ----------------------------------------------------------------


def head_tail(path: Path, head_mb: float | None, tail_mb: float) -> tuple[str, str]:
    """The first `head_mb` MB (None: all but the tail) and the last `tail_mb`
    MB of a corpus, each cut at a line."""
    data = path.read_bytes()
    tail_at = data.rfind(b"\n", 0, max(len(data) - int(tail_mb * MB), 0)) + 1
    head = data[:tail_at] if head_mb is None else data[: int(head_mb * MB)]
    head = head[: head.rfind(b"\n") + 1] if b"\n" in head else head
    return head.decode("utf-8"), data[tail_at:].decode("utf-8")


def cached_tokenizer(path: Path, kind: str, vocab: int, transition: float, train_mb: float) -> Path:
    """tokenizer.json of a `kind` ("bpe" or "superbpe") tokenizer trained on
    the first `train_mb` MB of `path`; trained once, then read from bench/out."""
    name = f"{corpus_label(path)}-{kind}-{vocab}-{train_mb:g}MB"
    if kind == "superbpe":
        name += f"-t{transition:g}"
    out = OUT_DIR / "superbpe" / f"{name}.json"
    if not out.exists():
        import bytepair

        text, _ = head_tail(path, train_mb, 0)
        extra = {"superbpe_transition": round(vocab * transition)} if kind == "superbpe" else {}
        tok = bytepair.train_from_iterator(
            [text], vocab, special_tokens=[EOT], progress=False, **extra
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        tok.save(out)
    return out


# ---- encode ----------------------------------------------------------------------------------


def encode_child(args: argparse.Namespace) -> None:
    """One timed single-thread encode of the held-out text by one tool."""
    _, text = head_tail(Path(args.path), None, args.encode_mb)
    if args.tool == "hf":
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(args.tokenizer)
        tok.encode("warm up", add_special_tokens=False)
        start = time.perf_counter()
        ids = tok.encode(text, add_special_tokens=False).ids
    else:
        import bytepair

        tok = bytepair.Tokenizer.load(args.tokenizer)
        tok.encode_ordinary("warm up")
        start = time.perf_counter()
        ids = tok.encode_ordinary(text)
    seconds = time.perf_counter() - start
    result = {"seconds": seconds, "bytes": len(text.encode()), "tokens": len(ids)}
    result["peak_rss_mib"] = peak_rss_mib()
    if args.ids_out:
        Path(args.ids_out).write_text(",".join(map(str, ids)))
    emit(result)


def run_encode(args: argparse.Namespace) -> str:
    rows = []
    for name in args.corpus:
        path = corpus_path(name)
        sb = cached_tokenizer(path, "superbpe", args.vocab, args.transition, args.train_mb)
        bpe = cached_tokenizer(path, "bpe", args.vocab, args.transition, args.train_mb)
        tools = [
            ("bytepair superbpe", "bytepair", sb),
            ("hf superbpe", "hf", sb),
            ("bytepair bpe", "bytepair", bpe),
        ]
        times: dict[str, list[float]] = {t[0]: [] for t in tools}
        info: dict[str, dict] = {}
        for r in range(args.rounds):
            order = tools[r % len(tools) :] + tools[: r % len(tools)]
            for label, tool, file in order:
                child = ["encode", "--path", str(path), "--tool", tool, "--tokenizer", str(file)]
                child += ["--encode-mb", str(args.encode_mb)]
                if r == 0 and label != "bytepair bpe":
                    child += ["--ids-out", str(OUT_DIR / "superbpe" / f"ids-{tool}.txt")]
                res = run_child(SCRIPT, child, thread_env(1))
                times[label].append(res["seconds"])
                info[label] = res
        same = (OUT_DIR / "superbpe" / "ids-bytepair.txt").read_text() == (
            OUT_DIR / "superbpe" / "ids-hf.txt"
        ).read_text()
        if not same:
            raise SystemExit(f"{name}: bytepair and HF ids differ")
        mbps = {k: info[k]["bytes"] / median(v) / MB for k, v in times.items()}
        bpt = {k: info[k]["bytes"] / info[k]["tokens"] for k in info}
        rows.append(
            f"| {corpus_label(path)} | {mbps['bytepair superbpe']:.1f} | {mbps['hf superbpe']:.2f} "
            f"| {mbps['bytepair superbpe'] / mbps['hf superbpe']:.1f}x "
            f"| {mbps['bytepair bpe']:.1f} "
            f"| {mbps['bytepair superbpe'] / mbps['bytepair bpe']:.2f} "
            f"| {bpt['bytepair superbpe']:.2f} / {bpt['bytepair bpe']:.2f} "
            f"| {info['bytepair superbpe']['peak_rss_mib']:.0f} "
            f"/ {info['hf superbpe']['peak_rss_mib']:.0f} |"
        )
    head = (
        f"vocabulary {args.vocab:,} "
        f"(SuperBPE: stage 2 from {round(args.vocab * args.transition):,}), "
        f"trained on {args.train_mb:g} MB; {args.encode_mb:g} MB held out, one call, one thread; "
        f"medians of {args.rounds} rounds; ids equal to HF\n\n"
        "| corpus | bytepair SuperBPE MB/s | HF SuperBPE MB/s | bytepair / HF | bytepair BPE MB/s "
        "| SuperBPE / BPE speed | bytes/token SuperBPE / BPE | peak MiB bytepair / HF |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    return head + "\n" + "\n".join(rows)


# ---- train --------------------------------------------------------------------------------


def train_child(args: argparse.Namespace) -> None:
    """One SuperBPE training run on a file, timed, with the child's peak RSS."""
    import bytepair

    warnings.simplefilter("ignore")
    start = time.perf_counter()
    tok = bytepair.train(
        args.path,
        args.vocab,
        superbpe_transition=round(args.vocab * args.transition),
        special_tokens=[EOT],
        max_memory=parse_size(args.max_memory[0]) if args.max_memory else None,
        progress=False,
    )
    s = tok.training_stats
    emit(
        {
            "seconds": time.perf_counter() - start,
            "count_seconds": s.count_seconds,
            "merge_seconds": s.merge_seconds,
            "peak_rss_mib": peak_rss_mib(),
            "bytes": s.input_bytes,
            "pieces": s.superbpe_pieces,
            "pruned_pieces": s.superbpe_pruned_pieces,
            "pruned_occurrences": s.superbpe_pruned_occurrences,
            "threshold": s.superbpe_sample_threshold,
            "merges": s.merges,
            "superbpe_merges": s.superbpe_merges,
        }
    )


def shuffled_sentences(names: list[str], size: int, seed: int = 0):
    """`size` bytes of lines of 2 to 8 sentences drawn at random from the
    corpus files `names` (a sentence: text up to ". "): the words and phrases
    are the corpora's, but nearly every line, and so nearly every SuperBPE
    stage-2 piece, is new, as in a real corpus many times the corpora's size
    (paragraphs shuffled whole would repeat each line once per copy)."""
    import random

    sentences = []
    for paragraph in shuffled_paragraphs(names, sum(corpus_path(n).stat().st_size for n in names)):
        for line in paragraph.split(b"\n"):
            sentences += [s.strip() for s in line.split(b". ") if s.strip()]
    rng = random.Random(seed)
    left = size
    while left > 0:
        line = b". ".join(rng.choices(sentences, k=rng.randint(2, 8)))[: max(left - 2, 0)]
        line = line.decode("utf-8", "ignore").encode("utf-8") + b".\n"
        left -= len(line)
        yield line


def huge_input(args: argparse.Namespace) -> Path:
    """`--huge-gb` GB of shuffled corpus sentences in `--huge-dir` (made once)."""
    size = int(args.huge_gb * 10**9)
    path = Path(args.huge_dir) / f"superbpe-{args.mix}-{args.huge_gb:g}GB.txt"
    return write_new(path, shuffled_sentences(list(MIXES[args.mix]), size))


def run_train(args: argparse.Namespace) -> str:
    paths = [corpus_path(c) for c in args.corpus]
    made = None
    if args.huge_gb:
        made = huge_input(args)
        paths.append(made)
    rows = []
    try:
        for path in paths:
            for budget in [None] * (not args.bounded_only) + args.max_memory:
                child = ["train", "--path", str(path), "--vocab", str(args.vocab)]
                child += ["--transition", str(args.transition)]
                if budget:
                    child += ["--max-memory", budget]
                r = run_child(SCRIPT, child, thread_env(args.threads))
                sample = (
                    f"{r['pruned_pieces']:,} left out, threshold {r['threshold']}"
                    if r["pruned_pieces"]
                    else "all kept"
                )
                rows.append(
                    f"| {path.name} ({r['bytes'] / MB:,.0f} MB) | {budget or 'none'} "
                    f"| {r['seconds']:.0f} | {r['count_seconds']:.0f} / {r['merge_seconds']:.0f} "
                    f"| {r['peak_rss_mib']:,.0f} "
                    f"| {r['pieces']:,} | {sample} |"
                )
                print(rows[-1], file=sys.stderr, flush=True)
    finally:
        if made is not None and not args.keep:
            made.unlink()
    head = (
        f"bytepair.train(superbpe_transition={round(args.vocab * args.transition):,}), "
        f"vocabulary {args.vocab:,}, {args.threads or os.cpu_count()} threads\n\n"
        "| input | max_memory | seconds | counting / merging s | peak RSS MiB "
        "| stage-2 pieces kept | stage-2 sample |\n|---|---|---:|---:|---:|---:|---|"
    )
    return head + "\n" + "\n".join(rows)


# ---- quality --------------------------------------------------------------------------------


def quality_child(args: argparse.Namespace) -> None:
    """Train one tokenizer on 90% of a corpus and measure bytes/token on the rest."""
    import bytepair

    warnings.simplefilter("ignore")
    data = Path(args.path).read_bytes()
    cut = data.rfind(b"\n", 0, int(len(data) * 0.9)) + 1
    train, held = data[:cut].decode(), data[cut:].decode()
    extra = {}
    if args.transition:
        extra["superbpe_transition"] = round(args.vocab * args.transition)
    start = time.perf_counter()
    tok = bytepair.train_from_iterator([train], args.vocab, progress=False, **extra)
    seconds = time.perf_counter() - start
    tokens = len(tok.encode_ordinary(held))
    emit(
        {
            "bytes_per_token": len(held.encode()) / tokens,
            "vocab_size": tok.vocab_size,
            "stopped_early": tok.training_stats.stopped_early,
            "seconds": seconds,
            "held_out_bytes": len(held.encode()),
        }
    )


def run_quality(args: argparse.Namespace) -> str:
    rows = []
    for name in args.corpus:
        path = corpus_path(name)
        for vocab in args.vocab_sizes:
            base = ["quality", "--path", str(path), "--vocab", str(vocab)]
            bpe = run_child(SCRIPT, base, thread_env(args.threads))
            cells = []
            for t in args.transitions:
                sb = run_child(SCRIPT, base + ["--transition", str(t)], thread_env(args.threads))
                gain = sb["bytes_per_token"] / bpe["bytes_per_token"] - 1
                short = " (stopped early)" if sb["stopped_early"] else ""
                cells.append(f"{sb['bytes_per_token']:.3f} ({gain:+.1%}){short}")
            short = f" (stopped at {bpe['vocab_size']:,})" if bpe["stopped_early"] else ""
            rows.append(
                f"| {corpus_label(path)} | {vocab:,} | {bpe['bytes_per_token']:.3f}{short} | "
                + " | ".join(cells)
                + " |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
    head = (
        "bytes per token on the last 10% of each corpus (held out), tokenizers trained on the "
        "first 90%\n\n"
        "| corpus | vocabulary | BPE | "
        + " | ".join(f"SuperBPE, t = {t:.0%} of the vocabulary" for t in args.transitions)
        + " |\n|---|---:|---:|"
        + "---:|" * len(args.transitions)
    )
    return head + "\n" + "\n".join(rows)


# ---- command line --------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="what", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--corpus", nargs="+", default=["enwiki", "code", "multilingual"])
    e.add_argument("--vocab", type=int, default=32000)
    e.add_argument("--transition", type=float, default=0.875)
    e.add_argument("--train-mb", type=float, default=20)
    e.add_argument("--encode-mb", type=float, default=10)
    e.add_argument("--rounds", type=int, default=5)
    e.add_argument("--path", help=argparse.SUPPRESS)
    e.add_argument("--tool", help=argparse.SUPPRESS)
    e.add_argument("--tokenizer", help=argparse.SUPPRESS)
    e.add_argument("--ids-out", help=argparse.SUPPRESS)
    t = sub.add_parser("train")
    t.add_argument("--corpus", nargs="*", default=["enwiki"])
    t.add_argument("--vocab", type=int, default=32000)
    t.add_argument("--transition", type=float, default=0.875)
    t.add_argument(
        "--max-memory", nargs="*", default=[], help="budgets to run besides none, e.g. 256M"
    )
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--bounded-only", action="store_true", help="no run without a budget")
    t.add_argument(
        "--huge-gb", type=float, default=0, help="also train on an input of this many GB"
    )
    t.add_argument(
        "--huge-dir", default="/tmp", help="where the big input is made (outside the project)"
    )
    t.add_argument("--mix", choices=sorted(MIXES), default="english")
    t.add_argument("--keep", action="store_true", help="keep the big input")
    t.add_argument("--path", help=argparse.SUPPRESS)
    q = sub.add_parser("quality")
    q.add_argument("--corpus", nargs="+", default=["enwiki", "code", "multilingual"])
    q.add_argument("--vocab-sizes", type=int, nargs="+", default=[32000, 64000, 128000])
    q.add_argument("--transitions", type=float, nargs="+", default=[0.8, 0.9])
    q.add_argument("--threads", type=int, default=None)
    q.add_argument("--path", help=argparse.SUPPRESS)
    q.add_argument("--vocab", type=int, help=argparse.SUPPRESS)
    q.add_argument("--transition", type=float, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> str:
    args = parse(argv)
    if args.child:
        {"encode": encode_child, "train": train_child, "quality": quality_child}[args.what](args)
        return ""
    table = {"encode": run_encode, "train": run_train, "quality": run_quality}[args.what](args)
    print(table)
    return table


if __name__ == "__main__":
    main()
