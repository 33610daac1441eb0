//! `encode_batch`'s scheduler: worker threads and the calling thread share a
//! batch's texts, and the calling thread, the only one that may touch Python
//! objects, turns finished ids into lists while the others encode.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use bytepair_core::EncodeError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::runtime::{internal_error, pool, POLL_INTERVAL};
use crate::shared_ints::{Counting, SharedInts};

/// Why `build_lists` stopped: a Python error (Ctrl-C), or the encode error of
/// the text with the lowest index.
pub enum BatchError {
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
    pub fn new(len: usize) -> Self {
        BatchQueue {
            len,
            next: AtomicUsize::new(0),
            cancelled: AtomicBool::new(false),
        }
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
struct BatchLists<'py, 'a> {
    /// Counts the references the lists take (see `Counting`): declared
    /// first, so it adds them before `lists` can be freed.
    counting: Option<Counting<'a>>,
    ints: &'a SharedInts,
    lists: Vec<Option<Bound<'py, PyList>>>,
    first_error: Option<(usize, EncodeError)>,
    done: usize,
}

impl<'py, 'a> BatchLists<'py, 'a> {
    fn new(len: usize, ints: &'a SharedInts) -> Self {
        BatchLists {
            counting: ints.counting(),
            ints,
            lists: (0..len).map(|_| None).collect(),
            first_error: None,
            done: 0,
        }
    }

    fn is_complete(&self) -> bool {
        self.done == self.lists.len()
    }

    fn store(&mut self, py: Python<'py>, (i, ids): Finished) -> PyResult<()> {
        match ids {
            Ok(ids) => {
                let list = match &mut self.counting {
                    Some(counting) => counting.list(py, &ids)?,
                    None => self.ints.list(py, &ids)?,
                };
                self.lists[i] = Some(list);
            }
            Err(e) if self.first_error.as_ref().is_none_or(|(j, _)| i < *j) => {
                self.first_error = Some((i, e))
            }
            Err(_) => {}
        }
        self.done += 1;
        Ok(())
    }

    fn into_list(mut self, py: Python<'py>) -> Result<Bound<'py, PyList>, BatchError> {
        // The references counted so far are added before any list is handed out.
        self.counting = None;
        if let Some((i, e)) = self.first_error.take() {
            return Err(BatchError::Encode(e, i));
        }
        PyList::new(
            py,
            std::mem::take(&mut self.lists)
                .into_iter()
                .map(|l| l.expect("every text was encoded")),
        )
        .map_err(BatchError::Python)
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
    ints: &SharedInts,
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
    let mut lists = BatchLists::new(texts.len(), ints);
    let mut mine = Vec::new();
    while !lists.is_complete() {
        // The workers may be far ahead (building lists is the slower half):
        // check for Ctrl-C at every list, not once per backlog.
        for finished in rx.try_iter() {
            py.check_signals().map_err(|e| queue.cancel(e))?;
            lists.store(py, finished).map_err(|e| queue.cancel(e))?;
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
            lists.store(py, finished).map_err(|e| queue.cancel(e))?;
        }
        // ...or, every text taken, a wait for the workers' last ones.
        if all_taken && !lists.is_complete() {
            let rx = &mut rx; // a Receiver is Send but not Sync
            match py.detach(move || rx.recv_timeout(POLL_INTERVAL)) {
                Ok(finished) => lists.store(py, finished).map_err(|e| queue.cancel(e))?,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // A worker panicked, so its text never comes; the scope re-raises the panic.
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(BatchError::Python(internal_error(
                        "an encoding thread stopped without a result",
                    )));
                }
            }
        }
    }
    lists.into_list(py)
}

/// The list of id lists of `texts`, each encoded by `encode(index)` on
/// `threads` threads, the calling thread one of them (see `build_lists`).
pub fn encode_batch<'py>(
    py: Python<'py>,
    texts: &[&str],
    threads: usize,
    encode: &(impl Fn(usize) -> Result<Vec<u32>, EncodeError> + Sync),
    ints: &SharedInts,
) -> Result<Bound<'py, PyList>, BatchError> {
    let queue = BatchQueue::new(texts.len());
    if threads <= 1 {
        return build_lists(py, texts, &queue, encode, ints, None);
    }
    let workers = pool(Some(threads - 1)).map_err(BatchError::Python)?;
    workers.in_place_scope(|scope| {
        build_lists(py, texts, &queue, encode, ints, Some((scope, threads - 1)))
    })
}
