//! Pre-tokenization: split text into pre-tokens ("words") with a regex, after
//! cutting it at special-token strings.
//!
//! Two engines, one contract: every split must equal Python's `regex` module
//! (`regex.findall(pattern, text)`) on the same pattern.
//!
//! * The presets (`gpt2`, `cl100k`, `o200k`, `llama3`, `qwen2`) run without a
//!   regex engine: each
//!   is a scalar state machine that mirrors its pattern branch by branch, with
//!   the look-ahead `\s+(?!\S)` and the backtracking of o200k's optional
//!   prefix written out (`scalar`), over a table of Unicode character classes
//!   built from the regex engine's own property data (`unicode`).
//! * SuperBPE's stage-2 pattern (`superbpe`) runs on its scalar state machine
//!   too (`scalar::superbpe`); its pieces are long (the rest of a line), so it
//!   has no block scanner.
//! * Custom patterns run on `fancy-regex`, the backtracking engine tiktoken uses.
//!
//! Special tokens are found with Aho-Corasick, leftmost-longest: when two special
//! tokens overlap, the longest wins.

pub mod blocks;
mod presets;
mod scalar;
mod special;
pub mod unicode;

/// The special-token matcher's type (re-exported for crates that hold one).
pub use aho_corasick::AhoCorasick;
use fancy_regex::Regex as FancyRegex;

pub use presets::{
    is_preset, is_superbpe, resolve_pattern, Preset, CL100K_PATTERN, GPT2_PATTERN, LLAMA3_PATTERN,
    O200K_PATTERN, QWEN2_PATTERN, SUPERBPE_PATTERN,
};
pub use special::special_matcher;

/// Why a pattern or a set of special tokens cannot be compiled.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// The regex does not compile (the message is the engine's).
    #[error("invalid pattern {pattern:?}: {message}")]
    Invalid { pattern: String, message: String },
    /// A special token that is the empty string (it would match everywhere).
    #[error("special token {0:?} is empty")]
    EmptySpecialToken(String),
    /// The special-token matcher could not be built (too many or too long tokens).
    #[error("cannot build special-token matcher: {0}")]
    SpecialMatcher(String),
}

/// The pre-tokens of a text with a preset, as batches of boundaries: the
/// block scanner where the CPU has AVX2, else the scalar state machine.
pub struct Pieces<'t> {
    text: &'t [u8],
    preset: Preset,
    pos: usize,
    walker: Option<blocks::Walker<'t>>,
}

impl<'t> Pieces<'t> {
    /// The pre-tokens of `text` (valid UTF-8).
    pub fn new(text: &'t [u8], preset: Preset) -> Self {
        let walker = blocks::available().then(|| blocks::Walker::new(text, preset, true));
        Pieces {
            text,
            preset,
            pos: 0,
            walker,
        }
    }

    /// Write the boundaries of up to `bounds.len() - 1` pre-tokens:
    /// `bounds[0]` is where the first starts, `bounds[i]` where pre-token
    /// i - 1 ends. Returns how many pre-tokens were written, 0 at the end.
    #[inline]
    pub fn fill(&mut self, bounds: &mut [usize]) -> usize {
        if let Some(walker) = &mut self.walker {
            return walker.fill(bounds);
        }
        bounds[0] = self.pos;
        let mut n = 0;
        while n + 1 < bounds.len() && self.pos < self.text.len() {
            self.pos = self.preset.advance(self.text, self.pos);
            n += 1;
            bounds[n] = self.pos;
        }
        n
    }
}

/// The pre-tokens of `text` by `preset`, in batches: `f(text bytes, bounds)`,
/// pre-token i being `text[bounds[i]..bounds[i + 1]]` (at most 129 bounds).
fn preset_batches<'t>(preset: Preset, text: &'t str, mut f: impl FnMut(&'t [u8], &[usize])) {
    let mut pieces = Pieces::new(text.as_bytes(), preset);
    let mut bounds = [0usize; 129];
    loop {
        let n = pieces.fill(&mut bounds);
        if n == 0 {
            break;
        }
        f(text.as_bytes(), &bounds[..=n]);
    }
}

/// `preset_batches` for a scalar scanner without a block scanner (`advance`:
/// the end of the pre-token that starts at a position).
fn scalar_batches<'t>(
    advance: fn(&[u8], usize) -> usize,
    text: &'t str,
    mut f: impl FnMut(&'t [u8], &[usize]),
) {
    let b = text.as_bytes();
    let mut bounds = [0usize; 129];
    let mut pos = 0;
    while pos < b.len() {
        bounds[0] = pos;
        let mut n = 0;
        while n < 128 && pos < b.len() {
            pos = advance(b, pos);
            n += 1;
            bounds[n] = pos;
        }
        f(b, &bounds[..=n]);
    }
}

/// The backtracking engine gave up on a text (a catastrophic custom pattern
/// exceeded its backtrack limit); the presets never fail.
#[derive(Debug, thiserror::Error)]
#[error("regex engine error: {0}")]
pub struct SearchError(pub String);

