//! Word counting: stream a corpus, pre-tokenize it in parallel, and count each
//! distinct pre-token as a byte string. The words come from a pattern or a
//! tokenizer.json pipeline (`words`).
//!
//! Memory grows with the number of distinct words, not with corpus size: files
//! are read in blocks of `chunk_size` bytes and each block is cut at a *safe
//! cut* (see [`CutRule`]), a position where every preset pattern must end a
//! pre-token, so the counts are identical for any chunk size and any number of
//! threads (per-thread maps are summed, and addition commutes). A text with no
//! safe cut at all (one giant word) becomes a single chunk.

mod accumulator;
mod chunks;
mod ordered;
mod slots;
mod tally;
mod words;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use aho_corasick::AhoCorasick;
use rustc_hash::FxHashMap;

use crate::cut::CutRule;
use crate::pretokenize::SearchError;
use crate::progress::Progress;
pub use accumulator::{Accumulated, Accumulator, ScaleError, Weight};
pub use chunks::{document_ranges, Chunk, ChunkReader};
pub use tally::{sampled_estimates, Prune, Pruned, WordTally};
pub use words::{PipelineWords, SplitWords, Words};

/// Word (pre-token bytes) -> number of occurrences.
pub type WordCounts = FxHashMap<Vec<u8>, u64>;

/// Why counting stopped.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// `Progress::cancel` was called.
    #[error("cancelled")]
    Cancelled,
    /// Corpus bytes that are not UTF-8: file and byte offset of the first bad byte.
    #[error("{path}: invalid UTF-8 at byte offset {offset}")]
    InvalidUtf8 { path: String, offset: u64 },
    /// The same, in document `index` of a `count_documents` batch (offset within it).
    #[error("document {index}: invalid UTF-8 at byte offset {offset}")]
    InvalidUtf8InDocument { index: usize, offset: u64 },
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// Documents whose offsets are not n + 1 non-decreasing positions in the data.
    #[error("{0}")]
    BadOffsets(String),
    /// The backtracking engine gave up on a custom pattern.
    #[error(transparent)]
    Search(#[from] SearchError),
}

impl CountError {
    /// An I/O error on `path`.
    pub fn io(path: &str, source: std::io::Error) -> Self {
        CountError::Io {
            path: path.to_string(),
            source,
        }
    }
}

/// The name of document `index` of a batch read from `source` in errors:
/// `source` alone for a batch of one document (a whole file), else
/// `"{source}: record {first_record + index}"`.
pub fn document_name(source: &str, first_record: Option<u64>, index: usize) -> String {
    match first_record {
        Some(first) => format!("{source}: record {}", first + index as u64),
        None => source.to_string(),
    }
}

/// Pre-tokens longer than this many bytes are counted as several words by
/// default (see [`split_long_word`]). Real text has no pre-token near it (the
/// longest in ../shared/corpora is under 1 KiB); a run of one byte (a
/// zero-filled file) would otherwise become one word, and its merges tokens, of
/// the size of the run. HF tokenizers and sentencepiece bound lengths too
/// (`max_token_length`, `max_sentence_length`).
pub const DEFAULT_MAX_WORD_BYTES: usize = 1 << 16;

/// Bounds on counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Pre-tokens longer than this many bytes (at least 4) are counted as
    /// several words ([`split_long_word`]).
    pub max_word_bytes: usize,
    /// A memory budget, in bytes, for the word counts of one counting call (the
    /// tallies of all threads, then their sum); None: no bound. Past it the
    /// rarest words are dropped, as lossy counting does (Manku and Motwani,
    /// "Approximate Frequency Counts over Data Streams", 2002): every word seen
    /// fewer than 2 times so far, then 4, 8... until the counts fit in half the
    /// budget again. What was dropped is reported ([`Pruned`]); counts are then
    /// approximate, but reproducible: the jobs (blocks of files, batches of
    /// documents, texts) are summed in input order and pruned only as one
    /// thread counting them in that order would (`ordered`), so they depend on
    /// the input, the block size and the budget, not on the thread count.
    pub max_memory: Option<usize>,
    /// Which words the budget drops: the rarest ([`Prune::Rare`], above), or
    /// a sample of the rare ones ([`Prune::Sample`], for pieces that mostly
    /// occur once: SuperBPE's stage 2).
    pub prune: Prune,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_word_bytes: DEFAULT_MAX_WORD_BYTES,
            max_memory: None,
            prune: Prune::Rare,
        }
    }
}

/// A counted word: packed into a `shortkey` (at most 15 bytes), into a
/// `shortkey::load_mid` key (16 to 31 bytes), or borrowed bytes.
#[derive(Clone, Copy, Debug)]
pub enum Word<'a> {
    Packed(u128),
    Mid([u128; 2]),
    Bytes(&'a [u8]),
}

