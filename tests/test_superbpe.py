"""SuperBPE (Liu et al. 2025): the stage-2 pre-tokenization against the authors' split
(HF's ``Split(regex, Isolated)`` on each line) and the reference; the merges
against the pure-Python reference (corpus slices and hypothesis texts); the
saved tokenizer against HF tokenizers, transformers and tiktoken; extension
of a base; train_from_counts; the CLI, ``inspect`` and ``stats``.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import warnings

import pytest

import bytepair
from bytepair import _core
from bytepair import reference as ref
from bytepair.inspection.report import superword_ids, word_count

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
regex = pytest.importorskip("regex")

EOT = "<|endoftext|>"
# Characters that meet every branch of the stage-2 regex: digits (ASCII and
# not), letters, punctuation (and /), spaces, newlines, \r, tabs, NBSP, a mark.
ALPHABET = "ab Z9\u0663.,:;!?/()'\"-_\n\r\t\u00a0\u00e9\u0301\u4e2d" + " " * 6


def stage2_pieces(text: str) -> list[str]:
    tok = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="superbpe")
    return tok.pretokenize(text)


def hf_split_by_line(text: str) -> list[str]:
    """The authors' stage 2 as HF tokenizers runs it: the Split on each line."""
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(ref.SUPERBPE_REGEX), "isolated")
    return [p for line in ref._lines(text) for p, _ in split.pre_tokenize_str(line)]


def train_sb(texts, vocab_size, transition, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return bytepair.train_from_iterator(
            texts, vocab_size, superbpe_transition=transition, progress=False, **kwargs
        )


# ---- stage-2 pre-tokenization ---------------------------------------------------


def test_stage2_pieces_equal_the_authors_split_on_corpora(corpus_text):
    text = "".join(
        corpus_text(name, 150_000, 0.3) for name in ("multilingual.txt", "code.txt", "enwiki.txt")
    )
    ours = stage2_pieces(text)
    assert ours == ref.superbpe_pieces(text) == hf_split_by_line(text)
    assert ours == regex.findall(_core.resolve_pattern("superbpe"), text)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.text(alphabet=ALPHABET, max_size=60))
def test_stage2_pieces_on_any_text(text):
    ours = stage2_pieces(text)
    assert ours == ref.superbpe_pieces(text) == hf_split_by_line(text)
    assert "".join(ours) == text


def test_stage2_boundaries():
    assert stage2_pieces("By the way, it's 12345 dollars!!\nNext  \n") == [
        "By the way, it's ",
        "123",
        "45",
        " dollars",
        "!!\n",
        "Next",
        "  ",
        "\n",
    ]


# ---- merges against the reference ------------------------------------------------


