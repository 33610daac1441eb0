"""What serving a SentencePiece-style tokenizer.json (Llama 2, Mistral 7B,
Gemma: BPE over characters with byte fallback, "▁" for spaces) takes beyond
the byte-level families. Encoding is `bytepair.SentencePieceTokenizer`'s
(``formats.spm.from_hf_spm`` reads the file as HF runs it); here:

- which files and added tokens are served (`check_served`, `check_added`,
  `added_as_control`) and two layouts transformers 5 rebuilds made loadable
  (`unk_stand_in`, `without_noop_split`);
- offsets as HF aligns them (`hf_offsets`);
- decoding through the file's own decoder chain (`decode`, `decoders.py`):
  HF's decoders of these files show added tokens as their text, where
  SentencePiece's decoding (`SentencePieceTokenizer.decode`) hides them.
"""

from __future__ import annotations

import json

from bytepair.formats.spm import is_spm_style
from bytepair.integrations.transformers_backend.decoders import Chain, chain_of
from bytepair.integrations.transformers_backend.model import Unserved

SPACE = "\u2581"


def collapses_spaces(doc: dict) -> bool:
    """Whether the normalizer collapses runs of spaces (SentencePiece's
    remove_extra_whitespaces as transformers writes it)."""
    return '" {2,}"' in json.dumps(doc.get("normalizer"))


def added_as_control(doc: dict) -> list:
    """The file's added tokens as bytepair is to load them: for a
    SentencePiece-style file every one special, so that each becomes a control
    piece, split out of the raw text with a dummy prefix for each text between
    (what HF does with an added token matched in raw text; `check_added` says
    which are). Which ones HF skips as special is read from the file itself."""
    added = doc.get("added_tokens") or []
    if not is_spm_style(doc):
        return added
    return [t if t.get("special") else {**t, "special": True} for t in added]


def check_added(doc: dict) -> None:
    """`Unserved` for an added token HF does not match as bytepair does.

    HF matches an added token with ``normalized: true`` in normalized text,
    its content normalized too ("newtok" as "▁newtok" under ``Prepend``), and
    only after those matched in raw text. That is matching in raw text when
    the normalizer at most turns spaces into "▁" (Gemma's), the content holds
    neither, and no raw-text token overlaps it. A plain added token that is
    also a piece of the model stays one BPE can make in HF, not in bytepair
    (where it is a control piece): the same ids unless the text BPE sees can
    hold it where the raw text does not, that is unless it holds a space or
    "▁" (spaces become "▁", and the dummy prefix is one). lstrip/rstrip are
    refused by the loader."""
    vocab = (doc.get("model") or {}).get("vocab") or {}
    added = doc.get("added_tokens") or []
    raw = [t["content"] for t in added if not _normalized(t)]
    only_spaces = _only_escapes_spaces(doc.get("normalizer"))
    for t in added:
        content = t.get("content") or ""
        if _normalized(t):
            if doc.get("normalizer") and (not only_spaces or " " in content or SPACE in content):
                raise Unserved(f"a normalized added token ({content!r}) with a normalizer")
            if any(_overlap(content, r) for r in raw):
                raise Unserved(f"a normalized added token ({content!r}) overlapping another")
        if not t.get("special") and content in vocab and (" " in content or SPACE in content):
            raise Unserved(f"a plain added token that is a piece of the model ({content!r})")


def _normalized(t: dict) -> bool:
    return bool(t.get("normalized", not t.get("special")))


def _only_escapes_spaces(node) -> bool:
    """Whether a normalizer only turns spaces into "▁" (Gemma's)."""
    steps = (node or {}).get("normalizers") if (node or {}).get("type") == "Sequence" else [node]
    return all(step == _SPACE_TO_META for step in steps or [])


def _overlap(a: str, b: str) -> bool:
    """Whether some text can hold `a` and `b` at overlapping places."""
    if a in b or b in a:
        return True
    return any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


def check_served(doc: dict) -> None:
    """`Unserved` for a SentencePiece-style file bytepair loads but does not
    encode exactly as HF: a ``Precompiled`` normalizer (a charsmap; HF
    normalizes grapheme by grapheme, bytepair as SentencePiece does, and they
    differ on combining marks and "\\r\\n")."""
    if '"Precompiled"' in json.dumps(doc.get("normalizer")):
        raise Unserved("a Precompiled normalizer (charsmap): HF's normalization is not modelled")


def decoder_chain(doc: dict) -> Chain | None:
    """The file's decoder as a `decoders.Chain`, None when HF must decode."""
    return chain_of(doc.get("decoder"))


