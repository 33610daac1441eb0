"""SentencePiece BPE files: the ``.model`` file (a protobuf ``ModelProto``,
read and written by the Rust core, ``crates/bytepair-core/src/sentencepiece/``)
and the HuggingFace ``tokenizer.json`` of such a model.

The tokenizer.json written here is the layout ``transformers`` builds from a
SentencePiece model (``convert_slow_tokenizer.SpmConverter.
build_tokenizer_from_spm_proto``), which HF tokenizers runs with
SentencePiece's ids:

- model: BPE over the pieces, ``byte_fallback`` as the model's, ``fuse_unk``,
  ``unk_token``; merges: every split of every normal piece into two pieces, by
  the piece's score (highest first), then its id;
- normalizer: the precompiled charsmap (``Precompiled``), the removal of extra
  spaces (two ``Replace`` regexes), spaces as "▁" (``Replace``), and the dummy
  prefix (``Prepend("▁")``, which HF applies to each text between added
  tokens, as bytepair's ``encode`` does);
- pre-tokenizer: user-defined pieces isolated (``Split``), so they are never
  merged;
- decoder: "▁" as a space, byte pieces as bytes, the dummy prefix stripped;
- added tokens: the control pieces and ``<unk>``, special.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bytepair.spm_tokenizer import SentencePieceTokenizer

SPACE = "\u2581"
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def looks_like_model_file(head: bytes) -> bool:
    """Does `head` start like a SentencePiece ``.model`` file? Its first field
    is a piece: tag 1 (length-delimited), a varint length, then the piece's
    own tag 1 and the piece string's length."""
    if len(head) < 4 or head[0] != 0x0A:
        return False
    i = 1
    while i < len(head) and head[i] & 0x80:
        i += 1
    return i + 1 < len(head) and i <= 5 and head[i + 1] == 0x0A


def from_model_file(path: str, data: bytes | None = None) -> "SentencePieceTokenizer":
    """Read a ``.model`` file (or its bytes `data`)."""
    from bytepair.spm_tokenizer import SentencePieceTokenizer

    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    return SentencePieceTokenizer(data, source=path)


def merges_of(pieces: list[tuple[str, float, int]]) -> list[tuple[str, str]]:
    """HF's merge table of a SentencePiece model: every split of every normal
    piece into two normal pieces, by the piece's score (highest first), then
    its id, then the split (``transformers``' order)."""
    normal = {p: (score, i) for i, (p, score, kind) in enumerate(pieces) if kind == NORMAL}
    ranked = []
    for token, (score, i) in normal.items():
        for k in range(1, len(token)):
            left, right = token[:k], token[k:]
            if left in normal and right in normal:
                ranked.append((-score, i, left, right))
    ranked.sort()
    return [(left, right) for _, _, left, right in ranked]


def _normalizer(spec: dict) -> dict | None:
    steps = []
    if spec["precompiled_charsmap"]:
        steps.append(
            {
                "type": "Precompiled",
                "precompiled_charsmap": base64.b64encode(spec["precompiled_charsmap"]).decode(),
            }
        )
    if spec["remove_extra_whitespaces"]:
        steps.append({"type": "Replace", "pattern": {"Regex": r"\A +| +\z"}, "content": ""})
        steps.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    if spec["escape_whitespaces"]:
        steps.append({"type": "Replace", "pattern": {"String": " "}, "content": SPACE})
    if spec["add_dummy_prefix"]:
        steps.append({"type": "Prepend", "prepend": SPACE if spec["escape_whitespaces"] else " "})
    return {"type": "Sequence", "normalizers": steps} if steps else None


def _decoder(spec: dict, byte_fallback: bool) -> dict:
    steps: list[dict] = []
    if spec["escape_whitespaces"]:
        steps.append({"type": "Replace", "pattern": {"String": SPACE}, "content": " "})
    if byte_fallback:
        steps.append({"type": "ByteFallback"})
    steps.append({"type": "Fuse"})
    if spec["add_dummy_prefix"]:
        steps.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": steps}


def to_hf_json(tok: "SentencePieceTokenizer") -> str:
    """The tokenizer.json of `tok` (see the module docstring).

    Raises:
        ValueError: a model HF tokenizers cannot run with our ids: whitespace
            as a suffix (``treat_whitespace_as_suffix``) or UNUSED pieces.
    """
    pieces = tok._pieces
    if tok._trainer["treat_whitespace_as_suffix"]:
        raise ValueError(
            "a model with treat_whitespace_as_suffix has no tokenizer.json form; "
            "save_model writes it"
        )
    if any(kind == UNUSED for _, _, kind in pieces):
        raise ValueError(
            "a model with UNUSED pieces has no tokenizer.json form; save_model writes it"
        )
    spec = tok._normalizer
    user = [p for p, _, kind in pieces if kind == USER_DEFINED]
    added = [
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
    ]
    pre = None
    if user:
        pattern = "|".join(re.escape(p) for p in sorted(user, key=len, reverse=True))
        pre = {
            "type": "Split",
            "pattern": {"Regex": pattern},
            "behavior": "Isolated",
            "invert": False,
        }
    unk = pieces[tok.unk_id][0]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": _normalizer(spec),
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": _decoder(spec, tok.byte_fallback),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": tok.byte_fallback,
            "ignore_merges": bool(user),
            "vocab": {p: i for i, (p, _, _) in enumerate(pieces)},
            "merges": [[a, b] for a, b in merges_of(pieces)],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=2)
