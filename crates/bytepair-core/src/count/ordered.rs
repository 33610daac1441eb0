//! Counting within a memory budget, reproducibly: each job (a block of a
//! file, a batch of documents, a text) is counted into a tally of its own, and
//! the tallies are summed into one budgeted total in job order, which prunes
//! only as the single-threaded count of the same jobs would. So the counts a
//! budget leaves depend on the input, the options and the budget alone, not
//! on the thread count or on which thread counted which block first.
//!
//! Without a budget `count_parallel` sums per-thread tallies instead (addition
//! commutes, so that is exact in any order, and cheaper: no per-block sum).
//!
//! Why not per-thread tallies that prune on their own (as before): a thread's
//! tally holds the blocks it happened to take, so which words fell under its
//! threshold depended on timing; three runs of `train(max_memory=)` on enwiki
//! gave three merge tables.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{CountError, Limits, WordTally};
use crate::progress::Progress;

/// Jobs counted ahead of the oldest one not yet summed, per thread: a
/// thread slowed down (a long block, the host) lets the others go on for
/// that long; their tallies wait for it in `Pending::counted`.
const AHEAD_PER_THREAD: usize = 2;

/// The budgeted total and its place in the job order.
struct Total {
    tally: WordTally,
    /// Index of the next job to add to `tally`.
    next: usize,
}

/// Tallies counted out of order, waiting for the jobs before them.
struct Pending {
    counted: BTreeMap<usize, WordTally>,
    /// Index of the next job to add (`Total::next`, readable without its lock).
    next: usize,
}

struct Ordered<'a> {
    limits: &'a Limits,
    total: Mutex<Total>,
    pending: Mutex<Pending>,
    /// Signalled when a job is added to the total (a thread too far ahead waits on it).
    added: Condvar,
    failed: AtomicBool,
    ahead: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ordered<'_> {
    /// A tally for one job: bounded by the budget too (only a block larger
    /// than ~a tenth of it, such as one huge text, ever prunes there), and
    /// pruned by the same rule; what it prunes depends on the job alone.
    fn job_tally(&self) -> WordTally {
        let budget = self.limits.max_memory.map(|m| m / 2);
        WordTally::with_budget(self.limits.max_word_bytes, budget).with_pruning(self.limits.prune)
    }

    /// Wait until job `index` is close enough to the oldest job not yet added.
    fn wait_for_room(&self, index: usize) {
        let mut pending = lock(&self.pending);
        while index >= pending.next + self.ahead && !self.failed.load(Ordering::Relaxed) {
            pending = self.added.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// File the tally of job `index`, then add every tally that is next in
    /// order to the total, unless another thread is doing so (it will see this one).
    fn deliver(&self, index: usize, tally: WordTally) {
        lock(&self.pending).counted.insert(index, tally);
        loop {
            let Ok(mut total) = self.total.try_lock() else {
                return;
            };
            loop {
                let next = {
                    let mut pending = lock(&self.pending);
                    let next = pending.counted.remove(&total.next);
                    if next.is_some() {
                        pending.next = total.next + 1;
                    }
                    next
                };
                let Some(tally) = next else { break };
                total.tally.merge(tally);
                // Pruned at job boundaries, at thresholds that depend on the
                // jobs added so far: as one thread counting them in order would.
                total.tally.enforce_budget();
                total.next += 1;
                self.added.notify_all();
            }
            let next = total.next;
            drop(total);
            // A tally filed while this thread held the total found it locked:
            // add it now, or it would wait for a thread that already left.
            if !lock(&self.pending).counted.contains_key(&next) {
                return;
            }
        }
    }
}

/// Count `jobs` (in order) on every pool thread with `count_one`, summing
/// their tallies in job order into a tally within `limits.max_memory`
/// (which must be set).
pub(super) fn count_ordered<J: Send>(
    jobs: impl Iterator<Item = Result<J, CountError>> + Send,
    limits: &Limits,
    progress: &Progress,
    count_one: impl Fn(J, &mut WordTally) -> Result<(), CountError> + Sync,
) -> Result<WordTally, CountError> {
    let budget = limits.max_memory.expect("count_ordered needs a budget");
    let threads = rayon::current_num_threads();
    let ordered = Ordered {
        limits,
        // Half the budget for the total, half for the jobs being counted.
        total: Mutex::new(Total {
            tally: WordTally::with_budget(limits.max_word_bytes, Some(budget / 2))
                .with_pruning(limits.prune),
            next: 0,
        }),
        pending: Mutex::new(Pending {
            counted: BTreeMap::new(),
            next: 0,
        }),
        added: Condvar::new(),
        failed: AtomicBool::new(false),
        ahead: AHEAD_PER_THREAD * threads,
    };
    let jobs = Mutex::new(jobs.enumerate());
    let results: Vec<Result<(), CountError>> = rayon::broadcast(|_| {
        let fail = |e| {
            // Under the lock, so a thread about to wait sees the flag or the signal.
            let _pending = lock(&ordered.pending);
            ordered.failed.store(true, Ordering::Relaxed);
            ordered.added.notify_all();
            Err(e)
        };
        loop {
            if progress.is_cancelled() {
                return fail(CountError::Cancelled);
            }
            if ordered.failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            let Some((index, job)) = lock(&jobs).next() else {
                return Ok(());
            };
            ordered.wait_for_room(index);
            let mut tally = ordered.job_tally();
            if let Err(e) = job.and_then(|j| count_one(j, &mut tally)) {
                return fail(e);
            }
            tally.enforce_budget();
            ordered.deliver(index, tally);
        }
    });
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let total = ordered
        .total
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    debug_assert!(ordered.pending.into_inner().unwrap().counted.is_empty());
    Ok(total.tally)
}
