//! Words: where merges cannot cross, a normalized text is cut into words,
//! each encoded through per-thread caches (`Scratch`) in batches whose cache
//! slots are fetched ahead. The *space view* skips normalization where it is
//! only "a space is ▁" (identity, no whitespace removal): words are cut and
//! cached on the text as it is, a space standing for "▁", and normalized one
//! word at a time when a word is merged (`SpmEncoder::encode_plain`).

use std::cell::RefCell;

use crate::encode::cache::{cache_shares, LongCache, MidCache, ShortCache};
use crate::shortkey::{hash as hash_key, hash_mid, load as load_key, load_mid, MAX_MID, MAX_SHORT};

use super::encode::SpmEncoder;
use super::merge::{merge_word, push_ids, Sym};
use super::normalize::SPACE;
use super::scan::WordScan;
use super::vocab::Vocab;

pub(super) const SPACE_CHAR: char = '\u{2581}';

impl SpmEncoder {
    /// The ids of normalized text holding no user-defined piece, word by word
    /// in batches (`WordScan::fill`, then `encode_batch`), each batch's cache
    /// slots fetched ahead (a cache of 10^5 words does not fit in the CPU's
    /// caches; the byte-level encoder does the same).
    ///
    /// `view`: `text` is the space view (see `encode_plain`), whose words are
    /// normalized (spaces as "▁") only when merged.
    pub(super) fn encode_words(
        &self,
        text: &str,
        view: bool,
        s: &mut Scratch,
        last_unk: &mut bool,
        out: &mut Vec<u32>,
    ) {
        let b = text.as_bytes();
        if b.is_empty() {
            return;
        }
        if let Some(&id) = self.whole.as_ref().and_then(|w| w.get(b)) {
            out.push(id);
            *last_unk = false;
            return;
        }
        let mut batch = s.batch.take().unwrap_or_else(WordBatch::new);
        let mut scan = WordScan::new(&self.vocab, b, view);
        loop {
            let n = scan.fill(&mut batch.bounds);
            if n == 0 {
                break;
            }
            self.encode_batch(text, view, &mut batch, n, s, last_unk, out);
        }
        s.batch = Some(batch);
    }

    /// The `n` words of a batch (`batch.bounds`): their keys and hashes
    /// first, then each short word's cache slot fetched into L1
    /// `PREFETCH_AHEAD` words ahead of its probe (no fetch into L2 a batch
    /// ahead, as the byte-level encoder makes: see `PREFETCH_AHEAD`); a hit in its
    /// home slot with its ids inline (nearly every word) is stored at a raw
    /// cursor, anything else goes through `encode_word` (as the byte-level
    /// encoder's `encode_preset_pieces`).
    #[allow(clippy::too_many_arguments)]
    fn encode_batch(
        &self,
        text: &str,
        view: bool,
        batch: &mut WordBatch,
        n: usize,
        s: &mut Scratch,
        last_unk: &mut bool,
        out: &mut Vec<u32>,
    ) {
        let b = text.as_bytes();
        let WordBatch {
            bounds,
            keys,
            hashes,
        } = batch;
        for k in 0..n {
            let (a, len) = (bounds[k] as usize, (bounds[k + 1] - bounds[k]) as usize);
            let short = len <= MAX_SHORT;
            keys[k] = if short { load_key(b, a, len) } else { 0 };
            hashes[k] = hash_key(keys[k]);
            // A word of 16 to 31 bytes (one in twelve of code's, with its
            // indentation) gets the hash of its two-part key, its slot fetched.
            if !short && len <= MAX_MID {
                hashes[k] = hash_mid(load_mid(b, a, len));
                s.mid.prefetch(hashes[k]);
            }
        }
        for &hash in &hashes[..n.min(PREFETCH_AHEAD)] {
            s.short.prefetch(hash);
        }
        // `<unk>` runs fuse across words: then every word takes the slow way.
        let fast = !self.fuses_unk;
        out.reserve(4 * n);
        let mut homes = s.short.home_slots();
        let (mut w, mut dst) = (out.len(), out.as_mut_ptr());
        for k in 0..n {
            if k + PREFETCH_AHEAD < n {
                homes.prefetch(hashes[k + PREFETCH_AHEAD]);
            }
            if fast && keys[k] != 0 {
                if let Some((lanes, count)) = homes.inline_ids(keys[k], hashes[k]) {
                    // SAFETY: `out` has room for 4 more ids per word left in
                    // the batch (reserved above and after every slow word).
                    unsafe { dst.add(w).cast::<[u32; 4]>().write_unaligned(lanes) };
                    w += count;
                    continue;
                }
            }
            // SAFETY: the first `w` ids were written (by `out` or the fast path).
            unsafe { out.set_len(w) };
            let (a, e) = (bounds[k] as usize, bounds[k + 1] as usize);
            self.encode_word(text, a, e, (keys[k], hashes[k]), view, s, last_unk, out);
            out.reserve(4 * (n - k));
            (w, dst, homes) = (out.len(), out.as_mut_ptr(), s.short.home_slots());
        }
        // SAFETY: as above.
        unsafe { out.set_len(w) };
    }