enum Engine {
    Preset(Preset),
    SuperBpe,
    Fancy(FancyRegex),
}

/// A compiled pre-tokenizer: regex plus special-token splitter.
pub struct PreTokenizer {
    engine: Engine,
    specials: Option<AhoCorasick>,
}

impl PreTokenizer {
    /// Compile `pattern` (a preset name or a regex) with the given special tokens.
    pub fn new(pattern: &str, special_tokens: &[String]) -> Result<Self, PatternError> {
        let pattern = resolve_pattern(pattern);
        let engine = match Preset::of(pattern) {
            Some(preset) => Engine::Preset(preset),
            None if pattern == SUPERBPE_PATTERN => Engine::SuperBpe,
            None => Engine::Fancy(FancyRegex::new(pattern).map_err(|e| PatternError::Invalid {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })?),
        };
        Ok(PreTokenizer {
            engine,
            specials: special_matcher(special_tokens)?,
        })
    }

    /// The preset this pre-tokenizer runs, None for a custom pattern.
    pub fn preset(&self) -> Option<Preset> {
        match self.engine {
            Engine::Preset(preset) => Some(preset),
            Engine::SuperBpe | Engine::Fancy(_) => None,
        }
    }

    /// Call `f` on every pre-token of `text`, which holds no special tokens.
    /// Errors only when the backtracking engine gives up (catastrophic pattern).
    pub fn for_each_piece<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str),
    ) -> Result<(), SearchError> {
        self.for_each_piece_batch(text, |segment, bounds| {
            for w in bounds.windows(2) {
                // SAFETY: pre-tokens of valid UTF-8 end on character boundaries.
                f(unsafe { std::str::from_utf8_unchecked(&segment[w[0]..w[1]]) });
            }
        })
    }

    /// The pre-tokens of `text` (no special tokens) in batches: `f(segment,
    /// bounds)` where pre-token i is `segment[bounds[i]..bounds[i + 1]]`;
    /// `segment` is a part of `text`, `bounds` holds at most 129 positions.
    fn for_each_piece_batch<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t [u8], &[usize]),
    ) -> Result<(), SearchError> {
        match &self.engine {
            Engine::Preset(preset) => {
                preset_batches(*preset, text, f);
                Ok(())
            }
            Engine::SuperBpe => {
                scalar_batches(scalar::superbpe, text, f);
                Ok(())
            }
            Engine::Fancy(_) => self.for_each_match(text, |start, end| {
                if start < end {
                    f(&text.as_bytes()[start..end], &[0, end - start]);
                }
            }),
        }
    }

    /// Call `f(start, end)` on the byte range of every match of the pattern in
    /// `text`, in order, empty matches included (HF's Split sees them; a
    /// preset has none).
    pub(crate) fn for_each_match(
        &self,
        text: &str,
        mut f: impl FnMut(usize, usize),
    ) -> Result<(), SearchError> {
        match &self.engine {
            Engine::Preset(preset) => {
                preset_batches(*preset, text, |_, bounds| {
                    for w in bounds.windows(2) {
                        f(w[0], w[1]);
                    }
                });
                Ok(())
            }
            Engine::SuperBpe => {
                scalar_batches(scalar::superbpe, text, |_, bounds| {
                    for w in bounds.windows(2) {
                        f(w[0], w[1]);
                    }
                });
                Ok(())
            }
            Engine::Fancy(re) => {
                for m in re.find_iter(text) {
                    let m = m.map_err(|e| SearchError(e.to_string()))?;
                    f(m.start(), m.end());
                }
                Ok(())
            }
        }
    }

    /// `for_each_piece_batch` over `text` cut at special tokens, which are
    /// dropped (they are hard boundaries and never counted as text).
    pub fn for_each_batch<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t [u8], &[usize]),
    ) -> Result<(), SearchError> {
        self.for_each_special_free(text, |part| self.for_each_piece_batch(part, &mut f))
    }

    /// Call `f` on the parts of `text` between special tokens.
    fn for_each_special_free<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str) -> Result<(), SearchError>,
    ) -> Result<(), SearchError> {
        let Some(ac) = &self.specials else {
            return f(text);
        };
        let mut start = 0;
        for m in ac.find_iter(text) {
            f(&text[start..m.start()])?;
            start = m.end();
        }
        f(&text[start..])
    }

    /// Call `f` on every pre-token of `text`, cutting first at special tokens,
    /// which are dropped (they are hard boundaries and never counted as text).
    pub fn for_each_word<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str),
    ) -> Result<(), SearchError> {
        self.for_each_special_free(text, |part| self.for_each_piece(part, &mut f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pattern: &str, text: &str) -> Vec<String> {
        let p = PreTokenizer::new(pattern, &[]).unwrap();
        let mut out = vec![];
        p.for_each_piece(text, |w| out.push(w.to_string())).unwrap();
        out
    }

    #[test]
    fn gpt2_emulation_equals_backtracking() {
        let texts = [
            "Hello world",
            "a  b",
            "a \n\n b",
            "  lead",
            "trail  ",
            "x\n",
            "it's 12 o'clock!!",
            " \t\n x",
            "\n\n\n",
            "",
            "a\n  ",
            "a.\n \n",
            "x\n\ny  ",
            "héllo wörld 123 ...",
            "a\u{a0}\u{a0}b",
        ];
        for pat in ["gpt2", "cl100k", "o200k", "llama3", "qwen2"] {
            let full = resolve_pattern(pat);
            for t in texts {
                let fancy = {
                    let re = FancyRegex::new(full).unwrap();
                    re.find_iter(t)
                        .map(|m| m.unwrap().as_str().to_string())
                        .collect::<Vec<_>>()
                };
                assert_eq!(split(pat, t), fancy, "pattern {pat} text {t:?}");
            }
        }
    }

    #[test]
    fn scanners_equal_regex() {
        let texts = [
            "it's 'S 'll'' ''s x'd a'b",
            "  \n\n x  y\t\tz \r\n",
            "end  ",
            "a\x1cb\x1f c\x0b\x0cd",
            "!!  ..a1b2 3.4",
            "caf\u{e9} na\u{ef}ve \u{a0}x 'caf\u{e9}",
            " \u{3000}y",
            "x \u{85}\n",
            "'\u{e9}t\u{e9}'",
            "IT'S We'Re DON'T x'\u{17f} 'K HTTPServer fooBar ABC1 a\n  ",
            "1234567 x12y (foo) ...a  \n\n  b\t\tc",
            "a.\n/b }\n/* c */\n\n",
            "x\t\ty \t!z \r\n\r\n",
            "1\u{b2}3 ab\u{301}c",
            // 2-byte characters, which the gpt2 and cl100k scanners classify.
            concat!(
                "\u{3b1}\u{3b2}\u{3b3} \u{43f}\u{440}\u{438}\u{432}\u{435}\u{442} \u{5e9}\u{5dc}",
                "\u{5d5}\u{5dd}, \u{627}\u{644}\u{639}\u{631}\u{628}\u{64a}\u{629}!",
            ),
            "\u{a0}\u{a0}x \u{a0}\u{a0} \u{85}y\u{a0}",
            "\u{b2}\u{b3}\u{b9}4 \u{660}\u{661}\u{662}\u{663}\u{664} 1\u{bd}",
            "\u{a0}\u{e9}t\u{e9} \u{bf}qu\u{e9}? \u{ab}\u{bb}\u{a7}\u{b6}",
            "e\u{301}t\u{301} \u{301}\u{301}x \u{2c6}\u{2b0}a",
            "\u{e9}\u{4e2d}\u{6587} \u{3b1}\u{2003}\u{3b2}",
            "'\u{17f} x'\u{e9} \u{c9}T\u{c9}'S",
            "\u{a0}\u{a0}",
            concat!(
                "\u{100}\u{17f}\u{180}\u{24f}\u{250}\u{2af}\u{370}\u{3ff}\u{400}\u{4ff}\u{500}",
                "\u{7ff} \u{5be}\u{5c0}\u{5c3}\u{5c6}",
            ),
            "\r\n\u{a0}\n\u{85} z",
            // Whitespace that ends the text, with newlines in it.
            "a\n  ",
            "a \r\n\t",
            "x\n\n",
            "x \u{a0}\n\u{3000}",
            "1\r\n",
            "\n \n ",
            // o200k's cased words: Lt, Lm, Lo and marks in and next to words.
            concat!(
                "\u{c0}\u{c9}cole \u{e9}T\u{c9} \u{c9}T\u{c9}'S \u{1c5}x \u{1c4}\u{1c5}\u{1c6} a",
                "\u{c9}b",
            ),
            "\u{2b0}a b\u{2b0} \u{5d0}b x\u{301}y \u{301}z",
            concat!(
                "\u{391}\u{3b8}\u{3ae}\u{3bd}\u{3b1} \u{41c}\u{41e}\u{421}\u{41a}\u{412}\u{410} ",
                "\u{410}\u{431}\u{432}'\u{434} \u{ab}\u{41c}\u{438}\u{440}\u{bb}",
            ),
        ];
        for pattern in [
            GPT2_PATTERN,
            CL100K_PATTERN,
            O200K_PATTERN,
            LLAMA3_PATTERN,
            QWEN2_PATTERN,
            SUPERBPE_PATTERN,
        ] {
            let re = FancyRegex::new(pattern).unwrap();
            for t in texts {
                let want: Vec<String> = re
                    .find_iter(t)
                    .map(|m| m.unwrap().as_str().to_string())
                    .collect();
                assert_eq!(split(pattern, t), want, "pattern {pattern} text {t:?}");
            }
        }
    }

    #[test]
    fn specials_are_dropped_longest_first() {
        let p = PreTokenizer::new("gpt2", &["<|a|>".into(), "<|a|><|b|>".into()]).unwrap();
        let mut out = vec![];
        p.for_each_word("x<|a|><|b|>y<|a|>z", |w| out.push(w))
            .unwrap();
        assert_eq!(out, ["x", "y", "z"]);
    }
}
