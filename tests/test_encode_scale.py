"""Encoding at scale, small: each scenario of bench/bench_scale.py (one big
text called again and again, documents in two passes, a slice of a text read
in text mode after a huge str was freed...) on a few MB, with ids compared to
tiktoken's; the cache budget (a tiny one sweeps all the time: same ids,
bounded memory); the recycled buffers of `encode_to_numpy`'s arrays."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

pytest.importorskip("tiktoken")

from _gpt2 import assert_same_ids, gpt2_tokenizer, openai_tokenizer, tiktoken_gpt2  # noqa: E402
from conftest import corpus_path  # noqa: E402

import bytepair  # noqa: E402

CORPORA = ("enwiki.txt", "code.txt", "multilingual.txt")


def tokenizer_and_reference(ranks: str):
    if ranks == "gpt2":
        return gpt2_tokenizer(), tiktoken_gpt2()
    tok = openai_tokenizer(f"{ranks}_base")
    return tok, tok.to_tiktoken()


def documents(size: int, total: int) -> list[str]:
    """About `total` bytes of the three corpora, each cut into documents of
    `size` bytes (a character cut at a boundary is dropped, as the benchmark does)."""
    docs = []
    for rel in CORPORA:
        with open(corpus_path(rel), "rb") as f:
            raw = f.read(total // len(CORPORA))
        docs += [raw[i : i + size].decode("utf-8", "ignore") for i in range(0, len(raw), size)]
    return docs


def in_fresh_thread(work):
    """`work()` on a new thread: its caches are made under the budget in effect."""
    out = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    assert out, "the thread failed"
    return out[0]


@pytest.fixture
def budget():
    """Set the cache budget for a test; the default comes back afterwards."""
    old = bytepair.cache_budget()
    yield bytepair.set_cache_budget
    bytepair.set_cache_budget(old)


def test_the_default_budget_and_its_rounding(budget):
    assert bytepair.cache_budget() == 128 << 20, "the documented default"
    assert budget(3 << 20) == 2 << 20
    assert budget(0) == 1 << 20 == bytepair.cache_budget()
    with pytest.raises(ValueError, match="nbytes must be >= 0, got -1"):
        bytepair.set_cache_budget(-1)
    with pytest.raises(TypeError, match="must be an int, got str"):
        bytepair.set_cache_budget("1G")


@pytest.mark.parametrize("ranks", ["gpt2", pytest.param("o200k", marks=pytest.mark.slow)])
def test_a_tiny_budget_gives_the_same_ids_in_bounded_memory(budget, ranks):
    """1 MiB for all of a thread's caches: they sweep all the time, their
    memory stays within the budget, and every id equals tiktoken's, call after
    call (the later calls find what the sweeps kept)."""
    tok, ref = tokenizer_and_reference(ranks)
    docs = documents(256 << 10, 3 << 20)
    want = [ref.encode_ordinary(d) for d in docs]
    budget(1 << 20)

    def work():
        got, peaks = [], []
        for _ in range(2):
            got.append([tok.encode_ordinary(d) for d in docs])
            stats = tok._core.cache_stats()
            peaks.append(stats["short_bytes"] + stats["mid_bytes"] + stats["long_bytes"])
        return got, peaks, stats

    got, peaks, stats = in_fresh_thread(work)
    for one_pass in got:
        for ours, theirs, text in zip(one_pass, want, docs):
            assert_same_ids(ours, theirs, text=text, decode_bytes=ref.decode_bytes, label=ranks)
    assert stats["short_sweeps"] > 0 and stats["short_evicted"] > 0, stats
    assert max(peaks) <= 1 << 20, (peaks, stats)


def test_a_large_working_set_keeps_its_frequent_pieces(budget):
    """A working set past the budget degrades, it does not collapse: on a
    second pass over documents whose pieces do not all fit, most pieces are
    still hits (the frequent ones were kept), where emptying the cache when
    full left only the pieces seen since (4 MiB: 6% of the second pass's
    pieces missed, against 10% when the caches were emptied when full)."""
    tok, _ = tokenizer_and_reference("gpt2")
    docs = documents(64 << 10, 4 << 20)
    budget(4 << 20)

    def work():
        for d in docs:
            tok.encode_to_numpy(d)
        first = tok._core.cache_stats()
        for d in docs:
            tok.encode_to_numpy(d)
        second = tok._core.cache_stats()
        return first, second

    first, second = in_fresh_thread(work)
    assert second["short_sweeps"] > first["short_sweeps"], "the second pass overflowed too"
    seen = second["pieces_seen"] - first["pieces_seen"]
    missed = (second["short_inserted"] - first["short_inserted"]) + (
        second["mid_inserted"] - first["mid_inserted"]
    )
    assert missed < 0.08 * seen, (missed, seen)


@pytest.mark.parametrize(
    "ranks, shape",
    [
        ("gpt2", "one text, warm"),
        ("cl100k", "one text, warm"),
        ("o200k", "documents, two passes"),
        ("gpt2", "small documents, one pass"),
        ("gpt2", "text mode after a huge str"),
        ("cl100k", "text mode after a huge str"),
    ],
)
def test_each_benchmark_shape_small_equals_tiktoken(ranks, shape):
    """The shapes of bench/bench_scale.py's rows on a few MB: the ids of
    every call equal tiktoken's."""
    tok, ref = tokenizer_and_reference(ranks)
    if shape == "one text, warm":
        texts, calls = ["".join(documents(1 << 20, 3 << 20))], 3
    elif shape == "documents, two passes":
        texts, calls = documents(256 << 10, 3 << 20), 2
    elif shape == "small documents, one pass":
        texts, calls = documents(16 << 10, 1 << 20), 1
    else:
        with open(corpus_path("multilingual.txt"), encoding="utf-8") as f:
            whole = f.read()
        texts, calls = [whole[:2_000_000]], 3
        del whole
        gc.collect()
    want = [ref.encode_ordinary(t) for t in texts]
    for _ in range(calls):
        for text, ids in zip(texts, want):
            got = tok.encode_to_numpy(text)
            assert_same_ids(
                got.tolist(), ids, text=text, decode_bytes=ref.decode_bytes, label=shape
            )


