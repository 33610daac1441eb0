//! Merging a pre-token that spans words (SuperBPE's stage-2 pieces: the rest
//! of a line) word by word, with the ids of plain BPE of the whole piece.
//!
//! A piece is cut before each space that follows another byte (`" by"`,
//! `" the"`, `" way,"`). Each part (a region) is merged on its own, through
//! the per-thread caches (words repeat), then the merges across the cuts are
//! applied to the regions' tokens in rank order. That equals rank-ordered BPE
//! of the whole piece when no merge crosses a cut before the regions on both
//! sides are done merging, which is checked, not assumed:
//!
//! * A region's merging ends with the highest rank it applies (its *depth*:
//!   the deepest of `Seams::depth` over its tokens, the last merge of BPE on
//!   a token's bytes). Tokens never span a cut before it is crossed, so up to
//!   then each region evolves exactly as it does alone.
//! * A merge across a cut joins the region's last token of the moment on the
//!   left with the right region's first one. Those are the tokens on the
//!   "right spine" of the left region's last token (it, its right part, that
//!   part's right part... down to a byte) and the "left spine" of the right
//!   region's first token. A cut is safe when no pair of spine tokens joins
//!   into a token ranked below the depth of both regions (`floor` settles
//!   most cuts without a lookup: the lowest rank of any token holding the
//!   bytes around the cut). An unsafe cut joins its two regions, which are
//!   merged afresh (~2% of the cuts of enwiki with a 32k SuperBPE vocabulary).
//! * Across the cuts, merges go lowest (rank, position) first, as plain BPE
//!   orders them. Each one must come after the regions next to the token it
//!   makes are done (their depth is at most its rank), else a later merge
//!   could meet a token those regions have not finished: then the piece is
//!   merged whole instead.
//!
//! A part that is itself a token is one id in the cache (tiktoken's rule for
//! a whole pre-token); inside a longer piece it must be what BPE makes of its
//! bytes, so a token BPE does not reach (rare, in tables no BPE trainer
//! made) is merged again. Tests compare this with plain BPE on corpora and
//! on generated text.

use rayon::prelude::*;

use super::cache::{hash_key, HotPairs, Scratch};
use super::code_merge::CodeMerge;
use super::merge::{merge_short, Part, LONG_PIECE};
use super::tables::{piece_key, CACHED_PIECE};
use super::tables::{PairRanks, NO_ID, NO_RANK};
use super::{EncodeError, Encoder};
use crate::memory::PackedBytes;
use crate::shortkey::{hash_mid, load_mid, MAX_MID as MID_PIECE};

/// `Seams::depth` of a token BPE does not make from its bytes (or of an id
/// that is no token).
pub(super) const UNREACHABLE: u32 = u32::MAX;

/// `Seams::floor`'s column for a cut whose space ends the piece.
const END: usize = 256;

/// The vocabulary's facts the word-by-word merge relies on (built on first use).
pub(super) struct Seams {
    /// `floor[x * 257 + y]`: the lowest rank of a merged token that could
    /// cross a cut between byte `x` (not a space) and a space followed by
    /// byte `y` (`END`: nothing follows): one holding `x`, space, `y`, or
    /// ending in `x` and a space; NO_RANK if none does.
    floor: Vec<u32>,
    /// Token id -> 1 + the highest rank BPE merges to make it from its bytes
    /// (0 for a single byte), or UNREACHABLE when BPE does not make it.
    depth: Vec<u32>,
    /// Token id -> its part code (`PairRanks`): its byte, or 256 + its rank.
    code_of_id: Vec<u32>,
    /// Code - 256 -> the two parts of the last merge BPE makes of the token's
    /// bytes ((NO_ID, NO_ID) when BPE does not make it).
    split: Vec<(u32, u32)>,
}

