//! The tables the SentencePiece encoder merges with.
//!
//! A *part* is a string that can be a symbol while a word is merged: every
//! mergeable piece (it may be the result of a merge) and every character of
//! one (the symbols merging starts from). Parts are named by dense codes, and
//! `pairs` maps (left code, right code) to the code of their concatenation
//! when it is a mergeable piece: every split of every mergeable piece into two
//! parts, so a pair merges exactly when SentencePiece's `pieces_.find(left +
//! right)` succeeds. The pair's priority is the rank of the merged piece's
//! score (`rank`), equal scores sharing a rank.
//!
//! A character in no mergeable piece gets `INERT`, a code no pair holds.
//!
//! `bigrams` holds every pair of adjacent characters inside a mergeable piece.
//! Between two characters that are not such a pair no merge can ever happen
//! (a merged symbol is a piece, and would contain them side by side), so a
//! text can be cut there into words that merge alone: the words of a
//! normalized text, cached like pre-tokens.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::encode::tables::PairTable;

use super::model::Kind;

/// Rank of a part that is never a merge result, and of a pair that does not merge.
pub const NO_RANK: u32 = u32::MAX;
/// Id of a part that is not a piece (its bytes fall back, or it is `<unk>`).
pub const NO_ID: u32 = u32::MAX;
/// The size of a byte table of the word-start test on two ASCII bytes,
/// indexed by the two bytes as one little-endian `u16` (`Vocab::ascii_starts`):
/// any `u16` is an index in bounds.
pub const ASCII_PAIRS: usize = 1 << 16;

/// A piece as the tables see it.
pub struct PieceSpec<'a> {
    pub text: &'a str,
    pub id: u32,
    pub kind: Kind,
    /// Merge priority (lower first); None: never made by a merge.
    pub rank: Option<u32>,
}

/// The merge tables of one vocabulary.
pub struct Vocab {
    /// Part code -> the id it is output as (NO_ID: not a piece).
    pub(super) ids: Vec<u32>,
    /// Part code -> rank of merging into it (NO_RANK: no merge makes it).
    pub(super) ranks: Vec<u32>,
    pairs: PairTable,
    ascii: [u32; 128],
    chars: FxHashMap<char, u32>,
    /// The code of characters in no mergeable piece.
    pub(super) inert: u32,
    /// Bit `y` of `ascii_bigrams[x]`: the ASCII characters x, y are adjacent in some piece.
    ascii_bigrams: [u128; 128],
    bigrams: FxHashSet<u64>,
    /// The bigrams with "▁" (between most words): bit `x` of `before_space`:
    /// the ASCII character x, then "▁"; of `after_space`: "▁", then x.
    before_space: u128,
    after_space: u128,
    /// `ascii_bigrams` as word starts (1: x, y never join, a word starts at
    /// y) at `y << 8 | x`, the two bytes of the text read as one `u16`: a
    /// load for the pair and one for the test, no shift (`scan`); and the
    /// same with the space standing for "▁" (the space view of text before
    /// normalization). The scan uses only x, y < 128 (it reads other pairs
    /// in steps it then drops), so the table takes 16 KiB of cache like a
    /// 128 x 128 one; 64 KiB make every `u16` an index in bounds.
    start_bytes: Box<[[u8; ASCII_PAIRS]; 2]>,
    /// Byte -> id of its `<0xNN>` piece (NO_ID: none).
    pub(super) byte_ids: [u32; 256],
    pub(super) unk_id: u32,
    pub(super) byte_fallback: bool,
}

#[inline]
fn bigram_key(x: char, y: char) -> u64 {
    (x as u64) << 32 | y as u64
}

