"""Interoperability: every load path and export path against the other tool.

Pairs checked (format -> tool), on real corpora:
- GPT-2 vocab.json + merges.txt -> tiktoken's own GPT-2 loader
  (``data_gym_to_mergeable_bpe_ranks``) and HF ``tokenizers`` (``BPE.from_file``);
  the ids on whole corpus files are in test_encode.py (its tiktoken reference is
  built by tiktoken's loader, its tokenizer by ``from_gpt2_files``);
- .tiktoken rank files (OpenAI's cl100k_base / o200k_base, shipped gzipped in
  the ``bpe-openai`` wheel) -> ``tiktoken.Encoding`` built by tiktoken's own
  ``load_tiktoken_bpe`` with the pattern and special tokens of
  ``tiktoken_ext.openai_public``: 2 MB slices (or the whole file) of every corpus
  file and generated text; our ``save_tiktoken`` writes OpenAI's files byte for byte;
- live ``tiktoken.Encoding`` -> bytepair (``from_tiktoken_encoding``) and back
  (``to_tiktoken``);
- tokenizer.json -> HF ``tokenizers`` and ``transformers``: in tests/hf/
  (test_hf_files.py, test_tokenizer_json.py, test_pipeline.py);
- ``Tokenizer.load`` detection of every format, and ``bytepair convert`` / ``info``.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).parent))
from _gpt2 import (  # noqa: E402
    EOT,
    HF_SLICES,
    LOAD_SECONDS,
    OPENAI,
    PRESETS,
    assert_same_ids,
    byte_vocab,
    gpt2_tokenizer,
    openai_rank_file,
    openai_tokenizer,
    texts,
    tiktoken_gpt2,
    tiktoken_gpt2_ranks,
    tiktoken_official_pattern,
    trained,
)
from conftest import corpora_dir, corpus_files, corpus_path, read_slice  # noqa: E402

import bytepair  # noqa: E402
from bytepair import formats  # noqa: E402
from bytepair.cli import main as cli_main  # noqa: E402

tiktoken = pytest.importorskip("tiktoken")

FUZZ = settings(
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
OPENAI_PRESET = {"cl100k_base": "cl100k", "o200k_base": "o200k"}
SLICE = 2_000_000
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def no_tiktoken_cache():
    """tiktoken's loaders cache files by path under /tmp; switch that off."""
    return mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""})


# ---- OpenAI's rank files (from the bpe-openai wheel) ------------------------------


@functools.cache
def gunzipped(name: str) -> bytes:
    return gzip.decompress(openai_rank_file(name).read_bytes())


@functools.cache
def openai_reference(name: str):
    """tiktoken's own reading: ``load_tiktoken_bpe`` on the gunzipped file, the
    pattern and special tokens from ``tiktoken_ext.openai_public``."""
    import tempfile

    import tiktoken.load
    import tiktoken_ext.openai_public as op

    with tempfile.TemporaryDirectory() as tmp, no_tiktoken_cache():
        path = Path(tmp) / f"{name}.tiktoken"
        path.write_bytes(gunzipped(name))
        ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    with mock.patch.object(op, "load_tiktoken_bpe", lambda *a, **k: ranks):
        params = getattr(op, name)()
    assert params["pat_str"] == tiktoken_official_pattern(OPENAI_PRESET[name])
    return tiktoken.Encoding(**params)


