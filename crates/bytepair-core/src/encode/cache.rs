//! Per-thread caches of the encoder: short pieces -> ids (`PieceCache`), recent
//! pair lookups (`HotPairs`), and the merge buffer, kept from one piece and one
//! call to the next (`Scratch`). Fixed sizes: 512 KiB each, whatever the input.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::decode::push_fixed;
use super::merge::Part;
use super::tables::{packed_key, packed_slot, PairRanks, PairTable, CODE_BITS, FREE, NO_RANK, PACKED_KEY_MASK};

/// Ids a cache slot holds; pieces that encode to more are not cached.
const CACHED_IDS: usize = 3;
/// Slots in the piece cache (a power of two): 512 KiB, about an L2 cache.
const CACHE_SLOTS: usize = 1 << 14;

/// A short piece and its ids. `key` packs the piece's bytes and its length
/// (`piece_key`), so 0 is never a key and marks an empty slot.
#[derive(Clone, Copy, Default)]
struct CacheSlot {
    key: u128,
    ids: [u32; CACHED_IDS],
    len: u32,
}

/// Direct-mapped cache of short pieces -> ids. Text follows Zipf's law: a few
/// thousand distinct pieces make most of it, and a hit here costs one access to a
/// table that fits in L2, where the vocabulary lookup and the merge it replaces
/// miss the cache two or three times per hash lookup. One per thread (no
/// locking), tagged with the encoder that filled it, and so are its hot pairs.
pub(super) struct PieceCache {
    encoder: u64,
    slots: Vec<CacheSlot>,
    pub(super) hot: HotPairs,
}

impl PieceCache {
    /// Empty the cache and its hot pairs unless they hold those of `encoder`.
    fn use_for(&mut self, encoder: u64) {
        if self.encoder != encoder || self.slots.is_empty() {
            self.slots.clear();
            self.slots.resize(CACHE_SLOTS, CacheSlot::default());
            self.hot = HotPairs::empty();
            self.encoder = encoder;
        }
    }

    /// The slot a piece of `piece_key` `key` lives in.
    #[inline]
    pub(super) fn slot(key: u128) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(23);
        (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_SLOTS.trailing_zeros())) as usize
    }

    /// Append the cached ids of `key` (in `slot`) to `out`; false on a miss.
    #[inline]
    pub(super) fn push_hit(&self, slot: usize, key: u128, out: &mut Vec<u32>) -> bool {
        let cached = &self.slots[slot];
        if cached.key != key {
            return false;
        }
        push_fixed(&cached.ids, cached.len as usize, out);
        true
    }

    /// Remember `ids` for `key` in `slot`, if they are few enough to hold.
    #[inline]
    pub(super) fn store(&mut self, slot: usize, key: u128, ids: &[u32]) {
        if ids.len() <= CACHED_IDS {
            let slot = &mut self.slots[slot];
            slot.key = key;
            slot.len = ids.len() as u32;
            slot.ids[..ids.len()].copy_from_slice(ids);
        }
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
/// short piece makes two per merge. Part of the thread's `PieceCache`.
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

/// Buffers kept from one piece to the next, and from one call to the next on
/// the same thread.
pub(super) struct Scratch {
    pub(super) parts: Vec<Part>,
    pub(super) cache: PieceCache,
}

impl Scratch {
    /// Empty buffers; the caches are allocated on first use (`with_scratch`).
    pub(super) fn new() -> Self {
        let hot = HotPairs { slots: Vec::new() };
        Scratch { parts: Vec::new(), cache: PieceCache { encoder: 0, slots: Vec::new(), hot } }
    }

    /// These buffers with the caches set up for the encoder tagged `encoder`.
    pub(super) fn for_encoder(mut self, encoder: u64) -> Self {
        self.cache.use_for(encoder);
        self
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// Source of encoder tags: a number no other encoder in this process has.
static NEXT_ENCODER_TAG: AtomicU64 = AtomicU64::new(1);

/// A new encoder tag, which tells its entries in a thread's caches from another encoder's.
pub(super) fn new_encoder_tag() -> u64 {
    NEXT_ENCODER_TAG.fetch_add(1, Ordering::Relaxed)
}

/// Run `f` with this thread's scratch buffers, the caches set up for the
/// encoder tagged `encoder`. A nested call (an encode inside `f`) gets fresh
/// buffers instead of panicking on the borrowed ones.
pub(super) fn with_scratch<R>(encoder: u64, f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.cache.use_for(encoder);
            f(&mut scratch)
        }
        Err(_) => f(&mut Scratch::new().for_encoder(encoder)),
    })
}
