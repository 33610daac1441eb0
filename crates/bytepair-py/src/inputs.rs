//! Long inputs for any encoder with a cut rule (`CoreBPE`, `CoreSPM`): a text
//! in segments with a Ctrl-C check between them, a text on many threads, a
//! file into a token file, documents into a token shard. The encoder comes as
//! an `EncodeSegment` (a closure over a byte-level encoder, or
//! SentencePiece's `SpmSegments`, told which segment starts its text) and
//! its `CutRule`; the work is the core's (`bytepair_core::encode::segments`,
//! `file`, `documents`).

use bytepair_core::count::CountError;
use bytepair_core::cut::{segments, CutRule};
use bytepair_core::encode::documents::{encode_documents, Documents, DocumentsError};
use bytepair_core::encode::file::{encode_chunks, open_file, FileError};
use bytepair_core::encode::id_bytes::ItemSize;
use bytepair_core::encode::segments::{encode_segments_in_parallel, EncodeSegment, SEGMENT_BYTES};
use bytepair_core::encode::{cancellable, EncodeError};
use numpy::PyArray1;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrow::le_i64s;
use crate::errors::{count_error, encode_error};
use crate::id_buffers;
use crate::runtime::{run_with_progress, thread_count};
use crate::separated::DocumentBatch;

/// A segment longer than this (a text with no safe cut, perhaps one giant
/// pre-token) is encoded on a worker thread while this one polls for Ctrl-C,
/// which cancels the merge (`bytepair_core::encode::cancellable`).
const WATCHED_SEGMENT_BYTES: usize = 8 << 20;

/// Encode `text` without the GIL, appending to `ids`: the segments of the
/// core's `encode_segments` (safe cuts of `cut`, `SEGMENT_BYTES`; the ids of
/// the whole text), with the checks done from Python. Ctrl-C is checked
/// between segments with the GIL held (Python's signal handlers run only
/// then), so KeyboardInterrupt stops a huge `encode` promptly; each segment
/// is encoded with the GIL released on this thread, whose caches are warm,
/// or, past `WATCHED_SEGMENT_BYTES`, on a worker while this thread polls.
pub fn encode_segments(
    py: Python<'_>,
    cut: &CutRule,
    text: &str,
    encode: &impl EncodeSegment,
    ids: &mut Vec<u32>,
) -> PyResult<()> {
    for (start, segment) in segments(cut, text, SEGMENT_BYTES) {
        if start > 0 {
            py.check_signals()?;
        }
        let at_start = start == 0;
        let encoded = if segment.len() > WATCHED_SEGMENT_BYTES {
            run_with_progress(py, Some(1), None, |p| {
                cancellable(p, || encode.encode_segment(segment, at_start, &mut *ids))
            })?
        } else {
            py.detach(|| encode.encode_segment(segment, at_start, &mut *ids))
        };
        encoded.map_err(|e| encode_error(e.shifted(start), text))?;
    }
    Ok(())
}

/// The ids of `text` as a 1-D uint32 NumPy array that owns the buffer they
/// were encoded into (a pooled one, `id_buffers`): with `num_threads` > 1, a text of more than two
/// segments has its segments encoded on that many threads (the ids are the
/// same); otherwise `encode_segments` on this thread.
pub fn encode_to_array<'py>(
    py: Python<'py>,
    cut: &CutRule,
    text: &str,
    num_threads: Option<usize>,
    encode: &impl EncodeSegment,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let threads = thread_count(num_threads)?;
    // Room for ~2 bytes per token; pages never written are never touched,
    // and the spare capacity is returned before the array takes the buffer.
    // Not on huge pages: on a VM, after another process freed its
    // memory, 2 MiB faults were slow enough to make the 2nd and 3rd
    // call on 10 MB of enwiki much slower.
    let mut ids = id_buffers::take(text.len() / 2 + 16, text.len());
    if threads > 1 && text.len() > 2 * SEGMENT_BYTES {
        run_with_progress(py, Some(threads), None, |progress| {
            encode_segments_in_parallel(cut, text, encode, &mut ids, progress)
        })?
        .map_err(|e| encode_error(e, text))?;
    } else {
        encode_segments(py, cut, text, encode, &mut ids)?;
    }
    id_buffers::into_array(py, ids)
}

/// What `encode_file` writes and how (`CoreBPE.encode_file`'s arguments).
pub struct FileJob<'a> {
    pub path: &'a str,
    pub out_fd: i32,
    pub itemsize: usize,
    pub replace_errors: bool,
    pub num_threads: Option<usize>,
    pub callback: Option<Py<PyAny>>,
}

