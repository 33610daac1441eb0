//! Python bindings (`bytepair._core`). This file only converts arguments and
//! errors and releases the GIL around heavy work; each stage lives in its own
//! module: pretokenize -> count -> train, and encode.
//!
//! Long calls (counting, the merge loop) run on a worker thread while the calling
//! thread wakes every 100 ms to report progress to Python and to check for
//! Ctrl-C, so KeyboardInterrupt stops them promptly. `encode_batch` shares its
//! texts between worker threads and the calling thread, which also turns the
//! finished ids into Python lists (`build_lists`).

pub mod count;
pub mod encode;
pub mod pretokenize;
mod shared_ints;
pub mod train;
pub mod wordcounts;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, LazyLock, Mutex};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString};

use count::{CountError, CutRule, Progress, WordCounts};
use encode::{EncodeError, Encoder};
use pretokenize::PreTokenizer;
use shared_ints::{SharedInts, TokensByAddress};
use wordcounts::ColumnsError;

fn pool(num_threads: Option<usize>) -> PyResult<rayon::ThreadPool> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(n) = num_threads {
        if n == 0 {
            return Err(PyValueError::new_err("num_threads must be at least 1"));
        }
        b = b.num_threads(n);
    }
    b.build().map_err(|e| PyRuntimeError::new_err(format!("cannot start thread pool: {e}")))
}

/// Worker pools of `encode_batch`, one per worker count, kept for the life of
/// the process. A batch of a thousand documents takes milliseconds, so
/// starting threads per call cost time, and a fresh thread starts with an
/// empty piece cache.
static BATCH_POOLS: LazyLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = LazyLock::new(Default::default);

fn batch_pool(num_threads: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    let mut pools = BATCH_POOLS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(pool) = pools.get(&num_threads) {
        return Ok(Arc::clone(pool));
    }
    let pool = Arc::new(pool(Some(num_threads))?);
    pools.insert(num_threads, Arc::clone(&pool));
    Ok(pool)
}

/// Run `work` without the GIL on its own thread pool; every 100 ms call
/// `callback(progress.done)` and check signals. A Python error (Ctrl-C, or one
/// raised by the callback) cancels the work and is returned.
fn run_with_progress<R: Send>(
    py: Python<'_>,
    num_threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    work: impl FnOnce(&Progress) -> R + Send,
) -> PyResult<R> {
    let pool = pool(num_threads)?;
    let progress = Progress::default();
    let report = |done: u64| -> PyResult<()> {
        Python::attach(|py| {
            py.check_signals()?;
            if let Some(cb) = &callback {
                cb.call1(py, (done,))?;
            }
            Ok(())
        })
    };
    let (result, error) = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let progress = &progress;
            s.spawn(move || {
                // A panic (a bug) becomes an error for the caller instead of
                // re-panicking out of the scope.
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.install(|| work(progress))));
                let _ = tx.send(outcome.map_err(|payload| panic_message(payload.as_ref())));
            });
            let mut error = None;
            loop {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(r) => return (Some(r), error),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if error.is_none() {
                            if let Err(e) = report(progress.done.load(Ordering::Relaxed)) {
                                progress.cancelled.store(true, Ordering::Relaxed);
                                error = Some(e);
                            }
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return (None, error),
                }
            }
        })
    });
    if let Some(e) = error {
        return Err(e);
    }
    let result = match result {
        Some(Ok(r)) => r,
        Some(Err(message)) => return Err(internal_error(&message)),
        None => return Err(internal_error("worker thread ended without a result")),
    };
    report(progress.done.load(Ordering::Relaxed))?;
    Ok(result)
}

/// Why `build_lists` stopped: a Python error (Ctrl-C), or the encode error of
/// the text with the lowest index.
enum BatchError {
    Python(PyErr),
    Encode(EncodeError, usize),
}

/// Texts a thread takes per turn of `build_lists`' calling thread: enough
/// bytes to make releasing and taking back the GIL negligible, few enough that
/// the workers' finished ids do not wait long to become lists.
const BATCH_TURN_BYTES: usize = 8 << 10;

