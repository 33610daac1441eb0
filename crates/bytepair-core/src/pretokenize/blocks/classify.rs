//! Byte classes of a 64-byte block as bitmasks (bit i = byte i of the block),
//! with AVX2 compares where the CPU has them and a plain loop elsewhere. Only
//! ASCII bytes are classified; bytes of 0x80 and above are `nonascii`.

use super::super::Preset;

/// The classes of the bytes of one block. Masks of bytes past the end of the
/// text are 0 but for `phantom`.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Classes {
    /// `A-Za-z`.
    pub letter: u64,
    /// `A-Z`.
    pub upper: u64,
    /// `0-9`.
    pub digit: u64,
    /// `\t \n \v \f \r` and space.
    pub ws: u64,
    /// ` ` (0x20).
    pub space: u64,
    /// `\r \n`.
    pub newline: u64,
    /// `'`.
    pub apostrophe: u64,
    /// `/`.
    pub slash: u64,
    /// A byte of 0x80 or above that the classes above do not cover (see
    /// `wide`: the bytes of a non-ASCII character it classifies are cleared).
    pub nonascii: u64,
    /// 0xC0 and above: the first byte of a multi-byte character (in UTF-8).
    pub lead: u64,
    /// The second to fourth bytes of a classified non-ASCII character.
    pub cont: u64,
    /// The bytes of a non-ASCII letter of neither case (`\p{Lm}`, `\p{Lo}`:
    /// CJK, Arabic, Hebrew, Devanagari...), also in `letter`; o200k's words
    /// take them on either side of their case change.
    pub caseless: u64,
    /// Past the end of the text.
    pub phantom: u64,
}

impl Classes {
    /// ASCII bytes that are none of letter, digit, space: punctuation,
    /// symbols and control characters.
    #[inline(always)]
    pub fn other(&self) -> u64 {
        !(self.letter | self.digit | self.ws | self.nonascii | self.phantom)
    }

    /// `a-z`.
    #[inline(always)]
    pub fn lower(&self) -> u64 {
        self.letter & !self.upper
    }
}

/// How a walker classifies its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simd {
    /// One byte at a time: the tests' reference.
    Portable,
    /// Two 32-byte halves, a movemask per class and half.
    Avx2,
    /// One 64-byte vector, a mask register per class (AVX-512 BW, with AVX2
    /// for the rest of the walker).
    Avx512,
}

impl Simd {
    /// The fastest classifier of this CPU, given that `available` is true.
    pub fn best() -> Simd {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512bw") {
            return Simd::Avx512;
        }
        Simd::Avx2
    }

    /// Write the classes of a whole block with this classifier to `out`,
    /// each preset's (the classes it reads).
    #[inline(always)]
    pub(super) fn classify_into(self, block: &[u8; 64], preset: Preset, out: &mut Classes) {
        #[cfg(target_arch = "x86_64")]
        {
            const O200K: u8 = UPPER | NEWLINE | SLASH;
            // SAFETY: the walker is only made with a classifier the CPU has.
            unsafe {
                match (self, preset) {
                    (Simd::Portable, _) => {}
                    (Simd::Avx2, Preset::Gpt2) => return *out = classify_avx2::<0>(block),
                    (Simd::Avx2, Preset::O200k) => return *out = classify_avx2::<O200K>(block),
                    (Simd::Avx2, _) => return *out = classify_avx2::<NEWLINE>(block),
                    (Simd::Avx512, Preset::Gpt2) => return classify_avx512::<0>(block, out),
                    (Simd::Avx512, Preset::O200k) => return classify_avx512::<O200K>(block, out),
                    (Simd::Avx512, _) => return classify_avx512::<NEWLINE>(block, out),
                }
            }
        }
        *out = classify_portable(block);
    }
}

/// The classes of `block` (64 bytes), one byte at a time: the reference of
/// the SIMD classifier and the path of CPUs without AVX2.
pub fn classify_portable(block: &[u8; 64]) -> Classes {
    let mut c = Classes::default();
    for (i, &b) in block.iter().enumerate() {
        let bit = 1u64 << i;
        let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
        set(&mut c.letter, b.is_ascii_alphabetic());
        set(&mut c.upper, b.is_ascii_uppercase());
        set(&mut c.digit, b.is_ascii_digit());
        set(
            &mut c.ws,
            matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        );
        set(&mut c.space, b == b' ');
        set(&mut c.newline, b == b'\n' || b == b'\r');
        set(&mut c.apostrophe, b == b'\'');
        set(&mut c.slash, b == b'/');
        set(&mut c.nonascii, b >= 0x80);
        set(&mut c.lead, b >= 0xC0);
    }
    c
}

/// `Classes::upper`, wanted (`classify_avx2`'s `WANT`).
pub const UPPER: u8 = 1;
/// `Classes::newline`, wanted.
pub const NEWLINE: u8 = 2;
/// `Classes::slash`, wanted.
pub const SLASH: u8 = 4;

