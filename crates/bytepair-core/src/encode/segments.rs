//! Encoding a long text in segments cut at safe cuts (`crate::cut`): the
//! segments' ids, joined, are the ids of the whole text, so a long text can be
//! encoded on several threads, or with a check for cancellation between its
//! segments, without changing a single id.
//!
//! `encode` is anything that encodes a segment on its own (`EncodeSegment`),
//! appending its ids: a function, e.g. `|segment, ids|
//! encoder.encode_into(segment, &allowed, &disallowed, ids)`, or an encoder
//! told whether the segment starts its text (SentencePiece's
//! `SpmSegments`: only a text's start gets the dummy prefix). `rule` must be
//! the encoder's cut rule: the byte-level encoder's pattern and special
//! tokens (`CutRule::new(pattern, &special_tokens)`), a SentencePiece
//! model's `SpmEncoder::cut_rule`, or `CutRule::never()`: a rule that does
//! not match the encoder cuts where the ids change.

use super::runs::{copy_ids, Runs};
use super::{cancellable, EncodeError};
use crate::cut::{segments, CutRule};
use crate::progress::Progress;

/// What encodes one segment of a text on its own (see the module's comment).
pub trait EncodeSegment: Sync {
    /// Append the ids of `segment`; `at_start`: it starts its text (false:
    /// it continues the segment before it, cut at a safe cut).
    fn encode_segment(
        &self,
        segment: &str,
        at_start: bool,
        ids: &mut Vec<u32>,
    ) -> Result<(), EncodeError>;
}

/// A function that encodes any segment alike, wherever it stands in its text.
impl<F> EncodeSegment for F
where
    F: Fn(&str, &mut Vec<u32>) -> Result<(), EncodeError> + Sync,
{
    fn encode_segment(
        &self,
        segment: &str,
        _: bool,
        ids: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        self(segment, ids)
    }
}

/// Bytes of a segment: a text longer than this is cut at its safe cuts into
/// segments of about this size (a segment with no safe cut grows until it
/// has one). Small enough that a check between segments answers Ctrl-C
/// promptly, large enough that the check costs nothing.
pub const SEGMENT_BYTES: usize = 1 << 20;

