"""What is accepted saves and loads back.

- A special token is a hard boundary everywhere: words given as counted (a
  mapping, a word-counts artifact) are cut at its text as counted text is, so
  no merge spells one, and a trained tokenizer saves and loads back.
- A special token whose text is an ordinary token shares its id (one byte, a
  merged token: HF's added token listed in ``model.vocab``); both encoders
  agree with HF tokenizers and tiktoken, and tokenizer.json and .tiktoken
  files keep it. A special token with another id than the ordinary token of
  its bytes (tiktoken allows it) keeps both ids in a rank file; tokenizer.json
  cannot hold it and says so.
- What the constructor refuses: an empty token, bytes under two ordinary ids.
- A property: any Tokenizer the constructor accepts either saves and loads
  back equal in each format, or the format refuses it with a ValueError.
"""

from __future__ import annotations

import hashlib
import json
import warnings

import pytest

import bytepair
from bytepair import Tokenizer

BYTES = {i: bytes([i]) for i in range(256)}


def _save(tok: Tokenizer, tmp_path, fmt: str):
    """Save `tok` in `fmt` under `tmp_path`; the path to load (ValueError: the
    format refused it, before writing anything)."""
    d = tmp_path / f"{fmt}-{hashlib.sha1(repr(tok.vocab).encode()).hexdigest()[:8]}"
    d.mkdir(exist_ok=True)
    if fmt == "hf":
        tok.save(d / "tokenizer.json")
        return d / "tokenizer.json"
    if fmt == "tiktoken":
        tok.save_tiktoken(d / "tok.tiktoken")
        return d / "tok.tiktoken"
    if fmt == "gpt2":
        tok.save_gpt2(d)
        return d
    tok.save_tekken(d / "tekken.json")
    return d / "tekken.json"


def _save_load(tok: Tokenizer, tmp_path, fmt: str) -> Tokenizer:
    return Tokenizer.load(_save(tok, tmp_path, fmt))


def _no_merge_spells(tok: Tokenizer) -> None:
    made = {a + b for a, b in tok.merges}
    for t in tok.special_tokens:
        assert t.encode() not in made, f"a merge spells the special token {t!r}"


# ---- class 1: special-token text in counts -------------------------------------------------


