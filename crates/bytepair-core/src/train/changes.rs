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

    /// Add `other`, the changes in words after all of this one's, and
    /// leave `other` empty (its tables are kept for the next merge).
    pub(super) fn absorb(&mut self, other: &mut SeamChanges) {
        self.left.absorb(&mut other.left);
        self.right.absorb(&mut other.right);
        self.merged += std::mem::take(&mut other.merged);
    }
}

/// Weighted counts per neighbouring token, with the words where each was seen.
///
/// The words are kept in one buffer of (token's place in `seen`, word) in
/// visiting order, and grouped per token when drained: a vector per
/// neighbour was an allocation (and a free) for each of the hundreds of
/// thousands of pairs a training run makes.
#[derive(Default)]
pub(super) struct NeighbourCounts {
    /// Token id -> 1 + its index in `seen`, or 0 if not seen yet.
    slot: Vec<u32>,
    /// Tokens in first-seen order.
    pub(super) seen: Vec<Seen>,
    /// (index in `seen`, word) each time a token is seen in a new word.
    visits: Vec<(u32, u32)>,
    /// The words of the tokens drained last, grouped by token.
    grouped: Vec<u32>,
}

/// A neighbouring token of `NeighbourCounts`: its weighted count, and the
/// number of words it was seen in and the last of them.
pub(super) struct Seen {
    pub(super) token: u32,
    pub(super) count: u64,
    words: u32,
    last_word: u32,
}

impl NeighbourCounts {
    /// The place of `token` in `seen` (added with no count if new).
    #[inline]
    fn place(&mut self, token: u32) -> usize {
        let slot = &mut self.slot[token as usize];
        if *slot == 0 {
            self.seen.push(Seen {
                token,
                count: 0,
                words: 0,
                last_word: 0,
            });
            *slot = self.seen.len() as u32;
        }
        *slot as usize - 1
    }

    #[inline]
    pub(super) fn add(&mut self, token: u32, count: u64, word: u32) {
        let at = self.place(token);
        let seen = &mut self.seen[at];
        seen.count += count;
        if seen.words == 0 || seen.last_word != word {
            seen.words += 1;
            seen.last_word = word;
            self.visits.push((at as u32, word));
        }
    }

    /// Add `other`, seen in words after all of this one's, and leave it empty.
    pub(super) fn absorb(&mut self, other: &mut NeighbourCounts) {
        let mut place_of = Vec::with_capacity(other.seen.len());
        for theirs in &other.seen {
            let at = self.place(theirs.token);
            let mine = &mut self.seen[at];
            mine.count += theirs.count;
            mine.words += theirs.words;
            mine.last_word = theirs.last_word;
            place_of.push(at as u32);
        }
        self.visits.extend(
            other
                .visits
                .iter()
                .map(|&(at, word)| (place_of[at as usize], word)),
        );
        for theirs in other.seen.drain(..) {
            other.slot[theirs.token as usize] = 0;
        }
        other.visits.clear();
    }

    /// Call `f(token, count, words)` for every token seen, in first-seen
    /// order (words increasing, no repeats); leaves the table empty.
    pub(super) fn drain(&mut self, mut f: impl FnMut(u32, u64, &[u32])) {
        // A counting sort of the visits by token: stable, so each token's
        // words stay in visiting (increasing) order.
        let mut cursor = Vec::with_capacity(self.seen.len());
        let mut total = 0usize;
        for seen in &self.seen {
            cursor.push(total);
            total += seen.words as usize;
        }
        self.grouped.clear();
        self.grouped.resize(total, 0);
        for &(at, word) in &self.visits {
            let c = &mut cursor[at as usize];
            self.grouped[*c] = word;
            *c += 1;
        }
        let mut start = 0;
        for seen in &self.seen {
            let end = start + seen.words as usize;
            f(seen.token, seen.count, &self.grouped[start..end]);
            start = end;
            self.slot[seen.token as usize] = 0;
        }
        self.seen.clear();
        self.visits.clear();
    }

    /// The count of `token`, 0 if not seen.
    pub(super) fn count_of(&self, token: u32) -> u64 {
        match self.slot[token as usize] {
            0 => 0,
            slot => self.seen[slot as usize - 1].count,
        }
    }
}