impl Seams {
    /// The facts of the merged tokens `merged` (rank order) over `table`.
    pub(super) fn new(table: &PairRanks, merged: &PackedBytes) -> Self {
        let mut floor = vec![NO_RANK; 256 * 257];
        let mut code_of_id: Vec<u32> = Vec::new();
        let mut set_code = |id: u32, code: u32| {
            if id == NO_ID {
                return;
            }
            if code_of_id.len() <= id as usize {
                code_of_id.resize(id as usize + 1, NO_ID);
            }
            if code_of_id[id as usize] == NO_ID {
                code_of_id[id as usize] = code;
            }
        };
        for b in 0..256u32 {
            set_code(table.byte_ids[b as usize], b);
        }
        for (rank, token) in merged.iter().enumerate() {
            if table.id(256 + rank as u32) == NO_ID {
                continue;
            }
            set_code(table.id(256 + rank as u32), 256 + rank as u32);
            for (i, w) in token.windows(2).enumerate() {
                if w[1] == b' ' && w[0] != b' ' {
                    let y = token.get(i + 2).map_or(END, |&y| y as usize);
                    let slot = &mut floor[w[0] as usize * 257 + y];
                    *slot = (*slot).min(rank as u32);
                }
            }
        }
        // A token ending in `x` and a space crosses a cut whatever follows.
        for x in 0..256 {
            let ends = floor[x * 257 + END];
            for slot in &mut floor[x * 257..x * 257 + END] {
                *slot = (*slot).min(ends);
            }
        }
        let made: Vec<(u32, (u32, u32))> = (0..merged.len())
            .into_par_iter()
            .with_min_len(1024)
            .map_init(
                || (CodeMerge::default(), HotPairs::empty()),
                |(merge, hot), rank| merge.bpe_of(table, hot, merged.get(rank), 256 + rank as u32),
            )
            .collect();
        let depth = code_of_id
            .iter()
            .map(|&code| match code {
                NO_ID => UNREACHABLE,
                0..=255 => 0,
                _ => made[(code - 256) as usize].0,
            })
            .collect();
        Seams {
            floor,
            depth,
            code_of_id,
            split: made.into_iter().map(|(_, split)| split).collect(),
        }
    }

    /// `floor` of the cut before the space at `cut` in `piece`.
    #[inline]
    fn floor_at(&self, piece: &[u8], cut: usize) -> u32 {
        let y = piece.get(cut + 1).map_or(END, |&y| y as usize);
        self.floor[piece[cut - 1] as usize * 257 + y]
    }

    /// Could a merge cross the cut between the tokens `left` and `right`
    /// (the last and first tokens of the regions on its sides, merged alone)
    /// before time `depth`, when both regions are done? `walk`: the spines
    /// walked (`Spine::Left`: `left`'s only, `right` is taken whole, a token
    /// made across cuts at its rank; `Spine::Right` the other way round). A merge across it
    /// joins a token of `left`'s right spine with one of `right`'s left
    /// spine, each alive from its birth (the rank that made it; 0 for a byte)
    /// until the merge that made its parent on the spine (for tables a BPE
    /// trainer made, a token's parts rank below it). A pair that joins into
    /// a token of rank r merges at the latest of r and the two births, if
    /// both are still alive then.
    fn crosses_before(
        &self,
        table: &PairRanks,
        hot: &mut HotPairs,
        (left, right): (u32, u32),
        depth: u32,
        walk: Spine,
    ) -> bool {
        let birth = |code: u32| code.saturating_sub(256);
        let (mut a, mut a_death) = (left, NO_RANK);
        loop {
            let (mut b, mut b_death) = (right, NO_RANK);
            loop {
                let rank = pair_rank(table, hot, a, b);
                if rank != NO_RANK {
                    // On a tie with the merge that ends one of them, the
                    // leftmost merge goes first: `left`'s end is on the left.
                    let at = rank.max(birth(a)).max(birth(b));
                    if at < a_death && at <= b_death && at < depth {
                        return true;
                    }
                }
                match self.part(b).filter(|_| walk != Spine::Left) {
                    Some((first, _)) => (b, b_death) = (first, birth(b)),
                    None => break,
                }
            }
            match self.part(a).filter(|_| walk != Spine::Right) {
                Some((_, second)) => (a, a_death) = (second, birth(a)),
                None => break,
            }
        }
        false
    }

    /// The parts of the last merge that makes token `code`; None for a byte
    /// (or a token BPE does not make, whose spine is cut short: such tokens
    /// never reach `spine_floor`).
    #[inline]
    fn part(&self, code: u32) -> Option<(u32, u32)> {
        (code >= 256)
            .then(|| self.split[(code - 256) as usize])
            .filter(|&(first, _)| first != NO_ID)
    }
}

