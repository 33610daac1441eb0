"""`bytepair.patch_transformers()` (python/bytepair/integrations/transformers_backend/)
against transformers' own backend: every call shape people make, on every
model family of the README's table, gives the same output patched and
unpatched (ids, masks, offsets, overflowing, padding, truncation, pairs,
pre-tokenized words, special-token roles, chat templates, decoding), on slices
of the corpora and on hypothesis strings; what bytepair does not serve goes to
HF (and is counted); threads agree; pickling and save_pretrained round-trip.

Each family's folder is its tokenizer.json pipeline (tests/test_pipeline.py's
builders, over a vocabulary trained here) with the post-processor, extra
added tokens, tokenizer_config roles and chat template of the family's public
files.
"""

from __future__ import annotations

import functools
import json
import logging
import pickle
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

transformers = pytest.importorskip("transformers")
pytest.importorskip("transformers.tokenization_utils_tokenizers")

from test_pipeline import FAMILIES, HYPOTHESIS_TEXT, TRICKY, byte_level, document  # noqa: E402

import bytepair  # noqa: E402
from bytepair.integrations.transformers_backend import (  # noqa: E402
    hf_calls,
    is_patched,
    served_by_bytepair,
)

EOT = "<|endoftext|>"
BatchEncoding = transformers.BatchEncoding
TokenizersBackend = transformers.PreTrainedTokenizerFast

# ---- the families' files -----------------------------------------------------------------


def byte_level_post(add_prefix_space: bool, trim_offsets: bool) -> dict:
    return {**byte_level(add_prefix_space, True), "trim_offsets": trim_offsets}


def template(single: list, pair: list, ids: dict) -> dict:
    """A TemplateProcessing node; pieces are "$A", "$B:1" or a special token "<s>:0"."""

    def piece(p: str) -> dict:
        name, _, type_id = p.partition(":")
        if name in ("$A", "$B"):
            return {"Sequence": {"id": name[1], "type_id": int(type_id or 0)}}
        return {"SpecialToken": {"id": name, "type_id": int(type_id or 0)}}

    used = {p.partition(":")[0] for p in single + pair} - {"$A", "$B"}
    return {
        "type": "TemplateProcessing",
        "single": [piece(p) for p in single],
        "pair": [piece(p) for p in pair],
        "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in used},
    }


def sequence(*steps) -> dict:
    return {"type": "Sequence", "processors": list(steps)}


CHATML = (
    "{% for m in messages %}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
LLAMA3_CHAT = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
DEEPSEEK_CHAT = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}<\uff5cUser\uff5c>"
    "{{ m['content'] }}{% else %}<\uff5cAssistant\uff5c>{{ m['content'] }}"
    "<\uff5cend\u2581of\u2581sentence\uff5c>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<\uff5cAssistant\uff5c>{% endif %}"
)
HARMONY_CHAT = (
    "{% for m in messages %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>"
    "{% endfor %}{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)
DS_BOS, DS_EOS = (
    "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",
)
ROBERTA_ROLES = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "sep_token": "</s>",
    "cls_token": "<s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "mask_token": "<mask>",
}

# name -> (pipeline of test_pipeline.FAMILIES, tokenizer_class, added tokens beyond
# the base's, post_processor(ids), tokenizer_config entries, chat template)
SETUPS = {
    "GPT-2": (
        "GPT-2",
        "GPT2Tokenizer",
        [],
        lambda ids: byte_level_post(True, False),
        {
            "bos_token": EOT,
            "eos_token": EOT,
            "unk_token": EOT,
            "clean_up_tokenization_spaces": True,
        },
        None,
    ),
    "Llama 3": (
        "Llama 3",
        "PreTrainedTokenizerFast",
        ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        lambda ids: sequence(
            byte_level_post(True, False),
            template(
                ["<|begin_of_text|>", "$A"],
                ["<|begin_of_text|>", "$A", "<|begin_of_text|>:1", "$B:1"],
                ids,
            ),
        ),
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "model_max_length": 512},
        LLAMA3_CHAT,
    ),
    "Qwen2/3": (
        "Qwen2/3",
        "Qwen2Tokenizer",
        ["<|im_start|>", "<|im_end|>"],
        None,
        {"eos_token": "<|im_end|>", "pad_token": EOT, "errors": "replace"},
        CHATML,
    ),
    "DeepSeek V3": (
        "DeepSeek V3",
        "PreTrainedTokenizerFast",
        [DS_BOS, DS_EOS, "<\uff5cUser\uff5c>", "<\uff5cAssistant\uff5c>"],
        lambda ids: sequence(
            byte_level_post(False, True),
            template([DS_BOS, "$A"], [DS_BOS, "$A", f"{DS_BOS}:1", "$B:1"], ids),
        ),
        {"bos_token": DS_BOS, "eos_token": DS_EOS},
        DEEPSEEK_CHAT,
    ),
    "GPT-NeoX/OLMo": (
        "GPT-NeoX/OLMo",
        "GPTNeoXTokenizer",
        [],
        lambda ids: byte_level_post(False, True),
        {"bos_token": EOT, "eos_token": EOT},
        None,
    ),
    "StarCoder": (
        "StarCoder",
        "PreTrainedTokenizerFast",
        ["<fim_prefix>", "<fim_middle>", "<fim_suffix>"],
        lambda ids: byte_level_post(False, False),
        {"bos_token": EOT, "eos_token": EOT},
        None,
    ),
    "RoBERTa": (
        "RoBERTa",
        "PreTrainedTokenizerFast",
        ["<s>", "<pad>", "</s>", "<unk>"],
        lambda ids: {
            "type": "RobertaProcessing",
            "sep": ["</s>", ids["</s>"]],
            "cls": ["<s>", ids["<s>"]],
            "trim_offsets": True,
            "add_prefix_space": True,
        },
        {**ROBERTA_ROLES, "model_input_names": ["input_ids", "attention_mask"]},
        None,
    ),
    "o200k/GPT-OSS": (
        "o200k/GPT-OSS",
        "PreTrainedTokenizerFast",
        ["<|start|>", "<|message|>", "<|end|>", "<|return|>"],
        lambda ids: template(["$A"], ["$A", "$B:1"], ids),
        {"eos_token": "<|return|>", "pad_token": EOT},
        HARMONY_CHAT,
    ),
    "Claude (anthropic 0.20.0)": (
        "Claude (anthropic 0.20.0)",
        "PreTrainedTokenizerFast",
        [],
        None,
        {"eos_token": EOT},
        None,
    ),
    # Not families: transformers' own RoBERTa class, and BERT's post-processor.
    "RoBERTa (RobertaTokenizer)": (
        "RoBERTa",
        "RobertaTokenizer",
        ["<s>", "<pad>", "</s>", "<unk>"],
        None,
        ROBERTA_ROLES,
        None,
    ),
    "BertProcessing": (
        "GPT-2",
        "PreTrainedTokenizerFast",
        ["[CLS]", "[SEP]", "[PAD]"],
        lambda ids: {
            "type": "BertProcessing",
            "sep": ["[SEP]", ids["[SEP]"]],
            "cls": ["[CLS]", ids["[CLS]"]],
        },
        {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]"},
        None,
    ),
}
FAMILY_NAMES = list(SETUPS)


