//! The rows of a word-counts artifact as training holds them (`WordRows`),
//! and the training memory budget applied while they are read.
//!
//! Each word of an artifact is in exactly one part, and its count there is
//! final, so the rows are appended, never looked up: every word's bytes back
//! to back, its length and its count (L + 12 bytes a word; the byte-string map
//! they were summed into before took ~100). For the same reason a budget can
//! keep exactly the most frequent words: every word counted at least `t`
//! times, for the smallest `t` whose words fit (`CountHistogram`), whatever
//! the order the parts come in.

use super::{for_each_row, ColumnsError};
use crate::count::{Pruned, Word, WordSource};
use crate::train::budget::{CountHistogram, TrainingCost};

/// The rows of an artifact: each word once, with its final count (see module docs).
#[derive(Default)]
pub struct WordRows {
    data: Vec<u8>,
    lens: Vec<u32>,
    counts: Vec<u64>,
    /// Rows counted fewer times are dropped (raised by the budget only).
    min_count: u64,
    /// The training memory budget, if any, and what a word costs the merge loop.
    budget: Option<u64>,
    cost: TrainingCost,
    /// Words and bytes of every row kept when it came, by count.
    kept: CountHistogram,
    pruned: Pruned,
}

impl WordRows {
    /// Rows that keep only the words the merge loop can hold within `budget`
    /// bytes (`TrainingCost::words_budget`), each word costing `cost`, the most
    /// frequent first; None keeps every row.
    pub fn with_budget(budget: Option<u64>, cost: TrainingCost) -> Self {
        WordRows {
            budget: budget.map(|b| cost.words_budget(b)),
            cost,
            ..WordRows::default()
        }
    }

    /// Append the rows of one part (Arrow buffers, see `for_each_row`; each
    /// word once, sorted). Rows below the current minimum count are dropped
    /// (and counted in `pruned`); with a budget, the minimum count rises as
    /// needed. A word must not be in two parts: it would be trained on as two
    /// words (the same merges; only `len` tells).
    ///
    /// # Errors
    /// Bad offsets, a negative count, a repeated word, or a word of 4 GiB or more.
    pub fn push_part(
        &mut self,
        data: &[u8],
        offsets: &[i64],
        counts: &[i64],
    ) -> Result<(), ColumnsError> {
        let mut too_long = None;
        for_each_row(data, offsets, counts, true, |word, n| {
            let Ok(len) = u32::try_from(word.len()) else {
                too_long.get_or_insert_with(|| word[..64].to_vec());
                return;
            };
            if n < self.min_count {
                self.pruned.words += 1;
                self.pruned.pre_tokens += n;
                return;
            }
            self.data.extend_from_slice(word);
            self.lens.push(len);
            self.counts.push(n);
            self.kept.add(n, word.len());
        })?;
        if let Some(word) = too_long {
            return Err(ColumnsError::BadOffsets(format!(
                "a word of 4 GiB or more (starting {:?})",
                String::from_utf8_lossy(&word)
            )));
        }
        self.enforce_budget();
        Ok(())
    }

    /// Raise the minimum count until the rows kept fit the budget; drop the
    /// rows below it once they hold more memory than the rows kept.
    fn enforce_budget(&mut self) {
        let Some(budget) = self.budget else { return };
        if self.kept.cost_from(self.min_count, &self.cost) > budget {
            self.min_count = self.kept.min_count_within(budget, &self.cost);
        }
        let live = self.kept.row_bytes_from(self.min_count);
        if self.kept.row_bytes_from(0) > 2 * live {
            self.drop_below(self.min_count);
        }
    }

    /// Drop the rows counted fewer than `min_count` times (in place).
    fn drop_below(&mut self, min_count: u64) {
        let (mut read, mut write) = (0usize, 0usize);
        let mut kept = 0;
        for i in 0..self.counts.len() {
            let len = self.lens[i] as usize;
            let n = self.counts[i];
            if n >= min_count {
                self.data.copy_within(read..read + len, write);
                self.lens[kept] = self.lens[i];
                self.counts[kept] = n;
                kept += 1;
                write += len;
            } else {
                self.pruned.words += 1;
                self.pruned.pre_tokens += n;
            }
            read += len;
        }
        self.data.truncate(write);
        self.lens.truncate(kept);
        self.counts.truncate(kept);
        self.kept.keep_from(min_count);
    }

    /// Drop what the budget no longer keeps and give spare capacity back:
    /// the rows are complete (call before training on them).
    pub fn finish(&mut self) {
        if self.min_count > 0 {
            self.drop_below(self.min_count);
        }
        self.data.shrink_to_fit();
        self.lens.shrink_to_fit();
        self.counts.shrink_to_fit();
        crate::memory::release_freed_memory();
    }

