"""Word-counts artifacts and the local counting engine (`bytepair.count`).

The local engine (a process pool running `count_shard` then `reduce_bucket`)
must give exactly the counts of single-process counting, for any number of
shards and parts; the artifact must refuse to open when incomplete or damaged;
training from it must equal training on the files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import CORPORA, COUNTING_STRESS_TEXTS, EOT, MIB

import bytepair
from bytepair import _core
from bytepair.counts.artifact import MANIFEST, WordCounts, _escape_word
from bytepair.counts.protocol import FORMAT_VERSION

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def single_process_counts(
    paths, pattern="gpt2", specials=(EOT,), errors="strict"
) -> dict[bytes, int]:
    """The oracle: one WordCounter counting every file in this process."""
    counter = _core.WordCounter(pattern, list(specials))
    counter.count_files([str(p) for p in paths], 1, 1 << 16, errors == "replace")
    return dict(counter.items())


def part_content(path) -> dict[bytes, int]:
    """word -> count of one Parquet part, read with the artifact's own reader."""
    from bytepair.counts.parts import part_batches

    words: dict[bytes, int] = {}
    for data, offsets, counts in part_batches(str(path)):
        o = np.frombuffer(offsets, "<i8").tolist()
        words.update(
            {data[o[i] : o[i + 1]]: c for i, c in enumerate(np.frombuffer(counts, "<i8").tolist())}
        )
    return words


def content(counts: WordCounts) -> dict[bytes, int]:
    items = list(counts.items())
    assert len(items) == len({w for w, _ in items}), "a word appears in two parts"
    return dict(items)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, request) -> list[Path]:
    """Generated files that stress chunk edges, plus corpus slices when present."""
    d = tmp_path_factory.mktemp("inputs")
    paths = []
    for name, text in COUNTING_STRESS_TEXTS.items():
        (d / name).write_bytes(text.encode())
        paths.append(d / name)
    for name in ("enwiki.txt", "code.txt", "multilingual.txt"):
        if (CORPORA / name).is_file():
            with open(CORPORA / name, "rb") as f:
                raw = f.read(3 * MIB)
            (d / name).write_bytes(raw[: raw.rfind(b"\n") + 1])
            paths.append(d / name)
    return paths


@pytest.mark.parametrize("shards,parts", [(1, 1), (1, 5), (3, 2), (5, 5)])
def test_local_engine_equals_single_process(inputs, tmp_path, shards, parts):
    counts = bytepair.count(
        inputs,
        tmp_path / "counts",
        special_tokens=[EOT],
        parts=parts,
        shards=shards,
        num_workers=2,
        progress=False,
    )
    expected = single_process_counts(inputs)
    assert content(counts) == expected
    t = counts.totals
    assert (t.documents, t.bytes) == (len(inputs), sum(p.stat().st_size for p in inputs))
    assert (t.pre_tokens, t.distinct) == (sum(expected.values()), len(expected))
    assert len(counts.manifest["parts"]) == parts
    for part in counts.part_paths():  # each part sorted by bytes, words in their stable bucket
        words = pq.read_table(part).column("word").to_pylist()
        assert words == sorted(words)


def test_bucket_hash_is_xxh3_with_the_fixed_seed(inputs, tmp_path):
    xxhash = pytest.importorskip("xxhash")
    counts = bytepair.count(inputs[:2], tmp_path / "c", parts=7, num_workers=1, progress=False)
    for b, part in enumerate(counts.part_paths()):
        for w in pq.read_table(part).column("word").to_pylist()[:200]:
            assert xxhash.xxh3_64_intdigest(w, seed=0x6279746570616972) % 7 == b


def test_train_from_counts_equals_train_on_files(inputs, tmp_path):
    counts = bytepair.count(
        inputs, tmp_path / "c", special_tokens=[EOT], parts=3, num_workers=2, progress=False
    )
    from_counts = bytepair.train_from_counts(counts, 700, progress=False)
    from_files = bytepair.train([str(p) for p in inputs], 700, special_tokens=[EOT], progress=False)
    assert from_counts.merges == from_files.merges
    # The special token follows the last merge (699 with the corpora, fewer merges without).
    assert (
        from_counts.special_tokens
        == from_files.special_tokens
        == {EOT: 256 + len(from_files.merges)}
    )
    assert from_counts.training_stats.tokens == from_files.training_stats.tokens


