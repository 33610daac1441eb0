//! Encoding: special tokens, pre-tokenization, then rank-ordered merges inside
//! each pre-token, with tiktoken's semantics so ids equal tiktoken's on any input.
//!
//! Within a pre-token, the pair of adjacent parts whose concatenated bytes have the
//! lowest rank merges first (ties: the leftmost), until no adjacent pair is a
//! ranked token. A pre-token that is itself a token is looked up whole.
//!
//! The merge loop works on token ids, not byte slices: `PairRanks` maps every
//! split of a ranked token into two tokens, (left id, right id), to the token's
//! rank. That is the same question tiktoken asks ("is the concatenation a ranked
//! token?") answered by hashing one u64 instead of a byte slice, and the merged
//! part's id comes with it, so the output needs no lookup either. Short pieces
//! use a plain scan over a small vector reused across pieces; long ones a
//! bucket queue over ranks (see `merge_long`), close to linear time even for a
//! 10 MB pre-token of one repeated character.
//!
//! BPE-dropout (Provilkov et al., 2020, "BPE-Dropout: Simple and Effective Subword
//! Regularization") is a separate path, `encode_with_dropout`: at every merge step
//! each candidate merge is skipped with probability p, and the lowest-rank one not
//! skipped is applied; when every candidate is skipped the piece is done.

use std::cmp::Reverse;
use std::borrow::Cow;
use std::collections::BinaryHeap;

use aho_corasick::AhoCorasick;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::pretokenize::{special_matcher, PreTokenizer};

/// Below this many bytes a piece is merged with the quadratic scan.
const LONG_PIECE: usize = 128;
/// Rank of a pair that does not merge.
const NO_RANK: u32 = u32::MAX;
/// Id of a byte (or rank) that has no token.
const NO_ID: u32 = u32::MAX;

/// A special-token string found where it is not allowed.
#[derive(Debug)]
pub struct DisallowedSpecial {
    pub token: String,
    /// Byte offset in the UTF-8 text.
    pub offset: usize,
}

/// Id -> bytes for decoding: a dense table (one index per id, no hashing) for
/// ids up to twice the number of tokens, a map for the rare ids beyond (e.g. a
/// special token placed at 2**31), so a sparse layout cannot blow up memory.
/// Tokens of at most 15 bytes are also kept inline in `short` (bytes, then the
/// length in the last byte), so decoding copies a fixed 16 bytes per id instead
/// of calling memcpy for three or four.
struct Decoder {
    dense: Vec<Option<Box<[u8]>>>,
    short: Vec<[u8; 16]>,
    sparse: FxHashMap<u32, Box<[u8]>>,
}

/// A token of 1 to 15 bytes as `Decoder::short` holds it; longer or empty ones give zeros.
fn inline_token(bytes: &[u8]) -> [u8; 16] {
    let mut entry = [0u8; 16];
    if (1..16).contains(&bytes.len()) {
        entry[..bytes.len()].copy_from_slice(bytes);
        entry[15] = bytes.len() as u8;
    }
    entry
}

impl Decoder {
    fn new(tokens: FxHashMap<u32, Vec<u8>>) -> Self {
        let limit = 2 * tokens.len() + 1024;
        let mut dense: Vec<Option<Box<[u8]>>> = Vec::new();
        let mut sparse = FxHashMap::default();
        for (id, bytes) in tokens {
            let i = id as usize;
            if i < limit {
                if dense.len() <= i {
                    dense.resize(i + 1, None);
                }
                dense[i] = Some(bytes.into_boxed_slice());
            } else {
                sparse.insert(id, bytes.into_boxed_slice());
            }
        }
        let short = dense.iter().map(|entry| entry.as_deref().map_or([0; 16], inline_token)).collect();
        Decoder { dense, short, sparse }
    }

    /// Append the bytes of `id` to `out`; false if the id is unknown.
    #[inline]
    fn push(&self, id: u32, out: &mut Vec<u8>) -> bool {
        if let Some(entry) = self.short.get(id as usize) {
            if entry[15] > 0 {
                push_inline(entry, out);
                return true;
            }
        }
        match self.get(id) {
            Some(bytes) => {
                out.extend_from_slice(bytes);
                true
            }
            None => false,
        }
    }

    #[inline]
    fn get(&self, id: u32) -> Option<&[u8]> {
        match self.dense.get(id as usize) {
            Some(entry) => entry.as_deref(),
            None => self.sparse.get(&id).map(|b| &**b),
        }
    }
}

/// The merge table on parts: (left part, right part) -> rank of the token whose
/// bytes are their concatenation, for every split of every ranked token into
/// two parts (so it also holds pairs no merge names, as tiktoken's
/// rank-of-concatenation rule requires).
///
/// Parts are named by dense codes, not by token ids: byte `b` is `b`, the token
/// of rank `r` is `256 + r`. Every part of a piece being merged is one or the
/// other (a single byte, or a concatenation that has a rank), merging two parts
/// gives code `256 + rank` with no lookup, and dense codes pack a pair and its
/// rank into one u64 (`PairTable`).
struct PairRanks {
    /// Byte -> id of its single-byte token (NO_ID if it has none).
    byte_ids: [u32; 256],
    /// `(first << 8) | second` -> rank of that two-byte token: the first round
    /// of every piece, looked up without hashing.
    byte_pairs: Box<[u32]>,
    /// Pairs with a part of two bytes or more (pairs of single bytes only meet
    /// in the first round).
    pairs: PairTable,
    /// Rank -> id of the merged token.
    merged_ids: Vec<u32>,
}

impl PairRanks {
    fn new(ids: &TokenIds, ranks: &FxHashMap<Vec<u8>, u32>, n_ranks: usize) -> Self {
        let mut byte_ids = [NO_ID; 256];
        for b in 0..=255u8 {
            if let Some(id) = ids.get(&[b][..]) {
                byte_ids[b as usize] = id;
            }
        }
        // A part is a single byte with a token, or bytes with a rank and an id
        // (a ranked token without an id can never be output, so it never merges).
        let mut merged_ids = vec![NO_ID; n_ranks];
        let mut merged_codes: FxHashMap<&[u8], u32> = FxHashMap::default();
        for (token, &rank) in ranks {
            if let Some(id) = ids.get(token) {
                merged_ids[rank as usize] = id;
                merged_codes.insert(token, 256 + rank);
            }
        }
        let code = |bytes: &[u8]| match bytes {
            [b] => (byte_ids[*b as usize] != NO_ID).then_some(*b as u32),
            _ => merged_codes.get(bytes).copied(),
        };
        // A split needs a part on each side, so only lengths that some part has
        // are tried: trying all L - 1 splits of a token, each hashing up to L
        // bytes, is quadratic, and a vocabulary trained on a long run of one
        // character has tokens of millions of bytes (lengths 1, 2, 4, ...).
        let mut part_lengths: Vec<usize> = merged_codes.keys().map(|t| t.len()).collect();
        part_lengths.push(1);
        part_lengths.sort_unstable();
        part_lengths.dedup();
        let is_part_length: FxHashSet<usize> = part_lengths.iter().copied().collect();
        let mut byte_pairs = vec![NO_RANK; 1 << 16].into_boxed_slice();
        let mut pairs = Vec::new();
        for (&token, &merged) in &merged_codes {
            let rank = merged - 256;
            let splits = part_lengths.iter().copied().take_while(|&n| n < token.len());
            for split in splits.filter(|&n| is_part_length.contains(&(token.len() - n))) {
                let Some(left) = code(&token[..split]) else { continue };
                let Some(right) = code(&token[split..]) else { continue };
                if token.len() == 2 {
                    byte_pairs[(token[0] as usize) << 8 | token[1] as usize] = rank;
                } else {
                    pairs.push((left, right, rank));
                }
            }
        }
        PairRanks { byte_ids, byte_pairs, pairs: PairTable::new(&pairs, n_ranks + 256), merged_ids }
    }

