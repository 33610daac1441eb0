r"""SuperBPE training: ordinary BPE up to a transition point, then merges that
cross words (Liu et al., "SuperBPE: Space Travel for Language Models", COLM
2025, arXiv 2503.13423; the authors' code: PythonNut/superbpe and its HF
tokenizers fork alisawuffles/tokenizers-superbpe).

``bytepair.train(..., superbpe_transition=T)`` runs two stages:

1. **Subwords.** Ordinary BPE with the run's pattern (``gpt2`` by default)
   until the vocabulary holds ``T`` ids (256 bytes + ``T - 256 - specials``
   merges; with ``base=``, an extension of the base up to ``T``, or nothing when
   ``T`` is the base's size: stage 2 then goes straight on top of the base,
   the paper's "inherit merges").
2. **Superwords.** The corpus is counted again with the stage-2 pattern
   (``superbpe``: whitespace no longer splits; 1-3 digits, runs of 2+
   punctuation characters and trailing spaces still do, and so does each
   newline), each piece is split by the stage-1 merges as encoding splits it,
   and the merge loop goes on to ``vocab_size`` with the authors' limits: no
   token holding ``": "``, none of more than `max_words` words (4).

The result is one merge table (stage 1 then stage 2, ids 256 + rank) with the
stage-2 pattern: encoding applies it by rank over the stage-2 pieces, as the
authors' tokenizer.json files do, so HF tokenizers, transformers and tiktoken
load it as they load any byte-level BPE. docs/design.md (SuperBPE) has the
rules and their sources.

Memory: stage-2 pieces are the rest of a line, so nearly every one is distinct
and lossy counting would drop them all; under ``max_memory`` stage 2 keeps a
hash sample of the rare pieces instead (threshold sampling, see
`bytepair._core.WordCounter`'s ``sample``), each standing for the
occurrences it was drawn from, and reports what it left out.

>>> import bytepair
>>> texts = ["by the way, it is. By the way, it was.\n"] * 3
>>> tok = bytepair.train_from_iterator(texts, 276, superbpe_transition=266, progress=False)
>>> [tok.decode([i]) for i in tok.encode("By the way, it is.")]
['By', ' the way, it', ' i', 's.']
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bytepair import _core

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer
    from bytepair.train_plan import TrainingStats, TrainPlan

# The stage-2 pre-tokenization preset (crates/bytepair-core/src/pretokenize/presets.rs).
STAGE2_PATTERN = "superbpe"
# The authors' limit on words per token ("mw4" in the names of their tokenizers).
MAX_WORDS = 4


@dataclass
class SuperPlan:
    """A SuperBPE run, checked before any counting: `stage1` learns the
    subword merges (None when the base is stage 1 already), stage 2 the rest
    of `plan`'s merges with `pattern`, tokens of at most `max_words` words."""

    plan: "TrainPlan"
    transition: int
    pattern: str
    max_words: int | None
    stage1: "TrainPlan | None"

    def stage2(self, stage1_tokenizer: "Tokenizer", learned: int) -> "TrainPlan":
        """Stage 2's plan on top of the stage-1 tokenizer, which learned
        `learned` merges: the merges left to reach ``vocab_size`` (stage 2
        takes up what stage 1 fell short of), the run's special tokens, the
        stage-2 pattern."""
        return replace(
            self.plan,
            num_merges=self.plan.num_merges - learned,
            pattern=self.pattern,
            base=stage1_tokenizer,
            trace=0,
        )


def plan_superbpe(
    plan: "TrainPlan",
    transition: int | None,
    pattern: str = STAGE2_PATTERN,
    max_words: int | None = MAX_WORDS,
) -> SuperPlan | None:
    """Check the SuperBPE arguments of a training run (`transition` None: an
    ordinary run, and the other two must be left at their defaults).

    Raises:
        ValueError: a transition that is not an integer between the ids held
            before training (256, or the base's) and `vocab_size`; a base with
            a tokenizer.json pipeline; a `max_words` below 1; a pattern that
            does not compile; `pattern` or `max_words` given without a transition.
    """
    if transition is None:
        if pattern != STAGE2_PATTERN or max_words != MAX_WORDS:
            raise ValueError("superbpe_pattern and superbpe_max_words need superbpe_transition")
        return None
    base = plan.base
    held = 256 if base is None else base.vocab_size
    if (
        isinstance(transition, bool)
        or not isinstance(transition, numbers.Integral)
        or not held <= transition <= plan.vocab_size
    ):
        raise ValueError(
            f"superbpe_transition={transition!r} must be a vocabulary size from {held} "
            f"({'the bytes' if base is None else 'the base'}) to vocab_size={plan.vocab_size}: "
            "stage 1 learns merges up to it, stage 2 the rest"
        )
    if max_words is not None and (
        isinstance(max_words, bool) or not isinstance(max_words, numbers.Integral) or max_words < 1
    ):
        raise ValueError(f"superbpe_max_words={max_words!r} must be None or a positive integer")
    if base is not None and base.pipeline is not None:
        raise ValueError(
            f"superbpe_transition with a base that has a tokenizer.json pipeline "
            f"({base.pipeline.describe()}) is not supported: stage 2 splits text with its "
            "own pattern"
        )
    _core.WordCounter(pattern, [])  # compiles it: ValueError for a bad regex
    floor = plan.vocab_size - plan.num_merges  # ids held + new special tokens
    stage1_merges = max(0, int(transition) - floor)
    stage1 = (
        None
        if base is not None and stage1_merges == 0
        # The run's special tokens cut stage 1's text too (no merge spells one),
        # but only stage 2 gives them ids.
        else replace(
            plan,
            vocab_size=int(transition),
            num_merges=stage1_merges,
            specials=(),
            fixed={},
            cut_at=plan.specials,
        )
    )
    return SuperPlan(plan, int(transition), pattern, max_words, stage1)