/// The texts of a batch handed out one at a time to the threads encoding them.
struct BatchQueue {
    len: usize,
    next: AtomicUsize,
    cancelled: AtomicBool,
}

impl BatchQueue {
    fn new(len: usize) -> Self {
        BatchQueue { len, next: AtomicUsize::new(0), cancelled: AtomicBool::new(false) }
    }

    /// Index of a text no thread has taken yet (None: all taken, or cancelled).
    fn claim(&self) -> Option<usize> {
        if self.cancelled.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.next.fetch_add(1, Ordering::Relaxed)).filter(|&i| i < self.len)
    }

    fn cancel(&self, e: PyErr) -> BatchError {
        self.cancelled.store(true, Ordering::Relaxed);
        BatchError::Python(e)
    }
}

/// A text's index and its ids.
type Finished = (usize, Result<Vec<u32>, EncodeError>);

/// The id lists of a batch as Python lists, filled in as texts finish.
struct BatchLists<'py> {
    lists: Vec<Option<Bound<'py, PyList>>>,
    first_error: Option<(usize, EncodeError)>,
    done: usize,
}

impl<'py> BatchLists<'py> {
    fn new(len: usize) -> Self {
        BatchLists { lists: (0..len).map(|_| None).collect(), first_error: None, done: 0 }
    }

    fn is_complete(&self) -> bool {
        self.done == self.lists.len()
    }

    fn store(&mut self, to_list: &impl Fn(&[u32]) -> PyResult<Bound<'py, PyList>>, (i, ids): Finished) -> PyResult<()> {
        match ids {
            Ok(ids) => self.lists[i] = Some(to_list(&ids)?),
            Err(e) if self.first_error.as_ref().is_none_or(|(j, _)| i < *j) => self.first_error = Some((i, e)),
            Err(_) => {}
        }
        self.done += 1;
        Ok(())
    }

    fn into_list(self, py: Python<'py>) -> Result<Bound<'py, PyList>, BatchError> {
        if let Some((i, e)) = self.first_error {
            return Err(BatchError::Encode(e, i));
        }
        PyList::new(py, self.lists.into_iter().map(|l| l.expect("every text was encoded"))).map_err(BatchError::Python)
    }
}

/// The list of id lists of `encode_batch`. `workers` threads of `scope` (if
/// any) and the calling thread take texts one at a time from `queue`. Only the
/// calling thread may build Python lists (that needs the GIL), so it turns the
/// ids the workers send into lists as they arrive, and between those encodes
/// texts itself with the GIL released. Building the lists (and the
/// garbage-collector passes that allocating them sets off, as much again)
/// thus overlaps the encoding instead of following it: it was a third of the
/// time of a batch of short documents on two threads. Every text is encoded
/// even after an error, so the error reported is always the first text's.
fn build_lists<'py, 'scope>(
    py: Python<'py>,
    texts: &[&str],
    queue: &'scope BatchQueue,
    encode: &'scope (impl Fn(usize) -> Result<Vec<u32>, EncodeError> + Sync),
    to_list: &impl Fn(&[u32]) -> PyResult<Bound<'py, PyList>>,
    workers: Option<(&rayon::Scope<'scope>, usize)>,
) -> Result<Bound<'py, PyList>, BatchError> {
    let (tx, mut rx) = mpsc::channel::<Finished>();
    if let Some((scope, n)) = workers {
        for _ in 0..n {
            let tx = tx.clone();
            scope.spawn(move |_| {
                while let Some(i) = queue.claim() {
                    if tx.send((i, encode(i))).is_err() {
                        return;
                    }
                }
            });
        }
    }
    drop(tx);
    let mut lists = BatchLists::new(texts.len());
    let mut mine = Vec::new();
    while !lists.is_complete() {
        for finished in rx.try_iter() {
            lists.store(to_list, finished).map_err(|e| queue.cancel(e))?;
        }
        py.check_signals().map_err(|e| queue.cancel(e))?;
        // This thread's turn: texts it encodes itself, GIL released...
        py.detach(|| {
            let mut bytes = 0;
            while bytes < BATCH_TURN_BYTES {
                let Some(i) = queue.claim() else { break };
                mine.push((i, encode(i)));
                bytes += texts[i].len();
            }
        });
        let all_taken = mine.is_empty();
        for finished in mine.drain(..) {
            lists.store(to_list, finished).map_err(|e| queue.cancel(e))?;
        }
        // ...or, every text taken, a wait for the workers' last ones.
        if all_taken && !lists.is_complete() {
            let rx = &mut rx; // a Receiver is Send but not Sync
            match py.detach(move || rx.recv_timeout(Duration::from_millis(100))) {
                Ok(finished) => lists.store(to_list, finished).map_err(|e| queue.cancel(e))?,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // A worker panicked, so its text never comes; the scope re-raises the panic.
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(BatchError::Python(internal_error("an encoding thread stopped without a result")));
                }
            }
        }
    }
    lists.into_list(py)
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// A bug in bytepair, raised as an ordinary exception instead of aborting.
fn internal_error(message: &str) -> PyErr {
    PyRuntimeError::new_err(format!("internal error in bytepair (Rust panic: {message}); please report it"))
}

/// Test hook: panic on the calling thread (`"caller"`, surfaces as pyo3's
/// `PanicException`) or on a worker thread (`"worker"`, surfaces as `RuntimeError`),
/// to check that a panic never aborts the interpreter.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>, place: &str) -> PyResult<()> {
    match place {
        "caller" => panic!("panic requested by a test"),
        "worker" => run_with_progress(py, Some(2), None, |_| -> () { panic!("panic requested by a test") }),
        other => Err(PyValueError::new_err(format!("place {other:?}: expected 'caller' or 'worker'"))),
    }
}