    /// Rank of merging the parts `left` and `right` (NO_RANK: they do not merge).
    #[inline]
    fn rank(&self, left: u32, right: u32) -> u32 {
        self.pairs.get(left, right)
    }

    /// `rank`, looked up first in `hot` (see `HotPairs`), which it updates.
    #[inline]
    fn rank_via(&self, hot: &mut HotPairs, left: u32, right: u32) -> u32 {
        if let PairTable::Wide(_) = self.pairs {
            return self.pairs.get(left, right);
        }
        let key = packed_key(left, right);
        let i = packed_slot(key, 64 - HOT_PAIRS.trailing_zeros());
        let slot = hot.slots[i];
        if slot & PACKED_KEY_MASK == key {
            let rank = slot >> (2 * CODE_BITS);
            return if rank == HOT_NO_RANK { NO_RANK } else { rank as u32 };
        }
        let rank = self.pairs.get(left, right);
        let stored = if rank == NO_RANK { HOT_NO_RANK } else { rank as u64 };
        hot.slots[i] = key | stored << (2 * CODE_BITS);
        rank
    }

    #[inline]
    fn byte_pair_rank(&self, first: u8, second: u8) -> u32 {
        self.byte_pairs[(first as usize) << 8 | second as usize]
    }

    /// Token id of a part.
    #[inline]
    fn id(&self, code: u32) -> u32 {
        if code < 256 {
            self.byte_ids[code as usize]
        } else {
            self.merged_ids[(code - 256) as usize]
        }
    }
}

/// Bits of a part code in a packed pair.
const CODE_BITS: u32 = 21;
const CODE_MASK: u64 = (1 << CODE_BITS) - 1;
/// A free slot of the packed table (no pair packs to it: codes stay below 2**21 - 1).
const FREE: u64 = u64::MAX;
/// The (left, right) bits of a packed slot.
const PACKED_KEY_MASK: u64 = CODE_MASK << CODE_BITS | CODE_MASK;

/// (left code, right code) -> rank. Packed: an open-addressing table whose slot
/// is one u64, left | right << 21 | rank << 42, so a lookup reads one slot (one
/// cache miss at most, where a general hash map reads its control bytes and
/// then the entry), at most half full so that misses stop early. Used when codes
/// fit in 21 bits (fewer than two million merges); a hash map otherwise.
enum PairTable {
    Packed { slots: Box<[u64]>, shift: u32 },
    Wide(FxHashMap<u64, u32>),
}

impl PairTable {
    fn new(pairs: &[(u32, u32, u32)], n_codes: usize) -> Self {
        if n_codes as u64 >= CODE_MASK {
            return PairTable::Wide(pairs.iter().map(|&(l, r, rank)| ((l as u64) << 32 | r as u64, rank)).collect());
        }
        let capacity = (2 * pairs.len()).next_power_of_two().max(16);
        let shift = 64 - capacity.trailing_zeros();
        let mut slots = vec![FREE; capacity].into_boxed_slice();
        for &(left, right, rank) in pairs {
            let key = packed_key(left, right);
            let mut i = packed_slot(key, shift);
            while slots[i] != FREE && slots[i] & PACKED_KEY_MASK != key {
                i = (i + 1) & (capacity - 1);
            }
            slots[i] = key | (rank as u64) << (2 * CODE_BITS);
        }
        PairTable::Packed { slots, shift }
    }

    #[inline]
    fn get(&self, left: u32, right: u32) -> u32 {
        match self {
            PairTable::Packed { slots, shift } => {
                let key = packed_key(left, right);
                let mut i = packed_slot(key, *shift);
                loop {
                    let slot = slots[i];
                    if slot == FREE {
                        return NO_RANK;
                    }
                    if slot & PACKED_KEY_MASK == key {
                        return (slot >> (2 * CODE_BITS)) as u32;
                    }
                    i = (i + 1) & (slots.len() - 1);
                }
            }
            PairTable::Wide(map) => map.get(&((left as u64) << 32 | right as u64)).copied().unwrap_or(NO_RANK),
        }
    }
}

#[inline]
fn packed_key(left: u32, right: u32) -> u64 {
    left as u64 | (right as u64) << CODE_BITS
}

#[inline]
fn packed_slot(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

/// A candidate merge in `LongMerge`'s order: by rank, then position.
#[inline]
fn queue_key(rank: u32, pos: u32) -> u64 {
    (rank as u64) << 32 | pos as u64
}

/// A part of a short piece being merged: its code (see `PairRanks`) and the
/// rank of merging it with the next part.
#[derive(Clone, Copy)]
struct Part {
    code: u32,
    rank: u32,
}

/// Pieces of at most this many bytes go through the piece cache.
const CACHED_PIECE: usize = 15;
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
struct PieceCache {
    encoder: u64,
    slots: Vec<CacheSlot>,
    hot: HotPairs,
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

    #[inline]
    fn slot(key: u128) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(23);
        (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_SLOTS.trailing_zeros())) as usize
    }
}

/// The bytes of a piece of at most `CACHED_PIECE` bytes and its length, as one number.
#[inline]
fn piece_key(piece: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    buf[..piece.len()].copy_from_slice(piece);
    buf[15] = piece.len() as u8;
    u128::from_le_bytes(buf)
}

/// Parts `remove_part` moves at a time.
const REMOVE_CHUNK: usize = 8;

/// `parts.remove(i)` for a vector with room for `REMOVE_CHUNK` more parts:
/// the tail moves in fixed 64-byte chunks, which compile to a few vector
/// moves, where `Vec::remove` calls memmove (~12% of encoding o200k
/// multilingual text, one call per merge of a short piece).
#[inline]
fn remove_part(parts: &mut Vec<Part>, i: usize) {
    let len = parts.len();
    assert!(i < len && len + REMOVE_CHUNK <= parts.capacity());
    let p = parts.as_mut_ptr();
    let mut j = i;
    while j + 1 < len {
        // SAFETY: j + 1 < len, so the chunk read (j + 1 .. j + 9) and the one
        // written (j .. j + 8) end before len + 8 <= capacity. Parts past
        // `len` are spare capacity: copying its bytes is allowed, and they
        // stay outside the vector.
        unsafe { std::ptr::copy(p.add(j + 1), p.add(j), REMOVE_CHUNK) };
        j += REMOVE_CHUNK;
    }
    // SAFETY: parts[..len - 1] are the old parts without parts[i]; Part is Copy.
    unsafe { parts.set_len(len - 1) };
}