impl Vocab {
    /// The tables of `pieces` (distinct texts). `chars_merge`: characters
    /// that are no piece themselves still merge into pieces that hold them
    /// (SentencePiece); false: such a character never merges (HF tokenizers,
    /// where it becomes byte or unknown tokens before any merge).
    pub fn new(
        pieces: &[PieceSpec<'_>],
        unk_id: u32,
        byte_fallback: bool,
        chars_merge: bool,
    ) -> Self {
        let mut by_text: FxHashMap<&str, usize> = FxHashMap::default();
        let (mut ids, mut ranks) = (Vec::new(), Vec::new());
        let mut byte_ids = [NO_ID; 256];
        // Every piece that is a part: mergeable ones (by their rank), and any
        // single character (an initial symbol, output as its id).
        for p in pieces {
            if p.kind == Kind::Byte {
                if let Some(b) = super::model::byte_of_piece(p.text) {
                    byte_ids[b as usize] = p.id;
                }
            }
            let single = p.text.chars().nth(1).is_none();
            if !(p.kind.is_mergeable() || single) || by_text.contains_key(p.text) {
                continue;
            }
            by_text.insert(p.text, ids.len());
            ids.push(if p.id == unk_id { NO_ID } else { p.id });
            ranks.push(if p.kind.is_mergeable() {
                p.rank.unwrap_or(NO_RANK)
            } else {
                NO_RANK
            });
        }
        let mergeable: Vec<&PieceSpec<'_>> = pieces
            .iter()
            .filter(|p| p.kind.is_mergeable() && p.rank.is_some())
            .collect();
        // Characters of mergeable pieces that are no piece: parts with no id.
        if chars_merge {
            for p in &mergeable {
                for (i, c) in p.text.char_indices() {
                    let s = &p.text[i..i + c.len_utf8()];
                    if !by_text.contains_key(s) {
                        by_text.insert(s, ids.len());
                        ids.push(NO_ID);
                        ranks.push(NO_RANK);
                    }
                }
            }
        }
        let inert = ids.len() as u32;
        let (mut ascii, mut chars) = ([inert; 128], FxHashMap::default());
        for (&text, &code) in &by_text {
            let mut cs = text.chars();
            if let (Some(c), None) = (cs.next(), cs.next()) {
                match c as usize {
                    a if a < 128 => ascii[a] = code as u32,
                    _ => {
                        chars.insert(c, code as u32);
                    }
                }
            }
        }
        let mut pairs = Vec::new();
        let (mut ascii_bigrams, mut bigrams) = ([0u128; 128], FxHashSet::default());
        for p in &mergeable {
            let merged = by_text[p.text] as u32;
            for (i, _) in p.text.char_indices().skip(1) {
                let (left, right) = (&p.text[..i], &p.text[i..]);
                if let (Some(&l), Some(&r)) = (by_text.get(left), by_text.get(right)) {
                    pairs.push((l as u32, r as u32, merged));
                }
            }
            let mut it = p.text.chars().peekable();
            while let (Some(x), Some(&y)) = (it.next(), it.peek()) {
                if (x as u32) < 128 && (y as u32) < 128 {
                    ascii_bigrams[x as usize] |= 1 << (y as u32);
                } else {
                    bigrams.insert(bigram_key(x, y));
                }
            }
        }
        let space = '\u{2581}';
        let ascii_with = |f: &dyn Fn(char) -> u64| {
            (0..128u8).fold(0u128, |bits, x| {
                bits | (u128::from(bigrams.contains(&f(x as char))) << x)
            })
        };
        let before_space = ascii_with(&|x| bigram_key(x, space));
        let after_space = ascii_with(&|y| bigram_key(space, y));
        let mut view_bigrams = ascii_bigrams;
        let spaces = bigrams.contains(&bigram_key(space, space));
        for x in 0..128usize {
            let (to_space, from_space) = (before_space >> x & 1, after_space >> x & 1);
            view_bigrams[x] = view_bigrams[x] & !(1u128 << 32) | to_space << 32;
            view_bigrams[32] = view_bigrams[32] & !(1u128 << x) | from_space << x;
        }
        view_bigrams[32] = view_bigrams[32] & !(1u128 << 32) | u128::from(spaces) << 32;
        Vocab {
            start_bytes: Box::new([start_bytes(&ascii_bigrams), start_bytes(&view_bigrams)]),
            pairs: PairTable::new(&pairs, ids.len() + 1),
            before_space,
            after_space,
            ids,
            ranks,
            ascii,
            chars,
            inert,
            ascii_bigrams,
            bigrams,
            byte_ids,
            unk_id,
            byte_fallback,
        }
    }

    /// The code of character `c`.
    #[inline]
    pub(super) fn char_code(&self, c: char) -> u32 {
        match c as usize {
            a if a < 128 => self.ascii[a],
            _ => self.chars.get(&c).copied().unwrap_or(self.inert),
        }
    }

    /// The code of the part `left` + `right` if it is a mergeable piece
    /// (NO_ID if not), and the rank of that merge.
    #[inline]
    pub(super) fn merge(&self, left: u32, right: u32) -> (u32, u32) {
        if left == self.inert || right == self.inert {
            return (NO_ID, NO_RANK);
        }
        let merged = self.pairs.get(left, right);
        if merged == crate::encode::tables::NO_RANK {
            return (NO_ID, NO_RANK);
        }
        (merged, self.ranks[merged as usize])
    }

    /// May a merge ever join the characters `x` and `y` (adjacent in some piece)?
    #[inline]
    pub(super) fn joins(&self, x: char, y: char) -> bool {
        let (a, b) = (x as u32, y as u32);
        match (a < 128, b < 128) {
            (true, true) => self.ascii_bigrams[a as usize] >> b & 1 == 1,
            (true, false) if y == '\u{2581}' => self.before_space >> a & 1 == 1,
            (false, true) if x == '\u{2581}' => self.after_space >> b & 1 == 1,
            _ => self.bigrams.contains(&bigram_key(x, y)),
        }
    }

    /// The word-start test of two ASCII characters as a byte table at
    /// `y << 8 | x` (1: no piece holds x, y side by side, so a word starts
    /// at y), of normalized text or, with `view`, of the space view.
    #[inline]
    pub(super) fn ascii_starts(&self, view: bool) -> &[u8; ASCII_PAIRS] {
        &self.start_bytes[usize::from(view)]
    }
}

/// Bit rows of the ASCII join test as a byte table of word starts (see
/// `Vocab::start_bytes`).
fn start_bytes(rows: &[u128; 128]) -> [u8; ASCII_PAIRS] {
    let mut bytes = [0u8; ASCII_PAIRS];
    for (x, row) in rows.iter().enumerate() {
        for y in 0..128 {
            bytes[y << 8 | x] = (row >> y & 1 == 0) as u8;
        }
    }
    bytes
}
