"""tokenizer.json files as HuggingFace tokenizers and transformers read and
write them: OpenAI's encodings and the tokenizers we train, saved by us, give
our ids in ``tokenizers.Tokenizer.from_file`` and
``transformers.PreTrainedTokenizerFast`` on held-out corpus slices; files HF
itself writes (the Llama-3 layout, Isolated and Removed Splits of a regex that
leaves text between matches, ByteLevel without a regex, a hub-style GPT-2
file, added tokens HF renumbers) load with HF's ids; a part that would change
the ids is an error naming its key.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from unittest import mock

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from _gpt2 import (  # noqa: E402
    EOT,
    HF_SLICES,
    OPENAI,
    PRESETS,
    assert_same_ids,
    byte_vocab,
    gpt2_tokenizer,
    openai_tokenizer,
    tiktoken_official_pattern,
    trained,
)
from conftest import corpora_dir, read_slice  # noqa: E402

import bytepair  # noqa: E402
from bytepair import formats  # noqa: E402

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


# ---- tokenizer.json -> HF tokenizers and transformers -----------------------------------


def transformers_fast(path: Path):
    transformers = pytest.importorskip("transformers")
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))


def check_hf_and_transformers(tok: bytepair.Tokenizer, path: Path, label: str) -> None:
    """tokenizers.Tokenizer.from_file and transformers.PreTrainedTokenizerFast read
    `path` and give our ids on held-out corpus slices (special tokens included)."""
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(path))
    fast = transformers_fast(path)
    specials = "".join(tok.special_tokens)
    for rel, start in HF_SLICES:
        text = read_slice(rel, start, 200_000)
        text = specials + text[:100_000] + EOT.join(text[100_000:].split("\n\n"))
        ours = tok.encode(text, allowed_special="all")
        assert_same_ids(
            hf.encode(text, add_special_tokens=False).ids,
            ours,
            text=text,
            decode_bytes=tok.decode_bytes,
            label=f"HF tokenizers, {label}, {rel}",
        )
        assert_same_ids(
            fast(text, add_special_tokens=False)["input_ids"],
            ours,
            text=text,
            decode_bytes=tok.decode_bytes,
            label=f"transformers, {label}, {rel}",
        )
    assert fast.convert_tokens_to_ids(list(tok.special_tokens)) == list(tok.special_tokens.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", OPENAI)
def test_openai_tokenizer_json_in_hf_and_transformers(tmp_path, name):
    """cl100k's special tokens (100257..100260, 100276) and o200k's (199999, 200018)
    leave gaps HF would renumber; save() lists them in model.vocab so it does not."""
    tok = openai_tokenizer(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok.save(tmp_path / "tokenizer.json")
    doc = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert [(t["content"], t["id"]) for t in doc["added_tokens"]] == list(
        tok.special_tokens.items()
    )
    check_hf_and_transformers(tok, tmp_path / "tokenizer.json", name)
    assert bytepair.Tokenizer.load(tmp_path / "tokenizer.json") == tok


@pytest.mark.parametrize("pattern", PRESETS)
def test_trained_round_trips_through_tiktoken_and_hf(tmp_path, pattern):
    """A tokenizer trained with each preset: to_tiktoken / from_tiktoken_encoding,
    save_tiktoken / load, save / load all give it back exactly, and tiktoken, HF
    tokenizers and transformers encode held-out text to its ids."""
    tok = trained(pattern)
    enc = tok.to_tiktoken()
    assert bytepair.Tokenizer.from_tiktoken_encoding(enc) == tok
    tok.save_tiktoken(tmp_path / "tok.tiktoken")
    assert bytepair.Tokenizer.load(tmp_path / "tok.tiktoken") == tok
    tok.save(tmp_path / "tok.json")
    assert bytepair.Tokenizer.load(tmp_path / "tok.json") == tok
    for rel, start in HF_SLICES:
        text = read_slice(rel, start + 1_000_000, 500_000)
        assert_same_ids(
            enc.encode(text, allowed_special="all"),
            tok.encode(text, allowed_special="all"),
            text=text,
            decode_bytes=tok.decode_bytes,
            label=f"to_tiktoken, {pattern}, {rel}",
        )
    check_hf_and_transformers(tok, tmp_path / "tok.json", f"trained {pattern}")


def test_transformers_skips_cleanly_without_it(tmp_path):
    """The transformers checks skip (not fail) when it is not installed."""
    with mock.patch.dict(sys.modules, {"transformers": None}):
        with pytest.raises(pytest.skip.Exception):
            transformers_fast(tmp_path / "none.json")


def hf_written(
    tmp_path: Path, tok: bytepair.Tokenizer, pre_tokenizer, name: str, post_processor=None
) -> Path:
    """A tokenizer.json written by HF tokenizers itself from `tok`'s vocab and merges."""
    from tokenizers import Tokenizer, decoders, models

    vocab = {formats.token_to_str(b): i for b, i in tok.mergeable_ranks.items()}
    merges = [(formats.token_to_str(a), formats.token_to_str(b)) for a, b in tok.merges]
    hf = Tokenizer(models.BPE(vocab, merges, ignore_merges=True))
    hf.pre_tokenizer = pre_tokenizer
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(list(tok.special_tokens))
    if post_processor is not None:
        hf.post_processor = post_processor
    path = tmp_path / name
    hf.save(str(path))
    return path


