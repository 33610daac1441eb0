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
    used), caches of the ids of the pre-tokens it has seen (of up to 15
    bytes, of 16 to 31, and longer ones), so that a repeated pre-token costs
    one table probe. Together they take at most `nbytes` per thread and
    tokenizer (default 128 MiB: enough for the ~750k distinct short
    pre-tokens of 120 MB of English, code and 30 languages; a cache takes
    only what its text needs). A cache that reaches its share
    keeps the pre-tokens used since it last made room, the longest-used first
    (CLOCK eviction), so a text with more distinct pre-tokens than fit gets
    slower gradually, by its share of misses, never all at once. Caches made
    after the call use the budget (a thread's existing caches keep theirs).

    Args:
        nbytes: bytes (int), rounded down to a power of two, at least 1 MiB.

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
    """The budget `set_cache_budget` set (bytes per thread and tokenizer)."""
    return _core.cache_budget()
