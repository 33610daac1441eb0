use rustc_hash::FxHashMap;

use super::pieces::{PieceCache, Slot, SlotKey, INLINE_IDS};
use super::*;
use crate::encode::tables::piece_key;

fn short_key(i: u32) -> u128 {
    piece_key(&i.to_le_bytes())
}

fn mid_key(i: u32) -> [u128; 2] {
    let text = format!("{i:0>20}");
    crate::shortkey::load_mid(text.as_bytes(), 0, text.len())
}

/// The ids the tests give key `n`: 1 to 8 of them (some spilled).
fn ids_of(n: u32) -> Vec<u32> {
    (0..1 + n % 8).map(|k| n * 8 + k).collect()
}

fn hit<K: SlotKey, const N: usize>(cache: &mut PieceCache<K, N>, key: K) -> Option<Vec<u32>> {
    let mut out = vec![];
    cache.push_hit(key, key.hash(), &mut out).then_some(out)
}

/// A cache of `slots` slots at most streams 20 tables' worth of one-off keys
/// while a hot set of a tenth of a table is hit between them: the cache stays
/// within its budget, sweeps, never answers wrong ids, and keeps every hot key.
fn keeps_hot_keys<K: SlotKey, const N: usize>(key_of: impl Fn(u32) -> K) {
    let size = std::mem::size_of::<Slot<K, N>>();
    let slots = 1024;
    let mut cache = PieceCache::<K, N>::new(slots * size);
    assert_eq!(cache.max_slots, slots);
    let hot: Vec<u32> = (0..slots as u32 / 10).collect();
    for &n in &hot {
        cache.insert(key_of(n), key_of(n).hash(), &ids_of(n));
    }
    let mut live = FxHashMap::default();
    for n in 1000..1000 + 20 * slots as u32 {
        let key = key_of(n);
        assert_eq!(hit(&mut cache, key), None, "never inserted");
        cache.insert(key, key.hash(), &ids_of(n));
        live.insert(n, key);
        if n % 64 == 0 {
            for &h in &hot {
                assert_eq!(hit(&mut cache, key_of(h)), Some(ids_of(h)), "hot key {h}");
            }
        }
        assert!(cache.slot_count() <= slots, "within the budget");
    }
    let stats = cache.stats();
    assert!(stats.sweeps >= 20, "swept {} times", stats.sweeps);
    assert!(stats.pieces <= 3 * slots / 4);
    assert!(stats.bytes <= slots * size * 5 / 4, "{stats:?}");
    let mut kept = 0;
    for (&n, &key) in &live {
        if let Some(ids) = hit(&mut cache, key) {
            assert_eq!(ids, ids_of(n), "the ids of a kept key");
            kept += 1;
        }
    }
    assert!(
        kept > 0 && kept < live.len(),
        "some one-off keys kept: {kept}"
    );
}

#[test]
fn a_full_cache_evicts_one_off_pieces_and_keeps_the_hot_ones() {
    keeps_hot_keys::<u128, INLINE_IDS>(short_key);
    keeps_hot_keys::<[u128; 2], 7>(mid_key);
}

#[test]
fn a_sweep_keeps_the_longest_lived_when_more_were_hit_than_fit() {
    let mut cache = PieceCache::<u128, INLINE_IDS>::new(1024 * 32);
    // Veterans: hit between several sweeps.
    // 100 veterans: their spilled ids (~380) fit half the spill share (512).
    let veterans: Vec<u32> = (0..100).collect();
    let mut next = 10_000;
    for round in 0..6 {
        for &v in &veterans {
            if round == 0 {
                cache.insert(short_key(v), short_key(v).hash(), &ids_of(v));
            }
            assert_eq!(
                hit(&mut cache, short_key(v)),
                Some(ids_of(v)),
                "veteran {v}"
            );
        }
        // Newcomers until the next sweep; from the second round on each is
        // hit once, and they are more than half a table, so the sweep cannot
        // keep every piece that was hit.
        let sweeps = cache.stats().sweeps;
        while cache.stats().sweeps == sweeps {
            cache.insert(short_key(next), short_key(next).hash(), &ids_of(next));
            if round > 0 {
                assert!(hit(&mut cache, short_key(next)).is_some());
            }
            next += 1;
        }
    }
    for &v in &veterans {
        assert_eq!(
            hit(&mut cache, short_key(v)),
            Some(ids_of(v)),
            "veteran {v}"
        );
    }
}

#[test]
fn sweeps_keep_the_table_spread_out() {
    // Half the keys are hit after insertion: each sweep keeps all of those
    // and only part of the cold ones. Keeping the first ones the sweep met,
    // or picking them by the same hash bits at every sweep, emptied one end
    // of the table and packed the rest: the mean distance reached 10 to 1,800
    // slots (a random table three quarters full: 1.5).
    let mut cache = PieceCache::<u128, INLINE_IDS>::new(1 << 20);
    for n in 0..1_000_000u32 {
        let key = short_key(n);
        cache.insert(key, key.hash(), &[n]);
        if n % 2 == 0 {
            assert!(hit(&mut cache, key).is_some());
        }
    }
    assert!(cache.stats().sweeps > 20);
    let mean = cache.mean_displacement();
    assert!(mean < 2.0, "mean distance from home {mean:.1}");
}

#[test]
fn spilled_ids_stay_within_their_share() {
    let mut cache = PieceCache::<u128, INLINE_IDS>::new(1024 * 32);
    let max_spill_bytes = 1024 * 32 / 8;
    for n in 0..50_000u32 {
        let ids: Vec<u32> = (0..4 + n % 12).map(|k| n + k).collect();
        cache.insert(short_key(n), short_key(n).hash(), &ids);
        if let Some(got) = hit(&mut cache, short_key(n)) {
            assert_eq!(got, ids);
        }
        assert!(cache.stats().bytes <= 1024 * 32 + max_spill_bytes);
    }
}