fn count_error(e: CountError) -> PyErr {
    match e {
        CountError::Cancelled => PyRuntimeError::new_err("cancelled"),
        CountError::InvalidUtf8 { path, offset } => PyValueError::new_err(format!(
            "{path}: invalid UTF-8 at byte offset {offset} (pass errors=\"replace\" to replace bad bytes)"
        )),
        CountError::InvalidUtf8InDocument { index, offset } => {
            count_error(CountError::InvalidUtf8 { path: format!("document {index}"), offset })
        }
        CountError::Io { path, message } => PyOSError::new_err(format!("{path}: {message}")),
        CountError::Regex(m) => PyValueError::new_err(m),
    }
}

/// Little-endian i64s from a bytes buffer (Arrow offsets or an INT64 column).
fn le_i64s(raw: &[u8], what: &str) -> PyResult<Vec<i64>> {
    if raw.len() % 8 != 0 {
        return Err(PyValueError::new_err(format!("{what}: {} bytes is not a whole number of int64", raw.len())));
    }
    Ok(raw.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect())
}

fn columns_error(e: ColumnsError) -> PyErr {
    match e {
        ColumnsError::BadOffsets(m) => PyValueError::new_err(format!("bad word offsets: {m}")),
        ColumnsError::BadCount { word, count } => PyValueError::new_err(format!(
            "count of word {} is {count}: counts must be in [0, 2**63) (Parquet INT64) and sums must fit u64",
            String::from_utf8_lossy(&word).escape_debug()
        )),
        ColumnsError::Duplicate(word) => PyValueError::new_err(format!(
            "word {} appears twice in one part (a part holds each word once)",
            String::from_utf8_lossy(&word).escape_debug()
        )),
    }
}

/// Resolve a preset name (`gpt2`, `cl100k`, `o200k`) to its regex; other strings pass through.
#[pyfunction]
fn resolve_pattern(name_or_pattern: &str) -> String {
    pretokenize::resolve_pattern(name_or_pattern).to_string()
}

