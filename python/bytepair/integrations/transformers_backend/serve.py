"""HF's ``Tokenizer.encode_batch`` served by bytepair: each input's sequences
encoded in one call to the core (on every core for a batch), then truncated,
post-processed and padded as HF does (`processors.post_process`), the batch
padded to its longest.

An input is what ``encode_batch`` takes: a text or a pair of texts, or with
``is_pretokenized`` a list of words or a pair of lists (each word encoded on
its own, offsets relative to it, its index as word id, as HF does).
"""

from __future__ import annotations

from bytepair._core import untrack_int_lists
from bytepair.integrations.transformers_backend import gc_pause
from bytepair.integrations.transformers_backend.encoding import Encoding, MirrorContext
from bytepair.integrations.transformers_backend.model import Enc, Source, Unserved
from bytepair.integrations.transformers_backend.processors import Padding, Truncation, post_process


def encode_batch(
    state,
    items: list,
    pretokenized: bool,
    add_special: bool,
    split: bool,
    truncation: Truncation | None,
    padding: Padding | None,
) -> list[Encoding]:
    """`Encoding`s equal to ``backend.encode_batch(items, is_pretokenized=...,
    add_special_tokens=...)`` with these settings; `Unserved` for what HF must
    serve (an input HF refuses, a post-processor or option not served)."""
    plan = state.plan()
    allowed = state.allowed(split)
    sequences = [_sequences(item, pretokenized) for item in items]
    texts = [t for seqs in sequences for s in seqs for t in (s if pretokenized else (s,))]
    core_ids = state.encode_texts(texts, allowed) if texts else []
    if len(core_ids) >= gc_pause.MIN_BATCH:  # kept by the Encodings (see gc_pause)
        untrack_int_lists(core_ids)
    ids = iter(core_ids)

    layout = plan.single.get(add_special)
    if (
        truncation is None
        and padding is None
        and layout is not None
        and not pretokenized
        and all(len(seqs) == 1 for seqs in sequences)
    ):
        texts_how = Texts(state, plan, texts, allowed, add_special, split, layout)
        return [texts_how.encoding(k, core_ids) for k, core_ids in enumerate(ids)]

    finals, contexts = [], []
    for seqs in sequences:
        sources = [
            _words_source(state, s, [next(ids) for _ in s], allowed)
            if pretokenized
            else _text_source(state, s, next(ids), allowed)
            for s in seqs
        ]
        final = post_process(
            plan.proc, [Enc.of(src, k) for k, src in enumerate(sources)], add_special, truncation
        )
        c = MirrorContext(state, seqs, pretokenized, add_special, split, truncation, padding)
        if padding is not None:
            target = padding.target(len(final))
            padding.apply(final, target)
            c = c.with_targets((target,))
        finals.append(final)
        contexts.append(c)
    if padding is not None and finals:
        target = padding.target(max(map(len, finals)))
        for k, final in enumerate(finals):
            padding.apply(final, target)
            contexts[k] = contexts[k].with_targets(contexts[k].targets + (target,))
    return [Encoding(f.ids(), c, enc=f) for f, c in zip(finals, contexts)]


class Texts:
    """How the encodings of single texts served with no truncation or padding
    (their ids are the layout's around each text's) are made in full when an
    attribute beyond their ids is read: one for a batch, the text's index in it
    kept by each `Encoding`."""

    __slots__ = ("state", "plan", "texts", "allowed", "add_special", "split", "layout")

    def __init__(self, state, plan, texts, allowed, add_special, split, layout):
        self.state, self.plan, self.texts, self.allowed = state, plan, texts, allowed
        self.add_special, self.split, self.layout = add_special, split, layout

    def encoding(self, k: int, ids: list[int]) -> Encoding:
        """The `Encoding` of text `k` from its core ids (which become its ids)."""
        before, after = self.layout.before, self.layout.after
        if before:
            ids[:0] = before
        if after:
            ids += after
        return Encoding(ids, self, n_sequences=self.layout.n_sequences, padded=False, k=k)

    def context(self, k: int) -> MirrorContext:
        return MirrorContext(
            self.state, (self.texts[k],), False, self.add_special, self.split, None, None
        )

    def model(self, k: int, ids: list[int]) -> Enc:
        core_ids = ids[len(self.layout.before) : len(ids) - len(self.layout.after)]
        src = _text_source(self.state, self.texts[k], core_ids, self.allowed)
        return post_process(self.plan.proc, [Enc.of(src, 0)], self.add_special, None)


def _text_source(state, text: str, ids: list[int], allowed: list[str]) -> Source:
    return Source(ids, state, (text,), allowed)


def _words_source(state, words: list[str], ids: list[list[int]], allowed: list[str]) -> Source:
    """One pre-tokenized sequence: its words' ids back to back, each token's word
    index, offsets relative to each word."""
    flat = [i for word_ids in ids for i in word_ids]
    word_of = [k for k, word_ids in enumerate(ids) for _ in word_ids]
    return Source(flat, state, words, allowed, word_of)


def _sequences(item, pretokenized: bool) -> tuple:
    """The one or two sequences of an input, as HF's ``encode_batch`` reads it."""
    if not pretokenized:
        if isinstance(item, str):
            return (item,)
        if (
            isinstance(item, (list, tuple))
            and len(item) == 2
            and all(isinstance(s, str) for s in item)
        ):
            return tuple(item)
    elif isinstance(item, (list, tuple)):
        if all(isinstance(w, str) for w in item):
            return (item,)
        if len(item) == 2 and all(_is_words(s) for s in item):
            return tuple(item)
    raise Unserved(f"an input HF reads otherwise ({type(item).__name__})")


def _is_words(seq) -> bool:
    return isinstance(seq, (list, tuple)) and all(isinstance(w, str) for w in seq)
