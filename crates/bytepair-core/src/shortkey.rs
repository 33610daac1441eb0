//! Short byte strings (at most 15 bytes: nearly every pre-token) as one
//! 128-bit number: the bytes little-endian, the length in the top byte. A
//! table keyed by it compares keys with two integer compares instead of a
//! pointer chase and a `memcmp`; both the piece cache of the encoder and the
//! word tally of counting use it.

/// The longest byte string that has a key.
pub(crate) const MAX_SHORT: usize = 15;

/// The key of `bytes` (at most `MAX_SHORT` of them). Never 0: 0 marks an
/// empty slot, and the empty string has no key.
#[inline]
pub(crate) fn pack(bytes: &[u8]) -> u128 {
    debug_assert!(!bytes.is_empty() && bytes.len() <= MAX_SHORT);
    let mut buf = [0u8; 16];
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[15] = bytes.len() as u8;
    u128::from_le_bytes(buf)
}

/// `pack(&text[start..start + len])` with one 16-byte load and a mask where
/// the text has 16 bytes from `start`.
#[inline]
pub(crate) fn load(text: &[u8], start: usize, len: usize) -> u128 {
    debug_assert!(len <= MAX_SHORT && start + len <= text.len());
    let raw = match text.get(start..start + 16) {
        Some(window) => u128::from_le_bytes(window.try_into().expect("16 bytes")),
        None => return pack(&text[start..start + len]),
    };
    (raw & LOW_BYTES[len]) | (len as u128) << 120
}

/// The bytes of a key made by `pack` or `load`.
pub(crate) fn unpack(key: u128) -> Vec<u8> {
    let len = (key >> 120) as usize;
    key.to_le_bytes()[..len].to_vec()
}

/// A hash of a key whose top bits are well mixed (they pick a home slot).
#[inline]
pub(crate) fn hash(key: u128) -> u64 {
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(23);
    folded.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// `LOW_BYTES[n]`: the low `n` bytes of a u128 (a table: a 128-bit shift by a
/// variable amount is a dozen instructions).
static LOW_BYTES: [u128; 16] = {
    let mut masks = [0u128; 16];
    let mut n = 1;
    while n < 16 {
        masks[n] = (1u128 << (8 * n)) - 1;
        n += 1;
    }
    masks
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_differ_by_length() {
        let text = b"ab\0\0cdefghijklmnopqrstuvwxyz";
        for start in 0..text.len() {
            for len in 1..=MAX_SHORT.min(text.len() - start) {
                let bytes = &text[start..start + len];
                let key = load(text, start, len);
                assert_eq!(key, pack(bytes));
                assert_eq!(unpack(key), bytes);
            }
        }
        assert_ne!(pack(b"a"), pack(b"a\0"));
    }
}