def test_recycled_array_buffers_never_change_a_live_array():
    """An array's buffer is reused only once the array (and every view of
    it) is gone: arrays and views kept across later calls keep their ids."""
    tok, ref = tokenizer_and_reference("gpt2")
    texts = documents(1 << 20, 3 << 20)
    want = [np.array(ref.encode_ordinary(t), dtype=np.uint32) for t in texts]
    first = tok.encode_to_numpy(texts[0])
    view = first[5:]
    del first
    kept = [tok.encode_to_numpy(t) for t in texts[1:]]
    assert np.array_equal(view, want[0][5:])
    del view
    gc.collect()
    for _ in range(3):
        again = [tok.encode_to_numpy(t) for t in texts]
        again[0][:] = 0  # arrays are writeable; nobody else sees it
        for got, ids in zip(kept, want[1:]):
            assert np.array_equal(got, ids)
        for got, ids in zip(again[1:], want[1:]):
            assert np.array_equal(got, ids)
        del again


def test_a_loop_on_one_text_reuses_its_buffers_pages():
    """`ids = encode_to_numpy(text)` in a loop: from the third call on, each
    call writes its ids into the pages of the buffer of the call two before
    (pooled, neither shrunk nor grown), so it takes almost no page faults;
    growing a shrunk buffer used to copy it into fresh pages, one fault per
    4 KiB of ids on every call."""
    import resource

    tok, ref = tokenizer_and_reference("gpt2")
    with open(corpus_path("enwiki.txt"), "rb") as f:
        text = f.read(4 << 20).decode("utf-8", "ignore")
    want = ref.encode_ordinary(text)
    id_pages = 4 * len(want) // 4096
    faults = []
    ids = None
    for _ in range(5):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        ids = tok.encode_to_numpy(text)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    assert ids.tolist() == want
    assert max(faults[2:]) < id_pages // 4, (faults, id_pages)


