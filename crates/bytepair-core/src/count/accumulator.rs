//! Word counts accumulated over many calls (files, texts, documents,
//! word-counts parts, other accumulators times a weight), within one memory
//! budget across all of them, then handed to training.
//!
//! Counts of files and texts arrive as `WordTally`s and stay one, summed by
//! key, while nothing else is added: training reads a tally as it is, and only
//! the other operations need the counts as byte strings (`settle`). Rows of a
//! word-counts artifact (`add_rows`) likewise stay rows (`WordRows`).

use super::{
    add_word, drop_below, merge_counts, prune_to_budget, sampled_estimates, Prune, Pruned,
    WordCounts, WordSource, WordTally,
};
use crate::train::budget::{CountHistogram, TrainingCost};
use crate::wordcounts::{BeyondBudget, ColumnsError, WordRows};

/// 2^64 as an f64 (exact): the first weighted count a u64 cannot hold.
const TWO_POW_64: f64 = (1u128 << 64) as f64;

/// Word counts gathered from many calls.
#[derive(Default)]
pub struct Accumulator {
    /// Counts as byte strings.
    counts: WordCounts,
    /// Counts of files and texts not yet in `counts`, summed by key.
    pending: Option<WordTally>,
    /// Rows of a word-counts artifact not yet in `counts` (each word once).
    rows: Option<WordRows>,
    /// What the memory budget dropped so far.
    pruned: Pruned,
    /// The budget of the counts in bytes (`count::Limits::max_memory`).
    max_memory: Option<usize>,
    /// Which words the budget drops (`count::Limits::prune`).
    prune: Prune,
}

/// The counts an `Accumulator` hands to training (`Accumulator::take`).
pub enum Accumulated {
    /// Counts of files and texts only, summed by key (trained on as they are).
    Tally(WordTally),
    /// Rows of a word-counts artifact only (trained on as they are).
    Rows(WordRows),
    /// Any other counts, as byte strings.
    Counts(WordCounts),
}

impl Accumulated {
    /// The counts as byte strings.
    pub fn into_counts(self) -> WordCounts {
        match self {
            Accumulated::Tally(tally) => tally.into_counts(),
            Accumulated::Rows(rows) => {
                let mut counts = WordCounts::default();
                counts.reserve(rows.len_hint());
                for (word, n) in rows.iter() {
                    add_word(&mut counts, word, n);
                }
                counts
            }
            Accumulated::Counts(counts) => counts,
        }
    }
}

/// Why `Accumulator::add_scaled` failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScaleError {
    /// A weight that is negative, infinite or NaN.
    #[error("weight {0} must be a finite number >= 0")]
    BadWeight(f64),
    /// A weighted count that does not fit in a u64.
    #[error("word {word:?}: count {count} x weight {weight} reaches 2**64")]
    Overflow {
        word: Vec<u8>,
        count: u64,
        weight: f64,
    },
}

/// A weight of `Accumulator::add_scaled`: finite and >= 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weight {
    weight: f64,
    /// The weight as an integer, when it is one below 2^64.
    exact: Option<u64>,
}

impl Weight {
    /// `weight`, or `ScaleError::BadWeight` when it is negative, infinite or NaN.
    pub fn new(weight: f64) -> Result<Self, ScaleError> {
        if !weight.is_finite() || weight < 0.0 {
            return Err(ScaleError::BadWeight(weight));
        }
        let exact = (weight.fract() == 0.0 && weight < TWO_POW_64).then_some(weight as u64);
        Ok(Weight { weight, exact })
    }

    /// `count` times this weight: exact for an integer weight, else the
    /// product rounded to the nearest integer (halves away from zero); None
    /// when the result reaches 2^64.
    ///
    /// ```
    /// use bytepair_core::count::Weight;
    /// assert_eq!(Weight::new(3.0).unwrap().scale(u64::MAX / 3), Some(u64::MAX));
    /// assert_eq!(Weight::new(0.5).unwrap().scale(5), Some(3));
    /// assert_eq!(Weight::new(2.0).unwrap().scale(1 << 63), None);
    /// ```
    pub fn scale(&self, count: u64) -> Option<u64> {
        match self.exact {
            Some(w) => count.checked_mul(w),
            None => Some((count as f64 * self.weight).round())
                .filter(|&x| x < TWO_POW_64)
                .map(|x| x as u64),
        }
    }
}

impl Accumulator {
    /// An empty accumulator whose counts stay within `max_memory` bytes
    /// across calls (None: no bound; see `count::prune_to_budget`).
    pub fn new(max_memory: Option<usize>) -> Self {
        Accumulator {
            max_memory,
            ..Default::default()
        }
    }

    /// Drop words by `rule` when over the budget (`Prune::Rare` unless set).
    pub fn with_pruning(mut self, rule: Prune) -> Self {
        self.prune = rule;
        self
    }

    /// What the memory budget dropped so far.
    pub fn pruned(&self) -> Pruned {
        let mut pruned = self.pruned;
        if let Some(rows) = &self.rows {
            pruned.add(rows.pruned());
        }
        pruned
    }

