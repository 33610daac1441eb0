//! Rare pairs left out of the pair index, exactly.
//!
//! Most pairs a merge makes are rare and are never merged (on 10 MB of
//! multilingual text, 158 k of the 380 k pairs the 16 k merges make count 1
//! and 358 k count fewer than 32, while the last merge counts 45), yet each
//! was indexed (its count and word list in the pair map, its place in the
//! queue) and counted down as its words changed.
//!
//! Why leaving them out is exact: a pair gains occurrences only in the merge
//! that makes its newer token, so its count when made bounds it for good;
//! and the count of the best pair never rises from one merge to the next. A
//! pair made with a count below `RarePairs::below` can therefore not be the
//! best while the best indexed pair counts at least `RarePairs::skipped` (one
//! more than the largest count left out). When the best falls below that
//! (or no pair is left), every pair is counted again from the words as they
//! stand (`Trainer::recount`), and none is left out from then on.
//!
//! How rare: the counts of the merges fall off as a power of their rank
//! (about halving as the rank doubles); at every power-of-two merge from
//! `FIRST_GUESS` on, the count of the last merge asked for is extrapolated
//! from the last doubling, and pairs below a quarter of it (rounded down to
//! a power of two) are left out. A guess too high costs one recount.

use std::collections::BinaryHeap;

use super::pairs::{initial_pair_index, PairMap};
use super::words::Symbol;
use super::{Merge, Trainer};

/// The first merge at which the rare count is guessed (the counts of the
/// first merges fall off unevenly).
const FIRST_GUESS: usize = 256;

/// Which pairs made by merges are left out of the index.
#[derive(Default)]
pub(super) struct RarePairs {
    /// Pairs made with a count below this are left out (0: none).
    pub(super) below: u64,
    /// One more than the largest count left out (0: none was).
    pub(super) skipped: u64,
    /// Every pair was counted again: none is left out any more.
    recounted: bool,
}

impl RarePairs {
    /// Guess `below` after the merges so far (of `wanted`), if it is time.
    pub(super) fn guess(&mut self, merges: &[Merge], wanted: usize) {
        let k = merges.len();
        if k < FIRST_GUESS || !k.is_power_of_two() || k >= wanted || self.recounted {
            return;
        }
        let (half, last) = (merges[k / 2 - 1].count as f64, merges[k - 1].count as f64);
        let slope = (half / last).log2().max(0.0);
        let predicted = last * (k as f64 / wanted as f64).powf(slope);
        let quarter = (predicted / 4.0).floor() as u64;
        self.below = match quarter {
            0 | 1 => 0,
            q => 1 << (63 - q.leading_zeros()),
        };
    }

    /// Whether a pair popped with `best` (None: none left) may be beaten by
    /// a pair left out.
    pub(super) fn may_hide_best(&self, best: Option<u64>) -> bool {
        self.skipped > 0 && best.is_none_or(|count| count < self.skipped)
    }
}

impl<S: Symbol> Trainer<S> {
    /// Count every pair of the words again, queue them all, and leave no
    /// pair out from now on.
    pub(super) fn recount(&mut self) {
        // The old index and queue go first: both indexes at once were the
        // run's peak (twice the pairs' memory, past a training budget).
        self.pairs = PairMap::empty();
        self.heap = BinaryHeap::new();
        self.pairs = initial_pair_index(&self.words, &self.freqs, self.token_bytes.len());
        self.rare = RarePairs {
            below: 0,
            skipped: 0,
            recounted: true,
        };
        self.rebuild_queue();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guess_extrapolates_the_last_doubling() {
        // Counts 10^6 / rank: at merge 256 (3906), 16384 merges asked for
        // extrapolate to 61, a quarter of which rounds down to 8.
        let merges: Vec<Merge> = (1..=1024u64)
            .map(|k| Merge {
                left: 0,
                right: 0,
                count: 1_000_000 / k,
            })
            .collect();
        let mut rare = RarePairs::default();
        rare.guess(&merges[..255], 16384);
        assert_eq!(rare.below, 0, "not a guessing point");
        rare.guess(&merges[..256], 16384);
        assert_eq!(rare.below, 8);
        // 2048 asked for: 488, a quarter of which rounds down to 64.
        rare.guess(&merges[..256], 2048);
        assert_eq!(rare.below, 64);
        assert!(!rare.may_hide_best(Some(1)));
        rare.skipped = 9;
        assert!(rare.may_hide_best(Some(8)) && rare.may_hide_best(None));
        assert!(!rare.may_hide_best(Some(9)));
    }
}
