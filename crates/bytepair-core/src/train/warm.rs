//! The pool's other threads kept awake while merges are split over them.
//!
//! A merge split over the threads (`merge_words`) merges its parts in tens
//! of microseconds, about as long as a rayon worker that went to sleep
//! after the previous one takes to wake up (a futex wake, then the
//! scheduler): the thread that split the merge mostly merged the other
//! part too, and paid for the split. While merges are being split, every
//! other thread of the pool runs a job that keeps taking the pool's jobs
//! (`rayon::yield_now`) and ends when it has found none for `IDLE`. Between
//! looks it gives its core up to any other runnable thread
//! (`std::thread::yield_now`): on an idle host that returns at once, on a
//! loaded one the loop's own thread is not crowded out by a spinning one
//! (2 threads, host load average 4, multilingual 10 MB: spinning made the
//! merge loop up to 2x slower than without a kept-awake thread, yielding
//! 0.97-1.4x; the same as spinning on an idle host).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a kept-awake thread looks for jobs before it ends: SentencePiece
/// BPE on 10 MB of enwiki, 2 threads, loop 45 ms with 100 us, 40 with 500,
/// 40 with 2000 (and 47 with none).
const IDLE: Duration = Duration::from_micros(500);

struct State {
    /// Cleared when the merge loop ends: the threads stop looking at once.
    keep: AtomicBool,
    /// Threads looking for jobs, or asked to.
    awake: AtomicUsize,
}

/// A handle on the pool's other threads, for the merge loop.
pub(super) struct Warm<'a, 'scope> {
    scope: &'a rayon::Scope<'scope>,
    state: &'scope State,
    /// The pool thread that runs the merge loop.
    driver: Option<usize>,
    helpers: usize,
}

impl Warm<'_, '_> {
    /// Ask every other thread of the pool to look for jobs for a while.
    pub(super) fn keep_awake(&self) {
        while self.state.awake.load(Ordering::Acquire) < self.helpers {
            self.state.awake.fetch_add(1, Ordering::AcqRel);
            let (state, driver) = (self.state, self.driver);
            self.scope.spawn(move |_| look_for_jobs(state, driver));
        }
    }
}

/// Take the pool's jobs until none came for `IDLE` or the loop ended. On the
/// merge loop's own thread (it may pop this job while it waits for a part):
/// nothing, or the loop would wait for itself.
fn look_for_jobs(state: &State, driver: Option<usize>) {
    if rayon::current_thread_index() != driver {
        let mut last_job = Instant::now();
        while state.keep.load(Ordering::Relaxed) {
            match rayon::yield_now() {
                Some(rayon::Yield::Executed) => last_job = Instant::now(),
                _ if last_job.elapsed() > IDLE => break,
                _ => std::thread::yield_now(),
            }
        }
    }
    state.awake.fetch_sub(1, Ordering::AcqRel);
}

/// Run `f` (the merge loop) on a thread of the pool, with a `Warm` handle
/// on the others; they are let go when it returns.
pub(super) fn with_warm_pool<R: Send>(f: impl FnOnce(&Warm<'_, '_>) -> R + Send) -> R {
    let state = State {
        keep: AtomicBool::new(true),
        awake: AtomicUsize::new(0),
    };
    rayon::scope(|scope| {
        let warm = Warm {
            scope,
            state: &state,
            driver: rayon::current_thread_index(),
            helpers: rayon::current_num_threads() - 1,
        };
        let result = f(&warm);
        state.keep.store(false, Ordering::Relaxed);
        result
    })
}
