"""Fuzz target `loaders`: the file readers on mutated tokenizer files.

An input is one kind byte and a payload. Raw kinds write the payload as one
file of a valid tokenizer (the other files stay valid) and load it; structured
kinds apply edits driven by the payload to the parsed JSON of a valid file
(replace a value at some path with a hostile one, delete or add a key), which
reaches the checks behind the JSON parser far more often than byte flips do.

Contract (the loaders' docstrings): each call either returns a Tokenizer or
raises ValueError whose message names the file, or OSError; never another
exception type, a pyo3 PanicException, a crash or a hang. A loaded tokenizer
encodes and decodes a small text with its special tokens without error, and
round-trips it when all 256 bytes are tokens.

Run through run.py, or directly: python fuzz/fuzz_loaders.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import atexit
import gzip
import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    Findings,
    check_round_trip,
    edit_json,
    fuzz_main,
    message_shape,
    small_tokenizer,
)

bytepair = formats = None  # imported by setup()
FINDINGS = Findings("loaders")
# Scratch files, in memory where possible. libFuzzer ends the process with C's
# exit(), skipping atexit, so the previous run's directory is removed at start.
WORK = (
    Path("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    / f"bytepair-fuzz-loaders-{os.getuid()}"
)
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir()
atexit.register(shutil.rmtree, WORK, ignore_errors=True)
SAMPLE = "hello world <|endoftext|>It's 42 naïve 字\n"

# ---- the valid files a payload mutates ------------------------------------------


def valid_files() -> dict[str, bytes]:
    """name -> content of the small tokenizer in every format."""
    tok = small_tokenizer()
    out = Path(tempfile.mkdtemp(dir=WORK))
    tok.save(out / "tokenizer.json")
    tok.save_gpt2(out)
    tok.save_tiktoken(out / "enc.tiktoken")
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    files["enc.tiktoken.gz"] = gzip.compress(files["enc.tiktoken"], mtime=0)
    return files


VALID: dict[str, bytes] = {}


def setup() -> None:
    global bytepair, formats
    with atheris.instrument_imports(include=["bytepair", "json", "gzip", "base64"]):
        import bytepair
        from bytepair import formats

    VALID.update(valid_files())


# kind -> (file the payload replaces, how the harness loads it)
RAW_KINDS = [
    ("tokenizer.json", "hf"),
    ("vocab.json", "gpt2"),
    ("merges.txt", "gpt2"),
    ("enc.tiktoken", "tiktoken"),
    ("enc.tiktoken.json", "tiktoken"),
    ("enc.tiktoken.gz", "tiktoken_gz"),
]
JSON_KINDS = [("tokenizer.json", "hf"), ("vocab.json", "gpt2"), ("enc.tiktoken.json", "tiktoken")]


def seeds() -> list[bytes]:
    """The seed corpus: each valid file under its raw kind, and a few payloads per structured
    kind."""
    out = [bytes([k]) + VALID[name] for k, (name, _) in enumerate(RAW_KINDS)]
    for k in range(len(JSON_KINDS)):
        out += [
            bytes([len(RAW_KINDS) + k]) + bytes((i * 37 + n) % 256 for i in range(n))
            for n in (8, 32, 64)
        ]
    return out


def structured_payload(name: str, payload: bytes) -> bytes:
    fdp = atheris.FuzzedDataProvider(payload)
    doc = json.loads(VALID[name])
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        doc = edit_json(doc, fdp)
    return json.dumps(doc, ensure_ascii=fdp.ConsumeBool()).encode("utf-8", "surrogatepass")


# ---- loading and the contract -------------------------------------------------------


def write_case(name: str, content: bytes) -> Path:
    """A fresh directory with every valid file, `name` replaced by `content`."""
    d = Path(tempfile.mkdtemp(dir=WORK))
    for n, c in VALID.items():
        (d / n).write_bytes(content if n == name else c)
    if name == "enc.tiktoken.gz":
        (d / "enc.tiktoken.gz.json").write_bytes(VALID["enc.tiktoken.json"])
    return d


def loaders_for(how: str, d: Path, name: str):
    """(label, call) for every entry point that reads the mutated file."""
    calls = [("Tokenizer.load", lambda: bytepair.Tokenizer.load(d / name))]
    if how == "gpt2":
        calls.append(
            (
                "from_gpt2_files",
                lambda: bytepair.Tokenizer.from_gpt2_files(d / "vocab.json", d / "merges.txt"),
            )
        )
        calls.append(("Tokenizer.load(dir)", lambda: bytepair.Tokenizer.load(d)))
    elif how == "tiktoken":
        calls = [("from_tiktoken", lambda: bytepair.Tokenizer.from_tiktoken(d / "enc.tiktoken"))]
        calls.append(("Tokenizer.load", lambda: bytepair.Tokenizer.load(d / "enc.tiktoken")))
    elif how == "tiktoken_gz":
        calls = [
            ("from_tiktoken(.gz)", lambda: bytepair.Tokenizer.from_tiktoken(d / "enc.tiktoken.gz"))
        ]
        calls.append(
            ("Tokenizer.load(.gz)", lambda: bytepair.Tokenizer.load(d / "enc.tiktoken.gz"))
        )
    elif how == "hf":
        calls.append(("info", lambda: formats.info(d / name)))
    return calls


def has_every_byte(tok) -> bool:
    tokens = set(tok.vocab.values())
    return all(bytes([b]) in tokens for b in range(256))


def check_loaded(tok) -> None:
    """A loaded tokenizer must encode and decode a small text."""
    if isinstance(tok, dict):  # formats.info
        return
    text = SAMPLE + "".join(tok.special_tokens)
    try:
        ids = tok.encode(text, allowed_special="all")
        tok.encode_ordinary(text)
    except ValueError as e:
        if "not in the vocabulary" in str(e) and not has_every_byte(tok):
            return  # encoding a byte the file gives no token is an error, as it should be
        raise
    back = tok.decode(ids)
    # Text no match of a custom pattern covers is dropped (as in tiktoken), and a
    # pipeline's rules may strip it (lstrip / rstrip, as in HF).
    if tok.pattern in ("gpt2", "cl100k", "o200k") and tok.pipeline is None:
        assert back == text, f"round trip lost text: {text!r} -> {back!r}"


def run_one(label: str, call, data: bytes, names: list[str]) -> None:
    try:
        tok = call()
    except ValueError as e:
        if type(e) is not ValueError:
            FINDINGS.exception(
                data, e, f"{label}: a ValueError subclass, not a ValueError naming the file\n"
            )
        elif not any(n in str(e) for n in names):
            FINDINGS.record(
                f"ValueError without the file name in {label}: {message_shape(e)}", data, str(e)
            )
        return
    except OSError:
        return
    except RecursionError as e:
        FINDINGS.exception(data, e, f"{label}\n")
        return
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        FINDINGS.exception(data, e, f"{label}\n")
        return
    try:
        check_loaded(tok)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001
        FINDINGS.exception(data, e, f"{label}: loaded, then encode/decode failed\n")
        return
    if isinstance(tok, dict):  # formats.info
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a save that warns writes what loads otherwise
            check_round_trip(tok, WORK)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001
        FINDINGS.exception(data, e, f"{label}: loaded, then save -> load failed\n")


def test_one_input(data: bytes) -> None:
    if not data:
        return
    kind, payload = data[0] % (len(RAW_KINDS) + len(JSON_KINDS)), data[1:]
    if kind < len(RAW_KINDS):
        name, how = RAW_KINDS[kind]
        content = payload
    else:
        name, how = JSON_KINDS[kind - len(RAW_KINDS)]
        content = structured_payload(name, payload)
    d = write_case(name, content)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for label, call in loaders_for(how, d, name):
                run_one(
                    label, call, data, [name, "enc.tiktoken", "merges.txt", "vocab.json", d.name]
                )
    finally:
        for p in d.iterdir():
            p.unlink()
        d.rmdir()


if __name__ == "__main__":
    fuzz_main(setup, test_one_input, seeds)
