"""Text and id checks the Tokenizer's encode and decode share: lone
surrogates (UTF-8 cannot hold them; tiktoken replaces them with U+FFFD), token
ids, and the safe cuts that let `encode_iterable` stream. Training's rule for
lone surrogates (refused where they are, or replaced) is here too."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator

# encode_iterable buffers at least this many characters before cutting at a safe boundary.
STREAM_BLOCK_CHARS = 1 << 16


def require_str(text: object, method: str) -> None:
    """TypeError unless `text` is a str; for bytes the message names `encode_bytes`."""
    if not isinstance(text, str):
        hint = (
            "; encode bytes (invalid UTF-8 included) with encode_bytes(data)"
            if isinstance(text, (bytes, bytearray, memoryview))
            else ""
        )
        raise TypeError(f"{method} takes a str, not {type(text).__name__}{hint}")


def dropout_seed(seed: object) -> int:
    """The seed of BPE-dropout draws: `seed` checked to be an int in [0, 2**64),
    or a fresh random one for None. ValueError naming the value otherwise."""
    if seed is None:
        import secrets

        return secrets.randbits(64)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise ValueError(f"seed={seed!r} must be an integer in [0, 2**64) or None")
    return seed


def check_id(value: object, where: str) -> int:
    """A token id must be an int in [0, 2**32); ValueError naming `where` if not."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 32:
        raise ValueError(f"{where}: token id {value!r} must be an integer in [0, 2**32)")
    return value


def fits_i64(value: object) -> bool:
    try:
        return -(1 << 63) <= operator.index(value) < 1 << 63
    except TypeError:
        return False


def with_surrogates_replaced(call, text: str, *args):
    """`call(text, *args)`; if the core refuses `text` for a lone surrogate
    (UTF-8 cannot hold one), `call` again with each replaced by U+FFFD, as
    tiktoken does. The check costs nothing on the texts that have none."""
    try:
        return call(text, *args)
    except UnicodeEncodeError:
        return call(replace_surrogates(text), *args)


def has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def check_encodable(text: str, what: str) -> str:
    """`text`, if it is a str that UTF-8 can encode (no lone surrogates)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what} {text!r} holds a lone surrogate at index {e.start}") from None
    return text


def replace_surrogates(text: str) -> str:
    """Lone surrogates become U+FFFD (what tiktoken does)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def safe_blocks(
    texts: Iterable[str], chars_after_last_cut: Callable[[str], int | None]
) -> Iterator[str]:
    """Concatenate `texts` and re-cut them into blocks of at least
    `STREAM_BLOCK_CHARS` characters at safe cuts (the last block may be shorter).
    `chars_after_last_cut(buffer)` is the core's `CutRule` (src/count.rs)."""
    pending: list[str] = []
    size = 0
    threshold = STREAM_BLOCK_CHARS
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"expected str, got {type(text).__name__}")
        pending.append(text)
        size += len(text)
        if size < threshold:
            continue
        buffer = "".join(pending)
        tail = chars_after_last_cut(buffer)
        if tail is None:
            # No safe cut yet: wait for twice as much text (linear time overall).
            pending, threshold = [buffer], 2 * size
            continue
        cut = len(buffer) - tail
        yield buffer[:cut]
        pending, size, threshold = [buffer[cut:]], tail, STREAM_BLOCK_CHARS
    if pending:
        yield "".join(pending)


def surrogates_replaced(batch: list[str], first: int, errors: str) -> list[str]:
    """`batch` (texts `first`, `first` + 1, ...) with each lone surrogate
    replaced by U+FFFD; with ``errors="strict"``, a ValueError naming the first
    text that holds one and where."""
    out = []
    for i, text in enumerate(batch):
        if has_surrogates(text):
            if errors == "strict":
                at = next(k for k, c in enumerate(text) if "\ud800" <= c <= "\udfff")
                raise ValueError(
                    f"text {first + i}: a lone surrogate {text[at]!r} at character {at}, which "
                    "UTF-8 cannot hold (errors='replace' counts it as U+FFFD, as encode does)"
                )
            text = replace_surrogates(text)
        out.append(text)
    return out


def utf8_word(word: str | bytes | bytearray | memoryview) -> bytes:
    """A word of `train_from_counts` as bytes: a str as UTF-8 (ValueError
    naming it if it holds a lone surrogate, which UTF-8 cannot hold)."""
    if not isinstance(word, str):
        return bytes(word)
    try:
        return word.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"word {word!r} holds a lone surrogate at character {e.start}, which UTF-8 cannot "
            "hold (give the word as bytes for bytes that are not UTF-8)"
        ) from None
