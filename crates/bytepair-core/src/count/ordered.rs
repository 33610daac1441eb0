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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::tally::Part;
use super::{CountError, Limits, WordTally};
use crate::progress::Progress;

/// Shards of the total (fixed: the counts depend on it). Up to this many
/// threads sum jobs at once.
pub(super) const SHARDS: usize = 8;

/// Jobs counted ahead of the oldest one not yet summed, per thread: a
/// thread slowed down (a long block, the host) lets the others go on for
/// that long; their tallies wait for it in `Pending::counted`. Fewer when
/// the jobs' tallies would not fit in their share of the budget (`window`).
const AHEAD_PER_THREAD: usize = 2;

/// Where the budget goes, in fixed fractions of it, never of the thread
/// count (what a job's tally prunes must not depend on how many threads
/// there are). A tally's slot tables take at most half its own budget
/// (`WordTally::with_budget`); the rest is room for a pruning's copy.
/// - The shards: three quarters (`shard_budget`), so their tables hold at
///   most 3/8 of the budget.
/// - One job's tally: an eighth (`JOB_SHARE`): its tables at most a
///   sixteenth, ~130k distinct words under 64 MiB, more than a 1 MiB block
///   of real text holds, so it rarely prunes (a job of one huge text does).
///   When this was half the budget, 24 MB of all-distinct words (one job:
///   the text has no safe cut) grew one tally to 16 MiB of tables plus the
///   8 MiB copy of its last growth beside the 24 MB of text, and peaked at
///   65-68 MiB under 64 MiB whatever the shards' share was.
/// - The jobs alive at once (counting, or their parts waiting for the
///   shards): a quarter (`JOBS_ALIVE_SHARE`), judged by the largest job so far.
/// - At the end, the union of the shards (`WordTally::union`) is allocated
///   beside them, when no job is alive.
///
/// A job's tally gets at least `MIN_JOB_BUDGET`, what the smallest budget
/// the API takes (64 MiB) gives it: below that (bench_pruning's budgets of
/// a few MiB) a 1 MiB block's ~50k words were pruned within their job (the
/// words seen once in the block, however frequent elsewhere).
///
/// The text of the jobs alive (a 1 MiB block each, or a whole text with no
/// safe cut: up to `chunks::FORCED_CUT`) is not in the budget.
const JOB_SHARE: usize = 8;
const MIN_JOB_BUDGET: usize = 8 << 20;
const JOBS_ALIVE_SHARE: usize = 4;

/// Budget of one of the `SHARDS` shards.
fn shard_budget(budget: usize) -> usize {
    budget / 4 * 3 / SHARDS
}

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
    /// The most jobs ahead of the oldest one not yet summed (by the threads).
    ahead: usize,
    /// Bytes the largest job so far held when delivered (its tally, and its
    /// parts about as much again): sets how many jobs may be alive at once.
    job_bytes: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ordered<'_> {
    fn budget(&self) -> usize {
        self.limits
            .max_memory
            .expect("count_ordered needs a budget")
    }

    /// A job's budget: a fixed share of the budget (`JOB_SHARE`), at least
    /// `MIN_JOB_BUDGET`.
    fn job_budget(&self) -> usize {
        (self.budget() / JOB_SHARE).max(MIN_JOB_BUDGET)
    }

    /// A tally for one job, within `job_budget` and pruned by the same rule,
    /// so what it prunes depends on the job and the budget alone.
    fn job_tally(&self) -> WordTally {
        let budget = Some(self.job_budget());
        WordTally::with_budget(self.limits.max_word_bytes, budget).with_pruning(self.limits.prune)
    }

    /// How many jobs may be alive at once (counted after the oldest one not
    /// yet summed): as many as the largest job so far fits in the jobs'
    /// share of the budget, at least 1, at most `ahead`. Only the timing
    /// depends on it, never the counts.
    fn window(&self) -> usize {
        // Until a job is delivered, as if each took its whole budget.
        let job = match self.job_bytes.load(Ordering::Relaxed) {
            0 => self.job_budget(),
            bytes => bytes,
        };
        (self.budget() / JOBS_ALIVE_SHARE / job).clamp(1, self.ahead)
    }

    /// Wait until job `index` is close enough to the oldest job not yet summed.
    fn wait_for_room(&self, index: usize) {
        let mut pending = lock(&self.pending);
        while index >= pending.oldest() + self.window() && !self.failed.load(Ordering::Relaxed) {
            pending = self.added.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// File the parts of job `index`, then let each shard take the parts that
    /// are next in its order, unless another thread is summing that shard
    /// (it will see them).
    fn deliver(&self, index: usize, tally: WordTally) {
        // The tally, and its parts (about as large) while it is split.
        let bytes = 2 * tally.memory_bytes();
        self.job_bytes.fetch_max(bytes, Ordering::Relaxed);
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
        let tally = WordTally::with_budget(limits.max_word_bytes, Some(shard_budget(budget)));
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
        job_bytes: AtomicUsize::new(0),
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
    let shards = ordered.shards.into_iter().map(|s| {
        s.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .tally
            .unbounded()
    });
    let total = WordTally::union(shards.collect());
    // The parts freed into the counting threads' arenas (the tables were
    // unmapped already: `ZeroedSlice::mapped`).
    crate::memory::release_freed_memory();
    Ok(total)
}
