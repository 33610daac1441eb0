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
mod wide;

use std::ops::{BitAnd, BitOr, Not};

pub use classify::{classify_portable, Classes, Simd};

use super::Preset;

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

/// The rule sets, as the const parameter of a walk: each has its own copy
/// of the walk with its rules inlined (one walk that matched on the preset
/// per block called them: inlined into it, a rule set alone was 7% faster,
/// all of them together 2-5%; cl100k enwiki, pre-tokenizer alone).
const GPT2: u8 = 0;
const CL100K: u8 = 1;
const QWEN2: u8 = 2;
const O200K: u8 = 3;

/// The starts of the block at `base` and where they are unsure: `(starts, unsure)`.
#[inline(always)]
fn rules<const R: u8>(window: &Window, text: &[u8], base: usize) -> (u64, u64) {
    match R {
        GPT2 => gpt2::starts(window, text, base),
        CL100K => cl100k::starts::<3>(window, text, base),
        QWEN2 => cl100k::starts::<1>(window, text, base),
        _ => o200k::starts(window, text, base),
    }
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

/// Pre-tokenizes a text with a preset, a batch of pre-token boundaries at a time.
pub struct Walker<'t> {
    text: &'t [u8],
    preset: Preset,
    simd: Simd,
    /// The start of the next pre-token.
    pos: usize,
    /// The block whose `starts` and `unsure` are computed (None before the
    /// first), and the classes of blocks `block - 1 ..= block + 2`, block j's
    /// at `classes[j % 4]` (the block before the text's at 3).
    block: Option<usize>,
    classes: [Classes; 4],
    starts: u64,
    unsure: u64,
    /// The block after `block`, its `starts` and `unsure` computed ahead
    /// (None when it holds no text).
    ahead: Option<usize>,
    ahead_starts: u64,
    ahead_unsure: u64,
    /// Pre-tokens handed to the scalar machine so far (for profiling).
    fallbacks: usize,
}

impl<'t> Walker<'t> {
    /// A walker over `text` (valid UTF-8) with `preset`; `simd` selects the
    /// fastest SIMD classifier (`Simd::best`), the caller having checked
    /// that the CPU has one (`available`).
    pub fn new(text: &'t [u8], preset: Preset, simd: bool) -> Self {
        let simd = if simd { Simd::best() } else { Simd::Portable };
        Self::with_classifier(text, preset, simd)
    }

    /// A walker that classifies with `simd`, which the CPU must support.
    pub fn with_classifier(text: &'t [u8], preset: Preset, simd: Simd) -> Self {
        Walker {
            text,
            preset,
            simd,
            pos: 0,
            block: None,
            classes: [Classes::default(); 4],
            starts: 0,
            unsure: !0,
            ahead: None,
            ahead_starts: 0,
            ahead_unsure: !0,
            fallbacks: 0,
        }
    }

    /// Write the classes of block `k` (all phantom past the end of the text)
    /// to `out`, each arm assigning its own value (one value merged from the
    /// arms lived on the stack and was copied).
    #[inline(always)]
    fn classify(text: &[u8], preset: Preset, simd: Simd, k: usize, out: &mut Classes) {
        let start = k * 64;
        if start + 64 > text.len() {
            *out = Self::classify_last(text, preset, simd, k);
            return;
        }
        let block: &[u8; 64] = text[start..start + 64].try_into().expect("64 bytes");
        simd.classify_into(block, preset, out);
    }

    /// `classify` of a block that reaches past the end of the text: the
    /// text's end copied into a block of zeros and classified as a whole
    /// block (with AVX2 too: every short text ends in such a block, and one
    /// byte at a time it was a large share of encoding lines of ~100 bytes).
    #[inline(never)]
    fn classify_last(text: &[u8], preset: Preset, simd: Simd, k: usize) -> Classes {
        let start = k * 64;
        if start >= text.len() {
            return Classes {
                phantom: !0,
                ..Classes::default()
            };
        }
        let mut block = [0u8; 64];
        let have = text.len() - start;
        block[..have].copy_from_slice(&text[start..start + have]);
        let mut c = Classes::default();
        simd.classify_into(&block, preset, &mut c);
        let real = (1u64 << have) - 1;
        for mask in [
            &mut c.letter,
            &mut c.upper,
            &mut c.digit,
            &mut c.ws,
            &mut c.space,
            &mut c.newline,
            &mut c.apostrophe,
            &mut c.slash,
            &mut c.nonascii,
            &mut c.lead,
        ] {
            *mask &= real;
        }
        c.phantom = !real;
        c
    }

