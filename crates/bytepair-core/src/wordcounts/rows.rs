//! The rows of a word-counts artifact as training holds them (`WordRows`),
//! and the training memory budget applied while they are read.
//!
//! Each word of an artifact is in exactly one part, and its count there is
//! final, so the rows are appended, never looked up: every word's bytes back
//! to back, its length and its count (L + 12 bytes a word; the byte-string map
//! they were summed into before took ~100). For the same reason a budget can
//! keep exactly the most frequent words: every word counted at least `t`
//! times, for the smallest `t` whose words fit (`CountHistogram`), whatever
//! the order the parts come in. Or a budget can keep a *sample* of the rare
//! words that stands for all of them (`WordRows::sampling`).

use super::{for_each_row, ColumnsError};
use crate::count::{add_word, prune_to_budget, split_long_word, Prune};
use crate::count::{Pruned, Word, WordCounts, WordSource};
use crate::train::budget::{CountHistogram, TrainingCost};

/// The rows of an artifact: each word once, with its final count (see module docs).
#[derive(Default)]
pub struct WordRows {
    data: Vec<u8>,
    lens: Vec<u32>,
    counts: Vec<u64>,
    /// Rows whose priority (`Prune::priority`: their count unless sampling)
    /// is lower are dropped (raised by the budget only).
    min_count: u64,
    /// Which rows a threshold keeps: the most frequent, or a sample.
    rule: Prune,
    /// The training memory budget, if any, and what a word costs the merge loop.
    budget: Option<u64>,
    cost: TrainingCost,
    /// Words and bytes of every row kept when it came, by priority.
    kept: CountHistogram,
    pruned: Pruned,
    /// With `folding`: the pieces of the rows dropped, summed by piece.
    folded: Option<WordCounts>,
}

/// What becomes of the words a budget cannot hold (`Accumulator::add_rows`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BeyondBudget {
    /// Dropped: the most frequent words are kept.
    #[default]
    Drop,
    /// Folded into pieces (`WordRows::folding`).
    Fold,
    /// A sample of them stands for them all (`WordRows::sampling`).
    Sample,
}

/// The longest piece a dropped word is folded into (`WordRows::folding`).
pub const FOLD_BYTES: usize = 8;

