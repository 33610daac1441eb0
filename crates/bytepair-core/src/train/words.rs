//! The words being merged: every distinct word as a run of token ids in one
//! buffer, and the merge of one pair inside them (`merge_in_word`), on many
//! threads when a pair occurs in many words (`merge_words`).

use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

use super::changes::SeamChanges;
use super::symbols::{Scatter, SymbolRuns};
use super::{Pair, TokenPrefix};
use crate::count::WordSource;
use crate::memory::{prefetch, prefetch_ptr, vec_on_huge_pages};

/// How many words ahead of its copy `from_runs` asks for a word's place
/// (and, twice as far, for its `start`): multilingual 10 MB, the copies 7.3
/// -> 6.3 ms with 8, 6.0 with 16 (one thread, medians of 6).
const WRITE_AHEAD: usize = 16;

/// A token id as the words store it: `u16` when every id of the run fits
/// (256 bytes + merges <= 65536, most vocabularies): half the memory of the
/// largest part of the trainer, and half the bytes a merge reads.
pub trait Symbol: Copy + Eq + Default + Send + Sync + 'static {
    /// Ids up to this one fit.
    const MAX_ID: u32;
    /// `id` (at most `MAX_ID`) as a symbol.
    fn of(id: u32) -> Self;
    fn id(self) -> u32;
    /// The pair `(self, right)` as one number, the two symbols' bits side
    /// by side: one compare (and one load) tests two adjacent symbols.
    fn pair_key(self, right: Self) -> u64;
}

impl Symbol for u16 {
    const MAX_ID: u32 = u16::MAX as u32;
    fn of(id: u32) -> Self {
        id as u16
    }
    fn id(self) -> u32 {
        u32::from(self)
    }
    #[inline]
    fn pair_key(self, right: Self) -> u64 {
        u64::from(self) | u64::from(right) << 16
    }
}

impl Symbol for u32 {
    const MAX_ID: u32 = u32::MAX;
    fn of(id: u32) -> Self {
        id
    }
    fn id(self) -> u32 {
        self
    }
    #[inline]
    fn pair_key(self, right: Self) -> u64 {
        u64::from(self) | u64::from(right) << 32
    }
}

/// Every distinct word as a sequence of token ids, stored back to back in one
/// buffer: a merge visits its words in increasing id order, so it walks memory
/// forwards instead of chasing one heap allocation per word. Words only shrink,
/// in place.
pub(super) struct Words<S: Symbol> {
    symbols: Vec<S>,
    start: Vec<usize>,
    pub(super) len: Vec<u32>,
}

impl<S: Symbol> Words<S> {
    /// The words of `counts` with at least two bytes and a positive count, in
    /// the order of their first 8 bytes, and their counts. Order only affects
    /// internal indices, never the merges; in this order words sharing a
    /// prefix sit together, so the words of one pair are close in memory
    /// (merging on enwiki was measurably faster than in hash-map order). The
    /// prefix is sorted on as one integer: sorting by the whole bytes spent
    /// its time comparing words through pointers (multilingual, 475k words).
    ///
    /// Memory: the source is visited twice (`for_each_word` visits in the
    /// same order each time) and only a 16-byte sort key per word is held
    /// besides the words: collecting (prefix, word, count) tuples took 64
    /// bytes a word, a large part of the trainer's peak.
    pub(super) fn from_counts(counts: &impl WordSource) -> (Self, Vec<u64>) {
        // (prefix, position in visiting order, length) of each word kept.
        let mut keys: Vec<(u64, u32, u32)> = Vec::with_capacity(counts.len_hint());
        let mut visited = 0usize;
        counts.for_each_word(|word, n| {
            if word.len() >= 2 && n > 0 {
                let prefix = word.with_bytes(|b| TokenPrefix::of(b).prefix);
                keys.push((prefix, visited as u32, word.len() as u32));
            }
            visited += 1;
        });
        assert!(
            visited <= u32::MAX as usize,
            "more than 2^32 distinct words: word ids are 32-bit"
        );
        let (mut words, rank, total) = Self::laid_out(keys, visited);
        words.symbols.resize(total, S::default());
        let mut freqs = vec![0u64; words.start.len()];
        let mut position = 0usize;
        counts.for_each_word(|word, n| {
            let i = rank[position] as usize;
            position += 1;
            if i != u32::MAX as usize {
                freqs[i] = n;
                let at = words.start[i];
                word.with_bytes(|b| {
                    for (s, &byte) in words.symbols[at..at + b.len()].iter_mut().zip(b) {
                        *s = S::of(u32::from(byte));
                    }
                });
            }
        });
        (words, freqs)
    }

