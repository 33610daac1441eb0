"""SentencePiece BPE encoding, single core, against sentencepiece (the owner),
HF tokenizers and gigatoken, on the models of mistral-common's wheel.

Every cell runs in fresh child processes, one per tool, pinned to one thread
(``RAYON_NUM_THREADS=1``, ``OMP_NUM_THREADS=1``): the child loads the model,
reads the first ``--limit-mb`` of the corpus, then times one call ("cold":
first call in the process) and ``--repeat`` more ("warm": their median).

Two workloads (``--mode``):

- ``docs`` (default): the corpus's non-empty lines as a batch of documents,
  each encoded on its own (dummy prefix per line): ours
  ``encode_ordinary_batch(lines, num_threads=1)``, sentencepiece
  ``encode(lines)``, HF ``encode_batch_fast`` (with ``TOKENIZERS_PARALLELISM``
  off), gigatoken ``encode_batch_list(lines, parallel=False)``;
- ``text``: the whole slice as one text (``encode_to_numpy`` /
  ``encode`` / ``encode`` / ``encode``): sentencepiece and HF merge the whole
  text in one queue (no pre-tokenization), so keep ``--limit-mb`` small.

HF runs the model's tokenizer.json as transformers converts it, gigatoken the
``.model`` file. Every tool's ids must equal sentencepiece's (a checksum per
cell); peak RSS is the child's. Ratios are ours / the fastest peer of the
same run, so host load moves both.

``--tools`` may also name ``cl100k`` and ``o200k``: bytepair's byte-level
encodings on the same text and calls (the issue's goal: a SentencePiece model
at least as fast per byte as the byte-level families). They are no peers:
their ids differ, and they get the columns "ours / cl100k" and "ours / o200k"
(warm) instead. ``--cpu-time`` times each call by the process's CPU time
instead of the wall clock (on a shared host the wall clock counts the other
processes' turns; every tool runs on one thread).

Usage::

    python bench/bench_sentencepiece.py                         # v3, 3 corpora, docs
    python bench/bench_sentencepiece.py --mode text --limit-mb 2
    python bench/bench_sentencepiece.py --models v1 v7 --runs 3

sentencepiece, tokenizers, transformers (for the conversion), gigatoken and
mistral-common are bench extras, never dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import common

MODELS = {
    "v1": "tokenizer.model.v1",
    "v3": "mistral_instruct_tokenizer_240323.model.v3",
    "v7": "mistral_instruct_tokenizer_241114.model.v7",
}
TOOLS = ("bytepair", "sentencepiece", "hf", "gigatoken")
BYTE_LEVEL = {"cl100k": "cl100k_base", "o200k": "o200k_base"}
CORPORA = ("enwiki", "code", "multilingual")


def model_path(name: str) -> Path:
    import mistral_common

    return Path(mistral_common.__file__).parent / "data" / MODELS[name]


def hf_json(name: str) -> str:
    """transformers' tokenizer.json of the model, made once in bench/out."""
    out = common.OUT_DIR / "spm" / f"{MODELS[name]}.json"
    if not out.exists():
        import importlib

        from sentencepiece import sentencepiece_model_pb2 as pb2

        convert = importlib.import_module("transformers.convert_slow_tokenizer")
        proto = pb2.ModelProto()
        proto.ParseFromString(model_path(name).read_bytes())
        vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
        out.parent.mkdir(parents=True, exist_ok=True)
        convert.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab).save(str(out))
    return str(out)


def load(tool: str, name: str):
    """(encode_docs, encode_text) of `tool` for model `name`, ids as flat lists or arrays."""
    path = str(model_path(name))
    if tool == "bytepair":
        import bytepair

        tok = bytepair.Tokenizer.load(path)
        return (
            lambda docs: tok.encode_ordinary_batch(docs, num_threads=1),
            lambda text: tok.encode_to_numpy(text, disallowed_special=()),
        )
    if tool in BYTE_LEVEL:
        import bytepair

        enc = bytepair.get_encoding(BYTE_LEVEL[tool])
        return (
            lambda docs: enc.encode_ordinary_batch(docs, num_threads=1),
            lambda text: enc.encode_to_numpy(text, disallowed_special=()),
        )
    if tool == "sentencepiece":
        import sentencepiece

        sp = sentencepiece.SentencePieceProcessor(model_file=path)
        return sp.encode, sp.encode
    if tool == "hf":
        import tokenizers

        hf = tokenizers.Tokenizer.from_file(hf_json(name))
        return (
            lambda docs: [e.ids for e in hf.encode_batch_fast(docs, add_special_tokens=False)],
            lambda text: hf.encode(text, add_special_tokens=False).ids,
        )
    import gigatoken

    gt = gigatoken.Tokenizer.from_sentencepiece(path)
    return (lambda docs: gt.encode_batch_list(docs, parallel=False), gt.encode)


