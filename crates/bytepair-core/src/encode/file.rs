//! Encoding a UTF-8 file into a token file: the file is read in chunks cut at
//! safe cuts (`count::ChunkReader`, never cut elsewhere: the ids are those of
//! the whole text), each chunk's segments are encoded on the current rayon
//! pool, and the ids are written in order as little-endian ints of 2 or 4 bytes.

use std::io::Write;

use super::id_bytes::{push_ids, IdTooWide, ItemSize};
use super::segments::{encode_segments_on_pool, EncodeSegment};
use super::EncodeError;
use crate::count::{ChunkReader, CountError};
use crate::cut::CutRule;
use crate::progress::Progress;

/// Bytes of a file `encode_file` reads and encodes at a time (cut at a safe
/// cut): enough 1 MiB segments for every thread, a bounded buffer.
pub const FILE_CHUNK_BYTES: usize = 8 << 20;

/// Why `encode_file` stopped.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Reading the file: it cannot be opened or read, its bytes are not UTF-8
    /// (`CountError::InvalidUtf8` names the file and byte offset), or the
    /// progress was cancelled (`CountError::Cancelled`).
    #[error(transparent)]
    Read(CountError),
    /// Encoding failed; a disallowed special token's offset is in bytes
    /// from the start of the file.
    #[error(transparent)]
    Encode(EncodeError),
    /// Writing the ids failed.
    #[error("the output file: {0}")]
    Write(std::io::Error),
    /// An id does not fit in the item size.
    #[error(transparent)]
    IdTooWide(IdTooWide),
}

/// The reader `encode_file` reads `path` with: chunks of about
/// `FILE_CHUNK_BYTES`, cut at safe cuts of `rule` and nowhere else (a text
/// without one is held whole).
pub fn open_file(rule: &CutRule, path: &str) -> Result<ChunkReader, FileError> {
    let reader =
        ChunkReader::open(path, FILE_CHUNK_BYTES, rule.clone()).map_err(FileError::Read)?;
    Ok(reader.without_forced_cut())
}

/// Encode the UTF-8 file `path` into `out` as little-endian unsigned ints of
/// `itemsize`, reading it in chunks of about `FILE_CHUNK_BYTES` cut at safe
/// cuts of `rule` (`open_file`) and encoding each chunk's segments on the
/// current rayon pool with `encode` (see `super::segments`). Bytes that are
/// not UTF-8 are an error, or U+FFFD when `replace_errors`. `progress` counts
/// the bytes read and is checked between chunks and segments. `out` is
/// flushed at the end; on an error it holds the ids of part of the file.
///
/// Returns (ids written, bytes read).
pub fn encode_file(
    rule: &CutRule,
    path: &str,
    encode: &impl EncodeSegment,
    out: &mut impl Write,
    itemsize: ItemSize,
    replace_errors: bool,
    progress: &Progress,
) -> Result<(u64, u64), FileError> {
    let reader = open_file(rule, path)?;
    encode_chunks(
        rule,
        reader,
        encode,
        out,
        itemsize,
        replace_errors,
        progress,
    )
}

