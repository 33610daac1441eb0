"""File formats: HuggingFace ``tokenizer.json`` for byte-level BPE.

Byte-level BPE files store tokens as printable strings: GPT-2's
``bytes_to_unicode`` table (openai/gpt-2, ``encoder.py``) maps each of the 256
bytes to one visible character (printable Latin-1 bytes map to themselves, the
rest to U+0100 and up), so ``b" the"`` is stored as ``"Ġthe"``.

What we write (loads in ``tokenizers.Tokenizer.from_file`` and
``transformers.PreTrainedTokenizerFast``):
  - model: BPE, vocab ``{printable token: id}``, merges ``"left right"``, and
    ``ignore_merges: true`` so a pre-token that is itself a token is looked up
    whole, as tiktoken does;
  - pre_tokenizer: ``Split(pattern, Isolated)`` then ``ByteLevel(use_regex=false)``;
  - decoder: ByteLevel; special tokens as ``added_tokens`` with ``special: true``.

Not here yet: GPT-2 ``vocab.json``/``merges.txt`` and ``.tiktoken`` files.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from . import _core

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

PRESETS = ("gpt2", "cl100k", "o200k")

# Preset spellings for tokenizer.json. HF's regex engine (Oniguruma, Ruby syntax)
# reads tiktoken's possessive interval `\p{N}{1,3}+` as `(\p{N}{1,3})+`, any
# number of digits; the plain `{1,3}` is the same match here (nothing follows it
# in its branch) and means the same to every engine.
_HF_SPELLING = {
    "cl100k": r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+"
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
}


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (256 entries).

    >>> bytes_to_unicode()[ord(" ")], bytes_to_unicode()[ord("a")]
    ('Ġ', 'a')
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def token_to_str(token: bytes) -> str:
    """Bytes -> GPT-2 printable form (``b" hi"`` -> ``"Ġhi"``)."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def str_to_token(text: str, *, where: str = "") -> bytes:
    """GPT-2 printable form -> bytes; ValueError naming `where` for a character
    outside the table."""
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in text)
    except KeyError as e:
        raise ValueError(f"{where}: {text!r} is not a byte-level token (character {e.args[0]!r})") from None


def preset_name(pattern: str) -> str:
    """The preset name whose regex equals `pattern`, else `pattern` itself."""
    for name in PRESETS:
        if pattern in (_core.resolve_pattern(name), _HF_SPELLING.get(name)):
            return name
    return pattern


def hf_pattern(pattern: str) -> str:
    """The regex to write into tokenizer.json for `pattern` (a preset name or regex)."""
    return _HF_SPELLING.get(preset_name(_core.resolve_pattern(pattern)), _core.resolve_pattern(pattern))


def to_hf_json(tok: "Tokenizer") -> str:
    """Serialize `tok` as a HuggingFace tokenizer.json document (str)."""
    special_ids = set(tok.special_tokens.values())
    vocab = {token_to_str(b): i for i, b in sorted(tok.vocab.items()) if i not in special_ids}
    if len(vocab) != len(tok.vocab) - len(special_ids & tok.vocab.keys()):
        raise ValueError("the vocabulary holds the same bytes under two ids; tokenizer.json cannot store that")
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": t,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for t, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": hf_pattern(tok.pattern)}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": [f"{token_to_str(a)} {token_to_str(b)}" for a, b in tok.merges],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=1)


def _pattern_of(pre: Any, source: str) -> str:
    """The pre-tokenization regex of a tokenizer.json `pre_tokenizer` node."""
    if not isinstance(pre, dict):
        raise ValueError(f"{source}: pre_tokenizer: expected an object, got {type(pre).__name__}")
    kind = pre.get("type")
    if kind == "ByteLevel" and pre.get("use_regex", True):
        if pre.get("add_prefix_space"):
            raise ValueError(f"{source}: pre_tokenizer.ByteLevel.add_prefix_space=true is not supported")
        return _core.resolve_pattern("gpt2")
    if kind == "Sequence":
        steps = pre.get("pretokenizers") or []
        kinds = [s.get("type") for s in steps if isinstance(s, dict)]
        if (
            kinds == ["Split", "ByteLevel"]
            and not steps[1].get("use_regex", True)
            and steps[0].get("behavior") == "Isolated"
            and not steps[0].get("invert")
        ):
            pattern = steps[0].get("pattern", {})
            if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
                return pattern["Regex"]
        if kinds == ["ByteLevel"]:
            return _pattern_of(steps[0], source)
    raise ValueError(
        f"{source}: pre_tokenizer {json.dumps(pre)[:200]} is not supported "
        "(expected ByteLevel, or Split(Regex, Isolated) followed by ByteLevel(use_regex=false))"
    )


def from_hf_json(data: bytes | str, *, source: str = "<tokenizer.json>") -> "Tokenizer":
    """Parse a byte-level BPE tokenizer.json document.

    Raises:
        ValueError: invalid JSON, a model that is not BPE, a normalizer, a token
            that is not byte-level, or a wrong JSON type; the message names
            `source` and the key at fault.
    """
    from .tokenizer import Tokenizer

    try:
        doc = json.loads(data)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}: not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise ValueError(f"{source}: no 'model' object; not a tokenizer.json file")
    model = doc["model"]
    if model.get("type", "BPE") != "BPE":
        raise ValueError(f"{source}: model.type {model.get('type')!r} is not supported (only byte-level BPE)")
    if doc.get("normalizer") not in (None, {}):
        raise ValueError(f"{source}: normalizer {json.dumps(doc['normalizer'])[:100]} is not supported")
    pattern = preset_name(_pattern_of(doc.get("pre_tokenizer"), source))
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise ValueError(f"{source}: model.vocab must be an object of token -> id")
    specials = {}
    for n, t in enumerate(doc.get("added_tokens") or []):
        if not isinstance(t, dict) or not isinstance(t.get("content"), str) or type(t.get("id")) is not int:
            raise ValueError(f"{source}: added_tokens[{n}] must have a string 'content' and an integer 'id'")
        if not 0 <= t["id"] < 1 << 32:
            raise ValueError(f"{source}: added_tokens[{n}].id {t['id']} must be in [0, 2**32)")
        specials[t["content"]] = t["id"]
    vocab: dict[int, bytes] = {}
    for s, i in raw_vocab.items():
        if type(i) is not int or not 0 <= i < 1 << 32:
            raise ValueError(f"{source}: model.vocab[{s!r}] must be an integer id in [0, 2**32), got {i!r}")
        if i in vocab:
            raise ValueError(f"{source}: model.vocab: id {i} is given to two tokens")
        if s in specials and specials[s] == i:
            continue
        vocab[i] = str_to_token(s, where=f"{source}: model.vocab")
    for n, (t, i) in enumerate(specials.items()):
        # GPT-2 style files list a special token in the vocab too, under the same id.
        if i in vocab and vocab[i] != t.encode("utf-8"):
            raise ValueError(
                f"{source}: added_tokens[{n}] {t!r} has id {i}, which model.vocab gives to {vocab[i]!r}"
            )
        vocab.pop(i, None)
    merges = []
    for n, m in enumerate(model.get("merges") or []):
        where = f"{source}: model.merges[{n}]"
        parts = m.split(" ") if isinstance(m, str) else m
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
            raise ValueError(f"{where}: expected 'left right' or [left, right], got {m!r}")
        merges.append((str_to_token(parts[0], where=where), str_to_token(parts[1], where=where)))
    return Tokenizer(vocab, merges, special_tokens=specials, pattern=pattern)
