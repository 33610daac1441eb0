//! cl100k's starts: `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
//!  ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`.
//!
//! On ASCII text a pre-token starts at:
//! - a letter after a non-letter, unless that character is a prefix that
//!   starts a pre-token itself: whitespace other than `\r\n` (the last of its
//!   run), or an other character that starts a run of its own;
//! - every third digit of a run, from its first;
//! - an other character after a non-other, unless after a space (` ?`);
//! - in a whitespace run: its first character, unless `\r\n` that the other
//!   characters before it take (`[\r\n]*+`); the first character after its
//!   last newline (`\s*[\r\n]`); its last character when not a newline
//!   (`\s+(?!\S)` leaves it out); a run at the end of the text is one
//!   pre-token (`\s++$`: unsure here, the scalar machine does it);
//! - after a contraction.
//!
//! Runs of whitespace or digits that touch a byte the masks do not classify,
//! or run past the three blocks, are unsure as a whole.
//!
//! Llama 3's and Qwen2's patterns (`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|
//! \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, Qwen2 with
//! `\p{N}`) start pre-tokens at the same places (`DIGITS`: 3, or 1 where every
//! digit starts one): they differ from cl100k only in a whitespace run that
//! ends the text (`\s++$` is not among their branches), which touches the
//! end and so is unsure, left to their scalar machines.

use super::gpt2::set;
use super::{
    digit_groups, near, near_unknown, reached_from_behind, reaches_forward, runs_near_unknown,
    spread, Window, WindowMask,
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

/// The starts of the current block and where they are unsure, with numbers
/// of up to `DIGITS` (3 or 1) characters.
#[inline(always)]
pub(super) fn starts<const DIGITS: u32>(w: &Window, text: &[u8], base: usize) -> (u64, u64) {
    let letter = w.mask(|c| c.letter);
    let digit = w.mask(|c| c.digit);
    let other = w.mask(|c| c.other());
    let ws = w.mask(|c| c.ws);
    let space = w.mask(|c| c.space);
    let newline = w.mask(|c| c.newline);
    let bad = w.bad();

    // An other character that starts a pre-token.
    let other_starts = other
        & !WindowMask {
            prev_block: other.prev_block << 1,
            block: other.prev(1),
            next_block: 0,
        }
        & !WindowMask {
            prev_block: space.prev_block << 1,
            block: space.prev(1),
            next_block: 0,
        };
    let prefix_before =
        (ws.prev(1) & !newline.prev(1)) | spread(other_starts, w.mask(|c| c.cont)).prev(1);
    let mut starts = letter.block & !letter.prev(1) & !prefix_before;
    let (groups, digits_unsure) = if DIGITS == 1 {
        (digit.block, 0)
    } else {
        digit_groups(digit)
    };
    starts |= groups & digit.block;
    starts |= other_starts.block;

    // Whitespace. Newlines right after other characters go with them.
    let after_other = WindowMask {
        prev_block: newline.prev_block & other.prev_block << 1,
        block: newline.block & other.prev(1),
        next_block: 0,
    };
    let taken = reached_from_behind(after_other, newline);
    let run_start = ws.block & !ws.prev(1);
    starts |= run_start & !taken.block;
    starts |= ws.block & !newline.block & taken.prev(1);
    // The last newline of each run: none later in it (the previous block's
    // last position reads the current block's first).
    let later = reaches_forward(newline, ws);
    let last_newline = WindowMask {
        prev_block: newline.prev_block & !((later.block & 1) << 63),
        block: newline.block & !later.next(1),
        next_block: 0,
    };
    starts |= ws.block & last_newline.prev(1);
    starts |= ws.block & !newline.block & !ws.next(1);

    // Contractions.
    let apostrophe = w.mask(|c| c.apostrophe);
    let opens = (apostrophe & other_starts).block;
    let opens_before = apostrophe.prev_block & other_starts.prev_block & (0b111 << 61);
    for (mut bits, origin) in [(opens_before, base as isize - 64), (opens, base as isize)] {
        while bits != 0 {
            let j = origin + bits.trailing_zeros() as isize;
            bits &= bits - 1;
            let len = contraction(text, j as usize);
            if len > 0 {
                set(&mut starts, j + len as isize - base as isize);
            }
        }
    }

    let mut unsure = digits_unsure;
    if near_unknown(bad, [ws, digit]) {
        unsure |= near(bad, 6, 2) | runs_near_unknown(ws, bad);
        if DIGITS > 1 {
            unsure |= runs_near_unknown(digit, bad);
        }
    }
    unsure |= if newline.prev_block == !0 { !0 } else { 0 };
    (starts, unsure)
}
