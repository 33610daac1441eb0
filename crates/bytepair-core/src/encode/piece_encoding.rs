//! Pre-tokens to ids through the thread's caches: the preset path's batches
//! (keys and hashes computed, cache slots fetched ahead, hits at home copied
//! with no per-piece bookkeeping), then one piece at a time by length (one or
//! two bytes from the vocabulary's tables, up to 15 bytes and 16 to 31 through
//! their piece caches, longer through the long-piece map), and the merge of a
//! piece no cache holds.

use crate::pretokenize::{Pieces, Preset};
use crate::shortkey::{hash_mid, load_mid, MAX_MID as MID_PIECE};

use super::cache::{hash_key, BatchArrays, Scratch};
use super::merge::{merge_by_rank, merge_long, merge_short, LONG_PIECE};
use super::superwords::spans_words;
use super::tables::{load_key, piece_key, CACHED_PIECE, NO_ID};
use super::{EncodeError, Encoder, CANCEL};

/// Pieces the pre-tokenizer hands over at a time (see `encode_preset_pieces`).
/// As for SentencePiece's words (`sentencepiece/words.rs`): 1024 pieces,
/// slots fetched into L1 256 pieces ahead and no fetch into L2 a batch
/// ahead, whose fetches, issued all at once, queued behind each other.
/// Warm 10 MB, thread CPU time, idle host, medians of 3 against 256 pieces,
/// 64 ahead and the L2 fetch: o200k enwiki 646 -> 681 MB/s, code 621 -> 664,
/// multilingual 264 -> 267; cl100k 670 -> 719, 662 -> 710, 262 -> 271
/// (512 pieces: 1-2% below 1024).
pub(super) const BATCH: usize = 1024;
/// How many pieces ahead of its probe a cache slot is fetched.
const PREFETCH_AHEAD: usize = 256;

impl Encoder {
    /// Encode `text` (holding no special tokens), appending its ids to `out`.
    /// Every piece is encoded; the first that fails is the error.
    pub(super) fn encode_pieces(
        &self,
        text: &str,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        match self.pre.preset() {
            Some(preset) => self.encode_preset_pieces(preset, text, scratch, out),
            None => self.pieces_into(text, out, &mut |piece, out| {
                self.encode_piece(piece, scratch, out)
            }),
        }
    }

    /// `encode_pieces` for a preset pattern, in batches of `BATCH` pieces: the
    /// pre-tokenizer fills the batch's boundaries, then every short piece's key
    /// and hash are computed and its cache slot fetched ahead (a cache of
    /// 10^5 pieces does not fit the CPU's caches), then the pieces are looked up
    /// in turn, so the loads of one batch overlap instead of waiting one by one.
    fn encode_preset_pieces(
        &self,
        preset: Preset,
        text: &str,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        let b = text.as_bytes();
        // The batch's arrays are kept in `scratch`: zeroing 8 KiB on the
        // stack per call weighed on texts of a hundred bytes.
        let mut batch = scratch.batch.take().unwrap_or_else(BatchArrays::new);
        let BatchArrays {
            bounds,
            keys,
            hashes,
        } = &mut *batch;
        let mut error = None;
        let mut pieces = Pieces::new(b, preset);
        loop {
            let n = pieces.fill(bounds);
            if n == 0 {
                break;
            }
            scratch.pieces_seen += n as u64;
            // Keys and hashes of the pieces of up to 15 bytes (key 0 for the
            // others), their slots fetched into L1 `PREFETCH_AHEAD` pieces
            // ahead of their probes (below); a piece of 16 to 31
            // bytes gets the hash of its two-part key, and its slot in that
            // cache is fetched now, a batch ahead (they are few: fetching them
            // with the short ones, 64 ahead, cost a branch per piece, which
            // showed in encoding English).
            for i in 0..n {
                let (start, len) = (bounds[i], bounds[i + 1] - bounds[i]);
                let cached = len <= CACHED_PIECE;
                keys[i] = if cached { load_key(b, start, len) } else { 0 };
                hashes[i] = hash_key(keys[i]);
                if !cached && len <= MID_PIECE {
                    hashes[i] = hash_mid(load_mid(b, start, len));
                    scratch.mid.prefetch(hashes[i]);
                }
            }
            // Fetch the slots a few pieces ahead of their probes: far enough
            // to hide a miss to memory, few enough in flight for the CPU.
            for &hash in &hashes[..n.min(PREFETCH_AHEAD)] {
                scratch.pieces.prefetch(hash);
            }
            // Hits at home with ids inline (all but a few pieces) store four
            // lanes at a raw cursor and advance it by their count, with no
            // length update or capacity check per piece; anything else goes
            // through `out` and refreshes the cursor and the table view.
            out.reserve(4 * n);
            let mut homes = scratch.pieces.home_slots();
            let (mut w, mut dst) = (out.len(), out.as_mut_ptr());
            for i in 0..n {
                if i + PREFETCH_AHEAD < n {
                    scratch.pieces.prefetch(hashes[i + PREFETCH_AHEAD]);
                }
                let (key, hash) = (keys[i], hashes[i]);
                if key != 0 {
                    if let Some((lanes, count)) = homes.inline_ids(key, hash) {
                        // SAFETY: `out` has room for 4 more ids per piece left
                        // in the batch (reserved above and after every slow
                        // piece), so 4 fit at `w`, its length.
                        unsafe { dst.add(w).cast::<[u32; 4]>().write_unaligned(lanes) };
                        w += count;
                        continue;
                    }
                }
                // SAFETY: the first `w` ids were written (by `out` or the fast path).
                unsafe { out.set_len(w) };
                if let Err(e) = self.encode_batch_piece(b, &bounds[..], i, key, hash, scratch, out)
                {
                    error.get_or_insert(e);
                }
                out.reserve(4 * (n - i));
                (w, dst, homes) = (out.len(), out.as_mut_ptr(), scratch.pieces.home_slots());
            }
            // SAFETY: as above.
            unsafe { out.set_len(w) };
        }
        scratch.batch = Some(batch);
        error.map_or(Ok(()), Err)
    }

