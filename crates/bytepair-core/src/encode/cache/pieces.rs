//! `PieceCache`: pieces -> ids in an open-addressing table, bounded by a
//! byte budget, and what it does when the budget is reached: a CLOCK sweep
//! that keeps the pieces hit since the last sweep, the longest-lived first.
//!
//! Eviction is CLOCK (second chance: F. J. Corbató, "A paging experiment with
//! the Multics system", MIT Project MAC report MAC-M-384, 1968) run as one
//! sweep over the table when it is full, as not-recently-used replacement
//! does: every slot carries a reference bit (here inverted: `COLD`), set by
//! the sweep and cleared by the piece's next hit. A sweep keeps half a table:
//! the pieces hit since the last sweep first, those among them that survived
//! more sweeps (`AGE`, at most 3: a frequency class counted at sweep time
//! only) before the others, then cold ones if room is left. Text is Zipfian:
//! the pieces hit between two sweeps are the frequent ones, and the one-off
//! pieces that fill a cache go first, so a working set larger than the budget
//! keeps its head cached and degrades towards the rate of misses gradually
//! instead of emptying the cache, which is what it did before: a text whose
//! distinct pieces overflowed the table by a little ran its every call at
//! the speed of misses from the first overflow on.
//!
//! The hit loop pays nothing for it: a cold slot fails its fast test (its
//! count reads as more ids than a slot holds inline) and the slow path warms
//! it, once per piece per sweep; a cache below its budget never sweeps, and
//! its pieces are inserted warm.

use std::marker::PhantomData;

use crate::memory::ZeroedSlice;

use super::super::decode::push_fixed;

/// The key of a piece cache's slot: a piece's bytes and length packed into
/// numbers (`shortkey`); all zero marks an empty slot, which no piece packs to.
pub(crate) trait SlotKey: Copy + Eq {
    /// The key of an empty slot: all zero.
    const EMPTY: Self;
    fn is_empty(&self) -> bool {
        *self == Self::EMPTY
    }
    fn hash(&self) -> u64;
}

/// Pieces of up to 15 bytes (`shortkey::load`).
impl SlotKey for u128 {
    const EMPTY: Self = 0;
    #[inline]
    fn hash(&self) -> u64 {
        crate::shortkey::hash(*self)
    }
}

/// Pieces of 16 to 31 bytes (`shortkey::load_mid`).
impl SlotKey for [u128; 2] {
    const EMPTY: Self = [0; 2];
    #[inline]
    fn hash(&self) -> u64 {
        crate::shortkey::hash_mid(*self)
    }
}

/// Bit of a slot's `count`: not hit since the last sweep (or since the table
/// reached its budget). A cold slot's count reads as too many ids to be
/// inline, so the hit loop's fast test sends it to `PieceCache::push_hit_home`.
const COLD: u32 = 1 << 31;
/// Where a slot's age (sweeps survived, at most 3) sits in `count`.
const AGE_SHIFT: u32 = 29;
/// Bits of a slot's age.
pub(super) const AGE: u32 = 3 << AGE_SHIFT;
/// Bits of a slot's number of ids.
const IDS: u32 = !(COLD | AGE);

/// A cached piece: its key and its `N` ids inline or, beyond `N`, as
/// (offset, count) in the spill list; `count` also holds the slot's `COLD`
/// bit and `AGE`. 32 bytes for short pieces (`u128`, 3 ids), 64 for the
/// others (`[u128; 2]`, 7 ids): slots never straddle a cache line (tables are
/// aligned to 64 bytes).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(super) struct Slot<K, const N: usize> {
    pub(super) key: K,
    pub(super) ids: [u32; N],
    pub(super) count: u32,
}

impl<K: SlotKey, const N: usize> Slot<K, N> {
    const EMPTY: Self = Slot {
        key: K::EMPTY,
        ids: [0; N],
        count: 0,
    };

    #[inline]
    fn ids_len(&self) -> usize {
        (self.count & IDS) as usize
    }

    fn age(&self) -> usize {
        ((self.count & AGE) >> AGE_SHIFT) as usize
    }

    /// What a sweep keeps first, the highest first: 1 + age for a warm slot
    /// (hit since the last sweep), 0 for a cold one.
    fn class(&self) -> usize {
        match self.count & COLD {
            0 => 1 + self.age(),
            _ => 0,
        }
    }
}

