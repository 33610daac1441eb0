//! The word tally of one counting thread: short words (nearly all) in
//! open-addressing tables keyed by their bytes as one number (`shortkey`,
//! `slots`), longer ones in a byte-string map.
//!
//! Why not only `FxHashMap<Vec<u8>, u64>`: each lookup hashed the bytes, chased
//! the key's heap pointer and called `memcmp`; that was most of the time of
//! counting. Here a lookup is one probe of a 16-byte
//! slot, prefetched a batch of pre-tokens ahead.

use super::slots::{
    load_narrow, narrow_key, wide_key, CountedKey, Mid, Narrow, Slot, Table, Wide, NARROW_MAX,
};
use super::SplitWords;
use super::{Word, WordCounts};
use crate::pretokenize::SearchError;
use crate::shortkey::{self, MAX_MID, MAX_SHORT};

mod budget;
mod parts;
pub use budget::{sampled_estimates, Prune, Pruned};
pub(crate) use parts::Part;

/// Slots of a new tally's narrow table (which grows by doubling).
const INITIAL_NARROW: usize = 1 << 12;
/// Slots of a new tally's wide table (words of 12 to 15 bytes are few).
const INITIAL_WIDE: usize = 1 << 10;
/// Slots of a new tally's mid table (words of 16 to 31 bytes: fewer in English).
const INITIAL_MID: usize = 1 << 9;

/// The most narrow slots `expect_text_bytes` sizes for (16 MiB).
const MAX_EXPECTED_NARROW: u32 = 1 << 20;

/// `add_batch`'s key of a word of 16 to 31 bytes (neither a narrow key nor
/// a wide one: its top byte is no length).
const MID_TAG: u128 = u128::MAX;

/// Pre-tokens whose slots are prefetched together.
const BATCH: usize = 128;

