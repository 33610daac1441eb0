"""Encoding benchmark: bytepair vs tiktoken (and HuggingFace tokenizers for
reference), with three sets of ranks, all offline:

  - ``gpt2``: built from ``gpt2_vocab.json`` and ``gpt2_merges.txt`` (the CS336
    fixtures in the corpora folder);
  - ``cl100k_base`` and ``o200k_base``: OpenAI's ``.tiktoken.gz`` rank files
    shipped in the ``bpe-openai`` wheel.

The tokenizers:
  - bytepair: GPT-2: ``bytepair.Tokenizer(vocab, merges, special_tokens=[EOT])``,
    vocab and merges converted from the files' byte-level strings with
    ``bytepair.formats.str_to_token``; OpenAI's: ``bytepair.Tokenizer.from_tiktoken(file)``;
  - tiktoken: ``tiktoken.Encoding(name, pat_str, mergeable_ranks, special_tokens)``:
    GPT-2 with ``pat_str=bytepair.resolve_pattern("gpt2")`` and ``{token bytes: id}``;
    OpenAI's with the ranks read from the file and the pattern and special tokens
    of ``tiktoken_ext.openai_public`` (read without downloading anything);
  - HF tokenizers (GPT-2 ranks only): ``models.BPE(vocab, merges)`` with the
    ByteLevel pre-tokenizer (add_prefix_space=False) and ByteLevel decoder;
    ``encode(text, add_special_tokens=False).ids``.

Inputs: corpus files, and two synthetic worst cases of ``--worst-case-mb`` (10)
MB each: ``repeated`` (one character, ``a``, repeated: a single pre-token) and
``random-latin1`` (random bytes, fixed seed, decoded as Latin-1: every code
point below 256; UTF-8 makes it about 15 MB).

Measured, per ranks and input (whole file, or its first ``--limit-mb`` MB):
  - single: one ``encode_ordinary(text)`` call on the whole text (one thread),
    then ``decode(ids)`` of the result;
  - batch with N threads (corpus files only): the text split on blank lines into
    documents, encoded in lists of ``--batch-docs`` (1000) documents: bytepair
    ``encode_batch(docs, num_threads=N)``, tiktoken
    ``encode_ordinary_batch(docs, num_threads=N)``, HF ``encode_batch`` with
    ``RAYON_NUM_THREADS=N``.
Each measurement is a fresh child process (tools interleaved, order rotated every
round) doing one timed call, so peak RSS is per tool and no tool keeps a warm
cache between rounds. Throughput is in MB/s of UTF-8 input (10^6 bytes; for
decode, of the decoded text). The ids of bytepair must equal tiktoken's in every
measurement of the run: the script checks them (first round) and exits with an
error if they differ. HF's ids are compared and reported, not required. The
worst-case table compares each tool's single-call throughput on the synthetic
inputs with its own on enwiki (prose).

Usage::

    python bench/bench_encode.py                         # every ranks, corpus and worst case python
    bench/bench_encode.py --ranks cl100k_base --corpus enwiki repeated --limit-mb 10 --threads
    --no-hf
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import sys
import tempfile
import time
from array import array
from pathlib import Path

import common

TOOLS = ("bytepair", "tiktoken", "hf")
RANKS = ("gpt2", "cl100k_base", "o200k_base")
# bytepair preset of each set of OpenAI ranks (tiktoken reads its own pattern).
OPENAI_PRESET = {"cl100k_base": "cl100k", "o200k_base": "o200k"}
SYNTHETIC = ("repeated", "random-latin1")
DEFAULT_CORPORA = ("enwiki", "code", "multilingual", "shakespeare", *SYNTHETIC)
PROSE = "enwiki"  # the worst cases are compared with this corpus
GPT2_DIR = "cs336"
EOT_ID = 50256


# ---- child side: load text and tokenizer, one timed call ------------------------


def synthetic_text(name: str, mb: float) -> str:
    """A worst case of `mb` MB (10^6 characters): one repeated character, or
    random bytes (seed 0) decoded as Latin-1."""
    n = int(mb * common.MB)
    if name == "repeated":
        return "a" * n
    return random.Random(0).randbytes(n).decode("latin-1")


def input_text(path: str, args: argparse.Namespace) -> tuple[str, bool]:
    """The text of a corpus file or synthetic input (see `load_text`)."""
    if path in SYNTHETIC:
        mb = min(x for x in (args.worst_case_mb, args.limit_mb) if x is not None)
        return synthetic_text(path, mb), False
    return load_text(Path(path), args.limit_mb)


def load_text(path: Path, limit_mb: float | None) -> tuple[str, bool]:
    """The corpus as str, and whether it was cut: with a limit, at most its first
    `limit_mb` MB, cut after a newline that has printable ASCII on both sides.
    Every preset pattern ends a pre-token there, so the ids of the prefix are a
    prefix of the ids of the whole."""
    if limit_mb is None or limit_mb * common.MB >= path.stat().st_size:
        return path.read_text(encoding="utf-8"), False
    with open(path, "rb") as f:
        data = f.read(int(limit_mb * common.MB) + 1)
    text = data.decode("utf-8", errors="ignore")  # drop a character cut in half
    i = text.rfind("\n", 0, len(text) - 1)
    while i > 0 and not (safe_neighbour(text[i - 1]) and safe_neighbour(text[i + 1])):
        i = text.rfind("\n", 0, i)
    return (text[: i + 1] if i > 0 else text), True


def safe_neighbour(ch: str) -> bool:
    """Printable ASCII other than space."""
    return "!" <= ch <= "~"


def split_documents(text: str) -> list[str]:
    """Documents: the non-empty pieces between blank lines."""
    return [d for d in text.split("\n\n") if d]


def load_gpt2(corpora_dir: Path) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2's vocab.json ({byte-level string: id}) and merges.txt (pairs of strings)."""
    folder = corpora_dir / GPT2_DIR
    vocab = json.loads((folder / "gpt2_vocab.json").read_text(encoding="utf-8"))
    merges = []
    for line in (folder / "gpt2_merges.txt").read_text(encoding="utf-8").split("\n"):
        if line and not line.startswith("#version"):
            left, right = line.split(" ")
            merges.append((left, right))
    return vocab, merges


