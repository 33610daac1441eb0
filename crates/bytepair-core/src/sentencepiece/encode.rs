//! The SentencePiece BPE encoder: special tokens first (tiktoken's policy,
//! as the byte-level encoder), then each text between them normalized as
//! SentencePiece normalizes a whole input (so each gets its dummy prefix, as
//! `sp.encode` of that text alone would), user-defined pieces matched
//! (longest first) and never merged, and the rest cut into words where no
//! merge can cross (see `vocab`) and merged word by word through per-thread
//! caches: the ids of `SentencePieceProcessor.encode` on any text.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind, StartKind};

use crate::encode::cache::new_encoder_tag;
use crate::encode::{DisallowedSpecial, EncodeError};
use crate::pretokenize::{special_matcher, PatternError};

use super::decode::UnknownId;
use super::merge::{merge_word, push_ids};
use super::model::{Kind, Model};
use super::normalize::{Normalizer, Place};
use super::reference::{populate_ids, sample_encode};
use super::scan::WordScan;
use super::user::UserScan;
use super::vocab::{PieceSpec, Vocab};
use super::words::{for_each_word, with_scratch, Scratch, SPACE_CHAR};

/// Byte spans of the original text, one per id.
pub type Spans = Vec<(usize, usize)>;

/// How an encoder departs from SentencePiece to run a tokenizer.json of a
/// SentencePiece-style BPE as HF tokenizers runs it (the default is
/// SentencePiece itself).
#[derive(Clone, Debug)]
pub struct SpmOptions {
    /// A character that is no piece still merges into pieces holding it
    /// (SentencePiece); HF makes it byte or unknown tokens first.
    pub chars_merge: bool,
    /// Ids of pieces no merge makes (HF: pieces no merge rule produces).
    pub never_merged: Vec<u32>,
    /// A text (between user-defined pieces) that is a piece whole is that
    /// piece (HF's `ignore_merges`).
    pub whole_lookup: bool,
    /// Fuse a run of `<unk>` into one (SentencePiece always; HF `fuse_unk`).
    pub fuse_unk: bool,
}

impl Default for SpmOptions {
    fn default() -> Self {
        SpmOptions {
            chars_merge: true,
            never_merged: Vec::new(),
            whole_lookup: false,
            fuse_unk: true,
        }
    }
}

/// A SentencePiece BPE model ready to encode and decode. Immutable, `Sync`.
pub struct SpmEncoder {
    pub(super) model: Model,
    pub(super) vocab: Vocab,
    pub(super) normalizer: Normalizer,
    denormalizer: Option<Normalizer>,
    /// User-defined pieces over normalized text (leftmost-longest), and their ids.
    pub(super) user: Option<AhoCorasick>,
    /// `user` as the encoder scans a text with it.
    user_scan: Option<UserScan>,
    pub(super) user_ids: Vec<u32>,
    pub(super) specials: Vec<(String, u32)>,
    all_specials: Option<AhoCorasick>,
    /// Models with UNUSED pieces encode through `reference` (their split
    /// depends on the whole text).
    pub(super) whole_text: bool,
    /// Can an `<unk>` follow another (no byte fallback)? Then runs fuse.
    pub(super) fuses_unk: bool,
    /// Pieces by text, for `SpmOptions::whole_lookup`.
    pub(super) whole: Option<rustc_hash::FxHashMap<Box<[u8]>, u32>>,
    /// Normalization is only the escape of spaces and the dummy prefix, and
    /// no user-defined piece holds a space or "▁": `encode_plain` applies.
    plain: bool,
    pub(super) tag: u64,
}

/// Why an encoder cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SpmBuildError {
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("user-defined pieces: {0}")]
    UserPieces(String),
}

/// The user-defined pieces as one leftmost-longest matcher. SentencePiece
/// matches them as they are both in the original text (the normalizer) and
/// in the normalized one (the model), so a piece with a space never matches
/// the normalized text, where the space is "▁".
pub fn user_matcher(pieces: &[&str]) -> Result<Option<AhoCorasick>, SpmBuildError> {
    if pieces.is_empty() {
        return Ok(None);
    }
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        // Unanchored for the model's scan, anchored for the normalizer's prefix match.
        .start_kind(StartKind::Both)
        .build(pieces)
        .map(Some)
        .map_err(|e| SpmBuildError::UserPieces(e.to_string()))
}

impl SpmEncoder {
    /// The encoder of `model`; `specials` (string, id) are the tokens a text
    /// may name with `allowed` (control pieces and `<unk>`, usually).
    pub fn new(model: Model, specials: Vec<(String, u32)>) -> Result<Self, SpmBuildError> {
        Self::with_options(model, specials, SpmOptions::default())
    }