def test_artifact_pins_pattern_and_special_tokens(inputs, tmp_path):
    counts = bytepair.count(
        inputs[:3],
        tmp_path / "c",
        pattern="cl100k",
        special_tokens=[EOT],
        num_workers=1,
        progress=False,
    )
    assert counts.pattern == bytepair.resolve_pattern("cl100k") and counts.pattern_name == "cl100k"
    assert content(counts) == single_process_counts(inputs[:3], "cl100k")
    tok = bytepair.train_from_counts(counts, 300, progress=False)
    assert tok.pattern == "cl100k" and EOT in tok.special_tokens
    with pytest.raises(ValueError, match="counted with pattern 'cl100k', not 'gpt2'"):
        bytepair.train_from_counts(counts, 300, pattern="gpt2")
    with pytest.raises(ValueError, match="counted with special tokens"):
        bytepair.train_from_counts(counts, 300, special_tokens=[])
    assert (
        bytepair.train_from_counts(counts, 300, pattern="cl100k", special_tokens=[EOT]).merges
        == tok.merges
    )


@pytest.mark.parametrize("preset", ["llama3", "qwen2", "o200k"])
def test_every_preset_is_named_in_the_manifest(preset, inputs, tmp_path):
    """The manifest names each of the core's presets (not only its regex), so
    that a tokenizer trained from the counts keeps the preset (and its fast path)."""
    counts = bytepair.count(
        inputs[:1], tmp_path / "c", pattern=preset, num_workers=1, progress=False
    )
    assert counts.pattern_name == preset and counts.pattern == bytepair.resolve_pattern(preset)
    again = WordCounts.open(tmp_path / "c")
    assert again.pattern_name == preset
    assert json.loads((tmp_path / "c" / MANIFEST).read_text())["pattern"]["name"] == preset
    assert bytepair.train_from_counts(again, 280, progress=False).pattern == preset


def test_a_failed_shard_is_retried_without_counting_twice(inputs, tmp_path):
    from bytepair.counts.count import count_locally
    from bytepair.counts.sources import CountSpec

    marker = tmp_path / "failed-once"
    spec = CountSpec("gpt2", (EOT,))
    counts = count_locally(
        [str(p) for p in inputs],
        spec,
        str(tmp_path / "c"),
        parts=3,
        num_workers=2,
        shards=2,
        _fail_once=str(marker),
    )
    assert marker.exists(), "the injected failure did not happen"
    assert content(counts) == single_process_counts(inputs)
    assert not list(tmp_path.glob(".c.partial-*")), "staging folder left behind"


def test_input_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text\n" * 10 + b"\xff oops")
    with pytest.raises(ValueError, match=r"bad\.txt: invalid UTF-8 at byte offset 100"):
        bytepair.count([bad], tmp_path / "c", num_workers=1, progress=False)
    assert not (tmp_path / "c").exists()
    replaced = bytepair.count(
        [bad], tmp_path / "c", errors="replace", num_workers=1, progress=False
    )
    assert content(replaced) == single_process_counts([bad], specials=(), errors="replace")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        bytepair.count([tmp_path / "nope.txt"], tmp_path / "d", progress=False)
    with pytest.raises(ValueError, match="engine='dask'"):
        bytepair.count([bad], tmp_path / "d", engine="dask")
    with pytest.raises(ValueError, match="parts=0"):
        bytepair.count([bad], tmp_path / "d", parts=0)


def jsonl_and_parquet(tmp_path, texts):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"id": i, "text": t, "meta": {"x": [1]}}) + "\n" for i, t in enumerate(texts)
        )
    )
    parquet = tmp_path / "docs.parquet"
    pq.write_table(
        pa.table({"text": texts, "n": list(range(len(texts)))}), parquet, row_group_size=7
    )
    return jsonl, parquet


