//! Reading a file in chunks that start and end at safe cuts.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::CountError;
use crate::cut::CutRule;

/// A block of a file that starts and ends at safe boundaries.
pub struct Chunk {
    pub path: Arc<str>,
    /// Byte offset of the block in its file (for error messages).
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// Reads a file as a sequence of chunks cut at safe boundaries.
pub struct ChunkReader {
    file: File,
    path: Arc<str>,
    chunk_size: usize,
    rule: CutRule,
    /// Bytes read but not yet handed out (the tail after the last safe boundary).
    carry: Vec<u8>,
    offset: u64,
    eof: bool,
}

impl ChunkReader {
    pub fn open(path: &str, chunk_size: usize, rule: CutRule) -> Result<Self, CountError> {
        if Path::new(path).is_dir() {
            return Err(CountError::io(path, std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory")));
        }
        let file = File::open(path).map_err(|e| CountError::io(path, e))?;
        Ok(ChunkReader { file, path: Arc::from(path), chunk_size: chunk_size.max(1), rule, carry: vec![], offset: 0, eof: false })
    }

    /// Append up to `want` more bytes to `carry`. The buffer grows with what is
    /// actually read, so a huge `want` (read whole files) allocates nothing up front.
    fn fill(&mut self, want: usize) -> Result<(), CountError> {
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

impl Iterator for ChunkReader {
    type Item = Result<Chunk, CountError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if !self.eof && self.carry.len() < self.chunk_size {
                if let Err(e) = self.fill(self.chunk_size) {
                    self.eof = true;
                    return Some(Err(e));
                }
            }
            if self.carry.is_empty() {
                return None;
            }
            let cut = if self.eof { Some(self.carry.len()) } else { self.rule.last_cut(&self.carry) };
            match cut {
                Some(cut) => {
                    let rest = self.carry.split_off(cut);
                    let bytes = std::mem::replace(&mut self.carry, rest);
                    let chunk = Chunk { path: self.path.clone(), offset: self.offset, bytes };
                    self.offset += cut as u64;
                    return Some(Ok(chunk));
                }
                // No safe boundary yet: read more (the chunk grows past chunk_size).
                None => {
                    let more = self.chunk_size.max(self.carry.len());
                    if let Err(e) = self.fill(more) {
                        self.eof = true;
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}
