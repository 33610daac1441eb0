"""The Spark engine of `bytepair.encode_dataset` on the tests' shared
SparkSession (conftest.spark_session): the same shards and manifest as the
local engine, and bad input raises the worker's ValueError on the driver."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import EOT, engine_available
from test_dataset import encode, expected_ids, mixed, tok  # noqa: F401 (fixtures)

import bytepair

engine_available("pyspark")


def test_spark_writes_the_same_dataset_as_local(spark_session, mixed, tok, tmp_path):
    folder, documents = mixed
    on_spark = encode(folder, tmp_path / "spark", tok, engine="spark")
    assert on_spark.manifest == encode(folder, tmp_path / "local", tok).manifest
    assert np.array_equal(
        on_spark.tokens.astype(np.int64), expected_ids(tok, documents, tok.eot_token)
    )


def test_bad_input_raises_the_workers_value_error(spark_session, tmp_path, tok):
    (tmp_path / "a.txt").write_bytes(b"ok" + EOT.encode() + b"\xff")
    with pytest.raises(ValueError, match=r"a.txt: record 1: invalid UTF-8 at byte offset 0"):
        bytepair.encode_dataset(
            tmp_path / "a.txt", tmp_path / "ds", tok, separator=EOT, engine="spark", progress=False
        )
