"""tokenizer.json pipelines (`bytepair.formats.hf_pipeline`, the core's
`pipeline` module) against HF tokenizers, which implements every component:
each normalizer, each pre-tokenizer (every Split behavior, inverted or not),
the added-token rules, and the pipelines of the model families in the
README's table, over a vocabulary trained here. Texts: corpus slices and
hypothesis strings built from characters normalization changes (combining
marks, ligatures, full-width forms, Hangul jamo, compatibility digits).
"""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair.formats import from_hf_json, to_hf_json

tokenizers = pytest.importorskip("tokenizers")

SPECIALS = ["<|endoftext|>", "<mask>", "<tool>"]
CORPORA = (
    "multilingual.txt",
    "code.txt",
    "enwiki.txt",
    "shakespeare.txt",
    "tinystories_v1_valid_head.txt",
    "enwik8_head.txt",
)
# Characters whose normal forms differ, and what surrounds them in text.
TRICKY = (
    "e\u0301 a\u0308\u0323 \u0323\u0308o \ufb01\ufb02\ufb03 \uff21\uff22\uff23\uff11\uff12 \uff01 "
    "\u1100\u1161\u11a8\u1112\u1161\u11ab \ud55c\uae00 \u2460\u2461 \u00b2\u00b3 \u2163 \u00bd "
    "\uff76\uff9e \u212b \u2126 \u0130 \u00df \u03a3\u0391\u03a3 \u00a0\u2000\u3000 \u0660\u0661 "
    "\u00bf\u00a1\u00ab\u00bb \u0915\u093f \u0b47\u0b3e \u00c5"
)
ALPHABET = st.sampled_from(sorted(set(TRICKY + "abcXYZ019 ,.!?'-_\n\t")))
HYPOTHESIS_TEXT = st.text(ALPHABET, max_size=40) | st.text(
    st.characters(codec="utf-8"), max_size=30
)


@functools.cache
def base() -> bytepair.Tokenizer:
    """A small byte-level BPE trained here (the pipelines are the files' own)."""
    from conftest import slice_lines

    texts = [
        slice_lines(name, 60_000) for name in ("multilingual.txt", "code.txt", "shakespeare.txt")
    ]
    return bytepair.train_from_iterator(
        texts + [TRICKY * 3], 1500, special_tokens=SPECIALS, pattern="gpt2", progress=False
    )


def byte_level(prefix_space=False, use_regex=False):
    return {
        "type": "ByteLevel",
        "add_prefix_space": prefix_space,
        "trim_offsets": True,
        "use_regex": use_regex,
    }


def split(pattern, behavior="Isolated", invert=False, kind="Regex"):
    return {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}