def test_merges_equal_the_reference_on_a_corpus_slice(corpus_text):
    text = corpus_text("tinystories_v1_train_head.txt", 25_000, 0.5)
    texts = [text[: len(text) // 2], EOT.join(["x", text[len(text) // 2 :]])]
    want = ref.train_superbpe(texts, 150, 100, special_tokens=[EOT])
    tok = train_sb(texts, 256 + 250 + 1, 256 + 150 + 1, special_tokens=[EOT])
    assert tok.merges == want
    assert tok.special_tokens == {EOT: 256 + 250}
    stats = tok.training_stats
    assert (stats.superbpe_transition, stats.superbpe_merges, stats.merges) == (407, 100, 250)
    assert len(superword_ids(tok)) > 20, "superwords are learned"


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    st.lists(st.text(alphabet="ab c:.,\n1", max_size=40), min_size=1, max_size=4),
    st.integers(0, 12),
    st.integers(0, 25),
    st.sampled_from([None, 1, 2, 4]),
)
def test_merges_equal_the_reference_on_any_text(texts, stage1, stage2, max_words):
    hypothesis.assume("".join(texts))
    want = ref.train_superbpe(texts, stage1, stage2, max_words=max_words)
    tok = train_sb(texts, 256 + stage1 + stage2, 256 + stage1, superbpe_max_words=max_words)
    # Stage 1 may stop early; then stage 2 learns the merges left (the reference does not).
    if len(want) == stage1 + stage2 or tok.training_stats.superbpe_transition == 256 + stage1:
        assert tok.merges == want
    for a, b in tok.merges[tok.training_stats.merges - tok.training_stats.superbpe_merges :]:
        assert ref.superbpe_allows(a + b, max_words)
    # The table passes the loaders' rules: it saves and loads with these ids.
    bytepair.Tokenizer(tok.vocab, tok.merges, pattern=tok.pattern)


# ---- one token, one id ---------------------------------------------------------------


def assert_one_id_per_token(tok, folder):
    """No two ids spell the same bytes (ordinary or special), and tokenizer.json
    and .tiktoken load back with the same ids."""
    spelled = collections.Counter(tok.vocab.values())
    assert [b for b, n in spelled.items() if n > 1] == []
    tok.save(folder / "sb.json")
    tok.save_tiktoken(folder / "sb.tiktoken")
    for name in ("sb.json", "sb.tiktoken"):
        back = bytepair.Tokenizer.load(folder / name)
        assert (back.vocab, back.merges, back.special_tokens, back.pattern_regex) == (
            tok.vocab,
            tok.merges,
            tok.special_tokens,
            tok.pattern_regex,
        ), name


@pytest.mark.parametrize("on_base", [False, True])
def test_no_merge_spells_a_special_token(tmp_path, on_base):
    """Stage 1 cuts the text at the run's special tokens as stage 2 does: else
    it learned "hello" as a merge and the special token "hello" took a second id
    (tokenizer.json cannot hold that: save refused)."""
    texts = ["hello world, hello there. Hello you, hello\n"] * 6
    base = None
    if on_base:  # a base that has no token "hello"
        base = bytepair.train_from_iterator(["the world, there you\n"] * 3, 262, progress=False)
    first = 262 if on_base else 256
    # 12 merges in stage 1 (the special token takes an id of the transition), 28 in stage 2.
    tok = train_sb(texts, first + 41, first + 13, special_tokens=["hello"], base=base)
    assert b"hello" not in tok.mergeable_ranks
    want = ref.train_superbpe(
        texts, 12, 28, special_tokens=["hello"], base=base.merges if on_base else ()
    )
    assert tok.merges == want
    assert_one_id_per_token(tok, tmp_path)
    (tmp_path / "texts.txt").write_text("".join(texts))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        from_file = bytepair.train(
            tmp_path / "texts.txt",
            first + 41,
            special_tokens=["hello"],
            base=base,
            superbpe_transition=first + 13,
            progress=False,
        )
    assert from_file.merges == want


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(
    st.lists(st.text(alphabet="ab c:.,\n", max_size=40), min_size=1, max_size=4),
    st.lists(st.text(alphabet="ab c:.,\n", max_size=15), min_size=1, max_size=3),
    # (Not one a base may hold with a space: tokenizer.json cannot mark "Ġc" special.)
    st.lists(st.sampled_from(["ab", "a b", ":", "a", "b. ", "c:"]), max_size=2, unique=True),
    st.integers(0, 10),
    st.integers(0, 6),
    st.integers(0, 20),
    st.booleans(),
)
def test_one_id_per_token_on_any_text_and_base(
    tmp_path_factory, texts, other, specials, base_merges, stage1, stage2, same_text
):
    """SuperBPE on generated texts, special tokens and bases (none, or trained
    on the same texts or on others; stage 1 extending it or not): no token
    twice, the files load back, and the merges are the reference's."""
    base_texts = texts if same_text else other
    hypothesis.assume("".join(base_texts).strip())
    base = None
    if base_merges:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            base = bytepair.train_from_iterator(base_texts, 256 + base_merges, progress=False)
    held = base.mergeable_ranks if base is not None else {bytes([i]): i for i in range(256)}
    new_specials = sum(t.encode() not in held for t in specials)
    floor = len(held) + new_specials
    try:
        tok = train_sb(
            texts, floor + stage1 + stage2, floor + stage1, special_tokens=specials, base=base
        )
    except ValueError as e:  # the special tokens leave no text: plain BPE refuses it too
        assert "empty corpus" in str(e)
        return
    assert_one_id_per_token(tok, tmp_path_factory.mktemp("sb"))
    base_table = () if base is None else base.merges
    want = ref.train_superbpe(texts, stage1, stage2, special_tokens=specials, base=base_table)
    # Stage 1 may stop early; then stage 2 learns the merges left (the reference does not).
    if len(want) == len(base_table) + stage1 + stage2 or (
        tok.training_stats.superbpe_transition == floor + stage1
    ):
        assert tok.merges == want


# ---- the saved files in other libraries -------------------------------------------


@pytest.fixture(scope="module")
def enwiki_superbpe(tmp_path_factory, request):
    from conftest import slice_lines

    text = slice_lines("enwiki.txt", 4_500_000, 0.0)
    tok = train_sb([text[:3_000_000]], 6000, 5000, special_tokens=[EOT])
    folder = tmp_path_factory.mktemp("superbpe")
    tok.save(folder / "tokenizer.json")
    tok.save_tiktoken(folder / "sb.tiktoken")
    return tok, folder, text[3_000_000:]


def test_ids_equal_hf_tokenizers_and_transformers(enwiki_superbpe):
    from tokenizers import Tokenizer as HFTokenizer
    from transformers import PreTrainedTokenizerFast

    tok, folder, held_out = enwiki_superbpe
    node = json.loads((folder / "tokenizer.json").read_text())["pre_tokenizer"]["pretokenizers"][0]
    assert node["behavior"] == "Isolated"
    ours = tok.encode(held_out)
    assert HFTokenizer.from_file(str(folder / "tokenizer.json")).encode(held_out).ids == ours
    fast = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    assert fast.encode(held_out, add_special_tokens=False) == ours
    assert len(ours) < len(bytepair.Tokenizer.load(folder / "tokenizer.json").encode(held_out)) + 1
    back = bytepair.Tokenizer.load(folder / "tokenizer.json")
    assert back.pattern == "superbpe" and back == tok


def test_ids_equal_tiktoken_with_the_stage2_regex(enwiki_superbpe):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    tok, folder, held_out = enwiki_superbpe
    enc = tiktoken.Encoding(
        "superbpe",
        pat_str=_core.resolve_pattern("superbpe"),
        mergeable_ranks=load_tiktoken_bpe(str(folder / "sb.tiktoken")),
        special_tokens=tok.special_tokens,
    )
    text = held_out[:100_000] + EOT + "tail"
    assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(st.text(alphabet=ALPHABET + "the of in and", max_size=80))
def test_ids_equal_hf_on_any_text(enwiki_superbpe, text):
    from tokenizers import Tokenizer as HFTokenizer

    tok, folder, _ = enwiki_superbpe
    hf = _hf_cache.setdefault(folder, HFTokenizer.from_file(str(folder / "tokenizer.json")))
    assert hf.encode(text).ids == tok.encode(text, disallowed_special=())


_hf_cache: dict = {}


@pytest.fixture(scope="module")
def dense_superbpe():
    """Many merges across words with low ranks, and merges inside words after
    them: the word-by-word encoder joins words and falls back often here."""
    import random

    rng = random.Random(5)
    words = ["a", "ab", "ba", "b.", "c", "abc", "a,", "cc"]
    texts = [" ".join(rng.choice(words) for _ in range(30)) + "\n" for _ in range(300)]
    return train_sb(texts, 256 + 120, 256 + 6)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.text(alphabet="ab c.,\n", max_size=150))
