"""tokenizer.json pipelines beyond one regex: normalizers, pre-tokenizer
sequences and added-token rules, as HuggingFace tokenizers runs them.

`read_pipeline` turns a file's ``normalizer``, ``pre_tokenizer`` and
``added_tokens`` into an `HFPipeline`: the JSON nodes as read (written back by
`bytepair.formats.hf.to_hf_json` unchanged, so HF and transformers load the
same pipeline) and the steps the Rust core runs (``crates/bytepair-core/src/
pipeline/``). Supported, with HF's semantics (huggingface/tokenizers,
``normalizers/`` and ``pre_tokenizers/``):

- normalizers: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace (String or
  Regex pattern), Prepend, and a Sequence of them;
- pre-tokenizers: Split (String or Regex pattern; every behavior: Removed,
  Isolated, MergedWithPrevious, MergedWithNext, Contiguous; ``invert``),
  Digits (``individual_digits`` or not), Punctuation (any behavior),
  WhitespaceSplit, Whitespace, and ByteLevel (``add_prefix_space``,
  ``use_regex``), in a Sequence whose last step is ByteLevel (the model is
  byte-level BPE);
- added tokens: ``lstrip``, ``rstrip``, ``single_word``, ``normalized``.

Each reduces to a few core steps: a Split by a regex (Digits is ``\\p{N}``,
Punctuation one punctuation character, WhitespaceSplit ``\\s`` removed), the
prefix space, and the normalizers. Anything else (BertNormalizer, Precompiled,
Metaspace, ...) is refused with an error naming the component.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bytepair.formats.hf_regex import check_oniguruma_regex, preset_name

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

# GPT-2's regex, which HF's ByteLevel(use_regex=true) splits with (byte_level.rs).
BYTE_LEVEL_REGEX = "gpt2"
# HF's `is_punc`: ASCII punctuation (symbols such as $+<=>^`|~ included) or Unicode P*.
PUNCTUATION_REGEX = r"[\p{P}!-/:-@\[-`{-~]"
# `Whitespace`'s regex (pre_tokenizers/whitespace.rs), inverted and Removed.
WHITESPACE_REGEX = r"\w+|[^\w\s]+"
_UNICODE_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
_BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
# The characters Rust's `regex::escape` escapes (HF escapes a String pattern with it).
_REGEX_META = set("\\.+*?()|[]{}^$#&-~")

Step = tuple[str, list[str]]
Rule = tuple[str, bool, bool, bool, bool]


def escape_regex(literal: str) -> str:
    """`literal` as a regex matching it, escaped as Rust's ``regex::escape`` does."""
    return "".join("\\" + c if c in _REGEX_META else c for c in literal)


@dataclass(frozen=True)
class HFPipeline:
    """A tokenizer.json pipeline: the JSON nodes as read, and the core's steps.

    Attributes:
        normalizer: the ``normalizer`` node (None: none).
        pre_tokenizer: the ``pre_tokenizer`` node.
        rules: per added token, ``(content, single_word, lstrip, rstrip, normalized)``.
        normalizers, steps: what the core runs: ``(kind, arguments)`` each.
    """

    normalizer: Any
    pre_tokenizer: Any
    rules: tuple[Rule, ...]
    normalizers: tuple[Step, ...]
    steps: tuple[Step, ...]

    def core_spec(self) -> tuple[list[Step], list[Step], list[Rule]]:
        """The argument ``pipeline`` of ``_core.CoreBPE``."""
        return list(self.normalizers), list(self.steps), list(self.rules)

    def with_tokens(self, tokens: "Iterable[str]") -> "HFPipeline":
        """This pipeline with a rule for each of `tokens` it has none for (no
        flags, HF's default for a special token): what a tokenizer.json that
        lists them as added tokens reads back as (a base extended with new
        special tokens)."""
        new = tuple(self.rule_of(t) for t in tokens if t not in {r[0] for r in self.rules})
        return dataclasses.replace(self, rules=self.rules + new) if new else self

    def rule_of(self, token: str) -> Rule:
        """The added-token rule of `token` (all flags false if it has none)."""
        return next((r for r in self.rules if r[0] == token), (token, False, False, False, False))

    def describe(self) -> str:
        """One line for `bytepair info`: ``normalizer NFC; pre-tokenizer Split,
        ByteLevel(add_prefix_space)``."""
        parts = (
            [f"normalizer {', '.join(kind for kind, _ in self.normalizers)}"]
            if self.normalizers
            else []
        )
        parts.append(f"pre-tokenizer {', '.join(_node_names(self.pre_tokenizer))}")
        flagged = [
            f"{r[0]} ({', '.join(f for f, on in zip(_RULE_FLAGS, r[1:]) if on)})"
            for r in self.rules
            if any(r[1:])
        ]
        return "; ".join(parts + ([f"added-token rules {', '.join(flagged)}"] if flagged else []))

    def main_regex(self) -> str:
        """The first Split's regex (a name for the pattern), else ``"gpt2"`` for ByteLevel's own."""
        return next((args[0] for kind, args in self.steps if kind == "Split"), BYTE_LEVEL_REGEX)


