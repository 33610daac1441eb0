//! Special-token matching: leftmost-longest, so when two special tokens
//! overlap, the longest wins (tiktoken's and HF's rule).

use aho_corasick::{AhoCorasick, MatchKind};

use super::PatternError;

/// Leftmost-longest matcher over the special-token strings, or None if there are none.
pub fn special_matcher(special_tokens: &[String]) -> Result<Option<AhoCorasick>, PatternError> {
    if special_tokens.is_empty() {
        return Ok(None);
    }
    if let Some(t) = special_tokens.iter().find(|t| t.is_empty()) {
        return Err(PatternError::EmptySpecialToken(t.clone()));
    }
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(special_tokens)
        .map(Some)
        .map_err(|e| PatternError::SpecialMatcher(e.to_string()))
}
