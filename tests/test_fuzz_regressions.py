"""Regression tests for what the loader fuzzer (fuzz/fuzz_loaders.py, see
fuzz/README.md) found: damaged files that made `Tokenizer.load` and the
format readers raise something other than the documented ValueError naming
the file (RecursionError, EOFError, zlib.error, UnicodeDecodeError,
UnicodeEncodeError, KeyError, TypeError), or a ValueError that did not say
which file was at fault.

Each test writes a small valid tokenizer in one format, damages one file the
way the fuzzer did, and checks the error type and that the message names the file.
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pytest

import bytepair


@pytest.fixture(scope="module")
def tok() -> bytepair.Tokenizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bytepair.train_from_iterator(
            ["the quick brown fox jumps over the lazy dog, hello hello world"] * 3,
            280,
            special_tokens=["<|endoftext|>"],
            progress=False,
        )


def assert_value_error_naming(path: Path, load, *needles: str) -> None:
    """`load()` raises exactly ValueError, whose message names `path` and the needles."""
    with pytest.raises(ValueError) as info:
        load()
    assert type(info.value) is ValueError, f"{type(info.value).__name__}: {info.value}"
    message = str(info.value)
    for needle in (path.name, *needles):
        assert needle in message, f"{needle!r} not in {message!r}"


# ---- JSON the parser rejects with another exception type --------------------------


def test_deeply_nested_json_is_a_value_error(tmp_path):
    # was RecursionError from json.loads
    path = tmp_path / "tokenizer.json"
    path.write_text("[" * 100_000)
    assert_value_error_naming(path, lambda: bytepair.Tokenizer.load(path), "not valid JSON")


def test_integer_too_long_to_convert_is_a_value_error(tmp_path, tok):
    # was a ValueError from int() ("Exceeds the limit (4300 digits)") that did not name the file
    tok.save_tiktoken(tmp_path / "enc.tiktoken")
    side = tmp_path / "enc.tiktoken.json"
    side.write_text('{"pat_str": "gpt2", "special_tokens": {"<|endoftext|>": ' + "9" * 5000 + "}}")
    assert_value_error_naming(
        side, lambda: bytepair.Tokenizer.from_tiktoken(tmp_path / "enc.tiktoken")
    )


def test_rank_with_thousands_of_digits(tmp_path, tok):
    path = tmp_path / "enc.tiktoken"
    tok.save_tiktoken(path)
    body = path.read_bytes()
    path.write_bytes(body + b"YWJj " + b"1" * 5000 + b"\n")
    line = f"line {len(body.splitlines()) + 1}"
    assert_value_error_naming(path, lambda: bytepair.Tokenizer.from_tiktoken(path), line)


# ---- gzip ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [lambda gz: gz[: len(gz) // 2], lambda gz: gz[:10] + b"\xff" * 20 + gz[30:]],
    ids=["truncated", "corrupt-deflate-stream"],
)
def test_damaged_gzip_rank_file(tmp_path, tok, damage):
    # was EOFError (truncated) or zlib.error (corrupt stream), from both from_tiktoken and load's
    # detection
    plain = tmp_path / "enc.tiktoken"
    tok.save_tiktoken(plain)
    path = tmp_path / "enc.tiktoken.gz"
    path.write_bytes(damage(gzip.compress(plain.read_bytes())))
    (tmp_path / "enc.tiktoken.gz.json").write_bytes((tmp_path / "enc.tiktoken.json").read_bytes())
    assert_value_error_naming(path, lambda: bytepair.Tokenizer.from_tiktoken(path), "gzip")
    assert_value_error_naming(path, lambda: bytepair.Tokenizer.load(path), "gzip")


# ---- text that is not UTF-8 / not Unicode ---------------------------------------------


def test_merges_txt_not_utf8_names_file_and_line(tmp_path, tok):
    # was UnicodeDecodeError
    tok.save_gpt2(tmp_path)
    merges = tmp_path / "merges.txt"
    lines = merges.read_bytes().split(b"\n")
    lines[3] = b"\xff\xfe " + lines[3]
    merges.write_bytes(b"\n".join(lines))
    load = lambda: bytepair.Tokenizer.from_gpt2_files(tmp_path / "vocab.json", merges)  # noqa: E731
    assert_value_error_naming(merges, load, "line 4", "not UTF-8")
    assert_value_error_naming(merges, lambda: bytepair.Tokenizer.load(tmp_path), "line 4")


def test_lone_surrogate_pattern_in_sidecar(tmp_path, tok):
    # was UnicodeEncodeError from the Rust core ("surrogates not allowed")
    tok.save_tiktoken(tmp_path / "enc.tiktoken")
    (tmp_path / "enc.tiktoken.json").write_text('{"pat_str": "\\ud800", "special_tokens": {}}')
    assert_value_error_naming(
        tmp_path / "enc.tiktoken",
        lambda: bytepair.Tokenizer.load(tmp_path / "enc.tiktoken"),
        "pattern",
        "lone surrogate",
    )


def test_lone_surrogate_special_token_in_sidecar(tmp_path, tok):
    tok.save_tiktoken(tmp_path / "enc.tiktoken")
    (tmp_path / "enc.tiktoken.json").write_text(
        '{"pat_str": "gpt2", "special_tokens": {"<|x\\udc80|>": 300}}'
    )
    assert_value_error_naming(
        tmp_path / "enc.tiktoken",
        lambda: bytepair.Tokenizer.load(tmp_path / "enc.tiktoken"),
        "special token",
        "lone surrogate",
    )


def test_lone_surrogate_entry_in_vocab_json(tmp_path, tok):
    # an entry that is not byte-level becomes a special token: it reached the core as a lone
    # surrogate
    tok.save_gpt2(tmp_path)
    vocab = tmp_path / "vocab.json"
    vocab.write_text(vocab.read_text()[:-1] + ', "\\ud83d": 999}')
    assert_value_error_naming(vocab, lambda: bytepair.Tokenizer.load(vocab), "lone surrogate")


def test_lone_surrogate_vocab_key_in_tokenizer_json(tmp_path, tok):
    # was UnicodeEncodeError from the native byte-level reader (_core.byte_level_tables)
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    path.write_text(path.read_text().replace('"vocab": {', '"vocab": {"\\ud83d": 999, ', 1))
    assert_value_error_naming(
        path, lambda: bytepair.Tokenizer.load(path), "model.vocab", "not a byte-level token"
    )


def test_lone_surrogate_added_token_in_tokenizer_json(tmp_path, tok):
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    doc = json.loads(path.read_text())
    doc["added_tokens"][0]["content"] = "\udfff"
    path.write_text(json.dumps(doc))
    assert_value_error_naming(path, lambda: bytepair.Tokenizer.load(path), "lone surrogate")


# ---- tokenizer.json values of the wrong type or shape ------------------------------------


def test_empty_added_token_content(tmp_path, tok):
    # was KeyError: '' (hf_added_token_ids skips empty contents)
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    doc = json.loads(path.read_text())
    doc["added_tokens"][0]["content"] = ""
    path.write_text(json.dumps(doc))
    assert_value_error_naming(
        path, lambda: bytepair.Tokenizer.load(path), "added_tokens[0]", "empty"
    )


@pytest.mark.parametrize("merges", [5, 2.5, True, {"a b": 1}])
def test_merges_that_are_not_a_list(tmp_path, tok, merges):
    # 5 was TypeError: 'int' object is not iterable
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    doc = json.loads(path.read_text())
    doc["model"]["merges"] = merges
    path.write_text(json.dumps(doc))
    assert_value_error_naming(path, lambda: bytepair.Tokenizer.load(path), "model.merges")


# ---- errors of the Tokenizer itself, now prefixed with the file -----------------------------


def test_vocab_json_without_a_byte_a_merge_uses(tmp_path, tok):
    # was "merge 0 (b'h', b'e'): b'h' is not in the vocab", without the file
    tok.save_gpt2(tmp_path)
    vocab = tmp_path / "vocab.json"
    entries = json.loads(vocab.read_text())
    first = (tmp_path / "merges.txt").read_text().split("\n")[1].split(" ")[0]
    del entries[first]
    vocab.write_text(json.dumps(entries))
    assert_value_error_naming(
        vocab, lambda: bytepair.Tokenizer.load(vocab), "merges.txt", "not in the vocab"
    )


def test_sidecar_special_token_id_out_of_range(tmp_path, tok):
    # was "special token '<|endoftext|>': token id -1 must be ...", without the file
    tok.save_tiktoken(tmp_path / "enc.tiktoken")
    (tmp_path / "enc.tiktoken.json").write_text(
        '{"pat_str": "gpt2", "special_tokens": {"<|endoftext|>": -1}}'
    )
    assert_value_error_naming(
        tmp_path / "enc.tiktoken",
        lambda: bytepair.Tokenizer.load(tmp_path / "enc.tiktoken"),
        "token id -1",
    )


def test_sidecar_pattern_that_does_not_compile(tmp_path, tok):
    tok.save_tiktoken(tmp_path / "enc.tiktoken")
    (tmp_path / "enc.tiktoken.json").write_text('{"pat_str": "(\\\\w+", "special_tokens": {}}')
    assert_value_error_naming(
        tmp_path / "enc.tiktoken",
        lambda: bytepair.Tokenizer.load(tmp_path / "enc.tiktoken"),
        "invalid pattern",
    )


def test_two_special_tokens_with_one_id(tmp_path, tok):
    # was loaded: "<|endoftext|>" then decoded as "<|pad|>" (the Tokenizer keeps both under id 299)
    tok.save_tiktoken(tmp_path / "enc.tiktoken")
    (tmp_path / "enc.tiktoken.json").write_text(
        '{"pat_str": "gpt2", "special_tokens": {"<|endoftext|>": 299, "<|pad|>": 299}}'
    )
    assert_value_error_naming(
        tmp_path / "enc.tiktoken",
        lambda: bytepair.Tokenizer.load(tmp_path / "enc.tiktoken"),
        "same id 299",
    )


# ---- word-counts folders (fuzz/fuzz_counts.py) ----------------------------------


def _counts_folder(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(
        "the quick brown fox jumps over the lazy dog\n" * 5, encoding="utf-8"
    )
    return Path(bytepair.count(tmp_path / "a.txt", tmp_path / "counts", progress=False).path)


def _rewrite_manifest(folder: Path, change) -> None:
    path = folder / "_manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def test_counts_part_that_is_not_parquet_but_matches_its_checksum(tmp_path):
    """An empty part whose SHA-256 the manifest matches: pyarrow's ArrowInvalid escaped."""
    import hashlib

    folder = _counts_folder(tmp_path)
    part = folder / "part-00000.parquet"
    part.write_bytes(b"")
    _rewrite_manifest(
        folder, lambda m: m["parts"][0].update(sha256=hashlib.sha256(b"").hexdigest())
    )
    counts = bytepair.WordCounts.open(folder)
    assert_value_error_naming(
        part, lambda: bytepair.train_from_counts(counts, 300), "not a word-counts part"
    )


