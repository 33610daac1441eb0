//! Python bindings of `bytepair_core`: the extension module `bytepair._core`.
//!
//! The core knows nothing of Python; this crate converts arguments and errors,
//! releases the GIL around heavy work and keeps Ctrl-C working:
//!
//! * `runtime`: long calls (counting, the merge loop) run on a worker thread
//!   while the calling thread wakes every 100 ms to report progress and check
//!   signals; a panic becomes a Python exception;
//! * `counter`: `WordCounter`, word counts and training;
//! * `reduce`: `merge_runs`, the reduce of word-counts buckets as a merge of sorted runs;
//! * `encoder`: `CoreBPE`, encoding (segmented at safe cuts) and decoding;
//! * `pipeline`: a tokenizer.json pipeline (normalizers, pre-tokenizer steps) from Python tuples;
//! * `batch`: `encode_batch`'s scheduler, which overlaps building Python lists
//!   on the calling thread with encoding on the others;
//! * `id_lists`, `shared_ints`: CPython-specific speed-ups for id lists;
//! * `id_buffers`: the buffers of `encode_to_numpy`'s arrays, recycled.
//! * `utf8`: the UTF-8 of a short str in a reused buffer, not CPython's kept copy.

mod arrow;
mod batch;
mod byte_level;
mod counter;
mod encoder;
mod errors;
mod id_buffers;
mod id_lists;
mod inputs;
mod pipeline;
mod reduce;
mod runtime;
mod sentencepiece;
mod separated;
mod shared_ints;
mod spm_encoder;
mod utf8;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// Resolve a preset name (`gpt2`, `cl100k`, `o200k`) to its regex; other strings pass through.
#[pyfunction]
fn resolve_pattern(name_or_pattern: &str) -> String {
    bytepair_core::pretokenize::resolve_pattern(name_or_pattern).to_string()
}

/// For tokens in rank order (single bytes left out), the byte length of the left
/// part of each one's merge, or None where BPE with lower ranks does not leave
/// exactly two parts (see `bytepair_core::recover::recover_merges`).
#[pyfunction]
fn recover_merges(py: Python<'_>, merged: Vec<Vec<u8>>) -> PyResult<Vec<Option<usize>>> {
    runtime::run_parallel(py, || bytepair_core::recover::recover_merges(&merged))
}

/// Whether a merge table passes the checks of `formats.tables` (see
/// `bytepair_core::recover::merge_table_passes`; `vocab`: the tokens' bytes).
/// False, also for anything that is not lists of bytes, sends the caller to
/// its item-by-item check, which words the fault.
#[pyfunction]
#[pyo3(signature = (merges, vocab=None, rank_rule=true))]
fn merge_table_passes(
    py: Python<'_>,
    merges: &Bound<'_, PyList>,
    vocab: Option<&Bound<'_, PyList>>,
    rank_rule: bool,
) -> PyResult<bool> {
    let mut parts: Vec<(Bound<'_, PyBytes>, Bound<'_, PyBytes>)> = Vec::with_capacity(merges.len());
    for pair in merges.iter() {
        match pair.extract() {
            Ok(pair) => parts.push(pair),
            Err(_) => return Ok(false),
        }
    }
    let tokens: Option<Vec<Bound<'_, PyBytes>>> = match vocab {
        Some(list) => match list
            .iter()
            .map(|t| t.cast_into::<PyBytes>())
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(tokens) => Some(tokens),
            Err(_) => return Ok(false),
        },
        None => None,
    };
    let pairs: Vec<(&[u8], &[u8])> = parts
        .iter()
        .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
        .collect();
    let token_bytes: Option<Vec<&[u8]>> = tokens
        .as_ref()
        .map(|t| t.iter().map(|b| b.as_bytes()).collect());
    runtime::run_parallel(py, || {
        bytepair_core::recover::merge_table_passes(&pairs, token_bytes.as_deref(), rank_rule)
    })
}

/// A `.tiktoken` file's content, parsed and its merges recovered, with the
/// encoder's vocabulary tables built (no Python objects yet: the Tokenizer
/// makes `vocab` and `merges` only when they are asked for), or None for
/// anything that is not a valid BPE rank table (the caller's own parser then
/// words the error).
#[pyfunction]
fn rank_table(py: Python<'_>, data: &[u8]) -> PyResult<Option<RankTable>> {
    runtime::run_parallel(py, || {
        let (table, vocab) = bytepair_core::rank_file::RankTable::parse(data)?;
        Some(RankTable {
            table,
            vocab: std::sync::Mutex::new(Some(vocab)),
        })
    })
}

/// A rank file's table (see `rank_table`).
#[pyclass(frozen, module = "bytepair._core")]
pub struct RankTable {
    table: bytepair_core::rank_file::RankTable,
    /// Taken by the first `CoreBPE.from_rank_table`.
    vocab: std::sync::Mutex<Option<bytepair_core::VocabTables>>,
}

impl RankTable {
    /// The encoder tables, built already or (on a second use) again.
    pub fn take_vocab_tables(
        &self,
    ) -> Result<bytepair_core::VocabTables, bytepair_core::EncoderError> {
        let built = self
            .vocab
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        built.map_or_else(|| self.table.vocab_tables(), Ok)
    }
}