def test_word_by_word_merge_equals_plain_bpe(dense_superbpe, text):
    tok = dense_superbpe
    want = ref.encode(text, tok.merges, _core.resolve_pattern("superbpe"), vocab=tok.vocab)
    assert tok.encode(text) == want


@pytest.mark.parametrize("seed", range(12))
def test_word_by_word_merge_on_random_vocabularies(seed):
    """Vocabularies of a few short words, merged across them from the first
    merges on: ties between a merge across a cut and one inside a word, and
    words that are still merging when a neighbour is joined."""
    import random

    rng = random.Random(seed)
    alphabet = rng.choice(["ab", "abc", "ab.", "a.,"])
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(8)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 40))) for _ in range(200)]
    tok = train_sb(texts, 256 + rng.randint(30, 200), 256 + rng.randint(0, 10))
    pattern = _core.resolve_pattern("superbpe")
    for _ in range(100):
        text = " ".join(rng.choice(words + list(alphabet)) for _ in range(rng.randint(1, 30)))
        assert tok.encode(text) == ref.encode(text, tok.merges, pattern, vocab=tok.vocab), text


def test_word_by_word_merge_on_corpora(corpus_text, enwiki_superbpe):
    tok = enwiki_superbpe[0]
    text = corpus_text("enwik8_head.txt", 40_000, 0.5) + corpus_text("code.txt", 40_000, 0.4)
    ranks = {a + b: r for r, (a, b) in enumerate(tok.merges)}
    want = []
    for piece in map(str.encode, tok.pretokenize(text)):
        whole = tok.mergeable_ranks.get(piece)
        parts = [piece] if whole is not None else ref.bpe(piece, ranks)
        want += [tok.mergeable_ranks[t] for t in parts]
    assert tok.encode(text, disallowed_special=()) == want


# ---- extension, counts, limits ---------------------------------------------------------


