//! Per-thread caches of the encoder, kept from one piece and one call to the
//! next: the ids of pieces seen before (`PieceCache`s for pieces of up to 15
//! bytes and of 16 to 31, `LongCache` for longer ones), recent pair lookups
//! (`HotPairs`) and the merge buffer (`Scratch`).
//!
//! Text follows Zipf's law: a few tens of thousands of distinct pieces make
//! most of it, so after the first occurrences nearly every piece is a hit, and a
//! hit costs one probe of an open-addressing table instead of a vocabulary
//! lookup and a merge. Every cache is bounded: a table that reaches its budget
//! is emptied and fills again (default 16 MiB of slots per piece cache,
//! thread and encoder, set with `set_cache_budget`).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rustc_hash::FxHashMap;

use super::decode::push_fixed;
use super::merge::Part;
use super::tables::{
    packed_key, packed_slot, PairRanks, PairTable, CODE_BITS, FREE, NO_RANK, PACKED_KEY_MASK,
};
use crate::memory::ZeroedSlice;

/// Bytes of a new piece cache: 512 KiB.
const INITIAL_BYTES: usize = 512 << 10;
/// Default `max_slots` of a piece cache: 16 MiB of slots (2^19 slots of 32
/// bytes for short pieces). 10 MB of English prose has ~115k distinct pieces
/// of up to 15 bytes, of code ~45k, of text in 30 languages ~265k.
pub const DEFAULT_CACHE_BYTES: usize = 16 << 20;

/// Bytes of piece slots a thread's cache may use per encoder and per piece
/// cache (a power of two, at least `INITIAL_BYTES`); long pieces and spilled
/// ids may use as much again.
static CACHE_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_CACHE_BYTES);

/// Set the memory budget of each of the encoder's per-thread piece caches
/// (one for pieces of up to 15 bytes, one for 16 to 31), in bytes (rounded down
/// to a power of two, at least 512 KiB); caches made afterwards use it.
/// Returns the budget in effect.
pub fn set_cache_budget(bytes: usize) -> usize {
    let bytes = bytes.max(INITIAL_BYTES);
    let bytes = 1usize << (usize::BITS - 1 - bytes.leading_zeros());
    CACHE_BYTES.store(bytes, Ordering::Relaxed);
    bytes
}

/// The budget `set_cache_budget` set, in bytes.
pub fn cache_budget() -> usize {
    CACHE_BYTES.load(Ordering::Relaxed)
}

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
        hash_key(*self)
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

/// A cached piece: its key and its `N` ids inline or, beyond `N`, as
/// (offset, count) in the spill list. 32 bytes for short pieces (`u128`, 3
/// ids), 64 for the others (`[u128; 2]`, 7 ids): slots never straddle a cache
/// line (tables are aligned to 64 bytes).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Slot<K, const N: usize> {
    key: K,
    ids: [u32; N],
    count: u32,
}

impl<K: SlotKey, const N: usize> Slot<K, N> {
    const EMPTY: Self = Slot {
        key: K::EMPTY,
        ids: [0; N],
        count: 0,
    };
}

/// Pieces -> ids: open addressing with linear probing, at most half full below
/// the budget, three quarters at it; then emptied.
pub(crate) struct PieceCache<K: SlotKey, const N: usize> {
    slots: ZeroedSlice<Slot<K, N>>,
    /// 64 - log2(slots): a hash shifted right by it is a home slot.
    shift: u32,
    len: usize,
    max_slots: usize,
    spill: Vec<u32>,
}

/// Pieces of up to 15 bytes; 3 ids inline (most pieces are 1 or 2 tokens).
pub(crate) type ShortCache = PieceCache<u128, INLINE_IDS>;
/// Pieces of 16 to 31 bytes; 7 ids inline.
pub(crate) type MidCache = PieceCache<[u128; 2], 7>;

/// Ids a short piece's slot holds inline; a piece that encodes to more keeps
/// them in the cache's spill list.
pub(super) const INLINE_IDS: usize = 3;

pub(super) use crate::shortkey::hash as hash_key;

