"""bytepair: byte-level BPE tokenizers (the GPT-2 / tiktoken kind).

Train a merge table on a corpus, encode and decode with it (ids identical to
tiktoken's for the same ranks), and save it as a HuggingFace tokenizer.json.

>>> import bytepair
>>> tok = bytepair.train_from_iterator(["hello world"] * 10, 260, progress=False)
>>> tok.decode(tok.encode("hello world"))
'hello world'
"""

from bytepair._core import resolve_pattern
from bytepair.counts.artifact import WordCounts
from bytepair.counts.count import count
from bytepair.counts.sources import CountSpec
from bytepair.dataset import TokenShards, encode_dataset
from bytepair.encoding import cache_budget, set_cache_budget
from bytepair.formats.by_name import get_encoding, list_encodings
from bytepair.integrations.transformers_backend import patch_transformers, unpatch_transformers
from bytepair.spm_tokenizer import SentencePieceTokenizer
from bytepair.spm_train import train_sentencepiece, train_sentencepiece_from_iterator
from bytepair.tokenizer import Tokenizer
from bytepair.train import TrainingStats, train, train_from_counts, train_from_iterator

__all__ = [
    "CountSpec",
    "SentencePieceTokenizer",
    "TokenShards",
    "Tokenizer",
    "TrainingStats",
    "WordCounts",
    "cache_budget",
    "count",
    "encode_dataset",
    "get_encoding",
    "list_encodings",
    "patch_transformers",
    "resolve_pattern",
    "set_cache_budget",
    "train",
    "train_from_counts",
    "train_from_iterator",
    "train_sentencepiece",
    "train_sentencepiece_from_iterator",
    "unpatch_transformers",
]
__version__ = "0.1.0"
