"""Encoding at scale against gigatoken: big texts, long-running processes,
allocation history, and cores (issue 31).

Each row is a scenario a user meets beyond one 10 MB call. Every cell runs
ours and gigatoken in fresh child processes on the same input, interleaved
(the order alternates from run to run), ``--runs`` times; the table gives the
median MB/s of each side (with the range of the runs), the ratio of the
medians (ours / gigatoken), the same ratio by CPU time (user + system
of the measured calls: on a shared host it moves less than wall time), each
side's peak RSS (VmHWM of the child: the text, the tokenizer, caches and
ids) and whether the ids agree: gigatoken's
ids on the whole row (a sha256 over every id of the last call or pass), and
tiktoken's on a sample (the first and a middle 256 KB of the row's text,
encoded by ``Tokenizer.to_tiktoken()`` in our child after its peak is read).
Ours is ``Tokenizer.encode_to_numpy`` (a uint32 array, like gigatoken's
``encode``); both sides run on one thread (``RAYON_NUM_THREADS=1``).

Rows (default ranks in brackets):

* ``enwiki66``: all of enwiki.txt (66 MB) as one text, warm calls [gpt2, cl100k]
* ``enwiki30``, ``enwiki45``: its first 30 / 45 MB, warm [gpt2, cl100k]
* ``docs1mb``: enwiki + code + multilingual (~121 MB) cut into 1 MB documents,
  encoded one by one; the second pass in the same process [o200k, cl100k]
* ``docs100kb``: the same as 100 KB documents, one pass [o200k, gpt2, cl100k]
* ``text10m``: 10 M characters sliced from all of enwiki read in text mode
  (a ~264 MB str built and freed first), warm [gpt2, cl100k]
* ``bytes10m``: the same 10 MB decoded from bytes, warm [gpt2, cl100k]

"Warm" is the median of ``--repeat`` calls after the first; each call's
result replaces the last one's (``ids = encode(text)``), as a loop would.

``--cores`` measures ours on 1 and 2 threads instead (threads = cores here),
each cell a fresh process that calls several times; the median is of the
later calls (the steady state of a long job: a process's first calls fill
the piece caches and fault in buffers, and used to carry a second thread's
work): ``encode_to_numpy(num_threads=N)`` on 30 MB of enwiki (calls 4-8),
``encode_batch`` on 30 MB of it as 100 KB documents (calls 5-8; gigatoken's
``encode_batch(parallel=True)`` alongside), ``encode_dataset`` of enwiki.txt
(one document per line; runs 2-3), ``bytepair encode enwiki.txt -o ids.npy``
(whole process, start-up included) and ``count_files`` (counting, calls 2-4).
Each cell gives wall MB/s, CPUs busy (CPU seconds of all threads / wall
seconds), threads ready (seconds the process's threads were on a CPU or
waiting in a run queue for one / wall seconds: ~N when N threads never wait
for each other, whatever else the host runs; threads that end during a call,
such as ``encode_dataset``'s reader and writer, are not in it) and MB per CPU
second; the load average before and after is printed (scaling needs idle
cores).

Usage::

    python bench/bench_scale.py                 # every row, 5 runs: the table of bench/README.md
    python bench/bench_scale.py --rows enwiki66 text10m --ranks gpt2 --runs 3
    python bench/bench_scale.py --cores

gigatoken is a bench extra (``pip install ".[bench]"``), never a dependency.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import common
from bench_gigatoken import GIGATOKEN_PRETOKENIZER, rank_file

CORPORA = ("enwiki", "code", "multilingual")
SAMPLE_CHARS = 256_000


@dataclasses.dataclass(frozen=True)
class Row:
    key: str
    label: str
    ranks: tuple[str, ...]
    mode: str  # "warm": calls on one text; "pass1" / "pass2": passes over documents


ROWS = (
    Row("enwiki66", "all of enwiki.txt (66 MB), warm", ("gpt2", "cl100k"), "warm"),
    Row("enwiki30", "enwiki, first 30 MB, warm", ("gpt2", "cl100k"), "warm"),
    Row("enwiki45", "enwiki, first 45 MB, warm", ("gpt2", "cl100k"), "warm"),
    Row(
        "docs1mb",
        "enwiki+code+multilingual as 1 MB documents, 2nd pass",
        ("o200k", "cl100k"),
        "pass2",
    ),
    Row(
        "docs100kb",
        "enwiki+code+multilingual as 100 KB documents, one pass",
        ("o200k", "gpt2", "cl100k"),
        "pass1",
    ),
    Row("text10m", "10 M chars of enwiki read in text mode, warm", ("gpt2", "cl100k"), "warm"),
    Row("bytes10m", "the same 10 MB decoded from bytes, warm", ("gpt2", "cl100k"), "warm"),
)
ROW_BY_KEY = {row.key: row for row in ROWS}


# ---- inputs (built in the child, so each side has the same allocation history) ----


def ten_million_chars_bytes() -> int:
    """Bytes of the first 10 M characters of enwiki.txt (computed once, cached)."""
    cache = common.OUT_DIR / "enwiki_10m_chars.json"
    if not cache.exists():
        with open(common.corpus_path("enwiki"), encoding="utf-8") as f:
            n = len(f.read()[:10_000_000].encode())
        common.OUT_DIR.mkdir(exist_ok=True)
        cache.write_text(json.dumps({"bytes": n}))
    return json.loads(cache.read_text())["bytes"]


def documents(size: int) -> list[str]:
    """The three corpora, each cut every `size` bytes (a character cut there
    is dropped), in order."""
    docs = []
    for name in CORPORA:
        raw = common.corpus_path(name).read_bytes()
        docs += [raw[i : i + size].decode("utf-8", "ignore") for i in range(0, len(raw), size)]
        del raw
    return docs


def row_input(key: str, slice_bytes: int) -> list[str]:
    """The texts of row `key`, made as its label says."""
    path = common.corpus_path("enwiki")
    if key == "enwiki66":
        return [path.read_bytes().decode("utf-8")]
    if key in ("enwiki30", "enwiki45"):
        return [path.read_bytes()[: int(key[-2:]) * 10**6].decode("utf-8", "ignore")]
    if key == "docs1mb":
        return documents(10**6)
    if key == "docs100kb":
        return documents(10**5)
    if key == "text10m":
        with open(path, encoding="utf-8") as f:
            whole = f.read()
        text = whole[:10_000_000]
        del whole
        return [text]
    if key == "bytes10m":
        return [path.read_bytes()[:slice_bytes].decode("utf-8")]
    raise SystemExit(f"unknown row {key!r}")


# ---- one side of one cell, in a child process -------------------------------------


def encoder(tool: str, ranks: str, ranks_path: str):
    """`tool`'s encode-to-array function, and for ours the Tokenizer."""
    import numpy as np

    if tool == "gigatoken":
        import gigatoken

        tok = gigatoken.Tokenizer.from_tiktoken(
            ranks_path, pretokenizer=GIGATOKEN_PRETOKENIZER[ranks], special_tokens={}
        )
        return (lambda text: np.asarray(tok.encode(text))), None
    import bytepair

    tok = bytepair.Tokenizer.from_tiktoken(ranks_path, pattern=ranks, special_tokens={})
    return tok.encode_to_numpy, tok