/// `encode_file` of a file opened already (`open_file`).
pub fn encode_chunks(
    rule: &CutRule,
    reader: ChunkReader,
    encode: &impl EncodeSegment,
    out: &mut impl Write,
    itemsize: ItemSize,
    replace_errors: bool,
    progress: &Progress,
) -> Result<(u64, u64), FileError> {
    let mut tokens = 0u64;
    let mut bytes = Vec::new();
    for chunk in reader {
        if progress.is_cancelled() {
            return Err(FileError::Read(CountError::Cancelled));
        }
        let chunk = chunk.map_err(FileError::Read)?;
        let text = chunk.text(replace_errors).map_err(FileError::Read)?;
        let starts_file = chunk.offset == 0;
        for ids in encode_segments_on_pool(rule, &text, starts_file, encode, progress) {
            let ids = ids.map_err(|e| FileError::Encode(e.shifted(chunk.offset as usize)))?;
            bytes.clear();
            push_ids(&mut bytes, ids.iter().copied(), itemsize).map_err(FileError::IdTooWide)?;
            out.write_all(&bytes).map_err(FileError::Write)?;
            tokens += ids.len() as u64;
        }
        progress.add(chunk.bytes.len() as u64);
    }
    out.flush().map_err(FileError::Write)?;
    Ok((tokens, progress.done()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encoder;

    type EncodeFn<'a> = dyn Fn(&str, &mut Vec<u32>) -> Result<(), EncodeError> + Sync + 'a;

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("bytepair-{name}-{}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn encoder() -> Encoder {
        let merged = ["th", "the", " the", "ca", "cat", " cat"];
        let merged = merged.iter().map(|t| t.as_bytes().to_vec()).collect();
        Encoder::from_merged(merged, &["<|end|>".to_string()], "o200k").unwrap()
    }

    #[test]
    fn encode_file_writes_the_ids_of_the_whole_text() {
        let enc = encoder();
        let specials = ["<|end|>".to_string()];
        let rule = CutRule::new("o200k", &specials);
        let line = "the cat sat.The  cat, \u{e9}t\u{e9}\n12345 <|end|>\n";
        let text = line.repeat(2 * FILE_CHUNK_BYTES / line.len() + 7);
        let path = temp_file("encode-file", text.as_bytes());
        let encode = |s: &str, ids: &mut Vec<u32>| enc.encode_into(s, &specials, &[], ids);
        let want = enc.encode(&text, &specials, &[]).unwrap();
        for itemsize in [ItemSize::Two, ItemSize::Four] {
            let mut out = Vec::new();
            let progress = Progress::default();
            let path = path.to_str().unwrap();
            let (n, read) =
                encode_file(&rule, path, &encode, &mut out, itemsize, false, &progress).unwrap();
            let mut expected = Vec::new();
            push_ids(&mut expected, want.iter().copied(), itemsize).unwrap();
            assert_eq!((n, read), (want.len() as u64, text.len() as u64));
            assert!(out == expected, "{itemsize:?}: the ids of the whole text");
        }
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn encode_file_errors_name_the_file_offset() {
        let enc = encoder();
        let specials = ["<|end|>".to_string()];
        let rule = CutRule::new("o200k", &specials);
        let text = "the cat\n".repeat(FILE_CHUNK_BYTES / 8 + 100) + "<|end|>";
        let path = temp_file("encode-file-errors", text.as_bytes());
        let path = path.to_str().unwrap();
        let run = |encode: &EncodeFn, replace| {
            let mut out = Vec::new();
            let progress = Progress::default();
            encode_file(
                &rule,
                path,
                &encode,
                &mut out,
                ItemSize::Two,
                replace,
                &progress,
            )
        };
        let disallow = |s: &str, ids: &mut Vec<u32>| enc.encode_into(s, &[], &specials, ids);
        match run(&disallow, false) {
            Err(FileError::Encode(EncodeError::Disallowed(d))) => {
                assert_eq!(d.offset, text.len() - "<|end|>".len())
            }
            other => panic!("{other:?}"),
        }
        let special_id = enc.special_id("<|end|>").unwrap();
        let wide = |_: &str, ids: &mut Vec<u32>| {
            ids.push(special_id + 70_000);
            Ok(())
        };
        assert!(matches!(run(&wide, false), Err(FileError::IdTooWide(_))));
        std::fs::write(path, b"ok\n\xff").unwrap();
        let plain = |s: &str, ids: &mut Vec<u32>| enc.encode_ordinary_into(s, ids);
        match run(&plain, false) {
            Err(FileError::Read(CountError::InvalidUtf8 { offset, .. })) => assert_eq!(offset, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(run(&plain, true).unwrap().1, 4, "replaced: bytes read");
        std::fs::remove_file(path).unwrap();
    }
}
