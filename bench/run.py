"""Run the benchmarks (training, encoding, then counting) with their default
sets and print the markdown tables.

Usage::

    python bench/run.py                      # defaults of both scripts
    python bench/run.py --train-repeat 5 --encode-repeat 3 --output bench/out/results.md
    python bench/run.py --quick              # smoke test: 1 round, small inputs

Options not listed here: run ``bench/bench_train.py``, ``bench/bench_encode.py``
or ``bench/bench_count.py`` directly (see their ``--help``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
from pathlib import Path

import bench_count
import bench_encode
import bench_train


def machine_line() -> str:
    """One line describing where the numbers were measured."""
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, {mem_gib:.0f} GiB, "
        f"Python {platform.python_version()}, {platform.system()} {platform.machine()}"
    )


def versions_line() -> str:
    """Versions of bytepair and the peers (as installed)."""
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dist in ("bytepair", "tiktoken", "tokenizers", "rustbpe"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist} not installed")
    return ", ".join(parts)


def git_line() -> str:
    """The repository commit the run was made from (the installed build may differ)."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "git commit unknown"
    return f"repository at {head}{' with uncommitted changes' if dirty else ''}"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train-repeat", type=int, default=3, help="training runs per tool (default 3)")
    p.add_argument(
        "--encode-repeat", type=int, default=5, help="encoding rounds per measurement (default 5)"
    )
    p.add_argument("--skip-train", action="store_true")
    p.add_argument("--skip-encode", action="store_true")
    p.add_argument(
        "--skip-count",
        action="store_true",
        help="skip bench_count.py (by default: 2 GB input, 3 rounds, Heaps' law up to 1 GB)",
    )
    p.add_argument(
        "--count-repeat", type=int, default=3, help="counting rounds per measurement (default 3)"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: one round, tinystories training at vocab 2000, 2 MB of each encoding "
        "corpus, counting 16 MB (bench_count.py --quick)",
    )
    p.add_argument("--output", type=Path, help="also write the report (markdown) to this file")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    train_argv = ["--repeat", str(args.train_repeat)]
    encode_argv = ["--repeat", str(args.encode_repeat)]
    count_argv = ["--repeat", str(args.count_repeat)]
    if args.quick:
        train_argv = [
            "--repeat",
            "1",
            "--corpus",
            "tinystories_v1_train_head",
            "--vocab-size",
            "2000",
            "--json",
            "quick-train.json",
        ]
        encode_argv = [
            "--repeat",
            "1",
            "--limit-mb",
            "2",
            "--hf-limit-mb",
            "1",
            "--json",
            "quick-encode.json",
        ]
        count_argv = ["--quick"]
    header = f"Measured {machine_line()}.\n\n{versions_line()}; {git_line()}."
    print(header + "\n", flush=True)
    parts = [header]
    if not args.skip_train:
        parts.append(bench_train.main(train_argv))
        print(flush=True)
    if not args.skip_encode:
        parts.append(bench_encode.main(encode_argv))
        print(flush=True)
    if not args.skip_count:
        parts.append(bench_count.main(count_argv))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