_RULE_FLAGS = ("single_word", "lstrip", "rstrip", "normalized")


def _node_names(node: dict) -> list[str]:
    """The pre-tokenizer steps of a node by name, a Sequence flattened."""
    if node.get("type") == "Sequence":
        return [name for child in node["pretokenizers"] for name in _node_names(child)]
    if node.get("type") == "ByteLevel" and node.get("add_prefix_space"):
        return ["ByteLevel(add_prefix_space)"]
    return [str(node.get("type"))]


def _flag(value: Any) -> str:
    return "1" if value else "0"


def _pattern_regex(node: Any, where: str, source: str) -> str:
    """The regex of a Split / Replace ``pattern`` ({"String": s} or {"Regex": r})."""
    if isinstance(node, dict) and isinstance(node.get("Regex"), str):
        return check_oniguruma_regex(node["Regex"], where, source)
    if isinstance(node, dict) and isinstance(node.get("String"), str):
        return escape_regex(node["String"])
    raise ValueError(
        f'{source}: {where}.pattern {json.dumps(node)[:100]} must be {{"String": ...}} or '
        f'{{"Regex": ...}}'
    )


def _kind(node: Any, where: str, source: str) -> str | None:
    """The ``type`` of a pipeline node, which must be an object."""
    if not isinstance(node, dict):
        raise ValueError(f"{source}: {where}: expected an object, got {type(node).__name__}")
    return node.get("type")


def _sequence_steps(node: dict, key: str, where: str, source: str, steps_of) -> list[Step]:
    """The steps of a ``Sequence`` node's children (listed under `key`), in order."""
    children = node.get(key)
    if not isinstance(children, list):
        raise ValueError(f"{source}: {where}.{key} must be a list")
    return [
        s
        for n, child in enumerate(children)
        for s in steps_of(child, f"{where}.{key}[{n}]", source)
    ]


def _normalizer_steps(node: Any, where: str, source: str) -> list[Step]:
    if node is None:
        return []
    kind = _kind(node, where, source)
    if kind == "Sequence":
        return _sequence_steps(node, "normalizers", where, source, _normalizer_steps)
    if kind in _UNICODE_FORMS or kind == "Lowercase":
        return [(kind, [])]
    if kind == "Strip":
        return [
            ("Strip", [_flag(node.get("strip_left", True)), _flag(node.get("strip_right", True))])
        ]
    if kind == "Replace":
        content = node.get("content")
        if not isinstance(content, str):
            raise ValueError(f"{source}: {where}.content must be a string")
        return [("Replace", [_pattern_regex(node.get("pattern"), where, source), content])]
    if kind == "Prepend":
        prefix = node.get("prepend")
        if not isinstance(prefix, str):
            raise ValueError(f"{source}: {where}.prepend must be a string")
        return [("Prepend", [prefix])]
    raise ValueError(
        f"{source}: normalizer {kind!r} ({where}) is not supported (supported: NFC, NFD, NFKC, "
        "NFKD, Lowercase, Strip, Replace, Prepend, Sequence)"
    )


