//! The BPE merge loop over word counts (Sennrich et al. 2016, "Neural Machine
//! Translation of Rare Words with Subword Units"), in the incremental form used
//! by production trainers (HuggingFace tokenizers, rustbpe):
//!
//! * global pair counts weighted by word frequency, kept up to date as words change;
//! * a reverse index pair -> words that contain it, so a merge visits only those words;
//! * a max-heap of (count, pair) with lazy deletion: an entry is checked against the
//!   live count when popped and pushed back with the live count if stale;
//! * only pairs with a count of at least `threshold` (a power of two) are on the
//!   heap; the others wait in buckets by the power of two below their count, and
//!   when the heap runs empty the threshold is halved and the bucket it reaches
//!   joins the heap.
//!
//! Why lazy deletion is exact here: after the merge that creates token `N`, pairs
//! that do not involve `N` can only lose count, so every heap entry is an upper
//! bound of its live count; pairs involving `N` are brand new and are pushed once
//! with their final count at the end of the merge. The popped entry whose stored
//! count equals its live count is therefore the true maximum, and no pair waiting
//! in a bucket can beat it: every heap entry holds a count of at least the
//! threshold, and a waiting pair's count is below it (it was when the pair was
//! set aside, and counts only fall). The threshold is lowered when the heap is
//! empty.
//!
//! Why the buckets: most pairs a merge creates are rare (631k pairs after 32k
//! merges on the multilingual corpus, the 32000th merge counting 32), and a heap
//! of all of them (900k entries, 36 MB) missed the cache on most levels of each
//! pop; the heap now holds the pairs within a factor of two of the best.
//!
//! Tie-break (docs/design.md): highest count, then the lexicographically greatest
//! `(bytes(A), bytes(B))`, so results never depend on hash or thread order.
//!
//! Counts are u64 throughout (HF's 32-bit pair counts overflow on big corpora).
//!
//! Limits (`TrainOptions`, as HF tokenizers' `min_frequency` and `max_token_length`):
//! a pair whose merge would be longer than `max_token_length` bytes is never
//! queued (its count is still kept, so the seams around it stay exact), and the
//! loop stops when the best pair counts fewer than `min_frequency`. The
//! tie-break holds among the pairs left.
//!
//! Extending a tokenizer (`train_on_base`): every distinct word is encoded with
//! the base's encoder (rank-ordered merges, `crate::encode`) and the pair counts
//! are seeded from those token sequences, instead of replaying the base's tens
//! of thousands of merges through this loop; new merges then follow as usual,
//! on a dense internal numbering of the base's tokens.

mod apply;
mod base;
pub mod budget;
mod changes;
mod pairs;
mod queue;
mod rare;
mod superbpe;
mod symbols;
mod warm;
mod words;

use std::collections::BinaryHeap;

use rustc_hash::FxHashSet;

use crate::count::WordSource;
use crate::memory::drop_in_background;
use crate::progress::Progress;
use changes::SeamChanges;
use pairs::{initial_pair_index, PairMap};
use queue::Candidate;
use rare::RarePairs;
use words::{merge_words, Words, PARALLEL_MERGE_WORDS};

pub use base::{train_on_base, Base};
pub use superbpe::{train_superwords, SuperwordRules};
pub use symbols::{train_on_symbols, SymbolRuns};
pub use words::{merge_in_word, Seam, Symbol};

type Pair = (u32, u32);

/// One learned merge: the two token ids, the new id, and its pair count when chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    pub left: u32,
    pub right: u32,
    pub count: u64,
}

/// Limits on the merges the loop may choose. The default sets none.
#[derive(Debug, Clone, Default)]
pub struct TrainOptions {
    /// Stop when the best pair counts fewer than this (HF's `min_frequency`);
    /// 0 and 1 set no limit.
    pub min_frequency: u64,
    /// No token longer than this many bytes: a pair whose merge would be longer
    /// is skipped (never merged, not counted as a merge). None: no limit.
    pub max_token_length: Option<usize>,
}