    /// Classify block `k`, its non-ASCII characters included, into its place
    /// in the ring (`classes[k % 4]`). Written in place, field by field: a
    /// `Classes` built elsewhere and copied in was read back with 32-byte
    /// loads from 8-byte stores, which the CPU cannot forward (a stall per
    /// block).
    #[inline(always)]
    fn classify_into_ring(&mut self, k: usize) {
        // The text 2 KiB ahead: the CPU's own prefetcher left the block's
        // load waiting on memory (a large share of a warm gpt2 English call).
        crate::memory::prefetch_ptr(self.text.as_ptr().wrapping_add(k * 64 + 2048));
        let slot = &mut self.classes[k % 4];
        Self::classify(self.text, self.preset, self.simd, k, slot);
        if slot.nonascii & !slot.phantom != 0 {
            wide::classify_wide(self.preset, self.text, k * 64, slot);
        }
    }

    /// The starts of block `k` and where they are unsure, from the classes
    /// of blocks `k - 1 ..= k + 1` in the ring.
    #[inline(always)]
    fn rules_of<const R: u8>(&self, k: usize) -> (u64, u64) {
        let window = Window {
            prev_block: &self.classes[(k + 3) % 4],
            block: &self.classes[k % 4],
            next_block: &self.classes[(k + 1) % 4],
        };
        rules::<R>(&window, self.text, k * 64)
    }

    /// Make block `k` the current one (its `starts` and `unsure`), and
    /// compute the next block's ahead when it holds text: issued before the
    /// walk of block `k`, whose mispredicted branches then do not discard
    /// it, the next block's classes and rules overlap that walk instead of
    /// waiting for it (as gigatoken computes its next batch ahead).
    #[inline(always)]
    fn load<const R: u8>(&mut self, k: usize) {
        if self.block == Some(k) {
            return;
        }
        if self.ahead == Some(k) {
            // The ring holds blocks k - 1 ..= k + 1 already.
            (self.starts, self.unsure) = (self.ahead_starts, self.ahead_unsure);
        } else {
            if self.block.is_none_or(|b| b + 1 != k) {
                if k == 0 {
                    // Before the text: phantom, so the first bytes are unsure, not after some class.
                    self.classes[3] = Classes {
                        phantom: !0,
                        ..Classes::default()
                    };
                } else {
                    self.classify_into_ring(k - 1);
                }
                self.classify_into_ring(k);
            }
            self.classify_into_ring(k + 1);
            (self.starts, self.unsure) = self.rules_of::<R>(k);
        }
        self.block = Some(k);
        self.ahead = None;
        if (k + 1) * 64 < self.text.len() {
            self.classify_into_ring(k + 2);
            (self.ahead_starts, self.ahead_unsure) = self.rules_of::<R>(k + 1);
            self.ahead = Some(k + 1);
        }
    }

    /// Where the pre-token that starts at `self.pos` ends, when no start of
    /// its block follows it: in a later block (None: ask the scalar machine).
    #[inline(always)]
    fn end_in_later_block<const R: u8>(&mut self) -> Option<usize> {
        let (mut k, bit) = (self.pos / 64, self.pos % 64);
        if self.unsure & (!0u64 << bit) << 1 != 0 {
            return None;
        }
        loop {
            k += 1;
            self.load::<R>(k);
            if self.starts != 0 {
                let q = self.starts.trailing_zeros();
                return (self.unsure & (!0u64 >> (63 - q)) == 0).then_some(k * 64 + q as usize);
            }
            if self.unsure != 0 {
                return None;
            }
        }
    }

