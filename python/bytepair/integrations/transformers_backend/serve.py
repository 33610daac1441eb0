"""HF's ``Tokenizer.encode_batch`` served by bytepair: each input's sequences
encoded in one call to the core (on every core for a batch), then truncated,
post-processed and padded as HF does (`processors.post_process`), the batch
padded to its longest.

An input is what ``encode_batch`` takes: a text or a pair of texts, or with
``is_pretokenized`` a list of words or a pair of lists (each word encoded on
its own, offsets relative to it, its index as word id, as HF does).
"""

from __future__ import annotations

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
    ids = iter(state.encode_texts(texts, allowed) if texts else ())

    layout = plan.single.get(add_special)
    if truncation is None and padding is None and layout is not None and not pretokenized:
        before, after, n_seq = layout.before, layout.after, layout.n_sequences
        out = []
        for seqs in sequences:
            if len(seqs) != 1:
                break
            core_ids = next(ids)
            out.append(
                Encoding(
                    before + core_ids + after if before or after else core_ids,
                    OneText(state, plan, seqs[0], core_ids, allowed, add_special, split),
                    n_sequences=n_seq,
                    padded=False,
                )
            )
        else:
            return out
        ids = iter(state.encode_texts(texts, allowed))  # a pair among them: the general way

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


class OneText:
    """How an encoding of one text, served with no truncation or padding, is
    made in full when an attribute beyond its ids is read."""

    __slots__ = ("state", "plan", "text", "ids", "allowed", "add_special", "split")

    def __init__(self, state, plan, text, ids, allowed, add_special, split):
        self.state, self.plan, self.text, self.ids = state, plan, text, ids
        self.allowed, self.add_special, self.split = allowed, add_special, split

    def context(self) -> MirrorContext:
        return MirrorContext(
            self.state, (self.text,), False, self.add_special, self.split, None, None
        )

    def model(self) -> Enc:
        src = _text_source(self.state, self.text, self.ids, self.allowed)
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
