"""Memory budgets at every step (issue 37): counting (`bytepair.count(max_memory=)`,
lossy counting per worker, what it dropped in the manifest), the reduce (a merge
of sorted runs, exact at any size), training from counts (`max_memory=` keeps
the words counted at least t times, and from an artifact a hash sample of the
rarer ones that stands for them), and resuming a killed count.
"""

from __future__ import annotations

import os
import random
import re

import numpy as np
import pytest

import bytepair
from bytepair import _core

pytest.importorskip("pyarrow")


def _random_words(n: int, seed: int = 0) -> dict[bytes, int]:
    """About n distinct words of 8 random letters, counted 1 to 10 times."""
    rng = np.random.default_rng(seed)
    letters = rng.integers(ord("a"), ord("z") + 1, size=(n, 8), dtype=np.uint8)
    return {bytes(row): 1 + i % 10 for i, row in enumerate(letters)}


@pytest.mark.slow
def test_a_training_budget_keeps_the_words_counted_at_least_t_times_and_a_sample():
    """900k distinct words cost the merge loop more than 64 MiB: the budget
    keeps every word counted t times or more (t > 1) and a sample of the
    others, each counted t times, so the merges equal training on those words
    alone; without the sample, exactly the words counted t times or more; a
    budget that holds every word changes nothing."""
    words = _random_words(900_000)
    budget = 64 << 20
    with pytest.warns(UserWarning, match="training kept a sample"):
        pruned = bytepair.train_from_counts(words, 300, max_memory=budget, progress=False)
    s = pruned.training_stats
    t = s.pruned_min_count
    assert s.pruned_sampled and 1 < t and s.distinct_words + s.pruned_words == len(words)
    run = {"ids": 300, "merges": 44}
    for sample in (True, False):
        counter = _core.WordCounter("gpt2", [])
        counter.add_counts(list(words.items()))
        counter.fit_training_budget(budget, **run, sample=sample)
        kept = dict(counter.items())
        if sample:
            assert all(kept[w] == max(c, t) for w, c in words.items() if w in kept)
            assert {w for w, c in words.items() if c >= t} <= kept.keys()
            assert pruned.merges == bytepair.train_from_counts(kept, 300, progress=False).merges
        else:
            t = counter.pruned[2]
            assert kept == {w: c for w, c in words.items() if c >= t} and 1 < t <= 10
    small = dict(random.Random(1).sample(sorted(words.items()), 1000))
    assert (
        bytepair.train_from_counts(small, 300, max_memory=budget, progress=False).merges
        == bytepair.train_from_counts(small, 300, progress=False).merges
    )
    for bad in (1 << 20, -1, 2.5):
        with pytest.raises(ValueError, match="max_memory"):
            bytepair.train_from_counts(small, 300, max_memory=bad)


def test_an_artifact_streams_into_rows_within_the_budget(tmp_path):
    """Rows of an artifact are kept as they come (each word in one part); with a
    budget and no sample, exactly the words counted at least t times stay."""
    text = " ".join(f"w{i % 5000:x}q" * (1 + i % 4) for i in range(20_000))
    (tmp_path / "a.txt").write_text(text)
    counts = bytepair.count(
        [tmp_path / "a.txt"], tmp_path / "c", parts=3, num_workers=1, progress=False
    )
    everything = dict(counts.items())
    plain = _core.WordCounter("gpt2", [])
    counts.load_into(plain)
    assert dict(plain.items()) == everything and plain.pruned == (0, 0, 0)
    costs = sorted(48 + 4 * len(w) for w in everything)
    budget = sum(costs) // 3
    rows = _core.WordCounter("gpt2", [])
    counts.load_into(rows, max_memory=budget, sample=False)
    words, pre_tokens, t = rows.pruned
    kept = {w: c for w, c in everything.items() if c >= t}
    assert t > 1 and dict(rows.items()) == kept
    assert (words, pre_tokens) == (
        len(everything) - len(kept),
        sum(everything.values()) - sum(kept.values()),
    )
    assert sum(48 + 4 * len(w) for w in kept) <= budget


