"""Type stubs for the Rust extension module (src/lib.rs)."""

from collections.abc import Callable
from typing import BinaryIO

import numpy

# A tokenizer.json pipeline: (normalizers, pre-tokenizer steps, added-token rules),
# as `bytepair.formats.hf_pipeline.HFPipeline.core_spec` builds it.
PipelineSpec = tuple[
    list[tuple[str, list[str]]],
    list[tuple[str, list[str]]],
    list[tuple[str, bool, bool, bool, bool]],
]

def resolve_pattern(name_or_pattern: str) -> str:
    """Preset name (gpt2, cl100k, o200k) -> its regex; other strings unchanged."""

def untrack_int_lists(lists: list) -> int:
    """Untrack each list of exact ints in `lists` from the cyclic garbage
    collector (as CPython untracks tuples of atomic items); returns how many."""

def set_cache_budget(nbytes: int) -> int:
    """Budget of each thread's caches per encoder, in bytes; returns the budget in effect."""

def cache_budget() -> int:
    """The cache budget in effect, in bytes."""

class RankTable:
    """A .tiktoken file read by the core, with the encoder's tables built."""
    def __len__(self) -> int: ...
    def max_rank(self) -> int: ...
    def token(self, rank: int) -> bytes | None: ...
    def python_tables(self) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
        """({rank: token bytes} in rank order, merges in rank order)."""

def byte_level_tables(
    vocab: dict[str, int], merges: list[str | list[str]]
) -> tuple[list[int], list[bytes], list[tuple[bytes, bytes]]] | None:
    """A byte-level tokenizer.json's model.vocab and model.merges decoded: (ids in
    the vocab's order, their bytes, merges as byte pairs), or None if irregular."""

def merge_table_passes(
    merges: list[tuple[bytes, bytes]], vocab: list[bytes] | None = None, rank_rule: bool = True
) -> bool:
    """Whether merges pass the checks of `formats.tables` (parts and results in
    `vocab`; with `rank_rule`, unique results made as BPE by rank makes them)."""

def rank_table(data: bytes) -> RankTable | None:
    """A .tiktoken file's content read and its merges recovered, or None when
    it is not a valid BPE rank table."""

class SeparatedReader:
    """A binary file whose documents are separated by `separator`, read in batches of about
    `batch_bytes` (a document held whole) into reused buffers, with no copy of the text."""

    def __init__(self, file: BinaryIO, separator: bytes, batch_bytes: int) -> None: ...
    def next_batch(self) -> DocumentBatch | None:
        """The next batch (empty pieces dropped), None after the last."""

class DocumentBatch:
    """Documents at ranges of a read buffer; encode_documents takes one in place of
    (data, offsets)."""

    first: int  # the index in the file of the batch's first document
    document_bytes: int  # the documents' bytes, separators not counted
    def __len__(self) -> int: ...

def packed_vocab(vocab: dict[int, bytes]) -> bytes:
    """Every token in id order as (id, byte length) (two LE u64) then its bytes."""

def merge_runs(
    runs: list[tuple[bytes, bytes, bytes, int]], upto: bytes | None = None
) -> tuple[bytes, bytes, bytes, list[int]]:
    """Merge sorted runs (data, offsets, counts, first row) of word counts up to the word
    `upto` (all when None), summing repeated words: (data, offsets, counts, next row per run)."""

def recover_merges(merged: list[bytes]) -> list[int | None]:
    """Tokens in rank order (no single bytes) -> byte length of the left part of each
    one's merge (BPE restricted to lower ranks), None where that is not two parts."""

def _panic_for_tests(place: str) -> None:
    """Test hook: panic on the calling thread ("caller": pyo3 PanicException) or on
    a worker thread ("worker": RuntimeError "internal error in bytepair ...")."""

