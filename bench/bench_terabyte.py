"""The largest run this machine holds: a generated corpus of tens of GB with real
text's word statistics (`gen_heaps_corpus.py`), counted on Ray (local) and on
Spark (local) within a memory budget per worker, then trained within a budget.
Each stage runs in a child process; reported per stage: wall time, CPU time,
and the peak memory of the child's whole process tree (Ray's raylet and
workers, Spark's JVM and Python workers), sampled from /proc every 0.5 s (the
sum over the tree at each sample, its maximum over the stage).

Stages (``--stages``, in order):

* ``count-ray``, ``count-spark``: `bytepair.count` on a local Ray / Spark with
  ``--ray-budget`` / ``--spark-budget`` per worker;
* ``train-exact``: `train_from_counts` on the Ray artifact, every word;
* ``train-budget``: the same within ``--train-budget``;
* ``train-spark``: `train_from_counts` on the Spark artifact (what its counting
  budget dropped), every word it kept.

Each training stage saves its tokenizer; at the end the merges of the others
are compared with ``train-exact``'s (share of the first 1k / 8k / 32k merges
in common) and every tokenizer encodes 64 MB of held-out text generated with
another seed (bytes per token). Artifacts and scratch go to ``--work``.

Usage::

    nice -n 19 python bench/bench_terabyte.py /work/big/heaps --work /work/big/scale \\
        --ray-budget 4G --spark-budget 256M --train-budget 1G
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import common


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and every descendant (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            children.setdefault(int(fields[1]), []).append(pid)
            rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


def run_stage(args: list[str]) -> dict:
    """Run one stage in a child, sampling its process tree's memory."""
    import subprocess

    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    start, cpu0 = time.perf_counter(), os.times()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            peak[0] = max(peak[0], tree_rss(proc.pid))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, _ = proc.communicate()
    stop.set()
    thread.join()
    cpu1 = os.times()
    if proc.returncode != 0:
        raise RuntimeError(f"stage {args[1]} failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result.update(
        wall_s=time.perf_counter() - start,
        cpu_s=(cpu1.children_user + cpu1.children_system)
        - (cpu0.children_user + cpu0.children_system),
        tree_peak_mib=peak[0] / 2**20,
    )
    return result


TRAIN_FROM = {
    "train-exact": "counts-ray",
    "train-budget": "counts-ray",
    "train-spark": "counts-spark",
}


def child(stage: str, corpus: str, work: str, budget: int | None, merges: int) -> dict:
    import bytepair

    files = sorted(str(p) for p in Path(corpus).glob("*.txt"))
    if stage == "count-ray":
        import ray

        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
        counts = bytepair.count(
            files, f"{work}/counts-ray", engine="ray", max_memory=budget, progress=False
        )
        ray.shutdown()
        return _artifact(counts)
    if stage == "count-spark":
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        spark = (
            SparkSession.builder.master(f"local[{os.cpu_count()}]")
            .config("spark.driver.memory", "4g")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(os.cpu_count()))
            .config("spark.local.dir", f"{work}/spark-tmp")
            .getOrCreate()
        )
        counts = bytepair.count(
            files,
            f"{work}/counts-spark",
            engine="spark",
            max_memory=budget,
            spark=spark,
            progress=False,
        )
        spark.stop()
        return _artifact(counts)
    counts = bytepair.WordCounts.open(f"{work}/{TRAIN_FROM[stage]}")
    start = time.perf_counter()
    tok = bytepair.train_from_counts(counts, 256 + merges, max_memory=budget, progress=False)
    s = tok.training_stats
    tok.save(f"{work}/{stage}.json")
    return {
        "stage": stage,
        "seconds": time.perf_counter() - start,
        "merge_seconds": s.merge_seconds,
        "distinct_words": s.distinct_words,
        "pruned_words": s.pruned_words,
        "pruned_pre_tokens": s.pruned_pre_tokens,
        "min_count": s.pruned_min_count,
        "merges": s.merges,
        "vm_hwm_mib": common.peak_rss_mib(),
    }


def _artifact(counts) -> dict:
    t, p = counts.totals, counts.pruned
    size = sum(os.path.getsize(x) for x in counts.part_paths())
    return {
        "documents": t.documents,
        "bytes": t.bytes,
        "pre_tokens": t.pre_tokens,
        "distinct": t.distinct,
        "pruned_words": p.words,
        "pruned_pre_tokens": p.pre_tokens,
        "min_count": p.min_count,
        "artifact_bytes": size,
        "vm_hwm_mib": common.peak_rss_mib(),
    }


def compare(work: str, stages: list[str]) -> dict:
    """Merges in common with train-exact's, and held-out bytes per token."""
    import bytepair

    sys.path.insert(0, str(common.BENCH_DIR))
    import gen_heaps_corpus as gen

    held = Path(work) / "heldout.txt"
    if not held.exists():
        gen._init(3)
        gen.write_file(str(held), 64 * 10**6, (12345, 0), 1.36)
    text = held.read_text(encoding="utf-8")
    toks = {
        s: bytepair.Tokenizer.load(f"{work}/{s}.json")
        for s in stages
        if s.startswith("train") and os.path.exists(f"{work}/{s}.json")
    }
    out = {}
    for stage, tok in toks.items():
        ids = tok.encode_to_numpy(text, disallowed_special=(), num_threads=None)
        out[stage] = {"bytes_per_token": len(text.encode()) / len(ids)}
        if "train-exact" in toks:
            exact = toks["train-exact"].merges
            for n in (n for n in (1000, 8000, 32000) if n <= len(exact)):
                common_n = len(set(exact[:n]) & set(tok.merges[:n]))
                out[stage][f"same_{n}"] = common_n / n
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("corpus", help="folder of heaps-*.txt files (gen_heaps_corpus.py)")
    p.add_argument("--work", required=True, help="folder for artifacts and scratch")
    p.add_argument(
        "--stages",
        nargs="+",
        default=["count-ray", "count-spark", "train-exact", "train-budget", "train-spark"],
    )
    p.add_argument("--ray-budget", type=common.parse_size, default=None)
    p.add_argument("--spark-budget", type=common.parse_size, default=None)
    p.add_argument("--train-budget", type=common.parse_size, default=None)
    p.add_argument("--merges", type=int, default=32000)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--stage", help=argparse.SUPPRESS)
    p.add_argument("--budget", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        common.emit(child(args.stage, args.corpus, args.work, args.budget, args.merges))
        return
    os.makedirs(args.work, exist_ok=True)
    budgets = {
        "count-ray": args.ray_budget,
        "count-spark": args.spark_budget,
        "train-budget": args.train_budget,
    }
    results = {}
    for stage in args.stages:
        budget = budgets.get(stage)
        common.log(f"stage {stage} (budget {budget})")
        child_args = ["--stage", stage, args.corpus, "--work", args.work]
        child_args += ["--merges", str(args.merges)]
        if budget is not None:
            child_args += ["--budget", str(budget)]
        results[stage] = run_stage(child_args)
        common.log(json.dumps(results[stage]))
        common.save_json("terabyte.json", results)
    results["compare"] = compare(args.work, args.stages)
    common.save_json("terabyte.json", results)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