def test_jsonl_and_parquet_records_are_documents(tmp_path):
    texts = ["Hello world", "  two  spaces\r\n", f"a{EOT}b", "", "ünïcödé 😀 " * 50, "x" * 5000] * 5
    expected = _core.WordCounter("gpt2", [EOT])
    expected.count_texts(texts)
    jsonl, parquet = jsonl_and_parquet(tmp_path, texts)
    for path in (jsonl, parquet):
        counts = bytepair.count(
            [path],
            tmp_path / f"c-{path.suffix}",
            special_tokens=[EOT],
            num_workers=1,
            progress=False,
        )
        assert counts.manifest["text"]["format"] == path.suffix[1:]
        assert content(counts) == dict(expected.items())
        assert counts.totals.documents == len(texts)
        assert counts.totals.bytes == sum(len(t.encode()) for t in texts)


def test_jsonl_blocks_end_at_lines_and_errors_name_the_record(tmp_path, monkeypatch):
    """JSON Lines are parsed in blocks of whole lines (no Arrow read-ahead
    thread: it aborted the interpreter at exit after a parse error): records
    cut by a block boundary, a line longer than a block, blank lines and a last
    line without a newline all arrive whole, and a parse error names the record
    counted from the start of the file, not of its block."""
    from bytepair.counts import sources

    monkeypatch.setattr(sources, "_BATCH_BYTES", 64)
    texts = [f"record {k} " + "ä" * (k % 7) for k in range(40)] + ["long " * 40, "last"]
    lines = [json.dumps({"id": k, "text": t}) for k, t in enumerate(texts)]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines[:10]) + "\n\n" + "\n".join(lines[10:]), encoding="utf-8")
    columns = list(sources._json_batches(str(path), "text"))
    assert len(columns) > 5
    assert [t for c in columns for t in c.to_pylist()] == texts
    lines[30] = '{"text": '
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"d\.jsonl: not JSON Lines .* in record 30$"):
        list(sources._json_batches(str(path), "text"))


def test_jsonl_and_parquet_errors_name_file_and_record(tmp_path):
    (tmp_path / "missing.jsonl").write_text('{"text": "a"}\n{"body": "b"}\n')
    with pytest.raises(ValueError, match=r"missing\.jsonl: record 1 has no 'text' text"):
        bytepair.count([tmp_path / "missing.jsonl"], tmp_path / "c", num_workers=1, progress=False)
    (tmp_path / "broken.jsonl").write_text('{"text": "a"}\n{"text": \n')
    with pytest.raises(ValueError, match=r"broken\.jsonl: not JSON Lines"):
        bytepair.count([tmp_path / "broken.jsonl"], tmp_path / "c", num_workers=1, progress=False)
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=r"t\.parquet: no column 'text' \(columns: body\)"):
        bytepair.count([tmp_path / "t.parquet"], tmp_path / "c", num_workers=1, progress=False)
    pq.write_table(pa.table({"text": [b"ok", b"\xc3("]}), tmp_path / "b.parquet")
    with pytest.raises(ValueError, match=r"b\.parquet: record 1: invalid UTF-8 at byte offset 0"):
        bytepair.count([tmp_path / "b.parquet"], tmp_path / "c", num_workers=1, progress=False)


