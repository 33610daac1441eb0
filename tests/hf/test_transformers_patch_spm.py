"""`bytepair.patch_transformers()` on SentencePiece-style BPE tokenizer.json
files (Llama 2, Mistral 7B, Gemma): every call shape of
test_transformers_patch.py gives the same output patched and unpatched, on
mistral-common's SentencePiece models in each layout these files ship in,
and on bytepair's own tokenizer.json of a trained model; what bytepair does
not model (a charsmap, plain or normalized added tokens, added tokens that
strip spaces, an unknown decoder) goes to HF with the same output.

Each layout is a tokenizer.json made here from a ``.model`` file, as
transformers' converters write them (no downloads): Llama 2's files
(``Prepend`` + ``Replace`` normalizer, ``TemplateProcessing`` with ``<s>``),
the Metaspace layouts (``prepend_scheme`` first / always), Gemma's
(spaces as "▁", no dummy prefix), transformers' ``SpmConverter`` output, and
what transformers 5's ``LlamaTokenizer`` and ``GemmaTokenizer`` classes
rebuild from those files when loading them.
"""

from __future__ import annotations

import functools
import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

transformers = pytest.importorskip("transformers")
pytest.importorskip("transformers.tokenization_utils_tokenizers")
pytest.importorskip("sentencepiece")

from test_pipeline import HYPOTHESIS_TEXT  # noqa: E402
from test_sentencepiece import mistral_path, model_proto  # noqa: E402
from test_transformers_patch import (  # noqa: E402
    _thread_shapes,
    _threads_disagree,
    assert_both,
    assert_same_encoding,
    call_shapes,
    documents,
)

import bytepair  # noqa: E402
from bytepair.formats.spm import to_hf_json  # noqa: E402
from bytepair.integrations.transformers_backend import served_by_bytepair  # noqa: E402
from bytepair.spm_tokenizer import SentencePieceTokenizer  # noqa: E402

SPACE = "\u2581"
V1 = "tokenizer.model.v1"  # Mistral 7B v0.1: Llama 2's recipe (32000 pieces, byte fallback)
V2 = "mistral_instruct_tokenizer_240216.model.v2"
V3 = "mistral_instruct_tokenizer_240323.model.v3"  # [INST], [TOOL_CALLS]... control pieces
V7 = "mistral_instruct_tokenizer_241114.model.v7"

LLAMA_DECODER = {
    "type": "Sequence",
    "decoders": [
        {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0},
    ],
}
LLAMA_NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": SPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
    ],
}
LLAMA2_CHAT = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}"
    "{{ '[INST] ' + m['content'] + ' [/INST]' }}{% else %}{{ m['content'] + eos_token }}"
    "{% endif %}{% endfor %}"
)


def bos_template(vocab: dict) -> dict:
    """Llama 2's post-processor: <s> before each sequence, the pair's with type id 1."""
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    return {
        "type": "TemplateProcessing",
        "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [
            bos,
            {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": {"id": "<s>", "type_id": 1}},
            {"Sequence": {"id": "B", "type_id": 1}},
        ],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [vocab["<s>"]], "tokens": ["<s>"]}},
    }


def llama2_layout(data: bytes) -> dict:
    """Llama 2's tokenizer.json layout over a .model: bytepair's writing of the
    model (its added tokens: the control pieces and <unk>) with Llama 2's
    normalizer, decoder and post-processor."""
    doc = json.loads(to_hf_json(SentencePieceTokenizer(data)))
    doc.update(
        normalizer=LLAMA_NORMALIZER,
        pre_tokenizer=None,
        decoder=LLAMA_DECODER,
        post_processor=bos_template(doc["model"]["vocab"]),
    )
    return doc


def metaspace_layout(data: bytes, scheme: str, decoder: dict | None = None) -> dict:
    meta = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": scheme, "split": False}
    return llama2_layout(data) | {
        "normalizer": None,
        "pre_tokenizer": meta,
        "decoder": decoder or LLAMA_DECODER,
    }


def gemma_layout(data: bytes) -> dict:
    """Gemma's: spaces as "▁" and no dummy prefix; no Strip in the decoder."""
    return llama2_layout(data) | {
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
        "decoder": {"type": "Sequence", "decoders": LLAMA_DECODER["decoders"][:3]},
    }


def converter_layout(data: bytes) -> dict:
    """transformers' SpmConverter output (Replace, Replace(\\A▁ -> ▁▁), Metaspace)."""
    convert = pytest.importorskip("transformers.convert_slow_tokenizer")
    proto = model_proto(data)
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    doc = json.loads(convert.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab).to_str())
    ours = llama2_layout(data)
    return doc | {"added_tokens": ours["added_tokens"], "post_processor": ours["post_processor"]}


