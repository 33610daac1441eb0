"""Does ``train_from_counts(artifact, vocab, max_memory=X)`` stay within X?

Each run is a fresh process (``--child``) that opens the artifact, resets its
peak RSS (VmHWM) to the RSS before the call and calls the public API once;
the peak growth over that RSS is what the call held at most. Twice per
budget: as a script calls it first (pyarrow and numpy imported, and pyarrow's
readers set up, inside the call: ~75 MiB once a process), and warm, with one
batch of the artifact read before the call (what the budget covers). Also reported: the words kept
(``training_stats``), the threshold t, and how many of the exact run's first
32k merges the budgeted run has (as a set, as ``bench_pruning.py``).

    python bench/bench_budget.py COUNTS_DIR --budgets 64M 128M 256M 512M

Counts: ``bytepair.count`` of a corpus (e.g. ``gen_heaps_corpus.py``'s).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

N = 32_000


def parse_size(text: str) -> int:
    """Bytes of "64M", "1G" or a plain number."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    unit = units.get(text[-1].upper())
    return int(float(text[:-1]) * unit) if unit else int(text)


def child(counts_dir: str, vocab: int, budget: int | None, warm: bool) -> dict:
    """One call of the public API in this process: peak RSS growth, words kept,
    merges; `warm`: one batch of the artifact read before the call."""
    import bytepair

    counts = bytepair.WordCounts.open(counts_dir)
    if warm:
        next(counts.items())
    common.reset_peak_rss()
    before = common.current_rss_mib()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = bytepair.train_from_counts(counts, vocab, max_memory=budget, progress=False)
    seconds = time.perf_counter() - start
    stats = tok.training_stats
    return {
        "budget": budget,
        "peak_mib": common.peak_rss_mib() - before,
        "seconds": seconds,
        "words": counts.totals.distinct,
        "pruned_words": stats.pruned_words,
        "t": stats.pruned_min_count,
        "merges": [(a + b"\x00" + b).hex() for a, b in tok.merges[:N]],
    }


def run(counts_dir: str, vocab: int, budget: int | None, warm: bool = False) -> dict:
    args = [sys.executable, __file__, counts_dir, "--vocab", str(vocab), "--child"]
    args += [] if budget is None else ["--budgets", str(budget)]
    args += ["--warm"] if warm else []
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("counts", help="a WordCounts directory")
    parser.add_argument("--budgets", nargs="*", help="default: 64M 128M 256M 512M")
    parser.add_argument("--vocab", type=int, default=32256)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        budget = parse_size(args.budgets[0]) if args.budgets else None
        print(json.dumps(child(args.counts, args.vocab, budget, args.warm)))
        return
    budgets = [parse_size(b) for b in args.budgets or ["64M", "128M", "256M", "512M"]]
    exact = run(args.counts, args.vocab, None)
    print(
        "| max_memory | peak growth MiB | warm | warm / budget "
        "| words kept | t | same first 32k | s |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for budget in [None] + budgets:
        row = exact if budget is None else run(args.counts, args.vocab, budget)
        warm = run(args.counts, args.vocab, budget, warm=True)["peak_mib"]
        kept = 1 - row["pruned_words"] / row["words"]
        same = len(set(row["merges"]) & set(exact["merges"])) / max(len(exact["merges"]), 1)
        ratio = "" if budget is None else f"{warm * 2**20 / budget:.2f}"
        label = "none" if budget is None else f"{budget >> 20} MiB"
        print(
            f"| {label} | {row['peak_mib']:.0f} | {warm:.0f} | {ratio} | {kept:.2%} "
            f"| {row['t']} | {same:.2%} | {row['seconds']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
