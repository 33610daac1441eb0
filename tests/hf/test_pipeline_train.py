"""Training through a tokenizer.json pipeline (`train(..., base=...)` with a
base whose `Tokenizer.pipeline` is set): the corpus is counted as the base
encodes it (normalized, pre-tokenized by every step, special tokens cut out
with their added-token rules), and the extension keeps the pipeline, so HF
tokenizers and transformers load the saved file with our ids.

The bases are the model families of tests/hf/test_pipeline.py (their public
pipelines over a vocabulary trained there). HF tokenizers is the oracle for
the words: its ``Encoding.word_ids`` group the tokens of each pre-token.
"""

from __future__ import annotations

import collections
import functools
import gzip
import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair import _core
from bytepair.formats import from_hf_json, str_to_token, to_hf_json

tokenizers = pytest.importorskip("tokenizers")
tp = pytest.importorskip("test_pipeline")  # the families, built as the load tests build them

# Families whose pipeline is more than one regex (the others load as a plain pattern).
FAMILIES = [
    "Qwen2/3",
    "DeepSeek V3",
    "Claude (anthropic 0.20.0)",
    "StarCoder",
    "RoBERTa",
    "GPT-NeoX/OLMo",
]
TRAIN_CORPORA = ("multilingual.txt", "code.txt", "enwiki.txt")
HELD_OUT = ("multilingual.txt", "code.txt", "shakespeare.txt", "tinystories_v1_valid_head.txt")
NEW_MERGES = 300


@functools.cache
def family_base(family: str) -> bytepair.Tokenizer:
    return from_hf_json(tp.document(*tp.FAMILIES[family]), source=family)


@functools.cache
def hf_of(doc: str):
    return tokenizers.Tokenizer.from_str(doc)


def hf_words(tok: bytepair.Tokenizer, hf, text: str) -> collections.Counter:
    """HF's pre-tokens of `text` (special tokens left out), as bytes: the
    tokens of each word id joined. Checks that HF's ids are ours on the way."""
    enc = hf.encode(text, add_special_tokens=False)
    assert enc.ids == tok.encode(text, allowed_special="all"), text[:100]
    specials = set(tok.special_tokens.values())
    words: dict[int, bytes] = {}
    for token, word, i in zip(enc.tokens, enc.word_ids, enc.ids):
        if i not in specials:
            words[word] = words.get(word, b"") + str_to_token(token)
    return collections.Counter(words.values())


def our_words(tok: bytepair.Tokenizer, text: str) -> collections.Counter:
    """The words a training run with base `tok` counts in `text`."""
    counter = _core.WordCounter(
        tok.pattern, list(tok.special_tokens), pipeline=tok.pipeline.core_spec()
    )
    counter.count_texts([text])
    return collections.Counter(dict(counter.items()))


def training_texts(corpus_text) -> list[str]:
    return [corpus_text(name, 100_000, at=0.1) for name in TRAIN_CORPORA] + [
        tp.TRICKY * 30 + " a <mask> b<|endoftext|>"
    ]


@functools.cache
def _extended(family: str, texts: tuple[str, ...]) -> bytepair.Tokenizer:
    base = family_base(family)
    return bytepair.train_from_iterator(
        list(texts),
        base.vocab_size + NEW_MERGES + 1,
        base=base,
        special_tokens=["<|new|>"],
        progress=False,
    )


def extended(family: str, corpus_text) -> tuple[bytepair.Tokenizer, bytepair.Tokenizer, list[str]]:
    """(base, the base extended by NEW_MERGES merges and a special token, the training texts)."""
    texts = training_texts(corpus_text)
    return family_base(family), _extended(family, tuple(texts)), texts


# ---- counting ------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_counted_words_are_hf_pre_tokens(family, corpus_text):
    tok = family_base(family)
    hf = hf_of(tp.document(*tp.FAMILIES[family]))
    texts = [corpus_text(name, 30_000, at=0.5) for name in tp.CORPORA] + [
        tp.TRICKY,
        *tp.ADDED_TEXTS,
    ]
    for text in texts:
        assert our_words(tok, text) == hf_words(tok, hf, text), (family, text[:100])


ADDED_RULE_BASES = [
    (n, flags) for flags in tp.ADDED_RULES.values() for n in (None, {"type": "NFKC"})
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FAMILIES), tp.HYPOTHESIS_TEXT | tp.FRAGMENTS)
def test_counted_words_equal_hf_on_strings_normalization_changes(family, text):
    tok = family_base(family)
    assert our_words(tok, text) == hf_words(tok, hf_of(tp.document(*tp.FAMILIES[family])), text)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(range(len(ADDED_RULE_BASES))), tp.FRAGMENTS)
