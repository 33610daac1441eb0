//! Encoding: special tokens, pre-tokenization, then rank-ordered merges inside
//! each pre-token, with tiktoken's semantics so ids equal tiktoken's on any input.
//!
//! Within a pre-token, the pair of adjacent parts whose concatenated bytes have the
//! lowest rank merges first (ties: the leftmost), until no adjacent pair is a
//! ranked token. Short pieces use a plain scan over a small vector (no heap, no
//! allocation beyond it: faster below a few dozen bytes, as tiktoken notes); long
//! pieces use a linked list with a min-heap keyed on (rank, position), O(L log L),
//! so a 1 MB pre-token without spaces is fine. A pre-token that is itself a token
//! is looked up whole.
//!
//! BPE-dropout (Provilkov et al., 2020, "BPE-Dropout: Simple and Effective Subword
//! Regularization") is a separate path, `encode_with_dropout`: at every merge step
//! each candidate merge is skipped with probability p, and the lowest-rank one not
//! skipped is applied; when every candidate is skipped the piece is done.

use std::cmp::Reverse;
use std::borrow::Cow;
use std::collections::BinaryHeap;

use aho_corasick::AhoCorasick;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;

use crate::pretokenize::{special_matcher, PreTokenizer};

/// Below this many bytes a piece is merged with the quadratic scan.
const HEAP_THRESHOLD: usize = 128;

/// A special-token string found where it is not allowed.
#[derive(Debug)]
pub struct DisallowedSpecial {
    pub token: String,
    /// Byte offset in the UTF-8 text.
    pub offset: usize,
}

/// Id -> bytes for decoding: a dense table (one index per id, no hashing) for
/// ids up to twice the number of tokens, a map for the rare ids beyond (e.g. a
/// special token placed at 2**31), so a sparse layout cannot blow up memory.
struct Decoder {
    dense: Vec<Option<Box<[u8]>>>,
    sparse: FxHashMap<u32, Box<[u8]>>,
}

impl Decoder {
    fn new(tokens: FxHashMap<u32, Vec<u8>>) -> Self {
        let limit = 2 * tokens.len() + 1024;
        let mut dense: Vec<Option<Box<[u8]>>> = Vec::new();
        let mut sparse = FxHashMap::default();
        for (id, bytes) in tokens {
            let i = id as usize;
            if i < limit {
                if dense.len() <= i {
                    dense.resize(i + 1, None);
                }
                dense[i] = Some(bytes.into_boxed_slice());
            } else {
                sparse.insert(id, bytes.into_boxed_slice());
            }
        }
        Decoder { dense, sparse }
    }

    #[inline]
    fn get(&self, id: u32) -> Option<&[u8]> {
        match self.dense.get(id as usize) {
            Some(entry) => entry.as_deref(),
            None => self.sparse.get(&id).map(|b| &**b),
        }
    }
}

pub struct Encoder {
    /// Token bytes -> id.
    ids: FxHashMap<Vec<u8>, u32>,
    /// Bytes of a merged token -> merge rank (lower merges first).
    ranks: FxHashMap<Vec<u8>, u32>,
    /// Id -> bytes, for decoding (special tokens included).
    decoder: Decoder,
    /// Special-token string -> id, in the order given.
    specials: Vec<(String, u32)>,
    all_specials: Option<AhoCorasick>,
    pre: PreTokenizer,
}

