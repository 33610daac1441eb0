"""Training SentencePiece-style BPE (`bytepair.train_sentencepiece`): the
models it writes load in sentencepiece and HF tokenizers with our ids, honour
the recipe's options, and compress held-out text as well as sentencepiece's
own BPE trainer on the same input and options.
"""

from __future__ import annotations

import functools
import io

import pytest

import bytepair

spm = pytest.importorskip("sentencepiece", reason="sentencepiece (the oracle) not installed")

HELD_OUT = ("enwiki.txt", "code.txt", "multilingual.txt")


@functools.cache
def corpus_slices() -> tuple[str, tuple[str, ...]]:
    from conftest import slice_lines

    train = (
        slice_lines("enwiki.txt", 250_000)
        + slice_lines("multilingual.txt", 150_000, at=0.2)
        + slice_lines("code.txt", 100_000, at=0.3)
    )
    held = tuple(slice_lines(c, 40_000, at=0.6) for c in HELD_OUT)
    return train, held


@functools.cache
def trained(vocab_size: int = 2000, **options) -> bytepair.SentencePieceTokenizer:
    train, _ = corpus_slices()
    return bytepair.train_sentencepiece_from_iterator([train], vocab_size, **options)


RECIPE = dict(user_defined_symbols=("<sep>", "[DOC]"), control_symbols=("<ctl>",))


def test_trained_model_loads_in_sentencepiece_and_hf_with_our_ids(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok = trained(**RECIPE)
    assert tok.vocab_size == 2000
    assert tok.byte_fallback and tok.special_tokens == {"<unk>": 0, "<s>": 1, "</s>": 2, "<ctl>": 3}
    tok.save_model(tmp_path / "t.model")
    tok.save(tmp_path / "t.json")
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "t.model"))
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    _, held = corpus_slices()
    for text in held + ("a<sep>b [DOC] 12345 😀 x  y", "", "   "):
        ids = tok.encode_ordinary(text)
        assert sp.encode(text) == ids, text[:40]
        assert hf.encode(text).ids == tok.encode(text, allowed_special="all"), text[:40]
        assert sp.decode(ids) == tok.decode(ids)
    assert bytepair.Tokenizer.load(tmp_path / "t.model") == tok


def test_recipe_options_shape_the_vocabulary():
    tok = trained(**RECIPE)
    pieces = {p: kind for p, _, kind in tok.pieces}
    assert pieces["<sep>"] == "USER_DEFINED" and pieces["<ctl>"] == "CONTROL"
    assert sum(kind == "BYTE" for kind in pieces.values()) == 256
    normal = [p for p, k in pieces.items() if k == "NORMAL"]
    assert not any(len(p) > 16 for p in normal), "max_piece_length"
    assert not any(sum(c.isdigit() for c in p) and len(p.lstrip("\u2581")) > 1 for p in normal)
    assert any(set(p) == {"\u2581"} and len(p) > 1 for p in normal), "whitespace-only pieces"
    # Coverage: the rarest characters are not pieces; they encode as their bytes.
    full = trained(character_coverage=1.0)
    rare = {p for p, _, k in full.pieces if len(p) == 1} - {p for p, _, k in tok.pieces}
    assert rare
    c = sorted(rare)[0]
    assert tok.encode_ordinary(c)[-len(c.encode()) :] == [
        tok.piece_to_id(f"<0x{b:02X}>") for b in c.encode()
    ]
    no_digits = trained(split_digits=False, byte_fallback=False)
    assert any(len(p) > 1 and p.isdigit() for p, _, _ in no_digits.pieces)
    assert not no_digits.byte_fallback
    with pytest.raises(ValueError, match="leaves no room for merges"):
        bytepair.train_sentencepiece_from_iterator(["some text here"], 50)


def test_compression_matches_sentencepieces_bpe_trainer():
    train, held = corpus_slices()
    lines = [line for line in train.split("\n") if line.strip()]
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=out,
        model_type="bpe",
        vocab_size=2000,
        character_coverage=0.9995,
        byte_fallback=True,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        max_sentence_length=1 << 20,
        minloglevel=2,
    )
    theirs = spm.SentencePieceProcessor(model_proto=out.getvalue())
    ours = trained()
    text = "\n".join(held)
    ours_bpt = len(text.encode()) / len(ours.encode_ordinary(text))
    theirs_bpt = len(text.encode()) / len(theirs.encode(text))
    assert ours_bpt >= 0.98 * theirs_bpt, (ours_bpt, theirs_bpt)


