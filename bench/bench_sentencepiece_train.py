"""Training SentencePiece-style BPE: ``bytepair.train_sentencepiece`` against
sentencepiece's own BPE trainer (``spm_train --model_type=bpe`` through
``SentencePieceTrainer.train``) on the same input and options (the Llama 2
recipe: identity normalization, dummy prefix, character coverage 0.9995, byte
fallback, split digits, whitespace-only pieces, pieces of at most 16
characters, spaces kept).

Each tool runs in a fresh process on the first ``--limit-mb`` of a corpus
(written to a temporary file, lines as sentences; spm_train's sentence length
limit lifted so both see every line), with ``--threads`` threads. Reported:
wall time of the training call (imports done before it) and its CPU time (every thread of the
process: on a shared host the wall clock counts other processes' turns),
the process's peak RSS, and bytes per token of both models on held-out text
(the 2 MB after the training slice).

Usage::

    python bench/bench_sentencepiece_train.py                  # 3 corpora, 20 MB, vocab 32000
    python bench/bench_sentencepiece_train.py --limit-mb 5 --vocab-size 8000 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import common

CORPORA = ("enwiki", "code", "multilingual")
HELD_OUT_BYTES = 2_000_000


def child(tool: str, train_path: str, held_path: str, vocab: int, threads: int, out: str) -> dict:
    # Imported before the clock starts: `import bytepair` takes ~0.2 s (its
    # counting module's dependencies), sentencepiece's ~5 ms, neither is training.
    import sentencepiece

    if tool == "bytepair":
        import bytepair
    start, cpu_start = time.perf_counter(), time.process_time()
    if tool == "bytepair":
        tok = bytepair.train_sentencepiece(train_path, vocab, num_threads=threads)
        tok.save_model(out)
    else:
        sentencepiece.SentencePieceTrainer.train(
            input=train_path,
            model_prefix=out.removesuffix(".model"),
            model_type="bpe",
            vocab_size=vocab,
            character_coverage=0.9995,
            byte_fallback=True,
            split_digits=True,
            allow_whitespace_only_pieces=True,
            normalization_rule_name="identity",
            remove_extra_whitespaces=False,
            max_sentence_length=1 << 30,
            input_sentence_size=0,
            num_threads=threads,
            minloglevel=2,
        )
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    peak = common.peak_rss_mib()
    sp = sentencepiece.SentencePieceProcessor(model_file=out)
    held = open(held_path, encoding="utf-8").read()
    tokens = sum(len(ids) for ids in sp.encode(held.split("\n")))
    return {
        "seconds": seconds,
        "cpu": cpu,
        "peak_mib": peak,
        "bytes_per_token": len(held.encode()) / tokens,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", default=list(CORPORA))
    parser.add_argument("--limit-mb", type=float, default=20)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        tool, train, held, vocab, threads, out = args.child
        print(json.dumps(child(tool, train, held, int(vocab), int(threads), out)))
        return
    print(
        f"# first {args.limit_mb} MB, vocab {args.vocab_size}, {args.threads} thread(s), "
        f"held out: the next {HELD_OUT_BYTES / 1e6:.0f} MB; medians of {args.runs} run(s)"
    )
    print(
        "| corpus | bytepair s | spm_train s | speedup | bytepair CPU s | spm_train CPU s "
        "| CPU speedup | bytepair peak MiB | spm_train peak MiB "
        "| bytepair bytes/token | spm_train bytes/token |"
    )
    print("|" + " --- |" * 11)
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in args.corpus:
            raw = common.corpus_path(corpus).read_bytes()
            cut = int(args.limit_mb * 1e6)
            train = raw[:cut].decode("utf-8", errors="ignore")
            held = raw[cut : cut + HELD_OUT_BYTES].decode("utf-8", errors="ignore")
            paths = {k: os.path.join(tmp, f"{corpus}.{k}.txt") for k in ("train", "held")}
            for k, text in (("train", train), ("held", held)):
                with open(paths[k], "w", encoding="utf-8") as f:
                    f.write(text)
            results = {"bytepair": [], "sentencepiece": []}
            for run in range(args.runs):
                for tool in results:
                    # A new file each run, as a user's first save: replacing the
                    # last run's file right after its fsync waited ~3-4 ms more
                    # for the freed blocks (ext4 with discard), in runs 2 and on.
                    out = os.path.join(tmp, f"{corpus}.{tool}.{run}.model")
                    cmd = [sys.executable, __file__, "--child", tool, paths["train"]]
                    cmd += [paths["held"], str(args.vocab_size), str(args.threads), out]
                    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
                    results[tool].append(json.loads(done.stdout.strip().splitlines()[-1]))
            med = {
                t: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
                for t, rs in results.items()
            }
            ours, theirs = med["bytepair"], med["sentencepiece"]
            row = [
                corpus,
                f"{ours['seconds']:.2f}",
                f"{theirs['seconds']:.2f}",
                f"{theirs['seconds'] / ours['seconds']:.1f}x",
                f"{ours['cpu']:.2f}",
                f"{theirs['cpu']:.2f}",
                f"{theirs['cpu'] / ours['cpu']:.1f}x",
                f"{ours['peak_mib']:.0f}",
                f"{theirs['peak_mib']:.0f}",
                f"{ours['bytes_per_token']:.3f}",
                f"{theirs['bytes_per_token']:.3f}",
            ]
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
