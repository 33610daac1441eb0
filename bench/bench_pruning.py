"""What a memory budget costs the merges: train with and without one and
compare the merge tables and the compression of held-out text.

Five ways a budget drops words (issue 37):

* ``sample``: training from an artifact within a budget
  (``train_from_counts(max_memory=)``, the default): every word counted at
  least t times, and a hash sample of the rarer ones, a word counted c < t
  times kept with probability c/t and counted t times (threshold sampling),
  t the smallest threshold whose sample fits;
* ``train``: the same without the sample (``load_into(sample=False)``): it
  keeps exactly the words counted at least t times, the smallest t whose
  words fit;
* ``fold``: the same, the words dropped folded into pieces of at most 8
  bytes (cut at character boundaries), the budget applied to words and pieces
  together (``WordRows::folding``), so the pairs inside rare words still count;
* ``count``: counting within a budget (``count(max_memory=)``, each worker's
  counter): lossy counting drops the words seen fewer than 2, 4, 8... times
  *so far* whenever the counts outgrow the budget, then the merge loop trains
  on what is left;
* ``count-sample``: counting within a budget by threshold sampling instead
  (``WordCounter(sample=True)``, SuperBPE's stage-2 rule): past the budget a
  word seen c < t times *so far* stays with probability c/t, and the words
  kept count at least the last t.

A budget is a fraction of what the exact run holds: for ``train``, of the
merge loop's estimated cost of every word (`TrainingCost`: 48 + 4 bytes per
byte of a word; the per-merge share is left out of both); for ``count``, of
the peak memory the exact counting grew by (its threads' tallies, then their
sum). Budgets here go below the API's 64 MiB minimum (the corpora are small),
so the core's classes are called directly.

For each corpus and fraction: distinct words, pre-tokens and text bytes
(count x length) kept, as the counts trained on say (a sample's estimates);
the threshold t; how many of the exact run's first N merges (N = 1k,
8k, 32k) are among the first N of the budgeted run; how many merges the two
share from the first on (the common prefix); bytes per token on held-out text
against the exact tokenizer's. Time and memory of each stage: counting
(`bytepair.count`, the local engine: wall time and the growth of its whole
process tree's RSS at its largest, sampled every 0.5 s), loading within the budget (``load``:
`load_into` or counting within it) and the merge loop (``train``): wall
seconds, and for load the peak RSS growth over the RSS before loading, for
train the merge loop's peak growth over the RSS before it plus what the loaded
counter held (VmHWM reset before each; the kept-words statistics are taken
between the two stages, off the clock and out of the peaks).

Corpora: ``all`` (every file of the corpora folder, blank-line separated
paragraphs, every 10th held out, 130 MB) or ``heaps:DIR`` (the files of a
`gen_heaps_corpus.py` folder; held out: 64 MB more of it with another seed).

Usage::

    python bench/bench_pruning.py --corpus all
    python bench/bench_pruning.py --corpus heaps:/work/big/h1 --fractions 0.25 0.1
    python bench/bench_pruning.py --fractions 0.1 --modes sample train   # no counting budget
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import common

import bytepair
from bytepair import _core
from bytepair.train import TrainingStats
from bytepair.train_learn import learn
from bytepair.train_plan import plan_training

NS = (1000, 8000, 32000)
PER_WORD, PER_BYTE = 48, 4  # bytepair_core::train::budget::TrainingCost


def prepare(corpus: str, work: Path) -> tuple[list[str], str]:
    """(training files, held-out text file) of `corpus`."""
    if corpus == "all":
        paragraphs = common._paragraphs(common.MIXES["all"])
        train = work / "train.txt"
        train.write_bytes(b"\n\n".join(p for i, p in enumerate(paragraphs) if i % 10))
        held = work / "heldout.txt"
        held.write_bytes(b"\n\n".join(p for i, p in enumerate(paragraphs) if i % 10 == 0))
        return [str(train)], str(held)
    folder = Path(corpus.removeprefix("heaps:"))
    sys.path.insert(0, str(common.BENCH_DIR))
    import gen_heaps_corpus as gen

    gen._init(3)
    held = work / "heldout.txt"
    gen.write_file(str(held), 64 * 10**6, (12345, 0), 1.36)
    gen._STATE.clear()  # the templates, out of the stages' memory
    return sorted(str(p) for p in folder.glob("heaps-*.txt")), str(held)


def word_stats(items) -> dict[str, int]:
    """Distinct words, pre-tokens, bytes of the distinct words and bytes of
    text (count x length) of (word, count) items."""
    words = total = nbytes = text = 0
    for w, c in items:
        words += 1
        total += c
        nbytes += len(w)
        text += c * len(w)
    return {"words": words, "pre_tokens": total, "bytes": nbytes, "text": text}


def train_one(counter: _core.WordCounter, merges: int, threads: int | None) -> bytepair.Tokenizer:
    plan = plan_training(256 + merges, [], pattern="gpt2")
    return learn(counter, plan, TrainingStats(), num_threads=threads, progress=False)


def compare(exact: list, other: list) -> dict[str, float]:
    """Share of the first N merges of `exact` that `other` has among its first
    N, and the number of merges the two share from the first on."""
    out = {}
    for n in NS:
        if len(exact) >= n:
            out[f"set_{n}"] = len(set(exact[:n]) & set(other[:n])) / n
    out["prefix"] = next((i for i, (x, y) in enumerate(zip(exact, other)) if x != y), len(other))
    return out


def bytes_per_token(tok: bytepair.Tokenizer, text: str, nbytes: int) -> float:
    return nbytes / len(tok.encode_to_numpy(text, disallowed_special=(), num_threads=None))


def trim_heap() -> None:
    """Give freed heap pages back (glibc), so RSS baselines are not stale."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class TreePeak:
    """The growth of the RSS of this process and its descendants (the counting
    pool's workers) at its largest, sampled every 0.5 s until `stop`, in MiB."""

    def __init__(self) -> None:
        import threading

        from bench_terabyte import tree_rss

        self.base = tree_rss(os.getpid())
        self.peak = self.base
        self._done = threading.Event()

        def sample() -> None:
            while not self._done.wait(0.5):
                self.peak = max(self.peak, tree_rss(os.getpid()))

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return (self.peak - self.base) / 2**20


