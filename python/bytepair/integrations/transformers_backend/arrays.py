"""A padded batch of single texts asked for as numpy arrays
(``tok(texts, padding=..., truncation=..., return_tensors="np")``, the shape of
a training or embedding batch) made as arrays from the start: the core encodes
the whole batch into one buffer (``CoreBPE.encode_documents``, threads, no
Python int per token), and each row is filled from it as HF would truncate,
post-process and pad it (`serve.encode_batch` does the same one encoding at a
time). transformers would otherwise build lists of Python ints and convert
them.

Served here: one text per input, no overflowing tokens or offsets asked for,
a post-processor with a `state.Layout`, rows that come out of one length.
`padded_batch` returns None for anything else, which `serve.encode_batch`
then serves. The `encoding.Encoding` of each row is made when read.
"""

from __future__ import annotations

import numpy as np

from bytepair.integrations.transformers_backend.encoding import Encoding, MirrorContext
from bytepair.integrations.transformers_backend.model import Enc, Unserved
from bytepair.integrations.transformers_backend.processors import Padding, Truncation, post_process


class ArrayRow:
    """How the `Encoding` of one row is made in full, when asked."""

    __slots__ = ("state", "plan", "text", "ids", "allowed", "add_special", "split")
    __slots__ += ("truncation", "padding", "targets")

    def __init__(
        self, state, plan, text, ids, allowed, add_special, split, truncation, padding, targets
    ):
        self.state, self.plan, self.text, self.ids = state, plan, text, ids
        self.allowed, self.add_special, self.split = allowed, add_special, split
        self.truncation, self.padding, self.targets = truncation, padding, targets

    def context(self, k=None) -> MirrorContext:
        return MirrorContext(
            self.state,
            (self.text,),
            False,
            self.add_special,
            self.split,
            self.truncation,
            self.padding,
            self.targets,
        )

    def model(self, k=None, ids=None) -> Enc:
        from bytepair.integrations.transformers_backend.serve import _text_source

        src = _text_source(self.state, self.text, self.ids.tolist(), self.allowed)
        final = post_process(self.plan.proc, [Enc.of(src, 0)], self.add_special, self.truncation)
        for target in self.targets:
            self.padding.apply(final, target)
        return final


def padded_batch(
    state,
    texts: list[str],
    add_special: bool,
    split: bool,
    truncation: Truncation | None,
    padding: Padding,
    want: dict[str, bool],
) -> tuple[dict, list[Encoding]] | None:
    """(arrays by key, in transformers' key order; the rows' `Encoding`s), or None.

    Args:
        want: which of ``token_type_ids``, ``attention_mask``,
            ``special_tokens_mask``, ``length`` to return (``input_ids`` always).
    """
    plan = state.plan()
    layout = plan.single.get(add_special)
    if layout is None:
        return None
    allowed = state.allowed(split)
    flat, counts = _encode(state, texts, allowed)
    starts = np.zeros(len(texts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    keep, first = _truncated(counts, layout.added, truncation)
    lengths = len(layout.before) + keep + len(layout.after)
    t1 = [padding.target(int(n)) for n in lengths]
    padded = np.maximum(lengths, t1)
    width = padding.target(int(padded.max()))
    if (np.maximum(padded, width) != width).any():
        return None  # rows of several lengths: not an array
    arrays = _fill(layout, flat, starts + first, keep, lengths, width, padding, want)
    encodings = [
        Encoding(
            None,
            ArrayRow(
                state,
                plan,
                text,
                flat[s : s + c],
                allowed,
                add_special,
                split,
                truncation,
                padding,
                (t, width),
            ),
            n_sequences=layout.n_sequences,
        )
        for text, s, c, t in zip(texts, starts.tolist(), counts.tolist(), t1)
    ]
    return arrays, encodings


def _encode(state, texts: list[str], allowed: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """All texts' ids back to back (uint32) and each text's count (int64)."""
    try:
        raw = [t.encode("utf-8") for t in texts]
    except UnicodeEncodeError:
        raise Unserved("a lone surrogate in the text (HF raises)") from None
    flat, counts = _documents(state.core, raw, allowed)
    if state.unserved_ids and np.isin(flat, list(state.unserved_ids)).any():
        raise Unserved("a normalized added token that strips spaces")
    return flat, counts


def _documents(core, raw: list[bytes], allowed: list[str]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(raw) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, raw), np.int64, len(raw)), out=offsets[1:])
    ids, counts = core.encode_documents(
        b"".join(raw), offsets.tobytes(), "batch", None, allowed, [], None, 4
    )
    return np.frombuffer(ids, np.uint32), np.frombuffer(counts, np.int64)


def _truncated(counts: np.ndarray, added: int, truncation: Truncation | None):
    """Tokens each text keeps after HF's truncation of a single sequence, and where they start."""
    if truncation is None:
        return counts, np.zeros_like(counts)
    room = truncation.max_length - added
    if room < 0:
        raise Unserved(f"max_length {truncation.max_length} below the {added} tokens HF adds")
    if truncation.strategy == "only_second":
        if (counts > room).any():
            raise Unserved("only_second truncation of a single sequence (HF raises)")
    elif truncation.stride >= room > 0 and (counts > room).any():
        raise Unserved(f"stride {truncation.stride} >= max_length {room} (HF raises)")
    keep = np.minimum(counts, room)
    first = counts - keep if truncation.direction == "left" else np.zeros_like(counts)
    return keep, first


def _fill(layout, flat, starts, keep, lengths, width: int, padding: Padding, want: dict) -> dict:
    n = len(keep)
    nb = len(layout.before)
    left = padding.direction == "left"
    offset = (width - lengths) if left else np.zeros(n, np.int64)
    # Token k of row r comes from flat[starts[r] + k - nb] inside the text's window.
    cols = np.arange(width, dtype=np.int64)[None, :] - offset[:, None]
    in_text = (cols >= nb) & (cols < nb + keep[:, None])
    ids = np.full((n, width), padding.pad_id, np.int64)
    rows_k, cols_k = np.nonzero(in_text)
    ids[rows_k, cols_k] = flat[starts[rows_k] + cols[rows_k, cols_k] - nb]
    real = (cols >= 0) & (cols < lengths[:, None])
    _place(ids, cols, nb, keep, layout.before, layout.after)
    out = {"input_ids": ids}
    if want["token_type_ids"]:
        types = np.full((n, width), padding.pad_type_id, np.int64)
        types[in_text] = layout.seq_type
        _place(types, cols, nb, keep, layout.before_types, layout.after_types)
        out["token_type_ids"] = types
    if want["attention_mask"]:
        out["attention_mask"] = real.astype(np.int64)
    if want["special_tokens_mask"]:
        out["special_tokens_mask"] = (~in_text).astype(np.int64)
    if want["length"]:
        out["length"] = np.full(n, width, np.int64)
    return out


def _place(array, cols, nb: int, keep, before: list[int], after: list[int]) -> None:
    """Write `before` at columns 0.. and `after` right after each row's text (columns as `cols`)."""
    for k, value in enumerate(before):
        array[cols == k] = value
    for k, value in enumerate(after):
        array[cols == (nb + keep + k)[:, None]] = value
