//! The three slot tables of a word tally, all open addressing with linear
//! probing, kept at most half full:
//!
//! - `Narrow`: words of at most 11 bytes (99.7% of distinct words and of
//!   occurrences on enwiki with the gpt2 pattern) with a 32-bit count, in one
//!   16-byte number: four slots per cache line, half the bytes of a `Wide`
//!   slot. Counting is bound by the cache misses of the probes into this
//!   table (~430k words on enwiki: 16 MiB of narrow slots instead of 32 MiB).
//! - `Wide`: words of 12 to 15 bytes (a `shortkey` key) with a 64-bit count,
//!   and the words whose count outgrew 32 bits.
//! - `Mid`: words of 16 to 31 bytes (`shortkey::load_mid`), 48-byte slots:
//!   words of 6 to 10 characters of most non-Latin scripts (40% of the
//!   distinct words of multilingual.txt have more than 15 bytes; in a byte-string
//!   map, hashing, allocating and freeing them was a quarter of counting it).
//!
//! A narrow slot whose count is 0 is a *marker*: its word's count passed
//! `u32::MAX` and lives in the wide table from then on (the marker keeps the
//! probe sequences of the words after it intact; there is no deletion).

use rayon::prelude::*;

use crate::memory::{prefetch, prefetch_ptr, ZeroedSlice};
use crate::shortkey;

/// The longest word that has a narrow slot.
pub(super) const NARROW_MAX: usize = 11;

/// The low 96 bits of a narrow slot: the word's bytes (88 bits) and its length (8).
const NARROW_KEY: u128 = (1 << 96) - 1;
const BODY_BITS: u128 = (1 << 88) - 1;
const COUNT_SHIFT: u32 = 96;
const MAX_NARROW_COUNT: u64 = u32::MAX as u64;

/// The narrow key of a `shortkey` key of at most `NARROW_MAX` bytes: its
/// length moved from the top byte to byte 11. Never 0, and the top 32 bits are
/// 0 (a wide key's top byte is its length, 12 to 15: the two kinds differ).
#[inline]
pub(super) fn narrow_key(key: u128) -> u128 {
    debug_assert!((key >> 120) as usize <= NARROW_MAX);
    (key & BODY_BITS) | (key >> 120) << 88
}

/// `narrow_key(shortkey::load(text, start, len))` (`len` at most
/// `NARROW_MAX`), loaded as such: converting from the shortkey layout per
/// pre-token cost more than the smaller table saved.
#[inline]
pub(super) fn load_narrow(text: &[u8], start: usize, len: usize) -> u128 {
    debug_assert!(len <= NARROW_MAX);
    shortkey::load_body(text, start, len) | (len as u128) << 88
}

/// The `shortkey` key of a narrow key.
#[inline]
pub(super) fn wide_key(narrow: u128) -> u128 {
    (narrow & BODY_BITS) | (narrow >> 88 & 0xff) << 120
}

/// What a table stores in a slot (all-zero bytes: empty).
pub(super) trait Slot: Copy {
    /// How an entry names its word.
    type Word;
    /// True when the slot holds nothing.
    fn is_empty(&self) -> bool;
    /// The hash of the key the slot is filed under.
    fn hash(&self) -> u64;
    /// The word and its count, unless the slot is empty or a marker.
    fn entry(&self) -> Option<(Self::Word, u64)>;
}

/// A word of at most `NARROW_MAX` bytes and its count: `narrow_key | count << 96`.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub(super) struct Narrow(u128);

impl Narrow {
    #[inline]
    fn key(&self) -> u128 {
        self.0 & NARROW_KEY
    }
}

impl Slot for Narrow {
    /// A `shortkey` key.
    type Word = u128;

    fn is_empty(&self) -> bool {
        self.0 == 0
    }

    fn hash(&self) -> u64 {
        shortkey::hash(self.key())
    }

    fn entry(&self) -> Option<(u128, u64)> {
        let count = (self.0 >> COUNT_SHIFT) as u64;
        (count != 0).then(|| (wide_key(self.key()), count))
    }
}

/// A key of a table with a 64-bit count per word.
pub(super) trait CountedKey: Copy + Eq + Default {
    /// True for the all-zero key of an empty slot.
    fn is_none(&self) -> bool;
    fn hash(&self) -> u64;
}

