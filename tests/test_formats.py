"""What the format readers share: GPT-2's byte-level printable form decoded in
bulk, the merge-table checks, and the native fast paths (`_core`) of
tokenizer.json and GPT-2 files, each against its item-by-item Python reading.
The tokenizer.json tests are in tests/hf/, the other formats' against their
tools in test_interop.py.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair.formats import str_to_token


@given(st.lists(st.binary(max_size=12), max_size=40), st.integers(min_value=0, max_value=39))
@settings(max_examples=200, deadline=None)
def test_bulk_byte_level_decoding_equals_one_by_one(tokens, bad_at):
    """Loading tokenizer.json decodes every token in one pass over them joined
    (`strs_to_tokens`); it must give `str_to_token`'s bytes, and the error of
    the first string that is not byte-level, naming its index."""
    from bytepair.formats.bytelevel import strs_to_tokens, token_to_str

    texts = [token_to_str(t) for t in tokens]
    assert strs_to_tokens(texts, str) == [str_to_token(t) for t in texts] == tokens
    if texts:
        bad_at %= len(texts)
        broken = texts[:bad_at] + [texts[bad_at] + " x"] + texts[bad_at + 1 :] + ["\n"]
        with pytest.raises(
            ValueError, match=rf"^item {bad_at}: .* is not a byte-level token \(character ' '\)"
        ):
            strs_to_tokens(broken, lambda n: f"item {n}")


def test_tokenizer_copies_and_checks_tables_of_any_plain_or_odd_types():
    """The constructor copies plain tables whole (ints, bytes, tuples) and
    converts others item by item; the caller's objects are never kept."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    merges = [(b"a", b"b")]
    tok = bytepair.Tokenizer(vocab, merges)
    vocab[256], merges[0] = b"zz", (b"z", b"z")
    assert tok.vocab[256] == b"ab" and tok.merges == [(b"a", b"b")]
    odd = bytepair.Tokenizer(
        {i: bytearray([i]) for i in range(256)} | {256: bytearray(b"ab")}, [[b"a", bytearray(b"b")]]
    )
    assert (
        odd.vocab[256] == b"ab" and type(odd.vocab[256]) is bytes and odd.merges == [(b"a", b"b")]
    )
    for bad_id in (True, -1, 1 << 32, 1.0):
        with pytest.raises(ValueError, match="token id"):
            bytepair.Tokenizer({bad_id: b"x"} | {i: bytes([i]) for i in range(1, 256)}, [])


