//! A tally cut into parts by a hash of each word (`WordTally::split`), and a
//! part summed into another tally (`WordTally::merge_part`): the shards of
//! `count::ordered` each take one part of every job.
//!
//! A part is plain vectors of (key, count), not a tally: a job's words are
//! read once from its tally and filed by part, with no table to allocate
//! and zero per part (allocating and zeroing 8 parts' tables per 1 MiB block
//! took a quarter of budgeted counting).

use super::{Pruned, WordTally, BATCH, INITIAL_MID, INITIAL_NARROW, INITIAL_WIDE};
use crate::count::slots::{narrow_key, Table, NARROW_MAX};
use crate::count::Word;
use crate::shortkey;

/// One part of a tally: its words in the order the tally holds them.
#[derive(Default)]
pub(crate) struct Part {
    /// `shortkey` keys (at most 15 bytes) and counts.
    short: Vec<(u128, u64)>,
    /// `shortkey::load_mid` keys (16 to 31 bytes) and counts.
    mid: Vec<([u128; 2], u64)>,
    long: Vec<(Vec<u8>, u64)>,
    /// What the tally pruned (the first part only), and its threshold.
    pruned: Pruned,
    min_count: u64,
}

/// Which of `parts` a word goes to: XXH3 of its bytes, a hash independent of
/// the tables' own (whose top bits pick a home slot), so each shard's words
/// still spread over its tables.
fn part_of(word: &[u8], parts: usize) -> usize {
    (xxhash_rust::xxh3::xxh3_64(word) % parts as u64) as usize
}

impl WordTally {
    /// The words cut into `parts` parts by a hash of their bytes; what was
    /// pruned goes with the first.
    pub(crate) fn split(self, parts: usize) -> Vec<Part> {
        let share = self.len() / parts + self.len() / (4 * parts) + 8;
        let mut out: Vec<Part> = (0..parts)
            .map(|_| Part {
                short: Vec::with_capacity(share),
                min_count: self.min_count,
                ..Part::default()
            })
            .collect();
        for (key, count) in self.narrow.entries().chain(self.wide.entries()) {
            let part = Word::Packed(key).with_bytes(|w| part_of(w, parts));
            out[part].short.push((key, count));
        }
        for (key, count) in self.mid.entries() {
            let part = Word::Mid(key).with_bytes(|w| part_of(w, parts));
            out[part].mid.push((key, count));
        }
        for (word, n) in self.long_words {
            out[part_of(&word, parts)].long.push((word, n));
        }
        out[0].pruned = self.pruned;
        out
    }

    /// The sum of `tallies` that hold disjoint words (the shards), with no
    /// budget, its tables sized once for all their words, each tally freed
    /// once added. Summed into the first shard, the sum grew by doubling:
    /// its old and new tables were alive at once beside the shards not yet
    /// added.
    pub(crate) fn union(tallies: Vec<WordTally>) -> WordTally {
        let sum = |taken: fn(&WordTally) -> usize| tallies.iter().map(taken).sum::<usize>();
        let Some(first) = tallies.first() else {
            return WordTally::default();
        };
        let mut total = WordTally::new(first.max_word_bytes).with_pruning(first.rule);
        total.min_count = first.min_count;
        total.narrow = Table::for_words(sum(|t| t.narrow.taken()), INITIAL_NARROW, false);
        total.wide = Table::for_words(sum(|t| t.wide.taken()), INITIAL_WIDE, false);
        total.mid = Table::for_words(sum(|t| t.mid.taken()), INITIAL_MID, false);
        for tally in tallies {
            total.merge(tally);
        }
        total
    }

    /// Add every count of `part` (as `merge` adds a tally's). With a budget,
    /// `self` prunes as `add` does.
    pub(crate) fn merge_part(&mut self, part: Part) {
        for batch in part.short.chunks(BATCH) {
            // As in `add_batch`: the home slots of a batch are prefetched together.
            self.reserve(batch.len());
            for &(key, _) in batch {
                if (key >> 120) as usize <= NARROW_MAX {
                    self.narrow.prefetch(shortkey::hash(narrow_key(key)));
                } else {
                    self.wide.prefetch(shortkey::hash(key));
                }
            }
            for &(key, count) in batch {
                self.bump(key, count);
            }
        }
        for (key, count) in part.mid {
            self.reserve(1);
            self.mid
                .bump(key, crate::count::slots::CountedKey::hash(&key), count);
        }
        for (word, n) in part.long {
            self.add_long_word(&word, n);
        }
        self.pruned.add(part.pruned);
        if self.rule == super::Prune::Sample {
            self.min_count = self.min_count.max(part.min_count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::PreTokenizer;

    #[test]
    fn the_union_of_a_tallys_parts_is_the_tally() {
        let pre = PreTokenizer::new("gpt2", &[]).unwrap();
        let text: String = (0..20_000)
            .map(|i| format!(" w{} {}", i % 7919, "x".repeat(12 + i % 30)))
            .collect();
        let mut whole = WordTally::default();
        whole.add_text(&pre, &text).unwrap();
        let mut copy = WordTally::default();
        copy.add_text(&pre, &text).unwrap();
        let shards: Vec<WordTally> = copy
            .split(3)
            .into_iter()
            .map(|part| {
                let mut shard = WordTally::default();
                shard.merge_part(part);
                shard
            })
            .collect();
        assert!(shards.iter().all(|s| !s.is_empty()));
        let union = WordTally::union(shards);
        assert_eq!(union.len(), whole.len());
        assert_eq!(union.into_counts(), whole.into_counts());
    }
}