/// Append the first `len` (at most N) items of `items` to `out` as one
/// fixed-size copy: `extend_from_slice` of a variable length calls memmove,
/// ~6% of encoding prose when a cache hit copied its ids that way.
#[inline]
fn push_fixed<T: Copy, const N: usize>(items: &[T; N], len: usize, out: &mut Vec<T>) {
    assert!(len <= N);
    out.reserve(N);
    // SAFETY: `reserve` left room for N more items after `out.len()`; all N
    // are written, and only the first `len` become part of the vector.
    unsafe {
        let end = out.len();
        std::ptr::copy_nonoverlapping(items.as_ptr(), out.as_mut_ptr().add(end), N);
        out.set_len(end + len);
    }
}

/// Append the token held inline in `entry` (its bytes, then its length, at
/// least 1 and below N, in the last byte, as `Encoder::inline_token`) to `out`.
#[inline]
pub fn push_inline<const N: usize>(entry: &[u8; N], out: &mut Vec<u8>) {
    push_fixed(entry, entry[N - 1] as usize, out);
}

/// Token bytes -> id. Tokens of at most `CACHED_PIECE` bytes (nearly all)
/// are keyed by `piece_key`: a lookup probes one table with no heap-allocated
/// key to compare (the byte-slice map took three cache misses and a memcmp
/// call, ~15% of encoding o200k prose, paid by every piece-cache miss).
/// Two-byte tokens are also in a table indexed by their bytes.
struct TokenIds {
    short: FxHashMap<u128, u32>,
    /// One bit per `SHORT_FILTER_BITS`-bit hash of a short token's key: a
    /// clear bit proves a piece is not a token without touching `short`.
    short_filter: Box<[u64]>,
    long: FxHashMap<Vec<u8>, u32>,
    /// `(first << 8) | second` -> id of that two-byte token, or NO_ID.
    two_byte: Box<[u32]>,
}

/// Bits of the short-token filter's hash: 2^20 bits, 128 KiB, which stays in
/// L2 where the map of o200k's short tokens (6 MiB) misses. With 200k tokens
/// ~18% of the bits are set, so ~80% of the pieces that are not tokens (most
/// pieces the cache misses in random or rare text) skip the map.
const SHORT_FILTER_BITS: u32 = 20;

#[inline]
fn short_filter_bit(key: u128) -> usize {
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    (folded.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> (64 - SHORT_FILTER_BITS)) as usize
}

impl TokenIds {
    fn new() -> Self {
        TokenIds {
            short: FxHashMap::default(),
            short_filter: vec![0; (1 << SHORT_FILTER_BITS) / 64].into_boxed_slice(),
            long: FxHashMap::default(),
            two_byte: vec![NO_ID; 1 << 16].into_boxed_slice(),
        }
    }

    /// Add a token unless its bytes already have an id (the first id wins).
    fn insert(&mut self, bytes: Vec<u8>, id: u32) {
        if let [first, second] = bytes[..] {
            let slot = &mut self.two_byte[(first as usize) << 8 | second as usize];
            if *slot == NO_ID {
                *slot = id;
            }
        }
        if bytes.len() <= CACHED_PIECE {
            let key = piece_key(&bytes);
            let bit = short_filter_bit(key);
            self.short_filter[bit / 64] |= 1 << (bit % 64);
            self.short.entry(key).or_insert(id);
        } else {
            self.long.entry(bytes).or_insert(id);
        }
    }

    #[inline]
    fn get(&self, bytes: &[u8]) -> Option<u32> {
        match *bytes {
            [first, second] => Some(self.two_byte[(first as usize) << 8 | second as usize]).filter(|&id| id != NO_ID),
            _ if bytes.len() <= CACHED_PIECE => self.get_short(piece_key(bytes)),
            _ => self.long.get(bytes).copied(),
        }
    }

    /// The id of the short token of `piece_key` `key`.
    #[inline]
    fn get_short(&self, key: u128) -> Option<u32> {
        let bit = short_filter_bit(key);
        if self.short_filter[bit / 64] & 1 << (bit % 64) == 0 {
            return None;
        }
        self.short.get(&key).copied()
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
struct HotPairs {
    slots: Vec<u64>,
}

impl HotPairs {
    fn empty() -> Self {
        HotPairs { slots: vec![FREE; HOT_PAIRS] }
    }
}

/// Buffers kept from one piece to the next, and from one call to the next on
/// the same thread.
pub struct Scratch {
    parts: Vec<Part>,
    cache: PieceCache,
}

impl Scratch {
    fn new() -> Self {
        let hot = HotPairs { slots: Vec::new() };
        Scratch { parts: Vec::new(), cache: PieceCache { encoder: 0, slots: Vec::new(), hot } }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::new());
}

/// Source of `Encoder::tag`: a number no other encoder in this process has.
static NEXT_ENCODER_TAG: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub struct Encoder {
    /// Token bytes -> id.
    ids: TokenIds,
    /// Bytes of a merged token -> merge rank (lower merges first); BPE-dropout
    /// merges on bytes with it.
    ranks: FxHashMap<Vec<u8>, u32>,
    /// The same ranks keyed by pairs of ids, for the normal merge loop.
    pair_ranks: PairRanks,
    /// Id -> bytes, for decoding (special tokens included).
    decoder: Decoder,
    /// Special-token string -> id, in the order given.
    specials: Vec<(String, u32)>,
    all_specials: Option<AhoCorasick>,
    pre: PreTokenizer,
    /// Tells this encoder's entries in a thread's piece cache from another's.
    tag: u64,
}

impl Encoder {
    /// `tokens`: every (bytes, id) of the vocabulary except special tokens;
    /// `merged`: bytes of each merge result in rank order.
    pub fn new(
        tokens: Vec<(Vec<u8>, u32)>,
        merged: Vec<Vec<u8>>,
        specials: Vec<(String, u32)>,
        pattern: &str,
    ) -> Result<Self, String> {
        let mut decoder: FxHashMap<u32, Vec<u8>> = FxHashMap::default();
        let mut ids = TokenIds::new();
        for (bytes, id) in tokens {
            if decoder.insert(id, bytes.clone()).is_some() {
                return Err(format!("duplicate token id {id}"));
            }
            ids.insert(bytes, id);
        }
        let mut ranks = FxHashMap::default();
        let n_ranks = merged.len();
        for (rank, bytes) in merged.into_iter().enumerate() {
            ranks.entry(bytes).or_insert(rank as u32);
        }
        let pair_ranks = PairRanks::new(&ids, &ranks, n_ranks);
        for (s, id) in &specials {
            decoder.insert(*id, s.as_bytes().to_vec());
        }
        let names: Vec<String> = specials.iter().map(|(s, _)| s.clone()).collect();
        // Specials are split by encode itself, so the pre-tokenizer gets none.
        let pre = PreTokenizer::new(pattern, &[])?;
        let decoder = Decoder::new(decoder);
        let tag = NEXT_ENCODER_TAG.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Encoder { ids, ranks, pair_ranks, decoder, all_specials: special_matcher(&names)?, specials, pre, tag })
    }

    /// Ids below this have a dense decoder slot: every id of a vocabulary
    /// whose ids are not scattered far apart (see `Decoder`).
    pub fn dense_id_bound(&self) -> usize {
        self.decoder.dense.len()
    }

    /// Token `id` inline as `Decoder::short` holds it (bytes, then the length
    /// in the last byte), or zeros for a token longer than 15 bytes or unknown.
    pub fn inline_token(&self, id: u32) -> [u8; 16] {
        self.decoder.short.get(id as usize).copied().unwrap_or([0; 16])
    }

    pub fn pre_tokenizer(&self) -> &PreTokenizer {
        &self.pre
    }

    pub fn special_id(&self, token: &str) -> Option<u32> {
        self.specials.iter().find(|(s, _)| s == token).map(|(_, id)| *id)
    }

    /// Encode text holding no special tokens, appending ids to `out`.
    pub fn encode_ordinary_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        self.with_scratch(|scratch| self.pieces_into(text, out, &mut |piece, out| self.encode_piece(piece, scratch, out)))
    }

