//! HF tokenizers' `Split` pre-tokenizer (`pre_tokenizers/split.rs` and
//! `NormalizedString::split` there), which the others reduce to: Digits is
//! Split(`\p{N}`), Punctuation Split(one punctuation character),
//! WhitespaceSplit Split(`\s`, Removed), ByteLevel's regex an Isolated Split.
//!
//! The regex's matches and the gaps between them are listed in order with a
//! flag (match or not; `invert` swaps the flags), then the behavior decides:
//! Removed drops the matches, Isolated keeps every match and gap as a piece,
//! MergedWithPrevious / MergedWithNext glue a match to the gap before / after
//! it, Contiguous joins runs of matches. Empty pieces are dropped.

use crate::pretokenize::{PatternError, PreTokenizer, Preset, SearchError};

/// What a Split does with the regex's matches (HF `SplitDelimiterBehavior`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

impl Behavior {
    /// The behavior named as in tokenizer.json.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "Removed" => Behavior::Removed,
            "Isolated" => Behavior::Isolated,
            "MergedWithPrevious" => Behavior::MergedWithPrevious,
            "MergedWithNext" => Behavior::MergedWithNext,
            "Contiguous" => Behavior::Contiguous,
            _ => return None,
        })
    }
}

/// One Split step.
pub struct Split {
    /// The pattern's matcher (its special tokens: none).
    pre: PreTokenizer,
    behavior: Behavior,
    invert: bool,
}

/// A span of a text: `(start, end, is_match)`.
type Span = (usize, usize, bool);

impl Split {
    /// Compile `pattern` (a regex or preset name).
    pub fn new(pattern: &str, behavior: Behavior, invert: bool) -> Result<Self, PatternError> {
        Ok(Split {
            pre: PreTokenizer::new(pattern, &[])?,
            behavior,
            invert,
        })
    }

    /// Is this an Isolated split by a preset, without invert (every match a piece)?
    pub fn preset_isolated(&self) -> Option<Preset> {
        self.pre
            .preset()
            .filter(|_| self.behavior == Behavior::Isolated && !self.invert)
    }

    /// The pieces of `text` (non-empty), as byte ranges, appended to `out`.
    pub fn split(&self, text: &str, out: &mut Vec<(usize, usize)>) -> Result<(), SearchError> {
        if self.preset_isolated().is_some() {
            // A preset's matches cover the text (no gaps) and are never empty:
            // the pieces of an Isolated split are the matches, found without
            // the lists of spans below.
            return self
                .pre
                .for_each_match(text, |start, end| out.push((start, end)));
        }
        let spans = self.find_matches(text)?;
        let kept = apply_behavior(spans, self.behavior);
        out.extend(
            kept.into_iter()
                .filter(|&(s, e, removed)| !removed && s < e)
                .map(|(s, e, _)| (s, e)),
        );
        Ok(())
    }

    /// HF's `Pattern::find_matches`: matches and the gaps between them, in order.
    fn find_matches(&self, text: &str) -> Result<Vec<Span>, SearchError> {
        let mut spans = Vec::new();
        let mut prev = 0;
        let mut add = |start: usize, end: usize, spans: &mut Vec<Span>| {
            if prev != start {
                spans.push((prev, start, self.invert));
            }
            spans.push((start, end, !self.invert));
            prev = end;
        };
        self.pre
            .for_each_match(text, |start, end| add(start, end, &mut spans))?;
        if prev != text.len() {
            spans.push((prev, text.len(), self.invert));
        }
        Ok(spans)
    }
}

/// HF's `NormalizedString::split` after `find_matches`: `(start, end, remove)`.
fn apply_behavior(spans: Vec<Span>, behavior: Behavior) -> Vec<Span> {
    match behavior {
        Behavior::Isolated => spans.into_iter().map(|(s, e, _)| (s, e, false)).collect(),
        Behavior::Removed => spans,
        Behavior::Contiguous => join_spans(spans, |is_match, previous| is_match == previous),
        Behavior::MergedWithPrevious => {
            join_spans(spans, |is_match, previous| is_match && !previous)
        }
        Behavior::MergedWithNext => {
            // The same join read from the end: a match joins the span after it.
            let reversed = spans.into_iter().rev().map(|(s, e, m)| (e, s, m)).collect();
            let mut joined: Vec<Span> =
                join_spans(reversed, |is_match, previous| is_match && !previous);
            joined.reverse();
            joined.into_iter().map(|(e, s, m)| (s, e, m)).collect()
        }
    }
}

/// Spans kept whole (`remove` false), each joined to the span before it
/// when `joins(is_match, previous_is_match)`.
fn join_spans(spans: Vec<Span>, joins: impl Fn(bool, bool) -> bool) -> Vec<Span> {
    let mut previous = false;
    let mut acc: Vec<Span> = Vec::with_capacity(spans.len());
    for (s, e, is_match) in spans {
        match acc.last_mut() {
            Some(last) if joins(is_match, previous) => last.1 = e,
            _ => acc.push((s, e, false)),
        }
        previous = is_match;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pattern: &str, behavior: Behavior, invert: bool, text: &str) -> Vec<String> {
        let mut out = vec![];
        Split::new(pattern, behavior, invert)
            .unwrap()
            .split(text, &mut out)
            .unwrap();
        out.into_iter()
            .map(|(s, e)| text[s..e].to_string())
            .collect()
    }

    #[test]
    fn behaviors_as_hf_documents_them() {
        // The examples of HF's `SplitDelimiterBehavior` docs, splitting on '-'.
        let text = "the-final--countdown";
        assert_eq!(
            pieces("-", Behavior::Removed, false, text),
            ["the", "final", "countdown"]
        );
        assert_eq!(
            pieces("-", Behavior::Isolated, false, text),
            ["the", "-", "final", "-", "-", "countdown"]
        );
        assert_eq!(
            pieces("-", Behavior::MergedWithPrevious, false, text),
            ["the-", "final-", "-", "countdown"]
        );
        assert_eq!(
            pieces("-", Behavior::MergedWithNext, false, text),
            ["the", "-final", "-", "-countdown"]
        );
        assert_eq!(
            pieces("-", Behavior::Contiguous, false, text),
            ["the", "-", "final", "--", "countdown"]
        );
        assert_eq!(pieces("-", Behavior::Removed, true, text), ["-", "-", "-"]);
    }
}