def child(tool: str, key: str, ranks: str, repeat: int, ranks_path: str, slice_bytes: int) -> dict:
    """Time `tool` on row `key`; MB/s, ids digest, peak RSS (and the tiktoken sample check)."""
    import numpy as np

    texts = row_input(key, slice_bytes)
    # Before the calls: the bytes made here are counted in no peak.
    mb = sum(len(t.encode()) for t in texts) / common.MB
    encode, tok = encoder(tool, ranks, ranks_path)
    mode = ROW_BY_KEY[key].mode
    rounds = {"warm": 1 + repeat, "pass1": 1, "pass2": 2}[mode]
    seconds, cpu, digest = [], [], None
    for _ in range(rounds):
        digest, elapsed, used = hashlib.sha256(), 0.0, 0.0
        for text in texts:
            start, start_cpu = time.perf_counter(), time.process_time()
            ids = encode(text)  # replaces the last call's ids, as a loop would
            elapsed += time.perf_counter() - start
            used += time.process_time() - start_cpu
            # Hashed in place: a copy of a 66 MB text's ids would count in the peak.
            digest.update(memoryview(np.ascontiguousarray(ids, dtype="<u4")).cast("B"))
        seconds.append(elapsed)
        cpu.append(used)
    measured = (lambda t: statistics.median(t[1:])) if mode == "warm" else (lambda t: t[-1])
    result = {
        "mbps": mb / measured(seconds),
        # per CPU second (user + system, all threads): what a busy host inflates least
        "cpu_mbps": mb / measured(cpu),
        "first_mbps": mb / seconds[0],
        "mb": mb,
        "ids": digest.hexdigest()[:16],
        "peak_mib": common.peak_rss_mib(),
    }
    if tok is not None:
        result["tiktoken"] = sample_matches_tiktoken(tok, texts)
    return result


