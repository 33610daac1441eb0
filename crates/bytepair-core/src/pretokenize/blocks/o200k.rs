//! o200k's starts (the pattern, over four lines)
//! `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+`
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+`
//! `[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*`
//! `|\s*[\r\n]+|\s+(?!\S)|\s+`.
//!
//! On ASCII text the two word branches come down to `[A-Z]*[a-z]*` with at
//! least one letter, so a pre-token starts at:
//! - an upper-case letter after a lower-case one;
//! - a letter after a non-letter, unless that character is a prefix that
//!   starts a pre-token itself (whitespace other than `\r\n`, or an other
//!   character that starts one);
//! - every third digit of a run, from its first;
//! - an other character after a non-other (or after an other taken by the
//!   run before: `[\r\n/]*`), unless after a space or itself taken;
//! - in a whitespace run, as for cl100k (first character unless taken, the
//!   first after its last newline, its last before a non-space);
//! - after a contraction that ends a word (`it's`: the `'` and its letters
//!   start nothing).
//!
//! Caseless letters (`\p{Lm}`, `\p{Lo}`) are in both word classes: a word's
//! upper-case part takes them until its first lower-case letter, its
//! lower-case part after it. So an upper-case letter starts a word after a
//! lower-case letter or after caseless ones that follow a lower-case letter
//! (`xあB` splits before `B`). After caseless letters that follow none
//! (`中B`, `AあB`), whether it does depends on what the rest of the word holds
//! (the first branch backtracks: `中J中K.` is `中J中` `K`): such upper-case
//! letters are unsure.

use super::gpt2::{clear, set};
use super::{
    digit_groups, forward64, near, near_unknown, reached_from_behind, reaches_forward,
    runs_near_unknown, spread, Window, WindowMask,
};

/// Length of the case-insensitive contraction at `j` (which holds `'`), 0 if none.
#[inline]
fn contraction(text: &[u8], j: usize) -> u32 {
    let lower = |i: usize| text.get(i).map(u8::to_ascii_lowercase);
    match (lower(j + 1), lower(j + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
        _ => 0,
    }
}

/// Upper-case letters right after caseless ones, split by the part of the word
/// those are in: `(after the lower-case part, a start; after the upper-case
/// part, unsure)`.
#[inline(always)]
fn upper_after_caseless(
    upper: WindowMask,
    lower: WindowMask,
    caseless: WindowMask,
    apostrophe: WindowMask,
) -> (u64, u64) {
    if (caseless.prev_block | caseless.block) == 0 {
        return (0, 0);
    }
    // The lower-case part of a word: from a lower-case letter through the
    // caseless letters after it; not from the letters of a contraction, which
    // end their word (nor from letters that only look like one: unsure then).
    let after_apostrophe = WindowMask {
        prev_block: apostrophe.prev_block << 1 | apostrophe.prev_block << 2,
        block: apostrophe.prev(1) | apostrophe.prev(2),
        next_block: 0,
    };
    let lower_part = reached_from_behind(lower & !after_apostrophe, caseless);
    (
        upper.block & (caseless & lower_part).prev(1),
        upper.block & (caseless & !lower_part).prev(1),
    )
}

#[inline(always)]
pub(super) fn starts(w: &Window, text: &[u8], base: usize) -> (u64, u64) {
    let letter = w.mask(|c| c.letter);
    let upper = w.mask(|c| c.upper);
    let caseless = w.mask(|c| c.caseless);
    let lower = w.mask(|c| c.lower() & !c.caseless);
    let apostrophe = w.mask(|c| c.apostrophe);
    let digit = w.mask(|c| c.digit);
    let other = w.mask(|c| c.other());
    let ws = w.mask(|c| c.ws);
    let space = w.mask(|c| c.space);
    let newline = w.mask(|c| c.newline);
    let slash = w.mask(|c| c.slash);
    let bad = w.bad();

    // What a run of other characters takes after it: `[\r\n/]*` from a newline.
    let seed = WindowMask {
        prev_block: newline.prev_block & other.prev_block << 1,
        block: newline.block & other.prev(1),
        next_block: 0,
    };
    let taken = reached_from_behind(seed, newline | slash);
    // Other characters that continue the run before them.
    let continues = WindowMask {
        prev_block: other.prev_block << 1 & !(taken.prev_block << 1),
        block: other.prev(1) & !taken.prev(1),
        next_block: 0,
    };
    let after_space = WindowMask {
        prev_block: space.prev_block << 1,
        block: space.prev(1),
        next_block: 0,
    };
    let other_starts = other & !continues & !after_space & !taken;

    let prefix_before =
        (ws.prev(1) & !newline.prev(1)) | spread(other_starts, w.mask(|c| c.cont)).prev(1);
    let mut starts = letter.block & !letter.prev(1) & !prefix_before;
    starts |= upper.block & lower.prev(1);
    let (after_lower_part, after_upper_part) =
        upper_after_caseless(upper, lower, caseless, apostrophe);
    starts |= after_lower_part;
    let (groups, digits_unsure) = digit_groups(digit);
    starts |= groups & digit.block;
    starts |= other_starts.block;

    // Whitespace (newlines taken by the other run before them excepted).
    let run_start = ws.block & !ws.prev(1);
    starts |= run_start & !taken.block;
    starts |= ws.block & !newline.block & taken.prev(1);
    let later = reaches_forward(newline, ws);
    let last_newline = WindowMask {
        prev_block: newline.prev_block & !((later.block & 1) << 63),
        block: newline.block & !later.next(1),
        next_block: 0,
    };
    starts |= ws.block & last_newline.prev(1);
    starts |= ws.block & !newline.block & !ws.next(1);

    // Contractions after a word: the apostrophe and its letters start nothing.
    // A pre-token has one at most, so an apostrophe right after a contraction
    // (`x'll'll`) is not another; whether it is depends on the whole chain,
    // which the scalar machine follows: apostrophes 2 or 3 bytes after one
    // that could begin a contraction (right after a letter or an unclassified
    // character; before the block, assumed) are unsure. Others (code's `'\n'`) begin none.
    // (Most blocks hold no apostrophe: all of it skipped.)
    let chained_near = if apostrophe.prev_block | apostrophe.block | apostrophe.next_block != 0 {
        let maybe_letter = letter | bad;
        let after_letter = WindowMask {
            prev_block: apostrophe.prev_block & (maybe_letter.prev_block << 1 | 1),
            block: apostrophe.block & maybe_letter.prev(1),
            next_block: apostrophe.next_block
                & (maybe_letter.next_block << 1 | maybe_letter.block >> 63),
        };
        let chained = WindowMask {
            prev_block: apostrophe.prev_block
                & (after_letter.prev_block << 2 | after_letter.prev_block << 3),
            block: apostrophe.block & (after_letter.prev(2) | after_letter.prev(3)),
            next_block: apostrophe.next_block
                & (after_letter.next_block << 2
                    | after_letter.next_block << 3
                    | after_letter.block >> 62
                    | after_letter.block >> 61),
        };
        let after_word = apostrophe.block & letter.prev(1) & !chained.block;
        let after_word_before =
            apostrophe.prev_block & letter.prev_block << 1 & !chained.prev_block & (0b111 << 61);
        for (mut bits, origin) in [
            (after_word_before, base as isize - 64),
            (after_word, base as isize),
        ] {
            while bits != 0 {
                let j = origin + bits.trailing_zeros() as isize;
                bits &= bits - 1;
                let len = contraction(text, j as usize);
                if len > 0 {
                    let rel = j - base as isize;
                    // Nothing starts inside the contraction: not its letters, and
                    // not an upper-case letter after a lower-case one (`A'lL`).
                    for k in 0..len as isize {
                        clear(&mut starts, rel + k);
                    }
                    set(&mut starts, rel + len as isize);
                }
            }
        }

        near(chained, 4, 3)
    } else {
        0
    };

    let mut unsure = chained_near | digits_unsure | after_upper_part;
    let run_p = newline.prev_block | slash.prev_block;
    if near_unknown(bad, [ws, digit, newline | slash]) {
        unsure |= near(bad, 6, 2);
        unsure |= runs_near_unknown(ws, bad) | runs_near_unknown(digit, bad);
        // A run of `[\r\n/]` after an unclassified character: whether an other
        // run takes it decides whether the character after it continues an other
        // run or starts one (a prefix), so where the one after that starts
        // (`\u{301}\n/'LL`). The run and those two are unsure, also when the run
        // ends the previous block.
        let ambiguous = runs_near_unknown(newline | slash, bad);
        unsure |= ambiguous | ambiguous << 1 | ambiguous << 2;
        let seed_p = bad.prev_block << 1 & run_p;
        if seed_p != 0 && forward64(seed_p, run_p) >> 62 != 0 {
            unsure |= 0b11;
        }
    }
    if run_p == !0 {
        unsure = !0;
    }
    // A run of `[\r\n/]` that the previous block begins with may be taken by
    // an other run two blocks back, out of sight: when it reaches the
    // previous block's second-last byte, whether the last byte continues an
    // other run, so whether this block's first bytes follow a prefix, is
    // unsure (found by the pretokenize fuzz target: `,\r` + 124 `/` + `'ll`).
    if run_p & 1 != 0 && forward64(1, run_p) >> 62 != 0 {
        unsure |= 0b1111;
    }
    (starts, unsure)
}
