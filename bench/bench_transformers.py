"""transformers' fast tokenizers as served by bytepair (``bytepair.patch_transformers()``)
against unpatched transformers (HF tokenizers' backend) and fastokens' patch
(``fastokens.patch_transformers()``), on the same tokenizer folder and input,
in the same run; tiktoken's ``encode`` beside them for the per-call cost of a
short prompt.

Tokenizer folders (made once under bench/out/transformers/, offline):

  - ``gpt4``: OpenAI's cl100k_base ranks (the ``bpe-openai`` wheel) with the
    cl100k pre-tokenizer (Split(cl100k regex) + ByteLevel, one of bytepair's
    presets), Llama 3's special tokens after the ranks and its post-processor
    (ByteLevel, then a template that puts ``<|begin_of_text|>`` first);
  - ``llama3``: the same with Llama 3's own Split regex (bytepair's ``llama3``
    preset): the layout of Llama 3's tokenizer.json;
  - ``qwen``: the same ranks with Qwen2's pipeline (NFC, Split(Qwen2's regex),
    ByteLevel), which bytepair runs on its general pipeline path, the Split on
    its ``qwen2`` preset;
  - ``gpt2``: GPT-2's own vocab.json and merges.txt (../shared/corpora/cs336), ByteLevel;
  - ``llama2``: a SentencePiece-style BPE, mistral-common's ``tokenizer.model.v1``
    (Mistral 7B v0.1, Llama 2's recipe: 32,000 pieces, byte fallback) in Llama
    2's tokenizer.json layout (Prepend + Replace normalizer, ByteFallback
    decoder, ``<s>`` template), loaded as transformers 5's ``LlamaTokenizer``
    (which rebuilds it with a Metaspace pre-tokenizer); no tiktoken column;
  - ``llama2-file``: the same file loaded as it is (``PreTrainedTokenizerFast``).

Rows, each a median over ``--repeat`` rounds (tools interleaved, one fresh
process per tool and round):

  - ``batch``: ``tok(docs)``, 1,000 documents (paragraphs of the corpus);
    also its CPU time (``time.process_time``: every thread of the process), a
    row ``batch, CPU time``, the measure that holds on a shared machine;
  - ``batch padded``: ``tok(docs, padding=True, truncation=True, max_length=512,
    return_tensors="np")``, and its CPU time;
  - ``prompt call`` / ``prompt encode``: ``tok(p)`` / ``tok.encode(p)`` for
    prompts of ~100 characters (1,000 distinct, cycled), microseconds per call;
    tiktoken's ``encode(p)`` of the same prompts with the same ranks and regex
    (no NFC for ``qwen``);
  - ``decode 1 token``: ``tok.decode([i])`` for each id of a generated text (the
    ids of a 1,000-token document), microseconds per token.

A tool whose patch cannot load the folder (fastokens on ``llama2``: its
Tokenizer refuses the Metaspace pre-tokenizer ``LlamaTokenizer`` builds, and
``from_pretrained`` raises)
has "–" in every row; the log names the error.

Every tool's outputs are compared with unpatched transformers' (column "= HF").

    python bench/bench_transformers.py              # gpt4, llama3, qwen on enwiki, 5 rounds
    python bench/bench_transformers.py --tokenizer gpt2 --corpus code --repeat 3
    python bench/bench_transformers.py --baseline /tmp/main/python   # also another bytepair build

``--baseline DIR`` adds a tool, ``baseline``: bytepair imported from DIR (a
``python/`` folder with its built extension, e.g. main's), run with the others,
interleaved; its column and the ratio baseline / bytepair join the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    DEFAULT_CORPORA,
    OUT_DIR,
    corpus_label,
    corpus_path,
    emit,
    fmt,
    log,
    markdown_table,
    median,
    peak_rss_mib,
    run_child,
)

FOLDERS = OUT_DIR / "transformers"
TOOLS = ("hf", "bytepair", "fastokens", "tiktoken")
ROWS = ("batch", "batch padded", "prompt call", "prompt encode", "decode 1 token")
LLAMA3_SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
]
QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3 = QWEN2.replace(r"|\p{N}|", r"|\p{N}{1,3}|")
REGEX = {"llama3": LLAMA3, "qwen": QWEN2}


# ---- the tokenizer folders ------------------------------------------------------------------


def folder(name: str, corpora: Path) -> Path:
    """The transformers folder of tokenizer `name`, made on first use."""
    path = FOLDERS / name
    if (path / "tokenizer.json").exists():
        return path
    import bytepair

    if name in ("llama2", "llama2-file"):
        return llama2_folder(
            path, "LlamaTokenizer" if name == "llama2" else "PreTrainedTokenizerFast"
        )
    if name == "gpt2":
        tok = bytepair.Tokenizer.from_gpt2_files(
            corpora / "cs336" / "gpt2_vocab.json", corpora / "cs336" / "gpt2_merges.txt"
        )
        tok.save_pretrained(path, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
        return path
    base = bytepair.get_encoding("cl100k_base")
    vocab = {i: b for b, i in base.mergeable_ranks.items()}
    specials = {t: len(vocab) + k for k, t in enumerate(LLAMA3_SPECIALS)}
    tok = bytepair.Tokenizer(vocab, base.merges, specials, pattern="cl100k", _merges_checked=True)
    tok.save_pretrained(
        path, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", pad_token="<|end_of_text|>"
    )
    doc = json.loads((path / "tokenizer.json").read_text(encoding="utf-8"))
    if name in REGEX:
        split = {"type": "Split", "pattern": {"Regex": REGEX[name]}, "behavior": "Isolated"}
        doc["pre_tokenizer"]["pretokenizers"][0] = {**split, "invert": False}
    if name == "qwen":
        doc["normalizer"] = {"type": "NFC"}
    else:
        doc["post_processor"] = llama3_post_processor(specials["<|begin_of_text|>"])
    (path / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def llama2_folder(path: Path, tokenizer_class: str) -> Path:
    """Llama 2's layout over mistral-common's v1 SentencePiece model (see the module docstring)."""
    import mistral_common

    from bytepair.formats.spm import to_hf_json
    from bytepair.spm_tokenizer import SentencePieceTokenizer

    model = Path(mistral_common.__file__).parent / "data" / "tokenizer.model.v1"
    doc = json.loads(to_hf_json(SentencePieceTokenizer(model.read_bytes())))
    space = "\u2581"
    doc["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Prepend", "prepend": space},
            {"type": "Replace", "pattern": {"String": " "}, "content": space},
        ],
    }
    doc["decoder"]["decoders"] = [
        {"type": "Replace", "pattern": {"String": space}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0},
    ]
    template = llama3_post_processor(doc["model"]["vocab"]["<s>"])["processors"][1]
    doc["post_processor"] = json.loads(json.dumps(template).replace("<|begin_of_text|>", "<s>"))
    path.mkdir(parents=True, exist_ok=True)
    (path / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    config = {"tokenizer_class": tokenizer_class, "bos_token": "<s>", "eos_token": "</s>"}
    config |= {"unk_token": "<unk>", "pad_token": "</s>", "model_max_length": 4096}
    (path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def llama3_post_processor(bos_id: int) -> dict:
    bos = "<|begin_of_text|>"
    byte_level = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False}
    return {
        "type": "Sequence",
        "processors": [
            {**byte_level, "use_regex": True},
            {
                "type": "TemplateProcessing",
                "single": [
                    {"SpecialToken": {"id": bos, "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}},
                ],
                "pair": [
                    {"SpecialToken": {"id": bos, "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": bos, "type_id": 1}},
                    {"Sequence": {"id": "B", "type_id": 1}},
                ],
                "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}},
            },
        ],
    }


# ---- inputs ---------------------------------------------------------------------------------


def documents(corpus: Path, n: int) -> list[str]:
    """The first `n` paragraphs (blank-line separated, over 40 characters) of the corpus."""
    text = corpus.read_bytes()[:20_000_000].decode("utf-8", "ignore")
    return [p for p in text.split("\n\n") if len(p.strip()) > 40][:n]


def prompts(docs: list[str], n: int = 1000) -> list[str]:
    """`n` prompts of ~100 characters: the start of each document, cut at a space."""
    out = []
    for d in docs:
        cut = d.find(" ", 95)
        out.append(d[: cut if 0 < cut < 120 else 100])
    return (out * (n // max(len(out), 1) + 1))[:n]


# ---- one measurement (child) ----------------------------------------------------------------


def per_call(call, items: list, min_seconds: float = 0.5) -> float:
    """Seconds per call of `call(item)` over `items`, repeated for at least `min_seconds`."""
    calls, start = 0, time.perf_counter()
    while True:
        for item in items:
            call(item)
        calls += len(items)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / calls


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def child(args: argparse.Namespace) -> None:
    docs = documents(Path(args.corpus), args.docs)
    short = prompts(docs)
    out: dict = {"seconds": {}, "digest": {}}
    if args.tool == "tiktoken":
        enc = tiktoken_encoding(args.name, Path(args.folder))
        enc.encode(short[0])
        out["seconds"]["prompt encode"] = per_call(enc.encode, short)
        out["peak_mib"] = peak_rss_mib()
        emit(out)
        return
    import transformers

    if args.tool == "bytepair":
        import bytepair

        bytepair.patch_transformers()
    elif args.tool == "fastokens":
        import fastokens

        fastokens.patch_transformers()
    try:
        tok = transformers.AutoTokenizer.from_pretrained(args.folder)
    except Exception as e:  # fastokens' patch raises on a Metaspace pre-tokenizer (llama2)
        emit({**out, "peak_mib": peak_rss_mib(), "error": f"{type(e).__name__}: {e}"})
        return
    tok(docs[:2])  # bytepair reads the backend on the first call
    rows = {
        "batch": lambda: tok(docs),
        "batch padded": lambda: tok(
            docs, padding=True, truncation=True, max_length=512, return_tensors="np"
        ),
    }
    out["cpu"] = {}
    for row, call in rows.items():
        times, cpu = [], []
        for _ in range(args.inner):
            start, cpu_start = time.perf_counter(), time.process_time()
            result = call()
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
        out["seconds"][row] = median(times)
        out["cpu"][row] = median(cpu)
        out["digest"][row] = digest({k: _plain(v) for k, v in result.items()})
    out["seconds"]["prompt call"] = per_call(tok, short)
    out["seconds"]["prompt encode"] = per_call(tok.encode, short)
    out["digest"]["prompt"] = digest([tok.encode(p) for p in short[:100]])
    generated = tok.encode(max(docs, key=len), add_special_tokens=False)[:1000]
    singles = [[i] for i in generated]
    out["seconds"]["decode 1 token"] = per_call(tok.decode, singles)
    out["digest"]["decode"] = digest([tok.decode(s) for s in singles])
    out["peak_mib"] = peak_rss_mib()
    emit(out)


def tiktoken_encoding(name: str, path: Path):
    """A tiktoken Encoding of the folder's ranks and regex (its added tokens as special tokens)."""
    import tiktoken

    import bytepair

    tok = bytepair.Tokenizer.load(path / "tokenizer.json")
    regex = REGEX.get(name, tok.pattern_regex)
    return tiktoken.Encoding(
        name,
        pat_str=regex,
        mergeable_ranks=tok.mergeable_ranks,
        special_tokens=tok.special_tokens,
    )