    /// Append the rows of one word-counts part (Arrow buffers, see
    /// `wordcounts::for_each_row`) as they are: each word of an artifact is in
    /// one part with its final count, so the rows are kept, not summed into a
    /// map. `budget` (taken from the first call): keep only the words that a
    /// merge loop costing `cost` holds within it (`WordRows::with_budget`),
    /// folding the others into pieces (`WordRows::folding`) or keeping a
    /// sample of them (`WordRows::sampling`) as `keep` says.
    ///
    /// # Errors
    /// As `WordRows::push_part`.
    pub fn add_rows(
        &mut self,
        (data, offsets, counts): (&[u8], &[i64], &[i64]),
        budget: Option<u64>,
        cost: TrainingCost,
        keep: BeyondBudget,
    ) -> Result<(), ColumnsError> {
        self.rows
            .get_or_insert_with(|| {
                let rows = WordRows::with_budget(budget, cost);
                match keep {
                    BeyondBudget::Drop => rows,
                    BeyondBudget::Fold => rows.folding(),
                    BeyondBudget::Sample => rows.sampling(),
                }
            })
            .push_part(data, offsets, counts)
    }

    /// Drop every word counted fewer than t times, t the smallest count whose
    /// words a merge loop costing `cost` holds within `budget` bytes
    /// (`TrainingCost::words_budget`); the counts are taken as final. What is
    /// dropped is added to `pruned`. `BeyondBudget::Fold`: the words dropped
    /// are folded into pieces of at most 8 bytes first, added to the counts,
    /// and the budget applied again (`WordRows::folding`; what that drops is
    /// lost). `BeyondBudget::Sample`: a sample of them stays instead
    /// (`sample_within`).
    pub fn fit_training_budget(&mut self, budget: u64, cost: TrainingCost, keep: BeyondBudget) {
        if self.rows.is_some() && self.pending.is_none() && self.counts.is_empty() {
            return; // rows keep their own budget
        }
        self.settle_rows();
        let budget = cost.words_budget(budget);
        if keep == BeyondBudget::Sample {
            return self.sample_within(budget, &cost);
        }
        let t = self.histogram().min_count_within(budget, &cost);
        if keep == BeyondBudget::Drop || t <= 1 {
            return self.drop_counted_below(t);
        }
        let pieces = self.fold_below(t);
        let mut histogram = self.histogram();
        pieces.iter().for_each(|(p, &n)| histogram.add(n, p.len()));
        let t = histogram.min_count_within(budget, &cost);
        self.drop_counted_below(t);
        // Pieces dropped now are parts of words counted as dropped already.
        let pieces = pieces.into_iter().filter(|&(_, n)| n >= t);
        match &mut self.pending {
            Some(tally) => pieces.for_each(|(p, n)| tally.add(&p, n)),
            None => pieces.for_each(|(p, n)| add_word(&mut self.counts, &p, n)),
        }
    }

    /// Threshold sampling of the counts, taken as final (as
    /// `WordRows::sampling`): every word counted at least t times, and a word
    /// counted fewer when `Prune::Sample` keeps it, then counted t times
    /// (`sampled_estimates`); t is the smallest threshold whose words fit
    /// `budget` (the words tallied by `Prune::priority`).
    fn sample_within(&mut self, budget: u64, cost: &TrainingCost) {
        self.settle();
        let mut histogram = CountHistogram::default();
        for (word, &n) in &self.counts {
            histogram.add(Prune::Sample.priority(word, n), word.len());
        }
        let t = histogram.min_count_within(budget, cost);
        let last = sampled_estimates(&mut self.counts, t);
        if last.words > 0 {
            self.pruned.add(last);
        }
    }

    /// Words and bytes of the counts (pending and settled) by count.
    fn histogram(&self) -> CountHistogram {
        let mut histogram = CountHistogram::of(&self.counts);
        if let Some(tally) = &self.pending {
            tally.for_each_word(|w, n| histogram.add(n, w.len()));
        }
        histogram
    }

    /// Drop every word counted fewer than `t` times, counted as dropped, and
    /// return their pieces (`wordcounts::fold_word`).
    fn fold_below(&mut self, t: u64) -> WordCounts {
        let mut pieces = WordCounts::default();
        let mut dropped = Pruned {
            min_count: t,
            ..Pruned::default()
        };
        let mut fold = |word: &[u8], n: u64| {
            if n < t {
                dropped.words += 1;
                dropped.pre_tokens += n;
                crate::wordcounts::fold_word(&mut pieces, word, n);
            }
        };
        if let Some(tally) = &self.pending {
            tally.for_each_word(|w, n| w.with_bytes(|w| fold(w, n)));
        }
        for (word, &n) in &self.counts {
            fold(word, n);
        }
        if let Some(tally) = &mut self.pending {
            tally.prune(t);
        }
        drop_below(&mut self.counts, t);
        self.pruned.add(dropped);
        pieces
    }