def test_files_bytes_and_str_train_the_same_model_and_bad_utf8_names_its_file(tmp_path):
    """`train_sentencepiece` reads files as bytes (checked as UTF-8 by the
    core): the model is the one trained on the same texts as str or bytes;
    a file that is not UTF-8 is a UnicodeDecodeError naming it."""
    train, _ = corpus_slices()
    texts = ["\n\n" + train[:60_000] + "\r\n tail ", " \u2581x  12 \n" + train[-40_000:]]
    paths = []
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"t{i}.txt")
        paths[-1].write_bytes(text.encode())
    options = dict(user_defined_symbols=("<sep>",), num_threads=2)
    want = bytepair.train_sentencepiece_from_iterator(texts, 600, **options)
    assert bytepair.train_sentencepiece(paths, 600, **options) == want
    as_bytes = [t.encode() for t in texts]
    assert bytepair.train_sentencepiece_from_iterator(as_bytes, 600, **options) == want
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text\nthen \xff here\n")
    with pytest.raises(UnicodeDecodeError, match="bad.txt") as e:
        bytepair.train_sentencepiece([paths[0], bad], 600)
    assert e.value.start == 15


def test_files_read_in_chunks_train_the_model_of_their_texts(tmp_path):
    """The core reads files ~1 MiB of whole lines at a time: lines across
    chunk ends, a line longer than two chunks, blank lines and a file with no
    final newline train the model of the same texts given whole; a missing
    file, a directory and bad UTF-8 past the first chunk are the errors
    `open` and decoding the file raise (path, errno, byte offset)."""
    line = "naïve 12,345 日本語テキスト 😀 a\u0300b  \u2581x the cat sat\t%d\n"
    lines = "".join(line % i for i in range(40_000))  # ~2.3 MB
    long_line = "long日本語 " * 300_000  # ~3.6 MB, no newline
    texts = ["\n\n" + lines + long_line + "\n\n" + lines[:5000], lines[:777], ""]
    paths = []
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"f{i}.txt")
        paths[-1].write_bytes(text.encode())
    for threads in (1, 2):
        want = bytepair.train_sentencepiece_from_iterator(texts, 600, num_threads=threads)
        assert bytepair.train_sentencepiece(paths, 600, num_threads=threads) == want
    with pytest.raises(FileNotFoundError) as e:
        bytepair.train_sentencepiece([paths[0], tmp_path / "missing.txt"], 600)
    assert e.value.filename == str(tmp_path / "missing.txt")
    with pytest.raises(IsADirectoryError):
        bytepair.train_sentencepiece([tmp_path], 600)
    bad = tmp_path / "bad.txt"
    data = lines.encode() * 2
    bad.write_bytes(data + b"then \xe6\x97\nhere\n" + data)
    with pytest.raises(UnicodeDecodeError, match="bad.txt") as e:
        bytepair.train_sentencepiece([paths[1], bad], 600, num_threads=2)
    assert (e.value.start, e.value.end) == (len(data) + 5, len(data) + 7)


def test_the_model_is_the_same_on_one_and_two_threads(corpus_text):
    """Counting in ~1 MiB chunks of lines on rayon threads, summed: more than
    two chunks give the model of one thread."""
    text = corpus_text("enwiki.txt", 1_500_000, at=0.2) + corpus_text("multilingual.txt", 1_000_000)
    models = [
        bytepair.train_sentencepiece_from_iterator([text], 3000, num_threads=n) for n in (1, 2)
    ]
    assert models[0] == models[1]


def test_a_trained_tokenizer_builds_its_encoder_on_first_use():
    """Training and writing a model build neither encoder nor vocabulary
    (`defer`); the first use builds them, as loading the model's bytes does."""
    import pickle

    train, held = corpus_slices()
    tok = bytepair.train_sentencepiece_from_iterator([train[:60_000]], 700)
    data = tok.model_bytes()
    assert "_core" not in vars(tok) and "_vocab" not in vars(tok)
    loaded = bytepair.SentencePieceTokenizer(data)
    clone = pickle.loads(pickle.dumps(tok))
    assert tok.vocab == loaded.vocab
    text = held[0][:5000]
    assert tok.encode_ordinary(text) == loaded.encode_ordinary(text) == clone.encode_ordinary(text)
    assert "_core" in vars(tok) and "_vocab" in vars(tok)
    with pytest.raises(AttributeError, match="no_such_thing"):
        tok.no_such_thing  # noqa: B018