/// Which spines `Seams::crosses_before` walks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spine {
    Both,
    Left,
    Right,
}

/// The rank of the token parts `left` and `right` join into (NO_RANK: none).
#[inline]
pub(super) fn pair_rank(table: &PairRanks, hot: &mut HotPairs, left: u32, right: u32) -> u32 {
    if left < 256 && right < 256 {
        // Pairs of single bytes have a table of their own (`PairRanks`).
        table.byte_pair_rank(left as u8, right as u8)
    } else {
        hot.rank(table, left, right)
    }
}

/// Does `piece` span words: is there a space after a character that is not
/// whitespace? Only then does merging it word by word pay. A run of
/// whitespace (`"\n  "`, `" \u{a0} "`, which every pattern makes) has cuts
/// but no words: it is merged whole, and a tokenizer whose pieces never span
/// words never builds `Seams` (the BPE of every merged token, on rayon's
/// global pool: 20-50 ms of a second thread in the first calls on enwiki
/// with GPT-2's ranks).
#[inline]
pub(super) fn spans_words(piece: &[u8]) -> bool {
    (1..piece.len()).any(|i| piece[i] == b' ' && !ends_in_whitespace(&piece[..i]))
}

/// Is the last character of `bytes` (UTF-8) whitespace?
fn ends_in_whitespace(bytes: &[u8]) -> bool {
    let start = bytes.iter().rposition(|&b| b & 0xC0 != 0x80).unwrap_or(0);
    std::str::from_utf8(&bytes[start..])
        .ok()
        .and_then(|last| last.chars().next())
        .is_some_and(char::is_whitespace)
}

/// BPE of `piece` by rank, with no whole-token rule and no cut (every byte
/// has an id), appending its ids to `out`: the scan for short pieces, the
/// heap (no allocation, unlike `merge_long`'s buckets) for the others.
fn plain_merge(
    table: &PairRanks,
    piece: &[u8],
    parts: &mut Vec<Part>,
    merge: &mut CodeMerge,
    hot: &mut HotPairs,
    out: &mut Vec<u32>,
) {
    if piece.len() < LONG_PIECE {
        merge_short(table, piece, parts, hot, out);
    } else {
        merge.load(piece.iter().map(|&b| u32::from(b)));
        merge.run(table, hot, 0..piece.len(), None);
        merge.ids_into(table, out);
    }
}

/// A run of the piece merged on its own: bytes `start..end`, its tokens
/// `ids[first..]` up to the next region's, and its depth (1 + the highest
/// rank merging it applies).
#[derive(Clone, Copy)]
struct Region {
    start: usize,
    end: usize,
    first: usize,
    depth: u32,
}

/// Reused buffers of `merge_by_words`.
#[derive(Default)]
pub(super) struct WordScratch {
    regions: Vec<Region>,
    joined: Vec<Region>,
    ids: Vec<u32>,
    joined_ids: Vec<u32>,
    depths: Vec<u32>,
    floors: Vec<u32>,
    parts: Vec<Part>,
    merge: CodeMerge,
}

/// What `merge_by_words` needs of the encoder: the ids of a part with no cut,
/// through the caches, appended to `out` (false when cancelled).
pub(super) trait WordEncoder {
    fn encode_word(&mut self, word: &[u8], out: &mut Vec<u32>) -> bool;
    /// Ask for the cache line `encode_word(word)` will look in.
    fn prefetch(&self, word: &[u8]);
    fn hot(&mut self) -> &mut HotPairs;
}

/// How many words ahead `encode_regions` asks for a word's cache slot.
const PREFETCH_WORDS: usize = 4;

