"""HuggingFace tokenizers' ``Encoding`` as a list of parts, truncated, merged
and padded step for step as the Rust code does it (huggingface/tokenizers:
``tokenizer/encoding.rs`` ``truncate``, ``merge_with``, ``pad``;
``utils/truncation.rs`` ``truncate_encodings``; ``pre_tokenizers/byte_level.rs``
``process_offsets``), so that every attribute transformers reads comes out as
HF's.

Where HF keeps seven parallel lists per encoding, an `Enc` here is a list of
parts: a `Window` of a `Source` (the ids one input sequence encoded to), a
`Special` (tokens a post-processor adds) or a `Pad`. The lists (ids, type ids,
masks, offsets, tokens) are made from the parts when asked for, so a call that
reads only the ids never builds the rest.

Not here: the post-processors (`processors`), what transformers sees
(`encoding.Encoding`).
"""

from __future__ import annotations

# The byte-level alphabet's space (what ``Ġhello`` starts with).
BYTE_LEVEL_SPACE = "\u0120"
# Rust's `char::is_whitespace` (Unicode White_Space), which `str.isspace` is not
# (it also takes U+001C..U+001F).
_WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000" + BYTE_LEVEL_SPACE
)


class Unserved(Exception):
    """A call this model does not serve (or that HF answers with an error):
    the caller hands it to HF's backend. The message says why."""


class Source:
    """One input sequence as the model encoded it, before truncation.

    Args:
        ids: list[int], its token ids.
        state: the `state.TokenizerState` that encoded it (None for a stand-in).
        texts: the text, or the words of a pre-tokenized input, each encoded on
            its own; offsets are relative to each.
        allowed: the added tokens split out of them.
        words: list[int] | None, the word of each token of a pre-tokenized
            input (HF's ``word_ids``); None for raw text (HF's words are then
            its pre-token indices, which `encoding.Encoding` asks HF for).

    Offsets and token strings are made on first use: few calls read them.
    """

    __slots__ = ("ids", "state", "texts", "allowed", "words", "_offsets", "_tokens")

    def __init__(self, ids: list[int], state=None, texts=(), allowed=(), words=None):
        self.ids, self.state, self.texts, self.allowed, self.words = (
            ids,
            state,
            texts,
            allowed,
            words,
        )
        self._offsets = self._tokens = None

    def offsets(self) -> list[tuple[int, int]]:
        """HF's offsets of the ids, in characters of their text (or word)."""
        if self._offsets is None:
            self._offsets = [o for t in self.texts for o in self.state.offsets(t, self.allowed)]
        return self._offsets

    def tokens(self) -> list[str]:
        """HF's token strings: the vocabulary's, and for an added token that
        strips spaces (lstrip, rstrip) the text it was matched on, spaces included."""
        if self._tokens is None:
            token_of, stripping = self.state.token_of, self.state.stripping_ids
            tokens = [token_of[i] for i in self.ids]
            if stripping and not stripping.isdisjoint(self.ids):
                offsets = self.offsets()
                for k, i in enumerate(self.ids):
                    if i in stripping:
                        text = self.texts[0 if self.words is None else self.words[k]]
                        tokens[k] = text[offsets[k][0] : offsets[k][1]]
            self._tokens = tokens
        return self._tokens


class Window:
    """Tokens ``start:stop`` of a `Source`, with one type id; `trims` are the
    ``add_prefix_space`` flags of the offset trimmings applied (ByteLevel and
    RoBERTa post-processors with ``trim_offsets``), in order."""

    __slots__ = ("src", "start", "stop", "type_id", "trims")

    def __init__(self, src: Source, start: int, stop: int, type_id: int, trims: tuple = ()):
        self.src, self.start, self.stop, self.type_id, self.trims = src, start, stop, type_id, trims

    def __len__(self) -> int:
        return self.stop - self.start

    def retyped(self, type_id: int) -> "Window":
        return Window(self.src, self.start, self.stop, type_id, self.trims)

    def ids(self) -> list[int]:
        return self.src.ids[self.start : self.stop]

    def offsets(self) -> list[tuple[int, int]]:
        offsets = self.src.offsets()[self.start : self.stop]
        for add_prefix_space in self.trims:
            offsets = trim_offsets(self.tokens(), offsets, add_prefix_space)
        return offsets

    def tokens(self) -> list[str]:
        return self.src.tokens()[self.start : self.stop]

    def words(self) -> list:
        if self.src.words is None:
            raise LookupError("word ids of raw text")
        return self.src.words[self.start : self.stop]

    special, attention = 0, 1  # special_tokens_mask and attention_mask values