class WordCounter:
    """Word counts (pre-token bytes -> count) accumulated from files or texts."""

    def __init__(
        self,
        pattern: str,
        special_tokens: list[str],
        max_word_bytes: int = 65536,
        max_memory: int | None = None,
        pipeline: PipelineSpec | None = None,
        sample: bool = False,
    ) -> None:
        """Pre-tokens longer than max_word_bytes (>= 4) count as several words of at most that many
        bytes; max_memory (bytes) bounds the counts, dropping the rarest words past it (lossy
        counting), or with sample=True keeping a hash sample of them (threshold sampling:
        SuperBPE's stage 2); pipeline: count the pieces of this tokenizer.json pipeline
        (normalized, pre-tokenized as encoding does, its added-token rules on the special tokens)
        instead of the pattern's."""
    @property
    def pruned(self) -> tuple[int, int, int]:
        """What max_memory dropped: (distinct words, pre-tokens, highest minimum count applied)."""
    def count_files(
        self,
        paths: list[str],
        num_threads: int | None = None,
        chunk_size: int = ...,
        replace_errors: bool = False,
        progress: Callable[[int], object] | None = None,
    ) -> None:
        """Count UTF-8 files (each a document); progress(bytes done) ~10x a second."""
    def count_texts(
        self,
        texts: list[str],
        num_threads: int | None = None,
        progress: Callable[[int], object] | None = None,
    ) -> None: ...
    def count_documents(
        self,
        data: bytes | DocumentBatch,
        offsets: bytes | None,
        source: str,
        first_record: int | None = None,
        num_threads: int | None = None,
        replace_errors: bool = False,
        progress: Callable[[int], object] | None = None,
    ) -> None:
        """Count documents in Arrow large_string layout: data back to back, offsets n + 1 LE
        int64."""
    def add_columns(self, data: bytes, offsets: bytes, counts: bytes, unique: bool = True) -> None:
        """Add one word-counts part's rows (Arrow large_binary words, n LE int64 counts)."""
    def load_rows(
        self,
        data: bytes,
        offsets: bytes,
        counts: bytes,
        budget: int | None = None,
        ids: int = 256,
        merges: int = 0,
        fold: bool = False,
        sample: bool = False,
    ) -> None:
        """Append one part's rows as they are (each word in one part): L + 12 bytes a word;
        budget (bytes, from the first call): keep the words counted at least t times, the
        smallest t whose words the merge loop of `merges` merges, `ids` ids holds within it;
        fold: the words dropped are folded into pieces of <= 8 bytes, kept when they fit;
        sample: keep a hash sample of the words counted c < t times (probability c/t, each
        counted t), t the smallest threshold whose sample fits (threshold sampling).
        ValueError: fold and sample both set."""
    def fit_training_budget(
        self, budget: int, ids: int = 256, merges: int = 0, fold: bool = False, sample: bool = False
    ) -> None:
        """Drop every word counted fewer than t times, the smallest t whose words the merge
        loop holds within budget bytes (counts taken as final); adds to pruned. fold: fold
        the words dropped into pieces of <= 8 bytes first, kept when they fit; sample: keep a
        hash sample of them (probability c/t, each counted t), t the smallest threshold whose
        sample fits. ValueError: fold and sample both set."""
    def to_buckets(self, parts: int) -> list[tuple[bytes, bytes, bytes]]:
        """The counts in `parts` buckets by stable word hash: sorted (data, offsets, counts)
        each."""
    def add_counts(self, items: list[tuple[bytes, int]]) -> None: ...
    def __len__(self) -> int: ...
    def total(self) -> int: ...
    def items(self) -> list[tuple[bytes, int]]:
        """(word, count) sorted by count descending, then bytes."""
    def add_scaled(self, other: WordCounter, weight: float) -> None:
        """Add other's counts times weight (exact for integers, else rounded half away from zero);
        empties other."""
    def chars_after_last_cut(self, text: str) -> int | None:
        """Characters of text after its last safe cut for counting, or None."""
    def train(
        self,
        num_merges: int,
        num_threads: int | None = None,
        progress: Callable[[int], object] | None = None,
        min_frequency: int = 0,
        max_token_length: int | None = None,
        base: CoreBPE | None = None,
        base_tokens: list[tuple[int, bytes]] = ...,
        first_new_id: int = 256,
        superbpe: bool = False,
        max_words: int | None = None,
    ) -> tuple[list[tuple[int, int, int]], str | None, int]:
        """Consume the counts; return ([(left id, right id, pair count)], why it stopped early
        (None, "no_pair" or "min_frequency"), tokens in the counted text after all merges).
        With base (its ordinary (id, bytes) tokens and the first new id), words are split by
        the base's merges first. superbpe (with base, the stage-1 tokenizer): SuperBPE's stage 2
        over counts of stage-2 pieces, tokens of at most max_words words and no ': '."""