/// For tokens in rank order (single bytes left out), the byte length of the left
/// part of each one's merge, or None where BPE with lower ranks does not leave
/// exactly two parts (see `encode::recover_merges`).
#[pyfunction]
fn recover_merges(py: Python<'_>, merged: Vec<Vec<u8>>) -> Vec<Option<usize>> {
    py.detach(|| encode::recover_merges(&merged))
}

/// Word counts accumulated from texts or files, then trained on.
#[pyclass(module = "bytepair._core")]
struct WordCounter {
    pre: PreTokenizer,
    cut: CutRule,
    counts: WordCounts,
}

#[pymethods]
impl WordCounter {
    #[new]
    fn new(pattern: &str, special_tokens: Vec<String>) -> PyResult<Self> {
        let pre = PreTokenizer::new(pattern, &special_tokens).map_err(PyValueError::new_err)?;
        let cut = CutRule::new(pattern, &special_tokens);
        Ok(WordCounter { pre, cut, counts: WordCounts::default() })
    }

    /// Count UTF-8 files, each one document; progress reports bytes read.
    #[pyo3(signature = (paths, num_threads=None, chunk_size=1 << 20, replace_errors=false, progress=None))]
    fn count_files(
        &mut self,
        py: Python<'_>,
        paths: Vec<String>,
        num_threads: Option<usize>,
        chunk_size: usize,
        replace_errors: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let (pre, cut) = (&self.pre, &self.cut);
        let counts = run_with_progress(py, num_threads, progress, |p| {
            count::count_files(pre, cut, &paths, chunk_size, replace_errors, p)
        })?
            .map_err(count_error)?;
        self.counts = count::merge_counts(std::mem::take(&mut self.counts), counts);
        Ok(())
    }

    /// Count a batch of texts, each one document; progress reports UTF-8 bytes.
    #[pyo3(signature = (texts, num_threads=None, progress=None))]
    fn count_texts(
        &mut self,
        py: Python<'_>,
        texts: Vec<String>,
        num_threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let pre = &self.pre;
        let counts =
            run_with_progress(py, num_threads, progress, |p| count::count_texts(pre, &texts, p))?.map_err(count_error)?;
        self.counts = count::merge_counts(std::mem::take(&mut self.counts), counts);
        Ok(())
    }

