//! Training within a memory budget: what the merge loop holds per distinct
//! word (`TrainingCost`), and the smallest minimum count whose words fit a
//! budget (`CountHistogram::min_count_within`).
//!
//! The merge loop needs every word it trains on at once, so a budget can only
//! choose which words: the most frequent ones, every word counted at least
//! `t` times for the smallest `t` that fits. With final counts (an artifact,
//! or counting finished) that is exact; a word left out only takes its
//! occurrences out of the pair counts.

use crate::count::WordSource;

/// Estimated bytes the merge loop holds: `per_merge` for each merge asked
/// for, and `per_word + per_byte * len` for each distinct word of `len` bytes
/// (at its peak, with the rows it was built from).
///
/// Per word: its row (12 + len), sort key and rank (20, while the words are
/// built), start, length and count (20), a symbol per byte (2 bytes, 4 when
/// ids pass 65,535), about one word-list entry per byte (~1.1 bytes), and its
/// share of the pairs (~35). Per merge: the pairs it makes (~30, each in the
/// pair index, a waiting list and the heap: ~3.5 KB). The pair index's
/// open-addressed tables (`pairs::table`) hold 2-4 slots of 32 bytes a
/// pair, and old and new while one grows: about 1.7x hashbrown's 1.1-2.3
/// entries of 33 bytes, hence 64 and 4000 where 48 and 2500 were measured
/// with hashbrown. Measured with vocab 32000 on 8 M generated words
/// (`bench/gen_heaps_corpus.py`, 2 GB, mean length 14.4 bytes): peak RSS
/// growth of `train_from_counts` 93 bytes a word, 50 MB of it pyarrow's and
/// the interpreter's; on the 1.5 M words counted 3 times or more: 113 bytes
/// a word (the pairs of 32k merges weigh more). With the open-addressed
/// tables (2 GB, 7.85 M words, `bench/bench_budget.py`): 84 bytes a word
/// with pyarrow warm, 0.39-0.68x the budget within 64 MiB-1 GiB under the
/// old constants; on `tests/training_budget.rs`' syllable words (8000
/// merges, a recount of ~250k pairs into 32 MiB of tables) heap and tables
/// peaked at 57-64 MiB within 64 MiB under the old constants, 56 under
/// these (79-83 within 128 MiB). Real text keeps 30-60% of room; words
/// with many distinct pairs per word 10-15%.
#[derive(Debug, Clone, Copy)]
pub struct TrainingCost {
    pub per_word: u64,
    pub per_byte: u64,
    pub per_merge: u64,
    /// Merges asked for.
    pub merges: u64,
}

impl Default for TrainingCost {
    fn default() -> Self {
        TrainingCost::for_run(256, 0)
    }
}

impl TrainingCost {
    /// The cost of a run that makes `merges` merges and holds `ids` token ids
    /// in all (past 65,536, 32-bit ids: see `words::Symbol`).
    pub fn for_run(ids: usize, merges: usize) -> Self {
        TrainingCost {
            per_word: 64,
            per_byte: if ids > 1 << 16 { 6 } else { 4 },
            per_merge: 4000,
            merges: merges as u64,
        }
    }

    /// What `budget` leaves for the words once the merges' share is set
    /// aside; at least half of it (a budget too small for the merges asked
    /// for is then exceeded by their share).
    pub fn words_budget(&self, budget: u64) -> u64 {
        budget
            .saturating_sub(self.per_merge.saturating_mul(self.merges))
            .max(budget / 2)
    }

    /// Bytes held for one word of `len` bytes.
    pub fn of(&self, len: usize) -> u64 {
        self.per_word + self.per_byte * len as u64
    }

    fn of_words(&self, words: u64, bytes: u64) -> u64 {
        self.per_word
            .saturating_mul(words)
            .saturating_add(self.per_byte.saturating_mul(bytes))
    }
}

/// Counts below this have a bucket each; above, one bucket per power of two.
const EXACT: usize = 1 << 16;
const BUCKETS: usize = EXACT + 64 - 16;

/// Distinct words and their bytes by count: exact below 2^16, by powers of two above.
#[derive(Clone)]
pub struct CountHistogram {
    words: Vec<u64>,
    bytes: Vec<u64>,
}

