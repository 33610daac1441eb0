//! Short byte strings (at most 15 bytes: nearly every pre-token) as one
//! 128-bit number: the bytes little-endian, the length in the top byte. A
//! table keyed by it compares keys with two integer compares instead of a
//! pointer chase and a `memcmp`; both the piece cache of the encoder and the
//! word tally of counting use it.

use rustc_hash::FxHashMap;

/// A map keyed by borrowed byte strings that hashes the short ones (nearly
/// every token) as their `pack` key: no pointer chase and no `memcmp` per
/// probe (loading o200k makes ~2M lookups in maps of 200k tokens).
pub(crate) struct BytesMap<'a, V> {
    short: FxHashMap<u128, V>,
    long: FxHashMap<&'a [u8], V>,
}

impl<'a, V: Copy> BytesMap<'a, V> {
    /// Room for `n` short strings.
    pub(crate) fn with_capacity(n: usize) -> Self {
        BytesMap {
            short: FxHashMap::with_capacity_and_hasher(n, Default::default()),
            long: FxHashMap::default(),
        }
    }

    /// Map `bytes` (not empty) to `value` unless it is mapped; true if it was not.
    pub(crate) fn insert_first(&mut self, bytes: &'a [u8], value: V) -> bool {
        if self.get(bytes).is_some() {
            return false;
        }
        if bytes.len() <= MAX_SHORT {
            self.short.insert(pack(bytes), value);
        } else {
            self.long.insert(bytes, value);
        }
        true
    }

    pub(crate) fn remove(&mut self, bytes: &[u8]) {
        if bytes.len() <= MAX_SHORT {
            self.short.remove(&pack(bytes));
        } else {
            self.long.remove(bytes);
        }
    }

    #[inline]
    pub(crate) fn get(&self, bytes: &[u8]) -> Option<V> {
        match bytes.len() {
            0 => None,
            n if n <= MAX_SHORT => self.short.get(&pack(bytes)).copied(),
            _ => self.long.get(bytes).copied(),
        }
    }

    /// The value of the short string whose key is `key`.
    #[inline]
    pub(crate) fn get_short(&self, key: u128) -> Option<V> {
        self.short.get(&key).copied()
    }
}

/// The longest byte string that has a key.
pub(crate) const MAX_SHORT: usize = 15;

/// The key of `bytes` (at most `MAX_SHORT` of them). Never 0: 0 marks an
/// empty slot, and the empty string has no key.
#[inline]
pub(crate) fn pack(bytes: &[u8]) -> u128 {
    let len = bytes.len();
    assert!(len <= MAX_SHORT);
    // Two overlapping fixed-size loads per size class instead of a memcpy
    // call of a variable length (most of the cost of a short-key lookup).
    let body = match len {
        8.. => {
            let lo = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            let hi = u64::from_le_bytes(bytes[len - 8..].try_into().expect("8 bytes"));
            lo as u128 | (hi.checked_shr(8 * (16 - len) as u32).unwrap_or(0) as u128) << 64
        }
        4.. => {
            let lo = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
            let hi = u32::from_le_bytes(bytes[len - 4..].try_into().expect("4 bytes"));
            (lo as u64 | (hi as u64) << (8 * (len - 4))) as u128
        }
        _ => bytes
            .iter()
            .rev()
            .fold(0u128, |key, &b| key << 8 | b as u128),
    };
    body | (len as u128) << 120
}

/// `pack(&text[start..start + len])` with one 16-byte load and a mask where
/// the text has 16 bytes from `start`.
#[inline]
pub(crate) fn load(text: &[u8], start: usize, len: usize) -> u128 {
    load_body(text, start, len) | (len as u128) << 120
}

