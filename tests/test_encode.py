"""Encoding and decoding: ids identical to tiktoken's for the same ranks, pattern
and special tokens (docs/design.md, "Encoding").

References are built offline:
- GPT-2 from the released vocab.json / merges.txt (cs336 fixtures) as both a
  bytepair.Tokenizer and a tiktoken.Encoding; compared on every whole corpus file;
- tokenizers we train (gpt2 / cl100k / o200k patterns) against a tiktoken.Encoding
  with ``mergeable_ranks = {vocab[i]: i}`` (our ids are ranks), with our resolved
  pattern and with the pattern the installed tiktoken itself uses for that preset;
- hypothesis text over all Unicode planes plus the pieces the patterns care about.
"""

from __future__ import annotations

import functools
import io
import pickle
import random
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from _gpt2 import (  # noqa: E402
    EOT,
    EVAL_SLICES,
    PRESETS,
    assert_same_ids,
    gpt2_tokenizer,
    texts,
    tiktoken_for,
    tiktoken_gpt2,
    tiktoken_official_pattern,
    trained,
    with_surrogates,
)
from conftest import corpus_files, read_slice, read_text  # noqa: E402

import bytepair  # noqa: E402
import bytepair.encoding.text  # noqa: E402
import bytepair.tokenizer  # noqa: E402

_FUZZ = settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def fuzz(max_examples: int) -> settings:
    return settings(_FUZZ, max_examples=max_examples)


def byte_level(special_tokens=(), merges=(), pattern="gpt2") -> bytepair.Tokenizer:
    """A tokenizer over the 256 bytes plus the given merges (our id layout)."""
    vocab = {i: bytes([i]) for i in range(256)}
    for r, (a, b) in enumerate(merges):
        vocab[256 + r] = a + b
    return bytepair.Tokenizer(
        vocab, list(merges), special_tokens=list(special_tokens), pattern=pattern
    )


# ---- GPT-2: every whole corpus file -------------------------------------------


def test_gpt2_files_load_with_endoftext_at_50256():
    tok = gpt2_tokenizer()
    assert tok.special_tokens == {EOT: 50256}
    assert tok.vocab_size == 50257 and len(tok.merges) == 50000
    assert tok.vocab[50255] == b" gazed" and tok.vocab[220] == b" " and tok.vocab[0] == b"!"
    assert tok.encode("Hello world") == [15496, 995]  # the well-known GPT-2 ids


@pytest.mark.slow
@pytest.mark.parametrize("rel", corpus_files() or ["<corpora absent>"])
def test_gpt2_matches_tiktoken_on_whole_corpus_file(rel):
    """encode_ordinary of the whole file (up to 66 MB) equals tiktoken's GPT-2; the
    two encoders run at the same time (both release the GIL)."""
    text = read_text(rel)
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    with ThreadPoolExecutor(1) as pool:
        reference = pool.submit(enc.encode_ordinary, text)
        ours = tok.encode_ordinary(text)
        theirs = reference.result()
    assert_same_ids(ours, theirs, text=text, decode_bytes=enc.decode_bytes, label=f"GPT-2 on {rel}")
    assert tok.decode_bytes(ours) == text.encode("utf-8")


@pytest.mark.parametrize(
    "rel", ["tinystories_v1_valid_head.txt", "shakespeare.txt", "cs336/tinystories_sample.txt"]
)
def test_gpt2_matches_tiktoken_with_endoftext_between_documents(rel):
    text = read_text(rel)
    if EOT not in text:
        text = EOT.join(text.split("\n\n"))
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    ours = tok.encode(text, allowed_special="all")
    assert_same_ids(
        ours,
        enc.encode(text, allowed_special="all"),
        text=text,
        decode_bytes=enc.decode_bytes,
        label=rel,
    )
    assert ours.count(50256) == text.count(EOT) > 0
    assert tok.encode(text, allowed_special={EOT}) == ours
    assert (
        tok.encode(text, disallowed_special=())
        == enc.encode(text, disallowed_special=())
        == tok.encode_ordinary(text)
    )
    with pytest.raises(ValueError, match="allowed_special"):
        tok.encode(text)


@pytest.mark.parametrize(
    "rel",
    [
        "cs336/special_token_double_newlines_non_whitespace.txt",
        "cs336/special_token_trailing_newlines.txt",
    ],
)
def test_gpt2_cs336_special_token_fixtures(rel):
    text = read_text(rel)
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.decode(tok.encode(text, allowed_special="all")) == text