def lower_rank_bpe(token: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """The parts BPE leaves of `token` using only ranks below its own (written out
    here, independently of the library, as the oracle for merge recovery)."""
    limit = ranks[token]
    parts = [bytes([c]) for c in token]
    while len(parts) > 1:
        found = [(ranks.get(parts[i] + parts[i + 1], limit), i) for i in range(len(parts) - 1)]
        rank, i = min(found)
        if rank >= limit:
            break
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts


def corpus_text(rel: str) -> str:
    """The whole file when it is at most SLICE bytes, else SLICE bytes from its middle."""
    path = corpus_path(rel)
    size = path.stat().st_size
    if size <= SLICE:
        return path.read_text(encoding="utf-8")
    return read_slice(rel, (size - SLICE) // 2, SLICE)


# ---- GPT-2 files -------------------------------------------------------------------


def test_from_gpt2_files_equals_tiktokens_gpt2_loader():
    """Our reading of OpenAI's files == tiktoken's (which checks vocab.json against
    the merges itself); merge r makes token 256 + r; <|endoftext|> is special."""
    tok = gpt2_tokenizer()
    assert tok.mergeable_ranks == tiktoken_gpt2_ranks() and tok.vocab[50256] == EOT.encode()
    assert tok.special_tokens == {EOT: 50256} and tok.pattern == "gpt2"
    assert all(tok.vocab[256 + r] == a + b for r, (a, b) in enumerate(tok.merges))
    assert tok.merges[0] == (b" ", b"t") and tok.merges[-1] == (b" g", b"azed")


def test_from_gpt2_files_with_and_without_version_line(tmp_path):
    root = corpora_dir() / "cs336"
    merges = (root / "gpt2_merges.txt").read_bytes()
    (tmp_path / "with.txt").write_bytes(b"#version: 0.2\n" + merges)
    (tmp_path / "crlf.txt").write_bytes(b"#version: 0.2\r\n" + merges.replace(b"\n", b"\r\n"))
    for name in ("with.txt", "crlf.txt"):
        tok = bytepair.Tokenizer.from_gpt2_files(root / "gpt2_vocab.json", tmp_path / name)
        assert tok == gpt2_tokenizer()


def test_save_gpt2_writes_openais_files_byte_for_byte(tmp_path):
    gpt2_tokenizer().save_gpt2(tmp_path / "out")
    root = corpora_dir() / "cs336"
    assert (tmp_path / "out" / "vocab.json").read_bytes() == (root / "gpt2_vocab.json").read_bytes()
    assert (tmp_path / "out" / "merges.txt").read_bytes() == b"#version: 0.2\n" + (
        root / "gpt2_merges.txt"
    ).read_bytes()


def hf_from_gpt2_files(directory: Path, pattern: str):
    """HF tokenizers' own reader of vocab.json + merges.txt, with the pattern."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    hf = Tokenizer(
        models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))
    )
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(formats.hf_pattern(pattern)), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.add_special_tokens([EOT])
    return hf


@pytest.mark.parametrize("pattern", PRESETS)
def test_save_gpt2_loads_in_tiktoken_and_hf(tmp_path, pattern):
    """A trained tokenizer written as GPT-2 files: read back equal; tiktoken's GPT-2
    loader accepts them (our single-byte ids are byte values, hence clobber); HF's
    BPE.from_file encodes held-out text to our ids."""
    pytest.importorskip("tokenizers")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    tok = trained(pattern)
    tok.save_gpt2(tmp_path)
    assert (
        bytepair.Tokenizer.from_gpt2_files(
            tmp_path / "vocab.json", tmp_path / "merges.txt", pattern=pattern
        )
        == tok
    )
    with no_tiktoken_cache():
        ranks = data_gym_to_mergeable_bpe_ranks(
            str(tmp_path / "merges.txt"), str(tmp_path / "vocab.json"), clobber_one_byte_tokens=True
        )
    assert ranks == tok.mergeable_ranks
    hf = hf_from_gpt2_files(tmp_path, pattern)
    for rel, start in HF_SLICES:
        text = read_slice(rel, start, 300_000)
        assert_same_ids(
            hf.encode(text, add_special_tokens=False).ids,
            tok.encode_ordinary(text),
            text=text,
            decode_bytes=tok.decode_bytes,
            label=f"HF BPE.from_file, {pattern}, {rel}",
        )
    docs = EOT.join(read_slice("tinystories_v1_valid_head.txt", 0, 100_000).split("\n\n"))
    assert hf.encode(docs, add_special_tokens=False).ids == tok.encode(docs, allowed_special="all")


def small_gpt2_files(
    tmp_path: Path, merges: list[str], vocab_extra: dict[str, int] | None = None
) -> tuple[Path, Path]:
    """vocab.json (256 bytes + merge results + extras) and merges.txt in GPT-2 form."""
    table = formats.bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    for m in merges:
        a, b = m.split(" ")
        vocab.setdefault(a + b, len(vocab))
    vocab.update(vocab_extra or {})
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("\n".join(merges) + "\n", encoding="utf-8")
    return tmp_path / "vocab.json", tmp_path / "merges.txt"


def test_from_gpt2_files_special_tokens(tmp_path):
    """Entries no merge makes are special tokens (their text, their id); more may be given."""
    v, m = small_gpt2_files(tmp_path, ["a b", "ab c"], {EOT: 258, "<|é€|>": 259})
    tok = bytepair.Tokenizer.from_gpt2_files(v, m)
    assert tok.special_tokens == {EOT: 258, "<|é€|>": 259} and tok.vocab[257] == b"abc"
    assert tok.encode("abc<|é€|>", allowed_special="all") == [257, 259]
    tok = bytepair.Tokenizer.from_gpt2_files(v, m, special_tokens=["<|pad|>", EOT])
    assert tok.special_tokens == {EOT: 258, "<|é€|>": 259, "<|pad|>": 260}
    tok = bytepair.Tokenizer.from_gpt2_files(v, m, special_tokens={"<|pad|>": 1000})
    assert tok.special_tokens["<|pad|>"] == 1000
    tok.save_gpt2(tmp_path / "again")
    assert bytepair.Tokenizer.load(tmp_path / "again") == tok


@pytest.mark.parametrize(
    "merges, needles",
    [
        (["a b c"], ["line 1", "left right"]),
        (["a b", "", "ab  c"], ["line 3"]),
        (["a €"], ["line 1", "€"]),
        # (b, c) merges before (a, b), so BPE makes a + bc of "abc", not ab + c.
        (["b c", "a b", "ab c"], ["merge[2]", "(b'ab', b'c')", "[b'a', b'bc']"]),
        (["a b", "a b"], ["merge[1]", "merge[0] already makes"]),
    ],
)
def test_from_gpt2_files_errors_name_the_line(tmp_path, merges, needles):
    table = formats.bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)} | {"ab": 256, "bc": 257, "abc": 258}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("\n".join(merges) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        bytepair.Tokenizer.from_gpt2_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    msg = str(info.value)
    assert "merges.txt" in msg and all(n in msg for n in needles), msg


def test_from_gpt2_files_bad_vocab(tmp_path):
    v, m = small_gpt2_files(tmp_path, ["a b"])
    v.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="vocab.json: not valid JSON"):
        bytepair.Tokenizer.from_gpt2_files(v, m)
    v.write_text(json.dumps({"a": 0, "b": 0}), encoding="utf-8")
    with pytest.raises(ValueError, match="id 0 is given to two entries"):
        bytepair.Tokenizer.from_gpt2_files(v, m)
    v.write_text(json.dumps({"a": "0"}), encoding="utf-8")
    with pytest.raises(ValueError, match="entry 'a'"):
        bytepair.Tokenizer.from_gpt2_files(v, m)


def test_save_gpt2_rejects_what_vocab_json_cannot_hold(tmp_path):
    tok = bytepair.Tokenizer(byte_vocab() | {256: b"ab"}, [(b"a", b"b")], {"ab": 300})
    with pytest.raises(ValueError, match="special token 'ab'"):
        tok.save_gpt2(tmp_path)
    assert not (tmp_path / "vocab.json").exists()


# ---- OpenAI's .tiktoken files ----------------------------------------------------------


@pytest.mark.parametrize("name", OPENAI)
def test_openai_rank_file_loads_with_recovered_merges(name):
    tok, ref = openai_tokenizer(name), openai_reference(name)
    assert tok.mergeable_ranks == ref._mergeable_ranks
    assert tok.special_tokens == ref._special_tokens and tok.pattern == OPENAI_PRESET[name]
    assert tok.pattern_regex == ref._pat_str
    assert len(tok.merges) == len(ref._mergeable_ranks) - 256
    ids = [ref._mergeable_ranks[a + b] for a, b in tok.merges]
    assert ids == sorted(ids)
    # Each merge's parts are ranked tokens of lower rank ...
    ranks = ref._mergeable_ranks
    assert all(ranks[a] < i and ranks[b] < i for (a, b), i in zip(tok.merges, ids))
    # ... and, on a sample, the two parts a plain-Python BPE with lower ranks leaves.
    for a, b in random.Random(name).sample(tok.merges, 3000):
        assert lower_rank_bpe(a + b, ranks) == [a, b], (a, b)
    # Well-known tokens (cl100k: "Hello world" = [9906, 1917]).
    if name == "cl100k_base":
        assert tok.encode("Hello world") == [9906, 1917]
    assert LOAD_SECONDS[name] < 30, LOAD_SECONDS


@pytest.mark.parametrize("name", OPENAI)
def test_core_rank_table_equals_the_python_parser(name):
    """The core reads a valid .tiktoken file (`_core.rank_table`); the Python
    parser, which words the errors, must agree with it token for token."""
    from bytepair import _core
    from bytepair.formats.tables import merges_from_ranks
    from bytepair.formats.tiktoken_files import parse_ranks

    data = gunzipped(name)
    table = _core.rank_table(data)
    vocab, merges = table.python_tables()
    ranks, _lines = parse_ranks(data, source=name)
    assert len(table) == len(ranks) and table.max_rank() == max(ranks.values())
    assert [table.token(r) for r in (0, 255, 256, len(ranks) - 1, len(ranks) + 5)] == [
        vocab.get(r) for r in (0, 255, 256, len(ranks) - 1, len(ranks) + 5)
    ]
    assert vocab == {r: t for t, r in ranks.items()}
    assert merges == merges_from_ranks(ranks, source=name)
    # The parts of each merge are the vocabulary's own bytes objects (no copies).
    assert all(vocab[ranks[a]] is a and vocab[ranks[b]] is b for a, b in merges[:1000])


@pytest.mark.parametrize("name", OPENAI)
def test_tiktoken_vocab_and_merges_made_on_demand_equal_the_python_reading(name):
    """A core-read .tiktoken keeps no Python vocab until asked: sizes, ids and
    the special-token checks come from the core's table, and the vocab and
    merges made later equal those of the Python parser's Tokenizer."""
    from bytepair.formats.tables import merges_from_ranks
    from bytepair.formats.tiktoken_files import parse_ranks

    path = openai_rank_file(name)
    tok = bytepair.Tokenizer.from_tiktoken(path)
    assert tok._vocab is None, "the vocab was made at load"
    bares = [bytepair.Tokenizer.from_tiktoken(path, special_tokens=n) for n in ({}, [], ())]
    assert all(b._vocab is None and b.special_tokens == {} for b in bares)
    sizes = (tok.n_vocab, tok.vocab_size)
    ids = tok.encode("Hello <|endoftext|> world", allowed_special="all")
    assert tok._vocab is None
    ranks, _ = parse_ranks(gunzipped(name), source=name)
    # Sizes read with no vocab and no special tokens (n_vocab raised: max() of one int).
    assert all((b.n_vocab, b.vocab_size) == (max(ranks.values()) + 1, len(ranks)) for b in bares)
    slow = bytepair.Tokenizer(
        {r: t for t, r in ranks.items()},
        merges_from_ranks(ranks, source=name),
        special_tokens=tok.special_tokens,
        pattern=OPENAI_PRESET[name],
    )
    assert sizes == (slow.n_vocab, slow.vocab_size) and ids == slow.encode(
        "Hello <|endoftext|> world", allowed_special="all"
    )
    assert tok.vocab == slow.vocab and tok.merges == slow.merges
    taken = min(ranks.values(), key=lambda r: r)
    with pytest.raises(ValueError, match="which the vocab gives to"):
        bytepair.Tokenizer.from_tiktoken(path, special_tokens={"<|x|>": taken})


def test_rank_file_the_core_refuses_but_python_reads(tmp_path):
    """Python's base64 accepts non-canonical padding bits ("YR==" is b"a");
    the core's decoder does not, and the file loads through the Python parser."""
    from bytepair import _core

    content = rank_lines(BYTES[:97] + BYTES[98:]) + b"YR== 97\n" + rank_lines([(b"ab", 256)])
    assert _core.rank_table(content) is None
    path = tmp_path / "lenient.tiktoken"
    path.write_bytes(content)
    tok = bytepair.Tokenizer.from_tiktoken(path, pattern="gpt2", special_tokens={})
    assert tok.merges == [(b"a", b"b")] and tok.encode("ab") == [256]


@pytest.mark.parametrize("rel", corpus_files() or ["<corpora absent>"])
@pytest.mark.parametrize("name", OPENAI)
def test_openai_matches_tiktoken_on_every_corpus(name, rel):
    tok, ref = openai_tokenizer(name), openai_reference(name)
    text = corpus_text(rel)
    assert_same_ids(
        tok.encode_ordinary(text),
        ref.encode_ordinary(text),
        text=text,
        decode_bytes=ref.decode_bytes,
        label=f"{name} on {rel}",
    )
    docs = EOT.join(text[:300_000].split("\n\n"))
    assert tok.encode(docs, allowed_special="all") == ref.encode(docs, allowed_special="all")


@pytest.mark.parametrize("name", OPENAI)
def test_openai_matches_tiktoken_on_generated_text(name):
    tok, ref = openai_tokenizer(name), openai_reference(name)

    @FUZZ
    @given(text=texts)
    def check(text):
        assert tok.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert tok.encode_ordinary(text) == ref.encode_ordinary(text)

    check()


@pytest.mark.parametrize("name", OPENAI)
def test_save_tiktoken_writes_openais_file_and_a_sidecar(tmp_path, name):
    tok = openai_tokenizer(name)
    path = tmp_path / f"copy-of-{name}.tiktoken"
    tok.save_tiktoken(path)
    assert path.read_bytes() == gunzipped(name)
    sidecar = json.loads((tmp_path / f"copy-of-{name}.tiktoken.json").read_text(encoding="utf-8"))
    assert sidecar == {
        "pat_str": openai_reference(name)._pat_str,
        "special_tokens": openai_reference(name)._special_tokens,
    }
    with no_tiktoken_cache():
        assert tiktoken.load.load_tiktoken_bpe(str(path)) == openai_reference(name)._mergeable_ranks
    assert bytepair.Tokenizer.load(path) == tok


@pytest.mark.parametrize("name", OPENAI)
def test_from_tiktoken_encoding_and_to_tiktoken(name):
    tok, ref = openai_tokenizer(name), openai_reference(name)
    assert bytepair.Tokenizer.from_tiktoken_encoding(ref) == tok
    enc = tok.to_tiktoken()
    assert (
        enc._mergeable_ranks == ref._mergeable_ranks and enc._special_tokens == ref._special_tokens
    )
    text = read_slice("multilingual.txt", 3_000_000, 200_000) + EOT
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")


def test_gpt2_from_tiktoken_encoding_and_back():
    """tiktoken's GPT-2 (with tiktoken's own spelling of the pattern) reads as the
    gpt2 preset; to_tiktoken gives tiktoken's ranks back."""
    enc = tiktoken_gpt2(tiktoken_official_pattern("gpt2"))
    tok = bytepair.Tokenizer.from_tiktoken_encoding(enc)
    assert tok == gpt2_tokenizer() and tok.pattern == "gpt2"
    back = gpt2_tokenizer().to_tiktoken()
    assert back._mergeable_ranks == tiktoken_gpt2_ranks() and back._special_tokens == {EOT: 50256}
    text = read_slice("enwik8_head.txt", 2_000_000, 500_000)
    assert back.encode_ordinary(text) == enc.encode_ordinary(text) == tok.encode_ordinary(text)


# ---- .tiktoken errors and options ------------------------------------------------------------


def rank_lines(pairs) -> bytes:
    return b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in pairs)


BYTES = [(bytes([b]), b) for b in range(256)]


@pytest.mark.parametrize(
    "content, needles",
    [
        (
            rank_lines(BYTES) + b"YWI= 256\nYWJj x257\n",
            ["line 258", "expected 'base64-token rank'"],
        ),
        (rank_lines(BYTES) + b"YWI=\n", ["line 257", "expected 'base64-token rank'"]),
        (rank_lines(BYTES) + b"YWI= 256\nnot-base64! 257\n", ["line 258", "invalid base64"]),
        (
            rank_lines(BYTES) + rank_lines([(b"ab", 256), (b"ab", 257)]),
            ["line 258", "already on line 257"],
        ),
        (
            rank_lines(BYTES) + rank_lines([(b"ab", 256), (b"bc", 256)]),
            ["line 257", "line 258", "same rank 256"],
        ),
        # "abc" with no "ab" or "bc" below it: no merge of two lower-ranked tokens reaches it.
        (
            rank_lines(BYTES) + rank_lines([(b"abc", 256), (b"ab", 257)]),
            ["b'abc' (line 257) with rank 256", "3 parts [b'a', b'b', b'c']"],
        ),
        (
            rank_lines(BYTES[:97] + BYTES[98:]) + rank_lines([(b"ab", 256)]),
            ["b'ab' (line 256)", "byte b'a', which has no rank"],
        ),
        (b"", ["no ranks"]),
    ],
)
def test_from_tiktoken_errors_name_the_line(tmp_path, content, needles):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        bytepair.Tokenizer.from_tiktoken(path, pattern="gpt2", special_tokens={})
    msg = str(info.value)
    assert str(path) in msg and all(n in msg for n in needles), msg


def test_from_tiktoken_needs_a_pattern(tmp_path):
    path = tmp_path / "mine.tiktoken"
    path.write_bytes(rank_lines(BYTES + [(b"ab", 256)]))
    with pytest.raises(ValueError, match="pass pattern="):
        bytepair.Tokenizer.from_tiktoken(path)
    with pytest.raises(ValueError, match="pass pattern="):
        bytepair.Tokenizer.load(path)
    tok = bytepair.Tokenizer.from_tiktoken(path, pattern="o200k", special_tokens={"<|x|>": 300})
    assert tok.pattern == "o200k" and tok.encode("ab<|x|>", allowed_special="all") == [256, 300]
    # A file named like OpenAI's but with other ranks is not taken for it.
    shutil.copy(path, tmp_path / "cl100k_base.tiktoken")
    with pytest.raises(ValueError, match="pass pattern="):
        bytepair.Tokenizer.load(tmp_path / "cl100k_base.tiktoken")


def test_sidecar_is_read_and_arguments_override_it(tmp_path):
    tok = bytepair.Tokenizer(
        byte_vocab() | {256: b"ab"}, [(b"a", b"b")], {"<|x|>": 257}, pattern=r"\S+|\s+"
    )
    tok.save_tiktoken(tmp_path / "t.tiktoken")
    assert bytepair.Tokenizer.from_tiktoken(tmp_path / "t.tiktoken") == tok
    assert bytepair.Tokenizer.load(tmp_path / "t.tiktoken.json") == tok  # the sidecar's own path
    other = bytepair.Tokenizer.from_tiktoken(
        tmp_path / "t.tiktoken", pattern="gpt2", special_tokens={"<|y|>": 400}
    )
    assert other.pattern == "gpt2" and other.special_tokens == {"<|y|>": 400}
    (tmp_path / "t.tiktoken.json").write_text('{"special_tokens": {}}', encoding="utf-8")
    with pytest.raises(ValueError, match="pat_str"):
        bytepair.Tokenizer.from_tiktoken(tmp_path / "t.tiktoken")


def test_to_tiktoken_errors(tmp_path):
    # Ids out of merge order: tiktoken would merge "cd" (id 256) before "ab" (id 257).
    tok = bytepair.Tokenizer(byte_vocab() | {257: b"ab", 256: b"cd"}, [(b"a", b"b"), (b"c", b"d")])
    with pytest.raises(ValueError, match="ids must increase in merge order"):
        tok.to_tiktoken()
    # A token no merge makes: tiktoken would merge into it, we only look it up whole.
    tok = bytepair.Tokenizer(byte_vocab() | {256: b"ab", 257: b"xyz"}, [(b"a", b"b")])
    with pytest.raises(ValueError, match=r"b'xyz' \(id 257\) is not made by any merge"):
        tok.to_tiktoken()
    with pytest.raises(ValueError, match="not made by any merge"):
        tok.save_tiktoken(tmp_path / "unused.tiktoken")
    assert not list(tmp_path.iterdir())
    with mock.patch.dict(sys.modules, {"tiktoken": None}):
        with pytest.raises(ImportError, match="pip install tiktoken"):
            bytepair.Tokenizer(byte_vocab(), []).to_tiktoken()


# ---- Tokenizer.load detection, convert and info ---------------------------------------------


def test_load_detects_every_format(tmp_path):
    tok = trained("cl100k")
    tok.save(tmp_path / "tokenizer.json")
    tok.save_gpt2(tmp_path / "gpt2")
    tok.save_tiktoken(tmp_path / "t.tiktoken")
    gz = tmp_path / "gz" / "t.tiktoken.gz"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress((tmp_path / "t.tiktoken").read_bytes()))
    shutil.copy(tmp_path / "t.tiktoken.json", tmp_path / "gz" / "t.tiktoken.gz.json")
    (tmp_path / "openai").mkdir()
    shutil.copy(tmp_path / "gpt2" / "vocab.json", tmp_path / "openai" / "encoder.json")
    shutil.copy(tmp_path / "gpt2" / "merges.txt", tmp_path / "openai" / "vocab.bpe")
    expected = {
        "tokenizer.json": "hf",
        ".": "hf",
        "gpt2": "gpt2",
        "gpt2/vocab.json": "gpt2",
        "gpt2/merges.txt": "gpt2",
        "t.tiktoken": "tiktoken",
        "t.tiktoken.json": "tiktoken",
        "gz/t.tiktoken.gz": "tiktoken",
        "gz": "tiktoken",
        "openai/encoder.json": "gpt2",
        "openai/vocab.bpe": "gpt2",
    }
    for rel, kind in expected.items():
        assert formats.detect_format(tmp_path / rel)[0] == kind, rel
        loaded = bytepair.Tokenizer.load(tmp_path / rel)
        if kind == "gpt2":  # GPT-2 files hold no pattern: the default is GPT-2's
            assert loaded.pattern == "gpt2"
            loaded = bytepair.Tokenizer(
                loaded.vocab, loaded.merges, loaded.special_tokens, pattern="cl100k"
            )
        assert loaded == tok, rel
    # The cs336 naming: gpt2_vocab.json beside gpt2_merges.txt.
    root = corpora_dir() / "cs336"
    assert (
        bytepair.Tokenizer.load(root / "gpt2_vocab.json")
        == bytepair.Tokenizer.load(root / "gpt2_merges.txt")
        == gpt2_tokenizer()
    )


