//! Merging sorted runs of word counts: the reduce of the artifact's buckets in
//! bounded memory. Every shard writes each bucket sorted by word, so a bucket
//! is reduced by a k-way merge of its shards' files read a batch at a time
//! (the caller streams them; see `merge_runs`) instead of a map of every word
//! of the bucket.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Columns, ColumnsError};

/// Rows of one sorted run (Arrow buffers, as `for_each_row` reads them), from row `start` on.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    pub data: &'a [u8],
    pub offsets: &'a [i64],
    pub counts: &'a [i64],
    pub start: usize,
}

impl<'a> Run<'a> {
    fn rows(&self) -> usize {
        self.counts.len()
    }

    fn word(&self, i: usize) -> &'a [u8] {
        &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Offsets and counts that `word` and `merge_runs` may read.
    fn check(&self) -> Result<(), ColumnsError> {
        if self.offsets.len() != self.counts.len() + 1 {
            return Err(ColumnsError::BadOffsets(format!(
                "{} offsets for {} counts (expected one more offset than counts)",
                self.offsets.len(),
                self.counts.len()
            )));
        }
        for (i, pair) in self.offsets.windows(2).enumerate().skip(self.start) {
            if pair[0] < 0 || pair[1] < pair[0] || pair[1] as u64 > self.data.len() as u64 {
                return Err(ColumnsError::BadOffsets(format!(
                    "row {i}: offsets {}..{} outside the {} data bytes",
                    pair[0],
                    pair[1],
                    self.data.len()
                )));
            }
            if self.counts[i] < 0 {
                return Err(ColumnsError::BadCount {
                    word: self.word(i).to_vec(),
                    count: i128::from(self.counts[i]),
                });
            }
        }
        Ok(())
    }
}

/// Merge the rows of `runs` whose words are at most `upto` (all rows when
/// None) into one part sorted by word, summing the counts of a word found in
/// several runs. Each run must be sorted by bytes with each word once (a part
/// of the artifact, or a batch of one). Returns the part and, per run, the
/// index of its first row not taken.
///
/// Streaming: with the runs' current batches and `upto` the smallest last
/// word among the batches of runs that have more to come, every row taken is
/// final (no later batch holds a word at or below `upto`).
///
/// # Errors
/// Bad offsets, a negative count, a run out of order or with a repeated
/// word, or a sum beyond i64 (Parquet INT64).
pub fn merge_runs(
    runs: &[Run<'_>],
    upto: Option<&[u8]>,
) -> Result<(Columns, Vec<usize>), ColumnsError> {
    let within = |w: &[u8]| upto.is_none_or(|u| w <= u);
    let mut next: Vec<usize> = runs.iter().map(|r| r.start).collect();
    let mut heads = BinaryHeap::with_capacity(runs.len());
    for (r, run) in runs.iter().enumerate() {
        run.check()?;
        if run.start < run.rows() && within(run.word(run.start)) {
            heads.push(Reverse((run.word(run.start), r)));
        }
    }
    let mut out = Columns {
        offsets: vec![0],
        ..Columns::default()
    };
    while let Some(Reverse((word, r))) = heads.pop() {
        let mut sum = i128::from(runs[r].counts[next[r]]);
        let mut taken = vec![r];
        while let Some(&Reverse((w, q))) = heads.peek() {
            if w != word {
                break;
            }
            heads.pop();
            sum += i128::from(runs[q].counts[next[q]]);
            taken.push(q);
        }
        let count = i64::try_from(sum).map_err(|_| ColumnsError::BadCount {
            word: word.to_vec(),
            count: sum,
        })?;
        out.data.extend_from_slice(word);
        out.offsets.push(out.data.len() as i64);
        out.counts.push(count);
        for q in taken {
            next[q] += 1;
            let run = &runs[q];
            if next[q] < run.rows() {
                let following = run.word(next[q]);
                if following == word {
                    return Err(ColumnsError::Duplicate(word.to_vec()));
                }
                if following < word {
                    return Err(ColumnsError::Unsorted(following.to_vec()));
                }
                if within(following) {
                    heads.push(Reverse((following, q)));
                }
            }
        }
    }
    Ok((out, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rows: &[(&str, i64)]) -> Columns {
        Columns::of_rows(rows)
    }

    fn as_run(c: &Columns, start: usize) -> Run<'_> {
        Run {
            data: &c.data,
            offsets: &c.offsets,
            counts: &c.counts,
            start,
        }
    }

    #[test]
    fn runs_merge_into_one_sorted_part_with_sums() {
        let a = run(&[("a", 1), ("c", 2), ("e", 3)]);
        let b = run(&[("b", 10), ("c", 20), ("f", 30)]);
        let (part, next) = merge_runs(&[as_run(&a, 0), as_run(&b, 0)], None).unwrap();
        assert_eq!(
            part,
            run(&[("a", 1), ("b", 10), ("c", 22), ("e", 3), ("f", 30)])
        );
        assert_eq!(next, [3, 3]);
        // Streaming: only up to "c", then the rest from where each run stopped.
        let (first, next) = merge_runs(&[as_run(&a, 0), as_run(&b, 1)], Some(b"c")).unwrap();
        assert_eq!(
            (first, next.clone()),
            (run(&[("a", 1), ("c", 22)]), vec![2, 2])
        );
        let (rest, _) = merge_runs(&[as_run(&a, next[0]), as_run(&b, next[1])], None).unwrap();
        assert_eq!(rest, run(&[("e", 3), ("f", 30)]));
    }

    #[test]
    fn bad_runs_are_errors() {
        let unsorted = run(&[("b", 1), ("a", 1)]);
        assert_eq!(
            merge_runs(&[as_run(&unsorted, 0)], None).unwrap_err(),
            ColumnsError::Unsorted(b"a".to_vec())
        );
        let twice = run(&[("a", 1), ("a", 1)]);
        assert_eq!(
            merge_runs(&[as_run(&twice, 0)], None).unwrap_err(),
            ColumnsError::Duplicate(b"a".to_vec())
        );
        let (big, one) = (run(&[("a", i64::MAX)]), run(&[("a", 1)]));
        assert!(matches!(
            merge_runs(&[as_run(&big, 0), as_run(&one, 0)], None),
            Err(ColumnsError::BadCount { .. })
        ));
        let negative = run(&[("a", -1)]);
        assert!(merge_runs(&[as_run(&negative, 0)], None).is_err());
    }
}
