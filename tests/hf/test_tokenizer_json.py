"""HuggingFace tokenizer.json: Tokenizer.save / Tokenizer.load.

- save() then load() gives back exactly the same tokenizer (vocab, merges,
  special tokens, pattern), for tokenizers trained with each preset pattern and
  with custom patterns, and for GPT-2;
- the saved file loads in HuggingFace ``tokenizers`` and encodes real corpus
  slices and generated text to the same ids as we do (gpt2, cl100k, o200k
  patterns, and GPT-2 itself; GPT-2 is also checked against HF's own GPT-2
  built from vocab.json / merges.txt, and a file HF wrote loads in bytepair);
- load() rejects what it cannot represent with a ValueError naming the file and key.

Tests marked ``xfail(strict=True)`` document a known difference between what we
save and how HF reads it; they start failing (XPASS) when that changes.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).parents[1]))
from _gpt2 import (  # noqa: E402
    EOT,
    PRESETS,
    assert_same_ids,
    gpt2_tokenizer,
    texts,
    tiktoken_for,
    trained,
)
from conftest import corpora_dir, read_slice  # noqa: E402

import bytepair  # noqa: E402
from bytepair.formats import str_to_token  # noqa: E402

tokenizers = pytest.importorskip("tokenizers")

# GPT-2's pattern spelled differently, so it is not recognised as a preset and
# runs on the backtracking engine (look-ahead included).
CUSTOM_LOOKAHEAD = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# A simple pattern that still covers every character.
CUSTOM_SIMPLE = r"""\p{L}+|\p{N}|\s+|[^\p{L}\p{N}\s]+"""
PATTERNS = (*PRESETS, CUSTOM_LOOKAHEAD, CUSTOM_SIMPLE)
PATTERN_IDS = ["gpt2", "cl100k", "o200k", "custom-lookahead", "custom-simple"]

# Held-out slices, a few hundred KB each.
HF_SLICES = (
    ("enwiki.txt", 33_000_000),
    ("code.txt", 2_000_000),
    ("multilingual.txt", 19_000_000),
    ("shakespeare.txt", 500_000),
)

FUZZ = settings(
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def hf_ids(hf, text: str) -> list[int]:
    return hf.encode(text, add_special_tokens=False).ids


def saved(tok: bytepair.Tokenizer, directory: Path, name: str = "tokenizer.json"):
    """Save `tok`, return (path, HF tokenizer loaded from it)."""
    path = directory / name
    tok.save(path)
    return path, tokenizers.Tokenizer.from_file(str(path))


def byte_vocab() -> dict[int, bytes]:
    return {i: bytes([i]) for i in range(256)}


# ---- round trip ------------------------------------------------------------------


@pytest.mark.parametrize("pattern", PATTERNS, ids=PATTERN_IDS)
def test_save_load_round_trip_is_exact(tmp_path, pattern):
    tok = trained(pattern)
    path = tmp_path / "tok.json"
    tok.save(path)
    loaded = bytepair.Tokenizer.load(path)
    assert loaded.vocab == tok.vocab
    assert loaded.merges == tok.merges
    assert loaded.special_tokens == tok.special_tokens == {EOT: 1999}
    assert loaded.pattern == tok.pattern == pattern
    assert loaded.pattern_regex == tok.pattern_regex == bytepair.resolve_pattern(pattern)
    assert loaded == tok and loaded.vocab_size == 2000
    text = read_slice("multilingual.txt", 7_000_000, 100_000) + EOT + "end"
    assert loaded.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    # Deterministic: saving the loaded tokenizer gives the same bytes.
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    # And it is a byte-level BPE tokenizer.json.
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["model"]["type"] == "BPE" and len(doc["model"]["merges"]) == len(tok.merges)
    assert len(doc["model"]["vocab"]) == 1999 and doc["model"]["vocab"]["Ġ"] == 32
    assert [(t["content"], t["id"], t["special"]) for t in doc["added_tokens"]] == [
        (EOT, 1999, True)
    ]


def test_save_load_round_trip_gpt2(tmp_path):
    tok = gpt2_tokenizer()
    path = tmp_path / "gpt2.json"
    tok.save(path)
    loaded = bytepair.Tokenizer.load(path)
    assert (loaded.vocab, loaded.merges, loaded.special_tokens, loaded.pattern) == (
        tok.vocab,
        tok.merges,
        tok.special_tokens,
        "gpt2",
    )
    doc = json.loads(path.read_text(encoding="utf-8"))
    raw = json.loads((corpora_dir() / "cs336" / "gpt2_vocab.json").read_text(encoding="utf-8"))
    assert doc["model"]["vocab"] == {s: i for s, i in raw.items() if s != EOT}
    merges_txt = (
        (corpora_dir() / "cs336" / "gpt2_merges.txt").read_text(encoding="utf-8").split("\n")
    )
    assert doc["model"]["merges"] == [m for m in merges_txt if m and not m.startswith("#version")]


def test_save_load_round_trip_special_tokens_and_odd_ids(tmp_path):
    """Special tokens given as a mapping, ids out of order, overlapping strings,
    non-ASCII; a vocab with a gap in its ids."""
    vocab = byte_vocab() | {260: b"ab", 262: b"abc"}
    specials = {"<|b|>": 300, "<|a|>": 263, "<|a|><|b|>": 264, "<|é|>": 265}
    tok = bytepair.Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")], specials, pattern="o200k")
    tok.save(tmp_path / "t.json")
    loaded = bytepair.Tokenizer.load(tmp_path / "t.json")
    # vocab holds every id: the special tokens as their UTF-8 too.
    assert (
        tok.vocab == vocab | {i: t.encode() for t, i in specials.items()}
        and len(tok.vocab) == tok.vocab_size
    )
    assert (loaded.vocab, loaded.merges, loaded.special_tokens, loaded.pattern) == (
        tok.vocab,
        tok.merges,
        specials,
        "o200k",
    )
    text = "abc<|a|><|b|><|é|>ab<|b|>"
    assert loaded.encode(text, allowed_special="all") == [262, 264, 265, 260, 300]


def test_load_file_written_by_huggingface(tmp_path):
    """GPT-2 built by HF itself from vocab.json / merges.txt (ByteLevel
    pre-tokenizer with its built-in regex), saved by HF, loads here as GPT-2."""
    from tokenizers import decoders, models, pre_tokenizers

    root = corpora_dir() / "cs336"
    hf = tokenizers.Tokenizer(
        models.BPE.from_file(str(root / "gpt2_vocab.json"), str(root / "gpt2_merges.txt"))
    )
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([EOT])
    hf.save(str(tmp_path / "hf.json"))
    loaded = bytepair.Tokenizer.load(tmp_path / "hf.json")
    assert loaded == gpt2_tokenizer()
    assert loaded.pattern == "gpt2" and loaded.special_tokens == {EOT: 50256}
    text = read_slice("enwiki.txt", 50_000_000, 200_000) + EOT
    assert_same_ids(
        loaded.encode(text, allowed_special="all"),
        hf_ids(hf, text),
        text=text,
        decode_bytes=loaded.decode_bytes,
        label="HF-built GPT-2",
    )


# ---- HuggingFace parity ------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_files(tmp_path_factory):
    """pattern -> (our trained tokenizer, HF tokenizer loaded from our saved file)."""
    out = {}
    directory = tmp_path_factory.mktemp("hf")
    for pattern, name in zip(PATTERNS, PATTERN_IDS):
        tok = trained(pattern)
        out[pattern] = (tok, saved(tok, directory, f"{name}.json")[1])
    gpt2 = gpt2_tokenizer()
    out["GPT-2"] = (gpt2, saved(gpt2, directory, "gpt2.json")[1])
    return out


@pytest.mark.parametrize("rel,start", HF_SLICES)
@pytest.mark.parametrize("pattern", [*PATTERNS, "GPT-2"], ids=[*PATTERN_IDS, "GPT-2"])
def test_hf_matches_ours_on_corpus_slices(hf_files, pattern, rel, start):
    tok, hf = hf_files[pattern]
    text = read_slice(rel, start, 300_000)
    ours = tok.encode(text)
    assert_same_ids(
        hf_ids(hf, text),
        ours,
        text=text,
        decode_bytes=tok.decode_bytes,
        label=f"HF vs ours, {pattern}, {rel}",
    )
    # HF always splits out added tokens: compare with allowed_special="all".
    docs = EOT.join(text[:100_000].split("\n\n"))
    assert hf_ids(hf, docs) == tok.encode(docs, allowed_special="all")
    assert hf.decode(ours, skip_special_tokens=False) == text


def test_hf_gpt2_from_original_files_matches_ours():
    """An independent reference: HF's own GPT-2 (BPE.from_file + ByteLevel, the
    regex run by Oniguruma, merges applied by pair rank)."""
    from tokenizers import models, pre_tokenizers

    root = corpora_dir() / "cs336"
    hf = tokenizers.Tokenizer(
        models.BPE.from_file(str(root / "gpt2_vocab.json"), str(root / "gpt2_merges.txt"))
    )
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok = gpt2_tokenizer()
    for rel, start in HF_SLICES:
        text = read_slice(rel, start, 300_000)
        assert_same_ids(
            tok.encode_ordinary(text),
            hf_ids(hf, text),
            text=text,
            decode_bytes=tok.decode_bytes,
            label=f"HF GPT-2 on {rel}",
        )


@pytest.mark.parametrize("pattern", [*PATTERNS, "GPT-2"], ids=[*PATTERN_IDS, "GPT-2"])
def test_hf_matches_ours_on_generated_text(hf_files, pattern):
    tok, hf = hf_files[pattern]

    @FUZZ
    @given(text=texts)
    def check(text):
        assert hf_ids(hf, text) == tok.encode(text, allowed_special="all")

    check()


def hf_pieces(hf, text: str) -> list[bytes]:
    """HF's pre-tokens (Split then ByteLevel) as bytes."""
    return [str_to_token(p) for p, _ in hf.pre_tokenizer.pre_tokenize_str(text)]