@pytest.mark.parametrize(
    "name, content, needle",
    [
        ("x.txt", b"hello world, not a tokenizer\n", "cannot tell the format"),
        ("vocab.json", b'{"a": 0}', "no merges.txt beside it"),
        ("merges.txt", b"#version: 0.2\na b\n", "no vocab.json beside it"),
        ("x.json", b'{"version": "1.0"}', "no 'model' object"),
        ("x.json", b"[1, 2", "not valid JSON"),
    ],
)
def test_load_unknown_or_incomplete(tmp_path, name, content, needle):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError, match=needle):
        bytepair.Tokenizer.load(tmp_path / name)


def test_cli_convert_between_all_formats_and_info(tmp_path, capsys):
    tok = trained("o200k")
    tok.save(tmp_path / "a.json")

    def convert(*args: str) -> int:
        return cli_main(["convert", *args])

    def same_table(loaded: bytepair.Tokenizer) -> bool:
        return (loaded.vocab, loaded.merges, loaded.special_tokens) == (
            tok.vocab,
            tok.merges,
            tok.special_tokens,
        )

    assert convert(str(tmp_path / "a.json"), str(tmp_path / "b.tiktoken")) == 0
    assert bytepair.Tokenizer.load(tmp_path / "b.tiktoken") == tok
    assert convert(str(tmp_path / "b.tiktoken"), str(tmp_path / "c") + os.sep) == 0
    assert same_table(bytepair.Tokenizer.load(tmp_path / "c"))  # GPT-2 files hold no pattern
    assert convert(str(tmp_path / "c"), str(tmp_path / "d.json")) == 0
    assert same_table(bytepair.Tokenizer.load(tmp_path / "d.json"))
    assert bytepair.Tokenizer.load(tmp_path / "d.json").pattern == "gpt2"
    assert convert(str(tmp_path / "a.json"), str(tmp_path / "e.out"), "--to", "tiktoken") == 0
    assert bytepair.Tokenizer.from_tiktoken(tmp_path / "e.out") == tok
    assert convert(str(tmp_path / "a.json"), str(tmp_path / "f.bin")) == 1
    assert "--to" in capsys.readouterr().err and not (tmp_path / "f.bin").exists()
    # A .tiktoken input without a sidecar takes --pattern and --special-token.
    (tmp_path / "b.tiktoken.json").unlink()
    assert (
        convert(
            str(tmp_path / "b.tiktoken"),
            str(tmp_path / "g.json"),
            "--pattern",
            "o200k",
            "--special-token",
            f"{EOT}=1999",
        )
        == 0
    )
    assert bytepair.Tokenizer.load(tmp_path / "g.json") == tok
    capsys.readouterr()
    assert cli_main(["info", str(tmp_path / "b.tiktoken")]) == 1
    assert "pass pattern=" in capsys.readouterr().err
    assert cli_main(["info", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert (
        "HuggingFace tokenizer.json (hf)" in out
        and "2,000 (1,999 tokens + 1 special; largest id 1,999)" in out
    )
    assert (
        "merges          1,743" in out and f"{EOT}=1999" in out and "o200k (preset: [^\\r\\n" in out
    )


def test_cli_info_on_openai_file_as_a_subprocess():
    """The installed `bytepair` command (the entry point), on OpenAI's gzipped cl100k file."""
    path = openai_rank_file("cl100k_base")
    exe = shutil.which("bytepair") or pytest.skip("bytepair script not on PATH")
    out = subprocess.run(
        [exe, "info", str(path)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert (
        "tiktoken rank file (tiktoken)" in out
        and "100,261 (100,256 tokens + 5 special; largest id 100,276)" in out
    )
    assert (
        "merges          100,000" in out
        and "<|endofprompt|>=100276" in out
        and "cl100k (preset" in out
    )
