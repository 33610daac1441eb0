"""SentencePiece BPE models (`bytepair.SentencePieceTokenizer`) against their
owner, ``sentencepiece`` (the oracle), and HF tokenizers: the five models of
mistral-common's wheel and small models trained here with every normalizer
option encode corpus slices and generated strings to SentencePiece's ids,
decode as it decodes, and save to a ``.model`` it reads and a tokenizer.json
HF reads, with our ids.
"""

from __future__ import annotations

import functools
import io
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair import SentencePieceTokenizer

spm = pytest.importorskip("sentencepiece", reason="sentencepiece (the oracle) not installed")
pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2", reason="protobuf not installed")

MISTRAL = (
    "tokenizer.model.v1",
    "mistral_instruct_tokenizer_240216.model.v2",
    "mistral_instruct_tokenizer_240323.model.v3",
    "mistral_instruct_tokenizer_241114.model.v7",
    "mistral_instruct_tokenizer_241114.model.v7m1",
)
CORPORA = ("enwiki.txt", "code.txt", "multilingual.txt", "shakespeare.txt")
EDGE_TEXTS = [
    "",
    " ",
    "   ",
    "Hello world",
    "  two  spaces  ",
    "a\n\nb\r\n\tc",
    "日本語のテキスト 😀👍🏽 emoji",
    "1234567 89.5 ١٢٣",
    "\x00\x01\x7f ctrl \u200b\ufeff",
    "▁ already ▁▁ escaped",
    "ＡＢＣ ｶﾀｶﾅ ﬁ ① ™",
    "<s>[INST] not special here [/INST]</s>",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \U0010fffd",
]
# Trained here: (sentencepiece trainer options) per normalizer variant.
TRAINED = {
    "identity-bytes-digits": dict(
        normalization_rule_name="identity", byte_fallback=True, split_digits=True
    ),
    "nmt-nfkc": dict(),
    "nfkc-no-dummy-prefix": dict(add_dummy_prefix=False),
    "keep-whitespace-bytes": dict(remove_extra_whitespaces=False, byte_fallback=True),
    "user-and-control": dict(
        user_defined_symbols=["<sep>", "foo bar", "\u2581x", "12"],
        control_symbols=["<ctl>"],
        byte_fallback=True,
    ),
    "whitespace-suffix": dict(treat_whitespace_as_suffix=True),
    "nfkc-cf": dict(normalization_rule_name="nfkc_cf"),
    # The BPE trainer needs escaped spaces: the spec is changed after training.
    "identity-no-escape": dict(normalization_rule_name="identity"),
    "whitespace-only-pieces": dict(
        allow_whitespace_only_pieces=True, remove_extra_whitespaces=False, split_by_whitespace=False
    ),
}


def mistral_path(name: str) -> Path:
    mc = pytest.importorskip("mistral_common", reason="mistral-common not installed")
    path = Path(mc.__file__).parent / "data" / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this mistral-common wheel")
    return path


@functools.cache
def mistral(name: str):
    path = mistral_path(name)
    return bytepair.Tokenizer.load(path), spm.SentencePieceProcessor(model_file=str(path))


@functools.cache
def training_lines() -> tuple[str, ...]:
    from conftest import slice_lines

    text = slice_lines("enwiki.txt", 150_000) + slice_lines("multilingual.txt", 100_000, at=0.3)
    return tuple(line for line in text.split("\n") if line.strip())


@functools.cache
def trained(name: str, vocab_size: int = 1200) -> bytes:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_lines()),
        model_writer=out,
        model_type="bpe",
        vocab_size=vocab_size,
        minloglevel=2,
        **TRAINED.get(name, {}),
    )
    if name == "identity-no-escape":
        m = model_proto(out.getvalue())
        m.normalizer_spec.escape_whitespaces = False
        return m.SerializeToString()
    return out.getvalue()


def pair_of(data: bytes):
    return SentencePieceTokenizer(data), spm.SentencePieceProcessor(model_proto=data)


def texts_for(corpus_text, size: int) -> list[str]:
    return EDGE_TEXTS + [corpus_text(c, size, at=0.5) for c in CORPORA]


def assert_same(ours, sp, text: str) -> None:
    want = sp.encode(text)
    got = ours.encode_ordinary(text)
    if got != want:
        k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        pytest.fail(
            f"ids differ at {k}: ours {[sp.id_to_piece(i) for i in got[k : k + 4]]} "
            f"sentencepiece {[sp.id_to_piece(i) for i in want[k : k + 4]]} in {text[:60]!r}"
        )
    assert ours.decode(want) == sp.decode(want)