@pytest.mark.parametrize("pattern", PATTERNS, ids=PATTERN_IDS)
def test_hf_pretokenization_matches_ours(tmp_path, pattern):
    """Pre-tokens, not just ids (a vocabulary can hide a different split): HF runs
    the pattern on Oniguruma, we on regex-automata / fancy-regex. Every code point
    below U+3400 and every 17th above it, in three contexts; then generated text."""
    tok = bytepair.Tokenizer(byte_vocab(), [], pattern=pattern)
    _, hf = saved(tok, tmp_path)
    sample = [c for c in [*range(0x3400), *range(0x3400, 0x110000, 17)] if not 0xD800 <= c < 0xE000]
    for context in ("a{}0 ", "{}A'", " {}\n"):
        text = "".join(context.format(chr(c)) for c in sample)
        ours = [p.encode() for p in tok.pretokenize(text)]
        assert ours == hf_pieces(hf, text), f"context {context!r}"

    @FUZZ
    @given(text=texts)
    def check(text):
        assert [p.encode() for p in tok.pretokenize(text)] == hf_pieces(hf, text)

    check()


def test_hf_matches_ours_with_overlapping_special_tokens(tmp_path):
    tok = bytepair.Tokenizer(
        byte_vocab() | {256: b"xy"}, [(b"x", b"y")], ["<|a|>", "<|a|><|b|>", "<|b|>"]
    )
    _, hf = saved(tok, tmp_path)
    text = "xy<|a|><|b|>q<|b|><|a|>xy<|a|><|b|"
    expected = [256, 258, 113, 259, 257, 256, 257] + tok.encode_ordinary("<|b|")
    assert hf_ids(hf, text) == tok.encode(text, allowed_special="all") == expected