/// What a piece cache holds and has done (`Encoder::cache_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PieceCacheStats {
    /// Pieces cached now.
    pub pieces: usize,
    /// Bytes of the slot table and of the spilled ids.
    pub bytes: usize,
    /// Pieces inserted (each one a miss).
    pub inserted: u64,
    /// Sweeps made at the budget, and pieces they evicted.
    pub sweeps: u64,
    pub evicted: u64,
}

/// Pieces -> ids: open addressing with linear probing, at most half full
/// below its budget (then doubled); at the budget, swept when three quarters
/// full or when the spilled ids reach their share, down to half full or less.
pub(crate) struct PieceCache<K: SlotKey, const N: usize> {
    slots: ZeroedSlice<Slot<K, N>>,
    /// 64 - log2(slots): a hash shifted right by it is a home slot.
    shift: u32,
    len: usize,
    pub(super) max_slots: usize,
    spill: Vec<u32>,
    /// Most ids `spill` may hold.
    max_spill: usize,
    stats: PieceCacheStats,
}

impl<K: SlotKey, const N: usize> PieceCache<K, N> {
    /// An empty cache whose slots may take `budget` bytes (rounded down to a
    /// power of two of slots, at least 16 slots) and its spilled ids
    /// an eighth as much more.
    pub(crate) fn new(budget: usize) -> Self {
        let size = std::mem::size_of::<Slot<K, N>>();
        let max_slots = prev_power_of_two((budget / size).max(16));
        let initial = (super::INITIAL_BYTES / size).min(max_slots);
        PieceCache {
            slots: Self::empty_slots(initial),
            shift: 64 - initial.trailing_zeros(),
            len: 0,
            max_slots,
            spill: Vec::new(),
            max_spill: max_slots * size / 32,
            stats: PieceCacheStats::default(),
        }
    }

    /// `len` empty slots (zeroed: an empty key), on huge pages when large.
    fn empty_slots(len: usize) -> ZeroedSlice<Slot<K, N>> {
        // SAFETY: a zeroed slot is a valid, empty slot (keys are integers).
        unsafe { ZeroedSlice::new(len) }
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    fn at_budget(&self) -> bool {
        self.slots.len() >= self.max_slots
    }

    /// Ask for the cache line of `hash`'s home slot ahead of its probe.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        // SAFETY: a home slot is below 2^(64 - shift), the table's length.
        let slot = unsafe { self.slots.get_unchecked(self.home(hash)) };
        crate::memory::prefetch(slot);
        if std::mem::size_of::<Slot<K, N>>() < 64 {
            // The next slot: on the next line when the home slot ends its own.
            crate::memory::prefetch_ptr((slot as *const Slot<K, N>).wrapping_add(1));
        }
    }

