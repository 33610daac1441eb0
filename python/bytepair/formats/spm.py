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


# The class the readers here build: `bytepair.spm_tokenizer.SentencePieceTokenizer`,
# which hands itself over when it is defined (`register_spm_class`); that module
# calls the writers here, so this one does not import it back (no import cycle,
# as `formats.reading.register_tokenizer_class` for the byte-level Tokenizer).
_spm_class: "type[SentencePieceTokenizer] | None" = None


def register_spm_class(cls: "type[SentencePieceTokenizer]") -> None:
    """Make `cls` the class the readers build (called by bytepair.spm_tokenizer)."""
    global _spm_class
    _spm_class = cls


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
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    return _spm_class(data, source=path)


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
    as_read = tok._hf_json_as_read()
    if as_read is not None:
        return as_read
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


# ---- reading a tokenizer.json of a SentencePiece-style BPE ---------------------------


def is_spm_style(doc: dict) -> bool:
    """Is this tokenizer.json a SentencePiece-style BPE (merges over
    characters, "▁" for spaces: Llama 1/2, Mistral 7B, Gemma, ...) rather than
    a byte-level one? A BPE model with byte fallback, or a Metaspace
    pre-tokenizer or decoder, or a normalizer writing "▁", and no ByteLevel."""
    model = doc.get("model")
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE":
        return False
    # ensure_ascii=False: "▁" stays itself, for the test below.
    text = json.dumps(
        [doc.get("normalizer"), doc.get("pre_tokenizer"), doc.get("decoder")], ensure_ascii=False
    )
    if '"ByteLevel"' in text:
        return False
    return bool(model.get("byte_fallback")) or '"Metaspace"' in text or SPACE in text


def _flat(node, key: str) -> list[dict]:
    if node is None:
        return []
    if node.get("type") == "Sequence":
        return [n for child in node.get(key, []) for n in _flat(child, key)]
    return [node]


def _pattern(node: dict) -> tuple[str, str]:
    pattern = node.get("pattern") or {}
    if "String" in pattern:
        return "String", pattern["String"]
    return "Regex", pattern.get("Regex", "")


def _read_normalizer(doc: dict, source: str) -> tuple[dict, bool]:
    """The normalizer spec of the file's normalizer, and whether it adds the
    dummy prefix SentencePiece's way (``Prepend``, or Metaspace's prefix made
    exact by ``Replace(\\A▁, ▁▁)``)."""
    spec = {
        "name": "identity",
        "precompiled_charsmap": b"",
        "add_dummy_prefix": False,
        "remove_extra_whitespaces": False,
        "escape_whitespaces": False,
    }
    exact_prefix = False
    for n, node in enumerate(_flat(doc.get("normalizer"), "normalizers")):
        kind = node.get("type")
        where = f"{source}: normalizer step {n} ({kind})"
        if kind == "Precompiled":
            spec["precompiled_charsmap"] = base64.b64decode(node.get("precompiled_charsmap") or "")
            spec["name"] = "precompiled"
        elif kind == "Prepend" and node.get("prepend") == SPACE:
            spec["add_dummy_prefix"] = True
            exact_prefix = True
        elif kind == "Replace" and _pattern(node) == ("String", " ") and node["content"] == SPACE:
            spec["escape_whitespaces"] = True
        elif kind == "Replace" and _pattern(node) == ("Regex", r"\A +| +\z"):
            spec["remove_extra_whitespaces"] = True
        elif kind == "Replace" and _pattern(node) == ("Regex", " {2,}"):
            spec["remove_extra_whitespaces"] = True
        elif (
            kind == "Replace"
            and _pattern(node) == ("Regex", r"\A▁")
            and node["content"] == SPACE * 2
        ):
            exact_prefix = True
        else:
            raise ValueError(
                f"{where} is not supported for a SentencePiece-style BPE (supported: Precompiled, "
                "Prepend('▁'), Replace(' ' -> '▁'), the whitespace Replaces transformers writes)"
            )
    return spec, exact_prefix


def _read_pre_tokenizer(doc: dict, source: str) -> tuple[str | None, list[str]]:
    """Metaspace's prepend scheme (None without one) and the user-defined
    pieces an Isolated Split of literals keeps whole."""
    scheme, user = None, []
    for n, node in enumerate(_flat(doc.get("pre_tokenizer"), "pretokenizers")):
        kind = node.get("type")
        where = f"{source}: pre_tokenizer step {n} ({kind})"
        if kind == "Metaspace":
            if node.get("replacement", SPACE) != SPACE or node.get("split", True):
                raise ValueError(
                    f"{where}: split or a replacement other than '▁' is not supported (a split "
                    "at every '▁' would keep runs of spaces from merging)"
                )
            scheme = node.get("prepend_scheme", "always")
            if node.get("add_prefix_space") is False:
                scheme = "never"
        elif kind == "Split" and node.get("behavior") == "Isolated" and not node.get("invert"):
            kind_, regex = _pattern(node)
            user = (
                [regex]
                if kind_ == "String"
                else [re.sub(r"\\(.)", r"\1", p) for p in regex.split("|")]
            )
        else:
            raise ValueError(
                f"{where} is not supported for a SentencePiece-style BPE (supported: Metaspace, "
                "an Isolated Split of the user-defined pieces)"
            )
    return scheme, user


