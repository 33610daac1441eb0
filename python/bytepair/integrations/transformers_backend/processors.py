"""tokenizer.json post-processors (the tokens HF adds around a sequence, its
type ids and offset trimming) and HF's ``post_process``: truncation, then the
post-processor, then padding (huggingface/tokenizers ``tokenizer/mod.rs``
``post_process``, ``processors/``).

Served: no post-processor, ``ByteLevel``, ``TemplateProcessing``,
``RobertaProcessing``, ``BertProcessing``, and a ``Sequence`` of ByteLevel
steps with at most one of the others last (Llama 3's layout). `parse` raises
`Unserved` for anything else, and HF keeps serving that tokenizer's encoding.
"""

from __future__ import annotations

from dataclasses import dataclass

from bytepair.integrations.transformers_backend.model import (
    Enc,
    Special,
    Unserved,
    merge,
    truncate_encodings,
)


@dataclass(frozen=True)
class Truncation:
    """HF's ``TruncationParams`` as transformers sets them for one call."""

    max_length: int
    stride: int
    strategy: str  # longest_first, only_first, only_second
    direction: str  # right, left


@dataclass(frozen=True)
class Padding:
    """HF's ``PaddingParams``: `length` None pads to the batch's longest."""

    length: int | None
    direction: str
    pad_id: int
    pad_type_id: int
    pad_token: str
    multiple: int | None

    def target(self, longest: int) -> int:
        n = longest if self.length is None else self.length
        if self.multiple and n % self.multiple:
            n += self.multiple - n % self.multiple
        return n

    def apply(self, enc: Enc, target: int) -> None:
        enc.pad(target, self.pad_id, self.pad_type_id, self.pad_token, self.direction)


class ByteLevel:
    """Trims the spaces of byte-level tokens from their offsets; adds nothing."""

    def __init__(self, node: dict):
        self.trim = bool(node.get("trim_offsets", True))
        self.add_prefix_space = bool(node.get("add_prefix_space", True))

    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def process_encodings(self, encs: list[Enc], add_special: bool) -> list[Enc]:
        if self.trim:
            for e in encs:
                for x in [e, *e.overflowing]:
                    x.trim(self.add_prefix_space)
        for i, e in enumerate(encs):
            e.set_sequence_id(i)
        return encs


class Template:
    """``TemplateProcessing``: ``single`` / ``pair`` templates of sequences
    ($A, $B) and special tokens, each with a type id."""

    def __init__(self, node: dict):
        specials = {
            name: (tuple(spec["ids"]), tuple(spec["tokens"]))
            for name, spec in (node.get("special_tokens") or {}).items()
        }
        self.single = [_piece(p, specials) for p in node["single"]]
        self.pair = [_piece(p, specials) for p in node["pair"]]
        if any(p[0] == 1 for p in self.single):
            raise Unserved("TemplateProcessing whose single template uses $B")

    def added_tokens(self, is_pair: bool) -> int:
        template = self.pair if is_pair else self.single
        return sum(len(p[1][0]) for p in template if p[0] == "special")

    def process_encodings(self, encs: list[Enc], add_special: bool) -> list[Enc]:
        out = []
        for kind, what, type_id in self.pair if len(encs) == 2 else self.single:
            if kind == "special":
                if add_special:
                    out.append(Enc([Special(*what, type_id)]))
                continue
            e = encs[kind]
            e.set_type_ids(type_id)
            e.set_sequence_id(kind)
            out.append(e.clone())
        return out


def _piece(node: dict, specials: dict) -> tuple:
    """A template piece: (0 or 1 for $A / $B, None, type id), or
    ("special", (ids, tokens), type id)."""
    if "Sequence" in node:
        seq = node["Sequence"]
        return ({"A": 0, "B": 1}[seq["id"]], None, int(seq["type_id"]))
    spec = node["SpecialToken"]
    if spec["id"] not in specials:
        raise Unserved(f"TemplateProcessing names an undefined special token {spec['id']!r}")
    return ("special", specials[spec["id"]], int(spec["type_id"]))


