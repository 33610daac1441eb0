//! Counting text files for training as they are read: the pool's threads
//! take turns reading the next ~256 KiB of whole lines into a buffer they
//! reuse, check it as UTF-8 and count its units (`count::count_with`), so
//! reading overlaps counting and no copy of a whole file is made. (Python's
//! `open(path, "rb").read()` of 10 MB, then a serial UTF-8 check, took ~5
//! ms of a ~90 ms training run on enwiki: the copy into fresh pages,
//! zeroed by the kernel as they were first touched.)

use std::fs::File;
use std::io::Read;

use aho_corasick::AhoCorasick;

use super::count::{count_with, space_view, SpmCounts, CHUNK_BYTES};
use super::normalize::Normalizer;
use super::train::SpmTrainOptions;
use crate::count::CountError;
use crate::memory::BufferPool;
use crate::progress::Progress;

/// Lines of file `file` (an index into the files counted) from byte `offset`
/// of it: whole lines, each chunk after a file's first starting with the
/// newline that ends the line before it (as `count`'s chunks of a text).
struct LineChunk {
    file: usize,
    offset: u64,
    bytes: Vec<u8>,
}

/// Reads files one after the other as `LineChunk`s of about `CHUNK_BYTES`
/// (a longer line makes a longer chunk), into buffers taken from `pool`.
struct LineChunks<'a> {
    files: Vec<(String, File)>,
    /// The file being read.
    file: usize,
    /// Bytes read after its last chunk (from its last newline on).
    carry: Vec<u8>,
    /// Where `carry` starts in the file.
    offset: u64,
    pool: &'a BufferPool<u8>,
}

impl LineChunks<'_> {
    /// The next chunk of the current file, or None at its end.
    fn next_of_file(&mut self) -> Result<Option<LineChunk>, CountError> {
        let (path, file) = &mut self.files[self.file];
        let mut buffer = self.pool.take(|_| true).unwrap_or_default();
        buffer.clear();
        buffer.append(&mut self.carry);
        let mut want = CHUNK_BYTES;
        let cut = loop {
            buffer.reserve(want);
            let got = file
                .take(want as u64)
                .read_to_end(&mut buffer)
                .map_err(|e| CountError::io(path, e))?;
            if got < want {
                break buffer.len(); // the end of the file
            }
            // The last newline, past the one that starts the chunk.
            if let Some(at) = memchr::memrchr(b'\n', &buffer[1..]) {
                break at + 1;
            }
            want = buffer.len(); // a line longer than the buffer
        };
        if buffer.is_empty() {
            self.pool.keep(buffer);
            return Ok(None);
        }
        self.carry.extend_from_slice(&buffer[cut..]);
        buffer.truncate(cut);
        let chunk = LineChunk {
            file: self.file,
            offset: self.offset,
            bytes: buffer,
        };
        self.offset += cut as u64;
        Ok(Some(chunk))
    }
}

impl Iterator for LineChunks<'_> {
    type Item = Result<LineChunk, CountError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.file < self.files.len() {
            match self.next_of_file() {
                Ok(None) => {
                    self.file += 1;
                    self.offset = 0;
                }
                Err(e) => {
                    self.file = self.files.len();
                    return Some(Err(e));
                }
                Ok(Some(chunk)) => return Some(Ok(chunk)),
            }
        }
        None
    }
}