    /// Piece `i` of a batch (bounds `bounds`, key `key` and hash `hash` as
    /// `encode_preset_pieces` made them) when it is not a hit at home.
    #[allow(clippy::too_many_arguments)]
    fn encode_batch_piece(
        &self,
        b: &[u8],
        bounds: &[usize],
        i: usize,
        key: u128,
        hash: u64,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        if key != 0 && scratch.pieces.push_hit_home(key, hash, out) {
            return Ok(());
        }
        let piece = &b[bounds[i]..bounds[i + 1]];
        match key {
            0 if piece.len() <= MID_PIECE => self.encode_mid(
                piece,
                load_mid(b, bounds[i], piece.len()),
                hash,
                scratch,
                out,
            ),
            0 => self.encode_piece(piece, scratch, out),
            key => self.encode_short_miss(piece, key, hash, scratch, out),
        }
    }

    /// Encode one pre-token, appending its ids to `out`: one or two bytes from
    /// the vocabulary's tables, others through the caches (by length: up to
    /// 15 bytes, 16 to 31, longer).
    pub(super) fn encode_piece(
        &self,
        piece: &[u8],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        match piece.len() {
            0 => Ok(()),
            // Single bytes and byte pairs are array lookups: cheaper than the
            // cache, and random Latin-1 text has too many pairs for it.
            1 | 2 => match self.vocab.ids.get(piece) {
                Some(id) => {
                    out.push(id);
                    Ok(())
                }
                None => self.merge_piece(piece, scratch, out),
            },
            len if len <= CACHED_PIECE => {
                let key = piece_key(piece);
                let hash = hash_key(key);
                if scratch.pieces.push_hit_home(key, hash, out) {
                    return Ok(());
                }
                self.encode_short_miss(piece, key, hash, scratch, out)
            }
            len if len <= MID_PIECE => {
                let key = load_mid(piece, 0, len);
                self.encode_mid(piece, key, hash_mid(key), scratch, out)
            }
            _ => {
                if scratch.long.push_hit(piece, out) {
                    return Ok(());
                }
                let start = out.len();
                self.whole_or_merged(self.vocab.ids.get(piece), piece, scratch, out)?;
                scratch.long.insert(piece, &out[start..]);
                Ok(())
            }
        }
    }

    /// A piece of 3 to 15 bytes the cache does not hold: its id if it is a
    /// token, else the ids of merging it; then cached.
    fn encode_short_miss(
        &self,
        piece: &[u8],
        key: u128,
        hash: u64,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        let start = out.len();
        self.whole_or_merged(self.vocab.ids.get_short(key), piece, scratch, out)?;
        scratch.pieces.insert(key, hash, &out[start..]);
        Ok(())
    }

    /// A piece of 16 to 31 bytes (two-part key `key`, hash `hash`): through
    /// the cache of such pieces.
    fn encode_mid(
        &self,
        piece: &[u8],
        key: [u128; 2],
        hash: u64,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        if scratch.mid.push_hit(key, hash, out) {
            return Ok(());
        }
        let start = out.len();
        self.whole_or_merged(self.vocab.ids.get(piece), piece, scratch, out)?;
        scratch.mid.insert(key, hash, &out[start..]);
        Ok(())
    }

    /// Append `whole`, the id of `piece` as one token if it is one, or else
    /// the ids of merging it.
    #[inline]
    pub(super) fn whole_or_merged(
        &self,
        whole: Option<u32>,
        piece: &[u8],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        match whole {
            Some(id) => {
                out.push(id);
                Ok(())
            }
            None => self.merge_piece(piece, scratch, out),
        }
    }

    /// Merge a piece that is not a token, appending its ids.
    fn merge_piece(
        &self,
        piece: &[u8],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        if let Some(&b) = piece
            .iter()
            .find(|&&b| self.vocab.pair_ranks.byte_ids[b as usize] == NO_ID)
        {
            return Err(EncodeError::NotInVocabulary(vec![b]));
        }
        if spans_words(piece) && piece.len() < u32::MAX as usize {
            return self.merge_words(piece, scratch, out);
        }
        if piece.len() < LONG_PIECE {
            merge_short(
                &self.vocab.pair_ranks,
                piece,
                &mut scratch.parts,
                &mut scratch.hot,
                out,
            );
        } else if piece.len() < u32::MAX as usize {
            let cancelled = CANCEL.with_borrow(|cancel| {
                !merge_long(&self.vocab.pair_ranks, piece, out, cancel.as_deref())
            });
            if cancelled {
                return Err(EncodeError::Cancelled);
            }
        } else {
            // Positions in `merge_long` are u32; a 4 GiB pre-token takes the byte-slice heap.
            let bounds = merge_by_rank(piece, |bytes| self.vocab.ranks.get(bytes), || false);
            self.push_parts(piece, &bounds, out)?;
        }
        Ok(())
    }
}
