//! The pair index of the merge loop: every pair's count and the words that
//! hold it (`PairStats`), the word lists delta-encoded (`WordList`), and the
//! index of the initial words (`initial_pair_index`), kept in hash shards
//! (`PairMap`).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::words::{Symbol, Words};
use super::Pair;

#[derive(Default)]
pub(super) struct PairStats {
    /// Occurrences in the corpus (sum of the frequencies of the words holding it).
    pub(super) count: u64,
    /// Indices of words that contained the pair when it was counted. May hold
    /// words that lost the pair since; the merge re-checks.
    pub(super) words: WordList,
}

/// Increasing word indices, each stored as its difference from the previous
/// one in LEB128 (7 bits a byte). The index holds about one entry per byte of
/// every word (97 M for 8 M words), most of them small steps between the
/// words of a frequent pair: 1.3 bytes an entry where a `u32` took 4. A list
/// never grows once made (a new pair comes with all its words).
#[derive(Default)]
pub(super) struct WordList(Box<[u8]>);

/// Bytes of `delta` in LEB128.
fn varint_len(delta: u32) -> usize {
    (32 - (delta | 1).leading_zeros() as usize).div_ceil(7)
}

fn push_varint(out: &mut Vec<u8>, mut delta: u32) {
    while delta >= 0x80 {
        out.push(delta as u8 | 0x80);
        delta >>= 7;
    }
    out.push(delta as u8);
}

impl WordList {
    /// The list of `ids`, which must increase.
    pub(super) fn of_sorted(ids: &[u32]) -> Self {
        let mut last = 0;
        let bytes = ids.iter().map(|&i| varint_len(i - last.min(i))).sum();
        let mut out = Vec::with_capacity(bytes);
        for &i in ids {
            push_varint(&mut out, i - last);
            last = i;
        }
        WordList(out.into_boxed_slice())
    }

    /// The word indices, in order.
    pub(super) fn to_vec(&self) -> Vec<u32> {
        let mut ids = Vec::with_capacity(self.0.len());
        let (mut last, mut delta, mut shift) = (0u32, 0u32, 0);
        for &b in self.0.iter() {
            delta |= u32::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                last += delta;
                ids.push(last);
                (delta, shift) = (0, 0);
            }
        }
        ids
    }
}

/// A word list being built in increasing order with its final size known.
#[derive(Default)]
struct ListBuilder {
    bytes: Vec<u8>,
    last: Option<u32>,
}

impl ListBuilder {
    /// Add word `i` unless it is the last one added.
    fn push(&mut self, i: u32) {
        if self.last != Some(i) {
            push_varint(&mut self.bytes, i - self.last.unwrap_or(0));
            self.last = Some(i);
        }
    }
}

/// Pair counts and reverse index of the initial words, built in parallel:
/// each thread indexes one shard of the pairs (`PairMap`) over all the words,
/// in word order, in two passes so that each pair's word list is allocated
/// once at its final size (lists grown by pushing held ~1.5x their entries:
/// 570 MB for 390 MB of word ids on 8 M words). Each list holds its words in
/// increasing order, each once. The shards are disjoint, so nothing is
/// summed across threads (counting a share of the words per thread put most
/// pairs in every thread's map, and adding those up was serial: 0.5 s of
/// SuperBPE's stage 2 on enwiki, 2.1M pairs).
pub(super) fn initial_pair_index<S: Symbol>(words: &Words<S>, freqs: &[u64]) -> PairMap {
    let threads = rayon::current_num_threads().clamp(1, 8);
    let mask = threads.next_power_of_two() - 1;
    let shards = (0..=mask)
        .into_par_iter()
        .map(|shard| shard_index(words, freqs, shard, mask))
        .collect();
    PairMap { shards, mask }
}

/// The pairs of shard `shard` (`shard_of(pair) & mask`) in every word.
fn shard_index<S: Symbol>(
    words: &Words<S>,
    freqs: &[u64],
    shard: usize,
    mask: usize,
) -> FxHashMap<Pair, PairStats> {
    let mut pairs = FxHashMap::<Pair, Building>::default();
    // Pass 1: every pair's count and list size.
    for_pairs_of_shard(words, shard, mask, |p, i| {
        let b = pairs.entry(p).or_default();
        b.count += freqs[i as usize];
        if b.list.last != Some(i) {
            b.size += varint_len(i - b.list.last.unwrap_or(0));
            b.list.last = Some(i);
        }
    });
    for b in pairs.values_mut() {
        b.list = ListBuilder {
            bytes: Vec::with_capacity(b.size),
            last: None,
        };
    }
    // Pass 2: the word lists.
    for_pairs_of_shard(words, shard, mask, |p, i| {
        pairs.get_mut(&p).expect("counted in pass 1").list.push(i);
    });
    pairs
        .into_iter()
        .map(|(p, b)| {
            debug_assert_eq!(b.list.bytes.len(), b.list.bytes.capacity());
            let words = WordList(b.list.bytes.into_boxed_slice());
            (
                p,
                PairStats {
                    count: b.count,
                    words,
                },
            )
        })
        .collect()
}

