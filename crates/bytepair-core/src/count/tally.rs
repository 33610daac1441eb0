//! The word tally of one counting thread: short words (nearly all) in an
//! open-addressing table keyed by their bytes as one number (`shortkey`),
//! longer ones in a byte-string map.
//!
//! Why not only `FxHashMap<Vec<u8>, u64>`: each lookup hashed the bytes, chased
//! the key's heap pointer and called `memcmp`; that was two thirds of counting
//! (enwiki, gpt2: 66 MB/s per thread). Here a lookup is one probe of a 32-byte
//! slot, prefetched a batch of pre-tokens ahead.

use super::{Word, WordCounts};
use crate::memory::{prefetch, ZeroedSlice};
use super::SplitWords;
use crate::pretokenize::SearchError;
use crate::shortkey::{self, MAX_SHORT};

/// One short word and its count; key 0 marks an empty slot.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Slot {
    key: u128,
    count: u64,
}

fn empty_slots(len: usize) -> ZeroedSlice<Slot> {
    // SAFETY: a zeroed Slot is a valid, empty slot.
    unsafe { ZeroedSlice::new(len) }
}

/// Slots of a new tally (grows by doubling, kept at most half full).
const INITIAL_SLOTS: usize = 1 << 12;

/// Pre-tokens whose slots are prefetched together.
const BATCH: usize = 128;

/// Word (pre-token bytes) -> occurrences, built for many increments of few
/// distinct words. Memory: 64 bytes per distinct short word at most (a slot of
/// 32 bytes in a table at least half empty), plus the map for long words.
pub struct WordTally {
    max_word_bytes: usize,
    slots: ZeroedSlice<Slot>,
    /// 64 - log2(slots): a hash shifted right by it is a home slot.
    shift: u32,
    short_words: usize,
    long_words: WordCounts,
    /// Bytes of the keys of `long_words`.
    long_bytes: usize,
    /// The memory budget (`with_budget`), and the most slots it allows.
    budget: Option<usize>,
    max_slots: usize,
    /// The count below which the next pruning drops a word (doubles as needed).
    min_count: u64,
    pruned: Pruned,
}

/// What `WordTally::prune` (and a memory budget) dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Distinct words dropped (a word dropped twice counts twice).
    pub words: u64,
    /// Their occurrences (pre-tokens) lost.
    pub pre_tokens: u64,
    /// The highest `min_count` applied: a word dropped was seen fewer times,
    /// in the stretch of text counted before its pruning.
    pub min_count: u64,
}

impl Pruned {
    pub fn add(&mut self, other: Pruned) {
        self.words += other.words;
        self.pre_tokens += other.pre_tokens;
        self.min_count = self.min_count.max(other.min_count);
    }
}

/// Heap bytes a long word costs beyond its own bytes: its `Vec` header, the
/// count, the map's control byte and spare capacity, and the allocator's header.
const LONG_ENTRY_BYTES: usize = 64;

impl Default for WordTally {
    fn default() -> Self {
        WordTally::new(super::DEFAULT_MAX_WORD_BYTES)
    }
}

impl WordTally {
    /// An empty tally that counts a pre-token longer than `max_word_bytes`
    /// (at least 4) as consecutive words of at most that many bytes, cut at
    /// UTF-8 character boundaries (see `count::split_long_word`).
    pub fn new(max_word_bytes: usize) -> Self {
        Self::with_budget(max_word_bytes, None)
    }

    /// `new`, holding at most about `budget` bytes when one is given: the slot
    /// table never grows past half of it (the rarest words are pruned instead,
    /// see `prune`), and `enforce_budget` prunes when the long words push the
    /// total over it.
    pub fn with_budget(max_word_bytes: usize, budget: Option<usize>) -> Self {
        // Growing copies the table into one twice its size: old + new stay
        // within three quarters of the budget.
        let max_slots = budget.map_or(usize::MAX, |b| {
            let slots = (b / 2 / std::mem::size_of::<Slot>()).max(INITIAL_SLOTS);
            1 << slots.ilog2()
        });
        WordTally {
            budget,
            max_slots,
            min_count: 2,
            pruned: Pruned::default(),
            max_word_bytes: max_word_bytes.max(4),
            slots: empty_slots(INITIAL_SLOTS),
            shift: 64 - INITIAL_SLOTS.trailing_zeros(),
            short_words: 0,
            long_words: WordCounts::default(),
            long_bytes: 0,
        }
    }

