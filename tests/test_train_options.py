"""Training options: `min_frequency` and `max_token_length` against
the reference on every merge; special tokens at fixed ids and reserved
placeholders; every input `count` reads, with the same merges as the plain text;
data-mixture weights; and extending a base tokenizer (GPT-2, cl100k, one of ours).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
import warnings

import pytest

import bytepair
from bytepair import reference as ref

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

EOT = "<|endoftext|>"


def trace_of(tok):
    """[(merge, its count)] of the merges this run learned (after a base's)."""
    new = tok.merges[len(tok.merges) - tok.training_stats.merges :]
    return list(zip(new, tok.training_stats.merge_counts))


def ref_trace(word_counts, num_merges, **limits):
    return [(pair, n) for pair, n, _ in ref.train_trace(word_counts, num_merges, **limits)]


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


# ---- min_frequency and max_token_length ---------------------------------------


@pytest.mark.parametrize("min_frequency, max_token_length", [(0, 3), (20, None), (8, 5), (2, 1)])
def test_limits_match_reference_on_a_corpus_slice(corpus_text, min_frequency, max_token_length):
    text = corpus_text("tinystories_v1_train_head.txt", 60_000, 0.2)
    counts = ref.count_words([text])
    want = ref_trace(counts, 300, min_frequency=min_frequency, max_token_length=max_token_length)
    tok = quiet(
        bytepair.train_from_iterator,
        [text],
        256 + 300,
        progress=False,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    assert trace_of(tok) == want
    assert all(len(t) <= (max_token_length or 10**9) for t in tok.vocab.values())
    assert all(n >= min_frequency for _, n in want)
    if max_token_length == 1:
        assert want == [] and tok.training_stats.stop_reason == "no_pair"


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    counts=st.dictionaries(
        st.binary(min_size=1, max_size=7).map(lambda b: bytes(c % 3 + 97 for c in b)),
        st.sampled_from([1, 2, 3, 7, 50]),
        max_size=25,
    ),
    min_frequency=st.integers(0, 12),
    max_token_length=st.none() | st.integers(1, 6),
)
def test_limits_match_reference_on_generated_counts(counts, min_frequency, max_token_length):
    want = ref_trace(counts, 30, min_frequency=min_frequency, max_token_length=max_token_length)
    tok = quiet(
        bytepair.train_from_counts,
        counts,
        256 + 30,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    assert trace_of(tok) == want


def test_min_frequency_stops_with_its_warning():
    counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    with pytest.warns(UserWarning, match="fewer than min_frequency=16 after 2 merges") as w:
        tok = bytepair.train_from_counts(counts, 270, min_frequency=16)
    assert len(w) == 1
    assert [a + b for a, b in tok.merges] == [b"ug", b"un"]
    assert tok.training_stats.stop_reason == "min_frequency" and tok.training_stats.stopped_early
    # The next pair the loop would take counts 15 (hug), below 16.
    assert ref.train_trace(counts, 3)[2][1] == 15


def test_skipped_long_pairs_are_not_counted_as_merges():
    # "ab" x 100 would make abab first; with at most 2 bytes only ab, then the rarer pairs.
    counts = {"abab": 100, "cd": 3, "ef": 2}
    tok = bytepair.train_from_counts(counts, 256 + 3, max_token_length=2)
    assert [a + b for a, b in tok.merges] == [b"ab", b"cd", b"ef"]
    assert tok.training_stats.stop_reason is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"min_frequency": -1}, "min_frequency=-1"),
        ({"max_token_length": 0}, "max_token_length=0"),
        ({"reserve_special_tokens": -2}, "reserve_special_tokens=-2"),
    ],
)
def test_bad_limits(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bytepair.train_from_counts({"ab": 1}, 300, **kwargs)


# ---- special tokens at fixed ids, reserved placeholders -----------------------


def test_fixed_ids_and_reserved_placeholders_take_the_block_after_the_merges(corpus_text):
    text = corpus_text("shakespeare.txt", 20_000)
    specials = {"<|begin|>": 296, "<|end|>": 299}
    tok = bytepair.train_from_iterator(
        [text], 300, special_tokens=specials, reserve_special_tokens=2, progress=False
    )
    assert tok.vocab_size == tok.n_vocab == 300 and len(tok.merges) == 296 - 256
    assert tok.special_tokens == {
        "<|begin|>": 296,
        "<|end|>": 299,
        "<|reserved_special_token_0|>": 297,
        "<|reserved_special_token_1|>": 298,
    }
    assert tok.encode("<|end|>hi", allowed_special="all")[0] == 299
    # Placeholder names already given are skipped; a plain list takes the ids in order.
    tok = bytepair.train_from_iterator(
        [text],
        300,
        special_tokens=["<|reserved_special_token_0|>"],
        reserve_special_tokens=1,
        progress=False,
    )
    assert tok.special_tokens == {
        "<|reserved_special_token_0|>": 298,
        "<|reserved_special_token_1|>": 299,
    }


def test_fixed_ids_survive_an_early_stop_and_a_save(tmp_path):
    tok = quiet(
        bytepair.train_from_counts, {"abc": 5}, 270, special_tokens={"<|x|>": 268, "<|y|>": None}
    )
    assert len(tok.merges) == 2
    # <|x|> keeps its id; <|y|> takes the first free id after the last merge.
    assert tok.special_tokens == {"<|x|>": 268, "<|y|>": 258}
    tok.save(tmp_path / "t.json")
    assert bytepair.Tokenizer.load(tmp_path / "t.json").special_tokens == tok.special_tokens


@pytest.mark.parametrize(
    "specials, message",
    [
        (
            {"<|x|>": 100},
            r"id 100, outside the ids of the special tokens, 299..299 \(after the 43 merges",
        ),
        ({"<|x|>": 299, "<|y|>": 299}, "both have id 299"),
        ({"<|x|>": -1}, "must be a non-negative integer"),
    ],
)
def test_bad_fixed_ids(specials, message):
    with pytest.raises(ValueError, match=message):
        bytepair.train_from_counts({"ab": 1}, 300, special_tokens=specials)


# ---- inputs: whatever `count` reads ------------------------------------------


@pytest.fixture(scope="module")
def stories(corpus_text):
    return corpus_text("tinystories_v1_valid_head.txt", 120_000, 0.0)


def _write_inputs(root, text):
    """The same documents as plain text and in every other form `train` reads."""
    docs = text.split("\n\n")
    plain = root / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text(text, encoding="utf-8")
    compressed = root / "compressed"
    compressed.mkdir()
    (compressed / "a.txt.gz").write_bytes(gzip.compress(text.encode()))
    (compressed / "b.txt.bz2").write_bytes(bz2.compress(text.encode()))
    (compressed / "c.txt.xz").write_bytes(lzma.compress(text.encode()))
    records = "".join(json.dumps({"id": k, "body": d}) + "\n" for k, d in enumerate(docs))
    (root / "docs.jsonl.gz").write_bytes(gzip.compress(records.encode()))
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"body": docs}), root / "docs.parquet")
    return docs


