//! Normalizers of HF tokenizers' `tokenizer.json` (`normalizers/*.rs` there):
//! Unicode normal forms (`unicode-normalization-alignments`, the crate HF
//! uses), Lowercase, Strip, Replace, Prepend; a Sequence is a list of them
//! applied in order.
//!
//! Each step rewrites the text and, when asked, carries an alignment along:
//! for every byte of the normalized text, the byte range of the original
//! character it came from (HF's `NormalizedString` alignments, with HF's
//! rules for each step), so that offsets can be given in the original text.

use fancy_regex::Regex as FancyRegex;
// HF tokenizers' fork of `unicode-normalization`, which reports for every
// output character how it relates to the input (kept, added, or replacing
// several): the alignments HF computes offsets with, and its Unicode tables,
// so normalized text equals HF's byte for byte.
use unicode_normalization_alignments::{
    is_nfc, is_nfc_quick, is_nfd, is_nfd_quick, is_nfkc, is_nfkc_quick, is_nfkd, is_nfkd_quick,
    IsNormalized, UnicodeNormalization,
};

use crate::pretokenize::PatternError;

/// For each byte of a normalized text, the range of original bytes it stands for.
pub type Alignments = Vec<(u32, u32)>;

/// The alignments of an original text starting at byte `base`: each byte
/// stands for its whole character (HF's `NormalizedString::from`).
pub fn char_alignments(text: &str, base: usize) -> Alignments {
    let mut align = Vec::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        let span = ((base + i) as u32, (base + i + c.len_utf8()) as u32);
        align.extend(std::iter::repeat_n(span, c.len_utf8()));
    }
    align
}

/// Unicode normal forms (UAX #15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
}

/// One normalizer.
#[derive(Debug)]
pub enum Normalizer {
    Unicode(Form),
    /// Per character (`char::to_lowercase`), as HF: no final-sigma rule.
    Lowercase,
    /// Remove whitespace (`char::is_whitespace`) at the start and/or end.
    Strip {
        left: bool,
        right: bool,
    },
    /// Replace every match of the regex with `content`.
    Replace {
        regex: FancyRegex,
        content: String,
    },
    /// Put `prefix` before a text that is not empty.
    Prepend(String),
}

impl Normalizer {
    /// A Replace normalizer; `pattern` is a regex (HF escapes a String pattern first).
    pub fn replace(pattern: &str, content: &str) -> Result<Self, PatternError> {
        let regex = FancyRegex::new(pattern).map_err(|e| PatternError::Invalid {
            pattern: pattern.to_string(),
            message: e.to_string(),
        })?;
        Ok(Normalizer::Replace {
            regex,
            content: content.to_string(),
        })
    }

    /// Does `apply` leave `text` as it is? Known without a copy for the
    /// Unicode forms (ASCII is in every form; else the crate's own check,
    /// which needs no allocation) and Lowercase; false for the others.
    pub fn leaves(&self, text: &str) -> bool {
        match self {
            Normalizer::Unicode(_) if text.is_ascii() => true,
            Normalizer::Unicode(Form::Nfc) => is_nfc(text),
            Normalizer::Unicode(Form::Nfd) => is_nfd(text),
            Normalizer::Unicode(Form::Nfkc) => is_nfkc(text),
            Normalizer::Unicode(Form::Nfkd) => is_nfkd(text),
            Normalizer::Lowercase => {
                text.is_ascii() && !text.bytes().any(|b| b.is_ascii_uppercase())
            }
            _ => false,
        }
    }

    /// Apply to `text`, updating `align` (one entry per byte of `text`) if given.
    pub fn apply(&self, text: String, align: Option<&mut Alignments>) -> String {
        match self {
            Normalizer::Unicode(form) => unicode(*form, text, align),
            Normalizer::Lowercase => {
                if !text.chars().any(|c| c.is_uppercase() || !c.is_ascii()) {
                    return text;
                }
                let mut w = Rewriter::new(&text, align);
                for (i, c) in text.char_indices() {
                    let lower: String = c.to_lowercase().collect();
                    w.push(&lower, i, i + c.len_utf8());
                }
                w.finish()
            }
            Normalizer::Strip { left, right } => {
                let start = if *left {
                    text.len() - text.trim_start_matches(char::is_whitespace).len()
                } else {
                    0
                };
                let end = if *right {
                    text.trim_end_matches(char::is_whitespace).len()
                } else {
                    text.len()
                };
                let end = end.max(start);
                if let Some(a) = align {
                    a.truncate(end);
                    a.drain(..start);
                }
                text[start..end].to_string()
            }
            Normalizer::Replace { regex, content } => {
                let mut w = Rewriter::new(&text, align);
                let mut last = 0;
                for m in regex.find_iter(&text) {
                    let Ok(m) = m else { break };
                    w.keep(last, m.start());
                    // HF aligns the replacement with the match's last character.
                    w.insert(content, m.end());
                    last = m.end();
                }
                w.keep(last, text.len());
                w.finish()
            }
            Normalizer::Prepend(prefix) => {
                if text.is_empty() {
                    return text;
                }
                if let Some(a) = align {
                    let first = a[0];
                    a.splice(0..0, std::iter::repeat_n(first, prefix.len()));
                }
                let mut out = String::with_capacity(prefix.len() + text.len());
                out.push_str(prefix);
                out.push_str(&text);
                out
            }
        }
    }
}