    /// Count documents in Arrow `large_string` layout: `data` holds their UTF-8
    /// bytes back to back, `offsets` n + 1 little-endian i64 positions in `data`.
    /// Progress reports bytes.
    /// Errors name `source` and, if `first_record` is given, the record number
    /// (`first_record` + index); else they name `source` alone (one document).
    #[pyo3(signature = (data, offsets, source, first_record=None, num_threads=None, replace_errors=false, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn count_documents(
        &mut self,
        py: Python<'_>,
        data: &[u8],
        offsets: &[u8],
        source: &str,
        first_record: Option<u64>,
        num_threads: Option<usize>,
        replace_errors: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let offsets = le_i64s(offsets, "offsets")?;
        let pre = &self.pre;
        let counts = run_with_progress(py, num_threads, progress, |p| {
            count::count_documents(pre, data, &offsets, replace_errors, p)
        })?
            .map_err(|e| match e {
                CountError::InvalidUtf8InDocument { index, offset } => {
                    let path = match first_record {
                        Some(first) => format!("{source}: record {}", first + index as u64),
                        None => source.to_string(),
                    };
                    count_error(CountError::InvalidUtf8 { path, offset })
                }
                other => count_error(other),
            })?;
        self.counts = count::merge_counts(std::mem::take(&mut self.counts), counts);
        Ok(())
    }

    /// Add the rows of one word-counts part (Arrow `large_binary` words: `data`,
    /// `offsets`; `counts` n little-endian i64). `unique` also rejects a word
    /// that repeats within the part (a part holds each word once).
    #[pyo3(signature = (data, offsets, counts, unique=true))]
    fn add_columns(&mut self, py: Python<'_>, data: &[u8], offsets: &[u8], counts: &[u8], unique: bool) -> PyResult<()> {
        let (offsets, n) = (le_i64s(offsets, "offsets")?, le_i64s(counts, "counts")?);
        let words = &mut self.counts;
        py.detach(|| wordcounts::add_rows(words, data, &offsets, &n, unique)).map_err(columns_error)
    }

    /// The counts split into `parts` buckets by the stable word hash
    /// (`wordcounts::bucket_of`), each a sorted part as (data, offsets, counts) bytes.
    fn to_buckets<'py>(&self, py: Python<'py>, parts: usize) -> PyResult<Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        if parts == 0 {
            return Err(PyValueError::new_err("parts must be at least 1"));
        }
        let counts = &self.counts;
        let buckets = py.detach(|| wordcounts::to_buckets(counts, parts)).map_err(columns_error)?;
        Ok(buckets
            .into_iter()
            .map(|c| {
                let offsets: Vec<u8> = c.offsets.iter().flat_map(|x| x.to_le_bytes()).collect();
                let counts: Vec<u8> = c.counts.iter().flat_map(|x| x.to_le_bytes()).collect();
                (PyBytes::new(py, &c.data), PyBytes::new(py, &offsets), PyBytes::new(py, &counts))
            })
            .collect())
    }

    /// Add (word bytes, count) pairs as given, without pre-tokenizing them.
    fn add_counts(&mut self, items: Vec<(Vec<u8>, u64)>) {
        for (w, n) in items {
            count::add_word(&mut self.counts, &w, n);
        }
    }

    fn __len__(&self) -> usize {
        self.counts.len()
    }

    /// Total number of pre-tokens counted.
    fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// All (word bytes, count), sorted by count descending then bytes.
    fn items<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u64)> {
        let mut v: Vec<(&Vec<u8>, &u64)> = self.counts.iter().collect();
        v.sort_unstable_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.into_iter().map(|(w, &n)| (PyBytes::new(py, w), n)).collect()
    }

    /// Learn up to `num_merges` merges from the counts (which are consumed).
    /// Returns ([(left id, right id, count)], stopped_early, tokens after merging);
    /// progress reports merges.
    #[pyo3(signature = (num_merges, num_threads=None, progress=None))]
    fn train(
        &mut self,
        py: Python<'_>,
        num_merges: usize,
        num_threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(Vec<(u32, u32, u64)>, bool, u64)> {
        let words = std::mem::take(&mut self.counts);
        let trained = run_with_progress(py, num_threads, progress, |p| train::train(words, num_merges, p))?
            .ok_or_else(|| PyRuntimeError::new_err("cancelled"))?;
        let merges = trained.merges.into_iter().map(|m| (m.left, m.right, m.count)).collect();
        Ok((merges, trained.stopped_early, trained.tokens))
    }
}

/// Texts longer than this are encoded in segments, with a Ctrl-C check between them.
const SEGMENT_BYTES: usize = 1 << 20;

