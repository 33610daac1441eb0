"""The Ray engine of `bytepair.encode_dataset` on the tests' shared two-CPU
cluster (conftest.ray_cluster): the same shards and manifest as the local
engine, a task that fails once is retried and overwrites its own shards only,
and bad input raises the task's own error on the driver."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import EOT, engine_available
from test_dataset import encode, expected_ids, mixed, tok  # noqa: F401 (fixtures)

import bytepair

engine_available("ray")

pytestmark = pytest.mark.usefixtures("ray_cluster")


@pytest.mark.slow
def test_ray_writes_the_same_dataset_as_local(mixed, tok, tmp_path):
    folder, documents = mixed
    on_ray = encode(folder, tmp_path / "ray", tok, engine="ray")
    local = encode(folder, tmp_path / "local", tok, num_threads=2)
    assert on_ray.manifest == local.manifest
    assert np.array_equal(
        on_ray.tokens.astype(np.int64), expected_ids(tok, documents, tok.eot_token)
    )


def test_a_ray_task_failing_once_is_retried(mixed, tok, tmp_path):
    folder, _ = mixed
    marker = tmp_path / "failed-once"
    ds = encode(folder, tmp_path / "ray", tok, engine="ray", _fail_once=str(marker))
    assert marker.exists(), "the injected failure did not happen"
    assert ds.manifest == encode(folder, tmp_path / "local", tok).manifest
    ds.verify()


def test_a_ray_task_failing_without_retries_fails_the_run_and_a_rerun_resumes(mixed, tok, tmp_path):
    folder, _ = mixed
    with pytest.raises(Exception, match="injected failure"):
        encode(
            folder,
            tmp_path / "ray",
            tok,
            engine="ray",
            max_retries=0,
            _fail_once=str(tmp_path / "m"),
        )
    assert not (tmp_path / "ray" / "_manifest.json").exists()
    assert (
        encode(folder, tmp_path / "ray", tok, engine="ray").manifest
        == encode(folder, tmp_path / "l", tok).manifest
    )


def test_bad_input_raises_the_tasks_value_error(tmp_path, tok):
    (tmp_path / "a.txt").write_bytes(b"ok" + EOT.encode() + b"\xff")
    with pytest.raises(ValueError, match=r"a.txt: record 1: invalid UTF-8 at byte offset 0"):
        bytepair.encode_dataset(
            tmp_path / "a.txt", tmp_path / "ds", tok, separator=EOT, engine="ray", progress=False
        )
