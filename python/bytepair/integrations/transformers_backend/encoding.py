"""`Encoding`: what transformers gets in place of a ``tokenizers.Encoding``.

The ids are made when the call is served; every other attribute (type ids,
masks, offsets, tokens, sequence ids, overflowing) is made from the encoding's
parts (`model.Enc`) the first time it is read. Word ids and what depends on
them (``word_to_tokens``, ``char_to_word``...) are HF's pre-token indices for
raw text, which bytepair does not keep: the first such read encodes the same
input with a private copy of HF's backend (`MirrorContext`) and answers from
that encoding, as do the mutating methods (``pad``, ``truncate``). Pickled or
copied, an `Encoding` becomes that ``tokenizers.Encoding``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from bytepair.integrations.transformers_backend.model import Enc
from bytepair.integrations.transformers_backend.processors import Padding, Truncation


class MirrorContext:
    """How to encode one input with HF to get the same encoding: the input as
    HF's ``encode`` takes it, the call's settings, the padding targets applied
    (per input, then for the batch) and the path to it among the overflowing."""

    __slots__ = (
        "state",
        "inputs",
        "pretokenized",
        "add_special",
        "split",
        "truncation",
        "padding",
        "targets",
        "path",
        "_root",
    )

    def __init__(
        self,
        state,
        inputs: tuple,
        pretokenized: bool,
        add_special: bool,
        split: bool,
        truncation: Truncation | None,
        padding: Padding | None,
        targets: tuple = (),
        path: tuple = (),
        root: list | None = None,
    ):
        self.state, self.inputs, self.pretokenized = state, inputs, pretokenized
        self.add_special, self.split = add_special, split
        self.truncation, self.padding, self.targets, self.path = truncation, padding, targets, path
        # HF's encoding of the input, padded: shared with the overflowing's contexts.
        self._root = [None] if root is None else root

    def _fields(self) -> list:
        return [getattr(self, f) for f in self.__slots__[:7]]

    def child(self, k: int) -> "MirrorContext":
        return MirrorContext(*self._fields(), self.targets, self.path + (k,), self._root)

    def with_targets(self, targets: tuple) -> "MirrorContext":
        return MirrorContext(*self._fields(), targets, self.path)

    def context(self, k=None) -> "MirrorContext":
        return self

    def model(self, k=None, ids=None):
        raise AssertionError("an encoding served the long way has its model")

    def hf_encoding(self):
        """The ``tokenizers.Encoding`` HF makes of this input with these settings
        (shared: copy it before changing it)."""
        cache = self._root
        if cache[0] is None:
            root = self.state.mirror_encode(
                self.inputs, self.pretokenized, self.add_special, self.split, self.truncation
            )
            p = self.padding
            for target in self.targets:
                root.pad(
                    target,
                    direction=p.direction,
                    pad_id=p.pad_id,
                    pad_type_id=p.pad_type_id,
                    pad_token=p.pad_token,
                )
            cache[0] = {(): root}
        return _node(cache[0], self.path)


def _node(nodes: dict, path: tuple):
    """The encoding at `path` among the overflowing of `nodes[()]`; each
    ``overflowing`` list (a copy on every read in tokenizers) is read once."""
    if path not in nodes:
        parent = _node(nodes, path[:-1])
        kids = nodes.get(("overflowing",) + path[:-1])
        if kids is None:
            kids = nodes[("overflowing",) + path[:-1]] = parent.overflowing
        nodes[path] = kids[path[-1]]
    return nodes[path]


class Encoding:
    """Stands in for ``tokenizers.Encoding`` (the same attributes and methods).

    Args:
        ids: list[int], the token ids (None: made from the model when read).
        how: what made it: ``how.context(k)`` is its `MirrorContext`,
            ``how.model(k, ids)`` its `model.Enc` (asked only when `enc` is None).
        enc: its `model.Enc`, or None to make it when first needed.
        n_sequences: HF's ``n_sequences`` when known without the model.
        padded: False when no padding was asked for (every attention 1).
        k: its index among the encodings `how` makes.
    """

    __slots__ = ("_ids", "_how", "_k", "_enc", "_n_seq", "_padded", "_hf", "_mutated", "_memo")

    def __init__(self, ids, how, enc=None, n_sequences=None, padded=True, k=None):
        self._ids, self._how, self._k, self._enc, self._n_seq, self._padded = (
            ids,
            how,
            k,
            enc,
            n_sequences,
            padded,
        )
        self._hf = self._memo = None
        self._mutated = False

    def _model(self) -> Enc:
        if self._enc is None:
            self._enc = self._how.model(self._k, self._ids)
        return self._enc

    def _context(self) -> MirrorContext:
        return self._how.context(self._k)

    def _mirror(self):
        if self._hf is None:
            self._hf = self._context().hf_encoding()
        return self._hf

    def _made(self, name: str, make: Callable[[], list]) -> list:
        """Attribute `name`, made once from the model (or HF's, after a
        mutation); a new list on each read, as HF's (a caller may change it)."""
        return list(self._kept(name, make))

    def _kept(self, name: str, make: Callable[[], list]) -> list:
        if self._mutated:
            return getattr(self._hf, name)
        if self._memo is None:
            self._memo = {}
        value = self._memo.get(name)
        if value is None:
            value = self._memo[name] = make()
        return value

    # ---- attributes ------------------------------------------------------------

    @property
    def ids(self) -> list[int]:
        """A new list on each read, as HF's (a caller may change it)."""
        if self._mutated:
            return self._hf.ids
        if self._ids is None:
            self._ids = self._model().ids()
        return list(self._ids)

    @property
    def attention_mask(self) -> list[int]:
        if not self._padded and not self._mutated:
            return [1] * len(self)
        return self._made("attention_mask", lambda: self._model().attention_mask())

    @property
    def type_ids(self) -> list[int]:
        return self._made("type_ids", lambda: self._model().type_ids())

    @property
    def special_tokens_mask(self) -> list[int]:
        return self._made("special_tokens_mask", lambda: self._model().special_tokens_mask())

    @property
    def offsets(self) -> list[tuple[int, int]]:
        return self._made("offsets", lambda: self._model().offsets())

    @property
    def tokens(self) -> list[str]:
        return self._made("tokens", lambda: self._model().tokens())

    @property
    def sequence_ids(self) -> list:
        return self._made("sequence_ids", lambda: self._model().sequence_ids())

    @property
    def word_ids(self) -> list:
        return self._made("word_ids", self._words)

    @property
    def words(self) -> list:
        return self._made("words", self._words)

    def _words(self) -> list:
        try:
            return self._model().words()
        except LookupError:  # raw text: HF's pre-token indices
            return self._mirror().word_ids

    @property
    def n_sequences(self) -> int:
        if self._mutated:
            return self._hf.n_sequences
        if self._n_seq is None:
            self._n_seq = self._model().n_sequences()
        return self._n_seq

    @property
    def overflowing(self) -> list["Encoding"]:
        return self._made(
            "overflowing",
            lambda: [
                Encoding(o.ids(), self._context().child(k), enc=o)
                for k, o in enumerate(self._model().overflowing)
            ],
        )

    def __len__(self) -> int:
        if self._mutated:
            return len(self._hf)
        if self._ids is None:
            self._ids = self._model().ids()
        return len(self._ids)

    def __repr__(self) -> str:
        return (
            f"Encoding(num_tokens={len(self)}, attributes=[ids, type_ids, tokens, offsets, "
            "attention_mask, special_tokens_mask, overflowing])"
        )

    # ---- lookups -----------------------------------------------------------------

    def token_to_sequence(self, token_index: int) -> int | None:
        if self._mutated:
            return self._hf.token_to_sequence(token_index)
        return self._model().token_to_sequence(token_index)

    def token_to_chars(self, token_index: int) -> tuple[int, int] | None:
        if self._mutated:
            return self._hf.token_to_chars(token_index)
        if self.token_to_sequence(token_index) is None:
            return None
        offsets = self._kept("offsets", lambda: self._model().offsets())
        return offsets[token_index] if 0 <= token_index < len(offsets) else None

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> int | None:
        if self._mutated:
            return self._hf.char_to_token(char_pos, sequence_index)
        n = len(self)
        start, stop = self._model().ranges.get(sequence_index, (0, n))
        if stop > n:
            return None
        offsets = self._kept("offsets", lambda: self._model().offsets())
        for k, (a, b) in enumerate(offsets[start:stop]):
            if a <= char_pos < b:
                return start + k
        return None

    # Word lookups and mutations: HF's encoding of the same input answers.

    def token_to_word(self, token_index: int) -> int | None:
        return self._mirror().token_to_word(token_index)

    def word_to_tokens(self, word_index: int, sequence_index: int = 0):
        return self._mirror().word_to_tokens(word_index, sequence_index)

    def word_to_chars(self, word_index: int, sequence_index: int = 0):
        return self._mirror().word_to_chars(word_index, sequence_index)

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None:
        return self._mirror().char_to_word(char_pos, sequence_index)

    def _own(self):
        """HF's encoding of this one, a copy of its own to change."""
        if not self._mutated:
            self._hf = copy.deepcopy(self._mirror())
            self._mutated = True
        return self._hf

    def pad(self, length: int, **kwargs) -> None:
        self._own().pad(length, **kwargs)

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        self._own().truncate(max_length, stride, direction)

    def set_sequence_id(self, sequence_id: int) -> None:
        self._own().set_sequence_id(sequence_id)

    def __reduce__(self):
        hf = self._mirror()
        return (type(hf), (), hf.__getstate__())
