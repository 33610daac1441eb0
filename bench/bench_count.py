"""Counting benchmark: pre-token counting into the word-counts artifact
(`bytepair.count`) against the single-process counter, the reduce cost against
the number of parts, and distinct words against corpus size (Heaps' law).

Three parts, every measurement in a fresh child process (``--child``):

* throughput (``--size``, ``--files``): one folder of `--files` text files
  totalling `--size` bytes, built from the paragraphs of enwiki, code and
  multilingual (each file a different shuffle). Rows: the single-process counter
  (one ``_core.WordCounter``, ``count_files`` on 1 and 2 threads), the local
  engine (``bytepair.count``, 1 and 2 workers) and the Ray engine (2 CPUs; with
  and without ``ray.init``), when ``bytepair.counts.engines.on_ray`` imports. Rows run interleaved
  (round r runs every row once); medians of `--repeat` rounds.
* reduce against parts (``--parts``): the two phases of the local engine timed
  apart on the same input, in a loky pool of 2 warm workers: every shard runs
  ``count_shard`` (count + write `parts` bucket files), then every bucket runs
  ``reduce_bucket`` (sum the shards' files into one sorted Parquet part); the
  tables still label them ``_count_shard`` / ``_reduce_bucket``, their old names.
* Heaps' law (``--heaps-sizes``): distinct words (``len(WordCounter)``) of the
  first N bytes of one shuffle of a corpus mix, for the gpt2, cl100k and o200k
  patterns; V = K * n**beta fitted on log-log (n = pre-tokens) over the sizes
  within the mix's unique text; and the peak RSS of ``train_from_counts`` on the
  artifact of the largest size.

Generated inputs go to a temporary folder in /tmp (removed at the end; keep
and reuse them with ``--work-dir DIR``). Tables on stdout, progress on stderr,
raw results in bench/out/count.json.

Usage::

    python bench/bench_count.py                              # 2 GB, 3 rounds, Heaps up to 1 GB
    python bench/bench_count.py --quick                      # smoke test, under a minute python
    bench/bench_count.py --size 500M --repeat 1 --skip-heaps python bench/bench_count.py
    --skip-throughput --skip-reduce --heaps-mix all enwiki code multilingual
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import common
from common import parse_size, size_label

# The three corpora of the throughput input: English prose, code, 30 languages.
COUNT_MIX = ("enwiki.txt", "code.txt", "multilingual.txt")
PATTERNS = ("gpt2", "cl100k", "o200k")
CORES = os.cpu_count() or 1

# ---- inputs ----------------------------------------------------------------------


def count_inputs(folder: Path, size: int, files: int) -> Path:
    """A folder of `files` files totalling `size` bytes (built once, reused):
    file i is the COUNT_MIX paragraphs shuffled with seeds from 1000 * i, so the
    files differ in order but share the sources' words."""
    target = folder / f"count-{size_label(size)}-{files}"
    for i in range(files):
        part = size // files + (size % files if i == files - 1 else 0)
        common.write_new(
            target / f"input-{i:03d}.txt",
            common.shuffled_paragraphs(COUNT_MIX, part, seed=1000 * i),
        )
    return target


def mix_files(mix: str) -> tuple[str, ...]:
    """Corpus files of a mix name (``all``, ``english``) or of one corpus (``enwiki``)."""
    return common.MIXES.get(mix) or (common.corpus_path(mix).name,)


def unique_bytes(mix: str) -> int:
    """Bytes of distinct text in a mix: past this, the inputs repeat paragraphs."""
    return sum(common.corpus_path(name).stat().st_size for name in mix_files(mix))


def heaps_input(folder: Path, mix: str, size: int) -> Path:
    """The first `size` bytes of the mix's paragraph stream (seed 0): every size
    extends the smaller ones, as a corpus that grows."""
    path = folder / f"heaps-{mix}-{size_label(size)}.txt"
    return common.write_new(path, common.shuffled_paragraphs(mix_files(mix), size))


def text_files(folder: str) -> list[str]:
    return sorted(str(p) for p in Path(folder).glob("*.txt"))


# ---- child side --------------------------------------------------------------------