def _behavior(node: dict, where: str, source: str, default: str | None = None) -> str:
    behavior = node.get("behavior", default)
    if behavior not in _BEHAVIORS:
        raise ValueError(
            f"{source}: {where}.behavior {behavior!r} is not one of {', '.join(_BEHAVIORS)}"
        )
    return behavior


def _pre_tokenizer_steps(node: Any, where: str, source: str) -> list[Step]:
    """The core steps of a pre_tokenizer node; a ByteLevel step becomes ``("ByteLevel", [])``
    after its own steps, for the caller to check that it comes last."""
    kind = _kind(node, where, source)
    if kind == "Sequence":
        return _sequence_steps(node, "pretokenizers", where, source, _pre_tokenizer_steps)
    if kind == "ByteLevel":
        steps: list[Step] = [("PrefixSpace", [])] if node.get("add_prefix_space") else []
        if node.get("use_regex", True):
            steps.append(("Split", [BYTE_LEVEL_REGEX, "Isolated", "0"]))
        return [*steps, ("ByteLevel", [])]
    if kind == "Split":
        # A preset's regex (in any of its spellings) runs on its scanner; it matches every
        # character.
        regex = preset_name(_pattern_regex(node.get("pattern"), where, source))
        return [
            ("Split", [regex, _behavior(node, where, source), _flag(node.get("invert", False))])
        ]
    if kind == "Digits":
        return [
            (
                "Split",
                [r"\p{N}", "Isolated" if node.get("individual_digits") else "Contiguous", "0"],
            )
        ]
    if kind == "Punctuation":
        return [("Split", [PUNCTUATION_REGEX, _behavior(node, where, source, "Isolated"), "0"])]
    if kind == "WhitespaceSplit":
        return [("Split", [r"\s", "Removed", "0"])]
    if kind == "Whitespace":
        return [("Split", [WHITESPACE_REGEX, "Removed", "1"])]
    raise ValueError(
        f"{source}: pre_tokenizer {kind!r} ({where}) is not supported (supported: Split, Digits, "
        "Punctuation, WhitespaceSplit, Whitespace, ByteLevel, Sequence)"
    )


def read_pipeline(doc: dict, rules: list[Rule], *, source: str) -> HFPipeline:
    """The pipeline of a tokenizer.json document (see the module docstring).

    Args:
        doc: the parsed tokenizer.json.
        rules: the added tokens' ``(content, single_word, lstrip, rstrip, normalized)``.
        source: names the file in error messages.

    Raises:
        ValueError: an unsupported normalizer or pre-tokenizer (named, with
            its place in the file), a ByteLevel that is missing or not last, a
            malformed node.
    """
    normalizers = _normalizer_steps(doc.get("normalizer"), "normalizer", source)
    pre = doc.get("pre_tokenizer")
    if pre is None:
        raise ValueError(
            f"{source}: no pre_tokenizer; a byte-level BPE needs a ByteLevel pre-tokenizer"
        )
    steps = _pre_tokenizer_steps(pre, "pre_tokenizer", source)
    if ("ByteLevel", []) not in steps:
        raise ValueError(
            f"{source}: pre_tokenizer has no ByteLevel step; only byte-level BPE is supported"
        )
    if steps.index(("ByteLevel", [])) != len(steps) - 1:
        raise ValueError(
            f"{source}: pre_tokenizer: a step after ByteLevel is not supported "
            "(it would split the byte-level characters)"
        )
    return HFPipeline(
        doc.get("normalizer"), pre, tuple(rules), tuple(normalizers), tuple(steps[:-1])
    )


def refuse_pipeline(tok: "Tokenizer", fmt: str) -> None:
    """ValueError when `tok` has a pipeline, which format `fmt` cannot hold."""
    if getattr(tok, "pipeline", None) is not None:
        raise ValueError(
            f"{fmt} holds only a pre-tokenization regex; this tokenizer's tokenizer.json pipeline "
            "(normalizer, pre-tokenizer sequence, added-token rules) cannot be written to it; "
            "save it as tokenizer.json"
        )
