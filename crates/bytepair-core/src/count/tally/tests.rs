//! WordTally against plain maps: through growth, merging, pruning past 32 bits and presizing; words cut at the key sizes.

use super::*;
use crate::pretokenize::PreTokenizer;

#[test]
fn tally_equals_a_plain_map_through_growth() {
    let pre = PreTokenizer::new("gpt2", &["<|s|>".into()]).unwrap();
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!(
            " w{} x{}<|s|> averyveryverylongword{} ",
            i % 7919,
            i % 13,
            i % 5
        ));
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
fn a_word_bound_below_the_key_sizes_cuts_words_as_split_long_word_does() {
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    let text: String = (0..300)
        .map(|i| {
            format!(
                " {} x{} ünïcödé",
                &"abcdefghijklmnopqrstuvwxyz0123456789".repeat(2)[..5 + i % 37],
                i % 7
            )
        })
        .collect();
    let mut whole = WordTally::default();
    whole.add_text(&pre, &text).unwrap();
    let whole = whole.into_counts();
    for max in [4, 8, 11, 13, 15, 20, 31, 40] {
        let mut want = WordCounts::default();
        for (word, &n) in &whole {
            for piece in crate::count::split_long_word(word, max) {
                crate::count::add_word(&mut want, piece, n);
            }
        }
        let mut tally = WordTally::new(max);
        tally.add_text(&pre, &text).unwrap();
        assert_eq!(tally.into_counts(), want, "max_word_bytes {max}");
    }
}

#[test]
fn merged_tallies_equal_merged_maps() {
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    let text = |k: usize| {
        (0..6000)
            .map(|i| format!(" w{} {}", (i * k) % 4999, "long".repeat(i % 9)))
            .collect::<String>()
    };
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

#[test]
fn counts_past_32_bits_stay_exact_through_merge_growth_and_prune() {
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    let big = u64::from(u32::MAX) - 1;
    let text: String = (0..5000)
        .map(|i| format!(" the w{i} abcdefghijkl{}", i % 3))
        .collect();
    let mut a = WordTally::default();
    a.add(b" the", big);
    a.add(b" w", 1 << 40);
    a.add(b" zero", 0);
    a.add_text(&pre, &text).unwrap();
    let mut b = WordTally::default();
    b.add_text(&pre, &text).unwrap();
    b.add(b" w", big);
    a.merge(b);
    let mut want = WordCounts::default();
    for _ in 0..2 {
        super::super::count_text(&pre, &text, &mut want).unwrap();
    }
    *want.get_mut(&b" the"[..]).unwrap() += big;
    *want.get_mut(&b" w"[..]).unwrap() += (1 << 40) + big;
    want.insert(b" zero".to_vec(), 0);
    assert_eq!(
        (a.len(), a.total()),
        (want.len(), want.values().map(|&n| u128::from(n)).sum())
    );
    assert_eq!(a.clone_counts(), want);
    // Pruning keeps every word seen twice or more (all but " zero"), moved ones too.
    let pruned = a.prune(2);
    assert_eq!((pruned.words, pruned.pre_tokens), (1, 0));
    want.remove(&b" zero"[..]);
    a.add(b" the", 3);
    *want.get_mut(&b" the"[..]).unwrap() += 3;
    assert_eq!(a.len(), want.len());
    assert_eq!(a.into_counts(), want);
}

#[test]
fn a_presized_tally_counts_the_same() {
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    // Words of all three tables: narrow, wide (12-15 bytes), mid (16-31).
    let text: String = (0..20_000)
        .map(|i| {
            format!(
                " w{} x{} abcdefghij{} ünïcödéwörd{}",
                i % 9973,
                i % 31,
                i % 97,
                i % 89
            )
        })
        .collect();
    let mut sized = WordTally::default();
    sized.expect_text_bytes(1 << 30);
    assert!(sized.narrow.len() >= 1 << 20, "sized for a GiB of text");
    let (wide, mid) = (std::mem::size_of::<Wide>(), std::mem::size_of::<Mid>());
    assert!(sized.wide.bytes() > INITIAL_WIDE * wide && sized.mid.bytes() > INITIAL_MID * mid);
    sized.add_text(&pre, &text).unwrap();
    let mut plain = WordTally::default();
    plain.add_text(&pre, &text).unwrap();
    assert_eq!(sized.into_counts(), plain.into_counts());
}

#[test]
fn a_tally_that_expects_more_text_grows_for_the_words_projected() {
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    // Chunks of 1000 new words of 20 bytes each (the mid table), 20 KB:
    // " midword" and the word's number in 12 letters.
    let word = |n: usize| -> String {
        let letters = (0..12).map(|k| (b'a' + (n >> (2 * k) & 3) as u8) as char);
        format!(" midword{}", letters.collect::<String>())
    };
    let chunk = |c: usize| -> String { (0..1000).map(|i| word(c * 1000 + i)).collect() };
    let mut projected = WordTally::default();
    // 20 chunks expected: too little text to size the mid table up front.
    projected.expect_text_bytes(20 * chunk(0).len() as u64);
    assert_eq!(projected.mid.len(), INITIAL_MID);
    let mut plain = WordTally::default();
    for c in 0..5 {
        projected.add_text(&pre, &chunk(c)).unwrap();
        plain.add_text(&pre, &chunk(c)).unwrap();
        if c == 0 {
            // 1000 words: doubling stops at 2048 slots; Heaps' law projects
            // ~12k words from 20 times the text (at most 8x at once).
            assert_eq!(plain.mid.len(), 2048);
            assert_eq!(projected.mid.len(), 8 * INITIAL_MID);
        }
    }
    // Grown once more, at 2000 words: ~11k projected from 3 of 20 chunks.
    assert_eq!(projected.mid.len(), 64 * INITIAL_MID);
    assert_eq!(projected.into_counts(), plain.into_counts());
}

/// Summing tallies of mostly distinct words (SentencePiece units of
/// multilingual text) fills the narrow table up to 3/4, as the parts do,
/// without growing it at the end on one thread; the long words moved over
/// keep their counts and key bytes.
#[test]
fn a_parallel_merge_of_distinct_words_fills_the_narrow_table_without_growing_it() {
    let long = |i: u64| format!("a long word of more than thirty-one bytes {i}").into_bytes();
    let tally = |words: std::ops::Range<u64>| {
        let mut tally = WordTally::default();
        for i in words {
            tally.add(format!("w{i}").as_bytes(), i % 3 + 1);
            if i % 10 == 0 {
                tally.add(&long(i / 10), 2);
            }
        }
        tally
    };
    // 1,800 and 1,100 words, each in 4,096 slots: 2,900 fit at 3/4 full.
    let (mut got, other) = (tally(0..1_800), tally(5_000..6_100));
    assert_eq!((got.narrow.len(), other.narrow.len()), (4096, 4096));
    let mut want = got.clone_counts();
    for (word, n) in other.clone_counts() {
        *want.entry(word).or_insert(0) += n;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| got.merge_parallel(other));
    assert_eq!(got.narrow.len(), 4096, "grown for no word of the sum");
    let long_bytes: usize = got.long_words.keys().map(Vec::len).sum();
    assert_eq!(got.long_bytes, long_bytes);
    assert_eq!(got.into_counts(), want);
}

impl WordTally {
    fn clone_counts(&self) -> WordCounts {
        let mut counts = WordCounts::default();
        self.for_each_word(|w, n| w.with_bytes(|b| crate::count::add_word(&mut counts, b, n)));
        counts
    }
}