def test_hf_written_llama3_layout(tmp_path):
    """The Llama-3 / GPT-4-style layout as HF writes it: Split(Llama-3 regex) +
    ByteLevel(use_regex=false), merges as pairs, ignore_merges, a BOS template
    post-processor (ignored, with a warning: HF adds it only with add_special_tokens)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, pre_tokenizers, processors

    base = trained(LLAMA3_PATTERN)
    tok = bytepair.Tokenizer(
        base.vocab, base.merges, [EOT, "<|begin_of_text|>"], pattern=LLAMA3_PATTERN
    )
    bos = tok.special_tokens["<|begin_of_text|>"]
    pre = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    post = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", bos)]
    )
    path = hf_written(tmp_path, tok, pre, "llama3.json", post)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(doc["model"]["merges"][0], list) and doc["model"]["ignore_merges"] is True
    with pytest.warns(UserWarning, match="post_processor"):
        loaded = bytepair.Tokenizer.load(path)
    # Llama 3's regex is a preset (its scanner: no regex engine), written back as it was.
    assert loaded.pattern == "llama3"
    assert (loaded.vocab, loaded.merges, loaded.special_tokens) == (
        tok.vocab,
        tok.merges,
        tok.special_tokens,
    )
    assert json.loads(formats.to_hf_json(loaded))["pre_tokenizer"]["pretokenizers"][0] == _split(
        LLAMA3_PATTERN
    )
    hf = tokenizers.Tokenizer.from_file(str(path))
    for rel, start in HF_SLICES:
        text = read_slice(rel, start, 200_000)
        ours = loaded.encode_ordinary(text)
        assert_same_ids(
            hf.encode(text, add_special_tokens=False).ids,
            ours,
            text=text,
            decode_bytes=tok.decode_bytes,
            label=f"Llama-3 layout, {rel}",
        )
        assert hf.encode(text).ids == [bos, *ours]


@pytest.mark.parametrize("behavior, invert", [("isolated", False), ("removed", True)])
def test_hf_split_regex_that_leaves_text_between_matches(tmp_path, behavior, invert):
    """A Split regex that does not match every character. HF's Isolated split keeps
    the text between two matches as a pre-token of its own, where our encode
    dropped it; Removed with invert drops it, in HF and here.
    Saved by us and loaded again, both split the same way in HF."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, pre_tokenizers

    tok = trained("gpt2")
    pre = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"[a-z]+| \d"), behavior, invert=invert),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    path = hf_written(tmp_path, tok, pre, "gaps.json")
    loaded = bytepair.Tokenizer.load(path)
    text = "Hello, World! 42 apples cost 3 dollars; \u00e9t\u00e9  \n\n\tend." * 20 + read_slice(
        "enwiki.txt", 3_000_000, 20_000
    )
    ids = loaded.encode_ordinary(text)
    assert (
        tokenizers.Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids == ids
    )
    assert (loaded.decode(ids) == text) == (behavior == "isolated")
    loaded.save(tmp_path / "again.json")
    again = bytepair.Tokenizer.load(tmp_path / "again.json")
    assert again.pattern == loaded.pattern
    assert (
        tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
        .encode(text, add_special_tokens=False)
        .ids
        == ids
    )


