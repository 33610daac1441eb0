//! The BPE merge loop over word counts (Sennrich et al. 2016, "Neural Machine
//! Translation of Rare Words with Subword Units"), in the incremental form used
//! by production trainers (HuggingFace tokenizers, rustbpe):
//!
//! * global pair counts weighted by word frequency, kept up to date as words change;
//! * a reverse index pair -> words that contain it, so a merge visits only those words;
//! * a max-heap of (count, pair) with lazy deletion: an entry is checked against the
//!   live count when popped and pushed back with the live count if stale.
//!
//! Why lazy deletion is exact here: after the merge that creates token `N`, pairs
//! that do not involve `N` can only lose count, so every heap entry is an upper
//! bound of its live count; pairs involving `N` are brand new and are pushed once
//! with their final count at the end of the merge. The popped entry whose stored
//! count equals its live count is therefore the true maximum.
//!
//! Tie-break (DESIGN.md): highest count, then the lexicographically greatest
//! `(bytes(A), bytes(B))`, so results never depend on hash or thread order.
//!
//! Counts are u64 throughout (HF's 32-bit pair counts overflow on big corpora).

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::rc::Rc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::count::Progress;

type Pair = (u32, u32);

/// One learned merge: the two token ids, the new id, and its pair count when chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    pub left: u32,
    pub right: u32,
    pub count: u64,
}

/// Result of training: merges in rank order (merge `r` creates id `256 + r`).
pub struct Trained {
    pub merges: Vec<Merge>,
    /// True when the loop ran out of pairs before reaching the requested number.
    pub stopped_early: bool,
    /// Tokens the counted text holds after all merges (sum of count x word length).
    pub tokens: u64,
}

/// Heap entry ordered by (count, bytes of left, bytes of right).
struct Candidate {
    count: u64,
    left_bytes: Rc<[u8]>,
    right_bytes: Rc<[u8]>,
    pair: Pair,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.count
            .cmp(&other.count)
            .then_with(|| self.left_bytes.cmp(&other.left_bytes))
            .then_with(|| self.right_bytes.cmp(&other.right_bytes))
    }
}

struct Trainer {
    /// Each distinct word as a sequence of token ids.
    words: Vec<Vec<u32>>,
    freqs: Vec<u64>,
    /// Token id -> bytes (ids 0..255 are single bytes).
    token_bytes: Vec<Rc<[u8]>>,
    pair_counts: FxHashMap<Pair, u64>,
    /// Pair -> indices of words that contained it when it was counted. May hold
    /// duplicates and words that lost the pair since; the merge re-checks.
    where_pair: FxHashMap<Pair, Vec<u32>>,
    heap: BinaryHeap<Candidate>,
}

impl Trainer {
    fn new(words: Vec<Vec<u32>>, freqs: Vec<u64>) -> Self {
        let token_bytes = (0..=255u8).map(|b| Rc::from(vec![b])).collect();
        let (pair_counts, where_pair) = initial_pair_index(&words, &freqs);
        let mut t = Trainer { words, freqs, token_bytes, pair_counts, where_pair, heap: BinaryHeap::new() };
        t.rebuild_heap();
        t
    }

    fn candidate(&self, pair: Pair, count: u64) -> Candidate {
        Candidate {
            count,
            left_bytes: self.token_bytes[pair.0 as usize].clone(),
            right_bytes: self.token_bytes[pair.1 as usize].clone(),
            pair,
        }
    }

    /// Tokens in the counted text as the words stand now.
    fn token_total(&self) -> u64 {
        self.words.iter().zip(&self.freqs).map(|(w, f)| w.len() as u64 * f).sum()
    }

    /// Compaction: rebuild the heap from the live counts, dropping stale entries.
    fn rebuild_heap(&mut self) {
        let entries: Vec<Candidate> = self
            .pair_counts
            .iter()
            .filter(|(_, &c)| c > 0)
            .map(|(&p, &c)| self.candidate(p, c))
            .collect();
        self.heap = BinaryHeap::from(entries);
    }

    /// Pop the best pair with a positive live count, or None when none is left.
    fn pop_best(&mut self) -> Option<(Pair, u64)> {
        while let Some(top) = self.heap.pop() {
            let live = self.pair_counts.get(&top.pair).copied().unwrap_or(0);
            if live == top.count {
                return Some((top.pair, live));
            }
            if live > 0 {
                self.heap.push(self.candidate(top.pair, live));
            }
        }
        None
    }

    /// Apply merge `pair -> new_id` to every word that has it, updating pair
    /// counts and the reverse index in place, then push the new pairs on the heap.
    fn apply_merge(&mut self, pair: Pair, new_id: u32) {
        let mut word_ids = self.where_pair.remove(&pair).unwrap_or_default();
        word_ids.sort_unstable();
        word_ids.dedup();
        let Trainer { words, freqs, pair_counts, where_pair, .. } = self;
        let mut new_pairs: Vec<Pair> = Vec::new();
        for &wi in &word_ids {
            let freq = freqs[wi as usize];
            merge_in_word(&mut words[wi as usize], pair, new_id, |p, d| {
                if p == pair {
                    // The merged pair is dropped whole below; no need to count it down.
                } else if d > 0 {
                    *pair_counts.entry(p).or_insert(0) += freq;
                    let list = where_pair.entry(p).or_default();
                    if list.last() != Some(&wi) {
                        list.push(wi);
                    }
                    new_pairs.push(p);
                } else {
                    // Every decrement removes an occurrence that was counted, so no underflow.
                    let c = pair_counts.get_mut(&p).expect("a pair in a word is counted");
                    *c -= freq;
                    if *c == 0 {
                        pair_counts.remove(&p);
                    }
                }
            });
        }
        pair_counts.remove(&pair);
        new_pairs.sort_unstable();
        new_pairs.dedup();
        for p in new_pairs {
            if let Some(&c) = self.pair_counts.get(&p) {
                let cand = self.candidate(p, c);
                self.heap.push(cand);
            }
        }
    }
}

