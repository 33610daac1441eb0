//! The pair index of the merge loop: every pair's count and the words that
//! hold it, the word lists delta-encoded (`WordList`), and the
//! index of the initial words (`initial_pair_index`), kept in hash shards
//! (`PairMap`).

mod table;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::words::{Symbol, Words};
use super::Pair;
use crate::memory::vec_on_huge_pages;
use table::{PairKey, PairTable};

/// The words of a pair: the indices of words that contained the pair when
/// it was counted (they may have lost it since; the merge re-checks). Its
/// count is the sum of their frequencies, times the pair's occurrences in each.
///
/// Increasing word indices, each stored as its difference from the previous
/// one in LEB128 (7 bits a byte), in the byte arena of the pair's shard
/// (`Shard`): `len` bytes at `at`. The index holds about one entry per byte
/// of every word (97 M for 8 M words), most of them small steps between the
/// words of a frequent pair: 1.3 bytes an entry where a `u32` took 4. A list
/// never grows once made (a new pair comes with all its words). In an arena,
/// not a box each: a training run makes hundreds of thousands of pairs, most
/// with a few words, and their allocations and frees were a fifth of
/// training SentencePiece BPE on multilingual text.
#[derive(Clone, Copy, Default)]
struct WordList {
    at: u64,
    len: u32,
}

/// Bytes of `delta` in LEB128.
fn varint_len(delta: u32) -> usize {
    (32 - (delta | 1).leading_zeros() as usize).div_ceil(7)
}

fn push_varint(out: &mut Vec<u8>, mut delta: u32) {
    while delta >= 0x80 {
        out.push(delta as u8 | 0x80);
        delta >>= 7;
    }
    out.push(delta as u8);
}

/// Write `delta` in LEB128 at `out[*at..]`, moving `at` past it.
fn put_varint(out: &mut [u8], at: &mut usize, mut delta: u32) {
    while delta >= 0x80 {
        out[*at] = delta as u8 | 0x80;
        *at += 1;
        delta >>= 7;
    }
    out[*at] = delta as u8;
    *at += 1;
}

/// Append the list of `ids` (increasing) to `out`.
fn encode_sorted(out: &mut Vec<u8>, ids: &[u32]) {
    let mut last = 0;
    for &i in ids {
        push_varint(out, i - last);
        last = i;
    }
}

/// The word indices of a list's bytes, in order.
fn decode(bytes: &[u8]) -> Vec<u32> {
    let mut ids = Vec::with_capacity(bytes.len());
    let (mut last, mut delta, mut shift) = (0u32, 0u32, 0);
    for &b in bytes {
        delta |= u32::from(b & 0x7f) << shift;
        shift += 7;
        if b < 0x80 {
            last += delta;
            ids.push(last);
            (delta, shift) = (0, 0);
        }
    }
    ids
}

/// Pair counts and reverse index of the initial words, built in parallel:
/// each thread indexes one shard of the pairs (`PairMap`) over all the words,
/// in word order, in two passes so that each pair's word list is allocated
/// once at its final size (lists grown by pushing held ~1.5x their entries:
/// 570 MB for 390 MB of word ids on 8 M words). Each list holds its words in
/// increasing order, each once. The shards are disjoint, so nothing is
/// summed across threads (counting a share of the words per thread put most
/// pairs in every thread's map, and adding those up was serial: 0.5 s of
/// SuperBPE's stage 2 on enwiki, 2.1M pairs).
///
/// `alphabet`: every symbol of the words is below it.
pub(super) fn initial_pair_index<S: Symbol>(
    words: &Words<S>,
    freqs: &[u64],
    alphabet: usize,
) -> PairMap {
    let threads = rayon::current_num_threads().clamp(1, 8);
    let mask = threads.next_power_of_two() - 1;
    let shards = (0..=mask)
        .into_par_iter()
        .map(|shard| shard_index(words, freqs, alphabet, (shard, mask)))
        .collect();
    PairMap { shards, mask }
}

/// The pairs of shard `shard` (`shard_of(pair) & mask`) in every word.
fn shard_index<S: Symbol>(
    words: &Words<S>,
    freqs: &[u64],
    alphabet: usize,
    (shard, mask): (usize, usize),
) -> Shard {
    let mut slots = PairSlots::new(alphabet);
    // Pass 1: every pair's count and list size, and, when some pairs are
    // hashed (`PairSlots`), the pairs each word adds to lists, in word order
    // (`Listed`): pass 2 then writes the lists from them without reading the
    // words or hashing their pairs again (hashing each occurrence twice was
    // most of the index's time on multilingual text: 2.7 M occurrences of
    // 93 k pairs on 10 MB). Within `LISTED_MAX_ENTRIES` only: on a big
    // corpus the record would outweigh the words.
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
    // Each list's place in the arena, then pass 2 writes them.
    let mut total = 0;
    let mut cursors: Vec<Cursor> = (slots.building.iter())
        .map(|b| {
            let cursor = Cursor { at: total, last: 0 };
            total += b.size as usize;
            cursor
        })
        .collect();
    let mut base = vec_on_huge_pages(total);
    base.resize(total, 0u8);
    let mut list = |cursor: &mut Cursor, i: u32| {
        put_varint(&mut base, &mut cursor.at, i - cursor.last.saturating_sub(1));
        cursor.last = i + 1;
    };
    match listed {
        Some(listed) => listed.for_each(|i, at| list(&mut cursors[at], i)),
        None => for_pairs_of_shard(words, shard, mask, |p, i| {
            let at = slots.slot(p);
            if cursors[at].last != i + 1 {
                list(&mut cursors[at], i);
            }
        }),
    }
    let pairs = (slots.pairs.iter().zip(&slots.building).zip(&cursors)).map(|((&p, b), c)| {
        let words = WordList {
            at: (c.at - b.size as usize) as u64,
            len: b.size,
        };
        (key_of(p), b.count, words)
    });
    Shard {
        map: PairTable::of_pairs(pairs),
        base,
        extra: Vec::new(),
        garbage: 0,
    }
}