impl<K: SlotKey, const N: usize> PieceCache<K, N> {
    pub(crate) fn new() -> Self {
        let initial = (INITIAL_BYTES / std::mem::size_of::<Slot<K, N>>()).next_power_of_two();
        let max_slots = (cache_budget() / std::mem::size_of::<Slot<K, N>>()).max(initial);
        let shift = 64 - initial.trailing_zeros();
        PieceCache {
            slots: Self::empty_slots(initial),
            shift,
            len: 0,
            max_slots,
            spill: Vec::new(),
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

    /// `prefetch` into L2 only: far ahead of the probe, without taking L1's
    /// few slots for outstanding misses (faster warm calls on English, gpt2).
    #[inline]
    pub(crate) fn prefetch_l2(&self, hash: u64) {
        // SAFETY: a home slot is below 2^(64 - shift), the table's length.
        crate::memory::prefetch_l2(unsafe { self.slots.get_unchecked(self.home(hash)) });
    }

    /// The slot of `key` (hash `hash`), if it is cached.
    #[inline]
    fn find(&self, key: K, hash: u64) -> Option<&Slot<K, N>> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &self.slots[i];
            if slot.key == key {
                return Some(slot);
            }
            if slot.key.is_empty() {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Append the cached ids of `key` (hash `hash`) to `out`; false on a miss.
    #[inline]
    pub(crate) fn push_hit(&self, key: K, hash: u64, out: &mut Vec<u32>) -> bool {
        let Some(slot) = self.find(key, hash) else {
            return false;
        };
        if slot.count as usize <= N {
            push_fixed(&slot.ids, slot.count as usize, out);
        } else {
            let start = slot.ids[0] as usize;
            out.extend_from_slice(&self.spill[start..start + slot.count as usize]);
        }
        true
    }

    /// Remember `ids` (at least one) as the ids of `key`, which is not cached.
    pub(crate) fn insert(&mut self, key: K, hash: u64, ids: &[u32]) {
        if 2 * (self.len + 1) > self.slots.len() {
            if self.slots.len() < self.max_slots {
                self.grow();
            } else if 4 * (self.len + 1) > 3 * self.slots.len() {
                self.clear();
            }
        }
        let mut slot = Slot {
            key,
            ids: [0; N],
            count: ids.len() as u32,
        };
        if ids.len() <= N {
            slot.ids[..ids.len()].copy_from_slice(ids);
        } else {
            slot.ids[0] = self.spill.len() as u32;
            self.spill.extend_from_slice(ids);
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        while !self.slots[i].key.is_empty() {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
        self.len += 1;
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
    /// enough to hold them at most half full).
    fn resize(&mut self, len: usize) {
        let resized = Self::empty_slots(len);
        let old = std::mem::replace(&mut self.slots, resized);
        self.shift = 64 - len.trailing_zeros();
        let mask = self.slots.len() - 1;
        for &slot in old.iter().filter(|s| !s.key.is_empty()) {
            let mut i = self.home(slot.key.hash());
            while !self.slots[i].key.is_empty() {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }

    /// Forget every piece (the table keeps its size).
    fn clear(&mut self) {
        self.slots.fill(Slot::EMPTY);
        self.spill.clear();
        self.len = 0;
    }
}

/// A short-piece cache's slots as the hit loop reads them: the table's
/// address and shift, copied out so the loop keeps them in registers. The
/// view borrows the cache (`'table`), so the compiler refuses any change to
/// the cache (an insert may move the table) while the view is in use; the
/// loop takes a fresh view after each change.
#[derive(Clone, Copy)]
pub(super) struct HomeSlots<'table> {
    base: *const Slot<u128, INLINE_IDS>,
    shift: u32,
    table: PhantomData<&'table [Slot<u128, INLINE_IDS>]>,
}

impl HomeSlots<'_> {
    /// The ids of `key` (hash `hash`, not 0) if its home slot holds it with
    /// at most `INLINE_IDS` ids inline: `(lanes, count)`, the first `count`
    /// of the 4 lanes being its ids; else `None` (a miss, a key past its home
    /// slot or spilled ids: `PieceCache::push_hit` decides those). The lanes
    /// are read as one 16-byte value so the caller can store them whole.
    #[inline(always)]
    pub(super) fn inline_ids(self, key: u128, hash: u64) -> Option<([u32; 4], usize)> {
        // SAFETY: a home slot is below 2^(64 - shift), the table's length,
        // and the view's borrow of the cache keeps the table in place.
        let slot = unsafe { &*self.base.add((hash >> self.shift) as usize) };
        let lanes = [slot.ids[0], slot.ids[1], slot.ids[2], slot.count];
        (slot.key == key && slot.count as usize <= INLINE_IDS)
            .then_some((lanes, slot.count as usize))
    }
}

impl ShortCache {
    /// This cache's `HomeSlots`.
    #[inline(always)]
    pub(super) fn home_slots(&self) -> HomeSlots<'_> {
        HomeSlots {
            base: self.slots.as_ptr(),
            shift: self.shift,
            table: PhantomData,
        }
    }
}

/// Pieces of more than 31 bytes -> ids (offset and count in `ids`), bounded
/// like the piece cache: emptied when its ids reach the budget's worth.
pub(crate) struct LongCache {
    pieces: FxHashMap<Box<[u8]>, (u32, u32)>,
    ids: Vec<u32>,
    max_ids: usize,
}

impl LongCache {
    pub(crate) fn new() -> Self {
        LongCache {
            pieces: FxHashMap::default(),
            ids: Vec::new(),
            max_ids: cache_budget() / 8,
        }
    }

    /// Append the cached ids of `piece` to `out`; false on a miss.
    #[inline]
    pub(crate) fn push_hit(&self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        match self.pieces.get(piece) {
            Some(&(start, count)) => {
                out.extend_from_slice(&self.ids[start as usize..(start + count) as usize]);
                true
            }
            None => false,
        }
    }

    /// Remember `ids` as the ids of `piece`; pieces of over 64 KiB are not
    /// kept (a run of one character, say: rare, and large).
    pub(crate) fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if piece.len() > 1 << 16 {
            return;
        }
        if self.ids.len() + ids.len() > self.max_ids {
            self.pieces.clear();
            self.ids.clear();
        }
        self.pieces
            .insert(piece.into(), (self.ids.len() as u32, ids.len() as u32));
        self.ids.extend_from_slice(ids);
    }
}

/// Slots of the hot-pair cache (a power of two): 512 KiB. 16k slots (128
/// KiB) were slower on random Latin-1 with o200k, whose pairs are too many
/// for them, and no faster on prose.
const HOT_PAIRS: usize = 1 << 16;
/// The rank a hot-pair slot stores for a pair that does not merge (ranks of
/// the packed table stay below 2**21).
const HOT_NO_RANK: u64 = (1 << (64 - 2 * CODE_BITS)) - 1;

/// Direct-mapped cache of recent pair lookups, packed like `PairTable` slots,
/// pairs that do not merge included. Pair lookups are Zipfian like the pieces,
/// and the packed table of a large vocabulary is far bigger than L2 (o200k:
/// 442k pairs, 8 MiB), so each lookup there is a cache miss; the merge of a
/// short piece makes two per merge.
pub(super) struct HotPairs {
    slots: Vec<u64>,
}

impl HotPairs {
    pub(super) fn empty() -> Self {
        HotPairs {
            slots: vec![FREE; HOT_PAIRS],
        }
    }

    /// `table.rank(left, right)`, looked up here first and remembered.
    #[inline]
    pub(super) fn rank(&mut self, table: &PairRanks, left: u32, right: u32) -> u32 {
        if !table.may_merge(left, right) {
            return NO_RANK;
        }
        if let PairTable::Wide(_) = table.pairs {
            return table.rank(left, right);
        }
        let key = packed_key(left, right);
        let i = packed_slot(key, 64 - HOT_PAIRS.trailing_zeros());
        let slot = self.slots[i];
        if slot & PACKED_KEY_MASK == key {
            let rank = slot >> (2 * CODE_BITS);
            return if rank == HOT_NO_RANK {
                NO_RANK
            } else {
                rank as u32
            };
        }
        let rank = table.rank(left, right);
        let stored = if rank == NO_RANK {
            HOT_NO_RANK
        } else {
            rank as u64
        };
        self.slots[i] = key | stored << (2 * CODE_BITS);
        rank
    }
}

/// One encoder's caches and buffers on one thread.
pub(super) struct Scratch {
    /// The encoder the caches belong to.
    encoder: u64,
    pub(super) parts: Vec<Part>,
    pub(super) pieces: ShortCache,
    pub(super) mid: MidCache,
    pub(super) long: LongCache,
    pub(super) hot: HotPairs,
    pub(super) words: super::superwords::WordScratch,
}

impl Scratch {
    /// Empty caches for the encoder tagged `encoder`.
    pub(super) fn new(encoder: u64) -> Self {
        Scratch {
            encoder,
            parts: Vec::new(),
            pieces: ShortCache::new(),
            mid: MidCache::new(),
            long: LongCache::new(),
            hot: HotPairs::empty(),
            words: Default::default(),
        }
    }
}

/// Encoders whose caches a thread keeps at once: two tokenizers used in turn
/// (compared, or one per field of a dataset) do not empty each other's.
const SCRATCHES_PER_THREAD: usize = 2;

thread_local! {
    /// This thread's caches, the most recently used last.
    static SCRATCH: RefCell<Vec<Scratch>> = const { RefCell::new(Vec::new()) };
}

/// Source of encoder tags: a number no other encoder in this process has.
static NEXT_ENCODER_TAG: AtomicU64 = AtomicU64::new(1);

/// A new encoder tag, which tells its entries in a thread's caches from another encoder's.
pub(crate) fn new_encoder_tag() -> u64 {
    NEXT_ENCODER_TAG.fetch_add(1, Ordering::Relaxed)
}

/// Run `f` with this thread's caches for the encoder tagged `encoder` (made
/// on first use; the least recently used encoder's are dropped beyond
/// `SCRATCHES_PER_THREAD`). A nested call gets fresh caches.
pub(super) fn with_scratch<R>(encoder: u64, f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| {
        let Ok(mut all) = cell.try_borrow_mut() else {
            return f(&mut Scratch::new(encoder));
        };
        match all.iter().position(|s| s.encoder == encoder) {
            Some(i) => {
                let mine = all.remove(i);
                all.push(mine);
            }
            None => {
                if all.len() >= SCRATCHES_PER_THREAD {
                    all.remove(0);
                }
                all.push(Scratch::new(encoder));
            }
        }
        f(all.last_mut().expect("just pushed"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::tables::piece_key;

    /// Fill a cache with twice the keys of its first table (ids of 1 to 8
    /// tokens, some spilled), with a budget of two tables.
    fn fill_past_budget<K: SlotKey, const N: usize>(key_of: impl Fn(u32) -> K) {
        let mut cache = PieceCache::<K, N>::new();
        let initial = cache.slots.len();
        cache.max_slots = 2 * initial;
        let keys: Vec<K> = (0..initial as u32 * 2).map(key_of).collect();
        for (n, &key) in keys.iter().enumerate() {
            let ids: Vec<u32> = (0..1 + n as u32 % 8).map(|k| n as u32 + k).collect();
            cache.insert(key, key.hash(), &ids);
            let mut out = vec![];
            assert!(cache.push_hit(key, key.hash(), &mut out));
            assert_eq!(out, ids);
        }
        assert_eq!(cache.slots.len(), 2 * initial, "grew once, to its budget");
        assert!(
            cache.len <= 3 * cache.slots.len() / 4,
            "emptied instead of overfilling"
        );
        let mut out = vec![];
        assert!(
            !cache.push_hit(keys[0], keys[0].hash(), &mut out),
            "the first keys were dropped"
        );
    }

    #[test]
    fn piece_caches_grow_then_empty_at_their_budget() {
        fill_past_budget::<u128, INLINE_IDS>(|i| piece_key(&i.to_le_bytes()));
        fill_past_budget::<[u128; 2], 7>(|i| {
            let text = format!("{i:0>20}");
            crate::shortkey::load_mid(text.as_bytes(), 0, text.len())
        });
    }

    #[test]
    fn a_cache_sized_for_a_text_keeps_its_pieces_and_its_budget() {
        let mut cache = ShortCache::new();
        // Set here: another test changes the process-wide budget for a moment.
        cache.max_slots = DEFAULT_CACHE_BYTES / std::mem::size_of::<Slot<u128, INLINE_IDS>>();
        let (initial, budget) = (cache.slots.len(), cache.max_slots);
        let keys: Vec<u128> = (0..1000u32).map(|i| piece_key(&i.to_le_bytes())).collect();
        for (n, &key) in keys.iter().enumerate() {
            cache.insert(key, key.hash(), &[n as u32; 5][..1 + n % 5]);
        }
        cache.expect_text_bytes(1000);
        assert_eq!(
            cache.slots.len(),
            initial,
            "a small text needs no more room"
        );
        cache.expect_text_bytes(10_000_000);
        assert_eq!(cache.slots.len(), 1 << 18, "~115k pieces at most half full");
        cache.expect_text_bytes(1 << 40);
        assert_eq!(cache.slots.len(), budget, "never past the budget");
        for (n, &key) in keys.iter().enumerate() {
            let mut out = vec![];
            assert!(cache.push_hit(key, key.hash(), &mut out));
            assert_eq!(out, &[n as u32; 5][..1 + n % 5]);
        }
    }

    #[test]
    fn budget_rounds_down_to_a_power_of_two() {
        let old = cache_budget();
        assert_eq!(set_cache_budget(3 << 20), 2 << 20);
        assert_eq!(set_cache_budget(1), INITIAL_BYTES);
        set_cache_budget(old);
    }
}
