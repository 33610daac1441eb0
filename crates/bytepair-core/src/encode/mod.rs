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
//! pieces go through a per-thread cache (`cache`) and a plain scan over a small
//! vector; long ones a bucket queue over ranks (`merge`), close to linear time
//! even for a 10 MB pre-token of one repeated character.
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

use crate::pretokenize::{
    special_matcher, PatternError, Pieces, PreTokenizer, Preset, SearchError,
};
use crate::shortkey::{hash_mid, load_mid, MAX_MID as MID_PIECE};
use cache::{hash_key, new_encoder_tag, with_scratch, Scratch};
use general::PipelineEncoding;
use merge::{merge_long, merge_short, LONG_PIECE};
use superwords::has_cut;
use tables::{load_key, piece_key, CACHED_PIECE, NO_ID};

pub use cache::{cache_budget, set_cache_budget, DEFAULT_CACHE_BYTES};
pub use decode::push_inline;
pub use general::Spans;
pub(crate) use merge::merge_by_rank;
pub use vocab::{specials_that_are_ordinary, VocabTables};

/// Pieces the pre-tokenizer hands over at a time (see `encode_preset_pieces`):
/// with the L2 prefetch a batch ahead, a longer batch hides more of the
/// cache's misses (256 measured a little faster than 128).
const BATCH: usize = 256;
/// How many pieces ahead of its probe a cache slot is fetched.
const PREFETCH_AHEAD: usize = 64;

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

    /// Expect to encode about `bytes` bytes of text on this thread, in one or
    /// many calls: the thread's piece cache for this encoder is sized for
    /// them now, in one step, rather than doubled as it fills (see
    /// `PieceCache::expect_text_bytes`; within the cache budget).
    /// Texts under 256 KiB return at once (the first table holds their
    /// pieces), so a call per short text costs nothing.
    pub fn expect_text_bytes(&self, bytes: usize) {
        if bytes >= 1 << 18 {
            with_scratch(self.tag, |scratch| scratch.pieces.expect_text_bytes(bytes));
        }
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

    /// Encode `text` (holding no special tokens), appending its ids to `out`.
    /// Every piece is encoded; the first that fails is the error.
    fn encode_pieces(
        &self,
        text: &str,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        match self.pre.preset() {
            Some(preset) => self.encode_preset_pieces(preset, text, scratch, out),
            None => self.pieces_into(text, out, &mut |piece, out| {
                self.encode_piece(piece, scratch, out)
            }),
        }
    }

    /// `encode_pieces` for a preset pattern, in batches of `BATCH` pieces: the
    /// pre-tokenizer fills the batch's boundaries, then every short piece's key
    /// and hash are computed and its cache slot fetched ahead (a cache of
    /// 10^5 pieces does not fit the CPU's caches), then the pieces are looked up
    /// in turn, so the loads of one batch overlap instead of waiting one by one.
    fn encode_preset_pieces(
        &self,
        preset: Preset,
        text: &str,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        let b = text.as_bytes();
        let mut bounds = [0usize; BATCH + 1];
        let mut keys = [0u128; BATCH];
        let mut hashes = [0u64; BATCH];
        let mut error = None;
        let mut pieces = Pieces::new(b, preset);
        loop {
            let n = pieces.fill(&mut bounds);
            if n == 0 {
                break;
            }
            // Keys and hashes of the pieces of up to 15 bytes (key 0 for the
            // others), their slots asked into L2 a batch ahead of the probes
            // (and into L1 a few pieces ahead, below); a piece of 16 to 31
            // bytes gets the hash of its two-part key, and its slot in that
            // cache is fetched now, a batch ahead (they are few: fetching them
            // with the short ones, 64 ahead, cost a branch per piece, which
            // showed in encoding English).
            for i in 0..n {
                let (start, len) = (bounds[i], bounds[i + 1] - bounds[i]);
                let cached = len <= CACHED_PIECE;
                keys[i] = if cached { load_key(b, start, len) } else { 0 };
                hashes[i] = hash_key(keys[i]);
                scratch.pieces.prefetch_l2(hashes[i]);
                if !cached && len <= MID_PIECE {
                    hashes[i] = hash_mid(load_mid(b, start, len));
                    scratch.mid.prefetch(hashes[i]);
                }
            }
            // Fetch the slots a few pieces ahead of their probes: far enough
            // to hide a miss to memory, few enough in flight for the CPU.
            for &hash in &hashes[..n.min(PREFETCH_AHEAD)] {
                scratch.pieces.prefetch(hash);
            }
            // Hits at home with ids inline (all but a few pieces) store four
            // lanes at a raw cursor and advance it by their count, with no
            // length update or capacity check per piece; anything else goes
            // through `out` and refreshes the cursor and the table view.
            out.reserve(4 * n);
            let mut homes = scratch.pieces.home_slots();
            let (mut w, mut dst) = (out.len(), out.as_mut_ptr());
            for i in 0..n {
                if i + PREFETCH_AHEAD < n {
                    scratch.pieces.prefetch(hashes[i + PREFETCH_AHEAD]);
                }
                let (key, hash) = (keys[i], hashes[i]);
                if key != 0 {
                    if let Some((lanes, count)) = homes.inline_ids(key, hash) {
                        // SAFETY: `out` has room for 4 more ids per piece left
                        // in the batch (reserved above and after every slow
                        // piece), so 4 fit at `w`, its length.
                        unsafe { dst.add(w).cast::<[u32; 4]>().write_unaligned(lanes) };
                        w += count;
                        continue;
                    }
                }
                // SAFETY: the first `w` ids were written (by `out` or the fast path).
                unsafe { out.set_len(w) };
                if let Err(e) = self.encode_batch_piece(b, &bounds, i, key, hash, scratch, out) {
                    error.get_or_insert(e);
                }
                out.reserve(4 * (n - i));
                (w, dst, homes) = (out.len(), out.as_mut_ptr(), scratch.pieces.home_slots());
            }
            // SAFETY: as above.
            unsafe { out.set_len(w) };
        }
        error.map_or(Ok(()), Err)
    }

    /// Piece `i` of a batch (bounds `bounds`, key `key` and hash `hash` as
    /// `encode_preset_pieces` made them) when it is not a hit at home.
    #[allow(clippy::too_many_arguments)]
    fn encode_batch_piece(
        &self,
        b: &[u8],
        bounds: &[usize],
        i: usize,
        key: u128,
        hash: u64,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        if key != 0 && scratch.pieces.push_hit(key, hash, out) {
            return Ok(());
        }
        let piece = &b[bounds[i]..bounds[i + 1]];
        match key {
            0 if piece.len() <= MID_PIECE => self.encode_mid(
                piece,
                load_mid(b, bounds[i], piece.len()),
                hash,
                scratch,
                out,
            ),
            0 => self.encode_piece(piece, scratch, out),
            key => self.encode_short_miss(piece, key, hash, scratch, out),
        }
    }

    /// Encode one pre-token, appending its ids to `out`: one or two bytes from
    /// the vocabulary's tables, others through the caches (by length: up to
    /// 15 bytes, 16 to 31, longer).
    fn encode_piece(
        &self,
        piece: &[u8],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        match piece.len() {
            0 => Ok(()),
            // Single bytes and byte pairs are array lookups: cheaper than the
            // cache, and random Latin-1 text has too many pairs for it.
            1 | 2 => match self.vocab.ids.get(piece) {
                Some(id) => {
                    out.push(id);
                    Ok(())
                }
                None => self.merge_piece(piece, scratch, out),
            },
            len if len <= CACHED_PIECE => {
                let key = piece_key(piece);
                let hash = hash_key(key);
                if scratch.pieces.push_hit(key, hash, out) {
                    return Ok(());
                }
                self.encode_short_miss(piece, key, hash, scratch, out)
            }
            len if len <= MID_PIECE => {
                let key = load_mid(piece, 0, len);
                self.encode_mid(piece, key, hash_mid(key), scratch, out)
            }
            _ => {
                if scratch.long.push_hit(piece, out) {
                    return Ok(());
                }
                let start = out.len();
                self.whole_or_merged(self.vocab.ids.get(piece), piece, scratch, out)?;
                scratch.long.insert(piece, &out[start..]);
                Ok(())
            }
        }
    }

    /// A piece of 3 to 15 bytes the cache does not hold: its id if it is a
    /// token, else the ids of merging it; then cached.
    fn encode_short_miss(
        &self,
        piece: &[u8],
        key: u128,
        hash: u64,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        let start = out.len();
        self.whole_or_merged(self.vocab.ids.get_short(key), piece, scratch, out)?;
        scratch.pieces.insert(key, hash, &out[start..]);
        Ok(())
    }

    /// A piece of 16 to 31 bytes (two-part key `key`, hash `hash`): through
    /// the cache of such pieces.
    fn encode_mid(
        &self,
        piece: &[u8],
        key: [u128; 2],
        hash: u64,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        if scratch.mid.push_hit(key, hash, out) {
            return Ok(());
        }
        let start = out.len();
        self.whole_or_merged(self.vocab.ids.get(piece), piece, scratch, out)?;
        scratch.mid.insert(key, hash, &out[start..]);
        Ok(())
    }

    /// Append `whole`, the id of `piece` as one token if it is one, or else
    /// the ids of merging it.
    #[inline]
    fn whole_or_merged(
        &self,
        whole: Option<u32>,
        piece: &[u8],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        match whole {
            Some(id) => {
                out.push(id);
                Ok(())
            }
            None => self.merge_piece(piece, scratch, out),
        }
    }

    /// Merge a piece that is not a token, appending its ids.
    fn merge_piece(
        &self,
        piece: &[u8],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        if let Some(&b) = piece
            .iter()
            .find(|&&b| self.vocab.pair_ranks.byte_ids[b as usize] == NO_ID)
        {
            return Err(EncodeError::NotInVocabulary(vec![b]));
        }
        if has_cut(piece) && piece.len() < u32::MAX as usize {
            return self.merge_words(piece, scratch, out);
        }
        if piece.len() < LONG_PIECE {
            merge_short(
                &self.vocab.pair_ranks,
                piece,
                &mut scratch.parts,
                &mut scratch.hot,
                out,
            );
        } else if piece.len() < u32::MAX as usize {
            let cancelled = CANCEL.with_borrow(|cancel| {
                !merge_long(&self.vocab.pair_ranks, piece, out, cancel.as_deref())
            });
            if cancelled {
                return Err(EncodeError::Cancelled);
            }
        } else {
            // Positions in `merge_long` are u32; a 4 GiB pre-token takes the byte-slice heap.
            let bounds = merge_by_rank(piece, |bytes| self.vocab.ranks.get(bytes), || false);
            self.push_parts(piece, &bounds, out)?;
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