def trained_identity_model(name: str = "user-and-control") -> bytes:
    """A model trained here (test_sentencepiece.TRAINED[name]; by default with
    user-defined and control symbols, byte fallback and extra whitespace
    removed), its charsmap dropped (identity)."""
    from test_sentencepiece import trained

    proto = model_proto(trained(name))
    proto.normalizer_spec.precompiled_charsmap = b""
    proto.normalizer_spec.name = "identity"
    return proto.SerializeToString()


def ours_layout(data: bytes) -> dict:
    """bytepair's own save() output (user-defined pieces as an Isolated Split,
    collapsed spaces), with Llama 2's post-processor."""
    doc = json.loads(to_hf_json(SentencePieceTokenizer(data)))
    return doc | {"post_processor": bos_template(doc["model"]["vocab"])}


# name -> (model, tokenizer.json maker, tokenizer_class)
LAYOUTS = {
    "Llama 2 file": (V1, llama2_layout, "PreTrainedTokenizerFast"),
    "Llama 2 as LlamaTokenizer": (V1, llama2_layout, "LlamaTokenizer"),
    "Mistral v3, Metaspace first": (V3, functools.partial(metaspace_layout, scheme="first"), None),
    "Metaspace always, Metaspace decoder": (
        V2,
        functools.partial(
            metaspace_layout,
            scheme="always",
            decoder={"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always"},
        ),
        None,
    ),
    "Gemma file": (V7, gemma_layout, None),
    "Gemma as GemmaTokenizer": (V7, gemma_layout, "GemmaTokenizer"),
    "SpmConverter": (V2, converter_layout, None),
    "bytepair save(), user-defined pieces": ("trained", ours_layout, None),
    "bytepair save(), no byte fallback, no dummy prefix": (
        "trained:nfkc-no-dummy-prefix",
        ours_layout,
        None,
    ),
}


def model_bytes(name: str) -> bytes:
    if name.startswith("trained"):
        return trained_identity_model(*name.split(":")[1:])
    return mistral_path(name).read_bytes()


@functools.cache
def _folder(layout: str, root) -> str:
    model, make, cls = LAYOUTS[layout]
    path = root / layout.replace(" ", "_").replace(",", "")
    path.mkdir()
    (path / "tokenizer.json").write_text(
        json.dumps(make(model_bytes(model)), ensure_ascii=False), encoding="utf-8"
    )
    config = {
        "tokenizer_class": cls or "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": 4096,
        "chat_template": LLAMA2_CHAT,
    }
    (path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def spm_root(tmp_path_factory):
    return tmp_path_factory.mktemp("spm_layouts")


def load(layout: str, root):
    tok = transformers.AutoTokenizer.from_pretrained(_folder(layout, root))
    tok.pad_token = tok.eos_token
    return tok


@pytest.fixture(autouse=True)
def unpatched_after():
    yield
    bytepair.unpatch_transformers()


# ---- every call shape, every layout ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_call_shape_equals_hf(layout, spm_root, corpus_text):
    tok = load(layout, spm_root)
    with bytepair.patch_transformers():
        assert served_by_bytepair(tok) == (True, None)
    specials = [t.content for t in tok.added_tokens_decoder.values()][:6]
    docs = documents(corpus_text, specials) + [" x", "x ", "a  b  ", "\n\n x", "1 23 456"]
    for name, call in call_shapes(docs, specials).items():
        assert_both(tok, call, f"{layout}: {name}")
    chat = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "Hello!"}]
    assert_both(tok, lambda t: t.apply_chat_template(chat, tokenize=True), f"{layout}: chat")


@settings(max_examples=60, deadline=None)
@given(
    layout=st.sampled_from(["Llama 2 file", "Mistral v3, Metaspace first", "Gemma file"]),
    texts=st.lists(
        st.one_of(
            HYPOTHESIS_TEXT,
            st.lists(st.sampled_from([" ", "  ", "a", "1", "\n", "<s>", "é", "😀", SPACE])).map(
                "".join
            ),
        ),
        min_size=1,
        max_size=4,
    ),
    max_length=st.integers(min_value=1, max_value=12),
)
def test_generated_strings(layout, texts, max_length, spm_root):
    tok = _tokenizer(layout, spm_root)
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
        lambda t: t([x.split(" ") for x in texts], is_split_into_words=True, padding=True),
        lambda t: [t.decode(t.encode(x)) for x in texts],
    ):
        assert_both(tok, call, layout)