    /// The index of the slot of `key` (hash `hash`), if it is cached.
    #[inline]
    fn find(&self, key: K, hash: u64) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &self.slots[i];
            if slot.key == key {
                return Some(i);
            }
            if slot.key.is_empty() {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Append the cached ids of `key` (hash `hash`) to `out` and mark the
    /// piece hit; false on a miss.
    #[inline]
    pub(crate) fn push_hit(&mut self, key: K, hash: u64, out: &mut Vec<u32>) -> bool {
        let Some(i) = self.find(key, hash) else {
            return false;
        };
        self.push_slot(i, out);
        true
    }

    /// `push_hit`, and a piece found past its home slot swaps places with
    /// the one there, so the next hit is a hit in its home slot (the hit
    /// loop's fast test; `HomeSlots`). A piece hit often moves home on its
    /// first hit past it, where it was put by the order of the first
    /// occurrences and of the re-filing at a resize. Valid for linear
    /// probing: no slot from the displaced piece's home to the one it moves
    /// to is empty (the moved piece's probe crossed them).
    #[inline]
    pub(crate) fn push_hit_home(&mut self, key: K, hash: u64, out: &mut Vec<u32>) -> bool {
        let Some(found) = self.find(key, hash) else {
            return false;
        };
        let home = self.home(hash);
        if found != home {
            self.slots.swap(found, home);
        }
        self.push_slot(home, out);
        true
    }

    /// Append the ids of slot `i` to `out` and mark it hit.
    #[inline]
    fn push_slot(&mut self, i: usize, out: &mut Vec<u32>) {
        let slot = &mut self.slots[i];
        slot.count &= !COLD;
        let count = slot.ids_len();
        if count <= N {
            push_fixed(&slot.ids, count, out);
        } else {
            let start = slot.ids[0] as usize;
            out.extend_from_slice(&self.spill[start..start + count]);
        }
    }

    /// Remember `ids` (at least one) as the ids of `key`, which is not cached.
    pub(crate) fn insert(&mut self, key: K, hash: u64, ids: &[u32]) {
        if 2 * (self.len + 1) > self.slots.len() && !self.at_budget() {
            self.grow();
        }
        let spilled = if ids.len() > N { ids.len() } else { 0 };
        let room = self.spill_room();
        if 4 * (self.len + 1) > 3 * self.slots.len() || self.spill.len() + spilled > room {
            self.sweep();
        }
        if self.spill.len() + spilled > self.spill_room() {
            return; // larger than the spill's share after a sweep: not cached
        }
        // At the budget a piece comes in cold: the next sweep evicts it
        // unless it is hit before.
        let cold = if self.at_budget() { COLD } else { 0 };
        let mut slot = Slot {
            key,
            ids: [0; N],
            count: ids.len() as u32 | cold,
        };
        if ids.len() <= N {
            slot.ids[..ids.len()].copy_from_slice(ids);
        } else {
            slot.ids[0] = self.spill.len() as u32;
            if self.spill.len() + ids.len() > self.spill.capacity() {
                // Doubling, but never past the share.
                let want = (2 * self.spill.capacity()).max(64).min(self.spill_room());
                self.spill.reserve_exact(want - self.spill.len());
            }
            self.spill.extend_from_slice(ids);
        }
        self.place(slot, hash);
        self.len += 1;
        self.stats.inserted += 1;
    }

    /// Most ids the spill list may hold now: its own share, plus the part of
    /// the slots' share the table does not take yet. Pieces of many ids
    /// (GPT-2's ranks on words of non-Latin scripts: 16 to 31 bytes, 8 ids
    /// and more) filled the spill's share while the table was a fraction of
    /// its own, and every pass over such text swept and merged them again.
    /// Slots and spill together stay within the two shares; a table that
    /// grows into the room the spill took sweeps it back at its next insert.
    fn spill_room(&self) -> usize {
        let unused_slots = self.max_slots - self.slots.len();
        self.max_spill + unused_slots * std::mem::size_of::<Slot<K, N>>() / 4
    }

    /// Put `slot` (its key's hash `hash`) at the first free slot from its home on.
    #[inline]
    fn place(&mut self, slot: Slot<K, N>, hash: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        while !self.slots[i].key.is_empty() {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// Double the table, re-placing every slot.
    fn grow(&mut self) {
        self.resize(2 * self.slots.len());
    }

    /// Size the table, in one step, for the distinct pieces of about `bytes`
    /// of text (Heaps' law as measured with gpt2 ranks: ~115k pieces of up to
    /// 15 bytes in 10 MB of English prose, times (bytes / 10 MB)^0.7), within
    /// the budget; never shrinks. Doubling from 512 KiB instead zeroes fresh
    /// pages for twice the final size (costly when the host has to back
    /// them: a large share of a first 10 MB call) and re-files every
    /// piece each time. A table sized 2x too large (code: ~45k pieces) zeroes
    /// no more than the doublings would have.
    pub(crate) fn expect_text_bytes(&mut self, bytes: usize) {
        let pieces = 115_000.0 * (bytes as f64 / 10e6).powf(0.7);
        let slots = ((2.0 * pieces) as usize)
            .next_power_of_two()
            .min(self.max_slots);
        if slots > self.slots.len() {
            self.resize(slots);
        }
    }

    /// Move every slot into a table of `len` slots (a power of two, large
    /// enough to hold them at most half full). A table that reaches its
    /// budget starts the CLOCK: every piece in it turns cold.
    fn resize(&mut self, len: usize) {
        let resized = Self::empty_slots(len);
        let old = std::mem::replace(&mut self.slots, resized);
        self.shift = 64 - len.trailing_zeros();
        let cold = if self.at_budget() { COLD } else { 0 };
        for &slot in old.iter().filter(|s| !s.key.is_empty()) {
            let count = slot.count | cold;
            self.place(Slot { count, ..slot }, slot.key.hash());
        }
    }

    /// The CLOCK sweep (see the module's comment): keep up to half the table
    /// and half the spill's share, the warm slots first, the oldest of them
    /// first, then the cold ones; evict the others. The warm ones kept turn
    /// cold and one sweep older, the cold ones kept one sweep younger.
    /// Rebuilt in place: walking the table once from an empty slot, each slot
    /// is taken out and, if kept, put back from its home on, which is valid
    /// for linear probing (a key's home lies between that empty slot and the
    /// key, so its probe only crosses slots already rebuilt).
    ///
    /// Of the class only part of which fits, a slot is kept by its hash, not
    /// by where the walk meets it: keeping the first ones met emptied the
    /// end of the walk at every sweep and packed the rest of the table, which
    /// the next inserts filled up into runs of thousands of slots. The hash
    /// bits that decide are salted with the sweep's number: with the same
    /// bits every time, the survivors of the last sweep (all of them picked)
    /// came back over the quota and the walk's end was cut again.
    fn sweep(&mut self) {
        let quotas = self.quotas(self.slots.len() / 2, self.spill_room() / 2);
        let salt = self.stats.sweeps.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut left = quotas.map(|q| (q.slots, q.spill));
        let mut spill = Vec::new();
        let mask = self.slots.len() - 1;
        let empty = self
            .slots
            .iter()
            .position(|s| s.key.is_empty())
            .expect("a table at most three quarters full has an empty slot");
        let before = self.len;
        self.len = 0;
        for k in 1..=self.slots.len() {
            let i = (empty + k) & mask;
            let mut slot = std::mem::replace(&mut self.slots[i], Slot::EMPTY);
            if slot.key.is_empty() {
                continue;
            }
            let hash = slot.key.hash();
            let class = slot.class();
            let count = slot.ids_len();
            let spilled = if count > N { count } else { 0 };
            let (slots_left, spill_left) = &mut left[class];
            if *slots_left == 0
                || spilled > *spill_left
                || !quotas[class].admits(hash ^ salt, spilled > 0)
            {
                continue;
            }
            *slots_left -= 1;
            *spill_left -= spilled;
            if spilled > 0 {
                let start = slot.ids[0] as usize;
                slot.ids[0] = spill.len() as u32;
                spill.extend_from_slice(&self.spill[start..start + count]);
            }
            let age = match slot.count & COLD {
                0 => (slot.age() + 1).min(3),
                _ => slot.age().saturating_sub(1),
            };
            slot.count = count as u32 | COLD | (age as u32) << AGE_SHIFT;
            self.place(slot, hash);
            self.len += 1;
        }
        self.spill = spill;
        self.stats.sweeps += 1;
        self.stats.evicted += (before - self.len) as u64;
    }

    /// What a sweep keeps of each class (`Slot::class`) so that at most
    /// `slots` slots and `spill` spilled ids are kept, the highest classes
    /// first.
    fn quotas(&self, mut slots: usize, mut spill: usize) -> [Quota; 5] {
        let mut by_class = [(0usize, 0usize); 5];
        for slot in self.slots.iter().filter(|s| !s.key.is_empty()) {
            let (n, spilled) = &mut by_class[slot.class()];
            *n += 1;
            if slot.ids_len() > N {
                *spilled += slot.ids_len();
            }
        }
        let mut quotas = [Quota::default(); 5];
        for class in (0..5).rev() {
            let (n, spilled) = by_class[class];
            let kept = Quota {
                slots: n.min(slots),
                spill: spilled.min(spill),
                of: n,
                spill_of: spilled,
            };
            slots -= kept.slots;
            spill -= kept.spill;
            quotas[class] = kept;
        }
        quotas
    }

    pub(super) fn stats(&self) -> PieceCacheStats {
        PieceCacheStats {
            pieces: self.len,
            bytes: self.slots.len() * std::mem::size_of::<Slot<K, N>>() + self.spill.capacity() * 4,
            ..self.stats
        }
    }

    #[cfg(test)]
    pub(super) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The mean distance of the cached keys from their home slots.
    #[cfg(test)]
    pub(super) fn mean_displacement(&self) -> f64 {
        let mask = self.slots.len() - 1;
        let distance =
            |(i, s): (usize, &Slot<K, N>)| i.wrapping_sub(self.home(s.key.hash())) & mask;
        let placed = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.key.is_empty());
        placed.clone().map(distance).sum::<usize>() as f64 / placed.count().max(1) as f64
    }
}

/// How much of one class of slots a sweep keeps: `slots` of its `of` slots
/// and `spill` of their `spill_of` spilled ids.
#[derive(Clone, Copy, Default)]
struct Quota {
    slots: usize,
    spill: usize,
    of: usize,
    spill_of: usize,
}

impl Quota {
    /// Whether a slot of this class whose key hashes to `hash` (salted; with
    /// ids in the spill list if `spilled`) is kept: all of them if all fit,
    /// else the share that fits, picked by a mix of the hash (not the bits
    /// that place the slot, so the kept ones are spread like the rest).
    fn admits(&self, hash: u64, spilled: bool) -> bool {
        let share = |kept: usize, of: usize| {
            if kept >= of {
                return u64::MAX;
            }
            ((kept as u128) << 32).div_ceil(of as u128) as u64
        };
        let pick = (hash ^ hash >> 29).wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 32;
        let spill = if spilled {
            share(self.spill, self.spill_of)
        } else {
            u64::MAX
        };
        pick < share(self.slots, self.of).min(spill)
    }
}

/// The largest power of two at most `n` (at least 1).
pub(super) fn prev_power_of_two(n: usize) -> usize {
    1usize << (usize::BITS - 1 - n.max(1).leading_zeros())
}

/// Ids a short piece's slot holds inline; a piece that encodes to more keeps
/// them in the cache's spill list.
pub(crate) const INLINE_IDS: usize = 3;

/// Pieces of up to 15 bytes; 3 ids inline (most pieces are 1 or 2 tokens).
pub(crate) type ShortCache = PieceCache<u128, INLINE_IDS>;
/// Pieces of 16 to 31 bytes; 7 ids inline.
pub(crate) type MidCache = PieceCache<[u128; 2], 7>;

/// A short-piece cache's slots as the hit loop reads them: the table's
/// address and shift, copied out so the loop keeps them in registers. The
/// view borrows the cache (`'table`), so the compiler refuses any change to
/// the cache (an insert may move the table) while the view is in use; the
/// loop takes a fresh view after each change.
#[derive(Clone, Copy)]
pub(crate) struct HomeSlots<'table> {
    base: *const Slot<u128, INLINE_IDS>,
    shift: u32,
    table: PhantomData<&'table [Slot<u128, INLINE_IDS>]>,
}

impl HomeSlots<'_> {
    /// `PieceCache::prefetch` through the view (its address and shift in
    /// registers, not read from the cache again per word).
    #[inline(always)]
    pub(crate) fn prefetch(self, hash: u64) {
        let slot = self.base.wrapping_add((hash >> self.shift) as usize);
        crate::memory::prefetch_ptr(slot);
        // The next slot: on the next line when the home slot ends its own.
        crate::memory::prefetch_ptr(slot.wrapping_add(1));
    }

