//! tiktoken's rank files (`.tiktoken`: `base64(token) rank` per line) and the
//! merge table they imply. Loading o200k_base this way takes a fraction of the
//! per-line work in Python (base64, dicts, a check per token).

use crate::shortkey::BytesMap;
use base64::Engine;

use crate::encode::{EncoderError, VocabTables};
use crate::memory::PackedBytes;
use crate::recover::recover_splits;

/// Why a rank file cannot be read (the Python loader re-reads such a file
/// with its own parser to word the error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct RankFileError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    pub reason: &'static str,
}

/// Bytes Python's `bytes.split()` splits on (Rust's `is_ascii_whitespace`
/// leaves out the vertical tab).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// One line's (token, rank), the token appended to `token` (base64
/// decoded); None for a blank line.
fn parse_line(line: &[u8], n: usize, token: &mut Vec<u8>) -> Result<Option<u32>, RankFileError> {
    let error = |reason| RankFileError { line: n, reason };
    let mut fields = line.split(|&b| is_space(b)).filter(|f| !f.is_empty());
    let Some(encoded) = fields.next() else {
        return Ok(None);
    };
    let (Some(rank), None) = (fields.next(), fields.next()) else {
        return Err(error("expected 'base64-token rank'"));
    };
    if rank.is_empty() || rank.len() > 10 || !rank.iter().all(u8::is_ascii_digit) {
        return Err(error("expected 'base64-token rank'"));
    }
    let rank = std::str::from_utf8(rank)
        .ok()
        .and_then(|r| r.parse::<u32>().ok())
        .ok_or(error("rank beyond 2**32"))?;
    base64::engine::general_purpose::STANDARD
        .decode_vec(encoded, token)
        .map_err(|_| error("invalid base64"))?;
    Ok(Some(rank))
}

/// Every line of a rank file in turn, its token appended to `tokens`
/// (packed) and its rank to `ranks`.
fn parse_into(
    data: &[u8],
    tokens: &mut Vec<u8>,
    mut push: impl FnMut(&mut Vec<u8>, u32),
) -> Result<(), RankFileError> {
    let mut any = false;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        if let Some(rank) = parse_line(line, i + 1, tokens)? {
            push(tokens, rank);
            any = true;
        }
    }
    if !any {
        return Err(RankFileError {
            line: 0,
            reason: "no ranks",
        });
    }
    Ok(())
}

/// Every (token bytes, rank) of a rank file, in file order.
///
/// Errors: a line that is not two fields (base64, decimal rank below 2^32),
/// an empty file. (Tokens listed twice: `merges_of_rank_table`.)
pub fn parse_rank_file(data: &[u8]) -> Result<Vec<(Vec<u8>, u32)>, RankFileError> {
    let mut tokens = Vec::with_capacity(data.len() / 12);
    parse_into(data, &mut Vec::new(), |token, rank| {
        tokens.push((std::mem::take(token), rank));
    })?;
    Ok(tokens)
}