def test_compressed_jsonl_parquet_folders_and_globs_give_the_plain_merges(tmp_path, stories):
    docs = _write_inputs(tmp_path, stories)
    plain = bytepair.train(tmp_path / "plain" / "a.txt", 500, progress=False)
    compressed = bytepair.train(tmp_path / "compressed", 500, progress=False)  # a folder: 3 files
    thrice = bytepair.train([tmp_path / "plain" / "a.txt"] * 3, 500, progress=False)
    assert compressed.merges == thrice.merges
    globbed = bytepair.train(str(tmp_path / "comp*" / "*.gz"), 500, progress=False)
    assert globbed.merges == plain.merges
    per_doc = bytepair.train_from_iterator(docs, 500, progress=False)
    jsonl = bytepair.train(tmp_path / "docs.jsonl.gz", 500, text_field="body", progress=False)
    parquet = bytepair.train(tmp_path / "docs.parquet", 500, text_field="body", progress=False)
    assert jsonl.merges == parquet.merges == per_doc.merges
    assert jsonl.training_stats.input_bytes == sum(len(d.encode()) for d in docs)


def test_zstd_input(tmp_path, stories):
    import pyarrow as pa

    with pa.CompressedOutputStream(str(tmp_path / "a.txt.zst"), "zstd") as f:
        f.write(stories.encode())
    assert (
        bytepair.train(tmp_path / "a.txt.zst", 400, progress=False).merges
        == bytepair.train_from_iterator([stories], 400, progress=False).merges
    )