    /// Run `f` with this thread's scratch buffers, the piece cache set up for this encoder.
    fn with_scratch<R>(&self, f: impl FnOnce(&mut Scratch) -> R) -> R {
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            scratch.cache.use_for(self.tag);
            f(&mut scratch)
        })
    }

    /// Pre-tokenize `text` and encode each piece with `encode_piece`, appending to `out`.
    fn pieces_into<F>(&self, text: &str, out: &mut Vec<u32>, encode_piece: &mut F) -> Result<(), String>
    where
        F: FnMut(&[u8], &mut Vec<u32>) -> Result<(), String>,
    {
        let mut missing = None;
        self.pre.for_each_piece(text, |piece| {
            if let Err(e) = encode_piece(piece.as_bytes(), out) {
                missing.get_or_insert(e);
            }
        })?;
        missing.map_or(Ok(()), Err)
    }

    /// Matcher over a subset of the special tokens (the prebuilt one when it is all of them).
    fn matcher_for(&self, names: &[String]) -> Result<Option<Cow<'_, AhoCorasick>>, String> {
        if names.is_empty() {
            return Ok(None);
        }
        if names.len() == self.specials.len() {
            return Ok(self.all_specials.as_ref().map(Cow::Borrowed));
        }
        Ok(special_matcher(names)?.map(Cow::Owned))
    }

    /// Encode with tiktoken's special-token semantics: fail on the first
    /// `disallowed` special-token string in the text, then emit `allowed` ones as
    /// their ids (longest match first) and encode everything else as text.
    /// Both lists name special tokens of this encoder, without duplicates.
    pub fn encode(&self, text: &str, allowed: &[String], disallowed: &[String]) -> Result<Vec<u32>, EncodeError> {
        self.with_scratch(|scratch| {
            self.encode_with(text, allowed, disallowed, &mut |piece, out| self.encode_piece(piece, scratch, out))
        })
    }

    /// `encode` with BPE-dropout: each candidate merge is skipped with
    /// probability `p` (0 <= p < 1). p = 0 is exactly `encode`; special tokens
    /// are never dropped.
    ///
    /// Why xoshiro256++ from `rand_xoshiro` and not a hand-rolled generator or
    /// rand's `StdRng`: it is a published, well-tested generator whose output is
    /// fixed by its definition, so a seed gives the same ids on every platform and
    /// every release (StdRng may change algorithm between rand versions), and it
    /// is fast and tiny. One stream runs through the whole text, piece by piece.
    pub fn encode_with_dropout(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        p: f64,
        seed: u64,
    ) -> Result<Vec<u32>, EncodeError> {
        if p <= 0.0 {
            return self.encode(text, allowed, disallowed);
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        self.encode_with(text, allowed, disallowed, &mut |piece, out| {
            for w in self.merge_dropout(piece, p, &mut rng).windows(2) {
                out.push(self.id_of(&piece[w[0]..w[1]])?);
            }
            Ok(())
        })
    }

    /// The special-token policy of `encode`, with pieces encoded by `encode_piece`.
    fn encode_with<F>(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        encode_piece: &mut F,
    ) -> Result<Vec<u32>, EncodeError>
    where
        F: FnMut(&[u8], &mut Vec<u32>) -> Result<(), String>,
    {
        // Room for ~2 bytes per token (code and most prose need no regrowth).
        let mut out = Vec::with_capacity(text.len() / 2 + 16);
        if let Some(m) = self.matcher_for(disallowed).map_err(EncodeError::Other)? {
            if let Some(found) = m.find(text) {
                let token = text[found.start()..found.end()].to_string();
                return Err(EncodeError::Disallowed(DisallowedSpecial { token, offset: found.start() }));
            }
        }
        let mut start = 0;
        if let Some(m) = self.matcher_for(allowed).map_err(EncodeError::Other)? {
            for found in m.find_iter(text) {
                self.pieces_into(&text[start..found.start()], &mut out, encode_piece).map_err(EncodeError::Other)?;
                let token = &text[found.start()..found.end()];
                out.push(self.special_id(token).expect("matched a special token"));
                start = found.end();
            }
        }
        self.pieces_into(&text[start..], &mut out, encode_piece).map_err(EncodeError::Other)?;
        Ok(out)
    }

    fn id_of(&self, bytes: &[u8]) -> Result<u32, String> {
        self.ids.get(bytes).ok_or_else(|| format!("bytes {bytes:?} are not in the vocabulary"))
    }

    /// Encode one pre-token, appending its ids to `out`; short ones through the piece cache.
    fn encode_piece(&self, piece: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) -> Result<(), String> {
        // Two-byte pieces (`in`, `, `, a Latin-1, Greek or Cyrillic letter...)
        // skip the piece cache: `TokenIds::two_byte` holds them all, where
        // random Latin-1 text has too many for the cache and each miss cost a
        // hash lookup. Long pieces are too rare to cache.
        if piece.len() == 2 || piece.len() > CACHED_PIECE {
            return self.whole_or_merged(self.ids.get(piece), piece, scratch, out);
        }
        let key = piece_key(piece);
        let slot = PieceCache::slot(key);
        let cached = &scratch.cache.slots[slot];
        if cached.key == key {
            push_fixed(&cached.ids, cached.len as usize, out);
            return Ok(());
        }
        let start = out.len();
        self.whole_or_merged(self.ids.get_short(key), piece, scratch, out)?;
        let ids = &out[start..];
        if ids.len() <= CACHED_IDS {
            let slot = &mut scratch.cache.slots[slot];
            slot.key = key;
            slot.len = ids.len() as u32;
            slot.ids[..ids.len()].copy_from_slice(ids);
        }
        Ok(())
    }

    /// Append `whole`, the id of `piece` as one token if it is one, or else
    /// the ids of merging it.
    #[inline]
    fn whole_or_merged(&self, whole: Option<u32>, piece: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) -> Result<(), String> {
        match whole {
            Some(id) => {
                out.push(id);
                Ok(())
            }
            None => self.merge_piece(piece, &mut scratch.parts, &mut scratch.cache.hot, out),
        }
    }

    /// Merge a piece that is not a token, appending its ids.
    fn merge_piece(
        &self,
        piece: &[u8],
        parts: &mut Vec<Part>,
        hot: &mut HotPairs,
        out: &mut Vec<u32>,
    ) -> Result<(), String> {
        if let Some(&b) = piece.iter().find(|&&b| self.pair_ranks.byte_ids[b as usize] == NO_ID) {
            return Err(format!("bytes {:?} are not in the vocabulary", [b]));
        }
        if piece.len() < LONG_PIECE {
            self.merge_short(piece, parts, hot, out);
        } else {
            self.merge_long(piece, out)?;
        }
        Ok(())
    }

    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).copied().unwrap_or(NO_RANK)
    }

    /// Merge a short piece by repeated scans for the lowest-ranked pair (the
    /// leftmost on ties), appending its ids. Every byte has an id.
    fn merge_short(&self, piece: &[u8], parts: &mut Vec<Part>, hot: &mut HotPairs, out: &mut Vec<u32>) {
        let table = &self.pair_ranks;
        parts.clear();
        parts.reserve(piece.len() + REMOVE_CHUNK);
        parts.extend(piece.windows(2).map(|w| Part { code: w[0] as u32, rank: table.byte_pair_rank(w[0], w[1]) }));
        if let Some(&last) = piece.last() {
            parts.push(Part { code: last as u32, rank: NO_RANK });
        }
        loop {
            let mut best = 0;
            let mut best_rank = NO_RANK;
            for (i, part) in parts.iter().enumerate() {
                if part.rank < best_rank {
                    best = i;
                    best_rank = part.rank;
                }
            }
            if best_rank == NO_RANK {
                break;
            }
            parts[best].code = 256 + best_rank;
            remove_part(parts, best + 1);
            parts[best].rank = match parts.get(best + 1) {
                Some(next) => table.rank_via(hot, parts[best].code, next.code),
                None => NO_RANK,
            };
            if best > 0 {
                parts[best - 1].rank = table.rank_via(hot, parts[best - 1].code, parts[best].code);
            }
        }
        out.extend(parts.iter().map(|p| table.id(p.code)));
    }

    /// Merge a long piece, appending its ids; see `LongMerge`. Every byte has an id.
    fn merge_long(&self, piece: &[u8], out: &mut Vec<u32>) -> Result<(), String> {
        if piece.len() >= u32::MAX as usize {
            // Positions are u32; a 4 GiB pre-token takes the byte-slice heap.
            for w in self.merge_heap(piece).windows(2) {
                out.push(self.id_of(&piece[w[0]..w[1]])?);
            }
            return Ok(());
        }
        let mut merge = LongMerge::new(&self.pair_ranks, piece);
        merge.run();
        merge.ids_into(out);
        Ok(())
    }

    /// Part boundaries after merging, with a linked list and a lazy min-heap.
    fn merge_heap(&self, piece: &[u8]) -> Vec<usize> {
        self.merge_heap_skipping(piece, || false)
    }

    /// Part boundaries after merging with BPE-dropout: each live candidate popped
    /// from the heap is skipped with probability `p`. There is no whole-piece
    /// lookup on this path: it would hide the dropout for every pre-token that is
    /// itself a token.
    fn merge_dropout(&self, piece: &[u8], p: f64, rng: &mut impl Rng) -> Vec<usize> {
        self.merge_heap_skipping(piece, || rng.random_bool(p))
    }

    /// The heap merge, asking `skip()` about every live candidate before applying
    /// it. Skipped candidates are set aside and return to the heap after the next
    /// merge (a new step draws afresh for every candidate); when the heap runs dry
    /// with only skipped ones left, every candidate of the step was dropped and the
    /// piece is done. Stale entries are never drawn for, so `skip` sees live
    /// candidates only.
    fn merge_heap_skipping(&self, piece: &[u8], mut skip: impl FnMut() -> bool) -> Vec<usize> {
        let n = piece.len();
        if n < 2 {
            return (0..=n).collect();
        }
        // Part starting at byte i: ends at end[i]; the previous part starts at prev[i].
        let mut end: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap: BinaryHeap<Reverse<(u32, usize, usize)>> = BinaryHeap::new();
        for i in 0..n - 1 {
            let r = self.rank(&piece[i..i + 2]);
            if r != u32::MAX {
                heap.push(Reverse((r, i, i + 2)));
            }
        }
        let mut skipped: Vec<Reverse<(u32, usize, usize)>> = Vec::new();
        while let Some(entry) = heap.pop() {
            let Reverse((_, left, right_end)) = entry;
            // Stale unless the left part is alive and its right neighbour still ends at right_end.
            let mid = end[left];
            if !alive[left] || mid >= n || end[mid] != right_end {
                continue;
            }
            if skip() {
                skipped.push(entry);
                continue;
            }
            alive[mid] = false;
            end[left] = right_end;
            if right_end < n {
                prev[right_end] = left;
                let r = self.rank(&piece[left..end[right_end]]);
                if r != u32::MAX {
                    heap.push(Reverse((r, left, end[right_end])));
                }
            }
            if left > 0 {
                let p = prev[left];
                let r = self.rank(&piece[p..right_end]);
                if r != u32::MAX {
                    heap.push(Reverse((r, p, right_end)));
                }
            }
            heap.extend(skipped.drain(..));
        }
        let mut bounds = Vec::new();
        let mut i = 0;
        while i < n {
            bounds.push(i);
            i = end[i];
        }
        bounds.push(n);
        bounds
    }

    /// Bytes of `ids` joined; error names the first unknown id.
    pub fn decode_bytes(&self, ids: &[i64]) -> Result<Vec<u8>, i64> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if !self.push_token_bytes(id, &mut out) {
                return Err(id);
            }
        }
        Ok(out)
    }

    /// Append the bytes of token `id` (a special token gives its text) to
    /// `out`; false, with `out` unchanged, if the id is unknown.
    #[inline]
    pub fn push_token_bytes(&self, id: i64, out: &mut Vec<u8>) -> bool {
        u32::try_from(id).is_ok_and(|i| self.decoder.push(i, out))
    }
}

