//! The block scanner: pre-tokenization of the presets 64 bytes at a time.
//!
//! Each 64-byte block of the text is classified into bitmasks (letter, digit,
//! space, ...: `classify`), and each preset's rules, written as bit algebra
//! over those masks and the masks of the blocks on either side, give the
//! positions where a pre-token starts (`gpt2`, `cl100k`, which also serves
//! `llama3` and `qwen2`, and `o200k`). Walking
//! from one start to the next is then a `trailing_zeros` per pre-token, with
//! no branch that depends on the characters.
//!
//! The algebra decides only what it can see: next to a byte it does not
//! classify (non-ASCII, the end of the text) or where a rule reaches past the
//! three blocks it looks at, it marks the position *unsure*, and the walker
//! hands every pre-token that touches an unsure position to the preset's
//! scalar state machine (`super::scalar`), which is exact everywhere. So the
//! scanner's output equals the scalar machine's on any text, which equals
//! Python's `regex` (tests of both, and `tests::walker_equals_scalar`).
//!
//! The masks need AVX2 to pay off; on other CPUs the walker is not used and
//! the scalar machine runs alone. With AVX-512 (BW) a block is classified
//! by one compare into a mask register per class (`classify_avx512`).

mod cl100k;
mod classify;
mod gpt2;
mod o200k;
mod walker;
mod wide;

use std::ops::{BitAnd, BitOr, Not};

#[cfg(target_arch = "x86_64")]
pub use classify::classify_avx2;
pub use classify::{classify_portable, Classes, Simd};
pub use walker::Walker;

/// One mask over the three blocks the rules look at (the `Window`): the
/// previous block, the current one and the next.
#[derive(Clone, Copy, Debug)]
pub(super) struct WindowMask {
    pub prev_block: u64,
    pub block: u64,
    pub next_block: u64,
}

impl WindowMask {
    /// The mask at `i - k` for each position `i` of the current block (0 < k < 64).
    #[inline(always)]
    pub fn prev(self, k: u32) -> u64 {
        self.block << k | self.prev_block >> (64 - k)
    }

    /// The mask at `i + k` for each position `i` of the current block (0 < k < 64).
    #[inline(always)]
    pub fn next(self, k: u32) -> u64 {
        self.block >> k | self.next_block << (64 - k)
    }
}

impl BitAnd for WindowMask {
    type Output = WindowMask;
    #[inline(always)]
    fn bitand(self, o: WindowMask) -> WindowMask {
        WindowMask {
            prev_block: self.prev_block & o.prev_block,
            block: self.block & o.block,
            next_block: self.next_block & o.next_block,
        }
    }
}

impl BitOr for WindowMask {
    type Output = WindowMask;
    #[inline(always)]
    fn bitor(self, o: WindowMask) -> WindowMask {
        WindowMask {
            prev_block: self.prev_block | o.prev_block,
            block: self.block | o.block,
            next_block: self.next_block | o.next_block,
        }
    }
}

impl Not for WindowMask {
    type Output = WindowMask;
    #[inline(always)]
    fn not(self) -> WindowMask {
        WindowMask {
            prev_block: !self.prev_block,
            block: !self.block,
            next_block: !self.next_block,
        }
    }
}

/// The classes of the blocks k - 1, k and k + 1.
pub(super) struct Window<'a> {
    pub prev_block: &'a Classes,
    pub block: &'a Classes,
    pub next_block: &'a Classes,
}

impl Window<'_> {
    /// One class over the three blocks.
    #[inline(always)]
    pub fn mask(&self, f: impl Fn(&Classes) -> u64) -> WindowMask {
        WindowMask {
            prev_block: f(self.prev_block),
            block: f(self.block),
            next_block: f(self.next_block),
        }
    }

    /// Bytes the algebra does not classify: non-ASCII, and past the end.
    #[inline(always)]
    pub fn bad(&self) -> WindowMask {
        self.mask(|c| c.nonascii | c.phantom)
    }
}

/// `x` at the first byte of a character, carried over the character's other
/// bytes (`cont`): "the character before i" is then read at byte i - 1.
#[inline(always)]
pub(super) fn spread(x: WindowMask, cont: WindowMask) -> WindowMask {
    if cont.prev_block | cont.block | cont.next_block == 0 {
        return x; // no character of more than one byte: nothing to carry (ASCII)
    }
    let mut y = x;
    for _ in 0..3 {
        y = y | WindowMask {
            prev_block: (y.prev_block << 1) & cont.prev_block,
            block: y.prev(1) & cont.block,
            next_block: (y.next_block << 1 | y.block >> 63) & cont.next_block,
        };
    }
    y
}

/// Positions (bits of the current block) within `before` bytes after or
/// `after` bytes before a bad byte, and the bad bytes themselves.
#[inline(always)]
pub(super) fn near(bad: WindowMask, before: u32, after: u32) -> u64 {
    if bad.prev_block | bad.block | bad.next_block == 0 {
        return 0;
    }
    let mut out = bad.block;
    for k in 1..=before {
        out |= bad.prev(k);
    }
    for k in 1..=after {
        out |= bad.next(k);
    }
    out
}

/// Positions reached from a `seed` at or before them through a run of
/// `through`, within a block: bit i is set if `seed` has bit i, or
/// `through` has bit i and bit i - 1 is set. That recurrence is the carry
/// chain of an addition whose operands generate a carry at the seeds and
/// propagate it through `through` (`a = through | seed`, `b = seed`: `a & b`
/// generates, `a ^ b` propagates), so bit i is the carry out of bit i: the
/// carries into bits 1..=63 (`sum ^ a ^ b`) and the carry out of the top.
/// Six operations instead of the thirty of a Kogge-Stone scan (the test
/// `forward64_is_the_carry_scan` compares the two).
#[inline(always)]
fn forward64(seed: u64, through: u64) -> u64 {
    let (a, b) = (through | seed, seed);
    let (sum, out) = a.overflowing_add(b);
    (sum ^ a ^ b) >> 1 | (out as u64) << 63
}

