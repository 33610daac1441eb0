"""What serving one transformers tokenizer with bytepair takes, read from its
HF backend (a ``tokenizers.Tokenizer``): a `bytepair.Tokenizer` of the same
model, pipeline and added tokens, the added tokens' roles, the token strings,
the decoding table, and the post-processor (`processors`).

A backend bytepair cannot load (``bytepair.formats.from_hf_json`` refuses
it: WordPiece, Unigram...) or does not serve (`spm_serving.check_served`)
gives `Unserved` with the reason, and HF keeps that tokenizer. A
SentencePiece-style one (Llama 2, Mistral 7B, Gemma) is served by a
`bytepair.SentencePieceTokenizer`, with `spm_serving`'s offsets and decoding.
"""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
import weakref
from typing import NamedTuple

from bytepair.integrations.transformers_backend import spm_serving
from bytepair.integrations.transformers_backend.model import Enc, Source, Unserved
from bytepair.integrations.transformers_backend.processors import parse, post_process

# `Loaded` by the sha256 of the backend's JSON, while a tokenizer uses it.
_LOADED: "weakref.WeakValueDictionary[bytes, Loaded]" = weakref.WeakValueDictionary()
_BUILD_LOCK = threading.Lock()


class Layout(NamedTuple):
    """Where one sequence's ids go when it is post-processed whole (no
    truncation, no padding): the ids before and after it and their type ids,
    its own type id, HF's ``n_sequences``, and the count of tokens the
    processor says it adds (what truncation leaves room for)."""

    before: list[int]
    after: list[int]
    n_sequences: int
    before_types: list[int]
    seq_type: int
    after_types: list[int]
    added: int


class Plan:
    """A post-processor as served: the processor (`processors.parse`) and, with
    and without special tokens, the `Layout` of one sequence (None when the
    template does not hold it exactly once)."""

    def __init__(self, node: dict | None):
        self.proc = parse(node)
        self.single = {add: _single_layout(self.proc, add) for add in (True, False)}


def _single_layout(proc, add_special: bool) -> Layout | None:
    """The `Layout`, found by post-processing a one-token stand-in."""
    final = post_process(proc, [Enc.of(Source([-1]), 0)], add_special, None)
    ids = final.ids()
    if ids.count(-1) != 1:
        return None
    k = ids.index(-1)
    types = final.type_ids()
    added = proc.added_tokens(False) if add_special and proc is not None else 0
    if added != len(ids) - 1:
        return None
    return Layout(
        ids[:k], ids[k + 1 :], final.n_sequences(), types[:k], types[k], types[k + 1 :], added
    )


class Loaded:
    """What a backend's tokenizer.json gives (shared by backends with equal JSON:
    copies of one tokenizer, two loads of one folder).

    Attributes:
        bp: the `bytepair.Tokenizer` (every added token a special token, with
            its added-token rules), or for a SentencePiece-style file a
            `bytepair.SentencePieceTokenizer` (``spm``; every added token a
            control piece); ``core`` its encoder.
        allowed_all, allowed_plain: the added tokens to split out of text
            without and with ``split_special_tokens`` (then only those not
            special); ``split_unserved``: True when a plain added token is
            inside a special one (HF's matcher would skip over both).
        special_ids: ids of added tokens marked special (``skip_special_tokens``).
        token_of: id -> token string (HF's ``id_to_token``), None in gaps.
        stripping_ids: added tokens with lstrip or rstrip (their token string
            is the text matched); ``unserved_ids``: those of them matched in
            normalized text (HF serves a call that meets one).
        decodes: whether decoding is served (a ByteLevel decoder, or a
            SentencePiece-style ``chain``, with its ``byte_ids``);
            ``odd_bytes``: added tokens HF decodes to other bytes than their
            UTF-8 (all their characters are byte-level ones).
    """

    def __init__(self, text: str):
        doc = json.loads(text)
        self.bp = _bytepair_tokenizer(doc)
        self.spm = _is_spm(self.bp)
        if self.spm:
            spm_serving.check_served(doc)
        self.collapses_spaces = self.spm and spm_serving.collapses_spaces(doc)
        added = doc.get("added_tokens") or []
        for t in added:
            if _id_of_added(self.bp, t["content"]) != t["id"]:
                raise Unserved(f"added token {t['content']!r} would get another id")
        self.core = self.bp._core
        plain = sorted(t["content"] for t in added if not t.get("special"))
        specials = [t["content"] for t in added if t.get("special")]
        self.split_unserved = any(p in s for p in plain for s in specials)
        if self.spm:
            spm_serving.check_added(doc)
        self.allowed_all, self.allowed_plain = sorted(t["content"] for t in added), plain
        self.special_ids = frozenset(t["id"] for t in added if t.get("special"))
        # Added tokens that strip spaces: their token string is the text matched.
        # Matched in normalized text, that is text bytepair does not keep: HF serves them.
        strips = [t for t in added if t.get("lstrip") or t.get("rstrip")]
        self.stripping_ids = frozenset(t["id"] for t in strips)
        normalizes = doc.get("normalizer") not in (None, {})
        self.unserved_ids = frozenset(
            t["id"] for t in strips if normalizes and t.get("normalized", True)
        )
        self.token_of = _token_strings(doc["model"]["vocab"], added)
        decoder = doc.get("decoder") or {}
        if self.spm:
            self.chain = spm_serving.decoder_chain(doc)
            self.decodes = self.chain is not None
            self.byte_ids = spm_serving.byte_ids(self.chain, self.token_of)
            self.one_id: dict = {}  # id -> its decoded text (`spm_serving.decode`)
            self.special_of_core = frozenset(self.bp.special_tokens.values())
            self.odd_bytes = {}
        else:
            self.decodes = decoder.get("type") == "ByteLevel"
            self.odd_bytes = {
                t["id"]: b for t in added if (b := _hf_bytes(t["content"])) is not None
            }


