//! Reading a file in chunks that start and end at safe cuts.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::CountError;
use crate::cut::CutRule;
use crate::memory::BufferPool;

/// A text with no safe cut in this many bytes (a run of one byte, /dev/zero)
/// is cut here anyway, at a UTF-8 character boundary, so memory stays bounded
/// for any input. The cut lands FORCED_CUT bytes after the last safe cut
/// before the run, whatever the chunk size, so the counts still do not depend
/// on chunk size or thread count; the pre-token it splits is one of at least
/// 64 MiB, counted as words of at most `max_word_bytes` anyway.
pub const FORCED_CUT: usize = 64 << 20;

/// The last UTF-8 character boundary at or before `at` in `carry` (which
/// holds `at` bytes or more): `at` unless a character starting in the last 3
/// bytes before it continues past it. Judged from the lead byte, since the
/// byte at `at` may not be read yet.
fn forced_cut(carry: &[u8], at: usize) -> usize {
    let Some(lead) = (at.saturating_sub(3)..at)
        .rev()
        .find(|&i| carry[i] & 0xC0 != 0x80)
    else {
        return at;
    };
    let width = match carry[lead] {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    };
    if lead + width <= at || lead == 0 {
        at
    } else {
        lead
    }
}

/// Where the documents of `buffer` lie in it, a block of a text whose
/// documents are separated by `separator`, and where the unfinished last
/// piece starts (the caller reads on from it in the next block); with
/// `last`, that piece is a document too. Empty pieces (a separator at either
/// end, two in a row) are no documents.
pub fn document_ranges(buffer: &[u8], separator: &[u8], last: bool) -> (Vec<Range<usize>>, usize) {
    assert!(!separator.is_empty(), "an empty separator");
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut push = |piece: Range<usize>| {
        if !piece.is_empty() {
            ranges.push(piece);
        }
    };
    for at in memchr::memmem::find_iter(buffer, separator) {
        // A separator that overlaps the previous one's end is inside a document.
        if at < start {
            continue;
        }
        push(start..at);
        start = at + separator.len();
    }
    if last {
        push(start..buffer.len());
        start = buffer.len();
    }
    (ranges, start)
}

/// A block of a file that starts and ends at safe boundaries.
pub struct Chunk {
    pub path: Arc<str>,
    /// Byte offset of the block in its file (for error messages).
    pub offset: u64,
    pub bytes: Vec<u8>,
}

impl Chunk {
    /// The chunk as text; bytes that are not UTF-8 are an error naming the
    /// file and byte offset, or U+FFFD when `replace_errors` (chunks are cut
    /// at ASCII bytes, so replacing per chunk equals replacing the whole file).
    pub fn text(&self, replace_errors: bool) -> Result<std::borrow::Cow<'_, str>, CountError> {
        match crate::str_from_utf8(&self.bytes) {
            Ok(text) => Ok(std::borrow::Cow::Borrowed(text)),
            Err(_) if replace_errors => Ok(String::from_utf8_lossy(&self.bytes)),
            Err(e) => Err(CountError::InvalidUtf8 {
                path: self.path.to_string(),
                offset: self.offset + e.valid_up_to() as u64,
            }),
        }
    }
}

/// Where a `ChunkReader` may end a chunk.
enum Cuts {
    /// At the safe cuts of a pre-tokenizer's rule.
    Rule(CutRule),
    /// Before the last newline past the chunk's first byte: each chunk after
    /// a file's first starts with the newline that ends the line before it
    /// (SentencePiece counting's chunks of whole lines, `sentencepiece::files`).
    BeforeNewline,
}

/// Reads a file as a sequence of chunks cut at safe boundaries, of about
/// `chunk_size` bytes (at most FORCED_CUT).
pub struct ChunkReader {
    file: File,
    path: Arc<str>,
    chunk_size: usize,
    /// FORCED_CUT (smaller in tests; never for lines).
    forced_cut: usize,
    cuts: Cuts,
    /// Bytes read but not yet handed out (the tail after the last safe boundary).
    carry: Vec<u8>,
    offset: u64,
    eof: bool,
    /// Where the buffers of the chunks come from (the caller hands them
    /// back), if anywhere.
    pool: Option<Arc<BufferPool<u8>>>,
}

