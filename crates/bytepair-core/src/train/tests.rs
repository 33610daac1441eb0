//! The merge loop against a full recount at every step, limits included.

use super::*;
use crate::count::WordCounts;

fn learn(words: &[(&str, u64)], n: usize) -> Vec<String> {
    let wc: WordCounts = words
        .iter()
        .map(|(w, c)| (w.as_bytes().to_vec(), *c))
        .collect();
    let t = train(wc, n, &Progress::default()).unwrap();
    t.merged_tokens()
        .into_iter()
        .map(|b| String::from_utf8(b).unwrap())
        .collect()
}

#[test]
fn counts_standing_for_2_64_bytes_are_refused_before_training() {
    let wc: WordCounts = [(b"ab".to_vec(), 1u64 << 62), (b"cd".to_vec(), 1u64 << 62)]
        .into_iter()
        .collect();
    let err = train(wc, 10, &Progress::default()).unwrap_err();
    assert_eq!(
        err,
        TrainError::CountsTooLarge {
            total_bytes: 1u128 << 64
        }
    );
    let wc: WordCounts = [(b"ab".to_vec(), (1u64 << 63) - 1)].into_iter().collect();
    assert_eq!(
        train(wc, 10, &Progress::default()).unwrap().merges[0].count,
        (1u64 << 63) - 1
    );
}

/// The merges by recounting every pair of every word at each step (the
/// textbook loop), with the same tie-break, as token byte strings.
fn learn_by_recounting(words: &[(Vec<u8>, u64)], n: usize) -> Vec<Vec<u8>> {
    learn_by_recounting_with(words, n, &TrainOptions::default())
}

/// `learn_by_recounting` within `options`: pairs too long left out, stop below min_frequency.
fn learn_by_recounting_with(
    words: &[(Vec<u8>, u64)],
    n: usize,
    options: &TrainOptions,
) -> Vec<Vec<u8>> {
    let max_len = options.max_token_length.unwrap_or(usize::MAX);
    let mut words: Vec<(Vec<Vec<u8>>, u64)> = words
        .iter()
        .map(|(w, c)| (w.iter().map(|&b| vec![b]).collect(), *c))
        .collect();
    let mut out = vec![];
    while out.len() < n {
        let mut counts: std::collections::BTreeMap<(Vec<u8>, Vec<u8>), u64> = Default::default();
        for (w, c) in &words {
            for p in w.windows(2) {
                if p[0].len() + p[1].len() <= max_len {
                    *counts.entry((p[0].clone(), p[1].clone())).or_default() += c;
                }
            }
        }
        let Some((best, top)) = counts
            .into_iter()
            .max_by(|x, y| x.1.cmp(&y.1).then(x.0.cmp(&y.0)))
        else {
            break;
        };
        if top < options.min_frequency {
            break;
        }
        let merged = [best.0.clone(), best.1.clone()].concat();
        for (w, _) in &mut words {
            let mut i = 0;
            while i + 1 < w.len() {
                if w[i] == best.0 && w[i + 1] == best.1 {
                    w[i] = merged.clone();
                    w.remove(i + 1);
                }
                i += 1;
            }
        }
        out.push(merged);
    }
    out
}

/// A seeded xorshift stream: `next(m)` is a number below `m`.
fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |m| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    }
}

/// 60 words of up to `max_len` letters of `letters`, each counted one of `counts`.
fn generated_words(
    next: &mut impl FnMut(u64) -> u64,
    letters: &[u8],
    max_len: u64,
    counts: [u64; 4],
) -> WordCounts {
    let mut words = WordCounts::default();
    for _ in 0..60 {
        let len = 1 + next(max_len) as usize;
        let word: Vec<u8> = (0..len)
            .map(|_| letters[next(letters.len() as u64) as usize])
            .collect();
        *words.entry(word).or_default() += counts[next(4) as usize];
    }
    words
}

#[test]
fn merges_equal_a_full_recount_on_generated_words() {
    // Few letters and counts spread over four orders of magnitude: many
    // ties, repeats like `abab`, and pairs that wait in the buckets.
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    for _ in 0..20 {
        let counts = generated_words(&mut next, b"abcd", 7, [1, 3, 40, 700]);
        let words: Vec<(Vec<u8>, u64)> = counts.iter().map(|(w, c)| (w.clone(), *c)).collect();
        let expected = learn_by_recounting(&words, 40);
        let trained = train(counts.clone(), 40, &Progress::default()).unwrap();
        assert_eq!(trained.merged_tokens(), expected, "words {words:?}");
        // More merges than 16-bit ids hold: the words are stored as u32.
        let wide = train(counts, 70_000, &Progress::default()).unwrap();
        assert!(!Run {
            token_bytes: vec![vec![]; 256],
            taken: Default::default(),
            single_tokens: 0,
            num_merges: 70_000,
            max_chars: usize::MAX,
            rules: None,
        }
        .fits::<u16>());
        assert_eq!(
            wide.merged_tokens()[..expected.len()],
            expected[..],
            "words {words:?}"
        );
    }
}

#[test]
fn limits_equal_a_full_recount_on_generated_words() {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    for round in 0..30 {
        let counts = generated_words(&mut next, b"abc", 9, [1, 2, 5, 90]);
        let options = TrainOptions {
            min_frequency: [0, 3, 40][round % 3],
            max_token_length: [None, Some(2), Some(3), Some(5)][round % 4],
        };
        let words: Vec<(Vec<u8>, u64)> = counts.iter().map(|(w, c)| (w.clone(), *c)).collect();
        let expected = learn_by_recounting_with(&words, 40, &options);
        let trained = train_with(counts, 40, &options, &Progress::default()).unwrap();
        assert_eq!(
            trained.merged_tokens(),
            expected,
            "words {words:?}, {options:?}"
        );
        assert_eq!(trained.stopped_early(), expected.len() < 40);
    }
}

