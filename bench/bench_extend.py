"""Extending a tokenizer: bytepair (``train(..., base=)``) vs ``bpe-continue``.

Both extend GPT-2 (read from ``cs336/gpt2_vocab.json`` + ``gpt2_merges.txt`` and
saved as a tokenizer.json, which bpe-continue takes) by the same number of new
merges learned on the same corpus file, each tool in its own fresh subprocess,
rounds interleaved; the table shows medians of time and peak RSS (the child's
own high-water mark, ``common.peak_rss_mib``).

  - bytepair: ``bytepair.train(path, vocab_size, base=gpt2)``: the file is one
    document, each distinct word split by GPT-2's merges with the encoder, pair
    counts seeded from those tokens.
  - bpe-continue: ``continue_training(gpt2_json, files=[path], vocab_size=...)``
    (HF tokenizers underneath; reads the file line by line).

Timed: the training call only (not start-up, imports or loading GPT-2). Also
reported, from the first round: tokens per byte of the corpus with GPT-2 and
with each extension (bytepair's encoder for both), and how many new merges the
two agree on from the first (HF's line-wise reading and its tie-break differ
from bytepair's one-document reading and byte-order tie-break).

    python bench/bench_extend.py                        # code.txt, +2048 merges, 3 rounds
    python bench/bench_extend.py --corpus code --new 8192 --repeat 5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

TOOLS = ("bytepair", "bpe-continue")


def gpt2_json(corpora_dir: Path, out: Path) -> Path:
    import bytepair

    root = corpora_dir / "cs336"
    tok = bytepair.Tokenizer.from_gpt2_files(root / "gpt2_vocab.json", root / "gpt2_merges.txt")
    tok.save(out)
    return out


def child_main(args: argparse.Namespace) -> None:
    import bytepair

    base = bytepair.Tokenizer.load(args.base)
    vocab_size = base.vocab_size + args.new
    if args.tool == "bytepair":
        start = time.perf_counter()
        tok = bytepair.train(args.corpus, vocab_size, base=base, progress=False)
        seconds = time.perf_counter() - start
    else:
        from bpe_continue import continue_training

        start = time.perf_counter()
        ext = continue_training(
            args.base, files=[args.corpus], vocab_size=vocab_size, show_progress=False
        )
        seconds = time.perf_counter() - start
        ext.save(args.dump)
        tok = bytepair.Tokenizer.load(args.dump)
    rss = common.peak_rss_mib()
    if args.dump:
        tok.save(args.dump)
    common.emit({"seconds": seconds, "rss_mib": rss})


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default="code")
    p.add_argument("--new", type=int, default=2048, help="new merges to learn")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--corpora-dir", type=Path, default=common.DEFAULT_CORPORA)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tool", choices=TOOLS)
    p.add_argument("--base")
    p.add_argument("--dump", default="")
    args = p.parse_args(argv)
    if args.child:
        child_main(args)
        return ""
    import bytepair

    path = common.corpus_path(args.corpus, args.corpora_dir)
    with tempfile.TemporaryDirectory() as tmp:
        base = gpt2_json(args.corpora_dir, Path(tmp) / "gpt2.json")
        runs: dict[str, list[dict]] = {t: [] for t in TOOLS}
        dumps = {t: Path(tmp) / f"{t}.json" for t in TOOLS}
        for r in range(args.repeat):
            for tool in TOOLS[r % 2 :] + TOOLS[: r % 2]:
                extra = ["--dump", str(dumps[tool])] if r == 0 or tool == "bpe-continue" else []
                common.log(f"round {r + 1}: {tool}")
                runs[tool].append(
                    common.run_child(
                        Path(__file__),
                        [
                            "--tool",
                            tool,
                            "--base",
                            str(base),
                            "--corpus",
                            str(path),
                            "--new",
                            str(args.new),
                            *extra,
                        ],
                    )
                )
        gpt2 = bytepair.Tokenizer.load(base)
        text = path.read_text(encoding="utf-8")
        n_bytes = len(text.encode("utf-8"))
        result = {t: bytepair.Tokenizer.load(dumps[t]) for t in TOOLS}
    new = {t: tok.merges[len(gpt2.merges) :] for t, tok in result.items()}
    agree = next(
        (i for i, (a, b) in enumerate(zip(*new.values())) if a != b), min(map(len, new.values()))
    )
    rows = [["GPT-2 (base)", "", "", f"{len(gpt2.encode_ordinary(text)) / n_bytes:.4f}"]]
    for t in TOOLS:
        rows.append(
            [
                t,
                common.fmt(common.median([x["seconds"] for x in runs[t]])),
                f"{common.median([x['rss_mib'] for x in runs[t]]):.0f}",
                f"{len(result[t].encode_ordinary(text)) / n_bytes:.4f}",
            ]
        )
    table = common.markdown_table(
        ["extension of GPT-2", "time (s)", "peak RSS (MiB)", "tokens/byte"], rows
    )
    report = (
        f"Extending GPT-2 by {args.new} merges on {common.corpus_label(path)} "
        f"(median of {args.repeat}; first {agree} new merges agree)\n\n{table}\n"
    )
    print(report)
    return report


if __name__ == "__main__":
    main()
