"""The parts of training that every entry point shares: the checks of a
memory budget and of an empty corpus, the warning of a budget that pruned,
and the merge loop run on a counter (`learn`), which builds the Tokenizer in
the id layout of docs/design.md. `bytepair.train` (files, iterators, counts)
and `bytepair.superbpe` (both SuperBPE stages) call them.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Mapping, Sequence

from bytepair import _core
from bytepair.encoding.text import utf8_word
from bytepair.progress import ProgressBar
from bytepair.tokenizer import Tokenizer
from bytepair.train_plan import TrainingStats, TrainPlan, special_ids


def run_size(plan: TrainPlan) -> dict[str, int]:
    """The run's ids and merges, which set what the merge loop holds
    (`bytepair_core::train::budget::TrainingCost`)."""
    return {"ids": plan.next_id + plan.num_merges, "merges": plan.num_merges}


def fit_budget(
    counter: _core.WordCounter, plan: TrainPlan, max_memory: int | None, sample: bool = False
) -> None:
    """Keep only the words the merge loop can hold within `max_memory`: those
    counted at least t times, for the smallest t that fits (none dropped below
    it), and with `sample` a hash sample of the rarer ones, each counted t times
    (threshold sampling: the counts must be final)."""
    if max_memory is not None:
        counter.fit_training_budget(max_memory, **run_size(plan), sample=sample)


def note_pruning(
    counter: _core.WordCounter,
    stats: TrainingStats,
    max_memory: int | None,
    stage: str = "counting",
    sampled: bool = False,
) -> None:
    """Copy what the budget dropped into `stats`, with a warning when it dropped
    anything (`stage`: "counting" or "training", the step that dropped it;
    `sampled`: a sample kept by the budget stands for the words it left out)."""
    stats.pruned_words, stats.pruned_pre_tokens, stats.pruned_min_count = counter.pruned
    stats.pruned_sampled = sampled and stats.pruned_words > 0
    if stats.pruned_sampled:
        share = stats.pruned_pre_tokens / max(counter.total(), 1)
        warnings.warn(
            f"to stay within max_memory={max_memory:,} bytes, {stage} kept a sample of the "
            f"words seen fewer than {stats.pruned_min_count} times, each standing for "
            f"{stats.pruned_min_count} occurrences; it left out {stats.pruned_words:,} distinct "
            f"words ({stats.pruned_pre_tokens:,} pre-tokens, ~{share:.2%} of all); the counts, "
            "and so the merges, are approximate",
            stacklevel=3,
        )
    elif stats.pruned_words:
        share = stats.pruned_pre_tokens / max(stats.pruned_pre_tokens + counter.total(), 1)
        warnings.warn(
            f"to stay within max_memory={max_memory:,} bytes, {stage} dropped "
            f"{stats.pruned_words:,} distinct words seen fewer than {stats.pruned_min_count} "
            f"times ({stats.pruned_pre_tokens:,} pre-tokens, {share:.2%} of all); the counts, "
            "and so the merges, are approximate",
            stacklevel=3,
        )


def show_progress(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else bool(progress)


def require_text(counter: _core.WordCounter, source: str) -> None:
    """An empty corpus is a mistake (wrong file, wrong glob), not a tokenizer."""
    if counter.total() == 0:
        raise ValueError(
            f"{source}: empty corpus, no text to train on (0 pre-tokens outside special tokens)"
        )


def describe_files(paths: Sequence[str]) -> str:
    if len(paths) == 1:
        return paths[0]
    return f"{len(paths)} files ({', '.join(paths[:3])}{', ...' if len(paths) > 3 else ''})"


def learn(
    counter: _core.WordCounter,
    plan: TrainPlan,
    stats: TrainingStats,
    *,
    num_threads: int | None,
    progress: bool,
    warn: bool = True,
    **train_options,
) -> Tokenizer:
    """Run the merge loop on `counter` and build the Tokenizer; print the
    first `plan.trace` new merges (`bytepair.inspection.report.trace_lines`).
    `warn`: a warning when it stops early; `train_options` go to ``counter.train``."""
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
            **train_options,
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
    first = plan.next_id  # a scan of the base's ids: once, not once per merge
    for rank, (a, b, _) in enumerate(learned):
        merges.append((vocab[a], vocab[b]))
        vocab[first + rank] = vocab[a] + vocab[b]
    specials |= special_ids(plan, first + len(learned))
    pipeline = (
        None
        if plan.pipeline is None
        else plan.pipeline.with_tokens(sorted(specials, key=specials.__getitem__))
    )
    tok = Tokenizer._trusted(vocab, merges, specials, plan.pattern, pipeline)
    tok.training_stats = stats
    if stop is not None and warn:
        warn_stopped(stop, plan, tok.vocab_size)
    if plan.trace:
        from bytepair.inspection.report import trace_lines

        for line in trace_lines(
            merges[len(merges) - len(learned) :], stats.merge_counts, plan.trace
        ):
            print(line)
        sys.stdout.flush()
    return tok


def warn_stopped(stop: str, plan: TrainPlan, vocab_size: int) -> None:
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


def counts_counter(plan: TrainPlan, word_counts: "Mapping[str | bytes, int]", sample: bool = False):
    """A counter of `plan` holding `word_counts` as given (see `train_from_counts`)."""
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
    counter = plan.new_counter(sample=sample)
    counter.add_counts(items)
    return counter
