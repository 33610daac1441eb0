//! Per-thread caches of the encoder, kept from one piece and one call to the
//! next: the ids of pieces seen before (`PieceCache`s for pieces of up to 15
//! bytes and of 16 to 31, `LongCache` for longer ones), recent pair lookups
//! (`HotPairs`) and the merge buffer (`Scratch`).
//!
//! Text follows Zipf's law: a few tens of thousands of distinct pieces make
//! most of it, so after the first occurrences nearly every piece is a hit, and a
//! hit costs one probe of an open-addressing table instead of a vocabulary
//! lookup and a merge. The caches of one thread for one encoder share one
//! memory budget (`set_cache_budget`, default `DEFAULT_CACHE_BYTES`); a piece
//! cache that reaches its share evicts the pieces least used (`pieces`).

mod pieces;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rustc_hash::FxHashMap;

use super::merge::Part;
use super::piece_encoding::BATCH;
use super::tables::{
    packed_key, packed_slot, PairRanks, PairTable, CODE_BITS, FREE, NO_RANK, PACKED_KEY_MASK,
};
pub use pieces::PieceCacheStats;
pub(crate) use pieces::{MidCache, ShortCache};

/// Bytes of a new piece cache: 512 KiB (or its share of the budget if less).
const INITIAL_BYTES: usize = 512 << 10;
/// Smallest budget: 1 MiB.
const MIN_CACHE_BYTES: usize = 1 << 20;
/// Default budget of a thread's caches for one encoder: 128 MiB, of which the
/// short-piece table takes up to 64 MiB (2^21 slots) and the ids that do not
/// fit in its slots 8 MiB. The caches take only what a text's distinct
/// pieces need; the budget is what the largest working sets measured need.
/// Distinct pieces of up to 15 bytes (gpt2): ~115k in 10 MB of English
/// prose, ~423k in all 66 MB of enwiki.txt (more than a 16 MiB table holds),
/// ~45k in 10 MB of code, ~265k in 10 MB of text in 30 languages; ~740-750k
/// (o200k, cl100k) in enwiki, code and multilingual together, with ~115-125k
/// pieces of 16 to 31 bytes, and with cl100k more ids past the slots than a
/// 4 MiB share holds (a 64 MiB budget swept on every pass over them).
pub const DEFAULT_CACHE_BYTES: usize = 128 << 20;

/// The budget of each thread's caches per encoder, in bytes (a power of two,
/// at least `MIN_CACHE_BYTES`).
static CACHE_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_CACHE_BYTES);

/// Set the memory budget of the encoder's caches, in bytes: each thread's
/// caches for one encoder (a thread keeps those of its two most recently
/// used encoders) take at most this much: half for the slots of pieces of up
/// to 15 bytes, a quarter for those of 16 to 31 bytes, an eighth for longer
/// pieces, and a sixteenth and a thirty-second for the ids that do not fit
/// in a slot (plus the part of their table's share the table does not take
/// yet). Rounded down to a power of two, at least 1 MiB; caches made
/// afterwards use it. Returns the budget in effect.
pub fn set_cache_budget(bytes: usize) -> usize {
    let bytes = pieces::prev_power_of_two(bytes.max(MIN_CACHE_BYTES));
    CACHE_BYTES.store(bytes, Ordering::Relaxed);
    bytes
}

/// The budget `set_cache_budget` set, in bytes.
pub fn cache_budget() -> usize {
    CACHE_BYTES.load(Ordering::Relaxed)
}

/// The bytes of the budget for the caches of pieces of up to 15 bytes, of
/// 16 to 31 and of longer ones (the rest is for the ids past their slots).
pub(crate) fn cache_shares() -> (usize, usize, usize) {
    let budget = cache_budget();
    (budget / 2, budget / 4, budget / 8)
}

pub(super) use crate::shortkey::hash as hash_key;

/// Pieces of more than 31 bytes -> ids (offset and count in `ids`), bounded
/// by its share of the budget (ids, key bytes and an estimate of the map's
/// own memory per piece): emptied when it would pass it. Long pieces are rare
/// in prose and code alike, so the whole-table reset costs little.
pub(crate) struct LongCache {
    pieces: FxHashMap<Box<[u8]>, (u32, u32)>,
    ids: Vec<u32>,
    bytes: usize,
    max_bytes: usize,
}