def test_counting_cuts_special_tokens_with_their_added_token_rules(which, text):
    doc = tp.document(
        ADDED_RULE_BASES[which][0],
        tp.byte_level(prefix_space=True, use_regex=True),
        ADDED_RULE_BASES[which][1],
    )
    tok = from_hf_json(doc, source="rules")
    assert our_words(tok, text) == hf_words(tok, hf_of(doc), text)


@pytest.mark.filterwarnings("ignore:no pair left")
def test_extension_learns_from_normalized_pieces():
    # NFKC makes full-width letters ASCII; ByteLevel's prefix space puts " "
    # before each text; Digits keeps digits apart: the new tokens show it.
    nfkc = family_base("Claude (anthropic 0.20.0)")
    tok = bytepair.train_from_iterator(
        ["\uff28\uff25\uff2c\uff2c\uff2f\uff3a\uff39"] * 50,
        nfkc.vocab_size + 10,
        base=nfkc,
        progress=False,
    )
    new = [a + b for a, b in tok.merges[len(nfkc.merges) :]]
    assert new and new[-1] == b"HELLOZY", new
    roberta = family_base("RoBERTa")
    tok = bytepair.train_from_iterator(
        ["qqxjw"] * 50, roberta.vocab_size + 10, base=roberta, progress=False
    )
    assert [a + b for a, b in tok.merges[len(roberta.merges) :]][-1] == b" qqxjw"
    starcoder = family_base("StarCoder")
    tok = bytepair.train_from_iterator(
        ["x98765437777"] * 50, starcoder.vocab_size + 3, base=starcoder, progress=False
    )
    new = [a + b for a, b in tok.merges[len(starcoder.merges) :]]
    assert not any(t.isdigit() for t in new), new  # digits are pre-tokens of their own


# ---- the extended tokenizer ------------------------------------------------------------


# ... and two that load as a plain pattern, extended on the plain path (the table's rows).
@pytest.mark.parametrize("family", FAMILIES + ["Llama 3", "o200k/GPT-OSS"])
def test_extension_keeps_the_pipeline_and_hf_gives_our_ids(family, tmp_path, corpus_text):
    base, ext, texts = extended(family, corpus_text)
    assert ext.vocab_size == base.vocab_size + NEW_MERGES + 1
    assert ext.merges[: len(base.merges)] == base.merges
    ext.save(tmp_path / "tokenizer.json")
    if base.pipeline is not None:
        steps = lambda p: (p.normalizer, p.pre_tokenizer, p.normalizers, p.steps)  # noqa: E731
        assert steps(ext.pipeline) == steps(base.pipeline)
        assert ext.pipeline.rules == base.pipeline.rules + (
            ("<|new|>", False, False, False, False),
        )
        saved = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
        doc = json.loads(tp.document(*tp.FAMILIES[family]))
        assert (saved["normalizer"], saved["pre_tokenizer"]) == (
            doc["normalizer"],
            doc["pre_tokenizer"],
        )
    else:
        assert ext.pipeline is None and ext.pattern_regex == base.pattern_regex
    assert bytepair.Tokenizer.load(tmp_path / "tokenizer.json") == ext
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    held_out = [corpus_text(name, 40_000, at=0.7) for name in HELD_OUT]
    for text in held_out + texts + ["x<|new|>y <mask>"]:
        assert hf.encode(text, add_special_tokens=False).ids == ext.encode(
            text, allowed_special="all"
        ), text[:100]
    # Never more tokens than the base, and fewer on the training text.
    ours = [len(ext.encode(t, allowed_special="all")) for t in texts + held_out]
    theirs = [len(base.encode(t, allowed_special="all")) for t in texts + held_out]
    assert all(a <= b for a, b in zip(ours, theirs)) and sum(ours[: len(texts)]) < 0.9 * sum(
        theirs[: len(texts)]
    )


@pytest.mark.parametrize("family", ["Qwen2/3", "RoBERTa"])
def test_transformers_loads_the_extension_with_our_ids(family, tmp_path, corpus_text):
    transformers = pytest.importorskip("transformers")
    _, ext, _ = extended(family, corpus_text)
    ext.save(tmp_path / "tokenizer.json")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    text = corpus_text("multilingual.txt", 20_000, at=0.8) + tp.TRICKY
    assert fast.encode(text, add_special_tokens=False) == ext.encode(text, allowed_special="all")


@pytest.mark.filterwarnings("ignore:no pair left")
@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FAMILIES), tp.HYPOTHESIS_TEXT)
def test_extension_ids_equal_hf_on_strings_normalization_changes(family, text):
    ext = _extended(family, tuple(_EXTENDED_TEXTS))
    doc = to_hf_json(ext)
    assert hf_of(doc).encode(text, add_special_tokens=False).ids == ext.encode(
        text, allowed_special="all"
    )


