//! SentencePiece's normalizer (google/sentencepiece, `src/normalizer.cc`,
//! `Normalizer::Normalize`), step for step: the precompiled charsmap's
//! longest rule at each position (user-defined pieces are protected from it),
//! extra whitespace removed at the ends and in runs, spaces escaped as
//! U+2581 "▁", and the dummy prefix (or suffix) added. With offsets, every
//! normalized byte maps to the original byte it came from.

use aho_corasick::{AhoCorasick, Anchored, Input};

use super::model::Normalization;

/// "▁" (U+2581), SentencePiece's whitespace symbol.
pub const SPACE: &[u8] = "\u{2581}".as_bytes();

/// Where a text stands in the input, which decides its dummy prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// It starts the input (`sp.encode` of it alone): the dummy prefix.
    Start,
    /// It follows a special token: the dummy prefix, unless only the
    /// input's start gets one (`Normalization::prefix_first_only`).
    AfterSpecial,
    /// It continues a text cut at a safe cut (`super::cuts`): none.
    Continued,
}

impl Normalization {
    /// Does a text at `place` get the dummy prefix?
    pub fn dummy_prefix(&self, place: Place) -> bool {
        self.add_dummy_prefix
            && match place {
                Place::Start => true,
                Place::AfterSpecial => !self.prefix_first_only,
                Place::Continued => false,
            }
    }
}

/// Normalizes texts as one model does.
pub struct Normalizer {
    rules: Normalization,
    /// The user-defined pieces, matched longest first at each position: a
    /// match is copied as it is (no charsmap rule applies inside it).
    user: Option<AhoCorasick>,
}

impl Normalizer {
    pub fn new(rules: Normalization, user: Option<AhoCorasick>) -> Self {
        Normalizer { rules, user }
    }

    pub fn rules(&self) -> &Normalization {
        &self.rules
    }

    /// Is normalization only the escape of spaces and the dummy prefix (no
    /// charsmap, no whitespace removal)? Then every original byte maps to one
    /// normalized byte, or a space to the three of "▁".
    fn is_plain(&self) -> bool {
        self.rules.charsmap.is_none() && !self.rules.remove_extra_whitespaces
    }

    /// Normalize `text` into `out` (cleared first); with `offsets`, also
    /// `offsets[i]` = the original byte normalized byte i came from, and one
    /// more entry for the end (SentencePiece's `norm_to_orig`). `place`:
    /// where the text stands in the input (its dummy prefix).
    pub fn normalize(
        &self,
        text: &str,
        place: Place,
        out: &mut Vec<u8>,
        offsets: Option<&mut Vec<usize>>,
    ) {
        let r = &self.rules;
        let dummy = r.dummy_prefix(place);
        if dummy && r.metaspace_prefix {
            // Normalized without it, then prefixed unless it starts with "▁".
            let mut map = offsets;
            self.normalize_with(text, false, out, map.as_deref_mut());
            let space: &[u8] = if r.escape_whitespaces { SPACE } else { b" " };
            if !out.is_empty() && !out.starts_with(space) {
                let at = if r.treat_whitespace_as_suffix {
                    out.len()
                } else {
                    0
                };
                out.splice(at..at, space.iter().copied());
                if let Some(map) = map {
                    let origin = map.get(at).copied().unwrap_or(0);
                    map.splice(at..at, std::iter::repeat_n(origin, space.len()));
                }
            }
            return;
        }
        self.normalize_with(text, dummy, out, offsets);
    }

    fn normalize_with(
        &self,
        text: &str,
        dummy: bool,
        out: &mut Vec<u8>,
        offsets: Option<&mut Vec<usize>>,
    ) {
        out.clear();
        let mut no_offsets = Vec::new();
        let (map, track) = match offsets {
            Some(o) => (o, true),
            None => (&mut no_offsets, false),
        };
        map.clear();
        if text.is_empty() {
            return;
        }
        if self.is_plain() && !track {
            self.normalize_plain(text.as_bytes(), dummy, out);
            return;
        }
        let mut w = Writer { out, map, track };
        self.normalize_general(text.as_bytes(), dummy, &mut w);
    }