_TOKENIZERS: dict = {}


def _tokenizer(layout: str, root):
    """One tokenizer per layout for the hypothesis tests (loading takes a second)."""
    if layout not in _TOKENIZERS:
        _TOKENIZERS[layout] = load(layout, root)
    return _TOKENIZERS[layout]


# Byte tokens (<0x00>.. are ids 3..258), control pieces, "▁" runs, ordinary pieces.
ANY_ID = st.one_of(
    st.integers(min_value=0, max_value=300), st.integers(min_value=0, max_value=32767)
)


@settings(max_examples=150, deadline=None)
@given(
    layout=st.sampled_from(["Llama 2 file", "Metaspace always, Metaspace decoder", "Gemma file"]),
    ids=st.lists(ANY_ID, max_size=30),
    skip=st.booleans(),
)
def test_decode_of_any_ids_equals_hf(layout, ids, skip, spm_root):
    tok = _tokenizer(layout, spm_root)
    outside = any(i >= len(tok) for i in ids)  # HF drops them; bytepair leaves those calls to HF
    reason = "ids outside the vocabulary" if outside else None
    assert_both(tok, lambda t: t.decode(ids, skip_special_tokens=skip), hf_serves=reason)
    assert_both(tok, lambda t: t.batch_decode([ids, ids[::-1]]), hf_serves=reason)


# ---- added tokens, copies, files -----------------------------------------------------------


def test_special_tokens_added_after_loading_are_served(spm_root, corpus_text):
    docs = documents(corpus_text)[:4]
    text = "a <extra_1> b [PAD]c  <extra_1>" + docs[0]
    for layout in ("Llama 2 file", "Mistral v3, Metaspace first"):
        tok = load(layout, spm_root)
        with bytepair.patch_transformers():
            tok(docs)  # served once before: its state must not stay
        tok.add_special_tokens({"pad_token": "[PAD]", "additional_special_tokens": ["<extra_1>"]})
        with bytepair.patch_transformers():
            assert served_by_bytepair(tok) == (True, None)
        for call in (
            lambda t: t([text, docs[1]], padding=True, return_offsets_mapping=True),
            lambda t: t.tokenize(text),
            lambda t: t.decode(t.encode(text), skip_special_tokens=True),
            lambda t: t.decode(t.encode(text)),
            lambda t: t(text, split_special_tokens=True),
            lambda t: len(t),
        ):
            assert_both(tok, call, layout)


ADDED_TEXTS = [
    "a newtok b",
    "the other then there",
    "newtok x",
    " newtok",
    "newtoknewtok",
    "<s>newtok</s> newtok",
    "a\u00e9newtok  b <tool>x",
]


@pytest.mark.parametrize(
    "layout", ["Llama 2 file", "Mistral v3, Metaspace first", "Gemma as GemmaTokenizer"]
)
@pytest.mark.parametrize("normalized", [False, True])
def test_plain_tokens_added_after_loading(layout, normalized, spm_root):
    """A plain added token matched in raw text (not normalized, or normalized
    under a normalizer that leaves its content as it is: none, or Gemma's
    spaces as "▁") is served as a control piece. Under Llama 2's Prepend a
    normalized one is matched as "▁newtok" by HF: that tokenizer goes to HF."""
    AddedToken = transformers.AddedToken
    tok = load(layout, spm_root)
    # "the" is also a piece of the model: in HF, BPE never sees it either (it is split out first)
    added = [AddedToken(t, normalized=normalized, special=False) for t in ("newtok", "the")]
    tok.add_tokens(added)
    tok.add_special_tokens({"additional_special_tokens": ["<tool>"]})
    on_hf = normalized and layout == "Llama 2 file"
    with bytepair.patch_transformers():
        ok, reason = served_by_bytepair(tok)
    assert ok != on_hf, reason
    if on_hf:
        assert reason.startswith("a normalized added token (") and "a normalizer" in reason
    texts = ADDED_TEXTS
    for call in (
        lambda t: t(texts, padding=True, return_offsets_mapping=True),
        lambda t: t.batch_decode(t(texts)["input_ids"], skip_special_tokens=True),
        lambda t: [t.tokenize(x) for x in texts],
        lambda t: t(texts, split_special_tokens=True),
    ):
        assert_both(tok, call, layout, hf_serves="tokenizer not served" if on_hf else None)


