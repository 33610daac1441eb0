"""The vocabulary side of `bytepair.Tokenizer` (`VocabHolder`): `vocab` and
`merges`, the special tokens' ids, and the sizes tiktoken and HF report.

A tokenizer read from a ``.tiktoken`` file by the core (`_core.rank_table`)
holds no Python vocab at first: `vocab` and `merges` are made from the core's
table when first asked for (200k bytes objects and tuples are a third of
loading o200k_base), and sizes and special-token checks ask the table.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from bytepair.encoding.text import check_encodable, check_id

if TYPE_CHECKING:
    from bytepair import _core


def copy_tables(
    vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Copies of `vocab` (ids checked: ints in [0, 2**32); tokens as bytes)
    and `merges` (as tuples of bytes) that the caller cannot change. Tables
    that are already plain ints, bytes and tuples (every loader's) are copied
    whole after checks at C speed (a Python loop per token was a large share of
    loading o200k's tokenizer.json)."""
    ids, values = list(vocab.keys()), list(vocab.values())
    plain_vocab = not ids or (
        set(map(type, ids)) == {int}
        and 0 <= min(ids)
        and max(ids) < 1 << 32
        and set(map(type, values)) == {bytes}
    )
    plain_merges = not merges or (
        set(map(type, merges)) == {tuple}
        and set(map(len, merges)) == {2}
        and set(map(type, itertools.chain.from_iterable(merges))) == {bytes}
    )
    vocab = (
        dict(zip(ids, values))
        if plain_vocab
        else {check_id(i, "vocab"): bytes(b) for i, b in vocab.items()}
    )
    merges = list(merges) if plain_merges else [(bytes(a), bytes(b)) for a, b in merges]
    return vocab, merges


def shared_special_ids(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Mapping[str, int],
) -> frozenset[int]:
    """The ids of `special_tokens` that are also ordinary tokens (see
    `VocabHolder._shared_special_ids`); the core's encoder keeps the same ids
    (``CoreBPE.new``)."""
    special_ids = set(special_tokens.values())
    if not special_ids:
        return frozenset()
    held = {b for i, b in vocab.items() if i not in special_ids}
    made = {a + b for a, b in merges}
    return frozenset(
        i
        for i in special_ids
        if (token := vocab.get(i)) is not None
        and (len(token) == 1 or token in made)
        and token not in held
    )


class VocabHolder:
    """`vocab`, `merges` and `special_tokens` of a Tokenizer, made on demand
    from `_rank_table` when it is set."""

    _rank_table: "_core.RankTable | None"
    _vocab: dict[int, bytes] | None
    _merges: list[tuple[bytes, bytes]] | None
    special_tokens: dict[str, int]

    @property
    def vocab(self) -> dict[int, bytes]:
        """id -> token bytes, special tokens included (as their UTF-8 bytes)."""
        if self._vocab is None:
            self._make_tables()
        return self._vocab

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merge table: (left bytes, right bytes) in rank order."""
        if self._merges is None:
            self._make_tables()
        return self._merges

    def _make_tables(self) -> None:
        """`vocab` and `merges` from the rank table the core read."""
        self._vocab, self._merges = self._rank_table.python_tables()
        self._add_special_entries()

    def _token_bytes(self, i: int) -> bytes | None:
        """``vocab.get(i)``, without making `vocab` from a rank table."""
        if self._vocab is None:
            return self._rank_table.token(i) if 0 <= i < 2**32 else None
        return self._vocab.get(i)

    def _add_special_entries(self) -> None:
        """`vocab` holds every id: each special token as its UTF-8 bytes (HF's
        ``get_vocab()`` convention; `mergeable_ranks` leaves them out)."""
        for t, i in self.special_tokens.items():
            self._vocab.setdefault(i, t.encode("utf-8"))

    def _assign_special_ids(
        self, special_tokens: Sequence[str] | Mapping[str, int]
    ) -> dict[str, int]:
        """special token -> id: a mapping as given (checked), a sequence given
        the id of a vocab entry with the same bytes, else the next free ids."""
        if isinstance(special_tokens, str):
            raise TypeError("special_tokens must be a sequence of strings, not a single string")
        if isinstance(special_tokens, Mapping):
            pairs = [
                (str(t), check_id(i, f"special token {t!r}")) for t, i in special_tokens.items()
            ]
        else:
            pairs = []
            # No special tokens, no lookups: `vocab` of a rank table is made
            # only when asked for (for o200k it is ~40 MB of Python objects).
            special_tokens = list(special_tokens)
            if special_tokens:
                by_bytes = {b: i for i, b in self.vocab.items()}
                next_id = max(self.vocab, default=-1) + 1
            for t in special_tokens:
                if not isinstance(t, str):
                    raise TypeError(f"special token {t!r} is not a str")
                check_encodable(t, "special token")
                if t.encode() in by_bytes:
                    pairs.append((t, by_bytes[t.encode()]))
                else:
                    pairs.append((t, next_id))
                    next_id += 1
        out: dict[str, int] = {}
        owner: dict[int, str] = {}
        for t, i in pairs:
            if not t:
                raise ValueError("special tokens must not be empty")
            if t in out:
                raise ValueError(f"special token {t!r} is given twice")
            if i in owner:
                raise ValueError(f"special tokens {owner[i]!r} and {t!r} both have id {i}")
            check_encodable(t, "special token")
            held = self._token_bytes(i)
            if held is not None and held != t.encode():
                raise ValueError(
                    f"special token {t!r} has id {i}, which the vocab gives to {held!r}"
                )
            out[t] = i
            owner[i] = t
        return out

    def _shared_special_ids(self) -> frozenset[int]:
        """Special tokens that are ordinary tokens too, under one id: a special
        token whose bytes are one byte or what a merge makes, which no other
        id holds (HF's added token that is in ``model.vocab``; tiktoken's
        special token at the rank of its bytes). Merges may make them and
        `encode_ordinary` gives that id; `mergeable_ranks` lists them."""
        shared = self.__dict__.get("_shared_ids")
        if shared is None:
            shared = shared_special_ids(self.vocab, self.merges, self.special_tokens)
            self.__dict__["_shared_ids"] = shared
        return shared

    @property
    def vocab_size(self) -> int:
        """Number of ids, special tokens included: ``len(vocab)``."""
        if self._vocab is None:
            specials = set(self.special_tokens.values())
            return len(self._rank_table) + sum(self._token_bytes(i) is None for i in specials)
        return len(self.vocab)

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's `n_vocab`)."""
        if self._vocab is None:
            return max(self._rank_table.max_rank(), *self.special_tokens.values(), -1) + 1
        return max(self.vocab, default=-1) + 1