/// Count the units of the text files `files` (name, file opened for reading,
/// read from its current position; each a text of lines, as a `&str` of
/// `count_texts`) on the current rayon pool, with the counts `count_texts`
/// gives for the same texts.
///
/// # Errors
/// `CountError::Io` for a file that cannot be read, `InvalidUtf8` (its name
/// and the byte offset of a bad byte: with several bad ones, not always the
/// first) for one that is not UTF-8, `Cancelled` through `progress`.
pub fn count_files(
    files: Vec<(String, File)>,
    normalizer: &Normalizer,
    user: Option<&AhoCorasick>,
    options: &SpmTrainOptions,
    progress: &Progress,
) -> Result<SpmCounts, CountError> {
    let text_bytes = files
        .iter()
        .filter_map(|(_, f)| f.metadata().ok())
        .map(|m| m.len())
        .sum();
    let names: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
    // A buffer a thread, and one being filled.
    let pool = BufferPool::new(rayon::current_num_threads() + 1);
    let chunks = LineChunks {
        files,
        file: 0,
        carry: Vec::new(),
        offset: 0,
        pool: &pool,
    };
    let view = space_view(normalizer, options);
    count_with(normalizer, user, options, view, |splitter, limits| {
        crate::count::count_parallel(chunks, text_bytes, limits, progress, |chunk, tally| {
            // Chunks end before a newline, so a valid file is valid in
            // every chunk and a bad byte's offset is the file's.
            let text = crate::str_from_utf8(&chunk.bytes).map_err(|e| CountError::InvalidUtf8 {
                path: names[chunk.file].clone(),
                offset: chunk.offset + e.valid_up_to() as u64,
            })?;
            tally.add_text(splitter, text)?;
            progress.add(chunk.bytes.len() as u64);
            pool.keep(chunk.bytes);
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sentencepiece::count::count_texts;
    use crate::sentencepiece::count::tests::{identity_rules, units};

    fn temporary(name: &str, bytes: &[u8]) -> (String, File) {
        let path = std::env::temp_dir().join(format!("bytepair-spm-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        (name.to_string(), file)
    }

    fn normalizer(dummy: bool) -> Normalizer {
        Normalizer::new(identity_rules(dummy), None)
    }

    /// Files read in chunks count what their texts count: lines across
    /// chunk ends, a line longer than two chunks, blank lines, a file
    /// without a final newline, an empty file, a file that is one newline.
    #[test]
    fn files_count_what_their_texts_count() {
        let line = "x  naïve a\u{300}b \u{2581}y 12,345 日本語テキスト 😀😀 z   ";
        let body = format!("{line}\n\n  lead\n{line}\ntrail  \n");
        let big = body.repeat(CHUNK_BYTES / body.len() + 7)
            + &"long日本語 ".repeat(CHUNK_BYTES / 5)
            + "\n"
            + &body.repeat(9);
        let texts = ["\n\nfirst line", &big, "no newline at the end", "", "\n"];
        for dummy in [true, false] {
            let normalizer = normalizer(dummy);
            let options = SpmTrainOptions::default();
            let progress = Progress::default();
            let want = count_texts(&texts, &normalizer, None, &options, &progress).unwrap();
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let files = texts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| temporary(&format!("{dummy}-{threads}-{i}"), t.as_bytes()))
                    .collect();
                let progress = Progress::default();
                let got = pool
                    .install(|| count_files(files, &normalizer, None, &options, &progress))
                    .unwrap();
                assert_eq!(got.bytes, want.bytes);
                assert_eq!(
                    units(&got),
                    units(&want),
                    "dummy {dummy}, {threads} threads"
                );
                let total: usize = texts.iter().map(|t| t.len()).sum();
                assert_eq!(progress.done(), total as u64);
            }
        }
    }

    /// Bytes that are not UTF-8 are an error naming the file and the byte
    /// offset in it, also past the first chunk and in a character cut by a
    /// newline.
    #[test]
    fn bad_utf8_names_the_file_and_offset() {
        let good = "fine line\n".repeat(CHUNK_BYTES / 5);
        let cases: Vec<(Vec<u8>, u64)> = vec![
            (
                [good.as_bytes(), b"then \xff here\n"].concat(),
                good.len() as u64 + 5,
            ),
            (
                [b"ab\xe6\x97".as_slice(), b"\n", good.as_bytes()].concat(),
                2,
            ),
            (
                [good.as_bytes(), b"x\xe6\x97\nmore"].concat(),
                good.len() as u64 + 1,
            ),
        ];
        for (i, (bytes, offset)) in cases.into_iter().enumerate() {
            let files = vec![
                temporary(&format!("ok{i}"), good.as_bytes()),
                temporary(&format!("bad{i}"), &bytes),
            ];
            let options = SpmTrainOptions::default();
            let error = count_files(
                files,
                &normalizer(true),
                None,
                &options,
                &Progress::default(),
            );
            match error {
                Err(CountError::InvalidUtf8 { path, offset: at }) => {
                    assert_eq!((path, at), (format!("bad{i}"), offset))
                }
                other => panic!("case {i}: {:?}", other.map(|c| c.bytes)),
            }
        }
    }
}
