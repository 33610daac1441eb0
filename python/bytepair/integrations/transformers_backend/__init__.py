"""bytepair as the encoder of HuggingFace transformers' fast tokenizers.

>>> import bytepair
>>> bytepair.patch_transformers()  # doctest: +SKIP
>>> tok = transformers.AutoTokenizer.from_pretrained("Qwen/Qwen3-8B")  # doctest: +SKIP

After `patch_transformers`, every ``PreTrainedTokenizerFast`` (transformers 5's
``TokenizersBackend`` and its model classes) whose tokenizer.json bytepair
loads encodes and decodes with bytepair's core: ``tok(...)``, ``encode``,
``tokenize``, ``apply_chat_template``, ``decode``, ``batch_decode``, with the
same results as HF's backend (ids, masks, offsets, overflowing, padding,
truncation, pairs, pre-tokenized words). Tokenizers made before the patch are
served too. A tokenizer bytepair cannot load stays on HF's backend, which the
logger ``bytepair.transformers`` says once at debug level; an option bytepair
does not serve sends that one call to HF (`hf_calls` counts them). The HF
backend object (``tok.backend_tokenizer``) is left in place and unchanged, so
code that uses it directly (vLLM's ``DecodeStream``) keeps working, on HF.

``import bytepair`` does not import transformers; `patch_transformers` does.
"""

from __future__ import annotations

import threading

__all__ = [
    "TransformersPatch",
    "hf_calls",
    "is_patched",
    "patch_transformers",
    "served_by_bytepair",
    "unpatch_transformers",
]

_LOCK = threading.Lock()
_SAVED: dict[str, object] = {}  # TokenizersBackend.__dict__ entries replaced (None: inherited)


class TransformersPatch:
    """What `patch_transformers` returns: a context manager whose exit undoes
    the patch if this call made it (a nested ``with`` leaves the outer one's)."""

    def __init__(self, made: bool):
        self.made = made

    def __enter__(self) -> "TransformersPatch":
        return self

    def __exit__(self, *exc) -> None:
        if self.made:
            unpatch_transformers()

    def __repr__(self) -> str:
        return f"TransformersPatch(active={is_patched()})"


def patch_transformers() -> TransformersPatch:
    """Serve transformers' fast tokenizers with bytepair (see the module docstring).

    Usable as ``bytepair.patch_transformers()`` or ``with bytepair.patch_transformers():``.
    Calling it again while patched changes nothing.

    Returns:
        a `TransformersPatch` (a context manager that undoes this patch).

    Raises:
        ImportError: transformers is not installed, or is older than 5 (no
            ``transformers.tokenization_utils_tokenizers.TokenizersBackend``).
    """
    try:
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError as e:
        raise ImportError(
            f"bytepair.patch_transformers needs transformers >= 5 (TokenizersBackend): {e}"
        ) from e
    from bytepair.integrations.transformers_backend import methods

    with _LOCK:
        if _SAVED:
            return TransformersPatch(made=False)
        for name, replacement in methods.REPLACEMENTS.items():
            _SAVED[name] = TokenizersBackend.__dict__.get(name)
            methods.ORIGINAL[name] = getattr(TokenizersBackend, name)
            setattr(TokenizersBackend, name, replacement)
        methods._SHORT_OK.clear()
    return TransformersPatch(made=True)


def unpatch_transformers() -> None:
    """Undo `patch_transformers`: transformers' own methods again, for every
    tokenizer (those made while patched too). Does nothing when not patched."""
    with _LOCK:
        if not _SAVED:
            return
        from transformers.tokenization_utils_tokenizers import TokenizersBackend

        from bytepair.integrations.transformers_backend import methods

        for name, saved in _SAVED.items():
            if saved is None:
                delattr(TokenizersBackend, name)
            else:
                setattr(TokenizersBackend, name, saved)
        _SAVED.clear()
        methods._SHORT_OK.clear()


def is_patched() -> bool:
    """Whether transformers is patched now."""
    return bool(_SAVED)


def hf_calls():
    """A ``collections.Counter`` of the calls HF's backend served while patched,
    by reason (``"tokenizer not served"``, ``"sanitize_control_tokens"``...): a
    copy; it counts from the process's first patch on."""
    from bytepair.integrations.transformers_backend import methods

    return methods.HF_CALLS.copy()


def served_by_bytepair(tokenizer) -> tuple[bool, str | None]:
    """(True, None) when bytepair serves `tokenizer` (a transformers fast
    tokenizer), else (False, why HF serves it: the loader's reason)."""
    from bytepair.integrations.transformers_backend import registry

    reason = registry.reason_unserved(tokenizer)
    return reason is None, reason