/// The bytes of `text[start..start + len]` (at most `MAX_SHORT` of them),
/// little-endian, without the length: `load` before its top byte is set.
#[inline]
pub(crate) fn load_body(text: &[u8], start: usize, len: usize) -> u128 {
    debug_assert!(len <= MAX_SHORT && start + len <= text.len());
    match text.get(start..start + 16) {
        Some(window) => u128::from_le_bytes(window.try_into().expect("16 bytes")) & LOW_BYTES[len],
        None => pack(&text[start..start + len]) & LOW_BYTES[len],
    }
}

/// The keys of the first `n` bytes and of the rest, for the key of a byte
/// string longer than `n` (`n` > 0).
#[inline]
pub(crate) fn split(key: u128, n: usize) -> (u128, u128) {
    let len = (key >> 120) as usize;
    debug_assert!(0 < n && n < len);
    let body = key & LOW_BYTES[len];
    (
        (body & LOW_BYTES[n]) | (n as u128) << 120,
        body >> (8 * n) | ((len - n) as u128) << 120,
    )
}

/// The bytes of a key made by `pack` or `load`.
pub(crate) fn unpack(key: u128) -> Vec<u8> {
    let len = (key >> 120) as usize;
    key.to_le_bytes()[..len].to_vec()
}

/// The longest byte string that has a two-part key (`load_mid`).
pub(crate) const MAX_MID: usize = 31;

/// The key of `text[start..start + len]`, `MAX_SHORT` < len <= `MAX_MID`:
/// the first 16 bytes, then the rest with the length in the top byte (so the
/// second half is never 0).
#[inline]
pub(crate) fn load_mid(text: &[u8], start: usize, len: usize) -> [u128; 2] {
    debug_assert!(len > MAX_SHORT && len <= MAX_MID && start + len <= text.len());
    let first = u128::from_le_bytes(text[start..start + 16].try_into().expect("16 bytes"));
    let rest = len - 16;
    let tail = match text.get(start + 16..start + 32) {
        Some(window) => u128::from_le_bytes(window.try_into().expect("16 bytes")) & LOW_BYTES[rest],
        None => {
            let mut buf = [0u8; 16];
            buf[..rest].copy_from_slice(&text[start + 16..start + len]);
            u128::from_le_bytes(buf)
        }
    };
    [first, tail | (len as u128) << 120]
}

/// `hash` of a two-part key.
#[inline]
pub(crate) fn hash_mid(key: [u128; 2]) -> u64 {
    hash(key[0] ^ key[1].rotate_left(61))
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
        for len in 1..=MAX_SHORT {
            let bytes: Vec<u8> = (1..=len as u8).map(|b| b.wrapping_mul(97)).collect();
            let mut buf = [0u8; 16];
            buf[..len].copy_from_slice(&bytes);
            buf[15] = len as u8;
            assert_eq!(pack(&bytes), u128::from_le_bytes(buf), "{len} bytes");
        }
    }

    #[test]
    fn split_keys_are_the_keys_of_the_parts() {
        let text = b"ab\0cdefghijklmn";
        for len in 2..=MAX_SHORT {
            for n in 1..len {
                assert_eq!(
                    split(pack(&text[..len]), n),
                    (pack(&text[..n]), pack(&text[n..len]))
                );
            }
        }
    }

    #[test]
    fn two_part_keys_hold_every_byte_and_the_length() {
        let text: Vec<u8> = (0..80u8)
            .map(|b| b.wrapping_mul(37))
            .chain([0, 0])
            .collect();
        for start in 0..text.len() {
            for len in MAX_SHORT + 1..=MAX_MID.min(text.len() - start) {
                let key = load_mid(&text, start, len);
                let bytes: Vec<u8> = key[0]
                    .to_le_bytes()
                    .into_iter()
                    .chain(key[1].to_le_bytes())
                    .collect();
                assert_eq!(&bytes[..len], &text[start..start + len]);
                assert!(bytes[len..31].iter().all(|&b| b == 0) && bytes[31] as usize == len);
            }
        }
        assert_ne!(
            load_mid(b"0123456789abcdefg\0", 0, 17),
            load_mid(b"0123456789abcdefg\0", 0, 18)
        );
    }
}
