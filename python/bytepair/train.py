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
* ``weights={path_or_glob: w}``: a data mixture, each source's counts times w;
* ``superbpe_transition=T``: SuperBPE, merges across words after the vocabulary
  reaches T (`bytepair.superbpe`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bytepair import _core
from bytepair.counts.protocol import check_max_memory
from bytepair.counts.sources import (
    CountSpec,
    check_inputs,
    expand_inputs,
    infer_format,
    input_size,
)
from bytepair.encoding.text import surrogates_replaced
from bytepair.progress import ProgressBar
from bytepair.superbpe import MAX_WORDS, STAGE2_PATTERN, plan_superbpe, run_superbpe
from bytepair.tokenizer import Tokenizer
from bytepair.train_inputs import count_inputs, weight_groups
from bytepair.train_learn import (
    counts_counter,
    describe_files,
    fit_budget,
    learn,
    note_pruning,
    require_text,
    run_size,
    show_progress,
)
from bytepair.train_plan import TrainingStats, TrainPlan, plan_training

if TYPE_CHECKING:
    from bytepair.counts.artifact import WordCounts

# train_from_iterator hands texts to Rust in batches of about this many characters.
_BATCH_CHARS = 16 << 20


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
    superbpe_transition: int | None = None,
    superbpe_pattern: str = STAGE2_PATTERN,
    superbpe_max_words: int | None = MAX_WORDS,
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
            ``cl100k``, ``o200k``, ``llama3``, ``qwen2``); with `base`, the
            base's (a different one raises).
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
            while counting and for the merge loop; None (default): no bound,
            counts exact. Memory grows with the distinct words, not the corpus
            size; past the budget the rarest words are dropped (every word seen
            fewer than 2 times so far, then 4, 8...: lossy counting, Manku and
            Motwani 2002), so a corpus of more distinct words than RAM still
            trains; then the merge loop keeps the words counted at least t
            times for the smallest t whose words it can hold within the budget
            (`bytepair_core::train::budget`: ~48 + 4 bytes per byte of a word,
            and ~2.5 KB per merge). What was dropped is in ``training_stats``
            (``pruned_*``) and a warning. The same input, options and budget
            give the same counts and merges whatever the thread count.
        superbpe_transition: SuperBPE (Liu et al. 2025, `bytepair.superbpe`):
            ordinary merges until the vocabulary holds this many ids (bytes or
            the base's, merges and the special tokens), then merges across
            words up to `vocab_size`: the inputs are counted again with
            `superbpe_pattern` and each piece is split by the first merges.
            The tokenizer gets that pattern. With `base`, the base's size puts
            stage 2 straight on top of it. Under `max_memory` stage 2 keeps a
            hash sample of its rare pieces (``training_stats.superbpe_*``).
            None (default): ordinary BPE.
        superbpe_pattern: stage 2's pre-tokenization, ``"superbpe"`` (the
            authors' stage-2 regex, and a split after each newline) or a regex.
        superbpe_max_words: stage 2 makes no token of more than this many
            words (runs of bytes other than the space; the authors' 4), nor
            one holding ``": "``; None: no word limit.

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
    sp = plan_superbpe(plan, superbpe_transition, superbpe_pattern, superbpe_max_words)
    paths = expand_inputs(files)
    check_inputs(paths)
    fmt = format or infer_format(paths)
    groups = weight_groups(paths, weights)
    max_memory = check_max_memory(max_memory)
    show = show_progress(progress)
    stats = TrainingStats()
    sizes = {p: input_size(p) for p in paths}

    def count(run: TrainPlan, sample: bool) -> _core.WordCounter:
        """Count every input into a new counter of `run`'s pattern and special tokens."""
        spec = CountSpec(run.pattern, tuple(run.split_at), fmt, text_field, errors)
        counter = run.new_counter(max_memory, sample)
        stats.input_bytes, stats.sources = 0, []
        start = time.perf_counter()
        label = "counting pieces" if sample else "counting"
        with ProgressBar(sum(sizes.values()), label, unit="B", scale=True, enabled=show) as bar:
            for weight, group in groups:
                part = counter if weight == 1 else run.new_counter(max_memory, sample)
                done = count_inputs(part, group, spec, num_threads, chunk_size, bar, sizes)
                stats.input_bytes += done
                stats.sources.append((describe_files(group), done, weight))
                if part is not counter:
                    counter.add_scaled(part, weight)
        stats.count_seconds += time.perf_counter() - start
        require_text(counter, describe_files(paths))
        return counter

    if sp is not None:
        return run_superbpe(
            sp, stats, count, max_memory=max_memory, num_threads=num_threads, progress=show
        )
    counter = count(plan, False)
    fit_budget(counter, plan, max_memory)
    note_pruning(counter, stats, max_memory)
    return learn(counter, plan, stats, num_threads=num_threads, progress=show)


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
    superbpe_transition: int | None = None,
    superbpe_pattern: str = STAGE2_PATTERN,
    superbpe_max_words: int | None = MAX_WORDS,
) -> Tokenizer:
    """Train on an iterable of strings, each an independent document (pre-tokens
    never span two texts), or of lists of strings (batches, as HF's
    ``train_from_iterator`` takes them), such as a HuggingFace
    ``datasets.Dataset`` column (``ds["text"]``). Texts are consumed in
    batches, so a generator over a huge dataset is fine. The other arguments
    and errors are `train`'s; TypeError for an item that is neither. With
    `superbpe_transition` the texts are read once and counted for both
    stages at once (both counts are held together).

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
    sp = plan_superbpe(plan, superbpe_transition, superbpe_pattern, superbpe_max_words)
    max_memory = check_max_memory(max_memory)
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors={errors!r}: expected 'strict' or 'replace'")
    show = show_progress(progress)
    stats = TrainingStats()
    # (plan, sample) of each count: one, or SuperBPE's stage 1 (if any) and stage 2.
    runs = [(plan, False)]
    if sp is not None:
        runs = [(sp.stage1, False)] * (sp.stage1 is not None) + [
            (replace(plan, pattern=sp.pattern), True)
        ]
    counters = [run.new_counter(max_memory, sample) for run, sample in runs]
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
                counters[0].count_texts(batch, num_threads, on_done)
            except UnicodeEncodeError:  # refused whole, before any counting
                batch = surrogates_replaced(batch, texts_before, errors)
                counters[0].count_texts(batch, num_threads, on_done)
            for other in counters[1:]:
                other.count_texts(batch, num_threads)
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
    for counter in counters:
        require_text(counter, "the texts")
    if sp is not None:
        counted = {sample: counter for (_, sample), counter in zip(runs, counters)}
        return run_superbpe(
            sp,
            stats,
            lambda _, sample: counted[sample],
            max_memory=max_memory,
            num_threads=num_threads,
            progress=show,
        )
    fit_budget(counters[0], plan, max_memory)
    note_pruning(counters[0], stats, max_memory)
    return learn(counters[0], plan, stats, num_threads=num_threads, progress=show)


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
    superbpe_transition: int | None = None,
    superbpe_counts: "Mapping[str | bytes, int] | WordCounts | None" = None,
    superbpe_pattern: str = STAGE2_PATTERN,
    superbpe_max_words: int | None = MAX_WORDS,
    max_memory: int | None = None,
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

    SuperBPE (`superbpe_transition`, see `train`) takes its stage-2 counts
    from `superbpe_counts`, counted with `superbpe_pattern` (a WordCounts
    from ``bytepair.count(..., pattern="superbpe")``, or a mapping of pieces
    as ``Tokenizer.pretokenize`` gives them with that pattern); `word_counts`
    are stage 1's (unused when the base is stage 1).

    `max_memory` (bytes, at least 64 MiB): train on the words the merge loop can
    hold within it (~48 + 4 bytes per byte of a word, 6 past 65,536 ids, and
    ~2.5 KB per merge), so any artifact trains on one node (streamed in, never
    whole in memory). The budget covers the call's growth of the process's RSS
    (reading the parts, the rows kept, the merge loop), except the first import
    and read of pyarrow and numpy (~75 MiB, once a process): on 2 GB of
    generated text (7.9 M words, vocab 32256) a first call grew by 109, 125,
    224, 397 MiB within 64, 128, 256, 512 MiB, a later one by 34, 50, 140, 322
    (``bench/bench_budget.py``). Every word counted at least t times exactly,
    and a sample of the rarer ones that stands for them all (threshold sampling,
    Duffield, Lund and Thorup 2005: a word counted c < t times is kept when a
    hash of its bytes falls in the first c/t of the hash range, and then counts
    t times), t the smallest threshold whose sample fits: the pair counts stay
    unbiased, so the text of the rare words (long CJK runs, identifiers) still
    shapes the merges (within 1/10 of the exact cost, the first 32k merges as
    without a budget: 85% on a 117 MB mix, 97.6% on 2 GB, 99.4% on 16 and
    24 GB, against 75%, 87% and 92% when the rarest words are dropped;
    ``bench/bench_pruning.py``). The same
    counts and budget give the same merges. What was left out is in
    ``training_stats.pruned_*`` (with ``pruned_sampled``) and a warning. None
    (default): every word. SuperBPE's stage 2 is not bounded.

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
    superbpe = dict(
        transition=superbpe_transition,
        counts=superbpe_counts,
        pattern=superbpe_pattern,
        max_words=superbpe_max_words,
    )
    max_memory = check_max_memory(max_memory)
    if isinstance(word_counts, WordCounts):
        return _train_from_artifact(
            word_counts,
            vocab_size,
            special_tokens,
            pattern,
            options,
            superbpe,
            num_threads=num_threads,
            progress=progress,
            max_memory=max_memory,
        )
    plan = plan_training(
        vocab_size, () if special_tokens is None else special_tokens, pattern=pattern, **options
    )
    counter = counts_counter(plan, word_counts)
    stats = TrainingStats()
    fit_budget(counter, plan, max_memory, sample=True)
    note_pruning(counter, stats, max_memory, "training", sampled=True)
    return _finish(counter, plan, stats, superbpe, num_threads, progress)


def _finish(
    counter: _core.WordCounter,
    plan: TrainPlan,
    stats: TrainingStats,
    superbpe: dict,
    num_threads: int | None,
    progress: bool | None,
) -> Tokenizer:
    """`learn` on counts made elsewhere, or both SuperBPE stages when
    ``superbpe["transition"]`` is set (`counter`: stage 1's)."""
    show = show_progress(progress)
    sp = plan_superbpe(plan, superbpe["transition"], superbpe["pattern"], superbpe["max_words"])
    if sp is None:
        if superbpe["counts"] is not None:
            raise ValueError("superbpe_counts needs superbpe_transition")
        return learn(counter, plan, stats, num_threads=num_threads, progress=show)
    from bytepair.superbpe import piece_counter

    pieces = superbpe["counts"]
    return run_superbpe(
        sp,
        stats,
        lambda run, sample: piece_counter(run, pieces) if sample else counter,
        max_memory=None,
        num_threads=num_threads,
        progress=show,
    )


def _train_from_artifact(
    counts: "WordCounts",
    vocab_size: int,
    special_tokens: Sequence[str] | Mapping[str, int] | None,
    pattern: str | None,
    options: dict,
    superbpe: dict,
    *,
    num_threads: int | None,
    progress: bool | None,
    max_memory: int | None = None,
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
    counts.load_into(counter, max_memory=max_memory, run=run_size(plan))
    stats = TrainingStats(input_bytes=counts.totals.bytes)
    note_pruning(counter, stats, max_memory, "training", sampled=True)
    return _finish(counter, plan, stats, superbpe, num_threads, progress)


def _is_placeholder(token: str, given: Sequence[str] | Mapping[str, int]) -> bool:
    """A reserved placeholder the caller did not name (not in the artifact's split)."""
    return token not in given and token.startswith("<|reserved_special_token_")