    /// `new`, departing from SentencePiece as `options` say.
    pub fn with_options(
        model: Model,
        specials: Vec<(String, u32)>,
        options: SpmOptions,
    ) -> Result<Self, SpmBuildError> {
        let mut ranks = model.score_ranks();
        for &id in &options.never_merged {
            if let Some(rank) = ranks.get_mut(id as usize) {
                *rank = None;
            }
        }
        let specs: Vec<PieceSpec<'_>> = model
            .pieces
            .iter()
            .zip(&ranks)
            .enumerate()
            .map(|(id, (p, &rank))| PieceSpec {
                text: &p.text,
                id: id as u32,
                kind: p.kind,
                rank,
            })
            .collect();
        let vocab = Vocab::new(
            &specs,
            model.unk_id,
            model.byte_fallback,
            options.chars_merge,
        );
        let user_pieces: Vec<(&str, u32)> = model
            .pieces
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind == Kind::UserDefined)
            .map(|(id, p)| (p.text.as_str(), id as u32))
            .collect();
        let texts: Vec<&str> = user_pieces.iter().map(|(t, _)| *t).collect();
        let user = user_matcher(&texts)?;
        let normalizer = Normalizer::new(model.normalization.clone(), user.clone());
        let denormalizer = model
            .denormalizer
            .clone()
            .map(|rules| Normalizer::new(rules, None));
        let names: Vec<String> = specials.iter().map(|(s, _)| s.clone()).collect();
        let whole = options.whole_lookup.then(|| {
            let pieces = model.pieces.iter().enumerate();
            pieces
                .map(|(id, p)| (p.text.as_bytes().into(), id as u32))
                .collect()
        });
        let rules = &model.normalization;
        let plain = rules.charsmap.is_none()
            && !rules.remove_extra_whitespaces
            && rules.escape_whitespaces
            && !rules.treat_whitespace_as_suffix
            && whole.is_none()
            && !model.has_unused()
            && texts
                .iter()
                .all(|t| !t.contains(' ') && !t.contains(SPACE_CHAR));
        Ok(SpmEncoder {
            plain,
            whole_text: model.has_unused(),
            fuses_unk: options.fuse_unk && !model.byte_fallback,
            whole,
            vocab,
            normalizer,
            denormalizer,
            user_scan: user.clone().map(|m| UserScan::new(m, &texts)),
            user,
            user_ids: user_pieces.iter().map(|(_, id)| *id).collect(),
            all_specials: special_matcher(&names)?,
            specials,
            model,
            tag: new_encoder_tag(),
        })
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The id of special token `token`, if it is one.
    pub fn special_id(&self, token: &str) -> Option<u32> {
        self.specials
            .iter()
            .find(|(s, _)| s == token)
            .map(|(_, id)| *id)
    }

