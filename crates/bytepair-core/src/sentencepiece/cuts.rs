//! Safe cuts of a SentencePiece model's texts: positions where a text can be
//! cut so that the ids of its two halves, the second encoded as a
//! continuation (`Place::Continued`: no dummy prefix), joined, are the ids of
//! the whole. With them a long text is encoded in segments (a Ctrl-C check
//! between them, or one per thread), a file in chunks, a stream in blocks, by
//! the byte-level encoder's machinery (`encode::segments`, `file`,
//! `documents`).
//!
//! A cut sits between two ASCII bytes `a`, `b` (so it never splits a UTF-8
//! sequence, and replacing bad bytes per chunk equals replacing them in the
//! whole) where:
//!
//! * normalization reads each of them alone and keeps it (no charsmap rule
//!   and no user-defined piece holds either after its first byte, no rule
//!   starts with either): the normalized text is the two halves' normalized
//!   texts, joined; with `remove_extra_whitespaces` neither is a space (a
//!   half would lose it at its end or start);
//! * no mergeable piece holds their normalized characters side by side, so
//!   no merge crosses the cut (the words of `words.rs`), and no user-defined
//!   piece holds the second after its first character (none is matched
//!   across the cut);
//! * one of them is a piece (without byte fallback two unknown characters'
//!   `<unk>` would fuse across the cut);
//! * no special token's occurrence touches the cut (a text after a special
//!   token gets a dummy prefix, a continuation none).
//!
//! Models with UNUSED pieces (merged over the whole text), `ignore_merges`
//! (a text that is a piece whole) or the dummy prefix at the end have no cut.

use std::sync::Arc;

use crate::cut::{CutRule, CutTest};
use crate::encode::segments::EncodeSegment;
use crate::encode::EncodeError;

use super::encode::SpmEncoder;
use super::normalize::Place;
use super::vocab::NO_ID;
use super::words::SPACE_CHAR;

/// The cut test of one model (see the module's comment), on ASCII bytes.
#[derive(Debug)]
struct SpmCuts {
    /// Bit x: a cut may sit next to the ASCII byte x (normalization keeps it alone).
    alone: u128,
    /// Bit y of `joins[x]`: a piece holds the normalized x, y side by side,
    /// or a user-defined piece holds y after its first character.
    joins: [u128; 128],
    /// Bit x: the normalized x is a piece (never `<unk>`); all bits set when
    /// `<unk>` runs are not fused.
    known: u128,
    specials: Vec<Vec<u8>>,
    /// Bit x: the byte x is in some special token.
    in_specials: [bool; 256],
}

impl CutTest for SpmCuts {
    fn is_cut(&self, buf: &[u8], i: usize) -> bool {
        let (a, b) = (buf[i - 1], buf[i]);
        a < 0x80
            && b < 0x80
            && self.alone >> a & self.alone >> b & 1 == 1
            && self.joins[a as usize] >> b & 1 == 0
            && (self.known >> a | self.known >> b) & 1 == 1
            && !self.touches_special(buf, i)
    }

    fn reach(&self) -> usize {
        self.specials.iter().map(Vec::len).max().unwrap_or(0) + 1
    }
}

impl SpmCuts {
    /// Does an occurrence of a special token cover, end at or start at `i`?
    /// One cut off by the end of `buf` counts as one.
    fn touches_special(&self, buf: &[u8], i: usize) -> bool {
        if !self.in_specials[buf[i - 1] as usize] && !self.in_specials[buf[i] as usize] {
            return false;
        }
        self.specials.iter().any(|s| {
            (i.saturating_sub(s.len())..=i).any(|j| {
                let n = (buf.len() - j).min(s.len());
                buf[j..j + n] == s[..n]
            })
        })
    }
}

impl SpmEncoder {
    /// The rule of this model's safe cuts (see the module's comment), for
    /// the segment, file and document encoders; `CutRule::never()` for a
    /// model with none.
    pub fn cut_rule(&self) -> CutRule {
        let rules = self.normalizer.rules();
        if self.whole_text || self.whole.is_some() || rules.treat_whitespace_as_suffix {
            return CutRule::never();
        }
        let escape = rules.escape_whitespaces;
        let char_of = |x: u8| match x {
            b' ' if escape => SPACE_CHAR,
            _ => x as char,
        };
        // User-defined pieces: the bytes and characters after their first.
        let (mut user_later, mut space_later) = (0u128, false);
        for &id in &self.user_ids {
            let text = &self.model.pieces[id as usize].text;
            for c in text.chars().skip(1) {
                match c {
                    SPACE_CHAR => space_later = true,
                    c if (c as u32) < 0x80 => user_later |= 1 << c as u32,
                    _ => {}
                }
            }
            for &byte in &text.as_bytes()[1..] {
                if byte < 0x80 {
                    user_later |= 1 << byte;
                }
            }
        }
        let (rule_first, rule_later) = rules
            .charsmap
            .as_ref()
            .map_or((0, 0), |map| map.ascii_in_rules());
        let mut alone = !(rule_first | rule_later);
        if rules.remove_extra_whitespaces {
            alone &= !(1 << b' ');
        }
        let mut joins = [0u128; 128];
        let mut known = if self.fuses_unk { 0 } else { u128::MAX };
        for x in 0..128u8 {
            let c = char_of(x);
            let code = self.vocab.char_code(c);
            if self
                .vocab
                .ids
                .get(code as usize)
                .is_some_and(|&id| id != NO_ID)
            {
                known |= 1 << x;
            }
            for y in 0..128u8 {
                let d = char_of(y);
                let later = user_later >> y & 1 == 1 || (d == SPACE_CHAR && space_later);
                if later || self.vocab.joins(c, d) {
                    joins[x as usize] |= 1 << y;
                }
            }
        }
        let specials: Vec<Vec<u8>> = self
            .specials
            .iter()
            .map(|(s, _)| s.clone().into_bytes())
            .collect();
        let mut in_specials = [false; 256];
        for &byte in specials.iter().flatten() {
            in_specials[byte as usize] = true;
        }
        CutRule::from_test(Arc::new(SpmCuts {
            alone,
            joins,
            known,
            specials,
            in_specials,
        }))
    }
}

/// The segment encoder of a SentencePiece model (`encode::segments`): a
/// segment that starts its text is encoded as `encode_into` does, one after
/// a safe cut as a continuation; with `continued`, the text itself continues
/// an input (a block of a stream after the first) and no segment starts it.
pub struct SpmSegments<'a> {
    pub encoder: &'a SpmEncoder,
    pub allowed: &'a [String],
    pub disallowed: &'a [String],
    pub continued: bool,
}

impl EncodeSegment for SpmSegments<'_> {
    fn encode_segment(
        &self,
        segment: &str,
        at_start: bool,
        ids: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        let first = if at_start && !self.continued {
            Place::Start
        } else {
            Place::Continued
        };
        self.encoder
            .encode_at(segment, first, self.allowed, self.disallowed, ids)
    }
}
