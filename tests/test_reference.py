"""The reference implementation (bytepair.reference) on examples worked by hand.

The reference is the oracle of the differential tests, so it is checked here on
its own, against expectations derived independently of any code:

* the HuggingFace course corpus {hug:10, pug:5, pun:12, bun:4, hugs:5};
* Sennrich et al. (2016), Algorithm 1, on {low:5, lower:2, newest:6, widest:3}
  with the separate end-of-word symbol ``</w>``;
* the building blocks (pair counting, left-to-right merging, tie-break, early
  stop, tie flag), pre-tokenization with special tokens, and encoding, the
  latter against tiktoken and against bytepair's encoder.
"""

from __future__ import annotations

from collections import Counter

import pytest

import bytepair
from bytepair import reference as ref

HF_COURSE = {b"hug": 10, b"pug": 5, b"pun": 12, b"bun": 4, b"hugs": 5}
SENNRICH = {"low": 5, "lower": 2, "newest": 6, "widest": 3}


# ---- training ----------------------------------------------------------------


def test_hf_course_example_merges_counts_and_ties():
    trace = ref.train_trace(HF_COURSE, 4)
    assert [a + b for (a, b), _, _ in trace] == [b"ug", b"un", b"hug", b"pun"]
    # ug: hug 10 + pug 5 + hugs 5; un: pun 12 + bun 4; hug: hug 10 + hugs 5; pun: 12
    assert [n for _, n, _ in trace] == [20, 16, 15, 12]
    assert [tied for _, _, tied in trace] == [False] * 4
    assert ref.train_from_counts(HF_COURSE, 4) == [(a, b) for (a, b), _, _ in trace]


def test_hf_course_example_str_keys_are_utf8():
    assert ref.train_from_counts(
        {k.decode(): v for k, v in HF_COURSE.items()}, 4
    ) == ref.train_from_counts(HF_COURSE, 4)


def test_hf_course_example_runs_to_the_end():
    """Merging until no pair is left makes every word a single symbol, and
    asking for more merges than exist returns the same (shorter) list."""
    trace = ref.train_trace(HF_COURSE, 1000)
    assert set(HF_COURSE) <= {a + b for (a, b), _, _ in trace}
    assert all(n > 0 for _, n, _ in trace)
    assert ref.train_trace(HF_COURSE, len(trace) + 1) == trace
    assert len(trace) == 7  # ug un hug pun hugs pug bun


def test_sennrich_algorithm_1_as_printed_in_the_paper():
    """The Python code of the paper's Algorithm 1 (num_merges = 10), run with
    dicts in insertion order, prints these merges. It breaks ties with
    `max(pairs, key=pairs.get)`, i.e. the first pair counted, so
    ``ties="first"`` replays it exactly (e s / es t / est </w> all count 9)."""
    got = ref.train_chars(SENNRICH, 10, end_of_word="</w>", ties="first")
    assert got == [
        ("e", "s"),
        ("es", "t"),
        ("est", "</w>"),
        ("l", "o"),
        ("lo", "w"),
        ("n", "e"),
        ("ne", "w"),
        ("new", "est</w>"),
        ("low", "</w>"),
        ("w", "i"),
    ]


