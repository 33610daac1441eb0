"""Training: the Rust core (bytepair.train*) against the reference
(bytepair.reference), merge by merge, with the pair count of every merge.

* real text: word counts and the first few hundred merges on slices of the
  corpora, each run holding steps whose top count was tied;
* generated word counts (hypothesis, and a seeded batch that must hold many
  ties) over tiny alphabets, so overlapping pairs (a a a) and ties are common;
* invariance: threads, chunk sizes, file vs iterator, several files = several
  documents, the o200k/cl100k/gpt2 presets across chunk boundaries;
* special tokens: hard boundaries, never counted, ids after the last merge;
* early stop, u64 counts, and the error messages.
"""

from __future__ import annotations

import ast
import os
import random
import subprocess
import sys
import tempfile
import warnings
from collections import Counter

import pytest

import bytepair
from bytepair import _core
from bytepair import reference as ref

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

EOT = "<|endoftext|>"


# ---- helpers -----------------------------------------------------------------


def trace_of(tok: bytepair.Tokenizer) -> list[tuple[tuple[bytes, bytes], int]]:
    """[(merge, its count when chosen)] of a tokenizer trained by bytepair."""
    return list(zip(tok.merges, tok.training_stats.merge_counts))


def ref_trace(word_counts, num_merges: int):
    """(the reference's [(merge, count)], number of steps with a tied top count)."""
    trace = ref.train_trace(word_counts, num_merges)
    return [(pair, n) for pair, n, _ in trace], sum(tied for _, _, tied in trace)


def assert_same_trace(got, want):
    """Equal merge lists; on a mismatch, name the first differing rank."""
    for rank, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"merge {rank}: bytepair chose {g}, the reference {w}"
    assert len(got) == len(want), f"bytepair learned {len(got)} merges, the reference {len(want)}"


def core_counts(texts, pattern="gpt2", special_tokens=()) -> dict[bytes, int]:
    """bytepair's word counts of `texts` (each one document)."""
    counter = _core.WordCounter(pattern, list(special_tokens))
    counter.count_texts(list(texts))
    return dict(counter.items())


def core_file_counts(
    paths, pattern="gpt2", special_tokens=(), chunk_size=8 << 20, num_threads=None, replace=False
):
    """bytepair's word counts of files (each one document), streamed in chunks."""
    counter = _core.WordCounter(pattern, list(special_tokens))
    counter.count_files([str(p) for p in paths], num_threads, chunk_size, replace)
    return dict(counter.items())


def quiet(fn, *args, **kwargs):
    """Call `fn` ignoring the early-stop warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


# ---- real text: bytepair vs the reference -------------------------------------


@pytest.mark.parametrize(
    "name, size, at, pattern",
    [
        ("tinystories_v1_train_head.txt", 80_000, 0.0, "gpt2"),
        ("shakespeare.txt", 60_000, 0.0, "cl100k"),
        ("multilingual.txt", 30_000, 0.5, "o200k"),
        ("code.txt", 80_000, 0.4, "gpt2"),
    ],
)
def test_corpus_slice_matches_reference(corpus_text, name, size, at, pattern):
    text = corpus_text(name, size, at)
    want_counts = ref.count_words([text], pattern)
    assert core_counts([text], pattern) == dict(want_counts)
    num_merges = 200
    want, ties = ref_trace(want_counts, num_merges)
    tok = bytepair.train_from_iterator([text], 256 + num_merges, pattern=pattern, progress=False)
    assert_same_trace(trace_of(tok), want)
    assert ties > 0, "no tied step: this slice cannot catch a tie-break bug"
    stats = tok.training_stats
    assert stats.distinct_words == len(want_counts)
    assert stats.pre_tokens == sum(want_counts.values())
    assert tok.vocab_size == 256 + num_merges
    assert all(tok.vocab[256 + r] == a + b for r, (a, b) in enumerate(tok.merges))


def test_whole_file_word_counts_match_reference(corpus):
    """Counting a 4 MB file in small chunks and two threads gives the
    reference's counts of the whole text."""
    path = corpus("enwik8_head.txt")
    text = path.read_text(encoding="utf-8")
    want = dict(ref.count_words([text], "gpt2"))
    assert core_file_counts([path], chunk_size=4096, num_threads=2) == want


