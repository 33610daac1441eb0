//! Training from any initial symbols, not the 256 bytes: SentencePiece-style
//! BPE starts from characters (`crate::sentencepiece::train`). The words are
//! given as symbol sequences; the loop, its limits and its tie-break are
//! `train_with`'s.

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::words::Words;
use super::{Run, TokenPrefix, TrainError, TrainOptions, Trained};
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
/// sequence of indexes into `symbols`, the symbols' bytes, with its count);
/// merge `r` creates id `symbols.len() + r`. `max_chars`: no token longer than this many UTF-8
/// characters (SentencePiece's `max_sentencepiece_length`; `usize::MAX`: no
/// limit). Limits, tie-break (by the tokens' bytes) and `progress` as in
/// `train_with`.
///
/// # Errors
/// [`TrainError::Cancelled`] when cancelled through `progress`.
pub fn train_on_symbols(
    parts: &[SymbolRuns],
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
    let (merges, stop, tokens) = if run.fits::<u16>() {
        let (words, freqs) = Words::<u16>::from_runs(parts, prefix_of);
        run.learn(words, freqs, options, progress)?
    } else {
        let (words, freqs) = Words::<u32>::from_runs(parts, prefix_of);
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