/// Normalize `text` to `form` with HF tokenizers' own crate, so that both
/// the text and the alignments are HF's: each output character stands for the
/// input character it came from (a composed character for its first part).
fn unicode(form: Form, text: String, align: Option<&mut Alignments>) -> String {
    let done = match form {
        Form::Nfc => is_nfc_quick(text.chars()),
        Form::Nfd => is_nfd_quick(text.chars()),
        Form::Nfkc => is_nfkc_quick(text.chars()),
        Form::Nfkd => is_nfkd_quick(text.chars()),
    };
    if done == IsNormalized::Yes {
        return text;
    }
    let mut w = Rewriter::new(&text, align);
    match form {
        Form::Nfc => w.transform(text.nfc()),
        Form::Nfd => w.transform(text.nfd()),
        Form::Nfkc => w.transform(text.nfkc()),
        Form::Nfkd => w.transform(text.nfkd()),
    }
    w.finish()
}

/// Builds a rewritten text and, if asked, its alignments: every output byte of
/// `push(s, start, end)` stands for input bytes `start..end`.
struct Rewriter<'a> {
    input: &'a str,
    out: String,
    align: Option<(&'a mut Alignments, Alignments)>,
}

impl<'a> Rewriter<'a> {
    fn new(input: &'a str, align: Option<&'a mut Alignments>) -> Self {
        let align = align.map(|a| {
            let capacity = a.len();
            (a, Vec::with_capacity(capacity))
        });
        Rewriter {
            input,
            out: String::with_capacity(input.len()),
            align,
        }
    }

    /// Copy input bytes `start..end` unchanged.
    fn keep(&mut self, start: usize, end: usize) {
        self.out.push_str(&self.input[start..end]);
        if let Some((old, new)) = &mut self.align {
            new.extend_from_slice(&old[start..end]);
        }
    }

    /// Write `s` in place of input bytes `start..end` (one character or more).
    fn push(&mut self, s: &str, start: usize, end: usize) {
        self.out.push_str(s);
        if let Some((old, new)) = &mut self.align {
            new.extend(std::iter::repeat_n((old[start].0, old[end - 1].1), s.len()));
        }
    }

    /// Write `s` as added before input byte `at`: HF aligns added text with
    /// the character before it (the first one's start when there is none).
    fn insert(&mut self, s: &str, at: usize) {
        self.out.push_str(s);
        if let Some((old, new)) = &mut self.align {
            let span = if at > 0 {
                old[at - 1]
            } else {
                old.first().map_or((0, 0), |a| (a.0, a.0))
            };
            new.extend(std::iter::repeat_n(span, s.len()));
        }
    }

    /// Apply a stream of HF changes (`NormalizedString::transform`): each
    /// output character replaces the next input character (change 0), also
    /// removes the `-change` after it (change < 0), or is added (change > 0).
    fn transform(&mut self, changes: impl Iterator<Item = (char, isize)>) {
        let mut at = 0;
        for (c, change) in changes {
            let mut utf8 = [0; 4];
            let s = c.encode_utf8(&mut utf8);
            if change > 0 {
                self.insert(s, at);
                continue;
            }
            let mut rest = self.input[at..].chars();
            let replaced = rest.next().map_or(0, char::len_utf8);
            let removed: usize = rest.take(change.unsigned_abs()).map(char::len_utf8).sum();
            self.push(s, at, at + replaced.max(1));
            at += replaced + removed;
        }
    }

    fn finish(self) -> String {
        if let Some((old, new)) = self.align {
            *old = new;
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(n: &Normalizer, text: &str) -> (String, Alignments) {
        let mut align = char_alignments(text, 0);
        let out = n.apply(text.to_string(), Some(&mut align));
        (out, align)
    }

    #[test]
    fn unicode_forms_align_as_hf() {
        let (out, align) = run(&Normalizer::Unicode(Form::Nfkc), "a\u{FB01}b");
        assert_eq!(out, "afib");
        assert_eq!(align, [(0, 1), (1, 4), (1, 4), (4, 5)]);
        // A composed character stands for its first part (HF: "e\u{301}" -> "\u{e9}" at (0, 1)).
        let (out, align) = run(&Normalizer::Unicode(Form::Nfc), "\u{1100}\u{1161}\u{11A8}x");
        assert_eq!(out, "\u{AC01}x");
        assert_eq!(align, [(0, 3), (0, 3), (0, 3), (9, 10)]);
    }

    #[test]
    fn lowercase_strip_prepend_replace() {
        assert_eq!(run(&Normalizer::Lowercase, "ΑΣ").0, "ασ");
        let (out, align) = run(
            &Normalizer::Strip {
                left: true,
                right: true,
            },
            "  ab ",
        );
        assert_eq!((out.as_str(), align), ("ab", vec![(2, 3), (3, 4)]));
        let (out, align) = run(&Normalizer::Prepend("\u{2581}".into()), "ab");
        assert_eq!(out, "\u{2581}ab");
        assert_eq!(align[..3], [(0, 1), (0, 1), (0, 1)]);
        let (out, align) = run(&Normalizer::replace(" +", "\u{2581}").unwrap(), "a  b");
        assert_eq!((out.as_str(), align[1]), ("a\u{2581}b", (2, 3)));
    }
}
