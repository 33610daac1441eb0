//! Counting text files for training as they are read: the pool's threads
//! take turns reading the next ~256 KiB of whole lines into a buffer they
//! reuse (`count::ChunkReader::lines`), check it as UTF-8 and count its units (`count::count_with`), so
//! reading overlaps counting and no copy of a whole file is made. (Python's
//! `open(path, "rb").read()` of 10 MB, then a serial UTF-8 check, took ~5
//! ms of a ~90 ms training run on enwiki: the copy into fresh pages,
//! zeroed by the kernel as they were first touched.)

use std::fs::File;
use std::sync::Arc;

use aho_corasick::AhoCorasick;

use super::count::{count_with, space_view, SpmCounts, CHUNK_BYTES};
use super::normalize::Normalizer;
use super::train::SpmTrainOptions;
use crate::count::{ChunkReader, CountError};
use crate::memory::BufferPool;
use crate::progress::Progress;

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
    // A buffer a thread, and one being filled.
    let pool = Arc::new(BufferPool::new(rayon::current_num_threads() + 1));
    let chunks = files.into_iter().flat_map(|(name, file)| {
        // Chunks of whole lines, each after a file's first starting with the
        // newline that ends the line before it (as `count`'s chunks of a text).
        ChunkReader::lines(&name, file, CHUNK_BYTES, pool.clone())
    });
    let view = space_view(normalizer, options);
    count_with(normalizer, user, options, view, |splitter, limits| {
        crate::count::count_parallel(chunks, text_bytes, limits, progress, |chunk, tally| {
            // Chunks end before a newline, so a valid file is valid in
            // every chunk and a bad byte's offset is the file's.
            tally.add_text(splitter, &chunk.text(false)?)?;
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
