//! The scan for words (see `vocab`): the places in a text where two
//! characters that no mergeable piece holds side by side meet, found a batch
//! of words at a time. ASCII (nearly every byte of English and code) runs
//! through a byte table of the word-start test indexed by two bytes read as
//! one `u16`, eight bytes a step and without a branch per byte (a word
//! boundary is as unpredictable as the text); other characters are tested
//! one at a time (`Vocab::joins`).

use super::vocab::{Vocab, ASCII_PAIRS};
use super::words::{char_at, SPACE_CHAR};

/// A text's words, found in batches by `fill`.
pub(super) struct WordScan<'a> {
    v: &'a Vocab,
    b: &'a [u8],
    /// The word-start test of two ASCII bytes (`Vocab::ascii_starts`).
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

impl<'a> WordScan<'a> {
    /// The scan of `b` (valid UTF-8, not empty); `view`: `b` is the space view.
    pub(super) fn new(v: &'a Vocab, b: &'a [u8], view: bool) -> Self {
        let (prev, len) = char_at(b, 0);
        WordScan {
            v,
            b,
            table: v.ascii_starts(view),
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
            table: v.ascii_starts(view),
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
                // ASCII after ASCII (so `prev` is `b[i - 1]`): the table,
                // eight bytes a step while the batch has room for eight
                // more words, each pair of bytes read as one `u16`.
                debug_assert!(i >= 1 && b[i - 1] == prev as u8);
                while n + 8 <= cap && i + 8 <= b.len() {
                    let (mut m, mut high) = (0, 0);
                    for k in 0..8 {
                        // SAFETY: 1 <= i and i + 8 <= b.len(): bytes i + k - 1
                        // and i + k are in `b`. Read as a u16 from memory, not
                        // assembled from bytes (two shifts and an or more).
                        let pair =
                            unsafe { b.as_ptr().add(i + k - 1).cast::<u16>().read_unaligned() };
                        high |= pair;
                        // The byte at i + k starts a word if the table says so:
                        // written always, kept by advancing the count.
                        // SAFETY: m <= k < 8 and n + 8 <= cap < bounds.len().
                        unsafe { *bounds.get_unchecked_mut(n + 1 + m) = (i + k) as u32 };
                        m += table[pair as usize] as usize;
                    }
                    // A byte of the eight is not ASCII: the words of this step
                    // are dropped (the bounds past `n` are scratch).
                    if high & 0x8080 != 0 {
                        break;
                    }
                    n += m;
                    i += 8;
                }
                while i < b.len() && b[i] < 0x80 && n < cap {
                    let pair = u16::from_le_bytes([b[i - 1], b[i]]);
                    bounds[n + 1] = i as u32;
                    n += table[pair as usize] as usize;
                    i += 1;
                }
                prev = b[i - 1] as char;
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