def run_superbpe(
    sp: SuperPlan,
    stats: "TrainingStats",
    count: Callable[["TrainPlan", bool], _core.WordCounter],
    *,
    max_memory: int | None,
    num_threads: int | None,
    progress: bool,
) -> "Tokenizer":
    """Both stages: `count(plan, sample)` counts the corpus into a new counter
    of `plan` (with sampling under the budget for stage 2) and returns it;
    `stats` gathers both stages (counting and merging times add up; the
    tokens and words are stage 2's). `count` raises for a corpus without text."""
    from bytepair.train_learn import learn, note_pruning
    from bytepair.train_plan import TrainingStats

    stage1_tok = sp.plan.base
    learned = 0
    if sp.stage1 is not None:
        counter = count(sp.stage1, False)
        note_pruning(counter, stats, max_memory)
        stage1_stats = TrainingStats()
        stage1_tok = learn(
            counter, sp.stage1, stage1_stats, num_threads=num_threads, progress=progress, warn=False
        )
        learned = stage1_stats.merges
        stats.merge_seconds += stage1_stats.merge_seconds
        stats.merge_counts = stage1_stats.merge_counts
    stage2 = sp.stage2(stage1_tok, learned)
    counter = count(stage2, True)
    stage1_counts = stats.merge_counts
    stage1_seconds = stats.merge_seconds
    tok = learn(
        counter,
        stage2,
        stats,
        num_threads=num_threads,
        progress=progress,
        superbpe=True,
        max_words=sp.max_words,
    )
    _note_sample(counter, stats, max_memory)
    stats.superbpe_transition = stage1_tok.vocab_size + len(sp.plan.specials)
    stats.superbpe_merges = stats.merges
    stats.superbpe_pieces = stats.distinct_words
    stats.merges += learned
    stats.merge_counts = stage1_counts + stats.merge_counts
    stats.merge_seconds += stage1_seconds
    stats.base_ids = 0 if sp.plan.base is None else sp.plan.base.vocab_size
    return tok


def _note_sample(
    counter: _core.WordCounter, stats: "TrainingStats", max_memory: int | None
) -> None:
    """Copy what stage 2's budget left out into `stats`, with a warning when it left anything."""
    words, occurrences, threshold = counter.pruned
    stats.superbpe_pruned_pieces, stats.superbpe_pruned_occurrences = words, occurrences
    stats.superbpe_sample_threshold = max(threshold, 1)
    if words:
        warnings.warn(
            f"to stay within max_memory={max_memory:,} bytes, SuperBPE's stage 2 kept a sample "
            f"of the pieces seen fewer than {threshold} times: {words:,} distinct pieces "
            f"({occurrences:,} occurrences) were left out and each piece kept stands for up to "
            f"{threshold} occurrences; the stage-2 merges are approximate",
            stacklevel=4,
        )


def piece_counter(run: "TrainPlan", pieces) -> _core.WordCounter:
    """A counter of stage 2's plan `run` holding `pieces`: a WordCounts
    artifact counted with the stage-2 pattern, or a mapping of pieces (see
    `bytepair.train_from_counts`). ValueError for none, or an artifact counted
    with another pattern or other special tokens."""
    from bytepair.counts.artifact import WordCounts
    from bytepair.train_learn import counts_counter

    if pieces is None:
        raise ValueError(
            "superbpe_transition needs superbpe_counts, the counts of the stage-2 pieces "
            f"(bytepair.count(files, pattern={run.pattern!r}))"
        )
    if not isinstance(pieces, WordCounts):
        return counts_counter(run, pieces, sample=True)
    if _core.resolve_pattern(run.pattern) != pieces.pattern:
        raise ValueError(
            f"{pieces.path}: counted with pattern {pieces.pattern_name or pieces.pattern!r}, not "
            f"{run.pattern!r}: superbpe_counts must be the stage-2 pieces"
        )
    if sorted(pieces.special_tokens) != sorted(run.split_at):
        raise ValueError(
            f"{pieces.path}: counted with special tokens {list(pieces.special_tokens)!r}, "
            f"not {run.split_at!r}"
        )
    counter = run.new_counter(sample=True)
    pieces.load_into(counter)
    return counter