/// `classify_portable` with AVX2: two 32-byte loads, a few compares per
/// class, one movemask per half. The classes not in `WANT` (a combination of
/// `UPPER`, `NEWLINE`, `SLASH`) are left 0: not every preset reads them.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn classify_avx2<const WANT: u8>(block: &[u8; 64]) -> Classes {
    use std::arch::x86_64::*;
    // SAFETY (whole body): `block` holds 64 readable bytes; AVX2 is enabled.
    unsafe {
        let halves = [
            _mm256_loadu_si256(block.as_ptr().cast::<__m256i>()),
            _mm256_loadu_si256(block.as_ptr().add(32).cast::<__m256i>()),
        ];
        let splat = |b: u8| _mm256_set1_epi8(b as i8);
        // Unsigned `x - lo <= span` as `min(x - lo, span) == x - lo`.
        let in_range = |v: __m256i, lo: u8, span: u8| {
            let d = _mm256_sub_epi8(v, splat(lo));
            _mm256_cmpeq_epi8(_mm256_min_epu8(d, splat(span)), d)
        };
        // A mask from a per-half compare (a macro: closures taken as `&dyn Fn`
        // were calls that did not inline).
        macro_rules! mask {
            (|$v:ident| $e:expr) => {{
                let lo = {
                    let $v = halves[0];
                    _mm256_movemask_epi8($e)
                } as u32 as u64;
                let hi = {
                    let $v = halves[1];
                    _mm256_movemask_epi8($e)
                } as u32 as u64;
                lo | hi << 32
            }};
        }
        let eq = |v: __m256i, b: u8| _mm256_cmpeq_epi8(v, splat(b));
        Classes {
            letter: mask!(|v| in_range(_mm256_or_si256(v, splat(0x20)), b'a', 25)),
            upper: if WANT & UPPER != 0 {
                mask!(|v| in_range(v, b'A', 25))
            } else {
                0
            },
            digit: mask!(|v| in_range(v, b'0', 9)),
            ws: mask!(|v| _mm256_or_si256(eq(v, b' '), in_range(v, b'\t', 4))),
            space: mask!(|v| eq(v, b' ')),
            newline: if WANT & NEWLINE != 0 {
                mask!(|v| _mm256_or_si256(eq(v, b'\n'), eq(v, b'\r')))
            } else {
                0
            },
            apostrophe: mask!(|v| eq(v, b'\'')),
            slash: if WANT & SLASH != 0 {
                mask!(|v| eq(v, b'/'))
            } else {
                0
            },
            nonascii: mask!(|v| v),
            // Bit 7 and bit 6 (the top bit of v + v, bytewise).
            lead: mask!(|v| _mm256_and_si256(v, _mm256_add_epi8(v, v))),
            cont: 0,
            caseless: 0,
            phantom: 0,
        }
    }
}

/// `classify_avx2` with AVX-512 BW, written to `out`: one 64-byte load and,
/// per class, a compare or two into a mask register, which is the class's
/// mask (no movemask per 32-byte half). Inlined into the walk compiled for
/// AVX-512 (`Walker::fill_avx512`: 5-8% faster than a call from the walk
/// compiled for AVX2, now that each rule set has its own walk; with one walk
/// for all, LLVM's vectorizing of the loop that writes boundaries had made
/// that 8-12% slower). The masks are stored to `out` here, not returned (a
/// returned `Classes` copied in was read back with loads the CPU cannot
/// forward from the stores that wrote it).
///
/// # Safety
/// The CPU must support AVX-512 F and BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
pub unsafe fn classify_avx512<const WANT: u8>(block: &[u8; 64], out: &mut Classes) {
    use std::arch::x86_64::*;
    // SAFETY (whole body): `block` holds 64 readable bytes; AVX-512 BW is enabled.
    unsafe {
        let v = _mm512_loadu_si512(block.as_ptr().cast::<__m512i>());
        let splat = |b: u8| _mm512_set1_epi8(b as i8);
        // Unsigned `x - lo <= span`.
        let in_range = |v: __m512i, lo: u8, span: u8| {
            _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, splat(lo)), splat(span))
        };
        let eq = |b: u8| _mm512_cmpeq_epi8_mask(v, splat(b));
        let space = eq(b' ');
        *out = Classes {
            letter: in_range(_mm512_or_si512(v, splat(0x20)), b'a', 25),
            upper: if WANT & UPPER != 0 {
                in_range(v, b'A', 25)
            } else {
                0
            },
            digit: in_range(v, b'0', 9),
            ws: space | in_range(v, b'\t', 4),
            space,
            newline: if WANT & NEWLINE != 0 {
                eq(b'\n') | eq(b'\r')
            } else {
                0
            },
            apostrophe: eq(b'\''),
            slash: if WANT & SLASH != 0 { eq(b'/') } else { 0 },
            nonascii: _mm512_movepi8_mask(v),
            lead: _mm512_cmpge_epu8_mask(v, splat(0xC0)),
            cont: 0,
            caseless: 0,
            phantom: 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avx2_and_avx512_equal_portable() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let avx512 = std::arch::is_x86_feature_detected!("avx512bw");
            let mut state = 0x9E37_79B9_7F4A_7C15u64;
            for round in 0..2000 {
                let mut block = [0u8; 64];
                for b in &mut block {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly ASCII, every byte value now and then.
                    *b = if round % 3 == 0 {
                        state as u8
                    } else {
                        (state % 128) as u8
                    };
                }
                let want = classify_portable(&block);
                // SAFETY: AVX2 was detected.
                let got = unsafe { classify_avx2::<{ UPPER | NEWLINE | SLASH }>(&block) };
                assert_eq!(got, want, "{block:?}");
                if avx512 {
                    // SAFETY: AVX-512 BW was detected (F comes with it).
                    let mut got = Classes::default();
                    unsafe { classify_avx512::<{ UPPER | NEWLINE | SLASH }>(&block, &mut got) };
                    assert_eq!(got, want, "{block:?}");
                }
            }
        }
    }
}