/// A `shortkey` key: a word of at most 15 bytes.
impl CountedKey for u128 {
    fn is_none(&self) -> bool {
        *self == 0
    }

    #[inline]
    fn hash(&self) -> u64 {
        shortkey::hash(*self)
    }
}

/// A `shortkey::load_mid` key: a word of 16 to 31 bytes (length in the top
/// byte of the second half).
impl CountedKey for [u128; 2] {
    fn is_none(&self) -> bool {
        self[1] == 0
    }

    #[inline]
    fn hash(&self) -> u64 {
        shortkey::hash_mid(*self)
    }
}

/// A word and its 64-bit count.
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub(super) struct Counted<K> {
    key: K,
    count: u64,
}

/// Words of 12 to 15 bytes, and those whose count outgrew a narrow slot.
pub(super) type Wide = Counted<u128>;
/// Words of 16 to 31 bytes.
pub(super) type Mid = Counted<[u128; 2]>;

impl<K: CountedKey> Slot for Counted<K> {
    type Word = K;

    fn is_empty(&self) -> bool {
        self.key.is_none()
    }

    fn hash(&self) -> u64 {
        self.key.hash()
    }

    fn entry(&self) -> Option<(K, u64)> {
        (!self.is_empty()).then_some((self.key, self.count))
    }
}

/// An open-addressing table of slots, a power of two of them, at most half full.
pub(super) struct Table<S: Copy> {
    slots: ZeroedSlice<S>,
    /// 64 - log2(slots): a hash shifted right by it is a home slot.
    shift: u32,
    /// Slots taken (markers included).
    taken: usize,
}

impl<S: Slot> Table<S> {
    /// An empty table of `slots` slots (a power of two), its memory handed
    /// back to the OS when dropped, or with `reuse` kept for the next table
    /// of its size (tables of counts without a budget; `ZeroedSlice::mapped`).
    pub(super) fn new(slots: usize, reuse: bool) -> Self {
        debug_assert!(slots.is_power_of_two());
        // SAFETY: an all-zero slot is a valid, empty slot (both kinds are plain integers).
        Table {
            slots: unsafe { ZeroedSlice::mapped(slots, reuse) },
            shift: 64 - slots.trailing_zeros(),
            taken: 0,
        }
    }

    /// An empty table with room for `words` words (`reuse` as in `new`).
    pub(super) fn for_words(words: usize, min_slots: usize, reuse: bool) -> Self {
        Self::new((2 * words).next_power_of_two().max(min_slots), reuse)
    }

    /// Slots, taken or not.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Slots taken (markers included).
    pub(super) fn taken(&self) -> usize {
        self.taken
    }

    /// Heap bytes of the slots.
    pub(super) fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<S>()
    }

    /// True when `more` new words would fill more than half the table.
    #[inline]
    pub(super) fn needs_room(&self, more: usize) -> bool {
        2 * (self.taken + more) > self.slots.len()
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Ask for the home slot of `hash` ahead of its probe.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        // No bounds check: a home slot is always in the table.
        prefetch_ptr(self.slots.as_ptr().wrapping_add(self.home(hash)));
    }

    /// Double the slots, filing every slot (markers too) again.
    pub(super) fn grow(&mut self) {
        self.grow_to(2 * self.slots.len());
    }

    /// Grow to `slots` slots (a power of two, more than now), filing every
    /// slot (markers too) again.
    pub(super) fn grow_to(&mut self, slots: usize) {
        debug_assert!(slots.is_power_of_two() && slots > self.slots.len());
        let bigger = Table::new(slots, self.slots.is_reusable());
        let old = std::mem::replace(self, bigger);
        for slot in old.slots.iter().filter(|s| !s.is_empty()) {
            let mut i = self.home(slot.hash());
            while !self.slots[i].is_empty() {
                i = (i + 1) & (self.slots.len() - 1);
            }
            self.slots[i] = *slot;
            self.taken += 1;
        }
    }

    /// Every word and its count, markers skipped.
    pub(super) fn entries(&self) -> impl Iterator<Item = (S::Word, u64)> + '_ {
        self.slots.iter().filter_map(Slot::entry)
    }

    /// The words of part `part` of `parts` (a range of slots), and their counts.
    pub(super) fn entries_of_part(
        &self,
        part: usize,
        parts: usize,
    ) -> impl Iterator<Item = (S::Word, u64)> + '_ {
        let n = self.slots.len();
        self.slots[n * part / parts..n * (part + 1) / parts]
            .iter()
            .filter_map(Slot::entry)
    }
}