    /// What the budget dropped so far.
    pub fn pruned(&self) -> Pruned {
        self.pruned
    }

    /// Forget what was dropped (the caller has taken note of it).
    pub fn clear_pruned(&mut self) {
        self.pruned = Pruned::default();
    }

    /// Prune until the tally holds at most half its budget, if it holds more
    /// than the budget (the long words are only checked here, between blocks).
    pub fn enforce_budget(&mut self) {
        let Some(budget) = self.budget else { return };
        if self.memory_bytes() <= budget {
            return;
        }
        while self.memory_bytes() > budget / 2 && !self.is_empty() {
            self.prune_for_budget();
            if self.memory_bytes() > budget / 2 {
                self.min_count = self.min_count.saturating_mul(2);
            }
        }
    }

    /// Prune at the current minimum count (it only rises, as in lossy counting).
    fn prune_for_budget(&mut self) {
        let pruned = self.prune(self.min_count);
        self.pruned.add(pruned);
    }

    /// Heap bytes held (the slot table, and the long words with their overhead).
    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot>() + self.long_words.capacity() * LONG_ENTRY_BYTES + self.long_bytes
    }

    /// Drop every word counted fewer than `min_count` times, and shrink the
    /// table to the words left (the lossy counting of a memory budget; see
    /// `count::Limits::max_memory`).
    pub fn prune(&mut self, min_count: u64) -> Pruned {
        let mut pruned = Pruned { min_count, ..Pruned::default() };
        let mut kept = Vec::with_capacity(self.short_words);
        for slot in self.slots.iter().filter(|s| s.key != 0) {
            if slot.count < min_count {
                pruned.words += 1;
                pruned.pre_tokens += slot.count;
            } else {
                kept.push(*slot);
            }
        }
        let len = (2 * kept.len()).next_power_of_two().max(INITIAL_SLOTS);
        self.slots = empty_slots(len);
        self.shift = 64 - len.trailing_zeros();
        self.short_words = 0;
        for slot in kept {
            self.bump(slot.key, shortkey::hash(slot.key), slot.count);
        }
        self.long_bytes -= super::drop_rare(&mut self.long_words, min_count, &mut pruned);
        // glibc keeps the old table's pages in this thread's arena otherwise:
        // resident memory then grew with every pruning (174 MB for a 64 MiB budget).
        crate::memory::release_freed_memory();
        pruned
    }

    /// Distinct words counted.
    pub fn len(&self) -> usize {
        self.short_words + self.long_words.len()
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add the pre-tokens of `text` (a whole document; special tokens are
    /// dropped). Errors only when a custom pattern's engine gives up.
    pub fn add_text(&mut self, pre: &impl SplitWords, text: &str) -> Result<(), SearchError> {
        pre.split_words(text, |segment, bounds| {
            for batch in bounds.windows(BATCH + 1).step_by(BATCH).chain(last_batch(bounds)) {
                self.add_batch(segment, batch);
            }
        })
    }

    /// `count[word] += n` (`word` not empty), whatever its length: for words
    /// that are already counted (an artifact), not pre-tokens of a text.
    pub fn add(&mut self, word: &[u8], n: u64) {
        if word.len() <= MAX_SHORT && !word.is_empty() {
            self.reserve(1);
            let key = shortkey::pack(word);
            self.bump(key, shortkey::hash(key), n);
        } else {
            self.add_long_word(word, n);
        }
    }

    fn add_long_word(&mut self, word: &[u8], n: u64) {
        match self.long_words.get_mut(word) {
            Some(c) => *c += n,
            None => {
                self.long_bytes += word.len();
                self.long_words.insert(word.to_vec(), n);
            }
        }
    }

    /// The counts as a byte-string map.
    pub fn into_counts(self) -> WordCounts {
        let mut counts = self.long_words;
        counts.reserve(self.short_words);
        for slot in self.slots.iter().filter(|s| s.key != 0) {
            counts.insert(shortkey::unpack(slot.key), slot.count);
        }
        counts
    }

    /// Add every count of `other` (a tally of another thread or call): short
    /// words are summed by key, with no allocation (turning each thread's
    /// tally into a byte-string map and summing those took a third of
    /// counting enwiki). With a budget, `self` prunes as `add` does.
    pub fn merge(&mut self, other: WordTally) {
        self.reserve(other.short_words.min(self.max_slots / 2));
        for slot in other.slots.iter().filter(|s| s.key != 0) {
            self.reserve(1);
            self.bump(slot.key, shortkey::hash(slot.key), slot.count);
        }
        for (word, n) in other.long_words {
            self.add_long_word(&word, n);
        }
        self.pruned.add(other.pruned);
    }

    /// The same counts with no memory budget (nothing is pruned from now on).
    pub fn unbounded(mut self) -> Self {
        self.budget = None;
        self.max_slots = usize::MAX;
        self
    }

    /// Prune (`prune`, the minimum count doubling) until the tally holds at
    /// most `budget` bytes; nothing happens below it.
    pub fn prune_to(&mut self, budget: usize) {
        let mut min_count = 2;
        while self.memory_bytes() > budget && !self.is_empty() {
            let pruned = self.prune(min_count);
            self.pruned.add(pruned);
            min_count = min_count.saturating_mul(2);
        }
    }

    /// Total pre-tokens counted (exact: a u128).
    pub fn total(&self) -> u128 {
        let mut total = 0u128;
        self.for_each_word(|_, n| total += u128::from(n));
        total
    }

    /// Visit every word and its count, in no particular order.
    pub fn for_each_word<'a>(&'a self, mut f: impl FnMut(Word<'a>, u64)) {
        for slot in self.slots.iter().filter(|s| s.key != 0) {
            f(Word::Packed(slot.key), slot.count);
        }
        for (word, &n) in &self.long_words {
            f(Word::Bytes(word), n);
        }
    }

    /// Count the pre-tokens `text[bounds[i]..bounds[i + 1]]` (at most BATCH):
    /// keys and hashes first, with a prefetch of each home slot, then the
    /// increments, so the cache misses of a batch overlap.
    fn add_batch(&mut self, text: &[u8], bounds: &[usize]) {
        let n = bounds.len() - 1;
        debug_assert!(n <= BATCH);
        self.reserve(n);
        let mut keys = [0u128; BATCH];
        let mut hashes = [0u64; BATCH];
        for i in 0..n {
            let (start, len) = (bounds[i], bounds[i + 1] - bounds[i]);
            if len <= MAX_SHORT {
                keys[i] = shortkey::load(text, start, len);
                hashes[i] = shortkey::hash(keys[i]);
                prefetch(&self.slots[self.home(hashes[i])]);
            }
        }
        for i in 0..n {
            if keys[i] != 0 {
                self.bump(keys[i], hashes[i], 1);
            } else {
                self.add_long(&text[bounds[i]..bounds[i + 1]]);
            }
        }
    }

    /// Count a pre-token of more than `MAX_SHORT` bytes, cut into words of
    /// at most `max_word_bytes`.
    #[cold]
    fn add_long(&mut self, piece: &[u8]) {
        for word in super::split_long_word(piece, self.max_word_bytes) {
            if word.len() <= MAX_SHORT {
                self.reserve(1);
                let key = shortkey::pack(word);
                self.bump(key, shortkey::hash(key), 1);
            } else {
                self.add_long_word(word, 1);
            }
        }
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Add `n` to the count of `key`, taking an empty slot if it is new.
    /// The table has a free slot (`reserve` ran).
    #[inline]
    fn bump(&mut self, key: u128, hash: u64, n: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = &mut self.slots[i];
            if slot.key == key {
                slot.count += n;
                return;
            }
            if slot.key == 0 {
                *slot = Slot { key, count: n };
                self.short_words += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Grow until `more` new words keep the table at most half full.
    fn reserve(&mut self, more: usize) {
        while 2 * (self.short_words + more) > self.slots.len() {
            if 2 * self.slots.len() > self.max_slots {
                // At the budget: make room by pruning, not growing; prune
                // harder next time if more than a quarter of the room is left taken.
                self.prune_for_budget();
                if 4 * self.short_words > self.max_slots {
                    self.min_count = self.min_count.saturating_mul(2);
                }
                continue;
            }
            let bigger = empty_slots(2 * self.slots.len());
            let old = std::mem::replace(&mut self.slots, bigger);
            self.shift -= 1;
            self.short_words = 0;
            for slot in old.iter().filter(|s| s.key != 0) {
                self.bump(slot.key, shortkey::hash(slot.key), slot.count);
            }
        }
    }
}

/// The bounds of the pre-tokens after the last full batch (none when the
/// count is a multiple of BATCH).
fn last_batch(bounds: &[usize]) -> Option<&[usize]> {
    let full = (bounds.len().saturating_sub(1)) / BATCH * BATCH;
    (bounds.len() > full + 1).then(|| &bounds[full..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::PreTokenizer;

    #[test]
    fn tally_equals_a_plain_map_through_growth() {
        let pre = PreTokenizer::new("gpt2", &["<|s|>".into()]).unwrap();
        let mut text = String::new();
        for i in 0..20_000 {
            text.push_str(&format!(" w{} x{}<|s|> averyveryverylongword{} ", i % 7919, i % 13, i % 5));
        }
        let mut want = WordCounts::default();
        super::super::count_text(&pre, &text, &mut want).unwrap();
        let mut tally = WordTally::default();
        tally.add_text(&pre, &text).unwrap();
        tally.add(b"w1", 5);
        *want.entry(b"w1".to_vec()).or_insert(0) += 5;
        assert_eq!(tally.len(), want.len());
        assert_eq!(tally.into_counts(), want);
    }

    #[test]
    fn merged_tallies_equal_merged_maps() {
        let pre = PreTokenizer::new("gpt2", &[]).unwrap();
        let text = |k: usize| (0..6000).map(|i| format!(" w{} {}", (i * k) % 4999, "long".repeat(i % 9))).collect::<String>();
        let (mut a, mut b) = (WordTally::default(), WordTally::default());
        a.add_text(&pre, &text(3)).unwrap();
        b.add_text(&pre, &text(7)).unwrap();
        let want = crate::count::merge_counts(WordTally::default().into_counts(), a.clone_counts());
        let want = crate::count::merge_counts(want, b.clone_counts());
        let total: u128 = want.values().map(|&n| u128::from(n)).sum();
        a.merge(b);
        assert_eq!((a.len(), a.total()), (want.len(), total));
        assert_eq!(a.into_counts(), want);
    }

    impl WordTally {
        fn clone_counts(&self) -> WordCounts {
            let mut counts = WordCounts::default();
            self.for_each_word(|w, n| w.with_bytes(|b| crate::count::add_word(&mut counts, b, n)));
            counts
        }
    }
}

#[cfg(test)]
mod prune_tests {
    use super::*;
    use crate::pretokenize::PreTokenizer;

    #[test]
    fn prune_drops_rare_words_and_keeps_the_rest_exact() {
        let pre = PreTokenizer::new("gpt2", &[]).unwrap();
        let mut text = String::new();
        for i in 0..30_000 {
            text.push_str(&format!(" w{} common{} {}", i, i % 3, "x".repeat(40 + i % 2)));
        }
        let mut tally = WordTally::default();
        tally.add_text(&pre, &text).unwrap();
        let before = tally.memory_bytes();
        let mut want = WordCounts::default();
        super::super::count_text(&pre, &text, &mut want).unwrap();
        let pruned = tally.prune(2);
        // Most numbers i are seen once; " w", " common", the x runs thousands of times.
        let once = want.values().filter(|&&n| n < 2).count() as u64;
        assert!(once > 29_000);
        assert_eq!(pruned, Pruned { words: once, pre_tokens: once, min_count: 2 });
        assert!(tally.memory_bytes() < before / 4, "{} -> {}", before, tally.memory_bytes());
        want.retain(|_, n| *n >= 2);
        tally.add(b" common", 1);
        *want.get_mut(&b" common"[..]).unwrap() += 1;
        assert_eq!(tally.into_counts(), want);
    }
}
