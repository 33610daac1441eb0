//! Training from any initial symbols, not the 256 bytes: SentencePiece-style
//! BPE starts from characters (`crate::sentencepiece::train`). The words are
//! given as symbol sequences; the loop, its limits and its tie-break are
//! `train_with`'s.

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::words::{Symbol, Words};
use super::{Run, TokenPrefix, TrainError, TrainOptions, Trained};
use crate::memory::free_in_background;
use crate::progress::Progress;

/// Words as runs of symbol ids, in parts that threads build side by side:
/// the part's ids back to back (not a vector a word: millions of words), and
/// each word's end in them and its count; a word starts where the one before
/// it ends (16 bytes a word, not 24 with its start: the runs of multilingual
/// 10 MB are 300 k).
#[derive(Debug, Default)]
pub struct SymbolRuns {
    pub ids: Vec<u32>,
    pub ends: Vec<(usize, u64)>,
}

impl SymbolRuns {
    /// Each word's ids and count, in order.
    pub fn words(&self) -> impl Iterator<Item = (&[u32], u64)> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&(end, n)| {
            let word = &self.ids[start..end];
            start = end;
            (word, n)
        })
    }
}

/// Learn up to `num_merges` merges over the words of `parts` (each a
/// sequence of indexes into `symbols`, the symbols' bytes, with its count;
/// freed on another thread once the trainer's words are built, not held
/// under the merge loop);
/// merge `r` creates id `symbols.len() + r`. `max_chars`: no token longer than this many UTF-8
/// characters (SentencePiece's `max_sentencepiece_length`; `usize::MAX`: no
/// limit). Limits, tie-break (by the tokens' bytes) and `progress` as in
/// `train_with`.
///
/// # Errors
/// [`TrainError::Cancelled`] when cancelled through `progress`.
pub fn train_on_symbols(
    parts: Vec<SymbolRuns>,
    symbols: Vec<Vec<u8>>,
    num_merges: usize,
    options: &TrainOptions,
    max_chars: usize,
    progress: &Progress,
) -> Result<Trained, TrainError> {
    let single: u64 = parts
        .par_iter()
        .map(|part| {
            let once = part.words().filter(|(w, _)| w.len() == 1);
            once.map(|(_, n)| n).sum::<u64>()
        })
        .sum();
    let heads: Vec<(u64, usize)> = symbols
        .iter()
        .map(|b| (TokenPrefix::of(b).prefix, b.len()))
        .collect();
    let prefix_of = |ids: &[u32]| word_prefix(ids, &heads);
    let run = Run {
        token_bytes: symbols,
        taken: FxHashSet::default(),
        single_tokens: single,
        num_merges,
        max_chars,
        rules: None,
    };
    // The runs are freed while the pair index is built: on one thread it
    // then faulted in half the fresh pages (multilingual 10 MB), reusing
    // theirs, and the merge loop's peak RSS is lower by their size.
    let (merges, stop, tokens) = if run.fits::<u16>() {
        let (words, freqs) = Words::<u16>::from_runs(&parts, prefix_of);
        free_in_background(parts);
        run.learn(words, freqs, options, progress)?
    } else {
        let (words, freqs) = Words::<u32>::from_runs(&parts, prefix_of);
        free_in_background(parts);
        run.learn(words, freqs, options, progress)?
    };
    Ok(Trained {
        merges,
        stop,
        tokens,
    })
}

/// The first 8 bytes of the word `ids` spells (as `TokenPrefix`): the order
/// `Words` keeps words in, so that words sharing their first characters, and
/// so many of their pairs, sit close in memory. (The first symbol's bytes
/// alone put nearly every SentencePiece unit, all starting with "▁", in one
/// unordered group.)
fn word_prefix(ids: &[u32], heads: &[(u64, usize)]) -> u64 {
    // Each symbol's first 8 bytes shifted in after those before it (bytes
    // past the 8th fall off the end).
    let (mut prefix, mut n) = (0u64, 0usize);
    for &i in ids {
        let (head, len) = heads[i as usize];
        prefix |= head >> (8 * n);
        n += len;
        if n >= 8 {
            break;
        }
    }
    prefix
}

/// Where `Words::from_runs` writes the words, from every thread at once
/// (each word's place written by one).
pub(super) struct Scatter<S> {
    pub(super) symbols: *mut S,
    pub(super) freqs: *mut u64,
}

// SAFETY: the pointers are only written through `write`, whose callers write
// disjoint places (see there).
unsafe impl<S: Send> Sync for Scatter<S> {}

impl<S: Symbol> Scatter<S> {
    /// Write `ids` at symbol `at` and `n` as count `i`.
    ///
    /// # Safety
    /// `at..at + ids.len()` and `i` lie inside the buffers, and no other
    /// thread reads or writes them meanwhile.
    #[inline]
    pub(super) unsafe fn write(&self, at: usize, ids: &[u32], i: usize, n: u64) {
        // SAFETY: as the caller promised (written, not read: the room may
        // be uninitialized).
        unsafe {
            for (k, &id) in ids.iter().enumerate() {
                self.symbols.add(at + k).write(S::of(id));
            }
            self.freqs.add(i).write(n);
        }
    }
}

/// `words` (ids, count) as runs in `parts` parts, in order (for tests).
#[cfg(test)]
pub(super) fn runs_of(words: &[(&[u32], u64)], parts: usize) -> Vec<SymbolRuns> {
    let mut runs: Vec<SymbolRuns> = (0..parts).map(|_| SymbolRuns::default()).collect();
    for (k, &(ids, n)) in words.iter().enumerate() {
        let part = &mut runs[k * parts / words.len()];
        part.ids.extend_from_slice(ids);
        part.ends.push((part.ids.len(), n));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_keep_words_of_two_symbols_or_more_in_prefix_order() {
        // Prefix: the first id, reversed; ties keep the given order, across
        // parts too, on any number of threads.
        let given: [(&[u32], u64); 8] = [
            (&[5, 6], 1),
            (&[1], 3),
            (&[2, 3, 4], 0),
            (&[7, 8, 9], 2),
            (&[1, 2], 4),
            (&[7, 1], 5),
            (&[5, 5, 5], 6),
            (&[1, 1], 7),
        ];
        for (parts, threads) in [(1, 1), (3, 2), (8, 3)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let runs = runs_of(&given, parts);
            let (words, freqs) =
                pool.install(|| Words::<u16>::from_runs(&runs, |ids| 10 - u64::from(ids[0])));
            let got: Vec<Vec<u16>> = (0..words.count()).map(|i| words.get(i).to_vec()).collect();
            let want: [&[u16]; 6] = [&[7, 8, 9], &[7, 1], &[5, 6], &[5, 5, 5], &[1, 2], &[1, 1]];
            assert_eq!(got, want, "{parts} parts");
            assert_eq!(freqs, [2, 5, 1, 6, 4, 7], "{parts} parts");
            assert_eq!(words.capacity(), 14, "{parts} parts");
        }
    }
}
