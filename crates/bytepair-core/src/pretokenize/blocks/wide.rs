//! Classifying the non-ASCII characters of a block: each is decoded and looked
//! up in the Unicode table, and all its bytes get its class, so the rules read
//! it like an ASCII character of that class (a class changes only at the
//! first byte of a character). Characters a preset's rules cannot treat
//! byte-wise stay `nonascii` (unsure): whitespace (its run's last character
//! would be marked at its last byte), numbers where the preset counts digits,
//! o200k's marks (in its word classes, yet not `\p{L}`, so also in the
//! prefix class before a word) unless they follow a word character, and `ſ`,
//! which case-folds into a contraction's `s`.
//!
//! A mark right after a letter (or after such a mark) is, for o200k, a
//! caseless letter: both of its word classes hold marks and Lm/Lo alike, and a
//! word that has begun takes every one of them, so the prefix class never
//! sees it (Devanagari's vowel signs: 7% of o200k's pieces of the
//! multilingual corpus went to the scalar machine for them).

use super::classify::Classes;
use crate::pretokenize::unicode::{self, char_at, LETTER, LOWER, MARK, NUMBER, SPACE, UPPER};
use crate::pretokenize::Preset;

/// What a non-ASCII character is for a preset's rules, as bits: one lookup in
/// `KINDS` instead of a chain of branches per character.
const WORD: u8 = 1;
const CAPITAL: u8 = 1 << 1;
const NO_CASE: u8 = 1 << 2;
const DIGIT: u8 = 1 << 3;
/// Left `nonascii` for the scalar rules.
const UNSURE: u8 = 1 << 4;
/// An o200k mark: a caseless letter after a word character, else unsure.
const JOINS: u8 = 1 << 5;

/// The kind of a character with Unicode flags `f` under preset `p` (0: gpt2, 1:
/// cl100k, 2: o200k). `CASELESS` needs no test: a letter of neither case.
const fn kind(p: usize, f: u8) -> u8 {
    if f & SPACE != 0 {
        UNSURE
    } else if f & NUMBER != 0 {
        if p == 0 {
            DIGIT
        } else {
            UNSURE
        }
    } else if f & LETTER != 0 {
        let capital = if f & UPPER != 0 { CAPITAL } else { 0 };
        let no_case = if f & (UPPER | LOWER) == 0 { NO_CASE } else { 0 };
        WORD | capital | no_case
    } else if p == 2 && f & MARK != 0 {
        JOINS
    } else {
        0
    }
}

/// `kind` of every flags value, per preset.
static KINDS: [[u8; 256]; 3] = {
    let mut kinds = [[0u8; 256]; 3];
    let mut p = 0;
    while p < 3 {
        let mut f = 0;
        while f < 256 {
            kinds[p][f] = kind(p, f as u8);
            f += 1;
        }
        p += 1;
    }
    kinds
};

/// `mask` where `kind` has `bit`, else 0.
#[inline(always)]
fn where_kind(kind: u8, bit: u8, mask: u64) -> u64 {
    0u64.wrapping_sub(u64::from(kind & bit != 0)) & mask
}

/// Classify the non-ASCII characters of the block at `start` of `text` into
/// `classes` (whose `nonascii` marks their bytes), including the tail of a
/// character begun in the previous block.
///
/// Each character is looked up at its first byte (`Classes::lead`), and the
/// classes found at first bytes then spread to the bytes that follow, so the
/// lookups of one block do not wait for each other.
pub(super) fn classify_wide(preset: Preset, text: &[u8], start: usize, classes: &mut Classes) {
    let table = unicode::table();
    let kinds = &KINDS[match preset {
        Preset::Gpt2 => 0,
        Preset::Cl100k | Preset::Llama3 | Preset::Qwen2 => 1,
        Preset::O200k => 2,
    }];
    let kind_of = |c: char| {
        if c == '\u{17f}' {
            UNSURE
        } else {
            kinds[table.get(c) as usize]
        }
    };
    let leads = classes.lead & classes.nonascii;
    let tails = classes.nonascii & !leads;
    // Kinds at first bytes, as masks.
    let (mut letter, mut upper, mut caseless, mut digit, mut sure) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut marks = 0u64;
    let mut add = |kind: u8, at: u64| {
        if kind & JOINS != 0 {
            marks |= at;
        } else if kind & UNSURE == 0 {
            letter |= where_kind(kind, WORD, at);
            upper |= where_kind(kind, CAPITAL, at);
            caseless |= where_kind(kind, NO_CASE, at);
            digit |= where_kind(kind, DIGIT, at);
            sure |= at;
        }
    };
    // A character begun in the previous block: its tail opens this one.
    let head = tails & !tails.wrapping_add(1);
    if head != 0 {
        let mut lead = start;
        while text[lead] & 0xC0 == 0x80 {
            lead -= 1;
        }
        let kind = kind_of(char_at(text, lead).0);
        // A mark here follows a character out of sight: unsure.
        add(if kind & JOINS != 0 { UNSURE } else { kind }, head);
    }
    let mut bits = leads;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        add(kind_of(char_at(text, start + i).0), 1 << i);
    }
    // Spread each class from a first byte over the (at most three) bytes after it.
    let spread = |mut mask: u64| {
        for _ in 0..3 {
            mask |= (mask << 1) & tails;
        }
        mask
    };
    // Marks whose character before is a letter (ASCII or not) or such a mark,
    // in a chain of up to four; the first byte of the block follows a
    // character out of sight.
    if marks != 0 {
        let words = classes.letter | spread(letter);
        let mut joined = 0;
        for _ in 0..4 {
            let next = marks & (words | spread(joined)) << 1;
            if next == joined {
                break;
            }
            joined = next;
        }
        letter |= joined;
        caseless |= joined;
        sure |= joined;
    }
    let sure = spread(sure);
    classes.letter |= spread(letter);
    classes.upper |= spread(upper);
    classes.caseless |= spread(caseless);
    classes.digit |= spread(digit);
    classes.nonascii &= !sure;
    classes.cont |= sure & tails;
}
