//! `CoreSPM`: a SentencePiece BPE encoder (`bytepair_core::sentencepiece::SpmEncoder`)
//! as Python sees it, with the names and arguments of `CoreBPE`'s methods, so
//! `bytepair.Tokenizer` drives both. Long inputs (a text in segments, files,
//! documents) go through `inputs` with the model's own cut rule
//! (`SpmEncoder::cut_rule`) and `SpmSegments`, which gives only a text's
//! first segment the dummy prefix.

use bytepair_core::cut::CutRule;
use bytepair_core::sentencepiece::{Model, Spans, SpmEncoder, SpmOptions, SpmSegments};
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::batch::{encode_batch, BatchError};
use crate::errors::encode_error;
use crate::inputs;
use crate::runtime::thread_count;
use crate::sentencepiece::{value_error, SentencePieceModel};
use crate::shared_ints::SharedInts;

/// The SentencePiece BPE encoder of a model, with special tokens.
#[pyclass(module = "bytepair._core", frozen)]
pub struct CoreSPM {
    enc: SpmEncoder,
    cut: CutRule,
    ints: PyOnceLock<SharedInts>,
}

impl CoreSPM {
    fn to_list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        self.shared_ints(py).list(py, ids)
    }

    /// The ints id lists share (made on first use).
    fn shared_ints(&self, py: Python<'_>) -> &SharedInts {
        let n = self.enc.model().pieces.len() as u32;
        self.ints.get_or_init(py, || SharedInts::new(py, n))
    }

    /// The segment encoder of a call; `continued`: the text continues an
    /// input (a block of a stream after the first: no dummy prefix).
    fn segments<'a>(
        &'a self,
        allowed: &'a [String],
        disallowed: &'a [String],
        continued: bool,
    ) -> SpmSegments<'a> {
        SpmSegments {
            encoder: &self.enc,
            allowed,
            disallowed,
            continued,
        }
    }

    /// The ids of `text`, in segments with a Ctrl-C check between them.
    fn ids(
        &self,
        py: Python<'_>,
        text: &str,
        allowed: &[String],
        disallowed: &[String],
        continued: bool,
    ) -> PyResult<Vec<u32>> {
        let mut ids = Vec::with_capacity(text.len() / 3 + 16);
        let encode = self.segments(allowed, disallowed, continued);
        inputs::encode_segments(py, &self.cut, text, &encode, &mut ids)?;
        Ok(ids)
    }
}