@pytest.mark.parametrize("name", MISTRAL)
def test_mistral_models_encode_and_decode_like_sentencepiece(name, corpus_text):
    ours, sp = mistral(name)
    assert isinstance(ours, bytepair.Tokenizer)
    assert ours.vocab_size == sp.get_piece_size()
    for text in texts_for(corpus_text, 60_000):
        assert_same(ours, sp, text)


@pytest.mark.parametrize("name", list(TRAINED))
def test_models_trained_with_each_normalizer_option_match_sentencepiece(name, corpus_text):
    ours, sp = pair_of(trained(name))
    for text in texts_for(corpus_text, 40_000):
        assert_same(ours, sp, text)


# Characters that stress the merge and normalization rules: spaces and runs of
# them, "▁" itself, digits, emoji, characters outside the vocabulary, controls.
_ALPHABET = st.sampled_from(
    list(" \u2581abcdeiklnorst")
    + list("0123456789")
    + ["😀", "👍🏽", "日", "本", "語"]
    + ["\x00", "\t", "\n", "\u3000", "\u00a0", "é", "ﬁ", "①", "ￜ", "Ω", "<s>", "[INST]", "<sep>"]
)


@settings(max_examples=120)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_generated_strings_match_sentencepiece(text):
    for name in ("identity-bytes-digits", "nmt-nfkc", "user-and-control"):
        assert_same(*pair_of(trained(name)), text)
    assert_same(*mistral("mistral_instruct_tokenizer_240323.model.v3"), text)


def test_user_pieces_sharing_a_prefix_are_found_as_sentencepiece_finds_them(corpus_text):
    """Mistral v3's user-defined pieces share "[REFERENCE_DOC_": the encoder
    finds them by that prefix (a SIMD substring search), then the matcher. Each
    tokenizer is a fresh Python object: the search's state must not depend on
    where Python's allocator puts it (it once needed 32-byte alignment that a
    16-byte aligned object did not give, and segfaulted)."""
    path = mistral_path("mistral_instruct_tokenizer_240323.model.v3")
    sp = spm.SentencePieceProcessor(model_file=str(path))
    docs = "".join(f"[REFERENCE_DOC_{k}]" for k in (0, 1, 10, 19, 2))
    texts = [
        docs,
        "x[REFERENCE_DOC_1][[REFERENCE_DOC_[REFERENCE_DOC_19]] [REFERENCE_DOC_20] y",
        "[REFERENCE_DOC_" * 3 + "[REFERENCE_DOC_7]",
        "a[b][REFERENCE_DOC]c[REFERENCE_DOC_9",
        corpus_text("code.txt", 200_000, at=0.2) + docs,
    ]
    for _ in range(4):
        ours = bytepair.Tokenizer.load(path)
        for text in texts:
            assert_same(ours, sp, text)
            assert ours.encode_to_numpy(text, disallowed_special=()).tolist() == sp.encode(text)


def test_special_tokens_follow_tiktokens_policy_and_each_text_gets_its_dummy_prefix():
    ours, sp = mistral("mistral_instruct_tokenizer_240323.model.v3")
    assert ours.special_tokens["<s>"] == 1 and ours.special_tokens["[INST]"] == 3
    assert ours.special_tokens["<unk>"] == 0
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode("hi [INST] there")
    got = ours.encode("<s>[INST] hi [/INST] yes", allowed_special="all")
    want = [1, 3] + sp.encode(" hi ") + [4] + sp.encode(" yes")
    assert got == want
    assert ours.encode_ordinary("[INST]") == sp.encode("[INST]")
    assert ours.decode([1, 3, *sp.encode("hi")]) == sp.decode([1, 3, *sp.encode("hi")]) == "hi"


def test_tokenizer_json_loads_in_hf_and_transformers_with_our_ids(tmp_path, corpus_text):
    tokenizers = pytest.importorskip("tokenizers")
    texts = texts_for(corpus_text, 30_000)
    for name in ("identity-bytes-digits", "keep-whitespace-bytes", "user-and-control"):
        ours, _ = pair_of(trained(name))
        path = tmp_path / f"{name}.json"
        ours.save(path)
        hf = tokenizers.Tokenizer.from_file(str(path))
        for text in texts:
            if ours.normalizer_spec["precompiled_charsmap"]:
                # HF's Precompiled maps a grapheme cluster whole when the charsmap
                # has it ("\r\n" -> one space), SentencePiece one rule at a time
                # (two): the one place HF and sentencepiece differ on these texts.
                text = text.replace("\r\n", "\n")
            want = ours.encode(text, allowed_special="all")
            assert hf.encode(text).ids == want, (name, text[:60])
    ours, sp = mistral("mistral_instruct_tokenizer_241114.model.v7")
    ours.save(tmp_path / "v7.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "v7.json"))
    for text in texts:
        ids = ours.encode(text, allowed_special="all")
        assert hf.encode(text).ids == ids, text[:60]
        assert hf.decode(ids, skip_special_tokens=True) == ours.decode(ids), text[:60]
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "v7.json"))
    assert fast.encode(texts[-1], add_special_tokens=False) == ours.encode_ordinary(texts[-1])