/// Encode `text` segment by segment on this thread, appending its ids to
/// `ids`: the ids of the whole text. `progress` is checked between segments
/// and during the merge of a long pre-token (`cancellable`); once it is
/// cancelled the call fails with `EncodeError::Cancelled`, `ids` holding the
/// ids of the segments done. An error's offset is in `text`.
///
/// ```
/// use bytepair_core::encode::segments::encode_segments;
/// use bytepair_core::{CutRule, Encoder, Progress};
///
/// let enc = Encoder::from_merged(vec![b"ab".to_vec()], &[], "gpt2").unwrap();
/// let encode = |segment: &str, ids: &mut Vec<u32>| enc.encode_into(segment, &[], &[], ids);
/// let text = "ab.ab\n".repeat(1000);
/// let mut ids = Vec::new();
/// let rule = CutRule::new("gpt2", &[]);
/// encode_segments(&rule, &text, &encode, &mut ids, &Progress::default()).unwrap();
/// assert_eq!(ids, enc.encode(&text, &[], &[]).unwrap());
/// ```
pub fn encode_segments(
    rule: &CutRule,
    text: &str,
    encode: &impl EncodeSegment,
    ids: &mut Vec<u32>,
    progress: &Progress,
) -> Result<(), EncodeError> {
    for (start, segment) in segments(rule, text, SEGMENT_BYTES) {
        if progress.is_cancelled() {
            return Err(EncodeError::Cancelled);
        }
        cancellable(progress, || encode.encode_segment(segment, start == 0, ids))
            .map_err(|e| e.shifted(start))?;
    }
    Ok(())
}
/// `encode_segments` on the threads of the current rayon pool, appending the
/// ids of `text` to `ids`: the segments are encoded into a few reused
/// buffers (`runs`), then copied to their places in `ids` on the pool. The
/// error is the first failing segment's (its offset in `text`), `ids` then
/// unchanged; cancelling `progress` stops the segments not started and any
/// long merge.
pub fn encode_segments_in_parallel(
    rule: &CutRule,
    text: &str,
    encode: &impl EncodeSegment,
    ids: &mut Vec<u32>,
    progress: &Progress,
) -> Result<(), EncodeError> {
    let parts: Vec<(usize, &str)> = segments(rule, text, SEGMENT_BYTES).collect();
    let runs = Runs::encode(&parts, true, encode, progress).map_err(|(_, e)| e)?;
    runs.write_out(
        ids,
        |k| runs.ids(k).len(),
        |k, place| {
            copy_ids(runs.ids(k), place);
            Ok::<(), EncodeError>(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encoder;

    /// A text of several segments: lines with safe cuts, one special token.
    fn long_text() -> String {
        let line = "The cat's 12345 naïve café, \u{4e16}\u{754c}!\nx  y\n";
        line.repeat(3 * SEGMENT_BYTES / line.len()) + "<|end|>" + &line.repeat(50)
    }

    fn encoder() -> Encoder {
        let merged = ["Th", "The", "ca", "cat", " cat", "12", "123", "af"];
        let merged = merged.iter().map(|t| t.as_bytes().to_vec()).collect();
        Encoder::from_merged(merged, &["<|end|>".to_string()], "cl100k").unwrap()
    }

    #[test]
    fn segments_on_one_and_many_threads_give_the_ids_of_the_whole_text() {
        let (enc, text) = (encoder(), long_text());
        let rule = CutRule::new("cl100k", &["<|end|>".to_string()]);
        let allowed = ["<|end|>".to_string()];
        let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_into(s, &allowed, &[], ids);
        let whole = enc.encode(&text, &allowed, &[]).unwrap();
        assert!(segments(&rule, &text, SEGMENT_BYTES).count() >= 3);
        let mut one = Vec::new();
        encode_segments(&rule, &text, &encode, &mut one, &Progress::default()).unwrap();
        assert_eq!(one, whole, "one thread");
        for threads in [1, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut many = vec![];
            pool.install(|| {
                encode_segments_in_parallel(&rule, &text, &encode, &mut many, &Progress::default())
            })
            .unwrap();
            assert_eq!(many, whole, "{threads} threads");
        }
    }

    #[test]
    fn an_error_names_its_offset_in_the_whole_text() {
        let (enc, text) = (encoder(), long_text());
        let rule = CutRule::new("cl100k", &["<|end|>".to_string()]);
        let disallowed = ["<|end|>".to_string()];
        let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_into(s, &[], &disallowed, ids);
        let at = text.find("<|end|>").unwrap();
        let offset = |e: EncodeError| match e {
            EncodeError::Disallowed(d) => d.offset,
            other => panic!("{other}"),
        };
        let mut ids = Vec::new();
        let e = encode_segments(&rule, &text, &encode, &mut ids, &Progress::default());
        assert_eq!(offset(e.unwrap_err()), at);
        let e = encode_segments_in_parallel(&rule, &text, &encode, &mut ids, &Progress::default());
        assert_eq!(offset(e.unwrap_err()), at);
    }

    #[test]
    fn a_cancelled_progress_stops_before_the_next_segment() {
        let (enc, text) = (encoder(), long_text());
        let rule = CutRule::new("cl100k", &[]);
        let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_ordinary_into(s, ids);
        let progress = Progress::default();
        progress.cancel();
        let mut ids = Vec::new();
        assert!(matches!(
            encode_segments(&rule, &text, &encode, &mut ids, &progress),
            Err(EncodeError::Cancelled)
        ));
        assert!(ids.is_empty());
        assert!(matches!(
            encode_segments_in_parallel(&rule, &text, &encode, &mut ids, &progress),
            Err(EncodeError::Cancelled)
        ));
        assert!(ids.is_empty());
    }
}