class Wrapping:
    """``RobertaProcessing`` (`roberta`: offsets trimmed, every type id 0,
    ``<s> A </s></s> B </s>``) and ``BertProcessing`` (``[CLS] A [SEP] B
    [SEP]``, B's tokens keep type id 1)."""

    def __init__(self, node: dict, roberta: bool):
        self.roberta = roberta
        self.cls, self.sep = (tuple(node["cls"]), tuple(node["sep"]))
        self.trim = roberta and bool(node.get("trim_offsets", True))
        self.add_prefix_space = bool(node.get("add_prefix_space", True))

    def added_tokens(self, is_pair: bool) -> int:
        return (4 if is_pair else 2) if self.roberta else (3 if is_pair else 2)

    def process_encodings(self, encs: list[Enc], add_special: bool) -> list[Enc]:
        if self.trim:
            for e in encs:
                for x in [e, *e.overflowing]:
                    x.trim(self.add_prefix_space)
        if self.roberta:
            for e in encs:
                e.set_type_ids(0)
        if not add_special:
            return encs
        return [self._wrap(e, i) for i, e in enumerate(encs)]

    def _wrap(self, e: Enc, i: int) -> Enc:
        token, token_id = self.cls if i == 0 else self.sep
        sep_token, sep_id = self.sep
        left = [(token_id, token, 0)] if (self.roberta or i == 0) else []
        right = [(sep_id, sep_token, 0 if (self.roberta or i == 0) else 1)]
        seq = 0 if i == 0 else 1

        def wrapped(x: Enc) -> Enc:
            inner = [p.retyped(0) for p in x.parts] if self.roberta else list(x.parts)
            parts = [Special((t_id,), (t,), ty) for t_id, t, ty in left] + inner
            parts += [Special((t_id,), (t,), ty) for t_id, t, ty in right]
            return Enc(parts, {seq: (len(left), len(left) + len(x))})

        out = wrapped(e)
        out.overflowing = [wrapped(o) for o in e.overflowing]
        return out


class Sequence:
    """``Sequence``: each processor's ``process_encodings`` in turn."""

    def __init__(self, steps: list):
        self.steps = steps

    def added_tokens(self, is_pair: bool) -> int:
        return sum(s.added_tokens(is_pair) for s in self.steps)

    def process_encodings(self, encs: list[Enc], add_special: bool) -> list[Enc]:
        for step in self.steps:
            encs = step.process_encodings(encs, add_special)
        return encs


def parse(node: dict | None):
    """The processor of a tokenizer.json ``post_processor`` node (None: none).

    Raises:
        Unserved: a kind not listed in the module docstring.
    """
    if node is None:
        return None
    kind = node.get("type")
    if kind == "ByteLevel":
        return ByteLevel(node)
    if kind == "TemplateProcessing":
        return Template(node)
    if kind in ("RobertaProcessing", "BertProcessing"):
        return Wrapping(node, roberta=kind == "RobertaProcessing")
    if kind == "Sequence":
        steps = [parse(p) for p in node.get("processors") or []]
        if any(not isinstance(s, ByteLevel) for s in steps[:-1]):
            raise Unserved("a post-processor Sequence with steps after its template")
        return Sequence(steps)
    raise Unserved(f"post_processor {kind!r}")


def post_process(proc, encs: list[Enc], add_special: bool, truncation: Truncation | None) -> Enc:
    """HF's ``TokenizerImpl::post_process`` of one input (one or two sequences),
    up to its padding (`Padding.apply`, which the caller does: it needs the target)."""
    if truncation is not None:
        added = proc.added_tokens(len(encs) == 2) if proc is not None else 0
        max_length = truncation.max_length
        if add_special and added:
            if max_length < added:
                raise Unserved(f"max_length {max_length} below the {added} tokens HF adds")
            max_length -= added
        pair = encs[1] if len(encs) == 2 else None
        truncate_encodings(
            encs[0], pair, max_length, truncation.stride, truncation.strategy, truncation.direction
        )
    if proc is None:
        final = encs[0] if len(encs) == 1 else _default_merge(encs)
    else:
        for i, e in enumerate(encs):
            e.set_sequence_id(i)
            for o in e.overflowing:
                o.set_sequence_id(i)
            e.set_type_ids(i)
        final = merge(proc.process_encodings(encs, add_special))
    return final


def _default_merge(encs: list[Enc]) -> Enc:
    """``PostProcessor::default_process`` of a pair: sequence ids set, merged."""
    final = Enc([])
    for i, e in enumerate(encs):
        e.set_sequence_id(i)
        final.merge_with(e)
    return final