@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=24), st.booleans())
@settings(max_examples=300, deadline=None)
def test_native_merge_table_check_agrees_with_the_python_check(picks, with_vocab):
    """`_core.merge_table_passes` is the fast path of `check_merges` and
    `check_vocab_merges`; on random tables over a small alphabet (repeated
    results, merges BPE does not make, parts missing from the vocab) it must
    pass exactly the tables the item-by-item Python check passes."""
    from bytepair import _core
    from bytepair.formats.tables import check_merges, check_vocab_merges

    known = [b"a", b"b", b"c"]
    merges = []
    for i, j in picks:
        merges.append((known[i % len(known)], known[j % len(known)]))
        known.append(merges[-1][0] + merges[-1][1])
    vocab = {
        n: t
        for n, t in enumerate(
            dict.fromkeys(known[: len(known) - len(picks) // 3] if with_vocab else known)
        )
    }

    def python_passes(check) -> bool:
        try:
            check()
            return True
        except ValueError:
            return False

    # A tuple of merges takes the item-by-item path.
    assert _core.merge_table_passes(merges) == python_passes(
        lambda: check_merges(tuple(merges), source="t")
    )
    assert _core.merge_table_passes(merges, list(vocab.values()), False) == python_passes(
        lambda: check_vocab_merges(vocab, tuple(merges), rank_rule=False)
    )


@given(
    st.lists(st.tuples(st.binary(max_size=6), st.integers(0, 40)), max_size=12),
    st.lists(
        st.tuples(
            st.binary(max_size=4), st.binary(max_size=4), st.sampled_from(["str", "list", "bad"])
        ),
        max_size=8,
    ),
    st.sampled_from([None, " ", "\n", "一"]),
)
@settings(max_examples=300, deadline=None)
def test_native_byte_level_tables_equal_the_python_reading(entries, raw_merges, stray):
    """`_core.byte_level_tables` (the regular case of loading tokenizer.json)
    gives the bytes `str_to_token` gives, or None whenever the Python reader
    would find a fault: an id repeated, a character that is not byte-level, a
    merge that is not "left right" or [left, right]."""
    from bytepair import _core
    from bytepair.formats.bytelevel import token_to_str

    vocab = {
        token_to_str(t) + (stray if stray and n == 0 else ""): i for n, (t, i) in enumerate(entries)
    }
    merges = []
    for a, b, form in raw_merges:
        a, b = token_to_str(a), token_to_str(b)
        merges.append(f"{a} {b}" if form == "str" else [a, b] if form == "list" else f"{a} {b} x")
    got = _core.byte_level_tables(vocab, merges)

    def python_reading():
        ids = list(vocab.values())
        if len(set(ids)) != len(ids):
            raise ValueError("id given twice")
        pairs = [m.split(" ") if isinstance(m, str) else m for m in merges]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("malformed merge")
        return (
            ids,
            [str_to_token(s) for s in vocab],
            [(str_to_token(a), str_to_token(b)) for a, b in pairs],
        )

    try:
        want = python_reading()
    except ValueError:
        assert got is None
    else:
        assert got is not None and (got[0], got[1], got[2]) == want


def test_native_byte_level_table_equals_the_python_table():
    """The core's table (`bytepair_core::byte_level`, behind `byte_level_tables`)
    and `formats/bytelevel.py`, each built from GPT-2's definition, agree on
    all 256 bytes, and on which characters up to U+03FF are byte-level."""
    from bytepair import _core
    from bytepair.formats.bytelevel import bytes_to_unicode, is_byte_level

    table = bytes_to_unicode()
    ids, tokens, _ = _core.byte_level_tables({table[b]: b for b in range(256)}, [])
    assert [bytes([b]) for b in ids] == tokens
    for code in range(0x400):
        c = chr(code)
        native = _core.byte_level_tables({c: 0}, []) is not None
        assert native == is_byte_level(c), f"U+{code:04X}"


_GPT2_DAMAGE = (
    "none",
    "crlf",
    "blank line",
    "version line",
    "two spaces",
    "empty part",
    "line separator",
    "tab",
    "entry not byte-level",
    "id repeated",
)


@functools.cache
def _small_gpt2_files() -> tuple[str, list[str]]:
    text = "".join(f"the {i} cats, naïve dogs; 世界 {i % 7}\n" for i in range(300))
    tok = bytepair.train_from_iterator(
        [text], 500, special_tokens=["<|endoftext|>"], progress=False
    )
    with tempfile.TemporaryDirectory() as d:
        tok.save_gpt2(d)
        return (Path(d) / "vocab.json").read_text(), (Path(d) / "merges.txt").read_text().split(
            "\n"
        )


@settings(max_examples=60, deadline=None)
@given(damage=st.sampled_from(_GPT2_DAMAGE), at=st.integers(1, 200))
def test_gpt2_files_load_the_same_through_the_native_and_the_per_token_reader(damage, at):
    """Regular files and every kind of damage: the same Tokenizer, or the same
    worded error, with and without `_core.byte_level_tables`."""
    from unittest import mock

    from bytepair import _core

    vocab, lines = _small_gpt2_files()
    lines, at = list(lines), at % (len(lines) - 2) + 1
    edits = {
        "blank line": lambda: lines.insert(at, ""),
        "version line": lambda: lines.insert(at, "#version: 0.2"),
        "two spaces": lambda: lines.__setitem__(at, lines[at].replace(" ", "  ")),
        "empty part": lambda: lines.__setitem__(at, lines[at].split(" ")[0] + " "),
        "line separator": lambda: lines.__setitem__(at, lines[at] + "\x85"),
        "tab": lambda: lines.__setitem__(at, "\t" + lines[at]),
    }
    edits.get(damage, lambda: None)()
    if damage == "entry not byte-level":
        vocab = vocab[:-1] + ', "\\u2026": 9999}'
    if damage == "id repeated":
        vocab = vocab[:-1] + ', "zzzq": 3}'
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "vocab.json").write_text(vocab)
        (Path(d) / "merges.txt").write_bytes(
            "\n".join(lines).encode().replace(b"\n", b"\r\n" if damage == "crlf" else b"\n")
        )

        def load():
            try:
                t = bytepair.Tokenizer.from_gpt2_files(
                    Path(d) / "vocab.json", Path(d) / "merges.txt"
                )
            except ValueError as e:
                return str(e)
            return t.vocab, t.merges, t.special_tokens

        native = load()
        with mock.patch.object(_core, "byte_level_tables", lambda *a: None):
            assert load() == native
    if damage in ("none", "crlf", "blank line", "version line", "entry not byte-level"):
        assert not isinstance(native, str), native
    else:
        assert isinstance(native, str)
