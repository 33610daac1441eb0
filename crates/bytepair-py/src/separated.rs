//! A text whose documents are separated by a string, read in batches for
//! `encode_documents` with no copy of the text: each batch is read straight
//! into a reused buffer (`readinto`), its documents are ranges of that buffer
//! (`bytepair_core::count::document_ranges`), and the buffer goes back to a
//! small process-wide pool when the batch is dropped. Before this, each batch
//! of `encode_dataset` was copied three times (the held start of a document
//! prepended to the block, the split's copy without separators, that copy
//! into a bytes object), each copy often on fresh pages.

use std::ops::Range;

use bytepair_core::count::document_ranges;
use bytepair_core::encode::documents::Documents;
use bytepair_core::BufferPool;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::{ffi, intern};

/// Batch buffers kept for the next batches (a reader has at most three in
/// use: the one it fills, the one queued for encoding, the one being
/// encoded), and the largest kept, in bytes (a buffer grown for one huge
/// document is freed instead).
const SPARE_BUFFERS: usize = 4;
const SPARE_MAX_BYTES: usize = 17 << 20;

/// Buffers of dropped batches, for the next batches of any reader: fresh
/// ones are pages to fault in and zero, every batch, whenever glibc's mmap
/// threshold maps them anew.
static SPARE: BufferPool<u8> = BufferPool::new(SPARE_BUFFERS);

fn spare_buffer() -> Vec<u8> {
    SPARE.take(|_| true).unwrap_or_default()
}

fn give_back(buffer: Vec<u8>) {
    if buffer.len() <= SPARE_MAX_BYTES {
        SPARE.keep(buffer);
    }
}

/// Reads a binary file object whose documents are separated by `separator`
/// into `DocumentBatch`es of about `batch_bytes` bytes each, a document held
/// whole: its start carries over to the next batch, and a document longer
/// than a batch makes its batch longer. Empty pieces (a separator at either
/// end, two in a row) are no documents; a separator that overlaps the end of
/// the previous one is inside a document (`count::document_ranges`).
#[pyclass(module = "bytepair._core")]
pub struct SeparatedReader {
    file: Py<PyAny>,
    readinto: bool,
    separator: Vec<u8>,
    batch_bytes: usize,
    /// The start of a document that the next batch continues.
    held: Vec<u8>,
    /// Documents in the batches so far.
    first: u64,
    ended: bool,
}

#[pymethods]
impl SeparatedReader {
    /// `file`: an open binary file (``readinto`` is used when it has one,
    /// else ``read``); `separator`: non-empty bytes; `batch_bytes` >= 1.
    #[new]
    fn new(file: Bound<'_, PyAny>, separator: Vec<u8>, batch_bytes: usize) -> PyResult<Self> {
        if separator.is_empty() {
            return Err(PyValueError::new_err("the separator is empty"));
        }
        if batch_bytes == 0 {
            return Err(PyValueError::new_err("batch_bytes must be at least 1"));
        }
        Ok(SeparatedReader {
            readinto: file.hasattr(intern!(file.py(), "readinto"))?,
            file: file.unbind(),
            separator,
            batch_bytes,
            held: Vec::new(),
            first: 0,
            ended: false,
        })
    }

    /// The next batch of documents, or None after the last. Errors: those of
    /// the file's ``readinto`` / ``read`` (OSError...), TypeError when
    /// ``read`` returns anything but bytes.
    fn next_batch(&mut self, py: Python<'_>) -> PyResult<Option<DocumentBatch>> {
        if self.ended {
            return Ok(None);
        }
        let mut data = spare_buffer();
        let mut want = self.held.len() + self.batch_bytes;
        grow(&mut data, want);
        data[..self.held.len()].copy_from_slice(&self.held);
        let mut filled = self.held.len();
        loop {
            let n = self.read_into(py, &mut data, filled..want)?;
            filled += n;
            let last = n == 0;
            if filled < want && !last {
                continue; // a short read
            }
            let separator = &self.separator;
            let text = &data[..filled];
            let (ranges, tail) = py.detach(|| document_ranges(text, separator, last));
            if ranges.is_empty() && !last {
                // No document ends in the batch yet: read on, doubling the
                // buffer, so one huge document is read in linear time.
                want = filled + self.batch_bytes.max(filled);
                grow(&mut data, want);
                continue;
            }
            self.held.clear();
            self.held.extend_from_slice(&data[tail..filled]);
            self.ended = last;
            if ranges.is_empty() {
                give_back(data);
                return Ok(None);
            }
            let first = self.first;
            self.first += ranges.len() as u64;
            let document_bytes = ranges.iter().map(|r| r.len() as u64).sum();
            return Ok(Some(DocumentBatch {
                data,
                ranges,
                first,
                document_bytes,
            }));
        }
    }
}

