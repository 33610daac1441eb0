//! SentencePiece's precompiled character map (`NormalizerSpec.precompiled_charsmap`):
//! the normalization rules (nmt_nfkc, nfkc_cf, ...) as a Darts-clone double-array
//! trie from input byte strings to offsets of NUL-terminated replacements.
//!
//! Layout (google/sentencepiece `normalizer.cc`, `EncodePrecompiledCharsMap`):
//! a little-endian u32, the trie's size in bytes, the trie (little-endian u32
//! units), then the replacement strings. A unit (s-yata/darts-clone,
//! `darts.h`): bit 8 "has a leaf", the label in bits 0-7 and 31, the offset
//! in bits 10-30 (shifted left 8 when bit 9 is set), a leaf's value in bits
//! 0-30.
//!
//! Why this reader and not a crate: `yada` has the same layout but indexes
//! without bounds checks, which a corrupt model file would turn into reads
//! out of bounds, and `spm_precompiled` returns no match lengths, which the
//! longest-match rule needs. Every index here is checked: a corrupt trie gives
//! no match or an error, never a read out of bounds.

/// Why a charsmap cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CharsMapError {
    #[error("the precompiled charsmap is shorter than its 4-byte header")]
    NoHeader,
    #[error("the precompiled charsmap's trie ({0} bytes) does not fit in the blob or is not whole 4-byte units")]
    BadTrieSize(usize),
    #[error("the precompiled charsmap's replacement at byte {0} is not UTF-8")]
    NotUtf8(usize),
}

/// The rules of a precompiled charsmap.
#[derive(Clone, Debug)]
pub struct CharsMap {
    units: Vec<u32>,
    /// The replacement strings, each ending in NUL.
    normalized: Vec<u8>,
}

impl CharsMap {
    /// Read a `precompiled_charsmap` blob.
    pub fn new(blob: &[u8]) -> Result<Self, CharsMapError> {
        let header: [u8; 4] = blob
            .get(..4)
            .and_then(|h| h.try_into().ok())
            .ok_or(CharsMapError::NoHeader)?;
        let trie_len = u32::from_le_bytes(header) as usize;
        let rest = &blob[4..];
        if trie_len > rest.len() || !trie_len.is_multiple_of(4) {
            return Err(CharsMapError::BadTrieSize(trie_len));
        }
        // Every replacement must be UTF-8: normalized text is built from them.
        let mut at = 0;
        for part in rest[trie_len..].split(|&b| b == 0) {
            if std::str::from_utf8(part).is_err() {
                return Err(CharsMapError::NotUtf8(at));
            }
            at += part.len() + 1;
        }
        let units = rest[..trie_len]
            .chunks_exact(4)
            .map(|u| u32::from_le_bytes([u[0], u[1], u[2], u[3]]))
            .collect();
        Ok(CharsMap {
            units,
            normalized: rest[trie_len..].to_vec(),
        })
    }

    /// The longest rule matching a prefix of `text`: (bytes of `text` it
    /// consumes, its replacement). SentencePiece's `NormalizePrefix` takes the
    /// longest of the trie's common-prefix matches.
    pub fn longest_prefix(&self, text: &[u8]) -> Option<(usize, &[u8])> {
        let mut best = None;
        let mut node = 0usize;
        let root = *self.units.first()?;
        let mut unit = root;
        for (i, &byte) in text.iter().enumerate() {
            if byte == 0 {
                break;
            }
            node ^= offset(unit) as usize ^ byte as usize;
            unit = *self.units.get(node)?;
            if label(unit) != byte as u32 {
                break;
            }
            if has_leaf(unit) {
                let leaf = *self.units.get(node ^ offset(unit) as usize)?;
                best = Some((i + 1, (leaf & 0x7FFF_FFFF) as usize));
            }
        }
        let (len, start) = best?;
        let tail = self.normalized.get(start..)?;
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        // A corrupt leaf may point inside a character: no rule, then.
        std::str::from_utf8(&tail[..end]).ok()?;
        Some((len, &tail[..end]))
    }
}

impl CharsMap {
    /// The ASCII bytes that rules see: (bit x: some rule's input starts with
    /// byte x; bit x: byte x is in some rule's input after its first byte).
    /// A walk over the trie, each node once (a corrupt trie's cycles are not
    /// followed).
    pub fn ascii_in_rules(&self) -> (u128, u128) {
        let (mut first, mut later) = (0u128, 0u128);
        let Some(&root) = self.units.first() else {
            return (0, 0);
        };
        let mut seen = vec![false; self.units.len()];
        // (node, unit, depth) of nodes whose children are not yet looked at.
        let mut stack = vec![(0usize, root, 0usize)];
        seen[0] = true;
        while let Some((node, unit, depth)) = stack.pop() {
            for byte in 1..=255u8 {
                let child = node ^ offset(unit) as usize ^ byte as usize;
                let Some(&next) = self.units.get(child) else {
                    continue;
                };
                if label(next) != byte as u32 || seen[child] {
                    continue;
                }
                seen[child] = true;
                if byte < 0x80 {
                    if depth == 0 {
                        first |= 1 << byte;
                    } else {
                        later |= 1 << byte;
                    }
                }
                stack.push((child, next, depth + 1));
            }
        }
        (first, later)
    }
}

#[inline]
fn has_leaf(unit: u32) -> bool {
    (unit >> 8) & 1 == 1
}

#[inline]
fn label(unit: u32) -> u32 {
    unit & ((1 << 31) | 0xFF)
}

#[inline]
fn offset(unit: u32) -> u32 {
    (unit >> 10) << ((unit & (1 << 9)) >> 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_blobs_are_errors_or_misses_not_panics() {
        assert_eq!(CharsMap::new(b"ab").unwrap_err(), CharsMapError::NoHeader);
        assert!(matches!(
            CharsMap::new(&[9, 0, 0, 0, 1]),
            Err(CharsMapError::BadTrieSize(9))
        ));
        // A trie whose units point anywhere: lookups miss, never read out of bounds.
        let mut blob = 8u32.to_le_bytes().to_vec();
        blob.extend_from_slice(&u32::MAX.to_le_bytes());
        blob.extend_from_slice(&0x0000_0161u32.to_le_bytes());
        blob.extend_from_slice(b"x\0");
        let map = CharsMap::new(&blob).unwrap();
        for text in [&b"a"[..], b"abc", b"\xff\xfe", b""] {
            let _ = map.longest_prefix(text);
        }
    }
}
