"""Mistral's tekken.json (`bytepair.formats.tekken`) against its owner,
mistral-common's ``Tekkenizer``: the two files its wheel ships load with its ids,
special tokens and pattern, encode corpus slices and hypothesis strings to its
ids, and `save_tekken` writes files it reads with ours.

mistral-common is not in the ``test`` extra (it pulls in pydantic, pillow,
jsonschema, requests and pins numpy below 2.4); these tests skip without it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair.formats.tekken import from_tekken, to_tekken_json

mistral_common = pytest.importorskip(
    "mistral_common", reason="mistral-common (owner of tekken.json) not installed"
)
from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # noqa: E402

SHIPPED = ("tekken_240911.json", "tekken_240718.json")
CORPORA = (
    "multilingual.txt",
    "code.txt",
    "enwiki.txt",
    "shakespeare.txt",
    "tinystories_v1_valid_head.txt",
)


def shipped_file(name: str) -> Path:
    path = Path(mistral_common.__file__).parent / "data" / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this mistral-common wheel")
    return path


@functools.cache
def pair(name: str) -> tuple[bytepair.Tokenizer, Tekkenizer]:
    path = shipped_file(name)
    return bytepair.Tokenizer.load(path), Tekkenizer.from_file(path)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_load_with_tekkenizers_ids_specials_and_pattern(name):
    ours, theirs = pair(name)
    assert ours.vocab_size == theirs.n_words
    assert ours.special_tokens == {t["token_str"]: t["rank"] for t in theirs._all_special_tokens}
    assert (
        ours.special_tokens["<s>"] == theirs.bos_id and ours.special_tokens["</s>"] == theirs.eos_id
    )
    assert ours.pattern_regex == theirs._model._pat_str
    for i in range(theirs.num_special_tokens, theirs.n_words, 997):
        assert ours.decode_single_token_bytes(i) == theirs.id_to_byte_piece(i)


@pytest.mark.parametrize("name", CORPORA)
def test_encodes_corpus_slices_like_tekkenizer(name, corpus_text):
    ours, theirs = pair(SHIPPED[0])
    for at in (0.0, 0.6):
        text = corpus_text(name, 120_000, at=at)
        assert ours.encode_ordinary(text) == theirs.encode(text, bos=False, eos=False)


@settings(max_examples=150)
@given(
    st.text(st.characters(codec="utf-8"), max_size=60)
    | st.sampled_from(["[INST] hi</s>", "12345 ½ x²", "  \n\n a"])
)
def test_encodes_hypothesis_strings_like_tekkenizer(text):
    ours, theirs = pair(SHIPPED[0])
    assert ours.encode_ordinary(text) == theirs.encode(text, bos=False, eos=False)


def tekken_layout_tokenizer() -> bytepair.Tokenizer:
    """A small trained tokenizer renumbered to Tekken's layout: 3 special tokens first."""
    trained = bytepair.train_from_iterator(
        ["low lower lowest newest widest " * 20, "naïve café 123"],
        280,
        pattern="o200k",
        progress=False,
    )
    specials = {"<unk>": 0, "<s>": 1, "</s>": 2}
    return bytepair.Tokenizer(
        {i + 3: b for i, b in trained.vocab.items()}, trained.merges, specials, pattern="o200k"
    )


def test_save_tekken_is_read_by_tekkenizer_and_by_load(tmp_path):
    tok = tekken_layout_tokenizer()
    path = tmp_path / "tekken.json"
    tok.save_tekken(path)
    theirs = Tekkenizer.from_file(path)
    text = "the newest lowest naïve café 1234 widest"
    assert theirs.encode(text, bos=True, eos=False) == [1, *tok.encode_ordinary(text)]
    assert theirs.n_words == tok.vocab_size
    assert bytepair.Tokenizer.load(path) == tok


def test_save_tekken_refuses_another_id_layout():
    trained = bytepair.train_from_iterator(
        ["low lower lowest"], 260, special_tokens=["<s>"], progress=False
    )
    with pytest.raises(ValueError, match="special tokens must have ids 0..0"):
        to_tekken_json(trained)


def test_errors_name_the_field():
    doc = json.loads(to_tekken_json(tekken_layout_tokenizer()))
    broken = dict(doc, config=dict(doc["config"], default_num_special_tokens="3"))
    with pytest.raises(ValueError, match=r"t.json: config.default_num_special_tokens must be"):
        from_tekken(broken, source="t.json")
    broken = dict(
        doc, vocab=[*doc["vocab"][:260], dict(doc["vocab"][260], rank=7), *doc["vocab"][261:]]
    )
    with pytest.raises(ValueError, match=r"vocab\[260\] must be an object with rank 260"):
        from_tekken(broken, source="t.json")
    broken = dict(doc)
    del broken["special_tokens"]
    broken["config"] = dict(doc["config"], version="v13")
    with pytest.raises(ValueError, match="no special_tokens"):
        from_tekken(broken, source="t.json")
