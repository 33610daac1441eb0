//! The pair-count changes of one merge, added up per neighbouring token.

use std::mem::take;

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
    /// `drain`'s place and step in `grouped` for each token (kept for its room).
    cursor: Vec<(usize, usize)>,
}

/// The `last_word` of a token not seen in any word yet (word indices are
/// below 2^32 - 1).
const NO_WORD: u32 = u32::MAX;

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
                last_word: NO_WORD,
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
        if seen.last_word != word {
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
    /// order (words increasing, no repeats; none for a token counting
    /// fewer than `min_count`); leaves the table empty.
    pub(super) fn drain(&mut self, min_count: u64, mut f: impl FnMut(u32, u64, &[u32])) {
        // A counting sort of the visits by token: stable, so each token's
        // words stay in visiting (increasing) order. The visits of a token
        // below `min_count` all go to one spare place past the others (most
        // pairs a merge makes are rare and left out; no branch a visit).
        let mut total = 0usize;
        for seen in &self.seen {
            total += if seen.count >= min_count {
                seen.words as usize
            } else {
                0
            };
        }
        let mut next = 0usize;
        let (mut cursor, mut grouped) = (take(&mut self.cursor), take(&mut self.grouped));
        cursor.clear();
        for seen in &self.seen {
            let kept = seen.count >= min_count;
            cursor.push(if kept { (next, 1) } else { (total, 0) });
            next += if kept { seen.words as usize } else { 0 };
        }
        grouped.clear();
        grouped.resize(total + 1, 0);
        for &(at, word) in &self.visits {
            let (c, step) = &mut cursor[at as usize];
            grouped[*c] = word;
            *c += *step;
        }
        let mut start = 0;
        for seen in &self.seen {
            let words = match seen.count >= min_count {
                true => seen.words as usize,
                false => 0,
            };
            f(seen.token, seen.count, &grouped[start..start + words]);
            start += words;
            self.slot[seen.token as usize] = 0;
        }
        self.seen.clear();
        self.visits.clear();
        (self.cursor, self.grouped) = (cursor, grouped);
    }

    /// The count of `token`, 0 if not seen.
    pub(super) fn count_of(&self, token: u32) -> u64 {
        match self.slot[token as usize] {
            0 => 0,
            slot => self.seen[slot as usize - 1].count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_groups_the_words_of_each_token_kept_and_empties_the_table() {
        let mut changes = SeamChanges::for_vocabulary(8);
        let t = &mut changes.left;
        for (token, count, word) in [
            (5, 3, 0),
            (2, 1, 0),
            (5, 3, 0),
            (7, 4, 2),
            (5, 3, 4),
            (2, 1, 6),
        ] {
            t.add(token, count, word);
        }
        let mut got = vec![];
        t.drain(3, |token, count, words| {
            got.push((token, count, words.to_vec()))
        });
        assert_eq!(got, [(5, 9, vec![0, 4]), (2, 2, vec![]), (7, 4, vec![2])]);
        assert_eq!((t.count_of(5), t.count_of(2)), (0, 0));
        t.add(2, 1, 0);
        let mut again = vec![];
        t.drain(0, |token, count, words| {
            again.push((token, count, words.to_vec()))
        });
        assert_eq!(again, [(2, 1, vec![0])]);
    }
}
