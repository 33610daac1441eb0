//! Cutting a line into *units*, the strings no piece may cross (see
//! `train`'s module comment), for counting (`count`): one character at a time
//! where the text is not ASCII, and 64 bytes at a time where it is (the
//! boundaries of a block from bitmasks of its bytes' classes, as the
//! byte-level pre-tokenizer's blocks: a character at a time missed a branch
//! prediction at nearly every unit's end, half of counting 10 MB of enwiki).
//! A run of non-ASCII characters is cut character by character, each one's
//! class read from a table of the Basic Multilingual Plane (`bmp_classes`).

use std::sync::OnceLock;

use crate::pretokenize::blocks::{self, Classes};
use crate::pretokenize::unicode::{self, CASELESS, LETTER, LOWER, MARK, NUMBER, UPPER};

use super::normalize::SPACE;

/// Classes a unit keeps throughout (`class_of`).
const DIGIT: u8 = 1;
const CASED: u8 = 2;
const OTHER: u8 = 4;

/// The class a unit keeps throughout (see `train`'s module comment): 0 for a
/// mark (it joins the character before it), 1 numbers, 2 cased letters, 3
/// other letters, 4 the rest. `table`: `unicode::table()`.
fn class_of(table: &unicode::Table, c: char) -> u8 {
    class_of_flags(match c as usize {
        a if a < 128 => unicode::ASCII[a],
        _ => table.get(c),
    })
}

/// The class of a character with the flags `f` (`class_of`).
#[inline]
fn class_of_flags(f: u8) -> u8 {
    match () {
        _ if f & NUMBER != 0 => DIGIT,
        _ if f & MARK != 0 => 0,
        _ if f & (UPPER | LOWER) != 0 => CASED,
        _ if f & (LETTER | CASELESS) != 0 => 3,
        _ => OTHER,
    }
}

/// The class (`class_of`) of every character of the Basic Multilingual
/// Plane, by code point (built on first use; surrogates are never read).
/// One load in place of the flag table's two and the flags' tests: the
/// non-ASCII characters of multilingual text are about a third of them.
/// A static, not a box: on the heap it moved the allocations after it, and
/// decoding the units' characters (`train::UnitChars`) ran 3-4 ms slower
/// on multilingual 10 MB (23 -> 27 ms, repeatably).
fn bmp_classes() -> &'static [u8; 1 << 16] {
    static CLASSES: OnceLock<[u8; 1 << 16]> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let table = unicode::table();
        let by_flags: [u8; 256] = std::array::from_fn(|f| class_of_flags(f as u8));
        let mut classes = [OTHER; 1 << 16];
        for (cp, class) in classes.iter_mut().enumerate() {
            if let Some(c) = char::from_u32(cp as u32) {
                *class = by_flags[usize::from(table.get(c))];
            }
        }
        classes
    })
}

/// The rules that cut units.
pub(super) struct UnitCutter {
    /// Every digit is a unit of its own.
    pub split_digits: bool,
    /// A run of "▁" stays one unit (whitespace-only pieces allowed).
    pub whitespace_runs: bool,
    /// The text is the space view: a space stands for "▁".
    pub view: bool,
    ascii_class: [u8; 128],
    table: &'static unicode::Table,
    /// `bmp_classes()`.
    bmp: &'static [u8; 1 << 16],
    /// The CPU has AVX2 (blocks are classified with it).
    avx2: bool,
}

/// Where a cut is: the open unit's start (None before the first
/// character), the class it keeps, and where the last "▁" of a run just
/// before the next character starts (None: the character before is no "▁").
#[derive(Clone, Copy)]
struct State {
    start: Option<usize>,
    class: u8,
    space: Option<usize>,
}

impl UnitCutter {
    pub fn new(split_digits: bool, whitespace_runs: bool, view: bool) -> Self {
        let table = unicode::table();
        let mut ascii_class = [0u8; 128];
        for (x, class) in ascii_class.iter_mut().enumerate() {
            *class = class_of(table, x as u8 as char);
        }
        UnitCutter {
            split_digits,
            whitespace_runs,
            view,
            ascii_class,
            table,
            bmp: bmp_classes(),
            avx2: blocks::available(),
        }
    }