def _loaded(text: str) -> Loaded:
    """The `Loaded` of a backend's JSON, from the cache when an equal one is alive."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    with _BUILD_LOCK:
        loaded = _LOADED.get(key)
    if loaded is None:
        loaded = Loaded(text)
        with _BUILD_LOCK:
            loaded = _LOADED.setdefault(key, loaded)
    return loaded


class TokenizerState:
    """bytepair's view of one HF backend (`Loaded`'s attributes, and the
    post-processor's `Plan`, read on each call), with a lock held around every
    use of HF's backend that mutates it (`mirror_encode`, the calls HF serves)."""

    def __init__(self, backend):
        self.backend = backend
        self.size = backend.get_vocab_size(True)
        self.loaded = _loaded(backend.to_str())  # held: the cache keeps it while in use
        self.__dict__.update(vars(self.loaded))
        self.lock = threading.RLock()
        self._plans: dict[bytes | None, Plan | str] = {}  # str: why not served
        self._mirror = None

    # ---- per call ---------------------------------------------------------------

    def plan(self) -> Plan:
        """The plan of the backend's current post-processor; `Unserved` if it is not served."""
        node = self.backend.post_processor
        plan = self._plans.get(None if node is None else node.__getstate__())
        if plan.__class__ is Plan:
            return plan
        if plan is None:
            key = None if node is None else node.__getstate__()
            try:
                plan = Plan(None if key is None else json.loads(key))
            except Unserved as e:
                plan = str(e)
            except (KeyError, TypeError, ValueError) as e:
                plan = f"post_processor not understood ({e})"
            self._plans[key] = plan
        if isinstance(plan, str):
            raise Unserved(plan)
        return plan

    def allowed(self, split: bool) -> list[str]:
        if not split:
            return self.allowed_all
        if self.split_unserved:
            raise Unserved("split_special_tokens with a plain added token inside a special one")
        return self.allowed_plain

    def encode_texts(self, texts: list[str], allowed: list[str]) -> list[list[int]]:
        """Ids of each text, the added tokens in `allowed` split out (the others are text)."""
        try:
            out = self._encode(texts, allowed)
        except UnicodeEncodeError:
            raise Unserved("a lone surrogate in the text (HF raises)") from None
        except TypeError:
            raise Unserved("an input that is not a str (HF raises)") from None
        if self.unserved_ids and any(not self.unserved_ids.isdisjoint(ids) for ids in out):
            raise Unserved("a normalized added token that strips spaces")
        return out

    def _encode(self, texts: list[str], allowed: list[str]) -> list[list[int]]:
        """The core's ids of each text."""
        return _encode_with(self.core, texts, allowed)

    def offsets(self, text: str, allowed: list[str]) -> list[tuple[int, int]]:
        """HF's offsets of `text`'s tokens, in characters."""
        ids, offsets = self.bp.encode_with_offsets(
            text, allowed_special=frozenset(allowed), disallowed_special=()
        )
        if self.spm:
            return spm_serving.hf_offsets(
                text, ids, offsets, self.special_of_core, self.collapses_spaces
            )
        return offsets

    def decode(self, ids: list[int], skip_special: bool) -> str | None:
        """HF's ``Tokenizer.decode`` with a ByteLevel decoder; None where HF
        must answer (an id outside the vocabulary, which HF drops)."""
        if skip_special and not self.special_ids.isdisjoint(ids):
            ids = [i for i in ids if i not in self.special_ids]
        if self.spm:
            return spm_serving.decode(self, ids)
        try:
            if self.odd_bytes and not self.odd_bytes.keys().isdisjoint(ids):
                return self._decode_odd(ids)
            return self.core.decode_text(ids, "replace")
        except (ValueError, TypeError, OverflowError):
            return None

    def _decode_odd(self, ids: list[int]) -> str:
        data, run = [], []
        for i in ids:
            if i in self.odd_bytes:
                data.append(self.core.decode_bytes(run))
                data.append(self.odd_bytes[i])
                run = []
            else:
                run.append(i)
        data.append(self.core.decode_bytes(run))
        return b"".join(data).decode("utf-8", "replace")

    def mirror_encode(
        self, inputs: tuple, pretokenized: bool, add_special: bool, split: bool, truncation
    ):
        """HF's ``encode`` of `inputs` with these settings and no padding, by a
        private copy of the backend (rebuilt when the backend's post-processor
        changed), for the attributes asked of HF (word ids)."""
        node = self.backend.post_processor
        key = None if node is None else node.__getstate__()
        with self.lock:
            if self._mirror is None or self._mirror[0] != key:
                import tokenizers

                hf = tokenizers.Tokenizer.from_str(self.backend.to_str())
                hf.no_padding()
                self._mirror = [key, hf, None, None]
            _, hf, had_truncation, had_split = self._mirror
            if truncation != had_truncation:
                if truncation is None:
                    hf.no_truncation()
                else:
                    t = truncation
                    hf.enable_truncation(
                        t.max_length, stride=t.stride, strategy=t.strategy, direction=t.direction
                    )
                self._mirror[2] = truncation
            if split != had_split:
                hf.encode_special_tokens = split
                self._mirror[3] = split
            return hf.encode(*inputs, is_pretokenized=pretokenized, add_special_tokens=add_special)


