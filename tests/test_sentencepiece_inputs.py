"""SentencePiece models on long inputs: a text cut at the model's safe cuts
(`crates/bytepair-core/src/sentencepiece/cuts.rs`: between two characters no
merge joins, the second half encoded as a continuation, without the dummy
prefix) gives the ids of the whole, so every entry point of the byte-level
tokenizers works for them with the same ids: `encode` in segments,
`encode_to_numpy` on threads, `encode_iterable` and `encode_blocks` on
streams, `encode_batch` on threads, `bytepair encode FILE` (a file in chunks,
stdin in blocks) and `encode_dataset`. The reference for a long text is its
encoding whole, uncut (`encode_batch` encodes each text so), itself checked
against sentencepiece in tests/test_sentencepiece.py.
"""

from __future__ import annotations

import io
import random
import subprocess
import sys

import numpy as np
import pytest
from test_sentencepiece import EDGE_TEXTS, TRAINED, mistral, mistral_path, pair_of, trained

import bytepair

pytest.importorskip("sentencepiece", reason="sentencepiece (the oracle) not installed")

V3 = "mistral_instruct_tokenizer_240323.model.v3"
V7 = "mistral_instruct_tokenizer_241114.model.v7"


def whole(tok, text: str, allowed=()) -> list[int]:
    """The ids of `text` encoded in one piece (no cut): `encode_batch` of one
    text does not segment it."""
    allowed, disallowed = tok._special_policy(set(allowed), ())
    return tok._core.encode_batch([text], allowed, disallowed, 1)[0]


def mixed_text(corpus_text, size: int) -> str:
    """About `size` bytes of prose, code and multilingual text, with runs of
    spaces, blank lines and special-token strings between them."""
    part = size // 3
    return "  \n\n".join(
        [
            corpus_text("enwiki.txt", part, at=0.4),
            corpus_text("code.txt", part, at=0.6) + "</s>",
            corpus_text("multilingual.txt", part, at=0.2),
        ]
    )


def halves_equal_whole(tok, text: str, rng: random.Random, tries: int) -> int:
    """Cut `text` at the last safe cut of random prefixes (a segment's window
    starts at a cut and may end anywhere); assert the two halves' ids (the
    second as a continuation) join to the ids of the whole. Returns how many
    cuts were tried."""
    allowed, disallowed = tok._special_policy("all", ())
    want = tok._core.encode(text, allowed, disallowed)
    cuts = 0
    for _ in range(tries):
        end = rng.randrange(1, len(text) + 1)
        after = tok._core.chars_after_last_cut(text[:end])
        if after is None:
            continue
        cut = end - after
        left = tok._core.encode(text[:cut], allowed, disallowed)
        right = tok._core.encode(text[cut:], allowed, disallowed, True)
        where = f"{text[cut - 20 : cut]!r}|{text[cut : cut + 20]!r}"
        assert left + right == want, f"cut at {cut}: {where}"
        cuts += 1
    return cuts


@pytest.mark.parametrize("name", [*TRAINED, V3, V7])
def test_halves_cut_at_safe_cuts_join_to_the_ids_of_the_whole(name, corpus_text):
    """Every normalizer option (charsmaps, whitespace removal, user-defined and
    control pieces, no dummy prefix...) and Mistral's models: a cut found in
    any window of the text holds for the whole text, special tokens allowed."""
    from_mistral = name.startswith(("mistral", "tokenizer"))
    tok = mistral(name)[0] if from_mistral else pair_of(trained(name))[0]
    rng = random.Random(name)
    texts = [corpus_text(c, 6_000, at=0.5) for c in ("enwiki.txt", "code.txt", "multilingual.txt")]
    texts.append(" ".join(EDGE_TEXTS) + "<s>a</s>\n\nb  <unk>c")
    cuts = sum(halves_equal_whole(tok, text, rng, 40) for text in texts)
    if name in ("whitespace-suffix",):
        assert cuts == 0, "the dummy prefix at the end: no safe cut"
    else:
        assert cuts > 40, f"{cuts} cuts found"


@pytest.fixture(scope="module")
def long_text(corpus_text):
    return mixed_text(corpus_text, 2_600_000)


