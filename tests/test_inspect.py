"""Merge traces, `bytepair inspect` and `bytepair stats` (bytepair/inspection/report.py).

Expectations are worked out by hand: the HuggingFace course corpus for the
trace, a hand-built tokenizer whose lengths and invalid tokens are known for
`inspect`, texts whose bytes, characters and words can be counted by eye for
`stats`; real text (Tiny Shakespeare) checks the commands end to end.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import byte_tokenizer

import bytepair
from bytepair.cli import main
from bytepair.inspection.report import (
    TextStats,
    file_stats,
    format_inspection,
    format_merge,
    format_token,
    inspect_tokenizer,
    text_stats,
)

HF_COURSE = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}


@pytest.fixture(scope="module")
def shakespeare_tok(tmp_path_factory, corpus):
    """A 512-id tokenizer trained on Tiny Shakespeare, saved; (Tokenizer, path)."""
    tok = bytepair.train(
        corpus("shakespeare.txt"), 512, special_tokens=["<|endoftext|>"], progress=False
    )
    path = tmp_path_factory.mktemp("inspect") / "shakespeare.json"
    tok.save(path)
    return tok, path


# ---- traces -------------------------------------------------------------------


def test_trace_toy_corpus_from_counts(capsys):
    tok = bytepair.train_from_counts(HF_COURSE, 260, trace=4)
    assert capsys.readouterr().out.splitlines() == [
        "step 1: ('u', 'g') -> 'ug' (count 20)",
        "step 2: ('u', 'n') -> 'un' (count 16)",
        "step 3: ('h', 'ug') -> 'hug' (count 15)",
        "step 4: ('p', 'un') -> 'pun' (count 12)",
    ]
    assert tok.training_stats.merge_counts == [20, 16, 15, 12]


def test_trace_prints_no_more_than_learned_and_nothing_by_default(capsys):
    bytepair.train_from_counts(HF_COURSE, 260)
    assert capsys.readouterr().out == ""
    bytepair.train_from_counts(HF_COURSE, 258, trace=10)  # 2 merges learned, 10 asked
    assert len(capsys.readouterr().out.splitlines()) == 2
    with pytest.raises(ValueError, match="trace"):
        bytepair.train_from_counts(HF_COURSE, 260, trace=-1)


def test_trace_escapes_bytes_that_are_not_printable(capsys):
    # (\x00, \x01) counts 5; the two bytes of é count 3; then (é, \n) counts 3.
    bytepair.train_from_counts({b"\x00\x01": 5, "é\n".encode(): 3}, 259, trace=3)
    assert capsys.readouterr().out.splitlines() == [
        r"step 1: ('\x00', '\x01') -> '\x00\x01' (count 5)",
        r"step 2: ('\xc3', '\xa9') -> 'é' (count 3)",
        r"step 3: ('é', '\n') -> 'é\n' (count 3)",
    ]


def test_trace_from_iterator_and_files_match_the_merges(tmp_path, capsys):
    text = "low lower newest widest\n" * 20
    tok = bytepair.train_from_iterator([text], 262, progress=False, trace=6)
    lines = capsys.readouterr().out.splitlines()
    counts = tok.training_stats.merge_counts
    assert lines == [format_merge(r + 1, a, b, counts[r]) for r, (a, b) in enumerate(tok.merges)]
    # 20 copies of each word: counts are multiples of 20; the top count never grows
    # (a pair with a new token occurs only where the merged pair did)
    assert counts == sorted(counts, reverse=True) and all(c % 20 == 0 for c in counts)
    path = tmp_path / "t.txt"
    path.write_text(text)
    bytepair.train(path, 262, progress=False, trace=6)
    assert capsys.readouterr().out.splitlines() == lines


def test_cli_train_trace(tmp_path, capsys):
    src = tmp_path / "toy.txt"
    src.write_text("hug " * 10 + "pug " * 5 + "pun " * 12 + "bun " * 4 + "hugs " * 5)
    out = tmp_path / "tok.json"
    assert (
        main(["train", str(src), "--vocab-size", "259", "-o", str(out), "-q", "--trace", "3"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    # pre-tokens: hug, ' hug' x9, ' pug' x5, ' pun' x12, ' bun' x4, ' hugs' x5: ug (20) beats ' p'
    # (17)
    tok = bytepair.Tokenizer.load(out)
    assert len(lines) == 3
    for r, line in enumerate(lines):
        a, b = tok.merges[r]
        assert line.startswith(
            f"step {r + 1}: ({format_token(a)}, {format_token(b)}) -> {format_token(a + b)} (count "
        )
    assert lines[0] == "step 1: ('u', 'g') -> 'ug' (count 20)"


def test_format_token_escapes():
    assert format_token(b"ug") == "'ug'"
    assert format_token(b" hug") == "' hug'"
    assert format_token(b"a\\b'c") == r"'a\\b\'c'"
    assert format_token(b"\t\r\n\x7f") == r"'\t\r\n\x7f'"
    assert format_token("\u200b".encode()) == r"'\u200b'"
    assert format_token(b"\xe2\x80") == r"'\xe2\x80'"  # start of a 3-byte character
    assert format_token("—".encode()) == "'—'"
    assert format_token("</w>") == "'</w>'"  # character-level merges print too


# ---- inspect --------------------------------------------------------------------


def _hand_built():
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"\xe2\x80", 258: "—".encode()}
    merges = [(b"a", b"b"), (b"\xe2", b"\x80"), (b"\xe2\x80", b"\x94")]
    return bytepair.Tokenizer(vocab, merges, {"<|e|>": 259}, pattern="cl100k")


def test_inspect_hand_built_tokenizer():
    info = inspect_tokenizer(_hand_built(), top=2)
    assert info["vocab_size"] == 260 and info["n_vocab"] == 260 and info["merges"] == 3
    assert info["special_tokens"] == {"<|e|>": 259}
    assert info["pattern"] == "cl100k" and info["pattern_regex"] == bytepair.resolve_pattern(
        "cl100k"
    )
    assert info["length_histogram"] == {1: 256, 2: 2, 3: 1}
    assert info["mean_token_bytes"] == pytest.approx((256 + 4 + 3) / 259)
    assert info["longest"] == [
        {"id": 258, "bytes": 3, "token": "'—'", "hex": "e28094"},
        {"id": 256, "bytes": 2, "token": "'ab'", "hex": "6162"},
    ]
    assert info["not_utf8"] == {
        "count": 129,
        "single_bytes": 128,
        "ids": list(range(128, 256)) + [257],
    }
    assert [m["token"] for m in info["first_merges"]] == ["'ab'", r"'\xe2\x80'"]


def test_inspect_text_report():
    text = format_inspection(inspect_tokenizer(_hand_built(), top=3), name="hand.json")
    lines = text.splitlines()
    assert lines[0] == "hand.json"
    assert "  vocab size      260 (largest id + 1 = 260)" in lines
    assert "  merges          3" in lines
    assert "  special tokens  1: '<|e|>' = 259" in lines
    assert any(line.startswith("  pattern         cl100k = ") for line in lines)
    assert "     1      256  " + "#" * 40 in lines
    assert "     3        1  #" in lines
    assert "  id     258    3 bytes  '—'" in lines
    assert r"  rank    1: ('\xe2', '\x80') -> '\xe2\x80'" in lines
    assert lines[-1] == "not valid UTF-8 on their own: 129 tokens (128 single bytes, 1 longer)"


def test_cli_inspect_json_on_trained_tokenizer(shakespeare_tok, capsys):
    tok, path = shakespeare_tok
    assert main(["inspect", str(path), "--json", "--top", "5"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["vocab_size"] == 512 and info["merges"] == 255
    assert info["special_tokens"] == {"<|endoftext|>": 511}
    assert info["pattern"] == "gpt2"
    hist = {int(k): v for k, v in info["length_histogram"].items()}
    assert sum(hist.values()) == 511 and hist[1] == 256
    longest = info["longest"]
    assert len(longest) == 5 and longest[0]["bytes"] == max(hist)
    assert [t["bytes"] for t in longest] == sorted((t["bytes"] for t in longest), reverse=True)
    for t in longest:
        assert bytes.fromhex(t["hex"]) == tok.vocab[t["id"]]
    bad = info["not_utf8"]
    assert bad["single_bytes"] == 128 and bad["count"] == len(bad["ids"])
    for i in bad["ids"]:
        with pytest.raises(UnicodeDecodeError):
            tok.vocab[i].decode("utf-8")


def test_cli_inspect_text(shakespeare_tok, capsys):
    _, path = shakespeare_tok
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  vocab size      512 (largest id + 1 = 512)" in out
    assert "  special tokens  1: '<|endoftext|>' = 511" in out
    assert "token lengths in bytes" in out and "longest tokens" in out and "first merges" in out
    assert re.search(r"^not valid UTF-8 on their own: \d+ tokens \(128 single bytes", out, re.M)


# ---- stats --------------------------------------------------------------------------


def test_text_stats_counts_by_hand():
    tok = byte_tokenizer()
    s = text_stats(tok, ["héllo wörld\n", "  two words"])
    assert (s.bytes, s.chars, s.words, s.tokens) == (25, 23, 4, 25)
    assert s.bytes_per_token == 1.0 and s.tokens_per_word == 25 / 4
    # a word cut by a block boundary is one word
    assert text_stats(tok, ["hel", "lo wor", "", "ld "]).words == 2
    # special-token strings are plain text
    tok = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|e|>"])
    assert text_stats(tok, ["a<|e|>"]).tokens == 6
    assert TextStats().as_dict()["bytes_per_token"] is None


def test_file_stats_match_encode(shakespeare_tok, corpus_text, tmp_path):
    tok, _ = shakespeare_tok
    text = corpus_text("shakespeare.txt", 50_000)
    path = tmp_path / "s.txt"
    path.write_text(text, encoding="utf-8")
    s = file_stats(tok, path)
    assert s.tokens == len(tok.encode(text, disallowed_special=()))
    assert (s.bytes, s.chars, s.words) == (len(text.encode()), len(text), len(text.split()))


def test_cli_stats_side_by_side(shakespeare_tok, corpus_text, tmp_path, capsys):
    tok, path = shakespeare_tok
    small = bytepair.train_from_iterator(
        [corpus_text("shakespeare.txt", 200_000)], 300, progress=False
    )
    small_path = tmp_path / "small.json"
    small.save(small_path)
    texts = [
        corpus_text("shakespeare.txt", 30_000, at=0.5),
        corpus_text("tinystories_v1_valid_head.txt", 30_000),
    ]
    files = []
    for k, t in enumerate(texts):
        files.append(tmp_path / f"f{k}.txt")
        files[-1].write_text(t, encoding="utf-8")

    assert (
        main(["stats", "-t", str(path), *map(str, files), "--compare", str(small_path), "--json"])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert [r["file"] for r in rows] == [*map(str, files), "total"]
    for row, text in zip(rows, texts):
        assert (row["bytes"], row["chars"], row["words"]) == (
            len(text.encode()),
            len(text),
            len(text.split()),
        )
        big, sm = row["tokenizers"]
        assert big["tokenizer"] == str(path) and sm["tokenizer"] == str(small_path)
        assert big["tokens"] == len(tok.encode(text, disallowed_special=()))
        assert sm["tokens"] == len(small.encode(text, disallowed_special=()))
        assert big["bytes_per_token"] == pytest.approx(row["bytes"] / big["tokens"])
        assert big["tokens_per_word"] == pytest.approx(big["tokens"] / row["words"])
        assert sm["tokens"] > big["tokens"]  # 44 merges compress less than 255
    total = rows[-1]
    assert total["tokenizers"][0]["tokens"] == sum(r["tokenizers"][0]["tokens"] for r in rows[:-1])

    assert main(["stats", "-t", str(path), str(files[0]), "--compare", str(small_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    big_tokens = rows[0]["tokenizers"][0]["tokens"]
    small_tokens = rows[0]["tokenizers"][1]["tokens"]
    assert (
        out[0] == f"{files[0]}: {len(texts[0].encode()):,} bytes, {len(texts[0]):,} chars, "
        f"{len(texts[0].split()):,} words"
    )
    assert out[1].split() == [str(path), str(small_path)]
    assert out[2].split() == ["tokens", f"{big_tokens:,}", f"{small_tokens:,}"]
    assert out[3].split()[0] == "bytes/token"
    assert out[-1] == f"  {small_path} needs {small_tokens / big_tokens:.3f}x the tokens of {path}"


def test_cli_stats_errors(shakespeare_tok, tmp_path, capsys):
    _, path = shakespeare_tok
    assert main(["stats", "-t", str(path), str(tmp_path / "missing.txt")]) == 1
    assert "missing.txt" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff\xfe")
    assert main(["stats", "-t", str(path), str(bad)]) == 1
    assert "utf-8" in capsys.readouterr().err.lower()
    assert main(["stats", "-t", str(path), str(bad), "--errors", "replace", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["chars"] == 5


@pytest.mark.parametrize(
    "module",
    [
        "bytepair.inspection.report",
        "bytepair.inspection.show",
        "bytepair.inspection.curve",
        "bytepair.train",
    ],
)
def test_docstring_examples(module, capsys):
    """The >>> examples (traces, views, prefixes) run as written."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_encode_dropout_docstring_example():
    import doctest

    from bytepair.tokenizer import Tokenizer

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for test in finder.find(Tokenizer.encode, "Tokenizer.encode", globs={"Tokenizer": Tokenizer}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries >= 2