    /// Encode `text` with special-token strings as plain text (`sp.encode`).
    pub fn encode_ordinary_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), EncodeError> {
        self.encode_into(text, &[], &[], out)
    }

    /// Encode with tiktoken's special-token policy: an error for the first
    /// `disallowed` special-token string in `text`, the `allowed` ones as
    /// their ids (longest match first); each text between them is encoded as
    /// `sp.encode` encodes it alone.
    pub fn encode_into(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        self.encode_at(text, Place::Start, allowed, disallowed, out)
    }

    /// `encode_into` of a text whose first part stands at `first` in the
    /// input: `Place::Continued` for a segment of a text after a safe cut
    /// (`super::cuts`), which gets no dummy prefix; the texts after its
    /// special tokens stand `AfterSpecial`.
    pub fn encode_at(
        &self,
        text: &str,
        first: Place,
        allowed: &[String],
        disallowed: &[String],
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        self.split_specials(text, allowed, disallowed, &mut |part| match part {
            Part::Special(id, _) => out.push(id),
            Part::Text(t, 0) => self.encode_text(t, first, out),
            Part::Text(t, _) => self.encode_text(t, Place::AfterSpecial, out),
        })
    }

    /// `encode_into`, with each id's span of `text` in bytes.
    pub fn encode_with_spans(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
    ) -> Result<(Vec<u32>, Spans), EncodeError> {
        let (mut ids, mut spans) = (Vec::new(), Vec::new());
        self.split_specials(text, allowed, disallowed, &mut |part| match part {
            Part::Special(id, span) => {
                ids.push(id);
                spans.push(span);
            }
            Part::Text(t, base) => self.encode_text_with_spans(t, base, &mut ids, &mut spans),
        })?;
        Ok((ids, spans))
    }

    fn matcher_for(&self, names: &[String]) -> Result<Option<Cow<'_, AhoCorasick>>, PatternError> {
        if names.is_empty() {
            return Ok(None);
        }
        if names.len() == self.specials.len() {
            return Ok(self.all_specials.as_ref().map(Cow::Borrowed));
        }
        Ok(special_matcher(names)?.map(Cow::Owned))
    }

    /// Hand the texts and allowed special tokens of `text` to `take`, in order.
    fn split_specials(
        &self,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        take: &mut dyn FnMut(Part<'_>),
    ) -> Result<(), EncodeError> {
        if let Some(m) = self.matcher_for(disallowed)? {
            if let Some(found) = m.find(text) {
                return Err(EncodeError::Disallowed(DisallowedSpecial {
                    token: text[found.start()..found.end()].to_string(),
                    offset: found.start(),
                }));
            }
        }
        let mut start = 0;
        if let Some(m) = self.matcher_for(allowed)? {
            for found in m.find_iter(text) {
                take(Part::Text(&text[start..found.start()], start));
                let token = &text[found.start()..found.end()];
                let id = self.special_id(token).expect("matched a special token");
                take(Part::Special(id, (found.start(), found.end())));
                start = found.end();
            }
        }
        take(Part::Text(&text[start..], start));
        Ok(())
    }

    /// Encode one text (no special tokens), appending its ids; `place`:
    /// where it stands in the input (its dummy prefix).
    pub fn encode_text(&self, text: &str, place: Place, out: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        with_scratch(self.tag, |s| {
            if self.plain {
                return self.encode_plain(text, place, s, out);
            }
            let mut norm = std::mem::take(&mut s.norm);
            self.normalizer.normalize(text, place, &mut norm, None);
            self.encode_normalized(&norm, s, out);
            s.norm = norm;
        });
    }

    /// `encode_text` when normalization only escapes spaces and adds the
    /// dummy prefix: words are cut and cached on the text as it is (the space
    /// view: a space stands for "▁"; user-defined pieces, which hold neither,
    /// match the same), the dummy prefix a space before the first word.
    fn encode_plain(&self, text: &str, place: Place, s: &mut Scratch, out: &mut Vec<u32>) {
        let rules = self.normalizer.rules();
        let mut dummy = rules.dummy_prefix(place);
        if rules.metaspace_prefix && (text.starts_with(' ') || text.starts_with(SPACE_CHAR)) {
            dummy = false;
        }
        let mut last_unk = false;
        let mut start = 0;
        let view = |t: &str, first: bool, s: &mut Scratch, last: &mut bool, out: &mut Vec<u32>| {
            if !(first && dummy) {
                return self.encode_words(t, true, s, last, out);
            }
            // The dummy prefix and the first word it joins: " " + text[..end].
            let end = WordScan::first_end(&self.vocab, t.as_bytes(), true, SPACE_CHAR);
            self.encode_prefixed_word(&t[..end], s, last, out);
            self.encode_words(&t[end..], true, s, last, out);
        };
        if let Some(user) = &self.user_scan {
            user.for_each(text.as_bytes(), |(a, e, piece)| {
                view(&text[start..a], start == 0, s, &mut last_unk, out);
                out.push(self.user_ids[piece]);
                last_unk = false;
                start = e;
            });
        }
        view(&text[start..], start == 0, s, &mut last_unk, out);
    }

    /// The ids of a normalized text.
    fn encode_normalized(&self, norm: &[u8], s: &mut Scratch, out: &mut Vec<u32>) {
        // SAFETY: normalized text is made of UTF-8 strings only: pieces of the
        // input, "▁", and charsmap replacements (checked when the map is read).
        let norm_str = unsafe { std::str::from_utf8_unchecked(norm) };
        if self.whole_text {
            let pieces = sample_encode(&self.model, norm_str, self.user.as_ref());
            out.extend(populate_ids(&self.model, &pieces, &self.vocab.byte_ids));
            return;
        }
        let mut last_unk = false;
        let mut start = 0;
        if let Some(user) = &self.user_scan {
            user.for_each(norm, |(a, e, piece)| {
                self.encode_words(&norm_str[start..a], false, s, &mut last_unk, out);
                out.push(self.user_ids[piece]);
                last_unk = false;
                start = e;
            });
        }
        self.encode_words(&norm_str[start..], false, s, &mut last_unk, out);
    }

    /// `encode_text` with each id's span of the original text, `base` bytes
    /// into the whole text.
    fn encode_text_with_spans(
        &self,
        text: &str,
        base: usize,
        ids: &mut Vec<u32>,
        spans: &mut Spans,
    ) {
        if text.is_empty() {
            return;
        }
        let mut norm = Vec::new();
        let mut map = Vec::new();
        let place = if base == 0 {
            Place::Start
        } else {
            Place::AfterSpecial
        };
        self.normalizer
            .normalize(text, place, &mut norm, Some(&mut map));
        let span = |a: usize, b: usize| (base + map[a], base + map[b].max(map[a]));
        let norm_str = std::str::from_utf8(&norm).expect("normalized text is UTF-8");
        // Token by token: each id's bytes of the normalized text.
        let mut tokens: Vec<(u32, usize, usize)> = Vec::new();
        if self.whole_text {
            let pieces = sample_encode(&self.model, norm_str, self.user.as_ref());
            let mut at = 0;
            for (w, _) in &pieces {
                let one = populate_ids(&self.model, &[(w, self.piece_id(w))], &self.vocab.byte_ids);
                for id in one {
                    tokens.push((id, at, at + w.len()));
                }
                at += w.len();
            }
            fuse_unk_spans(&mut tokens, self.fuses_unk, self.vocab.unk_id);
        } else {
            let mut start = 0;
            let mut syms = Vec::new();
            let mut words = |t: &str, at: usize, tokens: &mut Vec<(u32, usize, usize)>| {
                // Empty: text that normalized to nothing (" " with extra
                // whitespace removed), or before or after a user-defined piece.
                if t.is_empty() {
                    return;
                }
                if let Some(&id) = self.whole.as_ref().and_then(|w| w.get(t.as_bytes())) {
                    tokens.push((id, at, at + t.len()));
                    return;
                }
                for_each_word(&self.vocab, t.as_bytes(), |a, b| {
                    let word = &t[a..b];
                    merge_word(&self.vocab, word, &mut syms);
                    for k in 0..syms.len() {
                        let end = syms.get(k + 1).map_or(word.len(), |n| n.start as usize);
                        let (s0, s1) = (at + a + syms[k].start as usize, at + a + end);
                        let (mut one, mut last) = (Vec::new(), false);
                        let (bytes, sym) = (&word.as_bytes()[..end], &syms[k..k + 1]);
                        push_ids(&self.vocab, bytes, sym, false, &mut last, &mut one);
                        tokens.extend(one.into_iter().map(|id| (id, s0, s1)));
                    }
                });
            };
            if let Some(user) = &self.user {
                for m in user.find_iter(norm_str) {
                    words(&norm_str[start..m.start()], start, &mut tokens);
                    tokens.push((self.user_ids[m.pattern().as_usize()], m.start(), m.end()));
                    start = m.end();
                }
            }
            words(&norm_str[start..], start, &mut tokens);
            fuse_unk_spans(&mut tokens, self.fuses_unk, self.vocab.unk_id);
        }
        for (id, a, b) in tokens {
            ids.push(id);
            spans.push(span(a, b));
        }
    }

    fn piece_id(&self, w: &str) -> u32 {
        self.model
            .pieces
            .iter()
            .position(|p| p.text == w)
            .map_or(self.model.unk_id, |i| i as u32)
    }

    /// Decode as SentencePiece does (`raw`: byte pieces as their bytes).
    pub fn decode(&self, ids: &[i64], raw: bool) -> Result<Vec<u8>, UnknownId> {
        self.model
            .decode(ids, self.denormalizer.as_ref(), raw, None)
    }

    /// `decode(ids, raw = true)` with no denormalizer, and the byte offset
    /// where each id's text starts in it.
    pub fn decode_with_starts(&self, ids: &[i64]) -> Result<(Vec<u8>, Vec<usize>), UnknownId> {
        let mut starts = Vec::with_capacity(ids.len());
        let out = self.model.decode(ids, None, true, Some(&mut starts))?;
        Ok((out, starts))
    }
}

/// Fuse runs of `<unk>` tokens (their spans joined), as SentencePiece does.
fn fuse_unk_spans(tokens: &mut Vec<(u32, usize, usize)>, fuse: bool, unk: u32) {
    if !fuse {
        return;
    }
    let mut fused: Vec<(u32, usize, usize)> = Vec::with_capacity(tokens.len());
    for &(id, a, b) in tokens.iter() {
        match fused.last_mut() {
            Some(last) if id == unk && last.0 == unk => last.2 = b,
            _ => fused.push((id, a, b)),
        }
    }
    *tokens = fused;
}

enum Part<'a> {
    Special(u32, (usize, usize)),
    /// A text between special tokens and where it starts in the whole text.
    Text(&'a str, usize),
}