    /// The words of `parts` (runs of token ids, each with its count) of two
    /// tokens or more and a positive count, in the order of `prefix_of` their
    /// ids (as `from_counts`; words of equal prefix in the order of the parts,
    /// then of their spans), and their counts.
    ///
    /// Only a (prefix, index, length) key a word is sorted, and the words
    /// are then read in their own order and written to their sorted places:
    /// sorting (prefix, slice, count) tuples moved 32 bytes a word, and
    /// reading the words in sorted order missed the cache on nearly every
    /// word (two thirds of building SentencePiece's words). The keys are
    /// made, and the words written, a part a thread (written on one thread,
    /// the copy was a third of building multilingual 10 MB's words).
    pub(super) fn from_runs(
        parts: &[SymbolRuns],
        prefix_of: impl Fn(&[u32]) -> u64 + Sync,
    ) -> (Self, Vec<u64>) {
        // Each part's first word in the order of all the words, and its
        // first key (the words kept before it).
        let kept = |&(ids, n): &(&[u32], u64)| ids.len() >= 2 && n > 0;
        let (mut firsts, mut key_firsts) = (Vec::with_capacity(parts.len()), vec![]);
        let (mut words, mut keys_total) = (0usize, 0usize);
        let kept_counts: Vec<usize> = parts
            .par_iter()
            .map(|p| p.words().filter(kept).count())
            .collect();
        for (part, &n) in parts.iter().zip(&kept_counts) {
            firsts.push(words);
            key_firsts.push(keys_total);
            words += part.ends.len();
            keys_total += n;
        }
        assert!(
            words <= u32::MAX as usize,
            "more than 2^32 distinct words: word ids are 32-bit"
        );
        let mut keys: Vec<(u64, u32, u32)> = vec_on_huge_pages(keys_total);
        let mut room = keys.spare_capacity_mut();
        let mut slots = Vec::with_capacity(parts.len());
        for &n in &kept_counts {
            let (mine, rest) = std::mem::take(&mut room).split_at_mut(n);
            slots.push(mine);
            room = rest;
        }
        (parts, slots, &firsts)
            .into_par_iter()
            .for_each(|(part, slots, &first)| {
                let kept_words = part.words().enumerate().filter(|(_, w)| kept(w));
                for (slot, (k, (ids, _))) in slots.iter_mut().zip(kept_words) {
                    slot.write((prefix_of(ids), (first + k) as u32, ids.len() as u32));
                }
            });
        // SAFETY: the parts wrote every slot of their share (the counts of
        // their kept words), and the shares tile `keys_total`.
        unsafe { keys.set_len(keys_total) };
        let (mut out, rank, total) = Self::laid_out(keys, words);
        // Written below, not zeroed first: zeroing them on this thread
        // faulted in their fresh pages one thread at a time.
        let mut freqs: Vec<u64> = vec_on_huge_pages(out.start.len());
        let dest = Scatter {
            symbols: out.symbols.as_mut_ptr(),
            freqs: freqs.as_mut_ptr(),
        };
        let (start, rank) = (&out.start, &rank);
        (parts, &firsts).into_par_iter().for_each(|(part, &first)| {
            let ranks = &rank[first..first + part.ends.len()];
            for (k, ((ids, n), &r)) in part.words().zip(ranks).enumerate() {
                // Each word's place is a cache miss, and so is its `start`:
                // both asked for ahead of their use.
                if let Some(&r) = ranks.get(k + 2 * WRITE_AHEAD) {
                    if r != u32::MAX {
                        prefetch(&start[r as usize]);
                    }
                }
                if let Some(&r) = ranks.get(k + WRITE_AHEAD) {
                    if r != u32::MAX {
                        prefetch_ptr(dest.symbols.wrapping_add(start[r as usize]));
                        prefetch_ptr(dest.freqs.wrapping_add(r as usize));
                    }
                }
                if r != u32::MAX {
                    // SAFETY: ranks are distinct (a permutation of the kept
                    // words), so each word's symbols (`start[r]`, its
                    // length on) and count are written by this thread alone,
                    // inside `out.symbols` and `freqs` (laid out for them).
                    unsafe { dest.write(start[r as usize], ids, r as usize, n) };
                }
            }
        });
        // SAFETY: the kept words' ranks are a permutation of `0..count`,
        // and each wrote its count and its symbols at its place: the
        // places (`laid_out`) tile the symbols' room.
        unsafe {
            freqs.set_len(out.start.len());
            out.symbols.set_len(total);
        }
        (out, freqs)
    }