def test_input_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file matches"):
        bytepair.train(str(tmp_path / "*.txt"), 300, progress=False)
    bad = tmp_path / "bad.txt.gz"
    bad.write_bytes(gzip.compress(b"good text " * 10 + b"\xff bad"))
    with pytest.raises(ValueError, match=r"bad.txt.gz: invalid UTF-8 at byte offset 100"):
        bytepair.train(bad, 300, progress=False)
    assert bytepair.train(bad, 260, errors="replace", progress=False).vocab_size == 260
    (tmp_path / "x.jsonl").write_text('{"text": "ok"}\n{"text": 5}\n')
    with pytest.raises(ValueError, match="x.jsonl"):
        bytepair.train(tmp_path / "x.jsonl", 300, progress=False)


class _Column:
    """A stand-in for a HuggingFace `datasets` column: iterable, with a length."""

    def __init__(self, texts):
        self.texts = texts

    def __len__(self):
        return len(self.texts)

    def __iter__(self):
        return iter(self.texts)


def test_iterator_takes_strings_batches_and_dataset_columns(stories):
    docs = stories.split("\n\n")
    want = bytepair.train_from_iterator(docs, 400, progress=False).merges
    batches = [docs[i : i + 7] for i in range(0, len(docs), 7)]
    assert bytepair.train_from_iterator(batches, 400, progress=False).merges == want
    assert bytepair.train_from_iterator(_Column(docs), 400, progress=False).merges == want
    with pytest.raises(TypeError, match="a batch holding int"):
        bytepair.train_from_iterator([["ok", 5]], 300, progress=False)
    with pytest.raises(TypeError, match="got dict"):
        bytepair.train_from_iterator([{"text": "a dataset row"}], 300, progress=False)


def test_datasets_column(stories):
    datasets = pytest.importorskip("datasets")
    docs = stories.split("\n\n")
    ds = datasets.Dataset.from_dict({"text": docs})
    assert (
        bytepair.train_from_iterator(ds["text"], 400, progress=False).merges
        == bytepair.train_from_iterator(docs, 400, progress=False).merges
    )


# ---- weights ---------------------------------------------------------------


def test_integer_weights_equal_repeated_files(tmp_path, corpus_text):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(corpus_text("shakespeare.txt", 40_000, 0.1), encoding="utf-8")
    b.write_text(corpus_text("code.txt", 40_000, 0.3), encoding="utf-8")
    weighted = bytepair.train([a, b], 600, weights={str(tmp_path / "b.*"): 3}, progress=False)
    repeated = bytepair.train([a, b, b, b], 600, progress=False)
    assert trace_of(weighted) == trace_of(repeated)
    assert weighted.training_stats.sources == [
        (str(a), a.stat().st_size, 1),
        (str(b), b.stat().st_size, 3),
    ]
    # Weight 0 drops a source; a key naming no input is an error.
    assert (
        bytepair.train([a, b], 600, weights={str(b): 0}, progress=False).merges
        == bytepair.train(a, 600, progress=False).merges
    )
    with pytest.raises(ValueError, match="names none of the inputs"):
        bytepair.train([a], 300, weights={str(b): 2}, progress=False)


