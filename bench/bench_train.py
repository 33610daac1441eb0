"""Training benchmark: bytepair vs HuggingFace tokenizers vs rustbpe.

Each tool trains a byte-level BPE tokenizer on the same corpus file with the same
vocabulary size and the special token ``<|endoftext|>``, in its own fresh
subprocess, so peak RSS (the child's own high-water mark, see
``common.peak_rss_mib``) is per tool. Runs of the
tools are interleaved (round r runs every tool once, in rotated order), so drift
in machine load hits all of them alike; the table shows medians.

What each tool is given (the same file every time):
  - bytepair: ``bytepair.train(path, vocab_size, special_tokens=[EOT])``; the whole
    file is one document, streamed and counted in parallel. Pattern: GPT-2.
  - HF tokenizers: ``models.BPE`` + ``pre_tokenizers.ByteLevel(add_prefix_space=False)``
    (its built-in GPT-2 pattern) + ``trainers.BpeTrainer(vocab_size,
    special_tokens=[EOT], initial_alphabet=ByteLevel.alphabet())``, trained with
    ``Tokenizer.train(files=[path])``, which reads the file line by line.
  - rustbpe: ``Tokenizer.train_from_iterator(open(path), vocab_size - 1,
    pattern=<GPT-2 pattern>)``: the file object yields lines (like HF). rustbpe
    has no special tokens and counts 256 + merges, so it is asked for one id less:
    all three learn the same number of merges.

Timed: the training call only (plus building HF's model and trainer objects),
including reading the file; not interpreter start-up or imports.

Also checked, on the first round: whether bytepair's merges equal HF's (HF's
byte-level strings converted back to bytes with ``bytepair.formats.str_to_token``)
and whether bytepair's merged tokens, rank by rank, equal rustbpe's. Both peers
see lines rather than one document (a blank line cannot form ``"\\n\\n"``), and
they break count ties differently (HF and rustbpe: smallest pair of ids; bytepair:
greatest pair of bytes), so the report says how many leading merges agree.

Usage::

    python bench/bench_train.py                       # tinystories head + enwiki, vocab 32000
    python bench/bench_train.py --corpus code multilingual --vocab-size 10000 32000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import common

TOOLS = ("bytepair", "hf", "rustbpe")
DEFAULT_CORPORA = ("tinystories_v1_train_head", "enwiki")
DEFAULT_VOCAB = (32000,)


# ---- child side: one training run --------------------------------------------
# Each trainer returns (seconds, trained object); each dumper turns the object
# into JSON for the merge comparison, after the peak RSS has been read.


def train_bytepair(path: str, vocab_size: int, threads: int | None):
    """``bytepair.train`` on the file (one document, streamed, counted in parallel)."""
    import warnings

    import bytepair

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # "stopped early" on small corpora: the merge count is reported
        tok = bytepair.train(
            path, vocab_size, special_tokens=[common.EOT], progress=False, num_threads=threads
        )
    return time.perf_counter() - start, tok


def train_bytepair_lines(path: str, vocab_size: int, threads: int | None):
    """bytepair given what the peers see: every line of the file is a document
    (``train_from_iterator(open(path))``). For the merge comparison."""
    import warnings

    import bytepair

    start = time.perf_counter()
    with warnings.catch_warnings(), open(path, encoding="utf-8") as f:
        warnings.simplefilter("ignore")
        tok = bytepair.train_from_iterator(
            f, vocab_size, special_tokens=[common.EOT], progress=False, num_threads=threads
        )
    return time.perf_counter() - start, tok


def train_hf(path: str, vocab_size: int, threads: int | None):
    """HuggingFace tokenizers, ``Tokenizer.train(files=[path])`` (reads lines;
    threads via RAYON_NUM_THREADS, set by the parent)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    start = time.perf_counter()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[common.EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([path], trainer)
    return time.perf_counter() - start, tok


def train_rustbpe(path: str, vocab_size: int, threads: int | None):
    """rustbpe on the file's lines with the GPT-2 pattern, asked for one id less
    (it has no special tokens), so that it learns as many merges as the others."""
    import rustbpe

    from bytepair import resolve_pattern

    pattern = resolve_pattern("gpt2")
    start = time.perf_counter()
    tok = rustbpe.Tokenizer()
    with open(path, encoding="utf-8") as f:
        tok.train_from_iterator(f, vocab_size - 1, pattern=pattern)
    return time.perf_counter() - start, tok


def dump_bytepair(tok) -> dict:
    return {
        "pairs": [[a.hex(), b.hex()] for a, b in tok.merges],
        "counts": tok.training_stats.merge_counts,
    }


def dump_hf(tok) -> dict:
    merges = json.loads(tok.to_str())["model"]["merges"]
    # Newer versions store [left, right]; older ones "left right".
    return {"pairs_str": [m if isinstance(m, list) else m.split(" ") for m in merges]}


def dump_rustbpe(tok) -> dict:
    ranks = sorted(tok.get_mergeable_ranks(), key=lambda kv: kv[1])
    return {"tokens": [bytes(b).hex() for b, i in ranks if i >= 256], "pattern": tok.get_pattern()}


TRAINERS = {
    "bytepair": (train_bytepair, dump_bytepair),
    "hf": (train_hf, dump_hf),
    "rustbpe": (train_rustbpe, dump_rustbpe),
    "bytepair_lines": (train_bytepair_lines, dump_bytepair),
}


def child_main(args: argparse.Namespace) -> None:
    """Run one training, print {seconds, rss_mib, base_rss_mib, merges}; dump merges if asked."""
    train, dump = TRAINERS[args.tool]
    base = common.peak_rss_mib()
    seconds, tok = train(args.path, args.vocab_size[0], args.threads)
    rss = common.peak_rss_mib()
    data = dump(tok)
    n_merges = len(data.get("pairs") or data.get("pairs_str") or data["tokens"])
    if args.dump:
        Path(args.dump).write_text(json.dumps(data))
    common.emit(
        {
            "seconds": seconds,
            "rss_mib": rss,
            "ru_maxrss_mib": common.ru_maxrss_mib(),
            "base_rss_mib": base,
            "merges": n_merges,
        }
    )


# ---- parent side: orchestration and reporting ---------------------------------


def run_child_once(
    tool: str, path: Path, vocab_size: int, threads: int | None, dump: Path | None
) -> dict:
    """One training run of `tool` in a fresh process."""
    args = ["--tool", tool, "--path", str(path), "--vocab-size", str(vocab_size)]
    if threads is not None:
        args += ["--threads", str(threads)]
    if dump is not None:
        args += ["--dump", str(dump)]
    return common.run_child(Path(__file__), args, common.thread_env(threads))


def run_one_config(
    path: Path,
    vocab_size: int,
    tools: list[str],
    repeat: int,
    threads: int | None,
    lines_check: bool,
    tmp: Path,
) -> dict:
    """All rounds for one (corpus, vocab size): {tool: [child results]}, the merge
    comparisons, and (once, untimed in the table) bytepair trained on the lines."""
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    dumps = {t: tmp / f"{t}.json" for t in tools}
    for r in range(repeat):
        order = tools[r % len(tools) :] + tools[: r % len(tools)]
        for tool in order:
            res = run_child_once(tool, path, vocab_size, threads, dumps[tool] if r == 0 else None)
            runs[tool].append(res)
            common.log(
                f"  {common.corpus_label(path)} vocab={vocab_size} round {r + 1}/{repeat} "
                f"{tool:14s} {res['seconds']:7.2f} s  peak RSS {res['rss_mib']:7.1f} MiB  merges "
                f"{res['merges']}"
            )
    out: dict = {"runs": runs}
    if lines_check and "bytepair" in tools and len(tools) > 1:
        dumps["bytepair_lines"] = tmp / "bytepair_lines.json"
        res = run_child_once("bytepair_lines", path, vocab_size, threads, dumps["bytepair_lines"])
        out["bytepair_lines"] = res
        common.log(
            f"  {common.corpus_label(path)} vocab={vocab_size} bytepair_lines "
            f"{res['seconds']:7.2f} s"
        )
    loaded = {t: json.loads(p.read_text()) for t, p in dumps.items()}
    out["comparisons"] = compare_merges(loaded)
    return out


def leading_agreement(a: list, b: list) -> int:
    """Number of leading positions where the two lists agree."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def same_set_prefix(a: list, b: list) -> int:
    """Largest k such that the first k items of `a` and of `b` are the same set:
    agreement up to the order of merges within a prefix (e.g. tie-breaks)."""
    pending: set = set()
    best = 0
    for k, (x, y) in enumerate(zip(a, b), start=1):
        pending ^= {x}
        pending ^= {y}
        if not pending:
            best = k
    return best


def compare_merges(dumps: dict[str, dict]) -> list[dict]:
    """Compare bytepair's merge table (file input, and line input if present)
    with HF's (as pairs of bytes) and rustbpe's (as merged tokens, rank by rank)."""
    from bytepair.formats import str_to_token

    def ours(key: str) -> tuple[list[tuple[bytes, bytes]], list[int]]:
        d = dumps[key]
        return [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in d["pairs"]], d["counts"]

    peers = {}
    if "hf" in dumps:
        peers["HF"] = (
            "pairs",
            [(str_to_token(a), str_to_token(b)) for a, b in dumps["hf"]["pairs_str"]],
        )
    if "rustbpe" in dumps:
        peers["rustbpe"] = ("tokens", [bytes.fromhex(t) for t in dumps["rustbpe"]["tokens"]])
    comparisons = []
    keys = [("bytepair", "bytepair (file)")]
    if "bytepair_lines" in dumps:
        (file_pairs, _), (line_pairs, line_counts) = (
            ours("bytepair"),
            ours("bytepair_lines"),
        )
        comparisons.append(
            {
                "ours": "bytepair (lines)",
                "peer": "bytepair (file)",
                "kind": "pairs",
                **describe_difference(line_pairs, file_pairs, line_counts),
            }
        )
        if line_pairs != file_pairs:  # otherwise its comparisons with the peers are the same
            keys.append(("bytepair_lines", "bytepair (lines)"))
    for key, label in keys:
        pairs, counts = ours(key)
        for peer, (kind, theirs) in peers.items():
            mine = pairs if kind == "pairs" else [a + b for a, b in pairs]
            comparisons.append(
                {
                    "ours": label,
                    "peer": peer,
                    "kind": kind,
                    **describe_difference(mine, theirs, counts),
                }
            )
    return comparisons


def describe_difference(ours: list, theirs: list, counts: list[int]) -> dict:
    """Leading agreement, agreement up to order, overlap of the two sets, and the
    first differing ranks (in order, and as sets)."""
    n = min(len(ours), len(theirs))
    info: dict = {
        "n_ours": len(ours),
        "n_theirs": len(theirs),
        "equal": ours == theirs,
        "leading": leading_agreement(ours, theirs),
        "same_set_prefix": same_set_prefix(ours, theirs),
        "overlap": len(set(ours[:n]) & set(theirs[:n])) / n if n else 1.0,
    }
    where = {m: r for r, m in enumerate(ours)}
    for key, rank in (("first_diff", info["leading"]), ("first_set_diff", info["same_set_prefix"])):
        if rank < n:
            info[key] = {
                "rank": rank,
                "ours": repr(ours[rank]),
                "theirs": repr(theirs[rank]),
                "ours_count": counts[rank],
                "tie_with_next": rank + 1 < len(counts) and counts[rank] == counts[rank + 1],
                "theirs_rank_in_ours": where.get(theirs[rank]),
            }
    return info


def summarize(
    label: str, megabytes: float, vocab_size: int, result: dict, tools: list[str]
) -> list[str]:
    """One row of the timing table."""
    med = {
        t: common.median([r["seconds"] for r in result["runs"][t]]) if t in tools else None
        for t in TOOLS
    }
    rss = {t: max(r["rss_mib"] for r in result["runs"][t]) if t in tools else None for t in TOOLS}
    return [
        label,
        f"{megabytes:.1f}",
        str(vocab_size),
        common.fmt(med["bytepair"]),
        common.fmt(med["hf"]),
        common.fmt(med["rustbpe"]),
        common.fmt(common.ratio(med["hf"], med["bytepair"])),
        common.fmt(common.ratio(med["rustbpe"], med["bytepair"])),
        common.fmt(rss["bytepair"], 0),
        common.fmt(rss["hf"], 0),
        common.fmt(rss["rustbpe"], 0),
    ]


def merge_rows(label: str, vocab_size: int, result: dict) -> list[list[str]]:
    """Rows of the merge-agreement table for one (corpus, vocab size)."""
    rows = []
    for c in result["comparisons"]:
        rows.append(
            [
                label,
                str(vocab_size),
                f"{c['ours']} vs {c['peer']} ({c['kind']})",
                f"{c['n_ours']}/{c['n_theirs']}",
                "yes" if c["equal"] else "no",
                str(c["leading"]),
                str(c["same_set_prefix"]),
                f"{100 * c['overlap']:.2f}",
            ]
        )
    return rows


def describe_diff_note(label: str, vocab_size: int, c: dict) -> list[str]:
    """Bullet lines naming the first differing merges of one comparison."""
    notes = []
    for key, what in (("first_diff", "in order"), ("first_set_diff", "as sets")):
        d = c.get(key)
        if not d or (key == "first_set_diff" and d["rank"] == c["leading"]):
            continue
        tie = ", tied with our next merge" if d["tie_with_next"] else ""
        where = (
            "not in ours"
            if d["theirs_rank_in_ours"] is None
            else f"our rank {d['theirs_rank_in_ours']}"
        )
        notes.append(
            f"- {label} {vocab_size}, {c['ours']} vs {c['peer']}, first difference {what} at rank "
            f"{d['rank']}: ours {d['ours']} (count {d['ours_count']}{tie}), theirs {d['theirs']} "
            f"({where})"
        )
    return notes


TIME_HEADER = [
    "corpus",
    "MB",
    "vocab",
    "bytepair s",
    "HF s",
    "rustbpe s",
    "HF/ours",
    "rustbpe/ours",
    "bytepair RSS MiB",
    "HF RSS MiB",
    "rustbpe RSS MiB",
]
MERGE_HEADER = [
    "corpus",
    "vocab",
    "comparison",
    "merges ours/theirs",
    "identical",
    "leading merges equal",
    "same set up to rank",
    "same set overall %",
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--corpus",
        nargs="+",
        default=list(DEFAULT_CORPORA),
        help="corpus names in the corpora folder (or paths); default: %(default)s",
    )
    p.add_argument(
        "--vocab-size",
        nargs="+",
        type=int,
        default=list(DEFAULT_VOCAB),
        help="default: %(default)s",
    )
    p.add_argument(
        "--repeat", type=int, default=3, help="runs per tool; the median is reported (default 3)"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for every tool (bytepair num_threads, RAYON_NUM_THREADS); default all cores",
    )
    p.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    p.add_argument(
        "--no-lines-check",
        dest="lines_check",
        action="store_false",
        help="skip the extra (untimed) bytepair run on the file's lines, which shows "
        "how much of the merge difference with the peers comes from their line-by-line input",
    )
    p.add_argument("--corpora-dir", type=Path, default=common.DEFAULT_CORPORA)
    p.add_argument(
        "--json",
        default="train.json",
        help="raw results file name in bench/out/ (default %(default)s)",
    )
    # child mode (internal)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tool", choices=list(TRAINERS), help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--dump", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> str:
    """Run the benchmark; print and return the markdown report."""
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return ""
    watch = common.BuildWatch()
    tools = [t for t in TOOLS if t in args.tools]
    time_rows, mrows, notes, raw = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bytepair-bench-") as tmp:
        for name in args.corpus:
            path = common.corpus_path(name, args.corpora_dir)
            label, megabytes = common.corpus_label(path), path.stat().st_size / common.MB
            for vocab_size in args.vocab_size:
                result = run_one_config(
                    path, vocab_size, tools, args.repeat, args.threads, args.lines_check, Path(tmp)
                )
                time_rows.append(summarize(label, megabytes, vocab_size, result, tools))
                mrows += merge_rows(label, vocab_size, result)
                notes += config_notes(label, vocab_size, result)
                raw.append(
                    {
                        "corpus": label,
                        "bytes": path.stat().st_size,
                        "vocab_size": vocab_size,
                        **result,
                    }
                )
    build, changed = watch.start, watch.changed()
    common.save_json(
        args.json,
        {
            "threads": args.threads,
            "repeat": args.repeat,
            "build": build,
            "build_changed": changed,
            "results": raw,
        },
    )
    parts = [f"**WARNING: {changed}; rerun.**"] if changed else []
    parts += [
        f"### Training: median of {args.repeat} runs, threads = {args.threads or 'all cores'}",
        common.markdown_table(TIME_HEADER, time_rows),
        "Ratios > 1: bytepair is faster. RSS: peak resident memory of the child process (VmHWM, "
        f"MiB), max over runs. bytepair build: {build}.",
    ]
    if mrows:
        parts += [
            "### Merge tables compared (first run)",
            common.markdown_table(MERGE_HEADER, mrows),
        ]
    if notes:
        parts.append("\n".join(notes))
    report = "\n\n".join(parts)
    print(report)
    return report


def config_notes(label: str, vocab_size: int, result: dict) -> list[str]:
    """Notes under the tables: baseline RSS, the bytepair-on-lines run, first differences."""
    notes = []
    base = ", ".join(
        f"{t} {common.median([r['base_rss_mib'] for r in rs]):.0f}"
        for t, rs in result["runs"].items()
    )
    notes.append(f"- {label} {vocab_size}: RSS after imports, before training (MiB): {base}")
    if "bytepair_lines" in result:
        r = result["bytepair_lines"]
        notes.append(
            f"- {label} {vocab_size}: bytepair on the file's lines (one run): {r['seconds']:.2f} "
            f"s, peak RSS {r['rss_mib']:.0f} MiB"
        )
    for c in result["comparisons"]:
        if c["ours"] == "bytepair (file)" or c["peer"] == "bytepair (file)":
            notes += describe_diff_note(label, vocab_size, c)
    return notes


if __name__ == "__main__":
    main()
