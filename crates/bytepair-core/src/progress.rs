//! Progress and cancellation of long work (counting, the merge loop), as plain
//! shared atomics: the worker adds to `done` and checks `is_cancelled` between
//! units of work; whoever drives it (the Python binding's 100 ms polling loop,
//! a Rust caller's own thread) reads `done` and may `cancel`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Units of work done so far (bytes counted, merges learned) and a cancel flag,
/// shared between the threads doing the work and the one watching it.
///
/// ```
/// use bytepair_core::Progress;
/// let progress = Progress::default();
/// progress.add(3);
/// assert_eq!(progress.done(), 3);
/// progress.cancel();
/// assert!(progress.is_cancelled());
/// ```
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    cancelled: Arc<AtomicBool>,
}

impl Progress {
    /// Record `n` more units of work done.
    #[inline]
    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Units of work done so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Ask the work to stop at its next check.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// The cancel flag, for work that outlives a borrow of this Progress
    /// (the encoder's per-thread scratch holds it during a call).
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancelled)
    }

    /// Has `cancel` been called?
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}
