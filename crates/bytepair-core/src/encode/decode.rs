//! Decoding: token ids back to bytes. Short tokens are held inline, so joining
//! them is a fixed 16-byte copy per id instead of a memcpy call.

use rustc_hash::FxHashMap;

/// Id -> bytes for decoding: a dense table (one index per id, no hashing) for
/// ids up to twice the number of tokens, a map for the rare ids beyond (e.g. a
/// special token placed at 2**31), so a sparse layout cannot blow up memory.
/// Tokens of at most 15 bytes are also kept inline in `short` (bytes, then the
/// length in the last byte), so decoding copies a fixed 16 bytes per id instead
/// of calling memcpy for three or four.
pub(super) struct Decoder {
    dense: Vec<Option<Box<[u8]>>>,
    short: Vec<[u8; 16]>,
    sparse: FxHashMap<u32, Box<[u8]>>,
    /// Ids from here on are kept in `sparse`.
    limit: usize,
}

/// A token of 1 to 15 bytes as `Decoder::short` holds it; longer or empty ones give zeros.
fn inline_token(bytes: &[u8]) -> [u8; 16] {
    let mut entry = [0u8; 16];
    if (1..16).contains(&bytes.len()) {
        entry[..bytes.len()].copy_from_slice(bytes);
        entry[15] = bytes.len() as u8;
    }
    entry
}

impl Decoder {
    /// An empty decoder for about `n` tokens: ids below `2n + 1024` get
    /// dense slots.
    pub(super) fn with_capacity(n: usize) -> Self {
        let limit = 2 * n + 1024;
        Decoder {
            dense: Vec::with_capacity(n.min(limit)),
            short: Vec::with_capacity(n.min(limit)),
            sparse: FxHashMap::default(),
            limit,
        }
    }

    /// Make `bytes` the bytes of `id`; false if `id` had bytes already
    /// (they are replaced).
    pub(super) fn insert(&mut self, id: u32, bytes: &[u8]) -> bool {
        let i = id as usize;
        if i >= self.limit {
            return self.sparse.insert(id, bytes.into()).is_none();
        }
        if self.dense.len() <= i {
            self.dense.resize(i + 1, None);
            self.short.resize(i + 1, [0; 16]);
        }
        self.short[i] = inline_token(bytes);
        self.dense[i].replace(bytes.into()).is_none()
    }

    /// Append the bytes of `id` to `out`; false if the id is unknown.
    #[inline]
    pub(super) fn push(&self, id: u32, out: &mut Vec<u8>) -> bool {
        if let Some(entry) = self.short.get(id as usize) {
            if entry[15] > 0 {
                push_inline(entry, out);
                return true;
            }
        }
        match self.get(id) {
            Some(bytes) => {
                out.extend_from_slice(bytes);
                true
            }
            None => false,
        }
    }

    /// Ids below this have a dense slot.
    pub(super) fn dense_len(&self) -> usize {
        self.dense.len()
    }

    /// Token `id` inline (bytes, then the length in the last byte), zeros if
    /// it is longer than 15 bytes or unknown.
    pub(super) fn inline(&self, id: u32) -> [u8; 16] {
        self.short.get(id as usize).copied().unwrap_or([0; 16])
    }

    #[inline]
    /// The byte length of token `id` (0 if unknown).
    pub(super) fn len(&self, id: u32) -> usize {
        self.get(id).map_or(0, <[u8]>::len)
    }

    fn get(&self, id: u32) -> Option<&[u8]> {
        match self.dense.get(id as usize) {
            Some(entry) => entry.as_deref(),
            None => self.sparse.get(&id).map(|b| &**b),
        }
    }
}

/// Append the first `len` (at most N) items of `items` to `out` as one
/// fixed-size copy: `extend_from_slice` of a variable length calls memmove,
/// a visible share of encoding prose when a cache hit copied its ids that way.
#[inline]
pub(super) fn push_fixed<T: Copy, const N: usize>(items: &[T; N], len: usize, out: &mut Vec<T>) {
    assert!(len <= N);
    out.reserve(N);
    // SAFETY: `reserve` left room for N more items after `out.len()`; all N
    // are written, and only the first `len` become part of the vector.
    unsafe {
        let end = out.len();
        std::ptr::copy_nonoverlapping(items.as_ptr(), out.as_mut_ptr().add(end), N);
        out.set_len(end + len);
    }
}

/// Append the token held inline in `entry` (its bytes, then its length, at
/// least 1 and below N, in the last byte, as `Encoder::inline_token`) to `out`.
#[inline]
pub fn push_inline<const N: usize>(entry: &[u8; N], out: &mut Vec<u8>) {
    push_fixed(entry, entry[N - 1] as usize, out);
}