/// Call `f(pair, word)` for each pair of shard `shard` in each word, in order.
fn for_pairs_of_shard<S: Symbol>(
    words: &Words<S>,
    shard: usize,
    mask: usize,
    mut f: impl FnMut(Pair, u32),
) {
    for i in 0..words.count() {
        for p in words.get(i).windows(2) {
            let p = (p[0].id(), p[1].id());
            if shard_of(p) & mask == shard {
                f(p, i as u32);
            }
        }
    }
}

/// A pair of `shard_index`: its count, the bytes of its word list (pass 1),
/// and the list (pass 2).
#[derive(Default)]
struct Building {
    count: u64,
    size: usize,
    list: ListBuilder,
}

/// Every pair with a positive count and its stats, in shards by a hash of the
/// pair (a power of two of them) as `initial_pair_index` builds them, one per
/// thread. The shards are never joined into one map: on SuperBPE's stage 2 of
/// enwiki (2.1M pairs) the join was a rehash of every pair with both copies
/// held at once. A lookup picks its shard with a multiply and a mask.
pub(super) struct PairMap {
    shards: Vec<FxHashMap<Pair, PairStats>>,
    mask: usize,
}

impl PairMap {
    #[inline]
    fn shard(&self, pair: Pair) -> usize {
        shard_of(pair) & self.mask
    }

    #[inline]
    pub(super) fn get(&self, pair: &Pair) -> Option<&PairStats> {
        self.shards[self.shard(*pair)].get(pair)
    }

    #[inline]
    pub(super) fn get_mut(&mut self, pair: &Pair) -> Option<&mut PairStats> {
        let shard = self.shard(*pair);
        self.shards[shard].get_mut(pair)
    }

    #[inline]
    pub(super) fn remove(&mut self, pair: &Pair) -> Option<PairStats> {
        let shard = self.shard(*pair);
        self.shards[shard].remove(pair)
    }

    #[inline]
    pub(super) fn insert(&mut self, pair: Pair, stats: PairStats) {
        let shard = self.shard(pair);
        self.shards[shard].insert(pair, stats);
    }

    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(FxHashMap::len).sum()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&Pair, &PairStats)> {
        self.shards.iter().flat_map(|shard| shard.iter())
    }
}

/// The hash that picks the shard of `pair` (its low bits): the high bits of
/// a multiplicative hash with its own constant, so a shard's pairs do not
/// share the bits the maps' hasher picks buckets with.
#[inline]
fn shard_of((a, b): Pair) -> usize {
    let key = (u64::from(a) << 32) | u64::from(b);
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_lists_round_trip() {
        for ids in [vec![], vec![0], vec![5, 6, 200, 70_000, u32::MAX - 1]] {
            let list = WordList::of_sorted(&ids);
            assert_eq!(list.to_vec(), ids);
            let mut b = ListBuilder {
                bytes: vec![],
                last: None,
            };
            ids.iter().for_each(|&i| b.push(i));
            assert_eq!(b.bytes[..], list.0[..]);
        }
        assert_eq!(WordList::of_sorted(&[1, 2, 3]).0.len(), 3);
        assert_eq!(
            varint_len(127) + varint_len(128) + varint_len(u32::MAX),
            1 + 2 + 5
        );
    }

    #[test]
    fn the_index_holds_each_pairs_count_and_words_on_any_number_of_threads() {
        // Words of ids 0..5 (many repeats, pairs twice in a word), counts 1..4.
        let mut state = 7u32;
        let mut next = |n: u32| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (state >> 16) % n
        };
        let raw: Vec<(u64, Vec<u32>, u64)> = (0..300)
            .map(|k| {
                let ids = (0..2 + next(12)).map(|_| next(5)).collect();
                (k, ids, 1 + u64::from(next(4)))
            })
            .collect();
        let (words, freqs) = Words::<u16>::from_token_words(raw);
        let mut want = FxHashMap::<Pair, (u64, Vec<u32>)>::default();
        for (i, &freq) in freqs.iter().enumerate() {
            for p in words.get(i).windows(2) {
                let e = want.entry((p[0].id(), p[1].id())).or_default();
                e.0 += freq;
                if e.1.last() != Some(&(i as u32)) {
                    e.1.push(i as u32);
                }
            }
        }
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| initial_pair_index(&words, &freqs));
            assert_eq!(got.len(), want.len(), "{threads} threads");
            for (p, (count, ids)) in &want {
                let stats = got.get(p).expect("every pair indexed");
                assert_eq!((stats.count, stats.words.to_vec()), (*count, ids.clone()));
            }
        }
    }
}
