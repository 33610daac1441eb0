"""Training: count pre-tokens, then learn the merge table.

The two stages are separate entry points so counts made elsewhere can be
trained on (`train_from_counts`):

1. counting (`bytepair._core.WordCounter`): split the text at special-token
   strings (hard boundaries, never counted), pre-tokenize with the pattern, and
   count each distinct pre-token as bytes, in parallel, streaming files;
2. the merge loop (``WordCounter.train``): BPE (Sennrich et al., 2016) with
   incremental pair counts, a reverse index and a lazy max-heap; ties go to the
   lexicographically greatest ``(bytes(A), bytes(B))``.

Id layout of the result (docs/design.md): ids 0..255 are the bytes, id 256 + r is the
merge of rank r, special tokens follow the last merge in the order given.
"""

from __future__ import annotations

import numbers
import os
import sys
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bytepair import _core
from bytepair.counts.sources import check_special_tokens
from bytepair.progress import ProgressBar
from bytepair.tokenizer import Tokenizer

if TYPE_CHECKING:
    from bytepair.counts.artifact import WordCounts

# train_from_iterator hands texts to Rust in batches of about this many characters.
_BATCH_CHARS = 16 << 20


@dataclass
class TrainingStats:
    """What a training run did; attached to the result as ``tokenizer.training_stats``.

    ``tokens`` is the length of the counted text (special tokens excluded) in
    tokens after all merges, so ``input_bytes / tokens`` is bytes per token.
    """

    input_bytes: int = 0
    pre_tokens: int = 0
    tokens: int = 0
    distinct_words: int = 0
    merges: int = 0
    stopped_early: bool = False
    count_seconds: float = 0.0
    merge_seconds: float = 0.0
    merge_counts: list[int] = field(default_factory=list, repr=False)
    # What a `max_memory` budget dropped while counting (0 when nothing was):
    # distinct words, their pre-tokens, and the highest minimum count applied.
    pruned_words: int = 0
    pruned_pre_tokens: int = 0
    pruned_min_count: int = 0

# A memory budget below this leaves too little room for the counts of one
# block of text per thread, and would prune nearly every word.
MIN_MAX_MEMORY = 64 << 20


def _check_max_memory(max_memory: int | None) -> int | None:
    if max_memory is None:
        return None
    if isinstance(max_memory, bool) or not isinstance(max_memory, numbers.Integral) or max_memory < MIN_MAX_MEMORY:
        raise ValueError(f"max_memory={max_memory!r} must be None or a number of bytes of at least {MIN_MAX_MEMORY:,} (64 MiB)")
    return int(max_memory)


def _note_pruning(counter: _core.WordCounter, stats: TrainingStats, max_memory: int | None) -> None:
    """Copy what the budget dropped into `stats`, with a warning when it dropped anything."""
    stats.pruned_words, stats.pruned_pre_tokens, stats.pruned_min_count = counter.pruned
    if stats.pruned_words:
        share = stats.pruned_pre_tokens / max(stats.pruned_pre_tokens + counter.total(), 1)
        warnings.warn(
            f"to stay within max_memory={max_memory:,} bytes, counting dropped {stats.pruned_words:,} distinct "
            f"words seen fewer than {stats.pruned_min_count} times ({stats.pruned_pre_tokens:,} pre-tokens, "
            f"{share:.2%} of all); the counts, and so the merges, are approximate",
            stacklevel=3,
        )


def _check_arguments(vocab_size: int, special_tokens: Sequence[str], trace: int = 0) -> int:
    """Validate and return the number of merges to learn."""
    if isinstance(trace, bool) or not isinstance(trace, int) or trace < 0:
        raise ValueError(f"trace={trace!r} must be a non-negative integer (merges to print)")
    special_tokens = check_special_tokens(special_tokens)
    if isinstance(vocab_size, numbers.Integral) and not isinstance(vocab_size, bool):
        vocab_size = int(vocab_size)  # numpy integers are accepted as the int they hold
    if not isinstance(vocab_size, int) or vocab_size < 256 + len(special_tokens):
        raise ValueError(
            f"vocab_size={vocab_size!r} is too small: it must be at least 256 (the bytes) "
            f"+ {len(special_tokens)} (special tokens) = {256 + len(special_tokens)}"
        )
    return vocab_size - 256 - len(special_tokens)