def from_hf_spm(doc: dict, *, source: str) -> "SentencePieceTokenizer":
    """The tokenizer of a SentencePiece-style tokenizer.json (`is_spm_style`),
    encoding as HF tokenizers does: pieces merge by the rank of the first merge
    rule that makes them, a character that is no token never merges, the dummy
    prefix follows the file (``Prepend`` on every text between added tokens as
    SentencePiece; Metaspace's ``always``/``first``, which skip a text already
    starting with "▁"), runs of unknown characters fuse as ``fuse_unk`` says.
    `save` writes the file back as read.

    Raises:
        ValueError: a part this reading does not cover (named, with its place
            in the file), ids that are not 0..n-1, no ``unk_token``, byte
            fallback without the 256 ``<0xNN>`` tokens.
    """
    from bytepair import _core

    model = doc["model"]
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key):
            raise ValueError(
                f"{source}: model.{key} is not supported for a SentencePiece-style BPE"
            )
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise ValueError(f"{source}: model.vocab must be an object of token -> id")
    unk = model.get("unk_token")
    if unk is None:
        raise ValueError(f"{source}: model.unk_token is missing; a SentencePiece model needs <unk>")
    byte_fallback = bool(model.get("byte_fallback"))
    by_id = {i: t for t, i in vocab.items()}
    special, added_user = set(), set()
    for t in doc.get("added_tokens") or []:
        if any(t.get(flag) for flag in ("lstrip", "rstrip", "single_word")):
            raise ValueError(
                f"{source}: added token {t.get('content')!r} has lstrip/rstrip/single_word, "
                "not supported for a SentencePiece-style BPE"
            )
        by_id.setdefault(t["id"], t["content"])
        (special if t.get("special") else added_user).add(t["content"])
    if sorted(by_id) != list(range(len(by_id))):
        missing = next(i for i in range(len(by_id) + 1) if i not in by_id)
        raise ValueError(
            f"{source}: token ids must be 0..n-1 for a SentencePiece model; {missing} is missing"
        )
    spec, exact_prefix = _read_normalizer(doc, source)
    scheme, user = _read_pre_tokenizer(doc, source)
    if scheme is not None:
        spec["escape_whitespaces"] = True
        spec["add_dummy_prefix"] = spec["add_dummy_prefix"] or scheme != "never"
    merges = [m.split(" ", 1) if isinstance(m, str) else m for m in model.get("merges") or []]
    first_rank: dict[str, int] = {}
    for r, (a, b) in enumerate(merges):
        first_rank.setdefault(a + b, r)
    user_set = set(user) | added_user
    pieces = []
    for i in range(len(by_id)):
        t = by_id[i]
        if t == unk:
            kind = UNKNOWN
        elif t in special:
            kind = CONTROL
        elif t in user_set:
            kind = USER_DEFINED
        elif byte_fallback and re.fullmatch(r"<0x[0-9A-F]{2}>", t):
            kind = BYTE
        else:
            kind = NORMAL
        score = -float(first_rank[t]) if t in first_rank else -float(len(merges) + i)
        pieces.append((t, score if kind == NORMAL else 0.0, kind))
    never = [
        i
        for i, (t, _, k) in enumerate(pieces)
        if k == NORMAL and len(t) > 1 and t not in first_rank
    ]
    trainer = {"byte_fallback": byte_fallback, "unk_piece": unk, "vocab_size": len(pieces)}
    try:
        built = _core.SentencePieceModel.build(pieces, spec, trainer)
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None
    specials = {t: i for i, (t, _, k) in enumerate(pieces) if k in (CONTROL, UNKNOWN)}
    tok = _spm_class(
        built,
        specials,
        source=source,
        hf=dict(
            hf_chars=True,
            never_merged=never,
            whole_lookup=bool(model.get("ignore_merges")),
            fuse_unk=bool(model.get("fuse_unk")),
            metaspace_prefix=scheme is not None and not exact_prefix,
            prefix_first_only=scheme == "first",
        ),
    )
    tok._hf_doc = doc
    return tok