MODES = ("sample", "train", "fold", "count", "count-sample")


def run(
    corpus: str,
    fractions: list[float],
    merges: int,
    threads: int | None,
    work: Path,
    modes: tuple[str, ...] = MODES,
) -> list:
    train_files, held_path = prepare(corpus, work)
    held = Path(held_path).read_text(encoding="utf-8")
    held_bytes = len(held.encode())
    common.log(f"{corpus}: counting {len(train_files)} file(s)")
    count_memory = 0
    if {"count", "count-sample"} & set(modes):
        common.reset_peak_rss()
        before = common.current_rss_mib()
        exact_counter = _core.WordCounter("gpt2", [])
        exact_counter.count_files(train_files, threads)
        count_memory = int((common.peak_rss_mib() - before) * 2**20)
        del exact_counter
    start, tree = time.perf_counter(), TreePeak()
    counts = bytepair.count(train_files, work / "counts", progress=False)
    count_stage = {"seconds": time.perf_counter() - start, "tree_peak_mib": tree.stop()}
    common.log(
        f"  counted in {count_stage['seconds']:.0f} s, {count_stage['tree_peak_mib']:.0f} MiB"
    )
    stats = word_stats(counts.items())
    rows = []

    def record(mode: str, fraction: float, budget: int | None, counter, load: dict):
        kept = stats if mode == "exact" else word_stats(counter.items())
        threshold = counter.pruned[2]
        trim_heap()  # the list of items, before the merge loop's peak
        # What the list leaves in pymalloc's arenas stays out: the merge loop's
        # growth over the RSS before it, plus what the loaded counter held.
        before = common.current_rss_mib()
        common.reset_peak_rss()
        start = time.perf_counter()
        tok = train_one(counter, merges, threads)
        train_s = time.perf_counter() - start
        train_mib = common.peak_rss_mib() - before + load["held_mib"]
        rows.append(
            {
                "corpus": corpus,
                "mode": mode,
                "fraction": fraction,
                "budget": budget,
                "words_kept": kept["words"] / stats["words"],
                "pre_tokens_kept": kept["pre_tokens"] / stats["pre_tokens"],
                "text_kept": kept["text"] / stats["text"],
                "threshold": threshold,
                "merges": [a + b"\x00" + b for a, b in tok.merges],
                "bytes_per_token": bytes_per_token(tok, held, held_bytes),
                "load_seconds": load["seconds"],
                "load_peak_mib": load["peak_mib"],
                "train_seconds": train_s,
                "train_peak_mib": train_mib,
                "count_stage": count_stage,
            }
        )
        same = compare(rows[0]["merges"], rows[-1]["merges"]).get(f"set_{NS[-1]}", 0)
        common.log(
            f"  {mode} {fraction}: {rows[-1]['bytes_per_token']:.4f} bytes/token, "
            f"{same:.2%} of the first {NS[-1]} merges, t {threshold}, "
            f"load {load['seconds']:.0f} s {load['peak_mib']:.0f} MiB, "
            f"train {train_s:.0f} s {train_mib:.0f} MiB"
        )

    def timed(make) -> tuple:
        """Run `make()` (it returns (budget, counter)): its time and peak RSS growth."""
        trim_heap()
        common.reset_peak_rss()
        base, start = common.current_rss_mib(), time.perf_counter()
        budget, counter = make()
        seconds = time.perf_counter() - start
        load = {
            "seconds": seconds,
            "peak_mib": common.peak_rss_mib() - base,
            "held_mib": common.current_rss_mib() - base,
        }
        return budget, counter, load

    def exact() -> tuple[None, _core.WordCounter]:
        counter = _core.WordCounter("gpt2", [])
        counts.load_into(counter)
        return None, counter

    record("exact", 1.0, *timed(exact))
    cost = PER_WORD * stats["words"] + PER_BYTE * stats["bytes"]
    # merges=0: the whole budget for the words (the per-merge share is left out)
    run = {"ids": 256 + merges, "merges": 0}

    def load(budget: int, **how) -> tuple[int, _core.WordCounter]:
        counter = _core.WordCounter("gpt2", [])
        fold = {"fold": True} if how.pop("fold", False) else {}
        counts.load_into(counter, max_memory=budget, run=run | fold, **how)
        return budget, counter

    def count(budget: int, **how) -> tuple[int, _core.WordCounter]:
        counter = _core.WordCounter("gpt2", [], max_memory=budget, **how)
        counter.count_files(train_files, threads)
        return budget, counter

    ways = {
        "sample": lambda f: load(int(f * cost)),
        "train": lambda f: load(int(f * cost), sample=False),
        "fold": lambda f: load(int(f * cost), sample=False, fold=True),
        "count": lambda f: count(int(f * count_memory)),
        "count-sample": lambda f: count(int(f * count_memory), sample=True),
    }
    for f in fractions:
        for mode in modes:
            record(mode, f, *timed(functools.partial(ways[mode], f)))
    exact = rows[0]["merges"]
    for row in rows:
        row.update(compare(exact, row["merges"]))
        row["bytes_per_token_vs_exact"] = row["bytes_per_token"] / rows[0]["bytes_per_token"] - 1
        row["merges"] = len(row["merges"])
    return rows


