//! Unit tests of the encoder: the id-pair merges against the byte-slice
//! heap merge on random tables, caches, decoding, dropout, special tokens.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::cache::{HotPairs, Scratch};
use super::merge::{merge_by_rank, merge_long, merge_short};
use super::tables::PairTable;
use super::*;

fn toy() -> Encoder {
    // merges: (a,b)->ab rank0, (ab,c)->abc rank1
    let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
    tokens.push((b"ab".to_vec(), 256));
    tokens.push((b"abc".to_vec(), 257));
    Encoder::new(
        tokens,
        vec![b"ab".to_vec(), b"abc".to_vec()],
        vec![("<|e|>".into(), 258)],
        "gpt2",
    )
    .unwrap()
}

fn scratch_for(e: &Encoder) -> Scratch {
    Scratch::new(e.tag)
}

/// Part boundaries by the byte-slice heap merge.
fn byte_merge_bounds(e: &Encoder, piece: &[u8]) -> Vec<usize> {
    merge_by_rank(piece, |bytes| e.vocab.ranks.get(bytes), || false)
}

/// Ids by the byte-slice heap merge: the reference for the id-pair merges.
fn ids_by_byte_merge(e: &Encoder, piece: &[u8]) -> Vec<u32> {
    let mut ids = vec![];
    e.push_parts(piece, &byte_merge_bounds(e, piece), &mut ids)
        .unwrap();
    ids
}

/// Both id-pair merges (forced, whatever the length) and `encode_piece`.
fn ids_by_pair_merges(e: &Encoder, piece: &[u8]) -> [Vec<u32>; 3] {
    let (mut short, mut long, mut whole) = (vec![], vec![], vec![]);
    merge_short(
        &e.vocab.pair_ranks,
        piece,
        &mut vec![],
        &mut HotPairs::empty(),
        &mut short,
    );
    assert!(merge_long(&e.vocab.pair_ranks, piece, &mut long, None));
    e.encode_piece(piece, &mut scratch_for(e), &mut whole)
        .unwrap();
    [short, long, whole]
}

/// A random table over the bytes `a..=d`: byte ids scrambled (so ids and bytes
/// differ), each merge the concatenation of two earlier tokens; with
/// `shuffle` the ranks are then permuted, giving tables no trainer makes
/// (a merge can create a pair of lower rank than its own).
fn random_table(rng: &mut Xoshiro256PlusPlus, n_merges: usize, shuffle: bool) -> Encoder {
    let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8)
        .map(|b| (vec![b], (b as u32 * 7 + 3) % 256))
        .collect();
    let mut merged: Vec<Vec<u8>> = vec![];
    let mut pool: Vec<Vec<u8>> = (b'a'..=b'd').map(|b| vec![b]).collect();
    while merged.len() < n_merges {
        let left = &pool[rng.random_range(0..pool.len())];
        let right = &pool[rng.random_range(0..pool.len())];
        let token = [left.as_slice(), right.as_slice()].concat();
        if token.len() <= 12 && !pool.contains(&token) {
            pool.push(token.clone());
            merged.push(token);
        }
    }
    if shuffle {
        for i in (1..merged.len()).rev() {
            merged.swap(i, rng.random_range(0..=i));
        }
    }
    tokens.extend(
        merged
            .iter()
            .enumerate()
            .map(|(r, t)| (t.clone(), 256 + r as u32)),
    );
    Encoder::new(tokens, merged, vec![], "gpt2").unwrap()
}

#[test]
fn id_pair_merges_equal_byte_merge_on_random_tables() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    for table in 0..40 {
        let e = random_table(&mut rng, 60, table % 2 == 1);
        for _ in 0..50 {
            let len = rng.random_range(1..300);
            let piece: Vec<u8> = (0..len).map(|_| b"abcd"[rng.random_range(0..4)]).collect();
            let want = ids_by_byte_merge(&e, &piece);
            for got in ids_by_pair_merges(&e, &piece) {
                assert_eq!(
                    got,
                    want,
                    "table {table} piece {:?}",
                    String::from_utf8_lossy(&piece)
                );
            }
        }
    }
}

#[test]
fn long_merge_takes_a_lower_rank_pair_first() {
    // bc merges first (rank 1), then a+bc is abc (rank 0, below 1).
    let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
    tokens.extend([
        (b"abc".to_vec(), 256),
        (b"bc".to_vec(), 257),
        (b"abcabc".to_vec(), 258),
    ]);
    let e = Encoder::new(
        tokens,
        vec![b"abc".to_vec(), b"bc".to_vec(), b"abcabc".to_vec()],
        vec![],
        "gpt2",
    )
    .unwrap();
    let piece = b"abcabcabc";
    assert_eq!(ids_by_byte_merge(&e, piece), [258, 256]);
    assert_eq!(
        ids_by_pair_merges(&e, piece),
        [[258, 256], [258, 256], [258, 256]]
    );
}

