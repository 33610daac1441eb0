"""Fuzz target `encode`: bytepair's ids equal tiktoken's, and decoding gives
the text back, on strings built from fuzz bytes (`common.text_from`: any
UTF-8, lone surrogates, and the pieces the patterns and the special-token scan
care about, special tokens included).

Tokenizers: GPT-2 (read from ../shared/corpora/cs336 by `from_gpt2_files`,
against tiktoken's own loader of the same files), and OpenAI's cl100k_base and
o200k_base when the bpe-openai wheel is installed (against tiktoken Encodings
of the same ranks and tiktoken's published patterns). The first input byte
picks the tokenizer.

Checks, per input: encode with allowed_special="all", encode with the default
(both raise ValueError, or give the same ids), encode_ordinary and
encode_batch equal tiktoken; decode(encode(s)) == s with lone surrogates
replaced as tiktoken replaces them.
"""

from __future__ import annotations

import gzip
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Findings, fuzz_main, gpt2_files, replace_surrogates, text_from, tiktoken_gpt2  # noqa: E402

FINDINGS = Findings("encode")
PAIRS: list = []  # (name, bytepair.Tokenizer, tiktoken.Encoding), filled by setup()


def openai_pair(name: str):
    """(bytepair Tokenizer, tiktoken Encoding) of an OpenAI encoding shipped
    by bpe-openai, or None when it is not installed."""
    try:
        import bpe_openai
    except ImportError:
        return None
    path = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not path.is_file():
        return None
    import tiktoken.load
    import tiktoken_ext.openai_public as op

    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}),
    ):
        plain = Path(tmp) / f"{name}.tiktoken"
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        ranks = tiktoken.load.load_tiktoken_bpe(str(plain))
    with mock.patch.object(op, "load_tiktoken_bpe", lambda *a, **k: ranks):
        params = getattr(op, name)()
    import bytepair

    return bytepair.Tokenizer.from_tiktoken(path), tiktoken.Encoding(**params)


def setup() -> None:
    with atheris.instrument_imports(include=["bytepair"]):
        import bytepair

    pairs = PAIRS
    files = gpt2_files()
    if files:
        pairs.append(("gpt2", bytepair.Tokenizer.from_gpt2_files(*files), tiktoken_gpt2(*files)))
    else:
        print(
            "encode: GPT-2 files absent (../shared/corpora/cs336); skipping GPT-2", file=sys.stderr
        )
    for name in ("cl100k_base", "o200k_base"):
        pair = openai_pair(name)
        if pair:
            pairs.append((name, *pair))
    if not pairs:
        sys.exit("encode: no tokenizer to compare with tiktoken (no corpora, no bpe-openai)")


def outcome(fn, *args, **kwargs):
    """fn's result, or the name of the exception type it raised (ValueError
    for a disallowed special token is part of the contract)."""
    try:
        return fn(*args, **kwargs)
    except ValueError:
        return "ValueError"


def compare(data: bytes, name: str, tok, enc, text: str) -> None:
    checks = [
        (
            "encode(allowed_special='all')",
            lambda: tok.encode(text, allowed_special="all"),
            lambda: enc.encode(text, allowed_special="all"),
        ),
        ("encode()", lambda: outcome(tok.encode, text), lambda: outcome(enc.encode, text)),
        ("encode_ordinary", lambda: tok.encode_ordinary(text), lambda: enc.encode_ordinary(text)),
        (
            "encode_batch",
            lambda: tok.encode_batch([text], num_threads=1, allowed_special="all")[0],
            lambda: enc.encode(text, allowed_special="all"),
        ),
    ]
    for label, ours, theirs in checks:
        got, want = ours(), theirs()
        if got != want:
            FINDINGS.record(
                f"{name}: {label} differs from tiktoken",
                data,
                f"text={text!r}\nours={got}\ntiktoken={want}",
            )
    ids = tok.encode(text, allowed_special="all")
    back, expected = tok.decode(ids), replace_surrogates(text)
    if back != expected:
        FINDINGS.record(f"{name}: decode(encode(s)) != s", data, f"text={text!r}\ndecoded={back!r}")


def test_one_input(data: bytes) -> None:
    if not data:
        return
    name, tok, enc = PAIRS[data[0] % len(PAIRS)]
    text = text_from(data[1:])
    try:
        compare(data, name, tok, enc, text)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        FINDINGS.exception(data, e, f"{name}: text={text!r}\n")


def seeds() -> list[bytes]:
    texts = [
        "Hello world<|endoftext|>It's 2024!",
        "  leading and trailing  \n\n",
        "naïve café 東京 Россия 😀",
        "def f(self):\n\treturn 0x7fff  # comment\n",
        "a" * 300,
        "1234567890 $1,299.99",
        "\r\n\r\n x y'S 'll",
    ]
    return [bytes([k]) + t.encode() for k in range(len(PAIRS)) for t in texts] + [
        b"\x00\xf8\x00\xf8\x3a"
    ]


if __name__ == "__main__":
    fuzz_main(setup, test_one_input, seeds)