impl Word<'_> {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Word::Packed(key) => (key >> 120) as usize,
            Word::Mid(key) => (key[1] >> 120) as usize,
            Word::Bytes(bytes) => bytes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `f` of the word's bytes.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Word::Packed(key) => f(&key.to_le_bytes()[..self.len()]),
            Word::Mid([first, rest]) => {
                let mut bytes = [0u8; 32];
                bytes[..16].copy_from_slice(&first.to_le_bytes());
                bytes[16..].copy_from_slice(&rest.to_le_bytes());
                f(&bytes[..self.len()])
            }
            Word::Bytes(bytes) => f(bytes),
        }
    }
}

/// Word counts as training reads them: every (word, count), in no order.
pub trait WordSource {
    fn for_each_word<'a>(&'a self, f: impl FnMut(Word<'a>, u64));

    /// About how many words `for_each_word` visits (sizes buffers; 0 if unknown).
    fn len_hint(&self) -> usize {
        0
    }
}

impl WordSource for WordCounts {
    fn for_each_word<'a>(&'a self, mut f: impl FnMut(Word<'a>, u64)) {
        for (word, &n) in self {
            f(Word::Bytes(word), n);
        }
    }

    fn len_hint(&self) -> usize {
        self.len()
    }
}

impl WordSource for WordTally {
    fn for_each_word<'a>(&'a self, f: impl FnMut(Word<'a>, u64)) {
        WordTally::for_each_word(self, f)
    }

