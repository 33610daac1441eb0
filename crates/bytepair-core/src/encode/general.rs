//! The general path of `Encoder`: a tokenizer.json pipeline (`crate::pipeline`)
//! instead of the pattern and tiktoken's special-token split. The presets'
//! path in `super` is untouched; `encode_into` and dropout come here when the
//! encoder has a pipeline.

use super::cache::with_scratch;
use super::{EncodeError, Encoder, EncoderError, PatternError, SearchError};
use crate::pipeline::normalize::char_alignments;
use crate::pipeline::{piece_bytes, AddedMatcher, AddedRule, Part, Pipeline};

/// The byte span of the text each id covers.
pub type Spans = Vec<(usize, usize)>;

/// What the general path hands over: a special token's id and original byte
/// span, or a piece's bytes with a map from a byte range of the piece to the
/// original byte span it came from.
pub(super) enum Chunk<'a> {
    Special(u32, (usize, usize)),
    Piece(&'a [u8], &'a dyn Fn(usize, usize) -> (usize, usize)),
}

/// The general path's parts (see `crate::pipeline`).
pub(super) struct General {
    pipeline: Pipeline,
    /// The rules of each special token, in the order of `Encoder::specials`.
    rules: Vec<AddedRule>,
    /// Matchers over all special tokens: those matched before normalization, and after.
    raw: Option<AddedMatcher>,
    normalized: Option<AddedMatcher>,
}

impl General {
    /// The matchers (before, after normalization) over the special tokens `names`.
    fn matchers(&self, pipeline: &Pipeline, specials: &[(String, u32)], names: &[String]) -> Result<(Option<AddedMatcher>, Option<AddedMatcher>), PatternError> {
        let (mut raw, mut normalized) = (vec![], vec![]);
        for ((token, id), rule) in specials.iter().zip(&self.rules) {
            if !names.contains(token) {
                continue;
            }
            if rule.normalized {
                normalized.push((pipeline.normalize(token, None).into_owned(), *id, *rule));
            } else {
                raw.push((token.clone(), *id, *rule));
            }
        }
        Ok((AddedMatcher::new(raw)?, AddedMatcher::new(normalized)?))
    }
}


impl Encoder {

    /// This encoder with a tokenizer.json pipeline: text is normalized and
    /// pre-tokenized by `pipeline` (not by the pattern), and special tokens are
    /// matched with HF's added-token `rules` (by token string; a special token
    /// without rules has none of them).
    pub fn with_pipeline(mut self, pipeline: Pipeline, rules: &[(String, AddedRule)]) -> Result<Self, EncoderError> {
        let rules: Vec<AddedRule> = self
            .specials
            .iter()
            .map(|(t, _)| rules.iter().find(|(name, _)| name == t).map_or_else(AddedRule::default, |(_, r)| *r))
            .collect();
        let mut general = General { pipeline, rules, raw: None, normalized: None };
        let names: Vec<String> = self.specials.iter().map(|(t, _)| t.clone()).collect();
        (general.raw, general.normalized) = general.matchers(&general.pipeline, &self.specials, &names)?;
        self.general = Some(general);
        Ok(self)
    }

    /// Does this encoder run a tokenizer.json pipeline (the general path)?
    pub fn has_pipeline(&self) -> bool {
        self.general.is_some()
    }

    /// The pre-tokens of `text` (no special tokens treated): by the pipeline
    /// when there is one (normalized, prefix spaces included), else the pattern.
    pub fn pretokenize(&self, text: &str) -> Result<Vec<Vec<u8>>, SearchError> {
        let mut out = vec![];
        match &self.general {
            Some(g) => {
                let norm = g.pipeline.normalize(text, None);
                let mut buf = Vec::new();
                for piece in g.pipeline.pieces(&norm)? {
                    out.push(piece_bytes(&norm, piece, &mut buf).to_vec());
                }
            }
            None => self.pre.for_each_piece(text, |w| out.push(w.as_bytes().to_vec()))?,
        }
        Ok(out)
    }

    /// The general path: cut `text` at the `allowed` special tokens with HF's
    /// rules, normalize and pre-tokenize the rest, and hand each special token
    /// and piece to `take` in order (the first piece that fails is the error,
    /// after all are done). Original byte spans come with them when `spans`
    /// (else every span is (0, 0)).
    pub(super) fn encode_general<F>(
        &self,
        g: &General,
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
        let owned;
        let (raw, normalized) = if allowed.len() == self.specials.len() {
            (g.raw.as_ref(), g.normalized.as_ref())
        } else {
            owned = g.matchers(&g.pipeline, &self.specials, allowed)?;
            (owned.0.as_ref(), owned.1.as_ref())
        };
        let whole = |t: &str| -> Vec<Part> { if t.is_empty() { vec![] } else { vec![(None, 0, t.len())] } };
        let mut buf = Vec::new();
        let mut failed = None;
        for (id, start, end) in raw.map_or_else(|| whole(text), |m| m.split(text)) {
            if let Some(id) = id {
                take(Chunk::Special(id, (start, end)), out)?;
                continue;
            }
            // Alignments only when spans are asked for: they cost 8 bytes a byte.
            let mut align = spans.then(|| char_alignments(&text[start..end], start));
            let norm = g.pipeline.normalize(&text[start..end], align.as_mut());
            let align = align.as_deref().unwrap_or(&[]);
            let span = |lo: usize, hi: usize| align.get(lo).zip(align.get(hi)).map_or((0, 0), |(l, h)| (l.0 as usize, h.1 as usize));
            for (id, a, b) in normalized.map_or_else(|| whole(&norm), |m| m.split(&norm)) {
                if let Some(id) = id {
                    take(Chunk::Special(id, span(a, b - 1)), out)?;
                    continue;
                }
                for piece in g.pipeline.pieces(&norm[a..b])? {
                    let bytes = piece_bytes(&norm[a..b], piece, &mut buf);
                    // Piece byte k is normalized byte first + k - skip; the
                    // added space (k < skip) stands with the piece's first byte.
                    let (first, skip) = (a + piece.start, usize::from(piece.space));
                    let span_of = |x: usize, y: usize| span(first + x.saturating_sub(skip), first + (y.max(x + 1) - 1).saturating_sub(skip));
                    if let Err(e) = take(Chunk::Piece(bytes, &span_of), out) {
                        failed.get_or_insert(e);
                    }
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// `encode` through the pipeline, with the byte span of `text` each id
    /// covers (HF's `Encoding.offsets` in bytes: a token from normalized text
    /// spans the original characters it came from; tokens that share a
    /// character share its span). Without a pipeline, None.
    pub fn encode_with_spans(&self, text: &str, allowed: &[String], disallowed: &[String]) -> Option<Result<(Vec<u32>, Spans), EncodeError>> {
        let g = self.general.as_ref()?;
        let mut out = Vec::new();
        let mut spans = Vec::new();
        let result = with_scratch(self.tag, |scratch| {
            self.encode_general(g, text, (allowed, disallowed), &mut out, true, &mut |chunk, out| {
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
                    let len = self.decoder.len(id);
                    spans.push(span_of(at, at + len));
                    at += len;
                }
                Ok(())
            })
        });
        Some(result.map(|()| (out, spans)))
    }
}
