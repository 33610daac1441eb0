"""Fuzz target `pretokenize`: `Tokenizer.pretokenize` (the Rust pre-tokenizer,
src/pretokenize.rs) equals Python's `regex.findall` with the same pattern, for
the gpt2, cl100k and o200k presets, as tests/test_pretokenize.py checks on
generated text.

The text comes from fuzz bytes (`common.text_from`, no lone surrogates: the
pre-tokenizer sees UTF-8). Characters newer than Python's Unicode database are
dropped: the Rust regex tables (Unicode 16) and the regex module's (17) differ
on them, the known xfail of test_pretokenize.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PRESETS, Findings, fuzz_main, newer_than_unicodedata, text_from  # noqa: E402

FINDINGS = Findings("pretokenize")
TOKENIZERS: dict = {}  # preset -> merge-less bytepair.Tokenizer
COMPILED: dict = {}  # preset -> compiled Python regex


def setup() -> None:
    import regex

    with atheris.instrument_imports(include=["bytepair"]):
        import bytepair
        from bytepair import reference

    for p in PRESETS:
        TOKENIZERS[p] = bytepair.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=p)
        COMPILED[p] = regex.compile(reference.resolve_pattern(p))


def clean_text(data: bytes) -> str:
    text = text_from(data, surrogates=False)
    return "".join(c for c in text if not newer_than_unicodedata(c))


def first_difference(got: list[str], want: list[str]) -> str:
    i = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
    near = slice(max(0, i - 2), i + 3)
    return f"pre-token {i}: bytepair {got[near]!r} vs regex {want[near]!r}"


def test_one_input(data: bytes) -> None:
    text = clean_text(data)
    for pattern in PRESETS:
        try:
            got = TOKENIZERS[pattern].pretokenize(text)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - pyo3's PanicException is a BaseException
            FINDINGS.exception(data, e, f"{pattern}: text={text!r}\n")
            continue
        want = COMPILED[pattern].findall(text)
        if got != want:
            FINDINGS.record(
                f"{pattern}: pretokenize differs from regex.findall",
                data,
                f"text={text!r}\n{first_difference(got, want)}",
            )


def seeds() -> list[bytes]:
    texts = [
        "Hello world, it's 2024!",
        "  \n\n  x\r\n\r\ny",
        "we'LL they'Re 'ſ x'\u212a",
        "a.\n/b }\n/* c */",
        "naïve 東京 Россия ǅemal ʰ 😀👍🏻",
        "1234567 ٣½Ⅻ² $1,299.99",
        "\u3000\xa0\x85\u2028 \t\x0b\x0c",
        "HTTPServer __init__ self.assertEqual",
        "x" * 200 + " " * 100,
    ]
    return [t.encode() for t in texts]


if __name__ == "__main__":
    fuzz_main(setup, test_one_input, seeds)