class DescendantPeak:
    """Peak RSS (VmHWM) of every descendant process, sampled from /proc every
    `interval` seconds while in the ``with`` block.

    Pool workers exit before the driver can read their VmHWM, and
    ``getrusage(RUSAGE_CHILDREN)`` gives only the largest child (and carries the
    driver's own peak into each child at exec), so a sampler is used: since
    VmHWM is a high-water mark, missing samples only loses the growth of a
    process's last `interval` seconds. ``total`` sums each process's peak (an
    upper bound of the simultaneous memory); ``largest`` is the largest one.
    For Ray this includes the raylet, GCS and other cluster processes."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.peaks: dict[int, float] = {}
        self.names: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "DescendantPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        parent_of: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        parent_of[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        mine = {os.getpid()}
        changed = True
        while changed:  # descendants at any depth (Ray: driver -> raylet -> workers)
            new = {pid for pid, ppid in parent_of.items() if ppid in mine and pid not in mine}
            mine |= new
            changed = bool(new)
        mine.discard(os.getpid())
        for pid in mine:
            try:
                with open(f"/proc/{pid}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:
                continue
            if "VmHWM" in fields:
                self.peaks[pid] = max(
                    int(fields["VmHWM"].split()[0]) / 1024, self.peaks.get(pid, 0.0)
                )
                self.names[pid] = fields.get("Name", "?").strip()

    @property
    def total(self) -> float:
        return sum(self.peaks.values())

    @property
    def largest(self) -> float:
        return max(self.peaks.values(), default=0.0)

    def by_name(self) -> dict[str, float]:
        """Summed peaks per process name (``python``, ``raylet``, ``gcs_server``...), for the raw
        results."""
        out: dict[str, float] = {}
        for pid, peak in self.peaks.items():
            out[self.names[pid]] = round(out.get(self.names[pid], 0.0) + peak, 1)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def job_single(a: argparse.Namespace) -> dict:
    """One ``WordCounter`` counting every file on `a.threads` threads."""
    from bytepair import _core

    paths = text_files(a.input)
    counter = _core.WordCounter(a.pattern, [common.EOT])
    start = time.perf_counter()
    counter.count_files(paths, a.threads)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "distinct": len(counter), "pre_tokens": counter.total()}


def job_engine(a: argparse.Namespace) -> dict:
    """``bytepair.count`` on the local or Ray engine into a scratch artifact.
    Ray: a new local cluster (``address="local"``, never another user's), whose
    start is timed apart: ``seconds`` excludes it, ``startup_seconds`` is it."""
    import bytepair

    out = Path(a.scratch) / "counts"
    result: dict = {}
    with DescendantPeak() as pool_rss:
        if a.engine == "ray":
            import ray

            start = time.perf_counter()
            ray.init(
                address="local", num_cpus=a.workers, include_dashboard=False, log_to_driver=False
            )
            result["startup_seconds"] = time.perf_counter() - start
        start = time.perf_counter()
        wc = bytepair.count(
            text_files(a.input),
            out,
            engine=a.engine,
            pattern=a.pattern,
            special_tokens=[common.EOT],
            num_workers=a.workers,
            progress=False,
        )
        result["seconds"] = time.perf_counter() - start
        if a.engine == "ray":
            ray.shutdown()
    shutil.rmtree(out)
    return {
        **result,
        "distinct": len(wc),
        "pre_tokens": wc.totals.pre_tokens,
        "workers_rss_mib": pool_rss.total,
        "largest_worker_rss_mib": pool_rss.largest,
        "pool_rss_by_name_mib": pool_rss.by_name(),
    }


def _warm_worker() -> int:
    """Runs once in every pool worker before timing: start it and import bytepair."""
    import bytepair.counts.artifact  # noqa: F401

    return os.getpid()


def job_phases(a: argparse.Namespace) -> dict:
    """The local engine's two phases timed apart (what ``count_locally`` runs,
    minus the manifest and the final rename), in a warm loky pool."""
    import loky

    from bytepair.counts.parts import part_name
    from bytepair.counts.protocol import (
        SHARDS,
        bucket_paths,
        count_shard,
        plan_shards,
        reduce_bucket,
    )
    from bytepair.counts.sources import CountSpec

    paths = text_files(a.input)
    plan = plan_shards([os.path.getsize(p) for p in paths], a.shards)
    spec = CountSpec(a.pattern, (common.EOT,))
    staging = Path(a.scratch) / "phases"
    staging.mkdir(parents=True)
    threads = max(1, CORES // a.workers)  # as count_locally
    with loky.ProcessPoolExecutor(a.workers) as pool:
        pids = {f.result() for f in [pool.submit(_warm_worker) for _ in range(4 * a.workers)]}
        start = time.perf_counter()
        futures = [
            pool.submit(
                count_shard,
                [paths[i] for i in files],
                spec,
                str(staging),
                s,
                a.parts,
                num_threads=threads,
            )
            for s, files in enumerate(plan)
        ]
        stats = [f.result() for f in futures]
        count_seconds = time.perf_counter() - start
        shard_bytes = sum(f.stat().st_size for f in (staging / SHARDS).rglob("*.parquet"))
        start = time.perf_counter()
        buckets = [bucket_paths(str(staging), range(len(plan)), b) for b in range(a.parts)]
        written = list(
            pool.map(reduce_bucket, buckets, [str(staging / part_name(b)) for b in range(a.parts)])
        )
        reduce_seconds = time.perf_counter() - start
    artifact_bytes = sum((staging / part_name(b)).stat().st_size for b in range(a.parts))
    shutil.rmtree(staging)
    return {
        "count_seconds": count_seconds,
        "reduce_seconds": reduce_seconds,
        "shards": len(plan),
        "warm_workers": len(pids),
        "shard_bytes": shard_bytes,
        "artifact_bytes": artifact_bytes,
        "distinct": sum(w["rows"] for w in written),
        "pre_tokens": sum(w["pre_tokens"] for w in written),
        "shard_distinct": sum(s["distinct"] for s in stats),
    }


def job_heaps(a: argparse.Namespace) -> dict:
    """Distinct words and pre-tokens of one file with one pattern (all cores)."""
    from bytepair import _core

    counter = _core.WordCounter(a.pattern, [common.EOT])
    start = time.perf_counter()
    counter.count_files([a.path], None)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "distinct": len(counter), "pre_tokens": counter.total()}


def job_train(a: argparse.Namespace) -> dict:
    """Count the file into an artifact (local engine), then ``train_from_counts``:
    its peak RSS is measured from the RSS just before it (VmHWM reset), so it
    excludes the interpreter, the imports and the counting."""
    import warnings

    import bytepair

    out = Path(a.scratch) / "counts"
    wc = bytepair.count(
        [a.path], out, pattern=a.pattern, special_tokens=[common.EOT], progress=False
    )
    artifact_bytes = sum(p.stat().st_size for p in out.glob("*.parquet"))
    reset = common.reset_peak_rss()
    base = common.current_rss_mib() if reset else common.peak_rss_mib()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "stopped early" on tiny inputs
        bytepair.train_from_counts(wc, a.vocab_size, progress=False)
    seconds = time.perf_counter() - start
    shutil.rmtree(out)
    return {
        "seconds": seconds,
        "distinct": len(wc),
        "pre_tokens": wc.totals.pre_tokens,
        "base_rss_mib": base,
        "peak_reset": reset,
        "artifact_bytes": artifact_bytes,
    }


JOBS = {
    "single": job_single,
    "engine": job_engine,
    "phases": job_phases,
    "heaps": job_heaps,
    "train": job_train,
}


def child_main(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="scratch-", dir=a.scratch_root) as scratch:
        a.scratch = scratch
        result = JOBS[a.job](a)
    result["rss_mib"] = common.peak_rss_mib()
    common.emit(result)


# ---- parent side: throughput -------------------------------------------------------


def run_job(job: str, **options) -> dict:
    """One child run of `job`; options become ``--name value`` arguments."""
    args = ["--job", job]
    for name, value in options.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    return common.run_child(Path(__file__), args)


def ray_available() -> str | None:
    """None if the Ray engine can run, else why not (``import bytepair.counts.engines.on_ray``
    fails)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import ray, bytepair.counts.engines.on_ray"],
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or ["import failed"])[-1]