/// Why the merge loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It learned every merge asked for.
    Finished,
    /// No pair that may be merged was left.
    NoPairLeft,
    /// The best pair left counts fewer than `TrainOptions::min_frequency`.
    BelowMinFrequency,
}

/// Result of training: merges in rank order (from `train`, merge `r` creates
/// id `256 + r`; from `train_on_base`, id `Base::first_new_id + r`).
#[derive(Debug)]
pub struct Trained {
    pub merges: Vec<Merge>,
    pub stop: Stop,
    /// Tokens the counted text holds after all merges (sum of count x word length).
    pub tokens: u64,
}

impl Trained {
    /// True when the loop ended before learning every merge asked for.
    pub fn stopped_early(&self) -> bool {
        self.stop != Stop::Finished
    }

    /// The bytes of the token each merge makes, in rank order, for a result
    /// of `train`: merge `r` makes id `256 + r`, the concatenation of its two parts.
    pub fn merged_tokens(&self) -> Vec<Vec<u8>> {
        let mut bytes: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for m in &self.merges {
            let token = [&bytes[m.left as usize][..], &bytes[m.right as usize][..]].concat();
            bytes.push(token);
        }
        bytes.split_off(256)
    }
}

/// The first 8 bytes of a token (big-endian, zero-padded) and its length capped
/// at 9: enough to order most pairs without touching their bytes.
#[derive(Clone, Copy)]
struct TokenPrefix {
    prefix: u64,
    len: u8,
}

impl TokenPrefix {
    fn of(bytes: &[u8]) -> Self {
        let mut head = [0u8; 8];
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        TokenPrefix {
            prefix: u64::from_be_bytes(head),
            len: bytes.len().min(9) as u8,
        }
    }
}

/// A token's length in bytes and in UTF-8 characters.
fn size_of_token(bytes: &[u8]) -> (usize, usize) {
    let chars = bytes.iter().filter(|&&x| x & 0xC0 != 0x80).count();
    (bytes.len(), chars)
}

struct Trainer<S: Symbol> {
    words: Words<S>,
    /// Symbols of the words as they stand (`words` is compacted when merges
    /// have freed a third of its buffer).
    live_symbols: usize,
    freqs: Vec<u64>,
    /// Token id -> bytes (ids 0..255 are single bytes), and their prefixes.
    token_bytes: Vec<Vec<u8>>,
    token_prefix: Vec<TokenPrefix>,
    /// Every token's length in bytes and in UTF-8 characters (`too_long`
    /// asks for both of every pair queued: hundreds of thousands).
    token_size: Vec<(usize, usize)>,
    /// Every pair with a positive count. One map for the count and the reverse
    /// index, so counting a new occurrence up is one hash lookup, not two.
    pairs: PairMap,
    /// Candidates for the next merge, all with counts of at least `threshold`:
    /// every live pair with a count of at least `threshold` has an entry whose
    /// count is at least its own.
    heap: BinaryHeap<Candidate>,
    /// A power of two; pairs below it wait in `waiting`.
    threshold: u64,
    /// Pairs set aside with a count below `threshold`, by the exponent of the
    /// power of two below that count (`bucket_of`). May hold pairs that are
    /// gone or counted lower since; they are re-checked when their bucket
    /// joins the heap.
    waiting: Vec<Vec<Pair>>,
    /// The changes of the merge being applied (kept for its tables).
    changes: SeamChanges,
    /// One more table per extra thread, for the parts of a merge split
    /// over the threads (`merge_words`); empty between merges.
    spare_changes: Vec<SeamChanges>,
    /// Longest token allowed, in bytes and in UTF-8 characters.
    max_token_length: usize,
    max_token_chars: usize,
    /// The bytes of the base's tokens when extending one: a pair that would
    /// make one of them again is skipped (the base's encoder would merge it
    /// with the base's rank anyway, and one token must not have two ids).
    /// With superword rules, every token made joins it too.
    taken: FxHashSet<Vec<u8>>,
    /// SuperBPE stage 2's limits (`set_rules`), and every token's shape.
    rules: Option<(superbpe::SuperwordRules, Vec<superbpe::Shape>)>,
    /// The rare pairs merges make, left out of `pairs` (`rare`).
    rare: RarePairs,
}