# ---- GPT-2: generated text --------------------------------------------------------


def check_against(tok: bytepair.Tokenizer, enc, text: str) -> None:
    """ids equal tiktoken's for encode_ordinary, allowed_special="all",
    disallowed_special=(), and the default raises exactly when tiktoken's does."""
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=())
    if any(s in text for s in tok.special_tokens):
        with pytest.raises(ValueError, match="allowed_special"):
            tok.encode(text)
        with pytest.raises(ValueError):
            enc.encode(text)
    else:
        assert tok.encode(text) == enc.encode(text)


@fuzz(400)
@given(text=texts)
def test_gpt2_matches_tiktoken_on_generated_text(text):
    check_against(gpt2_tokenizer(), tiktoken_gpt2(), text)


@fuzz(150)
@given(text=texts)
def test_gpt2_matches_tiktoken_with_tiktokens_own_gpt2_pattern(text):
    """tiktoken ships GPT-2's pattern rewritten (possessive, ``\\s++$``); same ids."""
    enc = tiktoken_gpt2(tiktoken_official_pattern("gpt2"))
    assert gpt2_tokenizer().encode_ordinary(text) == enc.encode_ordinary(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "  ",
        "\n",
        " \n ",
        "a  b",
        "a \n\n b",
        "it's I'LL we've",
        "   leading",
        "trailing   ",
        "\u00a0\u00a0x",
        "x\u3000\u3000y",
        "\r\n\r\n",
        "12345678901234567890",
        "1,000,000.00",
        "🤗🤗 👍🏽",
        "<|endoftext|><|endoftext|>",
        "<|endoftext",
        "\x00\x01\x7f",
        "\ufeffBOM",
        "a'sb",
        "'s's's",
        " " * 10_000 + "x",
        "\n" * 5_000,
        " \t" * 3_000 + "\n",
        "9" * 10_000,
        "!" * 10_000,
        "\u00e9" * 10_000,
    ],
)
def test_gpt2_matches_tiktoken_on_edge_cases(text):
    check_against(gpt2_tokenizer(), tiktoken_gpt2(), text)


# ---- tokenizers we train ---------------------------------------------------------


@pytest.mark.parametrize("pattern", PRESETS)
def test_trained_ids_are_ranks(pattern):
    """The premise of the tiktoken comparison: ids 0..255 are bytes, 256 + r is merge r,
    special tokens follow the merges (docs/design.md id layout)."""
    tok = trained(pattern)
    assert all(tok.vocab[i] == bytes([i]) for i in range(256))
    assert all(tok.vocab[256 + r] == a + b for r, (a, b) in enumerate(tok.merges))
    assert tok.special_tokens == {EOT: 256 + len(tok.merges)} and len(tok.merges) == 2000 - 257


@pytest.mark.parametrize("rel,start", EVAL_SLICES)
@pytest.mark.parametrize("pattern", PRESETS)
def test_trained_matches_tiktoken_on_corpus_slices(pattern, rel, start):
    """~1 MB of held-out text, against our pattern and tiktoken's own preset pattern."""
    tok = trained(pattern)
    text = read_slice(rel, start, 1_000_000)
    ours = tok.encode_ordinary(text)
    for pat_str in (tok.pattern_regex, tiktoken_official_pattern(pattern)):
        enc = tiktoken_for(tok, pat_str)
        assert_same_ids(
            ours,
            enc.encode_ordinary(text),
            text=text,
            decode_bytes=enc.decode_bytes,
            label=f"{pattern} tokenizer on {rel}@{start}, reference pattern {pat_str[:30]!r}...",
        )
    assert tok.decode(ours) == text
    docs = EOT.join(text[:200_000].split("\n\n"))
    enc = tiktoken_for(tok)
    assert tok.encode(docs, allowed_special="all") == enc.encode(docs, allowed_special="all")


@pytest.mark.parametrize("pattern", PRESETS)
def test_trained_matches_tiktoken_on_generated_text(pattern):
    tok = trained(pattern)
    enc = tiktoken_for(tok)
    official = tiktoken_for(tok, tiktoken_official_pattern(pattern))

    @fuzz(250)
    @given(text=texts)
    def check(text):
        check_against(tok, enc, text)
        assert tok.encode_ordinary(text) == official.encode_ordinary(text)

    check()