def family_files(name: str) -> tuple[str, dict]:
    """(tokenizer.json text, tokenizer_config) of a family's folder."""
    pipeline, cls, extra, post, config, chat = SETUPS[name]
    doc = json.loads(document(*FAMILIES[pipeline]))
    ids = {t["content"]: t["id"] for t in doc["added_tokens"]}
    for token in extra:
        ids[token] = max(ids.values()) + 1
        doc["added_tokens"].append(
            {
                "id": ids[token],
                "content": token,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )
    doc["post_processor"] = post(ids) if post else None
    config = {"tokenizer_class": cls, "model_max_length": 4096, **config}
    if chat:
        config["chat_template"] = chat
    return json.dumps(doc, ensure_ascii=False), config


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """family -> its folder (written on first use)."""

    @functools.cache
    def get(name: str):
        path = tmp_path_factory.mktemp("family")
        text, config = family_files(name)
        (path / "tokenizer.json").write_text(text, encoding="utf-8")
        (path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        return path

    return get


def load(path):
    tok = transformers.AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


@pytest.fixture(autouse=True)
def unpatched_after():
    yield
    bytepair.unpatch_transformers()


def documents(corpus_text, specials=()) -> list[str]:
    """Paragraphs of every kind of corpus, edge cases, and the family's special tokens in text."""
    docs = []
    for name in ("enwiki.txt", "code.txt", "multilingual.txt", "shakespeare.txt"):
        text = corpus_text(name, 6_000, at=0.37)
        docs += [p for p in text.split("\n\n") if p.strip()][:5]
    joined = "".join(f" {s} x{s}" for s in list(specials)[:4])
    ends = [
        "line\n  ",
        f"a\n \t{EOT}b",
        "\r\n \n\t ",
        "x.\n\n  ",
    ]  # where Llama 3 differs from cl100k
    return docs + [TRICKY, f"a <mask> b{EOT}c{joined}", "", " ", "  lead", "trail  ", "\n\n"] + ends


# ---- comparing -------------------------------------------------------------------------------

ENCODING_ATTRS = (
    "ids",
    "type_ids",
    "tokens",
    "offsets",
    "attention_mask",
    "special_tokens_mask",
    "sequence_ids",
    "word_ids",
    "n_sequences",
)


def assert_same_encoding(got, want, where: str) -> None:
    for attr in ENCODING_ATTRS:
        assert getattr(got, attr) == getattr(want, attr), (where, attr)
    n = len(want)
    assert len(got) == n
    for i in {0, 1, 2, n // 2, n - 2, n - 1, n, n + 1} - {-1, -2}:
        assert got.token_to_sequence(i) == want.token_to_sequence(i), (where, i)
        assert got.token_to_chars(i) == want.token_to_chars(i), (where, i)
    for pos in (0, 1, 5, 17):
        for seq in (0, 1):
            assert got.char_to_token(pos, seq) == want.char_to_token(pos, seq), (where, pos, seq)
    assert len(got.overflowing) == len(want.overflowing), where
    for k, (g, w) in enumerate(zip(got.overflowing, want.overflowing)):
        assert_same_encoding(g, w, f"{where} overflowing[{k}]")


def assert_same(got, want, where: str = "") -> None:
    if isinstance(want, BatchEncoding):
        assert isinstance(got, BatchEncoding), where
        assert list(got.keys()) == list(want.keys()), where
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key}]")
        assert got.n_sequences == want.n_sequences, where
        assert (got.encodings is None) == (want.encodings is None), where
        for k, (g, w) in enumerate(zip(got.encodings or [], want.encodings or [])):
            assert_same_encoding(g, w, f"{where} encodings[{k}]")
        assert len(got.encodings or []) == len(want.encodings or [])
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype, where
        assert got.shape == want.shape, where
        if want.dtype == object:  # ragged rows: an array of arrays
            for k, (g, w) in enumerate(zip(got, want)):
                assert_same(g, w, f"{where}[{k}]")
        else:
            assert (got == want).all(), where
    elif type(want).__module__ == "torch":  # return_tensors="pt"
        assert type(got) is type(want) and got.dtype == want.dtype, where
        assert got.shape == want.shape and bool((got == want).all()), where
    else:
        assert got == want, where


def outcome(call):
    """call()'s value, or the type and message of what it raised."""
    try:
        return ("value", call())
    except BaseException as e:  # HF's errors must be ours too (a Rust panic is a BaseException)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return ("raised", type(e).__name__, str(e))


def assert_both(tok, call, where: str = "", hf_serves: str | None = None) -> None:
    """call(tok) unpatched and patched give the same outcome; bytepair serves
    it (or, with `hf_serves`, HF does, for that reason)."""
    want = outcome(lambda: call(tok))
    with bytepair.patch_transformers():
        before = hf_calls()
        got = outcome(lambda: call(tok))
        served = hf_calls() - before
    if hf_serves is None:
        assert not served, (where, served)
    else:
        assert served[hf_serves] >= 1, (where, served)
    assert got[0] == want[0], (where, got[:3], want[:3])
    if want[0] == "raised":
        assert got[1:] == want[1:], where
    else:
        assert_same(got[1], want[1], where)


# ---- every call shape, every family -------------------------------------------------------


def call_shapes(docs: list[str], specials: list[str]) -> dict:
    short = [d[:300] for d in docs]
    pairs_a, pairs_b = short[:8], short[8:16]
    words = [d.split(" ")[:40] for d in short[:6]]
    return {
        "tok(text)": lambda t: [t(d) for d in docs],
        "tok(text) no specials": lambda t: [t(d, add_special_tokens=False) for d in docs[:6]],
        "tok(text) split_special_tokens": lambda t: t(docs[-6], split_special_tokens=True),
        "tok(text) np": lambda t: t(docs[0], return_tensors="np"),
        "tok(batch)": lambda t: t(docs),
        "tok(batch) padded truncated np": lambda t: t(
            docs,
            padding=True,
            truncation=True,
            max_length=64,
            return_offsets_mapping=True,
            return_attention_mask=True,
            return_tensors="np",
        ),
        "tok(batch) np arrays": lambda t: t(
            docs, padding=True, truncation=True, max_length=64, return_tensors="np"
        ),
        "tok(batch) np arrays left, every key": lambda t: t(
            short,
            padding="max_length",
            truncation=True,
            max_length=40,
            padding_side="left",
            return_tensors="np",
            return_token_type_ids=True,
            return_special_tokens_mask=True,
            return_length=True,
        ),
        "tok(batch) np arrays multiple of 8, left truncation": lambda t: (
            setattr(t, "truncation_side", "left"),
            t(
                short,
                padding=True,
                pad_to_multiple_of=8,
                truncation=True,
                max_length=30,
                return_tensors="np",
            ),
            setattr(t, "truncation_side", "right"),
        )[1],
        "tok(batch) np arrays, no truncation": lambda t: t(
            short, padding=True, return_tensors="np"
        ),
        "tok(batch) np ragged": lambda t: t(
            short, padding="max_length", max_length=8, return_tensors="np"
        ),
        "tok(batch) np no specials": lambda t: t(
            docs,
            padding=True,
            truncation=True,
            max_length=3,
            add_special_tokens=False,
            return_tensors="np",
        ),
        "tok(batch) short truncation": lambda t: t(
            docs, padding=True, truncation=True, max_length=7, return_offsets_mapping=True
        ),
        "tok(batch) padding only": lambda t: t(
            short, padding=True, return_special_tokens_mask=True
        ),
        "tok(batch) max_length left": lambda t: t(
            short,
            padding="max_length",
            truncation=True,
            max_length=40,
            padding_side="left",
            return_length=True,
        ),
        "tok(batch) multiple of 8": lambda t: t(short, padding=True, pad_to_multiple_of=8),
        "tok(batch) stride overflow": lambda t: t(
            docs,
            truncation=True,
            max_length=24,
            stride=5,
            return_overflowing_tokens=True,
            padding=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
        ),
        "tok(batch) stride 0 left": lambda t: (
            setattr(t, "truncation_side", "left"),
            t(short, truncation=True, max_length=9, return_overflowing_tokens=True),
            setattr(t, "truncation_side", "right"),
        )[1],
        "pairs": lambda t: t(
            pairs_a, pairs_b, return_offsets_mapping=True, return_token_type_ids=True
        ),
        "pair single": lambda t: t(docs[0], docs[1], return_token_type_ids=True),
        "pairs longest_first": lambda t: t(
            pairs_a,
            pairs_b,
            truncation=True,
            max_length=30,
            padding=True,
            return_token_type_ids=True,
        ),
        "pairs only_second overflow": lambda t: t(
            [a[:6] for a in pairs_a],
            pairs_b,
            truncation="only_second",
            max_length=40,
            stride=3,
            return_overflowing_tokens=True,
            padding="max_length",
        ),
        "pairs only_first": lambda t: t(
            pairs_a, [b[:6] for b in pairs_b], truncation="only_first", max_length=60
        ),
        "pairs overflow both": lambda t: t(
            pairs_a[:3],
            pairs_b[:3],
            truncation=True,
            max_length=20,
            stride=2,
            return_overflowing_tokens=True,
        ),
        "words": lambda t: t(words[0], is_split_into_words=True, return_offsets_mapping=True),
        "words batch": lambda t: t(
            words, is_split_into_words=True, padding=True, truncation=True, max_length=20
        ),
        "words pairs": lambda t: t(
            words[:3],
            words[3:],
            is_split_into_words=True,
            return_offsets_mapping=True,
            return_overflowing_tokens=True,
            truncation=True,
            max_length=25,
        ),
        "encode": lambda t: [t.encode(d) for d in docs],
        "encode no specials": lambda t: [t.encode(d, add_special_tokens=False) for d in docs],
        "encode truncated": lambda t: t.encode(docs[0], max_length=10, truncation=True),
        "encode pair": lambda t: t.encode(docs[0], docs[1]),
        "tokenize": lambda t: [t.tokenize(d) for d in docs],
        "tokenize with specials": lambda t: t.tokenize(docs[-6], add_special_tokens=True),
        "convert_tokens_to_ids": lambda t: [t.convert_tokens_to_ids(t.tokenize(d)) for d in docs],
        "decode": lambda t: [
            t.decode(t.encode(d), skip_special_tokens=skip, clean_up_tokenization_spaces=clean)
            for d in docs
            for skip in (False, True)
            for clean in (None, False, True)
        ],
        "batch_decode": lambda t: [
            t.batch_decode(
                t(docs)["input_ids"], skip_special_tokens=skip, clean_up_tokenization_spaces=clean
            )
            for skip in (False, True)
            for clean in (None, True)
        ],
        "decode one at a time": lambda t: [t.decode([i]) for i in t.encode(docs[2])],
        "decode specials": lambda t: t.decode(
            t.convert_tokens_to_ids(specials) + t.encode(docs[0]), skip_special_tokens=True
        ),
        "BatchEncoding lookups": lambda t: _lookups(t(short[:4], pairs_b[:4], padding=True)),
        "lists are the caller's": lambda t: _changed(t(short[:3], return_offsets_mapping=True)),
        "one text's lists are the caller's": lambda t: _changed(t(short[0]), single=True),
    }


def _changed(out, single: bool = False):
    """Change the returned lists in place: the encodings must not change with them."""
    for key in out:
        (out[key] if single else out[key][0]).append(7)
    e = out.encodings[0]
    return out, e.ids, e.attention_mask, e.offsets, e.tokens, len(e)


def _lookups(out) -> list:
    return [
        (out.tokens(b), out.sequence_ids(b), out.word_ids(b), out.token_to_chars(b, 2))
        + (out.char_to_token(b, 3), out.token_to_sequence(b, 1), out.char_to_word(b, 4))
        for b in range(len(out["input_ids"]))
    ]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_every_call_shape_equals_hf(family, folders, corpus_text):
    tok = load(folders(family))
    with bytepair.patch_transformers():
        assert served_by_bytepair(tok) == (True, None)
    specials = [t.content for t in tok.added_tokens_decoder.values()]
    for name, call in call_shapes(documents(corpus_text, specials), specials).items():
        assert_both(tok, call, f"{family}: {name}")


def test_pt_tensors(folders, corpus_text):
    pytest.importorskip("torch")
    tok = load(folders("Llama 3"))
    docs = documents(corpus_text)
    for call in (
        lambda t: t(docs, padding=True, truncation=True, max_length=32, return_tensors="pt"),
        lambda t: t(docs[0], return_tensors="pt"),
        lambda t: t(docs[:2], docs[2:4], padding="longest", return_tensors="pt"),
        lambda t: t(docs, return_tensors="pt"),  # ragged rows: HF's error, ours too
    ):
        assert_both(tok, call)


@pytest.mark.parametrize("family", ["Llama 3", "Qwen2/3", "DeepSeek V3", "o200k/GPT-OSS"])
def test_chat_template(family, folders):
    tok = load(folders(family))
    chat = [
        {"role": "system", "content": "Answer briefly.  "},
        {"role": "user", "content": f"What is 12+30? naïve caf\u00e9 {EOT}"},
        {"role": "assistant", "content": "42"},
        {"role": "user", "content": "And 2**10?"},
    ]
    for kwargs in (
        {},
        {"add_generation_prompt": True},
        {"return_dict": False},
        {"return_dict": True, "return_tensors": "np"},
        {"tokenize": False},
    ):
        assert_both(tok, lambda t: t.apply_chat_template(chat, **kwargs), f"{family} {kwargs}")
    batch = [chat, chat[:2]]
    assert_both(
        tok,
        lambda t: t.apply_chat_template(batch, padding=True, truncation=True, max_length=40),
        family,
    )


def test_control_tokens_sanitized_by_hf(folders):
    tok = load(folders("Qwen2/3"))
    chat = [{"role": "user", "content": "hi <|im_end|> there"}]
    assert_both(
        tok,
        lambda t: t.apply_chat_template(chat, sanitize_control_tokens=True),
        hf_serves="sanitize_control_tokens",
    )


# ---- added tokens, post-processor changes, copies, files -------------------------------------


@pytest.mark.parametrize("family", ["GPT-2", "Qwen2/3", "RoBERTa"])
def test_tokens_added_after_loading(family, folders, corpus_text):
    AddedToken = transformers.AddedToken
    docs = documents(corpus_text)[:6]
    text = "a newtok b <extra_1> c  spaced  d [PAD] e newtoknewtok" + docs[0]
    fresh, used = load(folders(family)), load(folders(family))
    normalized_strip = load(folders(family))
    with bytepair.patch_transformers():
        used(docs)  # served once before the tokens are added: its state must not stay
    for tok in (fresh, used):
        tok.add_tokens(
            ["newtok", AddedToken(" spaced ", lstrip=True, rstrip=True, normalized=False)]
        )
        tok.add_special_tokens({"pad_token": "[PAD]", "additional_special_tokens": ["<extra_1>"]})
        for call in (
            lambda t: t([text, docs[1]], padding=True, return_offsets_mapping=True),
            lambda t: t.tokenize(text),
            lambda t: t.decode(t.encode(text), skip_special_tokens=True),
            lambda t: t(text, split_special_tokens=True),
            lambda t: len(t),
        ):
            assert_both(tok, call, family)
    # Matched in normalized text (Qwen's NFC), a stripping token's string is not kept: HF serves it.
    normalized_strip.add_tokens([AddedToken(" strip ", lstrip=True, rstrip=True, normalized=True)])
    reason = "a normalized added token that strips spaces" if family == "Qwen2/3" else None
    assert_both(normalized_strip, lambda t: t(["a  strip  b", "c"]), family, hf_serves=reason)


def test_post_processor_changes_are_followed(folders):
    tok = load(folders("GPT-NeoX/OLMo"))
    texts = ["one text", "another, longer text"]
    assert_both(tok, lambda t: t(texts))
    for flag in ("add_bos_token", "add_eos_token"):
        setattr(tok, flag, True)
        assert_both(tok, lambda t: t(texts, padding=True, return_token_type_ids=True), flag)
        assert_both(tok, lambda t: t.encode(texts[0]), flag)


def test_pickle_and_deepcopy(folders, corpus_text):
    import copy

    docs = documents(corpus_text)
    tok = load(folders("Llama 3"))
    want = tok(docs)["input_ids"]
    with bytepair.patch_transformers():
        assert tok(docs)["input_ids"] == want
        again = pickle.loads(pickle.dumps(tok))
        twin = copy.deepcopy(tok)
        for t in (again, twin):
            assert served_by_bytepair(t) == (True, None)
            assert t(docs)["input_ids"] == want
        batch = tok(docs[:3], padding=True, return_offsets_mapping=True)
        restored = pickle.loads(pickle.dumps(batch))
    assert pickle.loads(pickle.dumps(tok))(docs)["input_ids"] == want
    hf_batch = tok(docs[:3], padding=True, return_offsets_mapping=True)
    for r, h in zip(restored.encodings, hf_batch.encodings):
        assert type(r) is type(h)  # a tokenizers.Encoding once pickled
        assert_same_encoding(r, h, "pickled")


def test_save_pretrained_of_a_patched_tokenizer_reloads_unpatched(folders, tmp_path, corpus_text):
    docs = documents(corpus_text)
    with bytepair.patch_transformers():
        tok = load(folders("Qwen2/3"))
        tok.add_tokens(["zzz_new"])
        tok.add_special_tokens({"additional_special_tokens": ["<|tool_call|>"]})
        texts = docs + ["x zzz_new <|tool_call|> y"]
        want = tok(texts, padding=True, truncation=True, max_length=50)["input_ids"]
        tok.save_pretrained(tmp_path)
    reloaded = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded(texts, padding=True, truncation=True, max_length=50)["input_ids"] == want
    assert reloaded.decode(want[-1]) == tok.decode(want[-1])


# ---- what HF serves ------------------------------------------------------------------------


def test_calls_bytepair_does_not_serve_go_to_hf_with_the_same_result(folders):
    tok = load(folders("Qwen2/3"))
    assert_both(
        tok,
        lambda t: t("lone \ud800 surrogate"),
        hf_serves="a lone surrogate in the text (HF raises)",
    )
    assert_both(
        tok,
        lambda t: t(["a b c d e f g h"], truncation=True, max_length=4, stride=4),
        hf_serves="stride 4 >= max_length 4 (HF raises)",
    )
    assert_both(
        tok,
        lambda t: t(["a b c d e f g"], truncation="only_second", max_length=3),
        hf_serves="only_second truncation of a single sequence (HF raises)",
    )
    top = len(tok)
    assert_both(
        tok,
        lambda t: t.decode([100, top + 5, 101, 10**9]),
        hf_serves="ids outside the vocabulary",
    )
    assert_both(tok, lambda t: t([]), hf_serves="empty batch")
    flags = "add_special_tokens or split_special_tokens not a bool"
    for kwargs in ({"add_special_tokens": None}, {"split_special_tokens": 0}):
        assert_both(tok, lambda t: t(["a b"], **kwargs), hf_serves=flags)
        assert_both(tok, lambda t: t.encode("a b", **kwargs), hf_serves=flags)


def test_post_processor_not_served_goes_to_hf(folders):
    tok = load(folders("GPT-2"))
    # A template before a ByteLevel step: not a layout bytepair serves.
    ids = {t.content: i for i, t in tok.added_tokens_decoder.items()}
    tokenizers = pytest.importorskip("tokenizers")
    tok._tokenizer.post_processor = tokenizers.processors.Sequence(
        [
            tokenizers.processors.TemplateProcessing(
                single=f"{EOT} $A", pair=f"{EOT} $A $B:1", special_tokens=[(EOT, ids[EOT])]
            ),
            tokenizers.processors.ByteLevel(trim_offsets=True),
        ]
    )
    reason = "a post-processor Sequence with steps after its template"
    # Its sequence ranges overlap, and HF's own lookups answer those in hash order: data only.
    assert_both(
        tok, lambda t: dict(t(["a b", " c"], return_offsets_mapping=True)), hf_serves=reason
    )
    assert_both(tok, lambda t: t.decode([100, 200, ids[EOT], 300]))  # decoding is still served


def test_split_special_tokens_with_a_plain_token_inside_a_special_one(folders):
    tok = load(folders("GPT-2"))
    tok.add_tokens(["endof"])
    reason = "split_special_tokens with a plain added token inside a special one"
    assert_both(tok, lambda t: t(f"x{EOT}y endof", split_special_tokens=True), hf_serves=reason)
    assert_both(tok, lambda t: t(f"x{EOT}y endof"))


def test_a_tokenizer_bytepair_cannot_load_stays_on_hf_and_says_so_once(caplog):
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "[PAD]": 3, "hello": 4, "world": 5, "##s": 6}
    backend = tokenizers.Tokenizer(tokenizers.models.WordPiece(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    backend.decoder = tokenizers.decoders.WordPiece()
    tok = TokenizersBackend(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]")
    texts = ["hello worlds", "world hello unknown"]
    with caplog.at_level(logging.DEBUG, logger="bytepair.transformers"):
        for _ in range(3):
            assert_both(tok, lambda t: t(texts, padding=True), hf_serves="tokenizer not served")
            assert_both(tok, lambda t: t.decode([4, 5, 6]), hf_serves="tokenizer not served")
    said = [r.getMessage() for r in caplog.records if r.name == "bytepair.transformers"]
    assert len(said) == 1 and "stays on HF's backend" in said[0] and "WordPiece" in said[0], said
    with bytepair.patch_transformers():
        ok, reason = served_by_bytepair(tok)
    assert not ok and "WordPiece" in reason


def test_a_trained_sentencepiece_style_tokenizer_is_served(tmp_path, corpus_text):
    """bytepair's own tokenizer.json of a SentencePiece-style model it trained
    is served (the layouts of Llama 2, Mistral and Gemma:
    test_transformers_patch_spm.py)."""
    from bytepair.formats import spm

    texts = [corpus_text("enwiki.txt", 20_000, at=0.2)[:4000], "a  b", "<s>x</s>"]
    sp = bytepair.train_sentencepiece_from_iterator(texts * 3, 400)
    (tmp_path / "tokenizer.json").write_text(spm.to_hf_json(sp), encoding="utf-8")
    tok = TokenizersBackend(tokenizer_file=str(tmp_path / "tokenizer.json"), pad_token="</s>")
    with bytepair.patch_transformers():
        assert served_by_bytepair(tok) == (True, None)
    assert_both(tok, lambda t: t(texts, padding=True, return_offsets_mapping=True))
    assert_both(tok, lambda t: t.decode(t.encode(texts[0])))


# ---- threads, patch life cycle -------------------------------------------------------------------


def _thread_shapes(docs: list[str]) -> list:
    return [
        lambda t: t(docs)["input_ids"],
        lambda t: t(docs, truncation=True, max_length=12)["input_ids"],
        lambda t: t(docs, padding=True, truncation=True, max_length=30)["input_ids"],
        lambda t: t(docs, padding=True, truncation=True, max_length=20, return_tensors="np")[
            "input_ids"
        ].tolist(),
        lambda t: [t.encode(d) for d in docs[:5]] + [t(d)["input_ids"] for d in docs[5:9]],
        lambda t: t([d[:5] for d in docs[:4]], docs[4:8], truncation="only_second", max_length=30)[
            "input_ids"
        ],
        lambda t: t(
            docs[:6], stride=2, truncation=True, max_length=10, return_overflowing_tokens=True
        )["input_ids"],
        lambda t: [t.decode(ids) for ids in t(docs[:5])["input_ids"]],
        lambda t: t.batch_decode(t(docs[:5])["input_ids"], skip_special_tokens=True),
    ]


def _threads_disagree(tok, shapes: list, want: list, n_threads: int = 16) -> list:
    """Failures of `n_threads` threads calling `tok` at once, each cycling through `shapes`."""
    failures: list = []

    def work(k: int) -> None:
        try:
            for n in range(12):
                s = (k + n) % len(shapes)
                if shapes[s](tok) != want[s]:
                    failures.append(("different ids", s))
        except Exception as e:  # "Already borrowed" and the like
            failures.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


@pytest.mark.parametrize("family", ["RoBERTa", "Llama 3"])
def test_threads_share_one_tokenizer(family, folders, corpus_text):
    """16 Python threads call one tokenizer at once with mixed truncation,
    padding, pairs and overflow: the settings HF's backend keeps between calls,
    so that its threads see another call's settings (the RoBERTa case below) or
    "Already borrowed"; bytepair's calls leave them alone."""
    docs = documents(corpus_text)
    tok = load(folders(family))
    shapes = _thread_shapes(docs)
    want = [shape(tok) for shape in shapes]
    with bytepair.patch_transformers():
        failures = _threads_disagree(tok, shapes, want)
    assert not failures, failures[:5]
    if family == "RoBERTa":  # the test can fail: unpatched, HF's threads disagree
        assert _threads_disagree(tok, shapes, want)


def test_large_batches_pause_the_garbage_collector_and_restore_it(folders, corpus_text):
    """A served batch of at least `gc_pause.MIN_BATCH` texts runs (almost) no
    collection while it is built (unpatched, and with a small batch, the same
    calls run many at a low threshold; transformers' steps after ours may run
    one or two); the collector is on again afterwards, also after threads
    overlapped, and stays off in a program that turned it off. The ids are HF's."""
    import gc

    from bytepair.integrations.transformers_backend import gc_pause

    docs = (documents(corpus_text) * 20)[: 4 * gc_pause.MIN_BATCH]
    tok = load(folders("Llama 3"))
    want = tok(docs)["input_ids"]
    started: list = []

    def count(phase, info):
        if phase == "start":
            started.append(info["generation"])

    threshold = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(50)
    try:
        tok(docs)
        unpatched = len(started)
        assert unpatched >= 8, "the unpatched call runs collections (the test can fail)"
        with bytepair.patch_transformers():
            tok(docs)
            started.clear()
            assert tok(docs)["input_ids"] == want
            assert len(started) <= 2 and gc.isenabled(), started
            started.clear()
            kept = [tok(docs[k : k + 8]) for k in range(0, len(docs), 8)]
            assert len(started) >= unpatched // 2, "small batches run with the collector"
            del kept
            assert not _threads_disagree(tok, [lambda t: t(docs)["input_ids"]], [want], 4)
            assert gc.isenabled()
            gc.disable()
            tok(docs)
            assert not gc.isenabled()
            gc.enable()
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(count)
        gc.enable()


def test_large_batches_hand_out_id_lists_the_collector_does_not_track(folders, corpus_text):
    """The lists of ids of a served batch of at least `gc_pause.MIN_BATCH`
    texts (input_ids, attention_mask, the encodings' own ids) are untracked by
    the cyclic collector, so the collection after the batch does not traverse
    every id; smaller batches and unpatched calls keep tracked lists, and the
    values are HF's. `untrack_int_lists` leaves a list holding a container
    tracked."""
    import gc

    from bytepair._core import untrack_int_lists
    from bytepair.integrations.transformers_backend import gc_pause

    docs = (documents(corpus_text) * 20)[: 2 * gc_pause.MIN_BATCH]
    tok = load(folders("Llama 3"))
    want = tok(docs)
    assert all(gc.is_tracked(ids) for ids in want["input_ids"]), "unpatched lists are tracked"
    with bytepair.patch_transformers():
        got = tok(docs)
        small = tok(docs[:8])
    assert got["input_ids"] == want["input_ids"]
    assert got["attention_mask"] == want["attention_mask"]
    for key in ("input_ids", "attention_mask"):
        assert not any(gc.is_tracked(ids) for ids in got[key]), key
    assert not any(gc.is_tracked(e._ids) for e in got.encodings)
    assert all(gc.is_tracked(ids) for ids in small["input_ids"])
    mixed = [[1, 2], [1, []], [1, 2.0], (1, 2), "12"]
    assert untrack_int_lists(mixed) == 1
    assert [gc.is_tracked(x) for x in mixed[:3]] == [False, True, True]


def test_tokenizers_made_before_during_and_after_the_patch(folders):
    path = folders("StarCoder")
    text = "def f(x):\n    return x**2  # 12345"
    before = load(path)
    want = before(text, return_offsets_mapping=True)
    with bytepair.patch_transformers() as patch:
        during = load(path)
        for tok in (before, during):
            assert served_by_bytepair(tok) == (True, None)
            assert_same(tok(text, return_offsets_mapping=True), want)
        with bytepair.patch_transformers():  # nested: the outer patch stays
            pass
        assert is_patched() and patch.made
    assert not is_patched()
    after = load(path)
    for tok in (before, during, after):
        assert_same(tok(text, return_offsets_mapping=True), want)


def test_unpatch_restores_transformers_own_methods():
    names = ["_encode_plus", "_decode", "__call__", "encode", "decode", "_add_tokens"]
    own = {n: TokenizersBackend.__dict__.get(n) for n in names}
    bytepair.patch_transformers()
    assert all(TokenizersBackend.__dict__.get(n) is not own[n] for n in names)
    bytepair.unpatch_transformers()
    bytepair.unpatch_transformers()  # twice: nothing to do
    assert {n: TokenizersBackend.__dict__.get(n) for n in names} == own


def test_import_bytepair_does_not_import_transformers():
    code = "import sys, bytepair; print('transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- Llama 3's and Qwen2's regexes on their core presets ---------------------------------------

WHITESPACE_TEXT = st.lists(
    st.sampled_from(
        ["\n", "\r", " ", "\t", "\u3000", "\x0b", "a", "B", "1", "123", ".", "'s", EOT, "<mask>"]
    ),
    max_size=14,
).map("".join)


@settings(max_examples=150)
@given(
    family=st.sampled_from(["Llama 3", "Qwen2/3"]),
    texts=st.lists(WHITESPACE_TEXT, min_size=1, max_size=3),
)
def test_llama3_and_qwen2_regexes_served_by_their_presets(family, texts, tmp_path_factory):
    """Whitespace runs at the ends of texts and of the pieces between added
    tokens (where Llama 3's and Qwen2's regexes split unlike cl100k's), digit runs."""
    from bytepair.integrations.transformers_backend import registry

    tok = _hypothesis_tokenizer(family, tmp_path_factory)
    with bytepair.patch_transformers():
        assert (
            registry.state_of(tok).bp.pattern == {"Llama 3": "llama3", "Qwen2/3": "qwen2"}[family]
        )
    assert_both(tok, lambda t: t(texts, return_offsets_mapping=True))
    assert_both(tok, lambda t: t(texts, padding=True, return_tensors="np"))


def test_llama3_regex_where_it_differs_from_cl100k(tmp_path, corpus_text):
    """A vocabulary with tokens that join a line break to the spaces after it
    (trained on such text with GPT-2's pattern), under Llama 3's regex: where
    that regex and cl100k's split a text's end differently, the ids differ, and
    the llama3 preset must split as Llama 3's regex does."""
    from bytepair.integrations.transformers_backend import registry

    code = [p for p in corpus_text("code.txt", 30_000, at=0.5).split("\n\n") if p.strip()][:20]
    trained = bytepair.train_from_iterator(
        code + ["x\n  y\n\tz\n  \n    w "] * 300, 600, special_tokens=[EOT], progress=False
    )
    args = (trained.vocab, trained.merges, trained.special_tokens)
    llama = bytepair.Tokenizer(*args, pattern="llama3")
    llama.save_pretrained(tmp_path, eos_token=EOT, pad_token=EOT)
    tok = load(tmp_path)
    texts = [f"{p} end\n    " for p in code] + [f"{p} end\n  {EOT}x\n\t" for p in code]
    texts += ["a\n    ", f"a\n  {EOT}b", "x\r\n\t", "x\n\n  y\n ", "\n \n  "]
    with bytepair.patch_transformers():
        assert registry.state_of(tok).bp.pattern == "llama3"
    cl100k = bytepair.Tokenizer(*args, pattern="cl100k")
    differ = [t for t in texts if tok.encode(t) != cl100k.encode(t, allowed_special="all")]
    assert len(differ) > len(texts) // 2, differ  # the cases are real
    for call in (
        lambda t: [t.encode(x) for x in texts],
        lambda t: t(texts, return_offsets_mapping=True),
        lambda t: t(texts, padding=True, truncation=True, max_length=40, return_tensors="np"),
        lambda t: t(texts, padding=True, return_tensors="np"),
    ):
        assert_both(tok, call)


# ---- normalizing pipelines on the presets' path ------------------------------------------------

# Text that NFC changes: decomposed accents, Hangul jamo, singletons, marks out
# of order, and marks right after an added token (">" + U+0338 is U+226F under
# NFC: normalizing a whole text before cutting the added tokens out would hide
# the token; HF cuts first, then normalizes each part).
NOT_NFC = [
    "cafe\u0301 na\u0308ive re\u0301sume\u0301",
    "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af",
    "\u212b \u2126 A\u030a \u00c5",
    "a\u0323\u0308 o\u0308\u0323 \u0915\u093c",
    f"x{EOT}\u0338 e\u0301{EOT}e\u0301\u0338",
    "<|im_start|>user\ncafe\u0301<|im_end|>\u0301\n",
]
ALREADY_NFC = ["caf\u00e9 na\u00efve \ud55c\uae00", "plain ascii, 123", "\u0301 a mark first", ""]


@pytest.mark.parametrize("family", ["Qwen2/3", "GPT-NeoX/OLMo", "Claude (anthropic 0.20.0)"])
def test_normalizing_pipelines_on_the_presets_path_equal_hf(family, folders, corpus_text):
    """A pipeline of a normal form and one preset Split (Qwen2: NFC +
    Split(qwen2); NeoX: NFC + ByteLevel's regex; Claude: NFKC + ByteLevel's
    regex) encodes on the presets' path (`CoreBPE.plain_pipeline`): ids and
    offsets (in the original text) equal HF's on text the form changes and
    text it leaves as it is."""
    from bytepair.integrations.transformers_backend import registry

    tok = load(folders(family))
    with bytepair.patch_transformers():
        state = registry.state_of(tok)
    assert state.core.plain_pipeline, family
    docs = [p for p in corpus_text("multilingual.txt", 8_000, at=0.2).split("\n\n") if p][:6]
    texts = NOT_NFC + ALREADY_NFC + docs + [unicodedata.normalize("NFD", d) for d in docs]
    # The case is real: without normalization, the decomposed texts get other ids.
    plain = bytepair.Tokenizer(
        state.bp.vocab, state.bp.merges, state.bp.special_tokens, pattern=state.bp.pattern
    )
    with bytepair.patch_transformers():
        differ = [
            t
            for t in texts
            if tok.encode(t, add_special_tokens=False) != plain.encode(t, allowed_special="all")
        ]
    assert len(differ) >= len(NOT_NFC), differ
    for call in (
        lambda t: t(texts),
        lambda t: [t.encode(x) for x in texts],
        lambda t: t(texts, return_offsets_mapping=True),
        lambda t: t(texts, padding=True, truncation=True, max_length=24, return_tensors="np"),
        lambda t: t(texts[:4], split_special_tokens=True),
    ):
        assert_both(tok, call, family)


COMPOSING_TEXT = st.lists(
    st.sampled_from(
        ["e", "\u0301", "\u0308", "\u0323", "\u0338", ">", "A", "\u030a", "\u1100", "\u1161"]
        + ["\u11a8", "\uac00", "\u212b", " ", "\n", "1", "'s", EOT, "<|im_end|>"]
    ),
    max_size=16,
).map("".join)


@settings(max_examples=150)
@given(texts=st.lists(COMPOSING_TEXT, min_size=1, max_size=4))
def test_composing_text_around_added_tokens_equals_hf(texts, tmp_path_factory):
    """Qwen2's NFC on the presets' path: combining marks, jamo and added tokens side by side."""
    tok = _hypothesis_tokenizer("Qwen2/3", tmp_path_factory)
    assert_both(tok, lambda t: t(texts, return_offsets_mapping=True))
    assert_both(tok, lambda t: [t.encode(x) for x in texts])


# ---- generated strings ------------------------------------------------------------------------


@settings(max_examples=60)
@given(
    family=st.sampled_from(["Qwen2/3", "RoBERTa", "Llama 3", "Claude (anthropic 0.20.0)"]),
    texts=st.lists(HYPOTHESIS_TEXT, min_size=1, max_size=4),
    max_length=st.integers(min_value=1, max_value=12),
)
def test_generated_strings(family, texts, max_length, tmp_path_factory):
    tok = _hypothesis_tokenizer(family, tmp_path_factory)
    for call in (
        lambda t: t(texts, return_offsets_mapping=True),
        lambda t: t(
            texts,
            padding=True,
            truncation=True,
            max_length=max_length + 3,
            stride=min(max_length, 2),
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
        ),
        lambda t: t(texts[0], texts[-1], truncation=True, max_length=max_length + 4),
        lambda t: t([x.split(" ") for x in texts], is_split_into_words=True, padding=True),
        lambda t: [t.decode(t.encode(x)) for x in texts],
    ):
        assert_both(tok, call, family)


_HYPOTHESIS_TOKENIZERS: dict = {}


def _hypothesis_tokenizer(family: str, tmp_path_factory):
    if family not in _HYPOTHESIS_TOKENIZERS:
        path = tmp_path_factory.mktemp("hypothesis")
        text, config = family_files(family)
        (path / "tokenizer.json").write_text(text, encoding="utf-8")
        (path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        _HYPOTHESIS_TOKENIZERS[family] = load(path)
    return _HYPOTHESIS_TOKENIZERS[family]


@settings(max_examples=100)
@given(ids=st.lists(st.integers(min_value=0, max_value=1505), max_size=30), skip=st.booleans())
def test_decode_of_any_ids_equals_hf(ids, skip, tmp_path_factory):
    tok = _hypothesis_tokenizer("Llama 3", tmp_path_factory)
    outside = any(i >= len(tok) for i in ids)  # HF drops them; bytepair leaves those calls to HF
    reason = "ids outside the vocabulary" if outside else None
    assert_both(tok, lambda t: t.decode(ids, skip_special_tokens=skip), hf_serves=reason)


# ---- every other fallback: taken, and the same outcome -----------------------------------------


def test_options_bytepair_does_not_serve_go_to_hf_with_the_same_result(folders):
    """Each remaining reason bytepair gives a call back to HF: the call is counted
    under that reason and its outcome (value or HF's error) is unpatched HF's."""
    tok = load(folders("Llama 3"))
    cases = [
        ("positional options", lambda t: t._encode_plus("a b", None, False)),
        ("input transformers refuses", lambda t: t._encode_plus(12)),
        ("batch and pairs of other lengths (transformers raises)", lambda t: t(["a", "b"], ["c"])),
        (
            "truncation to max_length=np.int64(9), stride=0",
            lambda t: t(["a b c d e f g h i j k l"], truncation=True, max_length=np.int64(9)),
        ),
        (
            "padding settings HF reads otherwise",
            lambda t: t(["a b", "c"], padding=True, pad_to_multiple_of=np.int64(4)),
        ),
        (
            "max_length 0 below the 1 tokens HF adds",
            lambda t: t(["a b c"], truncation=True, max_length=0),
        ),
        (
            "sequence too short to truncate to max_length (HF raises)",
            lambda t: t(["a"], ["b c d e f g h i j"], truncation="only_first", max_length=4),
        ),
        ("an input HF reads otherwise (int)", lambda t: t._encode_plus([["a", "b"], 3])),
        (
            "an input HF reads otherwise (list)",
            lambda t: t._encode_plus([["a", 5]], is_split_into_words=True),
        ),
    ]
    for reason, call in cases:
        assert_both(tok, call, reason, hf_serves=reason)


def test_a_template_with_the_sequence_twice_takes_the_long_way(folders):
    """The short ways of one text (ids = before + text + after) do not fit a
    template that holds $A twice: the call takes transformers' long way, still
    served by bytepair."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = load(folders("GPT-2"))
    tok._tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single=f"$A {EOT} $A", pair=f"$A {EOT} $B:1", special_tokens=[(EOT, tok.eos_token_id)]
    )
    for call in (
        lambda t: t("a b c"),
        lambda t: t.encode("a b c"),
        lambda t: t.encode("a b c", add_special_tokens=False),
        lambda t: t(["a b", "c"]),
    ):
        assert_both(tok, call)
    with bytepair.patch_transformers():
        ids = tok.encode("a b")
    k = ids.index(tok.eos_token_id)
    assert ids[:k] and ids[:k] == ids[k + 1 :]  # the case is real: $A twice


def test_a_decoder_other_than_byte_level_goes_to_hf(folders):
    tokenizers = pytest.importorskip("tokenizers")
    tok = load(folders("GPT-2"))
    tok._tokenizer.decoder = tokenizers.decoders.Fuse()
    ids = tok.encode("a few words, and more")
    assert_both(tok, lambda t: t(["a b", "c"]))  # encoding is still served
    for call in (lambda t: t.decode(ids), lambda t: t.batch_decode([ids, ids[:2]])):
        assert_both(tok, call, hf_serves="decoder not served")


# ---- real vocabularies -------------------------------------------------------------------------


def _real_folder(name: str, path):
    """A transformers folder over a real vocabulary: GPT-2's released files, or
    OpenAI's cl100k ranks under Llama 3's Split regex and template (the llama3 preset)."""
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from _gpt2 import gpt2_tokenizer, openai_tokenizer

    if name == "GPT-2":
        gpt2_tokenizer().save_pretrained(path, bos_token=EOT, eos_token=EOT, pad_token=EOT)
        return path
    base = openai_tokenizer("cl100k_base")
    llama = bytepair.Tokenizer(base.vocab, base.merges, base.special_tokens, pattern="llama3")
    llama.save_pretrained(path, bos_token=EOT, eos_token=EOT, pad_token=EOT)
    doc = json.loads((path / "tokenizer.json").read_text(encoding="utf-8"))
    doc["post_processor"] = sequence(
        byte_level_post(True, False),
        template([EOT, "$A"], [EOT, "$A", f"{EOT}:1", "$B:1"], {EOT: base.special_tokens[EOT]}),
    )
    (path / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("name", ["GPT-2", "cl100k ranks, Llama 3's regex"])
def test_real_vocabularies_equal_hf(name, tmp_path, corpus_text):
    """The families above run over a small vocabulary trained here; these two
    hold 50k and 100k real merges (the merge loop's long paths, its caches)."""
    tok = load(_real_folder(name, tmp_path))
    docs = []
    for corpus, at in (("enwiki.txt", 0.61), ("code.txt", 0.43), ("multilingual.txt", 0.52)):
        docs += [p for p in corpus_text(corpus, 20_000, at=at).split("\n\n") if p.strip()][:20]
    from bytepair.integrations.transformers_backend import registry

    with bytepair.patch_transformers():
        assert served_by_bytepair(tok) == (True, None)
        assert registry.state_of(tok).bp.pattern == ("gpt2" if name == "GPT-2" else "llama3")
    for call in (
        lambda t: t(docs, return_offsets_mapping=True),
        lambda t: t(docs, padding=True, truncation=True, max_length=256, return_tensors="np"),
        lambda t: [t.encode(d) for d in docs[::7]],
        lambda t: t.batch_decode(t(docs)["input_ids"]),
        lambda t: [t.decode([i]) for i in t.encode(docs[3])[:300]],
    ):
        assert_both(tok, call, name)