    /// Room for the words of `keys` ((sort prefix, index in the source,
    /// length) each) in the order of the keys, their symbols still to be
    /// written (an empty vector with room for their `total` symbols), the
    /// rank of each of the `sources` source words (its place in that order,
    /// `u32::MAX` for a word not kept), and `total`.
    fn laid_out(mut keys: Vec<(u64, u32, u32)>, sources: usize) -> (Self, Vec<u32>, usize) {
        // By prefix, then index (each index is one source's, so the length
        // never decides), as one u128: its comparison has no branches, the
        // tuple's three (multilingual 10 MB, 300 k keys: 9.9 -> 7.7 ms).
        keys.par_sort_unstable_by_key(|&(p, i, _)| u128::from(p) << 32 | u128::from(i));
        // Laid out in parallel, a chunk of keys a job, each chunk's words
        // after the symbols of the chunks before it (serially, with the
        // ranks zeroed first, this was ~6 ms of building multilingual 10
        // MB's words on two threads, on a loaded host).
        let chunk = keys
            .len()
            .div_ceil(4 * rayon::current_num_threads())
            .max(1 << 12);
        let mut firsts: Vec<usize> = (keys.par_chunks(chunk))
            .map(|c| c.iter().map(|&(_, _, len)| len as usize).sum())
            .collect();
        let mut total = 0usize;
        for first in &mut firsts {
            (*first, total) = (total, total + *first);
        }
        let mut rank: Vec<AtomicU32> = vec_on_huge_pages(sources);
        (0..sources)
            .into_par_iter()
            .map(|_| AtomicU32::new(u32::MAX))
            .collect_into_vec(&mut rank);
        let mut words = Words {
            symbols: Vec::new(),
            start: vec_on_huge_pages(keys.len()),
            len: vec_on_huge_pages(keys.len()),
        };
        let starts = words.start.spare_capacity_mut().par_chunks_mut(chunk);
        let lens = words.len.spare_capacity_mut().par_chunks_mut(chunk);
        (keys.par_chunks(chunk), starts, lens, &firsts)
            .into_par_iter()
            .enumerate()
            .for_each(|(c, (keys, starts, lens, &first))| {
                let mut at = first;
                for (k, (&(_, i, len), (start, l))) in
                    keys.iter().zip(starts.iter_mut().zip(lens)).enumerate()
                {
                    rank[i as usize].store((c * chunk + k) as u32, Ordering::Relaxed);
                    start.write(at);
                    l.write(len);
                    at += len as usize;
                }
            });
        // SAFETY: the chunks wrote every start and length.
        unsafe {
            words.start.set_len(keys.len());
            words.len.set_len(keys.len());
        }
        const _: () = assert!(std::mem::align_of::<AtomicU32>() == std::mem::align_of::<u32>());
        let rank = std::mem::ManuallyDrop::new(rank);
        // SAFETY: an `AtomicU32` has the size, bit validity and (asserted
        // above) alignment of a `u32`: the buffer is a `Vec<u32>`'s.
        let rank = unsafe {
            Vec::from_raw_parts(
                rank.as_ptr().cast_mut().cast::<u32>(),
                rank.len(),
                rank.capacity(),
            )
        };
        drop(keys);
        words.symbols = vec_on_huge_pages(total);
        (words, rank, total)
    }

    /// Words already split into tokens and in order (each of two tokens or
    /// more), in parts joined in order, and their counts.
    pub(super) fn from_parts(parts: Vec<WordsPart<S>>) -> (Self, Vec<u64>) {
        let total: usize = parts.iter().map(|p| p.symbols.len()).sum();
        let count: usize = parts.iter().map(|p| p.len.len()).sum();
        let mut words = Words {
            symbols: Vec::with_capacity(total),
            start: Vec::with_capacity(count),
            len: Vec::with_capacity(count),
        };
        let mut freqs = Vec::with_capacity(count);
        for part in parts {
            let mut at = words.symbols.len();
            for &n in &part.len {
                words.start.push(at);
                at += n as usize;
            }
            words.symbols.extend_from_slice(&part.symbols);
            words.len.extend_from_slice(&part.len);
            freqs.extend_from_slice(&part.freqs);
        }
        (words, freqs)
    }

    pub(super) fn count(&self) -> usize {
        self.start.len()
    }

    /// Symbols the buffer has room for (words only shrink: the rest is free).
    pub(super) fn capacity(&self) -> usize {
        self.symbols.len()
    }