def test_save_model_writes_a_file_sentencepiece_reads_with_our_ids(tmp_path, corpus_text):
    text = corpus_text("multilingual.txt", 30_000, at=0.7)
    for ours, _ in (mistral("tokenizer.model.v1"), pair_of(trained("user-and-control"))):
        path = tmp_path / "out.model"
        ours.save_model(path)
        sp = spm.SentencePieceProcessor(model_file=str(path))
        assert sp.encode(text) == ours.encode_ordinary(text)
        again = bytepair.Tokenizer.load(path)
        assert again == ours and again.encode_ordinary(text) == ours.encode_ordinary(text)
    original = mistral_path("tokenizer.model.v1").read_bytes()
    assert SentencePieceTokenizer(original).model_bytes() == original
    ours = pickle.loads(pickle.dumps(mistral("tokenizer.model.v1")[0]))
    assert ours.encode_ordinary(text) == mistral("tokenizer.model.v1")[1].encode(text)


def model_proto(data: bytes):
    m = pb2.ModelProto()
    m.ParseFromString(data)
    return m


def test_unused_pieces_merge_then_split_back_as_sentencepiece_does(corpus_text):
    # A piece of type UNUSED still merges, then is split back into the pair it
    # was made from; what cannot be split back (a character) is unknown.
    for name in ("identity-bytes-digits", "nmt-nfkc"):
        m = model_proto(trained(name))
        for i in range(300, len(m.pieces), 7):
            if m.pieces[i].type == m.pieces[i].NORMAL:
                m.pieces[i].type = m.pieces[i].UNUSED
        ours, sp = pair_of(m.SerializeToString())
        for text in EDGE_TEXTS + [corpus_text("enwiki.txt", 20_000)]:
            assert_same(ours, sp, text)


def test_unsupported_and_broken_models_are_refused_by_name(tmp_path):
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_lines()),
        model_writer=out,
        model_type="unigram",
        vocab_size=500,
        minloglevel=2,
    )
    path = tmp_path / "unigram.model"
    path.write_bytes(out.getvalue())
    with pytest.raises(ValueError, match="unigram.model.*Unigram model"):
        bytepair.Tokenizer.load(path)
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        SentencePieceTokenizer(b"\x0a\x05\x0a\x03abc\xff\xff")
    m = model_proto(trained("nmt-nfkc"))
    m.pieces[0].type = m.pieces[0].NORMAL  # <unk> gone
    with pytest.raises(ValueError, match="no piece has type UNKNOWN"):
        SentencePieceTokenizer(m.SerializeToString())
    m = model_proto(trained("nmt-nfkc"))
    m.pieces[5].piece = m.pieces[6].piece
    with pytest.raises(ValueError, match="piece 6 .* is already piece 5"):
        SentencePieceTokenizer(m.SerializeToString())
    m = model_proto(trained("identity-bytes-digits"))
    del m.pieces[10]  # the byte piece <0x07>
    with pytest.raises(ValueError, match="no byte piece for 0x07"):
        SentencePieceTokenizer(m.SerializeToString())
    m = model_proto(trained("nmt-nfkc"))
    m.normalizer_spec.precompiled_charsmap = b"\xff\xff\xff\x7f abc"
    with pytest.raises(ValueError, match="charsmap"):
        SentencePieceTokenizer(m.SerializeToString())
    with pytest.raises(ValueError, match="cannot be written as a .tiktoken"):
        mistral("tokenizer.model.v1")[0].save_tiktoken(tmp_path / "x.tiktoken")