impl Table<Narrow> {
    /// Every word as its narrow key, and its count, markers skipped.
    pub(super) fn narrow_entries(&self) -> impl Iterator<Item = (u128, u64)> + '_ {
        self.slots
            .iter()
            .map(|s| (s.key(), (s.0 >> COUNT_SHIFT) as u64))
            .filter(|&(_, count)| count != 0)
    }

    /// `bump(key, hash, 1)` with the common case first: the word is there
    /// and one more fits its count. Compared by 64 and 32 bits (the top 32
    /// bits of a narrow key are 0) and incremented in the high half only.
    #[inline]
    pub(super) fn bump_one(&mut self, key: u128, hash: u64) -> Option<u64> {
        let (key_lo, key_hi) = (key as u64, (key >> 64) as u32);
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            debug_assert!(i < self.slots.len());
            // SAFETY: a home slot is below the slots (`home` shifts the hash
            // to log2(slots) bits), and so is any index masked by `mask`.
            let slot = unsafe { self.slots.get_unchecked(i).0 };
            let (lo, hi) = (slot as u64, (slot >> 64) as u64);
            if lo == key_lo && hi as u32 == key_hi {
                if (hi >> 32).wrapping_sub(1) < MAX_NARROW_COUNT - 1 {
                    self.slots[i].0 += 1 << COUNT_SHIFT;
                    return None;
                }
                break;
            }
            if slot == 0 {
                break;
            }
            i = (i + 1) & mask;
        }
        // A new word, a marker, or a count at its limit.
        self.bump(key, hash, 1)
    }

    /// Add `n` to the count of the word of narrow key `key` (`hash` is its
    /// hash), taking an empty slot if it is new; the table has room. None:
    /// done. Some(m): the word's count is kept in the wide table (now or
    /// since earlier), add `m` to it there.
    #[inline]
    pub(super) fn bump(&mut self, key: u128, hash: u64, n: u64) -> Option<u64> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &mut self.slots[i];
            if slot.key() == key {
                let count = (slot.0 >> COUNT_SHIFT) as u64;
                if count == 0 {
                    return Some(n);
                }
                if count + n <= MAX_NARROW_COUNT {
                    slot.0 += u128::from(n) << COUNT_SHIFT;
                    return None;
                }
                slot.0 = key;
                return Some(count + n);
            }
            if slot.0 == 0 {
                self.taken += 1;
                if n == 0 || n > MAX_NARROW_COUNT {
                    slot.0 = key;
                    return Some(n);
                }
                slot.0 = key | u128::from(n) << COUNT_SHIFT;
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Add the counts of `other` (another tally's narrow table) in `parts`
    /// parts on the pool's threads, with no lock: part p owns the p-th
    /// `1 / parts` of this table's slots and adds the words of the p-th of
    /// `other`'s whose home slot and probe lie within its own. The words it
    /// cannot add alone (filed elsewhere, a probe past its end, a marker or a
    /// count past 32 bits) are returned as (narrow key, count), to add one by
    /// one. The table must not fill up (the caller keeps it at most 3/4 full);
    /// `parts` is a power of two, at most the slots of either table.
    pub(super) fn add_in_parts(&mut self, other: &Table<Narrow>, parts: usize) -> Vec<(u128, u64)> {
        // Powers of two, so both tables cut into exactly `parts` parts.
        assert!(parts.is_power_of_two() && parts <= self.slots.len().min(other.slots.len()));
        let (mine, theirs) = (
            self.slots.len().div_ceil(parts),
            other.slots.len().div_ceil(parts),
        );
        let shift = self.shift;
        let done: Vec<(usize, Vec<(u128, u64)>)> = self
            .slots
            .par_chunks_mut(mine)
            .zip(other.slots.par_chunks(theirs))
            .enumerate()
            .map(|(p, (part, words))| add_part(part, p * mine, shift, words))
            .collect();
        let mut left = vec![];
        for (taken, rest) in done {
            self.taken += taken;
            left.extend(rest);
        }
        left
    }
}

/// `Table::add_in_parts` for one part: `part` is the table's slots from
/// `start`, `shift` its home shift. Returns the slots it took and the words
/// left to add one by one. As in `add_batch`, the home slots of a batch of
/// words are prefetched together.
fn add_part(
    part: &mut [Narrow],
    start: usize,
    shift: u32,
    words: &[Narrow],
) -> (usize, Vec<(u128, u64)>) {
    const BATCH: usize = 128;
    let (mut taken, mut left) = (0, vec![]);
    for slots in words.chunks(BATCH) {
        let mut batch = [(0u128, 0usize, 0u64); BATCH];
        let mut n = 0;
        for slot in slots {
            let count = (slot.0 >> COUNT_SHIFT) as u64;
            if count == 0 {
                continue;
            }
            let key = slot.key();
            let home = (shortkey::hash(key) >> shift) as usize;
            match home.checked_sub(start).filter(|&i| i < part.len()) {
                Some(i) => {
                    prefetch(&part[i]);
                    batch[n] = (key, i, count);
                    n += 1;
                }
                None => left.push((key, count)),
            }
        }
        for &(key, home, count) in &batch[..n] {
            match add_within(part, key, home, count) {
                Some(new) => taken += usize::from(new),
                None => left.push((key, count)),
            }
        }
    }
    (taken, left)
}

/// Add `count` (not 0, at most 32 bits) to the word of narrow key `key` in
/// `part`, probing from its slot `home`: Some(true) if it took an empty slot,
/// Some(false) if it was there, None if the probe left `part` or the word's
/// slot is a marker or would pass 32 bits (left to `Table::bump`).
#[inline]
fn add_within(part: &mut [Narrow], key: u128, home: usize, count: u64) -> Option<bool> {
    for slot in &mut part[home..] {
        if slot.key() == key {
            let sum = (slot.0 >> COUNT_SHIFT) as u64 + count;
            if slot.0 >> COUNT_SHIFT == 0 || sum > MAX_NARROW_COUNT {
                return None;
            }
            slot.0 += u128::from(count) << COUNT_SHIFT;
            return Some(false);
        }
        if slot.0 == 0 {
            slot.0 = key | u128::from(count) << COUNT_SHIFT;
            return Some(true);
        }
    }
    None
}

impl<K: CountedKey> Table<Counted<K>> {
    /// Add `n` to the count of `key` (`hash` is its hash), taking an empty
    /// slot if it is new; the table has room. True when it was new.
    #[inline]
    pub(super) fn bump(&mut self, key: K, hash: u64, n: u64) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &mut self.slots[i];
            if slot.key == key {
                slot.count += n;
                return false;
            }
            if slot.key.is_none() {
                *slot = Counted { key, count: n };
                self.taken += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_keys_round_trip_and_differ_from_wide_keys() {
        for word in [&b"a"[..], b" the", b"0123456789a", b"\0", b"\xff\xff"] {
            let key = shortkey::pack(word);
            let narrow = narrow_key(key);
            assert_eq!(wide_key(narrow), key);
            assert_ne!(narrow, 0);
            assert_eq!(
                narrow >> 120,
                0,
                "a narrow key has no length in the top byte"
            );
            let text = [word, &[b'x'; 20][..]].concat();
            assert_eq!(load_narrow(&text, 0, word.len()), narrow);
            assert_eq!(
                load_narrow(word, 0, word.len()),
                narrow,
                "at the end of the text"
            );
        }
    }

    #[test]
    fn a_count_past_32_bits_moves_to_the_wide_table_and_stays_there() {
        let mut narrow = Table::<Narrow>::new(16, false);
        let key = narrow_key(shortkey::pack(b" the"));
        let hash = shortkey::hash(key);
        assert_eq!(narrow.bump(key, hash, MAX_NARROW_COUNT - 1), None);
        assert_eq!(narrow.bump(key, hash, 1), None);
        assert_eq!(
            narrow.entries().collect::<Vec<_>>(),
            [(shortkey::pack(b" the"), MAX_NARROW_COUNT)]
        );
        assert_eq!(narrow.bump(key, hash, 5), Some(MAX_NARROW_COUNT + 5));
        assert_eq!(
            narrow.bump(key, hash, 1),
            Some(1),
            "a marker sends every later count on"
        );
        assert_eq!(narrow.entries().count(), 0);
        assert_eq!(narrow.taken(), 1);
        let other = narrow_key(shortkey::pack(b"x"));
        assert_eq!(
            narrow.bump(other, shortkey::hash(other), 0),
            Some(0),
            "a zero count is not a narrow count"
        );
        assert_eq!(
            narrow.bump(other, shortkey::hash(other), 1 << 40),
            Some(1 << 40)
        );
    }

    #[test]
    fn growth_keeps_every_slot_findable() {
        let mut narrow = Table::<Narrow>::new(8, false);
        let keys: Vec<u128> = (0..1000u32)
            .map(|i| narrow_key(shortkey::pack(&i.to_le_bytes())))
            .collect();
        for (i, &key) in keys.iter().enumerate() {
            if narrow.needs_room(1) {
                narrow.grow();
            }
            assert_eq!(
                narrow.bump(
                    key,
                    shortkey::hash(key),
                    if i % 7 == 0 { 1 << 33 } else { i as u64 + 1 }
                ),
                (i % 7 == 0).then_some(1 << 33)
            );
        }
        for (i, &key) in keys.iter().enumerate() {
            let want = if i % 7 == 0 { Some(2) } else { None };
            assert_eq!(narrow.bump(key, shortkey::hash(key), 2), want);
        }
        assert_eq!(narrow.taken(), 1000);
        let mut got: Vec<u64> = narrow.entries().map(|(_, n)| n).collect();
        got.sort();
        let mut want: Vec<u64> = (0..1000).filter(|i| i % 7 != 0).map(|i| i + 3).collect();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn adding_in_parts_equals_adding_one_by_one() {
        // Small, crowded tables: many probes cross a part's end or wrap
        // around, and many words of a part of `other` are filed in the next.
        // Words of random bytes (consecutive numbers hash too evenly to collide).
        let key = |i: u32| {
            let word = xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()).to_le_bytes();
            narrow_key(shortkey::pack(&word[..7]))
        };
        let fill = |slots: usize, words: std::ops::Range<u32>| {
            let mut table = Table::<Narrow>::new(slots, false);
            for i in words {
                let n = if i % 11 == 0 { MAX_NARROW_COUNT - 1 } else { 1 };
                assert_eq!(table.bump(key(i), shortkey::hash(key(i)), n), None);
            }
            table
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        // (slots, words) of this table and of `other`: together at most 3/4 full.
        let cases = [
            ((64, 0..24), (32, 16..32), 4),
            ((64, 0..32), (64, 24..48), 16),
            ((32, 0..8), (64, 4..20), 8),
        ];
        let mut left_over = 0;
        for seed in 0..50 {
            let shifted = |r: std::ops::Range<u32>| r.start + 1000 * seed..r.end + 1000 * seed;
            for ((mine, words), (theirs, their_words), parts) in cases.clone() {
                let (words, their_words) = (shifted(words), shifted(their_words));
                let other = fill(theirs, their_words);
                let mut want = fill(mine, words.clone());
                for (k, n) in other.narrow_entries() {
                    want.bump(k, shortkey::hash(k), n);
                }
                let mut got = fill(mine, words);
                let left = pool.install(|| got.add_in_parts(&other, parts));
                left_over += left.len();
                for (k, n) in left {
                    got.bump(k, shortkey::hash(k), n);
                }
                let sorted = |t: &Table<Narrow>| {
                    let mut all: Vec<u128> = t.slots.iter().map(|s| s.0).collect();
                    all.sort();
                    (all, t.taken())
                };
                assert_eq!(
                    sorted(&got),
                    sorted(&want),
                    "{mine} / {theirs} slots, {parts} parts"
                );
            }
        }
        assert!(left_over > 100, "words left to add one by one: {left_over}");
    }
}
