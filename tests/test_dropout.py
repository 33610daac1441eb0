"""BPE-dropout (Provilkov et al., 2020): ``Tokenizer.encode(text, dropout=p, seed=s)``.

At every merge step each candidate merge is skipped with probability p and the
lowest-rank candidate not skipped is applied; when all are skipped the piece is
done. Checked here: p = 0 is the normal encoding, every p decodes back to the
text, a seed fixes the ids, and the segmentation frequencies on small pieces
match the probabilities worked out by hand from that rule.
"""

from __future__ import annotations

from collections import Counter

import pytest

import bytepair


def _toy(merges: list[tuple[bytes, bytes]]) -> bytepair.Tokenizer:
    vocab = {i: bytes([i]) for i in range(256)}
    for r, (a, b) in enumerate(merges):
        vocab[256 + r] = a + b
    return bytepair.Tokenizer(vocab, merges, ["<|endoftext|>"])


@pytest.fixture(scope="module")
def tok(corpus):
    return bytepair.train(
        corpus("shakespeare.txt"), 2048, special_tokens=["<|endoftext|>"], progress=False
    )


@pytest.fixture(scope="module")
def text(corpus_text):
    return corpus_text("shakespeare.txt", 30_000, at=0.3) + "<|endoftext|>Ünïcödé 日本語 😀\t\n"


def test_zero_dropout_is_the_normal_encoding(tok, text):
    want = tok.encode(text, allowed_special="all")
    assert tok.encode(text, allowed_special="all", dropout=0.0, seed=1) == want
    assert tok.encode(text, allowed_special="all", dropout=0) == want


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9, 0.999])
def test_any_dropout_decodes_back_and_special_tokens_stay(tok, text, p):
    ids = tok.encode(text, allowed_special="all", dropout=p, seed=7)
    assert tok.decode(ids) == text
    assert ids.count(tok.special_tokens["<|endoftext|>"]) == 1
    assert len(ids) >= len(tok.encode(text, allowed_special="all"))


def test_same_seed_same_ids_other_seed_other_ids(tok, text):
    a = tok.encode(text, allowed_special="all", dropout=0.1, seed=42)
    assert tok.encode(text, allowed_special="all", dropout=0.1, seed=42) == a
    assert tok.encode(text, allowed_special="all", dropout=0.1, seed=43) != a
    # no seed: fresh randomness per call (30 KB of text never splits the same way twice)
    assert tok.encode(text, allowed_special="all", dropout=0.1) != tok.encode(
        text, allowed_special="all", dropout=0.1
    )


def test_more_dropout_more_tokens(tok, text):
    lengths = [
        len(tok.encode(text, allowed_special="all", dropout=p, seed=3))
        for p in (0, 0.1, 0.3, 0.6, 0.9)
    ]
    assert lengths == sorted(lengths) and lengths[-1] > 2 * lengths[0]
    # p close to 1: nearly every merge dropped, nearly one token per byte
    n = len(tok.encode(text, allowed_special="all", dropout=0.9999, seed=3))
    assert n > 0.99 * (len(text.encode()) - len("<|endoftext|>"))


def test_single_merge_is_skipped_with_probability_p():
    tok = _toy([(b"a", b"b")])
    counts = Counter(tuple(tok.encode("ab", dropout=0.3, seed=s)) for s in range(4000))
    assert set(counts) == {(256,), (97, 98)}
    assert counts[(97, 98)] / 4000 == pytest.approx(0.3, abs=0.03)


def test_skipped_candidate_gives_the_next_one_its_chance():
    """Piece abc, merges ab (rank 0) and bc (rank 1), p = 0.5. Step 1: ab is
    applied with prob 1/2; else bc with 1/2; else none: [ab,c] 1/2, [a,bc] 1/4,
    [a,b,c] 1/4 (after one merge the other pair is gone)."""
    tok = _toy([(b"a", b"b"), (b"b", b"c")])
    n = 4000
    counts = Counter(tuple(tok.encode("abc", dropout=0.5, seed=s)) for s in range(n))
    assert set(counts) == {(256, 99), (97, 257), (97, 98, 99)}
    assert counts[(256, 99)] / n == pytest.approx(0.5, abs=0.03)
    assert counts[(97, 257)] / n == pytest.approx(0.25, abs=0.03)
    assert counts[(97, 98, 99)] / n == pytest.approx(0.25, abs=0.03)