def openai_rank_file(name: str) -> Path:
    """OpenAI's ``<name>.tiktoken.gz`` as shipped in the bpe-openai wheel."""
    import bpe_openai

    path = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: pip install bpe-openai")
    return path


def openai_params(name: str) -> dict:
    """tiktoken.Encoding arguments for OpenAI's ranks `name`: the ranks from the
    rank file, the pattern and special tokens from tiktoken_ext (its loader is
    bypassed so that nothing is downloaded)."""
    from unittest import mock

    import tiktoken_ext.openai_public as op

    ranks = {}
    for line in gzip.decompress(openai_rank_file(name).read_bytes()).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    with mock.patch.object(op, "load_tiktoken_bpe", lambda *a, **k: ranks):
        return getattr(op, name)()


class BytepairTool:
    """bytepair.Tokenizer built from the GPT-2 files or OpenAI's rank file."""

    def __init__(self, ranks: str, corpora_dir: Path) -> None:
        import bytepair
        from bytepair.formats import str_to_token

        if ranks != "gpt2":
            self.tok = bytepair.Tokenizer.from_tiktoken(openai_rank_file(ranks))
            return
        vocab, merges = load_gpt2(corpora_dir)
        self.tok = bytepair.Tokenizer(
            {i: str_to_token(s) for s, i in vocab.items()},
            [(str_to_token(a), str_to_token(b)) for a, b in merges],
            special_tokens=[common.EOT],
        )

    def encode(self, text: str) -> list[int]:
        return self.tok.encode_ordinary(text)

    def encode_batch(self, texts: list[str], threads: int) -> list[list[int]]:
        return self.tok.encode_batch(texts, num_threads=threads)

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids)


