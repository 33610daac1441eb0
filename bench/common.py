"""Helpers shared by the benchmarks: corpus lookup, child processes, statistics,
peak memory and markdown tables.

Every measurement runs in a fresh child process (the benchmark script itself,
started with ``--child``) so that peak RSS is per tool and no tool inherits
another's caches or allocator state. The child prints one JSON object on its
last line of stdout; the parent collects them.
"""

from __future__ import annotations

import functools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
# The corpora live next to the repository (../shared/corpora), as for the tests.
DEFAULT_CORPORA = Path(
    os.environ.get("BYTEPAIR_CORPORA", BENCH_DIR.parents[1] / "shared" / "corpora")
)
# Raw results (JSON) go here; the folder is git-ignored.
OUT_DIR = BENCH_DIR / "out"
EOT = "<|endoftext|>"
MB = 1e6  # throughput and corpus sizes are in 10^6 bytes; RSS is in MiB


def corpus_path(name: str, corpora_dir: Path = DEFAULT_CORPORA) -> Path:
    """Resolve a corpus name (``enwiki``, ``enwiki.txt``) or a path to an existing file."""
    for candidate in (Path(name), corpora_dir / name, corpora_dir / f"{name}.txt"):
        if candidate.is_file():
            return candidate
    raise SystemExit(f"corpus {name!r}: not a file, and not found in {corpora_dir}")


def corpus_label(path: Path) -> str:
    """Short name shown in tables (file name without ``.txt``)."""
    return path.name.removesuffix(".txt")


# Corpus files that the big inputs are built from (bench_huge --mix, bench_count).
MIXES = {
    # every corpus: prose, code, 30 languages (~130 MB of distinct text)
    "all": (
        "enwiki.txt",
        "code.txt",
        "multilingual.txt",
        "enwik8_head.txt",
        "shakespeare.txt",
        "tinystories_v1_train_head.txt",
        "tinystories_v1_valid_head.txt",
    ),
    # English prose only (~73 MB): what HF tokenizers trains fastest on, so it can finish 4 GB
    "english": (
        "enwiki.txt",
        "enwik8_head.txt",
        "shakespeare.txt",
        "tinystories_v1_train_head.txt",
        "tinystories_v1_valid_head.txt",
    ),
}

SIZE_UNITS = {"K": 10**3, "M": 10**6, "G": 10**9}


def parse_size(text: str) -> int:
    """'10M' -> 10_000_000 bytes (decimal units, as in MB/s)."""
    text = text.strip().upper().removesuffix("B")
    unit = SIZE_UNITS.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in SIZE_UNITS else text
    return int(float(number) * unit)