def test_sennrich_dictionary_with_bytepair_tie_break():
    """Same dictionary, bytepair's rule (greatest pair wins a tie). Derivation:
    first counts: (e,s)=(s,t)=(t,</w>)=9 tied; ('t','</w>') is the greatest
    tuple, then ('s','t</w>') > ('e','s'), then (e,st</w>) alone at 9. Next
    (l,o)=(o,w)=7: ('o','w') wins, then (l,ow)=7. Then (w,est</w>)=(n,e)=(e,w)=6:
    ('w','est</w>') > ('n','e') > ('e','w'); then (n,e)=6 > (e,west</w>)... no:
    (n,e) and (e,west</w>) tie at 6 and ('n','e') > ('e','west</w>'); then
    (ne,west</w>)=6. Then (low,</w>)=5, then (w,i)=(i,d)=(d,est</w>)=3:
    ('w','i') wins, then (wi,d), (wid,est</w>).

    (The paper's Figure 1, merges r·, lo, low, er· on {low, lowest, newer,
    wider}, is one of several orders with the top count at each step; with each
    word counted once, neither tie rule produces it (greatest: we, r·, lo, ...;
    first counted: lo, low, ...), so it is not asserted.)"""
    words = {tuple(w) + ("</w>",): n for w, n in SENNRICH.items()}
    trace = ref.learn(words, 12)
    assert [p for p, _, _ in trace] == [
        ("t", "</w>"),
        ("s", "t</w>"),
        ("e", "st</w>"),
        ("o", "w"),
        ("l", "ow"),
        ("w", "est</w>"),
        ("n", "e"),
        ("ne", "west</w>"),
        ("low", "</w>"),
        ("w", "i"),
        ("wi", "d"),
        ("wid", "est</w>"),
    ]
    assert [n for _, n, _ in trace] == [9, 9, 9, 7, 7, 6, 6, 6, 5, 3, 3, 3]
    assert [t for _, _, t in trace] == [
        True,
        True,
        False,
        True,
        False,
        True,
        True,
        False,
        False,
        True,
        True,
        False,
    ]
    assert ref.train_chars(SENNRICH, 12) == [p for p, _, _ in trace]


def test_sennrich_merges_segment_unseen_words():
    """The paper's point: a word never seen in training ("lowest") splits into
    learned units; the marker keeps word-final "est</w>" apart from "est" inside
    a word. With the 10 merges printed by Algorithm 1 (replayed just above)."""
    merges = ref.train_chars(SENNRICH, 10, ties="first")
    assert ref.segment_chars("lowest", merges) == ["low", "est</w>"]
    assert ref.segment_chars("newer", merges) == ["new", "e", "r", "</w>"]
    assert ref.segment_chars("lowestly", merges) == ["low", "est", "l", "y", "</w>"]
    assert ref.segment_chars("low", merges, end_of_word=None) == ["low"]


def test_end_of_word_marker_keeps_suffixes_apart():
    """With the marker, word-final "st" (in best) becomes its own symbol
    st</w>, distinct from the "st" that starts "stop". Counts: (s,t)=3+1 first;
    then (b,e)=(e,st)=(st,</w>)=3 and ('st','</w>') is the greatest; then
    (b,e)=(e,st</w>)=3 and ('e','st</w>') > ('b','e')."""
    assert ref.train_chars({"best": 3, "stop": 1}, 3) == [
        ("s", "t"),
        ("st", "</w>"),
        ("e", "st</w>"),
    ]
    # without it the last merges join across what used to be the word end
    assert ref.train_chars({"best": 3, "stop": 1}, 3, end_of_word=None) == [
        ("s", "t"),
        ("e", "st"),
        ("b", "est"),
    ]


def test_pair_counts_count_overlapping_occurrences():
    assert ref.pair_counts({(b"a",) * 4: 3}) == Counter({(b"a", b"a"): 9})
    assert ref.pair_counts({(b"a", b"b"): 2, (b"b", b"a", b"b"): 1}) == Counter(
        {(b"a", b"b"): 3, (b"b", b"a"): 1}
    )


@pytest.mark.parametrize(
    "word, pair, want",
    [
        ("aaa", "aa", ["aa", "a"]),
        ("aaaa", "aa", ["aa", "aa"]),
        ("aaaaa", "aa", ["aa", "aa", "a"]),
        ("abab", "ab", ["ab", "ab"]),
        ("baab", "ab", ["b", "a", "ab"]),
        ("baab", "aa", ["b", "aa", "b"]),
        ("a", "aa", ["a"]),
    ],
)
def test_merge_word_left_to_right(word, pair, want):
    as_bytes = tuple(c.encode() for c in word)
    assert ref.merge_word(as_bytes, (pair[0].encode(), pair[1].encode())) == tuple(
        w.encode() for w in want
    )


