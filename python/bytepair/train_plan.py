"""What a training run will make, planned and checked before any counting:
the number of merges, the ids of the new special tokens, the limits and the
base tokenizer (`bytepair.train`'s shared arguments); and what it did
(`TrainingStats`).

Id layout (docs/design.md): merges get ids after the 256 bytes (or after a
base's largest id); special tokens take the block of ids after the merges.
Special tokens at fixed ids (``{token: id}``, Llama 3's layout) must lie in
that block, so ``rank == id - 256`` still holds; the others, and the
``reserve_special_tokens`` placeholders, fill its free ids in order.

A base with a tokenizer.json pipeline (`Tokenizer.pipeline`: a normalizer, a
sequence of pre-tokenizers, added-token rules) is extended through it: the
new corpus is counted as the base encodes it, and the result keeps it.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bytepair import _core
from bytepair.counts.sources import check_special_tokens
from bytepair.encoding.text import check_encodable
from bytepair.tokenizer import Tokenizer

if TYPE_CHECKING:
    from bytepair.formats.hf_pipeline import HFPipeline


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
    # Why: None (every merge asked for was learned), "no_pair" or "min_frequency".
    stop_reason: str | None = None
    count_seconds: float = 0.0
    merge_seconds: float = 0.0
    merge_counts: list[int] = field(default_factory=list, repr=False)
    # What a `max_memory` budget dropped while counting (0 when nothing was):
    # distinct words, their pre-tokens, and the highest minimum count applied.
    pruned_words: int = 0
    pruned_pre_tokens: int = 0
    pruned_min_count: int = 0
    # True when a sample stood for the words dropped (`train_from_counts` of
    # an artifact): each word sampled counts pruned_min_count times.
    pruned_sampled: bool = False
    # Ids kept from a base tokenizer (0 without one).
    base_ids: int = 0
    # Each source counted by `train`: (name, bytes read, weight).
    sources: list[tuple[str, int, float]] = field(default_factory=list)
    # SuperBPE (0 without): the vocabulary size where stage 2 began, its merges
    # and distinct pieces (`merges`, `tokens` and `distinct_words` cover both
    # stages, stage 2's text); what its budget left out of the sample, and the
    # sample's threshold (1: every piece kept, counts exact).
    superbpe_transition: int = 0
    superbpe_merges: int = 0
    superbpe_pieces: int = 0
    superbpe_pruned_pieces: int = 0
    superbpe_pruned_occurrences: int = 0
    superbpe_sample_threshold: int = 0


def _check_limits(min_frequency: int, max_token_length: int | None) -> None:
    """ValueError for a `min_frequency` that is not a non-negative integer or a
    `max_token_length` that is neither None nor a positive integer."""
    if (
        isinstance(min_frequency, bool)
        or not isinstance(min_frequency, numbers.Integral)
        or min_frequency < 0
    ):
        raise ValueError(
            f"min_frequency={min_frequency!r} must be a non-negative integer (a pair count)"
        )
    if max_token_length is not None and (
        isinstance(max_token_length, bool)
        or not isinstance(max_token_length, numbers.Integral)
        or max_token_length < 1
    ):
        raise ValueError(
            f"max_token_length={max_token_length!r} must be None or a positive integer (bytes)"
        )


RESERVED_SPECIAL_TOKEN = "<|reserved_special_token_{}|>"


@dataclass
class TrainPlan:
    """What a training run will make, checked before any counting.

    `specials` are the new special tokens in id order (given, then reserved);
    the text is split at them and at the base's. `fixed` maps those given at
    fixed ids to their id. New merges get ids from `next_id` on. `shared` maps
    the given special tokens that spell an ordinary token (a byte, or a base
    token) to its id: they take it, as the `Tokenizer` constructor gives them,
    rather than a new one (tokenizer.json cannot hold two ids for one text).
    """

    vocab_size: int
    num_merges: int
    specials: tuple[str, ...]
    fixed: dict[str, int]
    pattern: str
    base: Tokenizer | None = None
    trace: int = 0
    min_frequency: int = 0
    max_token_length: int | None = None
    shared: dict[str, int] = field(default_factory=dict)
    # Special tokens of a larger run that this part of it splits the text at
    # without adding them (SuperBPE's stage 1: stage 2 adds them).
    cut_at: tuple[str, ...] = ()

    @property
    def next_id(self) -> int:
        return 256 if self.base is None else self.base.n_vocab

    @property
    def pipeline(self) -> "HFPipeline | None":
        """The base's tokenizer.json pipeline, which counting and the result keep (None: the
        pattern)."""
        return None if self.base is None else self.base.pipeline

    def new_counter(self, max_memory: int | None = None, sample: bool = False) -> _core.WordCounter:
        """An empty counter that cuts words as this run's tokenizer will encode them: the
        pattern, or the base's pipeline (normalized and pre-tokenized, the base's
        added-token rules applied), split at `split_at`. `sample`: under the
        budget, keep a sample of the rare words (SuperBPE's stage-2 pieces)."""
        pipeline = None if self.pipeline is None else self.pipeline.core_spec()
        return _core.WordCounter(
            self.pattern, self.split_at, max_memory=max_memory, pipeline=pipeline, sample=sample
        )

    @property
    def split_at(self) -> list[str]:
        """Every special-token string that splits the text (the base's first)."""
        base = [] if self.base is None else list(self.base.special_tokens)
        return base + list(self.shared) + list(self.specials) + list(self.cut_at)


def plan_training(
    vocab_size: int,
    special_tokens: Sequence[str] | Mapping[str, int],
    *,
    reserve_special_tokens: int = 0,
    pattern: str | None = None,
    base: Tokenizer | None = None,
    trace: int = 0,
    min_frequency: int = 0,
    max_token_length: int | None = None,
) -> TrainPlan:
    """Check the arguments every `train*` function shares and plan the ids."""
    if isinstance(trace, bool) or not isinstance(trace, int) or trace < 0:
        raise ValueError(f"trace={trace!r} must be a non-negative integer (merges to print)")
    _check_limits(min_frequency, max_token_length)
    if pattern is not None:
        check_encodable(pattern, "pattern")
    if base is not None and not isinstance(base, Tokenizer):
        raise TypeError(
            "base must be a bytepair.Tokenizer (Tokenizer.load, bytepair.get_encoding), not "
            f"{type(base).__name__}"
        )
    if (
        base is not None
        and pattern is not None
        and _core.resolve_pattern(pattern) != base.pattern_regex
    ):
        raise ValueError(
            f"pattern={pattern!r} differs from the base tokenizer's: an extension keeps the base's "
            "pattern"
        )
    names, fixed = _given_specials(special_tokens, base)
    shared = _shared_specials(names, fixed, base)
    names = tuple(t for t in names if t not in shared)
    if (
        isinstance(reserve_special_tokens, bool)
        or not isinstance(reserve_special_tokens, int)
        or reserve_special_tokens < 0
    ):
        raise ValueError(
            f"reserve_special_tokens={reserve_special_tokens!r} must be a non-negative integer"
        )
    if isinstance(vocab_size, numbers.Integral) and not isinstance(vocab_size, bool):
        vocab_size = int(vocab_size)  # numpy integers are accepted as the int they hold
    # Checked before the placeholders are made: 10**20 of them never would be.
    floor = (256 if base is None else base.vocab_size) + len(names) + reserve_special_tokens
    if not isinstance(vocab_size, int) or vocab_size < floor:
        held = (
            "256 (the bytes)" if base is None else f"{base.vocab_size} (the base tokenizer's ids)"
        )
        raise ValueError(
            f"vocab_size={vocab_size!r} is too small: it must be at least {held} "
            f"+ {len(names) + reserve_special_tokens} (special tokens) = {floor}"
        )
    if floor > 1 << 32:
        raise ValueError(
            f"reserve_special_tokens={reserve_special_tokens!r}: more ids than 32-bit ids hold"
        )
    taken = set(names) | set(base.special_tokens if base is not None else ())
    placeholders = (RESERVED_SPECIAL_TOKEN.format(i) for i in itertools.count())
    reserved = list(
        itertools.islice((t for t in placeholders if t not in taken), reserve_special_tokens)
    )
    specials = names + tuple(reserved)
    plan = TrainPlan(
        vocab_size,
        vocab_size - floor,
        specials,
        fixed,
        pattern=base.pattern if base is not None else pattern or "gpt2",
        base=base,
        trace=trace,
        min_frequency=int(min_frequency),
        max_token_length=None if max_token_length is None else int(max_token_length),
        shared=shared,
    )
    _check_fixed_ids(plan)
    return plan


def _given_specials(
    special_tokens: Sequence[str] | Mapping[str, int], base: Tokenizer | None
) -> tuple[tuple[str, ...], dict[str, int]]:
    """(names in order, {name: fixed id}) of the special tokens given, less
    those the base has already (a fixed id must then be the base's)."""
    fixed: dict[str, int] = {}
    if isinstance(special_tokens, Mapping):
        names = check_special_tokens(list(special_tokens))
        for t, i in special_tokens.items():
            if i is None:  # no fixed id: the next free one
                continue
            if isinstance(i, bool) or not isinstance(i, numbers.Integral) or i < 0:
                raise ValueError(f"special token {t!r}: id {i!r} must be a non-negative integer")
            fixed[t] = int(i)
    else:
        names = check_special_tokens(special_tokens)
    if base is None:
        return names, fixed
    for t in names:
        if (
            t in base.special_tokens
            and fixed.get(t, base.special_tokens[t]) != base.special_tokens[t]
        ):
            raise ValueError(
                f"special token {t!r} has id {base.special_tokens[t]} in the base tokenizer, not "
                f"{fixed[t]}"
            )
    new = tuple(t for t in names if t not in base.special_tokens)
    return new, {t: i for t, i in fixed.items() if t in new}


def _shared_specials(
    names: tuple[str, ...], fixed: dict[str, int], base: Tokenizer | None
) -> dict[str, int]:
    """{name: id} of the special tokens whose text is an ordinary token already
    (a single byte; with a base, any of its tokens); a fixed id must be that
    one. (No merge learned here can spell a special token: its text is cut out
    of every word counted.)"""
    shared = {}
    for t in names:
        b = t.encode("utf-8")
        i = base.mergeable_ranks.get(b) if base is not None else (b[0] if len(b) == 1 else None)
        if i is None:
            continue
        if fixed.get(t, i) != i:
            raise ValueError(
                f"special token {t!r} is the vocabulary token {b!r} (id {i}), so it has that id, "
                f"not {fixed[t]} (tokenizer.json cannot give one text two ids)"
            )
        fixed.pop(t, None)
        shared[t] = i
    return shared


def _check_fixed_ids(plan: TrainPlan) -> None:
    """Fixed ids must lie in the block of ids the new special tokens take, right
    after the planned merges (docs/design.md's layout), once each."""
    first = plan.next_id + plan.num_merges
    block = range(first, first + len(plan.specials))
    owner: dict[int, str] = {}
    for t, i in plan.fixed.items():
        if i not in block:
            raise ValueError(
                f"special token {t!r} has id {i}, outside the ids of the special tokens, "
                f"{block.start}..{block.stop - 1} (after the {plan.num_merges:,} merges that "
                f"vocab_size={plan.vocab_size:,} leaves)"
            )
        if i in owner:
            raise ValueError(f"special tokens {owner[i]!r} and {t!r} both have id {i}")
        owner[i] = t


def special_ids(plan: TrainPlan, first: int) -> dict[str, int]:
    """Ids of the new special tokens after training: fixed ones keep theirs,
    the others take the free ids from `first` (after the last merge) in order."""
    used = set(plan.fixed.values())
    free = (i for i in itertools.count(first) if i not in used)
    new = {t: plan.fixed[t] if t in plan.fixed else next(free) for t in plan.specials}
    return {**plan.shared, **new}
