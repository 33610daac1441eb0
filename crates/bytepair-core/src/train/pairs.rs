//! The pair index of the merge loop: every pair's count and the words that
//! hold it, the word lists delta-encoded (`WordList`), and the index of
//! the initial words (`initial_pair_index`, in `index`), kept in shards of
//! open-addressed tables (`PairMap`, `table`).

mod index;
mod table;

use super::Pair;
pub(super) use index::initial_pair_index;
use index::{Building, Cursor};
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
    /// The shard of the initial words' `pairs`, each with its count and
    /// list size (`building`) and its list's end in `base` (`cursors`).
    fn of_lists(pairs: &[Pair], building: &[Building], cursors: &[Cursor], base: Vec<u8>) -> Shard {
        let lists = (pairs.iter().zip(building).zip(cursors)).map(|((&p, b), c)| {
            let words = WordList {
                at: (c.at - b.size as usize) as u64,
                len: b.size,
            };
            (key_of(p), b.count, words)
        });
        let map = PairTable::of_pairs(lists);
        Shard {
            map,
            base,
            extra: Vec::new(),
            garbage: 0,
        }
    }

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
