//! The tables the encoder looks tokens and pairs up in: token bytes -> id
//! (`TokenIds`), and (left part, right part) -> rank (`PairRanks`, over the
//! packed open-addressing `PairTable`).

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::memory::ZeroedSlice;
use crate::shortkey::BytesMap;

/// Rank of a pair that does not merge.
pub(crate) const NO_RANK: u32 = u32::MAX;
/// Id of a byte (or rank) that has no token.
pub(super) const NO_ID: u32 = u32::MAX;

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
pub(super) struct PairRanks {
    /// Byte -> id of its single-byte token (NO_ID if it has none).
    pub(super) byte_ids: [u32; 256],
    /// `(first << 8) | second` -> rank of that two-byte token: the first round
    /// of every piece, looked up without hashing.
    byte_pairs: Box<[u32]>,
    /// Pairs with a part of two bytes or more (pairs of single bytes only meet
    /// in the first round).
    pub(super) pairs: PairTable,
    /// One bit per `PAIR_FILTER_BITS`-bit hash of a pair in `pairs`: a clear
    /// bit proves a pair does not merge without touching `pairs`.
    pair_filter: Box<[u64]>,
    /// Rank -> id of the merged token.
    merged_ids: Vec<u32>,
}

impl PairRanks {
    /// The tables of `merged` (merge results in rank order; bytes merged
    /// twice keep their first rank) over the vocabulary `ids`. The splits of
    /// the tokens are enumerated on the current rayon pool.
    pub(super) fn new(ids: &TokenIds, merged: &[&[u8]]) -> Self {
        let mut byte_ids = [NO_ID; 256];
        for b in 0..=255u8 {
            if let Some(id) = ids.get(&[b][..]) {
                byte_ids[b as usize] = id;
            }
        }
        // A part is a single byte with a token, or bytes with a rank and an id
        // (a ranked token without an id can never be output, so it never merges).
        let codes = PartCodes::new(ids, merged, &byte_ids);
        // A split needs a part on each side, so only lengths that some part has
        // are tried: trying all L - 1 splits of a token, each hashing up to L
        // bytes, is quadratic, and a vocabulary trained on a long run of one
        // character has tokens of millions of bytes (lengths 1, 2, 4, ...).
        let mut part_lengths: Vec<usize> = codes.parts.iter().map(|(t, _)| t.len()).collect();
        part_lengths.push(1);
        part_lengths.sort_unstable();
        part_lengths.dedup();
        let is_part_length: FxHashSet<usize> = part_lengths.iter().copied().collect();
        let mut byte_pairs = vec![NO_RANK; 1 << 16].into_boxed_slice();
        for &(token, merged) in codes.parts.iter().filter(|(t, _)| t.len() == 2) {
            if codes.split(token, 1).is_some() {
                byte_pairs[(token[0] as usize) << 8 | token[1] as usize] = merged - 256;
            }
        }
        let push_splits = |mut found: Vec<(u32, u32, u32)>, &(token, merged): &(&[u8], u32)| {
            for n in part_lengths
                .iter()
                .copied()
                .take_while(|&n| n < token.len())
            {
                if is_part_length.contains(&(token.len() - n)) {
                    if let Some((left, right)) = codes.split(token, n) {
                        found.push((left, right, merged - 256));
                    }
                }
            }
            found
        };
        let pairs = codes
            .parts
            .par_iter()
            .with_min_len(4096)
            .filter(|(t, _)| t.len() > 2)
            .fold(Vec::new, push_splits)
            .reduce(Vec::new, |mut all, more| {
                all.extend(more);
                all
            });
        let mut pair_filter = vec![0u64; (1 << PAIR_FILTER_BITS) / 64].into_boxed_slice();
        for &(left, right, _) in &pairs {
            let bit = pair_filter_bit(left, right);
            pair_filter[bit / 64] |= 1 << (bit % 64);
        }
        PairRanks {
            byte_ids,
            byte_pairs,
            pairs: PairTable::new(&pairs, merged.len() + 256),
            pair_filter,
            merged_ids: codes.merged_ids,
        }
    }

    /// False when the parts `left` and `right` certainly do not merge (one
    /// read of a 256 KiB bitmap); true when they may.
    #[inline]
    pub(super) fn may_merge(&self, left: u32, right: u32) -> bool {
        let bit = pair_filter_bit(left, right);
        self.pair_filter[bit / 64] & 1 << (bit % 64) != 0
    }

    /// Rank of merging the parts `left` and `right` (NO_RANK: they do not merge).
    #[inline]
    pub(super) fn rank(&self, left: u32, right: u32) -> u32 {
        self.pairs.get(left, right)
    }