/// The merge of one long piece: parts in a linked list over byte positions, and
/// the candidate merges ordered by (rank, position), as one min-heap would order
/// them, but cheaper.
///
/// Candidates wait in a bucket per rank (positions appended as pairs appear), and
/// a small heap holds the ranks that have a bucket. A merge of rank r nearly
/// always creates pairs of higher rank, so a bucket is complete before it is
/// taken, and it is a few ascending runs that one stable sort puts in order: a
/// piece of L bytes costs about O(L), not O(L log L) with a heap of L entries
/// that no longer fits in cache. A pair of rank <= r, which tables that no BPE
/// trainer made can produce, goes to the `urgent` heap, consulted before the
/// bucket, so the order is exact for any table.
///
/// Candidates are checked when taken (lazy deletion): one is still valid if the
/// part at its position is alive and the pair it starts still has its rank (a
/// rank names one byte string, so the same rank is the same span).
struct LongMerge<'a> {
    table: &'a PairRanks,
    /// For the part starting at byte i: its code (NO_ID once merged into the
    /// part on its left), where the next and previous parts start, and the rank
    /// of merging it with the next part.
    codes: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    ranks: Vec<u32>,
    buckets: FxHashMap<u32, Vec<u32>>,
    bucket_ranks: BinaryHeap<Reverse<u32>>,
    urgent: BinaryHeap<Reverse<u64>>,
    /// The rank whose bucket is being merged.
    current: u32,
}

