"""Hostile input: sizes taken from the user, inputs with no safe cut, runs of
one byte, thread counts, Ctrl-C inside one giant pre-token, doctored files and
manifests, misused CLI and API arguments: each once crashed, hung, exhausted
memory or gave a wrong answer quietly. Each test runs the case in a child
process where a failure would abort or exhaust the machine, and bounds its time
or memory."""

from __future__ import annotations

import hashlib
import inspect
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import RESTORE_SIGINT

import bytepair
from bytepair import _core

MAX_WORD_BYTES = 1 << 16  # count::DEFAULT_MAX_WORD_BYTES


def _run(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_huge_vocab_size_is_capped_by_what_the_input_can_produce():
    """vocab_size 10^10 once reserved 160 GB up front and aborted the process."""
    result = _run("""
        import warnings, bytepair
        warnings.simplefilter("ignore")
        tok = bytepair.train_from_iterator(["hello world"] * 10, 10_000_000_000, progress=False)
        print(tok.vocab_size)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout) < 300


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc for the peak RSS")
def test_a_zero_filled_file_counts_as_bounded_words_in_bounded_memory(tmp_path):
    """80 MB of NUL bytes has no safe cut and is one pre-token: it is read in
    chunks cut every 64 MiB and counted as words of at most 64 KiB, so neither
    memory nor the longest word grows with the file."""
    path = tmp_path / "zeros.bin"
    with open(path, "wb") as f:
        f.truncate(80 << 20)
    result = _run(f"""
        from bytepair import _core
        counter = _core.WordCounter("gpt2", [])
        counter.count_files([{str(path)!r}])
        words = counter.items()
        print(max(len(w) for w, _ in words), sum(len(w) * n for w, n in words))
        # VmHWM, not ru_maxrss: the latter survives exec and would report pytest's own peak.
        status = open("/proc/self/status").read().splitlines()
        print(next(int(l.split()[1]) // 1024 for l in status if l.startswith("VmHWM")))
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    (longest, total), (peak_mib,) = (map(int, line.split()) for line in result.stdout.splitlines())
    assert longest == MAX_WORD_BYTES and total == 80 << 20
    assert peak_mib < 600, f"peak RSS {peak_mib} MiB counting 80 MB of zeros"


def test_words_longer_than_the_bound_are_cut_on_character_boundaries():
    counter = _core.WordCounter("gpt2", [], max_word_bytes=7)
    counter.count_texts(["\u00e9" * 10 + " ok"])
    words = dict(counter.items())
    assert all(len(w) <= 7 for w in words)
    assert (
        b"".join(w * n for w, n in sorted(words.items(), key=lambda kv: -len(kv[0]))).count(
            "\u00e9".encode()
        )
        == 10
    )
    assert all(w.decode("utf-8") for w in words), "every word is whole characters"
    with pytest.raises(ValueError, match="max_word_bytes must be at least 4, got 2"):
        _core.WordCounter("gpt2", [], max_word_bytes=2)


def _threads() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc to count threads")
def test_num_threads_is_capped_at_the_cores_and_pools_are_reused():
    """num_threads=10000 once started 10,000 OS threads; 99 distinct values
    kept 99 pools alive."""
    tok = bytepair.train_from_iterator(["a b c d"] * 10, 260, progress=False)
    texts = ["a b c"] * 50
    want = tok.encode_batch(texts)
    before = _threads()
    started = time.perf_counter()
    assert tok.encode_batch(texts, num_threads=10_000) == want
    for n in range(1, 100):
        assert tok.encode_batch(texts, num_threads=n) == want
    assert time.perf_counter() - started < 30
    assert _threads() - before <= 2 * (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="num_threads must be at least 1"):
        tok.encode_batch(texts, num_threads=0)


def test_ctrl_c_stops_the_merge_of_one_giant_pre_token():
    """encode_ordinary('a' * 10**8) is one pre-token: seconds of merging with no
    safe cut to check Ctrl-C at; it took 3-6.5 s to stop."""
    code = textwrap.dedent("""
        import bytepair
        tok = bytepair.train_from_iterator(["a" * 1000], 300, progress=False)
        text = "a" * 100_000_000
        print("ready", flush=True)
        tok.encode_ordinary(text)
        print("finished", flush=True)
    """)
    proc = subprocess.Popen(
        [*RESTORE_SIGINT, sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    assert proc.poll() is None, "the encode finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    proc.wait(timeout=60)
    took = time.perf_counter() - sent
    assert "KeyboardInterrupt" in proc.stderr.read()
    assert took < 1.0, f"stopped {took:.2f} s after Ctrl-C"


def test_a_gzip_bomb_is_refused_before_it_is_inflated_whole(tmp_path, monkeypatch):
    """A .tiktoken.gz inflates with a bound (1 GiB; lowered here) and the
    loaders' ValueError names the file."""
    import gzip

    from bytepair.formats import reading

    path = tmp_path / "bomb.tiktoken.gz"
    path.write_bytes(gzip.compress(b"IQ== 0\n" * 20_000))
    monkeypatch.setattr(reading, "MAX_INFLATED_BYTES", 10_000)
    with pytest.raises(ValueError, match=r"bomb\.tiktoken\.gz.*inflates to more than 10,000 bytes"):
        bytepair.Tokenizer.load(path)


def test_a_gpt2_pair_whose_merges_were_cut_short_is_refused(tmp_path):
    """A merges.txt cut down to its #version line beside a full vocab.json
    loaded as a tokenizer of 0 merges and thousands of "special tokens"; so
    did the halves of two different saves."""
    tok = bytepair.train_from_iterator(
        ["the quick brown fox jumps over the lazy dog " * 50],
        400,
        special_tokens=["<|endoftext|>"],
        progress=False,
    )
    tok.save_gpt2(tmp_path)
    vocab, merges = tmp_path / "vocab.json", tmp_path / "merges.txt"
    assert bytepair.Tokenizer.from_gpt2_files(vocab, merges).vocab_size == tok.vocab_size
    merges.write_text(merges.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"vocab\.json: \d+ of \d+ entries are made by no merge of .*merges\.txt"
    ):
        bytepair.Tokenizer.from_gpt2_files(vocab, merges)


def test_count_into_a_folder_of_its_inputs_does_not_count_its_own_output(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    first = bytepair.count(corpus, corpus / "counts", progress=False)
    again = bytepair.count(corpus, corpus / "counts", progress=False)
    assert dict(again.items()) == dict(first.items())
    assert again.totals.documents == 1


def test_counts_merge_of_one_folder_is_an_error(tmp_path):
    from bytepair.cli import main

    (tmp_path / "a.txt").write_text("hello world\n", encoding="utf-8")
    bytepair.count(tmp_path / "a.txt", tmp_path / "c", progress=False)
    assert main(["counts", "merge", str(tmp_path / "c"), "-o", str(tmp_path / "m")]) == 1
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: m["parts"][0].pop("sha256"), "sha256"),
        (lambda m: m["parts"].append(dict(m["parts"][0])), "listed twice"),
        (lambda m: m.__setitem__("special_tokens", "abc"), "special_tokens: expected a list"),
        (lambda m: m["pattern"].__setitem__("name", "o200k"), "does not name the preset"),
        (lambda m: m["pattern"].__setitem__("name", "my-pattern"), "pattern.name: expected one of"),
        # every field is checked, and the message names it
        (lambda m: m.__setitem__("text", None), "text: expected an object"),
        (lambda m: m["text"].__setitem__("format", "csv"), "text.format: expected one of"),
        (lambda m: m["text"].__setitem__("errors", 1), "text.errors: expected one of"),
        (lambda m: m["text"].pop("text_field"), "text.text_field: missing"),
        (lambda m: m["totals"].__setitem__("bytes", "12"), "totals.bytes: expected a non-neg"),
        (lambda m: m["totals"].__setitem__("documents", -1), "totals.documents: expected a non"),
        (lambda m: m["totals"].__setitem__("pre_tokens", 1.5), "totals.pre_tokens: expected"),
        (lambda m: m["totals"].__setitem__("distinct", True), "totals.distinct: expected"),
        (lambda m: m["totals"].__setitem__("distinct", 99), "totals.distinct: 99, but the parts"),
        (lambda m: m.pop("totals"), "totals: missing"),
        (lambda m: m.__setitem__("engine", None), "engine: expected a string"),
        (lambda m: m.__setitem__("bytepair_version", 3), "bytepair_version: expected a string"),
        (lambda m: m.__setitem__("bucket_hash", []), "bucket_hash: expected a string"),
        (lambda m: m.__setitem__("format_version", True), "format_version True"),
        (lambda m: m["parts"][0].__setitem__("rows", -3), r"parts\[0\]\.rows: expected a non"),
        (lambda m: m["parts"][0].__setitem__("path", "/etc/passwd"), r"parts\[0\]\.path"),
        (
            lambda m: m.__setitem__("pattern", {"name": None, "regex": "(unclosed"}),
            "pattern.regex: ",
        ),
        (lambda m: m.__setitem__("special_tokens", ["", "x"]), "special_tokens: special token"),
        (lambda m: m.__setitem__("parts", {}), "parts: expected a list"),
        (
            lambda m: m.clear() or m.update(format="bytepair-word-counts", format_version=1),
            "missing",
        ),
    ],
)
def test_a_doctored_counts_manifest_is_refused(tmp_path, damage, message):
    """Deleting the checksums turned verification off; a part listed twice
    doubled its counts; "abc" became three special tokens; a pattern name was
    trusted over its regex; "text": null and totals that are not counts were
    accepted and `counts inspect` failed with a traceback. Both the API and the
    CLI name the file and the field."""
    import json

    (tmp_path / "a.txt").write_text("hello world\n" * 5, encoding="utf-8")
    bytepair.count(tmp_path / "a.txt", tmp_path / "c", progress=False)
    manifest_path = tmp_path / "c" / "_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    damage(manifest)
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=message) as caught:
        bytepair.WordCounts.open(tmp_path / "c")
    assert str(caught.value).startswith(str(manifest_path))
    result = subprocess.run(
        [sys.executable, "-m", "bytepair", "counts", "inspect", str(tmp_path / "c")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert str(manifest_path) in result.stderr and "Traceback" not in result.stderr


def test_counts_from_an_artifact_that_would_overflow_pair_counts_are_refused(tmp_path):
    """Counts read from an artifact reached the merge loop unchecked: two words
    counted 2**62 times each stand for more than 2**64 bytes, and the u64 pair
    counts wrapped silently where the mapping path raised."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.txt").write_text("hello world\n", encoding="utf-8")
    counts = bytepair.count(tmp_path / "a.txt", tmp_path / "c", progress=False)
    part = counts.part_paths()[0]
    words = [w for w, _ in counts.items()]
    pq.write_table(
        pa.table(
            {
                "word": pa.array(words, pa.binary()),
                "count": pa.array([1 << 62] * len(words), pa.int64()),
            }
        ),
        part,
    )
    manifest_path = tmp_path / "c" / "_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["parts"][0]["sha256"] = hashlib.sha256(open(part, "rb").read()).hexdigest()
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(OverflowError, match="beyond 2\\*\\*64"):
        bytepair.train_from_counts(bytepair.WordCounts.open(tmp_path / "c"), 300)
    # The same counts as a mapping fail alike, before the core is reached.
    with pytest.raises(OverflowError, match="beyond 2\\*\\*64"):
        bytepair.train_from_counts({w: 1 << 62 for w in words}, 300)


def test_info_and_inspect_escape_control_characters_read_from_a_file(tmp_path, capsys):
    """A special token or pattern holding ESC must not reach the terminal raw."""
    from bytepair.cli import main

    hostile = "<\x1b[2J\x1b]0;pwned\x07>"
    tok = bytepair.train_from_iterator(
        ["ab ab ab"] * 5, 260, special_tokens=[hostile], progress=False
    )
    path = tmp_path / "tok.json"
    tok.save(path)
    for command in (["info", str(path)], ["inspect", str(path)]):
        assert main(command) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out
        assert "\\x1b[2J" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train", "{text}", "--vocab-size", "300", "--threads", "-1"],
            "argument --threads: -1 must be at least 1",
        ),
        (
            ["count", "{text}", "-o", "{tmp}/c", "--parts", "-1"],
            "argument --parts: -1 must be at least 1",
        ),
        (["decode", "{tmp}/x.npz", "-t", "{tok}"], "an .npz archive, not a .npy array"),
        (["decode", "{tmp}/objects.npy", "-t", "{tok}"], "not a .npy array of integer ids"),
    ],
)
def test_cli_misuse_is_one_line_in_cli_words(tmp_path, argv, message):
    """No traceback, no Python keyword arguments, nothing unpickled."""
    import numpy as np

    text = tmp_path / "t.txt"
    text.write_text("hello world\n", encoding="utf-8")
    tok = tmp_path / "tok.json"
    bytepair.train_from_iterator(["hello world"], 260, progress=False).save(tok)
    np.savez(tmp_path / "x.npz", a=np.arange(3))
    np.save(tmp_path / "objects.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    args = [a.format(text=text, tmp=tmp_path, tok=tok) for a in argv]
    result = subprocess.run(
        [sys.executable, "-m", "bytepair", *args], capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and message in result.stderr, result.stderr
    assert not list(tmp_path.glob("*staging*")) and not (tmp_path / "c").exists()


def test_api_errors_have_the_right_type_and_name_the_value():
    """decode(errors=None) raised a bare StopIteration; np.int64(300) was "too
    small"; a word 5 became five NUL bytes."""
    import numpy as np

    tok = bytepair.train_from_iterator(["hello world"] * 3, 260, progress=False)
    with pytest.raises(TypeError, match="errors must be a str.*got None"):
        tok.decode([104, 105], errors=None)
    assert (
        bytepair.train_from_iterator(["hello world"] * 3, np.int64(260), progress=False).vocab_size
        <= 260
    )
    with pytest.raises(TypeError, match="word 5 must be a str or bytes, not int"):
        bytepair.train_from_counts({5: 5}, 260)


@pytest.mark.parametrize(
    "merges, message",
    [
        ([(b"a", b"b"), (b"a", b"b")], "which merges\\[0\\] already makes"),
        (
            [(b"ab", b"c"), (b"a", b"b")],
            "is not in the vocab|is not what the merges before it make",
        ),
        ([(b"a", b"b"), (b"b", b"c"), (b"a", b"bc")], "is not what the merges before it make"),
    ],
)
def test_the_constructor_refuses_what_load_would_refuse(merges, message):
    """Tokenizer() accepted duplicate merges and merges BPE would not make;
    save() then wrote files load() refused."""
    vocab = {i: bytes([i]) for i in range(256)}
    for a, b in merges:
        if a + b not in vocab.values():
            vocab[len(vocab)] = a + b
    with pytest.raises(ValueError, match=message):
        bytepair.Tokenizer(vocab, merges)


def test_cli_shows_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path):
    """Bars are for terminals: in a pipe or a log, stderr holds messages only."""
    tok = tmp_path / "tok.json"
    bytepair.train_from_iterator(["hello world"] * 5, 260, progress=False).save(tok)
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n" * 100, encoding="utf-8")
    for args in (
        ["encode", str(corpus), "-t", str(tok), "-o", str(tmp_path / "ids.npy")],
        ["train", str(corpus), "--vocab-size", "260", "-o", str(tmp_path / "t.json")],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "bytepair", *args], input=b"hello world\n", capture_output=True
        )
        assert result.returncode == 0, result.stderr
        assert (
            b"\r" not in result.stderr
            and b"it/s" not in result.stderr
            and b"B/s" not in result.stderr
        ), result.stderr


def _random_words_file(path, megabytes: int) -> None:
    """Text of all-distinct random words (the worst case for counting memory)."""
    import numpy as np

    rng = np.random.default_rng(0)
    letters = rng.integers(ord("a"), ord("z") + 1, size=megabytes << 20, dtype=np.uint8)
    letters[rng.random(letters.size) < 1 / 8] = ord(" ")
    path.write_bytes(letters.tobytes())


def test_a_memory_budget_bounds_counting_of_all_distinct_words(tmp_path):
    """1 GB of random words passed 7.5 GiB while counting. With
    max_memory the counts stay within the budget (the rarest words are dropped,
    and said so); without it the same text needs several times more."""
    corpus = tmp_path / "random.txt"
    _random_words_file(corpus, 24)
    code = f"""
        import re, warnings, bytepair
        def rss(key):
            status = open("/proc/self/status").read()
            return int(re.search(key + r":\\s+(\\d+)", status).group(1)) << 10
        base = rss("VmRSS")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tok = bytepair.train({str(corpus)!r}, 300, progress=False, max_memory={{budget}})
        s = tok.training_stats
        print(rss("VmHWM") - base, s.pruned_words, s.pruned_min_count, s.distinct_words,
              sum("counting dropped" in str(w.message) for w in caught))
    """
    budget = 64 << 20
    bounded = _run(code.replace("{budget}", str(budget))).stdout.split()
    unbounded = _run(code.replace("{budget}", "None")).stdout.split()
    grown, pruned, min_count, distinct, warned = map(int, bounded)
    # 32-34 MiB (the 24 MB of text is one job: it has no safe cut); 65-68 MiB
    # when one job's tally could take half the budget.
    assert grown < budget * 3 // 4, f"{grown >> 20} MiB for a budget of {budget >> 20} MiB"
    assert pruned > 1_000_000 and min_count >= 2 and warned == 1 and distinct > 10_000
    assert int(unbounded[0]) > 3 * grown and unbounded[1] == "0"


def test_a_memory_budget_that_is_not_reached_changes_nothing(tmp_path):
    corpus = tmp_path / "a.txt"
    corpus.write_text(
        "the cat sat on the mat; the dog ate the cat's hat\n" * 2000, encoding="utf-8"
    )
    plain = bytepair.train(corpus, 270, progress=False)
    budgeted = bytepair.train(corpus, 270, progress=False, max_memory=64 << 20)
    assert budgeted.merges == plain.merges and budgeted.training_stats.pruned_words == 0
    for bad in (1 << 20, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_memory"):
            bytepair.train(corpus, 300, progress=False, max_memory=bad)


def test_cli_max_memory_takes_sizes_and_reports_what_it_dropped(tmp_path):
    from bytepair.cli.args import byte_size

    assert [byte_size(s) for s in ("64M", "4G", "1.5g", "512MiB", "1000")] == [
        64 << 20,
        4 << 30,
        3 << 29,
        512 << 20,
        1000,
    ]
    corpus = tmp_path / "random.txt"
    _random_words_file(corpus, 8)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair",
            "train",
            str(corpus),
            "--vocab-size",
            "300",
            "--max-memory",
            "64M",
            "-o",
            str(tmp_path / "tok.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"pruned\s+[\d,]+ distinct words seen < \d+ times .* --max-memory", result.stdout
    ), result.stdout
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair",
            "train",
            str(corpus),
            "--vocab-size",
            "300",
            "--max-memory",
            "lots",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "--max-memory" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: m.__setitem__("dtype", "object"), "dtype: expected one of"),
        (lambda m: m.__setitem__("documents", -1), "documents: expected a non-negative"),
        (lambda m: m.__setitem__("tokens", 10**6), "tokens: 1,000,000, but the shards add up"),
        (lambda m: m.__setitem__("input", None), "input: expected an object"),
        (lambda m: m["input"].__setitem__("files", "2"), "input.files: expected a non-negative"),
        (lambda m: m.__setitem__("eot", "x"), "eot: expected a non-negative integer"),
        (lambda m: m["shards"][0].__setitem__("name", "../../x"), r"shards\[0\]\.name: expected"),
        (lambda m: m["shards"][0].pop("index_sha256"), r"shards\[0\]\.index_sha256: missing"),
        (lambda m: m.__setitem__("layout", None), "layout: expected one of"),
    ],
)
def test_a_doctored_shards_manifest_is_refused(tmp_path, damage, message):
    """The token-shards manifest, the same class as the word counts': every
    field `TokenShards` and `shards inspect` read is checked."""
    import json

    tok = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    (tmp_path / "a.txt").write_text("hi<|endoftext|>ho", encoding="utf-8")
    out = tmp_path / "out"
    bytepair.encode_dataset(tmp_path / "a.txt", out, tok, separator="<|endoftext|>", progress=False)
    manifest_path = out / "_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    damage(manifest)
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=message) as caught:
        bytepair.TokenShards.open(out)
    assert str(caught.value).startswith(str(manifest_path))
    result = subprocess.run(
        [sys.executable, "-m", "bytepair", "shards", "inspect", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr


# Every public entry point that takes text, called with lone surrogates.
# Encoding replaces each with U+FFFD, as tiktoken does; training and
# the strings that define a tokenizer (pattern, special tokens, separator) refuse
# them with a ValueError that says where.
_SURROGATES = "a\ud800b \udcff"
_REPLACED = "a\ufffdb \ufffd"
_TAKES_TEXT = {
    "encode": lambda tok, s: tok.encode(s),
    "encode_ordinary": lambda tok, s: tok.encode_ordinary(s),
    "encode_batch": lambda tok, s: tok.encode_batch([s, s])[1],
    "encode_ordinary_batch": lambda tok, s: tok.encode_ordinary_batch([s])[0],
    "encode_iterable": lambda tok, s: list(tok.encode_iterable([s])),
    "encode_to_numpy": lambda tok, s: tok.encode_to_numpy(s).tolist(),
    "encode_blocks": lambda tok, s: [i for a in tok.encode_blocks([s]) for i in a.tolist()],
    "encode_with_offsets": lambda tok, s: tok.encode_with_offsets(s)[0],
    "count_tokens": lambda tok, s: tok.count_tokens(s),
    "pretokenize": lambda tok, s: tok.pretokenize(s),
    "encode_single_token": lambda tok, s: tok.encode_single_token(s[1]),
}


def test_lone_surrogates_encode_as_tiktoken_replaces_them_everywhere():
    pytest.importorskip("tiktoken")
    tok = bytepair.train_from_iterator(["ab \ufffd\ufffd"] * 9, 261, progress=False)
    enc = tok.to_tiktoken()
    public = {
        name
        for name in dir(bytepair.Tokenizer)
        if not name.startswith("_")
        and inspect.isfunction(getattr(bytepair.Tokenizer, name))
        and list(inspect.signature(getattr(bytepair.Tokenizer, name)).parameters)[1:2]
        in (["text"], ["texts"], ["text_or_bytes"])
    }
    assert public == set(_TAKES_TEXT), "a new entry point that takes text: add it here"
    assert enc.encode(_SURROGATES) == tok.encode(_REPLACED)
    for name, call in _TAKES_TEXT.items():
        got, want = call(tok, _SURROGATES), call(tok, _REPLACED)
        assert got == want, name
    assert tok.encode(_SURROGATES, dropout=0.5, seed=3) == tok.encode(
        _REPLACED, dropout=0.5, seed=3
    )
    assert tok.encode(_SURROGATES, max_tokens=3) == tok.encode(_REPLACED, max_tokens=3)


def test_lone_surrogates_in_training_name_the_text_and_position(tmp_path):
    texts = ["fine", "also fine", "bad \ud800 here"]
    with pytest.raises(ValueError, match=r"^text 2: a lone surrogate '\\ud800' at character 4"):
        bytepair.train_from_iterator(texts, 260, progress=False)
    # The document index counts across batches and lists of texts.
    with pytest.raises(ValueError, match=r"^text 4: a lone surrogate '\\udcff' at character 0"):
        bytepair.train_from_iterator([["a", "b"], ["c", "d"], ["\udcff"]], 260, progress=False)
    replaced = bytepair.train_from_iterator(texts, 262, progress=False, errors="replace")
    assert (
        replaced.merges
        == bytepair.train_from_iterator(
            [t.replace("\ud800", "\ufffd") for t in texts], 262, progress=False
        ).merges
    )
    with pytest.raises(ValueError, match="word 'x\\\\udc80' holds a lone surrogate at character 1"):
        bytepair.train_from_counts({"x\udc80": 3}, 260)
    with pytest.raises(ValueError, match="errors='nope'"):
        bytepair.train_from_iterator(texts, 260, progress=False, errors="nope")
    (tmp_path / "a.txt").write_text("hello", encoding="utf-8")
    tok = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    for call, what in [
        (lambda: bytepair.train_from_iterator(["a"], 260, pattern="\ud800"), "pattern"),
        (lambda: bytepair.count(tmp_path / "a.txt", tmp_path / "c", pattern="a\ud800"), "pattern"),
        (lambda: bytepair.train_from_iterator(["a"], 260, special_tokens=["\ud800"]), "special"),
        (lambda: bytepair.Tokenizer(tok.vocab, [], ["<\udfff>"]), "special token"),
        (lambda: bytepair.Tokenizer(tok.vocab, [], pattern="\udfff"), "pattern"),
        (
            lambda: bytepair.encode_dataset(
                tmp_path / "a.txt", tmp_path / "d", tok, separator="\ud800"
            ),
            "separator",
        ),
    ]:
        with pytest.raises(ValueError, match=f"{what}.*lone surrogate"):
            call()
