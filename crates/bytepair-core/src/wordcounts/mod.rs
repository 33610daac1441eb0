//! The word-counts artifact in columnar form: what counting on many machines
//! writes and what training on one machine reads.
//!
//! A part of the artifact is three Arrow-layout columns: `data` (all word bytes
//! back to back), `offsets` (n + 1 little-endian i64, word i is
//! `data[offsets[i]..offsets[i + 1]]`, as Arrow's `large_binary`) and `counts`
//! (n little-endian i64, Parquet's INT64). Python hands these buffers to pyarrow
//! without a per-word object. Words are sorted by bytes and appear once.
//!
//! Buckets: a word goes to bucket `xxh3_64(word, seed = BUCKET_SEED) % parts`.
//! XXH3 is fully specified, so every machine, process and release agrees on a
//! word's bucket (Python's `hash()` is salted per process and would not).

use xxhash_rust::xxh3::xxh3_64_with_seed;

use aho_corasick::AhoCorasick;

use crate::count::{add_word, for_each_piece, WordCounts};

mod merge;
mod rows;
pub use merge::{merge_runs, Run};
pub use rows::{fold_word, BeyondBudget, WordRows, FOLD_BYTES};

/// Fixed seed of the bucket hash; changing it changes the artifact layout.
pub const BUCKET_SEED: u64 = 0x6279_7465_7061_6972; // "bytepair"

/// One sorted part: words and counts in Arrow buffer layout.
#[derive(Debug, Default, PartialEq)]
pub struct Columns {
    pub data: Vec<u8>,
    pub offsets: Vec<i64>,
    pub counts: Vec<i64>,
}

#[cfg(test)]
impl Columns {
    /// A part of these (word, count) rows, in the order given (tests).
    pub(crate) fn of_rows(rows: &[(&str, i64)]) -> Columns {
        let mut c = Columns {
            offsets: vec![0],
            ..Columns::default()
        };
        for &(w, n) in rows {
            c.data.extend_from_slice(w.as_bytes());
            c.offsets.push(c.data.len() as i64);
            c.counts.push(n);
        }
        c
    }
}

/// Why a set of columns cannot be read or written.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ColumnsError {
    /// Offsets that are not n + 1 non-decreasing positions inside `data`.
    #[error("bad word offsets: {0}")]
    BadOffsets(String),
    /// A count that is negative (when reading) or beyond i64 (when writing).
    #[error(
        "count of word {} is {count}: counts must be in [0, 2**63) (Parquet INT64) \
         and sums must fit u64",
        escaped(word)
    )]
    BadCount { word: Vec<u8>, count: i128 },
    /// The same word twice within one part.
    #[error("word {} appears twice in one part (a part holds each word once)", escaped(.0))]
    Duplicate(Vec<u8>),
    /// A word after a greater one in a part that must be sorted.
    #[error("word {} is out of order (a part is sorted by bytes)", escaped(.0))]
    Unsorted(Vec<u8>),
}

/// A word for an error message: its text with non-printing characters escaped.
fn escaped(word: &[u8]) -> String {
    String::from_utf8_lossy(word).escape_debug().to_string()
}

/// The bucket of `word` among `parts` buckets (stable everywhere, see module docs).
pub fn bucket_of(word: &[u8], parts: usize) -> usize {
    (xxh3_64_with_seed(word, BUCKET_SEED) % parts as u64) as usize
}

/// Split `counts` into `parts` buckets by the stable word hash, each sorted by bytes.
/// Errors if a count does not fit Parquet's signed INT64.
pub fn to_buckets(counts: &WordCounts, parts: usize) -> Result<Vec<Columns>, ColumnsError> {
    let mut buckets: Vec<Vec<(&[u8], u64)>> = vec![Vec::new(); parts.max(1)];
    for (w, &n) in counts {
        buckets[bucket_of(w, parts.max(1))].push((w, n));
    }
    buckets
        .into_iter()
        .map(|mut b| {
            b.sort_unstable_by(|x, y| x.0.cmp(y.0));
            columns_of(&b)
        })
        .collect()
}

/// Sorted (word, count) pairs to columns.
fn columns_of(sorted: &[(&[u8], u64)]) -> Result<Columns, ColumnsError> {
    let mut c = Columns {
        data: Vec::with_capacity(sorted.iter().map(|(w, _)| w.len()).sum()),
        offsets: Vec::with_capacity(sorted.len() + 1),
        counts: Vec::with_capacity(sorted.len()),
    };
    c.offsets.push(0);
    for &(w, n) in sorted {
        let n = i64::try_from(n).map_err(|_| ColumnsError::BadCount {
            word: w.to_vec(),
            count: n as i128,
        })?;
        c.data.extend_from_slice(w);
        c.offsets.push(c.data.len() as i64);
        c.counts.push(n);
    }
    Ok(c)
}