#[pymethods]
impl CoreSPM {
    /// The encoder of `model` (ValueError: not a BPE model, or a model
    /// SentencePiece would refuse); `specials`: (string, id) of the tokens a
    /// text may hold as special tokens. The keywords run a tokenizer.json as
    /// HF tokenizers does (see `SpmOptions`, `Normalization`): `hf_chars`
    /// (a character that is no piece never merges), `never_merged` (ids),
    /// `whole_lookup` (`ignore_merges`), `fuse_unk`, `metaspace_prefix` and
    /// `prefix_first_only` (Metaspace's dummy prefix).
    #[new]
    #[pyo3(signature = (model, specials, *, hf_chars=false, never_merged=vec![], whole_lookup=false, fuse_unk=true, metaspace_prefix=false, prefix_first_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model: &SentencePieceModel,
        specials: Vec<(String, u32)>,
        hf_chars: bool,
        never_merged: Vec<u32>,
        whole_lookup: bool,
        fuse_unk: bool,
        metaspace_prefix: bool,
        prefix_first_only: bool,
    ) -> PyResult<Self> {
        let options = SpmOptions {
            chars_merge: !hf_chars,
            never_merged,
            whole_lookup,
            fuse_unk,
        };
        let enc = py
            .detach(|| {
                let mut model = Model::from_proto(&model.proto).map_err(|e| e.to_string())?;
                model.normalization.metaspace_prefix = metaspace_prefix;
                model.normalization.prefix_first_only = prefix_first_only;
                SpmEncoder::with_options(model, specials, options).map_err(|e| e.to_string())
            })
            .map_err(PyValueError::new_err)?;
        Ok(CoreSPM {
            cut: enc.cut_rule(),
            enc,
            ints: PyOnceLock::new(),
        })
    }

    /// `encode`; `continued`: the text continues an input (no dummy prefix:
    /// a block of `encode_iterable` after the first).
    #[pyo3(signature = (text, allowed, disallowed, continued=false))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        continued: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let ids = self.ids(py, text, &allowed, &disallowed, continued)?;
        self.to_list(py, &ids)
    }

    fn encode_ordinary<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let ids = self.ids(py, text, &[], &[], false)?;
        self.to_list(py, &ids)
    }

    /// `encode` as a uint32 array; a text of more than two segments is
    /// encoded on `num_threads` threads (the same ids).
    #[pyo3(signature = (text, allowed, disallowed, num_threads=Some(1), continued=false))]
    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        num_threads: Option<usize>,
        continued: bool,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let encode = self.segments(&allowed, &disallowed, continued);
        inputs::encode_to_array(py, &self.cut, text, num_threads, &encode)
    }

    /// Number of characters after the last safe cut of `text`
    /// (`SpmEncoder::cut_rule`), or None: `text[:len(text) - n]` and the
    /// rest, encoded as a continuation, give the ids of `text`.
    fn chars_after_last_cut(&self, text: &str) -> Option<usize> {
        self.cut
            .last_cut(text.as_bytes())
            .map(|i| text[i..].chars().count())
    }

    /// `CoreBPE.encode_file`: the UTF-8 file `path` into the open file
    /// `out_fd` as little-endian ints of `itemsize` bytes, read in chunks cut
    /// at safe cuts and encoded on `num_threads` threads; (ids, bytes read).
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
        let job = inputs::FileJob {
            path,
            out_fd,
            itemsize,
            replace_errors,
            num_threads,
            callback,
        };
        let encode = self.segments(&allowed, &disallowed, false);
        inputs::encode_file(py, &self.cut, job, &encode)
    }

    /// `CoreBPE.encode_documents`: documents in Arrow layout, each encoded on
    /// its own (its first segment with the dummy prefix), `eot` after each.
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
        let job = inputs::DocumentsJob {
            source,
            first_record,
            eot,
            itemsize,
            replace_errors,
            num_threads,
        };
        let encode = self.segments(&allowed, &disallowed, false);
        inputs::encode_documents_arg(py, &self.cut, data, offsets, job, &encode)
    }

    #[pyo3(signature = (texts, allowed, disallowed, num_threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        allowed: Vec<String>,
        disallowed: Vec<String>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let texts: Vec<&str> = texts.iter().map(|t| t.to_str()).collect::<PyResult<_>>()?;
        let threads = thread_count(num_threads)?;
        let encode = |i: usize| {
            let mut ids = Vec::with_capacity(texts[i].len() / 3 + 16);
            self.enc
                .encode_into(texts[i], &allowed, &disallowed, &mut ids)
                .map(|()| ids)
        };
        let lens: Vec<usize> = texts.iter().map(|t| t.len()).collect();
        encode_batch(py, &lens, threads, &encode, self.shared_ints(py)).map_err(|e| match e {
            BatchError::Python(e) => e,
            BatchError::Encode(e, i) => encode_error(e, texts[i]),
        })
    }

    /// `encode` with each id's (start, end) byte span of `text`.
    fn encode_with_spans(
        &self,
        py: Python<'_>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
    ) -> PyResult<(Vec<u32>, Spans)> {
        py.detach(|| self.enc.encode_with_spans(text, &allowed, &disallowed))
            .map_err(|e| encode_error(e, text))
    }

    /// SentencePiece's decoding as bytes, byte pieces as their raw bytes.
    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let out = py
            .detach(|| self.enc.decode(&ids, true))
            .map_err(value_error)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The raw decoding (no denormalizer) and the byte offset where each
    /// id's text starts in it.
    fn decode_with_starts<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<i64>,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<usize>)> {
        let (out, starts) = py
            .detach(|| self.enc.decode_with_starts(&ids))
            .map_err(value_error)?;
        Ok((PyBytes::new(py, &out), starts))
    }

    /// SentencePiece's decoding (an invalid byte of a byte-piece run is U+FFFD).
    fn decode_text(&self, py: Python<'_>, ids: Vec<i64>) -> PyResult<String> {
        let out = py
            .detach(|| self.enc.decode(&ids, false))
            .map_err(value_error)?;
        String::from_utf8(out).map_err(|_| value_error("decoded text is not UTF-8"))
    }
}
