"""Training SentencePiece-style BPE models (the Llama 2 recipe by default:
identity normalization, dummy prefix, characters kept by 99.95% coverage, byte
fallback, split digits, whitespace-only pieces, pieces of at most 16
characters). The counting and the merge loop run in the Rust core
(``crates/bytepair-core/src/sentencepiece/train.rs`` over the byte-level
trainer's loop); the result is a `SentencePieceTokenizer` whose ``save_model``
writes a ``.model`` that sentencepiece loads, and ``save`` a tokenizer.json
HF loads, both with our ids.

Each line of the input is a sentence, as for ``spm_train``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from bytepair import _core
from bytepair.spm_tokenizer import SentencePieceTokenizer


def train_sentencepiece(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    vocab_size: int = 32000,
    **options,
) -> SentencePieceTokenizer:
    """Train on text files (UTF-8, each line a sentence); see
    `train_sentencepiece_from_iterator` for the options.

    Raises:
        FileNotFoundError: a file that is missing.
        UnicodeDecodeError: a file that is not UTF-8 (its path in the reason,
            `start` the byte offset in it).
        ValueError: as `train_sentencepiece_from_iterator`.

    >>> tok = train_sentencepiece(["corpus.txt"], 8000)  # doctest: +SKIP
    >>> tok.save_model("tokenizer.model")  # doctest: +SKIP
    """
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    # The core reads the files a chunk at a time as it counts (checking UTF-8
    # there): reading each whole into bytes first took ~5 ms of ~90 (10 MB).
    paths = _Files(os.fspath(path) for path in files)
    try:
        return train_sentencepiece_from_iterator(paths, vocab_size, **options)
    except UnicodeDecodeError as e:
        raise _decode_error(paths, e) from None


class _Files(list):
    """Paths of text files, given as `texts` by `train_sentencepiece`: the
    core reads them."""


def _decode_error(paths: list, error: UnicodeDecodeError) -> UnicodeDecodeError:
    """The error that decoding the first of `paths` that is not UTF-8 raises,
    its path in the reason (`error`, the core's, if none is not UTF-8 now)."""
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            return UnicodeDecodeError(
                e.encoding, e.object, e.start, e.end, f"{e.reason} (in {os.fsdecode(path)})"
            )
    return error


def train_sentencepiece_from_iterator(
    texts: Iterable[str | bytes],
    vocab_size: int = 32000,
    *,
    character_coverage: float = 0.9995,
    byte_fallback: bool = True,
    split_digits: bool = True,
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = False,
    normalizer_spec: Mapping | None = None,
    allow_whitespace_only_pieces: bool = True,
    max_piece_length: int = 16,
    control_symbols: Sequence[str] = (),
    user_defined_symbols: Sequence[str] = (),
    min_frequency: int = 0,
    num_threads: int | None = None,
    progress=None,
) -> SentencePieceTokenizer:
    """Train a SentencePiece-style BPE model on `texts` (each split into
    lines; str, or bytes of UTF-8 text).

    Args:
        vocab_size: every piece counted: ``<unk>``, ``<s>``, ``</s>``, the
            control and user-defined pieces, the 256 byte pieces (with
            `byte_fallback`), the merged pieces and the characters kept.
        character_coverage: keep the most frequent characters covering this
            share of all characters (0.9995, Llama 2's; 1.0 keeps all); the
            others become byte pieces (or ``<unk>``) when encoding.
        split_digits: every digit is a piece of its own.
        add_dummy_prefix, remove_extra_whitespaces: the normalizer spec
            (identity normalization: no charsmap).
        normalizer_spec: another model's normalizer (its
            ``SentencePieceTokenizer.normalizer_spec``, e.g. one with the
            nmt_nfkc charsmap) instead of identity; `add_dummy_prefix` and
            `remove_extra_whitespaces` are then its own.
        allow_whitespace_only_pieces: runs of spaces may merge ("▁▁", ...).
        max_piece_length: longest piece, in characters.
        control_symbols: special tokens after ``</s>`` (never made from text).
        user_defined_symbols: pieces matched whole in the text, never merged.
        min_frequency: stop when the best pair counts fewer than this.
        num_threads: counting threads (default: one per core).
        progress: None, or a callable given the bytes counted so far.

    Returns:
        a `SentencePieceTokenizer` (``save_model`` / ``save`` write it).

    Raises:
        ValueError: a vocab_size too small for the special, byte and kept
            characters' pieces, a piece given twice, or no text.
        UnicodeDecodeError: bytes in `texts` that are not UTF-8.
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be an iterable of str (a str would be taken char by char)")
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise ValueError(f"vocab_size={vocab_size!r} must be a positive integer")
    if not 0 < character_coverage <= 1:
        raise ValueError(f"character_coverage={character_coverage!r} must be in (0, 1]")
    normalizer = (
        {
            "name": "identity",
            "add_dummy_prefix": add_dummy_prefix,
            "remove_extra_whitespaces": remove_extra_whitespaces,
        }
        if normalizer_spec is None
        else dict(normalizer_spec)
    )
    files = None
    if isinstance(texts, _Files):
        files, texts = list(texts), []
    texts = list(texts)
    control_symbols = list(control_symbols)
    for t in texts:
        if not isinstance(t, (str, bytes)):
            raise TypeError(f"texts must hold str (or UTF-8 bytes), got {type(t).__name__}")
    model, _ = _core.train_sentencepiece(
        texts,
        normalizer,
        vocab_size,
        float(character_coverage),
        bool(byte_fallback),
        bool(split_digits),
        bool(allow_whitespace_only_pieces),
        int(max_piece_length),
        control_symbols,
        list(user_defined_symbols),
        int(min_frequency),
        num_threads,
        progress,
        files,
    )
    # The layout `train` writes: <unk>, <s>, </s>, then the control pieces.
    specials = ["<unk>", "<s>", "</s>", *control_symbols]
    special_tokens = {piece: i for i, piece in enumerate(specials)}
    return SentencePieceTokenizer(model, special_tokens, source="the trained model", defer=True)