impl<'a> LongMerge<'a> {
    /// Parts are the single bytes (every one has an id); `piece.len() < u32::MAX`.
    fn new(table: &'a PairRanks, piece: &[u8]) -> Self {
        let n = piece.len();
        let mut merge = LongMerge {
            table,
            codes: piece.iter().map(|&b| b as u32).collect(),
            next: (1..=n as u32).collect(),
            prev: (0..n as u32).map(|i| i.wrapping_sub(1)).collect(),
            ranks: Vec::with_capacity(n),
            buckets: FxHashMap::default(),
            bucket_ranks: BinaryHeap::new(),
            urgent: BinaryHeap::new(),
            current: 0,
        };
        merge.ranks.extend(piece.windows(2).map(|w| table.byte_pair_rank(w[0], w[1])));
        merge.ranks.push(NO_RANK);
        for pos in 0..n.saturating_sub(1) {
            let rank = merge.ranks[pos];
            if rank != NO_RANK {
                merge.add_to_bucket(rank, pos as u32);
            }
        }
        merge
    }

    fn add_to_bucket(&mut self, rank: u32, pos: u32) {
        let bucket = self.buckets.entry(rank).or_default();
        if bucket.is_empty() {
            self.bucket_ranks.push(Reverse(rank));
        }
        bucket.push(pos);
    }

    /// A new candidate found while merging rank `current`.
    fn add(&mut self, rank: u32, pos: u32) {
        if rank <= self.current {
            self.urgent.push(Reverse(queue_key(rank, pos)));
        } else {
            self.add_to_bucket(rank, pos);
        }
    }

    /// Apply every merge, lowest (rank, position) first.
    fn run(&mut self) {
        while let Some(Reverse(rank)) = self.bucket_ranks.pop() {
            let mut positions = self.buckets.remove(&rank).unwrap_or_default();
            positions.sort(); // ascending runs: a merge pass over them
            self.current = rank;
            let mut taken = 0;
            loop {
                let from_bucket = positions.get(taken).map(|&pos| queue_key(rank, pos));
                let from_urgent = self.urgent.peek().map(|entry| entry.0);
                let key = match (from_bucket, from_urgent) {
                    (Some(b), Some(u)) if u < b => self.urgent.pop().unwrap().0,
                    (Some(b), _) => {
                        taken += 1;
                        b
                    }
                    (None, Some(_)) => self.urgent.pop().unwrap().0,
                    (None, None) => break,
                };
                self.merge_at((key >> 32) as u32, key as u32);
            }
        }
    }

    /// Merge the part at `pos` with the next one if that pair still has `rank`.
    fn merge_at(&mut self, rank: u32, pos: u32) {
        let p = pos as usize;
        if self.codes[p] == NO_ID || self.ranks[p] != rank {
            return; // stale
        }
        let right = self.next[p] as usize;
        let after = self.next[right];
        self.codes[p] = 256 + rank;
        self.codes[right] = NO_ID;
        self.ranks[right] = NO_RANK;
        self.next[p] = after;
        if (after as usize) < self.codes.len() {
            self.prev[after as usize] = pos;
            let rank = self.table.rank(self.codes[p], self.codes[after as usize]);
            self.set_rank(pos, rank);
        } else {
            self.ranks[p] = NO_RANK;
        }
        if p > 0 {
            let before = self.prev[p];
            let rank = self.table.rank(self.codes[before as usize], self.codes[p]);
            self.set_rank(before, rank);
        }
    }

    fn set_rank(&mut self, pos: u32, rank: u32) {
        self.ranks[pos as usize] = rank;
        if rank != NO_RANK {
            self.add(rank, pos);
        }
    }

    fn ids_into(&self, out: &mut Vec<u32>) {
        let mut i = 0;
        while i < self.codes.len() {
            out.push(self.table.id(self.codes[i]));
            i = self.next[i] as usize;
        }
    }
}

#[derive(Debug)]
pub enum EncodeError {
    Disallowed(DisallowedSpecial),
    Other(String),
}

