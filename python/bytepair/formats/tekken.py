"""Mistral's ``tekken.json`` (the Tekken tokenizer of Mistral NeMo, Pixtral and later).

The format of ``mistral_common.tokens.tokenizers.tekken.Tekkenizer.from_file``
(mistral-common, Apache-2.0), whose wheel ships ``tekken_240718.json`` and
``tekken_240911.json``:

  - ``config``: ``pattern`` (tiktoken's ``pat_str``), ``num_vocab_tokens``,
    ``default_vocab_size`` (every id, special ones included),
    ``default_num_special_tokens`` and ``version`` (``"v3"``, ``"v7"``, ...);
  - ``vocab``: ``[{"rank", "token_bytes" (base64), "token_str"}]``, in rank order,
    the first 256 being the single bytes; only the first
    ``default_vocab_size - default_num_special_tokens`` are used;
  - ``special_tokens``: ``[{"rank", "token_str", "is_control"}]``, or absent
    (files of version v7 and older: Mistral's 20 control tokens ``<unk>``,
    ``<s>``, ``</s>``, ``[INST]``, ...). Missing ids up to
    ``default_num_special_tokens`` are filled with ``<SPECIAL_{id}>``.

Ids: a special token's id is its rank (0 to n_special - 1); an ordinary
token's id is its rank + n_special. ``Tekkenizer.encode(s, bos=False,
eos=False)`` runs tiktoken with no special tokens, so special-token strings in
the text are plain text: compare with ``Tokenizer.encode_ordinary``. Image and
audio settings are not tokenizer data and are not kept.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from typing import TYPE_CHECKING, Any

from bytepair.atomic import atomic_write
from bytepair.formats.hf_regex import preset_name
from bytepair.formats.reading import build_tokenizer, parse_json
from bytepair.formats.tables import merges_from_ranks, ranks_of

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

# Mistral's control tokens of tekken files without a special_tokens list
# (``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``), ids 0..19.
LEGACY_SPECIAL_TOKENS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
FILLER = "<SPECIAL_{id}>"
_VERSIONS_WITHOUT_SPECIALS = ("v1", "v2", "v3", "v7")


def looks_like_tekken(doc: Any) -> bool:
    """Whether a parsed JSON document is a tekken.json (``config`` object and ``vocab`` list)."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("config"), dict)
        and isinstance(doc.get("vocab"), list)
    )


def _int_field(config: dict, key: str, source: str) -> int:
    value = config.get(key)
    if type(value) is not int or value < 0:
        raise ValueError(f"{source}: config.{key} must be a non-negative integer, got {value!r}")
    return value


def _special_tokens(doc: dict, n_special: int, version: str, source: str) -> dict[str, int]:
    """The special tokens (str -> id) as ``Tekkenizer`` numbers them, fillers included."""
    listed = doc.get("special_tokens")
    if listed is None:
        if version not in _VERSIONS_WITHOUT_SPECIALS:
            raise ValueError(
                f"{source}: no special_tokens, which a tekken file of version {version} must list"
            )
        listed = [{"rank": i, "token_str": t} for i, t in enumerate(LEGACY_SPECIAL_TOKENS)]
    if not isinstance(listed, list):
        raise ValueError(f"{source}: special_tokens must be a list")
    specials: dict[str, int] = {}
    for n, t in enumerate(listed):
        if (
            not isinstance(t, dict)
            or not isinstance(t.get("token_str"), str)
            or type(t.get("rank")) is not int
        ):
            raise ValueError(
                f"{source}: special_tokens[{n}] must have a string 'token_str' and an integer "
                "'rank'"
            )
        if t["token_str"] in specials:
            raise ValueError(f"{source}: special_tokens[{n}] {t['token_str']!r} is listed twice")
        if not 0 <= t["rank"] < n_special:
            raise ValueError(
                f"{source}: special_tokens[{n}] {t['token_str']!r} has rank {t['rank']}, "
                f"outside the {n_special} special ids (config.default_num_special_tokens)"
            )
        specials[t["token_str"]] = t["rank"]
    if len(listed) > n_special:
        raise ValueError(
            f"{source}: {len(listed)} special tokens, more than "
            f"config.default_num_special_tokens={n_special}"
        )
    for i in range(len(listed), n_special):
        specials.setdefault(FILLER.format(id=i), i)
    return specials


def _ranks(vocab: list, count: int, n_special: int, source: str) -> dict[bytes, int]:
    """Token bytes -> id of the first `count` entries of ``vocab``."""
    if len(vocab) < count:
        raise ValueError(
            f"{source}: vocab has {len(vocab)} tokens, fewer than the {count} the config asks for "
            "(default_vocab_size - default_num_special_tokens)"
        )
    ranks: dict[bytes, int] = {}
    for n, entry in enumerate(vocab[:count]):
        if (
            not isinstance(entry, dict)
            or entry.get("rank") != n
            or not isinstance(entry.get("token_bytes"), str)
        ):
            raise ValueError(
                f"{source}: vocab[{n}] must be an object with rank {n} and base64 'token_bytes'"
            )
        try:
            token = base64.b64decode(entry["token_bytes"], validate=True)
        except binascii.Error as e:
            raise ValueError(
                f"{source}: vocab[{n}].token_bytes {entry['token_bytes'][:40]!r}: invalid base64 "
                f"({e})"
            ) from None
        if token in ranks:
            raise ValueError(
                f"{source}: vocab[{n}] {token!r} is already vocab[{ranks[token] - n_special}]"
            )
        ranks[token] = n + n_special
    return ranks


