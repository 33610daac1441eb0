//! A word tally under a memory budget: lossy counting (Manku and Motwani,
//! "Approximate Frequency Counts over Data Streams", 2002; see
//! `count::Limits::max_memory`), or threshold sampling for words that mostly
//! occur once (`Prune::Sample`). Past the budget words are dropped and what
//! was dropped is reported (`Pruned`).

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::{WordTally, INITIAL_MID, INITIAL_NARROW, INITIAL_WIDE};
use crate::count::slots::{CountedKey, Table, NARROW_MAX};
use crate::count::Word;

/// Which words a pruning at threshold `t` drops (`count::Limits::prune`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Prune {
    /// Lossy counting: every word seen fewer than `t` times. Right for words
    /// that repeat (the pre-tokens of a pattern): the frequent ones stay exact.
    #[default]
    Rare,
    /// Threshold sampling (Duffield, Lund and Thorup, "Learn more, sample
    /// less", 2005), by a hash of the word: a word seen `c < t` times stays
    /// when its hash falls in the first `c / t` of the hash range, so it stays
    /// with probability `c / t` and stands for `t` occurrences
    /// (`sampled_estimates`); words seen `t` times or more all stay. Right for
    /// pieces that mostly occur once (SuperBPE's stage 2, where a piece is the
    /// rest of a line): lossy counting would drop nearly all of them, this
    /// keeps an unbiased sample whatever the order of the text, and repeated
    /// pieces exactly.
    Sample,
}

impl Prune {
    /// Does a pruning at `threshold` keep `word`, seen `count` times?
    #[inline]
    pub fn keeps(self, word: &[u8], count: u64, threshold: u64) -> bool {
        match self {
            Prune::Rare => count >= threshold,
            Prune::Sample => {
                count >= threshold
                    || u128::from(sample_hash(word)) * u128::from(threshold)
                        < u128::from(count) << 64
            }
        }
    }

    /// The highest threshold at which `keeps(word, count, threshold)` holds:
    /// `count` for `Rare`; for `Sample`, `count / u` with `u` the word's hash
    /// as a fraction of the hash range (at least `count`: a word kept at a
    /// threshold is kept at every lower one). Budgets that fit a threshold
    /// to final counts (`wordcounts::WordRows::sampling`) tally words by it.
    pub fn priority(self, word: &[u8], count: u64) -> u64 {
        match self {
            Prune::Rare => count,
            Prune::Sample if count == 0 => 0,
            Prune::Sample => match sample_hash(word) {
                0 => u64::MAX,
                // The largest t with h * t < count * 2^64.
                h => u64::try_from(((u128::from(count) << 64) - 1) / u128::from(h))
                    .unwrap_or(u64::MAX),
            },
        }
    }
}

/// The hash `Prune::Sample` ranks a word by: XXH3 (fully specified, so every
/// thread, process and machine agrees), with a seed of its own so the sample
/// is independent of the word-counts buckets.
fn sample_hash(word: &[u8]) -> u64 {
    xxh3_64_with_seed(word, 0x7361_6d70_6c65_7321)
}

/// The counts a sample stands for, after a last pruning of every word at
/// `threshold` (the highest a `Prune::Sample` budget applied, so every word
/// kept passed the same test): a word kept with a count below it stands for
/// `threshold` occurrences (the Horvitz-Thompson estimate: it stayed with
/// probability count / threshold), the others for their count. Returns what
/// the last pruning dropped. A threshold of 1 (nothing was pruned) changes nothing.
pub fn sampled_estimates(counts: &mut crate::count::WordCounts, threshold: u64) -> Pruned {
    let mut pruned = Pruned::default();
    if threshold <= 1 {
        return pruned;
    }
    crate::count::drop_rare(counts, threshold, Prune::Sample, &mut pruned);
    for n in counts.values_mut() {
        *n = (*n).max(threshold);
    }
    pruned
}

/// What `WordTally::prune` (and a memory budget) dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Distinct words dropped (a word dropped twice counts twice).
    pub words: u64,
    /// Their occurrences (pre-tokens) lost.
    pub pre_tokens: u64,
    /// The highest `min_count` applied: a word dropped was seen fewer times,
    /// in the stretch of text counted before its pruning.
    pub min_count: u64,
}

impl Pruned {
    pub fn add(&mut self, other: Pruned) {
        self.words += other.words;
        self.pre_tokens += other.pre_tokens;
        self.min_count = self.min_count.max(other.min_count);
    }
}