@pytest.mark.parametrize("as_bytes", [False, True])
def test_counts_are_cut_at_special_tokens_and_the_result_loads_back(tmp_path, as_bytes):
    """The issue's example: "<s>" counted 1000 times trained the merges
    ('<', 's>'); save warned and load refused the file."""
    counts = {"<s>": 1000, "ab": 3, "x<s>y<s>": 7, "<s><s>z": 2, "<|eot|>q": 5}
    if as_bytes:
        counts = {w.encode(): c for w, c in counts.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning from save either
        tok = bytepair.train_from_counts(counts, 259, special_tokens=["<s>", "<|eot|>"])
        _no_merge_spells(tok)
        # Cut out, the special tokens' text leaves "ab", "x", "y", "z", "q": one pair.
        assert [a + b for a, b in tok.merges] == [b"ab"]
        for fmt in ("hf", "tiktoken", "gpt2"):
            assert _save_load(tok, tmp_path, fmt) == tok, fmt
    # A word holding special tokens counts as its pieces (what counting the text finds).
    cut = bytepair.train_from_counts({"xy<s>xy<s>z": 4, "xy": 1}, 258, special_tokens=["<s>"])
    pieces = bytepair.train_from_counts({"xy": 9, "z": 4}, 258, special_tokens=["<s>"])
    assert cut.merges == pieces.merges == [(b"x", b"y")]
    assert cut.training_stats.pre_tokens == pieces.training_stats.pre_tokens == 13


def test_an_artifact_whose_words_hold_a_special_token_trains_a_tokenizer_that_loads(tmp_path):
    """A part whose words include "<s>" (written by another tool, or a reserved
    placeholder's text in the corpus): training cuts them as counting would."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.txt").write_text("hello world<s>hello\n" * 20, encoding="utf-8")
    counts = bytepair.count(tmp_path / "a.txt", tmp_path / "c", special_tokens=["<s>"])
    part = counts.part_paths()[0]
    rows = dict(counts.items()) | {
        b"<s>": 10_000,
        b"a<s>b": 500,
        b"<|reserved_special_token_0|>": 99,
    }
    words = sorted(rows)
    pq.write_table(
        pa.table(
            {
                "word": pa.array(words, pa.binary()),
                "count": pa.array([rows[w] for w in words], pa.int64()),
            }
        ),
        part,
    )
    manifest_path = tmp_path / "c" / "_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["parts"][0].update(
        sha256=hashlib.sha256(open(part, "rb").read()).hexdigest(),
        rows=len(words),
        pre_tokens=sum(rows.values()),
    )
    manifest["totals"].update(distinct=len(words), pre_tokens=sum(rows.values()))
    manifest_path.write_text(json.dumps(manifest))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the counts run out of pairs
        tok = bytepair.train_from_counts(
            bytepair.WordCounts.open(tmp_path / "c"), 300, reserve_special_tokens=1
        )
    assert set(tok.special_tokens) == {"<s>", "<|reserved_special_token_0|>"}
    _no_merge_spells(tok)
    for fmt in ("hf", "tiktoken"):
        assert _save_load(tok, tmp_path, fmt) == tok


def test_a_special_token_that_is_a_byte_or_a_base_token_shares_its_id(tmp_path):
    """As the constructor does with a list, the trainer gives such a special
    token the id of the token with its bytes, not a second one."""
    tok = bytepair.train_from_iterator(
        ["banana bandana " * 5], 259, special_tokens=["a", "<s>"], progress=False
    )
    # 256 bytes + 2 merges + "<s>": "a" takes no new id.
    assert tok.special_tokens == {"a": 97, "<s>": 258} and tok.vocab_size == 259
    _no_merge_spells(tok)  # "a" splits the text: no pair with it is counted
    assert tok.encode_ordinary("banana") == [98, 97, 110, 97, 110, 97]
    assert tok.encode("banana", allowed_special="all") == tok.encode_ordinary("banana")
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode("banana")
    assert _save_load(tok, tmp_path, "hf") == tok
    base = bytepair.train_from_iterator(["hello world " * 9], 264, progress=False)
    extended = bytepair.train_from_iterator(
        ["hello there " * 9], 266, base=base, special_tokens=["hello", "<new>"], progress=False
    )
    assert extended.special_tokens["hello"] == base.mergeable_ranks[b"hello"]
    assert extended.encode_ordinary("hello") == base.encode_ordinary("hello")
    assert _save_load(extended, tmp_path, "hf") == extended
    with pytest.raises(ValueError, match="special token 'a' is the vocabulary token b'a' .id 97"):
        bytepair.train_from_iterator(["x"], 300, special_tokens={"a": 299}, progress=False)


# ---- class 2: special tokens and ordinary tokens that share text ----------------------------


def _shared_hi() -> Tokenizer:
    return Tokenizer(BYTES | {256: b"hi"}, [(b"h", b"i")], {"hi": 256})


@pytest.mark.parametrize(
    "make, text",
    [
        (_shared_hi, "hi hix"),  # a special token at the id of a merged token
        (lambda: Tokenizer(BYTES, [], {"a": 97}), "a b"),  # at the id of a byte
    ],
)
def test_a_special_token_at_the_id_of_its_bytes_encodes_and_round_trips(tmp_path, make, text):
    tok = make()
    ordinary = tok.encode_ordinary(text)
    assert tok.encode(text, allowed_special="all") == ordinary
    assert tok.decode(ordinary) == text
    special_id = next(iter(tok.special_tokens.values()))
    assert special_id in ordinary and tok.mergeable_ranks[tok.vocab[special_id]] == special_id
    for fmt in ("hf", "tiktoken"):
        assert _save_load(tok, tmp_path, fmt) == tok, fmt
    with pytest.raises(ValueError, match="GPT-2 files cannot mark a token as special"):
        tok.save_gpt2(tmp_path / "gpt2")
    tiktoken = pytest.importorskip("tiktoken")
    enc = tok.to_tiktoken()
    assert isinstance(enc, tiktoken.Encoding)
    assert enc.encode(text, allowed_special="all") == ordinary == enc.encode_ordinary(text)
    tokenizers = pytest.importorskip("tokenizers")
    tok.save(tmp_path / "hf.json")
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "hf.json")).encode(text).ids == ordinary


def test_a_hf_file_whose_added_token_a_merge_makes_loads_with_hfs_ids(tmp_path):
    """Made elsewhere: "<s>" is in model.vocab (a merge makes it) and an added
    token, at that id or (HF then ignores it) another."""
    tokenizers = pytest.importorskip("tokenizers")
    from bytepair.formats.bytelevel import token_to_str

    tok = bytepair.train_from_counts({"<s>": 50, "ab": 3}, 259)
    assert [a + b for a, b in tok.merges] == [b"s>", b"<s>", b"ab"]
    doc = json.loads(bytepair.formats.to_hf_json(tok))
    for written_id in (257, 300):
        doc["added_tokens"] = [
            {"id": written_id, "content": "<s>", "special": True, "normalized": False}
            | dict.fromkeys(("single_word", "lstrip", "rstrip"), False)
        ]
        path = tmp_path / f"made-elsewhere-{written_id}.json"
        path.write_text(json.dumps(doc))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 300: "HuggingFace gives it id 257"
            loaded = Tokenizer.load(path)
        assert loaded.special_tokens == {"<s>": 257}
        assert loaded.vocab[257] == b"<s>" and token_to_str(b"<s>") in doc["model"]["vocab"]
        hf = tokenizers.Tokenizer.from_file(str(path))
        for text in ("<s>ab", "a<s>b<s>", "ab"):
            assert hf.encode(text).ids == loaded.encode(text, allowed_special="all"), text
        assert loaded.mergeable_ranks[b"<s>"] == 257  # an ordinary token too


def test_a_special_token_at_another_id_than_its_bytes_keeps_both(tmp_path):
    """tiktoken allows a special token whose text is an ordinary token of
    another rank: a rank file keeps both ids; tokenizer.json cannot (HF gives
    the added token the model token's id) and refuses, naming the token."""
    pytest.importorskip("tiktoken")
    tok = Tokenizer(BYTES | {256: b"hi"}, [(b"h", b"i")], {"hi": 300})
    assert tok.encode("hi", allowed_special="all") == [300] and tok.encode_ordinary("hi") == [256]
    assert _save_load(tok, tmp_path, "tiktoken") == tok
    enc = tok.to_tiktoken()
    assert enc.encode("hi hi", allowed_special="all") == tok.encode("hi hi", allowed_special="all")
    assert enc.encode_ordinary("hi") == [256]
    with pytest.raises(ValueError, match=r"special token 'hi' \(id 300\) is spelled like .* 256"):
        tok.save(tmp_path / "tok.json")
    assert not (tmp_path / "tok.json").exists()


@pytest.mark.parametrize(
    "vocab, message",
    [
        (BYTES | {256: b""}, r"vocab\[256\] is empty"),
        (BYTES | {256: b"hi", 300: b"hi"}, r"vocab\[256\] and vocab\[300\] are both b'hi'"),
        (BYTES | {300: b"a"}, r"vocab\[97\] and vocab\[300\] are both b'a'"),
    ],
)
def test_the_constructor_refuses_tokens_no_format_holds(vocab, message):
    merges = [(b"h", b"i")] if 256 in vocab and vocab[256] == b"hi" else []
    with pytest.raises(ValueError, match=message):
        Tokenizer(vocab, merges)


# ---- the property ---------------------------------------------------------------------------

_FORMATS = ("hf", "tiktoken", "gpt2", "tekken")


def test_what_the_constructor_accepts_saves_and_loads_back(tmp_path_factory):
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    base = bytepair.train_from_iterator(
        ["the cat sat on the mat <s> at that hat"] * 5, 274, progress=False
    )
    tokens = sorted(base.vocab.items())
    texts = [b.decode("utf-8") for _, b in tokens if b.isascii() and b.strip()]

    special_text = st.one_of(st.sampled_from(texts), st.sampled_from(["<s>", "<|x|>", "é", " "]))
    special_id = st.one_of(
        st.sampled_from([i for i, _ in tokens]), st.integers(base.n_vocab, base.n_vocab + 5)
    )

    @hypothesis.given(
        specials=st.dictionaries(special_text, special_id, max_size=3),
        as_list=st.booleans(),
        text=st.text(st.sampled_from("the cat<s>|x é "), max_size=20),
    )
    @hypothesis.settings(max_examples=150, deadline=None)
    def check(specials, as_list, text):
        try:
            tok = Tokenizer(base.vocab, base.merges, list(specials) if as_list else specials)
        except ValueError:
            return  # refused, with a message: fine
        ids = tok.encode(text, allowed_special="all")
        assert tok.decode(ids) == text
        for fmt in _FORMATS:
            d = tmp_path_factory.mktemp(fmt)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    path = _save(tok, d, fmt)
                except ValueError:
                    assert not any(d.rglob("*.*")), "refused, but wrote something"
                    continue  # the format cannot hold it, and said so before writing
                loaded = Tokenizer.load(path)
            assert loaded == tok, fmt
            assert loaded.encode(text, allowed_special="all") == ids, fmt

    check()


def test_a_special_token_that_is_a_byte_tokenizer_json_spells_otherwise(tmp_path):
    """ " " at the id of the byte b" " (which tokenizer.json spells "Ġ"): HF
    cannot give the added token " " that id, so tokenizer.json refuses; a rank
    file keeps it."""
    tok = Tokenizer(BYTES, [], [" "])
    assert tok.special_tokens == {" ": 32} and tok.encode_ordinary("a b") == [97, 32, 98]
    with pytest.raises(ValueError, match="which tokenizer.json spells 'Ġ'"):
        tok.save(tmp_path / "tok.json")
    assert _save_load(tok, tmp_path, "tiktoken") == tok