/// Encode the UTF-8 file `job.path` into the open file `job.out_fd` (see
/// `CoreBPE.encode_file`). Returns (ids written, bytes read).
#[cfg(unix)]
pub fn encode_file(
    py: Python<'_>,
    cut: &CutRule,
    job: FileJob<'_>,
    encode: &impl EncodeSegment,
) -> PyResult<(u64, u64)> {
    let itemsize = item_size(job.itemsize)?;
    let path = job.path;
    let reader = open_file(cut, path).map_err(|e| file_error(e, path))?;
    use std::os::fd::FromRawFd;
    // SAFETY: the caller keeps `out_fd` open for the call; ManuallyDrop
    // leaves it open afterwards (the caller owns it).
    let file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(job.out_fd) });
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &*file);
    let threads = thread_count(job.num_threads)?;
    let written = run_with_progress(py, Some(threads), job.callback, |progress| {
        encode_chunks(
            cut,
            reader,
            encode,
            &mut out,
            itemsize,
            job.replace_errors,
            progress,
        )
    })?;
    written.map_err(|e| file_error(e, path))
}

/// What `encode_documents` makes of documents (`CoreBPE.encode_documents`'s
/// arguments but the documents).
pub struct DocumentsJob<'a> {
    pub source: &'a str,
    pub first_record: Option<u64>,
    pub eot: Option<u32>,
    pub itemsize: usize,
    pub replace_errors: bool,
    pub num_threads: Option<usize>,
}

/// `CoreBPE.encode_documents`' documents: a `DocumentBatch` (`offsets`
/// unused), or bytes `data` at Arrow `offsets` (n + 1 little-endian int64).
pub fn encode_documents_arg<'py>(
    py: Python<'py>,
    cut: &CutRule,
    data: &Bound<'py, PyAny>,
    offsets: Option<&[u8]>,
    job: DocumentsJob<'_>,
    encode: &impl EncodeSegment,
) -> PyResult<(Bound<'py, PyArray1<u8>>, Bound<'py, PyBytes>)> {
    if let Ok(batch) = data.cast::<DocumentBatch>() {
        return encode_documents_to_bytes(py, cut, batch.get().as_documents(), job, encode);
    }
    let data = data
        .cast::<PyBytes>()
        .map_err(|_| PyTypeError::new_err("documents: expected bytes or a DocumentBatch"))?
        .as_bytes();
    let offsets = le_i64s(offsets.unwrap_or_default(), "offsets")?;
    let documents =
        Documents::new(data, &offsets).map_err(|e| PyValueError::new_err(e.to_string()))?;
    encode_documents_to_bytes(py, cut, documents, job, encode)
}

/// Encode documents for a training set (see `CoreBPE.encode_documents`):
/// (all ids as little-endian ints of `itemsize` in a uint8 NumPy array that
/// owns them, each document's number of ids as little-endian int64).
fn encode_documents_to_bytes<'py>(
    py: Python<'py>,
    cut: &CutRule,
    documents: Documents<'_>,
    job: DocumentsJob<'_>,
    encode: &impl EncodeSegment,
) -> PyResult<(Bound<'py, PyArray1<u8>>, Bound<'py, PyBytes>)> {
    let itemsize = item_size(job.itemsize)?;
    let encoded = run_with_progress(py, job.num_threads, None, |progress| {
        encode_documents(
            cut,
            documents,
            encode,
            job.eot,
            itemsize,
            job.replace_errors,
            progress,
        )
    })?
    .map_err(|e| match e {
        DocumentsError::InvalidUtf8 { index, offset } => count_error(CountError::InvalidUtf8 {
            path: bytepair_core::count::document_name(job.source, job.first_record, index),
            offset,
        }),
        other => documents_error(other, &documents),
    })?;
    let lengths: Vec<u8> = encoded
        .lengths
        .iter()
        .flat_map(|&n| (n as i64).to_le_bytes())
        .collect();
    // The ids as an array that owns them: a bytes object was a copy, on
    // fresh pages, made on this thread while the others waited.
    let ids = PyArray1::from_vec(py, encoded.ids);
    Ok((ids, PyBytes::new(py, &lengths)))
}

/// `itemsize` (2 or 4) as the core's `ItemSize`; any other is a ValueError.
fn item_size(itemsize: usize) -> PyResult<ItemSize> {
    ItemSize::try_from(itemsize).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `FileError` as a Python exception naming `path` and the file's byte offset.
fn file_error(e: FileError, path: &str) -> PyErr {
    match e {
        FileError::Read(CountError::InvalidUtf8 { path, offset }) => {
            PyValueError::new_err(format!(
                "{path}: invalid UTF-8 at byte offset {offset} \
                 (use errors='replace' / --errors replace to replace bad bytes)"
            ))
        }
        FileError::Read(e) => count_error(e),
        FileError::Encode(EncodeError::Disallowed(d)) => PyValueError::new_err(format!(
            "{path}: the text holds the special-token string {:?} at byte offset {}",
            d.token, d.offset
        )),
        FileError::Encode(e) => PyValueError::new_err(e.to_string()),
        FileError::Write(_) => PyOSError::new_err(e.to_string()),
        FileError::IdTooWide(e) => PyValueError::new_err(e.to_string()),
    }
}

/// A `DocumentsError` other than bad UTF-8 as a Python exception; an encode
/// error is worded as `encode` words it, in the document's text.
fn documents_error(e: DocumentsError, documents: &Documents<'_>) -> PyErr {
    match e {
        DocumentsError::Encode { index, error } => {
            encode_error(error, &String::from_utf8_lossy(documents.get(index)))
        }
        DocumentsError::Cancelled => PyRuntimeError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}