impl<S: Symbol> Trainer<S> {
    /// A trainer over `words` (token ids indexing `token_bytes`); no token
    /// longer than `max_chars` UTF-8 characters (`usize::MAX`: no limit).
    fn new(
        words: Words<S>,
        freqs: Vec<u64>,
        token_bytes: Vec<Vec<u8>>,
        taken: FxHashSet<Vec<u8>>,
        options: &TrainOptions,
        max_chars: usize,
    ) -> Self {
        let token_prefix = token_bytes.iter().map(|b| TokenPrefix::of(b)).collect();
        let token_size = token_bytes.iter().map(|b| size_of_token(b)).collect();
        let pairs = initial_pair_index(&words, &freqs, token_bytes.len());
        let vocabulary = token_bytes.len();
        let live_symbols = words.capacity();
        let mut t = Trainer {
            live_symbols,
            words,
            freqs,
            token_bytes,
            token_prefix,
            token_size,
            pairs,
            heap: BinaryHeap::new(),
            threshold: 1 << 63,
            waiting: vec![Vec::new(); 64],
            changes: SeamChanges::for_vocabulary(vocabulary),
            spare_changes: (1..rayon::current_num_threads())
                .map(|_| SeamChanges::for_vocabulary(vocabulary))
                .collect(),
            max_token_length: options.max_token_length.unwrap_or(usize::MAX),
            max_token_chars: max_chars,
            taken,
            rules: None,
            rare: RarePairs::default(),
        };
        t.rebuild_queue();
        t
    }

    /// Whether `pair` may ever be merged: not too long, and allowed by the rules.
    fn may_merge(&self, pair: Pair) -> bool {
        if self.too_long(pair) {
            return false;
        }
        self.rules.as_ref().is_none_or(|(rules, shapes)| {
            rules.allows(shapes[pair.0 as usize], shapes[pair.1 as usize])
        })
    }

    /// Whether merging `pair` would make a token longer than allowed.
    fn too_long(&self, pair: Pair) -> bool {
        let (left, right) = (
            self.token_size[pair.0 as usize],
            self.token_size[pair.1 as usize],
        );
        left.0 + right.0 > self.max_token_length || left.1 + right.1 > self.max_token_chars
    }

    /// Whether `pair` may be merged: `may_merge`, and not a token already.
    fn eligible(&self, pair: Pair) -> bool {
        if !self.may_merge(pair) {
            return false;
        }
        self.taken.is_empty()
            || !self.taken.contains(
                &[
                    &self.token_bytes[pair.0 as usize][..],
                    &self.token_bytes[pair.1 as usize][..],
                ]
                .concat(),
            )
    }

    /// Add the token `left + right` (the next id).
    fn push_token(&mut self, pair: Pair) {
        let bytes = [
            &self.token_bytes[pair.0 as usize][..],
            &self.token_bytes[pair.1 as usize][..],
        ]
        .concat();
        if let Some((_, shapes)) = &mut self.rules {
            shapes.push(superbpe::Shape::of(&bytes));
            self.taken.insert(bytes.clone());
        }
        self.token_prefix.push(TokenPrefix::of(&bytes));
        self.token_size.push(size_of_token(&bytes));
        self.token_bytes.push(bytes);
    }

    /// Tokens in the counted text as the words stand now.
    fn token_total(&self) -> u64 {
        self.words
            .len
            .iter()
            .zip(&self.freqs)
            .map(|(&n, f)| u64::from(n) * f)
            .sum()
    }