/// Word (pre-token bytes) -> occurrences, built for many increments of few
/// distinct words. Memory: 32 bytes per distinct word of at most 11 bytes
/// (a 16-byte slot in a table at least half empty), 64 per word of 12 to 15
/// bytes, 96 per word of 16 to 31 bytes, plus the map for longer words.
pub struct WordTally {
    max_word_bytes: usize,
    narrow: Table<Narrow>,
    wide: Table<Wide>,
    mid: Table<Mid>,
    /// Words of the wide table that have a marker in the narrow one.
    moved: usize,
    long_words: WordCounts,
    /// Bytes of the keys of `long_words`.
    long_bytes: usize,
    /// The memory budget (`with_budget`), and the most bytes it allows the slot tables.
    budget: Option<usize>,
    table_budget: usize,
    /// The count below which the next pruning drops a word (doubles as needed).
    min_count: u64,
    /// Which words a pruning drops (`with_pruning`).
    rule: Prune,
    pruned: Pruned,
    /// Bytes of text this tally is expected to count (`expect_text_bytes`;
    /// 0 when unknown), and bytes of the texts given to `add_text` so far.
    expected_bytes: u64,
    seen_bytes: u64,
}

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
    /// tables never grow past half of it (the rarest words are pruned instead,
    /// see `prune`), and `enforce_budget` prunes when the long words push the
    /// total over it.
    pub fn with_budget(max_word_bytes: usize, budget: Option<usize>) -> Self {
        // Growing copies a table into one twice its size: old + new stay
        // within three quarters of the budget.
        WordTally {
            budget,
            table_budget: budget.map_or(usize::MAX, |b| b / 2),
            min_count: 2,
            rule: Prune::Rare,
            pruned: Pruned::default(),
            max_word_bytes: max_word_bytes.max(4),
            narrow: Table::new(INITIAL_NARROW, false),
            wide: Table::new(INITIAL_WIDE, false),
            mid: Table::new(INITIAL_MID, false),
            moved: 0,
            long_words: WordCounts::default(),
            long_bytes: 0,
            expected_bytes: 0,
            seen_bytes: 0,
        }
    }

    /// Size the tables, while they are empty and without a budget, for the
    /// distinct words of about `bytes` of text, estimated by Heaps' law as
    /// measured on enwiki with the gpt2 pattern: 150k words of at most 11
    /// bytes in 16 MiB, times (bytes / 16 MiB)^0.7, at most 16 MiB of narrow
    /// slots; a twelfth as many words of 12 to 15 bytes and a ninetieth as
    /// many of 16 to 31 (enwiki: 390.6k, 32.6k, 4.3k).
    /// Growing there doubles a table up to 8 times, zeroing fresh pages twice
    /// the final size and re-filing every word each time (a measurable share
    /// of counting enwiki); a table sized at most 2x too large costs no more.
    /// The estimate gets a quarter more room: each half of enwiki has ~265k
    /// narrow words where the law says 241k, just past the half-full mark of
    /// the table for 241k, so both threads of a 2-thread count grew theirs
    /// near the end (the extra room made 2-thread counts of enwiki and
    /// multilingual faster). Sizing the wide and mid tables too took the
    /// page faults of counting enwiki from ~1.7k to ~0.6k per count at one
    /// thread, ~3.2k to ~1.2k at two.
    pub fn expect_text_bytes(&mut self, bytes: u64) {
        if self.budget.is_some() || !self.is_empty() {
            return;
        }
        self.expected_bytes = bytes;
        let words = 1.25 * 150_000.0 * (bytes as f64 / f64::from(16 << 20)).powf(0.7);
        let narrow = (2.0 * words).min(f64::from(MAX_EXPECTED_NARROW)) as usize;
        if narrow > INITIAL_NARROW {
            self.narrow = Table::for_words(narrow / 2, INITIAL_NARROW, true);
        }
        let (wide, mid) = ((words / 12.0) as usize, (words / 90.0) as usize);
        if 2 * wide > INITIAL_WIDE {
            self.wide = Table::for_words(wide, INITIAL_WIDE, true);
        }
        if 2 * mid > INITIAL_MID {
            self.mid = Table::for_words(mid, INITIAL_MID, true);
        }
    }

    /// Distinct words counted.
    pub fn len(&self) -> usize {
        self.narrow.taken() + self.wide.taken() - self.moved
            + self.mid.taken()
            + self.long_words.len()
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add the pre-tokens of `text` (a whole document; special tokens are
    /// dropped). Errors only when a custom pattern's engine gives up.
    pub fn add_text(&mut self, pre: &impl SplitWords, text: &str) -> Result<(), SearchError> {
        // Counted before the split: growing while it runs projects from a
        // little more text than was read, never from none (`grown_slots`).
        self.seen_bytes += text.len() as u64;
        pre.split_words(text, |segment, bounds| {
            for batch in bounds
                .windows(BATCH + 1)
                .step_by(BATCH)
                .chain(last_batch(bounds))
            {
                self.add_batch(segment, batch);
            }
        })
    }

    /// `count[word] += n` (`word` not empty), whatever its length: for words
    /// that are already counted (an artifact), not pre-tokens of a text.
    pub fn add(&mut self, word: &[u8], n: u64) {
        match word.len() {
            1..=MAX_SHORT => {
                self.reserve(1);
                self.bump(shortkey::pack(word), n);
            }
            _ if word.len() <= MAX_MID => {
                self.reserve(1);
                let key = shortkey::load_mid(word, 0, word.len());
                self.mid.bump(key, key.hash(), n);
            }
            _ => self.add_long_word(word, n),
        }
    }

    fn add_long_word(&mut self, word: &[u8], n: u64) {
        add_long_word(&mut self.long_words, &mut self.long_bytes, word, n);
    }

    /// The counts as a byte-string map.
    pub fn into_counts(self) -> WordCounts {
        let short_words = self.len() - self.long_words.len();
        let mut counts = self.long_words;
        counts.reserve(short_words);
        for (key, count) in self.narrow.entries().chain(self.wide.entries()) {
            counts.insert(shortkey::unpack(key), count);
        }
        for (key, count) in self.mid.entries() {
            counts.insert(Word::Mid(key).with_bytes(<[u8]>::to_vec), count);
        }
        counts
    }

    /// Add every count of `other` (a tally of another thread or call): short
    /// words are summed by key, with no allocation (turning each thread's
    /// tally into a byte-string map and summing those took a third of
    /// counting enwiki). With a budget, `self` prunes as `add` does.
    pub fn merge(&mut self, other: WordTally) {
        // No growth up front: most words of another thread's tally are in
        // this one too (two halves of enwiki: 265k words each, 427k in all),
        // and a table grown for their sum is twice the size and zeroed for nothing.
        let mut narrow = other.narrow.narrow_entries();
        loop {
            // As in `add_batch`: the home slots of a batch are prefetched together.
            self.reserve(BATCH);
            let mut batch = [(0u128, 0u64, 0u64); BATCH];
            let mut n = 0;
            for (key, count) in narrow.by_ref().take(BATCH) {
                let hash = shortkey::hash(key);
                self.narrow.prefetch(hash);
                batch[n] = (key, hash, count);
                n += 1;
            }
            if n == 0 {
                break;
            }
            for &(key, hash, count) in &batch[..n] {
                if let Some(m) = self.narrow.bump(key, hash, count) {
                    self.bump_wide(wide_key(key), m);
                }
            }
        }
        drop(narrow);
        self.merge_rest(other);
    }

    /// `merge` of a tally with no budget, its narrow words (nearly all)
    /// added on the pool's threads (`Table::add_in_parts`): summing two
    /// threads' tallies of enwiki one word at a time took 5-10 ms while the
    /// other thread had nothing to do. The sum may leave the narrow table
    /// up to 3/4 full (the next word added grows it, `reserve`).
    pub fn merge_parallel(&mut self, mut other: WordTally) {
        debug_assert!(self.budget.is_none(), "a budget prunes one word at a time");
        // Room for every word of both at 3/4 full (linear probes stay short,
        // and the table never fills while the parts add); the tallies share
        // most words, so growing for their sum at half full (`reserve`)
        // would double the table for nothing.
        while 4 * (self.narrow.taken() + other.narrow.taken()) > 3 * self.narrow.len() {
            self.narrow.grow();
        }
        let parts = (4 * rayon::current_num_threads())
            .next_power_of_two()
            .min(64);
        // The other words are summed beside the narrow parts, not after them
        // on one thread while the others wait (~1 ms for enwiki's 37k).
        let narrow = &mut self.narrow;
        let long = (&mut self.long_words, &mut self.long_bytes);
        // Moved out, so its keys move into this map (`add_beside_narrow`).
        let other_long = std::mem::take(&mut other.long_words);
        let other = &other;
        let (left, outgrown) = rayon::join(
            || narrow.add_in_parts(&other.narrow, parts),
            || add_beside_narrow(&mut self.wide, &mut self.mid, long, other_long, other),
        );
        for (key, count) in left {
            // The narrow table has room for these at 3/4 full (grown above).
            // A `reserve` here grew it at half full, re-filing every word of
            // the sum on one thread while the others waited: 3-12 ms of a
            // 2-thread count of multilingual 10 MB, whose halves share few
            // words (85k + 102k narrow ones, 172k summed).
            if let Some(m) = self.narrow.bump(key, shortkey::hash(key), count) {
                self.reserve(1);
                self.bump_wide(wide_key(key), m);
            }
        }
        for (key, count) in outgrown {
            self.reserve(1);
            self.bump(key, count);
        }
        self.absorb_pruning(other);
    }

    /// `merge` of the words of `other` outside its narrow table, and of what
    /// it pruned.
    fn merge_rest(&mut self, other: WordTally) {
        for (key, count) in other.wide.entries() {
            self.reserve(1);
            self.bump(key, count);
        }
        for (key, count) in other.mid.entries() {
            self.reserve(1);
            self.mid.bump(key, key.hash(), count);
        }
        self.absorb_pruning(&other);
        for (word, n) in other.long_words {
            self.add_long_word(&word, n);
        }
    }

    /// What `other` pruned, and its sampling threshold, taken into this
    /// tally's when the two are summed.
    fn absorb_pruning(&mut self, other: &WordTally) {
        self.pruned.add(other.pruned);
        if self.rule == Prune::Sample {
            self.min_count = self.min_count.max(other.min_count);
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
        for (key, count) in self.narrow.entries().chain(self.wide.entries()) {
            f(Word::Packed(key), count);
        }
        for (key, count) in self.mid.entries() {
            f(Word::Mid(key), count);
        }
        for (word, &n) in &self.long_words {
            f(Word::Bytes(word), n);
        }
    }

    /// Visit the words of part `part` of `parts` (every word is in one
    /// part), for threads that each visit a part.
    pub fn for_each_word_of_part<'a>(
        &'a self,
        part: usize,
        parts: usize,
        mut f: impl FnMut(Word<'a>, u64),
    ) {
        let short = self.narrow.entries_of_part(part, parts);
        for (key, count) in short.chain(self.wide.entries_of_part(part, parts)) {
            f(Word::Packed(key), count);
        }
        for (key, count) in self.mid.entries_of_part(part, parts) {
            f(Word::Mid(key), count);
        }
        for (i, (word, &n)) in self.long_words.iter().enumerate() {
            if i % parts == part {
                f(Word::Bytes(word), n);
            }
        }
    }

    /// Count the pre-tokens `text[bounds[i]..bounds[i + 1]]` (at most BATCH):
    /// keys and hashes first, with a prefetch of each home slot, then the
    /// increments, so the cache misses of a batch overlap. A key of a word of
    /// 12 to 15 bytes has its length in the top byte, a narrow key does not.
    fn add_batch(&mut self, text: &[u8], bounds: &[usize]) {
        let n = bounds.len() - 1;
        debug_assert!(n <= BATCH);
        self.reserve(n);
        // A pre-token longer than max_word_bytes is cut (`add_long`).
        let (narrow_max, short_max) = (
            NARROW_MAX.min(self.max_word_bytes),
            MAX_SHORT.min(self.max_word_bytes),
        );
        let mid_max = MAX_MID.min(self.max_word_bytes);
        let mut keys = [0u128; BATCH];
        // Read only where keys[i] is MID_TAG (not zeroed: 4 KiB per batch).
        let mut mids = [std::mem::MaybeUninit::<[u128; 2]>::uninit(); BATCH];
        let mut hashes = [0u64; BATCH];
        for i in 0..n {
            let (start, len) = (bounds[i], bounds[i + 1] - bounds[i]);
            if len <= narrow_max {
                keys[i] = load_narrow(text, start, len);
                hashes[i] = shortkey::hash(keys[i]);
                self.narrow.prefetch(hashes[i]);
            } else if len <= short_max {
                keys[i] = shortkey::load(text, start, len);
                hashes[i] = shortkey::hash(keys[i]);
                self.wide.prefetch(hashes[i]);
            } else if len <= mid_max {
                let key = shortkey::load_mid(text, start, len);
                mids[i].write(key);
                keys[i] = MID_TAG;
                hashes[i] = key.hash();
                self.mid.prefetch(hashes[i]);
            }
        }
        for i in 0..n {
            if keys[i] >> 120 == 0 && keys[i] != 0 {
                if let Some(m) = self.narrow.bump_one(keys[i], hashes[i]) {
                    self.bump_wide(wide_key(keys[i]), m);
                }
            } else if keys[i] == MID_TAG {
                // SAFETY: written where keys[i] was set to MID_TAG.
                self.mid
                    .bump(unsafe { mids[i].assume_init() }, hashes[i], 1);
            } else if keys[i] != 0 {
                self.wide.bump(keys[i], hashes[i], 1);
            } else {
                self.add_long(&text[bounds[i]..bounds[i + 1]]);
            }
        }
    }

    /// Count a pre-token of more than `MAX_MID` or `max_word_bytes` bytes,
    /// cut into words of at most `max_word_bytes`.
    #[cold]
    fn add_long(&mut self, piece: &[u8]) {
        let (len, room) = (self.long_words.len(), self.long_words.capacity());
        if len == room {
            // Room for the long words projected, at most 8x: rehashing the
            // map at each doubling hashed every long word again
            // (multilingual units: 27k of 32 bytes or more in 10 MB).
            let most = 8 * len.max(64);
            let words = self.projected_words(len + 1).map_or(0, |w| w.min(most));
            self.long_words.reserve(words.saturating_sub(len));
        }
        for word in super::split_long_word(piece, self.max_word_bytes) {
            self.add(word, 1);
        }
    }

    /// Add `n` to the count of the word of `key` (a `shortkey` key); both
    /// tables have room (`reserve` ran).
    fn bump(&mut self, key: u128, n: u64) {
        if (key >> 120) as usize <= NARROW_MAX {
            let narrow = narrow_key(key);
            if let Some(m) = self.narrow.bump(narrow, shortkey::hash(narrow), n) {
                self.bump_wide(key, m);
            }
        } else {
            self.wide.bump(key, shortkey::hash(key), n);
        }
    }

    /// The wide count of a word whose count outgrew its narrow slot.
    #[cold]
    fn bump_wide(&mut self, key: u128, n: u64) {
        if self.wide.bump(key, shortkey::hash(key), n) {
            self.moved += 1;
        }
    }

    /// Grow the tables until `more` new words keep each at most half full;
    /// at the budget, make room by pruning instead.
    fn reserve(&mut self, more: usize) {
        let mut pruned_here = false;
        loop {
            let (narrow, wide, mid) = (
                self.narrow.needs_room(more),
                self.wide.needs_room(more),
                self.mid.needs_room(more),
            );
            if !narrow && !wide && !mid {
                return;
            }
            let grown = (self.narrow.bytes() << u8::from(narrow))
                + (self.wide.bytes() << u8::from(wide))
                + (self.mid.bytes() << u8::from(mid));
            if grown <= self.table_budget {
                if narrow {
                    self.narrow.grow_to(self.grown_slots(&self.narrow, more));
                }
                if wide {
                    self.wide.grow_to(self.grown_slots(&self.wide, more));
                }
                if mid {
                    self.mid.grow_to(self.grown_slots(&self.mid, more));
                }
                continue;
            }
            // Prune harder when pruning at this count made no room, and next
            // time when more than a quarter of the room is left taken.
            if pruned_here {
                self.min_count = self.min_count.saturating_mul(2);
            }
            self.prune_for_budget();
            pruned_here = true;
            if 4 * self.slot_bytes_used() > self.table_budget {
                self.min_count = self.min_count.saturating_mul(2);
            }
        }
    }

    /// The slots a full `table` grows to, to take `more` new words: twice as
    /// many, or room for the words projected (`projected_words`), at most 8x.
    /// `expect_text_bytes`' estimate is enwiki's: multilingual text has
    /// fewer short words and many more of 12-31 bytes (SentencePiece units
    /// of 10 MB: 54k wide and 54k mid words where it expects 11k and 1.5k),
    /// so its tables doubled 2-5 times, each zeroing fresh pages and filing
    /// every word again (perf, one thread: ~10% of counting and decoding the
    /// units).
    fn grown_slots<S: Slot>(&self, table: &Table<S>, more: usize) -> usize {
        let double = 2 * table.len();
        match self.projected_words(table.taken() + more) {
            Some(words) => (2 * words)
                .next_power_of_two()
                .clamp(double, 8 * table.len()),
            None => double,
        }
    }

    /// How many words a table that holds `words` now will hold at the end of
    /// the text, by Heaps' law (words x (expected / seen bytes)^0.75), when
    /// the text's size is known (`expect_text_bytes`) and there is no budget.
    fn projected_words(&self, words: usize) -> Option<usize> {
        let (seen, expected) = (self.seen_bytes, self.expected_bytes);
        if self.budget.is_some() || seen == 0 || expected <= seen {
            return None;
        }
        Some((words as f64 * (expected as f64 / seen as f64).powf(0.75)) as usize)
    }

    /// Bytes of the slots taken in the three slot tables.
    fn slot_bytes_used(&self) -> usize {
        self.narrow.taken() * std::mem::size_of::<Narrow>()
            + self.wide.taken() * std::mem::size_of::<Wide>()
            + self.mid.taken() * std::mem::size_of::<Mid>()
    }
}

/// `counts[word] += n` in a map of long words whose keys hold `bytes` bytes.
fn add_long_word(counts: &mut WordCounts, bytes: &mut usize, word: &[u8], n: u64) {
    match counts.get_mut(word) {
        Some(c) => *c += n,
        None => {
            *bytes += word.len();
            counts.insert(word.to_vec(), n);
        }
    }
}

/// `merge_parallel`'s sum of the words of `other` in its wide and mid
/// tables and its long words into `wide`, `mid` and `long` (a map and the
/// bytes of its keys), growing them as needed (no budget), the three as
/// jobs of their own: on multilingual text they hold a third of the words
/// (10 MB of SentencePiece units: 25k wide, 27k mid and 12k long words in
/// the smaller of two tallies), and summed in turn on one thread they took
/// 11-14 ms while the narrow parts took 2-3 (loaded host). Returns the words
/// of `other`'s wide table whose count outgrew a narrow slot: they go
/// through the narrow table (`WordTally::bump`), once it is summed.
fn add_beside_narrow(
    wide: &mut Table<Wide>,
    mid: &mut Table<Mid>,
    (long, long_bytes): (&mut WordCounts, &mut usize),
    other_long: WordCounts,
    other: &WordTally,
) -> Vec<(u128, u64)> {
    let add_wide = || {
        let mut outgrown = vec![];
        for (key, count) in other.wide.entries() {
            if (key >> 120) as usize <= NARROW_MAX {
                outgrown.push((key, count));
                continue;
            }
            if wide.needs_room(1) {
                wide.grow();
            }
            wide.bump(key, shortkey::hash(key), count);
        }
        outgrown
    };
    let add_mid = || {
        for (key, count) in other.mid.entries() {
            if mid.needs_room(1) {
                mid.grow();
            }
            mid.bump(key, key.hash(), count);
        }
    };
    let add_long = || {
        // The other tally's words move over (no copy, no free), in a map
        // grown once: the two share few long words.
        long.reserve(other_long.len());
        for (word, n) in other_long {
            match long.entry(word) {
                std::collections::hash_map::Entry::Occupied(mut e) => *e.get_mut() += n,
                std::collections::hash_map::Entry::Vacant(e) => {
                    *long_bytes += e.key().len();
                    e.insert(n);
                }
            }
        }
    };
    let (outgrown, ((), ())) = rayon::join(add_wide, || rayon::join(add_mid, add_long));
    outgrown
}

/// The bounds of the pre-tokens after the last full batch (none when the
/// count is a multiple of BATCH).
fn last_batch(bounds: &[usize]) -> Option<&[usize]> {
    let full = (bounds.len().saturating_sub(1)) / BATCH * BATCH;
    (bounds.len() > full + 1).then(|| &bounds[full..])
}

#[cfg(test)]
mod tests;
