//! The general path of `Encoder`: a tokenizer.json pipeline (`crate::pipeline`)
//! instead of the pattern and tiktoken's special-token split. The presets'
//! path in `super` is untouched; `encode_into` and dropout come here when the
//! encoder has a pipeline.

use super::cache::{with_scratch, Scratch};
use super::{DisallowedSpecial, EncodeError, Encoder, EncoderError, PatternError, SearchError};
use crate::pipeline::{piece_bytes, AddedRule, Chunk, Pipeline, Specials};

/// The byte span of the text each id covers.
pub type Spans = Vec<(usize, usize)>;

/// What an encoder with a tokenizer.json pipeline encodes through (the general
/// path, see `crate::pipeline`): the pipeline, its special tokens' added-token
/// rules and the matchers built from them.
pub(super) struct PipelineEncoding {
    pipeline: Pipeline,
    /// The rules of each special token, in the order of `Encoder::specials`.
    rules: Vec<AddedRule>,
    /// The walk's matchers over every special token (all allowed).
    every_special: Specials,
    /// Whether a text can take the presets' path after normalization
    /// (`Encoder::encode_plain_pipeline`).
    pub(super) plain: bool,
}

impl PipelineEncoding {
    /// The walk's matchers over the special tokens of `specials` named in `names`.
    fn specials(
        &self,
        specials: &[(String, u32)],
        names: &[String],
    ) -> Result<Specials, PatternError> {
        let chosen = specials
            .iter()
            .zip(&self.rules)
            .filter(|((t, _), _)| names.contains(t));
        Specials::new(
            &self.pipeline,
            chosen.map(|((t, id), rule)| (t.clone(), *id, *rule)),
        )
    }
}

impl Encoder {
    /// This encoder with a tokenizer.json pipeline: text is normalized and
    /// pre-tokenized by `pipeline` (not by the pattern), and special tokens are
    /// matched with HF's added-token `rules` (by token string; a special token
    /// without rules has none of them).
    pub fn with_pipeline(
        mut self,
        pipeline: Pipeline,
        rules: &[(String, AddedRule)],
    ) -> Result<Self, EncoderError> {
        let rules: Vec<AddedRule> = self
            .specials
            .iter()
            .map(|(t, _)| AddedRule::of(rules, t))
            .collect();
        // Plain: the pieces are the encoder's own preset's, and every special
        // token is cut out of the original text as tiktoken's split does
        // (leftmost-longest, no lstrip / rstrip / single_word, none looked
        // for in the normalized text).
        let plain = pipeline
            .preset_only()
            .is_some_and(|p| self.pre.preset() == Some(p))
            && rules.iter().all(|r| *r == AddedRule::default());
        let mut encoding = PipelineEncoding {
            pipeline,
            rules,
            every_special: Specials::default(),
            plain,
        };
        let names: Vec<String> = self.specials.iter().map(|(t, _)| t.clone()).collect();
        encoding.every_special = encoding.specials(&self.specials, &names)?;
        self.pipeline = Some(encoding);
        Ok(self)
    }

    /// Does this encoder run a tokenizer.json pipeline (the general path)?
    pub fn has_pipeline(&self) -> bool {
        self.pipeline.is_some()
    }

    /// `encode_into` through a plain pipeline `g` (normalizers, then one
    /// Isolated Split by the encoder's preset; special tokens without rules,
    /// `g.plain`): the special tokens are cut out of the original
    /// text with tiktoken's policy (`encode_with`), and each part between
    /// them is normalized, then encoded on the presets' path
    /// (`encode_pieces`). That is the walk's result for such a pipeline (HF
    /// normalizes each part between added tokens of the original text, then
    /// splits it), without the walk's list of pieces and call per piece; a
    /// part already normalized (ASCII or NFC text under NFC) is not copied.
    pub(super) fn encode_plain_pipeline(
        &self,
        g: &PipelineEncoding,
        text: &str,
        (allowed, disallowed): (&[String], &[String]),
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        debug_assert!(g.plain);
        self.encode_with(text, allowed, disallowed, out, &mut |part, out| {
            let normalized = g.pipeline.normalize(part, None);
            self.encode_pieces(&normalized, scratch, out)
        })
    }

