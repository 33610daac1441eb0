"""Shared fixtures and helpers for the test suite.

* `bytepair.reference` (the pure-Python oracle) is loaded from the source tree,
  so the tests always use the reference being edited, even before a rebuild
  installs it;
* the real corpora, in one place: ``../shared/corpora`` beside the repository,
  or the folder ``BYTEPAIR_CORPORA`` names (as for bench/). `corpus_path(name)`
  (fixture `corpus`) gives the path of one and skips the test, saying why, when
  it is absent; `slice_lines(name, size, at=...)` (fixture `corpus_text`) gives
  a slice of one as text, cut to whole lines; `read_slice(name, start, size)`
  the text of a byte range, `read_text(name)` a whole file, `corpus_files()`
  every file;
* `engine_available(module)` skips a test when a counting engine (ray,
  pyspark) is not installed, or fails it when BYTEPAIR_REQUIRE_ENGINES=1;
* `ray_cluster`: one two-CPU local Ray cluster for every Ray test of the
  session (starting Ray takes seconds), started by the tests, so bytepair joins
  a cluster it did not start, as on a real one; `spark_session`: one local
  ``local[2,2]`` SparkSession for the Spark tests (two slots, a failed task
  tried twice as on a cluster);
* `RESTORE_SIGINT`: the prefix of a child command that a test sends SIGINT;
* hypothesis profile: no deadline (the first call of a pattern compiles it, and
  CI machines vary); each test sets its own max_examples to stay fast.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("BYTEPAIR_CORPORA", REPO.parent / "shared" / "corpora"))


def _load_reference():
    """Import `bytepair.reference` from python/bytepair/reference.py."""
    import bytepair

    source = REPO / "python" / "bytepair" / "reference.py"
    if not source.exists():  # running against an installed package only
        from bytepair import reference

        return reference
    spec = importlib.util.spec_from_file_location("bytepair.reference", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bytepair.reference"] = module
    spec.loader.exec_module(module)
    bytepair.reference = module
    return module


reference = _load_reference()

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "bytepair",
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    settings.load_profile("bytepair")
except ImportError:  # hypothesis tests skip themselves via importorskip
    pass


def corpora_dir() -> Path:
    """The corpora folder; skips the calling test when it is absent (the
    whole module when called while it is imported: some build their cases
    from corpus slices at collection time)."""
    if not CORPORA.is_dir():
        pytest.skip(
            f"corpora directory {CORPORA} is absent (real-text tests need ../shared/corpora "
            "or BYTEPAIR_CORPORA)",
            allow_module_level=True,
        )
    return CORPORA


def corpus_path(name: str) -> Path:
    """Path of corpus `name` (relative to the corpora folder, e.g.
    ``cs336/gpt2_vocab.json``); skips the calling test (or module, as
    `corpora_dir`) when it is not there."""
    path = corpora_dir() / name
    if not path.is_file():
        pytest.skip(f"corpus {name} is absent from {CORPORA}", allow_module_level=True)
    return path


def corpus_files() -> list[str]:
    """Every file under the corpora folder (relative paths, sorted); [] if absent.
    For parametrizing at collection time, where a test cannot skip yet."""
    if not CORPORA.is_dir():
        return []
    return sorted(str(p.relative_to(CORPORA)) for p in CORPORA.rglob("*") if p.is_file())


def read_text(name: str) -> str:
    """The whole text of corpus `name` (skips when absent)."""
    return corpus_path(name).read_text(encoding="utf-8")


def read_slice(name: str, start: int, size: int) -> str:
    """About `size` bytes of corpus `name` from byte `start`, as text (a UTF-8
    sequence cut at either edge is dropped; the files are valid UTF-8)."""
    with open(corpus_path(name), "rb") as f:
        f.seek(start)
        data = f.read(size)
    text = data.decode("utf-8", errors="ignore")
    assert len(text) > size // 8, f"{name}: slice at {start} is nearly empty"
    return text


def slice_lines(name: str, size: int, at: float = 0.0) -> str:
    """About `size` bytes of corpus `name` starting at fraction `at` of the
    file, as text: cut to whole lines so no character (or line) is split."""
    path = corpus_path(name)
    with open(path, "rb") as f:
        f.seek(int(at * path.stat().st_size))
        raw = f.read(size + 4096)
    if at > 0:
        raw = raw[raw.find(b"\n") + 1 :]
    cut = raw.rfind(b"\n", 0, size)
    raw = raw[: cut + 1] if cut >= 0 else raw[:size]
    return raw.decode("utf-8", errors="ignore")


@pytest.fixture(scope="session")
def corpus():
    """``corpus(name) -> Path`` of a corpus file (`corpus_path`; skips if absent)."""
    return corpus_path


@pytest.fixture(scope="session")
def corpus_text():
    """``corpus_text(name, size, at=0.0) -> str``: a slice of a corpus file (`slice_lines`)."""
    return slice_lines


# A shell that starts the suite in the background (`cmd &`, `bash run.sh &`
# from a script) sets SIGINT to "ignore"; children inherit that through exec,
# and a Python child then installs no KeyboardInterrupt handler, so a test's
# Ctrl-C would not reach it. A child that a test interrupts runs as
# [*RESTORE_SIGINT, *argv]: this small program restores SIGINT's default
# action, then execs argv in the same process (same pid for send_signal).
# (Not Popen's preexec_fn: it is unsafe once the test process has threads,
# and Ray and Spark leave some.)
RESTORE_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execvp(sys.argv[1], sys.argv[1:])",
]


def byte_tokenizer(pattern: str = "gpt2", special_tokens=None):
    """A Tokenizer with no merges (just the 256 bytes) and the given pattern."""
    import bytepair

    return bytepair.Tokenizer(
        {i: bytes([i]) for i in range(256)}, [], special_tokens, pattern=pattern
    )


EOT = "<|endoftext|>"
MIB = 1 << 20

# Documents for the counting engines: whitespace runs straddling the 1 MiB
# read-block edge, CRLF, special tokens, an empty file, non-ASCII text.
COUNTING_STRESS_TEXTS = {
    "edges.txt": "a" * (MIB - 3) + " " * 7 + "b\n" + "word " * 1000 + "\n\n\n   \t\n" + "x" * 100,
    "crlf.txt": "line one\r\nline two\r\n\r\n  indented\r\n" * 500,
    "special.txt": f"before{EOT}after {EOT}{EOT} the end{EOT}" * 300,
    "empty.txt": "",
    "unicode.txt": "naïve café — 東京 😀 ǅ\u00a0nbsp 123 4567\n" * 400,
}


def engine_available(module: str) -> None:
    """Skip unless `module` imports (and Java and pandas are there, for pyspark); with
    BYTEPAIR_REQUIRE_ENGINES=1 (set by .ci/run) a missing engine fails instead."""
    problem = None
    try:
        __import__(module)
    except ImportError as e:
        problem = f"{module} is not installed ({e})"
    if problem is None and module == "pyspark":
        if shutil.which("java") is None:
            problem = "pyspark needs Java (no `java` on PATH)"
        elif importlib.util.find_spec("pandas") is None:
            problem = "pyspark's mapInArrow needs pandas (pip install 'pyspark[sql]')"
    if problem:
        if os.environ.get("BYTEPAIR_REQUIRE_ENGINES") == "1":
            pytest.fail(f"BYTEPAIR_REQUIRE_ENGINES=1 but {problem}")
        pytest.skip(problem, allow_module_level=True)


@pytest.fixture(scope="session")
def ray_cluster():
    """A two-CPU local Ray cluster shared by the Ray tests of the session."""
    engine_available("ray")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def spark_session():
    """One local SparkSession, ``local[2,2]``, shared by the Spark tests of the session."""
    engine_available("pyspark")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import this bytepair
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("bytepair tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.files.maxPartitionBytes", str(MIB))  # several map tasks even here
        .getOrCreate()
    )
    session.sparkContext.setLogLevel(
        "OFF"
    )  # injected and input errors would print Java stack traces
    yield session
    session.stop()