def test_overlapping_pair_count_then_merge():
    # "aaaa" x1: (a,a) counts 3 when chosen, then words become (aa, aa) and
    # (aa,aa) counts 1.
    trace = ref.train_trace({b"aaaa": 1}, 5)
    assert trace == [((b"a", b"a"), 3, False), ((b"aa", b"aa"), 1, False)]


def test_tie_break_is_greatest_bytes_tuple():
    # all pairs count 1: (c,d) > (a,b); then (x,y) > (a,b)
    assert ref.train_from_counts({b"ab": 1, b"cd": 1, b"xy": 1}, 3) == [
        (b"x", b"y"),
        (b"c", b"d"),
        (b"a", b"b"),
    ]
    # Compared as a tuple: the left part decides first ...
    assert ref.best_pair({(b"a", b"z"): 2, (b"b", b"a"): 2}) == (b"b", b"a")
    # ... and a prefix is smaller (b"a" < b"ab"), as in Python.
    assert ref.best_pair({(b"ab", b"c"): 2, (b"a", b"bc"): 2}) == (b"ab", b"c")
    assert ref.best_pair({(b"x", b"a"): 2, (b"x", b"ab"): 2}) == (b"x", b"ab")
    # bytes order, not str order of the decoded text: 0xC3 (start of "é") > "z"
    assert ref.best_pair({(b"z", b"z"): 1, (b"\xc3", b"\xa9"): 1}) == (b"\xc3", b"\xa9")


def test_trace_flags_ties():
    trace = ref.train_trace({b"ab": 2, b"cd": 2, b"ef": 1}, 3)
    assert trace == [((b"c", b"d"), 2, True), ((b"a", b"b"), 2, False), ((b"e", b"f"), 1, False)]


def test_zero_counts_and_single_bytes_give_no_merge():
    assert ref.train_trace({b"ab": 0, b"c": 7, b"": 3}, 10) == []


def test_count_words_and_train_on_texts():
    counts = ref.count_words(["the cat<|endoftext|> the hat", "the"], "gpt2", ["<|endoftext|>"])
    assert counts == Counter({b"the": 2, b" cat": 1, b" the": 1, b" hat": 1})
    # words: "hug" 1, " hug" 2, " pug" 1 -> (u,g)=4, then (h,ug)=3 beats (" ",h)=2
    assert ref.train(["hug hug hug pug"], 2) == [(b"u", b"g"), (b"h", b"ug")]


# ---- pre-tokenization --------------------------------------------------------


def test_pretokenize_gpt2_examples():
    assert ref.pretokenize("Hello world! It's 2024...  ok\n") == [
        "Hello",
        " world",
        "!",
        " It",
        "'s",
        " 2024",
        "...",
        " ",
        " ok",
        "\n",
    ]


def test_pretokenize_special_tokens_longest_wins_and_dropped():
    specials = ["<|a|>", "<|a|><|b|>", "<|b|>"]
    assert ref.split_special("x<|a|><|b|>y<|a|>z<|b|>", specials) == ["x", "y", "z", ""]
    assert ref.pretokenize("x<|a|><|b|>y<|a|>z", "gpt2", specials) == ["x", "y", "z"]
    # a special token splits a pre-token that would span it
    assert ref.pretokenize("ab<|a|>cd", "gpt2", specials) == ["ab", "cd"]
    assert ref.pretokenize("ab<|a|>cd") == ["ab", "<|", "a", "|>", "cd"]


def test_pretokenize_presets_differ_where_expected():
    text = "I'LL pay 12345 now\r\n\r\n"
    assert ref.pretokenize(text, "gpt2") == ["I", "'", "LL", " pay", " 12345", " now", "\r\n\r\n"]
    assert ref.pretokenize(text, "cl100k") == [
        "I",
        "'LL",
        " pay",
        " ",
        "123",
        "45",
        " now",
        "\r\n\r\n",
    ]
    assert ref.pretokenize(text, "o200k") == ["I'LL", " pay", " ", "123", "45", " now", "\r\n\r\n"]


# ---- encoding ----------------------------------------------------------------


