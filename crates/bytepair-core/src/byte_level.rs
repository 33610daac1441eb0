//! GPT-2's printable form of byte-level tokens: `bytes_to_unicode` of
//! openai/gpt-2 (`src/encoder.py`) maps each of the 256 bytes to one visible
//! character, the printable Latin-1 bytes to themselves and the other 68 to
//! U+0100 and up in byte order, so `b" the"` is stored as `"Ġthe"` in GPT-2's
//! `vocab.json`/`merges.txt` and HF's byte-level `tokenizer.json`.
//!
//! The Python package's `formats/bytelevel.py` builds the same table from the
//! same definition as the independent reference; a test of the package checks
//! the two agree on all 256 bytes.

/// Bytes that stand for themselves: `!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`.
const fn is_printable(b: u8) -> bool {
    matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// Byte -> the code point of its character.
const BYTE_TO_CHAR: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut extra = 0;
    let mut b = 0;
    while b < 256 {
        table[b] = if is_printable(b as u8) {
            b as u16
        } else {
            extra += 1;
            255 + extra
        };
        b += 1;
    }
    table
};

/// One past the largest code point of the table (U+0143).
const CHARS: usize = 324;

/// Code point -> its byte, or -1 for a character that is not byte-level.
const CHAR_TO_BYTE: [i16; CHARS] = {
    let mut table = [-1i16; CHARS];
    let mut b = 0;
    while b < 256 {
        table[BYTE_TO_CHAR[b] as usize] = b as i16;
        b += 1;
    }
    table
};

/// The character that stands for byte `b`.
///
/// ```
/// use bytepair_core::byte_level::byte_to_char;
/// assert_eq!((byte_to_char(b' '), byte_to_char(b'a'), byte_to_char(b'\n')), ('Ġ', 'a', 'Ċ'));
/// ```
pub fn byte_to_char(b: u8) -> char {
    char::from_u32(u32::from(BYTE_TO_CHAR[b as usize])).expect("code points below U+0144")
}

/// The byte that character `c` stands for, if it is one of the 256.
pub fn char_to_byte(c: char) -> Option<u8> {
    let b = *CHAR_TO_BYTE.get(c as usize)?;
    u8::try_from(b).ok()
}

/// A character that is not one of the 256 byte-level characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a byte-level character")]
pub struct NotByteLevel(pub char);

/// The bytes of the byte-level string `text`, written over `out` (cleared
/// first; a buffer reused over many tokens).
///
/// ```
/// use bytepair_core::byte_level::{decode_into, NotByteLevel};
/// let mut out = Vec::new();
/// decode_into("Ġthe", &mut out).unwrap();
/// assert_eq!(out, b" the");
/// assert_eq!(decode_into("a b", &mut out), Err(NotByteLevel(' ')));
/// ```
pub fn decode_into(text: &str, out: &mut Vec<u8>) -> Result<(), NotByteLevel> {
    out.clear();
    for c in text.chars() {
        out.push(char_to_byte(c).ok_or(NotByteLevel(c))?);
    }
    Ok(())
}

/// The byte-level string of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| byte_to_char(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_gpt2s() {
        // GPT-2's definition, written out as its encoder.py does.
        let mut bs: Vec<u32> = (0x21..=0x7E)
            .chain(0xA1..=0xAC)
            .chain(0xAE..=0xFF)
            .collect();
        let mut cs = bs.clone();
        let mut n = 0;
        for b in 0..256 {
            if !bs.contains(&b) {
                bs.push(b);
                cs.push(256 + n);
                n += 1;
            }
        }
        for (b, c) in bs.into_iter().zip(cs) {
            let c = char::from_u32(c).unwrap();
            assert_eq!(byte_to_char(b as u8), c, "byte {b}");
            assert_eq!(char_to_byte(c), Some(b as u8));
        }
    }

    #[test]
    fn every_byte_round_trips_and_nothing_else_decodes() {
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        decode_into(&encode(&all), &mut out).unwrap();
        assert_eq!(out, all);
        let others = (0..0x400u32)
            .filter_map(char::from_u32)
            .filter(|&c| char_to_byte(c).is_some());
        assert_eq!(others.count(), 256);
        for c in [' ', '\u{ad}', '\u{144}', '\u{4e16}', '\0'] {
            assert_eq!(char_to_byte(c), None, "{c:?}");
        }
    }
}