#[test]
fn a_cache_sized_for_a_text_keeps_its_pieces_and_its_budget() {
    let mut cache = ShortCache::new(DEFAULT_CACHE_BYTES / 2);
    let (initial, budget) = (cache.slot_count(), cache.max_slots);
    let keys: Vec<u128> = (0..1000u32).map(short_key).collect();
    for (n, &key) in keys.iter().enumerate() {
        cache.insert(key, key.hash(), &[n as u32; 5][..1 + n % 5]);
    }
    cache.expect_text_bytes(1000);
    assert_eq!(
        cache.slot_count(),
        initial,
        "a small text needs no more room"
    );
    cache.expect_text_bytes(10_000_000);
    assert_eq!(
        cache.slot_count(),
        1 << 18,
        "~115k pieces at most half full"
    );
    cache.expect_text_bytes(1 << 40);
    assert_eq!(cache.slot_count(), budget, "never past the budget");
    for (n, &key) in keys.iter().enumerate() {
        assert_eq!(
            hit(&mut cache, key).as_deref(),
            Some(&[n as u32; 5][..1 + n % 5])
        );
    }
}

#[test]
fn a_long_cache_stays_within_its_share() {
    let mut cache = LongCache::new(64 << 10);
    for n in 0..10_000u32 {
        let piece = format!("{n:0>40}");
        cache.insert(piece.as_bytes(), &ids_of(n));
        let mut out = vec![];
        assert!(cache.push_hit(piece.as_bytes(), &mut out));
        assert_eq!(out, ids_of(n));
        assert!(cache.bytes <= 64 << 10);
    }
    cache.insert(&[b'a'; 8 << 10], &[1]);
    assert!(
        !cache.push_hit(&[b'a'; 8 << 10], &mut vec![]),
        "too large for the share"
    );
}

#[test]
fn budget_rounds_down_to_a_power_of_two() {
    let old = cache_budget();
    assert_eq!(set_cache_budget(3 << 20), 2 << 20);
    assert_eq!(set_cache_budget(1), MIN_CACHE_BYTES);
    set_cache_budget(old);
}

/// A table below its budget lends the part of its share it does not take
/// to the spill list: pieces of many ids (twice the spill's own share) stay
/// cached with no sweep, and when the table grows into that room the spill
/// is swept back; the bytes never exceed the two shares.
#[test]
fn spilled_ids_borrow_the_room_the_slots_do_not_take() {
    let budget = 1 << 20; // 32k slots; the table starts at 16k
    let mut cache = PieceCache::<u128, INLINE_IDS>::new(budget);
    let shares = budget + budget / 8;
    let ids_of = |n: u32| (0..40).map(|k| n + k).collect::<Vec<u32>>();
    let pieces = 2 * (budget / 32) as u32 / 40 + 1;
    for n in 0..pieces {
        cache.insert(short_key(n), short_key(n).hash(), &ids_of(n));
        assert!(cache.stats().bytes <= shares);
    }
    assert_eq!(cache.stats().sweeps, 0);
    for n in 0..pieces {
        assert_eq!(hit(&mut cache, short_key(n)), Some(ids_of(n)));
    }
    for n in pieces..pieces + 20_000 {
        cache.insert(short_key(n), short_key(n).hash(), &[n]);
        assert!(cache.stats().bytes <= shares);
    }
    assert!(cache.stats().sweeps > 0);
    for n in 0..pieces + 20_000 {
        if let Some(got) = hit(&mut cache, short_key(n)) {
            assert_eq!(got, if n < pieces { ids_of(n) } else { vec![n] });
        }
    }
}

#[test]
fn a_hit_past_home_moves_home_and_every_key_stays_found() {
    // Keys close to half a table of 1024 slots: many sit past their home.
    let mut cache = ShortCache::new(1024 * std::mem::size_of::<Slot<u128, INLINE_IDS>>());
    // Keys in sequence hash to slots in sequence: scrambled instead.
    let scrambled = |n: u32| short_key(n.wrapping_mul(0x2545_F491).rotate_left(13));
    // 1 to 3 ids, inline: no sweep for the spill's share.
    let few_ids = |n: u32| (0..1 + n % 3).map(|k| n * 8 + k).collect::<Vec<u32>>();
    let keys: Vec<u32> = (0..500).collect();
    for &n in &keys {
        let key = scrambled(n);
        cache.insert(key, key.hash(), &few_ids(n));
    }
    assert_eq!((cache.slot_count(), cache.stats().sweeps), (1024, 0));
    assert!(
        cache.mean_displacement() > 0.05,
        "{}",
        cache.mean_displacement()
    );
    // Hit every key in a scrambled order, twice: each lands in its home slot
    // (inline ids seen there by the hit loop's view), and no other key is lost.
    for round in 0..2u32 {
        for step in 0..keys.len() as u32 {
            let n = (step * 263 + round * 7) % keys.len() as u32;
            let key = scrambled(n);
            let mut out = vec![];
            assert!(cache.push_hit_home(key, key.hash(), &mut out), "key {n}");
            assert_eq!(out, few_ids(n));
            let inline = cache.home_slots().inline_ids(key, key.hash());
            let (lanes, count) = inline.expect("at home after its hit");
            assert_eq!(lanes[..count], few_ids(n));
        }
        for &n in &keys {
            assert_eq!(hit(&mut cache, scrambled(n)), Some(few_ids(n)), "key {n}");
        }
    }
}
