//! Encoding: special tokens, pre-tokenization, then rank-ordered merges inside
//! each pre-token, with tiktoken's semantics so ids equal tiktoken's on any input.
//!
//! Within a pre-token, the pair of adjacent parts whose concatenated bytes have the
//! lowest rank merges first (ties: the leftmost), until no adjacent pair is a
//! ranked token. A pre-token that is itself a token is looked up whole.
//!
//! The merge loop works on token ids, not byte slices: `tables::PairRanks` maps
//! every split of a ranked token into two tokens, (left id, right id), to the
//! token's rank. That is the same question tiktoken asks ("is the concatenation
//! a ranked token?") answered by hashing one u64 instead of a byte slice, and the
//! merged part's id comes with it, so the output needs no lookup either. Short
//! pieces go through a per-thread cache (`cache`; the path through it:
//! `piece_encoding`) and a plain scan over a small vector; long ones a bucket
//! queue over ranks (`merge`), close to linear time even for a 10 MB pre-token
//! of one repeated character.
//!
//! BPE-dropout (Provilkov et al., 2020, "BPE-Dropout: Simple and Effective Subword
//! Regularization") is a separate path, `encode_with_dropout`: at every merge step
//! each candidate merge is skipped with probability p, and the lowest-rank one not
//! skipped is applied; when every candidate is skipped the piece is done.

pub(crate) mod cache;
mod code_merge;
mod decode;
pub mod documents;
pub mod file;
mod general;
pub mod id_bytes;
mod merge;
mod piece_encoding;
mod runs;
pub mod segments;
mod superwords;
pub(crate) mod tables;
#[cfg(test)]
mod tests;
mod vocab;

use std::borrow::Cow;

use aho_corasick::AhoCorasick;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::pretokenize::{special_matcher, PatternError, PreTokenizer, SearchError};
use cache::{new_encoder_tag, with_scratch};
use general::PipelineEncoding;

pub use cache::{cache_budget, set_cache_budget, CacheStats, PieceCacheStats, DEFAULT_CACHE_BYTES};
pub use decode::push_inline;
pub use general::Spans;
pub(crate) use merge::merge_by_rank;
pub use vocab::{specials_that_are_ordinary, VocabTables};

/// A special-token string found where it is not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisallowedSpecial {
    pub token: String,
    /// Byte offset in the UTF-8 text.
    pub offset: usize,
}

/// Why an `Encoder` cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    /// Two vocabulary entries with the same id.
    #[error("duplicate token id {0}")]
    DuplicateId(u32),
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

/// Why a text cannot be encoded.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The text holds a special token that is not allowed (tiktoken's default).
    #[error("disallowed special token {:?} at byte offset {}", .0.token, .0.offset)]
    Disallowed(DisallowedSpecial),
    /// Bytes with no token (a vocabulary without some single byte).
    #[error("bytes {0:?} are not in the vocabulary")]
    NotInVocabulary(Vec<u8>),
    /// The backtracking engine gave up on a custom pattern.
    #[error(transparent)]
    Search(#[from] SearchError),
    /// A subset of the special tokens could not be matched (see `PatternError`).
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// `Progress::cancel` was called during `cancellable`.
    #[error("cancelled")]
    Cancelled,
}

impl EncodeError {
    /// The same error for a text that starts `offset` bytes later in a longer one.
    pub fn shifted(self, offset: usize) -> Self {
        match self {
            EncodeError::Disallowed(d) => EncodeError::Disallowed(DisallowedSpecial {
                offset: d.offset + offset,
                ..d
            }),
            other => other,
        }
    }
}

/// A token id that is not in the vocabulary (decoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("token id {0} is not in the vocabulary")]
pub struct UnknownId(pub i64);

/// A byte-level BPE encoder and decoder: vocabulary, merge ranks, special
/// tokens and pre-tokenization pattern. Immutable once built, `Sync`: share
/// one between threads (each thread keeps its own caches).
pub struct Encoder {
    /// Vocabulary and merge table (decoder: special tokens included).
    vocab: VocabTables,
    /// Special-token string -> id, in the order given.
    specials: Vec<(String, u32)>,
    all_specials: Option<AhoCorasick>,
    pre: PreTokenizer,
    /// A tokenizer.json pipeline (normalizers, pre-tokenizer steps, added-token
    /// rules), which replaces `pre` and the special-token split when set.
    pipeline: Option<PipelineEncoding>,
    /// Tells this encoder's entries in a thread's caches from another's.
    tag: u64,
}