def test_a_long_id_list_holds_one_reference_per_item():
    """A list of more than a few ids is built by counting the uses of each
    shared int and adding them to its reference count at the end: the counts
    must be exact (too few frees an int still in a list, too many leaks it)."""
    import sys

    tok = gpt2_tokenizer()
    text = " the cat" * 60_000  # 120k ids: more than the 50k shared ints
    first = tok.encode(text)
    the, cat = first[0], first[1]
    before = sys.getrefcount(the), sys.getrefcount(cat)
    second = tok.encode(text)
    assert len(second) == 120_000 and second == first
    assert sys.getrefcount(the) == before[0] + 60_000
    assert sys.getrefcount(cat) == before[1] + 60_000
    del second
    assert (sys.getrefcount(the), sys.getrefcount(cat)) == before
    short = tok.encode(" the cat" * 10)  # the per-item path
    assert sys.getrefcount(the) == before[0] + 10
    counted = tok.encode(" the cat" * 100)  # counted, its ints touched only
    assert sys.getrefcount(the) == before[0] + 110
    del short, counted, first
    assert sys.getrefcount(the) == before[0] - 60_000


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_lists_hold_one_reference_per_item_also_after_an_error(threads):
    """encode_batch counts the uses of the shared ints over the whole batch
    and adds them once: exact counts after a batch, and after a batch that
    fails on one text (its finished lists are freed with the error)."""
    import sys

    tok = gpt2_tokenizer()
    the = tok.encode(" the cat")[0]
    before = sys.getrefcount(the)
    lists = tok.encode_batch([" the cat"] * 3000, num_threads=threads)
    assert sys.getrefcount(the) == before + 3000
    del lists
    assert sys.getrefcount(the) == before
    texts = [" the cat"] * 2000 + ["<|endoftext|>"] + [" the cat"] * 2000
    with pytest.raises(ValueError, match="endoftext"):
        tok.encode_batch(texts, num_threads=threads)
    assert sys.getrefcount(the) == before


# Code points past which a str keeps CPython's UTF-8 copy (crates/bytepair-py/src/utf8.rs).
OWN_UTF8_MAX_CHARS = 256 << 10


def fresh(text: str) -> str:
    """An equal str without CPython's UTF-8 copy (a str made anew has none)."""
    return (text + ".")[:-1]


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
@pytest.mark.parametrize(
    "unit", ["plain ascii ", "café déjà ", "naïve € 東京 ", "emoji 😀 ok "], ids=str.split
)
def test_every_kind_of_str_encodes_as_tiktoken_and_short_ones_keep_no_utf8_copy(unit, long):
    """A short Latin-1 or UCS-2 str is encoded into a reused buffer on its
    first call (in a batch: by the thread encoding it), without CPython's
    UTF-8 copy kept with the str (which `sys.getsizeof` counts), and through
    that copy when seen again; long ones, ASCII and UCS-4 strs always through
    the copy. Ids equal tiktoken's by every entry point, on first and later
    calls."""
    import sys

    tok, ref = tokenizer_and_reference("cl100k")
    reps = (OWN_UTF8_MAX_CHARS if long else 3000) // len(unit) + 1
    text = unit * reps
    want = ref.encode_ordinary(fresh(text))
    own_buffer = not long and not text.isascii() and max(map(ord, text)) < 0x10000
    entry_points = {
        "encode_to_numpy": lambda t: tok.encode_to_numpy(t).tolist(),
        "encode": tok.encode,
        "encode_ordinary": tok.encode_ordinary,
        "encode_batch": lambda t: tok.encode_batch([t[:99], t], num_threads=2)[1],
    }
    kept = []  # alive, so no str here takes the address of one seen before
    for name, encode in entry_points.items():
        plain = fresh(text)
        kept.append(plain)
        size = sys.getsizeof(plain)
        assert encode(plain) == want, name
        copied = not text.isascii() and not own_buffer
        assert (sys.getsizeof(plain) > size) == copied, name
        assert encode(plain) == want, name
        assert encode(plain) == want, name
        assert (sys.getsizeof(plain) > size) == (not text.isascii()), name


def test_short_strs_are_encoded_without_a_copy_until_seen_again():
    import sys

    tok, ref = tokenizer_and_reference("cl100k")
    docs = [fresh(f"документ {i}: naïve € 東京 " * 200) for i in range(100)]
    sizes = [sys.getsizeof(d) for d in docs]
    for doc in docs:
        assert tok.encode_to_numpy(doc).tolist() == ref.encode_ordinary(fresh(doc))
    assert [sys.getsizeof(d) for d in docs] == sizes
    for doc in docs[-10:]:  # seen in the last 64 calls: CPython's copy now
        assert tok.encode(doc) == ref.encode_ordinary(fresh(doc))
    assert all(sys.getsizeof(d) > s for d, s in zip(docs[-10:], sizes[-10:]))


def test_a_surrogate_in_a_short_ucs2_str_is_replaced_as_before():
    tok, ref = tokenizer_and_reference("gpt2")
    for text in ("東京 \ud800 x", "\ud83d\ude00 €", "€ \udfff"):
        assert tok.encode(text) == ref.encode(text)
        assert tok.encode_to_numpy(text).tolist() == ref.encode(text)
