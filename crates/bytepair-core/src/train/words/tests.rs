//! Tests of merging a pair inside a word.

use super::*;

#[test]
fn overlapping_pairs_merge_left_to_right() {
    let mut w: Vec<u32> = vec![1, 1, 1];
    let mut seams = vec![];
    let n = merge_in_word(&mut w, (1, 1), 9, |s| seams.push(s));
    assert_eq!(w[..n], [9, 1]);
    assert_eq!(seams, [Seam::Right(1)]);
}

#[test]
fn seams_see_earlier_merges_in_the_word() {
    let mut w: Vec<u16> = vec![5, 1, 2, 1, 2, 7];
    let mut seams = vec![];
    let n = merge_in_word(&mut w, (1, 2), 9, |s| seams.push(s));
    assert_eq!(w[..n], [5, 9, 9, 7]);
    assert_eq!(
        seams,
        [Seam::Left(5), Seam::Right(1), Seam::Left(9), Seam::Right(7)]
    );
}

#[test]
fn the_pair_is_matched_in_order_whatever_the_symbol_width() {
    // `a` without `b` after it, `b a`, and ids past 16 bits.
    for (a, b) in [(1u32, 2u32), (70_000, 5), (5, 70_000)] {
        let mut w: Vec<u32> = vec![b, a, a, b, a, 3, b];
        let mut seams = vec![];
        let n = merge_in_word(&mut w, (a, b), 9, |s| seams.push(s));
        assert_eq!(w[..n], [b, a, 9, a, 3, b]);
        assert_eq!(seams, [Seam::Left(a), Seam::Right(a)]);
    }
    // Pairs whose two ids overlap if packed in too few bits.
    let mut w: Vec<u32> = vec![0, 1];
    assert_eq!(merge_in_word(&mut w, (0x1_0000, 0), 9, |_| {}), 2);
    let mut w: Vec<u16> = vec![2, 1, 1, 2];
    assert_eq!(merge_in_word(&mut w, (2, 1), 9, |_| {}), 3);
    assert_eq!(w[..3], [9, 1, 2]);
    assert_eq!(merge_in_word(&mut w[..3], (2, 1), 8, |_| {}), 3);
}
