//! The fast encoder (words, caches, scan and heap merges) against
//! `reference` (SentencePiece's whole-text priority queue), on a model built
//! here with tied scores (the leftmost-on-ties rule), pieces that chain
//! (`c` runs: long words take the heap), byte fallback and `<unk>` fusion.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::model::{Kind, Model, Normalization, Piece};
use super::reference::{populate_ids, sample_encode};
use super::SpmEncoder;

fn model(byte_fallback: bool) -> Model {
    model_with(byte_fallback, false)
}

fn model_with(byte_fallback: bool, remove_extra_whitespaces: bool) -> Model {
    let mut pieces = vec![
        ("<unk>", 0.0, Kind::Unknown),
        ("<s>", 0.0, Kind::Control),
        ("</s>", 0.0, Kind::Control),
    ];
    let bytes: Vec<String> = (0..=255u8).map(|b| format!("<0x{b:02X}>")).collect();
    if byte_fallback {
        pieces.extend(bytes.iter().map(|b| (b.as_str(), 0.0, Kind::Byte)));
    }
    // Ties: "ab" and "bc" (-1), the runs of "▁" and of "c" (-5), "x" merges nothing.
    let normal = [
        ("ab", -1.0),
        ("bc", -1.0),
        ("abc", -2.0),
        ("\u{2581}a", -3.0),
        ("\u{2581}ab", -4.0),
        ("\u{2581}\u{2581}", -5.0),
        ("\u{2581}\u{2581}\u{2581}", -5.0),
        ("\u{2581}\u{2581}\u{2581}\u{2581}", -5.0),
        ("cc", -5.0),
        ("ccc", -5.0),
        ("cccc", -6.0),
        ("ca", -7.0),
        ("a", -10.0),
        ("b", -10.0),
        ("c", -10.0),
        ("\u{2581}", -10.0),
        ("x", -11.0),
    ];
    pieces.extend(normal.iter().map(|&(p, s)| (p, s, Kind::Normal)));
    let pieces = pieces
        .into_iter()
        .map(|(text, score, kind)| Piece {
            text: text.to_string(),
            score,
            kind,
        })
        .collect();
    let normalization = Normalization {
        charsmap: None,
        add_dummy_prefix: true,
        remove_extra_whitespaces,
        escape_whitespaces: true,
        treat_whitespace_as_suffix: false,
        metaspace_prefix: false,
        prefix_first_only: false,
    };
    Model::new(
        pieces,
        normalization,
        None,
        byte_fallback,
        " \u{2047} ".into(),
    )
    .unwrap()
}

fn reference_ids(enc: &SpmEncoder, text: &str) -> Vec<u32> {
    let mut norm = String::from("\u{2581}");
    norm.push_str(&text.replace(' ', "\u{2581}"));
    if text.is_empty() {
        norm.clear();
    }
    let m = enc.model();
    let mut byte_ids = [0u32; 256];
    for (id, p) in m.pieces.iter().enumerate() {
        if let Some(b) = super::model::byte_of_piece(&p.text) {
            byte_ids[b as usize] = id as u32;
        }
    }
    populate_ids(m, &sample_encode(m, &norm, None), &byte_ids)
}

#[test]
fn fast_path_equals_sentencepieces_whole_text_queue() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let alphabet = ['a', 'b', 'c', ' ', 'x', 'é', '日', '\u{2581}'];
    for byte_fallback in [true, false] {
        let enc = SpmEncoder::new(model(byte_fallback), vec![]).unwrap();
        for round in 0..3000 {
            // Long texts fill several batches of words (1024 each).
            let len = if round % 100 == 0 {
                6000
            } else if round % 10 == 0 {
                300
            } else {
                rng.random_range(0..24)
            };
            let text: String = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            let mut fast = Vec::new();
            enc.encode_ordinary_into(&text, &mut fast).unwrap();
            assert_eq!(fast, reference_ids(&enc, &text), "{text:?}");
            let (spans_ids, _) = enc.encode_with_spans(&text, &[], &[]).unwrap();
            assert_eq!(spans_ids, fast, "{text:?}");
        }
    }
}

#[test]
fn spans_of_text_that_normalizes_to_nothing_are_empty() {
    // " " loses its spaces: no word to merge (this once indexed an empty word).
    let enc = SpmEncoder::new(model_with(true, true), vec![]).unwrap();
    for text in [" ", "   ", "\u{3000} "] {
        let (ids, spans) = enc.encode_with_spans(text, &[], &[]).unwrap();
        let mut plain = Vec::new();
        enc.encode_ordinary_into(text, &mut plain).unwrap();
        assert_eq!(
            (ids.len(), spans.len()),
            (plain.len(), plain.len()),
            "{text:?}"
        );
    }
}