# ---- decode -------------------------------------------------------------------------


@fuzz(300)
@given(text=texts)
def test_decode_encode_round_trip(text):
    for tok in (gpt2_tokenizer(), trained("o200k")):
        assert tok.decode(tok.encode(text, disallowed_special=())) == text
        assert tok.decode(tok.encode(text, allowed_special="all")) == text
        assert tok.decode_bytes(tok.encode_ordinary(text)) == text.encode("utf-8")


@fuzz(200)
@given(text=with_surrogates)
def test_lone_surrogates_like_tiktoken(text):
    """tiktoken replaces lone surrogates by U+FFFD (and joins a surrogate pair
    written as two code points); ids and decoded text must equal tiktoken's."""
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    ours = tok.encode(text)
    assert ours == enc.encode(text)
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    assert tok.encode_batch([text, text]) == [ours, ours]
    assert tok.decode(ours) == enc.decode(ours)


def test_lone_surrogate_examples():
    tok = gpt2_tokenizer()
    assert tok.decode(tok.encode("a\ud800b")) == "a\ufffdb"
    assert tok.encode("\ud83d\ude00") == tok.encode("😀")
    assert tok.decode(tok.encode("x\udfff")) == "x\ufffd"


@pytest.mark.parametrize("bad", [-1, -(2**31), 50257, 50300, 2**31, 2**32, 2**32 + 97, 2**63 - 1])
def test_decode_invalid_id_raises_value_error_naming_it(bad):
    tok = gpt2_tokenizer()
    for ids in ([bad], [15496, bad, 995]):
        with pytest.raises(ValueError, match=str(bad)):
            tok.decode(ids)
        with pytest.raises(ValueError, match=str(bad)):
            tok.decode_bytes(ids)
    small = byte_level(["<|x|>"])
    assert small.special_tokens == {"<|x|>": 256}
    with pytest.raises(ValueError, match="257"):
        small.decode([97, 257])
    assert small.decode([97, 256]) == "a<|x|>"


@pytest.mark.parametrize("bad", [2**64, 2**70, -(2**70)])
def test_decode_id_beyond_i64_raises_value_error(bad):
    """Regression: an id outside the i64 range used to raise OverflowError ("Python
    int too large to convert to C long") instead of ValueError naming the id."""
    tok = byte_level(["<|x|>"])
    with pytest.raises(ValueError, match=str(bad)):
        tok.decode([97, bad])
    with pytest.raises(ValueError, match=str(bad)):
        tok.decode_bytes([bad])


@pytest.mark.parametrize("bad", [-5, 2**32, 2**70])
def test_tokenizer_rejects_out_of_range_ids(bad):
    """Regression: used to raise OverflowError from the core."""
    with pytest.raises(ValueError, match=str(bad)):
        bytepair.Tokenizer({i: bytes([i]) for i in range(256)} | {bad: b"xy"}, [])
    with pytest.raises(ValueError, match=str(bad)):
        bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], {"<|x|>": bad})


def test_ids_far_beyond_the_vocabulary_encode_and_decode():
    """Ids are handed out as shared Python ints for the dense id range; a special
    token placed far beyond it (2**31 - 1 here) must come back as the same number."""
    far = 2**31 - 1
    tok = bytepair.Tokenizer(
        {i: bytes([i]) for i in range(256)} | {300: b"ab"}, [(b"a", b"b")], {"<|far|>": far}
    )
    for ids in (
        tok.encode("ab<|far|>a", allowed_special="all"),
        tok.encode_batch(["ab<|far|>a"] * 3, num_threads=2, allowed_special="all")[2],
    ):
        assert ids == [300, far, 97] and all(type(i) is int for i in ids)
    assert tok.decode([300, far, 97]) == "ab<|far|>a"