def test_stage2_on_top_of_a_base_is_the_same_run(corpus_text):
    """The paper's "inherit merges": stage 2 on a base trained on the same
    text gives what one run with the transition at the base's size gives."""
    text = corpus_text("shakespeare.txt", 120_000, 0.2)
    base = bytepair.train_from_iterator([text], 1200, progress=False)
    on_base = train_sb([text], 1500, 1200, base=base)
    one_run = train_sb([text], 1500, 1200)
    assert on_base.merges == one_run.merges
    assert on_base.merges[: len(base.merges)] == base.merges
    assert on_base.training_stats.base_ids == 1200
    further = train_sb([text], 1500, 1300, base=base)
    assert further.merges == train_sb([text], 1500, 1300).merges
    assert further.training_stats.superbpe_transition == 1300


def test_stage2_on_a_tiktoken_encoding(corpus, corpus_text):
    gpt2 = bytepair.Tokenizer.from_gpt2_files(
        corpus("cs336/gpt2_vocab.json"), corpus("cs336/gpt2_merges.txt"), special_tokens=[EOT]
    )
    text = corpus_text("tinystories_v1_valid_head.txt", 60_000, 0.1)
    tok = train_sb([text], gpt2.vocab_size + 100, gpt2.vocab_size, base=gpt2)
    new = [tok.vocab[i] for i in range(gpt2.n_vocab, tok.n_vocab)]
    assert len(new) == 100 and sum(word_count(t) >= 2 for t in new) > 60
    assert tok.special_tokens == gpt2.special_tokens
    sample = text[:2000]
    assert len(tok.encode(sample, disallowed_special=())) < len(
        gpt2.encode(sample, disallowed_special=())
    )


def test_train_from_counts_takes_both_stages_counts(corpus_text, tmp_path):
    text = corpus_text("tinystories_v1_valid_head.txt", 30_000, 0.4)
    path = tmp_path / "t.txt"
    path.write_text(text)
    tok = train_sb([text], 600, 450)
    words = ref.count_words([text])
    pieces = collections.Counter(p.encode() for p in ref.superbpe_pieces(text))
    from_maps = bytepair.train_from_counts(
        words, 600, superbpe_transition=450, superbpe_counts=pieces
    )
    counted = bytepair.count([path], tmp_path / "w", progress=False)
    counted2 = bytepair.count([path], tmp_path / "p", pattern="superbpe", progress=False)
    from_artifacts = bytepair.train_from_counts(
        counted, 600, superbpe_transition=450, superbpe_counts=counted2
    )
    assert from_maps.merges == from_artifacts.merges == tok.merges
    with pytest.raises(ValueError, match="counted with pattern"):
        bytepair.train_from_counts(counted, 600, superbpe_transition=450, superbpe_counts=counted)


def test_files_and_iterator_agree(corpus, tmp_path):
    path = corpus("shakespeare.txt")
    tok = bytepair.train(path, 900, superbpe_transition=700, progress=False, chunk_size=4096)
    assert tok.merges == train_sb([path.read_text()], 900, 700).merges
    assert tok.pattern == "superbpe"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(superbpe_transition=255), "superbpe_transition=255"),
        (dict(superbpe_transition=700), "superbpe_transition=700"),
        (dict(superbpe_transition=300, superbpe_max_words=0), "superbpe_max_words"),
        (dict(superbpe_pattern="x"), "need superbpe_transition"),
        (dict(superbpe_transition=300, superbpe_pattern="(unclosed"), "pattern"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bytepair.train_from_iterator(["a b"], 600, progress=False, **kwargs)


# ---- command line and inspection ------------------------------------------------------


def test_cli_trains_and_reports_superwords(corpus, tmp_path):
    out = tmp_path / "tok.json"
    run = [sys.executable, "-m", "bytepair"]
    train = subprocess.run(
        run
        + ["train", str(corpus("shakespeare.txt")), "--vocab-size", "1200"]
        + ["--superbpe-transition", "1000", "-o", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "200 of them stage 2's, from vocab size 1,000 on" in train.stdout
    inspect = subprocess.run(
        run + ["inspect", str(out), "--json"], capture_output=True, text=True, check=True
    )
    info = json.loads(inspect.stdout)["superwords"]
    assert info["count"] > 50 and info["first"][0]["token"] == "', and'"
    stats = subprocess.run(
        run + ["stats", str(corpus("shakespeare.txt")), "-t", str(out), "--top", "3"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "superwords" in stats.stdout
    assert "most frequent superword tokens" in stats.stdout and "', and'" in stats.stdout