def test_bpe_merges_lowest_rank_first_leftmost_on_ties():
    ranks = {b"ab": 0, b"bc": 1, b"abc": 2}
    assert ref.bpe(b"abc", ranks) == [b"abc"]
    assert ref.bpe(b"bcab", ranks) == [b"bc", b"ab"]
    assert ref.bpe(b"aaa", {b"aa": 0}) == [b"aa", b"a"]


def test_encode_ranks_pairs_by_concatenated_bytes():
    # (ab, c) is not a merge, but its bytes b"abc" are the result of merge 2
    # (a, bc): tiktoken ranks a pair by the bytes it would make, so it merges.
    merges = [(b"a", b"b"), (b"b", b"c"), (b"a", b"bc")]
    ranks = {a + b: r for r, (a, b) in enumerate(merges)}
    assert ref.bpe(b"abcabc", ranks) == [b"abc", b"abc"]
    assert ref.encode("abcabc", merges) == [258, 258]
    tiktoken = pytest.importorskip("tiktoken")
    vocab = ref.default_vocab(merges)
    enc = tiktoken.Encoding(
        "t",
        pat_str=ref.PATTERNS["gpt2"],
        mergeable_ranks={b: i for i, b in vocab.items()},
        special_tokens={},
    )
    assert enc.encode("abcabc") == [258, 258]
    # Such a table encodes differently by pair rank (HF): the Tokenizer refuses
    # it, so that whatever it holds saves to files that load the same.
    with pytest.raises(ValueError, match="is not what the merges before it make"):
        bytepair.Tokenizer(vocab, merges)


def test_encode_looks_up_whole_pre_token_first():
    # b"xyz" is in the vocabulary but no merge makes it: BPE alone leaves
    # x|y|z, tiktoken looks the whole pre-token up first and finds it.
    vocab = ref.default_vocab([]) | {256: b"xyz"}
    assert ref.bpe(b"xyz", {}) == [b"x", b"y", b"z"]
    assert ref.encode("xyz xyz", [], vocab=vocab) == [256, 32, 120, 121, 122]
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.Encoding(
        "t",
        pat_str=ref.PATTERNS["gpt2"],
        mergeable_ranks={b: i for i, b in vocab.items()},
        special_tokens={},
    )
    assert enc.encode("xyz xyz") == [256, 32, 120, 121, 122]


def test_encode_special_tokens():
    merges = [(b"h", b"i")]
    specials = {"<|eot|>": 300, "<|eot|><|x|>": 301}
    assert ref.encode("hi<|eot|>hi<|eot|><|x|>", merges, special_tokens=specials) == [
        256,
        300,
        256,
        301,
    ]


@pytest.fixture(scope="module")
def small_tokenizer(corpus_text):
    """A tokenizer trained by the reference on 40 KB of TinyStories."""
    text = corpus_text("tinystories_v1_train_head.txt", 40_000)
    merges = ref.train([text], 120)
    return text, merges


def test_encode_equals_tiktoken_and_bytepair(small_tokenizer):
    tiktoken = pytest.importorskip("tiktoken")
    text, merges = small_tokenizer
    vocab = ref.default_vocab(merges)
    specials = {"<|endoftext|>": 256 + len(merges)}
    enc = tiktoken.Encoding(
        "reference-test",
        pat_str=ref.PATTERNS["gpt2"],
        mergeable_ranks={b: i for i, b in vocab.items()},
        special_tokens=specials,
    )
    tok = bytepair.Tokenizer(vocab, merges, specials, pattern="gpt2")
    samples = [
        text[:5000],
        "Once upon a time<|endoftext|>there was a dog's bone.  \n\n",
        "ünïcödé 😀 and 12345 spaces     here\t\ttabs",
    ]
    for s in samples:
        want = enc.encode(s, allowed_special="all")
        assert ref.encode(s, merges, "gpt2", specials) == want
        assert tok.encode(s, allowed_special="all") == want


def test_docstring_examples():
    """The >>> examples of the reference are part of its teaching text: they must run."""
    import doctest

    result = doctest.testmod(ref, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 15 and result.failed == 0
