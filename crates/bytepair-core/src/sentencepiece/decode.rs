//! Ids back to text, as SentencePiece decodes them
//! (google/sentencepiece, `src/sentencepiece_processor.cc`, `Decode`):
//! control pieces are invisible, `<unk>` is its surface (" \u{2047} "), "▁"
//! is a space, the first piece loses its leading "▁" when the model adds a
//! dummy prefix (or removes extra whitespace: then every leading "▁" until
//! text appears), and each run of `<0xNN>` pieces is read as UTF-8, each
//! byte that does not start a valid character becoming U+FFFD.

use super::model::{byte_of_piece, Kind, Model};
use super::normalize::{Normalizer, Place, SPACE};

/// U+FFFD, what an invalid byte decodes to.
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// A token id that is not in the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("token id {0} is not in the vocabulary")]
pub struct UnknownId(pub i64);

/// The length of the valid UTF-8 character at the start of `bytes`, as
/// SentencePiece's `IsValidDecodeUTF8` accepts it (shortest form, no
/// surrogates, at most U+10FFFF), or None.
pub fn valid_char_len(bytes: &[u8]) -> Option<usize> {
    let len = match bytes.first()? {
        0..=0x7F => return Some(1),
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return None,
    };
    std::str::from_utf8(bytes.get(..len)?).ok().map(|_| len)
}

/// Append `bytes` (a run of byte pieces) to `out` as SentencePiece reads them.
fn push_byte_run(bytes: &[u8], raw: bool, out: &mut Vec<u8>) {
    if raw {
        out.extend_from_slice(bytes);
        return;
    }
    let mut i = 0;
    while i < bytes.len() {
        match valid_char_len(&bytes[i..]) {
            Some(n) => {
                out.extend_from_slice(&bytes[i..i + n]);
                i += n;
            }
            None => {
                out.extend_from_slice(REPLACEMENT);
                i += 1;
            }
        }
    }
}

/// Append `piece` with every "▁" as a space.
fn push_unescaped(piece: &[u8], out: &mut Vec<u8>) {
    let mut rest = piece;
    while let Some(i) = memchr::memmem::find(rest, SPACE) {
        out.extend_from_slice(&rest[..i]);
        out.push(b' ');
        rest = &rest[i + SPACE.len()..];
    }
    out.extend_from_slice(rest);
}

impl Model {
    /// Decode `ids` as SentencePiece does; with `raw`, runs of byte pieces
    /// are their bytes as they are (which need not be UTF-8). With `starts`,
    /// also the byte offset in the output where each id's text starts (raw
    /// output, no denormalizer: only then is each id's text a span of it).
    pub fn decode(
        &self,
        ids: &[i64],
        denormalizer: Option<&Normalizer>,
        raw: bool,
        mut starts: Option<&mut Vec<usize>>,
    ) -> Result<Vec<u8>, UnknownId> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        let mut bytes = Vec::new();
        let (mut is_bos_ws, mut bos_ws_seen) = (true, false);
        let strips = {
            let n = &self.normalization;
            n.add_dummy_prefix || n.remove_extra_whitespaces
        };
        for &id in ids {
            let piece = usize::try_from(id)
                .ok()
                .and_then(|i| self.pieces.get(i))
                .ok_or(UnknownId(id))?;
            if let Some(starts) = starts.as_deref_mut() {
                starts.push(out.len() + bytes.len());
            }
            if piece.kind == Kind::Byte {
                bytes.push(byte_of_piece(&piece.text).expect("checked when loaded"));
                continue;
            }
            push_byte_run(&bytes, raw, &mut out);
            bytes.clear();
            if bos_ws_seen || !out.is_empty() {
                is_bos_ws = false;
            }
            bos_ws_seen = false;
            match piece.kind {
                Kind::Control => {}
                Kind::Unknown => out.extend_from_slice(self.unk_surface.as_bytes()),
                _ => {
                    let mut text = piece.text.as_bytes();
                    if is_bos_ws && strips {
                        if let Some(rest) = text.strip_prefix(SPACE) {
                            text = rest;
                            bos_ws_seen = !self.normalization.remove_extra_whitespaces;
                        }
                    }
                    push_unescaped(text, &mut out);
                }
            }
        }
        push_byte_run(&bytes, raw, &mut out);
        if let Some(d) = denormalizer {
            let text = String::from_utf8_lossy(&out).into_owned();
            d.normalize(&text, Place::Start, &mut out, None);
        }
        Ok(out)
    }
}
