"""The methods `patch_transformers` puts on transformers' ``TokenizersBackend``
(``PreTrainedTokenizerFast``), each the method it replaces with bytepair
serving what it can:

- ``_encode_plus``, where every encoding call lands (``__call__``,
  ``encode``, ``tokenize``, ``apply_chat_template``): the same steps as
  transformers 5's, with HF's ``encode_batch`` replaced by `serve.encode_batch`
  and no change to the backend's truncation, padding or
  ``encode_special_tokens`` settings (so threads cannot disturb each other);
- ``_decode`` (``decode``, ``batch_decode``): HF's ``Tokenizer.decode``
  served by `state.TokenizerState.decode`;
- ``__call__``, ``encode``, ``decode``: a short way for the call shapes of
  serving (one text, no padding or truncation; a flat list of ids) that skips
  transformers' argument handling, taken only when the tokenizer's class
  overrides none of the steps it skips;
- ``_add_tokens``: marks the tokenizer's state stale.

Whatever bytepair does not serve goes to the replaced method (HF's backend),
under the tokenizer's lock, and is counted in `HF_CALLS`.
"""

from __future__ import annotations

import collections

from transformers.tokenization_utils_base import (
    BatchEncoding,
    PaddingStrategy,
    TruncationStrategy,
)
from transformers.tokenization_utils_tokenizers import TokenizersBackend
from transformers.tokenization_utils_tokenizers import logger as transformers_logger

from bytepair.integrations.transformers_backend import gc_pause
from bytepair.integrations.transformers_backend.arrays import padded_batch
from bytepair.integrations.transformers_backend.encoding import Encoding
from bytepair.integrations.transformers_backend.model import Unserved
from bytepair.integrations.transformers_backend.processors import Padding, Truncation
from bytepair.integrations.transformers_backend.registry import stale, state_of
from bytepair.integrations.transformers_backend.serve import Texts, encode_batch

# The methods replaced, as resolved on TokenizersBackend before the patch.
ORIGINAL: dict[str, object] = {}
# Calls HF served, by reason (what bytepair does not serve), since the process started.
HF_CALLS: collections.Counter = collections.Counter()


def _by_hf(tok, state, reason: str, name: str, *args, **kwargs):
    """The replaced method `name`, counted; under the state's lock, as it may
    change the backend's settings."""
    HF_CALLS[reason] += 1
    if state is None:
        return ORIGINAL[name](tok, *args, **kwargs)
    with state.lock:
        return ORIGINAL[name](tok, *args, **kwargs)


# ---- encoding ------------------------------------------------------------------------------


def _encode_plus(self, text, text_pair=None, *args, **kwargs):
    state = state_of(self)
    if state is None:
        return _by_hf(self, None, "tokenizer not served", "_encode_plus", text, text_pair, **kwargs)
    try:
        if args:
            raise Unserved("positional options")
        if not isinstance(text, (list, tuple)) or len(text) < gc_pause.MIN_BATCH:
            return _serve_encode_plus(self, state, text, text_pair, kwargs)
        with gc_pause.paused():
            out = _serve_encode_plus(self, state, text, text_pair, kwargs)
            gc_pause.untrack_id_lists(out)
            return out
    except Unserved as e:
        return _by_hf(self, state, str(e), "_encode_plus", text, text_pair, *args, **kwargs)