impl SeparatedReader {
    /// Read into `data[range]` (non-empty); returns the bytes read, 0 at the end.
    fn read_into(
        &self,
        py: Python<'_>,
        data: &mut Vec<u8>,
        range: Range<usize>,
    ) -> PyResult<usize> {
        let file = self.file.bind(py);
        let wanted = range.len();
        if !self.readinto {
            let block = file.call_method1(intern!(py, "read"), (wanted,))?;
            let block = block
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err("the file's read() returned no bytes"))?
                .as_bytes();
            if block.len() > wanted {
                return Err(PyRuntimeError::new_err(format!(
                    "the file's read({wanted}) returned {} bytes",
                    block.len()
                )));
            }
            data[range.start..range.start + block.len()].copy_from_slice(block);
            return Ok(block.len());
        }
        let target = &mut data[range];
        // SAFETY: a memoryview over `target`, which lives (and is not moved)
        // until the view is released below; a view that cannot be released
        // (the file kept an export of it) keeps the buffer alive for ever.
        let view = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyMemoryView_FromMemory(
                    target.as_mut_ptr().cast(),
                    wanted as ffi::Py_ssize_t,
                    ffi::PyBUF_WRITE,
                ),
            )?
        };
        let read = file.call_method1(intern!(py, "readinto"), (&view,));
        if let Err(e) = view.call_method0(intern!(py, "release")) {
            std::mem::forget(std::mem::take(data));
            return Err(e);
        }
        let n: Option<usize> = read?.extract()?;
        match n {
            Some(n) if n <= wanted => Ok(n),
            Some(n) => Err(PyRuntimeError::new_err(format!(
                "the file's readinto() reported {n} bytes read into a buffer of {wanted}"
            ))),
            None => Err(PyRuntimeError::new_err(
                "the file's readinto() returned None (a non-blocking file with no data)",
            )),
        }
    }
}

/// `data` at least `len` bytes long (its new bytes zero), with an eighth
/// more to spare: a reused buffer then holds the next batch's held start too
/// (growing it by a few bytes per batch was a `realloc` onto fresh pages:
/// 3,650 page faults per `encode_dataset` of enwiki.txt on one thread, 1,600
/// with the spare).
fn grow(data: &mut Vec<u8>, len: usize) {
    if data.len() < len {
        data.resize(len + len / 8, 0);
    }
}

/// A batch of documents from `SeparatedReader`: `encode_documents` takes it
/// in place of bytes and offsets.
#[pyclass(module = "bytepair._core", frozen)]
pub struct DocumentBatch {
    data: Vec<u8>,
    ranges: Vec<Range<usize>>,
    first: u64,
    document_bytes: u64,
}

#[pymethods]
impl DocumentBatch {
    /// Number of documents.
    fn __len__(&self) -> usize {
        self.ranges.len()
    }

    /// The index in the file of the batch's first document.
    #[getter]
    fn first(&self) -> u64 {
        self.first
    }

    /// The documents' bytes (separators not counted).
    #[getter]
    fn document_bytes(&self) -> u64 {
        self.document_bytes
    }
}

impl DocumentBatch {
    /// The documents, where they were read.
    pub fn as_documents(&self) -> Documents<'_> {
        Documents::at_ranges(&self.data, &self.ranges).expect("ranges found in this buffer")
    }
}

impl Drop for DocumentBatch {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.data));
    }
}
