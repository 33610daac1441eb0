//! The segments of a multi-threaded encode, encoded on the rayon pool into a
//! few reused buffers and written out in order in parallel: what every path
//! that encodes one input on many threads shares (`segments`, `file`,
//! `documents`).
//!
//! Each rayon task encodes a run of consecutive segments (a fold) into
//! buffers of `BUFFER_IDS` taken from a small pool and given back
//! afterwards: a fresh buffer per segment was a fresh mapping whose pages
//! faulted in on every call, whatever the allocator did before. A run that
//! fills its buffer takes another rather than grow it: how many segments a
//! fold gets changes from call to call, and growing (a `realloc`) copied the
//! run's ids into fresh pages (95% of the page faults of steady-state
//! `encode_to_numpy(num_threads=2)` calls on 30 MB of enwiki, 2,000-4,600 a
//! call, where one thread had none). The caller then sizes its output
//! from the segments' lengths and every segment is copied (or converted) to
//! its place on the pool: no serial pass over the ids on one thread while
//! the others wait.

use std::mem::MaybeUninit;
use std::ops::Range;

use rayon::prelude::*;

use super::segments::EncodeSegment;
use super::{cancellable, EncodeError};
use crate::memory::BufferPool;
use crate::progress::Progress;

/// Ids a new run buffer holds (4 MiB: the ids of ~8 MB of prose).
const BUFFER_IDS: usize = 1 << 20;
/// Buffers kept in the pool for the next call, at most: 256 MiB of
/// `BUFFER_IDS`, the ids of a text of ~500 MB (only pages once written are
/// resident).
const POOLED_BUFFERS: usize = 64;
/// A buffer of more ids than this is freed, not pooled (64 MiB).
const POOLED_MAX_IDS: usize = 16 << 20;

/// Run buffers of calls that finished.
static POOL: BufferPool<u32> = BufferPool::new(POOLED_BUFFERS);

/// An empty buffer with room for at least `ids` ids: a pooled one if one is
/// large enough, else a new one of `BUFFER_IDS` (or `ids` if more).
fn take_buffer(ids: usize) -> Vec<u32> {
    POOL.take(|b| b.capacity() >= ids)
        .unwrap_or_else(|| Vec::with_capacity(ids.max(BUFFER_IDS)))
}

fn give_buffer(mut ids: Vec<u32>) {
    if ids.capacity() > POOLED_MAX_IDS || ids.capacity() == 0 {
        return;
    }
    ids.clear();
    POOL.keep(ids);
}

/// The segments one task encoded (consecutive ones, as rayon folds a slice
/// in ranges, though nothing here relies on it): `ends[j] = (k, b, end)`
/// says segment `k`'s ids end at `buffers[b][end]` and start where the one
/// before in that buffer ends (at 0 if none).
#[derive(Default)]
struct Run {
    ends: Vec<(usize, usize, usize)>,
    buffers: Vec<Vec<u32>>,
}

impl Run {
    /// The buffer to encode a segment of `text_bytes` into: the last one, or
    /// a new one if the last lacks room for ~2 bytes per id.
    fn buffer_for(&mut self, text_bytes: usize) -> &mut Vec<u32> {
        let need = text_bytes / 2 + 16;
        if self
            .buffers
            .last()
            .is_none_or(|ids| ids.capacity() - ids.len() < need)
        {
            self.buffers.push(take_buffer(need));
        }
        self.buffers.last_mut().expect("a buffer was just pushed")
    }
}

/// Where a segment's ids are: (run, buffer of the run, range in it).
type Place = (usize, usize, Range<usize>);

/// Every segment's ids, in runs (see the module's comment).
pub(super) struct Runs {
    runs: Vec<Run>,
    /// Each segment's place, in segment order.
    segments: Vec<Place>,
}

