"""Every subcommand, every numeric flag and every file argument, given bad
values: each failure is one line in CLI words (exit 1), or argparse's usage
error (exit 2); never a traceback, never a Python keyword argument
(``vocab_size=``, ``allow_pickle=``), never an ``internal error``
(``train --threads -1``, ``train --vocab-size 10**20`` and ``decode`` of an
.npz or of an empty file once showed tracebacks).

The walk reads the flags from the parser itself, so a new flag is covered as
soon as it exists; a new subcommand fails `test_every_subcommand_has_a_baseline`
until it is given a valid invocation below."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import warnings

import numpy as np
import pytest

import bytepair
from bytepair.cli.args import input_path
from bytepair.cli.main import build_parser, main

# A valid invocation of each subcommand, run in the fixture folder.
BASELINES = {
    ("train",): ["train", "t.txt", "--vocab-size", "270", "-o", "out.json", "-q"],
    ("encode",): ["encode", "t.txt", "-t", "tok.json", "-o", "out.npy", "-q"],
    ("decode",): ["decode", "ids.npy", "-t", "tok.json", "-o", "out.txt"],
    ("count",): ["count", "t.txt", "-o", "c2", "-q", "--workers", "1"],
    ("counts", "inspect"): ["counts", "inspect", "c"],
    ("counts", "merge"): ["counts", "merge", "c", "c", "-o", "m"],
    ("counts", "export"): ["counts", "export", "c", "--tsv", "out.tsv"],
    ("shards", "inspect"): ["shards", "inspect", "ds"],
    ("convert",): ["convert", "tok.json", "out.tiktoken"],
    ("info",): ["info", "tok.json"],
    ("inspect",): ["inspect", "tok.json"],
    ("show",): ["show", "hello", "-t", "tok.json"],
    ("stats",): ["stats", "t.txt", "-t", "tok.json"],
    ("curve",): ["curve", "t.txt", "--vocab-sizes", "260,270", "--eval", "t.txt", "-o", "c.csv"],
}
# More invocations whose flags differ: a dataset, training from counts.
VARIANTS = [
    ["encode", "t.txt", "-t", "tok.json", "-o", "ds2/", "-q"],
    ["train", "--from-counts", "c", "--vocab-size", "270", "-o", "out.json", "-q"],
]
BAD_NUMBERS = ["-1", "0", "-0", "1" + "0" * 20, "abc", "nan", "inf", "1e3", ""]
INPUTS = {"t.txt", "tok.json", "ids.npy", "c", "ds"}  # the fixture's inputs (not outputs)
BAD_FILES = ["missing", "empty", "garbage", "dir", "x.npz", "nul.npy", "float.npy", "/dev/null"]
# A Python keyword argument in a message: `vocab_size=`, `allow_pickle=`.
KEYWORD = re.compile(r"(?<![\w-])[a-z]+(?:_[a-z]+)+=")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("misuse")
    (d / "t.txt").write_text("hello world, the quick brown fox\n" * 20, encoding="utf-8")
    tok = bytepair.train_from_iterator(["hello world the quick brown fox"] * 5, 270, progress=False)
    tok.save(d / "tok.json")
    bytepair.count(d / "t.txt", d / "c", progress=False, num_workers=1)
    np.save(d / "ids.npy", np.array(tok.encode("hello world"), dtype=np.uint32))
    np.savez(d / "x.npz", a=np.arange(3))
    (d / "empty").write_bytes(b"")
    (d / "garbage").write_bytes(bytes(range(256)) * 2)
    (d / "nul.npy").write_bytes(b"\x93NUMPY\x01\x00" + b"\0" * 20)
    np.save(d / "float.npy", np.array([1.5, 2.0]))
    (d / "dir").mkdir()
    old = os.getcwd()
    os.chdir(d)
    try:
        assert _run(["encode", "t.txt", "-t", "tok.json", "-o", "ds/", "-q"])[0] == 0
        yield d
    finally:
        os.chdir(old)


def _run(argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of `bytepair argv`, in this process."""
    err = io.StringIO()
    with (
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        try:
            status = main(argv)
        except SystemExit as e:
            status = e.code
    return status, err.getvalue()


def _leaves(parser: argparse.ArgumentParser, prefix=()):
    """(command path, parser) of every runnable subcommand."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _leaves(sub, (*prefix, name))


def _check_failure(argv: list[str], status: int, err: str) -> None:
    where = f"bytepair {' '.join(argv)}"
    assert status in (0, 1, 2), f"{where}: exit {status}\n{err}"
    assert "Traceback" not in err and "internal error" not in err, f"{where}:\n{err}"
    if status == 1:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("bytepair "), f"{where}:\n{err}"
        assert not KEYWORD.search(lines[0]), f"{where}: Python words in {lines[0]!r}"
    if status == 2:
        assert re.search(r": error: ", err.strip().splitlines()[-1]), f"{where}:\n{err}"


def test_every_subcommand_has_a_baseline():
    assert {path for path, _ in _leaves(build_parser())} == set(BASELINES)


def test_the_baselines_succeed(folder):
    for argv in [*BASELINES.values(), *VARIANTS]:
        status, err = _run(argv)
        assert status == 0, f"bytepair {' '.join(argv)}: {err}"


def _numeric_flags(parser):
    for a in parser._actions:
        if a.option_strings and a.type not in (None, str, input_path) and not a.choices:
            yield a


def test_bad_numbers_in_every_numeric_flag(folder):
    parsers = dict(_leaves(build_parser()))
    tried = 0
    for argv in [*BASELINES.values(), *VARIANTS]:
        path = next(p for p in parsers if tuple(argv[: len(p)]) == p)
        for action in _numeric_flags(parsers[path]):
            for value in BAD_NUMBERS:
                if "=" in (action.metavar or ""):
                    value = f"t.txt={value}"  # --weight GLOB=W, --special-token-id T=ID
                bad = [*argv, action.option_strings[-1], value]
                _check_failure(bad, *_run(bad))
                tried += 1
    assert tried > 150


def test_bad_files_in_every_file_argument(folder):
    tried = 0
    for argv in [*BASELINES.values(), *VARIANTS]:
        for i, arg in enumerate(argv):
            if arg not in INPUTS:
                continue
            for bad_file in BAD_FILES:
                bad = [*argv[:i], bad_file, *argv[i + 1 :]]
                _check_failure(bad, *_run(bad))
                tried += 1
    assert tried > 100


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "t.txt", "--vocab-size", "-1"], "argument --vocab-size: -1 must be at least 0"),
        (["train", "t.txt", "--vocab-size", "300"], ""),
        (
            ["train", "t.txt", "--vocab-size", "1" + "0" * 20],
            "argument --vocab-size: 100000000000000000000 must be at most 4,294,967,296",
        ),
        (["train", "t.txt", "--vocab-size", "100"], "--vocab-size 100 is too small"),
        (["train", "t.txt", "--vocab-size", "300", "--threads", "-1"], "--threads: -1 must be"),
        (["train", "t.txt", "--vocab-size", "300", "--max-memory", "1M"], "--max-memory: 1M is"),
        (["decode", "x.npz", "-t", "tok.json"], "an .npz archive, not a .npy array"),
        (["decode", "empty", "-t", "tok.json"], "empty: an empty file, not a .npy array of ids"),
        (["decode", "t.txt", "-t", "tok.json"], "not a .npy file"),
        (["count", "t.txt", "-o", "c3", "--parts", "1" + "0" * 20], "--parts: 1000"),
        (["curve", "t.txt", "--vocab-sizes", "1" + "0" * 20, "--eval", "t.txt"], "32-bit"),
    ],
)
def test_cli_misuse_messages(folder, argv, message):
    status, err = _run([*argv, "-o", "out.json"] if argv[0] == "train" else argv)
    if not message:
        assert status == 0, err
        return
    _check_failure(argv, status, err)
    assert status in (1, 2) and message in err, err


def test_an_unexpected_error_is_one_line_with_the_traceback_on_demand(folder, monkeypatch):
    """A bug (not the input's fault) is still one line; BYTEPAIR_TRACEBACK=1 re-raises it."""
    cli_main = sys.modules[main.__module__]

    def broken(args):
        raise KeyError("a bug")

    monkeypatch.setattr(cli_main, "cmd_decode", broken)
    status, err = _run(["decode", "ids.npy", "-t", "tok.json"])
    assert status == 1 and "internal error: KeyError" in err and len(err.splitlines()) == 1
    monkeypatch.setenv("BYTEPAIR_TRACEBACK", "1")
    with pytest.raises(KeyError):
        main(["decode", "ids.npy", "-t", "tok.json"])


def test_api_messages_in_cli_words():
    from bytepair.cli.args import in_cli_words

    parser = dict(_leaves(build_parser()))[("train",)]
    assert (
        in_cli_words("vocab_size=3 is too small; num_threads=0; max_memory=1", parser)
        == "--vocab-size 3 is too small; --threads 0; --max-memory 1"
    )
    assert in_cli_words("my_vocab_size=3", parser) == "my_vocab_size=3"