impl CoreBPE {
    /// `ids` as a Python list of ints, sharing the ints of `self.ints`.
    fn id_list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        let shared = self.shared_ints(py);
        PyList::new(py, ids.iter().map(|&id| shared.int(py, id)))
    }

    fn shared_ints(&self, py: Python<'_>) -> &SharedInts {
        self.ints.get_or_init(py, || SharedInts::new(py, self.enc.dense_id_bound() as u32))
    }

    /// The tokens of the shared ints by address, once decoding without them
    /// has cost about as much as building them: decodes of `ids` ids each
    /// count up, and the table is built when the count reaches
    /// `TABLE_AFTER_IDS_PER_INT` per shared int. Building takes ~20 ns per
    /// int (4 ms for o200k); without the table a shared int costs ~6 ns more
    /// to decode (o200k, 1.1 MB of Shakespeare, 300k ids: 4.4 ms against 2.4
    /// ms), so building it on the first decode of that text made the decode
    /// 2.5 times as slow. Buying only after renting has cost as much (the
    /// rent-or-buy rule) costs at most about twice the better choice.
    fn tokens_by_address(&self, py: Python<'_>, ints: &SharedInts, ids: usize) -> Option<&TokensByAddress> {
        if let Some(table) = self.tokens_by_address.get(py) {
            return Some(table);
        }
        let decoded = self.ids_decoded_without_table.fetch_add(ids, Ordering::Relaxed) + ids;
        if decoded < TABLE_AFTER_IDS_PER_INT * ints.len() {
            return None;
        }
        Some(self.tokens_by_address.get_or_init(py, || ints.tokens_by_address(|id| self.enc.inline_token(id))))
    }

    /// The joined bytes of the ids in `ids`, read straight from the list: no
    /// Vec<i64> copy of it first (the copy was most of the time decoding took).
    /// A shared int of a short token is found by its address (`TokensByAddress`).
    fn joined_bytes(&self, py: Python<'_>, ids: &Bound<'_, PyList>) -> PyResult<Vec<u8>> {
        let by_address = self.ints.get(py).and_then(|ints| self.tokens_by_address(py, ints, ids.len()));
        let mut out = Vec::with_capacity(ids.len() * 4);
        for i in 0..ids.len() {
            let item = borrowed_item(ids, i);
            if by_address.is_some_and(|t| t.push_token_at(item as usize, &mut out)) {
                continue;
            }
            let id = match exact_int(item) {
                Some(id) => id,
                None => ids.get_item(i)?.extract::<i64>()?,
            };
            if !self.enc.push_token_bytes(id, &mut out) {
                return Err(PyValueError::new_err(format!("token id {id} is not in the vocabulary")));
            }
        }
        Ok(out)
    }

    /// `Encoder::encode` of `text`, interruptibly.
    fn encode_ids(&self, py: Python<'_>, text: &str, allowed: &[String], disallowed: &[String]) -> PyResult<Vec<u32>> {
        self.encode_interruptibly(py, text, |segment| self.enc.encode(segment, allowed, disallowed))
    }

    /// Encode `text` without the GIL. A long text with a preset pattern is cut
    /// at safe cuts (`count::CutRule`: the segments encode to the ids of the
    /// whole) into segments of about `SEGMENT_BYTES`, and Ctrl-C is checked
    /// between them, so KeyboardInterrupt stops a huge `encode` promptly.
    fn encode_interruptibly(
        &self,
        py: Python<'_>,
        text: &str,
        encode: impl Fn(&str) -> Result<Vec<u32>, EncodeError> + Sync,
    ) -> PyResult<Vec<u32>> {
        let mut ids: Vec<u32> = Vec::new();
        let mut start = 0;
        loop {
            let end = self.segment_end(text, start);
            let segment = &text[start..end];
            let more = py.detach(|| encode(segment)).map_err(|e| encode_error(e.shifted(start), text))?;
            if ids.is_empty() {
                ids = more;
            } else {
                ids.extend_from_slice(&more);
            }
            if end == text.len() {
                return Ok(ids);
            }
            py.check_signals()?;
            start = end;
        }
    }

    /// End of the segment starting at `start`: the last safe cut within
    /// `SEGMENT_BYTES` (doubling the window while there is none), or the end.
    fn segment_end(&self, text: &str, start: usize) -> usize {
        if !self.cut.is_exact() {
            return text.len();
        }
        let mut window = SEGMENT_BYTES;
        while start + window < text.len() {
            // A cut sits between two ASCII bytes: always a char boundary.
            if let Some(cut) = self.cut.last_cut(&text.as_bytes()[start..start + window]) {
                return start + cut;
            }
            window *= 2;
        }
        text.len()
    }
}