class Special:
    """Tokens a post-processor adds (BOS, EOS, CLS...): offsets (0, 0), special."""

    __slots__ = ("_ids", "_tokens", "type_id")
    special, attention = 1, 1

    def __init__(self, ids: tuple, tokens: tuple, type_id: int):
        self._ids, self._tokens, self.type_id = ids, tokens, type_id

    def __len__(self) -> int:
        return len(self._ids)

    def retyped(self, type_id: int) -> "Special":
        return Special(self._ids, self._tokens, type_id)

    def ids(self) -> list[int]:
        return list(self._ids)

    def offsets(self) -> list[tuple[int, int]]:
        return [(0, 0)] * len(self._ids)

    def tokens(self) -> list[str]:
        return list(self._tokens)

    def words(self) -> list:
        return [None] * len(self._ids)


class Pad:
    """Padding: `n` tokens `pad_id`, attention 0, special 1, offsets (0, 0)."""

    __slots__ = ("n", "pad_id", "type_id", "token")
    special, attention = 1, 0

    def __init__(self, n: int, pad_id: int, type_id: int, token: str):
        self.n, self.pad_id, self.type_id, self.token = n, pad_id, type_id, token

    def __len__(self) -> int:
        return self.n

    def retyped(self, type_id: int) -> "Pad":
        return Pad(self.n, self.pad_id, type_id, self.token)

    def ids(self) -> list[int]:
        return [self.pad_id] * self.n

    def offsets(self) -> list[tuple[int, int]]:
        return [(0, 0)] * self.n

    def tokens(self) -> list[str]:
        return [self.token] * self.n

    def words(self) -> list:
        return [None] * self.n


def trim_offsets(tokens: list[str], offsets: list, add_prefix_space: bool) -> list:
    """HF's ``process_offsets``: offsets without the leading and trailing
    spaces of their token, except the prefix space ``add_prefix_space`` put
    before the first token."""
    out = []
    for i, (token, (start, end)) in enumerate(zip(tokens, offsets)):
        lead = _run(token, range(len(token)))
        trail = _run(token, range(len(token) - 1, -1, -1))
        if lead and not (lead == 1 and add_prefix_space and (i == 0 or start == 0)):
            start = min(start + lead, end)
        if trail and end >= trail:
            end = max(end - trail, start)
        out.append((start, end))
    return out


def _run(token: str, order: range) -> int:
    """How many characters of `token`, taken in `order`, are spaces before the first that is not."""
    n = 0
    for k in order:
        if token[k] not in _WHITE_SPACE:
            break
        n += 1
    return n


