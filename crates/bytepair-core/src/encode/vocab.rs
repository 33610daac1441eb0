//! The vocabulary's tables, which depend on the tokens and merges only (not on
//! the pattern or the special tokens): built once, and while the caller is
//! still reading the rest of a tokenizer's files.

use std::sync::OnceLock;

use rustc_hash::{FxHashMap, FxHashSet};

use super::decode::Decoder;
use super::superwords::Seams;
use super::tables::{PairRanks, TokenIds};
use super::EncoderError;
use crate::memory::PackedBytes;

/// Token bytes -> id, id -> bytes and the merge table of a vocabulary.
pub struct VocabTables {
    /// Token bytes -> id.
    pub(super) ids: TokenIds,
    /// Bytes of a merged token -> merge rank (lower merges first); BPE-dropout
    /// merges on bytes with it.
    pub(super) ranks: ByteRanks,
    /// The same ranks keyed by pairs of parts, for the normal merge loop.
    pub(super) pair_ranks: PairRanks,
    /// Id -> bytes, for decoding.
    pub(super) decoder: Decoder,
    /// What merging a piece word by word needs (`superwords`), made on first
    /// use: only pieces that hold a space after text (SuperBPE's) take it.
    seams: OnceLock<Seams>,
}

impl VocabTables {
    /// The tables of `tokens` (every (bytes, id) except special tokens; the
    /// first id given for some bytes is the one encoding outputs) and `merged`
    /// (the bytes of each merge result in rank order, rank = index). The splits
    /// of the merged tokens are enumerated on the current rayon pool.
    ///
    /// Errors: two tokens with one id.
    pub fn new(
        tokens: &[(impl AsRef<[u8]>, u32)],
        merged: Vec<Vec<u8>>,
    ) -> Result<Self, EncoderError> {
        let merged: Vec<&[u8]> = merged.iter().map(Vec::as_slice).collect();
        Self::of_slices(tokens, &merged)
    }

    /// `new` with the merged tokens borrowed (no copy of each).
    pub(crate) fn of_slices(
        tokens: &[(impl AsRef<[u8]>, u32)],
        merged: &[&[u8]],
    ) -> Result<Self, EncoderError> {
        let mut decoder = Decoder::with_capacity(tokens.len());
        let mut ids = TokenIds::with_capacity(tokens.len());
        for (bytes, id) in tokens {
            if !decoder.insert(*id, bytes.as_ref()) {
                return Err(EncoderError::DuplicateId(*id));
            }
            ids.insert(bytes.as_ref(), *id);
        }
        let pair_ranks = PairRanks::new(&ids, merged);
        // PairRanks' maps were freed on pool threads: give the memory back
        // rather than leave it in arenas the encoding thread never reuses.
        crate::memory::release_freed_memory();
        Ok(VocabTables {
            ids,
            ranks: ByteRanks {
                merged: packed(merged),
                map: OnceLock::new(),
            },
            pair_ranks,
            decoder,
            seams: OnceLock::new(),
        })
    }

    /// The tables of merging word by word, made on first use.
    pub(super) fn seams(&self) -> &Seams {
        self.seams
            .get_or_init(|| Seams::new(&self.pair_ranks, &self.ranks.merged))
    }

    /// Whether `seams` was built (tests: plain pieces never build it).
    #[cfg(test)]
    pub(super) fn word_tables_built(&self) -> bool {
        self.seams.get().is_some()
    }
}

/// `strings` in one buffer.
fn packed(strings: &[&[u8]]) -> PackedBytes {
    let mut packed = PackedBytes::with_capacity(strings.len());
    for s in strings {
        packed.push(s);
    }
    packed.shrink_to_fit();
    packed
}

/// The merge table by bytes: merged token -> rank (the lowest, for bytes
/// merged twice), made on first use: only BPE-dropout and pre-tokens of 4 GiB
/// merge on bytes, and hashing every token took a tenth of loading o200k.
pub(super) struct ByteRanks {
    /// The merged tokens in rank order (packed: one buffer, not a Vec each).
    merged: PackedBytes,
    map: OnceLock<FxHashMap<Box<[u8]>, u32>>,
}

impl ByteRanks {
    pub(super) fn get(&self, bytes: &[u8]) -> Option<u32> {
        let map = self.map.get_or_init(|| {
            let mut map =
                FxHashMap::with_capacity_and_hasher(self.merged.len(), Default::default());
            for (rank, token) in self.merged.iter().enumerate() {
                map.entry(token.into()).or_insert(rank as u32);
            }
            map
        });
        map.get(bytes).copied()
    }
}

/// Which special tokens are ordinary tokens too, one flag per entry of
/// `specials` (their bytes): those that are one byte, or the bytes a merge
/// makes (`merged`), and that no ordinary token (`ordinary`) holds already. Such
/// a token has one id, produced by merges and by the special-token match alike:
/// HF's added token listed in `model.vocab`, tiktoken's special token at the
/// rank of its bytes. (`Tokenizer._shared_special_ids` in Python is the same rule.)
pub fn specials_that_are_ordinary(
    ordinary: &[(&[u8], u32)],
    specials: &[&[u8]],
    merged: &[Vec<u8>],
) -> Vec<bool> {
    let made: FxHashSet<&[u8]> = merged.iter().map(Vec::as_slice).collect();
    let held: FxHashSet<&[u8]> = ordinary.iter().map(|&(b, _)| b).collect();
    specials
        .iter()
        .map(|&b| (b.len() == 1 || made.contains(b)) && !held.contains(b))
        .collect()
}

#[cfg(test)]
mod shared_tests {
    use super::*;

    #[test]
    fn a_special_token_is_ordinary_when_a_byte_or_a_merge_makes_it_and_no_token_has_it() {
        let ordinary: Vec<(&[u8], u32)> = vec![(b"a", 97), (b"b", 98), (b"ab", 256)];
        let merged = vec![b"ab".to_vec(), b"<s>".to_vec()];
        let specials: Vec<&[u8]> = vec![b"<s>", b"c", b"ab", b"<|eot|>"];
        assert_eq!(
            specials_that_are_ordinary(&ordinary, &specials, &merged),
            // merged, a byte, held by id 256 already, made by no merge
            vec![true, true, false, false]
        );
    }
}