/// Positions that reach a `seed` at or after them through a run of `through`.
#[inline(always)]
fn backward64(seed: u64, through: u64) -> u64 {
    let (mut g, mut p) = (seed, through);
    for s in [1, 2, 4, 8, 16, 32] {
        g |= p & (g >> s);
        p &= p >> s;
    }
    g
}

/// Positions of the previous and current blocks reached from a `seed` at or
/// before them through a run of `through` (carried from one block into the
/// next; the previous block's first bits may miss a seed further back).
#[inline(always)]
pub(super) fn reached_from_behind(seed: WindowMask, through: WindowMask) -> WindowMask {
    if seed.prev_block | seed.block == 0 {
        return WindowMask {
            prev_block: 0,
            block: 0,
            next_block: 0,
        };
    }
    let p = forward64(seed.prev_block, through.prev_block);
    let c = forward64(seed.block | (p >> 63 & through.block), through.block);
    WindowMask {
        prev_block: p,
        block: c,
        next_block: 0,
    }
}

/// Positions of the current block that reach a `seed` at or after them
/// through a run of `through`, and whether the next block's first position
/// does (the only bit of the next block the rules read: `next_block` holds
/// it alone, at bit 0).
///
/// That bit is the next block's first seed coming no later than its first
/// byte outside `through` (two `tzcnt`s, not a scan of the block); and when
/// the current block has no seed, its answer is the run of `through` at its
/// top, if that bit is set.
#[inline(always)]
pub(super) fn reaches_forward(seed: WindowMask, through: WindowMask) -> WindowMask {
    let first_seed = seed.next_block.trailing_zeros();
    let n = (first_seed < 64 && (!through.next_block).trailing_zeros() >= first_seed) as u64;
    let c = if seed.block != 0 {
        backward64(seed.block | (n << 63 & through.block), through.block)
    } else if n & through.block >> 63 != 0 {
        top_run(through.block)
    } else {
        0
    };
    WindowMask {
        prev_block: 0,
        block: c,
        next_block: n,
    }
}

/// The run of set bits that ends at bit 63 (all of `x` when it is `!0`).
#[inline(always)]
fn top_run(x: u64) -> u64 {
    !(!0u64).checked_shr(x.leading_ones()).unwrap_or(0)
}

/// Group starts of `\p{N}{1,3}` in the current block: the first digit of each
/// run and every third after it, counting from where the run began in the
/// previous block. A run that fills the previous block may begin earlier: its
/// positions here are `unsure` (second value).
#[inline(always)]
pub(super) fn digit_groups(digit: WindowMask) -> (u64, u64) {
    let d = digit.block;
    let mut seeds = d & !digit.prev(1);
    let mut unsure = 0;
    if d & 1 != 0 && digit.prev_block >> 63 != 0 {
        let before = (!digit.prev_block).leading_zeros();
        if before == 64 {
            unsure = forward64(1, d);
        } else {
            let first = (3 - before % 3) % 3;
            let need = (2u64 << first) - 1;
            if d & need == need {
                seeds |= 1 << first;
            }
        }
    }
    let (mut groups, mut x) = (seeds, seeds);
    loop {
        x = (x << 3) & d & (d << 1) & (d << 2);
        if x == 0 {
            break;
        }
        groups |= x;
    }
    (groups, unsure)
}

/// Positions of the runs of `run` in the current block that touch a byte the
/// masks do not classify, or the edge of the three blocks (both ends of such
/// a run are needed to place its starts).
///
/// Only runs through the block's first or last bit can reach the blocks on
/// either side, so those are checked from the lengths of the runs they
/// continue into; the others only when the block itself has such bytes.
#[inline(always)]
pub(super) fn runs_near_unknown(run: WindowMask, bad: WindowMask) -> u64 {
    let r = run.block;
    let mut out = 0;
    if bad.block != 0 {
        out |= forward64(bad.block, r) | backward64(bad.block, r);
    }
    if r >> 63 != 0 {
        // The run through bit 63 goes on for `k` bits into the next block.
        let k = (!run.next_block).trailing_zeros();
        if k == 64 || bad.next_block >> k & 1 != 0 {
            // The run's bits at the top of the block (all 64 when it fills the block).
            out |= !(!0u64).checked_shr((!r).leading_zeros()).unwrap_or(0);
        }
    }
    if r & 1 != 0 {
        let k = (!run.prev_block).leading_zeros();
        if k == 64 || bad.prev_block >> (63 - k) & 1 != 0 {
            // The run's bits at the bottom of the block (all 64 when it fills the block).
            out |= 1u64
                .checked_shl((!r).trailing_zeros())
                .map_or(!0, |bit| bit - 1);
        }
    }
    r & out
}

/// Can `near` or `runs_near_unknown` of these `runs` mark anything unsure:
/// is a byte of the three blocks unclassified (`bad`), or does a run fill
/// the previous or the next block (then it may reach past them)? Most blocks
/// of ASCII text answer no, and skip those (a few branches per run).
#[inline(always)]
pub(super) fn near_unknown<const N: usize>(bad: WindowMask, runs: [WindowMask; N]) -> bool {
    bad.prev_block | bad.block | bad.next_block != 0
        || runs
            .iter()
            .any(|r| r.prev_block == !0 || r.next_block == !0)
}

/// Is the block scanner usable on this CPU (AVX2, and BMI1 for `tzcnt`)?
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("bmi1")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests;
