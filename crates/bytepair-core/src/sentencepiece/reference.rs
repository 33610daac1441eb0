//! SentencePiece BPE as `bpe_model.cc` writes it (`Model::SampleEncode`, no
//! dropout), over a whole normalized text: one priority queue of symbol pairs
//! by (score, leftmost), pieces of type UNUSED split back into the pair they
//! were last made from (its `rev_merge` table, filled as pairs are queued).
//! Slow and plain: the encoder runs it for models with UNUSED pieces (whose
//! split depends on the whole text), and the tests check the fast path
//! against it.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use aho_corasick::{AhoCorasick, Anchored, Input};
use rustc_hash::FxHashMap;

use super::model::{Kind, Model};
use super::normalize::utf8_len;

#[derive(Clone, Copy)]
struct Symbol {
    prev: isize,
    next: isize,
    freeze: bool,
    start: usize,
    len: usize,
}

struct Candidate {
    left: usize,
    right: usize,
    score: f32,
    size: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    /// The greater candidate is taken first: higher score, then smaller `left`.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.left.cmp(&self.left))
    }
}

/// The pieces of `normalized` with their ids, as `SampleEncode` returns them
/// (before byte fallback and `<unk>` fusion). `user`: the user-defined pieces'
/// matcher (leftmost-longest), or None.
pub fn sample_encode<'t>(
    model: &Model,
    normalized: &'t str,
    user: Option<&AhoCorasick>,
) -> Vec<(&'t str, u32)> {
    let mut mergeable: FxHashMap<&str, u32> = FxHashMap::default();
    let mut reserved: FxHashMap<&str, u32> = FxHashMap::default();
    for (id, p) in model.pieces.iter().enumerate() {
        let map = if p.kind.is_mergeable() {
            &mut mergeable
        } else {
            &mut reserved
        };
        map.insert(p.text.as_str(), id as u32);
    }
    let piece_to_id = |w: &str| {
        reserved
            .get(w)
            .or_else(|| mergeable.get(w))
            .copied()
            .unwrap_or(model.unk_id)
    };
    let text = normalized.as_bytes();
    let mut symbols: Vec<Symbol> = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let matched = user.and_then(|m| m.find(Input::new(&text[pos..]).anchored(Anchored::Yes)));
        let (len, freeze) = match matched {
            Some(m) => (m.end(), true),
            None => (utf8_len(text[pos]).min(text.len() - pos), false),
        };
        let index = symbols.len() as isize;
        symbols.push(Symbol {
            prev: index - 1,
            next: if pos + len < text.len() {
                index + 1
            } else {
                -1
            },
            freeze,
            start: pos,
            len,
        });
        pos += len;
    }
    let mut agenda = BinaryHeap::new();
    let mut rev_merge: FxHashMap<&str, (&str, &str)> = FxHashMap::default();
    let span = |s: &Symbol| &normalized[s.start..s.start + s.len];
    let add = |symbols: &[Symbol],
               agenda: &mut BinaryHeap<Candidate>,
               rev: &mut FxHashMap<&'t str, (&'t str, &'t str)>,
               left: isize,
               right: isize| {
        if left < 0 || right < 0 {
            return;
        }
        let (l, r) = (symbols[left as usize], symbols[right as usize]);
        if l.freeze || r.freeze {
            return;
        }
        let piece = &normalized[l.start..l.start + l.len + r.len];
        let Some(&id) = mergeable.get(piece) else {
            return;
        };
        agenda.push(Candidate {
            left: left as usize,
            right: right as usize,
            score: model.pieces[id as usize].score,
            size: piece.len(),
        });
        if model.pieces[id as usize].kind == Kind::Unused {
            rev.insert(piece, (span(&l), span(&r)));
        }
    };
    for i in 1..symbols.len() {
        add(
            &symbols,
            &mut agenda,
            &mut rev_merge,
            i as isize - 1,
            i as isize,
        );
    }
    while let Some(top) = agenda.pop() {
        let (l, r) = (symbols[top.left], symbols[top.right]);
        if l.len == 0 || r.len == 0 || l.len + r.len != top.size {
            continue;
        }
        symbols[top.left].len += r.len;
        symbols[top.left].next = r.next;
        if r.next >= 0 {
            symbols[r.next as usize].prev = top.left as isize;
        }
        symbols[top.right].len = 0;
        let left = symbols[top.left];
        add(
            &symbols,
            &mut agenda,
            &mut rev_merge,
            left.prev,
            top.left as isize,
        );
        add(
            &symbols,
            &mut agenda,
            &mut rev_merge,
            top.left as isize,
            left.next,
        );
    }
    let mut output = Vec::new();
    fn resegment<'t>(
        w: &'t str,
        model: &Model,
        piece_to_id: &dyn Fn(&str) -> u32,
        rev: &FxHashMap<&'t str, (&'t str, &'t str)>,
        out: &mut Vec<(&'t str, u32)>,
    ) {
        let id = piece_to_id(w);
        if model.pieces[id as usize].kind != Kind::Unused {
            out.push((w, id));
            return;
        }
        match rev.get(w) {
            Some(&(a, b)) => {
                resegment(a, model, piece_to_id, rev, out);
                resegment(b, model, piece_to_id, rev, out);
            }
            None => out.push((w, id)),
        }
    }
    let mut index: isize = if symbols.is_empty() { -1 } else { 0 };
    while index >= 0 {
        let s = symbols[index as usize];
        resegment(span(&s), model, &piece_to_id, &rev_merge, &mut output);
        index = s.next;
    }
    output
}

/// The ids of `SampleEncode`'s pieces as `PopulateSentencePieceText` gives
/// them: an unknown piece as its `<0xNN>` bytes (byte fallback) or as
/// `<unk>`, a run of unknown pieces fused into one. An UNUSED piece left
/// after the split back (a single character) is unknown too: what
/// sentencepiece 0.2.3 does (its 0.2.1 source would output the piece's id).
pub fn populate_ids(model: &Model, pieces: &[(&str, u32)], byte_ids: &[u32; 256]) -> Vec<u32> {
    let mut out = Vec::with_capacity(pieces.len());
    let mut prev_unk = false;
    for &(w, id) in pieces {
        let is_unk = id == model.unk_id || model.pieces[id as usize].kind == Kind::Unused;
        if is_unk && model.byte_fallback {
            out.extend(w.bytes().map(|b| byte_ids[b as usize]));
        } else if !(is_unk && prev_unk) {
            out.push(if is_unk { model.unk_id } else { id });
        }
        prev_unk = is_unk;
    }
    out
}