class TiktokenTool:
    """tiktoken.Encoding with the same ranks and pattern."""

    def __init__(self, ranks: str, corpora_dir: Path) -> None:
        import tiktoken

        import bytepair
        from bytepair.formats import str_to_token

        if ranks != "gpt2":
            self.enc = tiktoken.Encoding(**openai_params(ranks))
            return
        vocab, _ = load_gpt2(corpora_dir)
        self.enc = tiktoken.Encoding(
            name="gpt2",
            pat_str=bytepair.resolve_pattern("gpt2"),
            mergeable_ranks={str_to_token(s): i for s, i in vocab.items() if i != EOT_ID},
            special_tokens={common.EOT: EOT_ID},
        )

    def encode(self, text: str) -> list[int]:
        return self.enc.encode_ordinary(text)

    def encode_batch(self, texts: list[str], threads: int) -> list[list[int]]:
        return self.enc.encode_ordinary_batch(texts, num_threads=threads)

    def decode(self, ids: list[int]) -> str:
        return self.enc.decode(ids)


class HFTool:
    """HuggingFace tokenizers BPE model from the same vocab and merges; batch
    threads come from RAYON_NUM_THREADS, set by the parent."""

    def __init__(self, ranks: str, corpora_dir: Path) -> None:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        assert ranks == "gpt2", "HF is measured with the GPT-2 files only"
        vocab, merges = load_gpt2(corpora_dir)

        self.tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        self.tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        self.tok.decoder = decoders.ByteLevel()
        self.tok.add_special_tokens([common.EOT])

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str], threads: int) -> list[list[int]]:
        return [e.ids for e in self.tok.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=False)


TOOL_CLASSES = {"bytepair": BytepairTool, "tiktoken": TiktokenTool, "hf": HFTool}


def timed(fn, *args):
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def dump_ids(prefix: str, ids: list[int], lengths: list[int]) -> None:
    """Write ids (uint32) and document lengths for the parent's comparison."""
    with open(prefix + ".ids", "wb") as f:
        array("I", ids).tofile(f)
    with open(prefix + ".lens", "wb") as f:
        array("Q", lengths).tofile(f)


def child_main(args: argparse.Namespace) -> None:
    """One measurement: `single` (encode the whole text, then decode it) or
    `batch` (encode the documents in lists of --batch-docs with --threads).

    Memory: with the text and tokenizer loaded, the peak RSS is reset to the
    current RSS (`base_rss_mib`); `rss_mib` is the peak during the encode call(s),
    `decode_rss_mib` the peak during decode (the ids still held).
    """
    text, limited = input_text(args.path, args)
    tool = TOOL_CLASSES[args.tool](args.ranks, args.corpora_dir)
    result: dict = {"limited": limited}
    if args.task == "single":
        result["bytes"] = len(text.encode("utf-8"))
        result["peak_reset"] = common.reset_peak_rss()
        result["base_rss_mib"] = common.current_rss_mib()
        result["seconds"], ids = timed(tool.encode, text)
        result["rss_mib"] = common.peak_rss_mib()
        common.reset_peak_rss()
        result["decode_seconds"], decoded = timed(tool.decode, ids)
        result["decode_rss_mib"] = common.peak_rss_mib()
        result["roundtrip"] = decoded == text
        result["tokens"], lengths = len(ids), [len(ids)]
    else:
        docs = split_documents(text)
        batches = [docs[i : i + args.batch_docs] for i in range(0, len(docs), args.batch_docs)]
        result["bytes"] = sum(len(d.encode("utf-8")) for d in docs)
        result["docs"] = len(docs)
        result["peak_reset"] = common.reset_peak_rss()
        result["base_rss_mib"] = common.current_rss_mib()
        start = time.perf_counter()
        encoded = [tool.encode_batch(batch, args.threads) for batch in batches]
        result["seconds"] = time.perf_counter() - start
        result["rss_mib"] = common.peak_rss_mib()
        per_doc = [ids for batch in encoded for ids in batch]
        lengths = [len(ids) for ids in per_doc]
        ids = [i for doc in per_doc for i in doc]
        result["tokens"] = len(ids)
    result["ru_maxrss_mib"] = common.ru_maxrss_mib()
    if args.dump:
        dump_ids(args.dump, ids, lengths)
    common.emit(result)


# ---- parent side ------------------------------------------------------------------


