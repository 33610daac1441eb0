//! Extending a tokenizer: the words of a corpus split by a base's merges seed
//! the merge loop, which then learns new merges on top (see `train_on_base`).

use rayon::prelude::*;

use super::words::{Symbol, Words, WordsPart};
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
    let internal = internal_numbers(&base.tokens);
    let taken = base.tokens.iter().map(|(_, b)| b.clone()).collect();
    let n_base = base.tokens.len() as u32;
    let external: Vec<u32> = base.tokens.iter().map(|&(id, _)| id).collect();
    let mut run = Run {
        token_bytes: base.tokens.into_iter().map(|(_, b)| b).collect(),
        taken,
        single_tokens: 0,
        num_merges,
        max_chars: usize::MAX,
        rules,
    };
    let (mut merges, stop, tokens) = if run.fits::<u16>() {
        let (words, freqs, single) = encode_words::<u16>(word_counts, base.encoder, &internal)?;
        run.single_tokens = single;
        run.learn(words, freqs, options, progress)?
    } else {
        let (words, freqs, single) = encode_words::<u32>(word_counts, base.encoder, &internal)?;
        run.single_tokens = single;
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

/// `train_seeded`'s internal number of an id that is not a token of the base.
const NO_TOKEN: u32 = u32::MAX;

/// Words per part that one thread encodes at a time: enough that parts are
/// few, few enough that the threads share the work evenly.
const ENCODE_CHUNK: usize = 4096;

/// The base's id -> internal number (the position in `tokens`; `NO_TOKEN`:
/// not one of them), a table indexed by id rather than a hash map.
fn internal_numbers(tokens: &[(u32, Vec<u8>)]) -> Vec<u32> {
    let top = tokens.iter().map(|&(id, _)| id as usize + 1).max();
    let mut internal = vec![NO_TOKEN; top.unwrap_or(0)];
    for (k, &(id, _)) in tokens.iter().enumerate() {
        internal[id as usize] = k as u32;
    }
    internal
}

/// The words of `word_counts` encoded with `encoder` in internal numbers
/// (`internal`), those of two tokens or more in `Words` order, their counts,
/// and the tokens of the others (one token each). The words are sorted by
/// prefix before encoding, so each thread encodes a run of the final words
/// into a flat part: no vector per word to gather (4 bytes a byte of text).
fn encode_words<S: Symbol>(
    word_counts: WordCounts,
    encoder: &Encoder,
    internal: &[u32],
) -> Result<(Words<S>, Vec<u64>, u64), TrainError> {
    let mut words: Vec<(u64, &[u8], u64)> = word_counts
        .iter()
        .filter(|(_, &c)| c > 0)
        .map(|(w, &c)| (TokenPrefix::of(w).prefix, &w[..], c))
        .collect();
    words.par_sort_unstable_by_key(|&(prefix, _, _)| prefix);
    let parts: Vec<Result<EncodedPart<S>, TrainError>> = words
        .par_chunks(ENCODE_CHUNK)
        .map(|chunk| encode_part(encoder, internal, chunk))
        .collect();
    drop(words);
    drop_in_background(word_counts);
    let parts = parts.into_iter().collect::<Result<Vec<_>, TrainError>>()?;
    let single_tokens = parts.iter().map(|p| p.single_tokens).sum();
    let (words, freqs) = Words::from_parts(parts.into_iter().map(|p| p.words).collect());
    Ok((words, freqs, single_tokens))
}

/// A run of words encoded with the base: those of two tokens or more, and
/// the tokens of the others (one token each).
struct EncodedPart<S: Symbol> {
    words: WordsPart<S>,
    single_tokens: u64,
}

/// Encode `chunk` (prefix, word, count) with `encoder`, in internal numbers
/// (`internal`). Every word is distinct, so the whole-word caches are skipped
/// (`Encoder::encode_distinct_into`).
fn encode_part<S: Symbol>(
    encoder: &Encoder,
    internal: &[u32],
    chunk: &[(u64, &[u8], u64)],
) -> Result<EncodedPart<S>, TrainError> {
    let mut part = EncodedPart {
        words: WordsPart::default(),
        single_tokens: 0,
    };
    let mut ids = Vec::new();
    for &(_, word, count) in chunk {
        ids.clear();
        encoder
            .encode_distinct_into(word, &mut ids)
            .map_err(|e| match e {
                EncodeError::NotInVocabulary(bytes) => TrainError::NotInBase(bytes),
                _ => TrainError::NotInBase(word.to_vec()),
            })?;
        for id in &mut ids {
            *id = match internal.get(*id as usize) {
                Some(&k) if k != NO_TOKEN => k,
                // An id outside `tokens` (a vocabulary giving one token two ids) is named by its word.
                _ => return Err(TrainError::NotInBase(word.to_vec())),
            };
        }
        match ids.len() {
            0 => {}
            1 => part.single_tokens += count,
            _ => part.words.push(&ids, count),
        }
    }
    Ok(part)
}