    /// The ids of `key` (hash `hash`, not 0) if its home slot holds it warm
    /// with at most `INLINE_IDS` ids inline: `(lanes, count)`, the first
    /// `count` of the 4 lanes being its ids; else `None` (a miss, a key past
    /// its home slot, a cold slot or spilled ids: `PieceCache::push_hit_home`
    /// decides those). The lanes are read as one 16-byte value so the caller
    /// can store them whole.
    #[inline(always)]
    pub(crate) fn inline_ids(self, key: u128, hash: u64) -> Option<([u32; 4], usize)> {
        // SAFETY: a home slot is below 2^(64 - shift), the table's length,
        // and the view's borrow of the cache keeps the table in place.
        let slot = unsafe { &*self.base.add((hash >> self.shift) as usize) };
        let lanes = [slot.ids[0], slot.ids[1], slot.ids[2], slot.count];
        // The age is no obstacle; a cold bit makes the count too large.
        let count = slot.count & !AGE;
        (slot.key == key && count as usize <= INLINE_IDS).then_some((lanes, count as usize))
    }
}

impl ShortCache {
    /// This cache's `HomeSlots`.
    #[inline(always)]
    pub(crate) fn home_slots(&self) -> HomeSlots<'_> {
        HomeSlots {
            base: self.slots.as_ptr(),
            shift: self.shift,
            table: PhantomData,
        }
    }
}