/// Merge every occurrence of `pair` in `word`, left to right (`A A A` -> `AA A`),
/// reporting each pair-count change at the seams to `delta(pair, +1 | -1)`.
pub fn merge_in_word(word: &mut Vec<u32>, pair: Pair, new_id: u32, mut delta: impl FnMut(Pair, i64)) {
    let (a, b) = pair;
    let n = word.len();
    let (mut read, mut write) = (0, 0);
    while read < n {
        if read + 1 < n && word[read] == a && word[read + 1] == b {
            if write > 0 {
                let x = word[write - 1];
                delta((x, a), -1);
                delta((x, new_id), 1);
            }
            if read + 2 < n {
                let y = word[read + 2];
                delta((b, y), -1);
                delta((new_id, y), 1);
            }
            delta((a, b), -1);
            word[write] = new_id;
            read += 2;
        } else {
            word[write] = word[read];
            read += 1;
        }
        write += 1;
    }
    word.truncate(write);
}

/// Pair counts and reverse index of the initial words, built in parallel.
fn initial_pair_index(words: &[Vec<u32>], freqs: &[u64]) -> (FxHashMap<Pair, u64>, FxHashMap<Pair, Vec<u32>>) {
    let per_thread = words
        .par_iter()
        .enumerate()
        .fold(
            || (FxHashMap::<Pair, u64>::default(), FxHashMap::<Pair, Vec<u32>>::default()),
            |(mut counts, mut index), (i, w)| {
                for p in w.windows(2) {
                    let p = (p[0], p[1]);
                    *counts.entry(p).or_insert(0) += freqs[i];
                    let list = index.entry(p).or_default();
                    if list.last() != Some(&(i as u32)) {
                        list.push(i as u32);
                    }
                }
                (counts, index)
            },
        )
        .collect::<Vec<_>>();
    let mut counts = FxHashMap::default();
    let mut index: FxHashMap<Pair, Vec<u32>> = FxHashMap::default();
    for (c, ix) in per_thread {
        for (p, n) in c {
            *counts.entry(p).or_insert(0) += n;
        }
        for (p, list) in ix {
            index.entry(p).or_default().extend(list);
        }
    }
    (counts, index)
}

/// Learn up to `num_merges` merges from `(word bytes, count)` pairs.
///
/// Words of one byte carry no pair and are skipped. `progress.done` counts merges.
/// Returns None if cancelled through `progress`.
pub fn train(word_counts: Vec<(Vec<u8>, u64)>, num_merges: usize, progress: &Progress) -> Option<Trained> {
    let single_byte_tokens: u64 = word_counts.iter().filter(|(w, _)| w.len() == 1).map(|(_, c)| c).sum();
    let (words, freqs): (Vec<Vec<u32>>, Vec<u64>) = word_counts
        .into_iter()
        .filter(|(w, c)| w.len() >= 2 && *c > 0)
        .map(|(w, c)| (w.into_iter().map(u32::from).collect(), c))
        .unzip();
    let mut t = Trainer::new(words, freqs);
    let mut merges = Vec::with_capacity(num_merges);
    while merges.len() < num_merges {
        if progress.is_cancelled() {
            return None;
        }
        let Some((pair, count)) = t.pop_best() else {
            let tokens = single_byte_tokens + t.token_total();
            return Some(Trained { merges, stopped_early: true, tokens });
        };
        let new_id = 256 + merges.len() as u32;
        let bytes: Vec<u8> = [&t.token_bytes[pair.0 as usize][..], &t.token_bytes[pair.1 as usize][..]].concat();
        t.token_bytes.push(Rc::from(bytes));
        t.apply_merge(pair, new_id);
        merges.push(Merge { left: pair.0, right: pair.1, count });
        progress.add(1);
        // Compaction keeps the heap within a small factor of the live pairs.
        if t.heap.len() > 4 * t.pair_counts.len() + 1024 {
            t.rebuild_heap();
        }
    }
    let tokens = single_byte_tokens + t.token_total();
    Some(Trained { merges, stopped_early: false, tokens })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learn(words: &[(&str, u64)], n: usize) -> Vec<String> {
        let wc = words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect();
        let t = train(wc, n, &Progress::default()).unwrap();
        let mut bytes: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut out = vec![];
        for m in t.merges {
            let nb = [bytes[m.left as usize].clone(), bytes[m.right as usize].clone()].concat();
            out.push(String::from_utf8(nb.clone()).unwrap());
            bytes.push(nb);
        }
        out
    }

    #[test]
    fn hugging_face_course_example() {
        let got = learn(&[("hug", 10), ("pug", 5), ("pun", 12), ("bun", 4), ("hugs", 5)], 4);
        assert_eq!(got, ["ug", "un", "hug", "pun"]);
    }

    #[test]
    fn overlapping_pairs_merge_left_to_right() {
        let mut w = vec![1, 1, 1];
        let mut d = vec![];
        merge_in_word(&mut w, (1, 1), 9, |p, x| d.push((p, x)));
        assert_eq!(w, [9, 1]);
        let net = |p: Pair| d.iter().filter(|(q, _)| *q == p).map(|(_, x)| x).sum::<i64>();
        assert_eq!(net((1, 1)), -2);
        assert_eq!(net((9, 1)), 1);
    }

    #[test]
    fn stops_early_when_no_pair_is_left() {
        let t = train(vec![(b"ab".to_vec(), 3)], 10, &Progress::default()).unwrap();
        assert_eq!(t.merges.len(), 1);
        assert!(t.stopped_early);
    }
}