    /// Does this encoder's pipeline encode on the presets' path
    /// (`encode_plain_pipeline`)? False without a pipeline.
    pub fn has_plain_pipeline(&self) -> bool {
        self.pipeline.as_ref().is_some_and(|g| g.plain)
    }

    /// The pre-tokens of `text` (no special tokens treated): by the pipeline
    /// when there is one (normalized, prefix spaces included), else the pattern.
    pub fn pretokenize(&self, text: &str) -> Result<Vec<Vec<u8>>, SearchError> {
        let mut out = vec![];
        match &self.pipeline {
            Some(g) => {
                let norm = g.pipeline.normalize(text, None);
                let mut buf = Vec::new();
                for piece in g.pipeline.pieces(&norm)? {
                    out.push(piece_bytes(&norm, piece, &mut buf).to_vec());
                }
            }
            None => self
                .pre
                .for_each_piece(text, |w| out.push(w.as_bytes().to_vec()))?,
        }
        Ok(out)
    }

    /// The general path: cut `text` at the `allowed` special tokens with HF's
    /// rules, normalize and pre-tokenize the rest, and hand each special token
    /// and piece to `take` in order (`Pipeline::walk`). Original byte spans
    /// come with them when `spans` (else every span is (0, 0)).
    ///
    /// A `disallowed` special token is an error where its string is in
    /// `text`, and, when its rule is `normalized`, also where HF would find it:
    /// in the normalized text (NFKC makes `<ｍａｓｋ>` the token `<mask>`), so
    /// normalization cannot smuggle a control token in either.
    pub(super) fn encode_general<F>(
        &self,
        g: &PipelineEncoding,
        text: &str,
        (allowed, disallowed): (&[String], &[String]),
        out: &mut Vec<u32>,
        spans: bool,
        take: &mut F,
    ) -> Result<(), EncodeError>
    where
        F: FnMut(Chunk<'_>, &mut Vec<u32>) -> Result<(), EncodeError>,
    {
        self.check_disallowed(text, disallowed)?;
        let normalized = |t: &String| {
            self.specials
                .iter()
                .zip(&g.rules)
                .any(|((s, _), r)| s == t && r.normalized)
        };
        let hidden: Vec<String> = disallowed
            .iter()
            .filter(|t| normalized(t))
            .cloned()
            .collect();
        let owned;
        let specials = if allowed.len() == self.specials.len() {
            &g.every_special
        } else {
            owned = g.specials(&self.specials, &[allowed, &hidden].concat())?;
            &owned
        };
        let hidden_ids: Vec<u32> = hidden.iter().filter_map(|t| self.special_id(t)).collect();
        let found = |id: u32, (offset, _): (usize, usize)| {
            let token = self
                .specials
                .iter()
                .find(|(_, i)| *i == id)
                .map_or_else(String::new, |(t, _)| t.clone());
            EncodeError::Disallowed(DisallowedSpecial { token, offset })
        };
        let result = g
            .pipeline
            .walk(specials, text, spans, &mut |chunk| match chunk {
                Chunk::Special(id, span) if hidden_ids.contains(&id) => Err(found(id, span)),
                chunk => take(chunk, out),
            });
        match result {
            // Found without spans: walk again with them, to the token's offset.
            Err(EncodeError::Disallowed(_)) if !spans => {
                g.pipeline
                    .walk(specials, text, true, &mut |chunk| match chunk {
                        Chunk::Special(id, span) if hidden_ids.contains(&id) => {
                            Err(found(id, span))
                        }
                        _ => Ok(()),
                    })
            }
            result => result,
        }
    }

    /// `encode_general` without spans: a special token's id, then `piece`
    /// for the ids of each piece.
    pub(super) fn encode_general_pieces(
        &self,
        g: &PipelineEncoding,
        text: &str,
        policy: (&[String], &[String]),
        out: &mut Vec<u32>,
        piece: &mut impl FnMut(&[u8], &mut Vec<u32>) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        self.encode_general(g, text, policy, out, false, &mut |chunk, out| match chunk {
            Chunk::Special(id, _) => {
                out.push(id);
                Ok(())
            }
            Chunk::Piece(bytes, _) => piece(bytes, out),
        })
    }

    /// `encode` through the pipeline, with the byte span of `text` each id
    /// covers (HF's `Encoding.offsets` in bytes: a token from normalized text
    /// spans the original characters it came from; tokens that share a
    /// character share its span). Without a pipeline, None.
    pub fn encode_with_spans(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
    ) -> Option<Result<(Vec<u32>, Spans), EncodeError>> {
        let g = self.pipeline.as_ref()?;
        let mut out = Vec::new();
        let mut spans = Vec::new();
        let result = with_scratch(self.tag, |scratch| {
            self.encode_general(
                g,
                text,
                (allowed, disallowed),
                &mut out,
                true,
                &mut |chunk, out| {
                    let (piece, span_of) = match chunk {
                        Chunk::Special(id, span) => {
                            out.push(id);
                            spans.push(span);
                            return Ok(());
                        }
                        Chunk::Piece(piece, span_of) => (piece, span_of),
                    };
                    let before = out.len();
                    self.encode_piece(piece, scratch, out)?;
                    let mut at = 0;
                    for &id in &out[before..] {
                        let len = self.vocab.decoder.len(id);
                        spans.push(span_of(at, at + len));
                        at += len;
                    }
                    Ok(())
                },
            )
        });
        Some(result.map(|()| (out, spans)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{split_step, Form, Normalizer, Step};

    /// Bytes, "ab", "é" (NFC) and "<|e|>" over an NFC + Split(qwen2) pipeline.
    fn nfc_encoder(rules: &[(String, AddedRule)]) -> Encoder {
        let merged = vec![b"ab".to_vec(), "\u{e9}".as_bytes().to_vec()];
        let pipeline = Pipeline::new(
            vec![Normalizer::Unicode(Form::Nfc)],
            vec![split_step("qwen2", "Isolated", false).unwrap()],
        );
        Encoder::from_merged(merged, &["<|e|>".to_string()], "qwen2")
            .unwrap()
            .with_pipeline(pipeline, rules)
            .unwrap()
    }

    /// The ids by the walk (`encode_general_pieces`), the reference.
    fn walked(enc: &Encoder, text: &str, allowed: &[String]) -> Result<Vec<u32>, EncodeError> {
        let g = enc.pipeline.as_ref().unwrap();
        let mut out = vec![];
        enc.encode_general_pieces(g, text, (allowed, &[]), &mut out, &mut |piece, out| {
            enc.encode_word_into(piece, out)
        })?;
        Ok(out)
    }

    #[test]
    fn plain_pipeline_path_equals_the_walk() {
        let enc = nfc_encoder(&[]);
        assert!(enc.pipeline.as_ref().unwrap().plain);
        let all = ["<|e|>".to_string()];
        let texts = [
            "ab caf\u{e9} ab",
            // Decomposed: NFC makes "é" (id 257), the walk and the plain path alike.
            "ab cafe\u{301} ab",
            "\u{1100}\u{1161}\u{11a8} ab",
            // A special token is cut from the original text before NFC, which
            // would make ">\u{338}" one character (U+226F) and hide it.
            "x<|e|>\u{338}e\u{301}<|e|>",
            "",
        ];
        for text in texts {
            for allowed in [&all[..], &[]] {
                let got = enc.encode(text, allowed, &[]).unwrap();
                assert_eq!(got, walked(&enc, text, allowed).unwrap(), "{text:?}");
            }
        }
        assert_eq!(
            enc.encode("cafe\u{301}", &[], &[]).unwrap(),
            [99, 97, 102, 257]
        );
        assert_eq!(enc.encode("<|e|>\u{338}", &all, &[]).unwrap()[0], 258);
        assert!(enc.encode("a<|e|>", &[], &all).is_err());
    }

    #[test]
    fn rules_or_other_steps_take_the_walk() {
        let lstrip = AddedRule {
            lstrip: true,
            ..AddedRule::default()
        };
        assert!(
            !nfc_encoder(&[("<|e|>".into(), lstrip)])
                .pipeline
                .unwrap()
                .plain
        );
        let with_space = Pipeline::new(
            vec![Normalizer::Unicode(Form::Nfc)],
            vec![
                Step::PrefixSpace,
                split_step("qwen2", "Isolated", false).unwrap(),
            ],
        );
        assert_eq!(with_space.preset_only(), None);
        let removed = Pipeline::new(vec![], vec![split_step("qwen2", "Removed", false).unwrap()]);
        assert_eq!(removed.preset_only(), None);
    }
}
