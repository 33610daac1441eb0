//! o200k's starts: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//! \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
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
    digit_groups, forward64, near, reached_from_behind, reaches_forward, runs_near_unknown, spread,
    Window, M,
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
fn upper_after_caseless(upper: M, lower: M, caseless: M, apostrophe: M) -> (u64, u64) {
    if (caseless.p | caseless.c) == 0 {
        return (0, 0);
    }
    // The lower-case part of a word: from a lower-case letter through the
    // caseless letters after it; not from the letters of a contraction, which
    // end their word (nor from letters that only look like one: unsure then).
    let after_apostrophe = M {
        p: apostrophe.p << 1 | apostrophe.p << 2,
        c: apostrophe.prev(1) | apostrophe.prev(2),
        n: 0,
    };
    let lower_part = reached_from_behind(lower & !after_apostrophe, caseless);
    (
        upper.c & (caseless & lower_part).prev(1),
        upper.c & (caseless & !lower_part).prev(1),
    )
}

pub(super) fn starts(w: &Window, text: &[u8], base: usize) -> (u64, u64) {
    let letter = w.m(|c| c.letter);
    let upper = w.m(|c| c.upper);
    let caseless = w.m(|c| c.caseless);
    let lower = w.m(|c| c.lower() & !c.caseless);
    let apostrophe = w.m(|c| c.apostrophe);
    let digit = w.m(|c| c.digit);
    let other = w.m(|c| c.other());
    let ws = w.m(|c| c.ws);
    let space = w.m(|c| c.space);
    let newline = w.m(|c| c.newline);
    let slash = w.m(|c| c.slash);
    let bad = w.bad();

    // What a run of other characters takes after it: `[\r\n/]*` from a newline.
    let seed = M {
        p: newline.p & other.p << 1,
        c: newline.c & other.prev(1),
        n: 0,
    };
    let taken = reached_from_behind(seed, newline | slash);
    // Other characters that continue the run before them.
    let continues = M {
        p: other.p << 1 & !(taken.p << 1),
        c: other.prev(1) & !taken.prev(1),
        n: 0,
    };
    let after_space = M {
        p: space.p << 1,
        c: space.prev(1),
        n: 0,
    };
    let other_starts = other & !continues & !after_space & !taken;

    let prefix_before =
        (ws.prev(1) & !newline.prev(1)) | spread(other_starts, w.m(|c| c.cont)).prev(1);
    let mut starts = letter.c & !letter.prev(1) & !prefix_before;
    starts |= upper.c & lower.prev(1);
    let (after_lower_part, after_upper_part) =
        upper_after_caseless(upper, lower, caseless, apostrophe);
    starts |= after_lower_part;
    let (groups, digits_unsure) = digit_groups(digit);
    starts |= groups & digit.c;
    starts |= other_starts.c;

    // Whitespace (newlines taken by the other run before them excepted).
    let run_start = ws.c & !ws.prev(1);
    starts |= run_start & !taken.c;
    starts |= ws.c & !newline.c & taken.prev(1);
    let later = reaches_forward(newline, ws);
    let last_newline = M {
        p: newline.p & !((later.c & 1) << 63),
        c: newline.c & !later.next(1),
        n: 0,
    };
    starts |= ws.c & last_newline.prev(1);
    starts |= ws.c & !newline.c & !ws.next(1);

    // Contractions after a word: the apostrophe and its letters start nothing.
    // A pre-token has one at most, so an apostrophe right after a contraction
    // (`x'll'll`) is not another; whether it is depends on the whole chain,
    // which the scalar machine follows: apostrophes 2 or 3 bytes after one
    // that could begin a contraction (right after a letter or an unclassified
    // character; before the block, assumed) are unsure. Others (code's `'\n'`) begin none.
    let maybe_letter = letter | bad;
    let after_letter = M {
        p: apostrophe.p & (maybe_letter.p << 1 | 1),
        c: apostrophe.c & maybe_letter.prev(1),
        n: apostrophe.n & (maybe_letter.n << 1 | maybe_letter.c >> 63),
    };
    let chained = M {
        p: apostrophe.p & (after_letter.p << 2 | after_letter.p << 3),
        c: apostrophe.c & (after_letter.prev(2) | after_letter.prev(3)),
        n: apostrophe.n
            & (after_letter.n << 2
                | after_letter.n << 3
                | after_letter.c >> 62
                | after_letter.c >> 61),
    };
    let after_word = apostrophe.c & letter.prev(1) & !chained.c;
    let after_word_before = apostrophe.p & letter.p << 1 & !chained.p & (0b111 << 61);
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

    let mut unsure = near(bad, 6, 2) | near(chained, 4, 3) | digits_unsure | after_upper_part;
    unsure |= runs_near_unknown(ws, bad) | runs_near_unknown(digit, bad);
    // A run of `[\r\n/]` after an unclassified character: whether an other
    // run takes it decides whether the character after it continues an other
    // run or starts one (a prefix), so where the one after that starts
    // (`\u{301}\n/'LL`). The run and those two are unsure, also when the run
    // ends the previous block.
    let ambiguous = runs_near_unknown(newline | slash, bad);
    unsure |= ambiguous | ambiguous << 1 | ambiguous << 2;
    let run_p = newline.p | slash.p;
    if forward64(bad.p << 1 & run_p, run_p) >> 62 != 0 {
        unsure |= 0b11;
    }
    if (newline.p | slash.p) == !0 {
        unsure = !0;
    }
    // A run of `[\r\n/]` that the previous block begins with may be taken by
    // an other run two blocks back, out of sight: when it reaches the
    // previous block's second-last byte, whether the last byte continues an
    // other run, so whether this block's first bytes follow a prefix, is
    // unsure (found by the pretokenize fuzz target: `,\r` + 124 `/` + `'ll`).
    if forward64((newline.p | slash.p) & 1, newline.p | slash.p) >> 62 != 0 {
        unsure |= 0b1111;
    }
    (starts, unsure)
}