/// BPE of `piece` (which has a cut; every byte has an id) word by word (see
/// the module docs), appending its ids to `out`. False, appending nothing,
/// when encoding a word was cancelled.
pub(super) fn merge_by_words(
    table: &PairRanks,
    seams: &Seams,
    piece: &[u8],
    scratch: &mut WordScratch,
    words: &mut impl WordEncoder,
    out: &mut Vec<u32>,
) -> bool {
    if !encode_regions(table, seams, piece, scratch, words) {
        return false;
    }
    join_unsafe_cuts(table, seams, piece, scratch, words.hot());
    let WordScratch {
        regions,
        ids,
        depths,
        floors,
        parts,
        merge,
        ..
    } = scratch;
    if regions.len() == 1 {
        out.extend_from_slice(ids);
        return true;
    }
    // Only the pairs across cuts can merge: inside a region, merging ended.
    merge.load(ids.iter().map(|&id| seams.code_of_id[id as usize]));
    // Per part: its region's depth, and where a region starts, the floor of
    // the cut before it (NO_RANK inside a region).
    depths.clear();
    floors.clear();
    for (k, r) in regions.iter().enumerate() {
        let end = regions.get(k + 1).map_or(ids.len(), |next| next.first);
        depths.resize(end, r.depth);
        floors.push(if k == 0 {
            NO_RANK
        } else {
            seams.floor_at(piece, r.start)
        });
        floors.resize(end, NO_RANK);
    }
    let cuts = regions[1..].iter().map(|r| r.first - 1);
    let guard = Guard {
        seams,
        depths,
        floors,
    };
    if merge.run(table, words.hot(), cuts, Some(&guard)).is_some() {
        merge.ids_into(table, out);
    } else {
        plain_merge(table, piece, parts, merge, words.hot(), out);
    }
    true
}

/// Cut `piece` into words and merge each one through the caches into
/// `scratch.regions` and `scratch.ids`. False when cancelled.
fn encode_regions(
    table: &PairRanks,
    seams: &Seams,
    piece: &[u8],
    scratch: &mut WordScratch,
    words: &mut impl WordEncoder,
) -> bool {
    let WordScratch {
        regions,
        ids,
        parts,
        merge,
        ..
    } = scratch;
    regions.clear();
    ids.clear();
    // The words first, so their cache slots are asked for a few words ahead
    // (a cache of 10^5 words does not fit the CPU's caches).
    let mut start = 0;
    while start < piece.len() {
        let end = (start + 1..piece.len())
            .find(|&i| piece[i] == b' ' && piece[i - 1] != b' ')
            .unwrap_or(piece.len());
        regions.push(Region {
            start,
            end,
            first: 0,
            depth: 0,
        });
        start = end;
    }
    for r in regions.iter().take(PREFETCH_WORDS) {
        words.prefetch(&piece[r.start..r.end]);
    }
    for k in 0..regions.len() {
        if let Some(ahead) = regions.get(k + PREFETCH_WORDS) {
            words.prefetch(&piece[ahead.start..ahead.end]);
        }
        let Region { start, end, .. } = regions[k];
        let first = ids.len();
        if !words.encode_word(&piece[start..end], ids) {
            return false;
        }
        if let [id] = ids[first..] {
            // A token the cache gave whole must be what BPE makes of its bytes here.
            if seams
                .depth
                .get(id as usize)
                .is_none_or(|&d| d == UNREACHABLE)
            {
                ids.truncate(first);
                plain_merge(table, &piece[start..end], parts, merge, words.hot(), ids);
            }
        }
        regions[k].first = first;
        regions[k].depth = max_depth(seams, &ids[first..]);
    }
    true
}

/// Join the regions on both sides of every unsafe cut (see the module docs)
/// and merge each join afresh, until every cut is safe.
fn join_unsafe_cuts(
    table: &PairRanks,
    seams: &Seams,
    piece: &[u8],
    scratch: &mut WordScratch,
    hot: &mut HotPairs,
) {
    let WordScratch {
        regions,
        joined,
        ids,
        joined_ids,
        parts,
        merge,
        ..
    } = scratch;
    loop {
        let mut unsafe_cut = |k: usize| {
            let (left, right) = (&regions[k], &regions[k + 1]);
            let depth = left.depth.max(right.depth);
            if seams.floor_at(piece, right.start) >= depth {
                return false;
            }
            let (last, first) = (ids[right.first - 1], ids[right.first]);
            let (a, b) = (
                seams.code_of_id[last as usize],
                seams.code_of_id[first as usize],
            );
            seams.crosses_before(table, hot, (a, b), depth, Spine::Both)
        };
        let cuts: Vec<bool> = (0..regions.len().saturating_sub(1))
            .map(&mut unsafe_cut)
            .collect();
        if !cuts.contains(&true) {
            return;
        }
        joined.clear();
        joined_ids.clear();
        let mut k = 0;
        while k < regions.len() {
            let mut last = k;
            while last < cuts.len() && cuts[last] {
                last += 1;
            }
            let first = joined_ids.len();
            if last == k {
                let end = regions.get(k + 1).map_or(ids.len(), |r| r.first);
                joined_ids.extend_from_slice(&ids[regions[k].first..end]);
            } else {
                let span = &piece[regions[k].start..regions[last].end];
                plain_merge(table, span, parts, merge, hot, joined_ids);
            }
            joined.push(Region {
                start: regions[k].start,
                end: regions[last].end,
                first,
                depth: max_depth(seams, &joined_ids[first..]),
            });
            k = last + 1;
        }
        std::mem::swap(regions, joined);
        std::mem::swap(ids, joined_ids);
    }
}