def test_offsets_streams_counts_and_bytes_work_as_for_byte_level_tokenizers():
    ours, sp = mistral("tokenizer.model.v1")
    text = "Hello  wörld, 日本 𝔘\x00 end"
    ids, spans = ours.encode_with_offsets(text)
    assert ids == sp.encode(text)
    data = text.encode()
    theirs = [
        (len(data[: p.begin].decode()), len(data[: p.end].decode()))
        for p in sp.encode(text, return_type="proto").pieces
        if not sp.is_byte(p.id)
    ]
    assert [span for i, span in zip(ids, spans) if not sp.is_byte(i)] == theirs
    assert all(text[a:b] for a, b in spans)
    stream = ours.decode_stream()
    pieces = [stream.step(i) for i in ids]
    assert "".join(p for p in pieces if p) == ours.decode(ids) == sp.decode(ids)
    assert None in pieces  # the four byte pieces of 𝔘 wait for the last one
    assert ours.count_tokens(text) == len(ids) == len(ours.encode_to_numpy(text))
    assert ours.encode_batch([text, "", "x"]) == [ids, [], sp.encode("x")]
    assert (
        ours.decode_bytes(ours.encode_bytes(b"caf\xc3\xa9 \xff\xfe!"))
        == b" caf\xc3\xa9 \xff\xfe!"[1:]
    )
    cut = ours.encode(text, max_tokens=12)
    assert text.startswith(ours.decode(cut)) and len(cut) <= 12
    decoded, starts = ours.decode_with_offsets(ids)
    assert decoded == text and starts[0] == 0 and starts == sorted(starts)


def hf_layouts(data: bytes, ours: SentencePieceTokenizer) -> dict[str, dict]:
    """The tokenizer.json layouts SentencePiece models ship in: transformers'
    converter, ours, Llama 2's legacy normalizer (Prepend + Replace, no
    pre-tokenizer), Gemma's (Replace, no dummy prefix), and Metaspace with
    prepend_scheme first / always."""
    import json

    convert = pytest.importorskip("transformers.convert_slow_tokenizer")
    proto = model_proto(data)
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    converted = convert.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab)
    layouts = {"transformers": json.loads(converted.to_str())}
    base = json.loads(bytepair.formats.spm.to_hf_json(ours))
    layouts["ours"] = base
    prepend = {"type": "Prepend", "prepend": "\u2581"}
    escape = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    layouts["llama-legacy"] = base | {
        "normalizer": {"type": "Sequence", "normalizers": [prepend, escape]}
    }
    layouts["gemma"] = base | {"normalizer": escape}  # spaces as "▁", no dummy prefix
    for scheme in ("first", "always"):
        meta = {
            "type": "Metaspace",
            "replacement": "\u2581",
            "prepend_scheme": scheme,
            "split": False,
        }
        layouts[f"metaspace-{scheme}"] = base | {"normalizer": None, "pre_tokenizer": meta}
    return layouts


@pytest.mark.slow
def test_sentencepiece_style_tokenizer_json_layouts_load_with_hfs_ids(tmp_path, corpus_text):
    import json

    tokenizers = pytest.importorskip("tokenizers")
    texts = texts_for(corpus_text, 25_000) + [" lead", "<s>x</s> [INST]y"]
    models = [mistral_path("mistral_instruct_tokenizer_240323.model.v3").read_bytes()]
    models.append(trained("user-and-control"))
    for data in models:
        ours = SentencePieceTokenizer(data)
        for label, doc in hf_layouts(data, ours).items():
            path = tmp_path / f"{label}.json"
            path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
            hf = tokenizers.Tokenizer.from_file(str(path))
            loaded = bytepair.Tokenizer.load(path)
            assert isinstance(loaded, SentencePieceTokenizer), label
            for text in texts:
                if ours.normalizer_spec["precompiled_charsmap"]:
                    text = text.replace("\r\n", "\n")  # HF's grapheme rule, as above
                want = hf.encode(text, add_special_tokens=False).ids
                assert loaded.encode(text, allowed_special="all") == want, (label, text[:40])
            loaded.save(tmp_path / "again.json")
            assert json.loads((tmp_path / "again.json").read_text()) == doc  # written back as read


def test_tokenizer_json_parts_outside_the_sentencepiece_layouts_are_refused(tmp_path):
    import json

    ours = mistral("tokenizer.model.v1")[0]
    base = json.loads(bytepair.formats.spm.to_hf_json(ours))
    bad = {
        "normalizer NFKD": base | {"normalizer": {"type": "NFKD"}},
        "split true": base
        | {"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "split": True}},
        "continuing_subword_prefix": base
        | {"model": base["model"] | {"continuing_subword_prefix": "##"}},
    }
    for label, doc in bad.items():
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(ValueError, match="not supported"):
            bytepair.Tokenizer.load(path)
