//! The pairs of one shard of the pair index: an open-addressing table with
//! linear probing, keyed by the pair packed in a u64, whose home slot is a
//! multiply and a shift away. So the merge loop can compute the slots of a
//! whole merge's pair changes and ask for them all (`prefetch`) before the
//! probes, where a hash map's lookups were one dependent cache miss after
//! another (hashbrown reads its control bytes, then the entry).
//!
//! Each slot is split in two arrays: the hot one holds the key and the count
//! (16 bytes, four slots a cache line), what a count-down reads; the cold one
//! the word list, read only when a pair is made, taken or removed. A removal
//! shifts the probe run after it back (no tombstones), so a probe always
//! stops at the first empty slot.

use super::{WordList, AHEAD};
use crate::memory::{prefetch_ptr, ZeroedSlice};

/// A pair packed in a u64: `left << 32 | right`.
pub(super) type PairKey = u64;

/// A pair's key and count. A count of 0 marks an empty slot: a pair is
/// removed when its count reaches 0, so a live pair never counts 0.
#[derive(Clone, Copy)]
#[repr(C)]
struct Counted {
    key: PairKey,
    count: u64,
}

/// A table of pairs, each with its count and word list (see the module docs).
pub(super) struct PairTable {
    counts: ZeroedSlice<Counted>,
    lists: ZeroedSlice<WordList>,
    /// 64 - log2(slots): a hash shifted right by it is a home slot.
    shift: u32,
    /// Pairs held.
    len: usize,
}

/// The fewest slots of a table.
const MIN_SLOTS: usize = 16;

/// The home-slot hash of a pair's key: a folded 128-bit multiply, so its
/// high bits (the home slot) depend on every bit of both ids, and not on the
/// bits `shard_of` picks the shard with.
#[inline]
fn hash(key: PairKey) -> u64 {
    let product = u128::from(key ^ 0x2D35_8DCC_AA6C_78A5) * 0x8BB8_4B93_962E_ACC9;
    (product as u64) ^ (product >> 64) as u64
}

impl PairTable {
    /// An empty table with room for `pairs` pairs before it grows.
    pub(super) fn with_capacity(pairs: usize) -> Self {
        let slots = (2 * pairs).next_power_of_two().max(MIN_SLOTS);
        // Mapped from the OS when large: fresh pages read as zeros, where
        // `ZeroedSlice::new` wrote the zeros over pages the OS had zeroed
        // already (page zeroing was 4-11% of training multilingual text).
        // SAFETY: all-zero bytes are an empty slot (count 0) and an empty list.
        let (counts, lists) = unsafe {
            (
                ZeroedSlice::mapped(slots, false),
                ZeroedSlice::mapped(slots, false),
            )
        };
        PairTable {
            counts,
            lists,
            shift: 64 - slots.trailing_zeros(),
            len: 0,
        }
    }

    /// A table of `pairs` (key, count, word list; distinct keys), the home
    /// slots asked for `AHEAD` inserts ahead: the pairs come in first-seen
    /// order, each slot a cache miss of its own.
    pub(super) fn of_pairs<I>(pairs: I) -> Self
    where
        I: ExactSizeIterator<Item = (PairKey, u64, WordList)> + Clone,
    {
        let mut table = PairTable::with_capacity(pairs.len());
        let mut ahead = pairs.clone().map(|(key, _, _)| key);
        ahead
            .by_ref()
            .take(AHEAD)
            .for_each(|key| table.prefetch(key));
        for (key, count, list) in pairs {
            if let Some(key) = ahead.next() {
                table.prefetch(key);
            }
            table.insert(key, count, list);
        }
        table
    }

