"""`train`'s inputs: the files of a data mixture grouped by weight, and each
group counted into a `_core.WordCounter` (runs of plain local text files in one
call to the Rust reader; anything else through `counts.sources.count_file`)."""

from __future__ import annotations

import itertools
import math
import numbers
import os
from collections.abc import Mapping

from bytepair import _core
from bytepair.counts.sources import (
    CountSpec,
    compression_of,
    count_file,
    expand_inputs,
    is_plain_local,
    is_remote,
    local_path,
)
from bytepair.progress import ProgressBar


def count_inputs(
    counter: _core.WordCounter,
    paths: list[str],
    spec: CountSpec,
    num_threads: int | None,
    chunk_size: int,
    bar: ProgressBar,
    sizes: dict[str, int],
) -> int:
    """Count `paths` into `counter` (`counts.sources.count_file`); runs of local
    plain text files go to the Rust reader in one call, so many small files
    share its threads. Returns the bytes of text read (decompressed, for
    compressed files). The bar moves by file sizes (`sizes`), as stored."""
    done = 0
    for streamed, run in itertools.groupby(
        paths, key=lambda p: spec.format == "text" and is_plain_local(p)
    ):
        run = list(run)
        before = bar.n
        if streamed:
            counter.count_files(
                [local_path(p) for p in run],
                num_threads,
                chunk_size,
                spec.errors == "replace",
                lambda n: bar.update_to(before + n),
            )
            # Pipes (/dev/stdin, <(...)) have no size: the bytes read are the input.
            done += max(sum(sizes[p] for p in run), bar.n - before)
            continue
        for path in run:
            at = bar.n
            # Decompressed bytes are not file bytes: a compressed file moves the bar once, when
            # done.
            on_bytes = None if compression_of(path) else (lambda n: bar.update_to(at + n))
            done += count_file(
                counter, path, spec, num_threads=num_threads, on_bytes=on_bytes
            ).bytes
            bar.update_to(at + sizes[path])
    return done


def weight_groups(
    paths: list[str], weights: Mapping[str, float] | None
) -> list[tuple[float, list[str]]]:
    """`paths` grouped by weight, in input order within each group: (1, the
    inputs no key names) first, then one group per key of `weights`."""
    if not weights:
        return [(1, paths)]
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"weights must be a mapping {{path_or_glob: weight}}, not {type(weights).__name__}"
        )
    owner: dict[str, str] = {}
    for key, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not math.isfinite(w) or w < 0:
            raise ValueError(f"weight of {key!r} must be a finite number >= 0, got {w!r}")
        named = {_identity(p) for p in expand_inputs(key)}
        hits = [p for p in paths if _identity(p) in named]
        if not hits:
            raise ValueError(f"weight of {key!r}: it names none of the inputs")
        owner.update((p, key) for p in hits if p not in owner)
    groups = [(1, [p for p in paths if p not in owner])]
    groups += [(weights[k], [p for p in paths if owner.get(p) == k]) for k in weights]
    return [(w, g) for w, g in groups if g]


def _identity(path: str) -> str:
    """One spelling per input: URLs as given, local paths resolved (``./a.txt`` is ``a.txt``)."""
    return path if is_remote(path) else os.path.realpath(local_path(path))
