//! SuperBPE's stage 2 (Liu et al., "SuperBPE: Space Travel for Language
//! Models", COLM 2025): merges learned over pieces that span words, on top of
//! the merges of an ordinary BPE (stage 1), with the limits the authors'
//! trainer puts on the tokens it makes (alisawuffles/tokenizers-superbpe @
//! 757f2a5, `tokenizers/src/models/bpe/trainer.rs`, `do_train_extend`):
//!
//! * no token holds `": "` (a colon then a space): their "special case
//!   colon", so a label and the text after it stay apart;
//! * no token holds more than `max_words` words (4 in every tokenizer they
//!   released, "mw4"), a word being a maximal run of bytes other than the
//!   space (0x20): `" by the way"` holds 3, `", and"` 2, `"  "` none.
//!
//! Both are checked on the pair's two tokens without joining their bytes
//! (`Shape`): a forbidden pair keeps its count, so the seams around it stay
//! exact, but is never queued, as a pair over `max_token_length` is not.
//! And no merge makes a token that exists already (a stage-1 token or an
//! earlier stage-2 one): one token, one id, so the result loads in tiktoken
//! and HF tokenizers with the ids it has here.
//!
//! The words merged are the stage-2 pieces of the corpus, each split first by
//! the stage-1 merges in rank order, as encoding splits it (`train_on_base`):
//! the authors' trainer does the same by replaying the inherited merges over
//! the stage-2 pieces.

use super::base::{train_seeded, Base};
use super::{Symbol, TrainError, TrainOptions, Trained, Trainer};
use crate::count::WordCounts;
use crate::progress::Progress;

/// The limits stage 2 puts on the tokens it makes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperwordRules {
    /// Most words (runs of bytes other than the space) in a token; None: no limit.
    pub max_words: Option<usize>,
}

impl Default for SuperwordRules {
    /// The authors' limits: at most 4 words.
    fn default() -> Self {
        SuperwordRules { max_words: Some(4) }
    }
}

/// What the rules need to know of a token's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Shape {
    /// Maximal runs of bytes other than b' '.
    words: u32,
    first_space: bool,
    last_space: bool,
    last_colon: bool,
    /// Holds b": ".
    colon_space: bool,
}

impl Shape {
    pub(super) fn of(bytes: &[u8]) -> Self {
        let mut words = 0;
        for (i, &c) in bytes.iter().enumerate() {
            if c != b' ' && (i == 0 || bytes[i - 1] == b' ') {
                words += 1;
            }
        }
        Shape {
            words,
            first_space: bytes.first() == Some(&b' '),
            last_space: bytes.last() == Some(&b' '),
            last_colon: bytes.last() == Some(&b':'),
            colon_space: bytes.windows(2).any(|w| w == b": "),
        }
    }

    /// The shape of the two tokens joined (both hold at least one byte).
    fn join(self, right: Shape) -> Shape {
        let fused = !self.last_space && !right.first_space;
        Shape {
            words: self.words + right.words - u32::from(fused),
            first_space: self.first_space,
            last_space: right.last_space,
            last_colon: right.last_colon,
            colon_space: self.colon_space
                || right.colon_space
                || (self.last_colon && right.first_space),
        }
    }
}

impl SuperwordRules {
    /// May the tokens of shapes `left` and `right` merge?
    pub(super) fn allows(&self, left: Shape, right: Shape) -> bool {
        let joined = left.join(right);
        !joined.colon_space && self.max_words.is_none_or(|m| joined.words as usize <= m)
    }
}

impl<S: Symbol> Trainer<S> {
    /// Merge only what `rules` allow from now on (SuperBPE's stage 2), and no
    /// token twice: pairs they forbid leave the queue.
    pub(super) fn set_rules(&mut self, rules: SuperwordRules) {
        let shapes = self.token_bytes.iter().map(|b| Shape::of(b)).collect();
        self.rules = Some((rules, shapes));
        self.taken.extend(self.token_bytes.iter().cloned());
        self.rebuild_queue();
    }
}

/// SuperBPE's stage 2: learn up to `num_merges` merges on top of `stage1`
/// (the stage-1 tokenizer, or any base tokenizer: the authors' "inherit
/// merges"), from `piece_counts`, the counts of the corpus's stage-2 pieces
/// (`crate::pretokenize::SUPERBPE_PATTERN` or another pattern that crosses
/// words). Each piece is split by the base's merges first, then the merge
/// loop goes on within `rules` and `options`, with the usual tie-break. Merges
/// are in the base's ids; merge `r` makes `stage1.first_new_id + r`.
///
/// # Errors
/// As [`super::train_on_base`].
pub fn train_superwords(
    piece_counts: WordCounts,
    stage1: Base<'_>,
    num_merges: usize,
    rules: SuperwordRules,
    options: &TrainOptions,
    progress: &Progress,
) -> Result<Trained, TrainError> {
    train_seeded(
        piece_counts,
        stage1,
        num_merges,
        Some(rules),
        options,
        progress,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(rules: SuperwordRules, a: &str, b: &str) -> bool {
        rules.allows(Shape::of(a.as_bytes()), Shape::of(b.as_bytes()))
    }

    #[test]
    fn shapes_join_as_the_bytes_do() {
        let parts = [
            " by", " the", "way", " ", "  ", ":", ": ", "a:", " x ", "::", "of the", "\n",
        ];
        for a in parts {
            for b in parts {
                let joined = format!("{a}{b}");
                assert_eq!(
                    Shape::of(a.as_bytes()).join(Shape::of(b.as_bytes())),
                    Shape::of(joined.as_bytes()),
                    "{a:?} + {b:?}"
                );
            }
        }
    }

    #[test]
    fn four_words_at_most_and_no_colon_then_space() {
        let rules = SuperwordRules::default();
        assert!(allowed(rules, " by the", " way"));
        assert!(allowed(rules, " in the middle", " of"));
        assert!(!allowed(rules, " in the middle", " of the"));
        assert!(allowed(rules, " in the middle", "s"), "a word goes on");
        assert!(!allowed(rules, "Note:", " the"));
        assert!(!allowed(rules, "a: b", "c"));
        assert!(allowed(rules, ":", ":"));
        let unlimited = SuperwordRules { max_words: None };
        assert!(allowed(unlimited, " a b c d", " e"));
        assert!(!allowed(unlimited, ":", " e"));
    }
}