def test_counts_manifest_special_token_with_a_lone_surrogate(tmp_path):
    """A special token "\\ud800" in the manifest: UnicodeEncodeError at training."""
    folder = _counts_folder(tmp_path)
    _rewrite_manifest(folder, lambda m: m.update(special_tokens=["\ud800"]))
    assert_value_error_naming(
        folder / "_manifest.json", lambda: bytepair.WordCounts.open(folder), "lone surrogate"
    )
    with pytest.raises(ValueError, match="lone surrogate"):
        bytepair.train_from_iterator(
            ["hello world"], 260, special_tokens=["\ud800"], progress=False
        )


def test_counts_part_with_a_column_name_that_is_not_utf8(tmp_path):
    """pyarrow raised UnicodeDecodeError reading such a part's schema."""
    import hashlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = _counts_folder(tmp_path)
    part = folder / "part-00000.parquet"
    pq.write_table(
        pa.table({"word": pa.array([b"ab"]), "count": pa.array([3], pa.int64()), "zzzz": [1]}), part
    )
    data = part.read_bytes()
    assert data.count(b"zzzz") >= 1
    part.write_bytes(data.replace(b"zzzz", b"\xc5\xc5\xc5\xc5"))

    def change(m):
        m["parts"][0].update(sha256=hashlib.sha256(part.read_bytes()).hexdigest(), rows=1)
        m["totals"]["distinct"] = sum(p["rows"] for p in m["parts"])  # as the manifest must

    _rewrite_manifest(folder, change)
    counts = bytepair.WordCounts.open(folder)
    assert_value_error_naming(
        part, lambda: bytepair.train_from_counts(counts, 300), "not a word-counts part"
    )