def test_rows_holding_a_special_token_are_cut_within_a_budget(tmp_path):
    """A part whose words hold a special token (written by another tool) is cut
    there under a budget too, as without one: the budget changes which words
    stay, never how they are cut, and no merge spells the special token."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {b"a<s>b": 500, b"<s>": 9_000, b"ab": 40, b"xyz": 1, b"zq<s>zq": 30}
    words = sorted(rows)
    part = tmp_path / "c" / "part-00000.parquet"
    (tmp_path / "c").mkdir()
    table = {"word": pa.array(words, pa.binary()), "count": pa.array([rows[w] for w in words])}
    pq.write_table(pa.table(table), part)
    cut = _core.WordCounter("gpt2", ["<s>"])
    bytepair.counts.parts.load_part(cut, str(part), 64 << 20, ids=300, merges=44)
    pieces = {b"a": 500, b"b": 500, b"ab": 40, b"xyz": 1, b"zq": 60}
    assert dict(cut.items()) == pieces and cut.pruned == (0, 0, 0)
    cut.fit_training_budget(64 << 20, ids=300, merges=44)  # the words fit: nothing goes
    assert dict(cut.items()) == pieces and cut.pruned == (0, 0, 0)
    cut.fit_training_budget(150, ids=300, merges=0)  # room for two words of one byte
    t = cut.pruned[2]
    assert t > 60 and dict(cut.items()) == {b"a": 500, b"b": 500}


def _random_words_file(path, megabytes: int, seed: int = 0) -> None:
    """Text of nearly all-distinct random words (the worst case for counting memory)."""
    rng = np.random.default_rng(seed)
    letters = rng.integers(ord("a"), ord("z") + 1, size=megabytes << 20, dtype=np.uint8)
    letters[rng.random(letters.size) < 1 / 8] = ord(" ")
    path.write_bytes(letters.tobytes())


@pytest.mark.slow
def test_count_within_a_budget_records_what_it_dropped(tmp_path):
    """A worker past its budget drops the rarest words (lossy counting); the
    manifest says how many and their pre-tokens, which with the kept ones add
    up to every pre-token; `counts inspect` shows it; training reads it."""
    from bytepair.cli.counts import format_counts

    _random_words_file(tmp_path / "random.txt", 8)
    (tmp_path / "prose.txt").write_text("The Cat Sat On The Mat " * 50_000)
    inputs = [tmp_path / "random.txt", tmp_path / "prose.txt"]
    exact = bytepair.count(inputs, tmp_path / "exact", num_workers=1, progress=False)
    counted = bytepair.count(
        inputs, tmp_path / "c", num_workers=1, max_memory=64 << 20, progress=False
    )
    p, t = counted.pruned, counted.totals
    assert exact.pruned.words == 0 and exact.manifest["format_version"] == 2
    assert p.max_memory == 64 << 20 and p.words > 100_000 and p.min_count >= 2
    assert t.pre_tokens + p.pre_tokens == exact.totals.pre_tokens
    assert t.distinct < exact.totals.distinct - p.words // 2
    kept = dict(counted.items())
    assert kept[b" Cat"] == dict(exact.items())[b" Cat"] == 50_000
    assert f"{p.words:,} distinct words seen < {p.min_count} times" in format_counts(counted, 0)
    with pytest.raises(ValueError, match="max_memory"):
        bytepair.count(inputs, tmp_path / "x", max_memory=1 << 20, progress=False)


def test_version_1_artifacts_still_open(tmp_path):
    import json

    (tmp_path / "a.txt").write_text("low lower lowest")
    counts = bytepair.count([tmp_path / "a.txt"], tmp_path / "c", progress=False)
    manifest = json.loads((tmp_path / "c" / "_manifest.json").read_text())
    del manifest["pruned"]
    manifest["format_version"] = 1
    (tmp_path / "c" / "_manifest.json").write_text(json.dumps(manifest))
    old = bytepair.WordCounts.open(tmp_path / "c")
    assert old.pruned.words == 0 and old.pruned.max_memory is None
    assert dict(old.items()) == dict(counts.items())
    manifest["format_version"] = 2
    (tmp_path / "c" / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"_manifest\.json: pruned: missing"):
        bytepair.WordCounts.open(tmp_path / "c")
    for field, value, message in [
        ("words", -1, "pruned.words: expected a non-negative integer, got -1"),
        ("max_memory", 0, "pruned.max_memory: expected a positive number of bytes, got 0"),
        ("min_count", True, "pruned.min_count: expected a non-negative integer, got true"),
    ]:
        pruned = {"max_memory": None, "words": 0, "pre_tokens": 0, "min_count": 0}
        manifest["pruned"] = pruned | {field: value}
        (tmp_path / "c" / "_manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ValueError, match=re.escape(message)):
            bytepair.WordCounts.open(tmp_path / "c")


def test_the_reduce_merges_sorted_parts_a_batch_at_a_time(tmp_path):
    """`merge_parts` reads a few rows of each input at a time and gives the
    sums of all inputs, sorted, whatever the batch size; out-of-order input
    is refused."""
    from bytepair.counts.parts import merge_parts, write_part

    rng = random.Random(0)
    inputs, want = [], {}
    for k in range(5):
        words = {f"w{rng.randrange(400):03d}".encode(): rng.randrange(1, 9) for _ in range(150)}
        counter = _core.WordCounter("gpt2", [])
        counter.add_counts(list(words.items()))
        ((data, offsets, counts),) = counter.to_buckets(1)
        inputs.append(str(tmp_path / f"in{k}.parquet"))
        write_part(inputs[-1], data, offsets, counts)
        for w, c in words.items():
            want[w] = want.get(w, 0) + c
    for batch in (1, 7, 1 << 16):
        out = str(tmp_path / f"out{batch}.parquet")
        written = merge_parts(inputs, out, batch)
        rows = _part_items(out)
        assert [w for w, _ in rows] == sorted(want) and dict(rows) == want
        assert written["rows"] == len(want) and written["pre_tokens"] == sum(want.values())
    merge_parts([], str(tmp_path / "empty.parquet"))
    assert _part_items(str(tmp_path / "empty.parquet")) == []
    backwards = str(tmp_path / "backwards.parquet")
    write_part(backwards, b"ba", np.array([0, 1, 2], "<i8").tobytes(), np.ones(2, "<i8").tobytes())
    with pytest.raises(ValueError, match="out of order"):
        merge_parts([backwards, inputs[0]], str(tmp_path / "bad.parquet"), 1)


def _part_items(path: str) -> list[tuple[bytes, int]]:
    from bytepair.counts.parts import part_batches

    items = []
    for data, offsets, counts in part_batches(path):
        o = np.frombuffer(offsets, "<i8").tolist()
        c = np.frombuffer(counts, "<i8").tolist()
        items += [(data[o[i] : o[i + 1]], c[i]) for i in range(len(c))]
    return items


@pytest.mark.slow
def test_a_killed_count_resumes_from_its_finished_shards(tmp_path):
    """A count killed (SIGKILL) after some shards finished leaves them in its
    staging folder; the same count again takes the folder over, counts only
    the other shards and writes the very artifact an uninterrupted run writes.
    The finished shards' files are overwritten with invalid UTF-8 of the same
    size before the rerun: reading them again would fail."""
    import glob
    import json
    import signal
    import subprocess
    import sys
    import time

    from bytepair.counts.count import count_locally
    from bytepair.counts.sources import CountSpec

    paths = []
    for i in range(8):
        path = tmp_path / f"doc{i}.txt"
        path.write_text(" ".join(f"word{i}x{j % 97} shared{j % 5}" for j in range(4000)))
        paths.append(str(path))
    args = dict(num_workers=1, shards=8)
    fresh = count_locally(paths, CountSpec(), str(tmp_path / "fresh"), **args)
    out = str(tmp_path / "out")
    code = (
        "from bytepair.counts.count import count_locally\n"
        "from bytepair.counts.sources import CountSpec\n"
        f"count_locally({paths!r}, CountSpec(), {out!r}, num_workers=1, shards=8,"
        " _kill_after_shards=3)\n"
    )
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    time.sleep(2.5)  # the orphaned worker sees its driver gone and exits
    (staging,) = glob.glob(str(tmp_path / ".out.partial-*"))
    records = [json.loads(open(r).read()) for r in glob.glob(f"{staging}/_progress/task-*.json")]
    assert 3 <= len(records) < 8
    for record in records:
        for path in record["inputs"]:
            size = os.path.getsize(path)
            with open(path, "wb") as f:
                f.write(b"\xff" * size)
    resumed = count_locally(paths, CountSpec(), out, **args)
    assert not glob.glob(str(tmp_path / ".out.partial-*")), "the staging folder stayed"
    assert {**resumed.manifest, "parts": None} == {**fresh.manifest, "parts": None}
    assert resumed.manifest["parts"] == fresh.manifest["parts"], "not the same bytes"


_TO_LETTERS = str.maketrans("0123456789ABCDEFGHIJKLMNOP", "abcdefghijklmnopqrstuvwxyz")


def _zipf_lines(path, megabytes: float, seed: int = 0) -> None:
    """Lines of words drawn from a Zipf law over 300k words (as real text: a
    frequent head, a long tail of rare words), so a budget prunes a share."""
    rng = np.random.default_rng(seed)
    ranks = rng.zipf(1.2, size=int(megabytes * (1 << 20) / 7)) % 300_000
    words = [np.base_repr(r, 26).translate(_TO_LETTERS) for r in ranks]
    lines = (" ".join(words[i : i + 14]) for i in range(0, len(words), 14))
    path.write_text("\n".join(lines) + "\n")


def test_counting_within_a_budget_is_reproducible(tmp_path):
    """Counts pruned under a budget depend only on the input, the options and
    the budget: the blocks are merged in input order, pruned at block
    boundaries, so 1 or 2 threads, run after run, give the same words, counts,
    pruned totals and merge table."""
    path = tmp_path / "zipf.txt"
    _zipf_lines(path, 4)
    exact = _core.WordCounter("gpt2", [])
    exact.count_files([str(path)], 1)
    runs = []
    for threads in (1, 2, 2, 1, 2):
        counter = _core.WordCounter("gpt2", [], max_memory=1 << 20)
        counter.count_files([str(path)], threads, chunk_size=64 << 10)
        runs.append((sorted(counter.items()), counter.pruned))
    items, (words, pre_tokens, _) = runs[0]
    assert words > 1000, "the budget pruned"
    assert sum(n for _, n in items) + pre_tokens == exact.total()
    for i, run in enumerate(runs[1:], 1):
        assert run == runs[0], f"run {i} differs"
    merges = {
        tuple(bytepair.train_from_counts(dict(items), 400, progress=False).merges)
        for items, _ in runs
    }
    assert len(merges) == 1


def test_folding_keeps_the_pieces_of_the_words_a_training_budget_drops(tmp_path):
    """With ``fold`` (core only), the words a training budget drops are cut
    into pieces of at most 8 bytes that are kept when they fit: the shared
    piece of 3,000 rare long words carries all their occurrences; the words
    still count as dropped."""
    digits = str.maketrans("0123456789", "abcdefghij")
    rare = " ".join(f"xylophone{i:04d}".translate(digits) for i in range(3000))
    (tmp_path / "a.txt").write_text(" the cat" * 2000 + " " + rare)
    counts = bytepair.count([tmp_path / "a.txt"], tmp_path / "c", num_workers=1, progress=False)
    everything = dict(counts.items())
    budget = (48 + 4 * 4) * 2 + 200 * (48 + 4 * 8)
    kept = []
    for fold in (False, True):
        counter = _core.WordCounter("gpt2", [])
        counts.load_into(counter, max_memory=budget, run={"fold": fold}, sample=False)
        words, pre_tokens, _ = counter.pruned
        assert words == 3000 and pre_tokens == sum(
            n for w, n in everything.items() if w.startswith(b" xylophon")
        )
        kept.append(dict(counter.items()))
    assert b" xylopho" not in kept[0]
    assert kept[1][b" xylopho"] == 3000 and kept[1][b" the"] == 2000


def _zipf_artifact(tmp_path, parts: int):
    path = tmp_path / "zipf.txt"
    if not path.exists():
        _zipf_lines(path, 3)
    out = tmp_path / f"c{parts}"
    return bytepair.count([path], out, parts=parts, num_workers=1, progress=False)


def test_a_sample_within_a_training_budget_stands_for_every_word(tmp_path):
    """The default of an artifact within a budget (threshold sampling): every
    word counted t times or more exactly, a share of the rarer ones each counted
    t times, within the budget; the estimates sum to the true pre-tokens and
    text bytes (the words left out hold ~17% of the pre-tokens: counted as
    they are, a sample would miss them); the same
    sample from an artifact cut into other parts, and the same merges on 1 or 2
    threads."""
    from bytepair.train import TrainingStats
    from bytepair.train_learn import learn
    from bytepair.train_plan import plan_training

    samples, merges = [], set()
    for parts in (3, 5):
        counts = _zipf_artifact(tmp_path, parts)
        everything = dict(counts.items())
        budget = sum(48 + 4 * len(w) for w in everything) // 10
        counter = _core.WordCounter("gpt2", [])
        counts.load_into(counter, max_memory=budget)
        kept = dict(counter.items())
        words, pre_tokens, t = counter.pruned
        assert t > 4 and words == len(everything) - len(kept)
        assert sum(48 + 4 * len(w) for w in kept) <= budget
        rare = {w: c for w, c in everything.items() if c < t}
        for w, c in everything.items():
            if c >= t:
                assert kept[w] == c, w
            elif w in kept:
                assert kept[w] == t, (w, c)
        sampled = sum(1 for w in rare if w in kept)
        expected = sum(c / t for c in rare.values())
        assert abs(sampled - expected) < 4 * expected**0.5, (sampled, expected)
        assert pre_tokens == sum(c for w, c in rare.items() if w not in kept)
        true_total = sum(everything.values())
        true_text = sum(c * len(w) for w, c in everything.items())
        assert pre_tokens > 0.1 * sum(everything.values()), "the sample left out words"
        for got, want in (
            (sum(kept.values()), true_total),
            (sum(c * len(w) for w, c in kept.items()), true_text),
        ):
            assert abs(got - want) < 0.01 * want, (got, want, t)
        samples.append(kept)
        for threads in (1, 2):
            counter = _core.WordCounter("gpt2", [])
            counts.load_into(counter, max_memory=budget)
            plan = plan_training(256 + 300, [], pattern="gpt2")
            tok = learn(counter, plan, TrainingStats(), num_threads=threads, progress=False)
            merges.add(tuple(tok.merges))
    assert samples[0] == samples[1], "the same sample whatever the parts"
    assert len(merges) == 1
    with pytest.raises(ValueError, match="fold and sample"):
        counts.load_into(_core.WordCounter("gpt2", []), max_memory=budget, run={"fold": True})