/// Heap bytes a long word costs beyond its own bytes: its `Vec` header, the
/// count, the map's control byte and spare capacity, and the allocator's header.
const LONG_ENTRY_BYTES: usize = 64;

impl WordTally {
    /// What the budget dropped so far.
    pub fn pruned(&self) -> Pruned {
        self.pruned
    }

    /// Forget what was dropped (the caller has taken note of it).
    pub fn clear_pruned(&mut self) {
        self.pruned = Pruned::default();
    }

    /// Prune until the tally holds at most half its budget, if it holds more
    /// than the budget (the long words are only checked here, between blocks).
    pub fn enforce_budget(&mut self) {
        let Some(budget) = self.budget else { return };
        if self.memory_bytes() <= budget {
            return;
        }
        while self.memory_bytes() > budget / 2 && !self.is_empty() {
            self.prune_for_budget();
            if self.memory_bytes() > budget / 2 {
                self.min_count = self.min_count.saturating_mul(2);
            }
        }
    }

    /// Drop words by `rule` when pruning (`Prune::Rare` unless set).
    pub fn with_pruning(mut self, rule: Prune) -> Self {
        self.rule = rule;
        self
    }

    /// The highest threshold a pruning applied so far, 1 if none did.
    pub fn threshold(&self) -> u64 {
        self.pruned.min_count.max(1)
    }

    /// Prune at the current minimum count (it only rises, as in lossy counting).
    pub(super) fn prune_for_budget(&mut self) {
        let pruned = self.prune(self.min_count);
        self.pruned.add(pruned);
    }

    /// Heap bytes held (the slot table, and the long words with their overhead).
    pub fn memory_bytes(&self) -> usize {
        self.narrow.bytes()
            + self.wide.bytes()
            + self.mid.bytes()
            + self.long_words.capacity() * LONG_ENTRY_BYTES
            + self.long_bytes
    }

    /// Drop every word counted fewer than `min_count` times, and shrink the
    /// table to the words left (the lossy counting of a memory budget; see
    /// `count::Limits::max_memory`).
    pub fn prune(&mut self, min_count: u64) -> Pruned {
        let mut pruned = Pruned {
            min_count,
            ..Pruned::default()
        };
        let mut kept = Vec::with_capacity(self.narrow.taken() + self.wide.taken());
        let rule = self.rule;
        for (key, count) in self.narrow.entries().chain(self.wide.entries()) {
            if !Word::Packed(key).with_bytes(|w| rule.keeps(w, count, min_count)) {
                pruned.words += 1;
                pruned.pre_tokens += count;
            } else {
                kept.push((key, count));
            }
        }
        // Sized so that re-filing the words needs no growth (which could prune again).
        let narrow_words = kept
            .iter()
            .filter(|(key, _)| (key >> 120) as usize <= NARROW_MAX)
            .count();
        self.narrow = Table::for_words(narrow_words, INITIAL_NARROW, false);
        self.wide = Table::for_words(kept.len() - narrow_words + self.moved, INITIAL_WIDE, false);
        self.moved = 0;
        for (key, count) in kept {
            self.bump(key, count);
        }
        let (mid, dropped): (Vec<_>, Vec<_>) = self.mid.entries().partition(|&(key, count)| {
            Word::Mid(key).with_bytes(|w| rule.keeps(w, count, min_count))
        });
        pruned.words += dropped.len() as u64;
        pruned.pre_tokens += dropped.iter().map(|&(_, n)| n).sum::<u64>();
        self.mid = Table::for_words(mid.len(), INITIAL_MID, false);
        for (key, count) in mid {
            self.mid.bump(key, key.hash(), count);
        }
        self.long_bytes -=
            crate::count::drop_rare(&mut self.long_words, min_count, rule, &mut pruned);
        // glibc keeps the old table's pages in this thread's arena otherwise:
        // resident memory then grew with every pruning (174 MB for a 64 MiB budget).
        crate::memory::release_freed_memory();
        pruned
    }

    /// The same counts with no memory budget (nothing is pruned from now on).
    pub fn unbounded(mut self) -> Self {
        self.budget = None;
        self.table_budget = usize::MAX;
        self
    }

