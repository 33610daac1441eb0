//! Tests of the pair index: word lists, removals and compaction, and the
//! index built on any number of threads.

use super::*;
use crate::train::symbols::runs_of;
use crate::train::words::{Symbol, Words};
use rustc_hash::FxHashMap;

#[test]
fn word_lists_round_trip() {
    for ids in [vec![], vec![0], vec![5, 6, 200, 70_000, u32::MAX - 1]] {
        let mut out = vec![];
        encode_sorted(&mut out, &ids);
        assert_eq!(decode(&out), ids);
        let mut fixed = vec![0u8; out.len()];
        let (mut at, mut last) = (0, 0);
        for &i in &ids {
            put_varint(&mut fixed, &mut at, i - last);
            last = i;
        }
        assert_eq!((fixed, at), (out.clone(), out.len()));
    }
    assert_eq!(
        varint_len(127) + varint_len(128) + varint_len(u32::MAX),
        1 + 2 + 5
    );
}

#[test]
fn lists_survive_removals_and_compaction() {
    let runs = runs_of(&[(&[1, 2, 1, 2], 1)], 1);
    let (words, freqs) = Words::<u16>::from_runs(&runs, |_| 0);
    let mut map = pool_index(1, &words, &freqs);
    let lists: Vec<Vec<u32>> = (0..200).map(|k| (k..k + 1 + k % 7).collect()).collect();
    for (k, ids) in lists.iter().enumerate() {
        map.insert((10, k as u32), 1, ids);
    }
    for k in (0..200).step_by(3) {
        assert_eq!(map.take_words(&(10, k)), lists[k as usize]);
    }
    for k in (1..200).step_by(3) {
        assert!(map.count_down((10, k), 1) && !map.count_down((10, k), 1));
    }
    assert_eq!(map.take_words(&(10, 0)), Vec::<u32>::new());
    for k in (2..200).step_by(3) {
        assert_eq!(map.words_of(&(10, k)), lists[k as usize]);
    }
    assert_eq!(map.words_of(&(1, 2)), [0]);
    assert!(map.count_down((1, 2), 1));
    assert_eq!(map.count(&(1, 2)), Some(1));
    assert!(map.shards[0].garbage * 2 <= map.shards[0].base.len() + map.shards[0].extra.len());
}

fn pool_index(threads: usize, words: &Words<u16>, freqs: &[u64]) -> PairMap {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| initial_pair_index(words, freqs, 5))
}

#[test]
fn the_index_holds_each_pairs_count_and_words_on_any_number_of_threads() {
    // Words of 5 ids (many repeats, pairs twice in a word), counts 1..4;
    // 1500 and 3000 pair up through the hash map, the others in the table.
    const IDS: [u32; 5] = [0, 1, 2, 1500, 3000];
    let mut state = 7u32;
    let mut next = |n: u32| {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (state >> 16) % n
    };
    let raw: Vec<(Vec<u32>, u64)> = (0..300)
        .map(|_| {
            let ids = (0..2 + next(12)).map(|_| IDS[next(5) as usize]).collect();
            (ids, 1 + u64::from(next(4)))
        })
        .collect();
    let slices: Vec<(&[u32], u64)> = raw.iter().map(|(ids, n)| (&ids[..], *n)).collect();
    let (words, freqs) = Words::<u16>::from_runs(&runs_of(&slices, 3), |_| 0);
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
    // An alphabet of 3001: streams on several threads, a record on one;
    // of 40000: each thread reads every word (no pair fits a stream entry).
    for (threads, alphabet) in [1, 2, 3, 8]
        .into_iter()
        .flat_map(|t| [(t, 3001), (t, 40_000)])
    {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let got = pool.install(|| initial_pair_index(&words, &freqs, alphabet));
        assert_eq!(got.len(), want.len(), "{threads} threads");
        for (p, (count, ids)) in &want {
            let got_count = got.count(p).expect("every pair indexed");
            assert_eq!((got_count, got.words_of(p)), (*count, ids.clone()));
        }
    }
}
