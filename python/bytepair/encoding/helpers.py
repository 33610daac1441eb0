"""The everyday helpers of the tools practitioners come from, mixed into
`bytepair.Tokenizer` (`TokenizerHelpers`), each with the semantics of the tool
that owns the idea:

- tiktoken (openai/tiktoken, `tiktoken.core.Encoding`): `eot_token`,
  `max_token_value`, `is_special_token`, `encode_single_token`,
  `decode_tokens_bytes`, `token_byte_values`, `decode_batch`,
  `decode_with_offsets`, and `encode_bytes` (the idea of its `_encode_bytes`);
- HuggingFace tokenizers: `encode_with_offsets` (``Encoding.offsets`` of a
  byte-level BPE without offset trimming) and `decode_stream` (``DecodeStream``);
- `count_tokens`, for budgets, without a list of Python ints.

Units: offsets are in characters of the (surrogate-free) text, as Python
indexes str; ids are tokens; `encode_bytes` takes bytes.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from bytepair.encoding.text import dropout_seed, has_surrogates, replace_surrogates

if TYPE_CHECKING:
    import numpy

# Bytes that are not UTF-8, as `bytes.decode(..., "surrogateescape")` gives them.
_ESCAPED_BYTES = re.compile("([\udc80-\udcff]+)")


def char_index_of_bytes(data: bytes) -> "numpy.ndarray":
    """For each byte of UTF-8 `data`, the index of the character it is part of
    (a continuation byte at the very start counts as character 0)."""
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    starts = (raw & 0xC0) != 0x80
    return np.maximum(np.cumsum(starts, dtype=np.int64) - 1, 0)


def document_seed(seed: int, index: int) -> int:
    """The dropout seed of document `index` of a batch seeded with `seed`: one
    SplitMix64 step (Steele et al., 2014) of their combination, in [0, 2**64)."""
    z = (seed + (index + 1) * 0x9E3779B97F4A7C15) & (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (1 << 64) - 1
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (1 << 64) - 1
    return z ^ (z >> 31)


def dropout_batch(
    tok, texts: list[str], num_threads: int | None, dropout: float, seed: int | None, **special
) -> list[list[int]]:
    """`encode` with BPE-dropout of each text on a thread pool (the core
    releases the GIL); document i uses `document_seed(seed, i)`."""
    from concurrent.futures import ThreadPoolExecutor

    seed = dropout_seed(seed)
    cores = os.cpu_count() or 1
    if num_threads is not None and (
        isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1
    ):
        raise ValueError(f"num_threads={num_threads!r} must be a positive integer or None")
    threads = min(num_threads or cores, cores)  # capped at the cores, as the core's pools are

    def one(i: int) -> list[int]:
        return tok.encode(texts[i], dropout=dropout, seed=document_seed(seed, i), **special)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(one, range(len(texts))))


class DecodeStream:
    """Decode ids one at a time, as a model generates them (HuggingFace
    tokenizers' ``DecodeStream``): `step` returns the text that became complete
    UTF-8 with this id, or None while a character is still split between ids.
    No replacement character is emitted for a split character; the outputs
    joined equal ``tokenizer.decode(ids)`` for ids of valid UTF-8 text (bytes
    that can never be UTF-8 become U+FFFD, as in `decode`).

    Args:
        tokenizer: the `bytepair.Tokenizer` whose ids are streamed.
        skip_special_tokens: emit nothing for special-token ids.
    """

    def __init__(self, tokenizer, skip_special_tokens: bool = False):
        self._tokenizer = tokenizer
        self._skip = (
            frozenset(tokenizer.special_tokens.values()) if skip_special_tokens else frozenset()
        )
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def step(self, token_id: int) -> str | None:
        """Feed one id. Returns the newly complete text, or None if there is none yet.

        Raises:
            ValueError: an id that is not in the vocabulary.
        """
        if token_id in self._skip:
            return None
        return self._decoder.decode(self._tokenizer.decode_single_token_bytes(token_id)) or None


class TokenizerHelpers:
    """Helpers of `bytepair.Tokenizer` built on its encode and decode (see the
    module docstring). Expects ``vocab``, ``special_tokens``, ``encode``,
    ``encode_ordinary``, ``encode_to_numpy`` and ``decode_bytes``."""

    # ---- tiktoken's small helpers ------------------------------------------

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>`` (tiktoken's ``eot_token``).

        Raises:
            KeyError: this tokenizer has no such special token.
        """
        try:
            return self.special_tokens["<|endoftext|>"]
        except KeyError:
            raise KeyError("this tokenizer has no special token '<|endoftext|>'") from None

    @property
    def max_token_value(self) -> int:
        """The largest id, special tokens included (tiktoken's ``max_token_value``)."""
        return self.n_vocab - 1

    def is_special_token(self, token_id: int) -> bool:
        """Whether `token_id` is the id of a special token."""
        return token_id in self._special_ids()

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text or byte string that is one token whole: a special
        token's string, or the bytes of a vocabulary token (tiktoken's
        ``encode_single_token``).

        Raises:
            KeyError: it is not a single token.
        """
        if isinstance(text_or_bytes, str):
            if text_or_bytes in self.special_tokens:
                return self.special_tokens[text_or_bytes]
            key = replace_surrogates(text_or_bytes).encode("utf-8")  # as encode does
        else:
            key = bytes(text_or_bytes)
        try:
            return self._ids_by_bytes()[key]
        except KeyError:
            raise KeyError(f"{text_or_bytes!r} is not a single token") from None

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """The bytes of each id, one bytes object per token (tiktoken's
        ``decode_tokens_bytes``). ValueError for an id not in the vocabulary."""
        return [self.decode_single_token_bytes(t) for t in tokens]

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary token (those of `mergeable_ranks`), sorted
        (tiktoken's ``token_byte_values``)."""
        return sorted(self._ids_by_bytes())

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace") -> list[str]:
        """`decode` of each list of ids (tiktoken's ``decode_batch``)."""
        return [self.decode(ids, errors=errors) for ids in batch]

    # ---- offsets -------------------------------------------------------------

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """Decode `tokens` and give the character offset in the text where each
        token starts; a token that starts inside a character gets that
        character's offset (tiktoken's ``decode_with_offsets``).

        Returns:
            (text, offsets), ``len(offsets) == len(tokens)``.

        Raises:
            UnicodeDecodeError: the ids do not decode to valid UTF-8 (as tiktoken).
            ValueError: an id that is not in the vocabulary.
        """
        import numpy as np

        pieces = self.decode_tokens_bytes(tokens)
        data = b"".join(pieces)
        text = data.decode("utf-8", errors="strict")
        if not pieces:
            return text, []
        starts = np.cumsum([0] + [len(p) for p in pieces[:-1]], dtype=np.int64)
        return text, char_index_of_bytes(data)[starts].tolist()

    def encode_with_offsets(
        self, text: str, *, allowed_special="all", disallowed_special="all"
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """`encode`, with the span of `text` each token covers, in characters
        (HuggingFace ``Encoding.offsets`` of a byte-level BPE with
        ``trim_offsets=False``): ``offsets[i] = (start, end)``, ``text[start:end]``;
        tokens that split a character share its span. With a tokenizer.json
        pipeline the spans stay in the original text's characters when a
        normalizer changes it, as HF's do: a token made from a normalized
        character spans the character it came from, a prefix space the
        character after it. Special tokens are allowed by default, as HF's
        added tokens always are.

        Returns:
            (ids, offsets), ``len(offsets) == len(ids)``.

        Raises:
            ValueError: as `encode`.
        """
        import numpy as np

        if has_surrogates(text):  # encoded as U+FFFD, one character each
            text = replace_surrogates(text)
        if getattr(self, "pipeline", None) is not None:
            return self._pipeline_offsets(text, allowed_special, disallowed_special)
        ids = self.encode(
            text, allowed_special=allowed_special, disallowed_special=disallowed_special
        )
        if not ids:
            return ids, []
        lengths = np.fromiter(
            (len(b) for b in self.decode_tokens_bytes(ids)), dtype=np.int64, count=len(ids)
        )
        ends = np.cumsum(lengths)
        char_of = char_index_of_bytes(text.encode("utf-8"))
        starts, lasts = char_of[ends - lengths], char_of[ends - 1] + 1
        return ids, list(zip(starts.tolist(), lasts.tolist()))

    def _pipeline_offsets(
        self, text: str, allowed_special, disallowed_special
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """`encode_with_offsets` through a tokenizer.json pipeline: the core maps
        every token back to the original bytes it came from (a normalizer may
        change the text), which become character offsets here."""
        import numpy as np

        allowed, disallowed = self._special_policy(allowed_special, disallowed_special)
        ids, spans = self._core.encode_with_spans(text, allowed, disallowed)
        if not ids:
            return ids, []
        data = text.encode("utf-8")
        char_of = np.append(char_index_of_bytes(data), len(text))
        starts, ends = np.array(spans, dtype=np.int64).T
        lasts = np.where(ends > starts, char_of[np.maximum(ends - 1, 0)] + 1, char_of[starts])
        return ids, list(zip(char_of[starts].tolist(), lasts.tolist()))

    # ---- streams, raw bytes, counts ---------------------------------------------

    def decode_stream(self, skip_special_tokens: bool = False) -> DecodeStream:
        """A `DecodeStream` over this tokenizer: ``stream.step(id)`` returns text
        as soon as it is complete UTF-8 (HF tokenizers' ``DecodeStream``)."""
        return DecodeStream(self, skip_special_tokens)

    def encode_bytes(self, data: bytes) -> list[int]:
        """Encode any bytes, invalid UTF-8 included: each run of valid UTF-8 is
        encoded as text (`encode_ordinary`: special-token strings are text), each
        byte that is not UTF-8 becomes its byte token. ``decode_bytes(
        encode_bytes(b)) == b`` for every `b` (the idea of tiktoken's
        ``_encode_bytes``).

        Raises:
            TypeError: `data` is not bytes-like.
            ValueError: a byte this vocabulary has no token for.
        """
        if isinstance(data, str):
            raise TypeError("encode_bytes takes bytes; encode a str with encode")
        text = bytes(memoryview(data)).decode("utf-8", "surrogateescape")
        ids: list[int] = []
        for k, run in enumerate(_ESCAPED_BYTES.split(text)):
            if k % 2 == 0:
                ids += self.encode_ordinary(run) if run else []
            else:
                ids += [self._byte_id(ord(c) - 0xDC00) for c in run]
        return ids

    def count_tokens(
        self, text: str, *, allowed_special=frozenset(), disallowed_special="all"
    ) -> int:
        """The number of ids `encode` gives `text` (same arguments and errors),
        without building a list of them."""
        return len(
            self.encode_to_numpy(
                text, allowed_special=allowed_special, disallowed_special=disallowed_special
            )
        )

    def _first_tokens(self, ids: list[int], max_tokens: int) -> list[int]:
        """At most `max_tokens` of `ids`, cut where the next id does not start
        inside a character, so they decode to a prefix of the text."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise ValueError(f"max_tokens={max_tokens!r} must be a non-negative integer or None")
        n = min(max_tokens, len(ids))
        while n < len(ids) and n > 0 and self.decode_single_token_bytes(ids[n])[0] & 0xC0 == 0x80:
            n -= 1
        return ids[:n]

    # ---- lookups, built on first use ---------------------------------------------

    def _special_ids(self) -> frozenset[int]:
        return frozenset(self.special_tokens.values())

    def _ids_by_bytes(self) -> dict[bytes, int]:
        """Token bytes -> id of the ordinary tokens: special tokens excluded,
        but for those that are ordinary tokens too (built once)."""
        table = self.__dict__.get("_ids_by_bytes_table")
        if table is None:
            special = self._special_ids() - self._shared_special_ids()
            table = {b: i for i, b in self.vocab.items() if i not in special}
            self.__dict__["_ids_by_bytes_table"] = table
        return table

    def _byte_id(self, byte: int) -> int:
        try:
            return self._ids_by_bytes()[bytes([byte])]
        except KeyError:
            raise ValueError(f"byte 0x{byte:02x} has no token in this vocabulary") from None