class CoreBPE:
    """Encoder over a Tokenizer's vocab and merges, special tokens, pattern."""

    @staticmethod
    def from_rank_table(table: RankTable, specials: list[tuple[str, int]], pattern: str) -> CoreBPE:
        """The encoder of a rank table (ids = ranks), from the tables built with it."""
    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        specials: list[tuple[str, int]],
        pattern: str,
        pipeline: PipelineSpec | None = None,
    ) -> None:
        """vocab: id -> bytes (special ids left out); merges in rank order;
        pipeline: (normalizers, pre-tokenizer steps, added-token rules) as
        `bytepair.formats.hf_pipeline.HFPipeline.core_spec` builds them."""
    def encode_with_spans(
        self, text: str, allowed: list[str], disallowed: list[str]
    ) -> tuple[list[int], list[tuple[int, int]]] | None:
        """Ids and each id's byte span of text, through the pipeline; None without one."""
    def encode_ordinary(self, text: str) -> list[int]: ...
    @property
    def plain_pipeline(self) -> bool:
        """Whether the pipeline (normalizers + one Isolated preset Split, special tokens
        without rules) encodes on the presets' path; False without a pipeline."""
    def chars_after_last_cut(self, text: str) -> int | None:
        """Characters after the last safe cut of text (bytepair_core::cut::CutRule), or None."""
    def encode(self, text: str, allowed: list[str], disallowed: list[str]) -> list[int]: ...
    def encode_with_dropout(
        self, text: str, allowed: list[str], disallowed: list[str], dropout: float, seed: int
    ) -> list[int]:
        """BPE-dropout: each candidate merge skipped with probability dropout in [0, 1); seed in [0,
        2**64)."""
    def encode_to_numpy(
        self, text: str, allowed: list[str], disallowed: list[str], num_threads: int | None = 1
    ) -> "numpy.ndarray":
        """Ids as a 1-D uint32 array that owns its buffer (no copy)."""
    def encode_file(
        self,
        path: str,
        out_fd: int,
        itemsize: int,
        allowed: list[str],
        disallowed: list[str],
        replace_errors: bool = False,
        num_threads: int | None = None,
        callback: Callable[[int], None] | None = None,
    ) -> tuple[int, int]:
        """Encode a UTF-8 file into an open file as little-endian ids of `itemsize` bytes; (ids,
        bytes read)."""
    def encode_batch(
        self,
        texts: list[str],
        allowed: list[str],
        disallowed: list[str],
        num_threads: int | None = None,
    ) -> list[list[int]]:
        """num_threads counts the calling thread, which also builds the lists;
        UnicodeEncodeError (before any work) if a text holds a lone surrogate."""
    def encode_documents(
        self,
        data: bytes | DocumentBatch,
        offsets: bytes | None,
        source: str,
        first_record: int | None,
        allowed: list[str],
        disallowed: list[str],
        eot: int | None,
        itemsize: int,
        replace_errors: bool = False,
        num_threads: int | None = None,
    ) -> tuple[numpy.ndarray, bytes]:
        """Documents in Arrow large_binary layout (data, n + 1 LE int64 offsets) or a
        DocumentBatch (offsets None), each encoded
        on threads with eot appended -> (ids back to back as LE uint16/uint32 for itemsize 2/4,
        as a uint8 array owning them; each document's id count as LE int64). Errors name
        source, record and byte offset."""
    def decode_bytes(self, ids: list[int]) -> bytes: ...
    def decode_text(self, ids: list[int], errors: str) -> str:
        """The joined bytes of ids decoded as UTF-8 with the error handler `errors`."""
    def cache_stats(self) -> dict[str, int]:
        """The calling thread's caches for this encoder: pieces_seen; short_/mid_ pieces,
        bytes, inserted, sweeps, evicted; long_pieces, long_bytes."""
    def pretokenize(self, text: str) -> list[str]: ...