    /// If a "▁" starts at `i` of `b`: its length (a space in the view, or the
    /// newline at `lead`, the dummy prefix).
    #[inline]
    fn space_at(&self, b: &[u8], i: usize, lead: Option<usize>) -> Option<usize> {
        match b[i] {
            b' ' if self.view => Some(1),
            0xE2 if b[i..].starts_with(SPACE) => Some(SPACE.len()),
            b'\n' if lead == Some(i) => Some(1),
            _ => None,
        }
    }

    /// Push the unit boundaries inside `b[from..to]` (a line, or a part of
    /// one between user-defined pieces) to `bounds`, which ends with `from`:
    /// its units tile it (the caller pushes `to`). `lead`: the newline at
    /// `from` that stands for the dummy prefix.
    pub fn split(
        &self,
        b: &[u8],
        from: usize,
        to: usize,
        lead: Option<usize>,
        bounds: &mut Vec<usize>,
    ) {
        let mut st = State {
            start: None,
            class: 0,
            space: None,
        };
        let mut i = from;
        if lead == Some(from) && from < to {
            i = self.step(b, i, lead, &mut st, bounds);
        }
        while i < to {
            i = self.block(b, i, to, &mut st, bounds);
        }
    }

    /// The next (up to) 64 bytes from `i`, classified at once: each run of
    /// ASCII bytes through their masks (`ascii_run`), each run of other
    /// characters through `other_run`. Returns where the next block starts (past
    /// the block when its last character runs over its end).
    #[inline]
    fn block(
        &self,
        b: &[u8],
        i: usize,
        to: usize,
        st: &mut State,
        bounds: &mut Vec<usize>,
    ) -> usize {
        let n = (to - i).min(64);
        let c = self.classify(&b[i..i + n]);
        let space = if self.view { c.space } else { 0 };
        let mut at = i;
        while at < i + n {
            let off = at - i;
            let ascii = ((c.nonascii >> off).trailing_zeros() as usize).min(n - off);
            if ascii == 0 {
                let run = ((!c.nonascii >> off).trailing_zeros() as usize).min(n - off);
                at = self.other_run(b, at, at + run, st, bounds);
                continue;
            }
            let masks = (space >> off, c.letter >> off, c.digit >> off);
            self.ascii_run(masks, at, ascii, st, bounds);
            at += ascii;
        }
        at
    }

