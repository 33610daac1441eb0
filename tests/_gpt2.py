"""Reference tokenizers and text shared by the tests (test_encode.py,
test_interop.py, tests/hf/...).

- the GPT-2 tokenizer from ``cs336/gpt2_vocab.json`` + ``gpt2_merges.txt``
  (the files OpenAI released; vocab.json is byte-identical to tiktoken's
  ``encoder.json``), read by ``bytepair.Tokenizer.from_gpt2_files`` and, as an
  offline tiktoken.Encoding, by tiktoken's own GPT-2 loader;
- tiktoken references for any bytepair tokenizer, and tiktoken's own preset
  patterns as the installed tiktoken defines them;
- OpenAI's cl100k_base / o200k_base rank files (from the bpe-openai wheel),
  read by bytepair (`openai_tokenizer`, cached);
- small tokenizers trained on a few hundred KB of the corpora (cached);
- hypothesis strategies for adversarial text;
- `assert_same_ids`, which on a mismatch reports the first differing position
  with the surrounding text instead of a 10-million-element list diff.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import EOT, corpora_dir, read_slice
from hypothesis import strategies as st

import bytepair

PRESETS = ("gpt2", "cl100k", "o200k")


# ---- OpenAI's rank files (from the bpe-openai wheel) ------------------------------

OPENAI = ("cl100k_base", "o200k_base")
# Held-out slices for the HF / transformers checks.
HF_SLICES = (("enwiki.txt", 41_000_000), ("code.txt", 5_000_000), ("multilingual.txt", 15_000_000))
LOAD_SECONDS: dict[str, float] = {}  # name -> seconds `openai_tokenizer` took to read it


def byte_vocab() -> dict[int, bytes]:
    return {i: bytes([i]) for i in range(256)}


def openai_rank_file(name: str) -> Path:
    bpe_openai = pytest.importorskip(
        "bpe_openai", reason="bpe-openai (ships OpenAI's .tiktoken.gz files) not installed"
    )
    path = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent from the installed bpe-openai")
    return path


@functools.cache
def openai_tokenizer(name: str) -> bytepair.Tokenizer:
    """bytepair's reading of the gzipped rank file (pattern and special tokens from its name)."""
    start = time.perf_counter()
    tok = bytepair.Tokenizer.from_tiktoken(openai_rank_file(name))
    LOAD_SECONDS[name] = time.perf_counter() - start
    return tok


# ---- GPT-2 -----------------------------------------------------------------


@functools.cache
def gpt2_tokenizer() -> bytepair.Tokenizer:
    """GPT-2 read by the library (`Tokenizer.from_gpt2_files`) from the released files."""
    root = corpora_dir() / "cs336"
    tok = bytepair.Tokenizer.from_gpt2_files(root / "gpt2_vocab.json", root / "gpt2_merges.txt")
    assert (
        len(tok.vocab) == 50257 and len(tok.merges) == 50000 and tok.special_tokens == {EOT: 50256}
    )
    return tok


def gpt2_files() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], dict[str, int]]:
    """(vocab without special tokens, merges, special tokens) of GPT-2."""
    tok = gpt2_tokenizer()
    return (
        {i: b for i, b in tok.vocab.items() if i != 50256},
        list(tok.merges),
        dict(tok.special_tokens),
    )


@functools.cache
def tiktoken_gpt2_ranks() -> dict[bytes, int]:
    """GPT-2's ranks as tiktoken's own loader reads the released files
    (``tiktoken.load.data_gym_to_mergeable_bpe_ranks``, which also checks that
    vocab.json agrees with the merges): a reference independent of bytepair's
    reader. That loader expects a ``#version`` first line, so it reads a copy
    with one; its download cache is switched off."""
    import os
    import tempfile
    from unittest import mock

    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    root = corpora_dir() / "cs336"
    merges = (root / "gpt2_merges.txt").read_bytes()
    assert not merges.startswith(b"#version")
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}),
    ):
        bpe = Path(tmp) / "vocab.bpe"
        bpe.write_bytes(b"#version: 0.2\n" + merges)
        return data_gym_to_mergeable_bpe_ranks(str(bpe), str(root / "gpt2_vocab.json"))


