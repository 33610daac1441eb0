"""Reference byte-pair encoding in plain Python: small, slow, obviously correct.

This module is teaching code and the test oracle for the Rust core. Every
function is a direct transcription of the textbook algorithm, with no indexes,
heaps or caches, so that it can be read in one sitting and trusted.

What it covers:

* `pretokenize`: cut the text at special-token strings (longest match wins when
  two overlap; the specials are dropped), then split each piece with the
  pre-tokenization regex, using Python's `regex` module (the semantics the Rust
  core must reproduce);
* `count_words`: word counts (pre-token bytes -> occurrences) over documents;
* `train_trace` / `train_from_counts`: the naive merge loop of Sennrich et al.
  (2016), "Neural Machine Translation of Rare Words with Subword Units": recount
  every pair each step, merge the best one everywhere, repeat; with HF
  tokenizers' limits `min_frequency` (stop when the best pair counts fewer) and
  `max_token_length` (pairs whose merge would be longer are never chosen), and
  on top of a base tokenizer's merges (`base_ranks`: each word split by the
  base first, pairs making a base token again never chosen);
* `encode`: tiktoken's encoding of text with a trained merge table;
* `superbpe_pieces` / `train_superbpe`: SuperBPE (Liu et al., COLM 2025) as
  its authors run it: stage 2 splits each line of the text (HF's trainer
  reads files line by line) with their regex as HF's ``Split(regex,
  Isolated)`` does, and never merges a pair that makes ``": "``, more than
  four words or a token that exists already;
* `train_chars` / `segment_chars`: the paper's classic character-level
  variant with an end-of-word marker ``</w>``, to replay its worked example
  ({low, lower, newest, widest}: ``e s``, ``es t``, ``est </w>``, ... and the
  unseen "lowest" splits as ``low`` + ``est</w>``).

The rules (see docs/design.md): a pair's count is the number of times its two
symbols stand next to each other, weighted by word frequency (overlapping
occurrences all count: ``a a a`` holds the pair ``(a, a)`` twice); the best pair
has the highest count, ties going to the lexicographically greatest
``(bytes(A), bytes(B))``; within a word occurrences merge left to right
(``a a a`` -> ``aa a``); a pair with count 0 is never chosen.

What it leaves out: speed (a merge costs a pass over every word; fine for a few
thousand distinct words and a few hundred merges), streaming and threads, the
special-token policy of encoding (here every special token given is allowed;
the production encoder raises on disallowed ones), decoding, and file formats.

`regex` is imported inside the functions that need it, so ``import bytepair``
works without it (it is a test dependency).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

# The preset pre-tokenization patterns, as published (GPT-2's encoder.py, and
# cl100k_base and o200k_base as tiktoken >= 0.8 ships them: its cl100k pattern
# has a `\s++$` branch before `\s*[\r\n]`, which keeps trailing whitespace
# holding a newline in one pre-token).
PATTERNS = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    # Llama 3's and Qwen2's Split regexes, as their tokenizer.json spells them.
    "llama3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}

Pair = tuple[bytes, bytes]


# ---- pre-tokenization -------------------------------------------------------


def resolve_pattern(pattern: str) -> str:
    """A preset name (``gpt2``, ``cl100k``, ``o200k``, ``llama3``, ``qwen2``) -> its regex;
    any other string is a regex already.

    >>> resolve_pattern(r"\\w+")
    '\\\\w+'
    """
    return PATTERNS.get(pattern, pattern)


def split_special(text: str, special_tokens: Iterable[str] = ()) -> list[str]:
    """Cut `text` at the special-token strings and drop them. Scanning left to
    right, the earliest special token wins; of those starting there, the longest.

    >>> split_special("a<|x|>b<|x|><|xy|>c", ["<|x|>", "<|x|><|xy|>"])
    ['a', 'b', 'c']
    """
    import regex

    specials = sorted(set(special_tokens), key=len, reverse=True)
    if not specials:
        return [text]
    # Alternation tries branches in order, so longest-first = longest match wins.
    return regex.split("|".join(regex.escape(s) for s in specials), text)


def pretokenize(text: str, pattern: str = "gpt2", special_tokens: Iterable[str] = ()) -> list[str]:
    """The pre-tokens ("words") of `text`: split at special tokens (dropped),
    then every match of `pattern` in each piece, in order (whole matches, even
    if the pattern has groups; empty matches carry no text and are skipped).

    >>> pretokenize("Hello world<|endoftext|>It's  2024!", special_tokens=["<|endoftext|>"])
    ['Hello', ' world', 'It', "'s", ' ', ' 2024', '!']
    """
    import regex

    compiled = regex.compile(resolve_pattern(pattern))
    return [
        m[0]
        for piece in split_special(text, special_tokens)
        for m in compiled.finditer(piece)
        if m[0]
    ]


def count_words(
    texts: Iterable[str], pattern: str = "gpt2", special_tokens: Iterable[str] = ()
) -> Counter:
    """Word counts: each pre-token, as UTF-8 bytes -> occurrences. Each text is
    one document (no pre-token spans two texts).

    >>> count_words(["the cat", "the dog"])
    Counter({b'the': 2, b' cat': 1, b' dog': 1})
    """
    special_tokens = list(special_tokens)
    counts: Counter = Counter()
    for text in texts:
        counts.update(w.encode("utf-8") for w in pretokenize(text, pattern, special_tokens))
    return counts


# ---- training: the naive merge loop ------------------------------------------


def pair_counts(words: Mapping[tuple, int]) -> Counter:
    """Count every adjacent pair of symbols, weighted by word frequency.

    >>> pair_counts({(b"a", b"a", b"a"): 2})
    Counter({(b'a', b'a'): 4})
    """
    counts: Counter = Counter()
    for word, freq in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += freq
    return counts


def merge_word(word: tuple, pair: tuple) -> tuple:
    """Replace each occurrence of `pair` in `word` by the joined symbol, left to right.

    >>> merge_word((b"a", b"a", b"a"), (b"a", b"a"))
    (b'aa', b'a')
    """
    if pair[0] not in word:  # shortcut: nothing to merge
        return word
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def best_pair(counts: Mapping[tuple, int], ties: str = "greatest") -> tuple:
    """The pair to merge: the highest count; among equal counts the
    lexicographically greatest pair (``ties="greatest"``, the bytepair rule) or
    the first one counted (``ties="first"``, what ``max(d, key=d.get)`` does in
    the paper's code).

    >>> best_pair({(b"a", b"b"): 3, (b"b", b"c"): 3, (b"c", b"d"): 1})
    (b'b', b'c')
    >>> best_pair({(b"a", b"b"): 3, (b"b", b"c"): 3}, ties="first")
    (b'a', b'b')
    """
    if ties == "greatest":
        return max(counts, key=lambda pair: (counts[pair], pair))
    if ties == "first":
        return max(counts, key=counts.__getitem__)
    raise ValueError(f"ties={ties!r}: expected 'greatest' or 'first'")


def learn(
    words: Mapping[tuple, int],
    num_merges: int,
    ties: str = "greatest",
    *,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    taken: Collection = frozenset(),
) -> list[tuple[tuple, int, bool]]:
    """The merge loop over words given as tuples of symbols (bytes or str).

    Each step recounts all pairs, leaves out those that may not be merged
    (joined longer than `max_token_length` bytes or characters, or joined equal
    to a symbol in `taken`), picks `best_pair` among the rest, and merges it in
    every word. Stops after `num_merges` merges, or earlier when no pair is
    left or the best one counts fewer than `min_frequency`. Returns
    ``[(pair, count, tied)]``: the pair merged, its count when chosen, and
    whether another pair had the same (top) count at that step.

    >>> learn({("a", "b", "c"): 2, ("b", "c"): 1}, 5)
    [(('b', 'c'), 3, False), (('a', 'bc'), 2, False)]
    >>> learn({("a", "b", "c"): 2, ("b", "c"): 1}, 5, max_token_length=2)
    [(('b', 'c'), 3, False)]
    >>> learn({("a", "b", "c"): 2, ("b", "c"): 1}, 5, min_frequency=3)
    [(('b', 'c'), 3, False)]
    """
    words = {w: f for w, f in words.items() if f > 0 and len(w) > 1}
    trace = []
    while len(trace) < num_merges:
        counts = pair_counts(words)
        counts = {p: c for p, c in counts.items() if _may_merge(p, max_token_length, taken)}
        if not counts:
            break
        pair = best_pair(counts, ties)
        top = counts[pair]
        if top < min_frequency:
            break
        tied = sum(1 for c in counts.values() if c == top) > 1
        trace.append((pair, top, tied))
        merged: dict[tuple, int] = {}
        for w, f in words.items():
            w = merge_word(w, pair)
            if len(w) > 1:  # a single symbol holds no pair
                merged[w] = merged.get(w, 0) + f
        words = merged
    return trace


def _may_merge(pair: tuple, max_token_length: int | None, taken: Collection) -> bool:
    joined = pair[0] + pair[1]
    return (max_token_length is None or len(joined) <= max_token_length) and joined not in taken


def _byte_words(word_counts: Mapping[bytes | str, int]) -> dict[tuple, int]:
    """Words as tuples of single bytes (str keys are UTF-8 encoded)."""
    words: dict[tuple, int] = {}
    for w, f in word_counts.items():
        w = w.encode("utf-8") if isinstance(w, str) else bytes(w)
        key = tuple(bytes([b]) for b in w)
        words[key] = words.get(key, 0) + f
    return words


def _base_words(
    word_counts: Mapping[bytes | str, int], ranks: Mapping[bytes, int]
) -> dict[tuple, int]:
    """Words as tuples of the tokens a base splits them into (`bpe`; a word
    that is a token of the base is that token, as in `encode`)."""
    words: dict[tuple, int] = {}
    for w, f in word_counts.items():
        w = w.encode("utf-8") if isinstance(w, str) else bytes(w)
        key = (w,) if w in ranks else tuple(bpe(w, ranks))
        words[key] = words.get(key, 0) + f
    return words


def train_trace(
    word_counts: Mapping[bytes | str, int],
    num_merges: int,
    *,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    base_ranks: Mapping[bytes, int] | None = None,
) -> list[tuple[Pair, int, bool]]:
    """Byte-level BPE on word counts: ``[(pair, count, tied)]`` for each merge
    (see `learn`; `max_token_length` in bytes). With `base_ranks` (a base
    tokenizer's tokens -> rank, single bytes included), each word starts as the
    base's split of it, and no merge makes a base token again.

    >>> [(a + b, n, tied) for (a, b), n, tied in train_trace({b"hug": 10, b"pug": 5}, 3)]
    [(b'ug', 15, False), (b'hug', 10, False), (b'pug', 5, False)]
    >>> base = {bytes([i]): i for i in range(256)} | {b"ug": 256}
    >>> [(a, b) for (a, b), _, _ in train_trace({b"hug": 10, b"pug": 5}, 3, base_ranks=base)]
    [(b'h', b'ug'), (b'p', b'ug')]
    """
    if base_ranks is None:
        words, taken = _byte_words(word_counts), frozenset()
    else:
        words, taken = _base_words(word_counts, base_ranks), frozenset(base_ranks)
    return learn(
        words,
        num_merges,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        taken=taken,
    )


def train_from_counts(
    word_counts: Mapping[bytes | str, int], num_merges: int, **limits
) -> list[Pair]:
    """The merge table learned from word counts, in rank order (`limits`: the
    keyword arguments of `train_trace`).

    >>> counts = {b"hug": 10, b"pug": 5, b"pun": 12, b"bun": 4, b"hugs": 5}
    >>> [a + b for a, b in train_from_counts(counts, 4)]
    [b'ug', b'un', b'hug', b'pun']
    >>> [a + b for a, b in train_from_counts(counts, 4, min_frequency=16)]
    [b'ug', b'un']
    """
    return [pair for pair, _, _ in train_trace(word_counts, num_merges, **limits)]


def train(
    texts: Iterable[str], num_merges: int, pattern: str = "gpt2", special_tokens: Iterable[str] = ()
) -> list[Pair]:
    """`count_words` then `train_from_counts`: each text is one document.

    >>> train(["low lower lowest"], 2)
    [(b'o', b'w'), (b'l', b'ow')]
    """
    return train_from_counts(count_words(texts, pattern, special_tokens), num_merges)


def train_chars(
    word_counts: Mapping[str, int],
    num_merges: int,
    end_of_word: str | None = "</w>",
    ties: str = "greatest",
) -> list[tuple[str, str]]:
    """Character-level BPE as in the paper (Algorithm 1): each word is its
    characters followed by the symbol `end_of_word` (None: no marker), so a
    merge never joins the end of one word with the start of the next.

    >>> train_chars({"low": 5, "lower": 2}, 3)
    [('o', 'w'), ('l', 'ow'), ('low', '</w>')]
    >>> train_chars({"low": 5, "lower": 2}, 2, ties="first")
    [('l', 'o'), ('lo', 'w')]
    """
    marker = () if end_of_word is None else (end_of_word,)
    words: dict[tuple, int] = {}
    for w, f in word_counts.items():
        words[tuple(w) + marker] = words.get(tuple(w) + marker, 0) + f
    return [pair for pair, _, _ in learn(words, num_merges, ties)]


def segment_chars(
    word: str, merges: Sequence[tuple[str, str]], end_of_word: str | None = "</w>"
) -> list[str]:
    """Split a word with character-level merges learned by `train_chars`, as
    the paper applies them: the word's characters (and the marker), then each
    merge in the order learned, everywhere in the word (`merge_word`). A word
    never seen in training still splits into known symbols: the paper's
    "lowest" from {low, lower, newest, widest}:

    >>> merges = train_chars({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 10, ties="first")
    >>> segment_chars("lowest", merges)
    ['low', 'est</w>']
    """
    symbols = tuple(word) + (() if end_of_word is None else (end_of_word,))
    for pair in merges:
        symbols = merge_word(symbols, pair)
    return list(symbols)


# ---- SuperBPE ----------------------------------------------------------------

# The authors' stage-2 regex (PythonNut/superbpe, scripts/extend_tokenizer.sh).
SUPERBPE_REGEX = r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"""


def superbpe_pieces(text: str, special_tokens: Iterable[str] = ()) -> list[str]:
    r"""SuperBPE's stage-2 pieces of `text`: cut at special tokens, then each line
    (up to and with its ``\n``) split as HF's ``Split(SUPERBPE_REGEX, Isolated)``
    splits it: every match, and every run of text between two matches.

    >>> superbpe_pieces("By the way, it's 2024!!\nOK  \n")
    ["By the way, it's ", '202', '4', '!!\n', 'OK', '  ', '\n']
    """
    import regex

    compiled = regex.compile(SUPERBPE_REGEX)
    out = []
    for part in split_special(text, special_tokens):
        for line in _lines(part):
            pos = 0
            for m in compiled.finditer(line):
                out += [line[pos : m.start()], m[0]]
                pos = m.end()
            out.append(line[pos:])
    return [p for p in out if p]


def _lines(text: str) -> list[str]:
    r"""`text` cut after each ``\n`` (only there, unlike `str.splitlines`)."""
    lines, start = [], 0
    while (end := text.find("\n", start)) >= 0:
        lines.append(text[start : end + 1])
        start = end + 1
    return lines + [text[start:]]


def superbpe_allows(token: bytes, max_words: int | None = 4) -> bool:
    """May stage 2 make `token`? Not if it holds ``b": "``, or more than
    `max_words` words (runs of bytes other than the space).

    >>> [superbpe_allows(t) for t in (b" by the way", b"Note: the", b" a b c d e")]
    [True, False, False]
    """
    words = [w for w in token.split(b" ") if w]
    return b": " not in token and (max_words is None or len(words) <= max_words)


def train_superbpe(
    texts: Iterable[str],
    stage1_merges: int,
    stage2_merges: int,
    pattern: str = "gpt2",
    special_tokens: Iterable[str] = (),
    max_words: int | None = 4,
    base: Sequence[Pair] = (),
) -> list[Pair]:
    """SuperBPE's merge table: `stage1_merges` merges of ordinary BPE (`train`;
    with `base`, a merge table, an extension of it as `train_trace` makes
    one), then up to `stage2_merges` over the stage-2 pieces, each first split
    by the stage-1 merges (`bpe`), recounting every step; a pair is never
    merged if `superbpe_allows` refuses its result or the result is a token
    already. Both stages cut the text at `special_tokens`.

    >>> text = "of the cat, of the dog. Of the cats: of the dogs!!"
    >>> [a + b for a, b in train_superbpe([text], 6, 3)]
    [b'th', b'the', b' the', b'of', b'og', b'dog', b' the ', b'of the ', b'of the dog']
    """
    texts = list(texts)
    special_tokens = list(special_tokens)
    ranks = {bytes([i]): i for i in range(256)}
    for r, (a, b) in enumerate(base):
        ranks.setdefault(a + b, 256 + r)
    words = count_words(texts, pattern, special_tokens)
    stage1 = list(base) + train_from_counts(words, stage1_merges, base_ranks=ranks)
    for r, (a, b) in enumerate(stage1):
        ranks.setdefault(a + b, 256 + r)
    pieces = Counter(p.encode("utf-8") for t in texts for p in superbpe_pieces(t, special_tokens))
    words = {w: f for w, f in _base_words(pieces, ranks).items() if len(w) > 1}
    taken = set(ranks)
    merges = list(stage1)
    for _ in range(stage2_merges):
        counts = {
            p: c
            for p, c in pair_counts(words).items()
            if p[0] + p[1] not in taken and superbpe_allows(p[0] + p[1], max_words)
        }
        if not counts:
            break
        pair = best_pair(counts)
        merges.append(pair)
        taken.add(pair[0] + pair[1])
        words = {w: f for w, f in _merged_words(words, pair).items() if len(w) > 1}
    return merges


def _merged_words(words: Mapping[tuple, int], pair: tuple) -> dict[tuple, int]:
    merged: dict[tuple, int] = {}
    for w, f in words.items():
        w = merge_word(w, pair)
        merged[w] = merged.get(w, 0) + f
    return merged


# ---- encoding -------------------------------------------------------------


def default_vocab(merges: Sequence[Pair]) -> dict[int, bytes]:
    """The id layout of a tokenizer we train: 0..255 the bytes, 256 + r merge r.

    >>> default_vocab([(b"a", b"b")])[256]
    b'ab'
    """
    vocab = {i: bytes([i]) for i in range(256)}
    for r, (a, b) in enumerate(merges):
        vocab[256 + r] = a + b
    return vocab


def bpe(piece: bytes, ranks: Mapping[bytes, int]) -> list[bytes]:
    """Split one pre-token into tokens: start from single bytes and, while some
    adjacent pair joins into a ranked token, join the pair of lowest rank (the
    leftmost on a tie).

    >>> bpe(b"aaab", {b"aa": 0, b"ab": 1})
    [b'aa', b'ab']
    """
    parts = [bytes([b]) for b in piece]
    while True:
        found = [
            (ranks[parts[i] + parts[i + 1]], i)
            for i in range(len(parts) - 1)
            if parts[i] + parts[i + 1] in ranks
        ]
        if not found:
            return parts
        _, i = min(found)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def encode(
    text: str,
    merges: Sequence[Pair],
    pattern: str = "gpt2",
    special_tokens: Mapping[str, int] | None = None,
    vocab: Mapping[int, bytes] | None = None,
) -> list[int]:
    """Token ids of `text`, with tiktoken's semantics: special-token strings
    (all of them allowed here; longest wins when they overlap) give their ids,
    the rest is pre-tokenized, and each pre-token that is itself in the
    vocabulary gives its id whole; otherwise `bpe` splits it, ranking a pair by
    the rank of its concatenated bytes among the merge results.

    `vocab` defaults to `default_vocab(merges)`.

    >>> encode("abab ab", [(b"a", b"b"), (b"ab", b"ab")])
    [257, 32, 256]
    """
    import regex

    vocab = default_vocab(merges) if vocab is None else vocab
    special_tokens = dict(special_tokens or {})
    ids = {}
    for i, b in sorted(vocab.items()):
        ids.setdefault(b, i)
    ranks: dict[bytes, int] = {}
    for r, (a, b) in enumerate(merges):
        ranks.setdefault(a + b, r)
    out: list[int] = []
    specials = sorted(special_tokens, key=len, reverse=True)
    pieces = (
        regex.split("(" + "|".join(map(regex.escape, specials)) + ")", text) if specials else [text]
    )
    for k, piece in enumerate(pieces):
        if k % 2:  # the separators captured by split: special tokens
            out.append(special_tokens[piece])
            continue
        for word in pretokenize(piece, pattern):
            word_bytes = word.encode("utf-8")
            if word_bytes in ids:
                out.append(ids[word_bytes])
            else:
                out.extend(ids[t] for t in bpe(word_bytes, ranks))
    return out


__all__ = [
    "PATTERNS",
    "bpe",
    "best_pair",
    "count_words",
    "default_vocab",
    "encode",
    "learn",
    "merge_word",
    "pair_counts",
    "pretokenize",
    "resolve_pattern",
    "segment_chars",
    "split_special",
    "superbpe_allows",
    "superbpe_pieces",
    "train",
    "train_chars",
    "train_from_counts",
    "train_superbpe",
    "train_trace",
]
