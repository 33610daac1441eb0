//! Classifying the non-ASCII characters of a block: each is decoded and looked
//! up in the Unicode table, and all its bytes get its class, so the rules read
//! it like an ASCII character of that class (a class changes only at the
//! first byte of a character). Characters a preset's rules cannot treat
//! byte-wise stay `nonascii` (unsure): whitespace (its run's last character
//! would be marked at its last byte), numbers where the preset counts digits,
//! o200k's marks (in its word classes, yet not `\p{L}`, so also in the
//! prefix class before a word), and `ſ`, which case-folds into a contraction's `s`.

use super::classify::Classes;
use crate::pretokenize::unicode::{char_at, flags, LETTER, LOWER, NUMBER, SPACE, UPPER};
use crate::pretokenize::Preset;

/// The class of a non-ASCII character for `preset`'s rules.
enum Wide {
    Letter { upper: bool, caseless: bool },
    Digit,
    Other,
    Unsure,
}

fn wide_class(preset: Preset, c: char) -> Wide {
    let f = flags(c);
    if f & SPACE != 0 || c == '\u{17f}' {
        return Wide::Unsure;
    }
    if f & NUMBER != 0 {
        return if preset == Preset::Gpt2 { Wide::Digit } else { Wide::Unsure };
    }
    if f & LETTER != 0 {
        return Wide::Letter { upper: f & UPPER != 0, caseless: f & (UPPER | LOWER) == 0 };
    }
    if preset == Preset::O200k && f & crate::pretokenize::unicode::MARK != 0 {
        return Wide::Unsure;
    }
    Wide::Other
}

/// Classify the non-ASCII characters of the block at `start` of `text` into
/// `classes` (whose `nonascii` marks their bytes), including the tail of a
/// character begun in the previous block.
pub(super) fn classify_wide(preset: Preset, text: &[u8], start: usize, classes: &mut Classes) {
    let mut bits = classes.nonascii;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        // The first byte of the character: here, or before the block.
        let mut lead = start + i;
        while text[lead] & 0xC0 == 0x80 {
            lead -= 1;
        }
        let (c, len) = char_at(text, lead);
        let end = (lead + len - start).min(64);
        let span = if end == 64 { !0u64 << i } else { (1u64 << end) - (1u64 << i) };
        bits &= !span;
        match wide_class(preset, c) {
            Wide::Unsure => continue,
            Wide::Letter { upper, caseless } => {
                classes.letter |= span;
                if upper {
                    classes.upper |= span;
                }
                if caseless {
                    classes.caseless |= span;
                }
            }
            Wide::Digit => classes.digit |= span,
            Wide::Other => {}
        }
        classes.nonascii &= !span;
        let first = if lead >= start { 1u64 << (lead - start) } else { 0 };
        classes.cont |= span & !first;
    }
}
