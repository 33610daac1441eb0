//! The queue of candidate pairs: a max-heap with lazy deletion of the pairs
//! counted at least `Trainer::threshold` (a power of two), and below it the
//! pairs waiting in one bucket per power of two (see the module docs of
//! `train` for why lazy deletion is exact and why the buckets).

use std::cmp::Ordering as CmpOrdering;

use super::words::Symbol;
use super::{Pair, TokenPrefix, Trainer};

/// Heap entry: a pair, its count, and an integer key that orders pairs like
/// (count, bytes of left, bytes of right) wherever it can tell them apart.
///
/// Key = (count, prefix(left), len(left), prefix(right), len(right)), where the
/// right part is zeroed when the left is longer than 8 bytes. If two keys
/// differ, the pairs compare the same way by bytes: a zero-padded prefix orders
/// like the bytes, and equal prefixes with different lengths (both <= 8, or one
/// longer) mean the shorter token is a prefix of the longer one. Equal keys are
/// ties that `pop_best` settles with the full bytes. Integers only: comparisons
/// in the heap never dereference token bytes.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Candidate {
    count: u64,
    left_prefix: u64,
    left_len: u8,
    right_prefix: u64,
    right_len: u8,
    pair: Pair,
}

impl Candidate {
    fn same_key(&self, other: &Candidate) -> bool {
        (
            self.count,
            self.left_prefix,
            self.left_len,
            self.right_prefix,
            self.right_len,
        ) == (
            other.count,
            other.left_prefix,
            other.left_len,
            other.right_prefix,
            other.right_len,
        )
    }
}

impl<S: Symbol> Trainer<S> {
    pub(super) fn candidate(&self, pair: Pair, count: u64) -> Candidate {
        let left = self.token_prefix[pair.0 as usize];
        let right = if left.len <= 8 {
            self.token_prefix[pair.1 as usize]
        } else {
            TokenPrefix { prefix: 0, len: 0 }
        };
        Candidate {
            count,
            left_prefix: left.prefix,
            left_len: left.len,
            right_prefix: right.prefix,
            right_len: right.len,
            pair,
        }
    }

    /// Order of two pairs by (bytes of left, bytes of right): the tie-break.
    pub(super) fn byte_order(&self, p: Pair, q: Pair) -> CmpOrdering {
        let bytes = |x: u32| &self.token_bytes[x as usize][..];
        (bytes(p.0), bytes(p.1)).cmp(&(bytes(q.0), bytes(q.1)))
    }

    /// Compaction: queue every pair afresh with its live count, dropping stale
    /// heap entries and waiting pairs.
    pub(super) fn rebuild_queue(&mut self) {
        self.heap.clear();
        self.waiting.iter_mut().for_each(Vec::clear);
        let live: Vec<(Pair, u64)> = self.pairs.iter().collect();
        for (p, count) in live {
            self.enqueue(p, count);
        }
    }

    /// Queue `pair` with its live `count` (positive): on the heap if it is at
    /// least the threshold, else in its bucket.
    /// A pair too long to merge (or that the rules forbid) is never queued.
    pub(super) fn enqueue(&mut self, pair: Pair, count: u64) {
        if !self.may_merge(pair) {
            return;
        }
        if count >= self.threshold {
            let candidate = self.candidate(pair, count);
            self.heap.push(candidate);
        } else {
            self.waiting[bucket_of(count)].push(pair);
        }
    }

    /// Halve the threshold and queue the pairs of the bucket that reaches it
    /// again with their live counts. False if the threshold is 1 already
    /// (every live pair is on the heap).
    pub(super) fn lower_threshold(&mut self) -> bool {
        if self.threshold == 1 {
            return false;
        }
        self.threshold /= 2;
        let bucket = std::mem::take(&mut self.waiting[bucket_of(self.threshold)]);
        for p in bucket {
            match self.live_count(p) {
                0 => {}
                n => self.enqueue(p, n),
            }
        }
        true
    }

    /// Pop the best eligible pair with a positive live count, or None when none
    /// is left. Entries whose key equals the top's are popped together and
    /// ordered by their bytes; the live ones that lose are pushed back, the
    /// ones that may not be merged (`eligible`) are dropped.
    pub(super) fn pop_best(&mut self) -> Option<(Pair, u64)> {
        loop {
            if self.heap.is_empty() && self.lower_threshold() {
                continue;
            }
            let top = self.heap.pop()?;
            if !self.heap.peek().is_some_and(|c| c.same_key(&top)) {
                // One entry with its key (nearly always): no tie to settle.
                match self.live_count(top.pair) {
                    n if n == top.count => {
                        if self.eligible(top.pair) {
                            return Some((top.pair, top.count));
                        }
                    }
                    0 => {}
                    n => self.enqueue(top.pair, n),
                }
                continue;
            }
            let mut live = Vec::new();
            let mut group = vec![top];
            while self.heap.peek().is_some_and(|c| c.same_key(&group[0])) {
                group.extend(self.heap.pop());
            }
            for c in group {
                match self.live_count(c.pair) {
                    n if n == c.count => {
                        if self.eligible(c.pair) {
                            live.push(c);
                        }
                    }
                    0 => {}
                    n => self.enqueue(c.pair, n),
                }
            }
            let Some(best) = live
                .iter()
                .map(|c| c.pair)
                .max_by(|&p, &q| self.byte_order(p, q))
            else {
                continue;
            };
            let count = live[0].count;
            for c in live {
                if c.pair != best {
                    self.heap.push(c);
                }
            }
            return Some((best, count));
        }
    }
}

/// The bucket of `Trainer::waiting` for a positive count: the exponent of the
/// power of two at or below it.
pub(super) fn bucket_of(count: u64) -> usize {
    63 - count.leading_zeros() as usize
}