    /// `fill`, inlined into the per-CPU entry points below.
    #[inline(always)]
    fn fill_impl<const R: u8>(&mut self, bounds: &mut [usize]) -> usize {
        let cap = bounds.len() - 1;
        bounds[0] = self.pos;
        let mut n = 0;
        while n < cap && self.pos < self.text.len() {
            let (k, bit) = (self.pos / 64, self.pos % 64);
            self.load::<R>(k);
            let base = k * 64;
            // The starts after `pos` in its block that come before its first
            // unsure position end pre-tokens that touch none: taken in turn.
            let mut rest = self.starts & (!0u64 << bit) << 1;
            let doubt = self.unsure & (!0u64 << bit) << 1;
            let trusted = if doubt == 0 {
                !0
            } else {
                (1u64 << doubt.trailing_zeros()) - 1
            };
            let mut safe = rest & trusted;
            rest &= !trusted;
            let count = safe.count_ones() as usize;
            if safe != 0 && count <= cap - n {
                // The last start, from the mask: read back from `bounds`, the
                // next block's work waited for the store to be forwarded.
                self.pos = base + 63 - safe.leading_zeros() as usize;
            }
            if n + count + 8 <= cap {
                // Eight bounds at a time, the last group's extra ones past
                // `n` (tzcnt of 0 is 64): a loop that stops after each start
                // mispredicts its exit once per block, a fifth of the walk.
                let mut j = n + 1;
                loop {
                    let group = &mut bounds[j..j + 8];
                    for bound in group {
                        *bound = base + safe.trailing_zeros() as usize;
                        safe &= safe.wrapping_sub(1);
                    }
                    if safe == 0 {
                        break;
                    }
                    j += 8;
                }
                n += count;
            }
            while safe != 0 && n < cap {
                n += 1;
                bounds[n] = base + safe.trailing_zeros() as usize;
                safe &= safe - 1;
            }
            if n == cap {
                self.pos = bounds[n];
                break;
            }
            // The next pre-token touches an unsure position, or ends in a later block.
            let end = if rest == 0 && doubt == 0 {
                self.end_in_later_block::<R>()
            } else {
                None
            };
            self.pos = match end {
                Some(end) => end,
                None => {
                    self.fallbacks += 1;
                    self.preset.advance(self.text, self.pos)
                }
            };
            n += 1;
            bounds[n] = self.pos;
        }
        n
    }

    /// How many pre-tokens so far the scalar machine decided.
    pub fn fallbacks(&self) -> usize {
        self.fallbacks
    }

    /// Write the boundaries of up to `bounds.len() - 1` pre-tokens: `bounds[0]`
    /// is where the first starts, `bounds[i]` where pre-token i - 1 ends.
    /// Returns how many pre-tokens were written (0 at the end of the text).
    #[inline]
    pub fn fill(&mut self, bounds: &mut [usize]) -> usize {
        match self.preset {
            Preset::Gpt2 => self.fill_with::<GPT2>(bounds),
            Preset::Cl100k | Preset::Llama3 => self.fill_with::<CL100K>(bounds),
            Preset::Qwen2 => self.fill_with::<QWEN2>(bounds),
            Preset::O200k => self.fill_with::<O200K>(bounds),
        }
    }

    /// `fill` with the rule set `R`, compiled for the walker's classifier.
    #[inline(always)]
    fn fill_with<const R: u8>(&mut self, bounds: &mut [usize]) -> usize {
        // SAFETY: the walker is only made with a classifier the CPU has
        // (`available` found AVX2 and BMI1 for the others).
        #[cfg(target_arch = "x86_64")]
        unsafe {
            match self.simd {
                Simd::Avx2 => return self.fill_avx2::<R>(bounds),
                Simd::Avx512 => return self.fill_avx512::<R>(bounds),
                Simd::Portable => {}
            }
        }
        self.fill_impl::<R>(bounds)
    }

    /// `fill_impl` compiled for AVX2 and BMI1 (`tzcnt` for `trailing_zeros`).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
    unsafe fn fill_avx2<const R: u8>(&mut self, bounds: &mut [usize]) -> usize {
        self.fill_impl::<R>(bounds)
    }

    /// `fill_impl` compiled for AVX-512 BW, its classifier inlined.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,avx512f,avx512bw")]
    unsafe fn fill_avx512<const R: u8>(&mut self, bounds: &mut [usize]) -> usize {
        self.fill_impl::<R>(bounds)
    }
}

#[cfg(test)]
mod tests;