fn encode_error(e: EncodeError, text: &str) -> PyErr {
    match e {
        EncodeError::Disallowed(d) => {
            let chars = text[..d.offset].chars().count();
            PyValueError::new_err(format!(
                "Encountered text corresponding to disallowed special token {:?} at character offset {chars}.\n\
                 If you want this text to be encoded as a special token, pass it to `allowed_special`, \
                 e.g. `allowed_special={{{:?}, ...}}`.\n\
                 If you want this text to be encoded as normal text, disable the check for this token \
                 by passing `disallowed_special=(enc.special_tokens_set - {{{:?}}})`.\n\
                 To disable this check for all special tokens, pass `disallowed_special=()`.",
                d.token, d.token, d.token
            ))
        }
        EncodeError::Other(m) => PyValueError::new_err(m),
    }
}

/// The encoder: vocabulary, merge ranks, special tokens and pattern.
#[pyclass(module = "bytepair._core", frozen)]
struct CoreBPE {
    enc: Encoder,
    cut: CutRule,
    /// The ints id lists share, made on the first encode (`SharedInts`).
    ints: PyOnceLock<SharedInts>,
    /// Their tokens by address, made by the decode that brings
    /// `ids_decoded_without_table` to its threshold; sound because `ints`,
    /// which keeps every int at its address, lives as long.
    tokens_by_address: PyOnceLock<TokensByAddress>,
    /// Ids decoded before `tokens_by_address` was built.
    ids_decoded_without_table: AtomicUsize,
}

/// Ids decoded per shared int after which decoding builds `TokensByAddress`
/// (see `CoreBPE::tokens_by_address`).
const TABLE_AFTER_IDS_PER_INT: usize = 4;

#[pymethods]
impl CoreBPE {
    #[new]
    fn new(
        tokens: Vec<(Vec<u8>, u32)>,
        merged: Vec<Vec<u8>>,
        specials: Vec<(String, u32)>,
        pattern: &str,
    ) -> PyResult<Self> {
        let names: Vec<String> = specials.iter().map(|(t, _)| t.clone()).collect();
        let cut = CutRule::new(pattern, &names);
        let enc = Encoder::new(tokens, merged, specials, pattern).map_err(PyValueError::new_err)?;
        Ok(CoreBPE {
            enc,
            cut,
            ints: PyOnceLock::new(),
            tokens_by_address: PyOnceLock::new(),
            ids_decoded_without_table: AtomicUsize::new(0),
        })
    }

    /// Number of characters after the last safe cut of `text` (see `count::CutRule`),
    /// or None if there is none: `text[:len(text) - n]` and the rest encode
    /// independently to the ids of `text`.
    fn chars_after_last_cut(&self, text: &str) -> Option<usize> {
        self.cut.last_cut(text.as_bytes()).map(|i| text[i..].chars().count())
    }

