//! The scan for words (see `vocab`): the places in a text where two
//! characters that no mergeable piece holds side by side meet, found a batch
//! of words at a time. ASCII (nearly every byte of English and code) runs
//! through a byte table of the join test, eight bytes a step and without a
//! branch per byte (a word boundary is as unpredictable as the text); other
//! characters are tested one at a time (`Vocab::joins`).

use super::vocab::{Vocab, ASCII_PAIRS};
use super::words::{char_at, SPACE_CHAR};

/// A text's words, found in batches by `fill`.
pub(super) struct WordScan<'a> {
    v: &'a Vocab,
    b: &'a [u8],
    /// The join test of two ASCII bytes (`Vocab::ascii_joins`).
    table: &'a [u8; ASCII_PAIRS],
    /// `b` is the space view (a space stands for "▁", see `words`).
    view: bool,
    /// Where the next character to test starts, and the one before it (as
    /// it is in `b`, a space being a space).
    at: usize,
    prev: char,
    /// The start of the word being scanned.
    word: usize,
}

/// A run of eight ASCII bytes, as a mask of their top bits.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

impl<'a> WordScan<'a> {
    /// The scan of `b` (valid UTF-8, not empty); `view`: `b` is the space view.
    pub(super) fn new(v: &'a Vocab, b: &'a [u8], view: bool) -> Self {
        let (prev, len) = char_at(b, 0);
        WordScan {
            v,
            b,
            table: v.ascii_joins(view),
            view,
            at: len,
            prev,
            word: 0,
        }
    }

    /// The end of the first word of `b` after `before` (the dummy prefix's
    /// "▁", which it may join): 0 if it does not.
    pub(super) fn first_end(v: &'a Vocab, b: &'a [u8], view: bool, before: char) -> usize {
        let mut scan = WordScan {
            v,
            b,
            table: v.ascii_joins(view),
            view,
            at: 0,
            prev: before,
            word: 0,
        };
        let mut bounds = [0u32; 2];
        match scan.fill(&mut bounds) {
            0 => b.len(),
            _ => bounds[1] as usize,
        }
    }

    /// Fill `bounds` with the next words: `bounds[k]..bounds[k + 1]` is word
    /// `k` for `k` below the count returned (`bounds.len() - 1` but at the
    /// end of the text; 0 once the text is done).
    pub(super) fn fill(&mut self, bounds: &mut [u32]) -> usize {
        let (b, table, cap) = (self.b, self.table, bounds.len() - 1);
        if self.word == b.len() {
            return 0;
        }
        bounds[0] = self.word as u32;
        let (mut n, mut i, mut prev) = (0, self.at, self.prev);
        while i < b.len() && n < cap {
            let byte = b[i];
            if byte < 0x80 && (prev as u32) < 0x80 {
                // ASCII after ASCII: the table, eight bytes a step while the
                // batch has room for eight more words.
                let mut p = prev as usize;
                while n + 8 <= cap {
                    let Some(chunk) = b.get(i..i + 8) else { break };
                    let eight = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                    if eight & HIGH_BITS != 0 {
                        break;
                    }
                    for (k, &c) in chunk.iter().enumerate() {
                        let joined = table[p << 7 | c as usize];
                        bounds[n + 1] = (i + k) as u32;
                        n += 1 - joined as usize;
                        p = c as usize;
                    }
                    i += 8;
                }
                while i < b.len() && b[i] < 0x80 && n < cap {
                    let c = b[i] as usize;
                    bounds[n + 1] = i as u32;
                    n += 1 - table[p << 7 | c] as usize;
                    p = c;
                    i += 1;
                }
                prev = p as u8 as char;
                continue;
            }
            let (c, len) = char_at(b, i);
            if !self.joins(prev, c) {
                bounds[n + 1] = i as u32;
                n += 1;
            }
            prev = c;
            i += len;
        }
        if i == b.len() && n < cap {
            bounds[n + 1] = b.len() as u32;
            n += 1;
        }
        (self.at, self.prev, self.word) = (i, prev, bounds[n] as usize);
        n
    }

    /// May a merge join `x` and `y` (as they are in the text)?
    #[inline]
    fn joins(&self, x: char, y: char) -> bool {
        let as_view = |c: char| if self.view && c == ' ' { SPACE_CHAR } else { c };
        self.v.joins(as_view(x), as_view(y))
    }
}