def sample_matches_tiktoken(tok, texts: list[str]) -> bool:
    """Ids of the first and a middle `SAMPLE_CHARS` characters equal tiktoken's."""
    ref = tok.to_tiktoken()
    text = texts[0] if len(texts) == 1 else "".join(texts[: len(texts) // 2 + 1])
    middle = len(text) // 2
    samples = (text[:SAMPLE_CHARS], text[middle : middle + SAMPLE_CHARS])
    return all(tok.encode_to_numpy(s).tolist() == ref.encode_ordinary(s) for s in samples)


def run_child(*args: str) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=os.environ.get("RAYON_NUM_THREADS", "1"))
    cmd = [sys.executable, __file__, "--child", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the table --------------------------------------------------------------------


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def measure_cell(row: Row, ranks: str, args: argparse.Namespace) -> dict:
    ranks_path = rank_file(ranks)
    slice_bytes = str(ten_million_chars_bytes())
    results = {"bytepair": [], "gigatoken": []}
    for run in range(args.runs):
        order = ("bytepair", "gigatoken") if run % 2 == 0 else ("gigatoken", "bytepair")
        for tool in order:
            results[tool].append(
                run_child(tool, row.key, ranks, str(args.repeat), ranks_path, slice_bytes)
            )
    return results


def cell_line(row: Row, ranks: str, results: dict) -> str:
    ours, peer = results["bytepair"], results["gigatoken"]
    ours_mbps = [r["mbps"] for r in ours]
    peer_mbps = [r["mbps"] for r in peer]
    ratio = statistics.median(ours_mbps) / statistics.median(peer_mbps)
    cpu_ratio = statistics.median(r["cpu_mbps"] for r in ours) / statistics.median(
        r["cpu_mbps"] for r in peer
    )
    ours_peak = max(r["peak_mib"] for r in ours)
    peer_peak = max(r["peak_mib"] for r in peer)
    same = {r["ids"] for r in ours} == {r["ids"] for r in peer} and len(
        {r["ids"] for r in ours}
    ) == 1
    tiktoken = all(r["tiktoken"] for r in ours)
    ids = "yes" if same and tiktoken else f"gigatoken {same}, tiktoken sample {tiktoken}"
    return (
        f"| {row.label} | {ranks} | {ours[0]['mb']:.0f} | {spread(ours_mbps)} | "
        f"{spread(peer_mbps)} | {ratio:.2f} | {cpu_ratio:.2f} | {ours_peak:.0f} | "
        f"{peer_peak:.0f} | {ours_peak / peer_peak:.2f} | {ids} |"
    )


def scenario_table(args: argparse.Namespace) -> None:
    print(
        "| scenario | ranks | MB | ours MB/s | gigatoken MB/s | ratio | ratio by CPU time "
        "| ours peak MiB | gigatoken peak MiB | peak ratio | ids equal |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    raw = []
    for key in args.rows:
        row = ROW_BY_KEY[key]
        for ranks in args.ranks or row.ranks:
            results = measure_cell(row, ranks, args)
            raw.append({"row": key, "ranks": ranks, **results})
            print(cell_line(row, ranks, results), flush=True)
    save(raw, "scale.json")


def save(raw: list, name: str) -> None:
    common.OUT_DIR.mkdir(exist_ok=True)
    (common.OUT_DIR / name).write_text(json.dumps(raw, indent=1))


# ---- cores: ours on 1 and 2 threads -----------------------------------------------

CORE_JOBS = {
    "numpy": "encode_to_numpy(num_threads=N), 30 MB of enwiki",
    "batch": "encode_batch, 30 MB of enwiki as 100 KB documents",
    "giga_batch": "gigatoken encode_batch(parallel=True), same documents",
    "dataset": "encode_dataset(enwiki.txt, one document per line)",
    "cli": "bytepair encode enwiki.txt -o ids.npy (whole process)",
    "count": "count_files(enwiki.txt) (counting)",
}
# Calls per child process, and how many of the first are left out of the
# median: a process's first calls fill the piece caches and fault in the
# buffers, and the steady state is what a long job sees.
CORE_CALLS = {"numpy": (8, 3), "batch": (8, 4), "giga_batch": (8, 4), "count": (4, 1)}
DATASET_RUNS = (3, 1)


def ready_seconds() -> float:
    """Seconds this process's live threads have been ready to run: on a CPU
    or waiting in a run queue for one (/proc/self/task/*/schedstat; 0 where
    it is missing)."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/schedstat") as f:
                on_cpu, waiting = f.read().split()[:2]
        except (OSError, ValueError):
            continue
        total += int(on_cpu) + int(waiting)
    return total / 1e9


def timed_calls(call, calls: int, skip: int) -> tuple[float, float, float]:
    """Median wall, CPU (user + system, all threads) and ready (see
    `ready_seconds`) seconds of calls `skip + 1`..`calls` of `call`; each
    call's result is dropped before the next."""
    times, cpu, ready = [], [], []
    for _ in range(calls):
        start, start_cpu, start_ready = time.perf_counter(), time.process_time(), ready_seconds()
        result = call()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        ready.append(ready_seconds() - start_ready)
        del result
    return tuple(statistics.median(x[skip:]) for x in (times, cpu, ready))


def rates(mb: float, seconds: float, cpu_seconds: float, ready: float) -> dict:
    """MB/s, MB per CPU second, CPUs busy (CPU seconds / wall seconds) and
    threads ready (ready seconds / wall seconds: the threads that wanted a
    CPU, which a shared host does not lower as it lowers CPUs busy)."""
    return {
        "mbps": mb / seconds,
        "cpu_mbps": mb / cpu_seconds,
        "cpus": cpu_seconds / seconds,
        "ready": ready / seconds,
        "peak_mib": common.peak_rss_mib(),
    }


def cores_child(job: str, threads: str, ranks_path: str) -> dict:
    """One job of the cores table on `threads` threads, in this fresh process."""
    n = int(threads)
    path = common.corpus_path("enwiki")
    if job == "count":
        from bytepair import _core

        def call():
            counter = _core.WordCounter("gpt2", [common.EOT])
            counter.count_files([str(path)], n)
            return counter

        return rates(path.stat().st_size / common.MB, *timed_calls(call, *CORE_CALLS[job]))
    text = path.read_bytes()[: 30 * 10**6].decode("utf-8", "ignore")
    docs = [text[i : i + 100_000] for i in range(0, len(text), 100_000)]
    mb = len(text.encode()) / common.MB
    if job == "giga_batch":
        import gigatoken

        tok = gigatoken.Tokenizer.from_tiktoken(ranks_path, pretokenizer="gpt2", special_tokens={})
        call = lambda: tok.encode_batch(docs, parallel=n > 1)  # noqa: E731
    else:
        import bytepair

        tok = bytepair.Tokenizer.from_tiktoken(ranks_path, pattern="gpt2", special_tokens={})
        if job == "numpy":
            call = lambda: tok.encode_to_numpy(text, num_threads=n)  # noqa: E731
        elif job == "batch":
            call = lambda: tok.encode_batch(docs, num_threads=n)  # noqa: E731
        else:  # dataset
            return dataset_child(tok, n)
    return rates(mb, *timed_calls(call, *CORE_CALLS[job]))


def dataset_child(tok, threads: int) -> dict:
    """encode_dataset of enwiki.txt into fresh folders, DATASET_RUNS times."""
    import bytepair.dataset

    path = common.corpus_path("enwiki")
    with tempfile.TemporaryDirectory(dir=common.OUT_DIR) as tmp:
        runs = iter(range(DATASET_RUNS[0]))

        def call():
            return bytepair.dataset.encode_dataset(
                path,
                os.path.join(tmp, str(next(runs))),
                tok,
                separator="\n",
                eot=None,
                num_threads=threads,
                progress=False,
            )

        return rates(path.stat().st_size / common.MB, *timed_calls(call, *DATASET_RUNS))


def cli_env() -> dict:
    """The environment of the CLI's processes: compiled bytecode cached (under
    bench/out/), as an installed package has it. Without it (an environment
    with PYTHONDONTWRITEBYTECODE=1) every process compiled bytepair's sources:
    ~50 ms more CPU per run of `bytepair encode`, 124 -> 74 ms for its imports."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(common.OUT_DIR / "pycache")
    return env


def cli_run(threads: int, ranks_path: str) -> dict:
    """`bytepair encode enwiki.txt` as a whole process (start-up included)."""
    path = common.corpus_path("enwiki")
    with tempfile.TemporaryDirectory(dir=common.OUT_DIR) as tmp:
        cmd = [sys.executable, "-m", "bytepair", "encode", "-q", str(path), "-t", ranks_path]
        cmd += ["-o", os.path.join(tmp, "ids.npy"), "--threads", str(threads)]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=cli_env())
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{cmd} failed")
    mb = path.stat().st_size / common.MB
    cpu = usage.ru_utime + usage.ru_stime
    return {"mbps": mb / seconds, "cpu_mbps": mb / cpu, "cpus": cpu / seconds, "ready": None}


def cores_run(job: str, threads: int, ranks_path: str) -> dict:
    """One fresh process of `job` on `threads` threads."""
    if job == "cli":
        return cli_run(threads, ranks_path)
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    cmd = [sys.executable, __file__, "--child", "cores", job, str(threads), ranks_path]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{job} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def cores_table(args: argparse.Namespace) -> None:
    """Ours (and gigatoken's batch) on 1 and 2 threads, interleaved runs, medians."""
    common.OUT_DIR.mkdir(exist_ok=True)
    ranks_path = rank_file("gpt2")
    print(f"<!-- load average before: {os.getloadavg()[0]:.2f} -->")
    print(
        "| what (gpt2 ranks) | 1 thread MB/s | 2 threads MB/s | speed-up | per thread at 2 "
        "| CPUs busy, 1 / 2 threads | threads ready, 1 / 2 | MB per CPU second, 1 / 2 threads |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    raw = []
    for job, label in CORE_JOBS.items():
        runs = {1: [], 2: []}
        if job == "cli":  # the bytecode compiled and cached before the first timed run
            subprocess.run([sys.executable, "-c", "import bytepair.cli.main"], env=cli_env())
        for run in range(args.runs):
            for threads in (1, 2) if run % 2 == 0 else (2, 1):
                runs[threads].append(cores_run(job, threads, ranks_path))
        one, two = ([r["mbps"] for r in runs[t]] for t in (1, 2))
        speedup = statistics.median(two) / statistics.median(one)
        cpus, cpu = (
            [statistics.median(r[key] for r in runs[t]) for t in (1, 2)]
            for key in ("cpus", "cpu_mbps")
        )
        ready = " / ".join(
            "-"
            if runs[t][0]["ready"] is None
            else f"{statistics.median(r['ready'] for r in runs[t]):.2f}"
            for t in (1, 2)
        )
        print(
            f"| {label} | {spread(one)} | {spread(two)} | {speedup:.2f} | "
            f"{statistics.median(two) / 2:.0f} | {cpus[0]:.2f} / {cpus[1]:.2f} | {ready} | "
            f"{cpu[0]:.0f} / {cpu[1]:.0f} |",
            flush=True,
        )
        raw.append({"job": job, **{str(k): v for k, v in runs.items()}})
    print(f"<!-- load average after: {os.getloadavg()[0]:.2f} -->")
    save(raw, "scale_cores.json")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", nargs="+", choices=list(ROW_BY_KEY), default=list(ROW_BY_KEY))
    p.add_argument("--ranks", nargs="+", choices=("gpt2", "cl100k", "o200k"), default=None)
    p.add_argument("--runs", type=int, default=5, help="fresh processes per side and cell")
    p.add_argument("--repeat", type=int, default=3, help="warm calls after the first (median)")
    p.add_argument("--cores", action="store_true", help="1 and 2 threads instead (see above)")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        if args.child[0] == "cores":
            print(json.dumps(cores_child(*args.child[1:])))
            return
        tool, key, ranks, repeat, ranks_path, slice_bytes = args.child
        print(json.dumps(child(tool, key, ranks, int(repeat), ranks_path, int(slice_bytes))))
        return
    print(f"<!-- {common.bytepair_build()}; runs {args.runs}, warm = median of {args.repeat} -->")
    if args.cores:
        cores_table(args)
        return
    scenario_table(args)


if __name__ == "__main__":
    main()
