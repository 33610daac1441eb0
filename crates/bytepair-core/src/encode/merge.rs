//! Merging one pre-token that is not a token, by rank: the adjacent pair whose
//! concatenated bytes have the lowest rank merges first (the leftmost on ties),
//! until no adjacent pair is a ranked token. Three routines, one rule:
//!
//! * `merge_short`: a scan over a small vector of parts, for pieces under
//!   `LONG_PIECE` bytes (nearly all);
//! * `LongMerge`: buckets of positions per rank, close to linear even for a
//!   10 MB pre-token of one repeated character;
//! * `merge_by_rank`: a linked list and a lazy min-heap over byte slices, the
//!   plain form the others are tested against; BPE-dropout and the recovery of
//!   merges from ranks (`crate::recover`) run on it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};

use rustc_hash::FxHashMap;

use super::cache::HotPairs;
use super::tables::{PairRanks, NO_ID, NO_RANK};

/// Below this many bytes a piece is merged with the quadratic scan.
pub(super) const LONG_PIECE: usize = 128;

/// A candidate merge in `LongMerge`'s order: by rank, then position.
#[inline]
fn queue_key(rank: u32, pos: u32) -> u64 {
    (rank as u64) << 32 | pos as u64
}

/// A part of a short piece being merged: its code (see `PairRanks`) and the
/// rank of merging it with the next part.
#[derive(Clone, Copy)]
pub(super) struct Part {
    code: u32,
    rank: u32,
}

/// Parts `remove_part` moves at a time.
const REMOVE_CHUNK: usize = 8;

/// `parts.remove(i)` for a vector with room for `REMOVE_CHUNK` more parts:
/// the tail moves in fixed 64-byte chunks, which compile to a few vector
/// moves, where `Vec::remove` calls memmove (a large share of encoding
/// o200k multilingual text: one call per merge of a short piece).
#[inline]
fn remove_part(parts: &mut Vec<Part>, i: usize) {
    let len = parts.len();
    assert!(i < len && len + REMOVE_CHUNK <= parts.capacity());
    let p = parts.as_mut_ptr();
    let mut j = i;
    while j + 1 < len {
        // SAFETY: j + 1 < len, so the chunk read (j + 1 .. j + 9) and the one
        // written (j .. j + 8) end before len + 8 <= capacity. Parts past
        // `len` are spare capacity: copying its bytes is allowed, and they
        // stay outside the vector.
        unsafe { std::ptr::copy(p.add(j + 1), p.add(j), REMOVE_CHUNK) };
        j += REMOVE_CHUNK;
    }
    // SAFETY: parts[..len - 1] are the old parts without parts[i]; Part is Copy.
    unsafe { parts.set_len(len - 1) };
}

/// Merge a short piece by repeated scans for the lowest-ranked pair (the
/// leftmost on ties), appending its ids to `out`. Every byte has an id.
/// `parts` is a buffer reused across pieces; `hot` caches pair lookups.
pub(super) fn merge_short(
    table: &PairRanks,
    piece: &[u8],
    parts: &mut Vec<Part>,
    hot: &mut HotPairs,
    out: &mut Vec<u32>,
) {
    parts.clear();
    parts.reserve(piece.len() + REMOVE_CHUNK);
    parts.extend(piece.windows(2).map(|w| Part {
        code: w[0] as u32,
        rank: table.byte_pair_rank(w[0], w[1]),
    }));
    if let Some(&last) = piece.last() {
        parts.push(Part {
            code: last as u32,
            rank: NO_RANK,
        });
    }
    loop {
        let mut best = 0;
        let mut best_rank = NO_RANK;
        for (i, part) in parts.iter().enumerate() {
            if part.rank < best_rank {
                best = i;
                best_rank = part.rank;
            }
        }
        if best_rank == NO_RANK {
            break;
        }
        parts[best].code = 256 + best_rank;
        remove_part(parts, best + 1);
        parts[best].rank = match parts.get(best + 1) {
            Some(next) => hot.rank(table, parts[best].code, next.code),
            None => NO_RANK,
        };
        if best > 0 {
            parts[best - 1].rank = hot.rank(table, parts[best - 1].code, parts[best].code);
        }
    }
    out.extend(parts.iter().map(|p| table.id(p.code)));
}