def test_hf_written_byte_level_without_regex(tmp_path):
    """ByteLevel(use_regex=false) alone: no pre-tokenization, each stretch of text
    between special tokens is one piece, for HF and for us."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import pre_tokenizers

    tok = trained("gpt2")
    path = hf_written(
        tmp_path,
        tok,
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        "noregex.json",
    )
    loaded = bytepair.Tokenizer.load(path)
    assert (
        loaded.vocab == tok.vocab
        and loaded.merges == tok.merges
        and loaded.pattern == formats.hf_regex.WHOLE_TEXT
    )
    hf = tokenizers.Tokenizer.from_file(str(path))
    text = read_slice("shakespeare.txt", 100_000, 20_000)
    text = EOT.join([text[:5_000], text[5_000:12_000], "", text[12_000:]])
    ids = loaded.encode(text, allowed_special="all")
    assert (
        hf.encode(text, add_special_tokens=False).ids == ids and len(ids) < len(text.encode()) / 2
    )


def test_hf_hub_style_gpt2_file(tmp_path):
    """GPT-2 as the Hub's tokenizer.json spells it: <|endoftext|> in model.vocab and
    added_tokens (normalized), empty subword prefix/suffix strings, no ignore_merges,
    a ByteLevel post-processor."""
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    root = corpora_dir() / "cs336"
    hf = Tokenizer(
        models.BPE.from_file(str(root / "gpt2_vocab.json"), str(root / "gpt2_merges.txt"))
    )
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.post_processor = processors.ByteLevel(trim_offsets=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([EOT])
    hf.save(str(tmp_path / "hub.json"))
    doc = json.loads((tmp_path / "hub.json").read_text(encoding="utf-8"))
    doc["model"].update(continuing_subword_prefix="", end_of_word_suffix="")
    doc["model"].pop("ignore_merges", None)
    doc["added_tokens"][0]["normalized"] = True
    (tmp_path / "hub.json").write_text(json.dumps(doc), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bytepair.Tokenizer.load(tmp_path / "hub.json") == gpt2_tokenizer()


def test_hf_renumbered_added_tokens_follow_hf(tmp_path):
    """A file whose added-token ids are not the ones HF gives them (written by hand,
    or by an older bytepair): we warn and use HF's ids, which HF confirms."""
    tokenizers = pytest.importorskip("tokenizers")
    doc = json.loads(
        formats.to_hf_json(bytepair.Tokenizer(byte_vocab() | {256: b"ab"}, [(b"a", b"b")]))
    )
    doc["added_tokens"] = [
        {
            "id": i,
            "content": c,
            "special": True,
            "normalized": False,
            "lstrip": False,
            "rstrip": False,
            "single_word": False,
        }
        for c, i in [("<|x|>", 300), ("<|y|>", 299), ("<|z|>", 257)]
    ]
    (tmp_path / "t.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.warns(UserWarning) as record:
        tok = bytepair.Tokenizer.load(tmp_path / "t.json")
    assert [str(w.message).split(": ", 1)[1][:70] for w in record] == [
        "added_tokens[0] '<|x|>' has id 300 in the file, but HuggingFace gives ",
        "added_tokens[1] '<|y|>' has id 299 in the file, but HuggingFace gives ",
        "added_tokens[2] '<|z|>' has id 257 in the file, but HuggingFace gives ",
    ]
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    text = "ab<|x|><|y|>a<|z|>"
    assert tok.special_tokens == {"<|x|>": 257, "<|y|>": 258, "<|z|>": 259}
    assert (
        hf.encode(text, add_special_tokens=False).ids
        == tok.encode(text, allowed_special="all")
        == [256, 257, 258, 97, 259]
    )
    assert (
        formats.hf_added_token_ids(["<|x|>", "<|y|>", "<|z|>"], doc["model"]["vocab"])
        == tok.special_tokens
    )


@pytest.fixture
def good_doc():
    # cl100k: written as Split + ByteLevel (GPT-2's pattern is HF's ByteLevel alone).
    tok = bytepair.Tokenizer(
        byte_vocab() | {256: b"ab", 257: b"abc"},
        [(b"a", b"b"), (b"ab", b"c")],
        [EOT],
        pattern="cl100k",
    )
    return json.loads(formats.to_hf_json(tok))


def _split(regex, **extra):
    return {
        "type": "Split",
        "pattern": {"Regex": regex},
        "behavior": "Isolated",
        "invert": False,
    } | extra


BYTE_LEVEL = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": True,
    "use_regex": False,
}


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda d: d["model"].update(dropout=0.1), "model.dropout"),
        (lambda d: d["model"].update(byte_fallback=True), "model.byte_fallback"),
        (
            lambda d: d["model"].update(continuing_subword_prefix="##"),
            "model.continuing_subword_prefix",
        ),
        (lambda d: d["model"].update(end_of_word_suffix="</w>"), "model.end_of_word_suffix"),
        (
            lambda d: d.update(
                pre_tokenizer={
                    "type": "Sequence",
                    "pretokenizers": [_split(r"\p{N}{1,3}+|\D+"), BYTE_LEVEL],
                }
            ),
            "possessive interval",
        ),
        # tiktoken's cl100k string as is: HF would split digit runs of any length.
        (
            lambda d: d.update(
                pre_tokenizer={
                    "type": "Sequence",
                    "pretokenizers": [_split(bytepair.resolve_pattern("cl100k")), BYTE_LEVEL],
                }
            ),
            "possessive interval",
        ),
        (lambda d: d.update(pre_tokenizer={"type": "Metaspace"}), "pre_tokenizer 'Metaspace'"),
        # Supported components in unsupported places or forms (tests/test_pipeline.py has the
        # supported ones).
        (
            lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(behavior="Bogus"),
            "pretokenizers[0].behavior 'Bogus'",
        ),
        (lambda d: d["pre_tokenizer"]["pretokenizers"].reverse(), "a step after ByteLevel"),
        (lambda d: d.update(pre_tokenizer=_split("a")), "no ByteLevel step"),
        (lambda d: d.update(normalizer={"type": "BertNormalizer"}), "normalizer 'BertNormalizer'"),
        (lambda d: d["model"].update(merges=["ab c", "a b"]), "model.merges[0]"),
        (lambda d: d["model"].update(merges=["a b", "ab c", "a b"]), "model.merges[2]"),
        (lambda d: d["model"].update(ignore_merges=False, merges=["a b"]), "model.vocab['abc']"),
    ],
)
def test_hf_unsupported_parts_are_named(tmp_path, good_doc, change, needle):
    change(good_doc)
    (tmp_path / "bad.json").write_text(json.dumps(good_doc), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        bytepair.Tokenizer.load(tmp_path / "bad.json")
    msg = str(info.value)
    assert str(tmp_path / "bad.json") in msg and needle in msg, msg


def test_hf_supported_variants_load(tmp_path, good_doc):
    """Accepted: an empty Sequence normalizer, dropout 0, merges as [left, right]
    pairs, a single-ByteLevel Sequence, tiktoken's possessive GPT-2 spelling (a preset)."""
    good_doc["normalizer"] = {"type": "Sequence", "normalizers": []}
    good_doc["model"].update(
        dropout=0.0, merges=[m.split(" ") for m in good_doc["model"]["merges"]]
    )
    (tmp_path / "a.json").write_text(json.dumps(good_doc), encoding="utf-8")
    assert bytepair.Tokenizer.load(tmp_path / "a.json").encode("abc") == [257]
    good_doc["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [{"type": "ByteLevel", "add_prefix_space": False}],
    }
    (tmp_path / "b.json").write_text(json.dumps(good_doc), encoding="utf-8")
    assert bytepair.Tokenizer.load(tmp_path / "b.json").pattern == "gpt2"
    good_doc["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [_split(tiktoken_official_pattern("gpt2")), BYTE_LEVEL],
    }
    (tmp_path / "c.json").write_text(json.dumps(good_doc), encoding="utf-8")
    loaded = bytepair.Tokenizer.load(tmp_path / "c.json")
    assert loaded.pattern == "gpt2"
    # HF's engine splits that spelling as our gpt2 preset does (whitespace runs, line ends, text
    # end).
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "c.json"))
    text = read_slice("enwik8_head.txt", 1_500_000, 100_000) + " x  \n\n y \t\n  \r\n 12345 it's  "
    pieces = [formats.str_to_token(p) for p, _ in hf.pre_tokenizer.pre_tokenize_str(text)]
    assert pieces == [p.encode() for p in loaded.pretokenize(text)]
