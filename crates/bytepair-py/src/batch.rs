//! `encode_batch`'s scheduler: worker threads and the calling thread share a
//! batch's texts, and the calling thread, the only one that may touch Python
//! objects, turns finished ids into lists while the others encode.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// The texts of a batch handed out one at a time to the threads encoding
/// them. Each thread has its own run of consecutive texts, taken from the
/// front; a thread whose run is done takes the last text of the longest run
/// left. So a thread gets the same texts from call to call on the same batch
/// (its piece caches already hold their pieces: a shared counter dealt them
/// anew each call, and each thread's caches learnt the other's pieces too)
/// and neighbouring texts, which share more pieces, in any batch.
struct BatchQueue {
    /// Per thread: the front (low 32 bits) and end (high 32) of its run.
    runs: Vec<AtomicU64>,
    cancelled: AtomicBool,
}

/// A run's front and end in one word, so taking from either side is one
/// compare-and-swap.
fn pack(front: usize, end: usize) -> u64 {
    front as u64 | (end as u64) << 32
}

fn unpack(run: u64) -> (usize, usize) {
    ((run & u32::MAX as u64) as usize, (run >> 32) as usize)
}

impl BatchQueue {
    /// `len` texts (fewer than 2^32) in `threads` runs.
    pub fn new(len: usize, threads: usize) -> Self {
        assert!(u32::try_from(len).is_ok(), "a batch of 2^32 texts or more");
        let cut = |t: usize| len * t / threads;
        BatchQueue {
            runs: (0..threads)
                .map(|t| AtomicU64::new(pack(cut(t), cut(t + 1))))
                .collect(),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Index of a text no thread has taken yet, for thread `thread` (None:
    /// all taken, or cancelled).
    fn claim(&self, thread: usize) -> Option<usize> {
        if self.cancelled.load(Ordering::Relaxed) {
            return None;
        }
        let take_front = |run: u64| {
            let (front, end) = unpack(run);
            (front < end).then(|| pack(front + 1, end))
        };
        if let Ok(run) =
            self.runs[thread].fetch_update(Ordering::Relaxed, Ordering::Relaxed, take_front)
        {
            return Some(unpack(run).0);
        }
        loop {
            let (longest, run) = self
                .runs
                .iter()
                .map(|r| r.load(Ordering::Relaxed))
                .enumerate()
                .max_by_key(|&(_, run)| {
                    let (front, end) = unpack(run);
                    end.saturating_sub(front)
                })?;
            let (front, end) = unpack(run);
            if front >= end {
                return None;
            }
            let taken = pack(front, end - 1);
            if self.runs[longest]
                .compare_exchange(run, taken, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Some(end - 1);
            }
        }
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
    lens: &[usize],
    queue: &'scope BatchQueue,
    encode: &'scope (impl Fn(usize) -> Result<Vec<u32>, EncodeError> + Sync),
    ints: &SharedInts,
    workers: Option<(&rayon::Scope<'scope>, usize)>,
) -> Result<Bound<'py, PyList>, BatchError> {
    let (tx, mut rx) = mpsc::channel::<Finished>();
    if let Some((scope, n)) = workers {
        for thread in 1..=n {
            let tx = tx.clone();
            scope.spawn(move |_| {
                while let Some(i) = queue.claim(thread) {
                    if tx.send((i, encode(i))).is_err() {
                        return;
                    }
                }
            });
        }
    }
    drop(tx);
    let mut lists = BatchLists::new(lens.len(), ints);
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
                let Some(i) = queue.claim(0) else { break };
                mine.push((i, encode(i)));
                bytes += lens[i];
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

/// The list of id lists of a batch of texts of about `lens` bytes, text `i`
/// encoded by `encode(i)` on `threads` threads, the calling thread one of
/// them (see `build_lists`).
pub fn encode_batch<'py>(
    py: Python<'py>,
    lens: &[usize],
    threads: usize,
    encode: &(impl Fn(usize) -> Result<Vec<u32>, EncodeError> + Sync),
    ints: &SharedInts,
) -> Result<Bound<'py, PyList>, BatchError> {
    let queue = BatchQueue::new(lens.len(), threads.max(1));
    if threads <= 1 {
        return build_lists(py, lens, &queue, encode, ints, None);
    }
    let workers = pool(Some(threads - 1)).map_err(BatchError::Python)?;
    workers.in_place_scope(|scope| {
        build_lists(py, lens, &queue, encode, ints, Some((scope, threads - 1)))
    })
}