def test_decode_reads_shared_ints_fresh_ints_and_int_like_items_alike():
    """Decoding finds the tokens of the ints encode shares by their address
    (src/shared_ints.rs), once the table is built: short tokens from CPython's
    small-int array or the address table, longer ones (over 11 bytes) the long
    way. Every item kind must
    give the vocabulary's bytes: shared ints, equal ints that are other objects,
    bools and int subclasses (which take the general conversion)."""

    class Id(int):
        pass

    for tok in (gpt2_tokenizer(), trained("o200k")):
        shared = []
        for i, token in sorted(tok.vocab.items()):
            try:
                shared += tok.encode_ordinary(token.decode("utf-8"))
            except UnicodeDecodeError:
                pass
        assert len(set(shared)) > 0.9 * len(tok.vocab)
        assert any(len(tok.vocab[i]) > 11 for i in shared) and any(i < 256 for i in shared)
        want = b"".join(tok.vocab[i] for i in shared)
        mixed = [Id(i) if k % 3 == 0 else i for k, i in enumerate(shared)] + [True, False]
        # Before and after the address table exists: it is built once decodes
        # have used 4 ids per shared int (`CoreBPE::tokens_by_address`).
        for before_table in (True, False):
            assert tok.decode_bytes(shared) == want
            assert tok.decode_bytes([int(str(i)) for i in shared]) == want
            assert tok.decode_bytes(mixed) == want + tok.vocab[1] + tok.vocab[0]
            assert tok.decode(shared) == want.decode("utf-8", errors="replace")
            if before_table:
                assert tok.decode_bytes(shared * 8) == want * 8


def test_decode_partial_utf8_gives_replacement_character():
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    euro = "€".encode()  # e2 82 ac
    ids = [enc.encode_single_token(bytes([b])) for b in euro]
    assert tok.decode(ids) == "€"
    assert tok.decode(ids[:1]) == "\ufffd"
    assert tok.decode(ids[:2]) == enc.decode(ids[:2]) == "\ufffd"
    assert tok.decode(ids[1:]) == enc.decode(ids[1:])
    assert tok.decode(ids[:2] + tok.encode("ok")) == "\ufffdok"
    assert tok.decode_bytes(ids[:2]) == b"\xe2\x82"
    assert tok.decode(ids[:2], errors="ignore") == ""
    with pytest.raises(UnicodeDecodeError):
        tok.decode(ids[:2], errors="strict")
    # Tokens that split a character: each alone is not UTF-8, together they are.
    emoji = tok.encode("🤗")
    assert len(emoji) > 1 and tok.decode(emoji) == "🤗"
    assert all(tok.decode([i]) == enc.decode([i]) for i in emoji)
    assert b"".join(tok.decode_bytes([i]) for i in emoji) == "🤗".encode()


def test_decode_special_token_gives_its_text():
    tok = gpt2_tokenizer()
    assert tok.decode([50256]) == EOT and tok.decode_bytes([50256]) == EOT.encode()
    assert tok.decode([]) == "" and tok.decode_bytes([]) == b""


# ---- special tokens -------------------------------------------------------------------


def test_special_token_text_raises_by_default():
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    text = "héllo wörld <|endoftext|> more"
    with pytest.raises(ValueError) as info:
        tok.encode(text)
    msg = str(info.value)
    assert "allowed_special" in msg and EOT in msg
    assert f"offset {text.index(EOT)}" in msg  # a character offset, not a byte offset
    with pytest.raises(ValueError):
        enc.encode(text)
    with pytest.raises(ValueError, match="allowed_special"):
        tok.encode_batch(["fine", text])
    with pytest.raises(ValueError, match="allowed_special"):
        list(tok.encode_iterable([text]))
    # encode_ordinary never checks: the string is plain text.
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    assert 50256 not in tok.encode_ordinary(text)


