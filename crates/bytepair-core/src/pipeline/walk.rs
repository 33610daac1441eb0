//! A text through a pipeline, as HF tokenizers walks it: added tokens with
//! `normalized: false` cut out of the original text, each part between them
//! normalized and cut at the `normalized: true` ones, the rest pre-tokenized.
//! Encoding (`encode::general`) and counting (`count::words`) both walk a
//! text here, so the words training counts are the pieces encoding merges.

use super::normalize::char_alignments;
use super::{piece_bytes, AddedMatcher, AddedRule, Part, Pipeline};
use crate::pretokenize::{PatternError, SearchError};

/// The added tokens a walk cuts a text at: those matched in the original
/// text, and those matched in the normalized text (as their normalized string).
#[derive(Default)]
pub struct Specials {
    raw: Option<AddedMatcher>,
    normalized: Option<AddedMatcher>,
}

impl Specials {
    /// The matchers over `(token, id, rules)`; a token with `normalized` is
    /// looked for as `pipeline` normalizes it, as HF does.
    pub fn new(
        pipeline: &Pipeline,
        tokens: impl IntoIterator<Item = (String, u32, AddedRule)>,
    ) -> Result<Self, PatternError> {
        let (mut raw, mut normalized) = (vec![], vec![]);
        for (token, id, rule) in tokens {
            if rule.normalized {
                normalized.push((pipeline.normalize(&token, None).into_owned(), id, rule));
            } else {
                raw.push((token, id, rule));
            }
        }
        Ok(Specials {
            raw: AddedMatcher::new(raw)?,
            normalized: AddedMatcher::new(normalized)?,
        })
    }
}

/// What a walk hands over, in text order: an added token's id and original
/// byte span, or a piece's bytes with a map from a byte range of the piece to
/// the original byte span it came from ((0, 0) when spans were not asked for).
pub enum Chunk<'a> {
    Special(u32, (usize, usize)),
    Piece(&'a [u8], &'a dyn Fn(usize, usize) -> (usize, usize)),
}

/// `text` as one part, or none when it is empty.
fn whole(text: &str) -> Vec<Part> {
    if text.is_empty() {
        vec![]
    } else {
        vec![(None, 0, text.len())]
    }
}

impl Pipeline {
    /// Walk `text`: hand each added token of `specials` and each piece to
    /// `take`, in order. An error of `take` on a special token stops the walk;
    /// on a piece it is kept and returned after all pieces are done (the first
    /// one). Original byte spans come with the chunks when `spans`.
    pub fn walk<E, F>(
        &self,
        specials: &Specials,
        text: &str,
        spans: bool,
        take: &mut F,
    ) -> Result<(), E>
    where
        E: From<SearchError>,
        F: FnMut(Chunk<'_>) -> Result<(), E>,
    {
        let mut buf = Vec::new();
        let mut failed = None;
        let raw = specials
            .raw
            .as_ref()
            .map_or_else(|| whole(text), |m| m.split(text));
        for (id, start, end) in raw {
            if let Some(id) = id {
                take(Chunk::Special(id, (start, end)))?;
                continue;
            }
            // Alignments only when spans are asked for: they cost 8 bytes a byte.
            let mut align = spans.then(|| char_alignments(&text[start..end], start));
            let norm = self.normalize(&text[start..end], align.as_mut());
            let align = align.as_deref().unwrap_or(&[]);
            let span = |lo: usize, hi: usize| {
                align
                    .get(lo)
                    .zip(align.get(hi))
                    .map_or((0, 0), |(l, h)| (l.0 as usize, h.1 as usize))
            };
            for (id, a, b) in specials
                .normalized
                .as_ref()
                .map_or_else(|| whole(&norm), |m| m.split(&norm))
            {
                if let Some(id) = id {
                    take(Chunk::Special(id, span(a, b - 1)))?;
                    continue;
                }
                for piece in self.pieces(&norm[a..b])? {
                    let bytes = piece_bytes(&norm[a..b], piece, &mut buf);
                    // Piece byte k is normalized byte first + k - skip; the
                    // added space (k < skip) stands with the piece's first byte.
                    let (first, skip) = (a + piece.start, usize::from(piece.space));
                    let span_of = |x: usize, y: usize| {
                        span(
                            first + x.saturating_sub(skip),
                            first + (y.max(x + 1) - 1).saturating_sub(skip),
                        )
                    };
                    if let Err(e) = take(Chunk::Piece(bytes, &span_of)) {
                        failed.get_or_insert(e);
                    }
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Can a text be cut right after a `\n` that follows a printable ASCII
    /// character and precedes an ASCII letter or digit (`cut::CutRule`'s
    /// newline cut) and walked in two parts? Only when no step acts at the
    /// ends of a text: Unicode normal forms and Lowercase change characters
    /// where they are (no composition or case mapping reaches across such a
    /// `\n`), but Strip, Prepend and ByteLevel's prefix space act at both ends
    /// of every part, and a Replace regex may match across the cut. A Split
    /// regex that matches across `x\ny` sees different splits, as a custom
    /// pattern does when counting (docs/design.md).
    pub fn cuts_at_newlines(&self) -> bool {
        use super::normalize::Normalizer;
        self.normalizers
            .iter()
            .all(|n| matches!(n, Normalizer::Unicode(_) | Normalizer::Lowercase))
            && self
                .steps
                .iter()
                .all(|s| matches!(s, super::Step::Split(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{split_step, Form, Normalizer, Step};
    use super::*;

    #[test]
    fn walk_cuts_added_tokens_before_and_after_normalization() {
        let pipeline = Pipeline::new(
            vec![Normalizer::Unicode(Form::Nfkc)],
            vec![split_step(r"\s+", "Removed", false).unwrap()],
        );
        let rule = |normalized| AddedRule {
            normalized,
            ..AddedRule::default()
        };
        let specials = Specials::new(
            &pipeline,
            [
                ("<a>".to_string(), 7, rule(false)),
                ("<\u{FF42}>".to_string(), 8, rule(true)),
            ],
        )
        .unwrap();
        let text = "x<a>\u{FB01} <\u{FF42}>y";
        let mut got = vec![];
        pipeline
            .walk::<SearchError, _>(&specials, text, true, &mut |chunk| {
                got.push(match chunk {
                    Chunk::Special(id, span) => format!("{id}@{span:?}"),
                    Chunk::Piece(bytes, span_of) => format!(
                        "{}@{:?}",
                        String::from_utf8_lossy(bytes),
                        span_of(0, bytes.len())
                    ),
                });
                Ok(())
            })
            .unwrap();
        // NFKC makes the ligature "fi" and <ｂ> "<b>", the normalized token's string.
        assert_eq!(
            got,
            [
                "x@(0, 1)",
                "7@(1, 4)",
                "fi@(4, 7)",
                "8@(8, 13)",
                "y@(13, 14)"
            ]
        );
        assert!(pipeline.cuts_at_newlines());
        assert!(!Pipeline::new(vec![], vec![Step::PrefixSpace]).cuts_at_newlines());
        assert!(!Pipeline::new(vec![Normalizer::Prepend("_".into())], vec![]).cuts_at_newlines());
    }
}
