"""HF tokenizers' decoders of SentencePiece-style tokenizer.json files
(Llama 2, Mistral 7B, Gemma), run on token strings as HF runs them
(huggingface/tokenizers ``decoders/``: ``Replace``, ``ByteFallback``,
``Fuse``, ``Strip``, ``Metaspace``, and a ``Sequence`` of them).

HF's ``Tokenizer.decode`` maps each id to its token string (an added token's
content, an id it does not know dropped), drops the special ones when asked,
passes the list through each decoder's ``decode_chain`` in turn and joins
what is left. `Chain` does the same; a decoder it does not know makes
`chain_of` return None, and HF keeps decoding that tokenizer.
"""

from __future__ import annotations

import re

# ByteFallback's test of a byte token: six bytes, "<0x", two digits Rust's
# `u8::from_str_radix(_, 16)` reads (a "+" sign included), ">".
_BYTE_TOKEN = re.compile(r"<0x(\+[0-9A-Fa-f]|[0-9A-Fa-f]{2})>")


def byte_of(token: str) -> int | None:
    """The byte HF's ByteFallback reads `token` as, or None."""
    m = _BYTE_TOKEN.fullmatch(token)
    return None if m is None else int(m.group(1), 16)


def _replace(node: dict):
    pattern = node.get("pattern") or {}
    if set(pattern) != {"String"} or not pattern["String"]:
        return None  # a regex: not modelled
    old, new = pattern["String"], node.get("content", "")
    replace = lambda tokens: [t.replace(old, new) for t in tokens]  # noqa: E731
    replace.one_char = len(old) == 1  # a pattern no join of tokens can make or break
    return replace


def _byte_fallback(node: dict):
    return _bytes_read


def _bytes_read(tokens: list[str]) -> list[str]:
    """Each run of byte tokens as its UTF-8 text, or one U+FFFD per byte when
    the run is not valid UTF-8 as a whole."""
    out: list[str] = []
    run: list[int] = []
    for t in tokens:
        b = byte_of(t) if t.startswith("<0x") else None
        if b is not None:
            run.append(b)
            continue
        if run:
            out.append(_run_text(run))
            run = []
        out.append(t)
    if run:
        out.append(_run_text(run))
    return out


def _run_text(run: list[int]) -> str:
    try:
        return bytes(run).decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(run)


def _fuse(node: dict):
    return lambda tokens: ["".join(tokens)]


def _strip(node: dict):
    content, start, stop = node.get("content", " "), node.get("start", 0), node.get("stop", 0)
    if len(content) != 1 or type(start) is not int or stop != 0 or start < 0:
        return None  # HF slices past the end of a token it strips from both sides

    def strip(tokens: list[str]) -> list[str]:
        out = []
        for t in tokens:
            k = 0
            while k < start and k < len(t) and t[k] == content:
                k += 1
            out.append(t[k:])
        return out

    return strip


def _metaspace(node: dict):
    replacement = node.get("replacement", "\u2581")
    scheme = node.get("prepend_scheme")
    if scheme is None:
        scheme = "always" if node.get("add_prefix_space", True) else "never"
    if len(replacement) != 1 or scheme not in ("always", "first", "never"):
        return None
    drop_first = scheme != "never"

    def metaspace(tokens: list[str]) -> list[str]:
        # The first token loses every replacement character, the others read them as spaces.
        return [
            t.replace(replacement, "" if k == 0 and drop_first else " ")
            for k, t in enumerate(tokens)
        ]

    return metaspace


_STEPS = {
    "Replace": _replace,
    "ByteFallback": _byte_fallback,
    "Fuse": _fuse,
    "Strip": _strip,
    "Metaspace": _metaspace,
}


class Chain:
    """A decoder as HF runs it: `decode(tokens)` is ``Tokenizer.decode``'s
    text of the token strings (ids already mapped and filtered).

    When every step before ``Fuse`` is a one-character Replace or ByteFallback
    and no token is a byte token, the tokens are joined first (Replace of one
    character commutes with the join, ByteFallback changes nothing): one
    string op instead of one per token. `is_byte` tells the byte tokens."""

    def __init__(self, steps: list, kinds: list[str]):
        self.steps = steps
        fuse_at = kinds.index("Fuse") if "Fuse" in kinds else -1
        self.joinable = fuse_at >= 0 and all(
            k == "ByteFallback" or (k == "Replace" and s.one_char)
            for k, s in zip(kinds[:fuse_at], steps)
        )
        if self.joinable:
            self.joined_steps = steps[fuse_at + 1 :]
            self.replaces = [s for k, s in zip(kinds[:fuse_at], steps) if k == "Replace"]
        # the Replace steps before the first ByteFallback: what it sees of a token
        first_bytes = kinds.index("ByteFallback") if "ByteFallback" in kinds else -1
        self.reads_bytes = first_bytes >= 0
        self.before_bytes = [s for s in steps[:first_bytes] if hasattr(s, "one_char")]

    def is_byte(self, token: str) -> bool:
        """Whether ByteFallback would read `token` (as the steps before it leave it) as a byte."""
        if not self.reads_bytes:
            return False
        tokens = [token]
        for step in self.before_bytes:
            tokens = step(tokens)
        return byte_of(tokens[0]) is not None

    def decode(self, tokens: list[str], has_bytes: bool) -> str:
        """The text of `tokens`; `has_bytes`: whether one of them `is_byte`."""
        if self.joinable and not has_bytes:
            tokens = ["".join(tokens)]
            for step in self.replaces:
                tokens = step(tokens)
            for step in self.joined_steps:
                tokens = step(tokens)
            return "".join(tokens)
        for step in self.steps:
            tokens = step(tokens)
        return "".join(tokens)


def chain_of(node: dict | None) -> Chain | None:
    """The `Chain` of a tokenizer.json decoder, or None when a step is not
    modelled (HF decodes that tokenizer)."""
    if not node:
        return None
    nodes = node.get("decoders") if node.get("type") == "Sequence" else [node]
    if not isinstance(nodes, list) or not nodes:
        return None
    steps, kinds = [], []
    for n in nodes:
        make = _STEPS.get(n.get("type")) if isinstance(n, dict) else None
        step = None if make is None else make(n)
        if step is None:
            return None
        steps.append(step)
        kinds.append(n["type"])
    return Chain(steps, kinds)
