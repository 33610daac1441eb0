//! Per-thread caches of the encoder, kept from one piece and one call to the
//! next: the ids of pieces seen before (`PieceCache` for pieces of up to 15
//! bytes, `LongCache` for longer ones), recent pair lookups (`HotPairs`) and
//! the merge buffer (`Scratch`).
//!
//! Text follows Zipf's law: a few tens of thousands of distinct pieces make
//! most of it, so after the first occurrences nearly every piece is a hit, and a
//! hit costs one probe of an open-addressing table instead of a vocabulary
//! lookup and a merge. Every cache is bounded: a table that reaches its budget
//! is emptied and fills again (`CacheBudget`, default 16 MiB of piece slots per
//! thread and encoder, set with `set_cache_budget`).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rustc_hash::FxHashMap;

use super::decode::push_fixed;
use crate::memory::ZeroedSlice;
use super::merge::Part;
use super::tables::{packed_key, packed_slot, PairRanks, PairTable, CODE_BITS, FREE, NO_RANK, PACKED_KEY_MASK};

/// Ids a piece slot holds inline; a piece that encodes to more keeps them in
/// the cache's spill list.
pub(super) const INLINE_IDS: usize = 3;
/// Slots of a new piece cache (a power of two): 512 KiB.
const INITIAL_SLOTS: usize = 1 << 14;
/// Default `max_slots` of a piece cache: 2^19 slots of 32 bytes, 16 MiB.
/// 10 MB of English prose has ~115k distinct pieces of up to 15 bytes, of
/// code ~45k, of text in 30 languages ~265k.
pub const DEFAULT_CACHE_BYTES: usize = 16 << 20;

/// Bytes of piece slots a thread's cache may use per encoder (a power of two
/// of 32-byte slots, at least `INITIAL_SLOTS`); long pieces and spilled ids may
/// use as much again.
static CACHE_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_CACHE_BYTES);

/// Set the memory budget of the encoder's per-thread piece caches, in bytes
/// (rounded down to a power of two of 32-byte slots, at least 512 KiB); caches
/// made afterwards use it. Returns the budget in effect.
pub fn set_cache_budget(bytes: usize) -> usize {
    let slots = (bytes / std::mem::size_of::<Slot>()).max(INITIAL_SLOTS);
    let slots = 1usize << (usize::BITS - 1 - slots.leading_zeros());
    let bytes = slots * std::mem::size_of::<Slot>();
    CACHE_BYTES.store(bytes, Ordering::Relaxed);
    bytes
}

/// The budget `set_cache_budget` set, in bytes.
pub fn cache_budget() -> usize {
    CACHE_BYTES.load(Ordering::Relaxed)
}

/// A cached piece: its key (`tables::piece_key`: the bytes and the length; 0
/// marks an empty slot) and its ids, inline or, beyond `INLINE_IDS`, as
/// (offset, count) in the spill list.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    key: u128,
    ids: [u32; INLINE_IDS],
    count: u32,
}

/// Short pieces (up to 15 bytes) -> ids: open addressing with linear probing,
/// at most half full below the budget, three quarters at it; then emptied.
pub(super) struct PieceCache {
    slots: ZeroedSlice<Slot>,
    /// 64 - log2(slots): a hash shifted right by it is a home slot.
    shift: u32,
    len: usize,
    max_slots: usize,
    spill: Vec<u32>,
}

/// `len` empty slots (zeroed: key 0), on huge pages when large.
fn empty_slots(len: usize) -> ZeroedSlice<Slot> {
    // SAFETY: a zeroed Slot is a valid, empty slot.
    unsafe { ZeroedSlice::new(len) }
}

pub(super) use crate::shortkey::hash as hash_key;

impl PieceCache {
    fn new() -> Self {
        let max_slots = (cache_budget() / std::mem::size_of::<Slot>()).max(INITIAL_SLOTS);
        let shift = 64 - INITIAL_SLOTS.trailing_zeros();
        PieceCache { slots: empty_slots(INITIAL_SLOTS), shift, len: 0, max_slots, spill: Vec::new() }
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Ask for the cache line of `hash`'s home slot ahead of its probe.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        // SAFETY: a home slot is below 2^(64 - shift), the table's length.
        crate::memory::prefetch(unsafe { self.slots.get_unchecked(self.home(hash)) });
    }

