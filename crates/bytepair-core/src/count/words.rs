//! What cuts a text into the words counting counts: a pattern with its
//! special tokens (`PreTokenizer`, the presets' fast path), or a
//! tokenizer.json pipeline with its added tokens (`PipelineWords`), whose
//! words are the pieces encoding merges (`Pipeline::walk`, shared with
//! `encode`): normalized, pre-tokenized by every step, prefix spaces included.

use crate::cut::CutRule;
use crate::pipeline::{AddedRule, Chunk, Pipeline, Specials};
use crate::pretokenize::{PatternError, PreTokenizer, SearchError};

/// Words handed to a tally at a time by `PipelineWords` (the tally batches
/// them further for its prefetches).
const WORDS_PER_CALL: usize = 1024;

/// Cuts a text into words for counting.
pub trait SplitWords: Sync {
    /// Call `f(bytes, bounds)` on the words of `text`, special tokens left
    /// out: word i of a call is `bytes[bounds[i]..bounds[i + 1]]`. Errors only
    /// when a custom regex's engine gives up.
    fn split_words(&self, text: &str, f: impl FnMut(&[u8], &[usize])) -> Result<(), SearchError>;
}

impl SplitWords for PreTokenizer {
    fn split_words(&self, text: &str, f: impl FnMut(&[u8], &[usize])) -> Result<(), SearchError> {
        self.for_each_batch(text, f)
    }
}

/// A tokenizer.json pipeline and the special tokens that cut a text (each
/// with its added-token rules, as encoding with all of them allowed).
pub struct PipelineWords {
    pipeline: Pipeline,
    specials: Specials,
    /// Newline cuts when the pipeline allows them (`Pipeline::cuts_at_newlines`),
    /// else none: a file is then one text up to `chunks::FORCED_CUT`.
    cut: CutRule,
}

impl PipelineWords {
    /// Count through `pipeline`, cutting at `specials` (token, rules).
    pub fn new(
        pipeline: Pipeline,
        specials: Vec<(String, AddedRule)>,
    ) -> Result<Self, PatternError> {
        // Cuts never fall inside a token, as written or as normalized.
        let mut names: Vec<String> = specials.iter().map(|(t, _)| t.clone()).collect();
        names.extend(
            specials
                .iter()
                .map(|(t, _)| pipeline.normalize(t, None).into_owned()),
        );
        let cut = if pipeline.cuts_at_newlines() {
            CutRule::newlines(&names)
        } else {
            CutRule::never()
        };
        let tokens = specials
            .into_iter()
            .enumerate()
            .map(|(i, (t, rule))| (t, i as u32, rule));
        let specials = Specials::new(&pipeline, tokens)?;
        Ok(PipelineWords {
            pipeline,
            specials,
            cut,
        })
    }

    /// Where files may be cut into blocks counted apart.
    pub fn cut_rule(&self) -> &CutRule {
        &self.cut
    }
}

impl SplitWords for PipelineWords {
    fn split_words(
        &self,
        text: &str,
        mut f: impl FnMut(&[u8], &[usize]),
    ) -> Result<(), SearchError> {
        let mut bytes = Vec::new();
        let mut bounds = vec![0];
        self.pipeline
            .walk(&self.specials, text, false, &mut |chunk| {
                if let Chunk::Piece(piece, _) = chunk {
                    bytes.extend_from_slice(piece);
                    bounds.push(bytes.len());
                    if bounds.len() > WORDS_PER_CALL {
                        f(&bytes, &bounds);
                        bytes.clear();
                        bounds.truncate(1);
                    }
                }
                Ok::<(), SearchError>(())
            })?;
        if bounds.len() > 1 {
            f(&bytes, &bounds);
        }
        Ok(())
    }
}

/// Either way of cutting words, chosen at run time (the Python counter's).
pub enum Words {
    Pattern(PreTokenizer),
    Pipeline(PipelineWords),
}

impl SplitWords for Words {
    fn split_words(&self, text: &str, f: impl FnMut(&[u8], &[usize])) -> Result<(), SearchError> {
        match self {
            Words::Pattern(pre) => pre.split_words(text, f),
            Words::Pipeline(words) => words.split_words(text, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::{count_text, WordCounts};
    use crate::pipeline::{split_step, Form, Normalizer, Step};

    #[test]
    fn pipeline_words_are_the_pieces_encoding_merges() {
        let steps = vec![
            split_step(r"\p{N}", "Isolated", false).unwrap(),
            Step::PrefixSpace,
            split_step("gpt2", "Isolated", false).unwrap(),
        ];
        let pipeline = Pipeline::new(vec![Normalizer::Unicode(Form::Nfkc)], steps);
        let lstrip = AddedRule {
            lstrip: true,
            ..AddedRule::default()
        };
        let words = PipelineWords::new(pipeline, vec![("<m>".into(), lstrip)]).unwrap();
        let mut counts = WordCounts::default();
        count_text(&words, "\u{FB01}x 12 <m>\u{FF21}b", &mut counts).unwrap();
        // NFKC: "fix 12 <m>Ab"; digits split one by one, then each piece gets
        // a prefix space and gpt2's regex; lstrip takes the space before <m>.
        let mut got: Vec<(String, u64)> = counts
            .into_iter()
            .map(|(w, n)| (String::from_utf8(w).unwrap(), n))
            .collect();
        got.sort();
        let want = [(" ", 1), (" 1", 1), (" 2", 1), (" Ab", 1), (" fix", 1)];
        assert_eq!(got, want.map(|(w, n)| (w.to_string(), n)));
        assert!(
            words.cut_rule().last_cut(b"a\nb").is_none(),
            "a prefix space: no cuts"
        );
    }
}