thread_local! {
    /// The cancel flag of the `cancellable` call running on this thread.
    static CANCEL: std::cell::RefCell<Option<std::sync::Arc<std::sync::atomic::AtomicBool>>> =
        const { std::cell::RefCell::new(None) };
}

/// Run `encode` (any encoding on this thread) so that it stops with
/// `EncodeError::Cancelled` soon after `progress.cancel()`: the merge of a long
/// pre-token (a run of one character of 100 MB takes seconds) checks the flag
/// between ranks. Short pieces are not checked; cut long texts into segments
/// (`cut::segments`) and check between them.
pub fn cancellable<R>(progress: &crate::Progress, encode: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CANCEL.with_borrow_mut(|cancel| *cancel = None);
        }
    }
    CANCEL.with_borrow_mut(|cancel| *cancel = Some(progress.cancel_flag()));
    let _reset = Reset;
    encode()
}

impl Encoder {
    /// An encoder over any vocabulary.
    ///
    /// `tokens`: every (bytes, id) of the vocabulary except special tokens (the
    /// first id given for some bytes is the one encoding outputs);
    /// `merged`: the bytes of each merge result in rank order (rank = index);
    /// `specials`: (special-token string, id); `pattern`: a preset name
    /// (`gpt2`, `cl100k`, `o200k`) or a regex.
    ///
    /// Errors: two tokens with one id, an invalid pattern, an empty special token.
    pub fn new(
        tokens: Vec<(Vec<u8>, u32)>,
        merged: Vec<Vec<u8>>,
        specials: Vec<(String, u32)>,
        pattern: &str,
    ) -> Result<Self, EncoderError> {
        Encoder::with_tables(VocabTables::new(&tokens, merged)?, specials, pattern)
    }

    /// `new` with the vocabulary's tables built already (`VocabTables::new`,
    /// which can run before the pattern and special tokens are known).
    pub fn with_tables(
        mut vocab: VocabTables,
        specials: Vec<(String, u32)>,
        pattern: &str,
    ) -> Result<Self, EncoderError> {
        for (s, id) in &specials {
            vocab.decoder.insert(*id, s.as_bytes());
        }
        let names: Vec<String> = specials.iter().map(|(s, _)| s.clone()).collect();
        // Specials are split by encode itself, so the pre-tokenizer gets none.
        let pre = PreTokenizer::new(pattern, &[])?;
        let all_specials = special_matcher(&names)?;
        Ok(Encoder {
            vocab,
            all_specials,
            specials,
            pre,
            pipeline: None,
            tag: new_encoder_tag(),
        })
    }

    /// The encoder of a tokenizer in bytepair's own id layout (the one
    /// `train::train` learns): ids 0..=255 are the single bytes, id 256 + r is
    /// the token of merge r, whose bytes are `merged[r]`, and the special tokens
    /// follow in the order given.
    pub fn from_merged(
        merged: Vec<Vec<u8>>,
        special_tokens: &[String],
        pattern: &str,
    ) -> Result<Self, EncoderError> {
        let bytes = (0..=255u8).map(|b| (vec![b], u32::from(b)));
        let tokens = bytes
            .chain(
                merged
                    .iter()
                    .enumerate()
                    .map(|(r, t)| (t.clone(), 256 + r as u32)),
            )
            .collect();
        let first_special = 256 + merged.len() as u32;
        let specials = special_tokens
            .iter()
            .enumerate()
            .map(|(k, t)| (t.clone(), first_special + k as u32))
            .collect();
        Encoder::new(tokens, merged, specials, pattern)
    }

    /// Ids below this have a dense decoder slot: every id of a vocabulary
    /// whose ids are not scattered far apart.
    pub fn dense_id_bound(&self) -> usize {
        self.vocab.decoder.dense_len()
    }

    /// Token `id` inline: its bytes, then its length in the last byte; zeros
    /// for a token longer than 15 bytes or unknown.
    pub fn inline_token(&self, id: u32) -> [u8; 16] {
        self.vocab.decoder.inline(id)
    }

