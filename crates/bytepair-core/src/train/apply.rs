//! Applying a merge's seam changes to the pair index (`Trainer::apply_changes`).

use super::pairs::AHEAD;
use super::words::Symbol;
use super::{Pair, Trainer};

impl<S: Symbol> Trainer<S> {
    /// Turn the seam changes of merge `(a, b) -> new` into pair counts:
    /// `left[x]` moves that many `(x, a)` to `(x, new)`, `right[y]` moves
    /// `(b, y)` to `(new, y)`. Returns the new pairs with their counts.
    ///
    /// Each old pair is counted down once per table it appears in (`(b, a)`
    /// can be in both, as in `b a b`), and never below zero: only counted
    /// occurrences move. The merged pair itself was removed whole. The one
    /// new pair both tables touch is `(new, a)`: an occurrence right after
    /// another (`a b a b`) adds one through `right[a]` and takes it back
    /// through `left[new]`, so it keeps the difference (possibly 0).
    ///
    /// Why tables and not one change per pair: an occurrence makes four or
    /// five changes, and the pair map (hundreds of thousands of pairs, tens
    /// of MB) misses the cache on nearly every update, while the neighbours
    /// of one merge are few. Why the probes are asked for `AHEAD` ahead
    /// (`PairMap::prefetch`): one after another they were one dependent
    /// cache miss each (~140 ns an entry, 16-127 neighbours a merge late on
    /// multilingual text); asked for ahead, this function's time on 10 MB
    /// of multilingual text (1 thread, loaded host) went from 137 to 73 ms.
    pub(super) fn apply_changes(&mut self, pair: Pair, new_id: u32) -> Vec<(Pair, u64)> {
        let (a, b) = pair;
        let Trainer {
            pairs,
            changes,
            rare,
            ..
        } = self;
        let back_from_new = changes.left.count_of(new_id);
        let old_pairs = (changes.left.seen.iter())
            .filter(|seen| seen.token != new_id)
            .map(|seen| ((seen.token, a), seen.count))
            .chain((changes.right.seen.iter()).map(|seen| ((b, seen.token), seen.count)))
            .filter(|&(p, _)| p != pair);
        let absent = pairs.count_down_all(old_pairs);
        assert!(
            absent == 0 || rare.skipped > 0,
            "a pair in a word is counted"
        );
        // Pairs counting fewer than `below` are left out: their words are not grouped.
        let kept = rare.below;
        let least = kept.max(1);
        // The new pairs as the drains below make them (a count of `least`
        // or more), their slots asked for `AHEAD` inserts ahead.
        let made: Vec<Pair> = (changes.left.seen.iter())
            .filter(|seen| seen.count >= least)
            .map(|seen| (seen.token, new_id))
            .chain(
                (changes.right.seen.iter())
                    .filter(|seen| seen.count >= least)
                    .map(|seen| (new_id, seen.token)),
            )
            .collect();
        let mut ahead = made.iter();
        ahead.by_ref().take(AHEAD).for_each(|&p| pairs.prefetch(p));
        let mut new_pairs = Vec::with_capacity(made.len());
        let mut add = |p: Pair, seen: u64, n: u64, words: &[u32]| {
            if seen >= least {
                if let Some(&q) = ahead.next() {
                    pairs.prefetch(q);
                }
            }
            if n >= least {
                pairs.insert(p, n, words);
                new_pairs.push((p, n));
            } else if n > 0 {
                rare.skipped = rare.skipped.max(n + 1);
            }
        };
        changes
            .left
            .drain(kept, |x, n, words| add((x, new_id), n, n, words));
        changes.right.drain(kept, |y, n, words| {
            let kept_n = if y == a { n - back_from_new } else { n };
            add((new_id, y), n, kept_n, words)
        });
        new_pairs
    }
}
