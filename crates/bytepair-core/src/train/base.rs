//! Extending a tokenizer: the words of a corpus split by a base's merges seed
//! the merge loop, which then learns new merges on top (see `train_on_base`).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::words::Words;
use super::{
    check_total_bytes, Run, SuperwordRules, TokenPrefix, TrainError, TrainOptions, Trained,
};
use crate::count::WordCounts;
use crate::encode::{EncodeError, Encoder};
use crate::memory::drop_in_background;
use crate::progress::Progress;

/// A tokenizer to extend (`train_on_base`).
pub struct Base<'a> {
    /// Encodes a word with the base's merges (rank order, as encoding does).
    pub encoder: &'a Encoder,
    /// Every token of the base that is not special: (id, bytes).
    pub tokens: Vec<(u32, Vec<u8>)>,
    /// The id of the first new merge: one past the base's largest id.
    pub first_new_id: u32,
}

/// Learn up to `num_merges` merges that extend `base`: each word of
/// `word_counts` is encoded with the base's merges, pair counts are seeded from
/// those tokens, and the loop goes on from there (limits, tie-break and
/// `progress` as in `train_with`). Merges are given in the base's ids; merge
/// `r` creates id `base.first_new_id + r`. A pair whose bytes are already a
/// token of the base is skipped.
///
/// # Errors
/// As `train_with`, and [`TrainError::NotInBase`] for bytes that the base
/// cannot encode (a vocabulary without some single byte).
pub fn train_on_base(
    word_counts: WordCounts,
    base: Base<'_>,
    num_merges: usize,
    options: &TrainOptions,
    progress: &Progress,
) -> Result<Trained, TrainError> {
    train_seeded(word_counts, base, num_merges, None, options, progress)
}

/// `train_on_base`, the merge loop held to `rules` when set (SuperBPE's
/// stage 2, `super::train_superwords`).
pub(super) fn train_seeded(
    word_counts: WordCounts,
    base: Base<'_>,
    num_merges: usize,
    rules: Option<SuperwordRules>,
    options: &TrainOptions,
    progress: &Progress,
) -> Result<Trained, TrainError> {
    check_total_bytes(&word_counts)?;
    let internal: FxHashMap<u32, u32> = base
        .tokens
        .iter()
        .enumerate()
        .map(|(k, &(id, _))| (id, k as u32))
        .collect();
    let words: Vec<(&[u8], u64)> = word_counts
        .iter()
        .filter(|(_, &c)| c > 0)
        .map(|(w, &c)| (&w[..], c))
        .collect();
    let encoded = words
        .par_iter()
        .map(|&(word, count)| {
            let mut ids = Vec::with_capacity(word.len());
            base.encoder
                .encode_word_into(word, &mut ids)
                .map_err(|e| match e {
                    EncodeError::NotInVocabulary(bytes) => TrainError::NotInBase(bytes),
                    _ => TrainError::NotInBase(word.to_vec()),
                })?;
            // An id outside `tokens` (a vocabulary giving one token two ids) is named by its word.
            let ids = ids
                .iter()
                .map(|id| internal.get(id).copied())
                .collect::<Option<Vec<u32>>>();
            let ids = ids.ok_or_else(|| TrainError::NotInBase(word.to_vec()))?;
            Ok((TokenPrefix::of(word).prefix, ids, count))
        })
        .collect::<Result<Vec<_>, TrainError>>()?;
    drop(words);
    drop_in_background(word_counts);
    let single_tokens: u64 = encoded
        .iter()
        .filter(|(_, ids, _)| ids.len() == 1)
        .map(|&(_, _, c)| c)
        .sum();
    let taken = base.tokens.iter().map(|(_, b)| b.clone()).collect();
    let n_base = base.tokens.len() as u32;
    let external: Vec<u32> = base.tokens.iter().map(|&(id, _)| id).collect();
    let run = Run {
        token_bytes: base.tokens.into_iter().map(|(_, b)| b).collect(),
        taken,
        single_tokens,
        num_merges,
        max_chars: usize::MAX,
        rules,
    };
    let (mut merges, stop, tokens) = if run.fits::<u16>() {
        let (words, freqs) = Words::<u16>::from_token_words(encoded);
        run.learn(words, freqs, options, progress)?
    } else {
        let (words, freqs) = Words::<u32>::from_token_words(encoded);
        run.learn(words, freqs, options, progress)?
    };
    let to_external = |id: u32| {
        if id < n_base {
            external[id as usize]
        } else {
            base.first_new_id + (id - n_base)
        }
    };
    for m in &mut merges {
        (m.left, m.right) = (to_external(m.left), to_external(m.right));
    }
    Ok(Trained {
        merges,
        stop,
        tokens,
    })
}