    fn len_hint(&self) -> usize {
        self.len()
    }
}

/// Heap bytes a word of `WordCounts` costs beyond its own bytes (its `Vec`
/// header, the count, the table's control byte and spare room, the allocator).
const MAP_ENTRY_BYTES: usize = 64;

/// Heap bytes held by `counts` (estimated from its capacity and key bytes).
pub fn memory_bytes(counts: &WordCounts) -> usize {
    counts.capacity() * MAP_ENTRY_BYTES + counts.keys().map(Vec::len).sum::<usize>()
}

/// Remove the words of `counts` that a pruning at `min_count` drops by `rule`
/// (for `Prune::Rare`, those seen fewer times), adding them to `pruned`, and
/// shrink the map. Returns the bytes of the words removed.
pub(crate) fn drop_rare(
    counts: &mut WordCounts,
    min_count: u64,
    rule: Prune,
    pruned: &mut Pruned,
) -> usize {
    pruned.min_count = pruned.min_count.max(min_count);
    let mut bytes = 0;
    counts.retain(|word, &mut n| {
        let keep = rule.keeps(word, n, min_count);
        if !keep {
            pruned.words += 1;
            pruned.pre_tokens += n;
            bytes += word.len();
        }
        keep
    });
    counts.shrink_to_fit();
    bytes
}

/// Remove the words of `counts` seen fewer than `min_count` times; returns what was dropped.
pub fn drop_below(counts: &mut WordCounts, min_count: u64) -> Pruned {
    let mut pruned = Pruned::default();
    drop_rare(counts, min_count, Prune::Rare, &mut pruned);
    crate::memory::release_freed_memory();
    if pruned.words == 0 {
        pruned.min_count = 0;
    }
    pruned
}

/// Drop words of `counts` by `rule` until it holds at most `budget` bytes
/// (the pruning of [`Limits::max_memory`]), at thresholds doubling from
/// `start` (at least 2). Nothing happens below it.
pub fn prune_to_budget(counts: &mut WordCounts, budget: usize, rule: Prune, start: u64) -> Pruned {
    let mut pruned = Pruned::default();
    let mut min_count = start.max(2);
    while memory_bytes(counts) > budget && !counts.is_empty() {
        drop_rare(counts, min_count, rule, &mut pruned);
        crate::memory::release_freed_memory();
        min_count = min_count.saturating_mul(2);
    }
    pruned
}

/// `piece` cut into words of at most `max` bytes (at least 4), each ending at
/// a UTF-8 character boundary where `piece` is UTF-8: the first word is the
/// longest such prefix, and so on.
pub fn split_long_word(piece: &[u8], max: usize) -> impl Iterator<Item = &[u8]> {
    let max = max.max(4);
    let mut rest = piece;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len().min(max);
        // Back off continuation bytes (10xxxxxx) so a character stays whole.
        while end < rest.len() && end > max - 3 && rest[end] & 0xC0 == 0x80 {
            end -= 1;
        }
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// Add the pre-tokens of `text` (a whole document) to `counts`, as
/// [`WordTally::add_text`] with the default word-length bound.
pub fn count_text(
    pre: &impl SplitWords,
    text: &str,
    counts: &mut WordCounts,
) -> Result<(), SearchError> {
    let mut tally = WordTally::default();
    tally.add_text(pre, text)?;
    for (word, n) in tally.into_counts() {
        add_word(counts, &word, n);
    }
    Ok(())
}

/// `f` on each piece of `word` between the special-token strings `specials`
/// finds in it (leftmost-longest; the strings themselves are dropped, and so
/// are empty pieces), or on `word` whole when it holds none. Words given as
/// counted (a word-counts part, a mapping) are cut with it, so a special token
/// is a hard boundary there as in counted text, and no merge can spell one.
pub fn for_each_piece(word: &[u8], specials: Option<&AhoCorasick>, mut f: impl FnMut(&[u8])) {
    let Some(specials) = specials else {
        return f(word);
    };
    let mut start = 0;
    let mut cut = false;
    for m in specials.find_iter(word) {
        if m.start() > start {
            f(&word[start..m.start()]);
        }
        start = m.end();
        cut = true;
    }
    if !cut {
        f(word);
    } else if start < word.len() {
        f(&word[start..]);
    }
}

/// `counts[word] += n`, allocating only for a word not seen before.
#[inline]
pub fn add_word(counts: &mut WordCounts, word: &[u8], n: u64) {
    match counts.get_mut(word) {
        Some(c) => *c += n,
        None => {
            counts.insert(word.to_vec(), n);
        }
    }
}

/// Sum `b` into `a`, keeping the larger map as the destination.
pub fn merge_counts(mut a: WordCounts, mut b: WordCounts) -> WordCounts {
    if a.len() < b.len() {
        std::mem::swap(&mut a, &mut b);
    }
    for (w, n) in b {
        *a.entry(w).or_insert(0) += n;
    }
    a
}

/// Run `count_one` on every job with one tally per pool thread, then sum them
/// by key into the largest (`WordTally::merge`). `text_bytes`: about how many
/// bytes of text the jobs hold, if known (it sizes the tallies up front).
///
/// Why not `par_iter().fold()`: rayon splits the work into many fold
/// accumulators, and summing hundreds of tallies of ~10^5 words each costs
/// more than the counting. Here each pool thread (`rayon::broadcast`) keeps
/// one tally and pulls jobs from the shared iterator until it is exhausted.
///
/// With `limits.max_memory` each job gets a tally of its own instead, summed
/// into the budgeted total in job order (`ordered`), so what the budget drops
/// does not depend on the threads; the total then keeps at most half the budget.
pub(crate) fn count_parallel<J: Send>(
    jobs: impl Iterator<Item = Result<J, CountError>> + Send,
    text_bytes: u64,
    limits: &Limits,
    progress: &Progress,
    count_one: impl Fn(J, &mut WordTally) -> Result<(), CountError> + Sync,
) -> Result<WordTally, CountError> {
    if let Some(budget) = limits.max_memory {
        let mut total = ordered::count_ordered(jobs, limits, progress, count_one)?.unbounded();
        total.prune_to(budget / 2);
        return Ok(total);
    }
    let jobs = Mutex::new(jobs);
    let failed = AtomicBool::new(false);
    let tallies: Vec<Result<WordTally, CountError>> = rayon::broadcast(|_| {
        let mut tally = WordTally::new(limits.max_word_bytes).with_pruning(limits.prune);
        tally.expect_text_bytes(text_bytes / rayon::current_num_threads() as u64);
        loop {
            if progress.is_cancelled() {
                return Err(CountError::Cancelled);
            }
            if failed.load(Ordering::Relaxed) {
                break;
            }
            let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some(job) = job else { break };
            if let Err(e) = job.and_then(|j| count_one(j, &mut tally)) {
                failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(tally)
    });
    // Summed into the largest tally, by key (no allocation per word), on
    // every thread (`WordTally::merge_parallel`).
    let mut tallies = tallies.into_iter().collect::<Result<Vec<_>, _>>()?;
    tallies.sort_by_key(|t| std::cmp::Reverse(t.len()));
    let mut tallies = tallies.into_iter();
    let mut total = tallies
        .next()
        .unwrap_or_else(|| WordTally::new(limits.max_word_bytes).with_pruning(limits.prune))
        .unbounded();
    for tally in tallies {
        total.merge_parallel(tally);
    }
    Ok(total)
}

/// Count a batch of independent documents in parallel.
pub fn count_texts<T: AsRef<str> + Sync>(
    pre: &impl SplitWords,
    texts: &[T],
    limits: &Limits,
    progress: &Progress,
) -> Result<WordTally, CountError> {
    let text_bytes = texts.iter().map(|t| t.as_ref().len() as u64).sum();
    // Jobs are runs of consecutive texts of about DOCUMENT_BATCH_BYTES (a
    // job's tally costs a few hundred KB up front under a budget).
    let mut starts = vec![0usize];
    let mut bytes = 0;
    for (i, text) in texts.iter().enumerate() {
        if bytes >= DOCUMENT_BATCH_BYTES {
            starts.push(i);
            bytes = 0;
        }
        bytes += text.as_ref().len() as i64;
    }
    starts.push(texts.len());
    let jobs = starts.windows(2).map(|w| Ok(&texts[w[0]..w[1]]));
    count_parallel(jobs, text_bytes, limits, progress, |batch, counts| {
        for text in batch {
            counts.add_text(pre, text.as_ref())?;
            progress.add(text.as_ref().len() as u64);
        }
        Ok(())
    })
}

/// Count the chunks of a text in parallel, each a job of its own (the
/// caller cuts them small enough that the threads finish close together:
/// `count_texts` batches texts into jobs of a megabyte or more).
pub(crate) fn count_chunks(
    pre: &impl SplitWords,
    chunks: &[&str],
    limits: &Limits,
    progress: &Progress,
) -> Result<WordTally, CountError> {
    let text_bytes = chunks.iter().map(|t| t.len() as u64).sum();
    let jobs = chunks.iter().map(Ok);
    count_parallel(jobs, text_bytes, limits, progress, |chunk, counts| {
        counts.add_text(pre, chunk)?;
        progress.add(chunk.len() as u64);
        Ok(())
    })
}

/// Bytes of documents per counting job in `count_documents` and
/// `count_texts`, so tiny documents do not pay one lock round-trip each.
const DOCUMENT_BATCH_BYTES: i64 = 1 << 20;

/// Count documents given in Arrow string layout in parallel: document i is
/// `data[offsets[i]..offsets[i + 1]]` (n + 1 offsets, as Arrow `large_string`).
/// Bytes that are not UTF-8 are an error naming `document i` and the byte offset
/// within it, or U+FFFD when `replace_errors`. Offsets must be valid (checked).
pub fn count_documents(
    pre: &impl SplitWords,
    data: &[u8],
    offsets: &[i64],
    replace_errors: bool,
    limits: &Limits,
    progress: &Progress,
) -> Result<WordTally, CountError> {
    let bad = CountError::BadOffsets;
    if offsets.is_empty() {
        return Err(bad("offsets must hold n + 1 positions, got none".into()));
    }
    for (i, w) in offsets.windows(2).enumerate() {
        if w[0] < 0 || w[1] < w[0] || w[1] as u64 > data.len() as u64 {
            return Err(bad(format!(
                "document {i}: offsets {}..{} outside the {} data bytes",
                w[0],
                w[1],
                data.len()
            )));
        }
    }
    // Jobs are runs of consecutive documents of about DOCUMENT_BATCH_BYTES.
    let mut starts = vec![0usize];
    for i in 1..offsets.len() - 1 {
        if offsets[i] - offsets[*starts.last().unwrap()] >= DOCUMENT_BATCH_BYTES {
            starts.push(i);
        }
    }
    starts.push(offsets.len() - 1);
    let jobs = starts.windows(2).map(|w| Ok((w[0], w[1])));
    count_parallel(
        jobs,
        data.len() as u64,
        limits,
        progress,
        |(first, end), counts| {
            for i in first..end {
                let doc = &data[offsets[i] as usize..offsets[i + 1] as usize];
                let text = match std::str::from_utf8(doc) {
                    Ok(t) => std::borrow::Cow::Borrowed(t),
                    Err(_) if replace_errors => String::from_utf8_lossy(doc),
                    Err(e) => {
                        return Err(CountError::InvalidUtf8InDocument {
                            index: i,
                            offset: e.valid_up_to() as u64,
                        })
                    }
                };
                counts.add_text(pre, &text)?;
                progress.add(doc.len() as u64);
            }
            Ok(())
        },
    )
}

/// Count every file (each one a document) in parallel, streaming `chunk_size` blocks.
/// The chunks of all files form one stream, so many small files also use every core.
/// Bytes that are not UTF-8 are an error, or U+FFFD when `replace_errors`; chunks
/// are cut at ASCII newlines, so replacing per chunk equals replacing the whole file.
pub fn count_files(
    pre: &impl SplitWords,
    rule: &CutRule,
    paths: &[String],
    chunk_size: usize,
    replace_errors: bool,
    limits: &Limits,
    progress: &Progress,
) -> Result<WordTally, CountError> {
    let chunks = paths.iter().flat_map(
        |path| -> Box<dyn Iterator<Item = Result<Chunk, CountError>> + Send> {
            match ChunkReader::open(path, chunk_size, rule.clone()) {
                Ok(reader) => Box::new(reader),
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        },
    );
    // Pipes and unreadable files count as 0 bytes here (their errors come from the reader).
    let text_bytes = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    count_parallel(chunks, text_bytes, limits, progress, |chunk, counts| {
        counts.add_text(pre, &chunk.text(replace_errors)?)?;
        progress.add(chunk.bytes.len() as u64);
        Ok(())
    })
}

#[cfg(test)]
mod tests;