    /// Apply merge `pair -> new_id` to every word that has it, updating pair
    /// counts and the reverse index, then queue the new pairs. Returns
    /// whether the words were split over the threads.
    fn apply_merge(&mut self, pair: Pair, new_id: u32) -> bool {
        let word_ids = self.pairs.take_words(&pair);
        // Lists are made in increasing order, each word once (a sort and a
        // dedup of every list taken were 2-3% of the loop).
        debug_assert!(word_ids.windows(2).all(|w| w[0] < w[1]));
        let Trainer {
            words,
            freqs,
            changes,
            spare_changes,
            ..
        } = self;
        let parts = match word_ids.len() >= PARALLEL_MERGE_WORDS {
            true => spare_changes.len(),
            false => 0,
        };
        let spare = &mut spare_changes[..parts];
        let (view, start) = words.view();
        merge_words(
            view,
            (start, freqs),
            &word_ids,
            (pair, new_id),
            changes,
            spare,
        );
        self.live_symbols -= std::mem::take(&mut self.changes.merged);
        for (p, count) in self.apply_changes(pair, new_id) {
            self.enqueue(p, count);
        }
        if 3 * self.live_symbols < 2 * self.words.capacity() {
            self.words.compact();
            crate::memory::release_freed_memory();
        }
        parts > 0
    }

    /// Distinct pairs with a positive count: an upper bound of the merges left.
    fn pair_count(&self) -> usize {
        self.pairs.len()
    }

    fn live_count(&self, pair: Pair) -> u64 {
        self.pairs.count(&pair).unwrap_or(0)
    }
}

/// Why training did not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrainError {
    /// Cancelled through the `Progress` (Ctrl-C).
    #[error("cancelled")]
    Cancelled,
    /// The sum of count x word length (the bytes of text the counts stand for)
    /// reaches 2^64, so a pair count could overflow u64.
    #[error(
        "the counts add up to {total_bytes} bytes of text, beyond 2**64: \
         pair counts would overflow u64"
    )]
    CountsTooLarge { total_bytes: u128 },
    /// A word holds bytes the base tokenizer has no token for.
    #[error("bytes b\"{}\" are not in the base tokenizer's vocabulary", .0.escape_ascii())]
    NotInBase(Vec<u8>),
}

/// Every pair count and token total is at most the sum of count x word length,
/// so below 2^64 u64 arithmetic in the merge loop is exact.
fn check_total_bytes(word_counts: &impl WordSource) -> Result<(), TrainError> {
    let mut total_bytes = 0u128;
    word_counts.for_each_word(|w, c| total_bytes += w.len() as u128 * c as u128);
    if total_bytes >= 1u128 << 64 {
        return Err(TrainError::CountsTooLarge { total_bytes });
    }
    Ok(())
}

/// Learn up to `num_merges` merges from word counts (word bytes -> count),
/// with no limits (`train_with` and the default `TrainOptions`).
///
/// # Errors
/// As `train_with`.
pub fn train(
    word_counts: impl WordSource + Send + 'static,
    num_merges: usize,
    progress: &Progress,
) -> Result<Trained, TrainError> {
    train_with(word_counts, num_merges, &TrainOptions::default(), progress)
}

/// Learn up to `num_merges` merges from word counts (word bytes -> count)
/// within the limits of `options`; merge `r` creates id `256 + r`.
///
/// Words of one byte carry no pair and are skipped. `progress.done` counts merges.
///
/// # Errors
/// [`TrainError::CountsTooLarge`] before any work when the counts stand for 2^64
/// bytes of text or more (counts merged from artifacts can get there);
/// [`TrainError::Cancelled`] when cancelled through `progress`.
pub fn train_with(
    word_counts: impl WordSource + Send + 'static,
    num_merges: usize,
    options: &TrainOptions,
    progress: &Progress,
) -> Result<Trained, TrainError> {
    check_total_bytes(&word_counts)?;
    let mut single_byte_tokens = 0u64;
    word_counts.for_each_word(|w, c| single_byte_tokens += if w.len() == 1 { c } else { 0 });
    let run = Run {
        token_bytes: (0..=255u8).map(|b| vec![b]).collect(),
        taken: FxHashSet::default(),
        single_tokens: single_byte_tokens,
        num_merges,
        max_chars: usize::MAX,
        rules: None,
    };
    let (merges, stop, tokens) = if run.fits::<u16>() {
        let (words, freqs) = Words::<u16>::from_counts(&word_counts);
        drop_in_background(word_counts);
        run.learn(words, freqs, options, progress)?
    } else {
        let (words, freqs) = Words::<u32>::from_counts(&word_counts);
        drop_in_background(word_counts);
        run.learn(words, freqs, options, progress)?
    };
    Ok(Trained {
        merges,
        stop,
        tokens,
    })
}