    pub fn pre_tokenizer(&self) -> &PreTokenizer {
        &self.pre
    }

    /// The id of special token `token`, if it is one.
    pub fn special_id(&self, token: &str) -> Option<u32> {
        self.specials
            .iter()
            .find(|(s, _)| s == token)
            .map(|(_, id)| *id)
    }

    /// `encode_word_into` for a word seen once (training on top of this
    /// vocabulary encodes each distinct word once): the same ids, without
    /// caching the whole word, which would only cost (a copy of each long
    /// word, and the caches emptied again and again). A word that spans
    /// words (`superwords`) still takes its parts from the caches.
    pub fn encode_distinct_into(&self, word: &[u8], out: &mut Vec<u32>) -> Result<(), EncodeError> {
        with_scratch(self.tag, |scratch| {
            if word.len() <= 2 {
                return self.encode_piece(word, scratch, out);
            }
            self.whole_or_merged(self.vocab.ids.get(word), word, scratch, out)
        })
    }

    /// Encode one pre-token as it is (no special tokens, no pre-tokenization),
    /// appending its ids to `out`: what encoding makes of a word (training on
    /// top of this vocabulary, `train::train_on_base`).
    pub fn encode_word_into(&self, word: &[u8], out: &mut Vec<u32>) -> Result<(), EncodeError> {
        with_scratch(self.tag, |scratch| self.encode_piece(word, scratch, out))
    }

