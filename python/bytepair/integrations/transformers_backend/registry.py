"""One bytepair state per transformers tokenizer (`state.TokenizerState`, or
None when HF serves it), kept outside the tokenizer (so it pickles and copies as
an unpatched one) and dropped when the tokenizer is; checked on each call
against the tokenizer's backend object and its vocabulary size, rebuilt when
either changed or the tokenizer added tokens (`stale`)."""

from __future__ import annotations

import logging
import threading
import weakref

from bytepair.integrations.transformers_backend.model import Unserved
from bytepair.integrations.transformers_backend.state import TokenizerState

logger = logging.getLogger("bytepair.transformers")


class _Entry:
    """A tokenizer's state (None: HF serves it, for `reason`), valid while its
    backend is the same object with the same vocabulary size."""

    __slots__ = ("owner", "backend", "size", "state", "reason")

    def __init__(self, owner, backend, size, state, reason):
        self.owner, self.backend, self.size, self.state, self.reason = (
            owner,
            backend,
            size,
            state,
            reason,
        )


_ENTRIES: dict[int, _Entry] = {}
_ENTRIES_LOCK = threading.Lock()


def state_of(tok, sized: bool = True) -> TokenizerState | None:
    """The bytepair state serving `tok`, or None when HF serves it. `sized`:
    also check the backend's vocabulary size (tokens added to it directly);
    decoding need not, as an id the state does not know goes to HF."""
    backend = tok._tokenizer
    entry = _ENTRIES.get(id(tok))
    if (
        entry is None
        or entry.backend is not backend
        or entry.owner() is not tok
        or entry.size < 0  # marked stale
        or (sized and entry.size != backend.get_vocab_size(True))
    ):
        entry = _build(tok, backend)
    return entry.state


def _build(tok, backend) -> _Entry:
    with _ENTRIES_LOCK:
        size = backend.get_vocab_size(True)
        entry = _ENTRIES.get(id(tok))
        if entry is not None and entry.backend is backend and entry.size == size:
            return entry
        try:
            state, reason = TokenizerState(backend), None
        except Unserved as e:
            state, reason = None, str(e)
        if state is None:
            logger.debug("%s stays on HF's backend: %s", type(tok).__name__, reason)
        if entry is None:
            weakref.finalize(tok, _ENTRIES.pop, id(tok), None)
        entry = _ENTRIES[id(tok)] = _Entry(weakref.ref(tok), backend, size, state, reason)
        return entry


def reason_unserved(tok) -> str | None:
    """Why HF's backend serves `tok` (None: bytepair does)."""
    state_of(tok)
    return _ENTRIES[id(tok)].reason


def stale(tok) -> None:
    entry = _ENTRIES.get(id(tok))
    if entry is not None:
        entry.size = -1
