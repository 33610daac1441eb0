use super::*;
use crate::pretokenize::PreTokenizer;

fn tally_of(text: &str) -> WordTally {
    let mut tally = WordTally::new(super::super::DEFAULT_MAX_WORD_BYTES);
    tally
        .add_text(&PreTokenizer::new("gpt2", &[]).unwrap(), text)
        .unwrap();
    tally
}

#[test]
fn integer_weights_scale_exactly() {
    let big = (1u64 << 53) + 1; // not an f64
    assert_eq!(Weight::new(3.0).unwrap().scale(big), Some(3 * big));
    assert_eq!(Weight::new(1.0).unwrap().scale(u64::MAX), Some(u64::MAX));
    assert_eq!(Weight::new(0.0).unwrap().scale(u64::MAX), Some(0));
}

#[test]
fn other_weights_round_halves_away_from_zero() {
    let half = Weight::new(0.5).unwrap();
    assert_eq!(
        [1, 2, 3, 5, 7].map(|c| half.scale(c)),
        [1, 1, 2, 3, 4].map(Some)
    );
    assert_eq!(Weight::new(0.25).unwrap().scale(1), Some(0));
    assert_eq!(Weight::new(1.5).unwrap().scale(3), Some(5));
}

#[test]
fn a_weighted_count_reaching_2_pow_64_is_an_overflow() {
    assert_eq!(Weight::new(2.0).unwrap().scale(1 << 63), None);
    assert_eq!(
        Weight::new(2.0).unwrap().scale((1 << 63) - 1),
        Some(u64::MAX - 1)
    );
    assert_eq!(Weight::new(1.5).unwrap().scale(u64::MAX / 4 * 3), None);
    // 2^64 itself is an integer the exact path cannot hold: the float path refuses it.
    assert_eq!(Weight::new(TWO_POW_64).unwrap().scale(1), None);
    assert_eq!(Weight::new(TWO_POW_64).unwrap().scale(0), Some(0));
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(Weight::new(bad), Err(ScaleError::BadWeight(_))));
    }
    let mut a = Accumulator::default();
    let mut b = Accumulator::default();
    b.settled().insert(b"w".to_vec(), 1 << 63);
    let e = a.add_scaled(&mut b, 2.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("word [119]: count {} x weight 2 reaches 2**64", 1u64 << 63)
    );
}

#[test]
fn add_scaled_sums_into_the_counts_and_empties_the_other() {
    let mut a = Accumulator::default();
    a.add_tally(tally_of("a b b"));
    let mut b = Accumulator::default();
    b.add_tally(tally_of("a b c c c"));
    a.add_scaled(&mut b, 0.5).unwrap();
    assert_eq!(
        a.sorted(),
        [(&b" b"[..], 3), (&b" c"[..], 2), (&b"a"[..], 2)]
    );
    assert!(b.is_empty());
    assert_eq!(a.total(), 7);
}

#[test]
fn files_and_texts_alone_are_taken_as_a_tally() {
    let mut a = Accumulator::default();
    a.add_tally(tally_of("x y"));
    a.add_tally(tally_of("x"));
    assert_eq!((a.len(), a.total()), (2, 3));
    assert!(matches!(a.take(), Accumulated::Tally(t) if t.total() == 3));
    assert!(a.is_empty());
    a.add_tally(tally_of("x y"));
    a.settled().insert(b"z".to_vec(), 5);
    match a.take() {
        Accumulated::Counts(c) => assert_eq!((c.len(), c[&b"z"[..]]), (3, 5)),
        _ => panic!("counts were added as byte strings"),
    }
}

/// One part's rows: (data, offsets, counts).
fn part(rows: &[(&str, i64)]) -> (Vec<u8>, Vec<i64>, Vec<i64>) {
    let mut part = (vec![], vec![0], vec![]);
    for &(w, n) in rows {
        part.0.extend_from_slice(w.as_bytes());
        part.1.push(part.0.len() as i64);
        part.2.push(n);
    }
    part
}

