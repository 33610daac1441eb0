//! The walker: the starts of each block from its preset's rules, and the
//! pre-tokens between them, a batch of boundaries at a time (the scalar
//! machine for those that touch an unsure position).

use super::classify::{Classes, Simd};
use super::{cl100k, gpt2, o200k, wide, Window};
use crate::pretokenize::Preset;

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
