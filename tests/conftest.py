"""Shared fixtures and helpers for the test suite.

* `bytepair.reference` (the pure-Python oracle) is loaded from the source tree,
  so the tests always use the reference being edited, even before a rebuild
  installs it;
* `corpus(name)` gives the path of a real corpus in ../shared/corpora and skips
  the test, saying why, when it is absent; `corpus_text(name, size, at=...)`
  gives a slice of one as text, cut to whole lines;
* `engine_available(module)` skips a test when a counting engine (ray,
  pyspark) is not installed, or fails it when BYTEPAIR_REQUIRE_ENGINES=1;
* `ray_cluster`: one two-CPU local Ray cluster for every Ray test of the
  session (starting Ray takes seconds), started by the tests, so bytepair joins
  a cluster it did not start, as on a real one; `spark_session`: one local
  ``local[2,2]`` SparkSession for the Spark tests (two slots, a failed task
  tried twice as on a cluster);
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
CORPORA = Path(__file__).parents[1].parent / "shared" / "corpora"


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


def corpus_path(name: str) -> Path:
    """Path of corpus `name`; skips the calling test when it is not there."""
    if not CORPORA.is_dir():
        pytest.skip(
            f"corpora directory {CORPORA} is absent (real-text tests need ../shared/corpora)"
        )
    path = CORPORA / name
    if not path.is_file():
        pytest.skip(f"corpus {name} is absent from {CORPORA}")
    return path


def read_slice(path: Path, size: int, at: float = 0.0) -> str:
    """About `size` bytes of `path` starting at fraction `at` of the file, as
    text: cut to whole lines so no character (or line) is split."""
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
    """``corpus(name) -> Path`` of a file in ../shared/corpora (skips if absent)."""
    return corpus_path


@pytest.fixture(scope="session")
def corpus_text():
    """``corpus_text(name, size, at=0.0) -> str``: a slice of a corpus file."""

    def get(name: str, size: int, at: float = 0.0) -> str:
        return read_slice(corpus_path(name), size, at)

    return get


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