def from_tekken(data: bytes | str | dict, *, source: str = "<tekken.json>") -> "Tokenizer":
    """Parse a ``tekken.json`` document into a Tokenizer with ``Tekkenizer``'s ids.

    Args:
        data: the file's content (bytes or str) or the parsed JSON object.
        source: names the file in error messages.

    Returns:
        a Tokenizer whose `encode_ordinary(text)` equals ``Tekkenizer.encode(text,
        bos=False, eos=False)``, with the special tokens at ids 0..n_special-1
        (fillers ``<SPECIAL_{id}>`` included) and the pattern of ``config.pattern``.

    Raises:
        ValueError: not JSON, a missing or mistyped config field, an unknown
            version without special tokens, a vocab entry out of rank order or
            not base64, ranks that are not a BPE table; the message names `source`
            and the field.
    """
    doc = data if isinstance(data, dict) else parse_json(data, source=source)
    if not looks_like_tekken(doc):
        raise ValueError(
            f"{source}: not a tekken.json (expected a 'config' object and a 'vocab' list)"
        )
    config = doc["config"]
    pattern = config.get("pattern")
    if not isinstance(pattern, str):
        raise ValueError(f"{source}: config.pattern must be a string (the pre-tokenization regex)")
    n_special = _int_field(config, "default_num_special_tokens", source)
    size = _int_field(config, "default_vocab_size", source)
    if size < n_special + 256:
        raise ValueError(
            f"{source}: config.default_vocab_size={size} leaves fewer than 256 ids after "
            f"{n_special} special tokens"
        )
    specials = _special_tokens(doc, n_special, str(config.get("version")), source)
    ranks = _ranks(doc["vocab"], size - n_special, n_special, source)
    for b in range(256):
        if ranks.get(bytes([b])) != b + n_special:
            raise ValueError(f"{source}: vocab[{b}] must be the single byte {bytes([b])!r}")
    merges = merges_from_ranks(
        ranks, source=source, where=lambda t: f" (vocab[{ranks[t] - n_special}])"
    )
    vocab = {i: t for t, i in ranks.items()}
    return build_tokenizer(vocab, merges, specials, preset_name(pattern), source=source)


def to_tekken_json(tok: "Tokenizer", *, version: str = "v7") -> str:
    """`tok` as a tekken.json document (str) that ``Tekkenizer.from_file`` reads
    with the same ids.

    Args:
        version: ``config.version``; mistral-common checks it against the
            features it allows (``v3``, ``v7``, ``v11``, ``v13``, ...).

    Raises:
        ValueError: `tok` does not have Tekken's id layout: special tokens at ids
            0..n-1, then the ordinary tokens with ids n, n+1, ... in rank order
            starting with the 256 single bytes (ids must increase in merge
            order, `tables.ranks_of`).
    """
    ranks = ranks_of(tok, purpose="tekken.json")
    n_special = len(tok.special_tokens)
    if sorted(tok.special_tokens.values()) != list(range(n_special)):
        raise ValueError(
            f"tekken.json: special tokens must have ids 0..{n_special - 1} (they have "
            f"{sorted(tok.special_tokens.values())[:10]}...)"
        )
    ordered = sorted(ranks.items(), key=lambda kv: kv[1])
    for rank, (token, i) in enumerate(ordered):
        if i != n_special + rank or (rank < 256 and token != bytes([rank])):
            raise ValueError(
                f"tekken.json: token {token!r} has id {i}; Tekken needs id {n_special + rank} "
                "there (the special tokens, then the 256 bytes, then the merges, without gaps)"
            )
    vocab = [
        {"rank": r, "token_bytes": base64.b64encode(t).decode("ascii"), "token_str": _token_str(t)}
        for r, (t, _) in enumerate(ordered)
    ]
    specials = [
        {"rank": i, "token_str": t, "is_control": True}
        for t, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
    ]
    doc = {
        "config": {
            "pattern": tok.pattern_regex,
            "num_vocab_tokens": len(vocab),
            "default_vocab_size": len(vocab) + n_special,
            "default_num_special_tokens": n_special,
            "version": version,
        },
        "vocab": vocab,
        "special_tokens": specials,
    }
    return json.dumps(doc, ensure_ascii=False)


def _token_str(token: bytes) -> str | None:
    """The token's text, None when its bytes are not UTF-8 (as Mistral's files write it)."""
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        return None


def save_tekken(tok: "Tokenizer", path: str | os.PathLike, *, version: str = "v7") -> None:
    """Write `tok` as a tekken.json at `path`, atomically (see `to_tekken_json`)."""
    atomic_write(path, to_tekken_json(tok, version=version).encode("utf-8"))