#[test]
fn ties_go_to_the_leftmost_pair_and_unknowns_fuse() {
    let enc = SpmEncoder::new(model(false), vec![]).unwrap();
    let id = |p: &str| enc.model().pieces.iter().position(|x| x.text == p).unwrap() as u32;
    let mut out = Vec::new();
    // "▁abc": "ab" and "bc" tie; the leftmost merges, then "abc" (before "▁ab").
    enc.encode_ordinary_into("abc", &mut out).unwrap();
    assert_eq!(out, [id("\u{2581}"), id("abc")]);
    out.clear();
    // Without byte fallback a run of unknown characters is one <unk>.
    enc.encode_ordinary_into("é日é a", &mut out).unwrap();
    assert_eq!(out, [id("\u{2581}"), 0, id("\u{2581}a")]);
}

#[test]
fn halves_cut_at_safe_cuts_encode_to_the_ids_of_the_whole() {
    use super::normalize::Place;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let alphabet = [
        "a", "b", "c", " ", "x", "é", "日", "\u{2581}", "\n", ".", "Q", "<s>", "cc", "  ",
    ];
    let specials = vec![("<s>".to_string(), 1)];
    let allowed = ["<s>".to_string()];
    for byte_fallback in [true, false] {
        let enc = SpmEncoder::new(model(byte_fallback), specials.clone()).unwrap();
        let rule = enc.cut_rule();
        assert!(rule.is_exact());
        let mut cuts = 0;
        for _ in 0..400 {
            let len = rng.random_range(1..40);
            let text: String = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            let mut whole = Vec::new();
            enc.encode_into(&text, &allowed, &[], &mut whole).unwrap();
            for end in 1..=text.len() {
                let Some(cut) = rule.last_cut(&text.as_bytes()[..end]) else {
                    continue;
                };
                cuts += 1;
                let mut halves = Vec::new();
                let (left, right) = text.split_at(cut);
                enc.encode_at(left, Place::Start, &allowed, &[], &mut halves)
                    .unwrap();
                enc.encode_at(right, Place::Continued, &allowed, &[], &mut halves)
                    .unwrap();
                assert_eq!(halves, whole, "{left:?} | {right:?}");
            }
        }
        assert!(cuts > 1000, "{cuts} cuts tried");
    }
}

#[test]
fn scan_in_batches_finds_the_word_starts_of_a_pair_by_pair_test() {
    use super::scan::WordScan;
    use super::words::SPACE_CHAR;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    // Runs of ASCII longer than 8 (the scan's step), "▁" both as a space
    // and as itself, characters of 2 and 3 bytes.
    let alphabet = [
        "a",
        "b",
        "c",
        " ",
        "x",
        "é",
        "日",
        "\u{2581}",
        "abcabcab",
        "cccccccccc",
    ];
    let enc = SpmEncoder::new(model(true), vec![]).unwrap();
    let v = &enc.vocab;
    for round in 0..2000 {
        let len = rng.random_range(1..if round % 20 == 0 { 400 } else { 30 });
        let text: String = (0..len)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        for view in [false, true] {
            let as_view = |c: char| if view && c == ' ' { SPACE_CHAR } else { c };
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            let mut expected = vec![0u32];
            for w in chars.windows(2) {
                if !v.joins(as_view(w[0].1), as_view(w[1].1)) {
                    expected.push(w[1].0 as u32);
                }
            }
            expected.push(text.len() as u32);
            for batch in [1, 3, 8, 9, 256] {
                let mut scan = WordScan::new(v, text.as_bytes(), view);
                let mut bounds = vec![0u32; batch + 1];
                let mut found = vec![0u32];
                loop {
                    let n = scan.fill(&mut bounds);
                    if n == 0 {
                        break;
                    }
                    assert_eq!(bounds[0], *found.last().unwrap(), "{text:?}");
                    found.extend_from_slice(&bounds[1..=n]);
                }
                assert_eq!(found, expected, "{text:?} view {view} batch {batch}");
            }
            // The end of the first word after a "▁" (the dummy prefix),
            // which it may join: 0 if it does not.
            let first = match v.joins(SPACE_CHAR, as_view(chars[0].1)) {
                true => expected[1] as usize,
                false => 0,
            };
            let found = WordScan::first_end(v, text.as_bytes(), view, SPACE_CHAR);
            assert_eq!(found, first, "{text:?} view {view}");
        }
    }
}
