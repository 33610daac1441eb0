//! HF tokenizers' added-token matching (`tokenizer/added_vocabulary.rs`
//! there): leftmost-longest matches of the added tokens' strings, each with
//! its rules. `single_word`: a match with a word character (`\w`) right
//! before or after it is skipped; `lstrip` / `rstrip`: the whitespace before /
//! after the match is taken into the token (so it is not encoded); a token
//! with `normalized` is looked for in the normalized text, as its normalized
//! string, the others in the original text before normalization.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use fancy_regex::Regex as FancyRegex;

use super::PatternError;

/// The matching rules of one added token (tokenizer.json `added_tokens[]` flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddedRule {
    pub single_word: bool,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
}

impl AddedRule {
    /// The rule `rules` gives `token`, none of the flags when it gives none.
    pub fn of(rules: &[(String, AddedRule)], token: &str) -> AddedRule {
        rules
            .iter()
            .find(|(name, _)| name == token)
            .map_or_else(AddedRule::default, |(_, r)| *r)
    }
}

/// A set of added tokens to cut a text at.
pub struct AddedMatcher {
    ac: AhoCorasick,
    tokens: Vec<(u32, AddedRule)>,
}

/// A part of a text: `Some(id)` for an added token, None for text between them.
pub type Part = (Option<u32>, usize, usize);

fn is_word_char(c: char) -> bool {
    static WORD: OnceLock<FancyRegex> = OnceLock::new();
    let word = WORD.get_or_init(|| FancyRegex::new(r"\A\w\z").expect("a valid regex"));
    word.is_match(c.encode_utf8(&mut [0; 4])).unwrap_or(false)
}

impl AddedMatcher {
    /// A matcher over `(string to look for, id, rules)`; None when there are none.
    pub fn new(tokens: Vec<(String, u32, AddedRule)>) -> Result<Option<Self>, PatternError> {
        if tokens.is_empty() {
            return Ok(None);
        }
        if let Some((t, _, _)) = tokens.iter().find(|(t, _, _)| t.is_empty()) {
            return Err(PatternError::EmptySpecialToken(t.clone()));
        }
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(tokens.iter().map(|(t, _, _)| t.as_bytes()))
            .map_err(|e| PatternError::SpecialMatcher(e.to_string()))?;
        Ok(Some(AddedMatcher {
            ac,
            tokens: tokens.into_iter().map(|(_, id, rule)| (id, rule)).collect(),
        }))
    }

    /// Cut `text` into added tokens and the text between them, covering it in order
    /// (HF `AddedVocabulary::find_matches`).
    pub fn split(&self, text: &str) -> Vec<Part> {
        let mut parts = Vec::new();
        let mut done = 0;
        for m in self.ac.find_iter(text) {
            let (id, rule) = self.tokens[m.pattern().as_usize()];
            let (mut start, mut end) = (m.start(), m.end());
            if rule.single_word {
                let word_before = text[..start].chars().next_back().is_some_and(is_word_char);
                let word_after = text[end..].chars().next().is_some_and(is_word_char);
                if word_before || word_after {
                    continue;
                }
            }
            if rule.lstrip {
                start = text[..start]
                    .trim_end_matches(char::is_whitespace)
                    .len()
                    .max(done);
            }
            if rule.rstrip {
                end = text.len() - text[end..].trim_start_matches(char::is_whitespace).len();
            }
            if done < start {
                parts.push((None, done, start));
            }
            parts.push((Some(id), start, end));
            done = end;
        }
        if done < text.len() {
            parts.push((None, done, text.len()));
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_as_hf_tests_them() {
        // HF's `test_lstrip_unicode_space` and `test_single_word_is_correct`.
        let rule = AddedRule {
            single_word: true,
            lstrip: true,
            rstrip: true,
            normalized: false,
        };
        let m = AddedMatcher::new(vec![("<mask>".into(), 0, rule)])
            .unwrap()
            .unwrap();
        let text = "Hi <mask> there\t<mask>\t<mask>\u{2000}";
        let got: Vec<(Option<u32>, &str)> = m
            .split(text)
            .into_iter()
            .map(|(id, s, e)| (id, &text[s..e]))
            .collect();
        assert_eq!(
            got,
            [
                (None, "Hi"),
                (Some(0), " <mask> "),
                (None, "there"),
                (Some(0), "\t<mask>\t"),
                (Some(0), "<mask>\u{2000}")
            ]
        );
        let single = AddedRule {
            single_word: true,
            ..AddedRule::default()
        };
        let m = AddedMatcher::new(vec![("<mask>".into(), 0, single)])
            .unwrap()
            .unwrap();
        let text = "<mask> my name <mask> a<mask> <mask>ony <mask>";
        let ids: Vec<Option<u32>> = m.split(text).into_iter().map(|(id, _, _)| id).collect();
        assert_eq!(ids, [Some(0), None, Some(0), None, Some(0)]);
    }
}
