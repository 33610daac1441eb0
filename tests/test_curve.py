"""`bytepair curve` (bytepair/inspection/curve.py): prefixes of a merge table are the
tokenizers a smaller training run gives, and the curve on Tiny Shakespeare
(the first 90% of the lines to train, the rest held out) has the expected
shape and numbers; the PNG and CSV are checked byte for byte where it counts.
"""

from __future__ import annotations

import csv
import struct

import pytest

import bytepair
from bytepair.cli import main
from bytepair.cli.inspection import parse_sizes
from bytepair.inspection.curve import compression_curve, prefix_tokenizer
from bytepair.inspection.report import text_stats

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def split(tmp_path_factory, corpus):
    """Tiny Shakespeare cut at a line end 90% in: (train path, held-out path, held-out text)."""
    data = corpus("shakespeare.txt").read_text(encoding="utf-8")
    cut = data.rfind("\n", 0, int(0.9 * len(data))) + 1
    d = tmp_path_factory.mktemp("curve")
    (d / "train.txt").write_text(data[:cut], encoding="utf-8")
    (d / "heldout.txt").write_text(data[cut:], encoding="utf-8")
    return d / "train.txt", d / "heldout.txt", data[cut:]


def test_prefix_is_what_a_smaller_training_run_learns(split):
    train, heldout, text = split
    big = bytepair.train(train, 1280, special_tokens=["<|endoftext|>"], progress=False)
    small = bytepair.train(train, 400, special_tokens=["<|endoftext|>"], progress=False)
    prefix = prefix_tokenizer(big, len(small.merges))
    assert prefix.merges == small.merges
    assert prefix.vocab_size == small.vocab_size == 400
    sample = text[:20_000] + "<|endoftext|>"
    assert (
        prefix.encode(sample, allowed_special="all")[:-1]
        == small.encode(sample, allowed_special="all")[:-1]
    )
    # the ids are the big tokenizer's: the special token keeps its id
    assert prefix.special_tokens == big.special_tokens
    with pytest.raises(ValueError, match="outside"):
        prefix_tokenizer(big, len(big.merges) + 1)


def test_compression_curve_shape_and_values(split):
    train, _, text = split
    tok = bytepair.train(train, 1280, progress=False)
    points = compression_curve(tok, [text], [1280, 256, 512, 1024])
    assert [p.vocab_size for p in points] == [256, 512, 1024, 1280]
    assert [p.merges for p in points] == [0, 256, 768, 1024]
    assert points[0].stats.tokens == len(text.encode())  # bytes only: one token per byte
    for p in points:
        assert p.stats.tokens == len(prefix_tokenizer(tok, p.merges).encode_ordinary(text))
    bpt = [p.stats.bytes_per_token for p in points]
    assert bpt == sorted(bpt) and bpt[0] == 1.0
    # measured: 1024 merges cut the held-out sequence 2.36x against characters
    # (2.59x on the training text itself; the cl100k pattern gives 2.57x held out)
    assert points[-1].stats.chars_per_token == pytest.approx(2.36, abs=0.05)
    with pytest.raises(ValueError, match="outside"):
        compression_curve(tok, [text], [2048])


def _png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_cli_curve_on_tiny_shakespeare(split, tmp_path, capsys):
    train, heldout, text = split
    out = tmp_path / "curve.png"
    assert (
        main(
            [
                "curve",
                str(train),
                "--vocab-sizes",
                "256,512,1024,1280",
                "--eval",
                str(heldout),
                "-o",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    assert _png_size(out) == (800, 500)
    with open(tmp_path / "curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["vocab_size"]) for r in rows] == [256, 512, 1024, 1280]
    tok = bytepair.train(train, 1280, progress=False)
    for r in rows:
        want = text_stats(prefix_tokenizer(tok, int(r["merges"])), [text])
        assert int(r["tokens"]) == want.tokens
        assert int(r["bytes"]) == want.bytes and int(r["chars"]) == want.chars
        assert float(r["bytes_per_token"]) == pytest.approx(want.bytes_per_token, abs=1e-6)
    assert float(rows[-1]["chars_per_token"]) == pytest.approx(2.36, abs=0.05)
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["vocab", "merges", "tokens", "bytes/token", "chars/token"]
    assert table[-1].split()[:2] == ["1280", "1024"]


def test_cli_curve_stops_early_and_errors(tmp_path, capsys):
    src = tmp_path / "tiny.txt"
    src.write_text("hug pug hug pug\n")
    out = tmp_path / "c.png"
    assert (
        main(
            [
                "curve",
                str(src),
                "--vocab-sizes",
                "257,300",
                "--eval",
                str(src),
                "-o",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert (
        "no pair left at vocab size" in captured.err and "replaces the larger sizes" in captured.err
    )
    with open(tmp_path / "c.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert int(rows[0]["vocab_size"]) == 257 and int(rows[-1]["vocab_size"]) < 300
    assert (
        main(
            [
                "curve",
                str(src),
                "--vocab-sizes",
                "300",
                "--eval",
                str(tmp_path / "nope.txt"),
                "-o",
                str(out),
            ]
        )
        == 1
    )
    assert "nope.txt" in capsys.readouterr().err


def test_parse_sizes():
    assert parse_sizes("512,1024, 2k,") == [512, 1024, 2048]
    with pytest.raises(Exception, match="not a vocabulary size"):
        parse_sizes("512,lots")
