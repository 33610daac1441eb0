"""File formats for byte-level BPE tokenizers, each read and written so that
the other tool gives the same ids as bytepair:

- `hf`: HuggingFace ``tokenizer.json`` (tokenizers, transformers), with
  `hf_pipeline` (the normalizers and pre-tokenizers it can hold) and
  `hf_regex` (its regexes as HF's engine reads them);
- `gpt2`: GPT-2's ``vocab.json`` + ``merges.txt`` (openai/gpt-2, HF's slow
  tokenizers, ``tokenizers.models.BPE.from_file``);
- `tiktoken_files`: tiktoken's ``.tiktoken`` rank files (+ a sidecar JSON for
  the pattern and special tokens) and live ``tiktoken.Encoding`` objects;
- `tekken`: Mistral's ``tekken.json`` (mistral-common's ``Tekkenizer``);
- `detect`: `load` any of them by looking at the file, `info`, `convert`, and
  the ``bytepair convert`` / ``bytepair info`` commands;
- `bytelevel`: GPT-2's printable form of token bytes; `tables`: the merge /
  rank table checks they share.
"""

from bytepair.formats.bytelevel import (
    bytes_to_unicode,
    str_to_token,
    token_to_str,
    unicode_to_bytes,
)
from bytepair.formats.detect import convert, detect_format, info, load, save_as
from bytepair.formats.gpt2 import from_gpt2_files, read_merges, save_gpt2
from bytepair.formats.hf import from_hf_json, hf_added_token_ids, to_hf_json
from bytepair.formats.hf_regex import PRESETS, hf_pattern, keep_gaps, preset_name, unwrap_gaps
from bytepair.formats.tables import check_merges, merges_from_ranks, ranks_of
from bytepair.formats.tekken import from_tekken, save_tekken, to_tekken_json
from bytepair.formats.tiktoken_files import (
    from_tiktoken,
    from_tiktoken_encoding,
    save_tiktoken,
    to_tiktoken,
)

__all__ = [
    "PRESETS",
    "bytes_to_unicode",
    "check_merges",
    "convert",
    "detect_format",
    "from_gpt2_files",
    "from_hf_json",
    "from_tekken",
    "from_tiktoken",
    "from_tiktoken_encoding",
    "hf_added_token_ids",
    "hf_pattern",
    "info",
    "keep_gaps",
    "load",
    "merges_from_ranks",
    "preset_name",
    "ranks_of",
    "read_merges",
    "save_as",
    "save_gpt2",
    "save_tekken",
    "save_tiktoken",
    "str_to_token",
    "to_hf_json",
    "to_tekken_json",
    "to_tiktoken",
    "token_to_str",
    "unwrap_gaps",
    "unicode_to_bytes",
]