    /// Encode `text` with special-token strings taken as plain text,
    /// appending ids to `out`.
    pub fn encode_ordinary_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), EncodeError> {
        self.encode_into(text, &[], &[], out)
    }

    /// Encode with tiktoken's special-token semantics: fail on the first
    /// `disallowed` special-token string in the text, then emit `allowed` ones as
    /// their ids (longest match first) and encode everything else as text.
    /// Both lists name special tokens of this encoder, without duplicates.
    ///
    /// ```
    /// use bytepair_core::Encoder;
    /// let merged = vec![b"ab".to_vec(), b"abc".to_vec()];
    /// let enc = Encoder::from_merged(merged, &["<|end|>".to_string()], "gpt2").unwrap();
    /// let all = ["<|end|>".to_string()];
    /// assert_eq!(enc.encode("abc<|end|>", &all, &[]).unwrap(), [257, 258]);
    /// assert!(enc.encode("abc<|end|>", &[], &all).is_err());
    /// ```
    pub fn encode(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
    ) -> Result<Vec<u32>, EncodeError> {
        // Room for ~2 bytes per token (code and most prose need no regrowth).
        let mut out = Vec::with_capacity(text.len() / 2 + 16);
        self.encode_into(text, allowed, disallowed, &mut out)?;
        Ok(out)
    }

    /// `encode`, appending the ids to `out` (a buffer reused across calls
    /// saves allocating and faulting in fresh memory for every text). On an
    /// error `out` may hold the ids of part of the text.
    pub fn encode_into(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        with_scratch(self.tag, |scratch| match &self.pipeline {
            Some(g) if g.plain => {
                self.encode_plain_pipeline(g, text, (allowed, disallowed), scratch, out)
            }
            Some(g) => self.encode_general_pieces(
                g,
                text,
                (allowed, disallowed),
                out,
                &mut |piece, out| self.encode_piece(piece, scratch, out),
            ),
            None => self.encode_with(text, allowed, disallowed, out, &mut |text, out| {
                self.encode_pieces(text, scratch, out)
            }),
        })
    }

    /// `encode` with BPE-dropout: each candidate merge is skipped with
    /// probability `p` (0 <= p < 1). p = 0 is exactly `encode`; special tokens
    /// are never dropped. There is no whole-piece lookup on this path: it would
    /// hide the dropout for every pre-token that is itself a token.
    ///
    /// Why xoshiro256++ from `rand_xoshiro` and not a hand-rolled generator or
    /// rand's `StdRng`: it is a published, well-tested generator whose output is
    /// fixed by its definition, so a seed gives the same ids on every platform and
    /// every release (StdRng may change algorithm between rand versions), and it
    /// is fast and tiny. One stream runs through the whole text, piece by piece.
    pub fn encode_with_dropout(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        p: f64,
        seed: u64,
    ) -> Result<Vec<u32>, EncodeError> {
        if p <= 0.0 {
            return self.encode(text, allowed, disallowed);
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut out = Vec::with_capacity(text.len() / 2 + 16);
        let mut dropped = |piece: &[u8], out: &mut Vec<u32>| {
            let bounds = merge_by_rank(
                piece,
                |bytes| self.vocab.ranks.get(bytes),
                || rng.random_bool(p),
            );
            self.push_parts(piece, &bounds, out)
        };
        match &self.pipeline {
            Some(g) => {
                self.encode_general_pieces(g, text, (allowed, disallowed), &mut out, &mut dropped)?
            }
            None => self.encode_with(text, allowed, disallowed, &mut out, &mut |text, out| {
                self.pieces_into(text, out, &mut dropped)
            })?,
        }
        Ok(out)
    }

    /// Pre-tokenize `text` and encode each piece with `encode_piece`, appending
    /// to `out`; the first piece that fails is the error, after all are done.
    fn pieces_into<F>(
        &self,
        text: &str,
        out: &mut Vec<u32>,
        encode_piece: &mut F,
    ) -> Result<(), EncodeError>
    where
        F: FnMut(&[u8], &mut Vec<u32>) -> Result<(), EncodeError>,
    {
        let mut missing = None;
        self.pre.for_each_piece(text, |piece| {
            if let Err(e) = encode_piece(piece.as_bytes(), out) {
                missing.get_or_insert(e);
            }
        })?;
        missing.map_or(Ok(()), Err)
    }

    /// Matcher over a subset of the special tokens (the prebuilt one when it is all of them).
    fn matcher_for(&self, names: &[String]) -> Result<Option<Cow<'_, AhoCorasick>>, PatternError> {
        if names.is_empty() {
            return Ok(None);
        }
        if names.len() == self.specials.len() {
            return Ok(self.all_specials.as_ref().map(Cow::Borrowed));
        }
        Ok(special_matcher(names)?.map(Cow::Owned))
    }

    /// tiktoken's policy: an error for the first `disallowed` special token in `text`.
    fn check_disallowed(&self, text: &str, disallowed: &[String]) -> Result<(), EncodeError> {
        if let Some(m) = self.matcher_for(disallowed)? {
            if let Some(found) = m.find(text) {
                let token = text[found.start()..found.end()].to_string();
                return Err(EncodeError::Disallowed(DisallowedSpecial {
                    token,
                    offset: found.start(),
                }));
            }
        }
        Ok(())
    }

    /// The special-token policy of `encode`, appending to `out`; the text
    /// between special tokens is encoded by `encode_text`.
    fn encode_with<F>(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        out: &mut Vec<u32>,
        encode_text: &mut F,
    ) -> Result<(), EncodeError>
    where
        F: FnMut(&str, &mut Vec<u32>) -> Result<(), EncodeError>,
    {
        self.check_disallowed(text, disallowed)?;
        let mut start = 0;
        if let Some(m) = self.matcher_for(allowed)? {
            for found in m.find_iter(text) {
                encode_text(&text[start..found.start()], out)?;
                let token = &text[found.start()..found.end()];
                out.push(self.special_id(token).expect("matched a special token"));
                start = found.end();
            }
        }
        encode_text(&text[start..], out)
    }

    /// Append the ids of the parts of `piece` that start at `bounds` (then its end).
    fn push_parts(
        &self,
        piece: &[u8],
        bounds: &[usize],
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        for w in bounds.windows(2) {
            let part = &piece[w[0]..w[1]];
            out.push(
                self.vocab
                    .ids
                    .get(part)
                    .ok_or_else(|| EncodeError::NotInVocabulary(part.to_vec()))?,
            );
        }
        Ok(())
    }

    /// Bytes of `ids` joined; the error names the first unknown id.
    pub fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>, UnknownId> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if !self.push_token_bytes(id, &mut out) {
                return Err(UnknownId(id));
            }
        }
        Ok(out)
    }

    /// Append the bytes of token `id` (a special token gives its text) to
    /// `out`; false, with `out` unchanged, if the id is unknown.
    #[inline]
    pub fn push_token_bytes(&self, id: i64, out: &mut Vec<u8>) -> bool {
        u32::try_from(id).is_ok_and(|i| self.vocab.decoder.push(i, out))
    }
}
