"""The `Tokenizer`'s file methods (`save`, `load`, `from_gpt2_files`,
`save_tiktoken`, ...): a base class of `bytepair.Tokenizer` whose methods hand
the tokenizer to this package's readers and writers, so the file formats stay
in `bytepair.formats` and `bytepair.tokenizer` holds the encoder alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from bytepair.atomic import atomic_write
from bytepair.formats import detect, gpt2, hf, tekken, tiktoken_files

if TYPE_CHECKING:
    import tiktoken

    from bytepair.tokenizer import Tokenizer


class TokenizerFiles:
    """Reading and writing a `Tokenizer` in every supported format (see
    `bytepair.formats`); mixed into `bytepair.Tokenizer`."""

    def save(self, path: str | os.PathLike) -> None:
        """Write a HuggingFace ``tokenizer.json`` (byte-level BPE model, the
        pattern as a Split pre-tokenizer, special tokens as added tokens) that
        ``tokenizers.Tokenizer.from_file`` and ``transformers.PreTrainedTokenizerFast``
        load with the same ids (a special token HF would renumber is also listed
        in the model vocab under its id). The file is written to a temporary name
        and renamed, so a crash leaves no partial file.
        """
        atomic_write(path, hf.to_hf_json(self).encode("utf-8"))

    def save_pretrained(
        self,
        directory: str | os.PathLike,
        *,
        bos_token: str | None = None,
        eos_token: str | None = None,
        pad_token: str | None = None,
        unk_token: str | None = None,
        model_max_length: int | None = None,
    ) -> list[str]:
        """Write a transformers tokenizer folder (tokenizer.json,
        tokenizer_config.json, special_tokens_map.json) that
        ``AutoTokenizer.from_pretrained`` reads with our ids and these roles
        (each a special token). See `bytepair.formats.hf.save_pretrained`."""
        return hf.save_pretrained(
            self,
            directory,
            bos_token=bos_token,
            eos_token=eos_token,
            pad_token=pad_token,
            unk_token=unk_token,
            model_max_length=model_max_length,
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        """Read a tokenizer file of any supported format, detected from its
        content: a HuggingFace ``tokenizer.json`` (``save`` writes one), Mistral's
        ``tekken.json`` (``save_tekken`` writes one), GPT-2's
        ``vocab.json`` + ``merges.txt`` (either path, or their directory), or a
        ``.tiktoken`` rank file with the sidecar ``save_tiktoken`` writes (or
        named after an OpenAI encoding). See `bytepair.formats.detect`.

        Raises:
            FileNotFoundError: no such file.
            ValueError: the format is not recognised or the file is invalid or
                not a byte-level BPE tokenizer; the message names the file and
                the part at fault.
        """
        return detect.load(path)

    @classmethod
    def from_gpt2_files(
        cls,
        vocab_path: str | os.PathLike,
        merges_path: str | os.PathLike,
        special_tokens: Sequence[str] | Mapping[str, int] | None = None,
        pattern: str = "gpt2",
    ) -> "Tokenizer":
        """Read GPT-2's ``vocab.json`` + ``merges.txt`` (``#version`` line
        optional); vocabulary entries no merge makes (``<|endoftext|>``) become
        special tokens. See `bytepair.formats.gpt2.from_gpt2_files`.

        >>> tok = Tokenizer.from_gpt2_files("vocab.json", "merges.txt")  # doctest: +SKIP
        """
        return gpt2.from_gpt2_files(vocab_path, merges_path, special_tokens, pattern)

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike,
        *,
        pattern: str | None = None,
        special_tokens: Mapping[str, int] | None = None,
    ) -> "Tokenizer":
        """Read a ``.tiktoken`` rank file (``base64(token) rank`` lines; ``.gz``
        accepted) and recover its merge table. `pattern` and `special_tokens`
        default to the sidecar ``<path>.json`` (or OpenAI's, for files named
        ``cl100k_base.tiktoken`` etc.). See `bytepair.formats.tiktoken_files.from_tiktoken`.

        Raises:
            ValueError: a malformed line, or ranks that are not a BPE table (the
                message names the token and its line), or no pattern known.
        """
        return tiktoken_files.from_tiktoken(path, pattern=pattern, special_tokens=special_tokens)

    @classmethod
    def from_tiktoken_encoding(cls, enc: "tiktoken.Encoding") -> "Tokenizer":
        """The same tokenizer as a live ``tiktoken.Encoding`` (its ranks,
        pattern and special tokens), e.g. ``tiktoken.get_encoding("cl100k_base")``."""
        return tiktoken_files.from_tiktoken_encoding(enc)

    def to_tiktoken(self) -> "tiktoken.Encoding":
        """A ``tiktoken.Encoding`` that encodes like this tokenizer (ids are
        its ranks).

        Raises:
            ImportError: tiktoken is not installed.
            ValueError: ids do not increase in merge order, or a multi-byte token
                is made by no merge (tiktoken would rank it as a merge).
        """
        return tiktoken_files.to_tiktoken(self)

    def save_tiktoken(self, path: str | os.PathLike) -> None:
        """Write a ``.tiktoken`` rank file at `path` and, beside it,
        ``<path>.json`` with the pattern (``pat_str``) and special tokens, which
        `load` and `from_tiktoken` read back. Atomic; tiktoken not needed.

        Raises:
            ValueError: as `to_tiktoken`.
        """
        tiktoken_files.save_tiktoken(self, path)

    def save_gpt2(self, directory: str | os.PathLike) -> None:
        """Write GPT-2 style ``vocab.json`` + ``merges.txt`` into `directory`
        (created if missing), the form of OpenAI's GPT-2 files. Atomic.

        Raises:
            ValueError: a special token that vocab.json cannot tell from a token.
        """
        gpt2.save_gpt2(self, directory)

    def save_tekken(self, path: str | os.PathLike, *, version: str = "v7") -> None:
        """Write Mistral's ``tekken.json`` (``Tekkenizer.from_file`` reads our ids), atomically.
        ValueError unless the ids have Tekken's layout; see `bytepair.formats.tekken`."""
        tekken.save_tekken(self, path, version=version)