def checksum(ids) -> str:
    import hashlib

    import numpy as np

    if isinstance(ids, list) and ids and isinstance(ids[0], list):
        lengths = np.array([len(x) for x in ids], dtype=np.int64)
        flat = np.fromiter((i for x in ids for i in x), dtype=np.uint32)
        return hashlib.sha256(lengths.tobytes() + flat.tobytes()).hexdigest()[:16]
    return hashlib.sha256(np.asarray(ids, dtype=np.uint32).tobytes()).hexdigest()[:16]


def child(
    tool: str, name: str, corpus: str, mode: str, limit: int, repeat: int, clock=time.perf_counter
) -> dict:
    raw = common.corpus_path(corpus).read_bytes()[:limit]
    text = raw.decode("utf-8", errors="ignore")
    docs = [line for line in text.split("\n") if line.strip()]
    encode_docs, encode_text = load(tool, name)
    encode, arg = (encode_docs, docs) if mode == "docs" else (encode_text, text)
    mb = sum(len(d.encode()) for d in docs) / 1e6 if mode == "docs" else len(raw) / 1e6
    times = []
    for _ in range(1 + repeat):
        start = clock()
        ids = encode(arg)
        times.append(clock() - start)
    return {
        "cold": mb / times[0],
        "warm": mb / statistics.median(times[1:]),
        "ids": checksum(ids),
        "peak_mib": common.peak_rss_mib(),
    }


def run_child(tool: str, name: str, corpus: str, args) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["TOKENIZERS_PARALLELISM"] = "false"
    cmd = [sys.executable, __file__, "--child", tool, name, corpus, args.mode]
    cmd += [str(int(args.limit_mb * 1e6)), str(args.repeat), str(int(args.cpu_time))]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["v3"], choices=list(MODELS))
    parser.add_argument("--corpus", nargs="+", default=list(CORPORA))
    parser.add_argument("--mode", choices=("docs", "text"), default="docs")
    parser.add_argument("--limit-mb", type=float, default=None, help="10 (docs), 2 (text)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1, help="runs of every cell (medians)")
    choices = TOOLS + tuple(BYTE_LEVEL)
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=choices)
    parser.add_argument("--cpu-time", action="store_true", help="time calls by CPU time")
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        tool, name, corpus, mode, limit, repeat, cpu = args.child
        clock = time.process_time if cpu == "1" else time.perf_counter
        print(json.dumps(child(tool, name, corpus, mode, int(limit), int(repeat), clock)))
        return
    args.limit_mb = args.limit_mb or (10 if args.mode == "docs" else 2)
    print(
        f"# {args.mode}, first {args.limit_mb} MB, 1 thread, warm = median of {args.repeat}, "
        f"medians of {args.runs} run(s), {'CPU' if args.cpu_time else 'wall'} time"
    )
    peers = [t for t in args.tools if t in TOOLS and t != "bytepair"]
    byte_level = [t for t in args.tools if t in BYTE_LEVEL]
    header = ["model", "corpus"] + [f"{t} warm MB/s" for t in args.tools]
    same_as = "ids = sentencepiece" if "sentencepiece" in args.tools else "ids equal"
    header += ["warm ratio", "cold ratio"] + [f"ours / {t}" for t in byte_level] + [same_as]
    header += [f"{t} peak MiB" for t in args.tools]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for name in args.models:
        for corpus in args.corpus:
            runs = {t: [] for t in args.tools}
            for _ in range(args.runs):
                for tool in args.tools:  # interleaved, so load moves every tool alike
                    runs[tool].append(run_child(tool, name, corpus, args))
            med = {
                t: {k: statistics.median(r[k] for r in rs) for k in ("cold", "warm", "peak_mib")}
                for t, rs in runs.items()
            }
            ids = {t: rs[-1]["ids"] for t, rs in runs.items()}
            same = all(ids[t] == ids.get("sentencepiece", ids[t]) for t in args.tools if t in TOOLS)
            best = {
                k: max((med[t][k] for t in peers), default=float("nan")) for k in ("warm", "cold")
            }
            ours = med.get("bytepair")
            row = [name, corpus] + [f"{med[t]['warm']:.1f}" for t in args.tools]
            row += [
                f"{ours['warm'] / best['warm']:.2f}" if ours and peers else "-",
                f"{ours['cold'] / best['cold']:.2f}" if ours and peers else "-",
            ]
            row += [f"{ours['warm'] / med[t]['warm']:.2f}" if ours else "-" for t in byte_level]
            row += ["yes" if same else f"NO {ids}"]
            row += [f"{med[t]['peak_mib']:.0f}" for t in args.tools]
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
