"""Merge tables and rank tables: the checks every format shares.

A merge table ``[(a, b), ...]`` in rank order and a tiktoken rank table
``{token bytes: rank}`` describe the same encoder when token ``r`` of the rank
table is the merge of the two parts that BPE, allowed only lower ranks, leaves of
its bytes. bytepair encodes as tiktoken does (the rank of the concatenated bytes
decides; a pre-token that is a token is looked up whole), so a table read from a
file that encodes by merge *pairs* (GPT-2's ``encoder.py``, HuggingFace
``tokenizers``) gives the same ids only when its merges pass that check; these
functions enforce it and say which merge or token breaks it.

The per-token BPE runs in the Rust core (``_core.recover_merges``): for
o200k_base's 200k tokens, pure Python would take many times longer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from bytepair import _core
from bytepair.formats.hf_pipeline import refuse_pipeline


def bpe_parts(token: bytes, ranks: Mapping[bytes, int], limit: int) -> list[bytes]:
    """The parts BPE leaves of `token` when only tokens of rank below `limit` may
    form (pure Python; used to explain an error for one token)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < limit and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return parts
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def merges_from_ranks(
    ranks: Mapping[bytes, int], *, source: str, where: Callable[[bytes], str] | None = None
) -> list[tuple[bytes, bytes]]:
    """Recover the merge table of a tiktoken rank table.

    Args:
        ranks: token bytes -> rank (= token id), as in a ``.tiktoken`` file or
            ``tiktoken.Encoding._mergeable_ranks``. Single bytes are the base
            alphabet, not merges.
        source: names the table in error messages (a path, ``"<tiktoken.Encoding gpt2>"``).
        where: token -> extra location text for errors (e.g. ``"line 1234"``).

    Returns:
        ``[(left bytes, right bytes)]`` in rank order, one per token of two or
        more bytes.

    Raises:
        ValueError: a rank that is not an int in [0, 2**32), two tokens with the
            same rank, an empty token, a token that BPE with lower ranks does not
            split into exactly two parts (the message names the token, its rank and
            the parts it got), or a part that is a byte with no rank.
    """
    loc = where or (lambda _t: "")
    seen: dict[int, bytes] = {}
    for token, rank in ranks.items():
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < 1 << 32:
            raise ValueError(
                f"{source}: token {token!r}{loc(token)}: rank {rank!r} must be an integer in [0, "
                "2**32)"
            )
        if not token:
            raise ValueError(f"{source}: an empty token{loc(token)} (rank {rank}) is not allowed")
        if rank in seen:
            raise ValueError(
                f"{source}: tokens {seen[rank]!r}{loc(seen[rank])} and {token!r}{loc(token)} have "
                f"the same rank {rank}"
            )
        seen[rank] = token
    merged = [t for _, t in sorted((r, t) for t, r in ranks.items() if len(t) > 1)]
    splits = _core.recover_merges(merged)
    merges = []
    for token, k in zip(merged, splits):
        if k is None:
            r = ranks[token]
            parts = bpe_parts(token, ranks, r)
            raise ValueError(
                f"{source}: token {token!r}{loc(token)} with rank {r} is not a merge of two tokens "
                f"of lower rank: BPE with ranks below {r} leaves {len(parts)} parts {parts!r}; "
                "this is not a byte-level BPE rank table"
            )
        left, right = token[:k], token[k:]
        for part in (left, right):
            if part not in ranks:
                raise ValueError(
                    f"{source}: token {token!r}{loc(token)} is made from byte {part!r}, which has "
                    "no rank"
                )
        merges.append((left, right))
    return merges


def check_merges(
    merges: Sequence[tuple[bytes, bytes]], *, source: str, what: str = "merges"
) -> None:
    """Check that a merge table read from a pair-ranked format (GPT-2 files,
    tokenizer.json) encodes the same under rank-of-concatenation (tiktoken's
    rule, ours): merge r = (a, b) must be what BPE with merges 0..r-1 makes of
    the bytes a + b, and no two merges may make the same bytes.

    Raises:
        ValueError: naming `source`, ``what[r]`` and the split BPE gives instead.
    """
    # The common case, checked in the core; the loop below words a fault.
    if isinstance(merges, list) and _core.merge_table_passes(merges):
        return
    merged = [a + b for a, b in merges]
    splits = _core.recover_merges(merged)
    first: dict[bytes, int] = {}
    for r, ((a, b), k) in enumerate(zip(merges, splits)):
        token = merged[r]
        if token in first:
            raise ValueError(
                f"{source}: {what}[{r}] ({a!r}, {b!r}) makes {token!r}, which "
                f"{what}[{first[token]}] already makes; bytepair ranks tokens by their bytes (as "
                "tiktoken does) and cannot give two merges one result"
            )
        first[token] = r
        if k != len(a):
            ranks = {t: i for t, i in first.items()}
            parts = bpe_parts(token, ranks, r)
            raise ValueError(
                f"{source}: {what}[{r}] ({a!r}, {b!r}) is not what the merges before it make of "
                f"{token!r} (they give {parts!r}); such a table encodes differently by pair rank "
                "and by token rank, so bytepair cannot reproduce it exactly"
            )


