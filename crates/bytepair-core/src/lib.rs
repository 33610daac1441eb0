//! # bytepair-core
//!
//! Byte-level BPE (the GPT-2 / tiktoken kind) in pure Rust: pre-tokenization,
//! word counting, the merge loop that learns a merge table, and an encoder
//! whose ids equal tiktoken's for the same ranks, pattern and special tokens.
//! The Python package `bytepair` is a thin layer over this crate; nothing here
//! depends on Python.
//!
//! One module per stage ("pipeline" below means a tokenizer.json pipeline):
//!
//! - [`pretokenize`]: split text into pre-tokens with a preset or custom
//!   regex; special tokens.
//! - [`pipeline`]: tokenizer.json pipelines: normalizers, pre-tokenizer steps,
//!   added-token rules; the walk encoding and counting share.
//! - [`cut`]: safe cuts: where a text may be split without changing its
//!   pre-tokens.
//! - [`count`]: stream files or texts and count each distinct pre-token (word
//!   counts), by a pattern or a pipeline; accumulate counts across calls.
//! - [`wordcounts`]: the word-counts artifact's columns (Arrow layout) and
//!   stable buckets.
//! - [`train`]: the merge loop: learn merges from word counts.
//! - [`encode`]: encode text to ids (rank-ordered merges) and decode ids to
//!   bytes; long texts in segments, files and batches of documents to token
//!   files.
//! - [`sentencepiece`]: SentencePiece BPE models (Llama 2, Mistral, Gemma):
//!   read `.model` files, encode and decode with SentencePiece's ids, train.
//! - [`recover`]: recover the merges of a rank table (a `.tiktoken` file).
//! - [`rank_file`]: read `.tiktoken` rank files and the merge table they imply.
//! - [`byte_level`]: GPT-2's printable form of byte-level tokens (`vocab.json`,
//!   `tokenizer.json`).
//! - [`progress`]: progress and cancellation of long work.
//!
//! The contract (id layout, tie-break, special-token semantics) is in
//! `docs/design.md` of the repository.
//!
//! ## Example: train on a text, then encode and decode with the result
//!
//! ```
//! use bytepair_core::{count, train, Encoder, PreTokenizer, Progress};
//!
//! let text = "the cat sat on the mat; the cat ate the rat";
//! // Count pre-tokens with GPT-2's pattern (special tokens would split the text first).
//! let pre = PreTokenizer::new("gpt2", &[]).unwrap();
//! let mut counts = count::WordCounts::default();
//! count::count_text(&pre, text, &mut counts).unwrap();
//! assert_eq!(counts[&b" the"[..]], 3);
//!
//! // Learn 5 merges; ties go to the lexicographically greatest pair of bytes.
//! let trained = train::train(counts, 5, &Progress::default())
//!     .expect("not cancelled, counts below 2^64 bytes");
//! let merged = trained.merged_tokens();
//! assert_eq!(merged[0], b"at");
//!
//! // Encode with the result: ids 0..=255 are the bytes, 256 + r the token of merge r.
//! let enc = Encoder::from_merged(merged, &[], "gpt2").unwrap();
//! let ids = enc.encode(" the cat", &[], &[]).unwrap();
//! let decoded: Vec<i64> = ids.iter().map(|&id| id as i64).collect();
//! assert_eq!(enc.decode_bytes(&decoded).unwrap(), b" the cat");
//! ```

pub mod byte_level;
pub mod count;
pub mod cut;
pub mod encode;
mod memory;
pub mod pipeline;
pub mod pretokenize;
pub mod progress;
pub mod rank_file;
pub mod recover;
pub mod sentencepiece;
mod shortkey;
pub mod train;
pub mod wordcounts;

pub use cut::CutRule;
pub use encode::{EncodeError, Encoder, EncoderError, VocabTables};
pub use memory::{mapped_bytes, BufferPool};
pub use pretokenize::{PatternError, PreTokenizer};
pub use progress::Progress;

/// `bytes` as UTF-8 text, checked by simdutf8 (SIMD; std's check took ~3% of
/// counting enwiki and 17 ms of 10 MB of multilingual text); when they are
/// not UTF-8, std's check locates the error (`Utf8Error::valid_up_to`).
///
/// ```
/// assert_eq!(bytepair_core::str_from_utf8(b"caf\xc3\xa9"), Ok("café"));
/// assert_eq!(bytepair_core::str_from_utf8(b"ab\xff").unwrap_err().valid_up_to(), 2);
/// ```
pub fn str_from_utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(_) => std::str::from_utf8(bytes),
    }
}