def _serve_encode_plus(tok, state, text, text_pair, kw: dict) -> BatchEncoding:
    """transformers 5's ``TokenizersBackend._encode_plus``, step for step, with
    bytepair encoding."""
    if kw.get("sanitize_control_tokens"):
        raise Unserved("sanitize_control_tokens")
    split_words = kw.get("is_split_into_words", False)
    if not _valid_text(text) or (text_pair is not None and not _valid_text(text_pair)):
        raise Unserved("input transformers refuses")
    if split_words:
        batched = bool(
            isinstance(text, (list, tuple)) and text and isinstance(text[0], (list, tuple))
        )
    else:
        batched = isinstance(text, (list, tuple))
    if batched:
        if isinstance(text_pair, str) or (text_pair is not None and len(text) != len(text_pair)):
            raise Unserved("batch and pairs of other lengths (transformers raises)")
        items = list(zip(text, text_pair)) if text_pair is not None else text
    else:
        items = [(text, text_pair)] if text_pair else [text]
    if not items:
        raise Unserved("empty batch")
    add_special, split = _flags(tok, kw)
    truncation, padding = _truncation(tok, kw), _padding(tok, kw)
    if _as_arrays(tok, items, split_words, padding, kw):
        made = padded_batch(
            state, list(items), add_special, split, truncation, padding, _wanted_keys(tok, kw)
        )
        if made is not None:
            arrays, encodings = made
            if kw.get("max_length") is None:
                tok._eventual_warn_about_too_long_sequence(
                    arrays["input_ids"][0], None, kw.get("verbose", True)
                )
            return _batch_encoding(arrays, encodings, encodings[0].n_sequences)
    encodings = encode_batch(
        state, list(items), bool(split_words), add_special, split, truncation, padding
    )
    return _batch_output(tok, encodings, batched, kw)


def _as_arrays(tok, items, split_words, padding, kw: dict) -> bool:
    """Whether the call is a padded batch of texts asked for as numpy arrays (`arrays`)."""
    return (
        kw.get("return_tensors") == "np"
        and padding is not None
        and not split_words
        and not kw.get("return_overflowing_tokens")
        and not kw.get("return_offsets_mapping")
        and type(tok)._convert_encoding is TokenizersBackend._convert_encoding
        and all(type(item) is str for item in items)
    )


def _wanted_keys(tok, kw: dict) -> dict[str, bool]:
    """The keys transformers' ``_convert_encoding`` would return besides input_ids."""
    return {
        "token_type_ids": _wanted(tok, kw, "return_token_type_ids", "token_type_ids"),
        "attention_mask": _wanted(tok, kw, "return_attention_mask", "attention_mask"),
        "special_tokens_mask": bool(kw.get("return_special_tokens_mask")),
        "length": bool(kw.get("return_length")),
    }


def _flags(tok, kw: dict) -> tuple[bool, bool]:
    """(add_special_tokens, split_special_tokens) of a call; HF takes nothing but bools."""
    add = kw.get("add_special_tokens", True)
    split = kw.get("split_special_tokens")
    split = tok.split_special_tokens if split is None else split
    if type(add) is not bool or type(split) is not bool:
        raise Unserved("add_special_tokens or split_special_tokens not a bool")
    return add, split


def _valid_text(t) -> bool:
    """transformers' ``_is_valid_text_input``."""
    if isinstance(t, str):
        return True
    if not isinstance(t, (list, tuple)):
        return False
    if len(t) == 0 or isinstance(t[0], str):
        return True
    if not isinstance(t[0], (list, tuple)):
        return False
    if len(t[0]) == 0 or isinstance(t[0][0], str):
        return True
    if isinstance(t[0][0], (list, tuple)):
        return len(t[0][0]) == 0 or isinstance(t[0][0][0], str)
    return False


def _truncation(tok, kw: dict) -> Truncation | None:
    """The truncation transformers' ``set_truncation_and_padding`` would set."""
    strategy = TruncationStrategy(kw.get("truncation_strategy", TruncationStrategy.DO_NOT_TRUNCATE))
    if strategy == TruncationStrategy.DO_NOT_TRUNCATE:
        return None
    max_length, stride = kw.get("max_length"), kw.get("stride", 0)
    if type(max_length) is not int or type(stride) is not int or max_length < 0 or stride < 0:
        raise Unserved(f"truncation to max_length={max_length!r}, stride={stride!r}")
    if tok.truncation_side not in ("left", "right"):
        raise Unserved(f"truncation_side {tok.truncation_side!r}")
    return Truncation(max_length, stride, strategy.value, tok.truncation_side)