# Small training texts for the hypothesis test (no fixture there).
_EXTENDED_TEXTS = [tp.TRICKY * 5 + " numbers 12345 and words, words, words.\n" * 20]


# ---- every entry point -----------------------------------------------------------------


@pytest.mark.parametrize("family", ["Qwen2/3", "RoBERTa"])
def test_train_on_files_and_cli_equal_train_from_iterator(family, tmp_path, corpus_text):
    from bytepair.cli import main as cli_main

    base = family_base(family)
    text = corpus_text("multilingual.txt", 60_000, at=0.3) + tp.TRICKY
    (tmp_path / "t.txt").write_text(text, encoding="utf-8")
    want = bytepair.train_from_iterator([text], base.vocab_size + 100, base=base, progress=False)
    # Qwen's NFC and regex allow newline cuts (blocks of 4 KiB here); RoBERTa's prefix space none.
    for chunk_size in (4096, 1 << 20):
        got = bytepair.train(
            tmp_path / "t.txt",
            base.vocab_size + 100,
            base=base,
            chunk_size=chunk_size,
            progress=False,
        )
        assert got == want, chunk_size
    # The other readers: a JSON Lines record, a compressed text cut in Python where the counter
    # allows.
    (tmp_path / "t.jsonl").write_text(json.dumps({"text": text}) + "\n", encoding="utf-8")
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(text.encode()))
    for name in ("t.jsonl", "t.txt.gz"):
        assert (
            bytepair.train(tmp_path / name, base.vocab_size + 100, base=base, progress=False)
            == want
        ), name
    base.save(tmp_path / "base.json")
    assert (
        cli_main(
            [
                "train",
                str(tmp_path / "t.txt"),
                "--base",
                str(tmp_path / "base.json"),
                "--vocab-size",
                str(base.vocab_size + 100),
                "-o",
                str(tmp_path / "out.json"),
            ]
        )
        == 0
    )
    assert bytepair.Tokenizer.load(tmp_path / "out.json") == want


def test_train_from_counts_takes_pipeline_words_and_refuses_pattern_artifacts(tmp_path):
    base = family_base("Qwen2/3")
    words = collections.Counter(
        w.encode() for w in base.pretokenize("caf\u0065\u0301 cafe\u0301s") * 20
    )
    tok = bytepair.train_from_counts(dict(words), base.vocab_size + 2, base=base)
    assert tok.pipeline == base.pipeline
    (tmp_path / "t.txt").write_text("some text " * 20, encoding="utf-8")
    counts = bytepair.count(
        tmp_path / "t.txt", tmp_path / "counts", pattern=base.pattern, progress=False
    )
    with pytest.raises(
        ValueError,
        match=r"counts: counted with pattern .* not through the base tokenizer's tokenizer.json "
        r"pipeline",
    ):
        bytepair.train_from_counts(counts, base.vocab_size + 2, base=base)


# ---- encoding and inspection with the pipeline -------------------------------------------


def test_a_disallowed_special_token_found_after_normalization_raises():
    # HF matches a `normalized: true` added token in the normalized text, so
    # NFKC turns "＜mask＞" into the token <mask>: disallowed, that raises too.
    doc = tp.document({"type": "NFKC"}, flags={"<mask>": {"normalized": True}})
    tok, hf = from_hf_json(doc, source="nfkc"), hf_of(doc)
    text = "a \uff1cmask\uff1e b"
    with pytest.raises(ValueError, match='disallowed special token "<mask>" at character offset 2'):
        tok.encode(text)
    assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids
    assert tok.special_tokens["<mask>"] in tok.encode(text, allowed_special={"<mask>"})
    assert tok.special_tokens["<mask>"] not in tok.encode(text, disallowed_special=())
    # A token without the rule is matched in the original text only, as HF does.
    plain = from_hf_json(tp.document({"type": "NFKC"}), source="plain")
    assert plain.encode(text) == plain.encode(text, allowed_special="all")


def test_compression_curve_keeps_the_pipeline(corpus_text):
    from bytepair.inspection.curve import compression_curve, prefix_tokenizer

    base, ext, _ = extended("Claude (anthropic 0.20.0)", corpus_text)
    assert prefix_tokenizer(ext, 10).pipeline == ext.pipeline
    text = "\uff21\uff22\uff23 " * 50
    # A vocabulary of bytes and 10 merges: NFKC makes "ＡＢＣ" 4 ASCII bytes, not 10.
    assert prefix_tokenizer(ext, 0).encode(text) == list(b"ABC " * 50)
    sizes = [256 + 10 + len(ext.special_tokens), 256 + len(ext.merges) + len(ext.special_tokens)]
    points = compression_curve(ext, [text], sizes)
    assert [p.stats.bytes for p in points] == [len(text.encode())] * 2


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