impl ChunkReader {
    pub fn open(path: &str, chunk_size: usize, rule: CutRule) -> Result<Self, CountError> {
        if Path::new(path).is_dir() {
            return Err(CountError::io(
                path,
                std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        let file = File::open(path).map_err(|e| CountError::io(path, e))?;
        Ok(ChunkReader::new(path, file, chunk_size, Cuts::Rule(rule)))
    }

    /// Whole lines of `file` (opened by the caller, read from where it
    /// stands; `path` names it in errors), in chunks of about `chunk_size`
    /// bytes cut before a newline (`Cuts::BeforeNewline`; a longer line
    /// makes a longer chunk, never cut), each in a buffer taken from `pool`
    /// when it holds one: the caller keeps each chunk's bytes there once it
    /// is done with them, so the buffers are reused, not faulted in afresh.
    pub fn lines(path: &str, file: File, chunk_size: usize, pool: Arc<BufferPool<u8>>) -> Self {
        let mut reader = ChunkReader::new(path, file, chunk_size, Cuts::BeforeNewline);
        reader.forced_cut = usize::MAX;
        reader.carry = pool.take(|_| true).unwrap_or_default();
        reader.carry.clear();
        reader.pool = Some(pool);
        reader
    }

    fn new(path: &str, file: File, chunk_size: usize, cuts: Cuts) -> Self {
        ChunkReader {
            file,
            path: Arc::from(path),
            chunk_size: chunk_size.clamp(1, FORCED_CUT),
            forced_cut: FORCED_CUT,
            cuts,
            carry: vec![],
            offset: 0,
            eof: false,
            pool: None,
        }
    }

    /// Never cut where the rule finds no safe cut (no `FORCED_CUT`): every
    /// chunk is then encoded to the ids of its part of the whole file, at the
    /// price of holding a text with no safe cut whole.
    pub fn without_forced_cut(mut self) -> Self {
        self.forced_cut = usize::MAX;
        self
    }

    /// Append up to `want` more bytes to `carry`. The buffer grows with what is
    /// actually read, so a huge `want` (read whole files) allocates nothing up front.
    fn fill(&mut self, want: usize) -> Result<(), CountError> {
        // Room for the usual chunk at once: growing by doubling from the small
        // tail of the last chunk reallocated (and faulted in fresh pages) ~8
        // times per chunk, while the other threads waited for the reader.
        self.carry.reserve(want.min(self.chunk_size.max(1 << 20)));
        let want = u64::try_from(want).unwrap_or(u64::MAX);
        let got = (&mut self.file)
            .take(want)
            .read_to_end(&mut self.carry)
            .map_err(|e| CountError::io(&self.path, e))?;
        if (got as u64) < want {
            self.eof = true;
        }
        Ok(())
    }
}

impl ChunkReader {
    /// The last place in `carry` a chunk may end, if any.
    fn last_cut(&self) -> Option<usize> {
        match &self.cuts {
            Cuts::Rule(rule) => rule.last_cut(&self.carry),
            Cuts::BeforeNewline => memchr::memrchr(b'\n', self.carry.get(1..)?).map(|at| at + 1),
        }
    }

    /// `carry[..cut]`, out of `carry`, which keeps the rest (in a buffer of
    /// the pool, when there is one).
    fn split_carry(&mut self, cut: usize) -> Vec<u8> {
        let Some(pool) = self.pool.as_ref().filter(|_| cut < self.carry.len()) else {
            let rest = self.carry.split_off(cut);
            return std::mem::replace(&mut self.carry, rest);
        };
        let mut rest = pool.take(|_| true).unwrap_or_default();
        rest.clear();
        rest.extend_from_slice(&self.carry[cut..]);
        self.carry.truncate(cut);
        std::mem::replace(&mut self.carry, rest)
    }
}

impl Iterator for ChunkReader {
    type Item = Result<Chunk, CountError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if !self.eof && self.carry.len() < self.chunk_size {
                if let Err(e) = self.fill(self.chunk_size - self.carry.len()) {
                    self.eof = true;
                    return Some(Err(e));
                }
            }
            if self.carry.is_empty() {
                return None;
            }
            let cut = if self.eof {
                Some(self.carry.len())
            } else if self.carry.len() >= self.forced_cut {
                self.last_cut()
                    .or_else(|| Some(forced_cut(&self.carry, self.forced_cut)))
            } else {
                self.last_cut()
            };
            match cut {
                Some(cut) => {
                    let bytes = self.split_carry(cut);
                    let chunk = Chunk {
                        path: self.path.clone(),
                        offset: self.offset,
                        bytes,
                    };
                    self.offset += cut as u64;
                    return Some(Ok(chunk));
                }
                // No safe boundary yet: read more (the chunk grows past
                // chunk_size, up to FORCED_CUT).
                None => {
                    let more = self
                        .chunk_size
                        .max(self.carry.len())
                        .min(self.forced_cut - self.carry.len());
                    if let Err(e) = self.fill(more) {
                        self.eof = true;
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The non-empty pieces of `text` between `||` separators, found left to right.
    fn pieces_between_bars(mut text: &[u8]) -> Vec<&[u8]> {
        let mut pieces = vec![];
        while let Some(at) = text.windows(2).position(|w| w == b"||") {
            pieces.push(&text[..at]);
            text = &text[at + 2..];
        }
        pieces.push(text);
        pieces.into_iter().filter(|p| !p.is_empty()).collect()
    }

    #[test]
    fn documents_are_the_non_empty_pieces_between_separators() {
        for text in [
            &b"ab||cd||||e||"[..],
            b"||x",
            b"",
            b"||",
            b"a|||b",
            b"||||||",
            b"a||||b",
        ] {
            let (ranges, tail) = document_ranges(text, b"||", true);
            let got: Vec<&[u8]> = ranges.into_iter().map(|r| &text[r]).collect();
            assert_eq!(
                (got, tail),
                (pieces_between_bars(text), text.len()),
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        // Without `last`, the piece after the last separator waits for the next block.
        let (ranges, tail) = document_ranges(b"ab||cd||ef", b"||", false);
        assert_eq!((ranges, tail), (vec![0..2, 4..6], 8));
    }

    /// Lines are cut before a newline: the chunks tile the file from where
    /// it stood, each after the first starts with a newline and ends before
    /// one (or at the end), a line longer than a chunk stays whole, and the
    /// buffers come from the pool.
    #[test]
    fn lines_are_cut_before_a_newline_in_buffers_of_the_pool() {
        let long = "x".repeat(300);
        let text = format!("\n\nab\ncd\n\n{long}\nef\n{long}");
        let path = std::env::temp_dir().join(format!("bytepair-lines-{}.txt", std::process::id()));
        std::fs::write(&path, format!("skipped{text}")).unwrap();
        for chunk_size in [1, 2, 7, 64, 1000] {
            let mut file = File::open(&path).unwrap();
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(7)).unwrap();
            let pool = Arc::new(BufferPool::new(4));
            let kept = Vec::with_capacity(4096);
            let kept_at = kept.as_ptr();
            pool.keep(kept);
            let reader = ChunkReader::lines("name", file, chunk_size, pool.clone());
            let chunks: Vec<Chunk> = reader.map(Result::unwrap).collect();
            let mut offset = 0;
            for (i, chunk) in chunks.iter().enumerate() {
                assert_eq!((&*chunk.path, chunk.offset), ("name", offset));
                offset += chunk.bytes.len() as u64;
                assert!(!chunk.bytes.is_empty());
                assert!(
                    i == 0 || chunk.bytes[0] == b'\n',
                    "chunk {i} of {chunk_size}"
                );
                let end = offset as usize;
                assert!(end == text.len() || text.as_bytes()[end] == b'\n');
            }
            let bytes: Vec<&[u8]> = chunks.iter().map(|c| &c.bytes[..]).collect();
            assert_eq!(bytes.concat(), text.as_bytes(), "chunk size {chunk_size}");
            assert!(chunks
                .iter()
                .any(|c| c.bytes.windows(300).any(|w| w == long.as_bytes())));
            let pooled = chunks.iter().any(|c| c.bytes.as_ptr() == kept_at);
            assert!(
                pooled,
                "a chunk in the pool's buffer, chunk size {chunk_size}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }

    /// The chunks of `text` with a small forced cut, for every chunk size.
    fn chunks(text: &[u8], chunk_size: usize, forced: usize) -> Vec<Vec<u8>> {
        let path = std::env::temp_dir().join(format!(
            "bytepair-forced-{}-{chunk_size}.txt",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        let mut reader = ChunkReader::open(
            &path.to_string_lossy(),
            chunk_size,
            CutRule::new("gpt2", &[]),
        )
        .unwrap();
        reader.chunk_size = reader.chunk_size.min(forced);
        reader.forced_cut = forced;
        let out = reader.map(|c| c.unwrap().bytes).collect();
        std::fs::remove_file(&path).unwrap();
        out
    }

    #[test]
    fn a_run_without_safe_cuts_is_cut_at_the_same_places_for_every_chunk_size() {
        let mut text = b"first line\nsecond ".to_vec();
        text.extend(std::iter::repeat_n(0u8, 500));
        text.extend("\u{e9}".repeat(100).as_bytes());
        text.extend(b" tail\nend\n");
        let want = chunks(&text, 100, 100);
        assert!(
            want.iter().all(|c| c.len() <= 100),
            "every chunk within the forced cut"
        );
        assert_eq!(want.concat(), text);
        assert!(
            want.iter().all(|c| std::str::from_utf8(c).is_ok()),
            "cuts on character boundaries"
        );
        // Chunks may end at different safe cuts; the forced cuts, and so the
        // counts, are the same for every chunk size.
        let rule = CutRule::new("gpt2", &[]);
        let forced = |c: &[Vec<u8>]| -> Vec<usize> {
            let ends = c.iter().scan(0, |end, chunk| {
                *end += chunk.len();
                Some(*end)
            });
            ends.filter(|&end| end < text.len() && rule.last_cut(&text[..end + 1]) != Some(end))
                .collect()
        };
        let pre = crate::PreTokenizer::new("gpt2", &[]).unwrap();
        let counts = |c: &[Vec<u8>]| {
            let mut counts = crate::count::WordCounts::default();
            for chunk in c {
                crate::count::count_text(&pre, std::str::from_utf8(chunk).unwrap(), &mut counts)
                    .unwrap();
            }
            counts
        };
        assert_eq!(forced(&want).len(), 7);
        for chunk_size in [1, 7, 33, 64, 99] {
            let got = chunks(&text, chunk_size, 100);
            assert_eq!(forced(&got), forced(&want), "chunk size {chunk_size}");
            assert_eq!(counts(&got), counts(&want), "chunk size {chunk_size}");
        }
    }
}