def _padding(tok, kw: dict) -> Padding | None:
    """The padding transformers' ``set_truncation_and_padding`` would set."""
    strategy = PaddingStrategy(kw.get("padding_strategy", PaddingStrategy.DO_NOT_PAD))
    if strategy == PaddingStrategy.DO_NOT_PAD:
        return None
    max_length = kw.get("max_length")
    length = max_length if strategy == PaddingStrategy.MAX_LENGTH else None
    side = kw.get("padding_side") or tok.padding_side
    multiple = kw.get("pad_to_multiple_of")
    pad_id, pad_token, pad_type = tok.pad_token_id, tok.pad_token, tok.pad_token_type_id
    if (
        side not in ("left", "right")
        or type(pad_id) is not int
        or not isinstance(pad_token, str)
        or type(pad_type) is not int
        or not (length is None or (type(length) is int and length >= 0))
        or not (multiple is None or (type(multiple) is int and multiple >= 0))
        or min(pad_id, pad_type) < 0
    ):
        raise Unserved("padding settings HF reads otherwise")
    return Padding(length, side, pad_id, pad_type, pad_token, multiple)


def _batch_output(tok, encodings: list[Encoding], batched: bool, kw: dict) -> BatchEncoding:
    """transformers' assembly of encodings into a ``BatchEncoding``."""
    overflowing = kw.get("return_overflowing_tokens", False)
    if overflowing or type(tok)._convert_encoding is not TokenizersBackend._convert_encoding:
        data, flat = _converted(tok, encodings, kw)
    else:  # transformers' _convert_encoding of each, done by key
        data, flat = {"input_ids": [e.ids for e in encodings]}, encodings
        wanted = _wanted_keys(tok, kw)
        for key, attr in _KEYS:
            if wanted[key]:
                data[key] = [getattr(e, attr) for e in encodings]
        if kw.get("return_offsets_mapping"):
            data["offset_mapping"] = [e.offsets for e in encodings]
        if wanted["length"]:
            data["length"] = [len(e.ids) for e in encodings]
    max_length, verbose = kw.get("max_length"), kw.get("verbose", True)
    # The base class's warning needs no call for a sequence it would not warn about.
    own_warning = type(tok)._eventual_warn_about_too_long_sequence is _BASE_WARNING
    limit = tok.model_max_length
    for input_ids in data["input_ids"]:
        if not own_warning or (max_length is None and len(input_ids) > limit):
            tok._eventual_warn_about_too_long_sequence(input_ids, max_length, verbose)
    return_tensors = kw.get("return_tensors")
    out = BatchEncoding(data, flat, tensor_type=return_tensors)
    if not batched and return_tensors is None and not overflowing:
        single = {k: (v[0] if len(v) > 0 and isinstance(v[0], list) else v) for k, v in out.items()}
        out = _batch_encoding(single, out.encodings)
    return out


_BASE_WARNING = TokenizersBackend._eventual_warn_about_too_long_sequence
# BatchEncoding keys by `_wanted_keys` name, in transformers' order, and the Encoding attribute.
_KEYS = (
    ("token_type_ids", "type_ids"),
    ("attention_mask", "attention_mask"),
    ("special_tokens_mask", "special_tokens_mask"),
)


def _converted(tok, encodings: list[Encoding], kw: dict) -> tuple[dict, list]:
    """transformers' ``_convert_encoding`` of each encoding, stacked: (data, encodings)."""
    overflowing = kw.get("return_overflowing_tokens", False)
    converted = [
        tok._convert_encoding(
            encoding=e,
            return_token_type_ids=kw.get("return_token_type_ids"),
            return_attention_mask=kw.get("return_attention_mask"),
            return_overflowing_tokens=overflowing,
            return_special_tokens_mask=kw.get("return_special_tokens_mask", False),
            return_offsets_mapping=kw.get("return_offsets_mapping", False),
            return_length=kw.get("return_length", False),
            verbose=kw.get("verbose", True),
        )
        for e in encodings
    ]
    data = {key: [v for item, _ in converted for v in item[key]] for key in converted[0][0]}
    flat = [e for _, item in converted for e in item]
    if overflowing:
        data["overflow_to_sample_mapping"] = [
            i for i, (item, _) in enumerate(converted) for _ in item["input_ids"]
        ]
    return data, flat


