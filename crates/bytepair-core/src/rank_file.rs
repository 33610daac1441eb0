//! tiktoken's rank files (`.tiktoken`: `base64(token) rank` per line) and the
//! merge table they imply. Loading o200k_base this way takes a fraction of the
//! per-line work in Python (base64, dicts, a check per token).

use crate::shortkey::BytesMap;
use base64::Engine;

use crate::encode::{EncoderError, VocabTables};
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

/// One line's (token, rank); None for a blank line.
fn parse_line(line: &[u8], n: usize) -> Result<Option<(Vec<u8>, u32)>, RankFileError> {
    let error = |reason| RankFileError { line: n, reason };
    let mut fields = line.split(|&b| is_space(b)).filter(|f| !f.is_empty());
    let Some(token) = fields.next() else {
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
    let token = base64::engine::general_purpose::STANDARD
        .decode(token)
        .map_err(|_| error("invalid base64"))?;
    Ok(Some((token, rank)))
}

/// Every (token bytes, rank) of a rank file, in file order.
///
/// Errors: a line that is not two fields (base64, decimal rank below 2^32),
/// an empty file. (Tokens listed twice: `merges_of_rank_table`.)
pub fn parse_rank_file(data: &[u8]) -> Result<Vec<(Vec<u8>, u32)>, RankFileError> {
    let mut tokens = Vec::with_capacity(data.len() / 12);
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        tokens.extend(parse_line(line, i + 1)?);
    }
    if tokens.is_empty() {
        return Err(RankFileError {
            line: 0,
            reason: "no ranks",
        });
    }
    Ok(tokens)
}

/// The merge table of a rank table: for each token of two or more bytes, in
/// rank order, the indices in `tokens` of the two parts it is the merge of
/// (see `recover::recover_merges`). None when the table is not one a BPE
/// trainer makes: a token listed twice, two tokens with one rank, an empty
/// token, a token no merge of two lower-ranked tokens reaches, or a part that
/// is a byte with no rank.
pub fn merges_of_rank_table(tokens: &[(Vec<u8>, u32)]) -> Option<Vec<(usize, usize)>> {
    let mut order: Vec<usize> = (0..tokens.len()).collect();
    order.sort_unstable_by_key(|&i| tokens[i].1);
    if order.windows(2).any(|w| tokens[w[0]].1 == tokens[w[1]].1) {
        return None;
    }
    let mut index = BytesMap::with_capacity(tokens.len());
    for (i, (token, _)) in tokens.iter().enumerate() {
        if token.is_empty() || !index.insert_first(token, i) {
            return None;
        }
    }
    let merged: Vec<usize> = order
        .into_iter()
        .filter(|&i| tokens[i].0.len() > 1)
        .collect();
    let bytes: Vec<&[u8]> = merged.iter().map(|&i| tokens[i].0.as_slice()).collect();
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
/// and its merge table.
pub struct RankTable {
    /// (token bytes, rank), by rank.
    pub tokens: Vec<(Vec<u8>, u32)>,
    /// For each token of two or more bytes, in rank order, the indices in
    /// `tokens` of its merge's parts (`merges_of_rank_table`).
    pub merges: Vec<(usize, usize)>,
}

impl RankTable {
    /// The table of a rank file and the encoder's tables of it; None for
    /// anything `parse_rank_file` or `merges_of_rank_table` refuses (or two
    /// tokens with one rank). The merges are recovered while the encoder's
    /// tables are built (they need the merged tokens, not their splits), on
    /// the current rayon pool.
    pub fn parse(data: &[u8]) -> Option<(Self, VocabTables)> {
        let mut tokens = parse_rank_file(data).ok()?;
        tokens.sort_by_key(|&(_, rank)| rank);
        let (merges, vocab) =
            rayon::join(|| merges_of_rank_table(&tokens), || vocab_tables(&tokens));
        // The maps of both were freed on pool threads, into arenas the
        // caller's thread does not allocate from: returned to the OS, or
        // encoding a 10 MB text after loading o200k peaked 50 MiB higher.
        crate::memory::release_freed_memory();
        Some((
            RankTable {
                tokens,
                merges: merges?,
            },
            vocab.ok()?,
        ))
    }

    /// The bytes of the token of rank `rank`, if there is one.
    pub fn token(&self, rank: u32) -> Option<&[u8]> {
        let i = self.tokens.binary_search_by_key(&rank, |&(_, r)| r).ok()?;
        Some(&self.tokens[i].0)
    }

    /// The encoder's tables of this vocabulary (ids = ranks; see
    /// `VocabTables::new`), built on the current rayon pool.
    pub fn vocab_tables(&self) -> Result<VocabTables, EncoderError> {
        vocab_tables(&self.tokens)
    }
}

/// The encoder's tables of `tokens` (sorted by rank, ids = ranks): every
/// token of two or more bytes is a merge result, in rank order.
fn vocab_tables(tokens: &[(Vec<u8>, u32)]) -> Result<VocabTables, EncoderError> {
    let merged = tokens
        .iter()
        .filter(|(token, _)| token.len() > 1)
        .map(|(token, _)| token.clone())
        .collect();
    VocabTables::new(tokens, merged)
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