    /// Move every word to the front of the buffer, in order, and give the
    /// room freed by merges back (a word of 10 bytes is 3 or 4 tokens after
    /// 32k merges: the buffer was the largest part of the trainer). In place:
    /// a word only moves towards the front.
    pub(super) fn compact(&mut self) {
        let mut write = 0;
        for (start, &len) in self.start.iter_mut().zip(&self.len) {
            self.symbols
                .copy_within(*start..*start + len as usize, write);
            *start = write;
            write += len as usize;
        }
        self.symbols.truncate(write);
        self.symbols.shrink_to_fit();
    }

    /// The first word that starts at symbol `at` of the buffer or after it.
    pub(super) fn first_from(&self, at: usize) -> usize {
        self.start.partition_point(|&s| s < at)
    }

    pub(super) fn get(&self, i: usize) -> &[S] {
        &self.symbols[self.start[i]..self.start[i] + self.len[i] as usize]
    }

    /// All the words, for `merge_words`, and where each starts.
    pub(super) fn view(&mut self) -> (WordsView<'_, S>, &[usize]) {
        (
            WordsView {
                first: 0,
                base: 0,
                symbols: &mut self.symbols,
                len: &mut self.len,
            },
            &self.start,
        )
    }
}

/// Some words of `Words::from_parts`: their symbols back to back, their
/// lengths and their counts.
pub(super) struct WordsPart<S: Symbol> {
    symbols: Vec<S>,
    len: Vec<u32>,
    freqs: Vec<u64>,
}

impl<S: Symbol> Default for WordsPart<S> {
    fn default() -> Self {
        WordsPart {
            symbols: Vec::new(),
            len: Vec::new(),
            freqs: Vec::new(),
        }
    }
}

impl<S: Symbol> WordsPart<S> {
    /// Add a word of `ids` (each at most `S::MAX_ID`) seen `count` times.
    pub(super) fn push(&mut self, ids: &[u32], count: u64) {
        self.symbols.extend(ids.iter().map(|&id| S::of(id)));
        self.len.push(ids.len() as u32);
        self.freqs.push(count);
    }
}

/// The symbols and lengths of the words from id `first` on, which start at
/// symbol `base`: a part of `Words` that one thread merges in.
pub(super) struct WordsView<'a, S: Symbol> {
    first: usize,
    base: usize,
    symbols: &'a mut [S],
    len: &'a mut [u32],
}

impl<'a, S: Symbol> WordsView<'a, S> {
    /// The words before `word` and those from it on.
    fn split_at(self, word: usize, start: &[usize]) -> (WordsView<'a, S>, WordsView<'a, S>) {
        let (symbols, rest_symbols) = self.symbols.split_at_mut(start[word] - self.base);
        let (len, rest_len) = self.len.split_at_mut(word - self.first);
        (
            WordsView {
                first: self.first,
                base: self.base,
                symbols,
                len,
            },
            WordsView {
                first: word,
                base: start[word],
                symbols: rest_symbols,
                len: rest_len,
            },
        )
    }

    /// Ask for the length of word `i` and its first symbols, at symbol `start`.
    fn prefetch(&self, i: usize, start: usize) {
        // Addresses only (no bounds checks): a prefetch never faults.
        prefetch_ptr(self.len.as_ptr().wrapping_add(i.wrapping_sub(self.first)));
        prefetch_ptr(
            self.symbols
                .as_ptr()
                .wrapping_add(start.wrapping_sub(self.base)),
        );
    }

    /// Apply `pair -> new_id` to word `i` (see `merge_in_word`); returns
    /// how many symbols the word lost.
    fn merge(
        &mut self,
        i: usize,
        start: usize,
        pair: Pair,
        new_id: u32,
        seam: impl FnMut(Seam),
    ) -> usize {
        let len = &mut self.len[i - self.first];
        let word = &mut self.symbols[start - self.base..start - self.base + *len as usize];
        let merged = merge_in_word(word, pair, new_id, seam);
        let lost = *len as usize - merged;
        *len = merged as u32;
        lost
    }
}

/// How many words ahead `merge_words` asks for a word's symbols (and twice
/// as far ahead, for its start and count).
const PREFETCH_WORDS: usize = 4;

/// A merge with at least this many words is split over the threads (one
/// part each) when the pool has more than one (`merge_words`). With the
/// other thread kept awake (`warm`), splitting pays from a few hundred
/// words on: SentencePiece BPE on 10 MB of multilingual text, 2 threads,
/// loop 117 ms unsplit, 99 from 256 words, 95 from 128, 96 from 64.
pub(super) const PARALLEL_MERGE_WORDS: usize = 128;