def test_long_texts_give_the_ids_of_the_whole_on_one_and_two_threads(long_text):
    """`encode` (segments with a Ctrl-C check between them), `encode_to_numpy`
    on 1 and 2 threads, `encode_iterable` and `encode_blocks` of its lines, and
    `encode_batch` on 2 threads: the ids of the text encoded whole."""
    tok = mistral(V3)[0]
    text = long_text
    assert tok._core.chars_after_last_cut(text[: 1 << 20]) is not None
    want = whole(tok, text, allowed={"</s>"})
    kw = {"allowed_special": {"</s>"}}
    assert tok.encode(text, **kw) == want
    for threads in (1, 2):
        assert tok.encode_to_numpy(text, num_threads=threads, **kw).tolist() == want, threads
    lines = text.splitlines(keepends=True)
    assert list(tok.encode_iterable(lines, **kw)) == want
    assert np.concatenate(list(tok.encode_blocks(iter(lines), **kw))).tolist() == want
    short = text[:5000]
    assert tok.encode_batch([text, short, ""], num_threads=2, **kw) == [want, whole(tok, short), []]
    assert tok.count_tokens(text, **kw) == len(want)


def test_long_texts_on_two_threads_give_sentencepieces_ids(corpus_text):
    """The segments of a long text, encoded on 2 threads and joined, are the
    ids sentencepiece gives the whole text (its own whole-text queue: mostly
    multilingual text, which it merges fastest)."""
    tok, sp = mistral(V7)
    text = "  \n".join(
        [
            corpus_text("enwiki.txt", 100_000, at=0.7),
            corpus_text("multilingual.txt", 2_200_000, at=0.1),
            corpus_text("code.txt", 100_000, at=0.2),
        ]
    )
    assert len(text.encode()) > 2 << 20, "more than 2 segments: both threads work"
    assert tok.encode_to_numpy(text, num_threads=2).tolist() == sp.encode(text)


def test_a_disallowed_special_token_deep_in_a_long_text_names_its_offset(long_text):
    tok = mistral(V3)[0]
    at = long_text.index("</s>")
    for call in (tok.encode, lambda t: tok.encode_to_numpy(t, num_threads=2)):
        with pytest.raises(ValueError, match=f"at character offset {at}"):
            call(long_text)


CLI = [sys.executable, "-m", "bytepair"]


@pytest.mark.slow
def test_cli_encodes_a_file_in_chunks_and_stdin_in_blocks_with_the_ids_of_the_whole(
    tmp_path, long_text
):
    """`bytepair encode FILE` reads a file of several ~8 MiB chunks cut at safe
    cuts and encodes them on --threads threads; a pipe is read in blocks:
    both give the ids of the whole text."""
    path = mistral_path(V3)
    tok = mistral(V3)[0]
    text = long_text.replace("</s>", "") * 4
    big = tmp_path / "big.txt"
    big.write_text(text, encoding="utf-8")
    assert big.stat().st_size > 8 << 20, "more than one chunk"
    want = whole(tok, text)
    for threads in ("1", "2"):
        out = tmp_path / f"ids{threads}.npy"
        cmd = [*CLI, "encode", str(big), "-t", str(path), "-o", str(out), "--threads", threads]
        subprocess.run([*cmd, "-q"], check=True, timeout=300)
        ids = np.load(out)
        assert ids.dtype == np.uint16 and ids.tolist() == want, threads
    piped = subprocess.run(
        [*CLI, "encode", "-", "-t", str(path), "-o", "-", "-q"],
        input=text.encode(),
        capture_output=True,
        check=True,
        timeout=300,
    )
    assert np.load(io.BytesIO(piped.stdout)).tolist() == want


@pytest.mark.parametrize("threads", [1, 2])
def test_encode_dataset_gives_each_document_its_own_ids(tmp_path, long_text, corpus_text, threads):
    """Documents (one over 2 MiB, so cut into segments) each encoded as
    `encode_ordinary` encodes it alone, then the eot."""
    tok = mistral(V3)[0]
    docs = [corpus_text("enwiki.txt", 3000, at=0.1), long_text, " lead space", "x"]
    (tmp_path / "docs.txt").write_text("<|doc|>".join(docs), encoding="utf-8")
    ds = bytepair.encode_dataset(
        tmp_path / "docs.txt",
        tmp_path / "ds",
        tok,
        separator="<|doc|>",
        eot="</s>",
        num_threads=threads,
        progress=False,
    )
    assert len(ds) == len(docs)
    for i, doc in enumerate(docs):
        assert ds[i].tolist() == whole(tok, doc) + [2], i
