//! The pair index of the initial words (`initial_pair_index`): every pair's
//! count and word list, a shard (`Shard`) a thread.

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::ops::Range;

use super::{put_varint, shard_of, varint_len, PairMap, Shard};
use crate::memory::{prefetch_ptr, vec_on_huge_pages};
use crate::train::words::{Symbol, Words};
use crate::train::Pair;

/// Pair counts and reverse index of the initial words, built in parallel,
/// one shard of the pairs (`PairMap`) a thread, in two passes so that each
/// pair's word list is allocated once at its final size (lists grown by
/// pushing held ~1.5x their entries: 570 MB for 390 MB of word ids on 8 M
/// words). Each list holds its words in increasing order, each once. The
/// shards are disjoint, so nothing is summed across threads (counting a
/// share of the words per thread put most pairs in every thread's map, and
/// adding those up was serial: 0.5 s of SuperBPE's stage 2 on enwiki, 2.1M
/// pairs).
///
/// With several threads, where the streams fit (`stream_bits`), the words
/// are read once, a range a thread, their pair occurrences sorted out by
/// shard (`scatter`), and each thread builds its shard from its streams of
/// every range (`shard_of_streams`); otherwise each thread reads every word
/// and keeps the pairs of its shard (`shard_of_words`). (Each of two threads
/// reading every word spent about half its time on the words its shard
/// does not keep; on one thread a stream is a copy of the words that
/// `shard_of_words` reads as fast.)
///
/// `alphabet`: every symbol of the words is below it.
pub(in crate::train) fn initial_pair_index<S: Symbol>(
    words: &Words<S>,
    freqs: &[u64],
    alphabet: usize,
) -> PairMap {
    let threads = rayon::current_num_threads().clamp(1, 8);
    let mask = threads.next_power_of_two() - 1;
    let streams = (mask > 0).then(|| stream_bits(words, alphabet, mask + 1, STREAM_MAX_ENTRIES));
    let shards = match streams.flatten() {
        Some(bits) => {
            let ranges = word_ranges(words, mask + 1);
            let scattered: Vec<Vec<Vec<u32>>> = ranges
                .into_par_iter()
                .map(|range| scatter(words, range, mask, bits))
                .collect();
            let mut by_shard: Vec<Vec<Vec<u32>>> = (0..=mask).map(|_| Vec::new()).collect();
            for streams in scattered {
                for (shard, stream) in by_shard.iter_mut().zip(streams) {
                    shard.push(stream);
                }
            }
            by_shard
                .into_par_iter()
                .map(|streams| shard_of_streams(streams, freqs, alphabet, bits))
                .collect()
        }
        None => (0..=mask)
            .into_par_iter()
            .map(|shard| shard_of_words(words, freqs, alphabet, (shard, mask)))
            .collect(),
    };
    PairMap { shards, mask }
}

/// Entries the streams of all shards may hold together (4 bytes each, 64
/// MiB at most: 10 MB of multilingual text needs 3.6 M; an 8 M-word corpus
/// ~100 M, whose streams would outweigh its words, is indexed from the
/// words).
const STREAM_MAX_ENTRIES: usize = 1 << 24;

/// The bits of each symbol of a pair in a stream entry (`scatter`), when the
/// words' streams are wanted and fit: some pairs are hashed (an alphabet
/// past `DENSE_SYMBOLS`; for bytes `shard_of_words` keeps no record, and a
/// stream would add 4 bytes a pair occurrence to what training within a
/// memory budget holds: `tests/training_budget.rs`), both symbols in 31
/// bits, and at most `max_entries` entries (an entry per pair occurrence,
/// plus a word's id for each of the `shards` it has pairs in).
fn stream_bits<S: Symbol>(
    words: &Words<S>,
    alphabet: usize,
    shards: usize,
    max_entries: usize,
) -> Option<u32> {
    let bits = alphabet.max(2).next_power_of_two().trailing_zeros();
    let entries = words.capacity() + words.count() * shards;
    let hashed = alphabet > DENSE_SYMBOLS as usize;
    (hashed && 2 * bits < 32 && entries <= max_entries).then_some(bits)
}