    /// The word `text[a..e]` (its short key and hash, or key 0 and the hash
    /// of its two-part key if it has 16 to 31 bytes) through the caches,
    /// merged on a miss; a leading `<unk>` fused with one before.
    #[allow(clippy::too_many_arguments)]
    fn encode_word(
        &self,
        text: &str,
        a: usize,
        e: usize,
        (key, hash): (u128, u64),
        view: bool,
        s: &mut Scratch,
        last_unk: &mut bool,
        out: &mut Vec<u32>,
    ) {
        let first = out.len();
        if key != 0 {
            if !s.short.push_hit_home(key, hash, out) {
                self.merge_view(&text[a..e], view, s, out);
                s.short.insert(key, hash, &out[first..]);
            }
        } else {
            self.encode_long_word(text, a, e, hash, view, s, out);
        }
        if self.fuses_unk {
            self.fuse_after(first, last_unk, out);
        }
    }

    /// The first word of a text with the dummy prefix's "▁" before it: " " +
    /// `rest` in the space view, through the caches like any word (a line of
    /// code starts with its indentation, often 15 bytes or more with it).
    pub(super) fn encode_prefixed_word(
        &self,
        rest: &str,
        s: &mut Scratch,
        last_unk: &mut bool,
        out: &mut Vec<u32>,
    ) {
        let mut word = std::mem::take(&mut s.prefixed);
        word.clear();
        word.push(' ');
        word.push_str(rest);
        let (b, len) = (word.as_bytes(), word.len());
        let key_hash = match len {
            n if n <= MAX_SHORT => {
                let key = load_key(b, 0, n);
                (key, hash_key(key))
            }
            n if n <= MAX_MID => (0, hash_mid(load_mid(b, 0, n))),
            _ => (0, 0),
        };
        self.encode_word(&word, 0, len, key_hash, true, s, last_unk, out);
        s.prefixed = word;
    }

    /// A word of more than `MAX_SHORT` bytes, through the caches of longer
    /// pieces (`hash`: of its two-part key, if it has one).
    #[allow(clippy::too_many_arguments)]
    fn encode_long_word(
        &self,
        text: &str,
        a: usize,
        e: usize,
        hash: u64,
        view: bool,
        s: &mut Scratch,
        out: &mut Vec<u32>,
    ) {
        let (b, first) = (text.as_bytes(), out.len());
        if e - a <= MAX_MID {
            let key = load_mid(b, a, e - a);
            if !s.mid.push_hit(key, hash, out) {
                self.merge_view(&text[a..e], view, s, out);
                s.mid.insert(key, hash, &out[first..]);
            }
        } else if !s.long.push_hit(&b[a..e], out) {
            self.merge_view(&text[a..e], view, s, out);
            s.long.insert(&b[a..e], &out[first..]);
        }
    }

    /// Fuse a word's leading `<unk>` (its ids start at `first`) with one that
    /// ended the word before it.
    pub(super) fn fuse_after(&self, first: usize, last_unk: &mut bool, out: &mut Vec<u32>) {
        let unk = self.vocab.unk_id;
        if *last_unk && out.get(first) == Some(&unk) {
            out.remove(first);
        }
        *last_unk =
            out.len() > first && out.last() == Some(&unk) || (out.len() == first && *last_unk);
    }

    /// Merge one word (its ids fused within it, as if nothing came before).
    pub(super) fn merge_into(&self, word: &str, syms: &mut Vec<Sym>, out: &mut Vec<u32>) {
        merge_word(&self.vocab, word, syms);
        let mut last_unk = false;
        push_ids(
            &self.vocab,
            word.as_bytes(),
            syms,
            self.fuses_unk,
            &mut last_unk,
            out,
        );
    }

    /// Merge a word of normalized text, or of the space view (normalized first).
    pub(super) fn merge_view(&self, word: &str, view: bool, s: &mut Scratch, out: &mut Vec<u32>) {
        if !view {
            return self.merge_into(word, &mut s.syms, out);
        }
        let mut buf = std::mem::take(&mut s.word);
        buf.clear();
        for &byte in word.as_bytes() {
            match byte {
                b' ' => buf.extend_from_slice(SPACE),
                _ => buf.push(byte),
            }
        }
        // SAFETY: `word` with spaces replaced by "▁" is UTF-8.
        self.merge_into(
            unsafe { std::str::from_utf8_unchecked(&buf) },
            &mut s.syms,
            out,
        );
        s.word = buf;
    }
}

