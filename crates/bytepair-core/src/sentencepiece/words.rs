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
use super::vocab::Vocab;

pub(super) const SPACE_CHAR: char = '\u{2581}';

impl SpmEncoder {
    /// The ids of normalized text holding no user-defined piece, word by word:
    /// the words' starts first, then their cache probes in batches, each
    /// batch's slots fetched ahead (a cache of 10^5 words does not fit in the
    /// CPU's caches; the byte-level encoder does the same).
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
        let mut starts = std::mem::take(&mut s.starts);
        starts.clear();
        word_starts(&self.vocab, b, view, None, &mut starts);
        starts.push(b.len() as u32);
        let mut hashes = [0u64; WORD_BATCH];
        let mut keys = [0u128; WORD_BATCH];
        let words = starts.len() - 1;
        for batch in (0..words).step_by(WORD_BATCH) {
            let bounds = &starts[batch..(batch + WORD_BATCH).min(words) + 1];
            for (k, w) in bounds.windows(2).enumerate() {
                let (a, len) = (w[0] as usize, (w[1] - w[0]) as usize);
                if len <= MAX_SHORT {
                    keys[k] = load_key(b, a, len);
                    hashes[k] = hash_key(keys[k]);
                    s.short.prefetch(hashes[k]);
                }
            }
            for (k, w) in bounds.windows(2).enumerate() {
                let (a, e) = (w[0] as usize, w[1] as usize);
                let first = out.len();
                if e - a <= MAX_SHORT {
                    if !s.short.push_hit(keys[k], hashes[k], out) {
                        self.merge_view(&text[a..e], view, s, out);
                        s.short.insert(keys[k], hashes[k], &out[first..]);
                    }
                } else {
                    self.encode_long_word(text, a, e, view, s, out);
                }
                if self.fuses_unk {
                    self.fuse_after(first, last_unk, out);
                }
            }
        }
        s.starts = starts;
    }

    /// A word of more than `MAX_SHORT` bytes, through the caches of longer pieces.
    fn encode_long_word(
        &self,
        text: &str,
        a: usize,
        e: usize,
        view: bool,
        s: &mut Scratch,
        out: &mut Vec<u32>,
    ) {
        let (b, first) = (text.as_bytes(), out.len());
        if e - a <= MAX_MID {
            let key = load_mid(b, a, e - a);
            let hash = hash_mid(key);
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
#[inline]
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

/// Call `f(start, end)` for each word of `b` (valid UTF-8): the spans between
/// the places where two characters that no piece holds side by side meet.
pub(super) fn for_each_word(v: &Vocab, b: &[u8], mut f: impl FnMut(usize, usize)) {
    let mut starts = Vec::new();
    word_starts(v, b, false, None, &mut starts);
    starts.push(b.len() as u32);
    for w in starts.windows(2) {
        f(w[0] as usize, w[1] as usize);
    }
}

/// The start of every word of `b` (valid UTF-8, not empty; see `for_each_word`),
/// appended to `starts`. ASCII and "▁" (nearly every character of most text)
/// are looked up in bit tables, other pairs in the vocabulary's bigram set.
/// `view`: `b` is text before normalization, where a space stands for "▁"
/// (`SpmEncoder::encode_plain`); `prev`: the character before `b` (the dummy
/// prefix), if any, which the first word may join; then only the first cut
/// is wanted, and the scan stops there.
pub(super) fn word_starts(
    v: &Vocab,
    b: &[u8],
    view: bool,
    prev: Option<char>,
    starts: &mut Vec<u32>,
) {
    let first_only = prev.is_some();
    let spaces_join = v.joins_spaces();
    let as_view = |c: char| if view && c == ' ' { SPACE_CHAR } else { c };
    let (mut prev, mut i) = match prev {
        Some(c) => (c, 0),
        None => {
            starts.push(0);
            let (c, len) = char_at(b, 0);
            (as_view(c), len)
        }
    };
    let ascii = if view {
        v.view_ascii()
    } else {
        v.plain_ascii()
    };
    while i < b.len() {
        let byte = b[i];
        let (c, len, joined) = if byte < 0x80 {
            let c = as_view(byte as char);
            let joined = match prev as u32 {
                p if p < 0x80 => ascii[p as usize] >> byte & 1 == 1,
                _ if prev == SPACE_CHAR => match c {
                    SPACE_CHAR => spaces_join,
                    _ => v.joins_space(byte, true),
                },
                _ => v.joins(prev, c),
            };
            (c, 1, joined)
        } else if b[i..].starts_with(SPACE) {
            let joined = match prev as u32 {
                p if p < 0x80 => v.joins_space(p as u8, false),
                _ if prev == SPACE_CHAR => spaces_join,
                _ => v.joins(prev, SPACE_CHAR),
            };
            (SPACE_CHAR, SPACE.len(), joined)
        } else {
            let (c, len) = char_at(b, i);
            (c, len, v.joins(prev, c))
        };
        if !joined {
            starts.push(i as u32);
            if first_only {
                return;
            }
        }
        prev = c;
        i += len;
    }
}

/// Words probed per batch (their cache slots fetched first).
const WORD_BATCH: usize = 128;

/// One encoder's caches and buffers on one thread.
pub(super) struct Scratch {
    tag: u64,
    starts: Vec<u32>,
    /// A word of the space view, normalized (spaces as "▁").
    word: Vec<u8>,
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
            starts: Vec::new(),
            word: Vec::new(),
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