impl Runs {
    /// Encode `segments` (each with its offset in its text, which its errors
    /// are shifted by) with `encode` on the current rayon pool; a segment at
    /// offset 0 starts its text when `starts_text` (false: the texts are
    /// chunks of a file after its first). Stops at the first error of
    /// each task; the error returned is that of the lowest segment (with its
    /// index). Segments not started once `progress` is cancelled fail with
    /// `EncodeError::Cancelled`; a long merge stops too (`cancellable`).
    pub(super) fn encode(
        segments: &[(usize, &str)],
        starts_text: bool,
        encode: &impl EncodeSegment,
        progress: &Progress,
    ) -> Result<Runs, (usize, EncodeError)> {
        let folded: Vec<Result<Run, (usize, EncodeError)>> = segments
            .par_iter()
            .enumerate()
            .fold(
                || Ok(Run::default()),
                |run, (k, &(offset, text))| {
                    let mut run = run?;
                    if progress.is_cancelled() {
                        return Err((k, EncodeError::Cancelled));
                    }
                    let ids = run.buffer_for(text.len());
                    let at_start = starts_text && offset == 0;
                    cancellable(progress, || {
                        encode.encode_segment(text, at_start, &mut *ids)
                    })
                    .map_err(|e| (k, e.shifted(offset)))?;
                    let end = ids.len();
                    run.ends.push((k, run.buffers.len() - 1, end));
                    Ok(run)
                },
            )
            .collect();
        let mut runs = Vec::with_capacity(folded.len());
        let mut first_error: Option<(usize, EncodeError)> = None;
        for result in folded {
            match result {
                Ok(run) => runs.push(run),
                Err((k, e)) if first_error.as_ref().is_none_or(|(j, _)| k < *j) => {
                    first_error = Some((k, e))
                }
                Err(_) => {}
            }
        }
        let runs = Runs {
            segments: Vec::new(),
            runs,
        };
        if let Some(error) = first_error {
            return Err(error);
        }
        Ok(runs.index(segments.len()))
    }

    /// Fill `segments` from the runs (every one of `count` segments is in one).
    fn index(mut self, count: usize) -> Self {
        let mut placed: Vec<(usize, Place)> = Vec::with_capacity(count);
        for (r, run) in self.runs.iter().enumerate() {
            let (mut buffer, mut start) = (0, 0);
            for &(k, b, end) in &run.ends {
                if b != buffer {
                    (buffer, start) = (b, 0);
                }
                placed.push((k, (r, b, start..end)));
                start = end;
            }
        }
        placed.sort_unstable_by_key(|(k, _)| *k);
        assert!(
            placed.iter().enumerate().all(|(i, (k, _))| i == *k) && placed.len() == count,
            "every segment encoded once"
        );
        self.segments = placed.into_iter().map(|(_, place)| place).collect();
        self
    }

    /// The ids of segment `k`.
    pub(super) fn ids(&self, k: usize) -> &[u32] {
        let (r, b, range) = &self.segments[k];
        &self.runs[*r].buffers[*b][range.clone()]
    }

    /// Number of segments.
    pub(super) fn len(&self) -> usize {
        self.segments.len()
    }

    /// Ids of all segments together.
    pub(super) fn total_ids(&self) -> usize {
        self.segments.iter().map(|(_, _, range)| range.len()).sum()
    }

    /// Write every segment to its place in `out`'s spare capacity, on the
    /// pool: segment `k` takes `size(k)` items, in segment order, and
    /// `write(k, place)` must initialize all of its place or fail; the first
    /// failing segment's error is returned and `out` is left as it was.
    /// Otherwise `out` grows by the sizes' sum.
    pub(super) fn write_out<T: Send, E: Send>(
        &self,
        out: &mut Vec<T>,
        size: impl Fn(usize) -> usize,
        write: impl Fn(usize, &mut [MaybeUninit<T>]) -> Result<(), E> + Sync,
    ) -> Result<(), E> {
        let sizes: Vec<usize> = (0..self.len()).map(size).collect();
        let total: usize = sizes.iter().sum();
        out.reserve(total);
        let mut spare = &mut out.spare_capacity_mut()[..total];
        let mut places = Vec::with_capacity(sizes.len());
        for &n in &sizes {
            let (place, rest) = spare.split_at_mut(n);
            places.push(place);
            spare = rest;
        }
        let results: Vec<Result<(), E>> = places
            .into_par_iter()
            .enumerate()
            .map(|(k, place)| write(k, place))
            .collect();
        results.into_iter().collect::<Result<(), E>>()?;
        // SAFETY: the first `total` spare items were split into the places
        // and every `write` succeeded, initializing all of its place.
        unsafe { out.set_len(out.len() + total) };
        Ok(())
    }
}

