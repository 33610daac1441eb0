//! Encoding a UTF-8 file into a token file: the file is read in chunks cut at
//! safe cuts (`count::ChunkReader`, never cut elsewhere: the ids are those of
//! the whole text), each chunk's segments are encoded on the current rayon
//! pool, and the ids are written in order as little-endian ints of 2 or 4 bytes.

use std::io::Write;

use super::id_bytes::{write_ids, IdTooWide, ItemSize};
use super::runs::Runs;
use super::segments::{EncodeSegment, SEGMENT_BYTES};
use super::EncodeError;
use crate::count::{ChunkReader, CountError};
use crate::cut::{segments, CutRule};
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
    out: &mut (impl Write + Send),
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
///
/// A pipeline of three stages: while the pool encodes chunk k (each segment
/// into reused buffers, then converted to bytes at its place, on the pool),
/// one of its threads writes chunk k - 1's bytes and reads and checks chunk
/// k + 1 (`rayon::join`), so no thread waits for the file while others
/// encode, as they did when each chunk was read, encoded, then written.
pub fn encode_chunks(
    rule: &CutRule,
    mut reader: ChunkReader,
    encode: &impl EncodeSegment,
    out: &mut (impl Write + Send),
    itemsize: ItemSize,
    replace_errors: bool,
    progress: &Progress,
) -> Result<(u64, u64), FileError> {
    let mut tokens = 0u64;
    let (mut ready, mut encoding) = (Vec::new(), Vec::new());
    let mut next = read_text(&mut reader, replace_errors);
    while let Some(chunk) = next {
        let chunk = chunk?;
        if progress.is_cancelled() {
            return Err(FileError::Read(CountError::Cancelled));
        }
        encoding.clear();
        // Only the file's start is the start of its text (SentencePiece's dummy prefix).
        let starts_file = chunk.offset == 0;
        let (encoded, (written, read)) = rayon::join(
            || {
                encode_chunk(
                    rule,
                    &chunk.text,
                    starts_file,
                    encode,
                    itemsize,
                    progress,
                    &mut encoding,
                )
            },
            || {
                let written = out.write_all(&ready).map_err(FileError::Write);
                (written, read_text(&mut reader, replace_errors))
            },
        );
        written?;
        tokens += encoded.map_err(|e| match e {
            FileError::Encode(e) => FileError::Encode(e.shifted(chunk.offset as usize)),
            other => other,
        })?;
        progress.add(chunk.bytes as u64);
        std::mem::swap(&mut ready, &mut encoding);
        next = read;
    }
    out.write_all(&ready).map_err(FileError::Write)?;
    out.flush().map_err(FileError::Write)?;
    Ok((tokens, progress.done()))
}

/// A chunk read and checked: its text, its offset in the file and its
/// length in the file (before any replacement of bad bytes).
struct ChunkText {
    offset: u64,
    bytes: usize,
    text: String,
}

/// The next chunk of `reader` as text (bytes that are not UTF-8 are an
/// error naming the file and offset, or U+FFFD when `replace_errors`).
fn read_text(
    reader: &mut ChunkReader,
    replace_errors: bool,
) -> Option<Result<ChunkText, FileError>> {
    let chunk = match reader.next()? {
        Ok(chunk) => chunk,
        Err(e) => return Some(Err(FileError::Read(e))),
    };
    let (offset, bytes) = (chunk.offset, chunk.bytes.len());
    let text = match String::from_utf8(chunk.bytes) {
        Ok(text) => text,
        Err(e) if replace_errors => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        Err(e) => {
            return Some(Err(FileError::Read(CountError::InvalidUtf8 {
                path: chunk.path.to_string(),
                offset: offset + e.utf8_error().valid_up_to() as u64,
            })))
        }
    };
    Some(Ok(ChunkText {
        offset,
        bytes,
        text,
    }))
}

/// Encode `text` (one chunk; `starts_file`: the file's first) segment by
/// segment on the pool and append its ids to `bytes` as ints of `itemsize`;
/// returns how many. An error's offset is in `text`.
fn encode_chunk(
    rule: &CutRule,
    text: &str,
    starts_file: bool,
    encode: &impl EncodeSegment,
    itemsize: ItemSize,
    progress: &Progress,
    bytes: &mut Vec<u8>,
) -> Result<u64, FileError> {
    let parts: Vec<(usize, &str)> = segments(rule, text, SEGMENT_BYTES).collect();
    let runs = Runs::encode(&parts, starts_file, encode, progress)
        .map_err(|(_, e)| FileError::Encode(e))?;
    runs.write_out(
        bytes,
        |k| runs.ids(k).len() * itemsize.bytes(),
        |k, place| write_ids(runs.ids(k), itemsize, place),
    )
    .map_err(FileError::IdTooWide)?;
    Ok(runs.total_ids() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::id_bytes::push_ids;
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