impl Encoder {
    /// `tokens`: every (bytes, id) of the vocabulary except special tokens;
    /// `merged`: bytes of each merge result in rank order.
    pub fn new(
        tokens: Vec<(Vec<u8>, u32)>,
        merged: Vec<Vec<u8>>,
        specials: Vec<(String, u32)>,
        pattern: &str,
    ) -> Result<Self, String> {
        let mut decoder: FxHashMap<u32, Vec<u8>> = FxHashMap::default();
        let mut ids = FxHashMap::default();
        for (bytes, id) in tokens {
            if decoder.insert(id, bytes.clone()).is_some() {
                return Err(format!("duplicate token id {id}"));
            }
            ids.entry(bytes).or_insert(id);
        }
        let mut ranks = FxHashMap::default();
        for (rank, bytes) in merged.into_iter().enumerate() {
            ranks.entry(bytes).or_insert(rank as u32);
        }
        for (s, id) in &specials {
            decoder.insert(*id, s.as_bytes().to_vec());
        }
        let names: Vec<String> = specials.iter().map(|(s, _)| s.clone()).collect();
        // Specials are split by encode itself, so the pre-tokenizer gets none.
        let pre = PreTokenizer::new(pattern, &[])?;
        let decoder = Decoder::new(decoder);
        Ok(Encoder { ids, ranks, decoder, all_specials: special_matcher(&names)?, specials, pre })
    }

    pub fn pre_tokenizer(&self) -> &PreTokenizer {
        &self.pre
    }

    pub fn special_id(&self, token: &str) -> Option<u32> {
        self.specials.iter().find(|(s, _)| s == token).map(|(_, id)| *id)
    }

