//! `CoreBPE`: the encoder as Python sees it. Encoding runs without the GIL; a
//! long text is cut at safe cuts into segments (`bytepair_core::encode::segments`)
//! with a Ctrl-C check between them; id lists are built and read back by `IdLists`.

use bytepair_core::cut::CutRule;
use bytepair_core::encode::segments::SEGMENT_BYTES;
use bytepair_core::encode::{specials_that_are_ordinary, Spans};
use bytepair_core::{EncodeError, Encoder, VocabTables};
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::batch::{encode_batch, BatchError};
use crate::errors::{encode_error, encoder_error};
use crate::id_lists::IdLists;
use crate::inputs;
use crate::pipeline::PipelineSpec;
use crate::runtime::thread_count;
use crate::utf8::{with_utf8, StrUtf8};

/// The encoder: vocabulary, merge ranks, special tokens and pattern.
#[pyclass(module = "bytepair._core", frozen)]
pub struct CoreBPE {
    pub(crate) enc: Encoder,
    cut: CutRule,
    lists: IdLists,
}

thread_local! {
    /// The ids of the last encode on this thread, kept as the next one's
    /// buffer: a fresh buffer per call cost a page fault every 4 KiB.
    static IDS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A reused id buffer larger than this is freed after use.
const KEEP_IDS: usize = 16 << 20;

impl CoreBPE {
    /// The encoder of a vocabulary's tables with `specials` and `pattern`;
    /// `pipeline`: a tokenizer.json pipeline.
    fn with_vocab(
        vocab: VocabTables,
        specials: Vec<(String, u32)>,
        pattern: &str,
        pipeline: Option<PipelineSpec>,
    ) -> PyResult<Self> {
        let names: Vec<String> = specials.iter().map(|(t, _)| t.clone()).collect();
        // A pipeline's text is never cut into segments (its preset cuts do not
        // hold after a normalizer); a rule for no preset cuts nowhere in encode.
        let cut = CutRule::new(if pipeline.is_some() { "" } else { pattern }, &names);
        let mut enc = Encoder::with_tables(vocab, specials, pattern).map_err(encoder_error)?;
        if let Some(spec) = pipeline {
            let (pipeline, rules) = crate::pipeline::build(&spec)?;
            enc = enc.with_pipeline(pipeline, &rules).map_err(encoder_error)?;
        }
        Ok(CoreBPE {
            enc,
            cut,
            lists: IdLists::new(),
        })
    }

    /// `Encoder::encode` of `text`, interruptibly, then `finish` on the ids.
    fn encode_ids<R>(
        &self,
        py: Python<'_>,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        finish: impl FnOnce(&[u32]) -> PyResult<R>,
    ) -> PyResult<R> {
        self.encode_interruptibly(
            py,
            text,
            |segment, out| self.enc.encode_into(segment, allowed, disallowed, out),
            finish,
        )
    }

    /// Encode `text` without the GIL into this thread's id buffer and hand the
    /// ids to `finish`.
    fn encode_interruptibly<R>(
        &self,
        py: Python<'_>,
        text: &str,
        encode: impl Fn(&str, &mut Vec<u32>) -> Result<(), EncodeError> + Sync,
        finish: impl FnOnce(&[u32]) -> PyResult<R>,
    ) -> PyResult<R> {
        let mut ids = IDS.with(|cell| std::mem::take(&mut *cell.borrow_mut()));
        ids.clear();
        let result = self
            .encode_segments(py, text, &encode, &mut ids)
            .and_then(|()| finish(&ids));
        if ids.capacity() <= KEEP_IDS {
            IDS.with(|cell| *cell.borrow_mut() = ids);
        }
        result
    }

    /// `inputs::encode_segments` with this encoder's cut rule, its cache
    /// sized for the text first.
    fn encode_segments(
        &self,
        py: Python<'_>,
        text: &str,
        encode: &(impl Fn(&str, &mut Vec<u32>) -> Result<(), EncodeError> + Sync),
        ids: &mut Vec<u32>,
    ) -> PyResult<()> {
        self.enc.expect_text_bytes(text.len());
        inputs::encode_segments(py, &self.cut, text, encode, ids)
    }
}

#[pymethods]
impl CoreBPE {
    /// The encoder of a Tokenizer's own tables, read here rather than
    /// rebuilt as lists in Python: `vocab` (id -> bytes; the ids of
    /// `specials` are left out, but for those that are ordinary tokens too:
    /// `specials_that_are_ordinary`), `merges` ((left, right) bytes in rank order),
    /// `specials` (string, id), `pattern`; `pipeline`: a tokenizer.json
    /// pipeline (see `crate::pipeline`), which then normalizes and
    /// pre-tokenizes instead of `pattern`.
    #[new]
    #[pyo3(signature = (vocab, merges, specials, pattern, pipeline=None))]
    fn new(
        py: Python<'_>,
        vocab: &Bound<'_, pyo3::types::PyDict>,
        merges: &Bound<'_, pyo3::types::PyList>,
        specials: Vec<(String, u32)>,
        pattern: &str,
        pipeline: Option<PipelineSpec>,
    ) -> PyResult<Self> {
        let special_ids: std::collections::HashSet<u32> =
            specials.iter().map(|&(_, id)| id).collect();
        let mut objects: Vec<(Bound<'_, PyBytes>, u32)> = Vec::with_capacity(vocab.len());
        let mut special_objects: Vec<(Bound<'_, PyBytes>, u32)> = Vec::new();
        for (id, bytes) in vocab.iter() {
            let id: u32 = id.extract()?;
            let bytes = bytes.cast_into::<PyBytes>()?;
            if special_ids.contains(&id) {
                special_objects.push((bytes, id));
            } else {
                objects.push((bytes, id));
            }
        }
        let mut merged = Vec::with_capacity(merges.len());
        for pair in merges.iter() {
            let (left, right): (Bound<'_, PyBytes>, Bound<'_, PyBytes>) = pair.extract()?;
            merged.push([left.as_bytes(), right.as_bytes()].concat());
        }
        // Borrowed, not copied: the bytes objects live until the tables are built.
        let mut tokens: Vec<(&[u8], u32)> =
            objects.iter().map(|(b, id)| (b.as_bytes(), *id)).collect();
        if !special_objects.is_empty() {
            let held: Vec<&[u8]> = special_objects.iter().map(|(b, _)| b.as_bytes()).collect();
            let keep = specials_that_are_ordinary(&tokens, &held, &merged);
            tokens.extend(
                special_objects
                    .iter()
                    .zip(keep)
                    .filter(|(_, ordinary)| *ordinary)
                    .map(|((b, id), _)| (b.as_bytes(), *id)),
            );
        }
        let vocab = crate::runtime::run_parallel(py, || VocabTables::new(&tokens, merged))?
            .map_err(encoder_error)?;
        Self::with_vocab(vocab, specials, pattern, pipeline)
    }

    /// The encoder of a `.tiktoken` table (`rank_table`; ids = ranks) with
    /// `specials` (string, id) and `pattern`, from the tables built with it.
    #[staticmethod]
    fn from_rank_table(
        py: Python<'_>,
        table: &crate::RankTable,
        specials: Vec<(String, u32)>,
        pattern: &str,
    ) -> PyResult<Self> {
        let vocab = crate::runtime::run_parallel(py, || table.take_vocab_tables())?
            .map_err(encoder_error)?;
        Self::with_vocab(vocab, specials, pattern, None)
    }

    /// Number of characters after the last safe cut of `text` (see `bytepair_core::cut`),
    /// or None if there is none: `text[:len(text) - n]` and the rest encode
    /// independently to the ids of `text`. A pipeline has no safe cuts (a
    /// Prepend or Strip normalizer acts at both ends of every text).
    fn chars_after_last_cut(&self, text: &str) -> Option<usize> {
        if self.enc.has_pipeline() {
            return None;
        }
        self.cut
            .last_cut(text.as_bytes())
            .map(|i| text[i..].chars().count())
    }

    /// Whether `encode` and the batch calls take the presets' path through
    /// this encoder's pipeline: normalizers, then one Isolated Split by the
    /// preset, special tokens without added-token rules
    /// (`Encoder::has_plain_pipeline`). False without a pipeline.
    #[getter]
    fn plain_pipeline(&self) -> bool {
        self.enc.has_plain_pipeline()
    }

    /// `encode` through the pipeline with each id's span of `text` in bytes
    /// (`Encoder::encode_with_spans`); None without a pipeline.
    fn encode_with_spans(
        &self,
        py: Python<'_>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
    ) -> PyResult<Option<(Vec<u32>, Spans)>> {
        match py.detach(|| self.enc.encode_with_spans(text, &allowed, &disallowed)) {
            None => Ok(None),
            Some(result) => result.map(Some).map_err(|e| encode_error(e, text)),
        }
    }

    fn encode_ordinary<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyList>> {
        let encode =
            |segment: &str, out: &mut Vec<u32>| self.enc.encode_ordinary_into(segment, out);
        with_utf8(text, |text| {
            self.encode_interruptibly(py, text, encode, |ids| {
                self.lists.to_list(py, &self.enc, ids)
            })
        })
    }

    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        allowed: Vec<String>,
        disallowed: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        with_utf8(text, |text| {
            self.encode_ids(py, text, &allowed, &disallowed, |ids| {
                self.lists.to_list(py, &self.enc, ids)
            })
        })
    }

    /// `encode` with BPE-dropout: each candidate merge is skipped with probability
    /// `dropout` (0 <= dropout < 1); the same `seed` gives the same ids.
    fn encode_with_dropout<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        dropout: f64,
        seed: u64,
    ) -> PyResult<Bound<'py, PyList>> {
        if !(0.0..1.0).contains(&dropout) {
            return Err(PyValueError::new_err(format!(
                "dropout={dropout} must be in [0, 1)"
            )));
        }
        let ids = py
            .detach(|| {
                self.enc
                    .encode_with_dropout(text, &allowed, &disallowed, dropout, seed)
            })
            .map_err(|e| encode_error(e, text))?;
        self.lists.to_list(py, &self.enc, &ids)
    }

    /// Like `encode`, but the ids come back as a 1-D uint32 NumPy array that
    /// owns the buffer they were encoded into: no copy, and no second buffer
    /// to fault in (a copy into bytes was a visible share of encoding prose).
    /// With `num_threads` > 1, a text of several segments has its segments
    /// encoded on that many threads (the ids are the same).
    #[pyo3(signature = (text, allowed, disallowed, num_threads=Some(1)))]
    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let encode = |segment: &str, out: &mut Vec<u32>| {
            self.enc.encode_into(segment, &allowed, &disallowed, out)
        };
        with_utf8(text, |text| {
            if thread_count(num_threads)? <= 1 || text.len() <= 2 * SEGMENT_BYTES {
                self.enc.expect_text_bytes(text.len());
            }
            inputs::encode_to_array(py, &self.cut, text, num_threads, &encode)
        })
    }

    /// Encode the UTF-8 file `path` into the open file `out_fd` (written from
    /// its current position, not closed) as little-endian unsigned
    /// ints of `itemsize` bytes (2 or 4), reading it in chunks of about 8 MiB
    /// cut at safe cuts (never elsewhere: the ids are those of the whole text)
    /// and encoding each chunk's ~1 MiB segments on `num_threads` threads.
    /// `callback(bytes read)` is called as it goes. Returns (ids written,
    /// bytes read). Errors: OSError for the files; ValueError for bytes that
    /// are not UTF-8 (unless `replace_errors`) or a disallowed special token,
    /// naming `path` and the byte offset, or for a tokenizer.json pipeline
    /// (no safe cuts: encode the text instead).
    #[cfg(unix)]
    #[pyo3(signature = (
        path, out_fd, itemsize, allowed, disallowed, replace_errors=false, num_threads=None,
        callback=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn encode_file(
        &self,
        py: Python<'_>,
        path: &str,
        out_fd: i32,
        itemsize: usize,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        replace_errors: bool,
        num_threads: Option<usize>,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<(u64, u64)> {
        if self.enc.has_pipeline() {
            return Err(PyValueError::new_err(
                "a tokenizer.json pipeline has no safe cuts: encode the file's text",
            ));
        }
        let encode = |segment: &str, ids: &mut Vec<u32>| {
            self.enc.encode_into(segment, &allowed, &disallowed, ids)
        };
        let job = inputs::FileJob {
            path,
            out_fd,
            itemsize,
            replace_errors,
            num_threads,
            callback,
        };
        inputs::encode_file(py, &self.cut, job, &encode)
    }

    /// Encode many texts on `num_threads` threads, the calling thread being one
    /// of them (default and at most: one per core). The texts are
    /// borrowed, not copied: a str exposes its UTF-8 buffer, and the list
    /// keeps every str alive. A text with a lone surrogate raises
    /// UnicodeEncodeError before any work (the Python side then replaces them
    /// and calls again).
    #[pyo3(signature = (texts, allowed, disallowed, num_threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let utf8: Vec<StrUtf8> = texts.iter().map(StrUtf8::of).collect::<PyResult<_>>()?;
        let threads = thread_count(num_threads)?;
        let encode =
            |i: usize| utf8[i].with_str(|text| self.enc.encode(text, &allowed, &disallowed));
        let ints = self.lists.shared_ints(py, &self.enc);
        let lens: Vec<usize> = utf8.iter().map(StrUtf8::len).collect();
        encode_batch(py, &lens, threads, &encode, ints).map_err(|e| match e {
            BatchError::Python(e) => e,
            BatchError::Encode(e, i) => match texts[i].to_str() {
                Ok(text) => encode_error(e, text),
                Err(e) => e,
            },
        })
    }

    /// Encode documents for a training set. The documents come in Arrow
    /// `large_binary` layout, as the corpus readers make them (`data` back to
    /// back, `offsets` n + 1 little-endian int64), and are encoded on
    /// `num_threads` threads while the calling thread waits and checks Ctrl-C;
    /// `eot` is appended to each when given. Returns all ids back to back as
    /// little-endian unsigned ints of `itemsize` bytes (2 or 4), in a uint8
    /// NumPy array that owns them (a buffer like bytes, without a copy), and each
    /// document's number of ids (`eot` included) as little-endian int64: what
    /// a token shard and its offsets hold (`bytepair.dataset`), with no Python
    /// object per document or per id. Errors: bytes that are not UTF-8 (unless
    /// `replace_errors`) name `source`, the record (`first_record` + index,
    /// when given) and the byte offset; an encode error is the first failing
    /// document's; an id that does not fit in `itemsize` bytes is a ValueError.
    #[pyo3(signature = (
        data, offsets, source, first_record, allowed, disallowed, eot, itemsize,
        replace_errors=false, num_threads=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn encode_documents<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offsets: Option<&[u8]>,
        source: &str,
        first_record: Option<u64>,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        eot: Option<u32>,
        itemsize: usize,
        replace_errors: bool,
        num_threads: Option<usize>,
    ) -> PyResult<(Bound<'py, PyArray1<u8>>, Bound<'py, PyBytes>)> {
        let encode = |piece: &str, ids: &mut Vec<u32>| {
            self.enc.encode_into(piece, &allowed, &disallowed, ids)
        };
        let job = inputs::DocumentsJob {
            source,
            first_record,
            eot,
            itemsize,
            replace_errors,
            num_threads,
        };
        inputs::encode_documents_arg(py, &self.cut, data, offsets, job, &encode)
    }

    /// Joined bytes of a list of ids.
    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        ids: Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(
            py,
            &self.lists.joined_bytes(py, &self.enc, &ids)?,
        ))
    }

    /// The text of a list of ids: their joined bytes decoded as UTF-8 with the
    /// error handler `errors` ("strict", "replace", ...), as `bytes.decode`
    /// does, but with no bytes object between (one 4-byte-per-id copy fewer).
    fn decode_text<'py>(
        &self,
        py: Python<'py>,
        ids: Bound<'py, PyList>,
        errors: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = self.lists.joined_bytes(py, &self.enc, &ids)?;
        let errors = std::ffi::CString::new(errors)
            .map_err(|_| PyValueError::new_err("errors holds a NUL character"))?;
        // SAFETY: the buffer and the handler name outlive the call, which
        // returns a new reference or NULL with an exception set.
        unsafe {
            let text = pyo3::ffi::PyUnicode_DecodeUTF8(
                out.as_ptr().cast(),
                out.len() as pyo3::ffi::Py_ssize_t,
                errors.as_ptr(),
            );
            Bound::from_owned_ptr_or_err(py, text)
        }
    }

    /// What the calling thread's caches for this encoder hold and have done
    /// (`Encoder::cache_stats`), as a dict: `pieces_seen`; per piece cache
    /// (`short_`, `mid_`) `pieces`, `bytes`, `inserted`, `sweeps`, `evicted`;
    /// `long_pieces`, `long_bytes`. For measuring and testing.
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.enc.cache_stats();
        let out = PyDict::new(py);
        out.set_item("pieces_seen", stats.pieces_seen)?;
        for (name, cache) in [("short", stats.short), ("mid", stats.mid)] {
            out.set_item(format!("{name}_pieces"), cache.pieces)?;
            out.set_item(format!("{name}_bytes"), cache.bytes)?;
            out.set_item(format!("{name}_inserted"), cache.inserted)?;
            out.set_item(format!("{name}_sweeps"), cache.sweeps)?;
            out.set_item(format!("{name}_evicted"), cache.evicted)?;
        }
        out.set_item("long_pieces", stats.long_pieces)?;
        out.set_item("long_bytes", stats.long_bytes)?;
        Ok(out)
    }

    /// The pre-tokens of `text` (special tokens not treated), for tests and
    /// inspection; through the pipeline (normalized) when there is one.
    fn pretokenize(&self, text: &str) -> PyResult<Vec<String>> {
        let pieces = self
            .enc
            .pretokenize(text)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(pieces
            .into_iter()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .collect())
    }
}
