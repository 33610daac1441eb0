"""HuggingFace ``tokenizer.json`` for byte-level BPE.

The file of the ``tokenizers`` library (huggingface/tokenizers, the
``Tokenizer.save`` / ``Tokenizer.from_file`` JSON), which ``transformers``
loads with ``PreTrainedTokenizerFast(tokenizer_file=...)``.

What we write (tokenizers >= 0.15 and transformers read it with our ids):
  - model: BPE, vocab ``{printable token: id}``, merges ``"left right"``, and
    ``ignore_merges: true`` so a pre-token that is itself a token is looked up
    whole, as tiktoken does;
  - pre_tokenizer: for GPT-2's pattern, HF's ``ByteLevel(use_regex=true)`` (its
    built-in regex is GPT-2's; the form of OpenAI's GPT-2 tokenizer.json); else
    ``Split(pattern, Isolated)`` then ``ByteLevel(use_regex=false)``
    for a preset or a pattern read from an Isolated Split; any other pattern as
    ``Split(pattern, Removed, invert=true)``, which keeps the matches and drops
    the text between them, as ``re.findall`` and tiktoken do;
  - decoder: ByteLevel; special tokens as ``added_tokens`` with ``special: true``.
    HF does not keep the id written for an added token: it gives it the id of
    the same string in ``model.vocab`` if there is one, else the next id after
    the vocab (``AddedVocabulary::add_tokens``). So a special token whose id is
    not where HF would put it is also written into ``model.vocab`` under its id,
    as GPT-2's own files do with ``<|endoftext|>``.

What we read: a BPE model over the 256 byte-level characters with
  - pre_tokenizer ``ByteLevel`` (its built-in GPT-2 regex, ``use_regex`` true),
    ``ByteLevel(use_regex=false)`` (no split at all), or
    ``Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)]`` (the
    Llama-3 / GPT-4-style layout, and ours). An Isolated Split keeps the text
    between two matches as a pre-token of its own, where tiktoken drops it; a
    regex that is not a preset (presets match every character) is read as
    `keep_gaps(regex)`, which matches that text too, so nothing HF encodes is
    lost. ``Split(Regex, Removed, invert=true)`` keeps only the matches (findall);
  - ``ignore_merges`` true or false (false: merges by pair, as GPT-2's original
    code; equal to ours when the merge table passes `tables.check_merges`);
  - added tokens (special or not: HF always splits them out of the text) become
    special tokens, with the ids HF gives them.
Any other pipeline (a normalizer, a Sequence of Split / Digits / Punctuation /
WhitespaceSplit steps, ByteLevel's ``add_prefix_space``, added tokens with
lstrip / rstrip / single_word / normalized) is read by
`bytepair.formats.hf_pipeline` and runs on the core's general path with HF's
semantics; it is written back as read. Anything that would change the ids is
an error naming its key: a WordPiece/Unigram/WordLevel model,
``byte_fallback``, dropout, subword prefixes/suffixes, a normalizer or
pre-tokenizer the pipeline does not support. A post-processor (the tokens HF adds when
``add_special_tokens=True``) and truncation/padding are ignored with a warning.
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bytepair import _core
from bytepair.formats.bytelevel import is_byte_level, strs_to_tokens, token_to_str
from bytepair.formats.hf_pipeline import HFPipeline, read_pipeline
from bytepair.formats.hf_regex import (
    PRESETS,
    WHOLE_TEXT,
    check_oniguruma_regex,
    hf_pattern,
    keep_gaps,
    preset_name,
    unwrap_gaps,
)
from bytepair.formats.reading import build_tokenizer, parse_json
from bytepair.formats.tables import check_merges

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer


def hf_added_token_ids(contents: Sequence[str], model_vocab: Mapping[str, int]) -> dict[str, int]:
    """The ids HuggingFace tokenizers gives added tokens, in file order, when it
    reads a tokenizer.json (``AddedVocabulary::add_tokens``): the id of the same
    string in ``model.vocab`` if it is there; else ``len(model.vocab)`` for the
    first, then one more than the largest added id so far (or ``len(model.vocab)``
    again while that largest id is below it). The id written in the file is not used.
    """
    size = len(model_vocab)
    ids: dict[str, int] = {}
    for content in contents:
        if not content or content in ids:
            continue
        if content in model_vocab:
            ids[content] = model_vocab[content]
            continue
        top = max(ids.values(), default=None)
        ids[content] = size if top is None else (top + 1 if top >= size or size == 0 else size)
    return ids


def to_hf_json(tok: "Tokenizer") -> str:
    """Serialize `tok` as a HuggingFace tokenizer.json document (str).

    Special tokens keep their ids in HF: one that HF would renumber (a gap
    after the vocab, ids out of order) is also written into ``model.vocab``, as
    is one that is an ordinary token too (HF's added token in ``model.vocab``).

    Raises:
        ValueError: the same bytes under two ids, or a special token spelled like
            a vocabulary token with another id (HF would give it that id).
    """
    if hasattr(tok, "save_model"):  # a SentencePiece model: its own layout
        from bytepair.formats import spm

        return spm.to_hf_json(tok)
    only_special = set(tok.special_tokens.values()) - tok._shared_special_ids()
    ordinary = [(i, b) for i, b in sorted(tok.vocab.items()) if i not in only_special]
    vocab = {token_to_str(b): i for i, b in ordinary}
    if len(vocab) != len(ordinary):
        raise ValueError(
            "the vocabulary holds the same bytes under two ids; tokenizer.json cannot store that"
        )
    added = sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
    model_vocab = dict(vocab)
    while True:
        got = hf_added_token_ids([t for t, _ in added], model_vocab)
        fix = [(t, i) for t, i in added if got[t] != i and t not in model_vocab]
        if not fix:
            break
        for t, i in fix:
            if i in tok.vocab and i not in only_special:  # " " at the id of the byte "Ġ"
                spelled = token_to_str(tok.vocab[i])
                raise ValueError(
                    f"tokenizer.json: special token {t!r} has id {i}, the ordinary token "
                    f"{tok.vocab[i]!r}, which tokenizer.json spells {spelled!r}: "
                    "HuggingFace cannot give the added token that id (save_tiktoken can)"
                )
        model_vocab.update(fix)
    for t, i in added:
        if got[t] != i:
            raise ValueError(
                f"tokenizer.json: special token {t!r} (id {i}) is spelled like the vocabulary "
                f"token with id {model_vocab[t]} ({tok.vocab[model_vocab[t]]!r}); HuggingFace "
                f"gives an added token the id of the model token spelled like it, so the file "
                f"would load with {t!r} at id {got[t]} (save_tiktoken keeps both ids)"
            )
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [_added_token_node(tok, t, i) for t, i in added],
        "normalizer": tok.pipeline.normalizer if tok.pipeline else None,
        "pre_tokenizer": tok.pipeline.pre_tokenizer
        if tok.pipeline
        else _pre_tokenizer_node(tok.pattern),
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": dict(sorted(model_vocab.items(), key=lambda kv: kv[1])),
            "merges": [f"{token_to_str(a)} {token_to_str(b)}" for a, b in tok.merges],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=1)


def _added_token_node(tok: "Tokenizer", content: str, i: int) -> dict[str, Any]:
    """A special token as tokenizer.json's ``added_tokens`` entry, with its pipeline's rules."""
    single_word, lstrip, rstrip, normalized = (
        tok.pipeline.rule_of(content)[1:] if tok.pipeline else (False,) * 4
    )
    return {
        "id": i,
        "content": content,
        "single_word": single_word,
        "lstrip": lstrip,
        "rstrip": rstrip,
        "normalized": normalized,
        "special": True,
    }


def _pre_tokenizer_node(pattern: str) -> dict[str, Any]:
    """The pre_tokenizer of tokenizer.json for `pattern`. GPT-2's is HF's own
    ByteLevel split (its built-in regex is GPT-2's), the form of OpenAI's
    GPT-2 tokenizer.json, which every reader of tokenizer.json knows (other
    fast encoders refuse a Split regex they do not recognise); any other
    pattern is a Split followed by a ByteLevel that only maps bytes."""
    if preset_name(_core.resolve_pattern(pattern)) == "gpt2":
        return {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        }
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": False,
    }
    return {"type": "Sequence", "pretokenizers": [_split_node(pattern), byte_level]}


def _split_node(pattern: str) -> dict[str, Any]:
    """The Split node that makes HF split text as `pattern` does (see the module docstring)."""
    name = preset_name(_core.resolve_pattern(pattern))
    if name in PRESETS:
        return {
            "type": "Split",
            "pattern": {"Regex": hf_pattern(name)},
            "behavior": "Isolated",
            "invert": False,
        }
    inner = unwrap_gaps(pattern)
    if inner is not None:
        return {
            "type": "Split",
            "pattern": {"Regex": inner},
            "behavior": "Isolated",
            "invert": False,
        }
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Removed", "invert": True}


def _byte_level_step(step: Any, where: str, source: str, *, use_regex: bool) -> None:
    """Check a ByteLevel pre-tokenizer node: ``add_prefix_space`` false, ``use_regex`` as
    expected."""
    if step.get("add_prefix_space"):
        raise ValueError(
            f"{source}: {where}.add_prefix_space=true is not supported (it inserts a space before "
            "the text)"
        )
    if bool(step.get("use_regex", True)) != use_regex:
        raise ValueError(
            f"{source}: {where}.use_regex={step.get('use_regex', True)} is not supported here"
        )


def _split_regex(step: Any, where: str, source: str) -> str:
    """The pattern that splits text as a Split(Regex, Isolated, invert=false) or
    Split(Regex, Removed, invert=true) node does (see the module docstring)."""
    pattern = step.get("pattern")
    if not isinstance(pattern, dict) or not isinstance(pattern.get("Regex"), str):
        raise ValueError(
            f"{source}: {where}.pattern {json.dumps(pattern)[:100]} is not supported "
            '(only {"Regex": ...}; a String pattern splits on a literal, which a '
            "pre-tokenization regex does not express)"
        )
    behavior, invert = step.get("behavior"), step.get("invert", False)
    if (behavior, invert) not in (("Isolated", False), ("Removed", True)):
        raise ValueError(
            f"{source}: {where}.behavior {behavior!r} with {where}.invert={json.dumps(invert)} is "
            "not supported (only 'Isolated' with invert=false, or 'Removed' with invert=true)"
        )
    regex = check_oniguruma_regex(pattern["Regex"], where, source)
    if behavior == "Removed" or preset_name(regex) in PRESETS:
        return regex
    return keep_gaps(regex)


def _pattern_of(pre: Any, source: str) -> str:
    """The pre-tokenization regex of a tokenizer.json `pre_tokenizer` node."""
    if not isinstance(pre, dict):
        raise ValueError(f"{source}: pre_tokenizer: expected an object, got {type(pre).__name__}")
    kind = pre.get("type")
    if kind == "ByteLevel":
        use_regex = bool(pre.get("use_regex", True))
        _byte_level_step(pre, "pre_tokenizer", source, use_regex=use_regex)
        return _core.resolve_pattern("gpt2") if use_regex else WHOLE_TEXT
    if kind == "Sequence":
        steps = pre.get("pretokenizers")
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise ValueError(f"{source}: pre_tokenizer.pretokenizers must be a list of objects")
        kinds = [s.get("type") for s in steps]
        if kinds == ["ByteLevel"]:
            return _pattern_of(steps[0], source)
        if kinds == ["Split", "ByteLevel"]:
            regex = _split_regex(steps[0], "pre_tokenizer.pretokenizers[0]", source)
            _byte_level_step(steps[1], "pre_tokenizer.pretokenizers[1]", source, use_regex=False)
            return regex
        raise ValueError(
            f"{source}: pre_tokenizer Sequence {kinds} is not supported "
            "(expected [Split(Regex, Isolated), ByteLevel(use_regex=false)] or [ByteLevel])"
        )
    raise ValueError(
        f"{source}: pre_tokenizer {json.dumps(pre)[:200]} is not supported "
        "(expected ByteLevel, or Split(Regex, Isolated) followed by ByteLevel(use_regex=false))"
    )


def _check_model_options(model: dict, source: str) -> None:
    if model.get("type", "BPE") != "BPE":
        raise ValueError(
            f"{source}: model.type {model.get('type')!r} is not supported (only byte-level BPE)"
        )
    if model.get("dropout") not in (None, 0, 0.0):
        raise ValueError(
            f"{source}: model.dropout={model['dropout']!r} is not supported (HF would skip merges "
            "at random on every encode; bytepair's encode is deterministic)"
        )
    if model.get("byte_fallback"):
        raise ValueError(
            f"{source}: model.byte_fallback=true is not supported (a SentencePiece-style model, "
            "not byte-level)"
        )
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key) not in (None, ""):
            raise ValueError(
                f"{source}: model.{key}={model[key]!r} is not supported (byte-level BPE has none)"
            )


def _is_empty_normalizer(node: Any) -> bool:
    return node in (None, {}) or (
        isinstance(node, dict)
        and node.get("type") == "Sequence"
        and node.get("normalizers") in ([], None)
    )


def _ids_of_vocab(raw_vocab: dict, source: str) -> dict[int, str]:
    """model.vocab (token string -> id) as id -> token string; ValueError for an
    id that is not an int in [0, 2**32) or is given twice."""
    by_id: dict[int, str] = {}
    for s, i in raw_vocab.items():
        if type(i) is not int or not 0 <= i < 1 << 32:
            raise ValueError(
                f"{source}: model.vocab[{s!r}] must be an integer id in [0, 2**32), got {i!r}"
            )
        if i in by_id:
            raise ValueError(f"{source}: model.vocab: id {i} is given to two tokens")
        by_id[i] = s
    return by_id


def _merges_of(raw_merges: list, source: str) -> list[tuple[bytes, bytes]]:
    """model.merges ("left right" strings or [left, right] lists) as byte pairs;
    ValueError naming the first merge that is neither or not byte-level."""
    parts = [m.split(" ") if isinstance(m, str) else m for m in raw_merges]
    for n, (m, p) in enumerate(zip(raw_merges, parts)):
        if not isinstance(p, list) or len(p) != 2 or not all(isinstance(x, str) for x in p):
            raise ValueError(
                f"{source}: model.merges[{n}]: expected 'left right' or [left, right], got {m!r}"
            )
    flat = list(itertools.chain.from_iterable(parts))
    where = lambda n: f"{source}: model.merges[{n // 2}]"  # noqa: E731
    tokens = strs_to_tokens(flat, where)
    return list(zip(tokens[0::2], tokens[1::2]))


def from_hf_json(data: bytes | str | dict, *, source: str = "<tokenizer.json>") -> "Tokenizer":
    """Parse a byte-level BPE tokenizer.json document into a Tokenizer whose ids
    equal HuggingFace tokenizers' (``encode(text, add_special_tokens=False)``).

    Args:
        data: the file's content (bytes or str), or the parsed JSON object.
        source: names the file in error messages.

    Raises:
        ValueError: invalid JSON; a model that is not byte-level BPE; a
            normalizer, pre-tokenizer or model option that changes the ids (see
            the module docstring); a token that is not byte-level; a wrong JSON
            type; an added token whose id the vocab gives to other bytes; a merge
            table HF would apply differently (`tables.check_merges`). The message
            names `source` and the key at fault.

    Warns:
        UserWarning: an added token whose id in the file is not the one HF gives
            it (HF's id is used), or a post-processor / truncation / padding,
            which are ignored.
    """
    doc = data if isinstance(data, dict) else parse_json(data, source=source)
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise ValueError(f"{source}: no 'model' object; not a tokenizer.json file")
    from bytepair.formats import spm

    if spm.is_spm_style(doc):  # Llama 1/2, Mistral 7B, Gemma, ...: merges over characters
        return spm.from_hf_spm(doc, source=source)
    model = doc["model"]
    _check_model_options(model, source)
    post = doc.get("post_processor")
    if post not in (None, {}) and not (isinstance(post, dict) and post.get("type") == "ByteLevel"):
        warnings.warn(
            f"{source}: post_processor {json.dumps(post)[:80]} is ignored; compare with HF's "
            "encode(..., add_special_tokens=False)",
            stacklevel=3,
        )
    for key in ("truncation", "padding"):
        if doc.get(key) is not None:
            warnings.warn(f"{source}: {key} is ignored", stacklevel=3)
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise ValueError(f"{source}: model.vocab must be an object of token -> id")
    raw_merges = model.get("merges") or []
    # The regular case in one native pass; anything else (_ids_of_vocab,
    # _merges_of) is read item by item, which words the fault.
    fast = _core.byte_level_tables(raw_vocab, raw_merges) if isinstance(raw_merges, list) else None
    by_id = dict(zip(fast[0], raw_vocab)) if fast else _ids_of_vocab(raw_vocab, source)

    added = doc.get("added_tokens") or []
    if not isinstance(added, list):
        raise ValueError(f"{source}: added_tokens must be a list")
    stored: list[tuple[int, str, int]] = []
    rules: list[tuple[str, bool, bool, bool, bool]] = []
    for n, t in enumerate(added):
        if (
            not isinstance(t, dict)
            or not isinstance(t.get("content"), str)
            or type(t.get("id")) is not int
        ):
            raise ValueError(
                f"{source}: added_tokens[{n}] must have a string 'content' and an integer 'id'"
            )
        if not 0 <= t["id"] < 1 << 32:
            raise ValueError(f"{source}: added_tokens[{n}].id {t['id']} must be in [0, 2**32)")
        if not t["content"]:
            raise ValueError(f"{source}: added_tokens[{n}] has an empty 'content'")
        for flag in ("single_word", "lstrip", "rstrip", "normalized", "special"):
            if not isinstance(t.get(flag, False), bool):  # HF refuses the file too
                raise ValueError(f"{source}: added_tokens[{n}].{flag} must be true or false")
        stored.append((n, t["content"], t["id"]))
        rules.append(
            (
                t["content"],
                *(
                    bool(t.get(flag, False))
                    for flag in ("single_word", "lstrip", "rstrip", "normalized")
                ),
            )
        )
    if not isinstance(raw_merges, list):
        raise ValueError(f"{source}: model.merges must be a list, got {type(raw_merges).__name__}")
    merges = fast[2] if fast else _merges_of(raw_merges, source)
    contents = {c for _, c, _ in stored}
    if fast:
        vocab: dict[int, bytes] = dict(zip(fast[0], fast[1]))
    else:  # an added token's text need not be byte-level
        kept = [(i, s) for i, s in by_id.items() if s not in contents or is_byte_level(s)]
        tokens = strs_to_tokens([s for _, s in kept], lambda n: f"{source}: model.vocab")
        vocab = dict(zip([i for i, _ in kept], tokens))
    # An added token in model.vocab has that id (HF's rule), and is an ordinary token too when
    # one byte or made by a merge (else special only: GPT-2's <|endoftext|>).
    made = set(map(operator.add, *zip(*merges))) if merges else set()
    for content in contents.intersection(raw_vocab):
        token = vocab.get(raw_vocab[content])
        if token is not None and len(token) > 1 and token not in made:
            del vocab[raw_vocab[content]]
    effective = hf_added_token_ids([c for _, c, _ in stored], raw_vocab)
    specials: dict[str, int] = {}
    for n, content, i in stored:
        if content in specials:
            continue
        hf_id = effective[content]
        if hf_id != i:
            if i in by_id and by_id[i] != content:
                raise ValueError(
                    f"{source}: added_tokens[{n}] {content!r} has id {i}, which model.vocab gives "
                    f"to {by_id[i]!r}"
                )
            warnings.warn(
                f"{source}: added_tokens[{n}] {content!r} has id {i} in the file, but HuggingFace "
                f"gives it id {hf_id} (it numbers added tokens that are not in model.vocab from "
                f"the vocab's size); using {hf_id}",
                stacklevel=3,
            )
        if hf_id in by_id and by_id[hf_id] != content:
            raise ValueError(
                f"{source}: added_tokens[{n}] {content!r} gets id {hf_id} in HuggingFace, which "
                f"model.vocab gives to {by_id[hf_id]!r}"
            )
        specials[content] = hf_id

    check_merges(merges, source=source, what="model.merges")
    if not model.get("ignore_merges", False):
        unmade = set(vocab.values()) - made
        for i, b in vocab.items():
            if len(b) > 1 and b in unmade:
                raise ValueError(
                    f"{source}: model.vocab[{by_id[i]!r}] (id {i}) is made by no merge; with "
                    "ignore_merges=false HF never produces it, bytepair would for a pre-token "
                    "equal to it (list it in added_tokens, or set ignore_merges=true)"
                )
    pattern, pipeline = _pattern_or_pipeline(doc, rules, source)
    return build_tokenizer(vocab, merges, specials, pattern, source=source, pipeline=pipeline)


def _pattern_or_pipeline(doc: dict, rules: list, source: str) -> tuple[str, HFPipeline | None]:
    """The pattern alone when the file's pipeline is one regex (the presets'
    fast path), else the pipeline (`hf_pipeline.read_pipeline`) and its main regex."""
    no_normalizer = _is_empty_normalizer(doc.get("normalizer"))
    # `normalized` only matters when there is a normalizer.
    plain_rules = not any(
        single or left or right or (norm and not no_normalizer)
        for _, single, left, right, norm in rules
    )
    if no_normalizer and plain_rules:
        try:
            return preset_name(_pattern_of(doc.get("pre_tokenizer"), source)), None
        except ValueError:
            pass  # read_pipeline says what it cannot read, if anything
    pipeline = read_pipeline(doc, rules, source=source)
    return preset_name(pipeline.main_regex()), pipeline


# ---- transformers model folders ------------------------------------------------------

# transformers' "no limit" for model_max_length (VERY_LARGE_INTEGER).
_NO_MAX_LENGTH = int(1e30)
ROLES = ("bos_token", "eos_token", "pad_token", "unk_token")


def save_pretrained(
    tok: "Tokenizer",
    directory: str | os.PathLike,
    *,
    model_max_length: int | None = None,
    **roles: str | None,
) -> list[str]:
    """Write a transformers tokenizer folder: ``tokenizer.json``,
    ``tokenizer_config.json`` (``PreTrainedTokenizerFast``, the roles,
    ``model_max_length``, the special tokens as ``added_tokens_decoder``) and
    ``special_tokens_map.json``, so that ``transformers.AutoTokenizer.
    from_pretrained(directory)`` gives our ids and knows which special token is
    ``eos_token`` and so on. The three files are written as one change
    (`atomic.write_file_set`); other files in the folder (model weights) are
    left alone.

    Args:
        roles: ``bos_token``, ``eos_token``, ``pad_token``, ``unk_token``: each
            None or one of `tok`'s special tokens.
        model_max_length: the model's context in tokens (None: no limit).

    Returns:
        the paths written.

    Raises:
        ValueError: a role that is not a special token of `tok`, or an unknown role.
        TypeError: a role that is not a str.
    """
    from bytepair.atomic import write_file_set

    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise ValueError(f"unknown role {unknown[0]!r}; the roles are {', '.join(ROLES)}")
    given = {role: token for role, token in roles.items() if token is not None}
    for role, token in given.items():
        if not isinstance(token, str):
            raise TypeError(f"{role} must be a str, got {type(token).__name__}")
        if token not in tok.special_tokens:
            raise ValueError(
                f"{role} {token!r} is not a special token of this tokenizer "
                f"(it has {', '.join(map(repr, tok.special_tokens)) or 'none'})"
            )
    if model_max_length is not None and (
        isinstance(model_max_length, bool)
        or not isinstance(model_max_length, int)
        or model_max_length < 1
    ):
        raise ValueError(
            f"model_max_length={model_max_length!r} must be a positive integer or None"
        )
    decoder = {
        str(i): {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for t, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": _NO_MAX_LENGTH if model_max_length is None else model_max_length,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": decoder,
        **given,
    }
    os.makedirs(directory, exist_ok=True)
    files = {
        "tokenizer.json": to_hf_json(tok),
        "tokenizer_config.json": json.dumps(config, ensure_ascii=False, indent=2),
        "special_tokens_map.json": json.dumps(given, ensure_ascii=False, indent=2),
    }
    paths = {os.path.join(os.fspath(directory), name): text for name, text in files.items()}
    write_file_set({path: text.encode("utf-8") for path, text in paths.items()})
    return list(paths)