def test_allowed_special_all_subset_and_disallowed():
    base = trained("gpt2")
    specials = ["<|a|>", "<|b|>", EOT]
    tok = bytepair.Tokenizer(
        {i: b for i, b in base.vocab.items() if i not in base.special_tokens.values()},
        base.merges,
        specials,
    )
    enc = tiktoken_for(tok)
    a, b, e = (tok.special_tokens[s] for s in specials)
    text = "x <|a|> y<|b|>z<|a|>"
    plain = lambda s: tok.encode_ordinary(s)  # noqa: E731

    assert (
        tok.encode(text, allowed_special="all")
        == enc.encode(text, allowed_special="all")
        == (plain("x ") + [a] + plain(" y") + [b] + plain("z") + [a])
    )
    assert tok.encode(text, allowed_special={"<|a|>", "<|b|>"}) == tok.encode(
        text, allowed_special="all"
    )
    # A subset: the other special tokens are disallowed by default...
    with pytest.raises(ValueError, match="<\\|b\\|>"):
        tok.encode(text, allowed_special={"<|a|>"})
    with pytest.raises(ValueError):
        enc.encode(text, allowed_special={"<|a|>"})
    # ...unless the check is switched off: then they are text.
    expected = plain("x ") + [a] + plain(" y<|b|>z") + [a]
    assert tok.encode(text, allowed_special={"<|a|>"}, disallowed_special=()) == expected
    assert enc.encode(text, allowed_special={"<|a|>"}, disallowed_special=()) == expected
    # disallowed_special=() encodes every special-token string as text.
    assert (
        tok.encode(text, disallowed_special=())
        == plain(text)
        == enc.encode(text, disallowed_special=())
    )
    # Only the named tokens are checked.
    assert tok.encode(text, disallowed_special={EOT}) == plain(text)
    with pytest.raises(ValueError, match="<\\|a\\|>"):
        tok.encode(text, disallowed_special={"<|a|>"})
    # Allowed wins over disallowed for the same token.
    assert tok.encode(text, allowed_special="all", disallowed_special="all") == tok.encode(
        text, allowed_special="all"
    )
    assert e not in tok.encode(text, allowed_special="all")


@pytest.mark.parametrize("order", [["<|a|>", "<|a|><|b|>"], ["<|a|><|b|>", "<|a|>"]])
def test_overlapping_special_tokens_longest_wins(order):
    tok = byte_level(order, merges=[(b"x", b"y")])
    a, ab = tok.special_tokens["<|a|>"], tok.special_tokens["<|a|><|b|>"]
    text = "xy<|a|><|b|>xy<|a|>z<|a|><|a|><|b|><|b|>"
    plain = tok.encode_ordinary
    expected = [256] + [ab] + [256] + [a] + plain("z") + [a, ab] + plain("<|b|>")
    assert tok.encode(text, allowed_special="all") == expected
    assert tok.decode(expected) == text
    # Only the short one allowed: the long one is disallowed by default...
    with pytest.raises(ValueError, match="allowed_special"):
        tok.encode(text, allowed_special={"<|a|>"})
    # ...and as text when not checked: "<|a|>" is still found inside it.
    assert tok.encode("<|a|><|b|>", allowed_special={"<|a|>"}, disallowed_special=()) == [
        a
    ] + plain("<|b|>")
    assert tok.encode(
        "q<|a|><|b|>", allowed_special={"<|a|><|b|>"}, disallowed_special=()
    ) == plain("q") + [ab]


def test_overlapping_special_tokens_with_shared_prefix():
    tok = byte_level(["<|end|>", "<|endoftext|>", "<|endofprompt|>"])
    ids = tok.special_tokens
    text = "<|endoftext|><|end|><|endofprompt|><|endof"
    assert tok.encode(text, allowed_special="all") == (
        [ids["<|endoftext|>"], ids["<|end|>"], ids["<|endofprompt|>"]]
        + tok.encode_ordinary("<|endof")
    )


def test_unknown_special_token_in_arguments_is_rejected():
    with pytest.raises(ValueError):
        gpt2_tokenizer().encode("x", allowed_special={"<|nope|>"})


# ---- long pieces without spaces --------------------------------------------------------


def _letters(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n))


@pytest.mark.parametrize(
    "name,make",
    [
        ("a*1M", lambda: "a" * 1_000_000),
        ("random letters 1M", lambda: _letters(1_000_000, 1)),
        ("'ab'*500k", lambda: "ab" * 500_000),
        (
            "CJK 300k chars",
            lambda: "".join(random.Random(2).choices("的一是不了人我在有他这中大来上", k=300_000)),
        ),
    ],
)
def test_long_piece_without_spaces(name, make):
    text = make()
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    start = time.perf_counter()
    ours = tok.encode(text)
    elapsed = time.perf_counter() - start
    start = time.perf_counter()
    theirs = enc.encode(text)
    reference = time.perf_counter() - start
    # Relative to tiktoken in the same run (O(L log L) both), so a busy machine does not matter.
    assert elapsed < max(3.0, 5 * reference), (
        f"{name}: {elapsed:.1f} s (tiktoken {reference:.1f} s)"
    )
    assert_same_ids(ours, theirs, text=text, decode_bytes=enc.decode_bytes, label=name)
    assert tok.decode(ours) == text
    small = trained("o200k")
    assert small.encode(text) == tiktoken_for(small).encode(text)