/// Apply `pair -> new_id` to the words `word_ids` (sorted) of `view`, adding
/// up the pair-count changes in `changes`. Many words are split in one part
/// per table (`changes` and the `spare` ones), merged in parallel, each into
/// its own table, then added up into `changes` (the spare tables are left
/// empty for the next merge): the sums and the word lists (left part first,
/// so still sorted) come out the same whatever the threads do.
pub(super) fn merge_words<S: Symbol>(
    mut view: WordsView<'_, S>,
    (start, freqs): (&[usize], &[u64]),
    word_ids: &[u32],
    (pair, new_id): (Pair, u32),
    changes: &mut SeamChanges,
    spare: &mut [SeamChanges],
) {
    changes.grow(new_id as usize + 1);
    let parts = spare.len() + 1;
    if parts > 1 && word_ids.len() >= PARALLEL_MERGE_WORDS {
        let left_parts = parts / 2;
        let (left_spare, rest) = spare.split_at_mut(left_parts - 1);
        let (right_changes, right_spare) = rest.split_first_mut().expect("two parts or more");
        let mid = word_ids.len() * left_parts / parts;
        let (left, right) = view.split_at(word_ids[mid] as usize, start);
        rayon::join(
            || {
                merge_words(
                    left,
                    (start, freqs),
                    &word_ids[..mid],
                    (pair, new_id),
                    changes,
                    left_spare,
                )
            },
            || {
                merge_words(
                    right,
                    (start, freqs),
                    &word_ids[mid..],
                    (pair, new_id),
                    right_changes,
                    right_spare,
                )
            },
        );
        changes.absorb(right_changes);
        return;
    }
    // The words of one merge are scattered over tens of MB, and waiting for
    // each word's first load was half the time `merge_words` took: ask for
    // the memory of the words a few steps ahead while these merge.
    for (k, &wi) in word_ids.iter().enumerate() {
        if let Some(&w) = word_ids.get(k + 2 * PREFETCH_WORDS) {
            prefetch_ptr(start.as_ptr().wrapping_add(w as usize));
            prefetch_ptr(freqs.as_ptr().wrapping_add(w as usize));
        }
        if let Some(&w) = word_ids.get(k + PREFETCH_WORDS) {
            view.prefetch(w as usize, start[w as usize]);
        }
        let freq = freqs[wi as usize];
        changes.merged +=
            view.merge(
                wi as usize,
                start[wi as usize],
                pair,
                new_id,
                |seam| match seam {
                    Seam::Left(x) => changes.left.add(x, freq, wi),
                    Seam::Right(y) => changes.right.add(y, freq, wi),
                },
            );
    }
}

/// A seam that merging `(a, b) -> new` made in a word: the token on the left
/// of an occurrence (`x a b` became `x new`) or on its right (`a b y` became
/// `new y`). The left neighbour is read after earlier merges in the word, so
/// it may be `new` itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seam {
    Left(u32),
    Right(u32),
}

/// Merge every occurrence of `pair` in `word`, left to right (`A A A` -> `AA A`),
/// reporting the neighbours of each occurrence to `seam`.
/// The merged word is left in `word[..n]`; returns `n`.
pub fn merge_in_word<S: Symbol>(
    word: &mut [S],
    pair: Pair,
    new_id: u32,
    mut seam: impl FnMut(Seam),
) -> usize {
    // Ids of this run fit S (the trainer chose it so).
    let (a, b, new_id) = (S::of(pair.0), S::of(pair.1), S::of(new_id));
    // Both symbols in one compare: testing `a` and then `b` missed the
    // branch prediction wherever a word held `a` without `b` after it.
    let key = a.pair_key(b);
    let n = word.len();
    // The reverse index may list words that lost the pair since: leave those
    // (and the untouched prefix of the others) without writing anything.
    let Some(first) = word.windows(2).position(|w| w[0].pair_key(w[1]) == key) else {
        return n;
    };
    let (mut read, mut write) = (first, first);
    while read < n {
        if read + 1 < n && word[read].pair_key(word[read + 1]) == key {
            if write > 0 {
                seam(Seam::Left(word[write - 1].id()));
            }
            if read + 2 < n {
                seam(Seam::Right(word[read + 2].id()));
            }
            word[write] = new_id;
            read += 2;
        } else {
            word[write] = word[read];
            read += 1;
        }
        write += 1;
    }
    write
}

#[cfg(test)]
mod tests;
