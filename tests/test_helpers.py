"""The everyday helpers: offsets, streaming decode, raw
bytes, counting and cutting, and tiktoken's small helpers, each checked
against the tool that owns the idea (tiktoken, HF tokenizers) on the corpora
and on generated text."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from _gpt2 import (  # noqa: E402
    EOT,
    gpt2_tokenizer,
    tiktoken_gpt2,
)
from conftest import read_slice  # noqa: E402

import bytepair  # noqa: E402
from bytepair.encoding.text import replace_surrogates  # noqa: E402

FUZZ = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
# Text that splits characters between tokens: accents, CJK, emoji, specials.
texts = st.lists(st.sampled_from(list("ab é日本語😀\n'sX1") + [EOT, "\ud800"]), max_size=40).map(
    "".join
)
SLICES = (("enwiki.txt", 7_000_000), ("multilingual.txt", 3_000_000), ("code.txt", 1_000_000))


@pytest.fixture(scope="module")
def small() -> bytepair.Tokenizer:
    """A tokenizer whose merges split multi-byte characters (no corpora needed)."""
    return bytepair.train_from_iterator(
        ["日本語 é café naïve 😀 it's"] * 50, 280, special_tokens=[EOT], progress=False
    )


# ---- 1. offsets --------------------------------------------------------------------


@pytest.mark.parametrize("rel, start", SLICES)
def test_decode_with_offsets_equals_tiktoken(rel, start):
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    ids = tok.encode(read_slice(rel, start, 200_000))
    assert tok.decode_with_offsets(ids) == enc.decode_with_offsets(ids)


@pytest.mark.parametrize("rel, start", SLICES)
def test_encode_with_offsets_equals_hf(tmp_path, rel, start):
    tokenizers = pytest.importorskip("tokenizers")
    tok = gpt2_tokenizer()
    tok.save(tmp_path / "tok.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tok.json"))
    text = read_slice(rel, start, 100_000) + EOT + "tail 日本"
    ids, offsets = tok.encode_with_offsets(text)
    encoding = hf.encode(text, add_special_tokens=False)
    assert ids == encoding.ids
    assert offsets == encoding.offsets


@FUZZ
@given(texts)
def test_offsets_cover_the_text_in_order(small, text):
    ids, offsets = small.encode_with_offsets(text)
    clean = replace_surrogates(text)  # what encode encodes
    assert len(offsets) == len(ids)
    if ids:
        assert offsets[0][0] == 0 and offsets[-1][1] == len(text)
    for (s0, e0), (s1, e1) in zip(offsets, offsets[1:]):
        assert (
            s0 < e0
            and s1 >= s0
            and s1 <= e0 <= e1
            and (s1 == e0 or (s1, e1) == (s0, e0) or s1 == s0)
        )
    for i, (s, e) in zip(ids, offsets):
        assert small.decode_single_token_bytes(i) in clean[s:e].encode("utf-8")
    text_back, starts = small.decode_with_offsets(ids)
    assert starts == [s for s, _ in offsets] and text_back == clean


# ---- 2. streaming decode -------------------------------------------------------------


@FUZZ
@given(texts)
def test_decode_stream_joins_to_decode_without_replacement_characters(small, text):
    ids = small.encode(text, allowed_special="all")
    stream = small.decode_stream()
    pieces = [stream.step(i) for i in ids]
    joined = "".join(p for p in pieces if p is not None)
    assert joined == small.decode(ids)
    if "\ud800" not in text:
        assert "\ufffd" not in joined
    skipped = small.decode_stream(skip_special_tokens=True)
    assert "".join(p for p in map(skipped.step, ids) if p) == small.decode(ids).replace(EOT, "")


def test_decode_stream_waits_for_a_split_character(small):
    ids = small.encode_ordinary("🙂")
    assert len(ids) > 1
    stream = small.decode_stream()
    assert [stream.step(i) for i in ids] == [None] * (len(ids) - 1) + ["🙂"]


# ---- 3. raw bytes ---------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=60) | texts.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_encode_bytes_round_trips_any_bytes(small, data):
    ids = small.encode_bytes(data)
    assert small.decode_bytes(ids) == data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert ids == small.encode_ordinary(text)


def test_encode_of_bytes_names_encode_bytes(small):
    for method in (small.encode, small.encode_ordinary, small.encode_to_numpy, small.count_tokens):
        with pytest.raises(TypeError, match="encode_bytes"):
            method(b"hello")
    with pytest.raises(TypeError, match="encode"):
        small.encode_bytes("hello")


# ---- 4. counting and cutting ----------------------------------------------------------


@FUZZ
@given(texts, st.integers(0, 30))
def test_max_tokens_keeps_a_prefix_cut_between_characters(small, text, n):
    full = small.encode(text, allowed_special="all")
    assert small.count_tokens(text, allowed_special="all") == len(full)
    cut = small.encode(text, allowed_special="all", max_tokens=n)
    assert cut == full[: len(cut)] and len(cut) <= n
    assert len(cut) >= min(n, len(full)) - 3  # a character is at most 4 bytes
    decoded = small.decode_bytes(cut)
    assert replace_surrogates(text).encode().startswith(decoded)
    decoded.decode("utf-8")  # whole characters only
    with pytest.raises(ValueError, match="max_tokens"):
        small.encode("abc", max_tokens=-1)


# ---- 5. tiktoken's helpers ---------------------------------------------------------------


def test_tiktoken_helpers_equal_tiktokens():
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    assert tok.eot_token == enc.eot_token == 50256
    assert tok.max_token_value == enc.max_token_value
    for probe in ("hello", " the", EOT, b" world", b"\xe6\x97"):
        try:
            want = enc.encode_single_token(probe)
        except KeyError:
            with pytest.raises(KeyError):
                tok.encode_single_token(probe)
            continue
        assert tok.encode_single_token(probe) == want
    ids = enc.encode("Hello world, naïve 日本 <|endoftext|>", allowed_special="all")
    assert tok.decode_tokens_bytes(ids) == enc.decode_tokens_bytes(ids)
    assert [tok.decode_single_token_bytes(i) for i in ids] == [
        enc.decode_single_token_bytes(i) for i in ids
    ]
    assert tok.token_byte_values() == enc.token_byte_values()
    batch = [ids, ids[:3], []]
    assert tok.decode_batch(batch) == enc.decode_batch(batch)
    assert [tok.is_special_token(i) for i in (50256, 0, 262)] == [True, False, False]
    if hasattr(enc, "is_special_token"):
        assert all(tok.is_special_token(i) == enc.is_special_token(i) for i in (50256, 0, 262))
    text = "numpy ids, " * 50
    assert np.array_equal(tok.encode_to_numpy(text), enc.encode_to_numpy(text))


def test_eot_token_of_a_tokenizer_without_one(small):
    plain = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    with pytest.raises(KeyError, match="endoftext"):
        plain.eot_token
    assert small.eot_token == small.special_tokens[EOT]


@pytest.mark.parametrize("rel, start", SLICES[1:2])
def test_decode_stream_equals_hfs(tmp_path, rel, start):
    """HF tokenizers' own DecodeStream on the same ids gives the same pieces."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.decoders import DecodeStream

    tok = gpt2_tokenizer()
    tok.save(tmp_path / "tok.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tok.json"))
    ids = tok.encode(read_slice(rel, start, 20_000))
    theirs, ours = DecodeStream(skip_special_tokens=False), tok.decode_stream()
    assert [ours.step(i) for i in ids] == [theirs.step(hf, i) for i in ids]


@pytest.mark.parametrize("rel, start", SLICES)
def test_encode_bytes_of_valid_text_equals_tiktokens_encode_bytes(rel, start):
    tok, enc = gpt2_tokenizer(), tiktoken_gpt2()
    data = read_slice(rel, start, 50_000).encode()
    assert tok.encode_bytes(data) == enc._encode_bytes(data)