def test_float_weights_round_the_weighted_counts(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("ab " * 3)
    b.write_text("cd " * 5)
    tok = bytepair.train([a, b], 258, weights={str(a): 1.5, str(b): 0.5}, progress=False)
    # Word counts: a gives ab 1, " ab" 2, " " 1 (x 1.5: 2, 3, 2, halves rounded away
    # from zero); b gives cd 1, " cd" 4, " " 1 (x 0.5: 1, 2, 1). So (a, b) counts 5,
    # then (c, d) 3 ties (" ", ab) 3 and wins on bytes. Rounding halves to even
    # would leave cd 0 and make (" ", ab) the second merge.
    assert trace_of(tok) == [((b"a", b"b"), 5), ((b"c", b"d"), 3)]


def test_cli_weights_and_inputs(tmp_path, stories):
    _write_inputs(tmp_path, stories)
    out = tmp_path / "tok.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair",
            "train",
            str(tmp_path / "docs.jsonl.gz"),
            str(tmp_path / "plain"),
            "--field",
            "body",
            "--format",
            "jsonl",
            "--vocab-size",
            "400",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert (
        run.returncode == 1 and "plain/a.txt" in run.stderr
    )  # text in JSONL mode: the file is named
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair",
            "train",
            str(tmp_path / "plain"),
            str(tmp_path / "compressed"),
            "--weight",
            f"{tmp_path / 'compressed'}=0.5",
            "--min-frequency",
            "3",
            "--max-token-length",
            "6",
            "--special-token-id",
            f"{EOT}=399",
            "--reserve-special-tokens",
            "3",
            "--vocab-size",
            "400",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "x 0.5" in run.stdout and "x 1" in run.stdout
    tok = bytepair.Tokenizer.load(out)
    assert tok.special_tokens[EOT] == 399 and "<|reserved_special_token_2|>" in tok.special_tokens
    assert max(len(t) for i, t in tok.vocab.items() if i not in tok.special_tokens.values()) <= 6


# ---- base: extending a tokenizer -----------------------------------------------


def _check_extension(base, ext, held_out):
    """The base's merges are a prefix, its ids and special tokens unchanged, new
    ids follow its largest, and no held-out document takes more tokens."""
    assert ext.merges[: len(base.merges)] == base.merges
    assert all(ext.vocab[i] == t for i, t in base.vocab.items())
    assert ext.special_tokens.items() >= base.special_tokens.items()
    new_ids = sorted(set(ext.vocab) - set(base.vocab))
    assert new_ids == list(range(base.n_vocab, base.n_vocab + len(new_ids)))
    assert (
        len(set(ext.mergeable_ranks.values()))
        == len(ext.mergeable_ranks)
        == ext.vocab_size - len(ext.special_tokens)
    )
    fewer = 0
    for doc in held_out:
        before, after = len(base.encode_ordinary(doc)), len(ext.encode_ordinary(doc))
        assert after <= before, doc[:80]
        fewer += after < before
    return fewer


def _held_out(corpus_text, name, n=60):
    return [d for d in corpus_text(name, 150_000, 0.9).split("\n\n") if d][:n]


def test_extend_gpt2(corpus_text):
    from _gpt2 import gpt2_tokenizer

    gpt2 = gpt2_tokenizer()
    text = corpus_text("code.txt", 150_000, 0.2)
    ext = bytepair.train_from_iterator([text], gpt2.vocab_size + 300, base=gpt2, progress=False)
    assert ext.vocab_size == gpt2.vocab_size + 300 and ext.pattern == gpt2.pattern
    assert _check_extension(gpt2, ext, _held_out(corpus_text, "code.txt")) > 0
    # Every new merge equals the reference's on the base's split of each word.
    ranks = {a + b: r for r, (a, b) in enumerate(gpt2.merges)} | {
        bytes([i]): -1 for i in range(256)
    }
    counts = ref.count_words([text], gpt2.pattern)
    assert trace_of(ext) == ref_trace(counts, 300, base_ranks=ranks)


def test_extend_cl100k(corpus_text):
    pytest.importorskip("bpe_openai")
    cl100k = bytepair.get_encoding("cl100k_base")
    text = corpus_text("multilingual.txt", 200_000, 0.3)
    ext = bytepair.train_from_iterator(
        [text], cl100k.vocab_size + 200, base=cl100k, special_tokens=["<|new|>"], progress=False
    )
    assert ext.special_tokens["<|new|>"] == cl100k.n_vocab + 199  # after the 199 new merges
    assert ext.vocab_size == cl100k.vocab_size + 200
    assert _check_extension(cl100k, ext, _held_out(corpus_text, "multilingual.txt")) > 0


def test_extending_our_tokenizer_on_its_corpus_continues_its_training(corpus_text, tmp_path):
    text = corpus_text("shakespeare.txt", 100_000, 0.0)
    small = bytepair.train_from_iterator(
        [text], 256 + 200 + 1, special_tokens=[EOT], progress=False
    )
    small.save(tmp_path / "small.json")
    base = bytepair.Tokenizer.load(tmp_path / "small.json")
    ext = bytepair.train_from_iterator([text], base.vocab_size + 150, base=base, progress=False)
    scratch = bytepair.train_from_iterator([text], 256 + 350, progress=False)
    assert ext.merges == scratch.merges
    assert _check_extension(base, ext, _held_out(corpus_text, "shakespeare.txt")) > 0
    # The base's special tokens split the text and keep their id; new merges come after it.
    assert ext.special_tokens == {EOT: 456} and ext.vocab[457] == b"".join(ext.merges[200])


def test_base_with_counts_and_cli(corpus_text, tmp_path):
    text = corpus_text("code.txt", 60_000, 0.5)
    (tmp_path / "code.txt").write_text(text, encoding="utf-8")
    from _gpt2 import gpt2_tokenizer

    gpt2 = gpt2_tokenizer()
    gpt2.save(tmp_path / "gpt2.json")
    out = tmp_path / "ext.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair",
            "train",
            str(tmp_path / "code.txt"),
            "--base",
            str(tmp_path / "gpt2.json"),
            "--vocab-size",
            "50357",
            "-q",
            "-o",
            str(out),
        ],
        check=True,
    )
    ext = bytepair.Tokenizer.load(out)
    assert ext.vocab_size == 50357 and ext.merges[:50000] == gpt2.merges
    from_counts = bytepair.train_from_counts(
        ref.count_words([text], gpt2.pattern), 50357, base=gpt2
    )
    assert from_counts.merges == ext.merges
    with pytest.raises(ValueError, match="differs from the base"):
        bytepair.train_from_counts({"ab": 1}, 50357, base=gpt2, pattern="cl100k")
    with pytest.raises(ValueError, match=r"at least 50257 \(the base tokenizer's ids\)"):
        bytepair.train_from_counts({"ab": 1}, 50000, base=gpt2)


