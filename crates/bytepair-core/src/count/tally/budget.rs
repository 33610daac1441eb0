//! A word tally under a memory budget: lossy counting (Manku and Motwani,
//! "Approximate Frequency Counts over Data Streams", 2002; see
//! `count::Limits::max_memory`). Past the budget the rarest words are dropped
//! and what was dropped is reported (`Pruned`).

use super::{WordTally, INITIAL_MID, INITIAL_NARROW, INITIAL_WIDE};
use crate::count::slots::{CountedKey, Table, NARROW_MAX};

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
        for (key, count) in self.narrow.entries().chain(self.wide.entries()) {
            if count < min_count {
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
        self.narrow = Table::for_words(narrow_words, INITIAL_NARROW);
        self.wide = Table::for_words(kept.len() - narrow_words + self.moved, INITIAL_WIDE);
        self.moved = 0;
        for (key, count) in kept {
            self.bump(key, count);
        }
        let (mid, dropped): (Vec<_>, Vec<_>) = self
            .mid
            .entries()
            .partition(|&(_, count)| count >= min_count);
        pruned.words += dropped.len() as u64;
        pruned.pre_tokens += dropped.iter().map(|&(_, n)| n).sum::<u64>();
        self.mid = Table::for_words(mid.len(), INITIAL_MID);
        for (key, count) in mid {
            self.mid.bump(key, key.hash(), count);
        }
        self.long_bytes -= crate::count::drop_rare(&mut self.long_words, min_count, &mut pruned);
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
    /// most `budget` bytes; nothing happens below it.
    pub fn prune_to(&mut self, budget: usize) {
        let mut min_count = 2;
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
}