#[pymethods]
impl RankTable {
    /// Number of tokens.
    fn __len__(&self) -> usize {
        self.table.len()
    }

    /// The highest rank (a table has at least one token).
    fn max_rank(&self) -> u32 {
        self.table.max_rank().unwrap_or(0)
    }

    /// The bytes of the token of rank `rank`, or None.
    fn token<'py>(&self, py: Python<'py>, rank: u32) -> Option<Bound<'py, PyBytes>> {
        self.table.token(rank).map(|t| PyBytes::new(py, t))
    }

    /// (vocab: {rank: token bytes} in rank order, merges: [(left bytes,
    /// right bytes)] in rank order); a merge's parts are the vocab's bytes objects.
    fn python_tables<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>)> {
        let objects: Vec<Bound<'py, PyBytes>> = self
            .table
            .tokens()
            .map(|(token, _)| PyBytes::new(py, token))
            .collect();
        let vocab = PyDict::new(py);
        for ((_, rank), object) in self.table.tokens().zip(&objects) {
            vocab.set_item(rank, object)?;
        }
        let pairs = PyList::empty(py);
        for &(left, right) in self.table.merges() {
            pairs.append((&objects[left as usize], &objects[right as usize]))?;
        }
        Ok((vocab, pairs))
    }
}

/// Every token of `vocab` (id -> bytes) in increasing id order, each as its
/// id and byte length (little-endian u64 each) followed by its bytes: what
/// `bytepair.dataset.shards.tokenizer_sha256` hashes. Built here because the
/// same loop in Python took 6-7 ms of every `encode_dataset` call (GPT-2's
/// 50k tokens), before any encoding could start. Errors: an id that is not
/// an int in [0, 2**64) or a token that is not bytes (TypeError, OverflowError).
#[pyfunction]
fn packed_vocab<'py>(py: Python<'py>, vocab: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyBytes>> {
    let mut tokens: Vec<(u64, Bound<'py, PyBytes>)> = Vec::with_capacity(vocab.len());
    for (id, token) in vocab.iter() {
        tokens.push((id.extract()?, token.cast_into::<PyBytes>()?));
    }
    tokens.sort_unstable_by_key(|(id, _)| *id);
    let total = tokens.iter().map(|(_, t)| 16 + t.as_bytes().len()).sum();
    PyBytes::new_with(py, total, |out| {
        let mut at = 0;
        for (id, token) in &tokens {
            let token = token.as_bytes();
            out[at..at + 8].copy_from_slice(&id.to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&(token.len() as u64).to_le_bytes());
            out[at + 16..at + 16 + token.len()].copy_from_slice(token);
            at += 16 + token.len();
        }
        Ok(())
    })
}

/// Set the memory budget of each thread's encoder caches per encoder, in
/// bytes (rounded down to a power of two, at least 1 MiB; default 128 MiB;
/// see `bytepair_core::encode::set_cache_budget`); caches made afterwards use
/// it. Returns the budget in effect.
#[pyfunction]
fn set_cache_budget(nbytes: usize) -> usize {
    bytepair_core::encode::set_cache_budget(nbytes)
}

/// The cache budget in effect, in bytes.
#[pyfunction]
fn cache_budget() -> usize {
    bytepair_core::encode::cache_budget()
}

/// Test hook: panic on the calling thread (`"caller"`, surfaces as pyo3's
/// `PanicException`) or on a worker thread (`"worker"`, surfaces as `RuntimeError`),
/// to check that a panic never aborts the interpreter.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>, place: &str) -> PyResult<()> {
    match place {
        "caller" => panic!("panic requested by a test"),
        "worker" => runtime::run_with_progress(py, Some(2), None, |_| -> () {
            panic!("panic requested by a test")
        }),
        other => Err(PyValueError::new_err(format!(
            "place {other:?}: expected 'caller' or 'worker'"
        ))),
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(resolve_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(recover_merges, m)?)?;
    m.add_function(wrap_pyfunction!(rank_table, m)?)?;
    m.add_function(wrap_pyfunction!(merge_table_passes, m)?)?;
    m.add_function(wrap_pyfunction!(byte_level::byte_level_tables, m)?)?;
    m.add_function(wrap_pyfunction!(reduce::merge_runs, m)?)?;
    m.add_function(wrap_pyfunction!(packed_vocab, m)?)?;
    m.add_function(wrap_pyfunction!(set_cache_budget, m)?)?;
    m.add_function(wrap_pyfunction!(id_lists::untrack_int_lists, m)?)?;
    m.add_function(wrap_pyfunction!(cache_budget, m)?)?;
    m.add_class::<counter::WordCounter>()?;
    m.add_class::<encoder::CoreBPE>()?;
    m.add_class::<RankTable>()?;
    m.add_class::<separated::SeparatedReader>()?;
    m.add_class::<separated::DocumentBatch>()?;
    m.add_class::<sentencepiece::SentencePieceModel>()?;
    m.add_class::<spm_encoder::CoreSPM>()?;
    m.add_function(wrap_pyfunction!(sentencepiece::train_sentencepiece, m)?)?;
    Ok(())
}
