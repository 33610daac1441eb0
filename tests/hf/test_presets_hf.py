"""The presets split text as HF tokenizers' ``Split(Regex(pattern), "isolated")``
does with the same regex (Oniguruma, the engine a tokenizer.json's Split runs
on), on corpus slices and generated text. Above all Llama 3's and Qwen2's
regexes (the ``llama3`` and ``qwen2`` presets, chosen when a tokenizer.json
holds them): whitespace runs with ``\\r\\n`` at a text's end, where they split
unlike cl100k's; digit runs; contractions in any case; letters of every
script; emoji. (test_pretokenize.py checks every preset against Python's
``regex``; this is the check against the engine those tokenizers ship with.)
"""

from __future__ import annotations

import pytest

from bytepair.formats import hf_pattern

tokenizers = pytest.importorskip("tokenizers")
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

from conftest import byte_tokenizer  # noqa: E402

NEW = ["llama3", "qwen2"]
PRESETS = ["cl100k", "o200k", *NEW]
_SPLITTERS: dict = {}


def hf_split(pattern: str, text: str) -> list[str]:
    """HF's pre-tokens of `text` under an Isolated Split of the preset's regex."""
    if pattern not in _SPLITTERS:
        # The spelling bytepair writes into a tokenizer.json (cl100k's without the
        # possessive interval, which Oniguruma reads otherwise).
        regex = tokenizers.Regex(hf_pattern(pattern))
        _SPLITTERS[pattern] = tokenizers.pre_tokenizers.Split(regex, "isolated")
    return [piece for piece, _ in _SPLITTERS[pattern].pre_tokenize_str(text)]


_TOKENIZERS: dict = {}


def ours(pattern: str, text: str) -> list[str]:
    if pattern not in _TOKENIZERS:
        _TOKENIZERS[pattern] = byte_tokenizer(pattern)
    return _TOKENIZERS[pattern].pretokenize(text)


def assert_same(pattern: str, text: str, where: str = "") -> None:
    got, want = ours(pattern, text), hf_split(pattern, text)
    if got == want:
        return
    i = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
    raise AssertionError(
        f"{pattern} {where}: pre-token {i} differs: bytepair {got[max(0, i - 2) : i + 3]!r} "
        f"vs HF {want[max(0, i - 2) : i + 3]!r}"
    )


@pytest.mark.parametrize(
    "name", ["enwiki.txt", "code.txt", "multilingual.txt", "shakespeare.txt", "enwik8_head.txt"]
)
def test_presets_equal_hf_split_on_corpus(corpus_text, name):
    for at in (0.0, 0.5):
        text = corpus_text(name, 200_000, at=at)
        for pattern in PRESETS:
            assert_same(pattern, text, f"{name} at {at}")
        # Each paragraph as a text of its own: its end is a text's end.
        for paragraph in text.split("\n\n")[:200]:
            for pattern in NEW:
                assert_same(pattern, paragraph + "\n \n\t", f"{name} paragraph")


WHITESPACE = [" ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\n ", "\x0b", "\x0c", "\u3000"]
WHITESPACE += ["\xa0", "\x85", "\u2028", "\u2029", "\u1680", "\u202f", "\x1c", "\x1f"]
ATOMS = WHITESPACE + [
    "a",
    "Z",
    "the",
    " word",
    "'s",
    "'S",
    "'re",
    "'LL",
    "'ve",
    "'D",
    "'m",
    "'t",
    "'ſ",
    "'x",
    "''",
    "1",
    "12",
    "123",
    "1234567",
    "٣٤",
    "½",
    "²",
    ".",
    "..",
    "!?",
    "/",
    "(",
    "_",
    "é",
    "e\u0301",
    "\u0301",
    "ǅ",
    "ß",
    "Σ",
    "字",
    "한",
    "ا",
    "ก",
    "😀",
    "👍🏻",
    "\u200d",
]
texts = st.lists(
    st.one_of(
        st.sampled_from(ATOMS),
        st.text(st.characters(codec="utf-8"), max_size=3),
        st.builds(
            lambda p, n: p * n,
            st.sampled_from(["1", " ", "\n", "a", "\r\n", "!"]),
            st.integers(1, 140),
        ),
    ),
    max_size=30,
).map("".join)


@hypothesis.settings(max_examples=400, deadline=None)
@hypothesis.given(texts)
@hypothesis.example("a\n  ")
@hypothesis.example("x \r\n\t")
@hypothesis.example("it'S 12345\n\n  ")
def test_presets_equal_hf_split_on_generated_text(text):
    for pattern in PRESETS:
        assert_same(pattern, text)
