"""Encoding a whole corpus into a training set of token ids: bytepair's
`encode_dataset` (1 and 2 threads, and on a local two-CPU Ray cluster) beside a
nanoGPT-style script and gigatoken's ``encode_files``, GPT-2 ranks.

The input is every corpus of ../shared/corpora (``common.MIXES["all"]``, about
130 MB in 7 files), a document being the text between two blank lines
(``separator="\\n\\n"``). Each cell runs in a fresh child process and times the
encoding only (the ranks are loaded first; Ray is started first):

- ours: ``bytepair.encode_dataset(files, out, tok, separator="\\n\\n")``:
  uint16 shards + offsets + manifest on disk, ``<|endoftext|>`` after each
  document;
- nanoGPT-style (its ``data/openwebtext/prepare.py``, without HF datasets): read
  the files, split the documents, ``tiktoken`` ``encode_ordinary_batch`` in
  batches of 1024 documents on N threads, ``<|endoftext|>`` appended to each,
  then one ``np.memmap`` uint16 file filled with every batch;
- gigatoken: ``Tokenizer.encode_files(TextFileSource(files, separator))``, a
  ragged array in memory (no end-of-document token, nothing written), its
  threads pinned with ``RAYON_NUM_THREADS``.

Throughput is input MB/s and million tokens/s (tokens without the EOTs, so all
three count the same ids); "ids equal" compares a SHA-256 of every tool's ids
with the EOTs removed against ours. "CPU s" is the child's CPU time (user +
system, all its threads; for Ray the driver's only), which shows how the work
scales when other tenants hold the cores. Peak RSS is the child's while it
encodes (after loading the ranks; for Ray, the driver's only). Cells are the
median of ``--repeat`` runs, taken in rounds over the tools.

Usage::

    python bench/bench_dataset.py                  # every tool, 3 runs each
    python bench/bench_dataset.py --repeat 1 --tools ours nanogpt
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from pathlib import Path

import common

SEPARATOR = "\n\n"
EOT_ID = 50256
TOOLS = {  # name -> (tool, threads, engine)
    "ours-1": ("ours", 1, "local"),
    "ours-2": ("ours", 2, "local"),
    "ours-ray-2": ("ours", 1, "ray"),
    "nanogpt-1": ("nanogpt", 1, None),
    "nanogpt-2": ("nanogpt", 2, None),
    "gigatoken-1": ("gigatoken", 1, None),
    "gigatoken-2": ("gigatoken", 2, None),
}


def corpus_files() -> list[str]:
    return [str(common.corpus_path(name)) for name in common.MIXES["all"]]


def ids_digest(chunks) -> str:
    """SHA-256 of the ids (as little-endian uint32) with every EOT removed."""
    import numpy as np

    digest = hashlib.sha256()
    for ids in chunks:
        ids = np.asarray(ids)
        digest.update(ids[ids != EOT_ID].astype("<u4").tobytes())
    return digest.hexdigest()[:16]


def run_ours(files: list[str], rank_file: str, threads: int, engine: str, scratch: str) -> dict:
    import bytepair

    tok = bytepair.Tokenizer.from_tiktoken(
        rank_file, pattern="gpt2", special_tokens={common.EOT: EOT_ID}
    )
    if engine == "ray":
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    common.reset_peak_rss()
    start, cpu = time.perf_counter(), time.process_time()
    ds = bytepair.encode_dataset(
        files,
        Path(scratch) / "ds",
        tok,
        separator=SEPARATOR,
        num_threads=threads,
        engine=engine,
        progress=False,
    )
    seconds, cpu, peak = (
        time.perf_counter() - start,
        time.process_time() - cpu,
        common.peak_rss_mib(),
    )
    return {
        "seconds": seconds,
        "cpu": cpu,
        "tokens": ds.manifest["tokens"] - len(ds),
        "documents": len(ds),
        "ids": ids_digest(ids for ids, _ in ds.shard_arrays()),
        "peak_mib": peak,
    }


def run_nanogpt(files: list[str], rank_file: str, threads: int, scratch: str) -> dict:
    import numpy as np

    import bytepair

    enc = bytepair.Tokenizer.from_tiktoken(
        rank_file, pattern="gpt2", special_tokens={common.EOT: EOT_ID}
    ).to_tiktoken()
    common.reset_peak_rss()
    start, cpu = time.perf_counter(), time.process_time()
    documents = []
    for path in files:
        with open(path, encoding="utf-8", newline="") as f:  # newline="": no \r\n translation
            documents += [d for d in f.read().split(SEPARATOR) if d]
    batches = []
    for i in range(0, len(documents), 1024):
        ids = enc.encode_ordinary_batch(documents[i : i + 1024], num_threads=threads)
        batches.append(
            np.concatenate([np.array(x + [enc.eot_token], dtype=np.uint16) for x in ids])
        )
    total = sum(len(b) for b in batches)
    out = np.memmap(Path(scratch) / "train.bin", dtype=np.uint16, mode="w+", shape=(total,))
    at = 0
    for b in batches:
        out[at : at + len(b)] = b
        at += len(b)
    out.flush()
    seconds, cpu, peak = (
        time.perf_counter() - start,
        time.process_time() - cpu,
        common.peak_rss_mib(),
    )
    return {
        "seconds": seconds,
        "cpu": cpu,
        "tokens": total - len(documents),
        "documents": len(documents),
        "ids": ids_digest([out]),
        "peak_mib": peak,
    }


def run_gigatoken(files: list[str], rank_file: str) -> dict:
    import gigatoken
    import numpy as np

    tok = gigatoken.Tokenizer.from_tiktoken(rank_file, pretokenizer="gpt2", special_tokens={})
    common.reset_peak_rss()
    start, cpu = time.perf_counter(), time.process_time()
    ids = tok.encode_files(gigatoken.TextFileSource(files, separator=SEPARATOR), parallel=True)
    seconds, cpu, peak = (
        time.perf_counter() - start,
        time.process_time() - cpu,
        common.peak_rss_mib(),
    )
    import awkward as ak

    flat = np.asarray(ak.flatten(ids))
    return {
        "seconds": seconds,
        "cpu": cpu,
        "tokens": len(flat),
        "documents": len(ids),
        "ids": ids_digest([flat]),
        "peak_mib": peak,
    }


def child(name: str, rank_file: str) -> dict:
    tool, threads, engine = TOOLS[name]
    files = corpus_files()
    scratch = tempfile.mkdtemp(prefix="bench-dataset-", dir=common.OUT_DIR)
    try:
        if tool == "ours":
            result = run_ours(files, rank_file, threads, engine, scratch)
        elif tool == "nanogpt":
            result = run_nanogpt(files, rank_file, threads, scratch)
        else:
            result = run_gigatoken(files, rank_file)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result["bytes"] = sum(Path(f).stat().st_size for f in files)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS))
    p.add_argument("--repeat", type=int, default=3, help="runs per cell (median)")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        common.emit(child(*args.child))
        return
    from bench_gigatoken import rank_file

    ranks = rank_file("gpt2")
    common.OUT_DIR.mkdir(exist_ok=True)
    watch = common.BuildWatch()
    results: dict[str, list[dict]] = {}
    for _ in range(args.repeat):  # rounds, so host load drifts over every tool alike
        for name in args.tools:
            env = common.thread_env(TOOLS[name][1] if TOOLS[name][2] != "ray" else None)
            common.log(f"{name} ...")
            results.setdefault(name, []).append(
                common.run_child(Path(__file__), [name, ranks], env)
            )
    if problem := watch.changed():
        raise SystemExit(problem)
    common.save_json("bench_dataset.json", results)
    reference = results.get("ours-1", next(iter(results.values())))[0]
    rows = []
    for name, runs in results.items():
        seconds = common.median([r["seconds"] for r in runs])
        r = runs[0]
        rows.append(
            [
                name,
                f"{r['bytes'] / 1e6 / seconds:.1f}",
                f"{r['tokens'] / 1e6 / seconds:.2f}",
                f"{seconds:.2f}",
                f"{r['documents']:,}",
                f"{r['tokens']:,}",
                "yes" if r["ids"] == reference["ids"] else "NO",
                f"{common.median([x['cpu'] for x in runs]):.2f}",
                f"{common.median([x['peak_mib'] for x in runs]):.0f}",
            ]
        )
    print(
        common.markdown_table(
            [
                "tool",
                "MB/s",
                "M tokens/s",
                "seconds",
                "documents",
                "tokens (no EOT)",
                "ids equal",
                "CPU s",
                "peak MiB",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
