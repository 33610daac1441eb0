//! Counting within a memory budget, reproducibly: each job (a block of a
//! file, a batch of documents or texts) is counted into a tally of its own,
//! and the tallies are summed in job order into a budgeted total, which
//! prunes only at job boundaries, at thresholds that depend on the jobs summed
//! so far. So the counts a budget leaves depend on the input, the options and
//! the budget alone, not on the thread count or on which thread counted which
//! block first.
//!
//! The total is [`SHARDS`] tallies, a word's shard picked by a hash of its
//! bytes (`WordTally::split`), each with its share of the budget and pruned on
//! its own: a job's tally is split into its shards' parts, and each shard
//! takes the parts in job order. The shards are summed concurrently (by
//! whichever threads finished a job), so the serial sum does not bound the
//! speed of counting: one total summed a 1 MiB block's ~50k distinct words
//! in about half the time a thread took to count the block.
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

use super::tally::Part;
use super::{CountError, Limits, WordTally};
use crate::progress::Progress;

/// Shards of the total (fixed: the counts depend on it). Up to this many
/// threads sum jobs at once.
pub(super) const SHARDS: usize = 8;

/// Jobs counted ahead of the oldest one not yet summed, per thread: a
/// thread slowed down (a long block, the host) lets the others go on for
/// that long; their tallies wait for it in `Pending::counted`.
const AHEAD_PER_THREAD: usize = 2;

/// One shard of the budgeted total and its place in the job order.
struct Shard {
    tally: WordTally,
    /// Index of the next job whose part this shard adds.
    next: usize,
}

/// Parts of jobs counted, waiting for their shards to take them.
struct Pending {
    /// Job index -> its parts, one per shard (None once taken).
    counted: BTreeMap<usize, Vec<Option<Part>>>,
    /// `Shard::next` of each shard (readable without the shards' locks).
    next: [usize; SHARDS],
}

impl Pending {
    /// The oldest job not yet summed into every shard.
    fn oldest(&self) -> usize {
        self.next.iter().copied().min().unwrap_or(0)
    }
}

struct Ordered<'a> {
    limits: &'a Limits,
    shards: Vec<Mutex<Shard>>,
    pending: Mutex<Pending>,
    /// Signalled when a shard takes a part (a thread too far ahead waits on it).
    added: Condvar,
    failed: AtomicBool,
    ahead: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ordered<'_> {
    /// A tally for one job: bounded by half the budget too (only a job as
    /// large as one huge text ever prunes there), and pruned by the same
    /// rule; what it prunes depends on the job alone.
    fn job_tally(&self) -> WordTally {
        let budget = self.limits.max_memory.map(|m| m / 2);
        WordTally::with_budget(self.limits.max_word_bytes, budget).with_pruning(self.limits.prune)
    }

    /// Wait until job `index` is close enough to the oldest job not yet summed.
    fn wait_for_room(&self, index: usize) {
        let mut pending = lock(&self.pending);
        while index >= pending.oldest() + self.ahead && !self.failed.load(Ordering::Relaxed) {
            pending = self.added.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// File the parts of job `index`, then let each shard take the parts that
    /// are next in its order, unless another thread is summing that shard
    /// (it will see them).
    fn deliver(&self, index: usize, tally: WordTally) {
        let parts = tally.split(SHARDS).into_iter().map(Some).collect();
        lock(&self.pending).counted.insert(index, parts);
        for s in 0..SHARDS {
            // Threads start at different shards, so they rarely meet.
            self.sum_shard((index + s) % SHARDS);
        }
    }

    /// Add to shard `s` every part that is next in its order.
    fn sum_shard(&self, s: usize) {
        loop {
            let Ok(mut shard) = self.shards[s].try_lock() else {
                return;
            };
            while let Some(part) = self.take_part(s, shard.next) {
                shard.tally.merge_part(part);
                // Pruned at job boundaries, at thresholds that depend on the
                // jobs summed so far: as one thread summing them in order would.
                shard.tally.enforce_budget();
                shard.next += 1;
                lock(&self.pending).next[s] = shard.next;
                self.added.notify_all();
            }
            let next = shard.next;
            drop(shard);
            // A part filed while this thread held the shard found it locked:
            // take it now, or it would wait for a thread that already left.
            let pending = lock(&self.pending);
            if pending.counted.get(&next).is_none_or(|p| p[s].is_none()) {
                return;
            }
        }
    }

    /// Shard `s`'s part of job `index`, if counted (and not taken).
    fn take_part(&self, s: usize, index: usize) -> Option<Part> {
        let mut pending = lock(&self.pending);
        let parts = pending.counted.get_mut(&index)?;
        let part = parts[s].take();
        if parts.iter().all(Option::is_none) {
            pending.counted.remove(&index);
        }
        part
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
    let shard = || {
        // The shards get three quarters of the budget: the rest is room for
        // the jobs' tallies in flight (a few MB each: a 1 MiB block's words)
        // and for the union of the shards at the end (all-distinct words
        // reached 68 MiB under a 64 MiB budget when the shards had it all).
        let share = budget / 4 * 3 / SHARDS;
        let tally = WordTally::with_budget(limits.max_word_bytes, Some(share));
        Mutex::new(Shard {
            tally: tally.with_pruning(limits.prune),
            next: 0,
        })
    };
    let ordered = Ordered {
        limits,
        shards: (0..SHARDS).map(|_| shard()).collect(),
        pending: Mutex::new(Pending {
            counted: BTreeMap::new(),
            next: [0; SHARDS],
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
    // The shards hold disjoint words: their sum is their union.
    let mut shards = ordered.shards.into_iter().map(|s| {
        s.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .tally
            .unbounded()
    });
    let mut total = shards.next().expect("SHARDS > 0");
    for shard in shards {
        total.merge(shard);
    }
    Ok(total)
}