/// Call `f(word, count)` for each row of a part given as Arrow buffers.
/// `unique` also checks that no word repeats (parts are sorted, so neighbours suffice).
pub fn for_each_row(
    data: &[u8],
    offsets: &[i64],
    counts: &[i64],
    unique: bool,
    mut f: impl FnMut(&[u8], u64),
) -> Result<(), ColumnsError> {
    if offsets.len() != counts.len() + 1 {
        return Err(ColumnsError::BadOffsets(format!(
            "{} offsets for {} counts (expected one more offset than counts)",
            offsets.len(),
            counts.len()
        )));
    }
    let mut previous: Option<&[u8]> = None;
    for (i, &n) in counts.iter().enumerate() {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start < 0 || end < start || end as u64 > data.len() as u64 {
            return Err(ColumnsError::BadOffsets(format!(
                "row {i}: offsets {start}..{end} outside the {} data bytes",
                data.len()
            )));
        }
        let word = &data[start as usize..end as usize];
        if n < 0 {
            return Err(ColumnsError::BadCount {
                word: word.to_vec(),
                count: n as i128,
            });
        }
        if unique && previous == Some(word) {
            return Err(ColumnsError::Duplicate(word.to_vec()));
        }
        previous = Some(word);
        f(word, n as u64);
    }
    Ok(())
}

/// Sum rows into `counts`, each word cut at the special-token strings
/// `specials` finds ([`for_each_piece`]); a sum past u64 is reported as a bad count.
pub fn add_rows(
    counts: &mut WordCounts,
    data: &[u8],
    offsets: &[i64],
    n: &[i64],
    unique: bool,
    specials: Option<&AhoCorasick>,
) -> Result<(), ColumnsError> {
    let mut overflow = None;
    for_each_row(data, offsets, n, unique, |word, c| {
        for_each_piece(word, specials, |w| match counts.get(w) {
            Some(old) if old.checked_add(c).is_none() => {
                overflow.get_or_insert(ColumnsError::BadCount {
                    word: w.to_vec(),
                    count: *old as i128 + c as i128,
                });
            }
            _ => add_word(counts, w, c),
        })
    })?;
    overflow.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(items: &[(&str, u64)]) -> WordCounts {
        items
            .iter()
            .map(|(w, n)| (w.as_bytes().to_vec(), *n))
            .collect()
    }

    #[test]
    fn buckets_partition_and_sort() {
        let c = counts(&[("b", 2), ("a", 1), (" the", 7), ("zz", 3), ("é", 4)]);
        let parts = to_buckets(&c, 3).unwrap();
        let mut back = WordCounts::default();
        for p in &parts {
            let words: Vec<&[u8]> = p
                .offsets
                .windows(2)
                .map(|o| &p.data[o[0] as usize..o[1] as usize])
                .collect();
            assert!(
                words.windows(2).all(|w| w[0] < w[1]),
                "part not sorted: {words:?}"
            );
            for w in &words {
                assert_eq!(bucket_of(w, 3), parts.iter().position(|q| q == p).unwrap());
            }
            add_rows(&mut back, &p.data, &p.offsets, &p.counts, true, None).unwrap();
        }
        assert_eq!(back, c);
    }

    #[test]
    fn bucket_hash_is_pinned() {
        // The artifact layout depends on these values: they must never change.
        let pinned: Vec<usize> = [&b" the"[..], b"hello", b"\xff"]
            .iter()
            .map(|w| bucket_of(w, 16))
            .collect();
        assert_eq!(pinned, PINNED_BUCKETS);
    }
    const PINNED_BUCKETS: [usize; 3] = [8, 4, 11];

    #[test]
    fn rejects_bad_rows() {
        let mut c = WordCounts::default();
        assert!(matches!(
            add_rows(&mut c, b"ab", &[0, 1], &[1, 2], false, None),
            Err(ColumnsError::BadOffsets(_))
        ));
        assert!(matches!(
            add_rows(&mut c, b"ab", &[0, 3], &[1], false, None),
            Err(ColumnsError::BadOffsets(_))
        ));
        assert!(matches!(
            add_rows(&mut c, b"ab", &[0, 1], &[-1], false, None),
            Err(ColumnsError::BadCount { .. })
        ));
        assert_eq!(
            add_rows(&mut c, b"aa", &[0, 1, 2], &[1, 1], true, None),
            Err(ColumnsError::Duplicate(b"a".to_vec()))
        );
        let mut big = counts(&[("a", u64::MAX)]);
        assert!(matches!(
            add_rows(&mut big, b"a", &[0, 1], &[1], true, None),
            Err(ColumnsError::BadCount { .. })
        ));
        assert!(matches!(
            to_buckets(&counts(&[("a", 1 << 63)]), 1),
            Err(ColumnsError::BadCount { .. })
        ));
    }
}
