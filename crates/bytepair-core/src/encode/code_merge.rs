//! BPE over part codes (`PairRanks`) in a linked list, candidates in a
//! min-heap keyed (rank, position), stale entries skipped when popped: plain
//! rank-ordered BPE, with reused buffers. The word-by-word merge
//! (`superwords`) runs it across the cuts of a piece, under a `Guard`, and
//! on whole pieces and tokens.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::cache::HotPairs;
use super::superwords::{pair_rank, Guard, UNREACHABLE};
use super::tables::{PairRanks, NO_ID, NO_RANK};

/// BPE over part codes in a linked list, candidates in a min-heap keyed
/// (rank, position), stale entries skipped when popped: plain BPE order.
#[derive(Default)]
pub(super) struct CodeMerge {
    pub(super) codes: Vec<u32>,
    pub(super) next: Vec<u32>,
    pub(super) prev: Vec<u32>,
    ranks: Vec<u32>,
    heap: BinaryHeap<Reverse<u64>>,
}

impl CodeMerge {
    /// Start over with these parts.
    pub(super) fn load(&mut self, codes: impl Iterator<Item = u32>) {
        self.codes.clear();
        self.codes.extend(codes);
        let n = self.codes.len() as u32;
        self.next.clear();
        self.next.extend(1..=n);
        self.prev.clear();
        self.prev.extend((0..n).map(|i| i.wrapping_sub(1)));
        self.ranks.clear();
        self.ranks.resize(n as usize, NO_RANK);
        self.heap.clear();
    }

    /// Merge until no pair has a rank, starting from the pairs at
    /// `candidates` (the others must have none). Returns 1 + the highest
    /// rank merged (0: none), or None when `guard` refuses a merge.
    pub(super) fn run(
        &mut self,
        table: &PairRanks,
        hot: &mut HotPairs,
        candidates: impl Iterator<Item = usize>,
        guard: Option<&Guard<'_>>,
    ) -> Option<u32> {
        for pos in candidates {
            self.set_rank(table, hot, pos);
        }
        let mut deepest = 0;
        while let Some(Reverse(k)) = self.heap.pop() {
            let (rank, p) = ((k >> 32) as u32, k as u32 as usize);
            if self.codes[p] == NO_ID || self.ranks[p] != rank {
                continue; // stale
            }
            deepest = deepest.max(rank + 1);
            if let Some(guard) = guard {
                let after = self.next[self.next[p] as usize] as usize;
                if !guard.allows(self, table, hot, p, after, rank) {
                    return None;
                }
            }
            self.merge_at(table, hot, p, rank);
        }
        Some(deepest)
    }

    /// Look up the rank of the pair starting at part `pos` and queue it.
    /// Merge the part at `p` with the next one into the token of `rank`, and
    /// give the new part and the one before it their pairs' ranks.
    #[inline]
    fn merge_at(&mut self, table: &PairRanks, hot: &mut HotPairs, p: usize, rank: u32) {
        let right = self.next[p] as usize;
        let after = self.next[right] as usize;
        let n = self.codes.len();
        self.codes[p] = 256 + rank;
        self.codes[right] = NO_ID;
        self.ranks[right] = NO_RANK;
        self.next[p] = after as u32;
        if after < n {
            self.prev[after] = p as u32;
        }
        self.set_rank(table, hot, p);
        if p > 0 {
            let before = self.prev[p] as usize;
            self.set_rank(table, hot, before);
        }
    }

    fn set_rank(&mut self, table: &PairRanks, hot: &mut HotPairs, pos: usize) {
        let after = self.next[pos] as usize;
        let rank = match self.codes.get(after) {
            Some(&right) => pair_rank(table, hot, self.codes[pos], right),
            None => NO_RANK,
        };
        self.ranks[pos] = rank;
        if rank != NO_RANK {
            self.heap.push(Reverse(u64::from(rank) << 32 | pos as u64));
        }
    }

    pub(super) fn ids_into(&self, table: &PairRanks, out: &mut Vec<u32>) {
        let mut i = 0;
        while i < self.codes.len() {
            out.push(table.id(self.codes[i]));
            i = self.next[i] as usize;
        }
    }

    /// BPE of the token `bytes` (part code `code`): its `Seams::depth` and
    /// the parts of the last merge, or UNREACHABLE and (NO_ID, NO_ID) when
    /// BPE makes something else of its bytes.
    pub(super) fn bpe_of(
        &mut self,
        table: &PairRanks,
        hot: &mut HotPairs,
        bytes: &[u8],
        code: u32,
    ) -> (u32, (u32, u32)) {
        let unreachable = (UNREACHABLE, (NO_ID, NO_ID));
        if bytes.len() < 2 || bytes.iter().any(|&b| table.byte_ids[b as usize] == NO_ID) {
            return unreachable;
        }
        self.load(bytes.iter().map(|&b| u32::from(b)));
        // Stop before the last merge to read its parts.
        let deepest = self.run_until_two(table, hot, bytes.len());
        let second = self.next[0] as usize;
        if second >= bytes.len() {
            return unreachable;
        }
        let (first, last) = (self.codes[0], self.codes[second]);
        if self.next[second] as usize != bytes.len()
            || pair_rank(table, hot, first, last) != code - 256
        {
            return unreachable;
        }
        (deepest.max(code - 256 + 1), (first, last))
    }

    /// `run` over every pair of a token's bytes, stopped when two parts are
    /// left (or none merges); returns 1 + the highest rank merged.
    fn run_until_two(&mut self, table: &PairRanks, hot: &mut HotPairs, n: usize) -> u32 {
        for pos in 0..n {
            self.set_rank(table, hot, pos);
        }
        let mut parts = n;
        let mut deepest = 0;
        while parts > 2 {
            let Some(Reverse(k)) = self.heap.pop() else {
                break;
            };
            let (rank, p) = ((k >> 32) as u32, k as u32 as usize);
            if self.codes[p] == NO_ID || self.ranks[p] != rank {
                continue;
            }
            deepest = deepest.max(rank + 1);
            self.merge_at(table, hot, p, rank);
            parts -= 1;
        }
        deepest
    }
}