/// `parse_rank_file` into one buffer: the tokens packed, their ranks, sorted
/// by rank.
fn parse_packed(data: &[u8]) -> Result<(PackedBytes, Vec<u32>), RankFileError> {
    let mut bytes = Vec::with_capacity(data.len() / 2);
    let (mut ends, mut ranks) = (Vec::new(), Vec::new());
    parse_into(data, &mut bytes, |token, rank| {
        ends.push(token.len());
        ranks.push(rank);
    })?;
    let token = |i: usize| &bytes[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by_key(|&i| ranks[i]);
    let mut tokens = PackedBytes::with_capacity(order.len());
    for &i in &order {
        tokens.push(token(i));
    }
    tokens.shrink_to_fit();
    Ok((tokens, order.iter().map(|&i| ranks[i]).collect()))
}

/// The merge table of a rank table: for each token of two or more bytes, in
/// rank order, the indices in `tokens` of the two parts it is the merge of
/// (see `recover::recover_merges`). None when the table is not one a BPE
/// trainer makes: a token listed twice, two tokens with one rank, an empty
/// token, a token no merge of two lower-ranked tokens reaches, or a part that
/// is a byte with no rank.
pub fn merges_of_rank_table(tokens: &[(impl AsRef<[u8]>, u32)]) -> Option<Vec<(usize, usize)>> {
    let mut order: Vec<usize> = (0..tokens.len()).collect();
    order.sort_unstable_by_key(|&i| tokens[i].1);
    if order.windows(2).any(|w| tokens[w[0]].1 == tokens[w[1]].1) {
        return None;
    }
    let mut index = BytesMap::with_capacity(tokens.len());
    for (i, (token, _)) in tokens.iter().enumerate() {
        let token = token.as_ref();
        if token.is_empty() || !index.insert_first(token, i) {
            return None;
        }
    }
    let bytes: Vec<&[u8]> = order
        .into_iter()
        .map(|i| tokens[i].0.as_ref())
        .filter(|token| token.len() > 1)
        .collect();
    let splits = recover_splits(&bytes);
    bytes
        .iter()
        .zip(splits)
        .map(|(token, split)| {
            let (left, right) = token.split_at(split?);
            Some((index.get(left)?, index.get(right)?))
        })
        .collect()
}

/// A rank file that is a BPE table: its tokens sorted by rank (id = rank)
/// and its merge table, packed (a vocabulary of small `Vec`s took several
/// times the size of its bytes).
pub struct RankTable {
    /// Token bytes, by rank.
    tokens: PackedBytes,
    /// The rank of each token.
    ranks: Vec<u32>,
    /// For each token of two or more bytes, in rank order, the indices in
    /// `tokens` of its merge's parts (`merges_of_rank_table`).
    merges: Vec<(u32, u32)>,
}

impl RankTable {
    /// The table of a rank file and the encoder's tables of it; None for
    /// anything `parse_rank_file` or `merges_of_rank_table` refuses (or two
    /// tokens with one rank). The merges are recovered while the encoder's
    /// tables are built (they need the merged tokens, not their splits), on
    /// the current rayon pool.
    pub fn parse(data: &[u8]) -> Option<(Self, VocabTables)> {
        let (tokens, ranks) = parse_packed(data).ok()?;
        let view: Vec<(&[u8], u32)> = tokens.iter().zip(ranks.iter().copied()).collect();
        let (merges, vocab) = rayon::join(|| merges_of_rank_table(&view), || vocab_tables(&view));
        drop(view);
        // The maps of both were freed on pool threads, into arenas the
        // caller's thread does not allocate from: returned to the OS, or
        // encoding a 10 MB text after loading o200k peaked much higher.
        crate::memory::release_freed_memory();
        let merges = merges?
            .into_iter()
            .map(|(left, right)| (left as u32, right as u32))
            .collect();
        Some((
            RankTable {
                tokens,
                ranks,
                merges,
            },
            vocab.ok()?,
        ))
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// No tokens (a parsed table has at least one).
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// The highest rank.
    pub fn max_rank(&self) -> Option<u32> {
        self.ranks.last().copied()
    }

    /// (token bytes, rank) of every token, by rank.
    pub fn tokens(&self) -> impl Iterator<Item = (&[u8], u32)> + '_ {
        self.tokens.iter().zip(self.ranks.iter().copied())
    }

    /// For each token of two or more bytes, in rank order, the indices (in
    /// `tokens()`) of its merge's parts.
    pub fn merges(&self) -> &[(u32, u32)] {
        &self.merges
    }

    /// The bytes of the token of rank `rank`, if there is one.
    pub fn token(&self, rank: u32) -> Option<&[u8]> {
        let i = self.ranks.binary_search(&rank).ok()?;
        Some(self.tokens.get(i))
    }

    /// The encoder's tables of this vocabulary (ids = ranks; see
    /// `VocabTables::new`), built on the current rayon pool.
    pub fn vocab_tables(&self) -> Result<VocabTables, EncoderError> {
        let tokens: Vec<(&[u8], u32)> = self.tokens().collect();
        vocab_tables(&tokens)
    }
}

/// The encoder's tables of `tokens` (sorted by rank, ids = ranks): every
/// token of two or more bytes is a merge result, in rank order.
fn vocab_tables(tokens: &[(&[u8], u32)]) -> Result<VocabTables, EncoderError> {
    let merged: Vec<&[u8]> = tokens
        .iter()
        .map(|&(token, _)| token)
        .filter(|token| token.len() > 1)
        .collect();
    VocabTables::of_slices(tokens, &merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_skips_blank_ones() {
        let tokens = parse_rank_file(b"YQ== 0\n\nYg== 1\r\nYWI= 2\n").unwrap();
        assert_eq!(
            tokens,
            [(b"a".to_vec(), 0), (b"b".to_vec(), 1), (b"ab".to_vec(), 2)]
        );
    }

    #[test]
    fn names_the_line_at_fault() {
        assert_eq!(parse_rank_file(b"YQ== 0\nYg==\n").unwrap_err().line, 2);
        assert_eq!(parse_rank_file(b"YQ== 0\n!!== 1\n").unwrap_err().line, 2);
        assert_eq!(parse_rank_file(b"YQ== 4294967296\n").unwrap_err().line, 1);
        assert_eq!(parse_rank_file(b"YQ== 1 2\n").unwrap_err().line, 1);
        assert_eq!(parse_rank_file(b"\n\n").unwrap_err().line, 0);
    }

    #[test]
    fn recovers_merges_in_rank_order() {
        let tokens = parse_rank_file(b"YWJj 3\nYQ== 0\nYg== 1\nYw== 2\nYWI= 4\n").unwrap();
        // "abc" (rank 3) cannot be made from tokens of lower rank: no table.
        assert_eq!(merges_of_rank_table(&tokens), None);
        let tokens = parse_rank_file(b"YWJj 4\nYQ== 0\nYg== 1\nYw== 2\nYWI= 3\n").unwrap();
        // "ab" = a + b; "abc" = ab + c.
        assert_eq!(merges_of_rank_table(&tokens), Some(vec![(1, 2), (4, 3)]));
    }

    #[test]
    fn refuses_shared_ranks_and_parts_without_a_rank() {
        assert_eq!(
            merges_of_rank_table(&[(b"a".to_vec(), 0), (b"b".to_vec(), 0)]),
            None
        );
        // A token listed twice, of one byte or several.
        assert_eq!(
            merges_of_rank_table(&[(b"a".to_vec(), 0), (b"a".to_vec(), 1)]),
            None
        );
        let twice = [
            (b"a".to_vec(), 0),
            (b"b".to_vec(), 1),
            (b"ab".to_vec(), 2),
            (b"ab".to_vec(), 3),
        ];
        assert_eq!(merges_of_rank_table(&twice), None);
        // "ab" is made from "b", which has no rank.
        assert_eq!(
            merges_of_rank_table(&[(b"a".to_vec(), 0), (b"ab".to_vec(), 1)]),
            None
        );
    }
}
