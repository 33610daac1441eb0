"""Run the atheris fuzz targets for a bounded time each, one after another
(one core), and print executions and findings.

    python fuzz/run.py --seconds 300                 # every target, 5 minutes each
    python fuzz/run.py --seconds 60 --target loaders

Needs `pip install atheris` (not a test dependency; pytest never collects
this directory). Work files go to --workdir (default fuzz/.work, ignored by
git): the growing corpus per target, seeds, and findings/<target>/, where
each distinct contract violation is kept once as <sig>.input (the smallest
input seen) and <sig>.txt (what went wrong). A libFuzzer crash, timeout or
out-of-memory stops the target's process; its input is kept in findings/ and
the target restarts for the rest of its time.

Reproduce one input: python fuzz/fuzz_<target>.py path/to/input
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent
TARGETS = {
    "loaders": ("fuzz_loaders.py", 16384),
    "encode": ("fuzz_encode.py", 2048),
    "pretokenize": ("fuzz_pretokenize.py", 2048),
    "train": ("fuzz_train.py", 512),
    "counts": ("fuzz_counts.py", 16384),
}
EXECUTED = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
ARTIFACT = re.compile(r"Test unit written to (\S+)")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, required=True, help="fuzzing time per target")
    p.add_argument(
        "--target",
        choices=sorted(TARGETS),
        action="append",
        help="run only this target (repeatable)",
    )
    p.add_argument("--workdir", type=Path, default=FUZZ_DIR / ".work")
    p.add_argument(
        "--timeout",
        type=int,
        default=30,
        help="seconds one input may take before it counts as a hang",
    )
    return p.parse_args(argv)


def write_seeds(script: Path, seeds: Path, env: dict) -> None:
    shutil.rmtree(seeds, ignore_errors=True)
    subprocess.run(
        [sys.executable, str(script), "--write-seeds", str(seeds)],
        env=env,
        check=True,
        stderr=subprocess.DEVNULL,
    )


def findings_of(findings: Path) -> dict[str, str]:
    """signature -> first line of its description."""
    out = {}
    for txt in sorted(findings.glob("*.txt")):
        out[txt.stem] = txt.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    return out


def run_process(cmd: list[str], env: dict, log: Path) -> tuple[int, str | None]:
    """Run one libFuzzer process; (executions, crash artifact or None)."""
    with open(log, "a", encoding="utf-8") as out:
        proc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    text = log.read_text(encoding="utf-8", errors="replace")
    tail = text[text.rfind("INFO: Seed:") :] if "INFO: Seed:" in text else text
    runs = [int(n) for n in EXECUTED.findall(tail)]
    artifact = ARTIFACT.findall(tail)
    return (runs[-1] if runs else 0), (artifact[-1] if proc.returncode and artifact else None)


def rust_coverage_build() -> bool:
    """Whether the installed bytepair._core was built with coverage
    instrumentation (README: "Rust coverage"); the harnesses then make
    libFuzzer's symbols visible to it (common.expose_libfuzzer_symbols)."""
    import importlib.util

    spec = importlib.util.find_spec("bytepair")
    if spec is None or not spec.submodule_search_locations:
        return False
    libs = list(Path(spec.submodule_search_locations[0]).glob("_core*.so"))
    return bool(libs) and b"__sanitizer_cov_8bit_counters_init" in libs[0].read_bytes()


def fuzz_target(name: str, seconds: int, workdir: Path, timeout: int) -> dict:
    script, max_len = TARGETS[name]
    script = FUZZ_DIR / script
    corpus, seeds = workdir / "corpus" / name, workdir / "seeds" / name
    findings = workdir / "findings" / name
    for d in (corpus, findings):
        d.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, FUZZ_FINDINGS=str(workdir / "findings"), RAYON_NUM_THREADS="1")
    write_seeds(script, seeds, env)
    before = set(findings_of(findings))
    log = workdir / f"{name}.log"
    log.write_text("")
    start, executions, crashes = time.monotonic(), 0, []
    while (left := seconds - int(time.monotonic() - start)) > 5:
        cmd = [
            sys.executable,
            str(script),
            f"-max_total_time={left}",
            f"-timeout={timeout}",
            f"-max_len={max_len}",
            "-rss_limit_mb=3072",
            "-print_final_stats=1",
            f"-artifact_prefix={findings}/",
            str(corpus),
            str(seeds),
        ]
        with open(log, "a") as out:
            out.write(f"\n### {' '.join(cmd)}\nINFO: Seed: run\n")
        runs, artifact = run_process(cmd, env, log)
        executions += runs
        if artifact is None:
            break
        crashes.append(artifact)
    elapsed = time.monotonic() - start
    found = findings_of(findings)
    return {
        "target": name,
        "native_coverage": rust_coverage_build(),
        "seconds": round(elapsed),
        "executions": executions,
        "exec_per_s": round(executions / elapsed, 1) if elapsed else 0.0,
        "findings": found,
        "new": sorted(set(found) - before),
        "crashes": crashes,
        "corpus": len(list(corpus.iterdir())),
    }


def report(result: dict) -> None:
    print(
        f"\n== {result['target']}{' (Rust coverage)' if result['native_coverage'] else ''}: "
        f"{result['seconds']} s, {result['executions']:,} executions ({result['exec_per_s']}/s), "
        f"corpus {result['corpus']} inputs, {len(result['findings'])} findings "
        f"({len(result['new'])} new), {len(result['crashes'])} crashes/hangs"
    )
    for sig, line in result["findings"].items():
        mark = "NEW " if sig in result["new"] else "    "
        print(f"  {mark}{sig}  {line[:150]}")
    for path in result["crashes"]:
        print(f"  CRASH {path}")
    sys.stdout.flush()


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import atheris  # noqa: F401
    except ImportError:
        sys.exit("atheris is not installed: pip install atheris")
    names = args.target or list(TARGETS)
    results = []
    for name in names:
        print(f"fuzzing {name} for {args.seconds} s ...", flush=True)
        results.append(fuzz_target(name, args.seconds, args.workdir, args.timeout))
        report(results[-1])
    return 1 if any(r["findings"] or r["crashes"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