def test_tiktoken_agrees_with_hf_file_ids(hf_files):
    """The three agree: ours == tiktoken (test_encode) and ours == HF, on one text."""
    tok, hf = hf_files["o200k"]
    text = read_slice("code.txt", 20_000_000, 100_000)
    assert hf_ids(hf, text) == tiktoken_for(tok).encode_ordinary(text)


# ---- known differences between what we save and how HF reads it ---------------------


def test_hf_parity_with_pattern_that_does_not_cover_the_text(tmp_path):
    """A pattern that does not match every character drops the unmatched text, as
    tiktoken does; saved as Split(Removed, invert=true), HF drops it too (an
    Isolated Split, written before, kept it as pieces: [97, 32, 98])."""
    tok = bytepair.Tokenizer(byte_vocab(), [], pattern=r"\p{L}+")
    _, hf = saved(tok, tmp_path)
    assert (
        tok.encode("a b") == tiktoken_for(tok).encode("a b") == [97, 98]
        and tok.decode(tok.encode("a b")) == "ab"
    )
    assert hf_ids(hf, "a b") == tok.encode("a b")


@pytest.mark.xfail(
    strict=True,
    reason=(
        "DISCREPANCY (regex engines): in a custom pattern, \\w means Unicode word characters "
        "in Rust regex / fancy-regex (ours, tiktoken) but Letter|Mark|Number|Pc in Oniguruma (HF): "
        "'²' (U+00B2, No) is \\w only for HF. Pattern '\\w+|[^\\w\\s]+|\\s+', merges "
        "(c2,b2),(a,c2b2), text 'a²': ours and tiktoken [97, 256], HF [257]."
    ),
)
def test_hf_parity_with_backslash_w_pattern(tmp_path):
    pattern = r"\w+|[^\w\s]+|\s+"
    tok = bytepair.Tokenizer(
        byte_vocab() | {256: b"\xc2\xb2", 257: b"a\xc2\xb2"},
        [(b"\xc2", b"\xb2"), (b"a", b"\xc2\xb2")],
        pattern=pattern,
    )
    assert tok.encode("a²") == tiktoken_for(tok).encode("a²") == [97, 256]
    _, hf = saved(tok, tmp_path)
    assert hf_ids(hf, "a²") == tok.encode("a²")