@functools.cache
def tiktoken_gpt2(pat_str: str | None = None):
    """GPT-2 as a tiktoken.Encoding built offline by tiktoken's own loader from the
    same files (so the parity tests also check `from_gpt2_files`)."""
    import tiktoken

    return tiktoken.Encoding(
        name="gpt2_test",
        pat_str=pat_str or bytepair.resolve_pattern("gpt2"),
        mergeable_ranks=tiktoken_gpt2_ranks(),
        special_tokens={EOT: 50256},
    )


# ---- tiktoken references ----------------------------------------------------


def tiktoken_for(tok: bytepair.Tokenizer, pat_str: str | None = None):
    """A tiktoken.Encoding with the same ranks, pattern and special tokens as `tok`
    (our id layout: rank == id, docs/design.md)."""
    import tiktoken

    special_ids = set(tok.special_tokens.values())
    ranks = {b: i for i, b in tok.vocab.items() if i not in special_ids}
    assert len(ranks) == len(tok.vocab) - len(special_ids & tok.vocab.keys()), (
        "duplicate token bytes"
    )
    return tiktoken.Encoding(
        name=f"bytepair_test_{id(tok)}",
        pat_str=pat_str or tok.pattern_regex,
        mergeable_ranks=ranks,
        special_tokens=dict(tok.special_tokens),
    )


@functools.cache
def tiktoken_official_pattern(preset: str) -> str:
    """The pre-tokenization regex the installed tiktoken uses for a preset
    (``gpt2`` -> r50k_base, ``cl100k`` -> cl100k_base, ``o200k`` -> o200k_base),
    read from tiktoken_ext without downloading any ranks."""
    from unittest import mock

    try:
        import tiktoken_ext.openai_public as op

        with mock.patch.object(op, "load_tiktoken_bpe", lambda *a, **k: {}):
            ctor = {"gpt2": op.r50k_base, "cl100k": op.cl100k_base, "o200k": op.o200k_base}[preset]
            return ctor()["pat_str"]
    except Exception as e:  # pragma: no cover - depends on tiktoken internals
        pytest.skip(f"cannot read tiktoken's own {preset} pattern: {e!r}")


# ---- tokenizers trained on the corpora ---------------------------------------

TRAIN_SLICES = (
    ("enwiki.txt", 0),
    ("code.txt", 0),
    ("multilingual.txt", 0),
    ("tinystories_v1_train_head.txt", 0),
)


@functools.cache
def training_text() -> str:
    """~400 KB of real text (100 KB from each of four corpora), joined with <|endoftext|>."""
    return EOT.join(read_slice(name, start, 100_000) for name, start in TRAIN_SLICES)


@functools.cache
def trained(pattern: str, vocab_size: int = 2000) -> bytepair.Tokenizer:
    tok = bytepair.train_from_iterator(
        [training_text()], vocab_size, special_tokens=[EOT], pattern=pattern
    )
    assert tok.vocab_size == vocab_size, (pattern, tok.vocab_size)
    return tok


# Held-out slices (not in the training text) for parity checks.
EVAL_SLICES = (
    ("enwiki.txt", 20_000_000),
    ("code.txt", 12_000_000),  # C / Rust part of the file
    ("code.txt", 26_000_000),  # JavaScript part
    ("multilingual.txt", 9_000_000),
    ("enwik8_head.txt", 1_000_000),
    ("shakespeare.txt", 0),
    ("tinystories_v1_valid_head.txt", 0),
)


# ---- comparing id sequences -------------------------------------------------


