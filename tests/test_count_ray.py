"""The Ray engine (`bytepair.count(..., engine="ray")`) on one machine: its
artifact equals single-process counting, a task that fails once is retried
without counting twice, bad input raises the task's own error on the driver,
and a killed run leaves no artifact that opens.

Ray runs as a two-CPU cluster started by the tests (``ray.init(num_cpus=2)``),
so bytepair joins a cluster it did not start and ships itself to the workers
through ``runtime_env={"py_modules": [...]}``, as on a real cluster."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from conftest import engine_available
from test_wordcounts import EOT, content, inputs, single_process_counts  # noqa: F401 (inputs is a fixture)

import bytepair
from bytepair.counts.artifact import WordCounts
from bytepair.counts.sources import CountSpec

engine_available("ray")
import ray  # noqa: E402

from bytepair.counts.engines.on_ray import count_on_ray  # noqa: E402

pytestmark = pytest.mark.usefixtures("ray_cluster")


@pytest.mark.parametrize("shards,parts", [(1, 1), (3, 2), (6, 5)])
def test_ray_artifact_equals_single_process(inputs, tmp_path, shards, parts):
    counts = bytepair.count(
        inputs,
        tmp_path / "counts",
        engine="ray",
        special_tokens=[EOT],
        parts=parts,
        shards=shards,
        progress=False,
    )
    expected = single_process_counts(inputs)
    assert content(counts) == expected
    t = counts.totals
    assert (t.documents, t.bytes) == (len(inputs), sum(p.stat().st_size for p in inputs))
    assert (t.pre_tokens, t.distinct) == (sum(expected.values()), len(expected))
    assert counts.manifest["engine"] == "ray" and len(counts.manifest["parts"]) == parts
    assert counts.manifest["bucket_hash"].startswith("xxh3_64")


def test_ray_and_local_artifacts_have_the_same_parts(inputs, tmp_path):
    """Same bucket hash, same sort: part b of either engine holds the same words."""
    on_ray = bytepair.count(inputs, tmp_path / "ray", engine="ray", parts=3, progress=False)
    local = bytepair.count(inputs, tmp_path / "local", parts=3, num_workers=2, progress=False)
    assert [p["sha256"] for p in on_ray.manifest["parts"]] == [
        p["sha256"] for p in local.manifest["parts"]
    ]


def test_train_from_ray_counts_equals_train_on_files(inputs, tmp_path):
    counts = bytepair.count(
        inputs, tmp_path / "c", engine="ray", special_tokens=[EOT], progress=False
    )
    from_counts = bytepair.train_from_counts(counts, 600, progress=False)
    from_files = bytepair.train([str(p) for p in inputs], 600, special_tokens=[EOT], progress=False)
    assert from_counts.merges == from_files.merges
    assert from_counts.special_tokens == from_files.special_tokens


def test_a_task_failing_once_is_retried_without_counting_twice(inputs, tmp_path):
    marker = tmp_path / "failed-once"
    counts = count_on_ray(
        [str(p) for p in inputs],
        CountSpec("gpt2", (EOT,)),
        str(tmp_path / "c"),
        parts=3,
        shards=2,
        _fail_once=str(marker),
    )
    assert marker.exists(), "the injected failure did not happen"
    assert content(counts) == single_process_counts(inputs)
    assert not list(tmp_path.glob(".c.partial-*")), "staging folder left behind"


def test_a_task_failing_without_retries_leaves_nothing(inputs, tmp_path):
    with pytest.raises(RuntimeError, match="injected failure"):
        count_on_ray(
            [str(p) for p in inputs],
            CountSpec("gpt2", ()),
            str(tmp_path / "c"),
            shards=2,
            max_retries=0,
            _fail_once=str(tmp_path / "marker"),
        )
    assert not (tmp_path / "c").exists()
    assert not list(tmp_path.glob(".c.partial-*")), "staging folder left behind"


def test_bad_utf8_raises_the_tasks_value_error_on_the_driver(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("fine text\n" * 100)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok so far " * 10 + b"\xff\xfe and on")
    with pytest.raises(ValueError, match=r"bad\.txt: invalid UTF-8 at byte offset 100") as e:
        bytepair.count([good, bad], tmp_path / "c", engine="ray", shards=2, progress=False)
    assert type(e.value) is ValueError, "the error should be the task's own, not a Ray wrapper"
    assert not (tmp_path / "c").exists()
    replaced = bytepair.count([bad], tmp_path / "r", engine="ray", errors="replace", progress=False)
    assert content(replaced) == single_process_counts([bad], specials=(), errors="replace")


def test_cli_joins_a_running_cluster_and_ships_itself(inputs, tmp_path):
    """`--ray-address` connects to the tests' cluster as a new job whose
    runtime_env carries the bytepair package (py_modules)."""
    address = ray.get_runtime_context().gcs_address
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair.cli",
            "count",
            *map(str, inputs),
            "-o",
            str(tmp_path / "c"),
            "-q",
            "--engine",
            "ray",
            "--ray-address",
            address,
            "--special-token",
            EOT,
            "--parts",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert content(WordCounts.open(tmp_path / "c")) == single_process_counts(inputs)


def test_killed_ray_run_leaves_no_artifact(tmp_path):
    big = tmp_path / "big.txt"
    line = "the quick brown fox jumps over the lazy dog 0123456789 " * 20 + "\n"
    big.write_text(line * 150_000)  # ~170 MB: counting takes seconds
    address = ray.get_runtime_context().gcs_address
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bytepair.cli",
            "count",
            str(big),
            "-o",
            str(tmp_path / "out"),
            "-q",
            "--engine",
            "ray",
            "--ray-address",
            address,
        ],
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.partial-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the counting task runs now
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, (
        "the count finished before the kill: make the input bigger"
    )
    with pytest.raises(FileNotFoundError):
        WordCounts.open(tmp_path / "out")


@pytest.mark.slow
def test_a_budget_per_task_is_recorded_in_the_manifest(tmp_path):
    """Each Ray task counts within `max_memory` (lossy counting); what the
    tasks dropped adds up in the manifest, and with what they kept it makes
    every pre-token."""
    from test_budget import _random_words_file

    _random_words_file(tmp_path / "random.txt", 8)
    inputs = [tmp_path / "random.txt"]
    exact = bytepair.count(inputs, tmp_path / "exact", num_workers=1, progress=False)
    on_ray = bytepair.count(
        inputs, tmp_path / "ray", engine="ray", max_memory=64 << 20, progress=False
    )
    p = on_ray.pruned
    assert p.words > 100_000 and p.min_count >= 2 and p.max_memory == 64 << 20
    assert on_ray.totals.pre_tokens + p.pre_tokens == exact.totals.pre_tokens