    fn encode_ordinary<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let ids = self.encode_interruptibly(py, text, |segment| {
            let mut out = Vec::with_capacity(segment.len() / 4);
            self.enc.encode_ordinary_into(segment, &mut out).map(|_| out).map_err(EncodeError::Other)
        })?;
        self.id_list(py, &ids)
    }

    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let ids = self.encode_ids(py, text, &allowed, &disallowed)?;
        self.id_list(py, &ids)
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
            return Err(PyValueError::new_err(format!("dropout={dropout} must be in [0, 1)")));
        }
        let ids = py
            .detach(|| self.enc.encode_with_dropout(text, &allowed, &disallowed, dropout, seed))
            .map_err(|e| encode_error(e, text))?;
        self.id_list(py, &ids)
    }

    /// Like `encode`, but the ids come back as little-endian uint32 bytes.
    fn encode_to_bytes<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Vec<String>,
        disallowed: Vec<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let ids = self.encode_ids(py, text, &allowed, &disallowed)?;
        let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        Ok(PyBytes::new(py, &bytes))
    }

    /// Encode many texts on `num_threads` threads, the calling thread being one
    /// of them (default: rayon's thread count, one per core). The texts are
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
        let texts: Vec<&str> = texts.iter().map(|t| t.to_str()).collect::<PyResult<_>>()?;
        let threads = match num_threads {
            Some(0) => return Err(PyValueError::new_err("num_threads must be at least 1")),
            Some(n) => n,
            None => rayon::current_num_threads(),
        };
        let workers = (threads > 1).then(|| batch_pool(threads - 1)).transpose()?;
        let encode = |i: usize| self.enc.encode(texts[i], &allowed, &disallowed);
        let queue = BatchQueue::new(texts.len());
        let to_list = |ids: &[u32]| self.id_list(py, ids);
        let lists = match &workers {
            Some(pool) => {
                pool.in_place_scope(|scope| build_lists(py, &texts, &queue, &encode, &to_list, Some((scope, threads - 1))))
            }
            None => build_lists(py, &texts, &queue, &encode, &to_list, None),
        };
        lists.map_err(|e| match e {
            BatchError::Python(e) => e,
            BatchError::Encode(e, i) => encode_error(e, texts[i]),
        })
    }

    /// Joined bytes of a list of ids.
    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Bound<'py, PyList>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.joined_bytes(py, &ids)?))
    }

    /// The text of a list of ids: their joined bytes decoded as UTF-8 with the
    /// error handler `errors` ("strict", "replace", ...), as `bytes.decode`
    /// does, but with no bytes object between (one 4-byte-per-id copy fewer).
    fn decode_text<'py>(&self, py: Python<'py>, ids: Bound<'py, PyList>, errors: &str) -> PyResult<Bound<'py, PyAny>> {
        let out = self.joined_bytes(py, &ids)?;
        let errors = std::ffi::CString::new(errors).map_err(|_| PyValueError::new_err("errors holds a NUL character"))?;
        // SAFETY: the buffer and the handler name outlive the call, which
        // returns a new reference or NULL with an exception set.
        unsafe {
            let text = pyo3::ffi::PyUnicode_DecodeUTF8(out.as_ptr().cast(), out.len() as pyo3::ffi::Py_ssize_t, errors.as_ptr());
            Bound::from_owned_ptr_or_err(py, text)
        }
    }

    /// The pre-tokens of `text` (special tokens not treated), for tests and inspection.
    fn pretokenize(&self, text: &str) -> PyResult<Vec<String>> {
        let mut out = vec![];
        self.enc.pre_tokenizer().for_each_piece(text, |w| out.push(w.to_string())).map_err(PyValueError::new_err)?;
        Ok(out)
    }
}

/// `list[i]` as a borrowed pointer (NULL if out of range): no reference-count
/// traffic per id (measured ~10% of decoding), and no function call (the
/// bounds and the item are read inline). Valid until Python code runs, which
/// could change the list: the bounds are checked on every call.
#[inline]
fn borrowed_item(list: &Bound<'_, PyList>, i: usize) -> *mut pyo3::ffi::PyObject {
    use pyo3::ffi;
    // SAFETY: `list` is a live list and we hold the GIL; `i` is checked
    // against its current length before its item is read.
    unsafe {
        if i < ffi::PyList_GET_SIZE(list.as_ptr()) as usize {
            ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t)
        } else {
            std::ptr::null_mut()
        }
    }
}

/// The value of `item` (from `borrowed_item`) when it is an exact `int` that
/// fits an i64. None sends the caller to the general conversion, which raises
/// the usual errors; an exact int has no `__index__`, so no Python code runs.
fn exact_int(item: *mut pyo3::ffi::PyObject) -> Option<i64> {
    use pyo3::ffi;
    if item.is_null() {
        return None;
    }
    // SAFETY: `item` is a live object, borrowed from a list we hold, and we hold the GIL.
    unsafe {
        if ffi::PyLong_CheckExact(item) == 0 {
            return None;
        }
        let value = ffi::PyLong_AsLongLong(item);
        if value == -1 && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(value)
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(resolve_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(recover_merges, m)?)?;
    m.add_class::<WordCounter>()?;
    m.add_class::<CoreBPE>()?;
    Ok(())
}