# ---- generated word counts ---------------------------------------------------

ALPHABETS = [b"ab", b"abc", b"aab", bytes([0, 0x7F, 0x80, 0xFF]), "é€a".encode()]


def random_counts(rng: random.Random) -> dict[bytes, int]:
    alphabet = rng.choice(ALPHABETS)
    return {
        bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 9))): rng.randint(0, 4)
        for _ in range(rng.randint(1, 8))
    }


def test_seeded_word_counts_match_reference_with_many_ties():
    rng = random.Random(20240521)
    steps = ties = 0
    for _ in range(250):
        counts = random_counts(rng)
        n = rng.randint(1, 30)
        want, t = ref_trace(counts, n)
        got = trace_of(quiet(bytepair.train_from_counts, counts, 256 + n))
        assert_same_trace(got, want)
        steps, ties = steps + len(want), ties + t
    assert ties > steps // 4, f"only {ties} of {steps} steps were tied"


def test_all_ties_follow_byte_order():
    """256 pairs of count 1: the order is the tie-break alone (descending)."""
    letters = b"\x00\x01AZaz\x7f\x80\xc3\xff"
    counts = {bytes([x, y]): 1 for x in letters for y in letters}
    got = trace_of(bytepair.train_from_counts(counts, 256 + len(counts)))
    want, ties = ref_trace(counts, len(counts))
    assert_same_trace(got, want)
    assert [a + b for (a, b), _ in got] == sorted(counts, reverse=True)


def test_overlapping_pairs():
    counts = {b"aaaa": 3, b"aaa": 2, b"aaaaaaa": 1, b"abababa": 2, b"bab": 5}
    want, _ = ref_trace(counts, 20)
    assert_same_trace(trace_of(quiet(bytepair.train_from_counts, counts, 256 + 20)), want)
    # (a,a) in aaaa x3 + aaa x2 + aaaaaaa x1 = 9 + 4 + 6
    assert want[0] == ((b"a", b"a"), 19)


@st.composite
def word_count_dicts(draw):
    alphabet = draw(st.sampled_from(ALPHABETS))
    word = st.lists(st.sampled_from(list(alphabet)), min_size=1, max_size=10).map(bytes)
    count = st.one_of(st.integers(0, 5), st.integers(0, 1 << 40))
    return draw(st.dictionaries(word, count, max_size=10))


@hypothesis.settings(max_examples=150)
@hypothesis.given(word_count_dicts(), st.integers(1, 40))
def test_generated_word_counts_match_reference(counts, num_merges):
    want, _ = ref_trace(counts, num_merges)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = bytepair.train_from_counts(counts, 256 + num_merges)
    assert_same_trace(trace_of(tok), want)
    stopped = len(want) < num_merges
    assert tok.training_stats.stopped_early == stopped
    assert any(issubclass(w.category, UserWarning) for w in caught) == stopped


@hypothesis.settings(max_examples=60)
@hypothesis.given(st.lists(st.text(alphabet="ab é\n'1.", max_size=30), max_size=6))
def test_generated_documents_match_reference(texts):
    """train_from_iterator: each text is a document; counts and merges as the
    reference's."""
    counts = ref.count_words(texts)
    assert core_counts(texts) == dict(counts)
    if not counts:
        with pytest.raises(ValueError, match="empty corpus"):
            bytepair.train_from_iterator(texts, 256 + 20, progress=False)
        return
    want, _ = ref_trace(counts, 20)
    assert_same_trace(
        trace_of(quiet(bytepair.train_from_iterator, texts, 256 + 20, progress=False)), want
    )


# ---- invariance: threads, chunks, files --------------------------------------


@pytest.fixture(scope="module")
def enwik8_runs(corpus):
    """Training runs on the 4 MB enwik8 head with various threads and chunk sizes."""
    path = corpus("enwik8_head.txt")
    runs = {}
    for threads, chunk in [(1, 8 << 20), (2, 8 << 20), (2, 1000), (1, 4096), (None, 1 << 16)]:
        runs[threads, chunk] = bytepair.train(
            path, 256 + 300, num_threads=threads, chunk_size=chunk, progress=False
        )
    return path, runs


