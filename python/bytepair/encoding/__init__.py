"""What the Tokenizer's encoding and decoding build on, beside the Rust core:

- `text`: lone surrogates, token-id checks, safe cuts for streaming;
- `helpers`: tiktoken's and HF's everyday helpers (offsets, streaming decode,
  raw bytes, counting, single tokens), mixed into `bytepair.Tokenizer`;
- `set_cache_budget`: the memory bound of the encoder's caches.
"""

from bytepair import _core


def set_cache_budget(nbytes: int) -> int:
    """Bound the memory of the encoder's per-thread caches.

    Each thread that encodes keeps, per tokenizer (the two most recently
    used), two piece caches (pre-tokens of up to 15 bytes and of 16 to 31:
    their ids, so a repeated pre-token costs one table probe) and a map of
    longer pre-tokens. Each piece cache holds at most `nbytes` bytes of slots
    (default 16 MiB), and the long-piece map and spilled ids as much again; a
    cache that reaches its budget is emptied and fills again. Caches made after
    the call use the budget (a thread's existing caches keep theirs).

    Args:
        nbytes: bytes (int), rounded down to a power of two, at least 512 KiB.

    Returns:
        The budget in effect, in bytes.

    Raises:
        TypeError: `nbytes` is not an int.
        ValueError: `nbytes` is negative.
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise TypeError(f"set_cache_budget: nbytes must be an int, got {type(nbytes).__name__}")
    if nbytes < 0:
        raise ValueError(f"set_cache_budget: nbytes must be >= 0, got {nbytes}")
    return _core.set_cache_budget(min(nbytes, 1 << 62))


def cache_budget() -> int:
    """The budget `set_cache_budget` set (bytes per piece cache)."""
    return _core.cache_budget()