def assert_same_ids(
    ours, theirs, *, text: str | None = None, decode_bytes=None, label: str = ""
) -> None:
    """Assert two id sequences are identical; on a mismatch, fail with the first
    differing position, the ids around it and the text there (via `decode_bytes`
    of the common prefix, which gives the byte offset into `text`)."""
    a = np.asarray(ours, dtype=np.int64)
    b = np.asarray(theirs, dtype=np.int64)
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    if len(diff) == 0 and len(a) == len(b):
        return
    i = int(diff[0]) if len(diff) else n
    msg = [f"{label}: ids differ at position {i} (ours: {len(a)} ids, reference: {len(b)} ids)"]
    msg.append(f"  ours     [{max(0, i - 3)}:{i + 5}] = {a[max(0, i - 3) : i + 5].tolist()}")
    msg.append(f"  reference[{max(0, i - 3)}:{i + 5}] = {b[max(0, i - 3) : i + 5].tolist()}")
    if text is not None and decode_bytes is not None:
        data = text.encode("utf-8", errors="surrogatepass")
        at = len(decode_bytes(b[:i].tolist()))
        msg.append(f"  at byte {at}: before {data[max(0, at - 60) : at]!r}")
        msg.append(f"            after  {data[at : at + 60]!r}")
    raise AssertionError("\n".join(msg))


# ---- hypothesis strategies ---------------------------------------------------

CONTRACTIONS = [
    "'s",
    "'t",
    "'re",
    "'ve",
    "'m",
    "'ll",
    "'d",
    "'S",
    "'T",
    "'RE",
    "'Ve",
    "'LL",
    "'D",
    "'x",
    "\u2019s",
    "'\u017f",
    "'\u212a",
    "''",
    "'",
]
WHITESPACE = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2000",
    "\u2009",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
    "\x1c",
    "\x1f",
    "\u200b",
    "\ufeff",
]
DIGITS = "0123456789\u0660\u0661\u0967\u09eb\u0e56\xb2\xbd\u2167\uff11\U0001d7ce"
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\u2026\u2014\u201c\u201d\xab\xbb\xbf\xa1\u3002\u00b7"
WORDS = [
    "the",
    " the",
    " The",
    "mutinous",
    " interesting",
    "tokenization",
    " running",
    "ing",
    " don't",
    " I'm",
    "HTTPServer",
    "__init__",
    "self.assertEqual",
    "0x7fffffff",
    " 2023-11-05",
    " $1,299.99",
    "https://example.org/a?b=c",
    " Überprüfung",
    " naïve",
    " наличие",
    " Россия",
    "東京都",
    "日本語の文章",
    " 한국어",
    " العربية",
    " हिन्दी",
    " ελληνικά",
    " שלום",
    " ภาษาไทย",
    "\tif (x) {\n\t\treturn;\n\t}",
    "    def f(self):\n",
    " Ⅻ",
    " ½",
    "e\u0301",
    "👩\u200d💻",
]
SPECIALISH = [
    EOT,
    EOT + EOT,
    "<|endoftext",
    "endoftext|>",
    "<|",
    "|>",
    "<|endoftext|",
    "<" + EOT + ">",
]

no_surrogates = st.characters(exclude_categories=("Cs",))
fragments = st.one_of(
    st.sampled_from(CONTRACTIONS),
    st.lists(st.sampled_from(WHITESPACE), min_size=1, max_size=6).map("".join),
    st.text(st.sampled_from(DIGITS), min_size=1, max_size=9),
    st.from_regex(r"[A-Za-z]{1,10}", fullmatch=True),
    st.text(
        st.characters(categories=("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me")),
        min_size=1,
        max_size=8,
    ),
    st.text(st.sampled_from(PUNCT), min_size=1, max_size=4),
    st.characters(categories=("Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp")),
    no_surrogates,
    st.text(st.sampled_from("abcz"), min_size=64, max_size=600),  # long run without spaces
    st.text(st.characters(categories=("Ll", "Lo", "Nd")), min_size=30, max_size=120),
    st.sampled_from(SPECIALISH),
    st.sampled_from(WORDS),
    st.sampled_from(WORDS),
)
# Text from every plane (unassigned and private-use code points included), no lone surrogates.
any_text = st.text(no_surrogates, max_size=80)
# Text built from the pieces the patterns treat specially.
tricky_text = st.lists(fragments, max_size=25).map("".join)
texts = st.one_of(any_text, tricky_text)
# Strings that may hold lone surrogates (and surrogate pairs written as two code points).
with_surrogates = st.lists(
    st.one_of(
        st.characters(categories=("Cs",)),
        st.sampled_from(["\ud83d\ude00", "a", " ", "\u00e9"]),
        no_surrogates,
    ),
    max_size=12,
).map("".join)