#[test]
fn min_frequency_stops_with_its_reason() {
    let wc: WordCounts = [(b"ab".to_vec(), 5), (b"cd".to_vec(), 2)]
        .into_iter()
        .collect();
    let options = TrainOptions {
        min_frequency: 3,
        max_token_length: None,
    };
    let t = train_with(wc, 10, &options, &Progress::default()).unwrap();
    assert_eq!(t.merged_tokens(), [b"ab".to_vec()]);
    assert_eq!(t.stop, Stop::BelowMinFrequency);
}

#[test]
fn hugging_face_course_example() {
    let got = learn(
        &[
            ("hug", 10),
            ("pug", 5),
            ("pun", 12),
            ("bun", 4),
            ("hugs", 5),
        ],
        4,
    );
    assert_eq!(got, ["ug", "un", "hug", "pun"]);
}

#[test]
fn back_to_back_occurrences_leave_no_phantom_pair() {
    // a b a b -> ab ab: the seam after the first ab briefly counts
    // (ab, a), which the second takes back. Were it kept, a bogus
    // "aba" would be merged after "abab" instead of stopping.
    assert_eq!(learn(&[("abab", 5)], 3), ["ab", "abab"]);
    // (b, a) loses both its occurrences: one left of the first ab and
    // one between the two.
    assert_eq!(learn(&[("babab", 3), ("ab", 1)], 3), ["ab", "bab", "babab"]);
}

#[test]
fn stops_early_when_no_pair_is_left() {
    let t = train(
        [(b"ab".to_vec(), 3)].into_iter().collect::<WordCounts>(),
        10,
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(t.merges.len(), 1);
    assert_eq!(t.stop, Stop::NoPairLeft);
}

#[test]
fn training_on_a_tally_equals_training_on_its_map() {
    let pre = crate::PreTokenizer::new("gpt2", &[]).unwrap();
    let text: String = (0..4000)
        .map(|i| format!(" the w{} of {} ab{}", i % 97, "xy".repeat(i % 11), i % 7))
        .collect();
    let mut tally = crate::count::WordTally::default();
    tally.add_text(&pre, &text).unwrap();
    tally.add(b"a-word-longer-than-fifteen-bytes", 40);
    let mut map = WordCounts::default();
    crate::count::count_text(&pre, &text, &mut map).unwrap();
    crate::count::add_word(&mut map, b"a-word-longer-than-fifteen-bytes", 40);
    let from_tally = train(tally, 100, &Progress::default()).unwrap();
    let from_map = train(map, 100, &Progress::default()).unwrap();
    assert_eq!(from_tally.merges.len(), 100);
    let key = |t: &Trained| {
        t.merges
            .iter()
            .map(|m| (m.left, m.right, m.count))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (key(&from_tally), from_tally.tokens),
        (key(&from_map), from_map.tokens)
    );
}

#[test]
fn leaving_rare_pairs_out_keeps_the_merges() {
    // Pairs made below `below` are left out from the first merge on; with a
    // high `below` the best indexed pair soon falls under it and the words
    // are counted again. The merges are the full recount's either way.
    let mut next = xorshift(0x5851_f42d_4c95_7f2d);
    for below in [0, 2, 5, 50, 1 << 20] {
        let counts = generated_words(&mut next, b"abcd", 7, [1, 3, 40, 700]);
        let words: Vec<(Vec<u8>, u64)> = counts.iter().map(|(w, c)| (w.clone(), *c)).collect();
        let expected = learn_by_recounting(&words, 40);
        let (w, freqs) = Words::<u16>::from_counts(&counts);
        let bytes = (0..=255u8).map(|b| vec![b]).collect();
        let options = TrainOptions::default();
        let mut t = Trainer::new(w, freqs, bytes, Default::default(), &options, usize::MAX);
        t.rare.below = below;
        let progress = Progress::default();
        let (merges, stop, tokens) =
            super::warm::with_warm_pool(|w| super::learn(t, (0, 40), &options, &progress, w))
                .unwrap();
        let trained = Trained {
            merges,
            stop,
            tokens,
        };
        assert_eq!(
            trained.merged_tokens(),
            expected,
            "below {below}, words {words:?}"
        );
    }
}

#[test]
fn merges_split_over_threads_equal_a_full_recount() {
    // Thousands of words, so that the first merges hold over a thousand of
    // them and are split in parts over the threads (`merge_words`), each
    // part's changes added up after (and the tables emptied for the next
    // split). Every pool must give the recount's merges.
    let mut next = xorshift(0x1405_7b7e_f767_814f);
    let mut counts = WordCounts::default();
    for _ in 0..250 {
        for (word, count) in generated_words(&mut next, b"abcde", 9, [1, 2, 7, 300]) {
            *counts.entry(word).or_default() += count;
        }
    }
    let words: Vec<(Vec<u8>, u64)> = counts.iter().map(|(w, c)| (w.clone(), *c)).collect();
    let expected = learn_by_recounting(&words, 60);
    let holding_first = words
        .iter()
        .filter(|(w, _)| w.windows(2).any(|p| p == &expected[0][..]))
        .count();
    assert!(
        holding_first >= 1024,
        "the first merge holds {holding_first} words"
    );
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let trained = pool
            .install(|| train(counts.clone(), 60, &Progress::default()))
            .unwrap();
        assert_eq!(trained.merged_tokens(), expected, "{threads} threads");
    }
}