def _encode_with(core, texts: list[str], allowed: list[str]) -> list[list[int]]:
    if len(texts) == 1:
        return [core.encode(texts[0], allowed, [])]
    return core.encode_batch(texts, allowed, [], None)


def _bytepair_tokenizer(doc: dict):
    """The bytepair Tokenizer of a backend's tokenizer.json; `Unserved` with the
    loader's reason when bytepair cannot load it."""
    from bytepair.formats import from_hf_json
    from bytepair.tokenizer import Tokenizer

    plain = {**doc, "post_processor": None, "truncation": None, "padding": None}
    plain["model"] = spm_serving.unk_stand_in(doc)
    plain["pre_tokenizer"] = spm_serving.without_noop_split(doc)
    plain["added_tokens"] = spm_serving.added_as_control(doc)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = from_hf_json(plain, source="tokenizer.json")
    except (ValueError, KeyError, TypeError) as e:
        raise Unserved(str(e).removeprefix("tokenizer.json: ")) from None
    if type(tok) is not Tokenizer and not _is_spm(tok):
        raise Unserved(f"a {type(tok).__name__} is not served")
    return tok


def _is_spm(tok) -> bool:
    from bytepair.spm_tokenizer import SentencePieceTokenizer

    return type(tok) is SentencePieceTokenizer


def _id_of_added(bp, content: str) -> int | None:
    """The id bytepair gives an added token (a special token of `bp`)."""
    return bp.special_tokens.get(content)


def _token_strings(vocab: dict, added: list) -> list:
    """id -> token string, as HF's ``id_to_token`` (added tokens by their content)."""
    top = max([*vocab.values(), *(t["id"] for t in added)], default=-1)
    out: list = [None] * (top + 1)
    for s, i in vocab.items():
        out[i] = s
    for t in added:
        out[t["id"]] = t["content"]
    return out


def _hf_bytes(content: str) -> bytes | None:
    """The bytes HF's ByteLevel decoder gives an added token, when they are not
    its UTF-8: a token made only of byte-level characters is read as bytes."""
    from bytepair.formats.bytelevel import unicode_to_bytes

    table = unicode_to_bytes()
    if not all(c in table for c in content):
        return None
    data = bytes(table[c] for c in content)
    return None if data == content.encode("utf-8") else data