def check_vocab_merges(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    *,
    rank_rule: bool,
    special_ids: frozenset[int] = frozenset(),
) -> None:
    """The `Tokenizer` constructor's check: no empty token and no bytes under
    two ids (but for a special token's: tiktoken lets a special token spell an
    ordinary one), every merge's parts and result in `vocab`; with
    `rank_rule`, also the loaders' rule (`check_merges`), so that what the
    constructor accepts `save` writes and `load` reads back.

    Raises:
        ValueError: naming the token, or the merge and the bytes at fault.
    """
    _check_tokens(vocab, special_ids)
    if isinstance(merges, list) and _core.merge_table_passes(
        merges, list(vocab.values()), rank_rule
    ):
        return
    known = set(vocab.values())
    for r, (a, b) in enumerate(merges):
        for part in (a, b, a + b):
            if part not in known:
                raise ValueError(f"merge {r} ({a!r}, {b!r}): {part!r} is not in the vocab")
    if rank_rule:
        check_merges(merges, source="Tokenizer", what="merges")


def _check_tokens(vocab: Mapping[int, bytes], special_ids: frozenset[int]) -> None:
    """ValueError for an empty token (no text encodes to it, and a rank file
    line cannot hold it) or for bytes under two ordinary ids (tiktoken, HF and
    GPT-2 files key each token by its bytes)."""
    ordinary = [b for i, b in vocab.items() if i not in special_ids]
    if b"" not in ordinary and len(set(ordinary)) == len(ordinary):
        return
    first: dict[bytes, int] = {}
    for i, b in vocab.items():
        if i in special_ids:
            continue
        if not b:
            raise ValueError(
                f"vocab[{i}] is empty: no text encodes to an empty token, and a .tiktoken "
                "file cannot hold one"
            )
        if b in first:
            raise ValueError(
                f"vocab[{first[b]}] and vocab[{i}] are both {b!r}: a vocabulary holds each "
                "token once (tiktoken, HF and GPT-2 files key tokens by their bytes)"
            )
        first[b] = i


def ranks_of(tok, *, purpose: str = "tiktoken") -> dict[bytes, int]:
    """tiktoken's ``mergeable_ranks`` for `tok`: ``{token bytes: id}``, where the
    id serves as the rank. Exact only when ids of merged tokens increase in merge
    order (our own layout, GPT-2, anything loaded from tiktoken) and every token of
    two or more bytes is made by a merge.

    Raises:
        ValueError: `tok` has a tokenizer.json pipeline (no rank file holds one),
            the same bytes under two ids, a multi-byte token no merge makes
            (tiktoken would merge into it, we would not), or ids out of merge order;
            the message names the token and ids.
    """
    refuse_pipeline(tok, purpose)
    # A special token that is an ordinary token too keeps its rank (tiktoken
    # allows a special token at the id of its bytes).
    special_ids = set(tok.special_tokens.values()) - tok._shared_special_ids()
    ranks: dict[bytes, int] = {}
    for i, b in sorted(tok.vocab.items()):
        if i in special_ids:
            continue
        if b in ranks:
            raise ValueError(
                f"{purpose}: bytes {b!r} have two ids ({ranks[b]} and {i}); a rank table holds one"
            )
        ranks[b] = i
    made = set()
    previous = None
    for r, (a, b) in enumerate(tok.merges):
        token = a + b
        if token in made:
            continue
        made.add(token)
        if token not in ranks:
            raise ValueError(
                f"{purpose}: merge {r} makes {token!r}, which is a special token, not a rank"
            )
        i = ranks[token]
        if previous is not None and i <= previous[1]:
            raise ValueError(
                f"{purpose}: merge {r} makes {token!r} with id {i}, below the id {previous[1]} of "
                f"an earlier merge ({previous[0]!r}); tiktoken uses ids as merge priorities, so "
                "ids must increase in merge order"
            )
        previous = (token, i)
    for b, i in ranks.items():
        if len(b) > 1 and b not in made:
            raise ValueError(
                f"{purpose}: token {b!r} (id {i}) is not made by any merge; tiktoken would merge "
                "into it, bytepair only looks it up whole"
            )
    return ranks