def byte_ids(chain: Chain | None, token_of: list) -> frozenset:
    """Ids whose token ByteFallback reads as a byte."""
    if chain is None or not chain.reads_bytes:
        return frozenset()
    return frozenset(i for i, t in enumerate(token_of) if t is not None and chain.is_byte(t))


def decode(state, ids) -> str | None:
    """HF's ``Tokenizer.decode`` of `ids` (special ones already dropped when
    asked); None where HF must answer (an id outside the vocabulary, which HF
    drops, or not an int). The text of one id is kept (``state.one_id``, at
    most one string per id): decoding a generation one token at a time asks
    for the same ids again and again."""
    if len(ids) == 1 and type(ids[0]) is int:
        text = state.one_id.get(ids[0])
        if text is None:
            text = _decode(state, ids)
            if text is not None:
                state.one_id[ids[0]] = text
        return text
    return _decode(state, ids)


def _decode(state, ids) -> str | None:
    token_of = state.token_of
    try:
        if ids and (min(ids) < 0 or max(ids) >= len(token_of)):
            return None
        tokens = [token_of[i] for i in ids]
    except (TypeError, IndexError, ValueError):
        return None
    if None in tokens:
        return None
    has_bytes = bool(state.byte_ids) and not state.byte_ids.isdisjoint(ids)
    return state.chain.decode(tokens, has_bytes)


def hf_offsets(
    text: str,
    ids: list[int],
    offsets: list[tuple[int, int]],
    specials: frozenset,
    collapses_spaces: bool,
) -> list[tuple[int, int]]:
    """HF's offsets from bytepair's (characters of `text`, one piece of it;
    `ids` its ids, `specials` the ids of control pieces):

    - a token made only of the dummy prefix's "▁" (the one span bytepair
      leaves empty; the first token of the text or after a control piece) has
      the span of the character the prefix was put before, as HF aligns a
      prepended character;
    - with `collapses_spaces` (the normalizer's ``Replace(" {2,}", " ")``), the
      space left of a run of spaces is aligned by HF to the run's last space,
      by bytepair to its first: a token starting on such a run starts on its
      last space.
    """
    out = offsets
    firsts = [0] if specials.isdisjoint(ids) else _after_specials(ids, specials)
    empty = [k for k in firsts if k < len(offsets) and offsets[k][0] == offsets[k][1]]
    if empty:
        out = list(offsets)
        for k in empty:
            out[k] = (out[k][0], out[k][0] + 1)
    if collapses_spaces and "  " in text:
        out = [(_run_end(text, a) - 1 if text.startswith("  ", a) else a, b) for a, b in out]
    return out


def _after_specials(ids: list[int], specials: frozenset) -> list[int]:
    """0 and the index after each control piece: where a dummy prefix can be."""
    return [0] + [k + 1 for k, i in enumerate(ids) if i in specials]


def _run_end(text: str, at: int) -> int:
    """Where the run of spaces starting at `at` ends."""
    end = at
    while end < len(text) and text[end] == " ":
        end += 1
    return end


def unk_stand_in(doc: dict) -> dict:
    """The file's model, with ``unk_token`` "<unk>" where it has none but
    cannot need one (transformers 5's LlamaTokenizer writes ``null``):
    byte fallback over all 256 byte tokens takes every character the
    vocabulary lacks, and "<unk>" is a special added token (so it is matched
    as one, not merged). Other models as they are."""
    model = doc.get("model")
    if not isinstance(model, dict) or model.get("unk_token") is not None:
        return model
    vocab = model.get("vocab")
    if not model.get("byte_fallback") or not isinstance(vocab, dict) or "<unk>" not in vocab:
        return model
    if not all(f"<0x{b:02X}>" in vocab for b in range(256)):
        return model
    added = doc.get("added_tokens") or []
    if not any(t.get("content") == "<unk>" and t.get("special") for t in added):
        return model
    return {**model, "unk_token": "<unk>"}


_SPACE_TO_META = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}


def without_noop_split(doc: dict):
    """The file's pre-tokenizer, None for a Split on " " that finds no space
    to split at (transformers 5's GemmaTokenizer writes one after a
    normalizer whose last step turns every space into "▁")."""
    pre = doc.get("pre_tokenizer")
    if not isinstance(pre, dict) or pre.get("type") != "Split" or pre.get("invert"):
        return pre
    if pre.get("pattern") != {"String": " "}:
        return pre
    norm = doc.get("normalizer") or {}
    last = (norm.get("normalizers") or [None])[-1] if norm.get("type") == "Sequence" else norm
    return None if last == _SPACE_TO_META else pre
