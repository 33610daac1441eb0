//! Normalizers of HF tokenizers' `tokenizer.json` (`normalizers/*.rs` there):
//! Unicode normal forms (the `unicode-normalization` crate), Lowercase, Strip,
//! Replace, Prepend; a Sequence is a list of them applied in order.
//!
//! Each step rewrites the text and, when asked, carries an alignment along:
//! for every byte of the normalized text, the byte range of the original text
//! it came from (HF's `NormalizedString` alignments), so that offsets can be
//! given in the original text.

use fancy_regex::Regex as FancyRegex;
use unicode_normalization::{is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick, IsNormalized, UnicodeNormalization};

use crate::pretokenize::PatternError;

/// For each byte of a normalized text, the range of original bytes it stands for.
pub type Alignments = Vec<(u32, u32)>;

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
    Strip { left: bool, right: bool },
    /// Replace every match of the regex with `content`.
    Replace { regex: FancyRegex, content: String },
    /// Put `prefix` before a text that is not empty.
    Prepend(String),
}

impl Normalizer {
    /// A Replace normalizer; `pattern` is a regex (HF escapes a String pattern first).
    pub fn replace(pattern: &str, content: &str) -> Result<Self, PatternError> {
        let regex = FancyRegex::new(pattern)
            .map_err(|e| PatternError::Invalid { pattern: pattern.to_string(), message: e.to_string() })?;
        Ok(Normalizer::Replace { regex, content: content.to_string() })
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
                let start = if *left { text.len() - text.trim_start_matches(char::is_whitespace).len() } else { 0 };
                let end = if *right { text.trim_end_matches(char::is_whitespace).len() } else { text.len() };
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
                    w.push(content, m.start(), m.end());
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

/// Normalize `text` to `form`. The text is cut into chunks that normalize
/// independently (see `starts_chunk`), so each chunk's output is aligned with
/// the chunk: exact, and per character wherever the text is mostly ASCII.
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
    let mut start = 0;
    let mut chunk = String::new();
    let bounds = text.char_indices().filter(|&(i, c)| i > 0 && starts_chunk(c)).map(|(i, _)| i).chain([text.len()]);
    for end in bounds {
        let part = &text[start..end];
        chunk.clear();
        match form {
            Form::Nfc => chunk.extend(part.nfc()),
            Form::Nfd => chunk.extend(part.nfd()),
            Form::Nfkc => chunk.extend(part.nfkc()),
            Form::Nfkd => chunk.extend(part.nfkd()),
        }
        w.push(&chunk, start, end);
        start = end;
    }
    w.finish()
}

/// May the text be cut before `c` without changing its normal form? Yes when
/// nothing before `c` can combine with `c` or what it decomposes to: `c` is
/// not a mark (those reorder and compose with what precedes them: every
/// second character of a canonical composition pair is a mark, the vowel
/// signs of Brahmic scripts included), not a Hangul medial vowel or final
/// consonant (they compose with a syllable before them), and not one of the two
/// half-width kana voicing marks, the only other characters whose compatibility
/// decomposition starts with a combining mark (both facts checked over all of
/// Unicode in tests/test_pipeline.py).
fn starts_chunk(c: char) -> bool {
    c.is_ascii()
        || !(unicode_normalization::char::is_combining_mark(c)
            || ('\u{1160}'..='\u{11FF}').contains(&c)
            || ('\u{D7B0}'..='\u{D7FF}').contains(&c)
            || c == '\u{FF9E}'
            || c == '\u{FF9F}'
            || unicode_normalization::char::canonical_combining_class(c) != 0)
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
        Rewriter { input, out: String::with_capacity(input.len()), align }
    }

    /// Copy input bytes `start..end` unchanged.
    fn keep(&mut self, start: usize, end: usize) {
        self.out.push_str(&self.input[start..end]);
        if let Some((old, new)) = &mut self.align {
            new.extend_from_slice(&old[start..end]);
        }
    }

    /// Write `s` in place of input bytes `start..end`.
    fn push(&mut self, s: &str, start: usize, end: usize) {
        self.out.push_str(s);
        if let Some((old, new)) = &mut self.align {
            let span = if start < end {
                (old[start].0, old[end - 1].1)
            } else if start < old.len() {
                (old[start].0, old[start].0)
            } else {
                let last = old.last().map_or(0, |a| a.1);
                (last, last)
            };
            new.extend(std::iter::repeat_n(span, s.len()));
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
        let mut align: Alignments = (0..text.len() as u32).map(|i| (i, i + 1)).collect();
        let out = n.apply(text.to_string(), Some(&mut align));
        (out, align)
    }

    #[test]
    fn nfkc_aligns_each_output_byte_with_its_source() {
        let (out, align) = run(&Normalizer::Unicode(Form::Nfkc), "a\u{FB01}b");
        assert_eq!(out, "afib");
        assert_eq!(align, [(0, 1), (1, 4), (1, 4), (4, 5)]);
    }

    #[test]
    fn hangul_jamo_compose_across_what_would_be_a_cut() {
        let (out, _) = run(&Normalizer::Unicode(Form::Nfc), "\u{1100}\u{1161}\u{11A8}x");
        assert_eq!(out, "\u{AC01}x");
    }

    #[test]
    fn lowercase_strip_prepend_replace() {
        assert_eq!(run(&Normalizer::Lowercase, "ΑΣ").0, "ασ");
        let (out, align) = run(&Normalizer::Strip { left: true, right: true }, "  ab ");
        assert_eq!((out.as_str(), align), ("ab", vec![(2, 3), (3, 4)]));
        let (out, align) = run(&Normalizer::Prepend("\u{2581}".into()), "ab");
        assert_eq!(out, "\u{2581}ab");
        assert_eq!(align[..3], [(0, 1), (0, 1), (0, 1)]);
        let (out, align) = run(&Normalizer::replace(" ", "\u{2581}").unwrap(), "a b");
        assert_eq!((out.as_str(), align[1]), ("a\u{2581}b", (1, 2)));
    }
}