/// Bytes a long piece costs the map beyond its key and ids: the key's box
/// (pointer, length), the value, hashbrown's control byte, at its load factor.
const LONG_ENTRY_BYTES: usize = 48;

impl LongCache {
    pub(crate) fn new(max_bytes: usize) -> Self {
        LongCache {
            pieces: FxHashMap::default(),
            ids: Vec::new(),
            bytes: 0,
            max_bytes,
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

    /// Remember `ids` as the ids of `piece`; a piece that would take over
    /// a sixteenth of the share is not kept (a run of one character, say:
    /// rare, and large).
    pub(crate) fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        let bytes = piece.len() + 4 * ids.len() + LONG_ENTRY_BYTES;
        if bytes > self.max_bytes / 16 {
            return;
        }
        if self.bytes + bytes > self.max_bytes {
            self.pieces = FxHashMap::default();
            self.ids = Vec::new();
            self.bytes = 0;
        }
        self.pieces
            .insert(piece.into(), (self.ids.len() as u32, ids.len() as u32));
        self.ids.extend_from_slice(ids);
        self.bytes += bytes;
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
    /// Pieces encoded through `pieces` (hits and misses), for `stats`.
    pub(super) pieces_seen: u64,
    /// The arrays of `Encoder::encode_preset_pieces`, between its calls.
    pub(super) batch: Option<Box<BatchArrays>>,
}

/// A batch of pieces as `Encoder::encode_preset_pieces` handles it: their
/// bounds in the text, keys and hashes.
pub(super) struct BatchArrays {
    pub(super) bounds: [usize; BATCH + 1],
    pub(super) keys: [u128; BATCH],
    pub(super) hashes: [u64; BATCH],
}

impl BatchArrays {
    pub(super) fn new() -> Box<Self> {
        Box::new(BatchArrays {
            bounds: [0; BATCH + 1],
            keys: [0; BATCH],
            hashes: [0; BATCH],
        })
    }
}

impl Scratch {
    /// Empty caches for the encoder tagged `encoder`, within the budget
    /// (`set_cache_budget` gives the shares).
    pub(super) fn new(encoder: u64) -> Self {
        let (short, mid, long) = cache_shares();
        Scratch {
            encoder,
            parts: Vec::new(),
            pieces: ShortCache::new(short),
            mid: MidCache::new(mid),
            long: LongCache::new(long),
            hot: HotPairs::empty(),
            words: Default::default(),
            pieces_seen: 0,
            batch: None,
        }
    }

    /// What the caches hold and have done.
    pub(super) fn stats(&self) -> CacheStats {
        CacheStats {
            pieces_seen: self.pieces_seen,
            short: self.pieces.stats(),
            mid: self.mid.stats(),
            long_pieces: self.long.pieces.len(),
            long_bytes: self.long.bytes,
        }
    }
}

/// A thread's caches for one encoder (`Encoder::cache_stats`): for
/// measuring, and for tests of the budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Pieces of a preset pattern's text encoded (hits and misses).
    pub pieces_seen: u64,
    /// The caches of pieces of up to 15 bytes and of 16 to 31 bytes.
    pub short: PieceCacheStats,
    pub mid: PieceCacheStats,
    /// Longer pieces cached, and the bytes counted against their share.
    pub long_pieces: usize,
    pub long_bytes: usize,
}

/// The caches as an encoder's methods see them.
impl super::Encoder {
    /// Expect to encode about `bytes` bytes of text on this thread, in one or
    /// many calls: the thread's piece cache for this encoder is sized for
    /// them now, in one step, rather than doubled as it fills (see
    /// `PieceCache::expect_text_bytes`; within the cache budget).
    /// Texts under 256 KiB return at once (the first table holds their
    /// pieces), so a call per short text costs nothing.
    pub fn expect_text_bytes(&self, bytes: usize) {
        if bytes >= 1 << 18 {
            with_scratch(self.tag, |scratch| scratch.pieces.expect_text_bytes(bytes));
        }
    }

    /// What this thread's caches for this encoder hold and have done (made
    /// empty if this thread has none yet): for measuring and testing.
    pub fn cache_stats(&self) -> CacheStats {
        with_scratch(self.tag, |scratch| scratch.stats())
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
            Some(i) if i + 1 == all.len() => {}
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