# ---- batch, streaming, pickling ----------------------------------------------------------


def test_encode_batch_equals_encode_on_corpus():
    tok = gpt2_tokenizer()
    docs = read_slice("enwiki.txt", 30_000_000, 1_000_000).split("</doc>")
    docs += ["", " ", "\ud800x", "a" * 50_000, read_slice("multilingual.txt", 3_000_000, 200_000)]
    expected = [tok.encode(d) for d in docs]
    for threads in (None, 1, 2, 7):
        assert tok.encode_batch(docs, num_threads=threads) == expected
    with_eot = [d + EOT for d in docs[:20]]
    assert tok.encode_batch(with_eot, allowed_special="all") == [
        tok.encode(d, allowed_special="all") for d in with_eot
    ]
    assert tok.encode_batch(with_eot, disallowed_special=()) == [
        tok.encode_ordinary(d) for d in with_eot
    ]
    assert tok.encode_batch([]) == []


def test_encode_batch_reports_the_first_failing_text():
    """Texts are shared out to threads one at a time, and every text is encoded
    even after an error, so the error is always that of the lowest index."""
    tok = gpt2_tokenizer()
    docs = [f"doc {i} " * 200 for i in range(400)]
    for i, pad in ((137, 11), (138, 3), (399, 0)):
        docs[i] = "x" * pad + EOT
    for threads in (1, 2, 3):
        with pytest.raises(ValueError, match="character offset 11[.]"):
            tok.encode_batch(docs, num_threads=threads)


def test_encode_ordinary_batch_matches_tiktoken():
    """tiktoken's encode_ordinary_batch: special-token strings are plain text."""
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    docs = read_slice("code.txt", 2_000_000, 300_000).split("\n\n")
    docs = [d + EOT for d in docs] + ["", EOT + EOT]
    got = tok.encode_ordinary_batch(docs, num_threads=2)
    assert got == enc.encode_ordinary_batch(docs, num_threads=2)
    assert got[-1] != [tok.special_tokens[EOT]] * 2


@fuzz(60)
@given(batch=st.lists(texts, max_size=8), threads=st.sampled_from([None, 1, 3]))
def test_encode_batch_equals_encode_on_generated_text(batch, threads):
    tok = trained("cl100k")
    assert tok.encode_batch(batch, num_threads=threads, allowed_special="all") == [
        tok.encode(t, allowed_special="all") for t in batch
    ]


@pytest.mark.parametrize(
    "rel,start",
    [
        ("enwiki.txt", 40_000_000),
        ("multilingual.txt", 1_000_000),
        ("code.txt", 5_000_000),
        ("shakespeare.txt", 0),
    ],
)
def test_encode_iterable_over_file_object(tmp_path, rel, start):
    tok = gpt2_tokenizer()
    text = read_slice(rel, start, 1_500_000)
    text = text.replace("\n\n", "\n\n" + EOT, 50)
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    expected = tok.encode(text, allowed_special="all")
    with open(path, encoding="utf-8", newline="") as f:
        got = list(tok.encode_iterable(f, allowed_special="all"))
    assert_same_ids(
        got, expected, text=text, decode_bytes=tok.decode_bytes, label=f"encode_iterable {rel}"
    )
    with open(path, encoding="utf-8", newline="") as f:
        assert list(tok.encode_iterable(f, disallowed_special=())) == tok.encode_ordinary(text)


# Text where newlines sit next to everything the patterns treat specially, so
# that a cut made by encode_iterable in the wrong place changes the pre-tokens.
_STREAM_LINES = [
    "a\n b",
    "x\n\ny",
    "it\n's",
    "!\n/",
    "!\n//x",
    ".\n/",
    "?\n\n/",
    "a\n/b",
    "a\r\nb",
    "é\nè",
    "word  \nnext",
    "\n\n\n",
    "  \n  ",
    "1\n2",
    "tab\t\nz",
    "x\n\u00a0y",
    "\u3000\n\u3000",
    "<|endoftext|>\n<|endoftext|>",
    "end\n",
    "q\n'LL",
    "z\n?!",
    ")\n}",
    "-\n'",
    ";\n\r\n",
    "x\n-1",
    "=\n=",
    # and letters next to punctuation, the cut for text without newlines
    "it's",
    "x.y",
    "b'LL",
    "Ab,'",
    "z\u0301.",
    "a\u00e9.",
    "x<|endoftext|>.y",
    "w)(",
    "A_b",
    "k'",
    "m-1",
    "u/ '",
]


