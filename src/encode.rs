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

use std::cmp::Reverse;
use std::borrow::Cow;
use std::collections::BinaryHeap;

use aho_corasick::AhoCorasick;
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

pub struct Encoder {
    /// Token bytes -> id.
    ids: FxHashMap<Vec<u8>, u32>,
    /// Bytes of a merged token -> merge rank (lower merges first).
    ranks: FxHashMap<Vec<u8>, u32>,
    /// Id -> bytes, for decoding (special tokens included).
    decoder: FxHashMap<u32, Vec<u8>>,
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
        let mut decoder = FxHashMap::default();
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
        let mut missing = None;
        self.pre.for_each_piece(text, |piece| {
            if let Err(e) = self.encode_piece(piece.as_bytes(), out) {
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
                self.encode_ordinary_into(&text[start..found.start()], &mut out).map_err(EncodeError::Other)?;
                let token = &text[found.start()..found.end()];
                out.push(self.special_id(token).expect("matched a special token"));
                start = found.end();
            }
        }
        self.encode_ordinary_into(&text[start..], &mut out).map_err(EncodeError::Other)?;
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
        let n = piece.len();
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
        while let Some(Reverse((_, left, right_end))) = heap.pop() {
            // Stale unless the left part is alive and its right neighbour still ends at right_end.
            let mid = end[left];
            if !alive[left] || mid >= n || end[mid] != right_end {
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
            let bytes = u32::try_from(id).ok().and_then(|i| self.decoder.get(&i)).ok_or(id)?;
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
    fn special_tokens_follow_policy() {
        let e = toy();
        let all = vec!["<|e|>".to_string()];
        let err = e.encode("x<|e|>", &[], &all);
        assert!(matches!(err, Err(EncodeError::Disallowed(DisallowedSpecial { offset: 1, .. }))));
        assert!(e.encode("<|e|>", &[], &[]).unwrap().len() > 1);
        assert_eq!(e.encode("abc<|e|>", &all, &[]).unwrap(), [257, 258]);
    }
}