impl Drop for Runs {
    fn drop(&mut self) {
        for buffer in self.runs.drain(..).flat_map(|run| run.buffers) {
            give_buffer(buffer);
        }
    }
}

/// Copy `ids` into `place` (of the same length).
pub(super) fn copy_ids(ids: &[u32], place: &mut [MaybeUninit<u32>]) {
    for (slot, &id) in place.iter_mut().zip(ids) {
        slot.write(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every run's ids appended to `out`, in segment order.
    fn copy_all(runs: &Runs, out: &mut Vec<u32>) -> Result<(), ()> {
        runs.write_out(
            out,
            |k| runs.ids(k).len(),
            |k, place| {
                copy_ids(runs.ids(k), place);
                Ok(())
            },
        )
    }

    /// "Encode" a segment as its bytes; a `!` fails with its offset.
    fn bytes_of(text: &str, ids: &mut Vec<u32>) -> Result<(), EncodeError> {
        if let Some(at) = text.find('!') {
            return Err(EncodeError::Disallowed(super::super::DisallowedSpecial {
                token: "!".into(),
                offset: at,
            }));
        }
        ids.extend(text.bytes().map(u32::from));
        Ok(())
    }

    fn segments_of(text: &str, size: usize) -> Vec<(usize, &str)> {
        (0..text.len())
            .step_by(size)
            .map(|s| (s, &text[s..(s + size).min(text.len())]))
            .collect()
    }

    #[test]
    fn runs_give_each_segment_its_ids_and_write_them_in_order() {
        let text: String = (0..20_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let segments = segments_of(&text, 97);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let runs = pool
                .install(|| Runs::encode(&segments, true, &bytes_of, &Progress::default()))
                .unwrap();
            assert_eq!(runs.len(), segments.len());
            assert_eq!(runs.total_ids(), text.len());
            for (k, (_, segment)) in segments.iter().enumerate() {
                assert!(runs
                    .ids(k)
                    .iter()
                    .copied()
                    .eq(segment.bytes().map(u32::from)));
            }
            let mut out = vec![7u32];
            let written = pool.install(|| copy_all(&runs, &mut out));
            assert!(written.is_ok());
            assert_eq!(out[0], 7, "appended");
            assert!(out[1..].iter().copied().eq(text.bytes().map(u32::from)));
        }
    }

    #[test]
    fn a_run_that_fills_its_buffer_goes_on_in_another() {
        // One id per byte where the estimate is one per 2 bytes: every
        // second segment of a run needs a new buffer (or a grown one).
        let text: String = (0..3 * BUFFER_IDS)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let segments = segments_of(&text, 700_000);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let runs = pool
            .install(|| Runs::encode(&segments, true, &bytes_of, &Progress::default()))
            .unwrap();
        assert!(runs.runs.iter().map(|run| run.buffers.len()).sum::<usize>() > runs.runs.len());
        let mut out = vec![];
        copy_all(&runs, &mut out).unwrap();
        assert!(out.iter().copied().eq(text.bytes().map(u32::from)));
    }

    #[test]
    fn the_lowest_failing_segment_is_the_error_and_a_failed_write_leaves_out_alone() {
        let mut text = "abc".repeat(3000);
        text.replace_range(5000..5001, "!");
        text.replace_range(8000..8001, "!");
        let segments = segments_of(&text, 100);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let error = pool.install(|| Runs::encode(&segments, true, &bytes_of, &Progress::default()));
        let Err((k, EncodeError::Disallowed(d))) = error else {
            panic!("expected the first `!`");
        };
        assert_eq!((k, d.offset), (50, 5000));
        let segments = segments_of("abcdef", 2);
        let runs = Runs::encode(&segments, true, &bytes_of, &Progress::default()).unwrap();
        let mut out = vec![1u32, 2];
        let failed = runs.write_out(&mut out, |_| 2, |k, _| if k == 1 { Err(k) } else { Ok(()) });
        assert_eq!(failed, Err(1));
        assert_eq!(out, [1, 2]);
    }
}