def test_threads_and_chunk_sizes_give_the_same_merges(enwik8_runs):
    _, runs = enwik8_runs
    base = runs[1, 8 << 20]
    assert len(base.merges) == 300
    for key, tok in runs.items():
        assert_same_trace(trace_of(tok), trace_of(base))
        assert tok.training_stats.distinct_words == base.training_stats.distinct_words, key
        assert tok.training_stats.pre_tokens == base.training_stats.pre_tokens, key


def test_file_equals_iterator_of_whole_text(enwik8_runs):
    path, runs = enwik8_runs
    text = path.read_text(encoding="utf-8")
    tok = bytepair.train_from_iterator([text], 256 + 300, progress=False)
    assert_same_trace(trace_of(tok), trace_of(runs[1, 8 << 20]))
    assert tok == runs[1, 8 << 20]


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_chunk_size_invariance_per_preset_on_code(corpus_text, tmp_path, pattern):
    """Chunks are cut after a newline between two printable ASCII characters.
    For o200k that is not a pre-token boundary when the line ends in
    punctuation and the next starts with '/' (` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*`
    matches "}\\n/"), which C code is full of ("}\\n/* comment")."""
    text = corpus_text("code.txt", 1_000_000, 0.4)
    path = tmp_path / "code.txt"
    path.write_bytes(text.encode("utf-8"))
    want = dict(ref.count_words([text], pattern))
    for chunk in (1000, 4096, 8 << 20):
        got = core_file_counts([path], pattern, chunk_size=chunk)
        diff = {w: (got.get(w), n) for w, n in want.items() if got.get(w) != n}
        assert got == want, (
            f"chunk_size={chunk}: {len(diff)} words differ, e.g. {list(diff.items())[:3]}"
        )


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_chunk_boundary_minimal_cases(tmp_path, pattern):
    """Tiny files with every kind of newline neighbourhood, cut with chunk_size=1."""
    text = "a.\n/b\n}\n/* c */\nx\n'd\n's\n1\n2\n!\n?\n \n\t\nx \n y\n\r\nz\n\u00a0\nq/\n/\n//\n"
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode() * 3)
    want = dict(ref.count_words([text * 3], pattern))
    for chunk in (1, 2, 3, 5, 7):
        assert core_file_counts([path], pattern, chunk_size=chunk) == want, f"chunk_size={chunk}"


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
@pytest.mark.parametrize("strip", ["newlines", "all whitespace"])
def test_chunk_size_invariance_without_newlines(corpus_text, tmp_path, pattern, strip):
    """Text without newlines is cut between an ASCII letter and punctuation
    (not before ' , which o200k keeps with its word, nor inside <|endoftext|>)."""
    text = corpus_text("enwiki.txt", 300_000, 0.3)
    text = text.replace("\n", "") if strip == "newlines" else "".join(text.split())
    text = text.replace(".", "." + EOT, 200)
    path = tmp_path / "line.txt"
    path.write_bytes(text.encode("utf-8"))
    want = dict(ref.count_words([text], pattern, [EOT]))
    for chunk in (64, 1000, 8 << 20):
        got = core_file_counts([path], pattern, [EOT], chunk_size=chunk)
        diff = {w: (got.get(w), n) for w, n in want.items() if got.get(w) != n}
        assert got == want, (
            f"chunk_size={chunk}: {len(diff)} words differ, e.g. {list(diff.items())[:3]}"
        )


# Characters that sit on either side of a possible cut: ASCII letters and
# punctuation (with ' and contractions), digits, whitespace of all kinds,
# non-ASCII letters and marks, and the pieces of a special token.
_CUT_ALPHABET = list("aZs't.,!/}-_ \n\r\t1") + [
    "\u00e9",
    "\u0301",
    "\u00a0",
    "'LL",
    "'s",
    EOT,
    "<|",
    "|>",
]


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    parts=st.lists(st.sampled_from(_CUT_ALPHABET), max_size=300),
    pattern=st.sampled_from(["gpt2", "cl100k", "o200k"]),
    chunk=st.integers(1, 12),
)
def test_generated_text_counts_the_same_for_any_chunk_size(parts, pattern, chunk):
    text = "".join(parts)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.txt")
        with open(path, "wb") as f:
            f.write(text.encode("utf-8"))
        got = core_file_counts([path], pattern, [EOT], chunk_size=chunk)
    assert got == dict(ref.count_words([text], pattern, [EOT]))


