//! Safe cuts: positions where a text can be split so that its two halves
//! pre-tokenize (and match special tokens) exactly as the whole text does.
//! Counting streams files in blocks cut there, and encoding cuts long texts
//! there into segments (a Ctrl-C check between them, or one per thread).
//! Encoders whose texts are not pre-tokenized by a pattern bring their own
//! test of a cut (`CutTest`: SentencePiece models' words).

use std::sync::Arc;

/// A test of safe cuts for an encoder that is not the patterns' (a
/// SentencePiece model: `sentencepiece::cuts`): the ids of the two halves
/// of a text cut where it says yes, joined, are the ids of the whole (the
/// second half encoded as a continuation, see `encode::segments`).
pub trait CutTest: Send + Sync + std::fmt::Debug {
    /// Is `i` (in `1..buf.len()`) a safe cut of `buf`, a window of a text that
    /// may go on after it? The test must not depend on bytes past `buf` but
    /// for the last `reach()` positions, where what follows may veto a cut.
    fn is_cut(&self, buf: &[u8], i: usize) -> bool;
    /// How far back from a window's end what follows it can veto a cut.
    fn reach(&self) -> usize;
}

/// Where a text may be cut so that its two halves pre-tokenize (and match
/// special tokens) exactly as the whole text does. Used to stream files in
/// blocks for counting and for `encode_iterable`.
///
/// Two kinds of cut, both between two ASCII bytes (so a cut never splits a
/// UTF-8 sequence, and replacing invalid bytes per block equals replacing them
/// in the whole text):
///
/// * **Newline**: right after a `\n` preceded by a printable ASCII character and
///   followed by an ASCII letter or digit (`x\ny`). No preset branch matches a
///   newline followed by a letter or digit (o200k's `[\r\n/]*` does continue
///   into `/`, hence the restriction on `y`), and the block that ends in `x\n`
///   pre-tokenizes its tail exactly as the whole text would: the `\n` is either
///   taken by the punctuation run before it (cl100k, o200k, llama3, qwen2) or is
///   a pre-token of its own, `\s+(?!\S)` at the end of the block and `\s+` in
///   the whole text (llama3, qwen2: `\s*[\r\n]+` in both).
///   Used for custom patterns too (documented: a custom pattern that matches
///   across `x\ny` sees different splits).
/// * **Letter, punctuation** (presets only, for text without newlines): between
///   an ASCII letter and ASCII punctuation other than `'`. No branch of a
///   preset's pattern matches a letter followed by such a character
///   (o200k's letter runs may end in a contraction, hence no `'`), so no
///   pre-token crosses the cut; and no match that ends before the cut can end
///   with a look-ahead there, because the character before it is not whitespace.
///
/// SuperBPE's stage-2 pattern (`superbpe`) ends a pre-token at every `\n`
/// (no branch matches past one, and none looks behind), so its rule cuts
/// right after any `\n`, and only there.
///
/// A cut inside (or at the end of the buffer, possibly inside) an occurrence
/// of a special token is never taken.
#[derive(Clone, Debug)]
pub struct CutRule {
    newline: bool,
    any_newline: bool,
    letter_punct: bool,
    specials: Vec<Vec<u8>>,
    /// An encoder's own test, instead of the newline and letter-punctuation cuts.
    test: Option<Arc<dyn CutTest>>,
}

impl CutRule {
    /// The rule for `pattern` (preset name or regex) with these special tokens.
    pub fn new(pattern: &str, special_tokens: &[String]) -> Self {
        CutRule {
            letter_punct: crate::pretokenize::is_preset(pattern),
            any_newline: crate::pretokenize::is_superbpe(pattern),
            ..CutRule::newlines(special_tokens)
        }
    }

    /// The newline cut alone (a custom pattern's rule), never inside these tokens.
    pub fn newlines(special_tokens: &[String]) -> Self {
        CutRule {
            newline: true,
            any_newline: false,
            letter_punct: false,
            specials: special_tokens
                .iter()
                .map(|t| t.as_bytes().to_vec())
                .collect(),
            test: None,
        }
    }

    /// The cuts `test` finds (it sees special tokens itself): exact.
    pub fn from_test(test: Arc<dyn CutTest>) -> Self {
        CutRule {
            test: Some(test),
            ..CutRule::never()
        }
    }

    /// No cut at all: a text is one block (a pipeline that acts at the ends of a text).
    pub fn never() -> Self {
        CutRule {
            newline: false,
            any_newline: false,
            letter_punct: false,
            specials: vec![],
            test: None,
        }
    }

    /// Are the cuts proven for this pattern? True for the presets, `superbpe`
    /// and an encoder's own test; for a custom pattern the newline cut is an
    /// assumption (fine for streaming counts of a corpus, not for encoding one
    /// text).
    pub fn is_exact(&self) -> bool {
        self.letter_punct || self.any_newline || self.test.is_some()
    }

    /// The last safe cut in `buf` (an index in `1..buf.len()`), if any.
    pub fn last_cut(&self, buf: &[u8]) -> Option<usize> {
        self.last_cut_from(buf, 1)
    }

    /// The last safe cut in `buf` at `from` or later.
    fn last_cut_from(&self, buf: &[u8], from: usize) -> Option<usize> {
        (from.max(1)..buf.len())
            .rev()
            .find(|&i| self.is_cut(buf, i) && !self.inside_special(buf, i))
    }

    /// How far back from a buffer's end a cut can be vetoed by what follows:
    /// a special token cut off by the end of the buffer.
    fn reach(&self) -> usize {
        let test = self.test.as_ref().map_or(0, |t| t.reach());
        (self.specials.iter().map(Vec::len).max().unwrap_or(0) + 2).max(test)
    }

