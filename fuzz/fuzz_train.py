"""Fuzz target `train`: `bytepair.train_from_counts` on small word counts made
from fuzz bytes learns the same merges, with the same pair counts, as the
pure-Python reference (`bytepair.reference.train_trace`), and says it stopped
early exactly when the reference runs out of pairs (tests/test_train.py checks
the same on hypothesis-generated counts).

Input layout (FuzzedDataProvider): number of merges, then words (a small
alphabet from the data, so pairs repeat and ties are common) with counts that
are tiny, huge (up to 2**40) or zero.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Findings, fuzz_main  # noqa: E402

bytepair = reference = None  # imported by setup()
FINDINGS = Findings("train")
ALPHABETS = [b"ab", b"abc", b"a b", b"xyz\xc3\xa9", bytes(range(0xF0, 0x100)), b"aaaa\x00\xff"]


def setup() -> None:
    global bytepair, reference
    with atheris.instrument_imports(include=["bytepair"]):
        import bytepair
        from bytepair import reference


def word_counts(fdp: atheris.FuzzedDataProvider) -> dict[bytes, int]:
    alphabet = ALPHABETS[fdp.ConsumeIntInRange(0, len(ALPHABETS) - 1)]
    counts: dict[bytes, int] = {}
    for _ in range(fdp.ConsumeIntInRange(0, 12)):
        length = fdp.ConsumeIntInRange(1, 12)
        word = bytes(alphabet[fdp.ConsumeIntInRange(0, len(alphabet) - 1)] for _ in range(length))
        size = fdp.ConsumeIntInRange(0, 2)
        counts[word] = fdp.ConsumeIntInRange(0, (5, 1000, 1 << 40)[size])
    return counts


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    num_merges = fdp.ConsumeIntInRange(1, 40)
    counts = word_counts(fdp)
    want = [(pair, n) for pair, n, _ in reference.train_trace(counts, num_merges)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = bytepair.train_from_counts(
                counts, 256 + num_merges, num_threads=1, progress=False
            )
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        FINDINGS.exception(data, e, f"counts={counts!r} num_merges={num_merges}\n")
        return
    got = list(zip(tok.merges, tok.training_stats.merge_counts))
    if got != want:
        rank = next(
            (r for r, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want))
        )
        FINDINGS.record(
            "train_from_counts differs from the reference",
            data,
            f"counts={counts!r} num_merges={num_merges}\nfirst difference at merge {rank}: "
            f"bytepair {got[rank : rank + 1]} vs reference {want[rank : rank + 1]}",
        )
    if tok.training_stats.stopped_early != (len(want) < num_merges):
        FINDINGS.record(
            "stopped_early disagrees with the reference",
            data,
            f"counts={counts!r} num_merges={num_merges}",
        )


def seeds() -> list[bytes]:
    return [
        bytes((i * k + 7) % 256 for i in range(n))
        for k, n in ((3, 40), (11, 80), (29, 120), (1, 60))
    ]


if __name__ == "__main__":
    fuzz_main(setup, test_one_input, seeds)