    /// The classes of `bytes` (at most 64; the rest of the block is zeros).
    #[inline]
    fn classify(&self, bytes: &[u8]) -> Classes {
        let mut block = [0u8; 64];
        let block: &[u8; 64] = match bytes.try_into() {
            Ok(whole) => whole,
            Err(_) => {
                block[..bytes.len()].copy_from_slice(bytes);
                &block
            }
        };
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the CPU has AVX2 (`blocks::available`).
            return unsafe { blocks::classify_avx2::<0>(block) };
        }
        blocks::classify_portable(block)
    }

    /// Cut the `m` ASCII bytes from `i` (their "▁", letter and digit
    /// masks, from bit 0): the first with `step`, which knows what came
    /// before, the others from the masks.
    /// A boundary falls before byte j (j >= 1) where
    /// * j is "▁" and j - 1 is not (or runs of "▁" are cut at every one);
    /// * j and j - 1 are not "▁" and their classes differ, or one is a
    ///   digit and digits are split;
    ///
    /// and before j - 1 where j is not "▁", j - 1 is and so is j - 2 (the
    /// last "▁" of a run starts the word after it), when runs stay whole.
    #[inline(always)]
    fn ascii_run(
        &self,
        (s, l, d): (u64, u64, u64),
        i: usize,
        m: usize,
        st: &mut State,
        bounds: &mut Vec<usize>,
    ) {
        let space_before = st.space.is_some();
        let k = match () {
            _ if s & 1 != 0 => None,
            _ if l & 1 != 0 => Some(CASED),
            _ if d & 1 != 0 => Some(DIGIT),
            _ => Some(OTHER),
        };
        match k {
            None => self.at_space(i, st, bounds),
            Some(k) => self.at_char(i, k, st, bounds),
        }
        if m == 1 {
            return;
        }
        let valid = if m == 64 { !0 } else { (1u64 << m) - 1 };
        let (s, l, d) = (s & valid, l & valid, d & valid);
        let o = valid & !(s | l | d);
        let not_space = valid & !s;
        let prev_s = s << 1;
        let changed = (l ^ (l << 1)) | (d ^ (d << 1)) | (o ^ (o << 1));
        let digits = if self.split_digits { d | (d << 1) } else { 0 };
        let mut cuts = not_space & !prev_s & (changed | digits);
        cuts |= if self.whitespace_runs { s & !prev_s } else { s };
        cuts &= !1;
        if self.whitespace_runs {
            let before_last = (s << 2) | u64::from(space_before) << 1;
            cuts |= (not_space & prev_s & before_last) >> 1;
        }
        let mut rest = cuts;
        while rest != 0 {
            bounds.push(i + rest.trailing_zeros() as usize);
            rest &= rest - 1;
        }
        if cuts != 0 {
            st.start = Some(i + 63 - cuts.leading_zeros() as usize);
        }
        let last = 1u64 << (m - 1);
        st.space = (s & last != 0).then_some(i + m - 1);
        st.class = match () {
            _ if s & last != 0 => 0,
            _ if l & last != 0 => CASED,
            _ if d & last != 0 => DIGIT,
            _ => OTHER,
        };
    }

    /// Cut at the character at `i` of `b` and move past it (a "▁", or a
    /// character of some class).
    #[inline(always)]
    fn step(
        &self,
        b: &[u8],
        i: usize,
        lead: Option<usize>,
        st: &mut State,
        bounds: &mut Vec<usize>,
    ) -> usize {
        if let Some(len) = self.space_at(b, i, lead) {
            self.at_space(i, st, bounds);
            return i + len;
        }
        let (k, len) = match b[i] {
            x if x < 0x80 => (self.ascii_class[x as usize], 1),
            _ => {
                let (c, len) = super::words::char_at(b, i);
                (class_of(self.table, c), len)
            }
        };
        self.at_char(i, k, st, bounds);
        i + len
    }

    /// Cut at each character from `i` on that starts before `end` (all
    /// of them non-ASCII, valid UTF-8): as `step` does, the class from
    /// `bmp` (`class_of` beyond the BMP). Returns where the last one ends.
    /// Not inlined: inlined into `block` it slowed the ASCII runs (counting
    /// enwiki 10 MB 20.7 -> 22 ms).
    #[inline(never)]
    fn other_run(
        &self,
        b: &[u8],
        mut i: usize,
        end: usize,
        st: &mut State,
        bounds: &mut Vec<usize>,
    ) -> usize {
        while i < end {
            let lead = b[i];
            let (k, len) = match lead {
                0xE2 if b[i..].starts_with(SPACE) => {
                    self.at_space(i, st, bounds);
                    i += SPACE.len();
                    continue;
                }
                0xC0..=0xDF => {
                    let cp = usize::from(lead & 0x1F) << 6 | usize::from(b[i + 1] & 0x3F);
                    (self.bmp[cp], 2)
                }
                0xE0..=0xEF => {
                    let cp = usize::from(lead & 0x0F) << 12
                        | usize::from(b[i + 1] & 0x3F) << 6
                        | usize::from(b[i + 2] & 0x3F);
                    (self.bmp[cp], 3)
                }
                _ => {
                    let (c, len) = super::words::char_at(b, i);
                    (class_of(self.table, c), len)
                }
            };
            self.at_char(i, k, st, bounds);
            i += len;
        }
        i
    }

    /// A "▁" at `i`: a run of them stays one unit only when whitespace-only
    /// pieces are allowed.
    #[inline(always)]
    fn at_space(&self, i: usize, st: &mut State, bounds: &mut Vec<usize>) {
        if !(st.space.is_some() && self.whitespace_runs) {
            cut(bounds, st.start, i);
            st.start = Some(i);
        }
        st.space = Some(i);
        st.class = 0;
    }

    /// A character of class `k` at `i`.
    #[inline(always)]
    fn at_char(&self, i: usize, k: u8, st: &mut State, bounds: &mut Vec<usize>) {
        if let Some(last) = st.space {
            // The run's last "▁" starts the word that follows it.
            cut(bounds, st.start, last);
            st.start = Some(last);
        } else {
            let digit_alone = self.split_digits && (k == DIGIT || st.class == DIGIT);
            let changed = k != 0 && st.class != 0 && k != st.class;
            if st.start.is_none() || digit_alone || changed {
                cut(bounds, st.start, i);
                st.start = Some(i);
            }
        }
        st.space = None;
        if k != 0 {
            st.class = k;
        }
    }
}

