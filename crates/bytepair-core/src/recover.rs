//! Recovering a merge table from a rank table (tiktoken's `mergeable_ranks`
//! holds token bytes and ranks, not the merges that made them).

use crate::shortkey::BytesMap;
use rayon::prelude::*;

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
    let tokens: Vec<&[u8]> = merged.iter().map(Vec::as_slice).collect();
    recover_splits(&tokens)
}

/// `recover_merges` over borrowed tokens.
pub(crate) fn recover_splits(merged: &[&[u8]]) -> Vec<Option<usize>> {
    let mut ranks = BytesMap::with_capacity(merged.len());
    for (r, token) in merged.iter().enumerate() {
        if !token.is_empty() {
            ranks.insert_first(token, r as u32);
        }
    }
    merged
        .par_iter()
        .enumerate()
        .map(|(r, token)| {
            // BPE with the ranks below r only: exactly two parts, or no merge makes this token.
            let below = |bytes: &[u8]| ranks.get(bytes).filter(|&rank| rank < r as u32);
            if token.len() <= SHORT_TOKEN {
                return split_short(token, below);
            }
            let bounds = merge_by_rank(token, below, || false);
            (bounds.len() == 3).then(|| bounds[1])
        })
        .collect()
}

/// Whether a merge table (`pairs`: (left, right) in rank order) passes the
/// loaders' checks: with `vocab`, every merge's parts and result are tokens;
/// with `rank_rule`, no two merges make the same bytes and merge r is what
/// BPE with the merges before it makes of its bytes (`recover_merges`).
/// Splits are recovered on the current rayon pool.
pub fn merge_table_passes(
    pairs: &[(&[u8], &[u8])],
    vocab: Option<&[&[u8]]>,
    rank_rule: bool,
) -> bool {
    let merged: Vec<Vec<u8>> = pairs.iter().map(|(a, b)| [*a, *b].concat()).collect();
    if let Some(tokens) = vocab {
        let known: rustc_hash::FxHashSet<&[u8]> = tokens.iter().copied().collect();
        let is_known = |((a, b), m): (&(&[u8], &[u8]), &Vec<u8>)| {
            known.contains(a) && known.contains(b) && known.contains(&m[..])
        };
        if !pairs.iter().zip(&merged).all(is_known) {
            return false;
        }
    }
    if !rank_rule {
        return true;
    }
    let mut seen = rustc_hash::FxHashSet::default();
    if !merged.iter().all(|m| seen.insert(&m[..])) {
        return false;
    }
    let splits = recover_merges(&merged);
    splits
        .iter()
        .zip(pairs)
        .all(|(split, (a, _))| *split == Some(a.len()))
}

/// Tokens up to this many bytes (nearly all) take `split_short`.
const SHORT_TOKEN: usize = 32;

/// `merge_by_rank` for a token of at most `SHORT_TOKEN` bytes, on arrays on
/// the stack (a scan for the lowest rank per merge, the leftmost on ties):
/// the heap and lists `merge_by_rank` allocates made recovering o200k's
/// merges mostly malloc. The left part's length if BPE leaves two parts.
fn split_short(token: &[u8], rank: impl Fn(&[u8]) -> Option<u32>) -> Option<usize> {
    let n = token.len();
    debug_assert!(n <= SHORT_TOKEN);
    // Part i is token[starts[i]..starts[i + 1]]; pairs[i] ranks parts i and i + 1.
    let mut starts = [0u8; SHORT_TOKEN + 1];
    let mut pairs = [u32::MAX; SHORT_TOKEN];
    for (i, start) in starts.iter_mut().enumerate().take(n + 1) {
        *start = i as u8;
    }
    let pair_rank = |starts: &[u8], i: usize| {
        rank(&token[starts[i] as usize..starts[i + 2] as usize]).unwrap_or(u32::MAX)
    };
    for (i, pair) in pairs.iter_mut().enumerate().take(n.saturating_sub(1)) {
        *pair = pair_rank(&starts, i);
    }
    let mut parts = n;
    while parts > 1 {
        let (best, &lowest) = pairs[..parts - 1]
            .iter()
            .enumerate()
            .min_by_key(|&(i, &r)| (r, i))
            .expect("two parts");
        if lowest == u32::MAX {
            break;
        }
        starts.copy_within(best + 2..=parts, best + 1);
        pairs.copy_within(best + 1..parts - 1, best);
        parts -= 1;
        if best + 1 < parts {
            pairs[best] = pair_rank(&starts, best);
        } else {
            pairs[best] = u32::MAX;
        }
        if best > 0 {
            pairs[best - 1] = pair_rank(&starts, best - 1);
        }
    }
    (parts == 2).then_some(starts[1] as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            splits,
            (1..=20)
                .map(|k| Some(1usize << (k - 1)))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_short_scan_splits_as_the_heap_merge_does() {
        use rand::{Rng, SeedableRng};
        // Random tables over a two- or three-letter alphabet, each token the
        // concatenation of two earlier ones (or now and then random letters):
        // overlapping tokens, ties between positions, splits BPE does not take.
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let (mut two_parts, mut checked) = (0, 0);
        for _ in 0..300 {
            let letters = rng.random_range(2..=3u8);
            let mut known: Vec<Vec<u8>> = (0..letters).map(|l| vec![b'a' + l]).collect();
            let mut table: rustc_hash::FxHashMap<Vec<u8>, u32> = Default::default();
            while table.len() < 60 {
                let token = if rng.random_bool(0.1) {
                    (0..rng.random_range(2..=8))
                        .map(|_| b'a' + rng.random_range(0..letters))
                        .collect()
                } else {
                    [
                        &known[rng.random_range(0..known.len())][..],
                        &known[rng.random_range(0..known.len())][..],
                    ]
                    .concat()
                };
                if token.len() <= SHORT_TOKEN && !table.contains_key(&token) {
                    table.insert(token.clone(), table.len() as u32);
                    known.push(token);
                }
            }
            for (token, &r) in &table {
                let below = |bytes: &[u8]| table.get(bytes).copied().filter(|&rank| rank < r);
                let bounds = merge_by_rank(token, below, || false);
                assert_eq!(
                    split_short(token, below),
                    (bounds.len() == 3).then(|| bounds[1]),
                    "{token:?}"
                );
                two_parts += usize::from(bounds.len() == 3);
                checked += 1;
            }
        }
        // Both outcomes are well represented.
        assert!(
            two_parts > checked / 4 && two_parts < checked * 3 / 4,
            "{two_parts} of {checked}"
        );
    }
}