    /// Encode text holding no special tokens, appending ids to `out`.
    pub fn encode_ordinary_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        self.pieces_into(text, out, &mut |piece, out| self.encode_piece(piece, out))
    }

    /// Pre-tokenize `text` and encode each piece with `encode_piece`, appending to `out`.
    fn pieces_into<F>(&self, text: &str, out: &mut Vec<u32>, encode_piece: &mut F) -> Result<(), String>
    where
        F: FnMut(&[u8], &mut Vec<u32>) -> Result<(), String>,
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
    fn matcher_for(&self, names: &[String]) -> Result<Option<Cow<'_, AhoCorasick>>, String> {
        if names.is_empty() {
            return Ok(None);
        }
        if names.len() == self.specials.len() {
            return Ok(self.all_specials.as_ref().map(Cow::Borrowed));
        }
        Ok(special_matcher(names)?.map(Cow::Owned))
    }

    /// Encode with tiktoken's special-token semantics: fail on the first
    /// `disallowed` special-token string in the text, then emit `allowed` ones as
    /// their ids (longest match first) and encode everything else as text.
    /// Both lists name special tokens of this encoder, without duplicates.
    pub fn encode(&self, text: &str, allowed: &[String], disallowed: &[String]) -> Result<Vec<u32>, EncodeError> {
        self.encode_with(text, allowed, disallowed, &mut |piece, out| self.encode_piece(piece, out))
    }

    /// `encode` with BPE-dropout: each candidate merge is skipped with
    /// probability `p` (0 <= p < 1). p = 0 is exactly `encode`; special tokens
    /// are never dropped.
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
        self.encode_with(text, allowed, disallowed, &mut |piece, out| {
            for w in self.merge_dropout(piece, p, &mut rng).windows(2) {
                out.push(self.id_of(&piece[w[0]..w[1]])?);
            }
            Ok(())
        })
    }

    /// The special-token policy of `encode`, with pieces encoded by `encode_piece`.
    fn encode_with<F>(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        encode_piece: &mut F,
    ) -> Result<Vec<u32>, EncodeError>
    where
        F: FnMut(&[u8], &mut Vec<u32>) -> Result<(), String>,
    {
        let mut out = Vec::with_capacity(text.len() / 4);
        if let Some(m) = self.matcher_for(disallowed).map_err(EncodeError::Other)? {
            if let Some(found) = m.find(text) {
                let token = text[found.start()..found.end()].to_string();
                return Err(EncodeError::Disallowed(DisallowedSpecial { token, offset: found.start() }));
            }
        }
        let mut start = 0;
        if let Some(m) = self.matcher_for(allowed).map_err(EncodeError::Other)? {
            for found in m.find_iter(text) {
                self.pieces_into(&text[start..found.start()], &mut out, encode_piece).map_err(EncodeError::Other)?;
                let token = &text[found.start()..found.end()];
                out.push(self.special_id(token).expect("matched a special token"));
                start = found.end();
            }
        }
        self.pieces_into(&text[start..], &mut out, encode_piece).map_err(EncodeError::Other)?;
        Ok(out)
    }

    fn id_of(&self, bytes: &[u8]) -> Result<u32, String> {
        self.ids.get(bytes).copied().ok_or_else(|| format!("bytes {bytes:?} are not in the vocabulary"))
    }

    /// Encode one pre-token.
    pub fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) -> Result<(), String> {
        if let Some(&id) = self.ids.get(piece) {
            out.push(id);
            return Ok(());
        }
        let bounds = if piece.len() < HEAP_THRESHOLD { self.merge_scan(piece) } else { self.merge_heap(piece) };
        for w in bounds.windows(2) {
            out.push(self.id_of(&piece[w[0]..w[1]])?);
        }
        Ok(())
    }

    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).copied().unwrap_or(u32::MAX)
    }

    /// Part boundaries after merging, by repeated scan for the lowest rank.
    fn merge_scan(&self, piece: &[u8]) -> Vec<usize> {
        // bounds[i]..bounds[i+1] is part i; pair_rank[i] ranks parts i and i+1.
        let mut bounds: Vec<usize> = (0..=piece.len()).collect();
        let mut pair_rank: Vec<u32> = (0..piece.len().saturating_sub(1)).map(|i| self.rank(&piece[i..i + 2])).collect();
        loop {
            let Some((i, &r)) = pair_rank.iter().enumerate().min_by_key(|&(i, &r)| (r, i)) else { break };
            if r == u32::MAX {
                break;
            }
            bounds.remove(i + 1);
            pair_rank.remove(i);
            if i > 0 {
                pair_rank[i - 1] = self.rank(&piece[bounds[i - 1]..bounds[i + 1]]);
            }
            if i + 2 < bounds.len() {
                pair_rank[i] = self.rank(&piece[bounds[i]..bounds[i + 2]]);
            }
        }
        bounds
    }

    /// Part boundaries after merging, with a linked list and a lazy min-heap.
    fn merge_heap(&self, piece: &[u8]) -> Vec<usize> {
        self.merge_heap_skipping(piece, || false)
    }

    /// Part boundaries after merging with BPE-dropout: each live candidate popped
    /// from the heap is skipped with probability `p`. There is no whole-piece
    /// lookup on this path: it would hide the dropout for every pre-token that is
    /// itself a token.
    fn merge_dropout(&self, piece: &[u8], p: f64, rng: &mut impl Rng) -> Vec<usize> {
        self.merge_heap_skipping(piece, || rng.random_bool(p))
    }

    /// The heap merge, asking `skip()` about every live candidate before applying
    /// it. Skipped candidates are set aside and return to the heap after the next
    /// merge (a new step draws afresh for every candidate); when the heap runs dry
    /// with only skipped ones left, every candidate of the step was dropped and the
    /// piece is done. Stale entries are never drawn for, so `skip` sees live
    /// candidates only.
    fn merge_heap_skipping(&self, piece: &[u8], mut skip: impl FnMut() -> bool) -> Vec<usize> {
        let n = piece.len();
        if n < 2 {
            return (0..=n).collect();
        }
        // Part starting at byte i: ends at end[i]; the previous part starts at prev[i].
        let mut end: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap: BinaryHeap<Reverse<(u32, usize, usize)>> = BinaryHeap::new();
        for i in 0..n - 1 {
            let r = self.rank(&piece[i..i + 2]);
            if r != u32::MAX {
                heap.push(Reverse((r, i, i + 2)));
            }
        }
        let mut skipped: Vec<Reverse<(u32, usize, usize)>> = Vec::new();
        while let Some(entry) = heap.pop() {
            let Reverse((_, left, right_end)) = entry;
            // Stale unless the left part is alive and its right neighbour still ends at right_end.
            let mid = end[left];
            if !alive[left] || mid >= n || end[mid] != right_end {
                continue;
            }
            if skip() {
                skipped.push(entry);
                continue;
            }
            alive[mid] = false;
            end[left] = right_end;
            if right_end < n {
                prev[right_end] = left;
                let r = self.rank(&piece[left..end[right_end]]);
                if r != u32::MAX {
                    heap.push(Reverse((r, left, end[right_end])));
                }
            }
            if left > 0 {
                let p = prev[left];
                let r = self.rank(&piece[p..right_end]);
                if r != u32::MAX {
                    heap.push(Reverse((r, p, right_end)));
                }
            }
            heap.extend(skipped.drain(..));
        }
        let mut bounds = Vec::new();
        let mut i = 0;
        while i < n {
            bounds.push(i);
            i = end[i];
        }
        bounds.push(n);
        bounds
    }

    /// Bytes of `ids` joined; error names the first unknown id.
    pub fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>, i64> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let bytes = u32::try_from(id).ok().and_then(|i| self.decoder.get(i)).ok_or(id)?;
            out.extend_from_slice(bytes);
        }
        Ok(out)
    }
}