    fn is_cut(&self, buf: &[u8], i: usize) -> bool {
        if let Some(test) = &self.test {
            return test.is_cut(buf, i);
        }
        let (before, after) = (buf[i - 1], buf[i]);
        if self.any_newline {
            return before == b'\n';
        }
        let newline = self.newline
            && before == b'\n'
            && i >= 2
            && buf[i - 2].is_ascii_graphic()
            && after.is_ascii_alphanumeric();
        newline
            || (self.letter_punct
                && before.is_ascii_alphabetic()
                && after.is_ascii_punctuation()
                && after != b'\'')
    }

    /// Could an occurrence of a special token cover both `buf[i - 1]` and `buf[i]`?
    /// An occurrence cut off by the end of `buf` counts as one.
    fn inside_special(&self, buf: &[u8], i: usize) -> bool {
        self.specials.iter().any(|s| {
            (1..s.len().min(i + 1)).any(|k| {
                let tail = &buf[i - k..];
                let n = tail.len().min(s.len());
                tail[..n] == s[..n]
            })
        })
    }
}

/// The segments of `text` of about `max_bytes` each, each ending at the last
/// safe cut within its window (the window doubles while it holds none): their
/// ids, joined, are the ids of `text` when `rule.is_exact()`. With a rule that
/// is not exact the whole text is one segment; an empty text is one empty segment.
///
/// Yields `(byte offset of the segment in text, segment)`.
pub fn segments<'t>(
    rule: &'t CutRule,
    text: &'t str,
    max_bytes: usize,
) -> impl Iterator<Item = (usize, &'t str)> + 't {
    let mut next_start = Some(0);
    std::iter::from_fn(move || {
        let start = next_start?;
        let end = segment_end(rule, text, start, max_bytes.max(1));
        next_start = (end < text.len()).then_some(end);
        Some((start, &text[start..end]))
    })
}

/// End of the segment starting at `start`: the last safe cut within
/// `max_bytes` (doubling the window while there is none), or the end.
fn segment_end(rule: &CutRule, text: &str, start: usize, max_bytes: usize) -> usize {
    if !rule.is_exact() {
        return text.len();
    }
    let mut window = max_bytes;
    // Positions before `from` hold no cut (seen in a smaller window), so each
    // byte is looked at about once: linear in a text with no cut at all.
    let mut from = 1;
    while start + window < text.len() {
        // A cut sits between two ASCII bytes: always a char boundary.
        if let Some(cut) = rule.last_cut_from(&text.as_bytes()[start..start + window], from) {
            return start + cut;
        }
        from = window.saturating_sub(rule.reach());
        window = window.saturating_mul(2);
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_cut_needs_non_space_on_both_sides() {
        let rule = CutRule::new("my custom pattern", &[]);
        assert_eq!(rule.last_cut(b"a\nb"), Some(2));
        assert_eq!(rule.last_cut(b"a\n b"), None);
        assert_eq!(rule.last_cut(b"a \nb"), None);
        assert_eq!(rule.last_cut(b"a\nb\nc"), Some(4));
        assert_eq!(
            rule.last_cut(b"}\n/"),
            None,
            "o200k matches a brace, newline and slash as one pre-token"
        );
        assert_eq!(
            rule.last_cut(b"word."),
            None,
            "letter-punctuation cuts are for presets only"
        );
    }

    #[test]
    fn superbpe_cuts_after_every_newline_only() {
        let rule = CutRule::new("superbpe", &[]);
        assert!(rule.is_exact());
        assert_eq!(rule.last_cut(b"a\n  b"), Some(2));
        assert_eq!(rule.last_cut(b"a\n\n"), Some(2));
        assert_eq!(
            rule.last_cut(b"ab.cd"),
            None,
            "a line is one piece up to its punctuation"
        );
    }

    #[test]
    fn letter_punctuation_cut_for_presets() {
        let rule = CutRule::new("o200k", &[]);
        assert_eq!(rule.last_cut(b"ab.cd"), Some(2));
        assert_eq!(rule.last_cut(b"ab.cd,e"), Some(5));
        assert_eq!(
            rule.last_cut(b"it's"),
            None,
            "o200k keeps a contraction with its word"
        );
        assert_eq!(rule.last_cut(b"a .b1,"), None);
    }

    #[test]
    fn no_cut_inside_a_special_token() {
        let rule = CutRule::new("gpt2", &["<|endoftext|>".to_string(), "x\nY".to_string()]);
        assert_eq!(rule.last_cut(b"a.<|endoftext|>"), Some(1));
        assert_eq!(
            rule.last_cut(b"a.<|endoft"),
            Some(1),
            "a special token may continue past the buffer"
        );
        assert_eq!(rule.last_cut(b"ab\nx\nY"), Some(3));
        assert_eq!(CutRule::new("gpt2", &[]).last_cut(b"ab\nx\nY"), Some(5));
    }

    #[test]
    fn segments_join_to_the_text_and_end_at_cuts() {
        let rule = CutRule::new("gpt2", &[]);
        let text = "one line\nanother line\nthird.Fourth\n".repeat(50);
        let parts: Vec<(usize, &str)> = segments(&rule, &text, 64).collect();
        assert!(parts.len() > 10);
        assert_eq!(parts.iter().map(|(_, s)| *s).collect::<String>(), text);
        for (offset, segment) in &parts {
            assert_eq!(&text[*offset..*offset + segment.len()], *segment);
        }
        assert_eq!(segments(&rule, "", 64).collect::<Vec<_>>(), [(0, "")]);
        let custom = CutRule::new("\\w+", &[]);
        assert_eq!(
            segments(&custom, &text, 64).count(),
            1,
            "custom patterns are not cut"
        );
    }
}
