"""Single-core encoding against gigatoken (and tiktoken for the ids), GPT-2,
cl100k and o200k ranks on enwiki, code and multilingual.

Every cell runs in fresh child processes, one per tool, pinned to one thread
(``RAYON_NUM_THREADS=1``): the child loads the ranks, reads the first
``--limit-mb`` of the corpus, then times one call ("cold": first call in the
process, empty caches) and ``--repeat`` more on the same text ("warm": their
median). Ours is ``Tokenizer.encode_to_numpy`` (an id array, like gigatoken's
``encode``); the ids of both must equal tiktoken's. Peak RSS is the child's.
The ratio is ours / gigatoken from the same run, so host load moves both.

``--files`` compares whole processes on whole corpus files instead, on all
cores: ``bytepair encode FILE -t RANKS -o ids.npy`` against a script that loads
gigatoken, calls ``encode_files(TextFileSource([FILE]))`` and saves the ids
as .npy of the same dtype (wall time from start to exit, median of
``--repeat``; peak RSS of each process from ``wait4``; ids compared).

Usage::

    python bench/bench_gigatoken.py                      # 3 x 3 cells, 10 MB each
    python bench/bench_gigatoken.py --ranks gpt2 --corpus enwiki --limit-mb 50
    python bench/bench_gigatoken.py --files              # whole files, whole processes

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
            tok = bytepair.Tokenizer.from_gpt2_files(
                folder / "gpt2_vocab.json", folder / "gpt2_merges.txt"
            )
            tok.save_tiktoken(out)
        else:
            out.write_bytes(gzip.decompress(openai_rank_file(RANKS[ranks]).read_bytes()))
    return str(out)


def child(tool: str, ranks: str, corpus: str, limit: int, repeat: int, rank_file: str) -> dict:
    """Time `tool` in this process; return MB/s, a checksum of the ids and peak RSS."""
    import hashlib

    import numpy as np

    raw = common.corpus_path(corpus).read_bytes()[:limit]
    text = raw.decode("utf-8", errors="ignore")
    if tool == "gigatoken":
        import gigatoken

        tok = gigatoken.Tokenizer.from_tiktoken(
            rank_file, pretokenizer=GIGATOKEN_PRETOKENIZER[ranks], special_tokens={}
        )
        encode = lambda: np.asarray(tok.encode(text))  # noqa: E731
    elif tool == "tiktoken":
        import bytepair

        enc = bytepair.Tokenizer.from_tiktoken(
            rank_file, pattern=ranks, special_tokens={}
        ).to_tiktoken()
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
        "cold": mb / times[0],
        "warm": mb / statistics.median(times[1:]),
        "tokens": len(ids),
        "ids": digest,
        "peak_mib": common.peak_rss_mib(),
    }


def run_child(tool: str, ranks: str, corpus: str, args: argparse.Namespace, rank_file: str) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    cmd = [
        sys.executable,
        __file__,
        "--child",
        tool,
        ranks,
        corpus,
        str(args.limit_mb),
        str(args.repeat),
        rank_file,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


GIGATOKEN_FILE_SCRIPT = """
import sys, numpy as np, gigatoken, awkward as ak
path, ranks, pretokenizer, out, dtype = sys.argv[1:]
tok = gigatoken.Tokenizer.from_tiktoken(ranks, pretokenizer=pretokenizer, special_tokens={})
ids = tok.encode_files(gigatoken.TextFileSource([path]), parallel=True)
np.save(out, np.asarray(ak.flatten(ids)).astype(dtype))
"""


def timed_process(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one process run to its end."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd[:4]}... exited with {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024


def compare_files(args: argparse.Namespace) -> None:
    """Whole corpus files, whole processes, all cores (see the module docstring)."""
    import tempfile

    import numpy as np

    print(
        "| ranks | corpus | MB | ours s | gigatoken s | ratio (gigatoken / ours) | ids equal | "
        "ours peak MiB | gigatoken peak MiB |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    with tempfile.TemporaryDirectory(dir=common.OUT_DIR) as tmp:
        for ranks in args.ranks:
            ranks_path = rank_file(ranks)
            dtype = "uint16" if ranks == "gpt2" else "uint32"
            for corpus in args.corpus:
                path = str(common.corpus_path(corpus))
                ours_npy, peer_npy = os.path.join(tmp, "ours.npy"), os.path.join(tmp, "peer.npy")
                ours_cmd = [
                    sys.executable,
                    "-m",
                    "bytepair",
                    "encode",
                    "-q",
                    path,
                    "-t",
                    ranks_path,
                    "-o",
                    ours_npy,
                ]
                peer_cmd = [
                    sys.executable,
                    "-c",
                    GIGATOKEN_FILE_SCRIPT,
                    path,
                    ranks_path,
                    GIGATOKEN_PRETOKENIZER[ranks],
                    peer_npy,
                    dtype,
                ]
                runs = [
                    (timed_process(ours_cmd), timed_process(peer_cmd)) for _ in range(args.repeat)
                ]
                ours_s = statistics.median(o[0] for o, _ in runs)
                peer_s = statistics.median(p[0] for _, p in runs)
                same = (
                    "yes"
                    if np.array_equal(
                        np.load(ours_npy, mmap_mode="r"), np.load(peer_npy, mmap_mode="r")
                    )
                    else "NO"
                )
                mb = os.path.getsize(path) / 1e6
                print(
                    f"| {ranks} | {corpus} | {mb:.0f} | {ours_s:.2f} | {peer_s:.2f} | "
                    f"{peer_s / ours_s:.2f} | {same} | {max(o[1] for o, _ in runs):.0f} | "
                    f"{max(p[1] for _, p in runs):.0f} |",
                    flush=True,
                )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", nargs="+", choices=RANKS, default=list(RANKS))
    p.add_argument("--corpus", nargs="+", default=list(CORPORA))
    p.add_argument("--limit-mb", type=float, default=10.0)
    p.add_argument("--repeat", type=int, default=3, help="warm calls after the cold one (median)")
    p.add_argument(
        "--files", action="store_true", help="whole files to .npy, whole processes, all cores"
    )
    p.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.files:
        compare_files(args)
        return
    if args.child:
        tool, ranks, corpus, limit_mb, repeat, ranks_path = args.child
        print(
            json.dumps(
                child(tool, ranks, corpus, int(float(limit_mb) * 1e6), int(repeat), ranks_path)
            )
        )
        return
    print(
        "| ranks | corpus | MB | ours warm MB/s | gigatoken warm MB/s | warm ratio | ours cold "
        "MB/s | gigatoken cold MB/s | cold ratio | ids = tiktoken | ours peak MiB | gigatoken peak "
        "MiB |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for ranks in args.ranks:
        ranks_path = rank_file(ranks)
        for corpus in args.corpus:
            ours, peer, ref = (
                run_child(t, ranks, corpus, args, ranks_path)
                for t in ("bytepair", "gigatoken", "tiktoken")
            )
            same = (
                "yes"
                if ours["ids"] == ref["ids"] == peer["ids"]
                else (f"ours {ours['ids'] == ref['ids']}, gigatoken {peer['ids'] == ref['ids']}")
            )
            print(
                f"| {ranks} | {corpus} | {args.limit_mb:g} | {ours['warm']:.0f} | "
                f"{peer['warm']:.0f} | {ours['warm'] / peer['warm']:.2f} | {ours['cold']:.0f} | "
                f"{peer['cold']:.0f} | {ours['cold'] / peer['cold']:.2f} | {same} | "
                f"{ours['peak_mib']} | {peer['peak_mib']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