def _batch_encoding(data: dict, encodings: list, n_sequences: int | None = None) -> BatchEncoding:
    """``BatchEncoding(data, encodings)`` (no tensors) without its constructor's
    per-key copies, when the class has the layout checked by `fast_batch_encoding`."""
    if not _FAST_BATCH_ENCODING:
        return BatchEncoding(data, encodings, n_sequences=n_sequences)
    out = BatchEncoding.__new__(BatchEncoding)
    out.data, out._encodings = data, encodings
    out._n_sequences = (
        encodings[0].n_sequences if n_sequences is None and encodings else n_sequences
    )
    return out


def fast_batch_encoding() -> bool:
    """Whether a BatchEncoding is exactly (data, _encodings, _n_sequences), as in transformers 5."""
    probe = BatchEncoding({"input_ids": [1]}, None, n_sequences=1)
    return set(vars(probe)) == {"data", "_encodings", "_n_sequences"}


_FAST_BATCH_ENCODING = fast_batch_encoding()


# ---- decoding ------------------------------------------------------------------------------

# transformers' warning for clean_up_tokenization_spaces on a BPE tokenizer, word for word.
_CLEANUP_WARNING = (
    "Ignoring clean_up_tokenization_spaces=True for BPE tokenizer"
    " {}. The clean_up_tokenization post-processing"
    " step is designed for WordPiece tokenizers and is destructive for BPE"
    " (it strips spaces before punctuation). Set"
    " clean_up_tokenization_spaces=False to suppress this warning, or set"
    " clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output=True to"
    " force cleanup anyway."
)


def _decode(
    self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=None, **kwargs
):
    state = state_of(self)
    if state is None or not state.decodes:
        reason = "tokenizer not served" if state is None else "decoder not served"
        return _by_hf(
            self,
            state,
            reason,
            "_decode",
            token_ids,
            skip_special_tokens=skip_special_tokens,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
            **kwargs,
        )
    ids = [token_ids] if isinstance(token_ids, int) else token_ids
    if isinstance(ids, dict):
        ids = ids["input_ids"]
    text = state.decode(ids, skip_special_tokens)
    if text is None:
        return _by_hf(
            self,
            state,
            "ids outside the vocabulary",
            "_decode",
            token_ids,
            skip_special_tokens=skip_special_tokens,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
            **kwargs,
        )
    if clean_up_tokenization_spaces is None:
        clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
    if clean_up_tokenization_spaces:  # the model is BPE: transformers' rule for it
        if self.clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output:
            text = self.clean_up_tokenization(text)
        else:
            transformers_logger.warning_once(_CLEANUP_WARNING.format(self.__class__.__name__))
    return text


# ---- the short ways ------------------------------------------------------------------------

# Steps the short ways skip: a class that overrides one of them takes the long way.
_SKIPPED = (
    "__call__",
    "encode",
    "_encode_plus",
    "_convert_encoding",
    "_get_padding_truncation_strategies",
    "_eventual_warn_about_too_long_sequence",
)
_SHORT_OK: dict[type, bool] = {}


def _short_ok(cls: type) -> bool:
    ok = _SHORT_OK.get(cls)
    if ok is None:
        ok = _SHORT_OK[cls] = all(
            getattr(cls, name) is getattr(TokenizersBackend, name) for name in _SKIPPED
        ) and not hasattr(cls, "_switch_to_input_mode")
    return ok


# Arguments of a call the short way serves, with the values it accepts (None: any).
_SHORT_ARGS = {
    "add_special_tokens": None,
    "split_special_tokens": None,
    "return_attention_mask": None,
    "return_token_type_ids": None,
    "verbose": None,
    "padding": (False, "do_not_pad"),
    "truncation": (None, False, "do_not_truncate"),
    "max_length": (None,),
    "stride": None,
    "padding_side": None,
    "sanitize_control_tokens": (False,),
}