def test_open_refuses_incomplete_or_damaged_artifacts(inputs, tmp_path):
    counts = bytepair.count(inputs[:2], tmp_path / "c", parts=2, num_workers=1, progress=False)
    manifest = Path(counts.path) / MANIFEST
    original = manifest.read_text()
    with pytest.raises(FileNotFoundError, match="no such word-counts folder"):
        WordCounts.open(tmp_path / "absent")
    manifest.unlink()
    with pytest.raises(FileNotFoundError, match="not a word-counts artifact"):
        WordCounts.open(counts.path)
    for damaged, message in [
        ("{", "not valid JSON"),
        ('{"format": "other"}', "not a bytepair word-counts manifest"),
        (
            original.replace(f'"format_version": {FORMAT_VERSION}', '"format_version": 99'),
            "format_version 99",
        ),
        (original.replace('"rows"', '"rowz"'), r"_manifest\.json: parts\[0\]\.rows: missing"),
        (
            original.replace("part-00001.parquet", "part-00009.parquet"),
            "part 'part-00009.parquet' is missing",
        ),
        (
            original.replace("part-00001.parquet", "../x.parquet"),
            r"parts\[1\]\.path: expected a file name inside the folder",
        ),
    ]:
        manifest.write_text(damaged)
        with pytest.raises(ValueError, match=message):
            WordCounts.open(counts.path)
    manifest.write_text(original)
    part = Path(counts.part_paths()[1])
    part.write_bytes(part.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(ValueError, match=r"part-00001\.parquet: SHA-256 differs"):
        bytepair.train_from_counts(WordCounts.open(counts.path), 300)


@pytest.mark.slow
def test_killed_run_leaves_no_artifact_and_the_old_one_intact(tmp_path):
    big = tmp_path / "big.txt"
    line = "the quick brown fox jumps over the lazy dog 0123456789 " * 20 + "\n"
    big.write_text(line * 150_000)  # ~170 MB: counting takes a few seconds
    small = tmp_path / "small.txt"
    small.write_text("small old corpus\n" * 10)
    old = bytepair.count([small], tmp_path / "out", num_workers=1, progress=False)
    before = content(old)
    for out in ("fresh", "out"):
        # A regex that is not a preset runs on the regex engine, many times slower
        # than the preset scanners: the count is still running when it is killed.
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bytepair.cli",
                "count",
                str(big),
                "-o",
                str(tmp_path / out),
                "-q",
                "--workers",
                "2",
                "--pattern",
                r" ?\w+(?!\S)| ?\S+|\s+",
            ],
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(f".{out}.partial-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # workers are counting now
        workers = children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL, (
            "the count finished before the kill: make the input bigger"
        )
        assert workers, "no worker processes seen"
        deadline = time.monotonic() + 10
        while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(Path(f"/proc/{w}").exists() for w in workers), (
            "workers outlived the killed driver"
        )
    with pytest.raises(FileNotFoundError):
        WordCounts.open(tmp_path / "fresh")
    assert content(WordCounts.open(tmp_path / "out")) == before
    # The killed drivers' staging folders are swept by the next count to the same place.
    assert list(tmp_path.glob(".fresh.partial-*"))
    again = bytepair.count([small], tmp_path / "fresh", num_workers=1, progress=False)
    assert not list(tmp_path.glob(".fresh.partial-*")), "an abandoned staging folder survived"
    assert sorted(os.listdir(again.path)) == ["_manifest.json", "part-00000.parquet"]


def test_staging_folders_of_live_drivers_are_left_alone(tmp_path):
    from bytepair.counts.protocol import staging_dir

    mine = staging_dir(str(tmp_path / "c"))  # this process: alive
    foreign = tmp_path / ".c.partial-000000000000"  # no owner file: not ours to judge
    foreign.mkdir()
    (tmp_path / "c.txt").write_text("a b c")
    bytepair.count([tmp_path / "c.txt"], tmp_path / "c", num_workers=1, progress=False)
    assert os.path.isdir(mine) and foreign.is_dir()


def children(pid: int) -> list[int]:
    """Pids of the live processes whose parent is `pid` (from /proc; Linux)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_merge_sums_and_refuses_other_patterns(inputs, tmp_path):
    a = bytepair.count(inputs[:2], tmp_path / "a", parts=2, num_workers=1, progress=False)
    b = bytepair.count(inputs[1:4], tmp_path / "b", parts=3, num_workers=1, progress=False)
    merged = a.merge(b, tmp_path / "m", parts=4)
    expected = content(a)
    for w, c in content(b).items():
        expected[w] = expected.get(w, 0) + c
    assert content(merged) == expected and len(merged.manifest["parts"]) == 4
    assert merged.totals.documents == a.totals.documents + b.totals.documents
    other = bytepair.count(
        inputs[:1], tmp_path / "o", pattern="o200k", num_workers=1, progress=False
    )
    with pytest.raises(ValueError, match="different patterns"):
        a.merge(other, tmp_path / "x")


def test_export_tsv_escapes_separators(tmp_path):
    assert _escape_word(b"a\tb\nc\\d\re") == "a\\tb\\nc\\\\d\\re"
    assert _escape_word(b"\xff\xc3") == "\\xff\\xc3"
    assert _escape_word(" café".encode()) == " café"
    (tmp_path / "t.txt").write_text("b b b a a \t\t\n")
    counts = bytepair.count([tmp_path / "t.txt"], tmp_path / "c", num_workers=1, progress=False)
    assert counts.export_tsv(tmp_path / "t.tsv") == 4
    rows = [line.split("\t") for line in (tmp_path / "t.tsv").read_text().splitlines()]
    assert rows == [[" a", "2"], [" b", "2"], [" \\t\\t\\n", "1"], ["b", "1"]]


def test_counts_above_int64_are_refused(tmp_path):
    from bytepair.counts.parts import write_part
    from bytepair.counts.protocol import reduce_bucket

    for i in range(2):
        write_part(
            str(tmp_path / f"p{i}.parquet"),
            b"a",
            np.array([0, 1], "<i8").tobytes(),
            np.array([(1 << 62) + 1], "<i8").tobytes(),
        )
    with pytest.raises(ValueError, match=r"counts must be in \[0, 2\*\*63\)"):
        reduce_bucket(
            [str(tmp_path / "p0.parquet"), str(tmp_path / "p1.parquet")],
            str(tmp_path / "out.parquet"),
        )
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.slow
def test_cli_count_inspect_export_and_train_from_counts(inputs, tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "bytepair.cli", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )

    r = run("count", *inputs[:3], "-o", "counts", "--special-token", EOT, "--parts", "2", "-q")
    assert r.returncode == 0, r.stderr
    r = run("counts", "inspect", "counts", "--verify", "--top", "3")
    assert r.returncode == 0 and "distinct words" in r.stdout and "all parts match" in r.stdout
    r = run("counts", "export", "counts", "--tsv", "w.tsv")
    assert r.returncode == 0 and (tmp_path / "w.tsv").stat().st_size > 0
    r = run("train", "--from-counts", "counts", "--vocab-size", "300", "-o", "tok.json", "-q")
    assert r.returncode == 0, r.stderr
    direct = bytepair.train([str(p) for p in inputs[:3]], 300, special_tokens=[EOT], progress=False)
    assert bytepair.Tokenizer.load(tmp_path / "tok.json").merges == direct.merges
    r = run("train", "--from-counts", "counts", "--vocab-size", "300", "--pattern", "o200k")
    assert r.returncode == 1 and "counted with pattern 'gpt2', not 'o200k'" in r.stderr
    r = run("count", "missing.txt", "-o", "x")
    assert r.returncode == 1 and "missing.txt: no such file" in r.stderr


def test_shards_and_parts_of_any_number_sum_to_the_same_counts(tmp_path_factory):
    """count_shard + reduce_bucket in this process, on generated documents split
    into random shards and any number of parts, equal one counter over all."""
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from bytepair.counts.parts import part_name
    from bytepair.counts.protocol import bucket_paths, count_shard, reduce_bucket
    from bytepair.counts.sources import CountSpec

    alphabet = st.sampled_from(list("ab \n\t\r.,'é😀1") + [EOT, "  ", "\r\n"])
    docs = st.lists(st.lists(alphabet, max_size=40).map("".join), min_size=1, max_size=8)

    @settings(max_examples=25)
    @given(docs, st.integers(1, 4), st.integers(1, 9), st.randoms())
    def check(texts, shards, parts, rnd):
        d = tmp_path_factory.mktemp("h")
        paths = []
        for i, t in enumerate(texts):
            (d / f"{i}.txt").write_text(t, newline="")
            paths.append(str(d / f"{i}.txt"))
        owner = [rnd.randrange(shards) for _ in paths]
        spec = CountSpec("gpt2", (EOT,))
        used = sorted(set(owner))
        for s in used:
            count_shard(
                [p for p, o in zip(paths, owner) if o == s], spec, str(d), s, parts, num_threads=1
            )
        total: dict[bytes, int] = {}
        for b in range(parts):
            reduce_bucket(bucket_paths(str(d), used, b), str(d / part_name(b)))
            part = part_content(d / part_name(b))
            assert not part.keys() & total.keys(), "a word in two parts"
            total.update(part)
        assert total == single_process_counts(paths)

    check()


def test_fsspec_urls_read_like_local_files(tmp_path):
    """Remote inputs go through fsspec (memory:// here; s3:// etc. the same way)."""
    fsspec = pytest.importorskip("fsspec")
    from bytepair.counts.parts import part_name
    from bytepair.counts.protocol import count_shard, shard_dir
    from bytepair.counts.sources import CountSpec

    texts = ["remote text\r\n  with  runs", f"x{EOT}y", "ünï 😀"]
    local_text = tmp_path / "t.txt"
    local_text.write_text("\n".join(texts), newline="")
    jsonl, parquet = jsonl_and_parquet(tmp_path, texts)
    fs = fsspec.filesystem("memory")
    for local, fmt in ((local_text, "text"), (jsonl, "jsonl"), (parquet, "parquet")):
        url = f"memory://bytepair-test/{local.name}"
        fs.pipe(url, local.read_bytes())
        stats = count_shard(
            [url], CountSpec("gpt2", (EOT,), fmt), str(tmp_path / fmt), 0, 1, num_threads=1
        )
        assert stats["bytes"] == (
            local.stat().st_size if fmt == "text" else sum(len(t.encode()) for t in texts)
        )
        words = part_content(Path(shard_dir(str(tmp_path / fmt), 0)) / part_name(0))
        expected = _core.WordCounter("gpt2", [EOT])
        expected.count_texts(["\n".join(texts)] if fmt == "text" else texts)
        assert words == dict(expected.items()), fmt


@pytest.mark.slow
def test_compressed_and_globbed_inputs_count_as_the_plain_files(tmp_path, corpus_text):
    """The readers shared with datasets: .gz/.bz2/.xz/.zst text and JSON Lines,
    and globs, give the counts of the plain files."""
    import bz2
    import gzip
    import lzma

    import pyarrow as pa

    texts = [corpus_text("enwiki.txt", 200_000, at) for at in (0.1, 0.5)]
    plain = tmp_path / "plain"
    packed = tmp_path / "packed"
    plain.mkdir()
    packed.mkdir()
    for i, text in enumerate(texts):
        (plain / f"{i}.txt").write_text(text)
    (packed / "0.txt.gz").write_bytes(gzip.compress(texts[0].encode()))
    (packed / "1.txt.xz").write_bytes(lzma.compress(texts[1].encode()))
    (packed / "2.jsonl.bz2").write_bytes(
        bz2.compress("".join(json.dumps({"text": t}) + "\n" for t in texts).encode())
    )
    with pa.CompressedOutputStream(str(packed / "3.jsonl.zst"), "zstd") as f:
        f.write(json.dumps({"text": texts[0]}).encode() + b"\n")
    expected = bytepair.count(
        [plain / "0.txt", plain / "1.txt"] * 2 + [plain / "0.txt"],
        tmp_path / "a",
        num_workers=1,
        progress=False,
    )
    got_text = bytepair.count(
        str(packed / "*.txt.*"), tmp_path / "b", num_workers=1, progress=False
    )
    got_jsonl = bytepair.count(
        str(packed / "*.jsonl.*"), tmp_path / "c", num_workers=1, progress=False
    )
    assert got_text.totals.documents == 2 and got_jsonl.totals.documents == 3
    summed = {w: c1 + dict(got_jsonl.items()).get(w, 0) for w, c1 in got_text.items()}
    summed.update({w: c for w, c in got_jsonl.items() if w not in summed})
    assert summed == dict(expected.items())
