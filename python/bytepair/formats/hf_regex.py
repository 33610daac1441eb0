"""The regexes of a ``tokenizer.json`` (its Split pre-tokenizers and
Replace normalizers), as HuggingFace tokenizers' regex engine (Oniguruma, Ruby
syntax) reads them: which preset a regex spells (`preset_name`), how we spell
a preset for that engine (`hf_pattern`), regexes it reads unlike tiktoken and
bytepair (`check_oniguruma_regex`), and the text an Isolated Split keeps
between two matches (`keep_gaps`). Shared by `bytepair.formats.hf` (the model
and plain patterns) and `bytepair.formats.hf_pipeline` (general pipelines).
"""

from __future__ import annotations

import re

from bytepair import _core

# The patterns with a name (``superbpe``: SuperBPE's stage 2, `bytepair.superbpe`;
# every regex here matches each character, so an Isolated Split keeps no gaps).
PRESETS = ("gpt2", "cl100k", "o200k", "llama3", "qwen2", "superbpe")

# Preset spellings for tokenizer.json. HF's regex engine (Oniguruma, Ruby syntax)
# reads tiktoken's possessive interval `\p{N}{1,3}+` as `(\p{N}{1,3})+`, any
# number of digits; the plain `{1,3}` is the same match here (nothing follows it
# in its branch) and means the same to every engine.
_HF_SPELLING = {
    "cl100k": r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
}
# Other spellings of a preset that split every text the same way: tiktoken's own
# r50k_base / p50k_base pattern (possessive, with `\s++$`) for GPT-2's.
_OTHER_SPELLINGS = {
    "gpt2": (r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s",),
}
# A possessive interval (`{1,3}+`), which Oniguruma reads as a repeated interval.
_POSSESSIVE_INTERVAL = re.compile(r"(?<!\\)\{\d+(?:,\d*)?\}\+")
# What HF's ByteLevel(use_regex=false) alone does: no split, the text is one pre-token.
WHOLE_TEXT = r"(?s:.+)"


# The branch `keep_gaps` adds: a run of characters at none of which the regex matches.
_GAP_BRANCH = "|(?s:(?:(?!{inner}).)+)"


def keep_gaps(regex: str) -> str:
    """`regex` with one more alternative that matches the text between two of
    its matches, so that findall over the result yields what HF's
    ``Split(regex, Isolated)`` yields: the matches and, as pre-tokens of their
    own, the runs of text between them (HF ``SplitDelimiterBehavior::Isolated``).
    A regex that already has this form is returned as is."""
    if unwrap_gaps(regex) is not None:
        return regex
    inner = f"(?:{regex})"
    return inner + _GAP_BRANCH.format(inner=inner)


def unwrap_gaps(pattern: str) -> str | None:
    """The regex `keep_gaps` wrapped in `pattern`, or None if `pattern` is not of that form."""
    # keep_gaps(r) is `inner + _GAP_BRANCH.format(inner=inner)` with inner = "(?:r)":
    # the length alone says where inner ends.
    inner_len, odd = divmod(len(pattern) - len(_GAP_BRANCH.format(inner="")), 2)
    inner = pattern[:inner_len]
    if odd or inner_len < 4 or not (inner.startswith("(?:") and inner.endswith(")")):
        return None
    return inner[3:-1] if pattern == inner + _GAP_BRANCH.format(inner=inner) else None


def preset_name(pattern: str) -> str:
    """The preset name (one of `PRESETS`: ``gpt2``, ``cl100k``, ``o200k``, ``llama3``...)
    whose pre-tokenization `pattern` spells, else `pattern` itself."""
    for name in PRESETS:
        if pattern in (
            _core.resolve_pattern(name),
            _HF_SPELLING.get(name),
            *_OTHER_SPELLINGS.get(name, ()),
        ):
            return name
    return pattern


def hf_pattern(pattern: str) -> str:
    """The regex to write into tokenizer.json for `pattern` (a preset name or regex)."""
    return _HF_SPELLING.get(
        preset_name(_core.resolve_pattern(pattern)), _core.resolve_pattern(pattern)
    )


def check_oniguruma_regex(regex: str, where: str, source: str) -> str:
    """`regex` of a tokenizer.json Split or Replace, if HF's engine (Oniguruma) reads it as
    bytepair's does; else ValueError naming `where`."""
    # Even tiktoken's own cl100k string: HF reads it differently.
    if _POSSESSIVE_INTERVAL.search(regex):
        raise ValueError(
            f"{source}: {where}.pattern {regex!r} has a possessive interval such as {{1,3}}+, "
            "which HF's regex engine (Oniguruma) reads as a repeated interval, unlike tiktoken "
            "and bytepair; not supported"
        )
    return regex
