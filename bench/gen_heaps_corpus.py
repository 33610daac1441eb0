"""Generate a corpus of any size whose distinct words keep growing as real text's
do (Heaps' law), from the paragraphs of every corpus file.

Why: the corpora here hold 130 MB of unique text; repeating it stops the growth
of distinct words at ~1 M (bench/README.md, Heaps' law), while a real corpus of
1 TB holds ~7e8 (V = K * n**beta, K ~3.5, beta ~0.73 for GPT-2's pattern, n in
pre-tokens). Memory at scale is about that tail, so a benchmark of it needs
text whose tail grows.

How: every output document is a paragraph of the mix (``all``: every corpus
file, blank-line separated) drawn uniformly at random, and gets a *variant*
v >= 1 drawn from a Zipf law, P(v) ~ v**-a. Variant 1 is the paragraph as it
is; variant v > 1 appends a suffix made from v to each *rare* word of the
paragraph (a run of letters, or of digits, seen at most `--rare` times in the
whole mix): letters (``"Quetzal"`` -> ``"Quetzalbq"``) to a letter run, digits
(``"1871"`` -> ``"187137"``) to a digit run, so the suffixed word stays one
pre-token of the gpt2, cl100k and o200k patterns. Frequent words, punctuation,
spacing and document lengths are those of the real text; only the tail of rare
words is renamed, so the same rare word in documents of the same variant is the
same new word, and new words recur with the skew real rare words have. With
Zipf variants, distinct words grow as D**(1/a) in the documents drawn once D is
well past the paragraphs of the mix (each (paragraph, variant) pair brings its
rare words; the variants in use grow as D**(1/a)), so ``a = 1/beta``; ``--rare``
sets the constant. Defaults (a = 1.36, rare <= 3) were fitted on prefixes of a
generated 4 GB (the fit is printed with ``--fit``).

Each document is followed by a blank line. Output files are ``heaps-NNNNN.txt``
of `--file-size` bytes (the last one shorter), written by `--workers` processes
(file i from seed (seed, i): the same arguments give the same bytes).

Usage::

    python bench/gen_heaps_corpus.py /work/big/heaps --size 30G --file-size 1G
    python bench/gen_heaps_corpus.py /tmp/h --size 2G --fit   # + distinct words per file, K, beta
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import common
from common import parse_size

# Rare words: runs of letters or of digits (a suffix of the same kind keeps the
# word one pre-token in every preset pattern; `_` and mixed runs are left alone).
WORD = re.compile(r"[^\W\d_]+|\d+")
LETTERS = "abcdefghijklmnopqrstuvwxyz"
BATCH = 4096  # documents drawn per numpy call


def _templates(rare: int) -> tuple[list[bytes], list[bytes | None]]:
    """(paragraphs as bytes, their templates): a template is the paragraph with
    ``%(l)s`` after each rare letter run and ``%(d)s`` after each rare digit run
    (``%`` escaped), or None when the paragraph has no rare word."""
    paragraphs = [p.decode("utf-8") for p in common._paragraphs(common.MIXES["all"])]
    counts = collections.Counter()
    for p in paragraphs:
        counts.update(WORD.findall(p))
    plain, templates = [], []
    for p in paragraphs:
        pieces, at, found = [], 0, False
        for m in WORD.finditer(p):
            if counts[m.group()] <= rare:
                pieces.append(p[at : m.end()].replace("%", "%%"))
                pieces.append("%(d)s" if m.group()[0].isdigit() else "%(l)s")
                at, found = m.end(), True
        pieces.append(p[at:].replace("%", "%%"))
        plain.append(p.encode("utf-8") + b"\n\n")
        templates.append(("".join(pieces) + "\n\n").encode("utf-8") if found else None)
    return plain, templates


def suffixes(v: int) -> dict[bytes, bytes]:
    """The suffixes of variant v > 1: v - 1 in base 26 letters and in decimal."""
    n, letters = v - 1, ""
    while n:
        n, r = divmod(n, 26)
        letters = LETTERS[r] + letters
    return {b"l": letters.encode(), b"d": str(v - 1).encode()}


_STATE: dict = {}


def _init(rare: int) -> None:
    _STATE["plain"], _STATE["templates"] = _templates(rare)


def write_file(path: str, size: int, seed: tuple[int, int], zipf: float) -> tuple[str, int, int]:
    """Write `size` bytes of documents to `path` (via a temporary name).
    Returns (path, bytes, documents)."""
    import numpy as np

    plain, templates = _STATE["plain"], _STATE["templates"]
    rng = np.random.default_rng(list(seed))
    written = docs = 0
    tmp = path + ".partial"
    with open(tmp, "wb", buffering=1 << 22) as f:
        while written < size:
            picks = rng.integers(0, len(plain), BATCH)
            variants = rng.zipf(zipf, BATCH)
            for i, v in zip(picks.tolist(), variants.tolist()):
                t = templates[i]
                doc = plain[i] if v == 1 or t is None else t % suffixes(v)
                if written + len(doc) > size:
                    doc = doc[: size - written]
                    doc = doc.decode("utf-8", "ignore").encode("utf-8")  # no cut inside a character
                f.write(doc)
                written += len(doc)
                docs += 1
                if written >= size or not doc:
                    break
    os.rename(tmp, path)
    return path, written, docs


def generate(
    out: Path, size: int, file_size: int, seed: int, zipf: float, rare: int, workers: int
) -> list[Path]:
    """Write the corpus (files already there are kept: a rerun resumes)."""
    out.mkdir(parents=True, exist_ok=True)
    n = math.ceil(size / file_size)
    jobs = []
    for i in range(n):
        path = out / f"heaps-{i:05d}.txt"
        if not path.exists():
            jobs.append((str(path), min(file_size, size - i * file_size), (seed, i), zipf))
    start = time.perf_counter()
    with ProcessPoolExecutor(workers, initializer=_init, initargs=(rare,)) as pool:
        for path, nbytes, docs in pool.map(write_file, *zip(*jobs)) if jobs else ():
            common.log(
                f"wrote {path}: {nbytes / 1e9:.2f} GB, {docs:,} documents "
                f"({time.perf_counter() - start:.0f} s)"
            )
    return [out / f"heaps-{i:05d}.txt" for i in range(n)]


def fit(paths: list[Path], pattern: str) -> None:
    """Count the files one after another into one counter (gpt2 pattern): distinct
    words V after each, and V = K * n**beta fitted over them (n = pre-tokens)."""
    import numpy as np

    from bytepair import _core

    counter = _core.WordCounter(pattern, [])
    xs, ys = [], []
    for p in paths:
        counter.count_files([str(p)])
        n, v = counter.total(), len(counter)
        xs.append(math.log(n))
        ys.append(math.log(v))
        print(
            f"{p.name}: pre-tokens {n:,} distinct {v:,} "
            f"(Heaps 3.51 n^0.734: {3.51 * n**0.734:,.0f})"
        )
    if len(xs) >= 2:
        beta, log_k = np.polyfit(xs, ys, 1)
        print(f"fit over {len(xs)} points: K = {math.exp(log_k):.2f}, beta = {beta:.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("out", type=Path, help="folder to write heaps-NNNNN.txt files into")
    p.add_argument("--size", type=parse_size, default=parse_size("1G"))
    p.add_argument("--file-size", type=parse_size, default=parse_size("1G"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--zipf", type=float, default=1.36, help="Zipf exponent a of the variants (1/beta)"
    )
    p.add_argument("--rare", type=int, default=3, help="a word seen at most this often is renamed")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--fit", action="store_true", help="count the files and fit Heaps' law")
    p.add_argument("--pattern", default="gpt2")
    args = p.parse_args()
    paths = generate(
        args.out, args.size, args.file_size, args.seed, args.zipf, args.rare, args.workers
    )
    if args.fit:
        fit(paths, args.pattern)


if __name__ == "__main__":
    sys.exit(main())