def size_label(n: int) -> str:
    for suffix, unit in (("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


@functools.lru_cache(maxsize=4)
def _paragraphs(names: tuple[str, ...]) -> tuple[bytes, ...]:
    """The blank-line separated paragraphs of the corpus files `names` (cached:
    building many inputs from the same files reads them once)."""
    paragraphs: list[bytes] = []
    for name in names:
        paragraphs += [p for p in corpus_path(name).read_bytes().split(b"\n\n") if p]
    return tuple(paragraphs)


def shuffled_paragraphs(names: Sequence[str], size: int, seed: int = 0) -> Iterator[bytes]:
    """`size` bytes of the paragraphs of the corpus files `names`, each joined by
    a blank line; copy k of the whole set is shuffled with seed `seed + k`, so no
    two copies are the same text but the distinct words stay those of the sources."""
    paragraphs = _paragraphs(tuple(names))
    left, copy = size, 0
    while left > 0:
        order = list(range(len(paragraphs)))
        random.Random(seed + copy).shuffle(order)
        for i in order:
            piece = paragraphs[i]
            if len(piece) + 2 > left:  # the last piece: cut, but never inside a UTF-8 sequence
                piece = piece[: max(left - 2, 0)].decode("utf-8", "ignore").encode("utf-8")
                left = len(piece) + 2
            yield piece + b"\n\n"
            left -= len(piece) + 2
            if left <= 0:
                break
        copy += 1


def write_new(path: Path, chunks) -> Path:
    """Write the byte chunks to `path` via a temporary name (reused if present)."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    with open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
    tmp.rename(path)
    return path


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB.

    On Linux this is ``VmHWM`` from /proc/self/status, the high-water mark of the
    process's own memory. ``getrusage(RUSAGE_SELF).ru_maxrss`` is not used there:
    the kernel carries the peak RSS of the process that called exec (here the
    benchmark parent, which holds the ids it compares) into the child's
    ru_maxrss, so a child would report at least its parent's peak. Elsewhere,
    ru_maxrss (KiB on Linux, bytes on macOS) is the fallback.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024


def current_rss_mib() -> float | None:
    """Resident set size now (VmRSS), in MiB; None where /proc is not available."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset the peak RSS to the current RSS (Linux >= 4.0: write 5 to
    /proc/self/clear_refs), so that `peak_rss_mib` afterwards covers only what
    follows, e.g. one encode call with the text already loaded. False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def ru_maxrss_mib() -> float:
    """getrusage's ru_maxrss in MiB (Linux), recorded next to `peak_rss_mib` for reference."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bytepair_build() -> str:
    """Identity of the installed bytepair package: the start of a sha256 over its
    files (extension module and Python sources) and when the extension was
    installed, to detect a reinstall with different code in the middle of a run."""
    import hashlib
    import importlib.util
    from datetime import datetime, timezone

    spec = importlib.util.find_spec("bytepair")
    if spec is None or not spec.submodule_search_locations:
        return "bytepair not installed"
    folder = Path(next(iter(spec.submodule_search_locations)))
    digest = hashlib.sha256()
    files = sorted(
        p for p in folder.iterdir() if p.is_file() and p.suffix in (".py", ".so", ".pyd")
    )
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    cores = [p for p in files if p.name.startswith("_core")]
    when = ""
    if cores:
        stamp = datetime.fromtimestamp(cores[0].stat().st_mtime, timezone.utc)
        when = f", {cores[0].name} installed {stamp:%Y-%m-%d %H:%M:%S} UTC"
    return f"package sha256 {digest.hexdigest()[:12]}{when}"


class BuildWatch:
    """Remember the bytepair build at the start; `changed()` says whether a
    different build is installed now (its results would mix two builds)."""

    def __init__(self) -> None:
        self.start = bytepair_build()

    def changed(self) -> str | None:
        now = bytepair_build()
        same_code = now.split(",")[0] == self.start.split(",")[0]
        return (
            None
            if same_code
            else f"bytepair was reinstalled with other code during the run: {self.start} -> {now}"
        )


def thread_env(threads: int | None) -> dict[str, str]:
    """Environment for a child: pin rayon pools (bytepair, HF, rustbpe) to `threads`."""
    env = dict(os.environ)
    if threads is not None:
        env["RAYON_NUM_THREADS"] = str(threads)
    return env


def run_child(script: Path, args: Sequence[str], env: Mapping[str, str] | None = None) -> dict:
    """Run ``python script --child ...args`` and return the JSON on its last stdout line.

    Raises RuntimeError with the child's stderr if it fails.
    """
    cmd = [sys.executable, str(script), "--child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(env) if env else None)
    if proc.returncode != 0:
        raise RuntimeError(
            f"child failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-4000:]}"
        )
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"child printed nothing: {' '.join(cmd)}\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


def emit(result: dict) -> None:
    """Child side of `run_child`: print the result as one JSON line."""
    print(json.dumps(result), flush=True)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def fmt(value: float | None, digits: int = 2) -> str:
    """Format a number for a table; None (tool not run / not applicable) is a dash."""
    return "–" if value is None else f"{value:.{digits}f}"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table; numeric-looking columns are right-aligned."""

    def numeric(col: int) -> bool:
        cells = [r[col] for r in rows if r[col] not in ("–", "")]
        return bool(cells) and all(c.rstrip("*").replace(".", "", 1).isdigit() for c in cells)

    align = ["---:" if numeric(i) else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def save_json(name: str, data: object) -> Path:
    """Write raw results to bench/out/<name> and return the path."""
    OUT_DIR.mkdir(exist_ok=True)
    path = OUT_DIR / name
    path.write_text(json.dumps(data, indent=1))
    return path


def log(message: str) -> None:
    """Progress lines go to stderr, tables to stdout."""
    print(message, file=sys.stderr, flush=True)