@pytest.mark.xfail(
    strict=True,
    reason=(
        "DISCREPANCY (decode only): HF tokenizers runs added tokens through the ByteLevel decoder, "
        "so a special token with non-ASCII text decodes wrongly: special '<|é|>' (id 256 over the "
        "256 bytes): HF decode([256]) gives '<|\ufffd|>', ours '<|é|>'. Encoding agrees ([256])."
    ),
)
def test_hf_decodes_non_ascii_special_token(tmp_path):
    tok = bytepair.Tokenizer(byte_vocab(), [], ["<|é|>"])
    _, hf = saved(tok, tmp_path)
    assert hf_ids(hf, "<|é|>") == tok.encode("<|é|>", allowed_special="all") == [256]
    assert hf.decode([256], skip_special_tokens=False) == tok.decode([256]) == "<|é|>"


def test_hf_keeps_special_token_ids_after_a_gap(tmp_path):
    """HF does not use the id written for an added token: one that is not in
    model.vocab gets the next id after the vocab. save() therefore also lists a
    special token that HF would renumber in model.vocab under its id (as GPT-2's
    files do). Fixed: it used to write {'<|x|>': 300} that HF read as 256."""
    tok = bytepair.Tokenizer(byte_vocab(), [], {"<|x|>": 300, "<|y|>": 290, "<|z|>": 256})
    path, hf = saved(tok, tmp_path)
    text = "<|x|>a<|y|><|z|>"
    assert hf_ids(hf, text) == tok.encode(text, allowed_special="all") == [300, 97, 290, 256]
    doc = json.loads(path.read_text(encoding="utf-8"))
    # <|x|> and <|y|> need a vocab entry; that grows the vocab past 256, so <|z|> does too.
    assert {s: i for s, i in doc["model"]["vocab"].items() if i >= 256} == {
        "<|z|>": 256,
        "<|y|>": 290,
        "<|x|>": 300,
    }
    loaded = bytepair.Tokenizer.load(path)
    assert loaded == tok and loaded.special_tokens == tok.special_tokens


# ---- load() errors ------------------------------------------------------------------


@pytest.fixture
def good_doc(tmp_path):
    tok = bytepair.Tokenizer(byte_vocab() | {256: b"ab"}, [(b"a", b"b")], [EOT])
    tok.save(tmp_path / "good.json")
    return json.loads((tmp_path / "good.json").read_text(encoding="utf-8"))


def load_error(tmp_path, content, *needles, exc=ValueError) -> str:
    """load() a file holding `content` (str as is, else JSON); assert it raises `exc`
    with the file path and every needle in the message."""
    path = tmp_path / "bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    with pytest.raises(exc) as info:
        bytepair.Tokenizer.load(path)
    msg = str(info.value)
    assert str(path) in msg, msg
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    return msg


def test_load_good_doc_works(tmp_path, good_doc):
    (tmp_path / "ok.json").write_text(json.dumps(good_doc), encoding="utf-8")
    assert bytepair.Tokenizer.load(tmp_path / "ok.json").encode("abab") == [256, 256]


@pytest.mark.parametrize("content", ["{not json", "", "[1, 2", '{"model": {"type": "BPE", }'])
def test_load_invalid_json(tmp_path, content):
    load_error(tmp_path, content, "JSON")


@pytest.mark.parametrize("content", [{"version": "1.0"}, [1, 2], {"model": "BPE"}, {"model": None}])
def test_load_missing_model(tmp_path, content):
    load_error(tmp_path, content, "model")


@pytest.mark.parametrize("kind", ["WordPiece", "Unigram", "WordLevel"])
def test_load_model_type_not_bpe(tmp_path, good_doc, kind):
    good_doc["model"]["type"] = kind
    load_error(tmp_path, good_doc, "model.type", kind)