def throughput_rows(ray_ok: bool) -> list[dict]:
    """The rows of the throughput table: label, child job options, cores used.
    The local engine gives each of its w workers cores // w counting threads."""
    rows = [
        {
            "label": f"single-process counter, {t} thread{'s' * (t > 1)}",
            "job": "single",
            "options": {"threads": t},
            "cores": t,
        }
        for t in (1, 2)
    ]
    rows += [
        {
            "label": f"local engine, {w} worker{'s' * (w > 1)}",
            "job": "engine",
            "options": {"engine": "local", "workers": w},
            "cores": min(CORES, w * max(1, CORES // w)),
        }
        for w in (1, 2)
    ]
    if ray_ok:
        rows.append(
            {
                "label": "Ray engine, 2 CPUs",
                "job": "engine",
                "options": {"engine": "ray", "workers": 2},
                "cores": 2,
            }
        )
    return rows


def throughput(folder: Path, repeat: int, pattern: str, scratch_root: Path) -> tuple[str, dict]:
    """Run every row `repeat` times, interleaved, and build the table."""
    why_not = ray_available()
    if why_not:
        common.log(f"Ray rows skipped: {why_not}")
    rows = throughput_rows(why_not is None)
    mb = sum(os.path.getsize(p) for p in text_files(str(folder))) / common.MB
    runs: dict[str, list[dict]] = {r["label"]: [] for r in rows}
    for round_ in range(repeat):
        for r in rows[round_ % len(rows) :] + rows[: round_ % len(rows)]:
            common.log(f"[{round_ + 1}/{repeat}] {r['label']} ...")
            res = run_job(
                r["job"], input=folder, pattern=pattern, scratch_root=scratch_root, **r["options"]
            )
            common.log(
                f"  {res['seconds']:.1f} s"
                + (
                    f" + {res['startup_seconds']:.1f} s ray.init"
                    if "startup_seconds" in res
                    else ""
                )
            )
            runs[r["label"]].append(res)
    table_rows, baseline = [], {}
    for r in rows:
        results = runs[r["label"]]
        variants = [("", [x["seconds"] for x in results])]
        if "startup_seconds" in results[0]:
            variants = [
                (", with startup", [x["seconds"] + x["startup_seconds"] for x in results]),
                (", without startup", [x["seconds"] for x in results]),
            ]
        for suffix, times in variants:
            seconds = common.median(times)
            if r["job"] == "single":
                baseline[r["cores"]] = seconds
            base = baseline.get(r["cores"]) or baseline.get(max(baseline))
            workers = [x.get("workers_rss_mib") for x in results]
            table_rows.append(
                [
                    r["label"] + suffix,
                    str(r["cores"]),
                    common.fmt(seconds, 1),
                    common.fmt(min(times), 1),
                    common.fmt(mb / seconds, 1),
                    common.fmt(mb / seconds / r["cores"], 1),
                    common.fmt(common.ratio(seconds, base), 2),
                    common.fmt(max(x["rss_mib"] for x in results), 0),
                    "–" if workers[0] is None else common.fmt(max(workers), 0),
                ]
            )
    checks = {(x["distinct"], x["pre_tokens"]) for rs in runs.values() for x in rs}
    notes = [
        f"Input: {len(text_files(str(folder)))} files, {mb:.0f} MB ({folder.name}), pattern "
        f"{pattern}."
    ]
    if why_not:
        notes.append(
            f"Ray rows skipped: `import bytepair.counts.engines.on_ray` failed ({why_not})."
        )
    notes.append(
        "Every row counted the same words."
        if len(checks) == 1
        else f"**Rows disagree on (distinct, pre-tokens): {sorted(checks)}**"
    )
    header = [
        "counter",
        "cores",
        "seconds",
        "min s",
        "MB/s",
        "MB/s per core",
        "time vs single-process (same cores)",
        "driver peak RSS MiB",
        "pool peak RSS MiB (sum)",
    ]
    return common.markdown_table(header, table_rows) + "\n\n" + " ".join(notes), runs


# ---- parent side: reduce against parts ---------------------------------------------------


def reduce_table(
    folder: Path,
    parts_list: list[int],
    repeat: int,
    workers: int,
    shards: int,
    pattern: str,
    scratch_root: Path,
) -> tuple[str, dict]:
    runs: dict[int, list[dict]] = {p: [] for p in parts_list}
    for round_ in range(repeat):
        for parts in parts_list:
            common.log(f"[{round_ + 1}/{repeat}] count_shard + reduce_bucket, {parts} parts ...")
            res = run_job(
                "phases",
                input=folder,
                parts=parts,
                workers=workers,
                shards=shards,
                pattern=pattern,
                scratch_root=scratch_root,
            )
            common.log(
                f"  count {res['count_seconds']:.1f} s, reduce {res['reduce_seconds']:.2f} s"
            )
            runs[parts].append(res)
    rows = []
    for parts, results in runs.items():
        count_s = common.median([x["count_seconds"] for x in results])
        reduce_s = common.median([x["reduce_seconds"] for x in results])
        r = results[0]
        rows.append(
            [
                str(parts),
                str(r["shards"]),
                common.fmt(count_s, 2),
                common.fmt(reduce_s, 2),
                common.fmt(100 * reduce_s / (count_s + reduce_s), 1),
                common.fmt(r["shard_bytes"] / common.MB, 1),
                common.fmt(r["artifact_bytes"] / common.MB, 1),
                str(r["distinct"]),
            ]
        )
    header = [
        "parts",
        "shards",
        "_count_shard phase s",
        "reduce phase s",
        "reduce % of total",
        "shard files MB",
        "artifact MB",
        "distinct words",
    ]
    return common.markdown_table(header, rows), runs


# ---- parent side: Heaps' law --------------------------------------------------------


def fit_heaps(points: list[tuple[int, int]]) -> tuple[float, float] | None:
    """Least squares of log V = log K + beta log n; (K, beta), None for < 2 points."""
    import numpy as np

    if len(points) < 2:
        return None
    n, v = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    beta, log_k = np.polyfit(n, v, 1)
    return float(np.exp(log_k)), float(beta)


def heaps(
    folder: Path,
    mix: str,
    sizes: list[int],
    patterns: list[str],
    vocab_size: int,
    train_size: int | None,
    scratch_root: Path,
) -> tuple[str, dict]:
    """Distinct words per size and pattern, the fit, and train_from_counts' memory."""
    unique = unique_bytes(mix)
    raw: dict = {"unique_bytes": unique, "counts": {}, "train": {}}
    rows = []
    for size in sizes:
        path = heaps_input(folder, mix, size)
        row = [size_label(size)]
        for pattern in patterns:
            common.log(f"Heaps {mix} {size_label(size)} {pattern} ...")
            res = run_job("heaps", path=path, pattern=pattern, scratch_root=scratch_root)
            raw["counts"][f"{size_label(size)} {pattern}"] = {
                "size": size,
                "pattern": pattern,
                **res,
            }
            row += [str(res["pre_tokens"]), str(res["distinct"])]
        rows.append(row)
    header = ["size"] + [h for p in patterns for h in (f"{p} pre-tokens", f"{p} distinct")]
    parts = [common.markdown_table(header, rows)]
    train_size = train_size or max(sizes)
    fit_rows = []
    for pattern in patterns:
        points = [
            (r["pre_tokens"], r["distinct"])
            for r in raw["counts"].values()
            if r["pattern"] == pattern and r["size"] <= unique
        ]
        fit = fit_heaps(points)
        common.log(f"train_from_counts {pattern} on {size_label(train_size)} ...")
        t = run_job(
            "train",
            path=heaps_input(folder, mix, train_size),
            pattern=pattern,
            vocab_size=vocab_size,
            scratch_root=scratch_root,
        )
        raw["train"][pattern] = t
        grown = t["rss_mib"] - t["base_rss_mib"]
        fit_rows.append(
            [
                pattern,
                "–" if fit is None else f"{fit[0]:.2f}",
                "–" if fit is None else f"{fit[1]:.3f}",
                str(len(points)),
                str(t["distinct"]),
                common.fmt(t["rss_mib"], 0),
                common.fmt(grown, 0),
                common.fmt(grown * 2**20 / max(t["distinct"], 1), 0),
                common.fmt(t["seconds"], 1),
            ]
        )
        raw.setdefault("fit", {})[pattern] = fit
    parts.append(
        common.markdown_table(
            [
                "pattern",
                "K",
                "beta",
                "points fitted",
                f"distinct at {size_label(train_size)}",
                "train_from_counts peak RSS MiB",
                "growth during training MiB",
                "bytes per distinct word",
                "train s",
            ],
            fit_rows,
        )
    )
    parts.append(
        f"Mix {mix!r}: {unique / common.MB:.0f} MB of unique text; the fit uses only sizes up to "
        "that (past it the input repeats the same paragraphs and adds no new words). Training: "
        f"vocab {vocab_size}, all cores; peak RSS of the process (VmHWM), growth = peak minus the "
        "RSS just before training."
    )
    return "\n\n".join(parts), raw


# ---- main ---------------------------------------------------------------------------------


QUICK = [
    "--size",
    "16M",
    "--files",
    "8",
    "--repeat",
    "1",
    "--parts",
    "1",
    "4",
    "16",
    "--heaps-sizes",
    "1M",
    "4M",
    "--vocab-size",
    "2000",
    "--json",
    "quick-count.json",
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--size",
        type=parse_size,
        default=parse_size("2G"),
        help="throughput input size (default 2G)",
    )
    p.add_argument(
        "--files", type=int, default=16, help="files of the throughput input (default 16)"
    )
    p.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported (default 3)")
    p.add_argument(
        "--pattern",
        default="gpt2",
        help="pattern of the throughput and reduce parts (default gpt2)",
    )
    p.add_argument("--parts", nargs="+", type=int, default=[1, 2, 4, 16, 64])
    p.add_argument(
        "--workers", type=int, default=2, help="pool workers of the reduce part (default 2)"
    )
    p.add_argument(
        "--shards", type=int, default=None, help="shards of the reduce part (default: --workers)"
    )
    p.add_argument(
        "--heaps-sizes",
        nargs="+",
        type=parse_size,
        default=[parse_size(s) for s in ("1M", "4M", "16M", "64M", "128M", "256M", "1G")],
    )
    p.add_argument(
        "--heaps-mix",
        nargs="+",
        default=["all"],
        help="corpus mixes (all, english) or single corpora (enwiki, code, ...) for Heaps' law",
    )
    p.add_argument("--heaps-patterns", nargs="+", default=list(PATTERNS))
    p.add_argument(
        "--heaps-train-size",
        type=parse_size,
        default=None,
        help="input of the train_from_counts memory run (default: the largest Heaps size)",
    )
    p.add_argument(
        "--vocab-size", type=int, default=32000, help="train_from_counts vocabulary (default 32000)"
    )
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--skip-reduce", action="store_true")
    p.add_argument("--skip-heaps", action="store_true")
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="keep generated inputs here and reuse them (default: a temporary folder in /tmp, "
        "removed)",
    )
    p.add_argument("--quick", action="store_true", help="smoke test: " + " ".join(QUICK))
    p.add_argument(
        "--json",
        default="count.json",
        help="raw results file name in bench/out/ (default %(default)s)",
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("job", "input", "path", "engine", "scratch-root"):
        p.add_argument(f"--{name}", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    if args.quick:
        args = p.parse_args(argv + QUICK)
    if args.child and args.parts:
        args.parts = args.parts[0]
    return args


def main(argv: list[str] | None = None) -> str:
    """Run the benchmark; print and return the markdown report."""
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return ""
    watch = common.BuildWatch()
    folder = args.work_dir or Path(tempfile.mkdtemp(prefix="bytepair-bench-count-", dir="/tmp"))
    folder.mkdir(parents=True, exist_ok=True)
    scratch = folder / "scratch"
    scratch.mkdir(exist_ok=True)
    raw: dict = {"build": watch.start, "args": {k: str(v) for k, v in vars(args).items()}}
    parts = []
    try:
        if not (args.skip_throughput and args.skip_reduce):
            common.log(f"building {size_label(args.size)} in {args.files} files under {folder} ...")
            inputs = count_inputs(folder, args.size, args.files)
        if not args.skip_throughput:
            table, raw["throughput"] = throughput(inputs, args.repeat, args.pattern, scratch)
            parts += [
                f"### Counting throughput ({size_label(args.size)}, median of {args.repeat})",
                table,
            ]
            print("\n\n".join(parts[-2:]) + "\n", flush=True)
        if not args.skip_reduce:
            shards = args.shards or args.workers
            table, raw["reduce"] = reduce_table(
                inputs, args.parts, args.repeat, args.workers, shards, args.pattern, scratch
            )
            parts += [
                "### _count_shard and _reduce_bucket phases against parts "
                f"({size_label(args.size)}, {args.workers} workers, {shards} shards, median of "
                f"{args.repeat})",
                table,
            ]
            print("\n\n".join(parts[-2:]) + "\n", flush=True)
        if not args.skip_heaps:
            raw["heaps"] = {}
            for mix in args.heaps_mix:
                table, raw["heaps"][mix] = heaps(
                    folder,
                    mix,
                    args.heaps_sizes,
                    args.heaps_patterns,
                    args.vocab_size,
                    args.heaps_train_size,
                    scratch,
                )
                parts += [
                    f"### Distinct words against corpus size (Heaps' law), mix {mix!r}",
                    table,
                ]
                print("\n\n".join(parts[-2:]) + "\n", flush=True)
    finally:
        if args.work_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    changed = watch.changed()
    raw["build_changed"] = changed
    if changed:
        parts.insert(0, f"**WARNING: {changed}; rerun.**")
    parts.append(f"bytepair build: {watch.start}; {CORES} cores.")
    print(parts[-1], flush=True)
    common.log(f"raw results: {common.save_json(args.json, raw)}")
    return "\n\n".join(parts)


if __name__ == "__main__":
    main()