/// The character starting at byte `i` of valid UTF-8 `b`, and its length.
#[inline(always)]
pub(super) fn char_at(b: &[u8], i: usize) -> (char, usize) {
    let lead = b[i];
    if lead < 0x80 {
        return (lead as char, 1);
    }
    let len = super::normalize::utf8_len(lead);
    let mut c = (lead as u32) & (0x7F >> len);
    for &cont in &b[i + 1..i + len] {
        c = c << 6 | (cont as u32 & 0x3F);
    }
    (char::from_u32(c).expect("valid UTF-8"), len)
}

/// Call `f(start, end)` for each word of `b` (valid UTF-8, not empty): the
/// spans between the places where two characters that no piece holds side by
/// side meet.
pub(super) fn for_each_word(v: &Vocab, b: &[u8], mut f: impl FnMut(usize, usize)) {
    let mut scan = WordScan::new(v, b, false);
    let mut bounds = [0u32; WORD_BATCH + 1];
    loop {
        let n = scan.fill(&mut bounds);
        if n == 0 {
            return;
        }
        for w in bounds[..=n].windows(2) {
            f(w[0] as usize, w[1] as usize);
        }
    }
}

/// Words probed per batch (their keys and hashes made first): 1024. With
/// slots fetched 256 words ahead (below) the longer batch hides more of the
/// cache's misses; Mistral v3, 10 MB, warm, thread CPU time (core example,
/// fat LTO, interleaved medians of 5, shared host): enwiki 570 -> 659 MB/s,
/// code 559 -> 625, multilingual 259 -> 275 against 256 words, 64 ahead and
/// the L2 fetch a batch ahead; 512 words, 256 ahead: 634 / 618 / 273.
const WORD_BATCH: usize = 1024;
/// How many words ahead of its probe a cache slot is fetched into L1. The
/// byte-level encoder also asks each slot of a batch into L2 before its
/// probes; here that made warm calls 8-9% slower (567 against 618 MB/s on
/// code, 591 against 634 on enwiki, the same 512 words and 256 ahead): the
/// batch's fetches, all at once, queue behind each other.
const PREFETCH_AHEAD: usize = 256;

/// A batch of words: their bounds in the text, short keys and hashes.
pub(super) struct WordBatch {
    bounds: [u32; WORD_BATCH + 1],
    keys: [u128; WORD_BATCH],
    hashes: [u64; WORD_BATCH],
}

impl WordBatch {
    fn new() -> Box<Self> {
        Box::new(WordBatch {
            bounds: [0; WORD_BATCH + 1],
            keys: [0; WORD_BATCH],
            hashes: [0; WORD_BATCH],
        })
    }
}

/// One encoder's caches and buffers on one thread.
pub(super) struct Scratch {
    tag: u64,
    /// The arrays of `encode_words`, between its calls.
    batch: Option<Box<WordBatch>>,
    /// A word of the space view, normalized (spaces as "▁").
    word: Vec<u8>,
    /// The first word of a text after the dummy prefix (`encode_prefixed_word`).
    prefixed: String,
    pub(super) short: ShortCache,
    mid: MidCache,
    long: LongCache,
    pub(super) syms: Vec<Sym>,
    pub(super) norm: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Vec<Scratch>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with this thread's caches for the encoder tagged `tag` (two
/// encoders' caches are kept per thread; a nested call gets fresh ones).
pub(super) fn with_scratch<R>(tag: u64, f: impl FnOnce(&mut Scratch) -> R) -> R {
    let fresh = || {
        let (short, mid, long) = cache_shares();
        Scratch {
            tag,
            batch: None,
            word: Vec::new(),
            prefixed: String::new(),
            short: ShortCache::new(short),
            mid: MidCache::new(mid),
            long: LongCache::new(long),
            syms: Vec::new(),
            norm: Vec::new(),
        }
    };
    SCRATCH.with(|cell| {
        let Ok(mut all) = cell.try_borrow_mut() else {
            return f(&mut fresh());
        };
        match all.iter().position(|s| s.tag == tag) {
            Some(i) => {
                let mine = all.remove(i);
                all.push(mine);
            }
            None => {
                if all.len() >= 2 {
                    all.remove(0);
                }
                all.push(fresh());
            }
        }
        f(all.last_mut().expect("just pushed"))
    })
}