    /// Pairs held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn home(&self, key: PairKey) -> usize {
        (hash(key) >> self.shift) as usize
    }

    #[inline]
    fn next(&self, slot: usize) -> usize {
        (slot + 1) & (self.counts.len() - 1)
    }

    /// Ask for the cache lines of `key`'s home slot, its count's and its
    /// word list's, ahead of a probe. The list's too even for a count-down:
    /// one in a few removes its pair, and reads the list then (asking for
    /// it cut apply_changes' time on multilingual text by a tenth).
    #[inline]
    pub(super) fn prefetch(&self, key: PairKey) {
        let home = self.home(key);
        // No bounds check: a home slot is always in the table.
        prefetch_ptr(self.counts.as_ptr().wrapping_add(home));
        prefetch_ptr(self.lists.as_ptr().wrapping_add(home));
    }

    /// The slot of `key`, if the table holds it.
    #[inline]
    pub(super) fn find(&self, key: PairKey) -> Option<usize> {
        let mut i = self.home(key);
        loop {
            let slot = self.counts[i];
            if slot.count == 0 {
                return None;
            }
            if slot.key == key {
                return Some(i);
            }
            i = self.next(i);
        }
    }

    /// The count of the pair in `slot` (a slot `find` returned).
    #[inline]
    pub(super) fn count(&self, slot: usize) -> u64 {
        self.counts[slot].count
    }

    /// The word list of the pair in `slot`.
    #[inline]
    pub(super) fn list(&self, slot: usize) -> WordList {
        self.lists[slot]
    }

    /// Take `n` (at most its count) off the count of the pair in `slot`;
    /// at 0 the pair is removed and its word list returned.
    #[inline]
    pub(super) fn count_down(&mut self, slot: usize, n: u64) -> Option<WordList> {
        let count = &mut self.counts[slot].count;
        debug_assert!(n <= *count, "a count goes below 0");
        *count -= n;
        (*count == 0).then(|| self.remove(slot))
    }

    /// Remove the pair in `slot`, returning its word list. The probe run
    /// after it moves back into the hole where it may: every pair stays
    /// reachable from its home slot with no empty slot in between.
    pub(super) fn remove(&mut self, slot: usize) -> WordList {
        let removed = self.lists[slot];
        let mask = self.counts.len() - 1;
        let (mut hole, mut i) = (slot, slot);
        loop {
            i = self.next(i);
            let moving = self.counts[i];
            if moving.count == 0 {
                break;
            }
            // The pair in `i` may fill the hole when the hole lies on its
            // probe run, between its home and `i`.
            let home = self.home(moving.key);
            if i.wrapping_sub(home) & mask >= i.wrapping_sub(hole) & mask {
                self.counts[hole] = moving;
                self.lists[hole] = self.lists[i];
                hole = i;
            }
        }
        self.counts[hole].count = 0;
        self.len -= 1;
        removed
    }

    /// Add `key` with `count` (not 0) and `list`, growing the table when it
    /// would be more than half full; returns the list it had if it was there.
    #[inline]
    pub(super) fn insert(&mut self, key: PairKey, count: u64, list: WordList) -> Option<WordList> {
        debug_assert!(count > 0, "a pair counting 0 is no pair");
        if 2 * (self.len + 1) > self.counts.len() {
            self.grow();
        }
        let mut i = self.home(key);
        loop {
            let slot = &mut self.counts[i];
            if slot.count == 0 {
                *slot = Counted { key, count };
                self.lists[i] = list;
                self.len += 1;
                return None;
            }
            if slot.key == key {
                slot.count = count;
                return Some(std::mem::replace(&mut self.lists[i], list));
            }
            i = self.next(i);
        }
    }

    /// Double the slots, filing every pair again.
    fn grow(&mut self) {
        let bigger = PairTable::with_capacity(self.counts.len());
        let old = std::mem::replace(self, bigger);
        for (key, count, list) in old.iter() {
            self.insert(key, count, list);
        }
    }

    /// Every pair's key, count and word list.
    pub(super) fn iter(&self) -> impl Iterator<Item = (PairKey, u64, WordList)> + '_ {
        (self.counts.iter().zip(self.lists.iter()))
            .filter(|(slot, _)| slot.count > 0)
            .map(|(slot, &list)| (slot.key, slot.count, list))
    }

    /// Every pair's word list, to move (`Shard::compact`).
    pub(super) fn lists_mut(&mut self) -> impl Iterator<Item = &mut WordList> + '_ {
        (self.counts.iter().zip(self.lists.iter_mut()))
            .filter(|(slot, _)| slot.count > 0)
            .map(|(_, list)| list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(at: u64) -> WordList {
        WordList { at, len: 1 }
    }

    #[test]
    fn pairs_stay_findable_through_growth_and_removals() {
        // Keys of few distinct high bits crowd the probe runs.
        let key = |i: u64| (i % 7) << 32 | i;
        let mut table = PairTable::with_capacity(4);
        let mut want = rustc_hash::FxHashMap::default();
        for i in 0..3000u64 {
            assert!(table.insert(key(i), i + 1, list(i)).is_none());
            want.insert(key(i), i + 1);
            if i % 3 == 0 {
                // Remove an earlier pair: by counting down to 0, or at once.
                let gone = key(i / 2);
                let slot = table.find(gone).expect("held");
                let removed = match i % 2 {
                    0 => table.count_down(slot, table.count(slot)),
                    _ => Some(table.remove(slot)),
                };
                assert_eq!(removed.map(|l| l.at), Some(i / 2));
                want.remove(&gone);
            }
        }
        assert_eq!(table.len(), want.len());
        for (&k, &count) in &want {
            let slot = table.find(k).expect("every pair left is found");
            assert_eq!(table.count(slot), count);
            assert_eq!(table.list(slot).at, (k & 0xffff_ffff));
        }
        let mut got: Vec<(u64, u64)> = table.iter().map(|(k, n, _)| (k, n)).collect();
        let mut all: Vec<(u64, u64)> = want.into_iter().collect();
        got.sort();
        all.sort();
        assert_eq!(got, all);
        assert!(table.find(key(5000)).is_none());
    }

    #[test]
    fn counting_down_keeps_the_pair_until_zero_and_insert_replaces() {
        let mut table = PairTable::with_capacity(2);
        table.insert(9, 5, list(1));
        let slot = table.find(9).unwrap();
        assert!(table.count_down(slot, 4).is_none());
        assert_eq!(table.count(slot), 1);
        assert_eq!(table.insert(9, 7, list(2)).map(|l| l.at), Some(1));
        let slot = table.find(9).unwrap();
        assert_eq!((table.count(slot), table.list(slot).at), (7, 2));
        assert_eq!(table.count_down(slot, 7).map(|l| l.at), Some(2));
        assert!(table.find(9).is_none() && table.len() == 0);
    }
}