class Enc:
    """An encoding: `parts`, HF's ``sequence_ranges`` (`ranges`: sequence id ->
    (start, stop) in tokens) and the `overflowing` encodings truncation made."""

    __slots__ = ("parts", "ranges", "overflowing")

    def __init__(self, parts: list, ranges: dict | None = None, overflowing: list | None = None):
        self.parts = parts
        self.ranges = {} if ranges is None else ranges
        self.overflowing = [] if overflowing is None else overflowing

    @classmethod
    def of(cls, src: Source, type_id: int) -> "Enc":
        return cls([Window(src, 0, len(src.ids), type_id)])

    def __len__(self) -> int:
        return sum(map(len, self.parts))

    def clone(self) -> "Enc":
        return Enc(list(self.parts), dict(self.ranges), [o.clone() for o in self.overflowing])

    def set_sequence_id(self, sequence_id: int) -> None:
        self.ranges[sequence_id] = (0, len(self))

    def set_type_ids(self, type_id: int) -> None:
        self.parts = [p.retyped(type_id) for p in self.parts]

    def trim(self, add_prefix_space: bool) -> None:
        """Record a ``process_offsets`` on this encoding's windows (each
        encoding trimmed is one sequence's window, or empty)."""
        self.parts = [
            Window(p.src, p.start, p.stop, p.type_id, p.trims + (add_prefix_space,))
            for p in self.parts
        ]

    # ---- truncation (encoding.rs `truncate`, truncation.rs `truncate_encodings`) ----

    def truncate(self, max_len: int, stride: int, direction: str) -> None:
        n = len(self)
        if max_len >= n:
            return
        if max_len == 0:
            old = Enc(self.parts, self.ranges, self.overflowing)
            self.parts, self.ranges, self.overflowing = [], {}, [old]
            return
        if stride >= max_len:
            raise Unserved(f"stride {stride} >= max_length {max_len} (HF raises)")
        (window,) = self.parts  # a sequence's own encoding, before any post-processing
        spans = _windows(n, max_len, max_len - stride, direction)
        cut = [
            Window(window.src, window.start + a, window.start + b, window.type_id, window.trims)
            for a, b in spans
        ]
        self.parts, self.ranges = [cut[0]], {}
        self.overflowing = [Enc([w]) for w in cut[1:]]

    # ---- merging (encoding.rs `merge_with`, growing_offsets=false) ------------------

    def merge_with(self, pair: "Enc") -> None:
        overflowings = []
        for mine in self.overflowing:
            joined = mine.clone()
            joined.merge_with(pair.clone())
            overflowings.append(joined)
            for theirs in pair.overflowing:
                joined = mine.clone()
                joined.merge_with(theirs.clone())
                overflowings.append(joined)
        for theirs in pair.overflowing:
            joined = self.clone()
            joined.merge_with(theirs.clone())
            overflowings.append(joined)
        n = len(self)
        self.ranges.update({k: (a + n, b + n) for k, (a, b) in pair.ranges.items()})
        self.parts = self.parts + pair.parts
        self.overflowing = overflowings

    # ---- padding (encoding.rs `pad`) ---------------------------------------------

    def pad(self, target: int, pad_id: int, pad_type_id: int, token: str, direction: str) -> None:
        for o in self.overflowing:
            o.pad(target, pad_id, pad_type_id, token, direction)
        n = len(self)
        if n >= target:
            return
        pad = Pad(target - n, pad_id, pad_type_id, token)
        if direction == "left":
            self.parts = [pad] + self.parts
            self.ranges = {k: (a + pad.n, b + pad.n) for k, (a, b) in self.ranges.items()}
        else:
            self.parts = self.parts + [pad]

    # ---- what an Encoding shows ----------------------------------------------------

    def ids(self) -> list[int]:
        if len(self.parts) == 1:
            return self.parts[0].ids()
        out: list[int] = []
        for p in self.parts:
            out += p.ids()
        return out

    def type_ids(self) -> list[int]:
        return self._per_part("type_id")

    def special_tokens_mask(self) -> list[int]:
        return self._per_part("special")

    def attention_mask(self) -> list[int]:
        return self._per_part("attention")

    def _per_part(self, name: str) -> list[int]:
        """Each part's attribute `name` for each of its tokens."""
        out: list[int] = []
        for p in self.parts:
            out += [getattr(p, name)] * len(p)
        return out

    def offsets(self) -> list[tuple[int, int]]:
        return self._joined("offsets")

    def tokens(self) -> list[str]:
        return self._joined("tokens")

    def words(self) -> list:
        """HF's word ids; LookupError when a window is raw text (HF knows its pre-tokens)."""
        return self._joined("words")

    def _joined(self, name: str) -> list:
        out: list = []
        for p in self.parts:
            out += getattr(p, name)()
        return out

    def n_sequences(self) -> int:
        return len(self.ranges) or 1

    def sequence_ids(self) -> list:
        n = len(self)
        ids: list = [None] * n
        for seq in range(self.n_sequences()):
            a, b = self.ranges.get(seq, (0, n))
            ids[a:b] = [seq] * (b - a)
        return ids

    def token_to_sequence(self, token: int) -> int | None:
        if token > len(self):
            return None
        if not self.ranges:
            return 0
        return next((seq for seq, (a, b) in self.ranges.items() if a <= token < b), None)


def _windows(n: int, max_len: int, step: int, direction: str) -> list[tuple[int, int]]:
    """The (start, stop) of each piece `truncate` cuts n tokens into."""
    spans = []
    if direction == "right":
        for start in range(0, n, step):
            stop = min(start + max_len, n)
            spans.append((start, stop))
            if stop == n:
                break
    else:
        for last in range(n - 1, -1, -step):
            start = max(last + 1 - max_len, 0)
            spans.append((start, last + 1))
            if start == 0:
                break
    return spans


def truncate_encodings(
    enc: Enc, pair: Enc | None, max_length: int, stride: int, strategy: str, direction: str
) -> None:
    """HF's ``truncate_encodings``, in place; `Unserved` where HF raises."""
    if max_length == 0:
        enc.truncate(0, stride, direction)
        if pair is not None:
            pair.truncate(0, stride, direction)
        return
    total = len(enc) + (len(pair) if pair is not None else 0)
    if total <= max_length:
        return
    to_remove = total - max_length
    if strategy == "longest_first":
        if pair is None:
            enc.truncate(total - to_remove, stride, direction)
            return
        n1, n2 = len(enc), len(pair)
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        if swap:
            n1, n2 = n2, n1
        enc.truncate(n1, stride, direction)
        pair.truncate(n2, stride, direction)
        return
    if strategy not in ("only_first", "only_second"):
        raise Unserved(f"truncation strategy {strategy!r}")
    target = enc if strategy == "only_first" else pair
    if target is None:
        raise Unserved("only_second truncation of a single sequence (HF raises)")
    if len(target) <= to_remove:
        raise Unserved("sequence too short to truncate to max_length (HF raises)")
    target.truncate(len(target) - to_remove, stride, direction)


def merge(encodings: list[Enc]) -> Enc:
    """``Encoding::merge(encodings, false)``: from an empty encoding, merge each in turn."""
    out = Enc([])
    for e in encodings:
        out.merge_with(e)
    return out