def _plain(value):
    return value.tolist() if hasattr(value, "tolist") else value


# ---- the table (parent) ---------------------------------------------------------------------


def measure(name: str, corpus: Path, args: argparse.Namespace) -> list[list[str]]:
    path = folder(name, args.corpora_dir)
    # No tiktoken form of a SentencePiece model.
    tools = [t for t in args.tools if not (name.startswith("llama2") and t == "tiktoken")]
    tools += ["baseline"] if args.baseline else []
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    for r in range(args.repeat):
        order = tools if r % 2 == 0 else list(reversed(tools))
        for tool in order:
            env = None
            if tool == "baseline":
                env = {**os.environ, "PYTHONPATH": str(args.baseline)}
            child_args = ["--tool", "bytepair" if tool == "baseline" else tool, "--name", name]
            child_args += ["--folder", str(path), "--corpus", str(corpus), "--docs", str(args.docs)]
            child_args += ["--inner", str(args.inner)]
            runs[tool].append(run_child(Path(__file__), child_args, env))
            got = runs[tool][-1]
            what = got.get("error") or f"{got['seconds']}, CPU {got.get('cpu')}"
            log(f"{name} {corpus_label(corpus)} round {r + 1} {tool}: {what}")
    return table_rows(name, corpus, runs)


def table_rows(name: str, corpus: Path, runs: dict) -> list[list[str]]:
    def med(tool: str, row: str) -> float | None:
        values = [r["seconds"][row] for r in runs.get(tool, []) if row in r["seconds"]]
        return median(values) if values else None

    def cpu(tool: str, row: str) -> float | None:
        values = [r["cpu"][row] for r in runs.get(tool, []) if row in r.get("cpu", {})]
        return median(values) if values else None

    def same(tool: str, row: str) -> str:
        key = {"prompt call": "prompt", "prompt encode": "prompt", "decode 1 token": "decode"}
        key = key.get(row, row)
        if tool not in runs or "hf" not in runs or key not in runs[tool][0]["digest"]:
            return "–"
        return "yes" if runs[tool][0]["digest"][key] == runs["hf"][0]["digest"][key] else "NO"

    rows = []
    for row in ROWS:
        unit, scale = ("ms", 1e3) if row.startswith("batch") else ("µs", 1e6)
        hf, ours, fast = med("hf", row), med("bytepair", row), med("fastokens", row)
        tk, base = med("tiktoken", row), med("baseline", row)
        cells = [
            name,
            corpus_label(corpus),
            f"{row} ({unit})",
            fmt(hf and hf * scale, 1),
            fmt(ours and ours * scale, 1),
            fmt(fast and fast * scale, 1),
            fmt(tk and tk * scale, 1),
            fmt(hf and ours and hf / ours),
            fmt(fast and ours and fast / ours),
            fmt(tk and ours and ours / tk) if row == "prompt encode" else "–",
            same("bytepair", row),
            same("fastokens", row),
        ]
        if "baseline" in runs:
            cells += [fmt(base and base * scale, 1), fmt(base and ours and base / ours)]
        rows.append(cells)
    for row in ("batch", "batch padded"):
        hf, ours, fast, base = (cpu(t, row) for t in ("hf", "bytepair", "fastokens", "baseline"))
        if ours is None:
            continue
        cells = [name, corpus_label(corpus), f"{row}, CPU time (ms)"]
        cells += [fmt(v and v * 1e3, 1) for v in (hf, ours, fast)] + ["–"]
        cells += [fmt(hf and hf / ours), fmt(fast and fast / ours), "–", "–", "–"]
        if "baseline" in runs:
            cells += [fmt(base and base * 1e3, 1), fmt(base and base / ours)]
        rows.append(cells)
    peak = {t: max(r["peak_mib"] for r in rs) for t, rs in runs.items() if rs}
    rows.append(
        [name, corpus_label(corpus), "peak RSS (MiB)"]
        + [fmt(peak.get(t), 0) for t in ("hf", "bytepair", "fastokens", "tiktoken")]
        + ["–"] * 5
        + ([fmt(peak.get("baseline"), 0), "–"] if "baseline" in runs else [])
    )
    return rows


