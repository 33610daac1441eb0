"""The `Tokenizer`: a merge table, a vocabulary, special tokens and a pattern,
with tiktoken-exact encoding and decoding.

Encoding follows tiktoken (openai/tiktoken): special tokens first (text holding a
special-token string raises unless that token is allowed), then pre-tokenization
with the pattern, then rank-ordered merges inside each pre-token. The heavy work
runs in the Rust core (`bytepair._core`) with the GIL released.

Not here: training (`bytepair.train`), file formats (`bytepair.formats`; the
file methods, `save`, `load` and the rest, come from its `TokenizerFiles`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, AbstractSet, Literal

from bytepair import _core
from bytepair.encoding.helpers import TokenizerHelpers, document_seed, dropout_batch
from bytepair.encoding.text import (
    check_encodable,
    dropout_seed,
    fits_i64,
    has_surrogates,
    replace_surrogates,
    require_str,
    safe_blocks,
    with_surrogates_replaced,
)
from bytepair.encoding.vocab import VocabHolder, copy_tables
from bytepair.formats.reading import register_tokenizer_class
from bytepair.formats.tables import check_vocab_merges
from bytepair.formats.tokenizer_files import TokenizerFiles

if TYPE_CHECKING:
    import numpy

    from bytepair.formats.hf_pipeline import HFPipeline

AllowedSpecial = Literal["all"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]


class Tokenizer(VocabHolder, TokenizerHelpers, TokenizerFiles):
    """A byte-level BPE tokenizer.

    Args:
        vocab: token id -> the bytes it stands for. Ids need not be contiguous.
        merges: the merge table, ``(left bytes, right bytes)`` in rank order: the
            merge at position r has rank r, and lower ranks merge first.
        special_tokens: control tokens such as ``"<|endoftext|>"``, either a
            sequence of strings or a mapping string -> id. From a sequence, a
            special token takes the id the vocab already gives its UTF-8 bytes,
            else the next free id (in the order given).
        pattern: the pre-tokenization regex, or a preset name (``"gpt2"``,
            ``"cl100k"``, ``"o200k"``, ``"llama3"``, ``"qwen2"``).
        pipeline: a tokenizer.json pipeline (`bytepair.formats.hf_pipeline`:
            normalizers, pre-tokenizers, added-token rules) used instead of `pattern`.

    Attributes:
        vocab: dict[int, bytes], every id, special tokens included (as their
            UTF-8), as HF's ``get_vocab()`` and the CS336 ``(vocab, merges)``:
            ``len(vocab) == vocab_size``.
        mergeable_ranks: dict[bytes, int], tiktoken's table: the tokens that are
            not special -> their ids.
        n_vocab: one more than the largest id (tiktoken's; above `vocab_size`
            when ids have gaps).
        merges, special_tokens (str -> id), pattern: as given.

    Raises:
        ValueError: a merge whose parts or result are not in the vocab, two
            merges with one result or a merge that is not what BPE with the merges before it makes
            of its bytes (the loaders' rules, so that every Tokenizer saves to files that load), a
            duplicate id (two special tokens, or a special token and a vocab entry with other
            bytes), an empty special token, a lone surrogate in a special token or the pattern, or a
            pattern that does not compile.

    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"hi"}, [(b"h", b"i")])
    >>> tok.encode("hi hi")
    [256, 32, 256]
    >>> tok.decode([256, 32, 256])
    'hi hi'
    """

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Sequence[str] | Mapping[str, int] | None = None,
        pattern: str = "gpt2",
        *,
        pipeline: "HFPipeline | None" = None,
        _merges_checked: bool = False,
        _rank_table: "_core.RankTable | None" = None,
    ) -> None:
        # A table the core read from a .tiktoken file (`_core.rank_table`):
        # `vocab` and `merges` (ignored) are made from it when first asked for,
        # and the encoder is built from its tables, not from Python objects.
        self._rank_table = _rank_table
        self._vocab: dict[int, bytes] | None = None
        self._merges: list[tuple[bytes, bytes]] | None = None
        if _rank_table is None:
            self._vocab, self._merges = copy_tables(vocab, merges)
        self.pattern: str = check_encodable(pattern, "pattern")
        self.pipeline = pipeline
        self.special_tokens: dict[str, int] = {}
        self.special_tokens = self._assign_special_ids(special_tokens or ())
        if _rank_table is None:
            check_vocab_merges(
                self.vocab,
                self.merges,
                rank_rule=not _merges_checked,
                special_ids=frozenset(self.special_tokens.values()),
            )
        if self._vocab is not None:  # made already (a list of special tokens asks it for their ids)
            self._add_special_entries()
        self._build_core()

    @classmethod
    def _trusted(
        cls,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        special_tokens: dict[str, int],
        pattern: str,
        pipeline: "HFPipeline | None" = None,
    ) -> "Tokenizer":
        """A Tokenizer from parts that are valid by construction (the trainer's
        output): no copies, no checks (on code.txt these were a large share of `train`)."""
        tok = cls.__new__(cls)
        tok._rank_table = None
        tok._vocab, tok._merges, tok.special_tokens, tok.pattern = (
            vocab,
            merges,
            special_tokens,
            pattern,
        )
        tok.pipeline = pipeline
        tok._add_special_entries()
        tok._build_core()
        return tok

    def _build_core(self) -> None:
        if self._rank_table is not None:
            self._core = _core.CoreBPE.from_rank_table(
                self._rank_table, list(self.special_tokens.items()), self.pattern
            )
            return
        self._core = _core.CoreBPE(
            self.vocab,
            self.merges,
            list(self.special_tokens.items()),
            self.pattern,
            self.pipeline.core_spec() if self.pipeline is not None else None,
        )

    # ---- sizes and views -------------------------------------------------

    @property
    def mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's rank table: the bytes of every token that is not special ->
        its id (`vocab` holds every id, special tokens included)."""
        return dict(self._ids_by_bytes())

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.special_tokens)

    @property
    def pattern_regex(self) -> str:
        """The pre-tokenization regex (presets resolved to their full pattern)."""
        return _core.resolve_pattern(self.pattern)

    def __repr__(self) -> str:
        specials = list(self.special_tokens)  # tekken.json has 1,000: show the first 8
        shown = (
            repr(specials)
            if len(specials) <= 8
            else f"[{', '.join(map(repr, specials[:8]))}, ... {len(specials)} in all]"
        )
        return (
            f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
            f"special_tokens={shown}, pattern={self.pattern!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return (
            self.vocab,
            self.merges,
            self.special_tokens,
            self.pattern_regex,
            self.pipeline,
        ) == (other.vocab, other.merges, other.special_tokens, other.pattern_regex, other.pipeline)

    def __reduce__(self):
        # Checked when made; the merge rule runs on rayon, which hangs in a fork-started child.
        return (
            Tokenizer._trusted,
            (self.vocab, self.merges, self.special_tokens, self.pattern, self.pipeline),
        )

    # ---- encoding --------------------------------------------------------

    def _special_policy(
        self, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> tuple[list[str], list[str]]:
        """Resolve tiktoken-style arguments to (allowed, disallowed) token lists."""
        allowed = self.special_tokens_set if allowed_special == "all" else set(allowed_special)
        disallowed = (
            self.special_tokens_set - allowed
            if disallowed_special == "all"
            else set(disallowed_special)
        )
        unknown = (allowed | disallowed) - self.special_tokens_set
        if unknown:
            raise ValueError(f"not special tokens of this tokenizer: {sorted(unknown)!r}")
        return sorted(allowed), sorted(disallowed - allowed)

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        dropout: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> list[int]:
        """Encode a string into token ids, with tiktoken's special-token rules.

        Args:
            text: any str; lone surrogates are replaced by U+FFFD, as tiktoken does.
            allowed_special: special tokens to emit as their ids when their string
                occurs in `text` (``"all"`` for every one).
            disallowed_special: special tokens whose string in `text` is an error
                (``"all"``: every one not allowed; ``()`` to encode them as text).
            dropout: BPE-dropout probability p in [0, 1) (Provilkov et al., 2020):
                at every merge step each candidate merge is skipped with
                probability p, giving a random but valid segmentation (it always
                decodes back to `text`) for subword regularization in training.
                0 (the default) is the deterministic encoding. With p > 0 a
                pre-token that is itself a token is not looked up whole.
            seed: seed of the dropout draws, an int in [0, 2**64); the same seed
                gives the same ids. None: a fresh random seed per call.
            max_tokens: keep at most this many ids, cut where they decode to
                a prefix of `text` (never inside a character). None: all.

        Returns:
            list[int] of token ids. When special tokens overlap, the longest wins.

        Raises:
            TypeError: `text` is not a str (bytes: see `encode_bytes`).
            ValueError: `text` contains a disallowed special-token string (the
                message says how to allow it), a token named in the arguments
                is not a special token of this tokenizer, `dropout` is not in
                [0, 1), or `seed` is not in [0, 2**64).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
        >>> tok.encode("a<|eot|>", allowed_special="all")
        [97, 256]
        >>> tok.encode("aaaa", dropout=0.5, seed=0) == tok.encode("aaaa", dropout=0.5, seed=0)
        True
        """
        require_str(text, "encode")
        allowed, disallowed = self._special_policy(allowed_special, disallowed_special)
        if (
            isinstance(dropout, bool)
            or not isinstance(dropout, (int, float))
            or not 0 <= dropout < 1
        ):
            raise ValueError(f"dropout={dropout!r} must be a probability in [0, 1)")
        seed = dropout_seed(seed)
        if dropout == 0:
            ids = self._encode_checked(text, allowed, disallowed)
        else:
            ids = with_surrogates_replaced(
                self._core.encode_with_dropout, text, allowed, disallowed, float(dropout), seed
            )
        return ids if max_tokens is None else self._first_tokens(ids, max_tokens)

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode `text` ignoring special tokens (their strings are plain text).

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).encode_ordinary("hi")
        [104, 105]
        """
        require_str(text, "encode_ordinary")
        return with_surrogates_replaced(self._core.encode_ordinary, text)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        dropout: float = 0.0,
        seed: int | None = None,
    ) -> list[list[int]]:
        """Encode many texts in parallel (Rust threads, GIL released).

        Args:
            texts: the documents; each is encoded independently, like `encode`.
            num_threads: threads encoding, the calling thread included, which
                also turns finished ids into lists (default: one per core).
            dropout, seed: BPE-dropout as in `encode`; document i draws from a
                seed made of `seed` and i, so the ids do not depend on the
                number of threads.

        Returns:
            list of id lists, one per text, in order.
        """
        if dropout:
            return dropout_batch(
                self,
                list(texts),
                num_threads,
                dropout,
                seed,
                allowed_special=allowed_special,
                disallowed_special=disallowed_special,
            )
        allowed, disallowed = self._special_policy(allowed_special, disallowed_special)
        texts = list(texts)
        try:
            return self._core.encode_batch(texts, allowed, disallowed, num_threads)
        except UnicodeEncodeError:
            # A lone surrogate (UTF-8 cannot hold it) fails before any work; the
            # check costs nothing on the texts that have none.
            texts = [replace_surrogates(t) if has_surrogates(t) else t for t in texts]
            return self._core.encode_batch(texts, allowed, disallowed, num_threads)

    def encode_ordinary_batch(
        self, texts: Sequence[str], *, num_threads: int | None = None
    ) -> list[list[int]]:
        """Encode many texts in parallel, special-token strings as plain text
        (tiktoken's `encode_ordinary_batch`; no special-token scan at all).

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).encode_ordinary_batch(["hi", "a"])
        [[104, 105], [97]]
        """
        return self.encode_batch(texts, num_threads=num_threads, disallowed_special=())

    def encode_iterable(
        self,
        texts: Iterable[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> Iterator[int]:
        """Lazily encode a stream of strings (e.g. a file object, line by line)
        as if it were their concatenation, in bounded memory.

        The stream is cut into blocks of about 64K characters only where every
        preset pattern ends a pre-token and no special token can straddle: after
        a newline between a printable ASCII character and an ASCII letter or
        digit, or (presets only, for text without such newlines) between an ASCII
        letter and ASCII punctuation other than ``'`` (proof in
        crates/bytepair-core/src/cut.rs; a SentencePiece model cuts between
        two characters no merge joins, crates/bytepair-core/src/sentencepiece/cuts.rs).
        So the ids equal ``encode("".join(texts))``; a custom pattern that
        matches across such a newline may see different splits. Text with no
        safe cut at all (one giant word) is held whole.

        Yields:
            token ids (int), in order.
        """
        allowed, disallowed = self._special_policy(allowed_special, disallowed_special)
        for k, block in enumerate(safe_blocks(texts, self._chars_after_last_cut)):
            yield from self._encode_block(block, k > 0, allowed, disallowed)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        num_threads: int | None = 1,
    ) -> "numpy.ndarray":
        """`encode` as a 1-D ``numpy.uint32`` array (tiktoken's
        ``Encoding.encode_to_numpy``): the array owns the buffer the core encoded
        into, with no copy and no Python int per token; unlike tiktoken's, it is
        writeable. Same errors as `encode`. `num_threads` (default 1, as
        tiktoken; None: one per core) encode a text of over 2 MiB in ~1 MiB
        segments cut at safe cuts: the ids of one call on the whole."""
        require_str(text, "encode_to_numpy")
        allowed, disallowed = self._special_policy(allowed_special, disallowed_special)
        return with_surrogates_replaced(
            self._core.encode_to_numpy, text, allowed, disallowed, num_threads
        )

    def encode_blocks(
        self,
        texts: Iterable[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        dropout: float = 0.0,
        seed: int = 0,
    ) -> Iterator["numpy.ndarray"]:
        """Like `encode_iterable`, but yields one ``numpy.uint32`` array per block
        of about 64K characters or more: no Python object per token, for encoding
        files of any size in bounded memory. With `dropout`, block k is encoded
        as `encode` with dropout and a seed made of `seed` and k."""
        import numpy as np

        allowed, disallowed = self._special_policy(allowed_special, disallowed_special)
        for k, block in enumerate(safe_blocks(texts, self._chars_after_last_cut)):
            if dropout:
                ids = self.encode(
                    block,
                    allowed_special=allowed_special,
                    disallowed_special=disallowed_special,
                    dropout=dropout,
                    seed=document_seed(seed, k),
                )
                yield np.array(ids, dtype=np.uint32)
                continue
            yield self._encode_block(block, k > 0, allowed, disallowed, as_array=True)

    def _chars_after_last_cut(self, text: str) -> int | None:
        # Lone surrogates: one U+FFFD each keeps every character index.
        return with_surrogates_replaced(self._core.chars_after_last_cut, text)

    def _encode_block(
        self, block: str, continued: bool, allowed: list[str], disallowed: list[str], as_array=False
    ):
        """The ids of a block of a stream (`safe_blocks`), as a list or an
        array; `continued`: a block after the first, which a byte-level
        encoder encodes alike (SentencePiece models override this)."""
        if as_array:
            return with_surrogates_replaced(self._core.encode_to_numpy, block, allowed, disallowed)
        return self._encode_checked(block, allowed, disallowed)

    def _encode_checked(self, text: str, allowed: list[str], disallowed: list[str]) -> list[int]:
        return with_surrogates_replaced(self._core.encode, text, allowed, disallowed)

    def pretokenize(self, text: str) -> list[str]:
        """The pre-tokens of `text` under this tokenizer's pattern (special tokens
        not treated): the strings the merges run inside. Lone surrogates are
        U+FFFD in them, as in `encode`."""
        require_str(text, "pretokenize")
        return with_surrogates_replaced(self._core.pretokenize, text)

    # ---- decoding --------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Join the bytes of `ids` (special tokens give their UTF-8 string).

        Raises:
            ValueError: an id that is not in the vocabulary (the message names it).
        """
        return self._from_ids(self._core.decode_bytes, ids)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """Decode ids to text; bytes that are not UTF-8 follow `errors` (default
        ``"replace"``, as tiktoken).

        Raises:
            ValueError: an id that is not in the vocabulary (the message names it).
            UnicodeDecodeError: invalid UTF-8 with ``errors="strict"``.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> tok.decode([104, 105, 255])
        'hi\\ufffd'
        """
        if not isinstance(errors, str):
            raise TypeError(
                f"errors must be a str naming a codec error handler ('replace', 'strict', ...), "
                f"got {errors!r}"
            )
        return self._from_ids(lambda ids: self._core.decode_text(ids, errors), ids)

    @staticmethod
    def _from_ids(core_fn, ids: Iterable[int]):
        """`core_fn(ids)` on ids as a list, an out-of-range id as ValueError."""
        if not isinstance(ids, list):
            ids = list(ids)
        try:
            return core_fn(ids)
        except (OverflowError, TypeError):
            bad = next(i for i in ids if not fits_i64(i))
            raise ValueError(f"token id {bad!r} is not in the vocabulary") from None

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token id."""
        return self.decode_bytes([token_id])


register_tokenizer_class(Tokenizer)  # the class the file readers build