#[test]
fn one_repeated_byte_merges_left_to_right() {
    let e = toy();
    let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
    tokens.extend([
        (b"aa".to_vec(), 256),
        (b"aaaa".to_vec(), 257),
        (b"aaa".to_vec(), 258),
    ]);
    let runs = Encoder::new(
        tokens,
        vec![b"aa".to_vec(), b"aaaa".to_vec(), b"aaa".to_vec()],
        vec![],
        "gpt2",
    )
    .unwrap();
    for n in [1, 2, 3, 5, 127, 128, 1001] {
        let piece = vec![b'a'; n];
        assert_eq!(
            ids_by_pair_merges(&runs, &piece)[1],
            ids_by_byte_merge(&runs, &piece),
            "n={n}"
        );
    }
    let piece: Vec<u8> = b"abcabxababcab"
        .iter()
        .cycle()
        .take(1000)
        .copied()
        .collect();
    assert_eq!(
        ids_by_pair_merges(&e, &piece)[1],
        ids_by_byte_merge(&e, &piece)
    );
}

#[test]
fn cached_pieces_give_the_same_ids_across_calls_and_encoders() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let tables = [
        random_table(&mut rng, 60, false),
        random_table(&mut rng, 60, true),
    ];
    let words: Vec<String> = (0..200)
        .map(|_| {
            (0..rng.random_range(1..20))
                .map(|_| "abcd".as_bytes()[rng.random_range(0..4)] as char)
                .collect()
        })
        .collect();
    let text = (0..3000)
        .map(|_| words[rng.random_range(0..words.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for round in 0..3 {
        // The two encoders take turns on this thread's cache.
        for e in &tables {
            let mut want = vec![];
            e.pre_tokenizer()
                .for_each_piece(&text, |piece| match e.vocab.ids.get(piece.as_bytes()) {
                    Some(id) => want.push(id),
                    None => want.extend(ids_by_byte_merge(e, piece.as_bytes())),
                })
                .unwrap();
            let mut got = vec![];
            e.encode_ordinary_into(&text, &mut got).unwrap();
            assert_eq!(got, want, "round {round}");
        }
    }
}

#[test]
fn packed_and_wide_pair_tables_agree() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let mut pairs: Vec<(u32, u32, u32)> = (0..5000)
        .map(|r| (rng.random_range(0..3000), rng.random_range(0..3000), r))
        .collect();
    pairs.sort_by_key(|&(l, r, _)| (l, r));
    pairs.dedup_by_key(|p| (p.0, p.1));
    let packed = PairTable::new(&pairs, 3000);
    let wide = PairTable::new(&pairs, 1 << 22);
    assert!(matches!(packed, PairTable::Packed { .. }) && matches!(wide, PairTable::Wide(_)));
    for &(l, r, rank) in &pairs {
        assert_eq!((packed.get(l, r), wide.get(l, r)), (rank, rank));
    }
    for _ in 0..20000 {
        let (l, r) = (rng.random_range(0..3100), rng.random_range(0..3100));
        assert_eq!(packed.get(l, r), wide.get(l, r));
    }
}

#[test]
fn decode_joins_short_long_and_special_tokens() {
    let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
    tokens.push((b"fifteen bytes!!".to_vec(), 256));
    tokens.push((b"sixteen bytes!!!".to_vec(), 257));
    let e = Encoder::new(tokens, vec![], vec![("<|e|>".into(), 1 << 31)], "gpt2").unwrap();
    let ids = [104, 256, 257, 1 << 31, 0, 105];
    assert_eq!(
        e.decode_bytes(&ids).unwrap(),
        b"hfifteen bytes!!sixteen bytes!!!<|e|>\x00i"
    );
    assert_eq!(e.decode_bytes(&[104, 258]), Err(UnknownId(258)));
    assert_eq!(e.decode_bytes(&[-1]), Err(UnknownId(-1)));
}

#[test]
fn byte_without_a_token_is_an_error() {
    let tokens: Vec<(Vec<u8>, u32)> = (0..=254u8).map(|b| (vec![b], b as u32)).collect();
    let e = Encoder::new(tokens, vec![], vec![], "gpt2").unwrap();
    let err = e
        .encode_piece(b"ab\xff", &mut scratch_for(&e), &mut vec![])
        .unwrap_err()
        .to_string();
    assert!(err.contains("[255]"), "{err}");
}

#[test]
fn dropout_zero_is_encode_and_any_p_round_trips() {
    let e = toy();
    let text = "abcab abc<|e|>xabcabcab";
    let all = vec!["<|e|>".to_string()];
    let plain = e.encode(text, &all, &[]).unwrap();
    assert_eq!(
        e.encode_with_dropout(text, &all, &[], 0.0, 7).unwrap(),
        plain
    );
    for (p, seed) in [(0.1, 1), (0.5, 2), (0.99, 3)] {
        let ids = e.encode_with_dropout(text, &all, &[], p, seed).unwrap();
        let ids64: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
        assert_eq!(e.decode_bytes(&ids64).unwrap(), text.as_bytes());
        assert_eq!(
            e.encode_with_dropout(text, &all, &[], p, seed).unwrap(),
            ids
        );
        assert!(ids.len() >= plain.len());
    }
}

#[test]
fn dropout_near_one_leaves_bytes_and_small_p_matches_heap_mostly() {
    let e = toy();
    let piece: Vec<u8> = b"abcab".iter().cycle().take(500).copied().collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
    // p close to 1: almost every merge is dropped
    let bounds = merge_by_rank(&piece, |b| e.vocab.ranks.get(b), || rng.random_bool(0.999));
    assert!(bounds.len() > 450);
    // p tiny: the same parts as the deterministic merge
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
    let bounds = merge_by_rank(&piece, |b| e.vocab.ranks.get(b), || rng.random_bool(1e-12));
    assert_eq!(bounds, byte_merge_bounds(&e, &piece));
}

#[test]
fn special_tokens_follow_policy() {
    let e = toy();
    let all = vec!["<|e|>".to_string()];
    let err = e.encode("x<|e|>", &[], &all);
    assert!(matches!(
        err,
        Err(EncodeError::Disallowed(DisallowedSpecial { offset: 1, .. }))
    ));
    assert!(e.encode("<|e|>", &[], &[]).unwrap().len() > 1);
    assert_eq!(e.encode("abc<|e|>", &all, &[]).unwrap(), [257, 258]);
}

#[test]
fn a_long_merge_stops_when_cancelled() {
    let merged = vec![b"aa".to_vec(), b"aaaa".to_vec()];
    let enc = Encoder::from_merged(merged, &[], "gpt2").unwrap();
    let text = "a".repeat(1 << 20);
    let progress = crate::Progress::default();
    let mut out = vec![];
    assert!(super::cancellable(&progress, || enc.encode_ordinary_into(&text, &mut out)).is_ok());
    assert_eq!(out, vec![257; text.len() / 4]);
    progress.cancel();
    let result = super::cancellable(&progress, || enc.encode_ordinary_into(&text, &mut out));
    assert!(matches!(result, Err(EncodeError::Cancelled)));
    // The flag belongs to the call: the next encode on this thread runs to the end.
    assert!(enc.encode_ordinary_into(&text, &mut vec![]).is_ok());
}

#[test]
fn encoding_a_distinct_word_gives_the_ids_of_encoding_it() {
    // Lengths across the paths of `encode_piece`: pairs, short, mid, long.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let e = random_table(&mut rng, 60, false);
    for len in [0, 1, 2, 3, 9, 15, 16, 31, 32, 200] {
        let word: Vec<u8> = (0..len).map(|_| b"abcd"[rng.random_range(0..4)]).collect();
        let (mut want, mut got) = (vec![], vec![]);
        e.encode_word_into(&word, &mut want).unwrap();
        e.encode_distinct_into(&word, &mut got).unwrap();
        assert_eq!(got, want, "word {:?}", String::from_utf8_lossy(&word));
    }
    let tokens: Vec<(Vec<u8>, u32)> = (0..=254u8).map(|b| (vec![b], b as u32)).collect();
    let e = Encoder::new(tokens, vec![], vec![], "gpt2").unwrap();
    for word in [&b"\xff"[..], b"ab\xff", b"abcdefghijklmnopqrstuvwxyz\xff"] {
        assert!(e.encode_distinct_into(word, &mut vec![]).is_err());
    }
}

#[test]
fn whitespace_runs_are_merged_whole_without_the_word_by_word_tables() {
    // "\n  " has a cut (a space after the newline) but no words, nor has
    // " \u{a0} " (no-break space, as enwiki has): merging them
    // word by word built `Seams` (the BPE of every merged token) for nothing.
    let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
    tokens.push((b"  ".to_vec(), 256));
    tokens.push((b"\n ".to_vec(), 257));
    let merged = vec![b"  ".to_vec(), b"\n ".to_vec()];
    let e = Encoder::new(tokens, merged, vec![], "gpt2").unwrap();
    let text = "a\n   b\n\n    c \n  d\t \n     x \u{a0} \u{a0}y\u{3000} z";
    let mut want = vec![];
    e.pre_tokenizer()
        .for_each_piece(text, |piece| {
            want.extend(ids_by_byte_merge(&e, piece.as_bytes()))
        })
        .unwrap();
    let mut got = vec![];
    e.encode_ordinary_into(text, &mut got).unwrap();
    assert_eq!(got, want);
    assert!(want.contains(&256) && want.contains(&257));
    assert!(!e.vocab.word_tables_built());
    for (piece, spans) in [
        (" by the", true),
        ("é b", true),
        (" \u{a0} ", false),
        ("\n\t  ", false),
    ] {
        assert_eq!(
            super::superwords::spans_words(piece.as_bytes()),
            spans,
            "{piece:?}"
        );
    }
}