def test_added_tokens_bytepair_does_not_model_send_the_tokenizer_to_hf(spm_root):
    """lstrip/rstrip (the loader refuses them), a plain added token that is
    also a piece of the model (BPE can still make it in HF), a normalized one
    overlapping a raw-text one (HF matches the raw-text ones first): HF serves
    such a tokenizer, with its output."""
    AddedToken = transformers.AddedToken
    text = "a newtok b  spaced  c newtoknewtok ▁the xnewt"
    for layout, added, why in (
        (
            "Llama 2 file",
            [AddedToken(" spaced ", lstrip=True, rstrip=True, normalized=False)],
            "lstrip/rstrip",
        ),
        ("Mistral v3, Metaspace first", [f"{SPACE}the"], "a piece of the model"),
        (
            "Mistral v3, Metaspace first",
            [AddedToken("xnewt", normalized=False), "newtok"],
            "overlapping another",
        ),
    ):
        tok = load(layout, spm_root)
        tok.add_tokens(added)
        with bytepair.patch_transformers():
            ok, reason = served_by_bytepair(tok)
        assert not ok and why in reason, reason
        for call in (lambda t: t([text, "x"], padding=True), lambda t: t.decode(t.encode(text))):
            assert_both(tok, call, hf_serves="tokenizer not served")


def test_a_charsmap_normalizer_stays_on_hf(spm_root):
    """A Precompiled normalizer: HF normalizes grapheme by grapheme, bytepair as
    SentencePiece does (they differ on combining marks and CRLF): HF serves."""
    from test_sentencepiece import trained

    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=_hf_backend(ours_layout(trained("nmt-nfkc"))), pad_token="</s>"
    )
    with bytepair.patch_transformers():
        ok, reason = served_by_bytepair(tok)
    assert not ok and "Precompiled" in reason
    texts = ["ｅ\u0301 ﬁ x", "a\r\nb"]
    assert_both(tok, lambda t: t(texts, padding=True), hf_serves="tokenizer not served")


def _hf_backend(doc: dict):
    import tokenizers

    return tokenizers.Tokenizer.from_str(json.dumps(doc, ensure_ascii=False))


def test_a_decoder_not_modelled_goes_to_hf(spm_root):
    tokenizers = pytest.importorskip("tokenizers")
    tok = load("Llama 2 file", spm_root)
    tok._tokenizer.decoder = tokenizers.decoders.Sequence(
        [tokenizers.decoders.Replace(tokenizers.Regex("▁+"), " "), tokenizers.decoders.Fuse()]
    )
    ids = tok.encode("a few  words, and more")
    assert_both(tok, lambda t: t(["a b", "c"]))  # encoding is still served
    assert_both(tok, lambda t: t.decode(ids), hf_serves="decoder not served")


def test_pickle_and_save_pretrained(spm_root, tmp_path, corpus_text):
    docs = documents(corpus_text)
    tok = load("Llama 2 file", spm_root)
    want = tok(docs)["input_ids"]
    with bytepair.patch_transformers():
        assert tok(docs)["input_ids"] == want
        again = pickle.loads(pickle.dumps(tok))
        assert served_by_bytepair(again) == (True, None)
        assert again(docs)["input_ids"] == want
        batch = tok(docs[:3], padding=True, return_offsets_mapping=True)
        restored = pickle.loads(pickle.dumps(batch))
        tok.add_special_tokens({"additional_special_tokens": ["<tool>"]})
        texts = docs + ["x <tool> y"]
        want = tok(texts, padding=True, truncation=True, max_length=50)["input_ids"]
        tok.save_pretrained(tmp_path)
    hf_batch = tok(docs[:3], padding=True, return_offsets_mapping=True)
    for r, h in zip(restored.encodings, hf_batch.encodings):
        assert_same_encoding(r, h, "pickled")
    reloaded = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded(texts, padding=True, truncation=True, max_length=50)["input_ids"] == want
    assert reloaded.decode(want[-1]) == tok.decode(want[-1])


def test_threads_share_one_tokenizer(spm_root, corpus_text):
    """16 threads on one tokenizer with mixed truncation, padding, pairs,
    overflow and decoding give the ids of one thread alone."""
    docs = documents(corpus_text)
    tok = load("Llama 2 as LlamaTokenizer", spm_root)
    shapes = _thread_shapes(docs)
    want = [shape(tok) for shape in shapes]
    with bytepair.patch_transformers():
        assert served_by_bytepair(tok) == (True, None)
        failures = _threads_disagree(tok, shapes, want)
    assert not failures, failures[:5]