def tasks(thread_counts: list[int], synthetic: bool) -> list[tuple[str, int]]:
    """The measurements: (``single``, 1) then, for corpus files, (``batch``, N)
    for each thread count (a synthetic input has no documents)."""
    return [("single", 1)] + ([] if synthetic else [("batch", n) for n in thread_counts])


def input_label(path: str) -> str:
    return path if path in SYNTHETIC else common.corpus_label(Path(path))


def limit_for(tool: str, args: argparse.Namespace) -> float | None:
    """MB of the corpus given to `tool`: --limit-mb, and for HF also --hf-limit-mb."""
    limits = [
        x for x in (args.limit_mb, args.hf_limit_mb if tool == "hf" else None) if x is not None
    ]
    return min(limits) if limits else None


def run_task(
    ranks: str,
    path: str,
    task: str,
    threads: int,
    tools: list[str],
    args: argparse.Namespace,
    tmp: Path,
) -> dict:
    """All rounds of one task on one input: {tool: [child results]} and the id checks."""
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    dumps = {t: str(tmp / f"{t}-{task}-{threads}") for t in tools}
    for r in range(args.repeat):
        for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
            child_args = [
                "--tool",
                tool,
                "--ranks",
                ranks,
                "--path",
                path,
                "--task",
                task,
                "--threads",
                str(threads),
                "--batch-docs",
                str(args.batch_docs),
                "--corpora-dir",
                str(args.corpora_dir),
                "--worst-case-mb",
                str(args.worst_case_mb),
            ]
            limit = limit_for(tool, args)
            if limit is not None:
                child_args += ["--limit-mb", str(limit)]
            if r == 0:
                child_args += ["--dump", dumps[tool]]
            res = common.run_child(Path(__file__), child_args, common.thread_env(threads))
            runs[tool].append(res)
            rate = res["bytes"] / common.MB / res["seconds"]
            common.log(
                f"  {ranks} {input_label(path)} {task} threads={threads} round "
                f"{r + 1}/{args.repeat} {tool:8s} {res['seconds']:7.2f} s {rate:7.2f} MB/s  peak "
                f"RSS {res['rss_mib']:7.1f} MiB"
            )
    # tiktoken is the reference: bytepair must equal it; HF's agreement is reported.
    checks = {}
    for tool in tools:
        if tool != "tiktoken" and "tiktoken" in tools:
            prefix = runs[tool][0]["bytes"] < runs["tiktoken"][0]["bytes"]
            checks[tool] = compare_ids(dumps["tiktoken"], dumps[tool], task, prefix)
    return {"runs": runs, "checks": checks}


def compare_ids(reference: str, other: str, task: str, prefix: bool) -> dict:
    """Are the dumped ids (and per-document lengths) of `other` identical to the
    reference's? With `prefix`, `other` saw only a prefix of the text: compare the
    ids it has (single call: cut at a safe newline) or all its documents but the
    last, which may be cut (batch). If they differ, say where."""
    import numpy as np

    a = np.fromfile(reference + ".ids", dtype=np.uint32)
    b = np.fromfile(other + ".ids", dtype=np.uint32)
    la = np.fromfile(reference + ".lens", dtype=np.uint64)
    lb = np.fromfile(other + ".lens", dtype=np.uint64)
    if prefix and task == "single":
        a, la, lb = a[: b.size], la[:0], lb[:0]
    elif prefix:
        lb = lb[:-1]
        la = la[: lb.size]
        a, b = a[: int(la.sum())], b[: int(lb.sum())]
    if np.array_equal(la, lb) and np.array_equal(a, b):
        return {"equal": True, "tokens_compared": int(b.size), "prefix": prefix}
    n = min(a.size, b.size)
    diff = np.flatnonzero(a[:n] != b[:n])
    first = int(diff[0]) if diff.size else n
    return {
        "equal": False,
        "prefix": prefix,
        "tokens": [int(a.size), int(b.size)],
        "first_mismatch": first,
        "reference": a[first : first + 8].tolist(),
        "other": b[first : first + 8].tolist(),
    }