def sequence(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


@functools.cache
def pair(doc: str):
    """(ours, HF's) for a tokenizer.json document."""
    return from_hf_json(doc, source="<test>"), tokenizers.Tokenizer.from_str(doc)


def document(normalizer=None, pre_tokenizer=None, flags=None) -> str:
    """The base tokenizer's tokenizer.json with this pipeline; `flags`: added token -> its rules."""
    doc = json.loads(to_hf_json(base()))
    doc["normalizer"] = normalizer
    doc["pre_tokenizer"] = pre_tokenizer or byte_level(use_regex=True)
    for t in doc["added_tokens"]:
        t.update((flags or {}).get(t["content"], {}))
    return json.dumps(doc)


def assert_same_ids(doc: str, texts) -> None:
    ours, hf = pair(doc)
    for text in texts:
        want = hf.encode(text, add_special_tokens=False).ids
        got = ours.encode(text, allowed_special="all")
        assert got == want, (text[:200], got[:40], want[:40])


def corpus_texts(corpus_text, size=20_000, names=CORPORA[:4]):
    return [corpus_text(name, size, at=0.3) for name in names]


# ---- each component -----------------------------------------------------------------

NORMALIZERS = {
    "NFC": {"type": "NFC"},
    "NFD": {"type": "NFD"},
    "NFKC": {"type": "NFKC"},
    "NFKD": {"type": "NFKD"},
    "Lowercase": {"type": "Lowercase"},
    "Strip": {"type": "Strip", "strip_left": True, "strip_right": True},
    "Strip-right": {"type": "Strip", "strip_left": False, "strip_right": True},
    "Replace-String": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    "Replace-Regex": {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
    "Prepend": {"type": "Prepend", "prepend": "\u2581"},
    "Sequence": {
        "type": "Sequence",
        "normalizers": [
            {"type": "NFKD"},
            {"type": "Lowercase"},
            {"type": "Replace", "pattern": {"String": "."}, "content": "[.]"},
        ],
    },
}

PRE_TOKENIZERS = {
    **{
        f"Split-{b}-{inv}": sequence(split(r"\p{N}+|[.,]", b, inv), byte_level(use_regex=True))
        for b in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
        for inv in (False, True)
    },
    "Split-String": sequence(split(" ", "MergedWithNext", kind="String"), byte_level()),
    "Digits-individual": sequence(
        {"type": "Digits", "individual_digits": True}, byte_level(use_regex=True)
    ),
    "Digits-runs": sequence({"type": "Digits", "individual_digits": False}, byte_level()),
    "Punctuation": sequence({"type": "Punctuation", "behavior": "Isolated"}, byte_level()),
    "Punctuation-MergedWithPrevious": sequence(
        {"type": "Punctuation", "behavior": "MergedWithPrevious"}, byte_level()
    ),
    "WhitespaceSplit": sequence({"type": "WhitespaceSplit"}, byte_level()),
    "Whitespace": sequence({"type": "Whitespace"}, byte_level()),
    "ByteLevel-prefix-space": byte_level(prefix_space=True, use_regex=True),
    "ByteLevel-prefix-space-no-regex": byte_level(prefix_space=True),
    "Split-then-prefix-space": sequence(
        split(r"\n"), byte_level(prefix_space=True, use_regex=True)
    ),
    "Split-preset-MergedWithNext": sequence(
        split(bytepair.formats.hf_pattern("cl100k"), "MergedWithNext"), byte_level()
    ),
}


@pytest.mark.parametrize("name", NORMALIZERS)
def test_normalizer_equals_hf(name, corpus_text):
    assert_same_ids(
        document(NORMALIZERS[name]), corpus_texts(corpus_text) + [TRICKY, "  pad  \n ", ""]
    )


@pytest.mark.parametrize("name", PRE_TOKENIZERS)
def test_pre_tokenizer_equals_hf(name, corpus_text):
    assert_same_ids(
        document(pre_tokenizer=PRE_TOKENIZERS[name]),
        corpus_texts(corpus_text) + [TRICKY, " 12.5, 3"],
    )


ADDED_RULES = {
    "lstrip": {"<mask>": {"lstrip": True}},
    "rstrip": {"<mask>": {"rstrip": True}},
    "single_word": {
        "<mask>": {"single_word": True},
        "<tool>": {"single_word": True, "lstrip": True},
    },
    "normalized": {"<mask>": {"normalized": True}, "<tool>": {"normalized": True, "rstrip": True}},
}
ADDED_TEXTS = [
    "a <mask> b",
    "x<mask>y <mask>",
    "<MASK> and <Mask>z",
    "  <mask>\t<tool>  \u3000<mask>\u2000",
    "<tool><mask><|endoftext|><mask>",
    "word<tool> <tool>x",
    "\uff1cmask\uff1e \ufb01<mask>",
]


@pytest.mark.parametrize("name", ADDED_RULES)
def test_added_token_rules_equal_hf(name):
    for normalizer in (
        None,
        {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
    ):
        assert_same_ids(document(normalizer, flags=ADDED_RULES[name]), ADDED_TEXTS)


ADDED_CASES = [
    document(n, flags=f)
    for f in ADDED_RULES.values()
    for n in (None, {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]})
]
FRAGMENTS = st.lists(
    st.sampled_from(
        [
            "<mask>",
            "<tool>",
            "<|endoftext|>",
            "<MASK>",
            "\uff1cmask\uff1e",
            " ",
            "  ",
            "\t",
            "\u3000",
            "x",
            "A",
            "1",
            ".",
            "\u00e9",
            "\ufb01",
        ]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=200)
@given(st.sampled_from(range(len(ADDED_CASES))), FRAGMENTS)
def test_added_token_rules_equal_hf_on_hypothesis_strings(which, text):
    assert_same_ids(ADDED_CASES[which], [text])


ALL_COMPONENTS = [document(n) for n in NORMALIZERS.values()] + [
    document(pre_tokenizer=p) for p in PRE_TOKENIZERS.values()
]


@settings(max_examples=300)
@given(st.sampled_from(range(len(ALL_COMPONENTS))), HYPOTHESIS_TEXT)
def test_components_equal_hf_on_hypothesis_strings(which, text):
    assert_same_ids(ALL_COMPONENTS[which], [text])


# ---- model families (the README's table) --------------------------------------------

LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
DEEPSEEK_V3 = [
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
]
O200K = bytepair.resolve_pattern("o200k")

# name -> (normalizer, pre_tokenizer, added-token flags), as in each family's public tokenizer.json.
FAMILIES = {
    "GPT-2": (None, byte_level(use_regex=True), None),
    "Llama 3": (None, sequence(split(LLAMA3), byte_level()), None),
    "Qwen2/3": ({"type": "NFC"}, sequence(split(QWEN2), byte_level()), None),
    "DeepSeek V3": (None, sequence(*[split(p) for p in DEEPSEEK_V3], byte_level()), None),
    "GPT-NeoX/OLMo": ({"type": "NFC"}, byte_level(use_regex=True), None),
    "StarCoder": (
        None,
        sequence({"type": "Digits", "individual_digits": True}, byte_level(use_regex=True)),
        None,
    ),
    "RoBERTa": (None, byte_level(prefix_space=True, use_regex=True), {"<mask>": {"lstrip": True}}),
    "o200k/GPT-OSS": (None, sequence(split(O200K), byte_level()), None),
    "Claude (anthropic 0.20.0)": ({"type": "NFKC"}, byte_level(use_regex=True), None),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_family_pipeline_equals_hf(family, corpus_text):
    doc = document(*FAMILIES[family])
    texts = [corpus_text(name, 40_000, at=0.5) for name in CORPORA] + [
        TRICKY,
        "a <mask> b<|endoftext|>c",
    ]
    assert_same_ids(doc, texts)


@pytest.mark.parametrize("family", ["Qwen2/3", "RoBERTa"])
def test_family_saves_back_and_transformers_agrees(family, tmp_path, corpus_text):
    transformers = pytest.importorskip("transformers")
    ours, _ = pair(document(*FAMILIES[family]))
    ours.save(tmp_path / "tokenizer.json")
    again = bytepair.Tokenizer.load(tmp_path / "tokenizer.json")
    assert again == ours and again.pipeline == ours.pipeline
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    text = corpus_text("multilingual.txt", 20_000) + TRICKY
    assert fast.encode(text, add_special_tokens=False) == ours.encode(text, allowed_special="all")


def test_presets_keep_the_plain_path():
    for family in ("GPT-2", "Llama 3", "o200k/GPT-OSS"):
        ours, _ = pair(document(*FAMILIES[family]))
        assert ours.pipeline is None, family
    assert pair(document(*FAMILIES["Qwen2/3"]))[0].pipeline is not None


def test_pipeline_refused_by_formats_that_cannot_hold_it(tmp_path):
    ours, _ = pair(document(*FAMILIES["Qwen2/3"]))
    with pytest.raises(ValueError, match="cannot be written"):
        ours.save_tiktoken(tmp_path / "x.tiktoken")
    with pytest.raises(ValueError, match="cannot be written"):
        ours.save_gpt2(tmp_path / "gpt2")


def test_pretokenize_shows_normalized_pieces():
    ours, hf = pair(document({"type": "NFKC"}, byte_level(prefix_space=True, use_regex=True)))
    text = "\ufb01ne \uff21\uff22 12"
    hf_pieces = hf.pre_tokenizer.pre_tokenize_str(hf.normalizer.normalize_str(text))
    assert [p.encode() for p in ours.pretokenize(text)] == [
        bytepair.formats.str_to_token(p) for p, _ in hf_pieces
    ]


# ---- offsets ------------------------------------------------------------------------

OFFSET_CASES = (
    [document(*f) for f in FAMILIES.values()]
    + ALL_COMPONENTS[: len(NORMALIZERS)]
    + [
        document({"type": "NFKC"}, flags=ADDED_RULES["normalized"]),
        document(flags=ADDED_RULES["single_word"]),
    ]
)


def assert_same_offsets(doc: str, text: str) -> None:
    ours, hf = pair(doc)
    want = hf.encode(text, add_special_tokens=False)
    assert ours.encode_with_offsets(text) == (want.ids, want.offsets), text[:100]


@pytest.mark.parametrize("which", range(len(OFFSET_CASES)))
def test_offsets_stay_in_original_characters_as_hf(which, corpus_text):
    for text in [TRICKY, corpus_text("multilingual.txt", 8_000, at=0.4), *ADDED_TEXTS]:
        assert_same_offsets(OFFSET_CASES[which], text)


@settings(max_examples=200)
@given(st.sampled_from(range(len(OFFSET_CASES))), HYPOTHESIS_TEXT)
def test_offsets_equal_hf_on_hypothesis_strings(which, text):
    assert_same_offsets(OFFSET_CASES[which], text)


def test_pipeline_survives_pickle_and_every_encode_entry_point(corpus_text):
    import pickle

    ours, _ = pair(document(*FAMILIES["Qwen2/3"]))
    text = corpus_text("multilingual.txt", 30_000) + TRICKY
    again = pickle.loads(pickle.dumps(ours))
    assert again == ours and again.pipeline == ours.pipeline
    ids = ours.encode(text)
    assert again.encode(text) == ids
    assert ours.encode_batch([text, text[:100]], num_threads=2) == [ids, ours.encode(text[:100])]
    # No safe cuts with a pipeline: the stream is encoded as one text.
    assert list(ours.encode_iterable([text[:5000], text[5000:]])) == ids
    assert ours.count_tokens(text) == len(ids)


def test_info_names_the_pipeline(tmp_path, capsys):
    from bytepair.cli import main as cli_main

    (tmp_path / "t.json").write_text(document(*FAMILIES["RoBERTa"]), encoding="utf-8")
    assert bytepair.formats.info(tmp_path / "t.json")["pipeline"] == (
        "pre-tokenizer ByteLevel(add_prefix_space); added-token rules <mask> (lstrip)"
    )
    assert cli_main(["info", str(tmp_path / "t.json")]) == 0
    assert "pipeline        pre-tokenizer ByteLevel(add_prefix_space)" in capsys.readouterr().out
    (tmp_path / "q.json").write_text(document(*FAMILIES["Qwen2/3"]), encoding="utf-8")
    assert (
        bytepair.formats.info(tmp_path / "q.json")["pipeline"]
        == "normalizer NFC; pre-tokenizer Split, ByteLevel"
    )


def test_dropout_through_a_pipeline_spells_the_same_text():
    ours, _ = pair(
        document(
            {"type": "NFKC"}, byte_level(prefix_space=True, use_regex=True), ADDED_RULES["lstrip"]
        )
    )
    text = TRICKY + " a <mask> b " + TRICKY
    plain = ours.encode(text, allowed_special="all")
    dropped = ours.encode(text, allowed_special="all", dropout=0.5, seed=7)
    assert dropped != plain and ours.decode(dropped) == ours.decode(plain)
    assert ours.encode(text, allowed_special="all", dropout=0.5, seed=7) == dropped