/// The depth of a region with tokens `ids` (all reachable).
fn max_depth(seams: &Seams, ids: &[u32]) -> u32 {
    ids.iter()
        .map(|&id| seams.depth[id as usize])
        .max()
        .unwrap_or(0)
}

/// What decides whether a merge across cuts may go ahead (`CodeMerge::run`):
/// per part, its region's depth and, where a region starts, the floor of the
/// cut before it (NO_RANK inside a region).
pub(super) struct Guard<'a> {
    seams: &'a Seams,
    depths: &'a [u32],
    floors: &'a [u32],
}

impl Guard<'_> {
    /// May the parts at `p` and the next one merge (rank `rank`; the part
    /// after them starts at `after`)? Not if the token it makes sits next to
    /// a region that is not done by then (depth above `rank`) and could join
    /// it before that: a token across the cut between them ranked below that
    /// depth, from the neighbour's spine facing the new token (a neighbour
    /// made of several parts: refused).
    pub(super) fn allows(
        &self,
        merge: &CodeMerge,
        table: &PairRanks,
        hot: &mut HotPairs,
        p: usize,
        after: usize,
        rank: u32,
    ) -> bool {
        let made = 256 + rank;
        let open = |part: usize, cut: usize| {
            self.depths[part] > rank && self.floors[cut] < self.depths[part]
        };
        if p > 0 && open(p - 1, p) {
            let left = merge.prev[p] as usize;
            let pair = (merge.codes[left], made);
            if left != p - 1
                || self
                    .seams
                    .crosses_before(table, hot, pair, self.depths[left], Spine::Left)
            {
                return false;
            }
        }
        if after < merge.codes.len() && open(after, after) {
            let single = merge.next[after] as usize == after + 1;
            let pair = (made, merge.codes[after]);
            if !single
                || self
                    .seams
                    .crosses_before(table, hot, pair, self.depths[after], Spine::Right)
            {
                return false;
            }
        }
        true
    }
}

impl Encoder {
    /// Merge a piece that spans words word by word (`superwords`: the
    /// words through the caches, then the merges across them).
    pub(super) fn merge_words(
        &self,
        piece: &[u8],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<(), EncodeError> {
        let seams = self.vocab.seams();
        let mut buffers = std::mem::take(&mut scratch.words);
        let mut words = CachedWords {
            encoder: self,
            scratch,
        };
        let done = merge_by_words(
            &self.vocab.pair_ranks,
            seams,
            piece,
            &mut buffers,
            &mut words,
            out,
        );
        scratch.words = buffers;
        if done {
            Ok(())
        } else {
            Err(EncodeError::Cancelled)
        }
    }
}

/// The words of a piece encoded through an encoder's caches (`merge_words`).
struct CachedWords<'a> {
    encoder: &'a Encoder,
    scratch: &'a mut Scratch,
}

impl WordEncoder for CachedWords<'_> {
    fn encode_word(&mut self, word: &[u8], out: &mut Vec<u32>) -> bool {
        self.encoder.encode_piece(word, self.scratch, out).is_ok()
    }

    fn prefetch(&self, word: &[u8]) {
        match word.len() {
            0..=2 => {}
            len if len <= CACHED_PIECE => self.scratch.pieces.prefetch(hash_key(piece_key(word))),
            len if len <= MID_PIECE => self.scratch.mid.prefetch(hash_mid(load_mid(word, 0, len))),
            _ => {}
        }
    }

    fn hot(&mut self) -> &mut HotPairs {
        &mut self.scratch.hot
    }
}
