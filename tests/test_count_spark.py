"""The Spark engine (`bytepair.counts.engines.on_spark`): its artifacts equal the local engine's.

One local SparkSession (conftest.spark_session, shared with the dataset tests), ``local[2,2]``: two
task slots, and a failed task is tried twice (plain ``local[2]`` never retries), so an injected
failure is retried as on a cluster. Word counts, totals and training results are compared with the
local engine (`bytepair.count(engine="local")`), which tests/test_wordcounts.py checks against
single-process counting.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import COUNTING_STRESS_TEXTS, EOT

import bytepair
from bytepair import _core
from bytepair.counts.artifact import WordCounts
from bytepair.counts.parts import part_batches

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def spark(spark_session):
    return spark_session


@pytest.fixture(scope="module")
def texts(corpus_text) -> dict[str, str]:
    """Documents that stress chunk edges, CRLF, special tokens, an empty file; plus corpus
    slices."""
    corpora = {
        f"{name}.txt": corpus_text(f"{name}.txt", 400_000, at)
        for name, at in (("enwiki", 0.0), ("code", 0.2), ("multilingual", 0.5))
    }
    return {**COUNTING_STRESS_TEXTS, **corpora}


@pytest.fixture(scope="module")
def files(texts, tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("text")
    for name, text in texts.items():
        (d / name).write_bytes(text.encode())
    return [str(d / name) for name in texts]


def local(inputs, out, **options) -> WordCounts:
    return bytepair.count(inputs, out, engine="local", num_workers=1, progress=False, **options)


def assert_same_artifact(
    spark_counts: WordCounts, local_counts: WordCounts, parts: int | None = None
) -> None:
    """Same words and counts, same totals; each part in our format (sorted, each word once)."""
    items = list(spark_counts.items())
    assert len(items) == len({w for w, _ in items}), "a word is in two parts"
    assert dict(items) == dict(local_counts.items())
    assert spark_counts.totals == local_counts.totals
    assert (
        spark_counts.manifest["engine"] == "spark" and spark_counts.manifest["bucket_hash"] is None
    )
    if parts is not None:
        assert len(spark_counts.part_paths()) == parts
    spark_counts.verify()
    for path in spark_counts.part_paths():
        schema = pq.read_schema(path)
        assert schema.names == ["word", "count"] and schema.field("count").type == pa.int64()
        assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
        words = [w for data, offsets, _ in part_batches(path) for w in split(data, offsets)]
        assert words == sorted(set(words))


def split(data: bytes, offsets: bytes) -> list[bytes]:
    o = np.frombuffer(offsets, "<i8").tolist()
    return [data[o[i] : o[i + 1]] for i in range(len(o) - 1)]


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
def test_text_files_equal_the_local_engine(spark, files, tmp_path, parts):
    counts = bytepair.count(
        files,
        tmp_path / "spark",
        engine="spark",
        spark=spark,
        parts=parts,
        special_tokens=[EOT],
        progress=False,
    )
    expected = local(files, tmp_path / "local", special_tokens=[EOT])
    assert_same_artifact(counts, expected, parts)
    assert counts.totals.documents == len(files)  # the empty file too, which Spark's reader skips


def test_jsonl_and_parquet_inputs_equal_the_local_engine(spark, texts, tmp_path):
    docs = [t for t in texts.values() if t] + ["", "short one", f"a{EOT}b"]
    jsonl, parquet = tmp_path / "docs.jsonl", tmp_path / "docs.parquet"
    half = len(docs) // 2
    jsonl.write_text("".join(json.dumps({"id": i, "body": d}) + "\n" for i, d in enumerate(docs)))
    pq.write_table(pa.table({"body": docs[half:]}), parquet, row_group_size=2)
    for inputs in ([str(jsonl)], [str(parquet)]):
        name = os.path.basename(inputs[0])
        counts = bytepair.count(
            inputs,
            tmp_path / f"spark-{name}",
            engine="spark",
            spark=spark,
            parts=2,
            text_field="body",
            special_tokens=[EOT],
            progress=False,
        )
        expected = local(
            inputs, tmp_path / f"local-{name}", text_field="body", special_tokens=[EOT]
        )
        assert_same_artifact(counts, expected, 2)
        assert counts.manifest["text"] == expected.manifest["text"]


def test_count_words_on_a_dataframe_equals_counting_the_texts(spark, texts, tmp_path):
    from bytepair.counts.engines.on_spark import count_words

    docs = list(texts.values())
    rows = [(d,) for d in docs] + [(None,)]
    df = spark.createDataFrame(rows, "text string").repartition(3)
    counts = count_words(df, "text", tmp_path / "c", special_tokens=[EOT], parts=2)
    counter = _core.WordCounter("gpt2", [EOT])
    counter.count_texts(docs)
    assert dict(counts.items()) == dict(counter.items())
    t = counts.totals
    assert (t.documents, t.bytes) == (len(docs), sum(len(d.encode()) for d in docs))
    assert (t.pre_tokens, t.distinct) == (counter.total(), len(counter))
    # binary documents are counted the same (and decoded by our rules)
    binary = spark.createDataFrame([(d.encode(),) for d in docs], "doc binary")
    same = count_words(binary, "doc", tmp_path / "b", special_tokens=[EOT], parts=1)
    assert dict(same.items()) == dict(counts.items())


def test_count_words_on_no_documents_gives_empty_parts(spark, tmp_path):
    from bytepair.counts.engines.on_spark import count_words

    df = spark.createDataFrame([(None,), (None,)], "text string")
    counts = count_words(df, "text", tmp_path / "c", parts=2)
    assert counts.totals == bytepair.counts.artifact._Totals(0, 0, 0, 0)
    assert len(counts.part_paths()) == 2 and list(counts.items()) == []


def test_count_words_rejects_a_missing_or_numeric_column(spark, tmp_path):
    from bytepair.counts.engines.on_spark import count_words

    df = spark.createDataFrame([(1,)], "n long")
    with pytest.raises(ValueError, match="no column 'text'"):
        count_words(df, "text", tmp_path / "c")
    with pytest.raises(ValueError, match="column 'n' is bigint, expected string or binary"):
        count_words(df, "n", tmp_path / "c")


def test_train_from_spark_counts_equals_train_on_files(spark, files, tmp_path):
    counts = bytepair.count(
        files,
        tmp_path / "c",
        engine="spark",
        spark=spark,
        parts=2,
        special_tokens=[EOT],
        progress=False,
    )
    from_counts = bytepair.train_from_counts(counts, 700, progress=False)
    from_files = bytepair.train(files, 700, special_tokens=[EOT], progress=False)
    assert from_counts.merges == from_files.merges
    assert from_counts.special_tokens == from_files.special_tokens


def test_a_failed_map_task_is_retried_without_counting_twice(spark, files, tmp_path):
    marker = tmp_path / "failed-once"
    counts = bytepair.count(
        files,
        tmp_path / "spark",
        engine="spark",
        spark=spark,
        parts=3,
        special_tokens=[EOT],
        progress=False,
        _fail_once=str(marker),
    )
    assert marker.exists(), "the injected failure did not happen"
    assert_same_artifact(counts, local(files, tmp_path / "local", special_tokens=[EOT]), 3)


def test_bad_utf8_names_the_file_and_leaves_nothing_behind(spark, files, tmp_path):
    bad = tmp_path / "bad [name].txt"  # glob characters name the file itself
    bad.write_bytes(b"fine text \xff\xfe then more")
    inputs = files[:2] + [str(bad)]
    with pytest.raises(ValueError, match=r"bad \[name\]\.txt: invalid UTF-8 at byte offset 10"):
        bytepair.count(inputs, tmp_path / "c", engine="spark", spark=spark, progress=False)
    assert not os.path.exists(tmp_path / "c")
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".c.partial")], (
        "staging folder left behind"
    )
    # with errors="replace" it counts, as the local engine does
    counts = bytepair.count(
        inputs,
        tmp_path / "c",
        engine="spark",
        spark=spark,
        errors="replace",
        parts=1,
        progress=False,
    )
    assert_same_artifact(counts, local(inputs, tmp_path / "l", errors="replace"), 1)


def test_a_file_spark_would_skip_is_an_error(spark, files, tmp_path):
    hidden = tmp_path / "_part.txt"
    hidden.write_text("text Spark's file sources never read")
    with pytest.raises(
        ValueError, match="_part.txt: Spark's file sources skip files whose names start with"
    ):
        bytepair.count(
            files[:1] + [str(hidden)], tmp_path / "c", engine="spark", spark=spark, progress=False
        )


def test_progress_bar_counts_files_and_bytes_on_the_driver(spark, files, tmp_path, capfd):
    counts = bytepair.count(
        files, tmp_path / "c", engine="spark", spark=spark, special_tokens=[EOT], progress=True
    )
    err = capfd.readouterr().err
    assert f"files={len(files)}/{len(files)}" in err, err[-2000:]
    assert "counting: 100%" in err
    assert counts.totals.documents == len(files)


@pytest.mark.slow
def test_a_budget_per_map_task_is_recorded_in_the_manifest(spark, tmp_path):
    """Each map task counts within `max_memory` (lossy counting); the empty-word
    rows carry what it dropped through the shuffle, so the manifest adds it
    up, and with what was kept it makes every pre-token."""
    from test_budget import _random_words_file

    _random_words_file(tmp_path / "random.txt", 8)
    inputs = [str(tmp_path / "random.txt")]
    exact = local(inputs, tmp_path / "exact")
    counted = bytepair.count(
        inputs, tmp_path / "spark", engine="spark", max_memory=64 << 20, progress=False
    )
    p = counted.pruned
    assert p.words > 100_000 and p.min_count >= 2 and p.max_memory == 64 << 20
    assert counted.totals.pre_tokens + p.pre_tokens == exact.totals.pre_tokens
    assert b"" not in dict(counted.items()), "the pruned row is not a word"
