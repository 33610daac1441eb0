"""GPT-2's ``vocab.json`` + ``merges.txt``.

The files OpenAI released with GPT-2 (openai/gpt-2, ``encoder.json`` and
``vocab.bpe``; HuggingFace calls them ``vocab.json`` and ``merges.txt``):
  - vocab.json: ``{printable token: id}`` in GPT-2's byte-to-unicode form
    (`bytelevel`), written by ``json.dumps`` (ASCII-escaped), special tokens
    such as ``"<|endoftext|>"`` listed as themselves;
  - merges.txt: an optional ``#version: 0.2`` first line, then one merge
    ``left right`` per line in rank order (the first line has rank 0).
GPT-2's encoder merges by pair rank and never produces a vocabulary entry that
no merge makes; such entries (GPT-2: ``<|endoftext|>``, 50256) are read as
special tokens.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from bytepair import _core
from bytepair.atomic import recover_file_sets, write_file_set
from bytepair.formats.bytelevel import is_byte_level, str_to_token, token_to_str
from bytepair.formats.hf_pipeline import refuse_pipeline
from bytepair.formats.reading import build_tokenizer, decode_utf8, parse_json
from bytepair.formats.tables import check_merges

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

VOCAB_NAME = "vocab.json"
MERGES_NAME = "merges.txt"
VERSION_LINE = "#version: 0.2"


def _numbered_merge_lines(text: str) -> Iterator[tuple[int, str]]:
    r"""The ``left right`` lines of merges.txt content with their line numbers
    (1-based): lines end at ``\n`` (a ``\r`` before it is dropped; not
    `str.splitlines`, which also breaks at ``\x85``, ``\u2028``...), and
    ``#version`` lines and blank lines are skipped."""
    for n, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if line and not line.startswith("#version"):
            yield n, line


def merge_lines(text: str) -> list[str]:
    """The ``left right`` lines of merges.txt content (`_numbered_merge_lines`),
    for the native reader, which refuses anything irregular: `read_merges`
    then words the fault."""
    return [line for _, line in _numbered_merge_lines(text)]


def read_merges(text: str, *, source: str) -> list[tuple[bytes, bytes]]:
    """Parse merges.txt content: ``#version`` lines and blank lines are skipped,
    every other line is ``left right``.

    Raises:
        ValueError: a line that is not two byte-level tokens separated by one
            space; the message names `source` and the line number (1-based).
    """
    merges = []
    for n, line in _numbered_merge_lines(text):
        parts = line.split(" ")
        where = f"{source}: line {n}"
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"{where}: expected 'left right' (two tokens and one space), got {line[:100]!r}"
            )
        merges.append((str_to_token(parts[0], where=where), str_to_token(parts[1], where=where)))
    return merges


def from_gpt2_files(
    vocab_path: str | os.PathLike,
    merges_path: str | os.PathLike,
    special_tokens: Sequence[str] | Mapping[str, int] | None = None,
    pattern: str = "gpt2",
) -> "Tokenizer":
    """Read GPT-2 style ``vocab.json`` + ``merges.txt`` (see the module docstring).

    Args:
        vocab_path: path of vocab.json (``{printable token: id}``, UTF-8 JSON).
        merges_path: path of merges.txt, with or without the ``#version`` line.
        special_tokens: added to the vocabulary entries no merge makes (those
            are always special tokens, with their ids): a sequence of strings
            (ids from vocab.json, else the next free ids) or a mapping string -> id.
        pattern: pre-tokenization regex or preset name (GPT-2's by default).

    Returns:
        a Tokenizer whose ids equal GPT-2's encoder (and tiktoken's ``gpt2``).

    Raises:
        FileNotFoundError: a missing file.
        ValueError: invalid JSON, a non-integer or duplicate id, a token that is
            not byte-level, a malformed merges line, a merge whose parts are not
            in the vocabulary, or a merge table that pair-rank and token-rank
            encoding apply differently; messages name the file and entry.
    """
    vocab_src, merges_src = os.fspath(vocab_path), os.fspath(merges_path)
    for directory in {os.path.dirname(vocab_src), os.path.dirname(merges_src)}:
        recover_file_sets(directory)  # a save interrupted between its two files
    with open(vocab_src, "rb") as f:
        entries = parse_json(f.read(), source=vocab_src)
    if not isinstance(entries, dict):
        raise ValueError(f"{vocab_src}: expected a JSON object of token -> id")
    with open(merges_src, "rb") as f:
        merges_text = decode_utf8(f.read(), source=merges_src)
    # The regular case in one native pass (50k tokens and merges decoded one by
    # one in Python were most of the load); anything else is read item by
    # item below, which words the fault.
    fast = _core.byte_level_tables(entries, merge_lines(merges_text))
    if fast and all(a and b for a, b in fast[2]):
        tokens, merges = dict(zip(entries, fast[1])), fast[2]
    else:
        tokens, merges = None, read_merges(merges_text, source=merges_src)
    check_merges(merges, source=merges_src, what="merge")

    made = {a + b for a, b in merges}
    vocab: dict[int, bytes] = {}
    unreachable: dict[str, int] = {}
    for s, i in entries.items():
        if tokens is not None:  # ids already checked: ints in range, each once
            token = tokens[s]
        else:
            if type(i) is not int or not 0 <= i < 1 << 32:
                raise ValueError(
                    f"{vocab_src}: entry {s!r}: id {i!r} must be an integer in [0, 2**32)"
                )
            if i in vocab or i in unreachable.values():
                raise ValueError(f"{vocab_src}: id {i} is given to two entries (one is {s!r})")
            token = str_to_token(s, where=vocab_src) if is_byte_level(s) else None
        if token is None or (len(token) > 1 and token not in made):
            unreachable[s] = i
        else:
            vocab[i] = token
    _check_pair_belongs_together(unreachable, special_tokens, len(entries), vocab_src, merges_src)
    specials: dict[str, int] = dict(unreachable)
    if isinstance(special_tokens, Mapping):
        specials.update(special_tokens)
    elif special_tokens is not None:
        if isinstance(special_tokens, str):
            raise TypeError("special_tokens must be a sequence of strings, not a single string")
        by_bytes = {b: i for i, b in vocab.items()}
        taken = set(vocab) | set(specials.values())
        next_id = max(taken, default=-1) + 1
        for t in special_tokens:
            if t in specials:
                continue
            if t.encode() in by_bytes:  # as Tokenizer does: the id the vocab gives its bytes
                specials[t] = by_bytes[t.encode()]
            else:
                specials[t] = next_id
                next_id += 1
    return build_tokenizer(vocab, merges, specials, pattern, source=f"{vocab_src} + {merges_src}")