/// A boundary at `at`, if the open unit (from `start`) is not empty there.
#[inline(always)]
fn cut(bounds: &mut Vec<usize>, start: Option<usize>, at: usize) {
    if start.is_some_and(|s| s < at) {
        bounds.push(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The boundaries `split` pushes, and those of one character at a time.
    fn both(cutter: &UnitCutter, b: &[u8], lead: bool) -> (Vec<usize>, Vec<usize>) {
        let lead = lead.then_some(0);
        let mut fast = vec![0];
        cutter.split(b, 0, b.len(), lead, &mut fast);
        let mut slow = vec![0];
        let mut st = State {
            start: None,
            class: 0,
            space: None,
        };
        let mut i = 0;
        while i < b.len() {
            i = cutter.step(b, i, lead, &mut st, &mut slow);
        }
        (fast, slow)
    }

    /// The masks of ASCII blocks class every byte as `class_of` does.
    #[test]
    fn ascii_blocks_class_bytes_as_characters() {
        let table = unicode::table();
        for x in 0u8..128 {
            let k = class_of(table, x as char);
            let want = match x {
                b'a'..=b'z' | b'A'..=b'Z' => CASED,
                b'0'..=b'9' => DIGIT,
                _ => OTHER,
            };
            assert_eq!(k, want, "byte {x}");
        }
    }

    /// The table of the BMP holds `class_of` of every character in it.
    #[test]
    fn the_bmp_table_holds_each_characters_class() {
        let table = unicode::table();
        let classes = bmp_classes();
        for cp in 0..1u32 << 16 {
            if let Some(c) = char::from_u32(cp) {
                assert_eq!(classes[cp as usize], class_of(table, c), "{c:?}");
            }
        }
    }

    /// Blocks cut where one character at a time cuts: random lines of
    /// spaces and their runs, "▁", letters, digits, marks, scripts, emoji
    /// and punctuation, crossing blocks, under every option.
    #[test]
    fn blocks_cut_where_characters_cut() {
        let pieces = [
            " ",
            "   ",
            "\u{2581}",
            "a",
            "Word",
            "x",
            "7",
            "42",
            ",",
            ".\t",
            "é",
            "a\u{300}",
            "\u{300}",
            "日本語",
            "😀",
            "Ωμέγα",
            "_",
            "\r",
            "ABCdef",
            "  1",
            // Runs of other characters: scripts of 2, 3 and 4 bytes, their
            // digits (Arabic-Indic, Devanagari, mathematical), marks after
            // them, "▁" inside and after them, caseless next to cased.
            "Привет",
            "мир\u{2581}",
            "\u{665}\u{666}",
            "كتبت",
            "\u{915}\u{94d}\u{937}",
            "\u{967}\u{968}",
            "ภาษาไทย",
            "中文字",
            "\u{1d7d8}\u{1d7d9}",
            "\u{20000}\u{20001}",
            "\u{301}",
            "\u{2581}\u{2581}",
            "ÀÉ",
            "«»—",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for round in 0..3000 {
            let (digits, runs, view) = (round % 2 == 0, round % 3 != 0, round % 5 != 0);
            let cutter = UnitCutter::new(digits, runs, view);
            let lead = round % 7 == 0;
            let mut text = String::from(if lead { "\n" } else { "" });
            let len = next(120);
            for _ in 0..len {
                let p = pieces[next(pieces.len())];
                // Mostly words of one script between spaces, as prose:
                // ASCII, or (one round in four) Cyrillic and Chinese.
                let filler = match round % 4 {
                    3 => ["мир", " ", "中文"],
                    _ => ["the", " ", "of"],
                };
                text.push_str(if next(3) == 0 { p } else { filler[next(3)] });
            }
            let (fast, slow) = both(&cutter, text.as_bytes(), lead);
            assert_eq!(
                fast, slow,
                "{text:?} digits {digits} runs {runs} view {view}"
            );
        }
    }
}