def test_counts_that_add_up_past_2_64_are_totalled_exactly(tmp_path):
    """Counts of an artifact summing past 2**64: `WordCounter.total` panicked
    on u64 overflow (a fuzz build checks overflow; a release build wrapped it
    silently, into the manifest's pre_tokens), before training refused them."""
    from bytepair import _core

    counter = _core.WordCounter("gpt2", [])
    counter.add_counts([(b"ab", 1 << 63), (b"cd", 1 << 63), (b"e", 5)])
    assert counter.total() == (1 << 64) + 5
    with pytest.raises(OverflowError, match="beyond 2\\*\\*64"):
        bytepair.train_from_counts({"ab": 1 << 63, "cd": 1 << 63}, 300)


# ---- what loads saves and loads back (fuzz/common.py check_round_trip) ---------------------


def test_added_token_flag_that_is_not_a_boolean(tok, tmp_path):
    """ "lstrip": "Ġ" was read as true (HF refuses the file: serde wants a bool)."""
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["added_tokens"][0]["lstrip"] = "Ġ"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert_value_error_naming(
        path, lambda: bytepair.Tokenizer.load(path), "added_tokens[0].lstrip must be true or false"
    )


def test_gpt2_files_load_back_with_the_pattern_given_even_an_empty_one(tok, tmp_path):
    """GPT-2 files hold no pattern: the one given at load is used, and an empty
    pattern (a .tiktoken sidecar's "pat_str": "") was read as no pattern, GPT-2's."""
    tok.save_tiktoken(tmp_path / "t.tiktoken")
    side = tmp_path / "t.tiktoken.json"
    for pat in ("", r"\w+|\s+"):
        side.write_text(json.dumps(json.loads(side.read_text()) | {"pat_str": pat}))
        odd = bytepair.Tokenizer.load(tmp_path / "t.tiktoken")
        odd.save_gpt2(tmp_path / "gpt2")
        back = bytepair.formats.load(tmp_path / "gpt2", pattern=odd.pattern)
        assert back == odd and back.pattern == pat