def test_several_files_are_several_documents(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("hello wor")
    b.write_text("ld again hello")
    want = ref.count_words(["hello wor", "ld again hello"])
    assert core_file_counts([a, b]) == dict(want)
    assert want[b"ld"] == 1 and b" world" not in want
    tok = bytepair.train([a, b], 256 + 5, progress=False)
    assert tok == bytepair.train_from_iterator(
        ["hello wor", "ld again hello"], 256 + 5, progress=False
    )


# ---- special tokens ----------------------------------------------------------


@pytest.fixture(scope="module")
def stories(corpus_text):
    """TinyStories paragraphs, to be joined with <|endoftext|>."""
    text = corpus_text("tinystories_v1_valid_head.txt", 120_000)
    return [p for p in text.split("\n\n") if p.strip()]


def test_special_token_is_a_hard_boundary_and_never_counted(stories):
    joined = EOT.join(stories)
    counts = ref.count_words([joined], "gpt2", [EOT])
    assert counts == ref.count_words(stories)  # the reference itself: a boundary
    assert core_counts([joined], "gpt2", [EOT]) == dict(counts)
    with_special = bytepair.train_from_iterator(
        [joined], 256 + 150 + 1, special_tokens=[EOT], progress=False
    )
    as_documents = bytepair.train_from_iterator(stories, 256 + 150, progress=False)
    assert_same_trace(trace_of(with_special), trace_of(as_documents))
    want, _ = ref_trace(counts, 150)
    assert_same_trace(trace_of(with_special), want)
    assert with_special.special_tokens == {EOT: 256 + 150}
    assert with_special.training_stats.pre_tokens == sum(counts.values())
    assert not any(b"<|" in t or b"|>" in t for t in with_special.mergeable_ranks if len(t) > 1)


def test_special_token_glued_to_words():
    """No merge spans a special token even with letters on both sides."""
    text = ("abc" + EOT + "def" + EOT) * 50
    with pytest.warns(UserWarning, match="no pair left"):
        tok = bytepair.train_from_iterator(
            [text], 256 + 10 + 1, special_tokens=[EOT], progress=False
        )
    assert tok.training_stats.pre_tokens == 100
    # (a,b)=(b,c)=(d,e)=(e,f)=50: ('e','f') then ('d','ef'), ('b','c'), ('a','bc')
    assert tok.merges == [(b"e", b"f"), (b"d", b"ef"), (b"b", b"c"), (b"a", b"bc")]
    assert tok.training_stats.stopped_early


def run_isolated(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter: a crash (abort) must not take the
    test session down with it."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def first_lines(text: str, n: int = 2) -> str:
    return " | ".join(text.strip().splitlines()[:n])


def test_special_tokens_in_files_across_chunks(tmp_path, stories):
    """Files: the same counts as the iterator for any chunk size."""
    joined = EOT.join(stories[:200])
    path = tmp_path / "s.txt"
    path.write_bytes(joined.encode())
    want = dict(ref.count_words([joined], "gpt2", [EOT]))
    for chunk in (100, 1000, 8 << 20):
        assert core_file_counts([path], "gpt2", [EOT], chunk_size=chunk) == want, chunk
    tok = bytepair.train(path, 256 + 50 + 1, special_tokens=[EOT], chunk_size=1000, progress=False)
    assert tok == bytepair.train_from_iterator(
        [joined], 256 + 50 + 1, special_tokens=[EOT], progress=False
    )


def test_special_token_with_newline_in_a_file(tmp_path, stories):
    """A special token holding a newline could straddle a chunk boundary: no cut
    is made inside one. (Run in a subprocess: a failed allocation aborts the
    interpreter.)"""
    special = "\n<sep>\n"
    joined = special.join(stories[:200])
    path = tmp_path / "s.txt"
    path.write_bytes(joined.encode())
    want = bytepair.train_from_iterator(
        [joined], 256 + 50 + 1, special_tokens=[special], progress=False
    )
    assert b"<sep>" not in b"".join(want.mergeable_ranks)
    code = (
        "import bytepair\n"
        f"tok = bytepair.train({str(path)!r}, 256 + 50 + 1, special_tokens=[{special!r}], "
        "chunk_size=1000, progress=False)\n"
        "print(repr(tok.merges))"
    )
    result = run_isolated(code)
    assert result.returncode == 0, f"train() crashed the interpreter: {first_lines(result.stderr)}"
    assert ast.literal_eval(result.stdout) == want.merges


def test_huge_chunk_size_does_not_abort(tmp_path):
    """chunk_size is a block size, not an allocation to make up front: a big
    value must read the (small) file, or be refused, never abort the process."""
    path = tmp_path / "t.txt"
    path.write_text("hello world\n" * 10)
    code = (
        "import bytepair\n"
        f"print(bytepair.train({str(path)!r}, 258, chunk_size=1 << 40, progress=False).merges)"
    )
    result = run_isolated(code)
    assert result.returncode == 0 or "ValueError" in result.stderr, (
        f"aborted: {first_lines(result.stderr)}"
    )


def test_overlapping_special_tokens_longest_wins():
    specials = ["<|a|>", "<|a|><|b|>", "<|b|>"]
    text = "x<|a|><|b|>y<|a|>z<|b|>w<|a|><|a|><|b|>"
    want = ref.count_words([text], "gpt2", specials)
    assert want == Counter({b"x": 1, b"y": 1, b"z": 1, b"w": 1})
    assert core_counts([text], "gpt2", specials) == dict(want)
    # a special token of one tokenizer is plain text for another
    assert core_counts([text], "gpt2", ["<|b|>"]) == dict(
        ref.count_words([text], "gpt2", ["<|b|>"])
    )


# ---- early stop, large counts ------------------------------------------------


def test_early_stop_warns_and_returns_fewer_merges():
    with pytest.warns(UserWarning, match="no pair left to merge after 2 merges"):
        tok = bytepair.train_from_counts({"ab": 3, "cd": 1, "e": 9}, 300, special_tokens=[EOT])
    assert tok.merges == [(b"a", b"b"), (b"c", b"d")]
    assert tok.training_stats.stopped_early
    assert tok.special_tokens == {EOT: 258}
    assert tok.vocab_size == 259


def test_no_warning_when_vocab_is_reached():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = bytepair.train_from_counts({"ab": 3, "cd": 1}, 258)
    assert len(tok.merges) == 2 and not tok.training_stats.stopped_early


def test_counts_above_2_to_the_32():
    counts = {b"ab": 2**40, b"cd": 2**40 + 1, b"abab": 2**33, b"xy": 2**32 + 7}
    want, _ = ref_trace(counts, 10)
    got = trace_of(quiet(bytepair.train_from_counts, counts, 256 + 10))
    assert_same_trace(got, want)
    assert got[0] == ((b"a", b"b"), 2**40 + 2 * 2**33)


@pytest.mark.parametrize(
    "counts",
    [
        {b"ab": 2**63, b"xab": 2**63},  # pair (a, b) counts 2**64
        {b"ab": 2**64 - 1, b"ab ": 1},  # pair (a, b) counts 2**64
        {"ab": 2**64 - 1, b"ab": 1},  # the same word twice: 2**64 occurrences
    ],
)
def test_count_sums_beyond_u64_are_not_silently_wrapped(counts):
    """Each count fits in u64 but a sum does not. Either train exactly (as the
    reference does) or refuse with an error; a wrapped count is a wrong table."""
    try:
        tok = quiet(bytepair.train_from_counts, counts, 256 + 3)
    except (ValueError, OverflowError) as e:
        assert "2**64" in str(e) or "overflow" in str(e).lower()
        return
    want, _ = ref_trace(counts, 3)
    assert_same_trace(trace_of(tok), want)


# ---- errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    "vocab_size, specials, message",
    [
        (255, [], "vocab_size=255 is too small: it must be at least 256"),
        (256, [EOT], "at least 256 (the bytes) + 1 (special tokens) = 257"),
        (300, [EOT, EOT], "special token '<|endoftext|>' is given twice"),
        (300, [""], "special token '' must be a non-empty str"),
    ],
)
def test_bad_arguments(vocab_size, specials, message):
    for train in (
        lambda: bytepair.train_from_iterator(
            ["abc"], vocab_size, special_tokens=specials, progress=False
        ),
        lambda: bytepair.train_from_counts({"abc": 1}, vocab_size, special_tokens=specials),
    ):
        with pytest.raises(ValueError) as e:
            train()
        assert message in str(e.value)


def test_missing_file_and_directory(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        bytepair.train(missing, 300, progress=False)
    # A folder is read recursively (as `count` reads it); an empty one is no input.
    with pytest.raises(ValueError, match="no input files") as e:
        bytepair.train(tmp_path, 300, progress=False)
    assert str(tmp_path) in str(e.value)
    good = tmp_path / "good.txt"
    good.write_text("abc")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        bytepair.train([good, missing], 300, progress=False)


@pytest.mark.parametrize("source", ["empty file", "only special tokens", "no texts", "empty texts"])
def test_empty_corpus_is_an_error(tmp_path, source):
    path = tmp_path / "corpus.txt"
    path.write_text(EOT * 3 if source == "only special tokens" else "")
    run = {
        "empty file": lambda: bytepair.train(path, 300, progress=False),
        "only special tokens": lambda: bytepair.train(
            path, 300, special_tokens=[EOT], progress=False
        ),
        "no texts": lambda: bytepair.train_from_iterator([], 300, progress=False),
        "empty texts": lambda: bytepair.train_from_iterator(["", ""], 300, progress=False),
    }[source]
    where = str(path) if "file" in source or "special" in source else "the "
    with pytest.raises(ValueError, match="empty corpus, no text to train on") as e:
        run()
    assert str(e.value).startswith(where)


def test_empty_word_counts_give_the_byte_vocabulary_with_a_warning():
    """Counts are an intermediate artifact: empty ones are not an error."""
    with pytest.warns(UserWarning, match="no pair left"):
        tok = bytepair.train_from_counts({}, 300)
    assert tok.n_vocab == 256 and tok.merges == []


def test_bad_pattern_and_threads():
    with pytest.raises(ValueError, match="invalid pattern"):
        bytepair.train_from_iterator(["abc"], 300, pattern="(", progress=False)
    with pytest.raises(ValueError, match="num_threads"):
        bytepair.train_from_iterator(["abc"], 300, num_threads=0, progress=False)


def test_bad_counts():
    with pytest.raises(ValueError, match="'ab'"):
        bytepair.train_from_counts({"ab": -1}, 300)
    with pytest.raises(ValueError, match="'ab'"):
        bytepair.train_from_counts({"ab": 2**64}, 300)
    with pytest.raises(ValueError, match="'ab'"):
        bytepair.train_from_counts({"ab": 1.5}, 300)


@pytest.mark.parametrize("chunk", [64, 8 << 20])
def test_invalid_utf8_names_file_and_offset(tmp_path, chunk):
    path = tmp_path / "bad.txt"
    data = b"hello world\n" * 1000 + b"ab\xffcd\n" + b"x y\n" * 10
    path.write_bytes(data)
    with pytest.raises(ValueError) as e:
        bytepair.train(path, 300, chunk_size=chunk, progress=False)
    assert str(path) in str(e.value)
    assert "byte offset 12002" in str(e.value)
    tok = quiet(bytepair.train, path, 300, chunk_size=chunk, errors="replace", progress=False)
    want = quiet(
        bytepair.train_from_iterator, [data.decode("utf-8", "replace")], 300, progress=False
    )
    assert tok == want
    assert trace_of(tok) == trace_of(want)


def test_invalid_utf8_truncated_at_end(tmp_path):
    path = tmp_path / "cut.txt"
    path.write_bytes("añb\n".encode() + "€".encode()[:2])
    with pytest.raises(ValueError, match=r"byte offset 5\b"):
        bytepair.train(path, 300, progress=False)
    with pytest.raises(ValueError, match="errors="):
        bytepair.train(path, 300, errors="ignore", progress=False)


@hypothesis.settings(max_examples=60)
@hypothesis.given(
    st.lists(
        st.one_of(st.binary(max_size=6), st.sampled_from([b"\n", b"a\nb", b"x y\n", "é".encode()])),
        max_size=40,
    )
)
def test_replacement_equals_python_decode(chunks):
    """errors="replace" gives the counts of Python's decode(errors="replace"),
    whatever the chunk size."""
    data = b"".join(chunks)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.txt")
        with open(path, "wb") as f:
            f.write(data)
        want = dict(ref.count_words([data.decode("utf-8", "replace")]))
        for chunk in (3, 1 << 20):
            assert core_file_counts([path], chunk_size=chunk, replace=True) == want