# ---- SentencePiece BPE (src/sentencepiece.rs, src/spm_encoder.rs) ---------------------------

class SentencePieceModel:
    """A SentencePiece .model file parsed (protobuf ModelProto)."""
    @staticmethod
    def from_bytes(data: bytes) -> SentencePieceModel:
        """ValueError: not a ModelProto."""
    @staticmethod
    def build(
        pieces: list[tuple[str, float, int]], normalizer: dict, trainer: dict
    ) -> SentencePieceModel:
        """A BPE model of pieces (text, score, type number) and spec fields."""
    def to_bytes(self) -> bytes: ...
    def pieces(self) -> list[tuple[str, float, int]]:
        """(text, score, type number) of every piece, in id order."""
    def model_type(self) -> int: ...
    def normalizer(self) -> dict: ...
    def trainer(self) -> dict: ...

class CoreSPM:
    """The SentencePiece BPE encoder of a model, with special tokens (string, id)."""
    def __init__(
        self,
        model: SentencePieceModel,
        specials: list[tuple[str, int]],
        *,
        hf_chars: bool = False,
        never_merged: list[int] = ...,
        whole_lookup: bool = False,
        fuse_unk: bool = True,
        metaspace_prefix: bool = False,
        prefix_first_only: bool = False,
    ) -> None:
        """The keywords run a tokenizer.json as HF tokenizers does."""
    def encode(
        self, text: str, allowed: list[str], disallowed: list[str], continued: bool = False
    ) -> list[int]:
        """`continued`: the text continues an input (a stream's block after the first): no
        dummy prefix."""
    def encode_ordinary(self, text: str) -> list[int]: ...
    def encode_to_numpy(
        self,
        text: str,
        allowed: list[str],
        disallowed: list[str],
        num_threads: int | None = 1,
        continued: bool = False,
    ) -> numpy.ndarray: ...
    def chars_after_last_cut(self, text: str) -> int | None:
        """Characters after the last safe cut (src/sentencepiece/cuts.rs), or None."""
    def encode_file(
        self,
        path: str,
        out_fd: int,
        itemsize: int,
        allowed: list[str],
        disallowed: list[str],
        replace_errors: bool = False,
        num_threads: int | None = None,
        callback: Callable[[int], None] | None = None,
    ) -> tuple[int, int]:
        """As CoreBPE.encode_file."""
    def encode_documents(
        self,
        data: bytes | DocumentBatch,
        offsets: bytes | None,
        source: str,
        first_record: int | None,
        allowed: list[str],
        disallowed: list[str],
        eot: int | None,
        itemsize: int,
        replace_errors: bool = False,
        num_threads: int | None = None,
    ) -> tuple[numpy.ndarray, bytes]:
        """As CoreBPE.encode_documents."""
    def encode_batch(
        self,
        texts: list[str],
        allowed: list[str],
        disallowed: list[str],
        num_threads: int | None = None,
    ) -> list[list[int]]: ...
    def encode_with_spans(
        self, text: str, allowed: list[str], disallowed: list[str]
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """Each id's (start, end) byte span of `text`."""
    def decode_bytes(self, ids: list[int]) -> bytes:
        """SentencePiece's decoding, byte pieces as their raw bytes."""
    def decode_text(self, ids: list[int]) -> str:
        """SentencePiece's decoding."""
    def decode_with_starts(self, ids: list[int]) -> tuple[bytes, list[int]]:
        """The raw decoding and the byte offset where each id's text starts."""

def train_sentencepiece(
    texts: list[str | bytes],
    normalizer: dict,
    vocab_size: int,
    character_coverage: float,
    byte_fallback: bool,
    split_digits: bool,
    allow_whitespace_only_pieces: bool,
    max_piece_chars: int,
    control_symbols: list[str],
    user_defined_symbols: list[str],
    min_frequency: int,
    num_threads: int | None = None,
    callback: Callable[[int], object] | None = None,
    files: list[str | bytes] | None = None,
) -> tuple[SentencePieceModel, int]:
    """A SentencePiece-style BPE model trained on the lines of `texts` (or of the
    text files `files`, read by the core), and the bytes counted."""
