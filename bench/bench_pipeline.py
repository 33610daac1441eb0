"""Encoding through a normalized tokenizer.json pipeline: bytepair's general
path vs HuggingFace tokenizers on the same file.

The tokenizer.json: OpenAI's cl100k_base ranks (the ``bpe-openai`` wheel)
written by ``bytepair.formats.to_hf_json``, with one of these pipelines put in:

  - ``qwen``: NFC, then Split(Qwen2's regex, Isolated), ByteLevel(use_regex=false)
    (the Qwen2/2.5/3 layout);
  - ``nfkc``: NFKC, then ByteLevel(use_regex=true) (Claude's earlier file);
  - ``roberta``: ByteLevel(add_prefix_space=true), no normalizer.

Both tools read the same file (``bytepair.Tokenizer.load``,
``tokenizers.Tokenizer.from_file``) in a fresh child process per measurement,
tools interleaved, and encode the first ``--limit-mb`` MB of each corpus on one
thread, in two ways: ``single``, one call on the whole text
(``encode(text, allowed_special="all")``, ``encode(text, add_special_tokens=False)``),
and ``batch``, the text split on blank lines into documents and encoded in one
``encode_batch`` call (ours with ``num_threads=1``, HF's with
``RAYON_NUM_THREADS=1``). Ids must be equal (checked in the first round).
Throughput is MB/s of UTF-8 input, the median of ``--repeat`` runs; peak RSS per child.

    python bench/bench_pipeline.py                         # qwen + nfkc, enwiki code multilingual,
    3 MB, 3 runs python bench/bench_pipeline.py --pipeline roberta --mode batch --limit-mb 1
    --repeat 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import chain
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    DEFAULT_CORPORA,
    corpus_label,
    corpus_path,
    emit,
    fmt,
    log,
    markdown_table,
    median,
    peak_rss_mib,
    ratio,
    run_child,
    thread_env,
)

QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
BYTE_LEVEL = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": True,
    "use_regex": True,
}
PIPELINES = {
    "qwen": (
        {"type": "NFC"},
        {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": QWEN2},
                    "behavior": "Isolated",
                    "invert": False,
                },
                dict(BYTE_LEVEL, use_regex=False),
            ],
        },
    ),
    "nfkc": ({"type": "NFKC"}, BYTE_LEVEL),
    "roberta": (None, dict(BYTE_LEVEL, add_prefix_space=True)),
}
OUT = Path(__file__).resolve().parent / "out"


def tokenizer_file(pipeline: str) -> Path:
    """bench/out/pipeline-<name>.json: cl100k_base's ranks with the pipeline `name`."""
    path = OUT / f"pipeline-{pipeline}.json"
    if path.is_file():
        return path
    from bench_encode import openai_rank_file

    import bytepair

    tok = bytepair.Tokenizer.from_tiktoken(
        openai_rank_file("cl100k_base"), pattern="cl100k", special_tokens={"<|endoftext|>": 100257}
    )
    doc = json.loads(bytepair.formats.to_hf_json(tok))
    doc["normalizer"], doc["pre_tokenizer"] = PIPELINES[pipeline]
    OUT.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def child_main(args: argparse.Namespace) -> None:
    text = (
        Path(args.input).read_bytes()[: int(args.limit_mb * 1e6)].decode("utf-8", errors="ignore")
    )
    docs = [d for d in text.split("\n\n") if d]
    if args.tool == "bytepair":
        import bytepair

        tok = bytepair.Tokenizer.load(args.file)

        def single():
            return tok.encode(text, allowed_special="all")

        def batch():
            return list(
                chain.from_iterable(tok.encode_batch(docs, num_threads=1, allowed_special="all"))
            )
    else:
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(args.file)

        def single():
            return tok.encode(text, add_special_tokens=False).ids

        def batch():
            return list(
                chain.from_iterable(e.ids for e in tok.encode_batch(docs, add_special_tokens=False))
            )

    mode = args.mode[0]
    encode = single if mode == "single" else batch
    start = time.perf_counter()
    ids = encode()
    seconds = time.perf_counter() - start
    size = (
        len(text.encode("utf-8")) if mode == "single" else sum(len(d.encode("utf-8")) for d in docs)
    )
    result = {"seconds": seconds, "mb": size / 1e6, "tokens": len(ids), "peak_mib": peak_rss_mib()}
    if args.ids_out:
        Path(args.ids_out).write_text(json.dumps(ids))
    emit(result)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pipeline", nargs="+", choices=sorted(PIPELINES), default=["qwen", "nfkc"])
    ap.add_argument("--corpus", nargs="+", default=["enwiki", "code", "multilingual"])
    ap.add_argument(
        "--limit-mb", type=float, default=3.0, help="first MB of each corpus (default 3)"
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", nargs="+", choices=["single", "batch"], default=["single", "batch"])
    ap.add_argument("--corpora-dir", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tool", help=argparse.SUPPRESS)
    ap.add_argument("--file", help=argparse.SUPPRESS)
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--ids-out", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_main(args)
    env = thread_env(1)
    rows = []
    for pipeline in args.pipeline:
        path = tokenizer_file(pipeline)
        for name in args.corpus:
            corpus = corpus_path(name, args.corpora_dir)
            for mode in args.mode:
                rows.append(measure(pipeline, path, corpus, mode, args, env))
    print(
        markdown_table(
            [
                "pipeline",
                "corpus",
                "mode",
                "ours MB/s",
                "HF MB/s",
                "ratio",
                "ids = HF",
                "ours peak MiB",
                "HF peak MiB",
            ],
            rows,
        )
    )


def measure(
    pipeline: str, path: Path, corpus: Path, mode: str, args: argparse.Namespace, env: dict
) -> list[str]:
    """One table row: `--repeat` interleaved runs of each tool, ids checked in the first."""
    runs: dict[str, list[dict]] = {"bytepair": [], "hf": []}
    for round_ in range(args.repeat):
        order = ["bytepair", "hf"] if round_ % 2 == 0 else ["hf", "bytepair"]
        for tool in order:
            ids_out = str(OUT / f"ids-{tool}.json") if round_ == 0 else ""
            child_args = [
                "--tool",
                tool,
                "--file",
                str(path),
                "--input",
                str(corpus),
                "--mode",
                mode,
                "--limit-mb",
                str(args.limit_mb),
                "--ids-out",
                ids_out,
            ]
            runs[tool].append(run_child(Path(__file__), child_args, env))
            log(
                f"{pipeline} {corpus_label(corpus)} {mode} {tool}: {runs[tool][-1]['seconds']:.2f} "
                "s"
            )
        if (
            round_ == 0
            and (OUT / "ids-bytepair.json").read_text() != (OUT / "ids-hf.json").read_text()
        ):
            raise SystemExit(
                f"ids differ from HF tokenizers' on {pipeline} / {corpus_label(corpus)} / {mode}"
            )
    speed = {t: median([r["mb"] / r["seconds"] for r in rs]) for t, rs in runs.items()}
    peak = {t: max(r["peak_mib"] for r in rs) for t, rs in runs.items()}
    return [
        pipeline,
        corpus_label(corpus),
        mode,
        fmt(speed["bytepair"]),
        fmt(speed["hf"]),
        fmt(ratio(speed["bytepair"], speed["hf"])),
        "yes",
        fmt(peak["bytepair"], 0),
        fmt(peak["hf"], 0),
    ]


if __name__ == "__main__":
    main()
