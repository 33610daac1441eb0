"""`SentencePieceTokenizer`: SentencePiece-style BPE (Llama 1/2, Mistral 7B,
Gemma, ...) with the API of `bytepair.Tokenizer`.

Why a subclass and not the same class: the artifacts differ. A byte-level
tokenizer is a merge table over bytes plus a pre-tokenization pattern; a
SentencePiece model is a list of pieces with scores and kinds (normal,
control, user-defined, byte, unknown, unused) plus a normalizer spec, and its
merges start from characters. The constructor, `save` and the file formats
are therefore its own; everything a caller encodes and decodes with
(`encode`, `encode_ordinary`, `encode_batch`, `encode_to_numpy`,
`encode_with_offsets`, `decode`, `decode_stream`, `count_tokens`, ...) is the
Tokenizer's, and ``isinstance(tok, bytepair.Tokenizer)`` holds, so code
written for one takes the other. `Tokenizer.load` returns one for a ``.model``
file.

Semantics (google/sentencepiece is the reference, checked in
tests/test_sentencepiece.py):

- ``encode_ordinary(text)`` is ``SentencePieceProcessor.encode(text)``;
- special tokens are the control pieces (``<s>``, ``</s>``, ``[INST]``, ...)
  and ``<unk>``, with tiktoken's policy as for every bytepair tokenizer:
  ``encode`` raises on their strings unless allowed; an allowed one is its id,
  and each text between them is encoded as ``sp.encode`` encodes it alone
  (each gets the dummy prefix);
- ``decode`` is ``sp.decode`` (control pieces invisible, ``<unk>`` as " ⁇ ",
  the dummy prefix removed, invalid bytes of byte pieces as U+FFFD);
  ``decode_bytes`` gives byte pieces' raw bytes instead;
- ``vocab[id]`` is what the piece stands for in text: "▁" as a space, a
  ``<0xNN>`` piece as its byte, a control piece or ``<unk>`` as its string.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Mapping, Sequence

from bytepair import _core
from bytepair.encoding.text import (
    fits_i64,
    has_surrogates,
    replace_surrogates,
    with_surrogates_replaced,
)
from bytepair.formats.spm import merges_of, register_spm_class, to_hf_json
from bytepair.tokenizer import Tokenizer

# ModelProto.SentencePiece.Type numbers.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
KIND_NAMES = {
    NORMAL: "NORMAL",
    UNKNOWN: "UNKNOWN",
    CONTROL: "CONTROL",
    USER_DEFINED: "USER_DEFINED",
    UNUSED: "UNUSED",
    BYTE: "BYTE",
}
SPACE = "\u2581"  # "▁", SentencePiece's whitespace symbol
_MODEL_TYPES = {1: "Unigram", 2: "BPE", 3: "WORD", 4: "CHAR"}


def piece_surface(piece: str, kind: int, escape_whitespaces: bool = True) -> bytes:
    """What a piece stands for in text: "▁" as a space, ``<0xNN>`` as its byte,
    other pieces as their UTF-8."""
    if kind == BYTE:
        return bytes([int(piece[3:5], 16)])
    if kind in (NORMAL, USER_DEFINED, UNUSED) and escape_whitespaces:
        piece = piece.replace(SPACE, " ")
    return piece.encode("utf-8")


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece BPE model (see the module docstring).

    Args:
        model: a ``.model`` file's bytes, or a parsed `_core.SentencePieceModel`.
        special_tokens: the special tokens (string -> id); default: every
            control piece and the ``<unk>`` piece.
        source: names the model in error messages.
        defer: build the encoder, the vocabulary and the list of pieces on
            first use (for a model known to be valid, as one trained here:
            writing it needs none of them); `special_tokens` is then taken
            as given, unchecked.

    Raises:
        ValueError: not a SentencePiece model, a model type other than BPE
            (Unigram, WORD, CHAR: named), or a model SentencePiece refuses
            (an empty or duplicate piece, no ``<unk>``, byte fallback without
            the 256 byte pieces, ...); the message names the piece.

    >>> tok = SentencePieceTokenizer.from_file("tokenizer.model")  # doctest: +SKIP
    >>> tok.encode_ordinary("Hello world")  # doctest: +SKIP
    [23325, 2294]
    """

    def __init__(
        self,
        model: "bytes | _core.SentencePieceModel",
        special_tokens: Mapping[str, int] | None = None,
        *,
        source: str = "the model",
        hf: dict | None = None,
        defer: bool = False,
    ) -> None:
        if isinstance(model, (bytes, bytearray, memoryview)):
            try:
                model = _core.SentencePieceModel.from_bytes(bytes(model))
            except ValueError as e:
                raise ValueError(f"{source}: {e}") from None
        kind = model.model_type()
        if kind != 2:
            raise ValueError(
                f"{source}: a SentencePiece {_MODEL_TYPES.get(kind, f'type {kind}')} model; "
                "only SentencePiece BPE models (model_type BPE) are supported"
            )
        self._model = model
        if not defer:
            self._pieces = model.pieces()
        self._normalizer = model.normalizer()
        self._trainer = model.trainer()
        self._rank_table = None
        self._merges = None
        self.pattern = "sentencepiece"
        self.pipeline = None
        if special_tokens is None:
            special_tokens = {
                p: i for i, (p, _, k) in enumerate(self._pieces) if k in (CONTROL, UNKNOWN)
            }
        self.special_tokens = dict(special_tokens)
        for t, i in self.special_tokens.items() if not defer else ():
            if not 0 <= i < len(self._pieces) or self._pieces[i][0] != t:
                raise ValueError(f"{source}: special token {t!r} is not piece {i} of the model")
        # A tokenizer.json read as HF runs it (`formats.spm.from_hf_spm`): its
        # departures from SentencePiece, and the document, written back by `save`.
        self._hf = dict(hf or {})
        self._hf_doc = None
        if not defer:
            self._vocab = self._make_vocab()
            self._core = self._make_core(source)

    def _make_vocab(self) -> dict[int, bytes]:
        escape = self._normalizer["escape_whitespaces"]
        return {i: piece_surface(p, k, escape) for i, (p, _, k) in enumerate(self._pieces)}

    def _make_core(self, source: str) -> "_core.CoreSPM":
        try:
            return _core.CoreSPM(self._model, list(self.special_tokens.items()), **self._hf)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None

    def __getattr__(self, name: str):
        # Reached only for attributes not set. With `defer` (a model trained
        # here, valid by construction) the encoder, the vocabulary and the
        # pieces are made on first use: training and writing the model need
        # none of them (their ~20 ms were a tenth of training 10 MB of enwiki).
        if name == "_core" and "_model" in self.__dict__:
            self._core = self._make_core("the model")
            return self._core
        if name == "_pieces" and "_model" in self.__dict__:
            self._pieces = self._model.pieces()
            return self._pieces
        if name == "_vocab" and "_model" in self.__dict__:
            self._vocab = self._make_vocab()
            return self._vocab
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _build_core(self) -> None:  # the core is built in __init__ (or on first use)
        pass

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "SentencePieceTokenizer":
        """Read a SentencePiece ``.model`` file (``tokenizer.model``).

        Raises:
            FileNotFoundError: no such file.
            ValueError: as the constructor, naming the file.
        """
        with open(path, "rb") as f:
            data = f.read()
        return cls(data, source=os.fspath(path))

    # ---- what the model holds ------------------------------------------------

    @property
    def pieces(self) -> list[tuple[str, float, str]]:
        """Every piece as (text, score, kind name), in id order."""
        return [(p, s, KIND_NAMES.get(k, str(k))) for p, s, k in self._pieces]

    @property
    def normalizer_spec(self) -> dict:
        """The normalizer spec: name, precompiled_charsmap, add_dummy_prefix,
        remove_extra_whitespaces, escape_whitespaces."""
        return dict(self._normalizer)

    @property
    def byte_fallback(self) -> bool:
        return bool(self._trainer["byte_fallback"])

    @property
    def unk_id(self) -> int:
        return next(i for i, (_, _, k) in enumerate(self._pieces) if k == UNKNOWN)

    def piece_to_id(self, piece: str) -> int:
        """The id of `piece` (SentencePiece's ``piece_to_id``: ``<unk>``'s for
        a string that is no piece)."""
        table = self.__dict__.get("_piece_ids")
        if table is None:
            table = {p: i for i, (p, _, _) in enumerate(self._pieces)}
            self.__dict__["_piece_ids"] = table
        return table.get(piece, self.unk_id)

    def id_to_piece(self, token_id: int) -> str:
        """The piece of `token_id`, as the model file spells it ("▁Hello")."""
        return self._pieces[token_id][0]

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merge table HF tokenizers would use for this model: every split
        of every normal piece into two pieces, by the piece's score (highest
        first), then its id (as ``transformers``' converter orders them);
        sides as the pieces stand in text ("▁" a space)."""
        if self._merges is None:
            self._merges = [
                (self._surface(a), self._surface(b)) for a, b in merges_of(self._pieces)
            ]
        return self._merges

    def _surface(self, piece: str) -> bytes:
        return piece_surface(piece, NORMAL, self._normalizer["escape_whitespaces"])

    @property
    def pattern_regex(self) -> str:
        """SentencePiece models have no pre-tokenization regex: ""."""
        return ""

    def model_bytes(self) -> bytes:
        """The model as a ``.model`` file's bytes."""
        return self._model.to_bytes()

    def __repr__(self) -> str:
        specials = list(self.special_tokens)
        shown = (
            repr(specials)
            if len(specials) <= 8
            else f"[{', '.join(map(repr, specials[:8]))}, ... {len(specials)} in all]"
        )
        return (
            f"SentencePieceTokenizer(vocab_size={self.vocab_size}, "
            f"byte_fallback={self.byte_fallback}, special_tokens={shown})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SentencePieceTokenizer):
            return NotImplemented
        return (self._pieces, self._normalizer, self.special_tokens) == (
            other._pieces,
            other._normalizer,
            other.special_tokens,
        ) and self._trainer == other._trainer

    def __reduce__(self):
        return (_from_pickle, (self.model_bytes(), self.special_tokens, self._hf, self._hf_doc))

    # ---- encoding --------------------------------------------------------------

    def encode(self, text: str, *, dropout: float = 0.0, **kwargs) -> list[int]:
        """`Tokenizer.encode`; BPE-dropout is not supported for SentencePiece
        models (ValueError for `dropout` > 0)."""
        if dropout:
            raise ValueError("BPE-dropout is not supported for SentencePiece models")
        return super().encode(text, **kwargs)

    def encode_batch(self, texts: Sequence[str], *, dropout: float = 0.0, **kwargs):
        """`Tokenizer.encode_batch` (no BPE-dropout for SentencePiece models)."""
        if dropout:
            raise ValueError("BPE-dropout is not supported for SentencePiece models")
        return super().encode_batch(texts, **kwargs)

    def _encode_block(
        self, block: str, continued: bool, allowed: list[str], disallowed: list[str], as_array=False
    ):
        # A block after the first continues the text: no dummy prefix.
        call = self._core.encode_to_numpy if as_array else self._core.encode
        if as_array:
            return with_surrogates_replaced(call, block, allowed, disallowed, 1, continued)
        return with_surrogates_replaced(call, block, allowed, disallowed, continued)

    def pretokenize(self, text: str) -> list[str]:
        """Not defined for SentencePiece models: they merge the whole
        normalized text (ValueError)."""
        raise ValueError("SentencePiece models have no pre-tokenization: they merge the whole text")

    def encode_bytes(self, data: bytes) -> list[int]:
        """Encode any bytes: the text as `encode_ordinary` encodes it, each
        byte that is not UTF-8 as its ``<0xNN>`` piece, so that
        ``decode_bytes(encode_bytes(b)) == b`` (for a model that keeps its
        text: no charsmap, no whitespace removal, and no dummy prefix, which
        decoding drops). Each such byte stands in the text as an unknown
        character (a private-use one no piece holds) while encoding, so it
        breaks merges as an unknown character would.

        Raises:
            TypeError: `data` is not bytes-like.
            ValueError: `data` is not UTF-8 and the model has no byte fallback.
        """
        if isinstance(data, str):
            raise TypeError("encode_bytes takes bytes; encode a str with encode")
        text = bytes(memoryview(data)).decode("utf-8", "surrogateescape")
        bad = sorted({c for c in text if "\udc80" <= c <= "\udcff"})
        if not bad:
            return self.encode_ordinary(text)
        if not self.byte_fallback:
            byte = ord(bad[0]) - 0xDC00
            raise ValueError(f"byte 0x{byte:02x} is not UTF-8 and this model has no byte fallback")
        taken = set(text).union(*(p for p, _, _ in self._pieces))
        free = (chr(c) for c in range(0x10FFFD, 0xF0000, -1) if chr(c) not in taken)
        stand_in = {c: s for c, s in zip(bad, free)}
        ids = self.encode_ordinary(text.translate({ord(c): s for c, s in stand_in.items()}))
        byte_ids = {
            i: b for i, (p, _, k) in enumerate(self._pieces) if k == BYTE for b in [int(p[3:5], 16)]
        }
        id_of_byte = {b: i for i, b in byte_ids.items()}
        for c, s in stand_in.items():
            pattern = [id_of_byte[b] for b in s.encode("utf-8")]
            ids = _replace_runs(ids, pattern, id_of_byte[ord(c) - 0xDC00])
        return ids

    def encode_with_offsets(
        self, text: str, *, allowed_special="all", disallowed_special="all"
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """`Tokenizer.encode_with_offsets`: each id's (start, end) in characters
        of `text`. A piece spans the characters it was normalized from (the
        dummy prefix's "▁" the first character); byte pieces of one character
        share its span, as HF's do."""
        if has_surrogates(text):
            text = replace_surrogates(text)
        return self._pipeline_offsets(text, allowed_special, disallowed_special)

    # ---- decoding ----------------------------------------------------------------

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """SentencePiece's ``decode``: control pieces are invisible, ``<unk>``
        is " ⁇ ", "▁" a space, the first piece's dummy prefix is dropped, and
        each run of byte pieces is read as UTF-8 with every invalid byte as
        U+FFFD (``errors="replace"``, the default); another `errors` decodes
        `decode_bytes` with it.

        Raises:
            ValueError: an id that is not in the vocabulary.
            UnicodeDecodeError: invalid UTF-8 with ``errors="strict"``.
        """
        if not isinstance(errors, str):
            raise TypeError(f"errors must be a str naming a codec error handler, got {errors!r}")
        if errors != "replace":
            return self.decode_bytes(ids).decode("utf-8", errors)
        return self._from_ids(self._core.decode_text, ids)

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """`decode` as bytes, with byte pieces' raw bytes (which need not be
        UTF-8): ``decode_bytes(encode_bytes(b)) == b`` for any bytes `b` of a
        byte-fallback model that keeps its text (identity normalizer)."""
        return self._from_ids(self._core.decode_bytes, ids)

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        """What one piece stands for (``vocab[token_id]``: "▁" as a space)."""
        if not fits_i64(token_id) or token_id not in self._vocab:
            raise ValueError(f"token id {token_id!r} is not in the vocabulary")
        return self._vocab[token_id]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """`decode` and the character offset where each token starts in it
        (tiktoken's ``decode_with_offsets``); a token that starts inside a
        character (a byte piece) gets that character's offset, one that adds
        nothing (a control piece) the offset of the text after it.

        Raises:
            UnicodeDecodeError: the ids do not decode to valid UTF-8 (as tiktoken).
            ValueError: an id that is not in the vocabulary.
        """
        import numpy as np

        from bytepair.encoding.helpers import char_index_of_bytes

        data, starts = self._from_ids(self._core.decode_with_starts, tokens)
        text = data.decode("utf-8", errors="strict")
        if not starts:
            return text, []
        char_of = np.append(char_index_of_bytes(data), len(text))
        return text, char_of[np.array(starts, dtype=np.int64)].tolist()

    def decode_stream(self, skip_special_tokens: bool = False) -> "SpmDecodeStream":
        """A stream decoder (HF tokenizers' ``DecodeStream``): ``step(id)``
        returns the text `decode` adds with this id once it is whole characters."""
        return SpmDecodeStream(self, skip_special_tokens)

    # ---- files ----------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write a HuggingFace ``tokenizer.json`` that ``tokenizers`` and
        ``transformers`` load with our ids (see `bytepair.formats.spm`);
        `save_model` writes the ``.model`` file. Atomic."""
        from bytepair.atomic import atomic_write

        atomic_write(path, to_hf_json(self).encode("utf-8"))

    def _hf_json_as_read(self) -> str | None:
        """The tokenizer.json this tokenizer was read from, if it was."""
        return None if self._hf_doc is None else json.dumps(self._hf_doc, ensure_ascii=False)

    def save_model(self, path: str | os.PathLike) -> None:
        """Write the SentencePiece ``.model`` file, which
        ``sentencepiece.SentencePieceProcessor`` loads with our ids. Atomic."""
        from bytepair.atomic import atomic_write

        atomic_write(path, self.model_bytes())

    def _refuse(self, what: str):
        raise ValueError(
            f"a SentencePiece model cannot be written as {what} (its merges start from "
            "characters, not bytes); save it as tokenizer.json (save) or .model (save_model)"
        )

    def to_tiktoken(self):
        self._refuse("a tiktoken Encoding")

    def save_tiktoken(self, path) -> None:
        self._refuse("a .tiktoken file")

    def save_gpt2(self, directory) -> None:
        self._refuse("GPT-2 vocab.json + merges.txt")

    def save_tekken(self, path, *, version: str = "v7") -> None:
        self._refuse("tekken.json")


register_spm_class(SentencePieceTokenizer)  # the class the file readers build


def _replace_runs(ids: list[int], pattern: list[int], by: int) -> list[int]:
    """`ids` with each occurrence of the run `pattern` replaced by the id `by`."""
    out, i, n = [], 0, len(pattern)
    while i < len(ids):
        if ids[i : i + n] == pattern:
            out.append(by)
            i += n
        else:
            out.append(ids[i])
            i += 1
    return out


def _from_pickle(data: bytes, special_tokens: dict, hf: dict, doc) -> SentencePieceTokenizer:
    tok = SentencePieceTokenizer(data, special_tokens, hf=hf)
    tok._hf_doc = doc
    return tok


class SpmDecodeStream:
    """`SentencePieceTokenizer.decode_stream`: SentencePiece's decoding (see
    `SentencePieceTokenizer.decode`) run one id at a time. A run of byte
    pieces is held until it ends in whole characters (an invalid byte becomes
    U+FFFD as soon as no later byte can make it valid); the outputs joined
    equal ``decode(ids)``."""

    def __init__(self, tokenizer: SentencePieceTokenizer, skip_special_tokens: bool = False):
        self._tok = tokenizer
        self._skip = (
            frozenset(tokenizer.special_tokens.values()) if skip_special_tokens else frozenset()
        )
        spec = tokenizer._normalizer
        self._strips = spec["add_dummy_prefix"] or spec["remove_extra_whitespaces"]
        self._strip_all = spec["remove_extra_whitespaces"]
        self._bytes = b""  # a byte-piece run not yet decoded
        self._any_text = False
        self._bos_ws, self._bos_ws_seen = True, False
        self._unk_surface = tokenizer._trainer["unk_surface"]

    def step(self, token_id: int) -> str | None:
        """Feed one id; the newly complete text, or None if there is none yet.

        Raises:
            ValueError: an id that is not in the vocabulary.
        """
        surface = self._tok.decode_single_token_bytes(token_id)  # ValueError if unknown
        if token_id in self._skip:
            return None
        piece, _, kind = self._tok._pieces[token_id]
        if kind == BYTE:
            self._bytes += surface
            return self._emit(_spm_utf8(self._bytes, final=False))
        text = _spm_utf8(self._bytes, final=True)[0]
        self._bytes = b""
        self._any_text = self._any_text or bool(text)
        if self._bos_ws_seen or self._any_text:
            self._bos_ws = False
        self._bos_ws_seen = False
        if kind == CONTROL:
            pass
        elif kind == UNKNOWN:
            text += self._unk_surface
        else:
            if self._bos_ws and self._strips and piece.startswith(SPACE):
                piece = piece[1:]
                self._bos_ws_seen = not self._strip_all
            text += piece.replace(SPACE, " ")
        self._any_text = self._any_text or bool(text)
        return text or None

    def _emit(self, decoded: tuple[str, int]) -> str | None:
        text, used = decoded
        self._bytes = self._bytes[used:]
        self._any_text = self._any_text or bool(text)
        return text or None


def _spm_utf8(data: bytes, final: bool) -> tuple[str, int]:
    """SentencePiece's reading of a byte-piece run: each valid UTF-8
    character as itself, every other byte as U+FFFD. Unless `final`, a tail
    that later bytes could still complete is left: (text, bytes used)."""
    out, i = [], 0
    while i < len(data):
        lead = data[i]
        n = 1 if lead < 0x80 else 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4
        chunk = data[i : i + n]
        try:
            out.append(chunk.decode("utf-8"))
            i += n
            continue
        except UnicodeDecodeError:
            pass
        if not final and i + n > len(data) and 0xC0 <= lead < 0xF8:
            try:
                codecs.getincrementaldecoder("utf-8")().decode(chunk, final=False)
                break  # a valid start of a character: wait for its end
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out), i
