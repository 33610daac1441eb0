//! Recovering a merge table from a rank table (tiktoken's `mergeable_ranks`
//! holds token bytes and ranks, not the merges that made them).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::encode::merge_by_rank;

/// Recover a merge table from tokens in rank order (tiktoken's `mergeable_ranks`
/// without the single bytes, sorted by rank): token `r` must be the merge of the
/// two parts that BPE leaves of its bytes when only tokens `0..r` may be formed.
///
/// Returns, for each token, the byte length of the left part of its merge, or
/// `None` when that BPE leaves one part (an earlier token has the same bytes) or
/// more than two (no merge of lower-ranked tokens reaches it): such a table is not
/// one a BPE trainer produces, and rank-ordered encoding cannot tell its merges.
/// The same check tells whether a merge list `(a, b)` in rank order is consistent
/// with rank-of-concatenation encoding: `result[r] == Some(a.len())` for every `r`.
/// Single-byte tokens give `None`. A token of L bytes costs O(L log L) (the heap
/// merge of `encode::merge_by_rank`); tokens are checked in parallel.
pub fn recover_merges(merged: &[Vec<u8>]) -> Vec<Option<usize>> {
    let mut ranks: FxHashMap<&[u8], u32> = FxHashMap::default();
    for (r, token) in merged.iter().enumerate() {
        ranks.entry(token.as_slice()).or_insert(r as u32);
    }
    merged
        .par_iter()
        .enumerate()
        .map(|(r, token)| {
            // BPE with the ranks below r only: exactly two parts, or no merge makes this token.
            let below = |bytes: &[u8]| ranks.get(bytes).copied().filter(|&rank| rank < r as u32);
            let bounds = merge_by_rank(token, below, || false);
            (bounds.len() == 3).then(|| bounds[1])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::recover_merges;

    fn run(tokens: &[&[u8]]) -> Vec<Option<usize>> {
        recover_merges(&tokens.iter().map(|t| t.to_vec()).collect::<Vec<_>>())
    }

    #[test]
    fn recovers_the_split_that_lower_ranks_give() {
        // "abc": ab (rank 0) merges before bc (rank 1), so abc = ab + c.
        assert_eq!(run(&[b"ab", b"bc", b"abc"]), [Some(1), Some(1), Some(2)]);
        // With bc first, abc = a + bc.
        assert_eq!(run(&[b"bc", b"ab", b"abc"]), [Some(1), Some(1), Some(1)]);
        // Runs of one byte merge left to right: aaa = aa + a; aaaa = aa + aa.
        assert_eq!(run(&[b"aa", b"aaa", b"aaaa"]), [Some(1), Some(2), Some(2)]);
    }

    #[test]
    fn rejects_unreachable_and_duplicate_tokens() {
        // abc with no two-byte token below it: three parts.
        assert_eq!(run(&[b"abc", b"ab"]), [None, Some(1)]);
        // The same bytes twice: the second is formed whole by the first.
        assert_eq!(run(&[b"ab", b"ab"]), [Some(1), None]);
        // A single byte is not a merge.
        assert_eq!(run(&[b"a"]), [None]);
    }

    #[test]
    fn long_tokens_of_one_byte_are_not_quadratic() {
        // Training on a 1 MiB run of one byte learns a^2, a^4, ..., a^(2^20); the
        // old linear scan per merge took minutes on these, this takes milliseconds.
        let tokens: Vec<Vec<u8>> = (1..=20).map(|k| vec![b'a'; 1 << k]).collect();
        let splits = recover_merges(&tokens);
        assert_eq!(splits, (1..=20).map(|k| Some(1usize << (k - 1))).collect::<Vec<_>>());
    }
}