/// Symbols below this id pair up in a table, not a hash map: every pair of
/// bytes, and of the most frequent characters (SentencePiece numbers its
/// characters by frequency). 256 KiB a shard (a table of 1024 symbols, 4
/// MiB a shard, was no faster on multilingual text).
const DENSE_SYMBOLS: u32 = 256;

/// Entries a shard's `Listed` may hold (4 bytes each; 10 MB of
/// multilingual text needs at most 3 M).
const LISTED_MAX_ENTRIES: usize = 1 << 24;

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
}

/// Call `f(pair, word)` for each pair of shard `shard` in each word, in order.
/// With several shards a word's pairs of this shard are picked out first
/// without a branch (`mine`): which shard a pair hashes to is a coin toss,
/// and a branch on it missed its prediction at every other pair (a sixth of
/// the index's time on two threads).
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

/// The (word, pair number) of each pair a word adds to a list, in word
/// order, in 4 bytes each: a word's pair numbers after its id (its top bit set).
struct Listed {
    entries: Vec<u32>,
    word: Option<u32>,
}

impl Listed {
    const WORD: u32 = 1 << 31;

    #[inline]
    fn push(&mut self, word: u32, pair: usize) {
        if self.word != Some(word) {
            assert!(word < Self::WORD, "at most 2^31 words");
            self.entries.push(word | Self::WORD);
            self.word = Some(word);
        }
        debug_assert!(pair < Self::WORD as usize);
        self.entries.push(pair as u32);
    }

    /// `f(word, pair number)` for each entry, in order.
    fn for_each(&self, mut f: impl FnMut(u32, usize)) {
        let mut word = 0;
        for &e in &self.entries {
            if e & Self::WORD != 0 {
                word = e & !Self::WORD;
            } else {
                f(word, e as usize);
            }
        }
    }
}

/// A pair of `shard_index`'s pass 1: its count, the bytes of its word list,
/// and 1 + the last word listed (0: none yet). 16 bytes: pass 1 reaches one
/// for every pair occurrence, scattered over the shard's pairs (with 32, an
/// offset and an `Option` besides, the loads of these missed the cache most).
#[derive(Default)]
struct Building {
    count: u64,
    size: u32,
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

/// Where a pair's list goes on in the arena in pass 2, and 1 + the last word
/// written (0: none yet).
struct Cursor {
    at: usize,
    last: u32,
}

/// Every pair with a positive count and its stats, in shards by a hash of the
/// pair (a power of two of them) as `initial_pair_index` builds them, one per
/// thread. The shards are never joined into one map: on SuperBPE's stage 2 of
/// enwiki (2.1M pairs) the join was a rehash of every pair with both copies
/// held at once. A lookup picks its shard with a multiply and a mask.
pub(super) struct PairMap {
    shards: Vec<Shard>,
    mask: usize,
}

impl PairMap {
    /// No pair (a placeholder while the index is rebuilt).
    pub(super) fn empty() -> Self {
        PairMap {
            shards: Vec::new(),
            mask: 0,
        }
    }
}

/// The pairs of one shard and their word lists: those of the initial
/// words in `base` (made at their final size), those made by merges
/// appended to `extra`; an offset past `base` is in `extra`. A removed
/// pair's list stays as garbage until garbage is half the bytes, when the
/// live lists are copied into a new `base` (so the arena holds at most
/// twice the live lists, besides `extra`'s room to grow).
struct Shard {
    map: PairTable,
    base: Vec<u8>,
    extra: Vec<u8>,
    garbage: usize,
}

impl Shard {
    fn bytes(&self, list: WordList) -> &[u8] {
        let (at, len) = (list.at as usize, list.len as usize);
        match at.checked_sub(self.base.len()) {
            None => &self.base[at..at + len],
            Some(at) => &self.extra[at..at + len],
        }
    }

    /// The list of a removed pair is garbage now.
    fn dropped(&mut self, list: WordList) {
        self.garbage += list.len as usize;
        if 2 * self.garbage > self.base.len() + self.extra.len() {
            self.compact();
        }
    }