    #[inline]
    pub(super) fn byte_pair_rank(&self, first: u8, second: u8) -> u32 {
        self.byte_pairs[(first as usize) << 8 | second as usize]
    }

    /// Token id of a part.
    #[inline]
    pub(super) fn id(&self, code: u32) -> u32 {
        if code < 256 {
            self.byte_ids[code as usize]
        } else {
            self.merged_ids[(code - 256) as usize]
        }
    }
}

/// Bits of the pair filter's hash: 2^21 bits, 256 KiB, which stays in L2.
/// With o200k's 442k pairs ~19% of the pairs that do not merge still read the
/// table; in a first call ~40% of a merge's rank lookups are such pairs, and
/// each is a miss to a table of megabytes (8 MiB for o200k).
const PAIR_FILTER_BITS: u32 = 21;

/// The filter bit of the pair (`left`, `right`).
#[inline]
fn pair_filter_bit(left: u32, right: u32) -> usize {
    (((left as u64) << 32 | right as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        >> (64 - PAIR_FILTER_BITS)) as usize
}

/// The code of every part (see `PairRanks`): the merged tokens, keyed by
/// `piece_key` when short (hashing one u128, no byte compare: building the
/// tables of o200k tries ~1.5M splits).
struct PartCodes<'a> {
    byte_ids: &'a [u32; 256],
    codes: BytesMap<'a, u32>,
    /// Each merged token that is a part, with its code, in rank order.
    parts: Vec<(&'a [u8], u32)>,
    /// Rank -> id of the merged token.
    merged_ids: Vec<u32>,
}

impl<'a> PartCodes<'a> {
    fn new(ids: &TokenIds, merged: &[&'a [u8]], byte_ids: &'a [u32; 256]) -> Self {
        let mut codes = PartCodes {
            byte_ids,
            codes: BytesMap::with_capacity(merged.len()),
            parts: Vec::with_capacity(merged.len()),
            merged_ids: vec![NO_ID; merged.len()],
        };
        for (rank, &token) in merged.iter().enumerate() {
            let code = 256 + rank as u32;
            if token.is_empty() || !codes.codes.insert_first(token, code) {
                continue;
            }
            match ids.get(token) {
                Some(id) => {
                    codes.merged_ids[rank] = id;
                    codes.parts.push((token, code));
                }
                // Not a part: dropped again, so lookups of these bytes miss.
                None => codes.codes.remove(token),
            }
        }
        codes
    }

    /// The code of the single byte `b`, if it has a token.
    fn byte_code(&self, b: u8) -> Option<u32> {
        (self.byte_ids[b as usize] != NO_ID).then_some(b as u32)
    }

    /// The code of the part `bytes`, if it is one.
    fn code(&self, bytes: &[u8]) -> Option<u32> {
        match bytes {
            [b] => self.byte_code(*b),
            _ => self.codes.get(bytes),
        }
    }

    /// The codes of `token[..n]` and `token[n..]`, if both are parts.
    #[inline]
    fn split(&self, token: &[u8], n: usize) -> Option<(u32, u32)> {
        if token.len() > CACHED_PIECE {
            return Some((self.code(&token[..n])?, self.code(&token[n..])?));
        }
        let (left, right) = crate::shortkey::split(piece_key(token), n);
        let code_of = |key: u128, len: usize, first: u8| match len {
            1 => self.byte_code(first),
            _ => self.codes.get_short(key),
        };
        Some((
            code_of(left, n, token[0])?,
            code_of(right, token.len() - n, token[n])?,
        ))
    }
}

/// Bits of a part code in a packed pair.
pub(super) const CODE_BITS: u32 = 21;
const CODE_MASK: u64 = (1 << CODE_BITS) - 1;
/// A free slot of the packed table (no pair packs to it: codes stay below 2**21 - 1).
pub(super) const FREE: u64 = u64::MAX;
/// The (left, right) bits of a packed slot.
pub(super) const PACKED_KEY_MASK: u64 = CODE_MASK << CODE_BITS | CODE_MASK;

/// (left code, right code) -> rank. Packed: an open-addressing table whose slot
/// is one u64, left | right << 21 | rank << 42, so a lookup reads one slot (one
/// cache miss at most, where a general hash map reads its control bytes and
/// then the entry), at most half full so that misses stop early. Used when codes
/// fit in 21 bits (fewer than two million merges); a hash map otherwise.
pub(crate) enum PairTable {
    Packed { slots: ZeroedSlice<u64>, shift: u32 },
    Wide(FxHashMap<u64, u32>),
}

impl PairTable {
    pub(crate) fn new(pairs: &[(u32, u32, u32)], n_codes: usize) -> Self {
        if n_codes as u64 >= CODE_MASK {
            return PairTable::Wide(
                pairs
                    .iter()
                    .map(|&(l, r, rank)| ((l as u64) << 32 | r as u64, rank))
                    .collect(),
            );
        }
        let capacity = (2 * pairs.len()).next_power_of_two().max(16);
        let shift = 64 - capacity.trailing_zeros();
        // On huge pages: a cold call's pair lookups land all over a table
        // of megabytes (cl100k: 4 MiB), a TLB miss each on 4 KiB pages.
        // SAFETY: a u64 may be zero; every slot is then set to FREE.
        let mut slots = unsafe { ZeroedSlice::<u64>::new(capacity) };
        slots.fill(FREE);
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
    pub(crate) fn get(&self, left: u32, right: u32) -> u32 {
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
            PairTable::Wide(map) => map
                .get(&((left as u64) << 32 | right as u64))
                .copied()
                .unwrap_or(NO_RANK),
        }
    }
}

#[inline]
pub(super) fn packed_key(left: u32, right: u32) -> u64 {
    left as u64 | (right as u64) << CODE_BITS
}

#[inline]
pub(super) fn packed_slot(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

/// Pieces of at most this many bytes go through the piece cache.
pub(super) use crate::shortkey::MAX_SHORT as CACHED_PIECE;
pub(super) use crate::shortkey::{load as load_key, pack as piece_key};

/// Token bytes -> id. Tokens of at most `CACHED_PIECE` bytes (nearly all)
/// are keyed by `piece_key`: a lookup probes one table with no heap-allocated
/// key to compare (the byte-slice map took three cache misses and a memcmp
/// call, a large share of encoding o200k prose, paid by every piece-cache miss).
/// Two-byte tokens are also in a table indexed by their bytes.
pub(super) struct TokenIds {
    short: FxHashMap<u128, u32>,
    /// One bit per `SHORT_FILTER_BITS`-bit hash of a short token's key: a
    /// clear bit proves a piece is not a token without touching `short`.
    short_filter: Box<[u64]>,
    long: FxHashMap<Vec<u8>, u32>,
    /// Byte -> id of that one-byte token, or NO_ID.
    one_byte: [u32; 256],
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
    /// Room for `n` tokens.
    pub(super) fn with_capacity(n: usize) -> Self {
        TokenIds {
            short: FxHashMap::with_capacity_and_hasher(n, Default::default()),
            short_filter: vec![0; (1 << SHORT_FILTER_BITS) / 64].into_boxed_slice(),
            long: FxHashMap::default(),
            one_byte: [NO_ID; 256],
            two_byte: vec![NO_ID; 1 << 16].into_boxed_slice(),
        }
    }

    /// Add a token unless its bytes already have an id (the first id wins).
    pub(super) fn insert(&mut self, bytes: &[u8], id: u32) {
        if let [byte] = bytes[..] {
            let slot = &mut self.one_byte[byte as usize];
            if *slot == NO_ID {
                *slot = id;
            }
        }
        if let [first, second] = bytes[..] {
            let slot = &mut self.two_byte[(first as usize) << 8 | second as usize];
            if *slot == NO_ID {
                *slot = id;
            }
        }
        if bytes.len() <= CACHED_PIECE {
            let key = piece_key(bytes);
            let bit = short_filter_bit(key);
            self.short_filter[bit / 64] |= 1 << (bit % 64);
            self.short.entry(key).or_insert(id);
        } else {
            self.long.entry(bytes.to_vec()).or_insert(id);
        }
    }

    #[inline]
    pub(super) fn get(&self, bytes: &[u8]) -> Option<u32> {
        match *bytes {
            [byte] => Some(self.one_byte[byte as usize]).filter(|&id| id != NO_ID),
            [first, second] => Some(self.two_byte[(first as usize) << 8 | second as usize])
                .filter(|&id| id != NO_ID),
            _ if bytes.len() <= CACHED_PIECE => self.get_short(piece_key(bytes)),
            _ => self.long.get(bytes).copied(),
        }
    }

    /// The id of the short token of `piece_key` `key`.
    #[inline]
    pub(super) fn get_short(&self, key: u128) -> Option<u32> {
        let bit = short_filter_bit(key);
        if self.short_filter[bit / 64] & 1 << (bit % 64) == 0 {
            return None;
        }
        self.short.get(&key).copied()
    }
}