    /// Drop every word counted fewer than `t` times (t > 1), adding them to `pruned`.
    fn drop_counted_below(&mut self, t: u64) {
        if t > 1 {
            if let Some(tally) = &mut self.pending {
                let dropped = tally.prune(t);
                if dropped.words > 0 {
                    self.pruned.add(dropped);
                }
            }
            self.pruned.add(drop_below(&mut self.counts, t));
        }
    }

    /// Sum one call's counts into the accumulated ones, which stay within the
    /// memory budget across calls too.
    pub fn add_tally(&mut self, mut tally: WordTally) {
        self.pruned.add(tally.pruned());
        tally.clear_pruned();
        match &mut self.pending {
            Some(pending) => pending.merge(tally),
            None => self.pending = Some(tally),
        }
        if let Some(budget) = self.max_memory {
            self.settle();
            // A sample's threshold only rises; lossy counting starts again at 2.
            let start = match self.prune {
                Prune::Sample => self.pruned.min_count,
                Prune::Rare => 2,
            };
            let pruned = prune_to_budget(&mut self.counts, budget / 2, self.prune, start);
            self.pruned.add(pruned);
        }
    }

    /// Move the pending counts and rows into `counts`.
    fn settle(&mut self) {
        if let Some(pending) = self.pending.take() {
            self.counts = merge_counts(std::mem::take(&mut self.counts), pending.into_counts());
        }
        self.settle_rows();
    }

    /// Move the rows into `counts`.
    fn settle_rows(&mut self) {
        if let Some(mut rows) = self.rows.take() {
            rows.finish();
            self.pruned.add(rows.pruned());
            self.counts = merge_counts(
                std::mem::take(&mut self.counts),
                Accumulated::Rows(rows).into_counts(),
            );
        }
    }

    /// Every count, settled (as byte strings), to read or add to.
    pub fn settled(&mut self) -> &mut WordCounts {
        self.settle();
        &mut self.counts
    }

    /// Add the counts of `other` times `weight` and empty `other`; what its
    /// budget pruned is added to this one's. Words whose weighted count rounds
    /// to 0 are left out. `ScaleError::Overflow` when a weighted count reaches
    /// 2^64 (the words before it are added by then).
    pub fn add_scaled(&mut self, other: &mut Accumulator, weight: f64) -> Result<(), ScaleError> {
        let weight = Weight::new(weight)?;
        let others = std::mem::take(other.settled());
        let counts = self.settled();
        for (word, count) in others {
            let Some(scaled) = weight.scale(count) else {
                let weight = weight.weight;
                return Err(ScaleError::Overflow {
                    word,
                    count,
                    weight,
                });
            };
            if scaled > 0 {
                add_word(counts, &word, scaled);
            }
        }
        self.pruned.add(std::mem::take(&mut other.pruned));
        Ok(())
    }

    /// Number of distinct words.
    pub fn len(&mut self) -> usize {
        match (&self.pending, &self.rows) {
            (Some(pending), None) if self.counts.is_empty() => pending.len(),
            (None, Some(rows)) if self.counts.is_empty() => rows.len(),
            _ => self.settled().len(),
        }
    }

    /// No word counted?
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Total number of pre-tokens counted, exact beyond 2^64 (counts read from
    /// artifacts can add up past it).
    pub fn total(&self) -> u128 {
        let pending = self.pending.as_ref().map_or(0, WordTally::total);
        let rows = self.rows.as_ref().map_or(0, WordRows::total);
        pending + rows + self.counts.values().map(|&c| u128::from(c)).sum::<u128>()
    }

    /// Every (word, count), sorted by count descending, then by bytes.
    pub fn sorted(&mut self) -> Vec<(&[u8], u64)> {
        let mut items: Vec<(&[u8], u64)> = self
            .settled()
            .iter()
            .map(|(w, &n)| (w.as_slice(), n))
            .collect();
        items.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        items
    }

    /// Take every count for training, leaving this accumulator empty: as a
    /// tally when only files and texts were counted, as rows when only an
    /// artifact was read, else as byte strings. What the rows' budget
    /// dropped stays in `pruned`.
    pub fn take(&mut self) -> Accumulated {
        if self.counts.is_empty() {
            match (self.pending.take(), self.rows.take()) {
                (Some(tally), None) => return Accumulated::Tally(tally),
                (None, Some(mut rows)) => {
                    rows.finish();
                    self.pruned.add(rows.pruned());
                    return Accumulated::Rows(rows);
                }
                (pending, rows) => (self.pending, self.rows) = (pending, rows),
            }
        }
        Accumulated::Counts(std::mem::take(self.settled()))
    }

    /// The counts as byte strings, as a sample stands for them: with a
    /// `Prune::Sample` budget each word kept counts for the occurrences it
    /// was drawn from (`sampled_estimates`; its last pruning is added to
    /// `pruned`); otherwise as they are.
    pub fn take_estimates(&mut self) -> WordCounts {
        let mut counts = self.take().into_counts();
        if self.prune == Prune::Sample {
            let last = sampled_estimates(&mut counts, self.pruned.min_count);
            self.pruned.add(last);
        }
        counts
    }
}

#[cfg(test)]
mod tests;
