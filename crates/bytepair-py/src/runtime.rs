//! The GIL and signal runtime: long work runs on a worker thread with the GIL
//! released, while the calling thread wakes every 100 ms to report progress to
//! Python and to check for Ctrl-C; a panic in the core becomes an exception.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, LazyLock, Mutex};
use std::time::Duration;

use bytepair_core::Progress;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// How often the calling thread reports progress and checks for Ctrl-C.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The cores this process may use, read once: `available_parallelism` reads
/// the cgroup's CPU quota files on every call (4-5% of the calling thread's
/// samples of a transformers batch of 1,000 short documents, in py-spy).
static CORES: LazyLock<usize> =
    LazyLock::new(|| std::thread::available_parallelism().map_or(1, |n| n.get()));

/// The threads a call with `num_threads` uses: one per core by default, and
/// never more than the cores (extra threads only add switching; a
/// `num_threads=10000` once started 10,000 OS threads). 0 is an error.
pub fn thread_count(num_threads: Option<usize>) -> PyResult<usize> {
    let cores = *CORES;
    match num_threads {
        Some(0) => Err(PyValueError::new_err("num_threads must be at least 1")),
        Some(n) => Ok(n.min(cores)),
        None => Ok(cores),
    }
}

/// Thread pools by size, kept for the life of the process and shared by
/// every call: starting threads per call cost time, a fresh thread starts with
/// an empty piece cache, and since sizes are capped at the core count there
/// are at most that many pools. Tagged with the process id: a child started
/// with `fork` (multiprocessing's default on Linux, PyTorch's DataLoader
/// workers) inherits the map but not the threads, and a job sent to a pool
/// whose threads are gone waits forever, so the child starts pools of its own.
static POOLS: LazyLock<Mutex<Pools>> = LazyLock::new(Default::default);

#[derive(Default)]
struct Pools {
    pid: u32,
    by_size: HashMap<usize, Arc<rayon::ThreadPool>>,
}

/// The shared pool of `thread_count(num_threads)` threads.
pub fn pool(num_threads: Option<usize>) -> PyResult<Arc<rayon::ThreadPool>> {
    let n = thread_count(num_threads)?;
    let mut pools = POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let pid = std::process::id();
    if pools.pid != pid {
        // Pools made before a fork: dropping one would signal threads this
        // process does not have, so they are leaked (a few bytes each).
        for inherited in std::mem::take(&mut pools.by_size).into_values() {
            std::mem::forget(inherited);
        }
        pools.pid = pid;
    }
    if let Some(pool) = pools.by_size.get(&n) {
        return Ok(Arc::clone(pool));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("bytepair-{i}"))
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start thread pool: {e}")))?;
    let pool = Arc::new(pool);
    pools.by_size.insert(n, Arc::clone(&pool));
    Ok(pool)
}

/// Run `work` without the GIL on the shared pool of one thread per core
/// (never on rayon's global pool, which a forked child cannot restart).
pub fn run_parallel<R: Send>(py: Python<'_>, work: impl FnOnce() -> R + Send) -> PyResult<R> {
    let pool = pool(None)?;
    Ok(py.detach(|| pool.install(work)))
}

/// Run `work` without the GIL on its own thread pool; every `POLL_INTERVAL`
/// call `callback(progress.done())` and check signals. A Python error (Ctrl-C,
/// or one raised by the callback) cancels the work and is returned.
pub fn run_with_progress<R: Send>(
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
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.install(|| work(progress))
                }));
                let _ = tx.send(outcome.map_err(|payload| panic_message(payload.as_ref())));
            });
            let mut error = None;
            loop {
                match rx.recv_timeout(POLL_INTERVAL) {
                    Ok(r) => return (Some(r), error),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if error.is_none() {
                            if let Err(e) = report(progress.done()) {
                                progress.cancel();
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
    report(progress.done())?;
    Ok(result)
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
pub fn internal_error(message: &str) -> PyErr {
    PyRuntimeError::new_err(format!(
        "internal error in bytepair (Rust panic: {message}); please report it"
    ))
}
