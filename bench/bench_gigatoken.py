"""Single-core encoding against gigatoken (and tiktoken for the ids), GPT-2,
cl100k and o200k ranks on enwiki, code and multilingual.

Every cell runs in fresh child processes, one per tool, pinned to one thread
(``RAYON_NUM_THREADS=1``): the child loads the ranks, reads the first
``--limit-mb`` of the corpus, then times one call ("cold": first call in the
process, empty caches) and ``--repeat`` more on the same text ("warm": their
median). Ours is ``Tokenizer.encode_to_numpy`` (an id array, like gigatoken's
``encode``); the ids of both must equal tiktoken's. Peak RSS is the child's.
The ratio is ours / gigatoken from the same run, so host load moves both.

Usage::

    python bench/bench_gigatoken.py                      # 3 x 3 cells, 10 MB each
    python bench/bench_gigatoken.py --ranks gpt2 --corpus enwiki --limit-mb 50

gigatoken is a bench extra (``pip install ".[bench]"``), never a dependency.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import common

RANKS = {"gpt2": "r50k_base", "cl100k": "cl100k_base", "o200k": "o200k_base"}
GIGATOKEN_PRETOKENIZER = {"gpt2": "gpt2", "cl100k": "gpt4", "o200k": "o200k"}
CORPORA = ("enwiki", "code", "multilingual")


def rank_file(ranks: str) -> str:
    """A plain ``.tiktoken`` file of `ranks` (gigatoken reads no .gz), made
    once in bench/out/ranks: GPT-2's from ../shared/corpora/cs336, OpenAI's
    from the bpe-openai wheel."""
    import gzip

    from bench_encode import openai_rank_file

    import bytepair

    out = common.OUT_DIR / "ranks" / f"{RANKS[ranks]}.tiktoken"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        if ranks == "gpt2":
            folder = common.DEFAULT_CORPORA / "cs336"
            tok = bytepair.Tokenizer.from_gpt2_files(folder / "gpt2_vocab.json", folder / "gpt2_merges.txt")
            tok.save_tiktoken(out)
        else:
            out.write_bytes(gzip.decompress(openai_rank_file(RANKS[ranks]).read_bytes()))
    return str(out)


def child(tool: str, ranks: str, corpus: str, limit: int, repeat: int, rank_file: str) -> dict:
    """Time `tool` in this process; return MB/s, a checksum of the ids and peak RSS."""
    import hashlib
    import resource

    import numpy as np

    raw = common.corpus_path(corpus).read_bytes()[:limit]
    text = raw.decode("utf-8", errors="ignore")
    if tool == "gigatoken":
        import gigatoken

        tok = gigatoken.Tokenizer.from_tiktoken(rank_file, pretokenizer=GIGATOKEN_PRETOKENIZER[ranks], special_tokens={})
        encode = lambda: np.asarray(tok.encode(text))  # noqa: E731
    elif tool == "tiktoken":
        import tiktoken

        import bytepair

        enc = bytepair.Tokenizer.from_tiktoken(rank_file, pattern=ranks, special_tokens={}).to_tiktoken()
        encode = lambda: enc.encode_to_numpy(text, disallowed_special=())  # noqa: E731
    else:
        import bytepair

        tok = bytepair.Tokenizer.from_tiktoken(rank_file, pattern=ranks, special_tokens={})
        encode = lambda: tok.encode_to_numpy(text)  # noqa: E731
    times = []
    for _ in range(1 + repeat):
        start = time.perf_counter()
        ids = encode()
        times.append(time.perf_counter() - start)
    digest = hashlib.sha256(np.asarray(ids, dtype="<u4").tobytes()).hexdigest()[:16]
    mb = len(text.encode()) / 1e6
    return {
        "cold": mb / times[0], "warm": mb / statistics.median(times[1:]), "tokens": len(ids), "ids": digest,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def run_child(tool: str, ranks: str, corpus: str, args: argparse.Namespace, rank_file: str) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--child", tool, ranks, corpus, str(args.limit_mb), str(args.repeat), rank_file]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", nargs="+", choices=RANKS, default=list(RANKS))
    p.add_argument("--corpus", nargs="+", default=list(CORPORA))
    p.add_argument("--limit-mb", type=float, default=10.0)
    p.add_argument("--repeat", type=int, default=3, help="warm calls after the cold one (median)")
    p.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        tool, ranks, corpus, limit_mb, repeat, ranks_path = args.child
        print(json.dumps(child(tool, ranks, corpus, int(float(limit_mb) * 1e6), int(repeat), ranks_path)))
        return
    print("| ranks | corpus | MB | ours warm MB/s | gigatoken warm MB/s | warm ratio | ours cold MB/s | gigatoken cold MB/s "
          "| cold ratio | ids = tiktoken | ours peak MiB | gigatoken peak MiB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for ranks in args.ranks:
        ranks_path = rank_file(ranks)
        for corpus in args.corpus:
            ours, peer, ref = (run_child(t, ranks, corpus, args, ranks_path) for t in ("bytepair", "gigatoken", "tiktoken"))
            same = "yes" if ours["ids"] == ref["ids"] == peer["ids"] else (
                f"ours {ours['ids'] == ref['ids']}, gigatoken {peer['ids'] == ref['ids']}")
            print(f"| {ranks} | {corpus} | {args.limit_mb:g} | {ours['warm']:.0f} | {peer['warm']:.0f} | "
                  f"{ours['warm'] / peer['warm']:.2f} | {ours['cold']:.0f} | {peer['cold']:.0f} | "
                  f"{ours['cold'] / peer['cold']:.2f} | {same} | {ours['peak_mib']} | {peer['peak_mib']} |", flush=True)


if __name__ == "__main__":
    main()