/// `parts` ranges of consecutive words, of about as many symbols each.
fn word_ranges<S: Symbol>(words: &Words<S>, parts: usize) -> Vec<Range<usize>> {
    let symbols = words.capacity();
    let mut firsts: Vec<usize> = (0..parts)
        .map(|k| words.first_from(symbols * k / parts))
        .collect();
    firsts.push(words.count());
    firsts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// A stream entry that is a word's id (the pairs after it are that word's).
const WORD: u32 = 1 << 31;

/// The pair occurrences of the words of `range`, a stream per shard (`mask +
/// 1` of them): each word's id (with `WORD` set) if it has pairs in the
/// shard, then those pairs, each `a << bits | b`, in order. With several
/// shards, a pair's shard picks the stream it is pushed to, without a
/// branch: which shard a pair hashes to is a coin toss, and a branch on it
/// missed its prediction at every other pair.
fn scatter<S: Symbol>(
    words: &Words<S>,
    range: Range<usize>,
    mask: usize,
    bits: u32,
) -> Vec<Vec<u32>> {
    // Room as `shard_of_words`'s record (`Listed`) has, not more (training
    // within a memory budget counts on it): an even share of the pairs and
    // every word's id; a stream past it grows by an eighth.
    let pairs: usize = (range.clone())
        .map(|i| (words.len[i] as usize).saturating_sub(1))
        .sum();
    let room = pairs / (mask + 1) + range.len();
    let mut streams: Vec<Vec<u32>> = (0..=mask).map(|_| vec_on_huge_pages(room)).collect();
    // Each stream's end and the end of its room: written through raw
    // pointers (a `push` reloaded the stream's length and capacity at each
    // pair).
    let (mut ends, mut limits) = ([std::ptr::null_mut::<u32>(); 8], [std::ptr::null_mut(); 8]);
    for (s, stream) in streams.iter_mut().enumerate() {
        (ends[s], limits[s]) = (stream.as_mut_ptr(), stream.as_mut_ptr().wrapping_add(room));
    }
    for i in range {
        let word = words.get(i);
        // The word's id and its pairs: at most its length (one if empty).
        let need = word.len().max(1);
        for (s, stream) in streams.iter_mut().enumerate() {
            // SAFETY: `ends[s]` and `limits[s]` lie in (or one past) the
            // stream's room, `ends[s]` past its entries written.
            unsafe {
                if limits[s].offset_from(ends[s]) < need as isize {
                    stream.set_len(ends[s].offset_from(stream.as_ptr()) as usize);
                    stream.reserve_exact(need.max(stream.capacity() / 8));
                    ends[s] = stream.as_mut_ptr().add(stream.len());
                    limits[s] = stream.as_mut_ptr().add(stream.capacity());
                }
            }
        }
        let ends = &mut ends[..=mask];
        let mut heads = [std::ptr::null_mut::<u32>(); 8];
        // SAFETY (each write): each stream has room for `need` entries more.
        unsafe {
            for (head, end) in heads.iter_mut().zip(ends.iter_mut()) {
                *head = *end;
                end.write(i as u32 | WORD);
                *end = end.add(1);
            }
            for p in word.windows(2) {
                let (a, b) = (p[0].id(), p[1].id());
                let end = &mut ends[shard_of((a, b)) & mask];
                end.write(a << bits | b);
                *end = end.add(1);
            }
            // A word with no pairs in a stream takes its id back.
            for (&head, end) in heads.iter().zip(ends.iter_mut()) {
                if *end == head.add(1) {
                    *end = head;
                }
            }
        }
    }
    for (stream, &end) in streams.iter_mut().zip(ends.iter()) {
        // SAFETY: the entries up to `end` are written, within the capacity.
        unsafe { stream.set_len(end.offset_from(stream.as_ptr()) as usize) };
    }
    streams
}

/// The shard of the pairs in `streams` (those of each range of words, in
/// order, as `scatter` left them). Pass 1 finds each pair's slot and adds
/// up its count and list size, and rewrites its entry in place to what pass
/// 2 needs: the slot, or the word's id again where the word is already in
/// the pair's list. Pass 2 then writes the lists without hashing any pair
/// again (hashing each occurrence twice was most of the index's time on
/// multilingual text: 2.7 M occurrences of 93 k pairs on 10 MB).
fn shard_of_streams(
    mut streams: Vec<Vec<u32>>,
    freqs: &[u64],
    alphabet: usize,
    bits: u32,
) -> Shard {
    let mut slots = PairSlots::new(alphabet);
    for stream in &mut streams {
        slots.count_stream(stream, freqs, bits);
    }
    let mut lists = Lists::new(&slots.building);
    for stream in &streams {
        lists.add_recorded(stream);
    }
    drop(streams);
    lists.into_shard(&slots)
}

/// The pairs of shard `shard` (`shard_of(pair) & mask`) in every word,
/// each thread reading every word.
fn shard_of_words<S: Symbol>(
    words: &Words<S>,
    freqs: &[u64],
    alphabet: usize,
    (shard, mask): (usize, usize),
) -> Shard {
    let mut slots = PairSlots::new(alphabet);
    // Pass 1: every pair's count and list size, and, when some pairs are
    // hashed (`PairSlots`), the pairs each word adds to lists, in word
    // order, as `shard_of_streams` leaves its streams (`Listed`): pass 2
    // then writes the lists from them without reading the words or hashing
    // their pairs again. Within `LISTED_MAX_ENTRIES` only: on a big corpus
    // the record would outweigh the words.
    let estimate = (words.capacity() - words.count()) / (mask + 1) + words.count();
    let mut listed =
        (alphabet > DENSE_SYMBOLS as usize && estimate <= LISTED_MAX_ENTRIES).then(|| Listed {
            entries: vec_on_huge_pages(estimate),
            word: None,
        });
    for_pairs_of_shard(words, shard, mask, |p, i| {
        let at = slots.slot(p);
        if slots.building[at].add(i, freqs[i as usize]) {
            if let Some(listed) = &mut listed {
                listed.push(i, at);
            }
        }
    });
    let mut lists = Lists::new(&slots.building);
    match listed {
        Some(listed) => lists.add_recorded(&listed.entries),
        None => for_pairs_of_shard(words, shard, mask, |p, i| {
            let at = slots.slot(p);
            if lists.cursors[at].last != i + 1 {
                lists.add(at, i);
            }
        }),
    }
    lists.into_shard(&slots)
}

/// Entries a shard's `Listed` may hold (4 bytes each; 10 MB of
/// multilingual text needs at most 3 M).
const LISTED_MAX_ENTRIES: usize = 1 << 24;

/// The (word, pair number) of each pair a word adds to a list, in word
/// order, in 4 bytes each: a word's pair numbers after its id (with `WORD`).
struct Listed {
    entries: Vec<u32>,
    word: Option<u32>,
}

impl Listed {
    #[inline]
    fn push(&mut self, word: u32, pair: usize) {
        if self.word != Some(word) {
            assert!(word < WORD, "at most 2^31 words");
            self.entries.push(word | WORD);
            self.word = Some(word);
        }
        debug_assert!(pair < WORD as usize);
        self.entries.push(pair as u32);
    }
}

/// Symbols below this id pair up in a table, not a hash map: every pair of
/// bytes, and of the most frequent characters (SentencePiece numbers its
/// characters by frequency). 256 KiB a shard (a table of 1024 symbols, 4
/// MiB a shard, was no faster on multilingual text).
const DENSE_SYMBOLS: u32 = 256;

/// The pairs of the initial words, numbered in first-seen order, each with
/// its `Building`: pairs of two symbols below `dense` found through a table
/// indexed by the pair, the others through a hash map. (Hashing each pair
/// occurrence twice, once a pass, was most of the index's time: 2.7 M
/// occurrences of 93 k pairs on 10 MB of multilingual text.)
struct PairSlots {
    dense: u32,
    /// `a * dense + b` -> 1 + the pair's number, 0 if not seen.
    table: Vec<u32>,
    others: FxHashMap<Pair, u32>,
    pairs: Vec<Pair>,
    building: Vec<Building>,
}

impl PairSlots {
    /// Slots for pairs of symbols below `alphabet`.
    fn new(alphabet: usize) -> Self {
        let dense = alphabet.min(DENSE_SYMBOLS as usize) as u32;
        PairSlots {
            dense,
            table: vec![0; (dense * dense) as usize],
            others: FxHashMap::default(),
            pairs: Vec::new(),
            building: Vec::new(),
        }
    }

    /// The number of `pair` (a new one if not seen yet).
    #[inline]
    fn slot(&mut self, pair: Pair) -> usize {
        let fresh = self.pairs.len() as u32;
        let at = if pair.0 < self.dense && pair.1 < self.dense {
            let slot = &mut self.table[(pair.0 * self.dense + pair.1) as usize];
            if *slot == 0 {
                *slot = fresh + 1;
            }
            (*slot - 1) as usize
        } else {
            *self.others.entry(pair).or_insert(fresh) as usize
        };
        if at == fresh as usize {
            self.pairs.push(pair);
            self.building.push(Building::default());
        }
        at
    }

    /// Pass 1 over a stream of `scatter`'s (pairs of `bits` bits a symbol):
    /// each pair's slot, count and list size, its entry rewritten to its
    /// slot if the word is new to the pair's list, else to the word's id
    /// again. (Finding the slots 8 entries ahead and asking for their
    /// `Building` meanwhile made no difference.)
    fn count_stream(&mut self, stream: &mut [u32], freqs: &[u64], bits: u32) {
        let low = (1 << bits) - 1;
        let (mut word, mut freq) = (0, 0);
        for e in stream.iter_mut() {
            if *e & WORD != 0 {
                word = *e & !WORD;
                freq = freqs[word as usize];
                continue;
            }
            let at = self.slot((*e >> bits, *e & low));
            *e = if self.building[at].add(word, freq) {
                at as u32
            } else {
                word | WORD
            };
        }
    }
}

/// How many entries ahead pass 2 asks for a list's cursor (multilingual 10
/// MB, one thread, the index 113 -> 105 ms on a loaded host; no gain seen
/// on two).
const AHEAD: usize = 8;

/// Call `f(pair, word)` for each pair of shard `shard` in each word, in order.
/// With several shards a word's pairs of this shard are picked out first
/// without a branch (`mine`), as in `scatter`.
fn for_pairs_of_shard<S: Symbol>(
    words: &Words<S>,
    shard: usize,
    mask: usize,
    mut f: impl FnMut(Pair, u32),
) {
    let mut mine: Vec<Pair> = Vec::new();
    for i in 0..words.count() {
        let word = words.get(i);
        if mask == 0 {
            for p in word.windows(2) {
                f((p[0].id(), p[1].id()), i as u32);
            }
            continue;
        }
        if mine.len() < word.len() {
            mine.resize(word.len(), (0, 0));
        }
        let mut n = 0;
        for p in word.windows(2) {
            let p = (p[0].id(), p[1].id());
            mine[n] = p;
            n += usize::from(shard_of(p) & mask == shard);
        }
        for &p in &mine[..n] {
            f(p, i as u32);
        }
    }
}

/// A pair of pass 1: its count, the bytes of its word list, and 1 + the
/// last word listed (0: none yet). 16 bytes: pass 1 reaches one for every
/// pair occurrence, scattered over the shard's pairs (with 32, an offset
/// and an `Option` besides, the loads of these missed the cache most).
#[derive(Default)]
pub(super) struct Building {
    pub(super) count: u64,
    pub(super) size: u32,
    last: u32,
}

impl Building {
    /// Word `i` (of count `freq`) holds the pair once more: whether the
    /// word is new to its list.
    #[inline]
    fn add(&mut self, i: u32, freq: u64) -> bool {
        self.count += freq;
        if self.last == i + 1 {
            return false;
        }
        self.size += varint_len(i - self.last.saturating_sub(1)) as u32;
        self.last = i + 1;
        true
    }
}

/// Where a pair's list goes on in the arena in pass 2 (its end once
/// written), and 1 + the last word written (0: none yet).
pub(super) struct Cursor {
    pub(super) at: usize,
    last: u32,
}

/// The word lists of pass 2, written in place in one arena sized by pass 1.
struct Lists {
    cursors: Vec<Cursor>,
    base: Vec<u8>,
}

impl Lists {
    /// Room for lists of the sizes in `building`, each after the one before.
    fn new(building: &[Building]) -> Self {
        let mut total = 0;
        let cursors = (building.iter())
            .map(|b| {
                let cursor = Cursor { at: total, last: 0 };
                total += b.size as usize;
                cursor
            })
            .collect();
        let mut base = vec_on_huge_pages(total);
        base.resize(total, 0u8);
        Lists { cursors, base }
    }

    /// Append word `i` (past the last one written) to list `at`.
    #[inline]
    fn add(&mut self, at: usize, i: u32) {
        let cursor = &mut self.cursors[at];
        put_varint(
            &mut self.base,
            &mut cursor.at,
            i - cursor.last.saturating_sub(1),
        );
        cursor.last = i + 1;
    }

    /// Add the words of a record (`Listed`, or a stream after pass 1): a
    /// word's id (with `WORD`), then the pair numbers it adds to lists.
    fn add_recorded(&mut self, entries: &[u32]) {
        let mut word = 0;
        for (k, &e) in entries.iter().enumerate() {
            if let Some(&next) = entries.get(k + AHEAD) {
                if next & WORD == 0 {
                    prefetch_ptr(self.cursors.as_ptr().wrapping_add(next as usize));
                }
            }
            if e & WORD != 0 {
                word = e & !WORD;
            } else {
                self.add(e as usize, word);
            }
        }
    }

    fn into_shard(self, slots: &PairSlots) -> Shard {
        Shard::of_lists(&slots.pairs, &slots.building, &self.cursors, self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::symbols::runs_of;

    #[test]
    fn streams_hold_each_words_pairs_of_their_shard_in_order() {
        // Words of 0-8 ids, and long ones of two pairs only (their streams
        // grow past an even share of the pairs).
        let raw: Vec<Vec<u32>> = (0..40u32)
            .map(|k| match k % 10 {
                9 => (0..200).map(|j| 1 + j % 2).collect(),
                _ => (0..k % 9).map(|j| (k * 7 + j * 3) % 11).collect(),
            })
            .collect();
        let slices: Vec<(&[u32], u64)> = raw.iter().map(|ids| (&ids[..], 1)).collect();
        let (words, _) = Words::<u16>::from_runs(&runs_of(&slices, 2), |_| 0);
        let bits = stream_bits(&words, 300, 4, usize::MAX).expect("fits");
        assert_eq!(bits, 9);
        assert_eq!(stream_bits(&words, 300, 4, words.capacity()), None);
        assert_eq!(stream_bits(&words, 1 << 16, 4, usize::MAX), None);
        assert_eq!(stream_bits(&words, 256, 4, usize::MAX), None, "bytes");
        let ranges = word_ranges(&words, 4);
        assert_eq!((ranges[0].start, ranges[3].end), (0, words.count()));
        let mut got = vec![vec![]; 4];
        for range in ranges {
            for (shard, stream) in scatter(&words, range, 3, bits).into_iter().enumerate() {
                got[shard].extend(stream);
            }
        }
        for (shard, stream) in got.iter().enumerate() {
            let mut want = vec![];
            for i in 0..words.count() {
                let pairs: Vec<u32> = (words.get(i).windows(2))
                    .map(|p| (p[0].id(), p[1].id()))
                    .filter(|&p| shard_of(p) & 3 == shard)
                    .map(|(a, b)| a << bits | b)
                    .collect();
                if !pairs.is_empty() {
                    want.push(i as u32 | WORD);
                    want.extend(pairs);
                }
            }
            assert_eq!(stream, &want, "shard {shard}");
        }
    }
}