HEADER = [
    "tokenizer",
    "corpus",
    "row",
    "HF",
    "bytepair",
    "fastokens",
    "tiktoken",
    "HF / bytepair",
    "fastokens / bytepair",
    "bytepair / tiktoken",
    "bytepair = HF",
    "fastokens = HF",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tokenizer",
        nargs="+",
        default=["gpt4", "llama3", "qwen"],
        choices=["gpt4", "llama3", "qwen", "gpt2", "llama2", "llama2-file"],
    )
    ap.add_argument("--corpus", nargs="+", default=["enwiki"])
    ap.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    ap.add_argument("--repeat", type=int, default=5, help="rounds, tools interleaved (default 5)")
    ap.add_argument("--inner", type=int, default=3, help="batch calls per round (median)")
    ap.add_argument("--docs", type=int, default=1000, help="documents per batch (default 1000)")
    ap.add_argument("--corpora-dir", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument(
        "--baseline", type=Path, help="also run bytepair imported from this python/ folder"
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--tool", "--name", "--folder"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.corpus = args.corpus[0]
        return child(args)
    rows = []
    for name in args.tokenizer:
        for c in args.corpus:
            rows += measure(name, corpus_path(c, args.corpora_dir), args)
    header = HEADER + (["baseline", "baseline / bytepair"] if args.baseline else [])
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