#[derive(Debug)]
pub enum EncodeError {
    Disallowed(DisallowedSpecial),
    Other(String),
}

impl EncodeError {
    /// The same error for a text that starts `offset` bytes later in a longer one.
    pub fn shifted(self, offset: usize) -> Self {
        match self {
            EncodeError::Disallowed(d) => EncodeError::Disallowed(DisallowedSpecial { offset: d.offset + offset, ..d }),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Encoder {
        // merges: (a,b)->ab rank0, (ab,c)->abc rank1
        let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        tokens.push((b"ab".to_vec(), 256));
        tokens.push((b"abc".to_vec(), 257));
        Encoder::new(tokens, vec![b"ab".to_vec(), b"abc".to_vec()], vec![("<|e|>".into(), 258)], "gpt2").unwrap()
    }

    #[test]
    fn scan_and_heap_agree() {
        let e = toy();
        let piece: Vec<u8> = b"abcabxababcab".iter().cycle().take(1000).copied().collect();
        assert_eq!(e.merge_scan(&piece), e.merge_heap(&piece));
    }

    #[test]
    fn dropout_zero_is_encode_and_any_p_round_trips() {
        let e = toy();
        let text = "abcab abc<|e|>xabcabcab";
        let all = vec!["<|e|>".to_string()];
        let plain = e.encode(text, &all, &[]).unwrap();
        assert_eq!(e.encode_with_dropout(text, &all, &[], 0.0, 7).unwrap(), plain);
        for (p, seed) in [(0.1, 1), (0.5, 2), (0.99, 3)] {
            let ids = e.encode_with_dropout(text, &all, &[], p, seed).unwrap();
            let ids64: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
            assert_eq!(e.decode_bytes(&ids64).unwrap(), text.as_bytes());
            assert_eq!(e.encode_with_dropout(text, &all, &[], p, seed).unwrap(), ids);
            assert!(ids.len() >= plain.len());
        }
    }

    #[test]
    fn dropout_near_one_leaves_bytes_and_small_p_matches_heap_mostly() {
        let e = toy();
        let piece: Vec<u8> = b"abcab".iter().cycle().take(500).copied().collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        // p close to 1: almost every merge is dropped
        let bounds = e.merge_dropout(&piece, 0.999, &mut rng);
        assert!(bounds.len() > 450);
        // p tiny: the same parts as the deterministic merge
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        assert_eq!(e.merge_dropout(&piece, 1e-12, &mut rng), e.merge_heap(&piece));
    }

    #[test]
    fn special_tokens_follow_policy() {
        let e = toy();
        let all = vec!["<|e|>".to_string()];
        let err = e.encode("x<|e|>", &[], &all);
        assert!(matches!(err, Err(EncodeError::Disallowed(DisallowedSpecial { offset: 1, .. }))));
        assert!(e.encode("<|e|>", &[], &[]).unwrap().len() > 1);
        assert_eq!(e.encode("abc<|e|>", &all, &[]).unwrap(), [257, 258]);
    }
}

/// Recover a merge table from tokens in rank order (tiktoken's `mergeable_ranks`
/// without the single bytes, sorted by rank): token `r` must be the merge of the
/// two parts that BPE leaves of its bytes when only tokens `0..r` may be formed.
///
/// Returns, for each token, the byte length of the left part of its merge, or
/// `None` when that BPE leaves one part (an earlier token has the same bytes) or
/// more than two (no merge of lower-ranked tokens reaches it): such a table is not
/// one a BPE trainer produces, and rank-ordered encoding cannot tell its merges.
/// The same check tells whether a merge list `(a, b)` in rank order is consistent
/// with rank-of-concatenation encoding: `result[r] == Some(a.len())` for every `r`.
/// Single-byte tokens give `None`. Each token costs O(L^2) for L bytes (L <= a few
/// hundred in real tables); tokens are checked in parallel.
pub fn recover_merges(merged: &[Vec<u8>]) -> Vec<Option<usize>> {
    use rayon::prelude::*;

    let mut ranks: FxHashMap<&[u8], u32> = FxHashMap::default();
    for (r, token) in merged.iter().enumerate() {
        ranks.entry(token.as_slice()).or_insert(r as u32);
    }
    merged.par_iter().enumerate().map(|(r, token)| split_below(&ranks, token, r as u32)).collect()
}

/// Run BPE on `token` with the ranks below `limit`; the left part's length if it
/// ends in exactly two parts.
fn split_below(ranks: &FxHashMap<&[u8], u32>, token: &[u8], limit: u32) -> Option<usize> {
    if token.len() < 2 {
        return None;
    }
    let rank = |bytes: &[u8]| ranks.get(bytes).copied().filter(|&r| r < limit).unwrap_or(u32::MAX);
    let mut bounds: Vec<usize> = (0..=token.len()).collect();
    let mut pair_rank: Vec<u32> = (0..token.len() - 1).map(|i| rank(&token[i..i + 2])).collect();
    while let Some((i, &r)) = pair_rank.iter().enumerate().min_by_key(|&(i, &r)| (r, i)) {
        if r == u32::MAX {
            break;
        }
        bounds.remove(i + 1);
        pair_rank.remove(i);
        if i > 0 {
            pair_rank[i - 1] = rank(&token[bounds[i - 1]..bounds[i + 1]]);
        }
        if i + 2 < bounds.len() {
            pair_rank[i] = rank(&token[bounds[i]..bounds[i + 2]]);
        }
    }
    (bounds.len() == 3).then(|| bounds[1])
}

#[cfg(test)]
mod recover_tests {
    use super::recover_merges;

    fn run(tokens: &[&[u8]]) -> Vec<Option<usize>> {
        recover_merges(&tokens.iter().map(|t| t.to_vec()).collect::<Vec<_>>())
    }

    #[test]
    fn recovers_the_split_that_lower_ranks_give() {
        // "abc": ab (rank 0) merges before bc (rank 1), so abc = ab + c.
        assert_eq!(run(&[b"ab", b"bc", b"abc"]), [Some(1), Some(1), Some(2)]);
        // With bc first, abc = a + bc.
        assert_eq!(run(&[b"bc", b"ab", b"abc"]), [Some(1), Some(1), Some(1)]);
        // Runs of one byte merge left to right: aaa = aa + a; aaaa = aa + aa.
        assert_eq!(run(&[b"aa", b"aaa", b"aaaa"]), [Some(1), Some(2), Some(2)]);
    }

    #[test]
    fn rejects_unreachable_and_duplicate_tokens() {
        // abc with no two-byte token below it: three parts.
        assert_eq!(run(&[b"abc", b"ab"]), [None, Some(1)]);
        // The same bytes twice: the second is formed whole by the first.
        assert_eq!(run(&[b"ab", b"ab"]), [Some(1), None]);
        // A single byte is not a merge.
        assert_eq!(run(&[b"a"]), [None]);
    }
}