def test_skipped_merges_come_back_at_the_next_step():
    """Piece abab, merges ab (rank 0) and abab (rank 1): an ab skipped at one
    step is drawn again at the next one, after the other ab has merged."""
    tok = _toy([(b"a", b"b"), (b"ab", b"ab")])
    n, p = 4000, 0.5
    counts = Counter(tuple(tok.encode("abab", dropout=p, seed=s)) for s in range(n))
    # Step 1: candidates ab@0, ab@2; all skipped with p^2 -> [a,b,a,b].
    # Otherwise one ab merges; step 2 has the other ab: skipped with p -> stop.
    # Step 3 (both merged): abab skipped with p.
    want = {
        (97, 98, 97, 98): p**2,
        (256, 97, 98): (1 - p) * p,  # ab@0 merged first, then ab@2 skipped
        (97, 98, 256): p * (1 - p) * p,  # ab@0 skipped, ab@2 merged, then ab@0 skipped
        (256, 256): (1 - p**2) * (1 - p) * p,
        (257,): (1 - p**2) * (1 - p) * (1 - p),
    }
    assert set(counts) == set(want)
    for ids, prob in want.items():
        assert counts[ids] / n == pytest.approx(prob, abs=0.03), ids


def test_whole_pre_token_is_not_looked_up_under_dropout():
    tok = bytepair.train_from_counts({"hug": 10}, 258)  # ug, hug
    seen = {tuple(tok.encode("hug", dropout=0.5, seed=s)) for s in range(200)}
    assert seen == {(257,), (104, 256), (104, 117, 103)}


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, float("nan"), "0.1", True])
def test_dropout_must_be_a_probability_below_one(tok, p):
    with pytest.raises(ValueError, match="dropout"):
        tok.encode("hi", dropout=p)


@pytest.mark.parametrize("seed", [-1, 1 << 64, 1.5, "1"])
def test_seed_must_fit_64_bits(tok, seed):
    with pytest.raises(ValueError, match="seed"):
        tok.encode("hi", dropout=0.1, seed=seed)


def test_disallowed_special_still_raises_and_surrogates_are_replaced(tok):
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode("a<|endoftext|>", dropout=0.5, seed=0)
    assert tok.decode(tok.encode("a\ud800b", dropout=0.5, seed=0)) == "a\ufffdb"


# ---- dropout wherever encoding happens (encode_batch, the CLI) ---------------------------


def test_encode_batch_with_dropout_does_not_depend_on_the_thread_count():
    from bytepair.encoding.helpers import document_seed

    tok = bytepair.train_from_iterator(
        ["the quick brown fox jumps over the lazy dog"] * 30, 300, progress=False
    )
    texts = [f"the lazy dog {i} jumps over the quick fox" for i in range(40)]
    one = tok.encode_batch(texts, dropout=0.3, seed=7, num_threads=1)
    assert tok.encode_batch(texts, dropout=0.3, seed=7, num_threads=2) == one
    assert one == [
        tok.encode(t, dropout=0.3, seed=document_seed(7, i)) for i, t in enumerate(texts)
    ]
    assert [tok.decode(ids) for ids in one] == texts
    assert one != tok.encode_batch(texts) and one != tok.encode_batch(texts, dropout=0.3, seed=8)


def test_cli_encode_with_dropout_is_seeded_and_decodes_back(tmp_path):
    import subprocess
    import sys

    import numpy as np

    tok = bytepair.train_from_iterator(
        ["the quick brown fox jumps over the lazy dog"] * 30, 300, progress=False
    )
    tok.save(tmp_path / "tok.json")
    text = "the quick brown fox jumps over the lazy dog\n" * 3000
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")

    def encode(out: str, *flags: str) -> np.ndarray:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "bytepair",
                "encode",
                str(tmp_path / "in.txt"),
                "-t",
                str(tmp_path / "tok.json"),
                "-o",
                str(tmp_path / out),
                "-q",
                *flags,
            ],
            check=True,
            timeout=120,
        )
        return np.load(tmp_path / out)

    plain = encode("plain.npy")
    first, again = (
        encode("a.npy", "--dropout", "0.2", "--seed", "3"),
        encode("b.npy", "--dropout", "0.2", "--seed", "3"),
    )
    assert np.array_equal(first, again) and len(first) > len(plain)
    assert tok.decode(first.tolist()) == text
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair",
            "encode",
            str(tmp_path / "in.txt"),
            "-t",
            str(tmp_path / "tok.json"),
            "-o",
            "-",
            "--dropout",
            "1.5",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--dropout" in bad.stderr
