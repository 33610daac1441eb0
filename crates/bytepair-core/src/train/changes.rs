//! The pair-count changes of one merge, added up per neighbouring token.

/// What merging `(a, b) -> new` did next to its occurrences, keyed by the
/// neighbouring token: `left[x]` occurrences had `x` on their left, so `x a`
/// became `x new`; `right[y]` had `y` on their right, so `b y` became `new y`.
/// Every pair-count change of the merge follows from these two tables (see
/// `Trainer::apply_changes`), and a token id indexes them directly: no
/// hashing for the four or five changes each occurrence makes.
pub(super) struct SeamChanges {
    pub(super) left: NeighbourCounts,
    pub(super) right: NeighbourCounts,
    /// Symbols the words lost (one per occurrence merged).
    pub(super) merged: usize,
}

impl SeamChanges {
    /// Empty tables for neighbours with ids below `vocabulary`.
    pub(super) fn for_vocabulary(vocabulary: usize) -> Self {
        let mut changes = SeamChanges {
            left: NeighbourCounts::default(),
            right: NeighbourCounts::default(),
            merged: 0,
        };
        changes.grow(vocabulary);
        changes
    }

    pub(super) fn grow(&mut self, vocabulary: usize) {
        self.left.slot.resize(vocabulary, 0);
        self.right.slot.resize(vocabulary, 0);
    }

    /// Add `other`, the changes in words after all of this one's.
    pub(super) fn absorb(&mut self, other: SeamChanges) {
        self.left.absorb(other.left);
        self.right.absorb(other.right);
        self.merged += other.merged;
    }
}

/// Weighted counts per neighbouring token, with the words where each was seen.
#[derive(Default)]
pub(super) struct NeighbourCounts {
    /// Token id -> 1 + its index in `seen`, or 0 if not seen yet.
    slot: Vec<u32>,
    /// Tokens in first-seen order, with their count and words (increasing,
    /// no repeats).
    pub(super) seen: Vec<(u32, u64, Vec<u32>)>,
}

impl NeighbourCounts {
    #[inline]
    pub(super) fn add(&mut self, token: u32, count: u64, word: u32) {
        let slot = &mut self.slot[token as usize];
        if *slot == 0 {
            self.seen.push((token, 0, Vec::new()));
            *slot = self.seen.len() as u32;
        }
        let (_, total, words) = &mut self.seen[*slot as usize - 1];
        *total += count;
        if words.last() != Some(&word) {
            words.push(word);
        }
    }

    pub(super) fn absorb(&mut self, other: NeighbourCounts) {
        for (token, count, words) in other.seen {
            let slot = &mut self.slot[token as usize];
            if *slot == 0 {
                self.seen.push((token, count, words));
                *slot = self.seen.len() as u32;
            } else {
                let (_, total, mine) = &mut self.seen[*slot as usize - 1];
                *total += count;
                mine.extend(words);
            }
        }
    }

    /// The tokens seen, each with its count and words; leaves the table empty.
    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, (u32, u64, Vec<u32>)> {
        for &(token, _, _) in &self.seen {
            self.slot[token as usize] = 0;
        }
        self.seen.drain(..)
    }

    /// The count of `token`, 0 if not seen.
    pub(super) fn count_of(&self, token: u32) -> u64 {
        match self.slot[token as usize] {
            0 => 0,
            slot => self.seen[slot as usize - 1].1,
        }
    }
}