def _short_args(kwargs: dict) -> bool:
    for key, value in kwargs.items():
        accepted = _SHORT_ARGS.get(key, ())
        if accepted is not None and not any(value is a or value == a for a in accepted):
            return False
    return True


def _one_text(
    self, state, text: str, kwargs: dict, with_encoding: bool = True
) -> tuple[list[int], Encoding | None]:
    """Ids and (if asked) `Encoding` of one text with no truncation or padding."""
    add, split = _flags(self, kwargs)
    plan = state.plan()
    layout = plan.single[add]
    if layout is None:
        raise Unserved("a template that does not hold one sequence once")
    allowed = state.allowed(split)
    core_ids = state.encode_texts([text], allowed)[0]
    if with_encoding:
        enc = Texts(state, plan, [text], allowed, add, split, layout).encoding(0, core_ids)
        ids = enc.ids
    else:
        enc, ids = None, core_ids
        ids[:0] = layout.before
        ids += layout.after
    if len(ids) > self.model_max_length:
        self._eventual_warn_about_too_long_sequence(ids, None, kwargs.get("verbose", True))
    return ids, enc


def __call__(self, text=None, text_pair=None, *args, **kwargs):
    if (
        type(text) is str
        and text_pair is None
        and not args
        and _short_ok(type(self))
        and kwargs.get("return_tensors") is None
        and _short_args({k: v for k, v in kwargs.items() if k != "return_tensors"})
    ):
        state = state_of(self)
        if state is not None:
            try:
                ids, enc = _one_text(self, state, text, kwargs)
            except Unserved:
                pass
            else:
                data = {"input_ids": enc.ids}
                if _wanted(self, kwargs, "return_token_type_ids", "token_type_ids"):
                    data["token_type_ids"] = enc.type_ids
                if _wanted(self, kwargs, "return_attention_mask", "attention_mask"):
                    data["attention_mask"] = [1] * len(ids)
                return _batch_encoding(data, [enc], enc.n_sequences)
    return ORIGINAL["__call__"](self, text, text_pair, *args, **kwargs)


def _wanted(tok, kwargs: dict, flag: str, key: str) -> bool:
    value = kwargs.get(flag)
    return key in tok.model_input_names if value is None else bool(value)


def encode(self, text, text_pair=None, *args, **kwargs):
    if (
        type(text) is str
        and text_pair is None
        and not args
        and kwargs.get("return_tensors") is None
        and _short_ok(type(self))
        and _short_args({k: v for k, v in kwargs.items() if k != "return_tensors"})
    ):
        state = state_of(self)
        if state is not None:
            try:
                return _one_text(self, state, text, kwargs, with_encoding=False)[0]
            except Unserved:
                pass
    return ORIGINAL["encode"](self, text, text_pair, *args, **kwargs)


def decode(self, token_ids, skip_special_tokens=False, **kwargs):
    if type(token_ids) is list and (not token_ids or type(token_ids[0]) is int):
        if not kwargs and type(self)._decode is _decode:
            state = state_of(self, sized=False)
            if state is not None and state.decodes and not self.clean_up_tokenization_spaces:
                text = state.decode(token_ids, skip_special_tokens)
                if text is not None:
                    return text
        return self._decode(token_ids=token_ids, skip_special_tokens=skip_special_tokens, **kwargs)
    return ORIGINAL["decode"](self, token_ids, skip_special_tokens, **kwargs)


def _add_tokens(self, new_tokens, special_tokens=False):
    try:
        return ORIGINAL["_add_tokens"](self, new_tokens, special_tokens=special_tokens)
    finally:
        stale(self)


REPLACEMENTS = {
    "_encode_plus": _encode_plus,
    "_decode": _decode,
    "__call__": __call__,
    "encode": encode,
    "decode": decode,
    "_add_tokens": _add_tokens,
}
