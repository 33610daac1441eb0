//! Encoding a batch of documents for a training set: the documents come in
//! Arrow `large_binary` layout (bytes back to back, n + 1 offsets), as the
//! corpus readers make them, and come out as a token shard's contents: every
//! document's ids back to back (little-endian ints of 2 or 4 bytes), the eot
//! id after each, and each document's number of ids.

use std::borrow::Cow;
use std::ops::Range;

use rayon::prelude::*;

use super::id_bytes::{write_ids, IdTooWide, ItemSize};
use super::runs::Runs;
use super::EncodeError;
use crate::cut::{segments, CutRule};
use crate::progress::Progress;

use super::segments::{EncodeSegment, SEGMENT_BYTES};

/// Documents within one buffer: in Arrow layout (document i is
/// `data[offsets[i]..offsets[i + 1]]`) or at ranges of it (`data[ranges[i]]`,
/// the documents of a separated text where they were read, with no copy).
#[derive(Debug, Clone, Copy)]
pub struct Documents<'a> {
    data: &'a [u8],
    bounds: Bounds<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Bounds<'a> {
    Offsets(&'a [i64]),
    Ranges(&'a [Range<usize>]),
}

impl<'a> Documents<'a> {
    /// The documents of `data` at `offsets` (n + 1 non-decreasing positions,
    /// none negative, the last within `data`, as Arrow `large_binary` holds them).
    pub fn new(data: &'a [u8], offsets: &'a [i64]) -> Result<Self, DocumentsError> {
        if offsets.is_empty()
            || offsets.windows(2).any(|w| w[0] < 0 || w[1] < w[0])
            || offsets[offsets.len() - 1] as u64 > data.len() as u64
        {
            return Err(DocumentsError::BadOffsets {
                data_bytes: data.len(),
            });
        }
        let bounds = Bounds::Offsets(offsets);
        Ok(Documents { data, bounds })
    }

    /// The documents `data[ranges[i]]` (each range within `data`; they may
    /// leave gaps, such as the separators of `count::document_ranges`).
    pub fn at_ranges(data: &'a [u8], ranges: &'a [Range<usize>]) -> Result<Self, DocumentsError> {
        if ranges.iter().any(|r| r.start > r.end || r.end > data.len()) {
            return Err(DocumentsError::BadOffsets {
                data_bytes: data.len(),
            });
        }
        let bounds = Bounds::Ranges(ranges);
        Ok(Documents { data, bounds })
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        match self.bounds {
            Bounds::Offsets(offsets) => offsets.len() - 1,
            Bounds::Ranges(ranges) => ranges.len(),
        }
    }

    /// No documents at all?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of document `i`.
    pub fn get(&self, i: usize) -> &'a [u8] {
        match self.bounds {
            Bounds::Offsets(offsets) => &self.data[offsets[i] as usize..offsets[i + 1] as usize],
            Bounds::Ranges(ranges) => &self.data[ranges[i].clone()],
        }
    }

    /// Document `i` as text: its bytes when they are UTF-8, else U+FFFD for
    /// each bad sequence when `replace_errors`, else an error naming `i`.
    pub fn text(&self, i: usize, replace_errors: bool) -> Result<Cow<'a, str>, DocumentsError> {
        let bytes = self.get(i);
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Cow::Borrowed(text)),
            Err(_) if replace_errors => Ok(String::from_utf8_lossy(bytes)),
            Err(e) => Err(DocumentsError::InvalidUtf8 {
                index: i,
                offset: e.valid_up_to() as u64,
            }),
        }
    }
}

/// Why `encode_documents` failed.
#[derive(Debug, thiserror::Error)]
pub enum DocumentsError {
    /// Offsets that are not n + 1 non-decreasing positions within the data.
    #[error("offsets do not describe documents within {data_bytes} bytes")]
    BadOffsets { data_bytes: usize },
    /// Document `index` is not UTF-8 from byte `offset` on (name it with
    /// `count::document_name`).
    #[error("document {index}: invalid UTF-8 at byte offset {offset}")]
    InvalidUtf8 { index: usize, offset: u64 },
    /// Encoding document `index` failed (offsets in the document's text).
    #[error("document {index}: {error}")]
    Encode { index: usize, error: EncodeError },
    /// An id does not fit in the item size.
    #[error(transparent)]
    IdTooWide(IdTooWide),
    /// `Progress::cancel` was called.
    #[error("cancelled")]
    Cancelled,
}