    /// Append the cached ids of `key` (hash `hash`) to `out`; false on a miss.
    #[inline]
    pub(super) fn push_hit(&self, key: u128, hash: u64, out: &mut Vec<u32>) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &self.slots[i];
            if slot.key == key {
                if slot.count as usize <= INLINE_IDS {
                    push_fixed(&slot.ids, slot.count as usize, out);
                } else {
                    let start = slot.ids[0] as usize;
                    out.extend_from_slice(&self.spill[start..start + slot.count as usize]);
                }
                return true;
            }
            if slot.key == 0 {
                return false;
            }
            i = (i + 1) & mask;
        }
    }

    /// Remember `ids` (at least one) as the ids of `key`, which is not cached.
    pub(super) fn insert(&mut self, key: u128, hash: u64, ids: &[u32]) {
        if 2 * (self.len + 1) > self.slots.len() {
            if self.slots.len() < self.max_slots {
                self.grow();
            } else if 4 * (self.len + 1) > 3 * self.slots.len() {
                self.clear();
            }
        }
        let mut slot = Slot { key, ids: [0; INLINE_IDS], count: ids.len() as u32 };
        if ids.len() <= INLINE_IDS {
            slot.ids[..ids.len()].copy_from_slice(ids);
        } else {
            slot.ids[0] = self.spill.len() as u32;
            self.spill.extend_from_slice(ids);
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        while self.slots[i].key != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
        self.len += 1;
    }

    /// Double the table, re-placing every slot.
    fn grow(&mut self) {
        let doubled = empty_slots(2 * self.slots.len());
        let old = std::mem::replace(&mut self.slots, doubled);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for &slot in old.iter().filter(|s| s.key != 0) {
            let mut i = self.home(hash_key(slot.key));
            while self.slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }

    /// Forget every piece (the table keeps its size).
    fn clear(&mut self) {
        self.slots.fill(Slot::default());
        self.spill.clear();
        self.len = 0;
    }
}

/// Pieces of more than 15 bytes -> ids (offset and count in `ids`), bounded
/// like the piece cache: emptied when its ids reach the budget's worth.
pub(super) struct LongCache {
    pieces: FxHashMap<Box<[u8]>, (u32, u32)>,
    ids: Vec<u32>,
    max_ids: usize,
}

impl LongCache {
    fn new() -> Self {
        LongCache { pieces: FxHashMap::default(), ids: Vec::new(), max_ids: cache_budget() / 8 }
    }

    /// Append the cached ids of `piece` to `out`; false on a miss.
    #[inline]
    pub(super) fn push_hit(&self, piece: &[u8], out: &mut Vec<u32>) -> bool {
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
    pub(super) fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if piece.len() > 1 << 16 {
            return;
        }
        if self.ids.len() + ids.len() > self.max_ids {
            self.pieces.clear();
            self.ids.clear();
        }
        self.pieces.insert(piece.into(), (self.ids.len() as u32, ids.len() as u32));
        self.ids.extend_from_slice(ids);
    }
}

/// Slots of the hot-pair cache (a power of two): 512 KiB. 16k slots (128
/// KiB) gave 5% less on random Latin-1 with o200k, whose pairs are too many
/// for them, and the same on prose.
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
        HotPairs { slots: vec![FREE; HOT_PAIRS] }
    }

    /// `table.rank(left, right)`, looked up here first and remembered.
    #[inline]
    pub(super) fn rank(&mut self, table: &PairRanks, left: u32, right: u32) -> u32 {
        if let PairTable::Wide(_) = table.pairs {
            return table.rank(left, right);
        }
        let key = packed_key(left, right);
        let i = packed_slot(key, 64 - HOT_PAIRS.trailing_zeros());
        let slot = self.slots[i];
        if slot & PACKED_KEY_MASK == key {
            let rank = slot >> (2 * CODE_BITS);
            return if rank == HOT_NO_RANK { NO_RANK } else { rank as u32 };
        }
        let rank = table.rank(left, right);
        let stored = if rank == NO_RANK { HOT_NO_RANK } else { rank as u64 };
        self.slots[i] = key | stored << (2 * CODE_BITS);
        rank
    }
}

/// One encoder's caches and buffers on one thread.
pub(super) struct Scratch {
    /// The encoder the caches belong to.
    encoder: u64,
    pub(super) parts: Vec<Part>,
    pub(super) pieces: PieceCache,
    pub(super) long: LongCache,
    pub(super) hot: HotPairs,
}

impl Scratch {
    /// Empty caches for the encoder tagged `encoder`.
    pub(super) fn new(encoder: u64) -> Self {
        Scratch { encoder, parts: Vec::new(), pieces: PieceCache::new(), long: LongCache::new(), hot: HotPairs::empty() }
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
pub(super) fn new_encoder_tag() -> u64 {
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

    #[test]
    fn piece_cache_grows_then_empties_at_its_budget() {
        let mut cache = PieceCache::new();
        cache.max_slots = 2 * INITIAL_SLOTS;
        let keys: Vec<u128> = (0..INITIAL_SLOTS as u32 * 2).map(|i| piece_key(&i.to_le_bytes())).collect();
        for (n, &key) in keys.iter().enumerate() {
            let ids = [n as u32, 1, 2, 3][..1 + n % 4].to_vec();
            cache.insert(key, hash_key(key), &ids);
            let mut out = vec![];
            assert!(cache.push_hit(key, hash_key(key), &mut out));
            assert_eq!(out, ids);
        }
        assert_eq!(cache.slots.len(), 2 * INITIAL_SLOTS, "grew once, to its budget");
        assert!(cache.len <= 3 * cache.slots.len() / 4, "emptied instead of overfilling");
        let mut out = vec![];
        assert!(!cache.push_hit(keys[0], hash_key(keys[0]), &mut out), "the first keys were dropped");
    }

    #[test]
    fn budget_rounds_to_a_power_of_two_of_slots() {
        let old = cache_budget();
        assert_eq!(set_cache_budget(3 << 20), 2 << 20);
        assert_eq!(set_cache_budget(1), INITIAL_SLOTS * 32);
        set_cache_budget(old);
    }
}
