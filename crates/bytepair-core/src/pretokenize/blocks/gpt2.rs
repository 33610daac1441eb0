//! GPT-2's starts: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
//!
//! On ASCII text a pre-token starts at:
//! - a letter, digit or other character whose class differs from the one
//!   before it, unless that one is a space (` ?` attaches the space);
//! - a whitespace character that starts a run, or that ends a run longer
//!   than one before a non-space (`\s+(?!\S)` leaves it out);
//! - after a contraction, which is a pre-token of its own when its `'`
//!   starts one (the `'` follows neither an other character, whose run it
//!   continues, nor a space, which attaches to it).
//!
//! A start depends on the bytes from 4 before to 2 after it.

use super::{near, Window};

/// Length of the contraction at `j` (which holds `'`), 0 if none.
#[inline]
fn contraction(text: &[u8], j: usize) -> u32 {
    match (text.get(j + 1), text.get(j + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
        _ => 0,
    }
}

#[inline(always)]
pub(super) fn starts(w: &Window, text: &[u8], base: usize) -> (u64, u64) {
    let letter = w.mask(|c| c.letter);
    let digit = w.mask(|c| c.digit);
    let other = w.mask(|c| c.other());
    let ws = w.mask(|c| c.ws);
    let space = w.mask(|c| c.space);
    let class_change = (letter.block & !letter.prev(1))
        | (digit.block & !digit.prev(1))
        | (other.block & !other.prev(1));
    let mut starts = class_change & !space.prev(1);
    starts |= ws.block & !(ws.prev(1) & ws.next(1));
    // Apostrophes that start a pre-token, here and in the last bytes of the
    // previous block (their contractions reach into this one).
    let apostrophe = w.mask(|c| c.apostrophe);
    let opens = |a: u64, o: u64, s: u64| a & !(o << 1) & !(s << 1);
    let here = apostrophe.block & !other.prev(1) & !space.prev(1);
    let before = opens(apostrophe.prev_block, other.prev_block, space.prev_block) & (0b111 << 61);
    for (mut bits, origin) in [(before, base as isize - 64), (here, base as isize)] {
        while bits != 0 {
            let j = origin + bits.trailing_zeros() as isize;
            bits &= bits - 1;
            let len = contraction(text, j as usize);
            if len > 0 {
                clear(&mut starts, j + 1 - base as isize);
                set(&mut starts, j + len as isize - base as isize);
            }
        }
    }
    (starts, near(w.bad(), 4, 2))
}

/// Clear bit `i` of `mask` if it is one of its 64 bits.
#[inline(always)]
pub(super) fn clear(mask: &mut u64, i: isize) {
    if (0..64).contains(&i) {
        *mask &= !(1u64 << i);
    }
}

/// Set bit `i` of `mask` if it is one of its 64 bits.
#[inline(always)]
pub(super) fn set(mask: &mut u64, i: isize) {
    if (0..64).contains(&i) {
        *mask |= 1u64 << i;
    }
}