impl EncodeError {
    /// The same error for a text that starts `offset` bytes later in a longer one.
    pub fn shifted(self, offset: usize) -> Self {
        match self {
            EncodeError::Disallowed(d) => EncodeError::Disallowed(DisallowedSpecial { offset: d.offset + offset, ..d }),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Encoder {
        // merges: (a,b)->ab rank0, (ab,c)->abc rank1
        let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        tokens.push((b"ab".to_vec(), 256));
        tokens.push((b"abc".to_vec(), 257));
        Encoder::new(tokens, vec![b"ab".to_vec(), b"abc".to_vec()], vec![("<|e|>".into(), 258)], "gpt2").unwrap()
    }

    fn scratch_for(e: &Encoder) -> Scratch {
        let mut scratch = Scratch::new();
        scratch.cache.use_for(e.tag);
        scratch
    }

    /// Ids by the byte-slice heap merge: the reference for the id-pair merges.
    fn ids_by_byte_merge(e: &Encoder, piece: &[u8]) -> Vec<u32> {
        e.merge_heap(piece).windows(2).map(|w| e.id_of(&piece[w[0]..w[1]]).unwrap()).collect()
    }

    /// Both id-pair merges (forced, whatever the length) and `encode_piece`.
    fn ids_by_pair_merges(e: &Encoder, piece: &[u8]) -> [Vec<u32>; 3] {
        let (mut short, mut long, mut whole) = (vec![], vec![], vec![]);
        e.merge_short(piece, &mut vec![], &mut HotPairs::empty(), &mut short);
        e.merge_long(piece, &mut long).unwrap();
        e.encode_piece(piece, &mut scratch_for(e), &mut whole).unwrap();
        [short, long, whole]
    }

    /// A random table over the bytes `a..=d`: byte ids scrambled (so ids and bytes
    /// differ), each merge the concatenation of two earlier tokens; with
    /// `shuffle` the ranks are then permuted, giving tables no trainer makes
    /// (a merge can create a pair of lower rank than its own).
    fn random_table(rng: &mut Xoshiro256PlusPlus, n_merges: usize, shuffle: bool) -> Encoder {
        let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], (b as u32 * 7 + 3) % 256)).collect();
        let mut merged: Vec<Vec<u8>> = vec![];
        let mut pool: Vec<Vec<u8>> = (b'a'..=b'd').map(|b| vec![b]).collect();
        while merged.len() < n_merges {
            let left = &pool[rng.random_range(0..pool.len())];
            let right = &pool[rng.random_range(0..pool.len())];
            let token = [left.as_slice(), right.as_slice()].concat();
            if token.len() <= 12 && !pool.contains(&token) {
                pool.push(token.clone());
                merged.push(token);
            }
        }
        if shuffle {
            for i in (1..merged.len()).rev() {
                merged.swap(i, rng.random_range(0..=i));
            }
        }
        tokens.extend(merged.iter().enumerate().map(|(r, t)| (t.clone(), 256 + r as u32)));
        Encoder::new(tokens, merged, vec![], "gpt2").unwrap()
    }

    #[test]
    fn id_pair_merges_equal_byte_merge_on_random_tables() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for table in 0..40 {
            let e = random_table(&mut rng, 60, table % 2 == 1);
            for _ in 0..50 {
                let len = rng.random_range(1..300);
                let piece: Vec<u8> = (0..len).map(|_| b"abcd"[rng.random_range(0..4)]).collect();
                let want = ids_by_byte_merge(&e, &piece);
                for got in ids_by_pair_merges(&e, &piece) {
                    assert_eq!(got, want, "table {table} piece {:?}", String::from_utf8_lossy(&piece));
                }
            }
        }
    }

    #[test]
    fn long_merge_takes_a_lower_rank_pair_first() {
        // bc merges first (rank 1), then a+bc is abc (rank 0, below 1).
        let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        tokens.extend([(b"abc".to_vec(), 256), (b"bc".to_vec(), 257), (b"abcabc".to_vec(), 258)]);
        let e = Encoder::new(tokens, vec![b"abc".to_vec(), b"bc".to_vec(), b"abcabc".to_vec()], vec![], "gpt2").unwrap();
        let piece = b"abcabcabc";
        assert_eq!(ids_by_byte_merge(&e, piece), [258, 256]);
        assert_eq!(ids_by_pair_merges(&e, piece), [[258, 256], [258, 256], [258, 256]]);
    }

    #[test]
    fn one_repeated_byte_merges_left_to_right() {
        let e = toy();
        let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        tokens.extend([(b"aa".to_vec(), 256), (b"aaaa".to_vec(), 257), (b"aaa".to_vec(), 258)]);
        let runs = Encoder::new(tokens, vec![b"aa".to_vec(), b"aaaa".to_vec(), b"aaa".to_vec()], vec![], "gpt2").unwrap();
        for n in [1, 2, 3, 5, 127, 128, 1001] {
            let piece = vec![b'a'; n];
            assert_eq!(ids_by_pair_merges(&runs, &piece)[1], ids_by_byte_merge(&runs, &piece), "n={n}");
        }
        let piece: Vec<u8> = b"abcabxababcab".iter().cycle().take(1000).copied().collect();
        assert_eq!(ids_by_pair_merges(&e, &piece)[1], ids_by_byte_merge(&e, &piece));
    }

    #[test]
    fn cached_pieces_give_the_same_ids_across_calls_and_encoders() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let tables = [random_table(&mut rng, 60, false), random_table(&mut rng, 60, true)];
        let words: Vec<String> =
            (0..200).map(|_| (0..rng.random_range(1..20)).map(|_| "abcd".as_bytes()[rng.random_range(0..4)] as char).collect()).collect();
        let text = (0..3000).map(|_| words[rng.random_range(0..words.len())].as_str()).collect::<Vec<_>>().join(" ");
        for round in 0..3 {
            // The two encoders take turns on this thread's cache.
            for e in &tables {
                let mut want = vec![];
                e.pre_tokenizer()
                    .for_each_piece(&text, |piece| match e.ids.get(piece.as_bytes()) {
                        Some(id) => want.push(id),
                        None => want.extend(ids_by_byte_merge(e, piece.as_bytes())),
                    })
                    .unwrap();
                let mut got = vec![];
                e.encode_ordinary_into(&text, &mut got).unwrap();
                assert_eq!(got, want, "round {round}");
            }
        }
    }

    #[test]
    fn packed_and_wide_pair_tables_agree() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut pairs: Vec<(u32, u32, u32)> = (0..5000).map(|r| (rng.random_range(0..3000), rng.random_range(0..3000), r)).collect();
        pairs.sort_by_key(|&(l, r, _)| (l, r));
        pairs.dedup_by_key(|p| (p.0, p.1));
        let packed = PairTable::new(&pairs, 3000);
        let wide = PairTable::new(&pairs, 1 << 22);
        assert!(matches!(packed, PairTable::Packed { .. }) && matches!(wide, PairTable::Wide(_)));
        for &(l, r, rank) in &pairs {
            assert_eq!((packed.get(l, r), wide.get(l, r)), (rank, rank));
        }
        for _ in 0..20000 {
            let (l, r) = (rng.random_range(0..3100), rng.random_range(0..3100));
            assert_eq!(packed.get(l, r), wide.get(l, r));
        }
    }

    #[test]
    fn decode_joins_short_long_and_special_tokens() {
        let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        tokens.push((b"fifteen bytes!!".to_vec(), 256));
        tokens.push((b"sixteen bytes!!!".to_vec(), 257));
        let e = Encoder::new(tokens, vec![], vec![("<|e|>".into(), 1 << 31)], "gpt2").unwrap();
        let ids = [104, 256, 257, 1 << 31, 0, 105];
        assert_eq!(e.decode_bytes(&ids).unwrap(), b"hfifteen bytes!!sixteen bytes!!!<|e|>\x00i");
        assert_eq!(e.decode_bytes(&[104, 258]), Err(258));
        assert_eq!(e.decode_bytes(&[-1]), Err(-1));
    }

    #[test]
    fn byte_without_a_token_is_an_error() {
        let tokens: Vec<(Vec<u8>, u32)> = (0..=254u8).map(|b| (vec![b], b as u32)).collect();
        let e = Encoder::new(tokens, vec![], vec![], "gpt2").unwrap();
        let err = e.encode_piece(b"ab\xff", &mut scratch_for(&e), &mut vec![]).unwrap_err();
        assert!(err.contains("[255]"), "{err}");
    }

    #[test]
    fn dropout_zero_is_encode_and_any_p_round_trips() {
        let e = toy();
        let text = "abcab abc<|e|>xabcabcab";
        let all = vec!["<|e|>".to_string()];
        let plain = e.encode(text, &all, &[]).unwrap();
        assert_eq!(e.encode_with_dropout(text, &all, &[], 0.0, 7).unwrap(), plain);
        for (p, seed) in [(0.1, 1), (0.5, 2), (0.99, 3)] {
            let ids = e.encode_with_dropout(text, &all, &[], p, seed).unwrap();
            let ids64: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
            assert_eq!(e.decode_bytes(&ids64).unwrap(), text.as_bytes());
            assert_eq!(e.encode_with_dropout(text, &all, &[], p, seed).unwrap(), ids);
            assert!(ids.len() >= plain.len());
        }
    }

    #[test]
    fn dropout_near_one_leaves_bytes_and_small_p_matches_heap_mostly() {
        let e = toy();
        let piece: Vec<u8> = b"abcab".iter().cycle().take(500).copied().collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        // p close to 1: almost every merge is dropped
        let bounds = e.merge_dropout(&piece, 0.999, &mut rng);
        assert!(bounds.len() > 450);
        // p tiny: the same parts as the deterministic merge
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        assert_eq!(e.merge_dropout(&piece, 1e-12, &mut rng), e.merge_heap(&piece));
    }

    #[test]
    fn special_tokens_follow_policy() {
        let e = toy();
        let all = vec!["<|e|>".to_string()];
        let err = e.encode("x<|e|>", &[], &all);
        assert!(matches!(err, Err(EncodeError::Disallowed(DisallowedSpecial { offset: 1, .. }))));
        assert!(e.encode("<|e|>", &[], &[]).unwrap().len() > 1);
        assert_eq!(e.encode("abc<|e|>", &all, &[]).unwrap(), [257, 258]);
    }
}

