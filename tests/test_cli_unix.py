"""The command line as a Unix tool: `-` is stdin or stdout
for every file argument, a path is read once (so pipes and `<(...)` work), a
broken pipe ends the command quietly, results go to stdout and messages to
stderr, and `-q` silences the messages."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import bytepair

TEXT = (
    "The quick brown fox jumps over the lazy dog. " * 40 + "It's 1234 o'clock, naïve café!\n"
) * 30
CLI = [sys.executable, "-m", "bytepair"]


def run(*argv: str, stdin: bytes = b"", check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([*CLI, *argv], input=stdin, capture_output=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr.decode()
    return result


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("unix")
    (root / "text.txt").write_text(TEXT, encoding="utf-8")
    tok = bytepair.train([root / "text.txt"], 300, special_tokens=["<|endoftext|>"], progress=False)
    tok.save(root / "tok.json")
    tok.save_tiktoken(root / "tok.tiktoken")
    return root


def test_train_reads_stdin_and_writes_the_tokenizer_to_stdout(files):
    piped = run(
        "train",
        "-",
        "--vocab-size",
        "300",
        "--special-token",
        "<|endoftext|>",
        "-o",
        "-",
        stdin=TEXT.encode(),
    )
    doc = json.loads(piped.stdout)
    assert doc == json.loads((files / "tok.json").read_text(encoding="utf-8"))
    # The summary is a message here (stdout holds the tokenizer); it counts the piped bytes.
    assert f"{len(TEXT.encode()) / 1024:.1f} KiB" in piped.stderr.decode()
    quiet = run("train", "-", "--vocab-size", "300", "-o", "-", "-q", stdin=TEXT.encode())
    assert quiet.stderr == b"" and json.loads(quiet.stdout)["model"]["type"] == "BPE"


def test_encode_to_stdout_and_decode_from_stdin_round_trip(files):
    tok = str(files / "tok.json")
    encoded = run("encode", "-", "-t", tok, "-o", "-", "-q", stdin=TEXT.encode())
    assert encoded.stderr == b""
    ids = np.load(io.BytesIO(encoded.stdout))
    assert ids.dtype == np.uint16 and ids.tolist() == bytepair.Tokenizer.load(tok).encode(TEXT)
    decoded = run("decode", "-", "-t", tok, stdin=encoded.stdout)
    assert decoded.stdout == TEXT.encode()
    loud = run("encode", "-", "-t", tok, "-o", str(files / "ids.npy"), stdin=TEXT.encode())
    assert loud.stdout == b"" and b"tokens" in loud.stderr  # the message goes to stderr


def test_encode_file_on_threads_gives_the_ids_of_the_whole_text(files):
    """`bytepair encode FILE`: the core reads a regular file in ~8 MiB chunks
    cut at safe cuts and encodes their segments on --threads threads; the ids
    are those of the whole text, and those of reading it from a pipe."""
    text = TEXT * 170 + "tail without a newline"
    big = files / "big.txt"
    big.write_text(text, encoding="utf-8")
    assert big.stat().st_size > 8 << 20, "more than one chunk"
    tok = str(files / "tok.json")
    for threads in ("1", "2"):
        run(
            "encode",
            str(big),
            "-t",
            tok,
            "-o",
            str(files / f"big{threads}.npy"),
            "--threads",
            threads,
            "-q",
        )
    one, two = np.load(files / "big1.npy"), np.load(files / "big2.npy")
    assert np.array_equal(one, two) and one.tolist() == bytepair.Tokenizer.load(tok).encode(text)
    piped = run("encode", "-", "-t", tok, "-o", "-", "-q", stdin=text.encode())
    assert np.array_equal(np.load(io.BytesIO(piped.stdout)), one)


@pytest.mark.parametrize("source", ["file", "pipe"])
def test_encode_special_tokens_and_bad_bytes_in_cli_words(files, source):
    """Both readers (the core's for a file, Python's for a pipe) refuse
    special-token text and bytes that are not UTF-8 with the file and the byte
    offset (a file's is exact), and apply --special and --errors alike."""
    tok = bytepair.Tokenizer.load(files / "tok.json")
    text = "one document " * 10 + "<|endoftext|>another"
    data = text.encode() + b"\xff and more\n"

    def encode(content: bytes, *flags: str) -> subprocess.CompletedProcess:
        path = files / f"special-{source}.txt"
        path.write_bytes(content)
        where = ("-",) if source == "pipe" else (str(path),)
        return run(
            "encode",
            *where,
            "-t",
            str(files / "tok.json"),
            "-o",
            "-",
            *flags,
            stdin=content if source == "pipe" else b"",
            check=False,
        )

    refused = encode(text.encode())
    message = refused.stderr.decode()
    assert (
        refused.returncode == 1 and '"<|endoftext|>"' in message and "--special allow" in message
    ), message
    if source == "file":
        assert f"at byte offset {text.index('<|endoftext|>')}" in message, message
    bad = encode(data, "--special", "text")
    assert (
        bad.returncode == 1
        and f"invalid UTF-8 at byte offset {len(text.encode())}" in bad.stderr.decode()
    )
    assert "--errors replace" in bad.stderr.decode()
    for flags, expected in (
        (
            ("--special", "allow", "--errors", "replace"),
            tok.encode(data.decode("utf-8", "replace"), allowed_special="all"),
        ),
        (
            ("--special", "text", "--errors", "replace"),
            tok.encode_ordinary(data.decode("utf-8", "replace")),
        ),
    ):
        out = encode(data, *flags)
        assert out.returncode == 0, out.stderr.decode()
        assert np.load(io.BytesIO(out.stdout)).tolist() == expected


def _fifo_with(tmp_path, data: bytes) -> str:
    """A named pipe that yields `data` once to its first reader, as `<(cat FILE)` does."""
    path = str(tmp_path / "pipe")
    os.mkfifo(path)

    def feed() -> None:
        with open(path, "wb") as f:
            f.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return path


@pytest.mark.parametrize("name", ["tok.json", "tok.tiktoken"])
def test_a_tokenizer_is_read_once_from_a_pipe(files, tmp_path, name):
    """`info <(cat tok.json)` read the path twice and found it empty the second time."""
    data = (files / name).read_bytes()
    from_fifo = run("info", _fifo_with(tmp_path, data), check=False)
    if name.endswith(".tiktoken"):
        # A rank file alone holds no pattern: the error says so, it does not fail to read.
        assert (
            from_fifo.returncode == 1 and b"holds no pre-tokenization pattern" in from_fifo.stderr
        )
        return
    assert from_fifo.returncode == 0, from_fifo.stderr
    assert b"vocab size      300" in from_fifo.stdout
    from_stdin = run("info", "-", stdin=data)
    assert from_stdin.stdout.replace(b"/dev/stdin", b"X") == from_fifo.stdout.replace(
        str(tmp_path / "pipe").encode(), b"X"
    )
    converted = run("convert", str(files / "tok.tiktoken"), "-")
    assert json.loads(converted.stdout) == json.loads(data)


def test_a_broken_pipe_ends_quietly(files, tmp_path):
    """`bytepair decode ... | head` printed a BrokenPipeError traceback."""
    tok = bytepair.Tokenizer.load(files / "tok.json")
    # Past one block of ids (2**20): a write after the reader has gone fails for
    # sure (a single write may still fill the pipe before it closes).
    ids = np.array(tok.encode(TEXT), dtype=np.uint16)
    np.save(tmp_path / "ids.npy", np.tile(ids, (3 << 20) // len(ids)))
    decode = subprocess.Popen(
        [*CLI, "decode", str(tmp_path / "ids.npy"), "-t", str(files / "tok.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert decode.stdout.read(10) == TEXT.encode()[:10]
    decode.stdout.close()  # the reader goes away, as `head` does
    assert decode.wait(timeout=60) == 141  # 128 + SIGPIPE, as a Unix tool killed by it
    assert decode.stderr.read() == b""


def test_show_and_counts_export_use_stdin_and_stdout(files, tmp_path):
    shown = run("show", "-t", str(files / "tok.json"), "-", stdin=b"hello world")
    assert b"bytes/token" in shown.stdout
    run("count", "-", "-o", str(tmp_path / "counts"), "-q", stdin=TEXT.encode())
    tsv = run("counts", "export", str(tmp_path / "counts"), "--tsv", "-").stdout.decode()
    words = dict(line.rsplit("\t", 1) for line in tsv.splitlines())
    assert int(words[" quick"]) == TEXT.count(" quick")


def test_encode_refuses_special_token_text_unless_told(files):
    """The default let special-token text in a file become special ids, unlike
    tiktoken's encode and ours: now it fails in CLI words."""
    tok = bytepair.Tokenizer.load(files / "tok.json")
    text = "one document<|endoftext|>another"
    refused = run(
        "encode", "-", "-t", str(files / "tok.json"), "-o", "-", stdin=text.encode(), check=False
    )
    assert refused.returncode == 1 and refused.stdout == b""
    message = refused.stderr.decode()
    assert message.count("\n") == 1 and '"<|endoftext|>"' in message, message
    assert (
        "--special allow" in message
        and "--special text" in message
        and "allowed_special" not in message
    )
    for policy, expected in (
        ("allow", tok.encode(text, allowed_special="all")),
        ("text", tok.encode_ordinary(text)),
    ):
        out = run(
            "encode",
            "-",
            "-t",
            str(files / "tok.json"),
            "-o",
            "-",
            "--special",
            policy,
            stdin=text.encode(),
        )
        assert np.load(io.BytesIO(out.stdout)).tolist() == expected
    assert tok.encode(text, allowed_special="all") != tok.encode_ordinary(text)