#[test]
fn rows_alone_are_taken_as_rows_and_mixed_ones_are_summed() {
    let cost = TrainingCost::default();
    let (d, o, c) = part(&[(" a", 2), (" b", 5)]);
    let mut a = Accumulator::default();
    a.add_rows((&d, &o, &c), None, cost, BeyondBudget::Drop)
        .unwrap();
    assert_eq!((a.len(), a.total()), (2, 7));
    assert!(matches!(a.take(), Accumulated::Rows(r) if r.total() == 7));
    a.add_rows((&d, &o, &c), None, cost, BeyondBudget::Drop)
        .unwrap();
    a.add_tally(tally_of(" a x"));
    assert_eq!(
        a.sorted(),
        [(&b" b"[..], 5), (&b" a"[..], 3), (&b" x"[..], 1)]
    );
}

/// Two letters naming `i` (below 676): "aa", "ab", ... (letters only, so a
/// word ending in them stays one pre-token).
fn two_letters(i: usize) -> String {
    [i / 26 % 26, i % 26]
        .map(|k| char::from(b'a' + k as u8))
        .iter()
        .collect()
}

#[test]
fn a_training_budget_keeps_the_most_frequent_words() {
    // Word i (letters only: one pre-token) is counted 1 + i % 7 times.
    let word = |i: usize| format!(" w{}", two_letters(i));
    let mut a = Accumulator::default();
    let text: String = (0..600).map(|i| word(i).repeat(1 + i % 7)).collect();
    a.add_tally(tally_of(&text));
    let cost = TrainingCost::default();
    // Room for the words counted 5 times or more.
    let kept = (0..600).filter(|i| i % 7 >= 4);
    let room = kept.clone().map(|i| cost.of(word(i).len())).sum();
    a.fit_training_budget(room, cost, BeyondBudget::Drop);
    let pruned = a.pruned();
    assert_eq!((pruned.min_count, a.len()), (5, kept.count()));
    assert_eq!(pruned.words as usize + a.len(), 600);
}

#[test]
fn a_folding_training_budget_keeps_the_pieces_of_the_words_it_drops() {
    // " the" 2000 times, and 600 words " xylophone" + letters seen once.
    let rare = |i: usize| format!(" xylophone{}", two_letters(i));
    let text: String = " the".repeat(2000) + &(0..600).map(rare).collect::<String>();
    let cost = TrainingCost::default();
    let room = cost.of(4) + 50 * cost.of(8);
    for fold in [false, true] {
        let mut a = Accumulator::default();
        a.add_tally(tally_of(&text));
        let keep = if fold {
            BeyondBudget::Fold
        } else {
            BeyondBudget::Drop
        };
        a.fit_training_budget(room, cost, keep);
        let pruned = a.pruned();
        assert_eq!((pruned.words, pruned.pre_tokens), (600, 600), "fold {fold}");
        let kept: Vec<(Vec<u8>, u64)> = a
            .sorted()
            .into_iter()
            .map(|(w, n)| (w.to_vec(), n))
            .collect();
        let want: &[(&[u8], u64)] = if fold {
            &[(b" the", 2000), (b" xylopho", 600)]
        } else {
            &[(b" the", 2000)]
        };
        let want: Vec<(Vec<u8>, u64)> = want.iter().map(|(w, n)| (w.to_vec(), *n)).collect();
        assert_eq!(kept, want, "fold {fold}");
    }
}

#[test]
fn the_budget_holds_across_calls() {
    let budget = 64 << 10;
    let mut a = Accumulator::new(Some(budget));
    for k in 0..20 {
        let text: String = (0..2000).map(|i| format!(" w{k}x{i}")).collect();
        a.add_tally(tally_of(&text));
    }
    assert!(super::super::memory_bytes(a.settled()) <= budget / 2);
    assert!(a.pruned().words > 0);
}