    /// Rows kept so far (distinct words).
    pub fn len(&self) -> usize {
        self.counts.iter().filter(|&&n| n >= self.min_count).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pre-tokens of the rows kept, exact.
    pub fn total(&self) -> u128 {
        self.counts
            .iter()
            .filter(|&&n| n >= self.min_count)
            .map(|&n| u128::from(n))
            .sum()
    }

    /// What the budget dropped: words, their pre-tokens, and the minimum
    /// count of the words kept (0 when nothing was dropped). Rows still held
    /// below the minimum count are counted as dropped.
    pub fn pruned(&self) -> Pruned {
        let mut pruned = self.pruned;
        for &n in self.counts.iter().filter(|&&n| n < self.min_count) {
            pruned.words += 1;
            pruned.pre_tokens += n;
        }
        pruned.min_count = if pruned.words > 0 { self.min_count } else { 0 };
        pruned
    }

    /// Heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.data.capacity() + 4 * self.lens.capacity() + 8 * self.counts.capacity()
    }

    /// Every row kept: (word, count), in the order the parts came.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        let mut at = 0;
        self.lens
            .iter()
            .zip(&self.counts)
            .filter_map(move |(&len, &n)| {
                let word = &self.data[at..at + len as usize];
                at += len as usize;
                (n >= self.min_count).then_some((word, n))
            })
    }
}

impl WordSource for WordRows {
    fn for_each_word<'a>(&'a self, mut f: impl FnMut(Word<'a>, u64)) {
        for (word, n) in self.iter() {
            f(Word::Bytes(word), n);
        }
    }

    fn len_hint(&self) -> usize {
        self.counts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wordcounts::Columns;

    fn part(rows: &[(&str, i64)]) -> Columns {
        Columns::of_rows(rows)
    }

    fn push(rows: &mut WordRows, p: &Columns) {
        rows.push_part(&p.data, &p.offsets, &p.counts).unwrap();
    }

    #[test]
    fn rows_keep_every_word_of_every_part() {
        let mut rows = WordRows::default();
        push(&mut rows, &part(&[("a", 3), ("b c", 1)]));
        push(&mut rows, &part(&[(" the", 7)]));
        let got: Vec<(&[u8], u64)> = rows.iter().collect();
        assert_eq!(got, [(&b"a"[..], 3), (&b"b c"[..], 1), (&b" the"[..], 7)]);
        assert_eq!(
            (rows.len(), rows.total(), rows.pruned()),
            (3, 11, Pruned::default())
        );
        let bad = part(&[("b", 1), ("b", 2)]);
        assert_eq!(
            rows.push_part(&bad.data, &bad.offsets, &bad.counts),
            Err(ColumnsError::Duplicate(b"b".to_vec()))
        );
    }

    #[test]
    fn a_budget_keeps_exactly_the_most_frequent_words_in_any_part_order() {
        // Word i is counted i times; the budget holds about a third of them.
        let words: Vec<(String, i64)> = (1..=3000).map(|i| (format!("w{i:05}"), i)).collect();
        let cost = TrainingCost::default();
        let all: u64 = words.iter().map(|(w, _)| cost.of(w.len())).sum();
        let budget = all / 3;
        let parts: Vec<Columns> = words
            .chunks(250)
            .map(|c| part(&c.iter().map(|(w, n)| (&w[..], *n)).collect::<Vec<_>>()))
            .collect();
        let mut kept = vec![];
        for order in [false, true] {
            let mut rows = WordRows::with_budget(Some(budget), cost);
            let mut parts: Vec<&Columns> = parts.iter().collect();
            if order {
                parts.reverse();
            }
            for p in parts {
                push(&mut rows, p);
            }
            rows.finish();
            let mut got: Vec<u64> = rows.iter().map(|(_, n)| n).collect();
            got.sort_unstable();
            kept.push(got);
            let pruned = rows.pruned();
            assert_eq!(pruned.words as usize + rows.len(), 3000);
            assert_eq!(pruned.min_count, *kept.last().unwrap().first().unwrap());
        }
        assert_eq!(kept[0], kept[1], "the same words whatever the order");
        // The smallest threshold that fits: all words from it on, and one more would not fit.
        let t = kept[0][0];
        let fits = |t: u64| {
            words
                .iter()
                .filter(|w| w.1 as u64 >= t)
                .map(|(w, _)| cost.of(w.len()))
                .sum::<u64>()
                <= budget
        };
        assert!(fits(t) && !fits(t - 1), "threshold {t}");
        assert_eq!(kept[0], (t..=3000).collect::<Vec<u64>>());
    }
}