    /// The plain case without offsets: escape spaces, add the dummy prefix.
    fn normalize_plain(&self, text: &[u8], dummy: bool, out: &mut Vec<u8>) {
        let r = &self.rules;
        let space: &[u8] = if r.escape_whitespaces { SPACE } else { b" " };
        out.reserve(text.len() + text.len() / 2 + 8);
        if dummy && !r.treat_whitespace_as_suffix {
            out.extend_from_slice(space);
        }
        if !r.escape_whitespaces {
            out.extend_from_slice(text);
        } else {
            let mut start = 0;
            for i in memchr::memchr_iter(b' ', text) {
                out.extend_from_slice(&text[start..i]);
                out.extend_from_slice(SPACE);
                start = i + 1;
            }
            out.extend_from_slice(&text[start..]);
        }
        if dummy && r.treat_whitespace_as_suffix {
            out.extend_from_slice(space);
        }
    }

    /// `NormalizePrefix`: the normalized form of the start of `input` and the
    /// bytes of `input` it consumes.
    fn prefix<'a>(&'a self, input: &'a [u8]) -> (&'a [u8], usize) {
        if let Some(user) = &self.user {
            let found = user.find(Input::new(input).anchored(Anchored::Yes));
            if let Some(m) = found {
                return (&input[..m.end()], m.end());
            }
        }
        if let Some(map) = &self.rules.charsmap {
            if let Some((len, replacement)) = map.longest_prefix(input) {
                return (replacement, len);
            }
        }
        let len = utf8_len(input[0]).min(input.len());
        (&input[..len], len)
    }

    fn normalize_general(&self, mut input: &[u8], dummy: bool, w: &mut Writer<'_>) {
        let r = &self.rules;
        let mut consumed = 0;
        if r.remove_extra_whitespaces {
            while !input.is_empty() {
                let (p, n) = self.prefix(input);
                if p != b" " {
                    break;
                }
                input = &input[n..];
                consumed += n;
            }
        }
        if input.is_empty() {
            return;
        }
        if !r.treat_whitespace_as_suffix && dummy {
            w.add_space(r.escape_whitespaces, consumed);
        }
        let mut is_prev_space = r.remove_extra_whitespaces;
        while !input.is_empty() {
            let (mut sp, n) = self.prefix(input);
            while is_prev_space && sp.first() == Some(&b' ') {
                sp = &sp[1..];
            }
            if !sp.is_empty() {
                for &b in sp {
                    if r.escape_whitespaces && b == b' ' {
                        w.push(SPACE, consumed);
                    } else {
                        w.push(&[b], consumed);
                    }
                }
                is_prev_space = sp.last() == Some(&b' ');
            }
            consumed += n;
            input = &input[n..];
            if !r.remove_extra_whitespaces {
                is_prev_space = false;
            }
        }
        if r.remove_extra_whitespaces {
            let space: &[u8] = if r.escape_whitespaces { SPACE } else { b" " };
            while w.out.ends_with(space) {
                let length = w.out.len() - space.len();
                if w.track {
                    consumed = w.map[length];
                    w.map.truncate(length);
                }
                w.out.truncate(length);
            }
        }
        if r.treat_whitespace_as_suffix && dummy {
            w.add_space(r.escape_whitespaces, consumed);
        }
        if w.track {
            w.map.push(consumed);
        }
    }
}

/// The normalized bytes and, when tracked, their original offsets.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    map: &'a mut Vec<usize>,
    track: bool,
}

impl Writer<'_> {
    #[inline]
    fn push(&mut self, bytes: &[u8], origin: usize) {
        self.out.extend_from_slice(bytes);
        if self.track {
            self.map.extend(std::iter::repeat_n(origin, bytes.len()));
        }
    }

    fn add_space(&mut self, escape: bool, origin: usize) {
        self.push(if escape { SPACE } else { b" " }, origin);
    }
}

/// The length of the UTF-8 character that starts with `lead`, as
/// SentencePiece's `OneCharLen` gives it (1 for a continuation byte).
#[inline]
pub fn utf8_len(lead: u8) -> usize {
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4][(lead >> 4) as usize]
}