/// What a merge loop starts from besides its words: the tokens there are
/// (ids index `token_bytes`), those it must not make again, the tokens of the
/// words left out (one token each), the longest token in UTF-8 characters
/// (`usize::MAX`: no limit) and SuperBPE's rules (`Trainer::set_rules`).
struct Run {
    token_bytes: Vec<Vec<u8>>,
    taken: FxHashSet<Vec<u8>>,
    single_tokens: u64,
    num_merges: usize,
    max_chars: usize,
    rules: Option<SuperwordRules>,
}

impl Run {
    /// Whether every id of the run (the tokens, then one per merge) fits `S`.
    fn fits<S: Symbol>(&self) -> bool {
        (self.token_bytes.len() + self.num_merges).saturating_sub(1) <= S::MAX_ID as usize
    }

    /// Build the trainer and run the merge loop (`learn`).
    fn learn<S: Symbol>(
        self,
        words: Words<S>,
        freqs: Vec<u64>,
        options: &TrainOptions,
        progress: &Progress,
    ) -> Result<(Vec<Merge>, Stop, u64), TrainError> {
        let mut trainer = Trainer::new(
            words,
            freqs,
            self.token_bytes,
            self.taken,
            options,
            self.max_chars,
        );
        if let Some(rules) = self.rules {
            trainer.set_rules(rules);
        }
        let sizes = (self.single_tokens, self.num_merges);
        warm::with_warm_pool(|warm| learn(trainer, sizes, options, progress, warm))
    }
}

/// The merge loop: new ids follow the trainer's tokens; `single_tokens` is
/// the tokens of the words left out of the trainer (one token each). The
/// pool's other threads are kept awake while merges are split over them.
fn learn<S: Symbol>(
    mut t: Trainer<S>,
    (single_tokens, num_merges): (u64, usize),
    options: &TrainOptions,
    progress: &Progress,
    warm: &warm::Warm<'_, '_>,
) -> Result<(Vec<Merge>, Stop, u64), TrainError> {
    warm.keep_awake();
    let first_new_id = t.token_bytes.len() as u32;
    // Capacity from what the words can hold, not from the request: a vocab_size of
    // 10^10 must not reserve 160 GB up front.
    let mut merges = Vec::with_capacity(num_merges.min(t.pair_count()));
    let mut stop = Stop::Finished;
    while merges.len() < num_merges {
        if progress.is_cancelled() {
            return Err(TrainError::Cancelled);
        }
        let best = t.pop_best();
        if t.rare.may_hide_best(best.map(|(_, count)| count)) {
            t.recount();
            continue;
        }
        let Some((pair, count)) = best else {
            stop = Stop::NoPairLeft;
            break;
        };
        if count < options.min_frequency {
            stop = Stop::BelowMinFrequency;
            break;
        }
        let new_id = first_new_id + merges.len() as u32;
        t.push_token(pair);
        if t.apply_merge(pair, new_id) {
            warm.keep_awake();
        }
        merges.push(Merge {
            left: pair.0,
            right: pair.1,
            count,
        });
        progress.add(1);
        t.rare.guess(&merges, num_merges);
        // Compaction keeps the heap within a small factor of the live pairs.
        if t.heap.len() > 4 * t.pairs.len() + 1024 {
            t.rebuild_queue();
        }
    }
    let tokens = single_tokens + t.token_total();
    drop_in_background(t);
    Ok((merges, stop, tokens))
}

#[cfg(test)]
mod tests;