@pytest.mark.parametrize(
    "normalizer, name",
    [
        ({"type": "BertNormalizer"}, "BertNormalizer"),
        ({"type": "Precompiled", "precompiled_charsmap": ""}, "Precompiled"),
        (
            {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "StripAccents"}]},
            "normalizer.normalizers[1]",
        ),
    ],
)
def test_load_with_unsupported_normalizer(tmp_path, good_doc, normalizer, name):
    good_doc["normalizer"] = normalizer
    load_error(tmp_path, good_doc, "normalizer", name)


@pytest.mark.parametrize("bad_id", ["97", 97.5, 97.0, None, [97], {"id": 97}])
def test_load_non_integer_id(tmp_path, good_doc, bad_id):
    good_doc["model"]["vocab"]["a"] = bad_id
    load_error(tmp_path, good_doc, "model.vocab", "'a'")


def test_load_non_integer_added_token_id(tmp_path, good_doc):
    good_doc["added_tokens"][0]["id"] = "50256"
    load_error(tmp_path, good_doc, "added_tokens[0]")


def test_load_other_errors_name_file_and_key(tmp_path, good_doc):
    doc = copy.deepcopy(good_doc)
    doc["model"]["merges"][0] = "a b c"
    load_error(tmp_path, doc, "model.merges[0]")
    doc = copy.deepcopy(good_doc)
    doc["model"]["vocab"]["€"] = 500  # '€' is not one of the 256 byte-level characters
    load_error(tmp_path, doc, "model.vocab", "€")
    doc = copy.deepcopy(good_doc)
    doc["model"]["vocab"] = ["a"]
    load_error(tmp_path, doc, "model.vocab")
    doc = copy.deepcopy(good_doc)
    doc["pre_tokenizer"] = {"type": "Whitespace"}
    load_error(tmp_path, doc, "pre_tokenizer")
    with pytest.raises(FileNotFoundError):
        bytepair.Tokenizer.load(tmp_path / "missing.json")


@pytest.mark.parametrize("where", ["model.vocab", "added_tokens"])
@pytest.mark.parametrize("bad_id", [-5, 2**32, 2**70])
def test_load_out_of_range_id_raises_value_error(tmp_path, good_doc, where, bad_id):
    """Regression: an id that does not fit the core's u32 (negative, >= 2**32) used to
    make load() raise OverflowError naming neither the file nor the key."""
    if where == "model.vocab":
        good_doc["model"]["vocab"]["a"] = bad_id
    else:
        good_doc["added_tokens"][0]["id"] = bad_id
    load_error(tmp_path, good_doc, where)


def test_load_rejects_json_boolean_id(tmp_path, good_doc):
    """Regression: a JSON boolean id passed the integer check (bool is an int in
    Python), so vocab {"a": true} loaded with "a" at id 1 (byte 0x01's entry removed
    here to keep ids unique; otherwise the error was the misleading "id True is given
    to two tokens")."""
    vocab = good_doc["model"]["vocab"]
    del vocab[next(s for s, i in vocab.items() if i == 1)]
    vocab["a"] = True
    load_error(tmp_path, good_doc, "model.vocab", "'a'")


def test_load_added_token_id_colliding_with_vocab_id(tmp_path, good_doc):
    """An added token whose id model.vocab gives to other bytes is an error naming
    the file and added_tokens[0] (it used to drop the byte 0x05 silently, so that
    ``encode("\\x05")`` failed later; HF renumbers the added token instead)."""
    good_doc["added_tokens"][0]["id"] = 5
    load_error(tmp_path, good_doc, "added_tokens[0]")


def test_tokenizer_json_loads_the_same_through_the_native_and_the_python_reader(
    tmp_path, monkeypatch
):
    from bytepair import _core
    from bytepair.formats.hf import from_hf_json

    text = "".join(f"the {i} cats, naïve dogs; 世界 {i % 7}\n" for i in range(400))
    tok = bytepair.train_from_iterator(
        [text], 600, special_tokens=["<|endoftext|>", "<pad>"], progress=False
    )
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    fast = from_hf_json(path.read_bytes(), source=str(path))
    monkeypatch.setattr(_core, "byte_level_tables", lambda *a: None)
    slow = from_hf_json(path.read_bytes(), source=str(path))
    assert (
        (fast.vocab, fast.merges, fast.special_tokens)
        == (slow.vocab, slow.merges, slow.special_tokens)
        == (tok.vocab, tok.merges, tok.special_tokens)
    )