def test_remote_compressed_and_globbed_inputs(stories):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/train19/a.txt.gz", gzip.compress(stories.encode()))
    fs.pipe("/train19/b.txt.xz", lzma.compress(stories.encode()))
    try:
        remote = bytepair.train("memory://train19/*", 400, progress=False)
        assert remote.training_stats.input_bytes == 2 * len(stories.encode())
        assert (
            remote.merges
            == bytepair.train_from_iterator([stories, stories], 400, progress=False).merges
        )
    finally:
        fs.rm("/train19", recursive=True)


@hypothesis.settings(max_examples=40, deadline=None)
@hypothesis.given(
    base_counts=st.dictionaries(
        st.text("abc", min_size=1, max_size=6), st.integers(1, 9), min_size=1, max_size=12
    ),
    counts=st.dictionaries(
        st.text("abcd", min_size=1, max_size=8), st.sampled_from([1, 2, 5, 30]), max_size=20
    ),
    base_merges=st.integers(0, 8),
    max_token_length=st.none() | st.integers(2, 5),
)
def test_extension_matches_reference_on_generated_counts(
    base_counts, counts, base_merges, max_token_length
):
    base = quiet(bytepair.train_from_counts, base_counts, 256 + base_merges)
    ranks = {a + b: r for r, (a, b) in enumerate(base.merges)} | {
        bytes([i]): -1 for i in range(256)
    }
    want = ref_trace(counts, 12, base_ranks=ranks, max_token_length=max_token_length)
    ext = quiet(
        bytepair.train_from_counts,
        counts,
        base.vocab_size + 12,
        base=base,
        max_token_length=max_token_length,
    )
    assert trace_of(ext) == want
    assert ext.merges[: len(base.merges)] == base.merges
    assert len(set(ext.vocab.values())) == len(ext.vocab)


def test_extension_from_an_artifact_and_a_base_without_every_byte(tmp_path, corpus_text):
    text = corpus_text("shakespeare.txt", 30_000, 0.5)
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    base = bytepair.train_from_iterator([text[:5000]], 300, special_tokens=[EOT], progress=False)
    counts = bytepair.count(
        tmp_path / "a.txt", tmp_path / "counts", special_tokens=[EOT], progress=False
    )
    ext = bytepair.train_from_counts(
        counts, base.vocab_size + 50, base=base, reserve_special_tokens=2
    )
    assert (
        ext.merges
        == bytepair.train_from_iterator(
            [text], base.vocab_size + 50, base=base, reserve_special_tokens=2, progress=False
        ).merges
    )
    assert ext.special_tokens == {
        EOT: 299,
        "<|reserved_special_token_0|>": 348,
        "<|reserved_special_token_1|>": 349,
    }
    letters = bytepair.Tokenizer({i: bytes([i]) for i in range(97, 123)}, [])
    with pytest.raises(
        ValueError, match=r"bytes b\"!\" are not in the base tokenizer's vocabulary"
    ):
        bytepair.train_from_counts({"hi!": 3}, 40, base=letters)
