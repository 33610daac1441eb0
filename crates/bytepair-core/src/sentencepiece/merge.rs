//! SentencePiece BPE inside one word (google/sentencepiece, `src/bpe_model.cc`,
//! `Model::SampleEncode` with no dropout): the word starts as its characters;
//! while two adjacent symbols make a mergeable piece, the pair whose piece
//! has the highest score merges (the leftmost among equal scores). That is
//! the pair of lowest (rank, position): `merge_short` scans for it in a small
//! vector, `merge_long` keeps the candidates in a heap with lazy deletion
//! (O(n log n) for a word of n characters, where a scan is quadratic).
//!
//! A candidate is valid while its left symbol is alive and the pair it starts
//! still has the candidate's rank. A stale entry can pass that check only
//! when a new pair of the same rank sits at the same position, and then the
//! heap holds a valid entry with the same key: taking either merges the same
//! pair, so the order is exactly SentencePiece's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::vocab::{Vocab, NO_ID, NO_RANK};

/// Below this many characters a word is merged by scanning.
const LONG_WORD: usize = 64;

/// A symbol of a word being merged: its part code and where it starts (in
/// bytes of the word), and the code and rank of merging it with the next one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sym {
    pub code: u32,
    pub start: u32,
    merged: u32,
    rank: u32,
}

/// Merge `word` (valid UTF-8), leaving its final symbols in `syms`.
pub(super) fn merge_word(v: &Vocab, word: &str, syms: &mut Vec<Sym>) {
    syms.clear();
    syms.extend(word.char_indices().map(|(i, c)| Sym {
        code: v.char_code(c),
        start: i as u32,
        merged: NO_ID,
        rank: NO_RANK,
    }));
    if syms.len() < 2 {
        return;
    }
    if syms.len() < LONG_WORD {
        merge_short(v, syms);
    } else {
        merge_long(v, syms);
    }
}

fn set_pair(v: &Vocab, syms: &mut [Sym], i: usize) {
    let (merged, rank) = match syms.get(i + 1) {
        Some(next) => v.merge(syms[i].code, next.code),
        None => (NO_ID, NO_RANK),
    };
    syms[i].merged = merged;
    syms[i].rank = rank;
}

fn merge_short(v: &Vocab, syms: &mut Vec<Sym>) {
    for i in 0..syms.len() {
        set_pair(v, syms, i);
    }
    loop {
        let mut best = 0;
        let mut best_rank = NO_RANK;
        for (i, s) in syms.iter().enumerate() {
            if s.rank < best_rank {
                best = i;
                best_rank = s.rank;
            }
        }
        if best_rank == NO_RANK {
            return;
        }
        syms[best].code = syms[best].merged;
        syms.remove(best + 1);
        set_pair(v, syms, best);
        if best > 0 {
            set_pair(v, syms, best - 1);
        }
    }
}

fn merge_long(v: &Vocab, syms: &mut Vec<Sym>) {
    let n = syms.len();
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut alive = vec![true; n];
    let mut heap = BinaryHeap::new();
    let pair = |syms: &mut Vec<Sym>, next: &[usize], heap: &mut BinaryHeap<_>, i: usize| {
        let (merged, rank) = match next[i] {
            j if j < n => v.merge(syms[i].code, syms[j].code),
            _ => (NO_ID, NO_RANK),
        };
        syms[i].merged = merged;
        syms[i].rank = rank;
        if rank != NO_RANK {
            heap.push(Reverse((rank, i)));
        }
    };
    for i in 0..n {
        pair(syms, &next, &mut heap, i);
    }
    while let Some(Reverse((rank, i))) = heap.pop() {
        if !alive[i] || syms[i].rank != rank {
            continue;
        }
        let right = next[i];
        syms[i].code = syms[i].merged;
        alive[right] = false;
        next[i] = next[right];
        if next[i] < n {
            prev[next[i]] = i;
        }
        pair(syms, &next, &mut heap, i);
        if prev[i] < n {
            pair(syms, &next, &mut heap, prev[i]);
        }
    }
    let mut k = 0;
    for i in 0..n {
        if alive[i] {
            syms[k] = syms[i];
            k += 1;
        }
    }
    syms.truncate(k);
}

/// Whether the last id pushed is an unknown-character `<unk>` that the
/// next one may fuse with (SentencePiece merges runs of unknown pieces).
pub(super) type LastUnk = bool;

/// Append the ids of a merged word: a piece's id, or for a symbol that is no
/// piece its `<0xNN>` byte pieces (byte fallback) or `<unk>`, a run of
/// `<unk>` fused into one (`fuse`).
pub(super) fn push_ids(
    v: &Vocab,
    word: &[u8],
    syms: &[Sym],
    fuse: bool,
    last_unk: &mut LastUnk,
    out: &mut Vec<u32>,
) {
    for (k, s) in syms.iter().enumerate() {
        let id = v.ids.get(s.code as usize).copied().unwrap_or(NO_ID);
        if id != NO_ID {
            out.push(id);
            *last_unk = false;
            continue;
        }
        let end = syms.get(k + 1).map_or(word.len(), |n| n.start as usize);
        let bytes = &word[s.start as usize..end];
        if v.byte_fallback && bytes.iter().all(|&b| v.byte_ids[b as usize] != NO_ID) {
            out.extend(bytes.iter().map(|&b| v.byte_ids[b as usize]));
            *last_unk = false;
        } else {
            if !(fuse && *last_unk) {
                out.push(v.unk_id);
            }
            *last_unk = true;
        }
    }
}