/// Recover a merge table from tokens in rank order (tiktoken's `mergeable_ranks`
/// without the single bytes, sorted by rank): token `r` must be the merge of the
/// two parts that BPE leaves of its bytes when only tokens `0..r` may be formed.
///
/// Returns, for each token, the byte length of the left part of its merge, or
/// `None` when that BPE leaves one part (an earlier token has the same bytes) or
/// more than two (no merge of lower-ranked tokens reaches it): such a table is not
/// one a BPE trainer produces, and rank-ordered encoding cannot tell its merges.
/// The same check tells whether a merge list `(a, b)` in rank order is consistent
/// with rank-of-concatenation encoding: `result[r] == Some(a.len())` for every `r`.
/// Single-byte tokens give `None`. Each token costs O(L^2) for L bytes (L <= a few
/// hundred in real tables); tokens are checked in parallel.
pub fn recover_merges(merged: &[Vec<u8>]) -> Vec<Option<usize>> {
    use rayon::prelude::*;

    let mut ranks: FxHashMap<&[u8], u32> = FxHashMap::default();
    for (r, token) in merged.iter().enumerate() {
        ranks.entry(token.as_slice()).or_insert(r as u32);
    }
    merged.par_iter().enumerate().map(|(r, token)| split_below(&ranks, token, r as u32)).collect()
}

/// Run BPE on `token` with the ranks below `limit`; the left part's length if it
/// ends in exactly two parts. O(L log L): parts in a linked list, candidate pairs
/// in a min-heap keyed (rank, start) with stale entries skipped, as the encoder
/// does (a linear scan per merge was quadratic: minutes on a 1 MiB token).
fn split_below(ranks: &FxHashMap<&[u8], u32>, token: &[u8], limit: u32) -> Option<usize> {
    let n = token.len();
    if n < 2 {
        return None;
    }
    let rank = |bytes: &[u8]| ranks.get(bytes).copied().filter(|&r| r < limit);
    // Part starting at byte i (alive[i]) ends at next[i] (n for the last part).
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
    let mut alive = vec![true; n];
    // (rank, start of left part, end of right part): the pair's bytes are token[start..end].
    let mut heap: BinaryHeap<Reverse<(u32, usize, usize)>> = BinaryHeap::new();
    let push = |heap: &mut BinaryHeap<_>, start: usize, end: usize| {
        if let Some(r) = rank(&token[start..end]) {
            heap.push(Reverse((r, start, end)));
        }
    };
    for i in 0..n - 1 {
        push(&mut heap, i, i + 2);
    }
    let mut parts = n;
    while let Some(Reverse((_, i, end))) = heap.pop() {
        let j = next[i];
        if !alive[i] || j >= n || next[j] != end {
            continue; // stale: one of its parts was merged since
        }
        alive[j] = false;
        next[i] = end;
        if end < n {
            prev[end] = Some(i);
        }
        parts -= 1;
        if let Some(p) = prev[i] {
            push(&mut heap, p, end);
        }
        if end < n {
            push(&mut heap, i, next[end]);
        }
    }
    (parts == 2).then(|| next[0])
}

#[cfg(test)]
mod recover_tests {
    use super::recover_merges;

    fn run(tokens: &[&[u8]]) -> Vec<Option<usize>> {
        recover_merges(&tokens.iter().map(|t| t.to_vec()).collect::<Vec<_>>())
    }

    #[test]
    fn recovers_the_split_that_lower_ranks_give() {
        // "abc": ab (rank 0) merges before bc (rank 1), so abc = ab + c.
        assert_eq!(run(&[b"ab", b"bc", b"abc"]), [Some(1), Some(1), Some(2)]);
        // With bc first, abc = a + bc.
        assert_eq!(run(&[b"bc", b"ab", b"abc"]), [Some(1), Some(1), Some(1)]);
        // Runs of one byte merge left to right: aaa = aa + a; aaaa = aa + aa.
        assert_eq!(run(&[b"aa", b"aaa", b"aaaa"]), [Some(1), Some(2), Some(2)]);
    }

    #[test]
    fn rejects_unreachable_and_duplicate_tokens() {
        // abc with no two-byte token below it: three parts.
        assert_eq!(run(&[b"abc", b"ab"]), [None, Some(1)]);
        // The same bytes twice: the second is formed whole by the first.
        assert_eq!(run(&[b"ab", b"ab"]), [Some(1), None]);
        // A single byte is not a merge.
        assert_eq!(run(&[b"a"]), [None]);
    }

    #[test]
    fn long_tokens_of_one_byte_are_not_quadratic() {
        // Training on a 1 MiB run of one byte learns a^2, a^4, ..., a^(2^20); the
        // old linear scan per merge took minutes on these, this takes milliseconds.
        let tokens: Vec<Vec<u8>> = (1..=20).map(|k| vec![b'a'; 1 << k]).collect();
        let splits = recover_merges(&tokens);
        assert_eq!(splits, (1..=20).map(|k| Some(1usize << (k - 1))).collect::<Vec<_>>());
    }
}