def _check_files(files: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    paths = [os.fspath(f) for f in files]
    if not paths:
        raise ValueError("no input files given")
    for p in paths:
        if os.path.isdir(p):
            raise IsADirectoryError(f"{p}: is a directory, expected a text file")
        if not os.path.exists(p):
            raise FileNotFoundError(f"{p}: no such file")
    return paths


def _show_progress(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else bool(progress)


def _require_text(counter: _core.WordCounter, source: str) -> None:
    """An empty corpus is a mistake (wrong file, wrong glob), not a tokenizer."""
    if counter.total() == 0:
        raise ValueError(f"{source}: empty corpus, no text to train on (0 pre-tokens outside special tokens)")


def _describe_files(paths: Sequence[str]) -> str:
    if len(paths) == 1:
        return paths[0]
    return f"{len(paths)} files ({', '.join(paths[:3])}{', ...' if len(paths) > 3 else ''})"


def _learn(
    counter: _core.WordCounter,
    num_merges: int,
    special_tokens: Sequence[str],
    pattern: str,
    stats: TrainingStats,
    *,
    num_threads: int | None,
    progress: bool,
    trace: int = 0,
) -> Tokenizer:
    """Run the merge loop on `counter` and build the Tokenizer; print the
    first `trace` merges (`bytepair.inspection.report.print_trace`)."""
    stats.distinct_words = len(counter)
    stats.pre_tokens = counter.total()
    start = time.perf_counter()
    with ProgressBar(num_merges, "merges", unit="merge", enabled=progress) as bar:
        learned, stopped_early, stats.tokens = counter.train(num_merges, num_threads, bar.update_to)
    stats.merge_seconds = time.perf_counter() - start
    stats.merges = len(learned)
    stats.stopped_early = stopped_early
    stats.merge_counts = [c for _, _, c in learned]
    if stopped_early:
        warnings.warn(
            f"no pair left to merge after {len(learned)} merges: the vocabulary has "
            f"{256 + len(learned) + len(special_tokens)} ids, fewer than the {num_merges + 256 + len(special_tokens)} asked for",
            stacklevel=3,
        )
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for rank, (a, b, _) in enumerate(learned):
        merges.append((vocab[a], vocab[b]))
        vocab[256 + rank] = vocab[a] + vocab[b]
    first_special = 256 + len(learned)
    specials = {t: first_special + k for k, t in enumerate(special_tokens)}
    tok = Tokenizer._trusted(vocab, merges, specials, pattern)
    tok.training_stats = stats
    if trace:
        from bytepair.inspection.report import print_trace

        print_trace(tok, trace)
    return tok


def train(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    pattern: str = "gpt2",
    num_threads: int | None = None,
    progress: bool | None = None,
    errors: str = "strict",
    chunk_size: int = 1 << 20,
    trace: int = 0,
    max_memory: int | None = None,
) -> Tokenizer:
    """Train a byte-level BPE tokenizer on text files.

    Each file is one document, read as a UTF-8 stream in blocks of `chunk_size`
    bytes (never whole into memory) and cut only where every preset pattern ends a
    pre-token, so the result is the same for any chunk size and thread count.

    Args:
        files: one path or a list of paths.
        vocab_size: total ids wanted: 256 bytes + merges + special tokens.
        special_tokens: strings such as ``"<|endoftext|>"``; they split the text,
            are never counted, and get the ids after the last merge, in order.
        pattern: pre-tokenization regex or preset (``gpt2``, ``cl100k``, ``o200k``).
        num_threads: worker threads for counting (default: one per core).
        progress: show progress bars on stderr (default: when it is a terminal).
        errors: ``"strict"`` (bytes that are not UTF-8 raise) or ``"replace"``.
        chunk_size: bytes read per block (memory per worker thread).
        trace: print the first `trace` merges to stdout when training ends, one
            line each with the pair count, e.g. ``step 1: ('u', 'g') -> 'ug'
            (count 20)``; bytes that are not printable are escaped (``\\n``,
            ``\\xe2``). 0 (default) prints nothing.
        max_memory: a budget in bytes (at least 64 MiB) for the word counts
            while counting; None (default): no bound, counts exact. Memory grows
            with the distinct words, not the corpus size; past the budget the
            rarest words are dropped (every word seen fewer than 2 times so far,
            then 4, 8...: lossy counting, Manku and Motwani 2002), so a corpus
            of more distinct words than RAM still trains. What was dropped is in
            ``training_stats`` (``pruned_*``) and a warning. Peak memory is
            about the budget plus the merge loop's copy of the kept words.

    Returns:
        Tokenizer, with ``training_stats`` (a `TrainingStats`).

    Raises:
        FileNotFoundError / IsADirectoryError: a path is missing or a directory.
        ValueError: vocab_size too small, bad special tokens, an invalid pattern,
            invalid UTF-8 (message names the file and byte offset), an empty
            corpus (no text outside special tokens), or a negative `trace`.
        KeyboardInterrupt: Ctrl-C, within about 0.1 s.

    Warns:
        UserWarning: no pair was left before `vocab_size` was reached.

    >>> import bytepair, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"; _ = p.write_text("hug " * 10 + "pug " * 5)
    >>> bytepair.train(p, 258, progress=False).merges
    [(b'u', b'g'), (b'h', b'ug')]
    """
    num_merges = _check_arguments(vocab_size, special_tokens, trace)
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors={errors!r}: expected 'strict' or 'replace'")
    paths = _check_files(files)
    max_memory = _check_max_memory(max_memory)
    show = _show_progress(progress)
    stats = TrainingStats(input_bytes=sum(os.path.getsize(p) for p in paths))
    counter = _core.WordCounter(pattern, list(special_tokens), max_memory=max_memory)
    start = time.perf_counter()
    with ProgressBar(stats.input_bytes, "counting", unit="B", scale=True, enabled=show) as bar:
        counter.count_files(paths, num_threads, chunk_size, errors == "replace", bar.update_to)
    # Pipes (/dev/stdin, <(...)) have no size: the bytes read are the input.
    stats.input_bytes = max(stats.input_bytes, bar.n)
    stats.count_seconds = time.perf_counter() - start
    _require_text(counter, _describe_files(paths))
    _note_pruning(counter, stats, max_memory)
    return _learn(
        counter, num_merges, special_tokens, pattern, stats, num_threads=num_threads, progress=show, trace=trace
    )


def train_from_iterator(
    texts: Iterable[str],
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    pattern: str = "gpt2",
    num_threads: int | None = None,
    progress: bool | None = None,
    trace: int = 0,
    max_memory: int | None = None,
) -> Tokenizer:
    """Train on an iterable of strings, each an independent document (pre-tokens
    never span two texts). Texts are consumed in batches, so a generator over a
    huge dataset is fine. Arguments (including `trace` and `max_memory`) and
    errors as `train`.

    >>> import bytepair
    >>> bytepair.train_from_iterator(["low lower", "newest widest"], 257, progress=False).merges
    [(b'w', b'e')]
    """
    num_merges = _check_arguments(vocab_size, special_tokens, trace)
    max_memory = _check_max_memory(max_memory)
    show = _show_progress(progress)
    stats = TrainingStats()
    counter = _core.WordCounter(pattern, list(special_tokens), max_memory=max_memory)
    start = time.perf_counter()
    with ProgressBar(None, "counting", unit="B", scale=True, enabled=show) as bar:
        done_before = 0
        batch: list[str] = []
        size = 0

        def flush() -> None:
            nonlocal done_before, batch, size
            counter.count_texts(batch, num_threads, lambda done: bar.update_to(done_before + done))
            done_before = bar.n
            batch, size = [], 0

        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must yield str, got {type(text).__name__}")
            batch.append(text)
            size += len(text)
            if size >= _BATCH_CHARS:
                flush()
        if batch:
            flush()
        stats.input_bytes = done_before
    stats.count_seconds = time.perf_counter() - start
    _require_text(counter, "the texts")
    _note_pruning(counter, stats, max_memory)
    return _learn(
        counter, num_merges, special_tokens, pattern, stats, num_threads=num_threads, progress=show, trace=trace
    )


def train_from_counts(
    word_counts: "Mapping[str | bytes, int] | WordCounts",
    vocab_size: int,
    *,
    special_tokens: Sequence[str] | None = None,
    pattern: str | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    trace: int = 0,
) -> Tokenizer:
    """Train from word counts made elsewhere: a `bytepair.WordCounts` artifact
    (from `bytepair.count`, on any engine), or a mapping whose keys are
    pre-tokens, taken as given (str keys are UTF-8 encoded; they are not
    pre-tokenized again). Counts may exceed 2**32 (u64).
    `trace=N` prints the first N merges with their pair counts, as in `train`.

    With a WordCounts, `pattern` and `special_tokens` default to the artifact's
    (the tokenizer keeps its pattern), and the parts stream into Rust as Arrow
    buffers after their SHA-256 is checked. With a mapping they default to
    ``"gpt2"`` and none; `pattern` is stored in the tokenizer for encoding.

    Raises:
        ValueError: a count that is negative or not an integer (names the word),
            vocab_size too small, or a WordCounts counted with another pattern or
            other special tokens than those given. (Counts without any pair, even
            none at all, give the byte-level vocabulary and the "no pair left"
            warning.)
        OverflowError: sum of count x word length reaches 2**64 (a pair count
            could overflow u64).

    >>> import bytepair
    >>> counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    >>> [a + b for a, b in bytepair.train_from_counts(counts, 260).merges]
    [b'ug', b'un', b'hug', b'pun']
    >>> _ = bytepair.train_from_counts(counts, 260, trace=2)
    step 1: ('u', 'g') -> 'ug' (count 20)
    step 2: ('u', 'n') -> 'un' (count 16)
    """
    from bytepair.counts.artifact import WordCounts

    if isinstance(word_counts, WordCounts):
        return _train_from_artifact(word_counts, vocab_size, special_tokens, pattern,
                                    num_threads=num_threads, progress=progress, trace=trace)
    special_tokens = () if special_tokens is None else special_tokens
    pattern = "gpt2" if pattern is None else pattern
    num_merges = _check_arguments(vocab_size, special_tokens, trace)
    items = []
    total_bytes = 0
    for word, count in word_counts.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0 or count >= 1 << 64:
            raise ValueError(f"count of word {word!r} must be an integer in [0, 2**64), got {count!r}")
        if not isinstance(word, (str, bytes, bytearray, memoryview)):
            # bytes(5) would be five NUL bytes.
            raise TypeError(f"word {word!r} must be a str or bytes, not {type(word).__name__}")
        word = word.encode("utf-8") if isinstance(word, str) else bytes(word)
        items.append((word, count))
        total_bytes += count * len(word)
    if total_bytes >= 1 << 64:
        # Every pair count and token total is at most this sum, so below it u64 is exact.
        raise OverflowError(
            f"the counts add up to {total_bytes} bytes of text, beyond 2**64: pair counts would overflow u64"
        )
    counter = _core.WordCounter(pattern, list(special_tokens))
    counter.add_counts(items)
    stats = TrainingStats()
    return _learn(
        counter, num_merges, special_tokens, pattern, stats,
        num_threads=num_threads, progress=_show_progress(progress), trace=trace,
    )


def _train_from_artifact(
    counts: "WordCounts",
    vocab_size: int,
    special_tokens: Sequence[str] | None,
    pattern: str | None,
    *,
    num_threads: int | None,
    progress: bool | None,
    trace: int,
) -> Tokenizer:
    """`train_from_counts` on a word-counts artifact (see there)."""
    if pattern is not None and _core.resolve_pattern(pattern) != counts.pattern:
        raise ValueError(
            f"{counts.path}: counted with pattern {counts.pattern_name or counts.pattern!r}, "
            f"not {pattern!r}: words split by another pattern would train a different tokenizer"
        )
    if special_tokens is not None and tuple(special_tokens) != counts.special_tokens:
        raise ValueError(
            f"{counts.path}: counted with special tokens {list(counts.special_tokens)!r}, "
            f"not {list(special_tokens)!r} (text was split at the special tokens when counting)"
        )
    special_tokens = counts.special_tokens
    num_merges = _check_arguments(vocab_size, special_tokens, trace)
    counter = _core.WordCounter(counts.pattern, list(special_tokens))
    counts.load_into(counter)
    t = counts.totals
    stats = TrainingStats(input_bytes=t.bytes)
    return _learn(
        counter, num_merges, special_tokens, counts.pattern_name or counts.pattern, stats,
        num_threads=num_threads, progress=_show_progress(progress), trace=trace,
    )