/// Add `n` occurrences of each piece of `word` (at most `FOLD_BYTES` bytes,
/// cut at UTF-8 character boundaries: `count::split_long_word`) to `pieces`.
pub fn fold_word(pieces: &mut WordCounts, word: &[u8], n: u64) {
    for piece in split_long_word(word, FOLD_BYTES) {
        add_word(pieces, piece, n);
    }
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

    /// Fold the words the budget drops into pieces of at most `FOLD_BYTES`
    /// bytes (`fold_word`) instead of losing them: the pieces are added as
    /// rows by `finish`, and the budget is applied again to rows and pieces
    /// together, so the pairs inside a rare word still count (a rare long word
    /// holds text whose merges the frequent words need). The pieces held
    /// meanwhile take at most a quarter of the budget (the rarest dropped past it).
    /// Without a budget nothing is dropped, so nothing is folded.
    pub fn folding(mut self) -> Self {
        if self.budget.is_some() {
            self.folded = Some(WordCounts::default());
        }
        self
    }

    /// Keep a sample of the rare words instead of dropping them all
    /// (threshold sampling, Duffield, Lund and Thorup, "Learn more, sample
    /// less", 2005; `Prune::Sample`): at threshold `t`, a word counted `c >= t`
    /// times stays exactly; one counted `c < t` times stays when its hash
    /// falls in the first `c / t` of the hash range, so with probability
    /// `c / t`, and then counts `t` times (`iter`), so every pair count is
    /// unbiased. `t` is the smallest threshold whose sample fits the budget.
    /// The hash is of the word's bytes: the same rows give the same sample in
    /// any order, on any machine. A rare word's text (a long CJK run, an
    /// identifier) stays represented: on the 117 MB mix within 1/10 of the
    /// exact cost it keeps 85% of the first 32k merges and bytes per token
    /// within 0.8%, against 75% and 3.3% for the most frequent words
    /// (`bench/bench_pruning.py`). Not with `folding` (the sample already
    /// stands for the words dropped).
    pub fn sampling(mut self) -> Self {
        self.rule = Prune::Sample;
        self.folded = None;
        self
    }

    /// Does the current threshold keep `word`, counted `n` times?
    fn keeps(&self, word: &[u8], n: u64) -> bool {
        self.rule.priority(word, n) >= self.min_count
    }

    /// Count `word` (`n` times) as dropped, folding it when `folding`.
    fn drop_row(&mut self, word: &[u8], n: u64) {
        self.pruned.words += 1;
        self.pruned.pre_tokens += n;
        if let (Some(pieces), Some(budget)) = (&mut self.folded, self.budget) {
            fold_word(pieces, word, n);
            if crate::count::memory_bytes(pieces) as u64 > budget / 4 {
                prune_to_budget(pieces, budget as usize / 8, Prune::Rare, 2);
            }
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
            let priority = self.rule.priority(word, n);
            if priority < self.min_count {
                self.drop_row(word, n);
                return;
            }
            self.data.extend_from_slice(word);
            self.lens.push(len);
            self.counts.push(n);
            self.kept.add(priority, word.len());
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

    /// Drop the rows of a priority below `min_count` (in place).
    fn drop_below(&mut self, min_count: u64) {
        let (mut read, mut write) = (0usize, 0usize);
        let mut kept = 0;
        for i in 0..self.counts.len() {
            let len = self.lens[i] as usize;
            let n = self.counts[i];
            if self.rule.priority(&self.data[read..read + len], n) >= min_count {
                self.data.copy_within(read..read + len, write);
                self.lens[kept] = self.lens[i];
                self.counts[kept] = n;
                kept += 1;
                write += len;
            } else {
                if self.folded.is_some() {
                    let word = self.data[read..read + len].to_vec();
                    self.drop_row(&word, n);
                } else {
                    self.pruned.words += 1;
                    self.pruned.pre_tokens += n;
                }
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
        if let Some(pieces) = self.folded.take() {
            self.add_pieces(pieces);
        }
        self.data.shrink_to_fit();
        self.lens.shrink_to_fit();
        self.counts.shrink_to_fit();
        crate::memory::release_freed_memory();
    }

    /// Apply the budget to the rows and the folded `pieces` together: drop
    /// the rows below the new minimum count (as words dropped, not folded
    /// again), then append the pieces that reach it as rows (a piece that is
    /// also a word is two rows: training sums them). Pieces left out are
    /// parts of words counted as dropped already.
    fn add_pieces(&mut self, pieces: WordCounts) {
        let Some(budget) = self.budget else { return };
        let mut histogram = self.kept.clone();
        pieces.iter().for_each(|(p, &n)| histogram.add(n, p.len()));
        let t = histogram
            .min_count_within(budget, &self.cost)
            .max(self.min_count);
        self.drop_below(t);
        self.min_count = t;
        for (piece, n) in pieces.into_iter().filter(|&(_, n)| n >= t) {
            self.data.extend_from_slice(&piece);
            self.lens.push(piece.len() as u32);
            self.counts.push(n);
            self.kept.add(n, piece.len());
        }
    }

    /// Every row held, kept or not yet dropped: (word, count as read).
    fn held(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        let mut at = 0;
        self.lens.iter().zip(&self.counts).map(move |(&len, &n)| {
            let word = &self.data[at..at + len as usize];
            at += len as usize;
            (word, n)
        })
    }

    /// Rows kept so far (distinct words).
    pub fn len(&self) -> usize {
        self.held().filter(|&(w, n)| self.keeps(w, n)).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pre-tokens of the rows kept (as `iter` counts them: exact, or the
    /// sample's estimate).
    pub fn total(&self) -> u128 {
        self.iter().map(|(_, n)| u128::from(n)).sum()
    }

    /// What the budget dropped: words, their pre-tokens, and the minimum
    /// count of the words kept (sampling: the threshold `t`, the count each
    /// word sampled stands for), 0 when nothing was dropped. Rows still held
    /// below the threshold are counted as dropped.
    pub fn pruned(&self) -> Pruned {
        let mut pruned = self.pruned;
        for (_, n) in self.held().filter(|&(w, n)| !self.keeps(w, n)) {
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

    /// Every row kept: (word, count), in the order the parts came. A word
    /// sampled counts `t` times if it was counted fewer (its estimate).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        let estimate = match self.rule {
            Prune::Rare => 0,
            Prune::Sample => self.min_count,
        };
        self.held()
            .filter(|&(w, n)| self.keeps(w, n))
            .map(move |(w, n)| (w, n.max(estimate)))
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

    /// Rows of a Zipf law: word `i` (of 1 to 12 bytes more) counted
    /// ~200,000 / i times, at least once; most words are rare.
    fn zipf_words() -> Vec<(String, i64)> {
        let mut words: Vec<(String, i64)> = (1..=60_000i64)
            .map(|i| {
                let pad = "x".repeat((i % 12) as usize);
                (format!(" w{i}{pad}"), (200_000 / i).max(1))
            })
            .collect();
        words.sort();
        words
    }

    fn parts_of(words: &[(String, i64)], reverse: bool) -> Vec<Columns> {
        let mut parts: Vec<Columns> = words
            .chunks(7_000)
            .map(|c| part(&c.iter().map(|(w, n)| (&w[..], *n)).collect::<Vec<_>>()))
            .collect();
        if reverse {
            parts.reverse();
        }
        parts
    }

    #[test]
    fn a_sample_fits_the_budget_stands_for_every_word_and_is_reproducible() {
        let words = zipf_words();
        let cost = TrainingCost::default();
        let all: u64 = words.iter().map(|(w, _)| cost.of(w.len())).sum();
        let budget = all / 10;
        let true_total: i64 = words.iter().map(|w| w.1).sum();
        let true_text: i64 = words.iter().map(|(w, n)| n * w.len() as i64).sum();
        let mut samples = vec![];
        for reverse in [false, true] {
            let mut rows = WordRows::with_budget(Some(budget), cost).sampling();
            for p in &parts_of(&words, reverse) {
                push(&mut rows, p);
            }
            rows.finish();
            let t = rows.pruned().min_count;
            assert!(t > 2, "the budget sampled: threshold {t}");
            let held: u64 = rows.iter().map(|(w, _)| cost.of(w.len())).sum();
            assert!(held <= budget, "{held} bytes held, budget {budget}");
            assert!(
                rows.len() < words.len() / 5,
                "{} of {} words kept",
                rows.len(),
                words.len()
            );
            let counts: std::collections::HashMap<Vec<u8>, u64> =
                rows.iter().map(|(w, n)| (w.to_vec(), n)).collect();
            for (w, n) in &words {
                match counts.get(w.as_bytes()) {
                    // Frequent words exactly; a rare word sampled stands for t.
                    Some(&got) => assert_eq!(got, (*n as u64).max(t), "{w}"),
                    None => assert!((*n as u64) < t, "{w} ({n}) dropped at {t}"),
                }
            }
            // Unbiased in aggregate: the estimates sum to the true totals (the
            // words left out hold 27% of the pre-tokens and 34% of the text
            // here: a sample counted at its own counts would miss them).
            let total = rows.total() as f64;
            let text: u64 = rows.iter().map(|(w, n)| n * w.len() as u64).sum();
            let dropped = rows.pruned().pre_tokens as f64 / true_total as f64;
            assert!(
                dropped > 0.2,
                "the sample left out {dropped:.3} of the pre-tokens"
            );
            for (what, got, want) in [
                ("pre-tokens", total, true_total),
                ("text", text as f64, true_text),
            ] {
                let error = (got - want as f64).abs() / want as f64;
                assert!(
                    error < 0.02,
                    "{what}: estimate {got} of {want} (threshold {t})"
                );
            }
            samples.push(counts);
        }
        assert_eq!(
            samples[0], samples[1],
            "the same sample whatever the part order"
        );
    }

    #[test]
    fn folding_keeps_the_pieces_of_the_words_dropped_within_the_budget() {
        // 400 frequent words, and 3000 rare long words (counted once or twice)
        // that share their pieces: " xylophon" + "eNNNN".
        let mut words: Vec<(String, i64)> = (0..400).map(|i| (format!(" w{i:03}"), 50)).collect();
        words.extend((0..3000).map(|i| (format!(" xylophone{i:04}"), 1 + i % 2)));
        words.sort();
        let cost = TrainingCost::default();
        let frequent: u64 = words[..400].iter().map(|(w, _)| cost.of(w.len())).sum();
        let budget = frequent + 200 * cost.of(8);
        let parts: Vec<Columns> = words
            .chunks(500)
            .map(|c| part(&c.iter().map(|(w, n)| (&w[..], *n)).collect::<Vec<_>>()))
            .collect();
        let mut results = vec![];
        for fold in [false, true] {
            let rows = WordRows::with_budget(Some(budget), cost);
            let mut rows = if fold { rows.folding() } else { rows };
            for p in &parts {
                push(&mut rows, p);
            }
            rows.finish();
            let kept: std::collections::HashMap<Vec<u8>, u64> =
                rows.iter().map(|(w, n)| (w.to_vec(), n)).collect();
            let held: u64 = kept.keys().map(|w| cost.of(w.len())).sum();
            assert!(
                held <= cost.words_budget(budget),
                "fold {fold}: within the budget"
            );
            // Every long word is dropped (and counted as such) either way.
            assert_eq!(rows.pruned().words, 3000, "fold {fold}");
            assert_eq!(rows.pruned().pre_tokens, 4500, "fold {fold}");
            results.push(kept);
        }
        assert!(!results[0].contains_key(&b" xylopho"[..]));
        // Folded: the shared piece carries every occurrence of the words dropped.
        assert_eq!(results[1].get(&b" xylopho"[..]), Some(&4500));
        assert_eq!(results[1].get(&b" w123"[..]), Some(&50));
    }
}