/// Merge a long piece (under 4 GiB: positions are u32), appending its ids to
/// `out`; see `LongMerge`. Every byte has an id. Returns false, appending
/// nothing, when `cancel` is set before the merge is done (checked once per
/// rank: a merge of 100 MB takes seconds).
pub(super) fn merge_long(
    table: &PairRanks,
    piece: &[u8],
    out: &mut Vec<u32>,
    cancel: Option<&AtomicBool>,
) -> bool {
    let is_cancelled = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let Some(mut merge) = LongMerge::new(table, piece, &is_cancelled) else {
        return false;
    };
    if !merge.run(&is_cancelled) {
        return false;
    }
    merge.ids_into(out);
    true
}

/// Part boundaries of `piece` after BPE by rank: `rank(bytes)` is the rank of
/// the token with those bytes (None: not a token), and the adjacent pair whose
/// concatenation has the lowest rank merges first (the leftmost on ties).
/// Returns the start of every part, then `piece.len()`.
///
/// `skip()` is asked about every live candidate before it is applied
/// (BPE-dropout; `|| false` for plain BPE). Skipped candidates are set aside
/// and return to the heap after the next merge (a new step draws afresh for
/// every candidate); when the heap runs dry with only skipped ones left, every
/// candidate of the step was dropped and the piece is done. Stale entries are
/// never drawn for, so `skip` sees live candidates only.
///
/// O(L log L) for L bytes: parts in a linked list, candidate pairs in a
/// min-heap keyed (rank, start), stale entries skipped when popped.
pub(crate) fn merge_by_rank(
    piece: &[u8],
    rank: impl Fn(&[u8]) -> Option<u32>,
    mut skip: impl FnMut() -> bool,
) -> Vec<usize> {
    let n = piece.len();
    if n < 2 {
        return (0..=n).collect();
    }
    // Part starting at byte i: ends at end[i]; the previous part starts at prev[i].
    let mut end: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut alive = vec![true; n];
    // (rank, start of left part, end of right part): the pair's bytes are piece[start..end].
    let mut heap: BinaryHeap<Reverse<(u32, usize, usize)>> = BinaryHeap::new();
    let push = |heap: &mut BinaryHeap<_>, start: usize, end: usize| {
        if let Some(r) = rank(&piece[start..end]) {
            heap.push(Reverse((r, start, end)));
        }
    };
    for i in 0..n - 1 {
        push(&mut heap, i, i + 2);
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
            push(&mut heap, left, end[right_end]);
        }
        if left > 0 {
            push(&mut heap, prev[left], right_end);
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

/// The merge of one long piece: parts in a linked list over byte positions, and
/// the candidate merges ordered by (rank, position), as one min-heap would order
/// them, but cheaper.
///
/// Candidates wait in a bucket per rank (positions appended as pairs appear), and
/// a small heap holds the ranks that have a bucket. A merge of rank r nearly
/// always creates pairs of higher rank, so a bucket is complete before it is
/// taken, and it is a few ascending runs that one stable sort puts in order: a
/// piece of L bytes costs about O(L), not O(L log L) with a heap of L entries
/// that no longer fits in cache. A pair of rank <= r, which tables that no BPE
/// trainer made can produce, goes to the `urgent` heap, consulted before the
/// bucket, so the order is exact for any table.
///
/// Candidates are checked when taken (lazy deletion): one is still valid if the
/// part at its position is alive and the pair it starts still has its rank (a
/// rank names one byte string, so the same rank is the same span).
struct LongMerge<'a> {
    table: &'a PairRanks,
    /// For the part starting at byte i: its code (NO_ID once merged into the
    /// part on its left), where the next and previous parts start, and the rank
    /// of merging it with the next part.
    codes: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    ranks: Vec<u32>,
    buckets: FxHashMap<u32, Vec<u32>>,
    bucket_ranks: BinaryHeap<Reverse<u32>>,
    urgent: BinaryHeap<Reverse<u64>>,
    /// The rank whose bucket is being merged.
    current: u32,
}

impl<'a> LongMerge<'a> {
    /// Parts are the single bytes (every one has an id); `piece.len() < u32::MAX`.
    /// None if `cancelled()` turns true (checked every 2^20 bytes).
    fn new(table: &'a PairRanks, piece: &[u8], cancelled: &impl Fn() -> bool) -> Option<Self> {
        let n = piece.len();
        let mut merge = LongMerge {
            table,
            codes: Vec::with_capacity(n),
            next: Vec::with_capacity(n),
            prev: Vec::with_capacity(n),
            ranks: Vec::with_capacity(n),
            buckets: FxHashMap::default(),
            bucket_ranks: BinaryHeap::new(),
            urgent: BinaryHeap::new(),
            current: 0,
        };
        // In blocks, checking `cancelled` between them: for a piece of 100 MB
        // the page faults of these arrays (1.6 GB) alone take seconds.
        const BLOCK: usize = 1 << 20;
        for block_start in (0..n).step_by(BLOCK) {
            if cancelled() {
                return None;
            }
            let end = (block_start + BLOCK).min(n);
            merge
                .codes
                .extend(piece[block_start..end].iter().map(|&b| b as u32));
            merge.next.extend(block_start as u32 + 1..=end as u32);
            merge
                .prev
                .extend((block_start as u32..end as u32).map(|i| i.wrapping_sub(1)));
            for pos in block_start..end {
                let rank = piece
                    .get(pos + 1)
                    .map_or(NO_RANK, |&right| table.byte_pair_rank(piece[pos], right));
                merge.ranks.push(rank);
                if rank != NO_RANK {
                    merge.add_to_bucket(rank, pos as u32);
                }
            }
        }
        Some(merge)
    }

    fn add_to_bucket(&mut self, rank: u32, pos: u32) {
        let bucket = self.buckets.entry(rank).or_default();
        if bucket.is_empty() {
            self.bucket_ranks.push(Reverse(rank));
        }
        bucket.push(pos);
    }

    /// A new candidate found while merging rank `current`.
    fn add(&mut self, rank: u32, pos: u32) {
        if rank <= self.current {
            self.urgent.push(Reverse(queue_key(rank, pos)));
        } else {
            self.add_to_bucket(rank, pos);
        }
    }

    /// Apply every merge, lowest (rank, position) first; false if
    /// `cancelled()` turns true first (checked every rank and 2^16 merges).
    fn run(&mut self, cancelled: &impl Fn() -> bool) -> bool {
        let mut steps = 0u32;
        while let Some(Reverse(rank)) = self.bucket_ranks.pop() {
            if cancelled() {
                return false;
            }
            let mut positions = self.buckets.remove(&rank).unwrap_or_default();
            positions.sort(); // ascending runs: a merge pass over them
            self.current = rank;
            let mut taken = 0;
            loop {
                let from_bucket = positions.get(taken).map(|&pos| queue_key(rank, pos));
                let from_urgent = self.urgent.peek().map(|entry| entry.0);
                let key = match (from_bucket, from_urgent) {
                    (Some(b), Some(u)) if u < b => self.urgent.pop().unwrap().0,
                    (Some(b), _) => {
                        taken += 1;
                        b
                    }
                    (None, Some(_)) => self.urgent.pop().unwrap().0,
                    (None, None) => break,
                };
                self.merge_at((key >> 32) as u32, key as u32);
                steps = steps.wrapping_add(1);
                if steps.is_multiple_of(1 << 16) && cancelled() {
                    return false;
                }
            }
        }
        true
    }

    /// Merge the part at `pos` with the next one if that pair still has `rank`.
    fn merge_at(&mut self, rank: u32, pos: u32) {
        let p = pos as usize;
        if self.codes[p] == NO_ID || self.ranks[p] != rank {
            return; // stale
        }
        let right = self.next[p] as usize;
        let after = self.next[right];
        self.codes[p] = 256 + rank;
        self.codes[right] = NO_ID;
        self.ranks[right] = NO_RANK;
        self.next[p] = after;
        if (after as usize) < self.codes.len() {
            self.prev[after as usize] = pos;
            let rank = self.table.rank(self.codes[p], self.codes[after as usize]);
            self.set_rank(pos, rank);
        } else {
            self.ranks[p] = NO_RANK;
        }
        if p > 0 {
            let before = self.prev[p];
            let rank = self.table.rank(self.codes[before as usize], self.codes[p]);
            self.set_rank(before, rank);
        }
    }

    fn set_rank(&mut self, pos: u32, rank: u32) {
        self.ranks[pos as usize] = rank;
        if rank != NO_RANK {
            self.add(rank, pos);
        }
    }

    fn ids_into(&self, out: &mut Vec<u32>) {
        let mut i = 0;
        while i < self.codes.len() {
            out.push(self.table.id(self.codes[i]));
            i = self.next[i] as usize;
        }
    }
}