def mbps(result: dict, tool: str, key: str = "seconds") -> float | None:
    """Median throughput (MB/s) of `tool` over the rounds, or None if not run."""
    runs = result["runs"].get(tool)
    if not runs:
        return None
    return common.median([r["bytes"] / common.MB / r[key] for r in runs])


def peak(result: dict, tool: str, key: str = "rss_mib") -> float | None:
    """Largest peak RSS of `tool` over the rounds (MiB), or None if not run."""
    runs = result["runs"].get(tool)
    return max(r[key] for r in runs) if runs else None


def before_cell(result: dict) -> str:
    """RSS before the measured call, text and tokenizer loaded: "bytepair/tiktoken" (MiB)."""
    values = [
        result["runs"][t][0]["base_rss_mib"]
        for t in ("bytepair", "tiktoken")
        if t in result["runs"]
    ]
    return "/".join(common.fmt(v, 0) for v in values) or "–"


def peak_cells(result: dict, key: str = "rss_mib") -> list[str]:
    return [
        common.fmt(peak(result, "bytepair", key), 0),
        common.fmt(peak(result, "tiktoken", key), 0),
        hf_cell(result, peak(result, "hf", key), 0),
        before_cell(result),
    ]


def check_cell(result: dict, tool: str) -> str:
    """Whether `tool`'s ids equal tiktoken's ("yes*": on the prefix it was given)."""
    c = result["checks"].get(tool)
    if c is None:
        return "–"
    star = "*" if c["prefix"] else ""
    return f"yes{star}" if c["equal"] else f"NO{star} (token {c['first_mismatch']})"


def reference_run(result: dict) -> dict:
    """A run that saw the whole text (tiktoken's or bytepair's), for sizes and counts."""
    runs = result["runs"]
    return (runs.get("tiktoken") or runs.get("bytepair") or runs["hf"])[0]


def hf_cell(result: dict, value: float | None, digits: int = 2) -> str:
    """HF's number, starred when HF was given only a prefix of the text."""
    runs = result["runs"].get("hf")
    star = "*" if runs and runs[0]["bytes"] < reference_run(result)["bytes"] else ""
    return common.fmt(value, digits) + star


def single_rows(ranks: str, label: str, res: dict) -> tuple[list[str], list[str]]:
    """Rows of the single-call encode table and the decode table."""
    bp, tk, hf = (mbps(res, t) for t in TOOLS)
    ref = reference_run(res)
    encode_row = [
        ranks,
        label,
        f"{ref['bytes'] / common.MB:.1f}",
        str(ref["tokens"]),
        common.fmt(bp),
        common.fmt(tk),
        hf_cell(res, hf),
        common.fmt(common.ratio(bp, tk)),
        check_cell(res, "bytepair"),
        check_cell(res, "hf"),
        *peak_cells(res),
    ]
    dbp, dtk, dhf = (mbps(res, t, "decode_seconds") for t in TOOLS)
    roundtrip = ", ".join(
        f"{t}: {'yes' if all(r['roundtrip'] for r in runs) else 'NO'}"
        for t, runs in res["runs"].items()
    )
    decode_row = [
        ranks,
        label,
        common.fmt(dbp),
        common.fmt(dtk),
        hf_cell(res, dhf),
        common.fmt(common.ratio(dbp, dtk)),
        roundtrip,
        *peak_cells(res, "decode_rss_mib")[:3],
    ]
    return encode_row, decode_row


def batch_row(ranks: str, label: str, threads: int, res: dict) -> list[str]:
    bp, tk, hf = (mbps(res, t) for t in TOOLS)
    return [
        ranks,
        label,
        str(reference_run(res)["docs"]),
        str(threads),
        common.fmt(bp),
        common.fmt(tk),
        hf_cell(res, hf),
        common.fmt(common.ratio(bp, tk)),
        check_cell(res, "bytepair"),
        check_cell(res, "hf"),
        *peak_cells(res),
    ]


