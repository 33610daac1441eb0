//! The general path: tokenizer.json pipelines (HF tokenizers' semantics) that
//! are more than one preset regex. The presets keep their fast path in
//! `encode`; a tokenizer with a pipeline goes through here instead:
//!
//! 1. added tokens with `normalized: false` are cut out of the original text
//!    (`added`, HF's rules lstrip / rstrip / single_word);
//! 2. each part between them is normalized (`normalize`: NFC, NFKC, Lowercase,
//!    Strip, Replace, Prepend, ... in order), and added tokens with
//!    `normalized: true` are cut out of the result;
//! 3. each remaining part is pre-tokenized by the steps in order (`split`:
//!    each Split cuts every piece so far; ByteLevel's `add_prefix_space`
//!    puts a space before every piece that does not start with one);
//! 4. the caller merges each piece's UTF-8 bytes (byte-level BPE), or
//!    counts it as a word (training).
//!
//! `walk` runs steps 1-3 on a text for both encoding and counting.
//!
//! Every step is HF's own semantics, checked against HF tokenizers in
//! tests/test_pipeline.py. Offsets: with alignments asked for, every piece
//! comes with the original byte span of each of its bytes.

mod added;
pub mod normalize;
mod split;
mod walk;

pub use added::{AddedMatcher, AddedRule, Part};
pub use normalize::{Alignments, Form, Normalizer};
pub use split::{Behavior, Split};
pub use walk::{Chunk, Specials};

use std::borrow::Cow;

use crate::pretokenize::{PatternError, Preset, SearchError};

/// One pre-tokenizer step.
pub enum Step {
    Split(Split),
    /// ByteLevel's `add_prefix_space`: a space before every piece that does not start with one.
    PrefixSpace,
}

/// Normalizers and pre-tokenizer steps.
pub struct Pipeline {
    normalizers: Vec<Normalizer>,
    steps: Vec<Step>,
}

/// A pre-token of a normalized text: bytes `start..end`, after a space that
/// is not in the text when `space` (put there by `Step::PrefixSpace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
    pub space: bool,
}

impl Pipeline {
    pub fn new(normalizers: Vec<Normalizer>, steps: Vec<Step>) -> Self {
        Pipeline { normalizers, steps }
    }

    /// Does normalization ever change a text?
    pub fn normalizes(&self) -> bool {
        !self.normalizers.is_empty()
    }

    /// The normalized `text`; `align`, if given, must hold one entry per byte
    /// of `text` and is rewritten to one per byte of the result. A text every
    /// normalizer leaves as it is (ASCII or NFC text under NFC) is borrowed,
    /// not copied, and `align` is left as it is.
    pub fn normalize<'t>(&self, text: &'t str, mut align: Option<&mut Alignments>) -> Cow<'t, str> {
        if self.normalizers.iter().all(|n| n.leaves(text)) {
            return Cow::Borrowed(text);
        }
        Cow::Owned(
            self.normalizers
                .iter()
                .fold(text.to_string(), |t, n| n.apply(t, align.as_deref_mut())),
        )
    }

    /// The preset of a pipeline whose pre-tokenization is one Isolated Split
    /// by that preset (Qwen2's NFC + Split + ByteLevel without its regex):
    /// its pieces of a normalized text are the preset's pieces of it, which
    /// the encoder can find on its presets' path.
    pub fn preset_only(&self) -> Option<Preset> {
        match self.steps.as_slice() {
            [Step::Split(split)] => split.preset_isolated(),
            _ => None,
        }
    }

    /// The pre-tokens of `text` (already normalized, holding no added token).
    pub fn pieces(&self, text: &str) -> Result<Vec<Piece>, SearchError> {
        let mut pieces = if text.is_empty() {
            vec![]
        } else {
            vec![Piece {
                start: 0,
                end: text.len(),
                space: false,
            }]
        };
        let mut ranges = Vec::new();
        let mut spaced = String::new();
        for step in &self.steps {
            match step {
                Step::PrefixSpace => {
                    for p in &mut pieces {
                        p.space = p.space || !text[p.start..p.end].starts_with(' ');
                    }
                }
                Step::Split(split) => {
                    let mut next = Vec::with_capacity(pieces.len() * 4);
                    for p in pieces {
                        ranges.clear();
                        let body = &text[p.start..p.end];
                        if !p.space {
                            split.split(body, &mut ranges)?;
                            next.extend(ranges.iter().map(|&(a, b)| Piece {
                                start: p.start + a,
                                end: p.start + b,
                                space: false,
                            }));
                            continue;
                        }
                        spaced.clear();
                        spaced.push(' ');
                        spaced.push_str(body);
                        split.split(&spaced, &mut ranges)?;
                        // Spans of the spaced text, one byte longer: the space is byte 0.
                        next.extend(ranges.iter().map(|&(a, b)| Piece {
                            start: p.start + a.max(1) - 1,
                            end: p.start + b - 1,
                            space: a == 0,
                        }));
                    }
                    pieces = next;
                }
            }
        }
        Ok(pieces)
    }
}

/// The bytes of `piece` of `text`, the space included (written to `buf` only then).
pub fn piece_bytes<'a>(text: &'a str, piece: Piece, buf: &'a mut Vec<u8>) -> &'a [u8] {
    let body = &text.as_bytes()[piece.start..piece.end];
    if !piece.space {
        return body;
    }
    buf.clear();
    buf.push(b' ');
    buf.extend_from_slice(body);
    buf
}

/// Convenience for building a Split step from tokenizer.json fields.
pub fn split_step(pattern: &str, behavior: &str, invert: bool) -> Result<Step, PatternError> {
    let behavior = Behavior::parse(behavior).ok_or_else(|| PatternError::Invalid {
        pattern: pattern.to_string(),
        message: format!("unknown Split behavior {behavior:?}"),
    })?;
    Ok(Step::Split(Split::new(pattern, behavior, invert)?))
}