    /// Prune (`prune`, the minimum count doubling) until the tally holds at
    /// most `budget` bytes; nothing happens below it. Lossy counting starts
    /// again from 2; sampling from the highest threshold applied so far (a
    /// sample's threshold only rises).
    pub fn prune_to(&mut self, budget: usize) {
        let mut min_count = match self.rule {
            Prune::Rare => 2,
            Prune::Sample => self.pruned.min_count.max(2),
        };
        while self.memory_bytes() > budget && !self.is_empty() {
            let pruned = self.prune(min_count);
            self.pruned.add(pruned);
            min_count = min_count.saturating_mul(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::pretokenize::PreTokenizer;

    #[test]
    fn prune_drops_rare_words_and_keeps_the_rest_exact() {
        let pre = PreTokenizer::new("gpt2", &[]).unwrap();
        let mut text = String::new();
        for i in 0..30_000 {
            text.push_str(&format!(
                " w{} common{} {} {}",
                i,
                i % 3,
                "x".repeat(40 + i % 2),
                "y".repeat(16 + i % 16)
            ));
        }
        let mut tally = WordTally::default();
        tally.add_text(&pre, &text).unwrap();
        let before = tally.memory_bytes();
        let mut want = WordCounts::default();
        crate::count::count_text(&pre, &text, &mut want).unwrap();
        let pruned = tally.prune(2);
        // Most numbers i are seen once; " w", " common", the x runs thousands of times.
        let once = want.values().filter(|&&n| n < 2).count() as u64;
        assert!(once > 29_000);
        assert_eq!(
            pruned,
            Pruned {
                words: once,
                pre_tokens: once,
                min_count: 2
            }
        );
        assert!(
            tally.memory_bytes() < before / 4,
            "{} -> {}",
            before,
            tally.memory_bytes()
        );
        want.retain(|_, n| *n >= 2);
        tally.add(b" common", 1);
        *want.get_mut(&b" common"[..]).unwrap() += 1;
        assert_eq!(tally.into_counts(), want);
    }

    #[test]
    fn a_priority_is_the_highest_threshold_that_keeps_a_word() {
        for rule in [Prune::Rare, Prune::Sample] {
            for i in 0..2000u64 {
                let word = format!("w{i}");
                let count = [0, 1, 2, 3, 7, 40, 1000, u64::MAX][i as usize % 8];
                let p = rule.priority(word.as_bytes(), count);
                assert!(p >= count, "{rule:?} {word} {count}: {p}");
                assert!(
                    rule.keeps(word.as_bytes(), count, p),
                    "{rule:?} {word} {count}"
                );
                if p < u64::MAX {
                    assert!(!rule.keeps(word.as_bytes(), count, p + 1), "{word} {count}");
                }
            }
        }
    }

    #[test]
    fn a_sample_keeps_frequent_words_exact_and_stands_for_the_rare_ones() {
        // 40,000 distinct lines of 60 bytes (as SuperBPE's stage-2 pieces), and
        // one repeated line; a budget far below their ~5 MB.
        let mut tally = WordTally::with_budget(1 << 16, Some(1 << 20)).with_pruning(Prune::Sample);
        let mut unique = 0u64;
        for i in 0..40_000u64 {
            tally.add(
                format!("line {i:08} of text that occurs once{}", "x".repeat(20)).as_bytes(),
                1,
            );
            unique += 1;
            tally.add(b"the repeated line, much longer than thirty-one bytes", 1);
            tally.enforce_budget();
        }
        let threshold = tally.threshold();
        assert!(threshold >= 4, "the budget sampled: threshold {threshold}");
        let mut counts = tally.into_counts();
        let last = sampled_estimates(&mut counts, threshold);
        assert_eq!(last.min_count, threshold);
        let repeated = counts.remove(&b"the repeated line, much longer than thirty-one bytes"[..]);
        assert_eq!(repeated, Some(40_000), "a frequent word stays exact");
        // Each kept rare line stands for `threshold` lines: the sum estimates 40,000.
        let estimate: u64 = counts.values().sum();
        assert!(counts.values().all(|&n| n == threshold));
        let error = (estimate as f64 - unique as f64).abs() / unique as f64;
        assert!(
            error < 0.1,
            "estimate {estimate} of {unique} (threshold {threshold})"
        );
        // Lossy counting drops them all.
        let mut lossy = WordTally::with_budget(1 << 16, Some(1 << 20));
        for i in 0..40_000u64 {
            lossy.add(
                format!("line {i:08} of text that occurs once{}", "x".repeat(20)).as_bytes(),
                1,
            );
            lossy.enforce_budget();
        }
        assert!(lossy.len() < 40_000 / 8);
    }
}
