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
merge of rank r, special tokens follow the last merge in the order given. Special
tokens given at fixed ids (a mapping, as Llama 3 reserves its 256) must fall in that
block of ids after the merges; the others fill its free ids in order.

Training options beyond the vocabulary size (the ones HF tokenizers and
sentencepiece users ask for):

* ``min_frequency=k``: no merge of a pair counted fewer than k times;
* ``max_token_length=n``: no token longer than n bytes (longer pairs are skipped);
* ``reserve_special_tokens=N``: N placeholder special tokens
  ``<|reserved_special_token_{i}|>``;
* ``base=tokenizer``: extend an existing tokenizer, keeping its ids, merges,
  special tokens and pattern (or tokenizer.json pipeline, through which the
  corpus is then counted); new merges get ids after its largest id;
* ``weights={path_or_glob: w}``: a data mixture, each source's counts times w.
"""

from __future__ import annotations

import numbers
import os
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from bytepair import _core
from bytepair.counts.sources import (
    CountSpec,
    check_inputs,
    expand_inputs,
    infer_format,
    input_size,
)
from bytepair.encoding.text import surrogates_replaced, utf8_word
from bytepair.progress import ProgressBar
from bytepair.tokenizer import Tokenizer
from bytepair.train_inputs import count_inputs, weight_groups
from bytepair.train_plan import TrainingStats, TrainPlan, plan_training, special_ids

if TYPE_CHECKING:
    from bytepair.counts.artifact import WordCounts

# train_from_iterator hands texts to Rust in batches of about this many characters.
_BATCH_CHARS = 16 << 20


# A memory budget below this leaves too little room for the counts of one
# block of text per thread, and would prune nearly every word.
MIN_MAX_MEMORY = 64 << 20


def _check_max_memory(max_memory: int | None) -> int | None:
    if max_memory is None:
        return None
    if (
        isinstance(max_memory, bool)
        or not isinstance(max_memory, numbers.Integral)
        or max_memory < MIN_MAX_MEMORY
    ):
        raise ValueError(
            f"max_memory={max_memory!r} must be None or a number of bytes of at least "
            f"{MIN_MAX_MEMORY:,} (64 MiB)"
        )
    return int(max_memory)


def _note_pruning(counter: _core.WordCounter, stats: TrainingStats, max_memory: int | None) -> None:
    """Copy what the budget dropped into `stats`, with a warning when it dropped anything."""
    stats.pruned_words, stats.pruned_pre_tokens, stats.pruned_min_count = counter.pruned
    if stats.pruned_words:
        share = stats.pruned_pre_tokens / max(stats.pruned_pre_tokens + counter.total(), 1)
        warnings.warn(
            f"to stay within max_memory={max_memory:,} bytes, counting dropped "
            f"{stats.pruned_words:,} distinct words seen fewer than {stats.pruned_min_count} times "
            f"({stats.pruned_pre_tokens:,} pre-tokens, {share:.2%} of all); the counts, and so the "
            "merges, are approximate",
            stacklevel=3,
        )


def _show_progress(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else bool(progress)


def _require_text(counter: _core.WordCounter, source: str) -> None:
    """An empty corpus is a mistake (wrong file, wrong glob), not a tokenizer."""
    if counter.total() == 0:
        raise ValueError(
            f"{source}: empty corpus, no text to train on (0 pre-tokens outside special tokens)"
        )


def _describe_files(paths: Sequence[str]) -> str:
    if len(paths) == 1:
        return paths[0]
    return f"{len(paths)} files ({', '.join(paths[:3])}{', ...' if len(paths) > 3 else ''})"


def _learn(
    counter: _core.WordCounter,
    plan: TrainPlan,
    stats: TrainingStats,
    *,
    num_threads: int | None,
    progress: bool,
) -> Tokenizer:
    """Run the merge loop on `counter` and build the Tokenizer; print the
    first `plan.trace` new merges (`bytepair.inspection.report.trace_lines`)."""
    stats.distinct_words = len(counter)
    stats.pre_tokens = counter.total()
    base = plan.base
    extension = (
        {}
        if base is None
        else {
            "base": base._core,
            "base_tokens": [(i, b) for b, i in base.mergeable_ranks.items()],
            "first_new_id": plan.next_id,
        }
    )
    start = time.perf_counter()
    with ProgressBar(plan.num_merges, "merges", unit="merge", enabled=progress) as bar:
        learned, stop, stats.tokens = counter.train(
            # Beyond these the core's integers overflow; no run comes near them
            # (ids are 32-bit, counts 64-bit), so the bounds change nothing.
            min(plan.num_merges, max(0, (1 << 32) - plan.next_id)),
            num_threads,
            bar.update_to,
            min_frequency=min(plan.min_frequency, (1 << 64) - 1),
            max_token_length=None
            if plan.max_token_length is None
            else min(plan.max_token_length, 1 << 32),
            **extension,
        )
    stats.merge_seconds = time.perf_counter() - start
    stats.merges = len(learned)
    stats.base_ids = 0 if base is None else base.vocab_size
    stats.stopped_early = stop is not None
    stats.stop_reason = stop
    stats.merge_counts = [c for _, _, c in learned]
    if base is None:
        vocab, merges, specials = {i: bytes([i]) for i in range(256)}, [], {}
    else:
        vocab, merges, specials = dict(base.vocab), list(base.merges), dict(base.special_tokens)
    for rank, (a, b, _) in enumerate(learned):
        merges.append((vocab[a], vocab[b]))
        vocab[plan.next_id + rank] = vocab[a] + vocab[b]
    specials |= special_ids(plan, plan.next_id + len(learned))
    pipeline = (
        None
        if plan.pipeline is None
        else plan.pipeline.with_tokens(sorted(specials, key=specials.__getitem__))
    )
    tok = Tokenizer._trusted(vocab, merges, specials, plan.pattern, pipeline)
    tok.training_stats = stats
    if stop is not None:
        _warn_stopped(stop, plan, tok.vocab_size)
    if plan.trace:
        from bytepair.inspection.report import trace_lines

        for line in trace_lines(
            merges[len(merges) - len(learned) :], stats.merge_counts, plan.trace
        ):
            print(line)
        sys.stdout.flush()
    return tok


def _warn_stopped(stop: str, plan: TrainPlan, vocab_size: int) -> None:
    if stop == "min_frequency":
        why = f"the best pair left counts fewer than min_frequency={plan.min_frequency}"
    else:
        why = "no pair left to merge" + (
            f" within max_token_length={plan.max_token_length}" if plan.max_token_length else ""
        )
    warnings.warn(
        f"{why} after {vocab_size - (plan.vocab_size - plan.num_merges)} merges: the vocabulary "
        f"has {vocab_size} ids, fewer than the {plan.vocab_size} asked for",
        stacklevel=4,
    )


def train(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    vocab_size: int,
    *,
    special_tokens: Sequence[str] | Mapping[str, int] = (),
    reserve_special_tokens: int = 0,
    pattern: str | None = None,
    base: Tokenizer | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    weights: Mapping[str, float] | None = None,
    format: str | None = None,
    text_field: str = "text",
    num_threads: int | None = None,
    progress: bool | None = None,
    errors: str = "strict",
    chunk_size: int = 1 << 20,
    trace: int = 0,
    max_memory: int | None = None,
) -> Tokenizer:
    """Train a byte-level BPE tokenizer on files.

    Reads whatever `bytepair.count` reads, with the same rules and errors:
    text files (each one document, streamed in blocks of `chunk_size` bytes
    and cut only where the pattern ends a pre-token, so the result is the same
    for any chunk size and thread count), ``.gz``/``.bz2``/``.xz``/``.zst``
    files, JSON Lines and Parquet (one record a document), folders (every
    non-hidden file below, sorted), globs (``data/**/*.jsonl``) and fsspec URLs.

    Args:
        files: one input or a list (paths, folders, globs, URLs).
        vocab_size: total ids wanted: 256 bytes (or the base's ids) + merges +
            special tokens (reserved ones included).
        special_tokens: strings such as ``"<|endoftext|>"``; they split the
            text, are never counted, and get the ids after the last merge, in
            order. A mapping ``{token: id}`` fixes ids instead (None: the next
            free id); they must lie in that block of ids after the merges (Llama 3's layout:
            ``vocab_size=128256`` and specials at 128000..128255).
        reserve_special_tokens: add this many placeholder special tokens,
            ``<|reserved_special_token_0|>``, ``..._1|>``..., after the given
            ones (names already given are skipped); vocab_size counts them.
        pattern: pre-tokenization regex or preset (``gpt2``, the default,
            ``cl100k``, ``o200k``); with `base`, the base's (a different one
            raises).
        base: a Tokenizer to extend (``Tokenizer.load``, ``bytepair.get_encoding``):
            its ids, merges, special tokens and pattern are kept, each word of
            the corpus is first split by its merges, and
            ``vocab_size - base.vocab_size`` new merges (and special tokens)
            are learned on top with the usual tie-break, with ids after the
            base's largest id. Text never needs more tokens than with the
            base. A pair whose bytes are already a base token is not merged.
            A base with a tokenizer.json pipeline (Qwen's NFC, DeepSeek V3's
            splits, RoBERTa's prefix space...) counts the corpus through it,
            as it encodes (special tokens with its added-token rules), and
            the result keeps it, so `save` writes it back.
        min_frequency: no merge of a pair counted fewer times (HF's
            ``min_frequency``); training stops there, with a warning.
        max_token_length: no token longer than this many bytes (HF's
            ``max_token_length``, in bytes here); longer pairs are skipped, not
            counted as merges. A base's own tokens are kept whatever their length.
        weights: a data mixture, ``{path_or_glob: w}``: the word counts of the
            inputs each key names (a file, folder or glob; the first key that
            names an input wins) are multiplied by the float ``w`` and rounded
            to integers; other inputs count once. ``training_stats.sources``
            lists each source's bytes and weight.
        format: ``text``, ``jsonl`` or ``parquet``; default: from the file
            extensions (``.jsonl``, ``.parquet``, compressed or not), else text.
        text_field: the JSON key / Parquet column holding the text.
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
        FileNotFoundError: an input, or a glob that matches nothing.
        ValueError: vocab_size too small, bad special tokens or fixed ids, an
            invalid pattern, invalid UTF-8 (message names the file and byte
            offset), a bad JSON line or Parquet column (names the file and
            record), an empty corpus (no text outside special tokens), a
            weight that is negative or names no input, a negative `trace`.
        KeyboardInterrupt: Ctrl-C, within about 0.1 s.

    Warns:
        UserWarning: training stopped before `vocab_size` (no pair left, or
        none counted `min_frequency` times).

    >>> import bytepair, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"; _ = p.write_text("hug " * 10 + "pug " * 5)
    >>> bytepair.train(p, 258, progress=False).merges
    [(b'u', b'g'), (b'h', b'ug')]
    """
    plan = plan_training(
        vocab_size,
        special_tokens,
        reserve_special_tokens=reserve_special_tokens,
        pattern=pattern,
        base=base,
        trace=trace,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors={errors!r}: expected 'strict' or 'replace'")
    paths = expand_inputs(files)
    check_inputs(paths)
    spec = CountSpec(
        plan.pattern, tuple(plan.split_at), format or infer_format(paths), text_field, errors
    )
    groups = weight_groups(paths, weights)
    max_memory = _check_max_memory(max_memory)
    show = _show_progress(progress)
    stats = TrainingStats()
    counter = plan.new_counter(max_memory)
    start = time.perf_counter()
    sizes = {p: input_size(p) for p in paths}
    with ProgressBar(sum(sizes.values()), "counting", unit="B", scale=True, enabled=show) as bar:
        for weight, group in groups:
            part = counter if weight == 1 else plan.new_counter(max_memory)
            done = count_inputs(part, group, spec, num_threads, chunk_size, bar, sizes)
            stats.input_bytes += done
            stats.sources.append((_describe_files(group), done, weight))
            if part is not counter:
                counter.add_scaled(part, weight)
    stats.count_seconds = time.perf_counter() - start
    _require_text(counter, _describe_files(paths))
    _note_pruning(counter, stats, max_memory)
    return _learn(counter, plan, stats, num_threads=num_threads, progress=show)


def train_from_iterator(
    texts: "Iterable[str] | Iterable[Sequence[str]]",
    vocab_size: int,
    *,
    special_tokens: Sequence[str] | Mapping[str, int] = (),
    reserve_special_tokens: int = 0,
    pattern: str | None = None,
    base: Tokenizer | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    trace: int = 0,
    max_memory: int | None = None,
    errors: str = "strict",
) -> Tokenizer:
    """Train on an iterable of strings, each an independent document (pre-tokens
    never span two texts), or of lists of strings (batches, as HF's
    ``train_from_iterator`` takes them), such as a HuggingFace
    ``datasets.Dataset`` column (``ds["text"]``). Texts are consumed in
    batches, so a generator over a huge dataset is fine. The other arguments
    and errors are `train`'s; TypeError for an item that is neither.

    A lone surrogate (``"\\ud800"``: a str no UTF-8 text can hold, as text
    decoded with ``surrogateescape`` has) is what invalid UTF-8 is to `train`:
    with ``errors="strict"`` (the default) a ValueError names the text (its
    index, counting from 0) and the character position; ``"replace"`` counts
    it as U+FFFD, which is what `Tokenizer.encode` makes of it (as tiktoken).

    >>> import bytepair
    >>> bytepair.train_from_iterator(["low lower", "newest widest"], 257, progress=False).merges
    [(b'w', b'e')]
    >>> batches = [["low lower"], ["newest", "widest"]]
    >>> bytepair.train_from_iterator(batches, 257, progress=False).merges
    [(b'w', b'e')]
    """
    plan = plan_training(
        vocab_size,
        special_tokens,
        reserve_special_tokens=reserve_special_tokens,
        pattern=pattern,
        base=base,
        trace=trace,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    max_memory = _check_max_memory(max_memory)
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors={errors!r}: expected 'strict' or 'replace'")
    show = _show_progress(progress)
    stats = TrainingStats()
    counter = plan.new_counter(max_memory)
    start = time.perf_counter()
    with ProgressBar(None, "counting", unit="B", scale=True, enabled=show) as bar:
        done_before = 0
        batch: list[str] = []
        size = 0
        texts_before = 0

        def flush() -> None:
            nonlocal done_before, batch, size, texts_before
            on_done = lambda done: bar.update_to(done_before + done)  # noqa: E731
            try:
                counter.count_texts(batch, num_threads, on_done)
            except UnicodeEncodeError:  # refused whole, before any counting
                counter.count_texts(
                    surrogates_replaced(batch, texts_before, errors), num_threads, on_done
                )
            done_before = bar.n
            texts_before += len(batch)
            batch, size = [], 0

        for text in _documents(texts):
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
    return _learn(counter, plan, stats, num_threads=num_threads, progress=show)


def _documents(texts: "Iterable[str] | Iterable[Sequence[str]]") -> Iterator[str]:
    """The strings of `texts`, batches (lists, tuples, Arrow/`datasets` columns) flattened."""
    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of strings, not a single string")
    for item in texts:
        if isinstance(item, str):
            yield item
        elif isinstance(item, (bytes, bytearray, Mapping)) or not isinstance(item, Iterable):
            raise TypeError(f"texts must yield str or lists of str, got {type(item).__name__}")
        else:
            for text in item:
                if not isinstance(text, str):
                    raise TypeError(
                        "texts must yield str or lists of str, got a batch holding "
                        f"{type(text).__name__}"
                    )
                yield text


def train_from_counts(
    word_counts: "Mapping[str | bytes, int] | WordCounts",
    vocab_size: int,
    *,
    special_tokens: Sequence[str] | Mapping[str, int] | None = None,
    reserve_special_tokens: int = 0,
    pattern: str | None = None,
    base: Tokenizer | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    trace: int = 0,
) -> Tokenizer:
    """Train from word counts made elsewhere: a `bytepair.WordCounts` artifact
    (from `bytepair.count`, on any engine), or a mapping whose keys are
    pre-tokens, taken as given (str keys are UTF-8 encoded; they are not
    pre-tokenized again). Counts may exceed 2**32 (u64). The options
    (`trace`, `min_frequency`, `max_token_length`, `base`, special tokens and
    `reserve_special_tokens`) are `train`'s; with `base`, each word is split
    by the base's merges first. A base with a tokenizer.json pipeline takes a
    mapping only, whose keys must be that pipeline's pre-tokens (normalized,
    prefix spaces included: what ``base.pretokenize`` gives); the result keeps
    the pipeline.

    With a WordCounts, `pattern` and `special_tokens` default to the artifact's
    (the tokenizer keeps its pattern), and the parts stream into Rust as Arrow
    buffers after their SHA-256 is checked. With a mapping they default to
    ``"gpt2"`` (the base's with `base`) and none; `pattern` is stored in the
    tokenizer for encoding.

    Raises:
        ValueError: a count that is negative or not an integer, or a str word
            holding a lone surrogate (names the word),
            vocab_size too small, or a WordCounts counted with another pattern or
            other special tokens than those given (reserved placeholders
            aside), or a WordCounts with a base that has a tokenizer.json
            pipeline. (Counts without any pair, even none at all, give the
            byte-level vocabulary and the "no pair left" warning.)
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

    options = dict(
        reserve_special_tokens=reserve_special_tokens,
        base=base,
        trace=trace,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    if isinstance(word_counts, WordCounts):
        return _train_from_artifact(
            word_counts,
            vocab_size,
            special_tokens,
            pattern,
            options,
            num_threads=num_threads,
            progress=progress,
        )
    plan = plan_training(
        vocab_size, () if special_tokens is None else special_tokens, pattern=pattern, **options
    )
    items = []
    total_bytes = 0
    for word, count in word_counts.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0 or count >= 1 << 64:
            raise ValueError(
                f"count of word {word!r} must be an integer in [0, 2**64), got {count!r}"
            )
        if not isinstance(word, (str, bytes, bytearray, memoryview)):
            # bytes(5) would be five NUL bytes.
            raise TypeError(f"word {word!r} must be a str or bytes, not {type(word).__name__}")
        word = utf8_word(word)
        items.append((word, count))
        total_bytes += count * len(word)
    if total_bytes >= 1 << 64:
        # Every pair count and token total is at most this sum, so below it u64 is exact.
        raise OverflowError(
            f"the counts add up to {total_bytes} bytes of text, beyond 2**64: pair counts would "
            "overflow u64"
        )
    counter = plan.new_counter()
    counter.add_counts(items)
    return _learn(
        counter, plan, TrainingStats(), num_threads=num_threads, progress=_show_progress(progress)
    )


def _train_from_artifact(
    counts: "WordCounts",
    vocab_size: int,
    special_tokens: Sequence[str] | Mapping[str, int] | None,
    pattern: str | None,
    options: dict,
    *,
    num_threads: int | None,
    progress: bool | None,
) -> Tokenizer:
    """`train_from_counts` on a word-counts artifact (see there)."""
    base = options["base"]
    if base is not None and base.pipeline is not None:
        raise ValueError(
            f"{counts.path}: counted with pattern {counts.pattern_name or counts.pattern!r}, not "
            f"through the base tokenizer's tokenizer.json pipeline ({base.pipeline.describe()}): "
            "its words are not the base's pre-tokens. Train on the text with base= (train, "
            "train_from_iterator), or pass the pipeline's word counts as a mapping"
        )
    wanted = pattern if pattern is not None else base.pattern if base is not None else None
    if wanted is not None and _core.resolve_pattern(wanted) != counts.pattern:
        raise ValueError(
            f"{counts.path}: counted with pattern {counts.pattern_name or counts.pattern!r}, "
            f"not {wanted!r}: words split by another pattern would train a different tokenizer"
        )
    if special_tokens is None:
        held = set(base.special_tokens) if base is not None else set()
        special_tokens = tuple(t for t in counts.special_tokens if t not in held)
    plan = plan_training(
        vocab_size, special_tokens, pattern=counts.pattern_name or counts.pattern, **options
    )
    given = tuple(t for t in plan.split_at if not _is_placeholder(t, special_tokens))
    if tuple(sorted(given)) != tuple(sorted(counts.special_tokens)):
        raise ValueError(
            f"{counts.path}: counted with special tokens {list(counts.special_tokens)!r}, "
            f"not {list(given)!r} (text was split at the special tokens when counting)"
        )
    counter = plan.new_counter()
    counts.load_into(counter)
    stats = TrainingStats(input_bytes=counts.totals.bytes)
    return _learn(counter, plan, stats, num_threads=num_threads, progress=_show_progress(progress))


def _is_placeholder(token: str, given: Sequence[str] | Mapping[str, int]) -> bool:
    """A reserved placeholder the caller did not name (not in the artifact's split)."""
    return token not in given and token.startswith("<|reserved_special_token_")