def table(rows: list[dict]) -> str:
    header = ["corpus", "budget", "fraction", "words kept", "pre-tokens kept", "text kept", "t"]
    header += [f"same first {n // 1000}k" for n in NS]
    header += ["common prefix", "held-out bytes/token", "vs exact"]
    header += ["load s", "load MiB", "train s", "train MiB"]
    body = []
    for r in rows:
        cells = [
            r["corpus"],
            r["mode"],
            "1" if r["mode"] == "exact" else f"1/{round(1 / r['fraction'])}",
            f"{r['words_kept']:.1%}",
            f"{r['pre_tokens_kept']:.2%}",
            f"{r['text_kept']:.2%}",
            str(r["threshold"]),
        ]
        cells += [f"{r[f'set_{n}']:.2%}" if f"set_{n}" in r else "–" for n in NS]
        cells += [
            str(r["prefix"]),
            f"{r['bytes_per_token']:.4f}",
            f"{r['bytes_per_token_vs_exact']:+.2%}",
            f"{r['load_seconds']:.0f}",
            f"{r['load_peak_mib']:.0f}",
            f"{r['train_seconds']:.0f}",
            f"{r['train_peak_mib']:.0f}",
        ]
        body.append(cells)
    return common.markdown_table(header, body)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", nargs="+", default=["all"], help="all, or heaps:DIR")
    p.add_argument("--fractions", nargs="+", type=float, default=[0.5, 0.25, 0.1, 0.05])
    p.add_argument("--merges", type=int, default=32000)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--work-dir", type=Path, default=None, help="keep the inputs here")
    args = p.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="bench-pruning-"))
    rows = []
    try:
        for corpus in args.corpus:
            sub = work / corpus.replace("/", "_").replace(":", "_")
            sub.mkdir(parents=True, exist_ok=True)
            rows += run(corpus, args.fractions, args.merges, args.threads, sub, tuple(args.modes))
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    common.save_json("pruning.json", {"rows": rows, "host": os.uname().nodename})


if __name__ == "__main__":
    sys.exit(main())