def worst_case_rows(raw: list[dict]) -> list[list[str]]:
    """Per ranks and synthetic input: each tool's single-call MB/s there, on
    prose (enwiki) in the same run, and the fraction of prose it keeps."""
    single = {(r["ranks"], r["corpus"]): r for r in raw if r["task"] == "single"}
    rows = []
    for (ranks, label), res in single.items():
        prose = single.get((ranks, PROSE))
        if label not in SYNTHETIC or prose is None:
            continue
        bp, tk = mbps(res, "bytepair"), mbps(res, "tiktoken")
        pbp, ptk = mbps(prose, "bytepair"), mbps(prose, "tiktoken")
        rows.append(
            [
                ranks,
                label,
                f"{reference_run(res)['bytes'] / common.MB:.1f}",
                common.fmt(bp),
                common.fmt(pbp),
                common.fmt(common.ratio(bp, pbp)),
                common.fmt(tk),
                common.fmt(ptk),
                common.fmt(common.ratio(tk, ptk)),
                common.fmt(common.ratio(bp, tk)),
                check_cell(res, "bytepair"),
                common.fmt(peak(res, "bytepair"), 0),
                common.fmt(peak(res, "tiktoken"), 0),
            ]
        )
    return rows


WORST_HEADER = [
    "ranks",
    "input",
    "MB",
    "bytepair MB/s",
    "bytepair on enwiki",
    "bytepair worst/prose",
    "tiktoken MB/s",
    "tiktoken on enwiki",
    "tiktoken worst/prose",
    "ours/tiktoken",
    "ids = tiktoken",
    "bytepair peak MiB",
    "tiktoken peak MiB",
]
SINGLE_HEADER = [
    "ranks",
    "corpus",
    "MB",
    "tokens",
    "bytepair MB/s",
    "tiktoken MB/s",
    "HF MB/s",
    "ours/tiktoken",
    "ids = tiktoken",
    "HF ids = tiktoken",
    "bytepair peak MiB",
    "tiktoken peak MiB",
    "HF peak MiB",
    "before MiB (bytepair/tiktoken)",
]
BATCH_HEADER = [
    "ranks",
    "corpus",
    "docs",
    "threads",
    "bytepair MB/s",
    "tiktoken MB/s",
    "HF MB/s",
    "ours/tiktoken",
    "ids = tiktoken",
    "HF ids = tiktoken",
    "bytepair peak MiB",
    "tiktoken peak MiB",
    "HF peak MiB",
    "before MiB (bytepair/tiktoken)",
]
DECODE_HEADER = [
    "ranks",
    "corpus",
    "bytepair MB/s",
    "tiktoken MB/s",
    "HF MB/s",
    "ours/tiktoken",
    "decode(encode(text)) == text",
    "bytepair peak MiB",
    "tiktoken peak MiB",
    "HF peak MiB",
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--ranks",
        nargs="+",
        choices=RANKS,
        default=list(RANKS),
        help="rank sets to measure with; default: %(default)s",
    )
    p.add_argument(
        "--corpus",
        nargs="+",
        default=list(DEFAULT_CORPORA),
        help="corpus names in the corpora folder (or paths), or the synthetic worst cases "
        f"{', '.join(SYNTHETIC)}; default: %(default)s",
    )
    p.add_argument(
        "--worst-case-mb",
        type=float,
        default=10.0,
        help="size of each synthetic input in MB (default %(default)s; --limit-mb caps it too)",
    )
    p.add_argument(
        "--limit-mb", type=float, default=None, help="use only the first N MB of each corpus"
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds per measurement; medians are reported (default 3)",
    )
    p.add_argument(
        "--threads",
        nargs="*",
        type=int,
        default=[1, 2],
        help="thread counts for batch encoding (default 1 2; none: no batch runs)",
    )
    p.add_argument(
        "--batch-docs",
        type=int,
        default=1000,
        help="documents per encode_batch call (default 1000)",
    )
    p.add_argument("--no-hf", dest="hf", action="store_false", help="skip HuggingFace tokenizers")
    p.add_argument(
        "--hf-limit-mb",
        type=float,
        default=4.0,
        help="give HF only the first N MB of each corpus (default %(default)s: HF is slow and one "
        "encode call on the whole text would need gigabytes for its Encoding object); 0 = no limit",
    )
    p.add_argument("--corpora-dir", type=Path, default=common.DEFAULT_CORPORA)
    p.add_argument(
        "--json",
        default="encode.json",
        help="raw results file name in bench/out/ (default %(default)s)",
    )
    # child mode (internal)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tool", choices=TOOLS, help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--task", choices=("single", "batch"), help=argparse.SUPPRESS)
    p.add_argument("--dump", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> str:
    """Run the benchmark; print and return the markdown report. Exits with an
    error (after printing) if bytepair's ids ever differ from tiktoken's."""
    args = parse_args(argv)
    if args.child:
        args.threads = args.threads[0]
        args.ranks = args.ranks[0]
        child_main(args)
        return ""
    watch = common.BuildWatch()
    tools = [t for t in TOOLS if args.hf or t != "hf"]
    if not args.hf_limit_mb:
        args.hf_limit_mb = None
    single, decode, batch, raw = [], [], [], []
    paths = [
        name if name in SYNTHETIC else str(common.corpus_path(name, args.corpora_dir))
        for name in args.corpus
    ]
    with tempfile.TemporaryDirectory(prefix="bytepair-bench-") as tmp:
        for ranks in args.ranks:
            for path in paths:
                label = input_label(path)
                # HF (for reference) is built from the GPT-2 files, and skips the worst cases.
                run_tools = [
                    t for t in tools if t != "hf" or (ranks == "gpt2" and path not in SYNTHETIC)
                ]
                for task, threads in tasks(args.threads, path in SYNTHETIC):
                    res = run_task(ranks, path, task, threads, run_tools, args, Path(tmp))
                    raw.append(
                        {"ranks": ranks, "corpus": label, "task": task, "threads": threads, **res}
                    )
                    if task == "single":
                        encode_row, decode_row = single_rows(ranks, label, res)
                        single.append(encode_row)
                        decode.append(decode_row)
                    else:
                        batch.append(batch_row(ranks, label, threads, res))
    build, changed = watch.start, watch.changed()
    common.save_json(
        args.json,
        {
            "repeat": args.repeat,
            "limit_mb": args.limit_mb,
            "build": build,
            "build_changed": changed,
            "results": raw,
        },
    )
    limit = f", first {args.limit_mb} MB" if args.limit_mb else ""
    report = "\n\n".join(
        ([f"**WARNING: {changed}; rerun.**"] if changed else [])
        + [
            "### Encoding, one `encode_ordinary` call on the whole text, 1 thread (median of "
            f"{args.repeat}{limit})",
            common.markdown_table(SINGLE_HEADER, single),
            f"### Batch encoding, documents split on blank lines, lists of {args.batch_docs} "
            f"(median of {args.repeat})",
            common.markdown_table(BATCH_HEADER, batch),
            f"### Decoding the single-call ids (median of {args.repeat})",
            common.markdown_table(DECODE_HEADER, decode),
            f"### Worst cases against prose ({PROSE}), one call, 1 thread (median of "
            f"{args.repeat})",
            common.markdown_table(WORST_HEADER, worst_case_rows(raw)),
            "ours/tiktoken > 1: bytepair is faster. Memory: with the text and the tokenizer "
            'loaded, the child\'s peak RSS is reset to its current RSS ("before"); "peak" is '
            "the high-water mark (VmHWM, MiB, max over rounds) during the encode call(s), or "
            "during decode with the ids held. It includes the text and the ids as Python lists."
            + (
                f" \\* HF was given only the first {args.hf_limit_mb:g} MB (cut at a newline; ids "
                "compared on that prefix, for batches on all its documents but the last)."
                if args.hf and args.hf_limit_mb
                else ""
            )
            + f" bytepair build: {build}.",
        ]
    )
    print(report)
    bad = [
        (r["corpus"], r["task"], r["threads"], r["checks"]["bytepair"])
        for r in raw
        if "bytepair" in r["checks"] and not r["checks"]["bytepair"]["equal"]
    ]
    if bad:
        sys.exit(f"bytepair ids differ from tiktoken's: {bad}")
    return report


if __name__ == "__main__":
    main()