    fn insert(&mut self, pair: Pair, count: u64, ids: &[u32]) {
        let at = self.base.len() + self.extra.len();
        encode_sorted(&mut self.extra, ids);
        let len = (self.base.len() + self.extra.len() - at) as u32;
        let words = WordList { at: at as u64, len };
        if let Some(old) = self.map.insert(key_of(pair), count, words) {
            self.garbage += old.len as usize;
        }
    }

    /// Copy the live lists into a new `base`, dropping the garbage.
    fn compact(&mut self) {
        let live = self.base.len() + self.extra.len() - self.garbage;
        let mut base = Vec::with_capacity(live);
        for list in self.map.lists_mut() {
            let at = base.len();
            let bytes = match (list.at as usize).checked_sub(self.base.len()) {
                None => &self.base[list.at as usize..][..list.len as usize],
                Some(x) => &self.extra[x..][..list.len as usize],
            };
            base.extend_from_slice(bytes);
            list.at = at as u64;
        }
        self.base = base;
        self.extra = Vec::new();
        self.garbage = 0;
    }
}

impl PairMap {
    #[inline]
    fn shard(&self, pair: Pair) -> usize {
        shard_of(pair) & self.mask
    }

    /// The count of `pair` (occurrences in the corpus: the sum of the
    /// frequencies of the words holding it), if it is there.
    #[inline]
    pub(super) fn count(&self, pair: &Pair) -> Option<u64> {
        let map = &self.shards[self.shard(*pair)].map;
        map.find(key_of(*pair)).map(|slot| map.count(slot))
    }

    /// Ask for the cache lines `pair`'s probe reads first.
    #[inline]
    pub(super) fn prefetch(&self, pair: Pair) {
        self.shards[self.shard(pair)].map.prefetch(key_of(pair));
    }

    /// Take `n` off `pair`'s count, removing it at 0 (one probe); false if absent.
    #[inline]
    pub(super) fn count_down(&mut self, pair: Pair, n: u64) -> bool {
        let at = self.shard(pair);
        let shard = &mut self.shards[at];
        let Some(slot) = shard.map.find(key_of(pair)) else {
            return false;
        };
        if let Some(list) = shard.map.count_down(slot, n) {
            shard.dropped(list);
        }
        true
    }

    /// `count_down` of each (pair, n) of `changes`, the probes of the next
    /// `AHEAD` prefetched meanwhile; returns how many were absent.
    pub(super) fn count_down_all(
        &mut self,
        changes: impl Iterator<Item = (Pair, u64)> + Clone,
    ) -> usize {
        let mut ahead = changes.clone();
        ahead
            .by_ref()
            .take(AHEAD)
            .for_each(|(p, _)| self.prefetch(p));
        let mut absent = 0;
        for (p, n) in changes {
            if let Some((q, _)) = ahead.next() {
                self.prefetch(q);
            }
            absent += usize::from(!self.count_down(p, n));
        }
        absent
    }

    /// Remove `pair`, returning the words of its list (increasing); empty
    /// if it was not there.
    pub(super) fn take_words(&mut self, pair: &Pair) -> Vec<u32> {
        let at = self.shard(*pair);
        let shard = &mut self.shards[at];
        let Some(slot) = shard.map.find(key_of(*pair)) else {
            return Vec::new();
        };
        let ids = decode(shard.bytes(shard.map.list(slot)));
        let list = shard.map.remove(slot);
        shard.dropped(list);
        ids
    }

    /// Add `pair` with its count and its words (increasing, no repeats).
    #[inline]
    pub(super) fn insert(&mut self, pair: Pair, count: u64, words: &[u32]) {
        let shard = self.shard(pair);
        self.shards[shard].insert(pair, count, words);
    }

    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.map.len()).sum()
    }

    /// Every pair with its count.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Pair, u64)> + '_ {
        (self.shards.iter()).flat_map(|shard| {
            shard
                .map
                .iter()
                .map(|(key, count, _)| (pair_of(key), count))
        })
    }

    /// The words of `pair`'s list (tests).
    #[cfg(test)]
    fn words_of(&self, pair: &Pair) -> Vec<u32> {
        let shard = &self.shards[self.shard(*pair)];
        let slot = shard.map.find(key_of(*pair)).expect("a pair held");
        decode(shard.bytes(shard.map.list(slot)))
    }
}

/// Probes asked for ahead of the one made (`PairMap::prefetch`).
pub(super) const AHEAD: usize = 16;

#[inline]
fn key_of((a, b): Pair) -> PairKey {
    (u64::from(a) << 32) | u64::from(b)
}

fn pair_of(key: PairKey) -> Pair {
    ((key >> 32) as u32, key as u32)
}

/// The hash that picks the shard of `pair` (its low bits): the high bits of
/// a multiplicative hash with its own constant, so a shard's pairs do not
/// share the bits the maps' hasher picks buckets with.
#[inline]
fn shard_of(pair: Pair) -> usize {
    (key_of(pair).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize
}

#[cfg(test)]
mod tests;