#: A vocab.json may hold this many entries no merge makes (GPT-2 has one,
#: ``<|endoftext|>``; Llama 3 reserves 256 of 128k) before the pair of files is
#: taken for mismatched: 1% of the entries, and at least 16.
def _unreachable_limit(entries: int) -> int:
    return max(16, entries // 100)


def _check_pair_belongs_together(
    unreachable: dict[str, int], declared, entries: int, vocab_src: str, merges_src: str
) -> None:
    """ValueError when vocab.json holds more entries that no merge of
    merges.txt makes than a vocabulary's special tokens explain (the
    `special_tokens` passed are not counted): the files come from different
    saves, or merges.txt was cut short (it then loaded as a tokenizer with
    thousands of "special tokens" and no merges)."""
    declared = set(declared or ())
    odd = [s for s in unreachable if s not in declared]
    if len(odd) > _unreachable_limit(entries):
        example = min(odd, key=lambda s: unreachable[s])
        raise ValueError(
            f"{vocab_src}: {len(odd):,} of {entries:,} entries are made by no merge of "
            f"{merges_src} (the first: {example!r}, id {unreachable[example]}): the two files do "
            "not belong together, or merges.txt is cut short; name real special tokens with "
            "special_tokens"
        )


def save_gpt2(tok: "Tokenizer", directory: str | os.PathLike) -> tuple[str, str]:
    """Write `tok` as ``vocab.json`` + ``merges.txt`` in `directory` (created if
    missing), in the form OpenAI's GPT-2 files have: vocab.json is
    ``json.dumps`` of ``{printable token: id}`` sorted by id, special tokens as
    their own text; merges.txt starts with ``#version: 0.2``. The two files are
    written as one change (`atomic.write_file_set`). They hold no pattern (as
    HF's ``BPE.from_file`` files): one other than GPT-2's is given again when
    they are read (``Tokenizer.load(directory, pattern=...)``).

    Returns:
        (vocab path, merges path).

    Raises:
        ValueError: `tok` has a tokenizer.json pipeline (GPT-2 files hold none),
            two ids with the same printable form (the same bytes twice,
            or a special token spelled like a token), or a special token that is
            a byte or made by a merge: vocab.json cannot tell them apart.
    """
    refuse_pipeline(tok, "vocab.json + merges.txt")
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    special_ids = set(tok.special_tokens.values())
    entries: dict[str, int] = {}
    for i, b in sorted(tok.vocab.items()):
        if i in special_ids:
            continue
        s = token_to_str(b)
        if s in entries:
            raise ValueError(f"vocab.json: ids {entries[s]} and {i} have the same bytes {b!r}")
        entries[s] = i
    made = {a + b for a, b in tok.merges}
    shared = tok._shared_special_ids()
    for t, i in tok.special_tokens.items():
        if i in shared:
            raise ValueError(
                f"vocab.json: special token {t!r} is also the ordinary token {tok.vocab[i]!r} "
                f"(id {i}); GPT-2 files cannot mark a token as special"
            )
        if t in entries:
            raise ValueError(
                f"vocab.json: special token {t!r} (id {i}) is spelled like the token with id "
                f"{entries[t]}"
            )
        if is_byte_level(t) and (len(str_to_token(t)) == 1 or str_to_token(t) in made):
            raise ValueError(
                f"vocab.json: special token {t!r} reads as {str_to_token(t)!r}, a byte or what a "
                "merge makes; GPT-2 files would load it as an ordinary token"
            )
        entries[t] = i
    vocab_path = os.path.join(directory, VOCAB_NAME)
    merges_path = os.path.join(directory, MERGES_NAME)
    vocab_text = json.dumps(dict(sorted(entries.items(), key=lambda kv: kv[1])))
    lines = [VERSION_LINE, *(f"{token_to_str(a)} {token_to_str(b)}" for a, b in tok.merges)]
    write_file_set(
        {
            vocab_path: vocab_text.encode("utf-8"),
            merges_path: ("\n".join(lines) + "\n").encode("utf-8"),
        }
    )
    return vocab_path, merges_path