/// What a token shard holds of a batch of documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedDocuments {
    /// Every document's ids, then the eot id if given, back to back, as
    /// little-endian ints of the item size.
    pub ids: Vec<u8>,
    /// Each document's number of ids (its eot included).
    pub lengths: Vec<u64>,
}

/// Encode `documents` on the current rayon pool, each on its own with
/// `encode` (a long document in segments cut at safe cuts of `rule`, which
/// changes no id, so one big document uses every thread too), appending
/// `eot` to each when given. Errors: a document that is not UTF-8 (unless
/// `replace_errors`: U+FFFD), an encode error (the first failing document's),
/// an id too wide for `itemsize`; `Cancelled` when `progress` is cancelled.
///
/// ```
/// use bytepair_core::encode::documents::{encode_documents, Documents};
/// use bytepair_core::encode::id_bytes::ItemSize;
/// use bytepair_core::{CutRule, Encoder, Progress};
///
/// let enc = Encoder::from_merged(vec![b"ab".to_vec()], &[], "gpt2").unwrap();
/// let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_into(s, &[], &[], ids);
/// let documents = Documents::new(b"abab", &[0, 2, 2, 4]).unwrap();
/// let rule = CutRule::new("gpt2", &[]);
/// let (eot, size) = (Some(257), ItemSize::Two);
/// let out = encode_documents(&rule, documents, &encode, eot, size, false, &Progress::default())
///     .unwrap();
/// assert_eq!(out.ids, [0, 1, 1, 1, 1, 1, 0, 1, 1, 1]); // 256, eot, eot, 256, eot
/// assert_eq!(out.lengths, [2, 1, 2]);
/// ```
pub fn encode_documents(
    rule: &CutRule,
    documents: Documents<'_>,
    encode: &impl EncodeSegment,
    eot: Option<u32>,
    itemsize: ItemSize,
    replace_errors: bool,
    progress: &Progress,
) -> Result<EncodedDocuments, DocumentsError> {
    let texts: Vec<Cow<str>> = (0..documents.len())
        .into_par_iter()
        .map(|i| documents.text(i, replace_errors))
        .collect::<Result<_, _>>()?;
    // Every document has at least one piece (an empty text is one empty segment).
    let mut owner = Vec::new();
    let mut pieces: Vec<(usize, &str)> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        for piece in segments(rule, text, SEGMENT_BYTES) {
            owner.push(i);
            pieces.push(piece);
        }
    }
    let runs = Runs::encode(&pieces, true, encode, progress).map_err(|(k, error)| match error {
        EncodeError::Cancelled => DocumentsError::Cancelled,
        error => DocumentsError::Encode {
            index: owner[k],
            error,
        },
    })?;
    // The eot goes after a document's last piece.
    let ends_document = |k: usize| owner.get(k + 1) != Some(&owner[k]);
    let eot_after = |k: usize| if ends_document(k) { eot } else { None };
    let mut lengths = vec![0u64; documents.len()];
    for k in 0..runs.len() {
        lengths[owner[k]] += (runs.ids(k).len() + eot_after(k).map_or(0, |_| 1)) as u64;
    }
    let mut ids = Vec::new();
    let item = itemsize.bytes();
    runs.write_out(
        &mut ids,
        |k| (runs.ids(k).len() + eot_after(k).map_or(0, |_| 1)) * item,
        |k, place| {
            let (body, tail) = place.split_at_mut(runs.ids(k).len() * item);
            write_ids(runs.ids(k), itemsize, body)?;
            write_ids(eot_after(k).as_slice(), itemsize, tail)
        },
    )
    .map_err(DocumentsError::IdTooWide)?;
    Ok(EncodedDocuments { ids, lengths })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::id_bytes::push_ids;
    use crate::Encoder;

    fn encoder() -> Encoder {
        let merged = ["th", "the", " the", "ca", "cat", " cat"];
        let merged = merged.iter().map(|t| t.as_bytes().to_vec()).collect();
        Encoder::from_merged(merged, &["<|end|>".to_string()], "gpt2").unwrap()
    }

    /// `documents` in Arrow layout: (data, offsets).
    fn arrow(documents: &[&str]) -> (Vec<u8>, Vec<i64>) {
        let mut offsets = vec![0i64];
        for d in documents {
            offsets.push(offsets.last().unwrap() + d.len() as i64);
        }
        (documents.concat().into_bytes(), offsets)
    }

    #[test]
    fn documents_encode_on_their_own_with_eot_after_each() {
        let enc = encoder();
        let long = "the cat\nthe cat.\n".repeat(3 * SEGMENT_BYTES / 17);
        let docs = ["the cat", "", " the<|end|>cat", long.as_str(), "cat"];
        let (data, offsets) = arrow(&docs);
        let rule = CutRule::new("gpt2", &["<|end|>".to_string()]);
        let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_ordinary_into(s, ids);
        let eot = enc.special_id("<|end|>").unwrap();
        for (eot, itemsize) in [(Some(eot), ItemSize::Two), (None, ItemSize::Four)] {
            let documents = Documents::new(&data, &offsets).unwrap();
            let progress = Progress::default();
            let out = encode_documents(&rule, documents, &encode, eot, itemsize, false, &progress)
                .unwrap();
            let (mut want, mut lengths) = (Vec::new(), Vec::new());
            for d in docs {
                let mut ids = enc.encode(d, &[], &[]).unwrap();
                ids.extend(eot);
                lengths.push(ids.len() as u64);
                push_ids(&mut want, ids, itemsize).unwrap();
            }
            assert!(
                out.ids == want,
                "{itemsize:?}: each document's ids, then eot"
            );
            assert_eq!(out.lengths, lengths);
        }
    }

    #[test]
    fn documents_at_ranges_are_the_same_documents() {
        let enc = encoder();
        let rule = CutRule::new("gpt2", &[]);
        let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_ordinary_into(s, ids);
        let text = b"the cat\n\nthe\n cat the\n";
        let (ranges, tail) = crate::count::document_ranges(text, b"\n", false);
        assert_eq!(tail, text.len());
        let (data, offsets) = arrow(&["the cat", "the", " cat the"]);
        let progress = Progress::default();
        let run = |documents| {
            encode_documents(
                &rule,
                documents,
                &encode,
                Some(7),
                ItemSize::Two,
                false,
                &progress,
            )
            .unwrap()
        };
        let at_ranges = run(Documents::at_ranges(text, &ranges).unwrap());
        assert_eq!(at_ranges, run(Documents::new(&data, &offsets).unwrap()));
        assert_eq!(at_ranges.lengths.len(), 3);
        assert!(matches!(
            Documents::at_ranges(b"abc", &[0..1, 2..4]),
            Err(DocumentsError::BadOffsets { data_bytes: 3 })
        ));
    }

    #[test]
    fn errors_name_the_document() {
        let enc = encoder();
        let rule = CutRule::new("gpt2", &[]);
        let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_ordinary_into(s, ids);
        let run = |data: &[u8], offsets: &[i64], eot, replace| {
            let documents = Documents::new(data, offsets)?;
            let progress = Progress::default();
            encode_documents(
                &rule,
                documents,
                &encode,
                eot,
                ItemSize::Two,
                replace,
                &progress,
            )
        };
        assert!(matches!(
            run(b"abc", &[0, 2, 1], None, false),
            Err(DocumentsError::BadOffsets { data_bytes: 3 })
        ));
        assert!(matches!(
            run(b"abc", &[0, 4], None, false),
            Err(DocumentsError::BadOffsets { .. })
        ));
        assert!(matches!(
            run(b"abc", &[], None, false),
            Err(DocumentsError::BadOffsets { .. })
        ));
        assert!(matches!(
            run(b"ab\xffc", &[0, 1, 4], None, false),
            Err(DocumentsError::InvalidUtf8 {
                index: 1,
                offset: 1
            })
        ));
        let replaced = run(b"ab\xffc", &[0, 1, 4], None, true).unwrap();
        assert_eq!(replaced.lengths.len(), 2);
        assert!(matches!(
            run(b"ab", &[0, 2], Some(70_000), false),
            Err(DocumentsError::IdTooWide(IdTooWide(70_000)))
        ));
        let disallow =
            |s: &str, ids: &mut Vec<u32>| enc.encode_into(s, &[], &["<|end|>".to_string()], ids);
        let text = "the cat\n".repeat(SEGMENT_BYTES / 4) + "<|end|>";
        let (data, offsets) = arrow(&["ok", &text]);
        let documents = Documents::new(&data, &offsets).unwrap();
        let progress = Progress::default();
        let e = encode_documents(
            &rule,
            documents,
            &disallow,
            None,
            ItemSize::Four,
            false,
            &progress,
        );
        match e {
            Err(DocumentsError::Encode {
                index: 1,
                error: EncodeError::Disallowed(d),
            }) => assert_eq!(
                d.offset,
                text.len() - "<|end|>".len(),
                "offset in the document"
            ),
            other => panic!("{other:?}"),
        }
    }
}