def _stream_text(rng: random.Random, n: int) -> str:
    return "".join(
        rng.choice(_STREAM_LINES) + rng.choice(["", " ", "x", "\n", "Ab", "/", "!"])
        for _ in range(n)
    )


@functools.cache
def _stream_tokenizer(pattern: str) -> bytepair.Tokenizer:
    """Trained on this kind of text, so tokens span the newline neighbourhoods and a
    wrong cut shows up in the ids, not only in the pre-tokens."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "no pair left to merge"
        )  # every pair gets merged: fine here
        return bytepair.train_from_iterator(
            [_stream_text(random.Random(0), 30_000)], 1200, special_tokens=[EOT], pattern=pattern
        )


@fuzz(40)
@given(
    seed=st.integers(0, 2**32 - 1),
    cuts=st.lists(st.integers(1, 3000), min_size=1, max_size=50),
    pattern=st.sampled_from(PRESETS),
    block=st.sampled_from([1, 37, 500, None]),
)
def test_encode_iterable_equals_encode_on_arbitrary_chunks(seed, cuts, pattern, block):
    """Any chunking of the input gives the ids of the whole text. `block` shrinks
    encode_iterable's internal block size (private knob, if present) so the
    stream is cut at nearly every candidate newline."""
    text = _stream_text(random.Random(seed), 6_000 if block else 20_000)
    chunks, pos, k = [], 0, 0
    while pos < len(text):
        step = cuts[k % len(cuts)]
        chunks.append(text[pos : pos + step])
        pos, k = pos + step, k + 1
    tok = _stream_tokenizer(pattern)
    expected = tok.encode(text, allowed_special="all")
    with mock.patch.object(bytepair.encoding.text, "STREAM_BLOCK_CHARS", block or 1 << 16):
        got = list(tok.encode_iterable(iter(chunks), allowed_special="all"))
    assert_same_ids(
        got, expected, text=text, decode_bytes=tok.decode_bytes, label=f"{pattern} encode_iterable"
    )


def test_encode_iterable_without_safe_cuts_and_is_lazy():
    tok = gpt2_tokenizer()
    line = "这是一个没有空格的中文句子。" * 3 + "\n"
    text = line * 20_000
    assert list(tok.encode_iterable(io.StringIO(text))) == tok.encode(text)

    def endless():
        while True:
            yield "some text here\n"

    it = tok.encode_iterable(endless())
    first = [next(it) for _ in range(10)]
    assert first == tok.encode("some text here\n" * 3)[:10]


@pytest.mark.parametrize(
    "specials, pattern, message",
    [
        ({"<a>": 300, "<b>": 300}, "gpt2", "special tokens '<a>' and '<b>' both have id 300"),
        (["<\ud800>"], "gpt2", "special token '<\\ud800>' holds a lone surrogate at index 1"),
        ([], "a|\udfff", "pattern 'a|\\udfff' holds a lone surrogate at index 2"),
    ],
)
def test_tokenizer_rejects_ambiguous_or_unencodable_specials_and_patterns(
    specials, pattern, message
):
    with pytest.raises(ValueError) as e:
        bytepair.Tokenizer(
            {i: bytes([i]) for i in range(256)}, [], special_tokens=specials, pattern=pattern
        )
    assert str(e.value) == message


@pytest.mark.parametrize("pattern", PRESETS)
def test_encode_blocks_cuts_a_line_without_whitespace(pattern):
    """1 MB of words glued together (no whitespace at all, as in minified text)
    streams in blocks of about 64K characters, cut between a letter and
    punctuation, with the ids of one encode call."""
    text = "".join(read_slice("enwiki.txt", 20_000_000, 1_300_000).split())[:1_000_000]
    tok = _stream_tokenizer(pattern)
    blocks = list(tok.encode_blocks(iter([text[i : i + 4096] for i in range(0, len(text), 4096)])))
    assert len(blocks) >= 10, "the stream was not cut: memory would grow with the line"
    import numpy as np

    assert np.concatenate(blocks).tolist() == tok.encode_ordinary(text)


@pytest.mark.parametrize("which", ["gpt2", "trained-o200k"])
def test_pickle_round_trip(which):
    tok = gpt2_tokenizer() if which == "gpt2" else trained("o200k")
    clone = pickle.loads(pickle.dumps(tok))
    assert clone is not tok
    assert (clone.vocab, clone.merges, clone.special_tokens, clone.pattern) == (
        tok.vocab,
        tok.merges,
        tok.special_tokens,
        tok.pattern,
    )
    text = read_slice("multilingual.txt", 15_000_000, 300_000) + EOT + "tail"
    assert clone.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    with pytest.raises(ValueError, match="allowed_special"):
        clone.encode(text)
    assert clone.decode(tok.encode_ordinary(text)) == text


def test_encode_to_numpy_equals_encode_and_tiktoken():
    import numpy as np

    tok = bytepair.train_from_iterator(
        ["hello world, hello numpy <|endoftext|>"] * 20,
        300,
        special_tokens=["<|endoftext|>"],
        progress=False,
    )
    text = "hello numpy world <|endoftext|>"
    ids = tok.encode_to_numpy(text, allowed_special="all")
    assert ids.dtype == np.uint32 and ids.tolist() == tok.encode(text, allowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode_to_numpy(text)
    enc = tok.to_tiktoken()
    assert ids.tolist() == enc.encode_to_numpy(text, allowed_special="all").tolist()


def test_encode_to_numpy_arrays_own_their_ids():
    """The array takes over the core's buffer: it outlives the tokenizer and
    the next call (which reuses no buffer it holds), and it is writeable."""
    import gc

    tok = bytepair.train_from_iterator(["hello world, hello numpy"] * 20, 300, progress=False)
    texts = ["hello world " * 1000, "numpy " * 3000, ""]
    arrays = [tok.encode_to_numpy(t) for t in texts]
    want = [tok.encode(t) for t in texts]
    del tok
    gc.collect()
    assert [a.tolist() for a in arrays] == want
    arrays[0][0] = 7
    assert arrays[0][0] == 7 and arrays[1].tolist() == want[1]


def test_encode_to_numpy_on_threads_gives_the_ids_of_one_thread():
    """A text of several segments encoded on two threads: the same ids, and
    the same error (naming the same offset) for a disallowed special token in
    its last segment."""
    import numpy as np

    rng = random.Random(5)
    words = [
        "".join(rng.choice("abcdefghijklmnopé\n") for _ in range(rng.randint(1, 12)))
        for _ in range(5000)
    ]
    text = " ".join(rng.choice(words) for _ in range(500_000))
    tok = bytepair.train_from_iterator([text[:200_000]], 1000, special_tokens=[EOT], progress=False)
    assert len(text.encode()) > 3 << 20, "several segments of 1 MiB"
    one = tok.encode_to_numpy(text, allowed_special="all")
    assert np.array_equal(tok.encode_to_numpy(text, allowed_special="all", num_threads=2), one)
    assert np.array_equal(tok.encode_to_numpy(text, allowed_special="all", num_threads=None), one)
    assert one.tolist() == tok.encode(text, allowed_special="all")
    late = text + " one more " + EOT
    errors = []
    for threads in (1, 2):
        with pytest.raises(ValueError, match="disallowed special token") as info:
            tok.encode_to_numpy(late, num_threads=threads)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_cache_budget_is_a_setting_and_a_small_one_gives_the_same_ids():
    """A budget rounds down to a power of two (at least 1 MiB); caches made
    under a small one sweep often, and the ids do not change."""
    import random
    import threading

    old = bytepair.cache_budget()
    assert old == 128 << 20, "the documented default"
    rng = random.Random(3)
    words = [
        "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 30))) for _ in range(40_000)
    ]
    text = " ".join(words)
    tok = bytepair.train_from_iterator([text[:200_000]], 600, progress=False)
    want = tok.encode(text)
    try:
        assert bytepair.set_cache_budget(3 << 20) == 2 << 20
        assert bytepair.set_cache_budget(0) == 1 << 20 == bytepair.cache_budget()
        got = []
        thread = threading.Thread(target=lambda: got.append(tok.encode(text)))  # fresh caches
        thread.start()
        thread.join()
        assert got == [want]
    finally:
        bytepair.set_cache_budget(old)
    with pytest.raises(ValueError, match="nbytes must be >= 0, got -1"):
        bytepair.set_cache_budget(-1)
    with pytest.raises(TypeError, match="must be an int, got str"):
        bytepair.set_cache_budget("1G")