impl Default for CountHistogram {
    fn default() -> Self {
        CountHistogram {
            words: vec![0; BUCKETS],
            bytes: vec![0; BUCKETS],
        }
    }
}

/// The bucket of a count.
fn bucket(count: u64) -> usize {
    if count < EXACT as u64 {
        count as usize
    } else {
        EXACT + (63 - count.leading_zeros() as usize) - 16
    }
}

/// The smallest count of bucket `i` (u64::MAX past the last bucket).
fn lowest(i: usize) -> u64 {
    match i {
        _ if i < EXACT => i as u64,
        _ if i < BUCKETS => 1 << (i - EXACT + 16),
        _ => u64::MAX,
    }
}

impl CountHistogram {
    /// The histogram of every word of `source`.
    pub fn of(source: &impl WordSource) -> Self {
        let mut h = CountHistogram::default();
        source.for_each_word(|w, n| h.add(n, w.len()));
        h
    }

    /// One word of `len` bytes counted `count` times.
    pub fn add(&mut self, count: u64, len: usize) {
        let i = bucket(count);
        self.words[i] += 1;
        self.bytes[i] += len as u64;
    }

    /// Forget the words counted fewer than `t` times (`t` a bucket's lowest count).
    pub fn keep_from(&mut self, t: u64) {
        let end = bucket(t).min(BUCKETS);
        self.words[..end].fill(0);
        self.bytes[..end].fill(0);
    }

    /// Sum of `f(words, bytes)` over the buckets from the one of count `t` on.
    fn sum_from(&self, t: u64, f: impl Fn(u64, u64) -> u64) -> u64 {
        let start = if t == u64::MAX { BUCKETS } else { bucket(t) };
        (start..BUCKETS).fold(0u64, |sum, i| {
            sum.saturating_add(f(self.words[i], self.bytes[i]))
        })
    }

    /// What training on the words counted at least `t` times would hold.
    pub fn cost_from(&self, t: u64, cost: &TrainingCost) -> u64 {
        self.sum_from(t, |w, b| cost.of_words(w, b))
    }

    /// Bytes of `WordRows` rows (12 + length) of the words counted at least `t` times.
    pub fn row_bytes_from(&self, t: u64) -> u64 {
        self.sum_from(t, |w, b| 12 * w + b)
    }

    /// The smallest count `t` (0 when every word fits) such that training on
    /// the words counted at least `t` times holds at most `budget` bytes;
    /// above every count when not even the most frequent word fits.
    pub fn min_count_within(&self, budget: u64, cost: &TrainingCost) -> u64 {
        let mut sum = 0u64;
        for i in (0..BUCKETS).rev() {
            sum = sum.saturating_add(cost.of_words(self.words[i], self.bytes[i]));
            if sum > budget {
                return lowest(i + 1);
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_the_smallest_that_fits() {
        let cost = TrainingCost {
            per_word: 10,
            per_byte: 0,
            per_merge: 0,
            merges: 0,
        };
        let mut h = CountHistogram::default();
        for count in [1, 1, 2, 3, 3, 3, 70_000, 100_000, 1 << 40] {
            h.add(count, 5);
        }
        assert_eq!(h.min_count_within(90, &cost), 0);
        assert_eq!(h.min_count_within(85, &cost), 2);
        assert_eq!(h.min_count_within(60, &cost), 3);
        assert_eq!(h.cost_from(3, &cost), 60);
        assert_eq!(h.min_count_within(35, &cost), 4);
        // 70_000 and 100_000 share the bucket [65536, 131072): both or neither.
        assert_eq!(h.min_count_within(30, &cost), 4);
        assert_eq!(h.min_count_within(25, &cost), 1 << 17);
        assert_eq!(h.min_count_within(5, &cost), 1 << 41); // none fits
        assert_eq!(h.cost_from(u64::MAX, &cost), 0);
        let run = TrainingCost::for_run(32256, 32000);
        assert_eq!(run.words_budget(300 << 20), (300 << 20) - 128_000_000);
        assert_eq!(run.words_budget(64 << 20), 32 << 20, "at least half");
        h.keep_from(3);
        assert_eq!((h.cost_from(0, &cost), h.row_bytes_from(0)), (60, 6 * 17));
    }
}
