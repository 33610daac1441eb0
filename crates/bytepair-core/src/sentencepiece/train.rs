//! Training SentencePiece-style BPE (the Llama 2 recipe: characters kept by
//! coverage, byte fallback, split digits, dummy prefix, user-defined and
//! control pieces), written as a `ModelProto` that sentencepiece loads.
//!
//! 1. Each line is normalized as the model will normalize it (dummy prefix,
//!    "▁" for spaces) and cut into *units* that no piece may cross, as
//!    SentencePiece's trainer restricts pieces (`SplitIntoWords`,
//!    `IsValidSentencePiece`): a word starts at each "▁" (a run of "▁" is a
//!    unit of its own when whitespace-only pieces are allowed, its last "▁"
//!    starting the next word), and within a word at a change of character
//!    class (cased letters, caseless letters, numbers, other; marks join the
//!    character before them), at every digit with `split_digits`, and around
//!    user-defined pieces (matched first, never counted). Characters and
//!    units are counted (per thread, summed).
//! 2. The most frequent characters covering `character_coverage` of all
//!    characters are kept; the others are unknown (byte fallback at encode
//!    time) and cut units.
//! 3. The byte-level trainer's merge loop (`crate::train::train_on_symbols`)
//!    runs over the kept characters, pieces at most `max_piece_chars` long.
//! 4. The vocabulary is SentencePiece's layout: `<unk>`, `<s>`, `</s>`, the
//!    control and user-defined pieces, the 256 `<0xNN>` pieces, the merged
//!    pieces (score -k for the k-th), then the kept characters by frequency
//!    (scores below every merge), so encoding by score replays the merges.
//!
//! Differences from `spm_train --model_type=bpe`, which picks its own pairs:
//! ties go to the lexicographically greatest pair (bytepair's rule), script
//! boundaries are approximated by character classes, and lines of any length
//! are counted (spm_train skips those over `max_sentence_length`).

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::count::SpmCounts;
use super::model::Kind;
use super::proto::{ModelProto, NormalizerSpec, SentencePiece, TrainerSpec};
use crate::progress::Progress;
use crate::train::{train_on_symbols, SymbolRuns, TrainError, TrainOptions};

const SPACE: char = '\u{2581}';

/// What to train (defaults: the Llama 2 recipe).
#[derive(Clone, Debug)]
pub struct SpmTrainOptions {
    pub vocab_size: usize,
    /// Keep the most frequent characters covering this share of all characters.
    pub character_coverage: f64,
    pub byte_fallback: bool,
    pub split_digits: bool,
    pub allow_whitespace_only_pieces: bool,
    /// Longest piece, in characters (`max_sentencepiece_length`).
    pub max_piece_chars: usize,
    pub control_symbols: Vec<String>,
    pub user_defined_symbols: Vec<String>,
    /// Stop when the best pair counts fewer than this.
    pub min_frequency: u64,
}

impl Default for SpmTrainOptions {
    fn default() -> Self {
        SpmTrainOptions {
            vocab_size: 32000,
            character_coverage: 0.9995,
            byte_fallback: true,
            split_digits: true,
            allow_whitespace_only_pieces: true,
            max_piece_chars: 16,
            control_symbols: Vec::new(),
            user_defined_symbols: Vec::new(),
            min_frequency: 0,
        }
    }
}

/// Why training failed.
#[derive(Debug, thiserror::Error)]
pub enum SpmTrainError {
    #[error("the corpus has no characters")]
    Empty,
    #[error(
        "vocab_size {vocab_size} leaves no room for merges: {fixed} pieces are the special, \
         user-defined and byte pieces and {chars} the characters kept by coverage"
    )]
    TooSmall {
        vocab_size: usize,
        fixed: usize,
        chars: usize,
    },
    #[error("{0:?} is given twice as a special or user-defined piece")]
    Duplicate(String),
    #[error(transparent)]
    Train(#[from] TrainError),
}

const NONE: u32 = u32::MAX;

/// Every distinct unit's characters, decoded once, in parts (one a thread
/// at a time, `SpmCounts::for_each_unit_of_part`): each unit a span of its
/// part's code points with its count; and the distinct characters with
/// their occurrences. (Decoding the units twice, once to count the
/// characters and once to map them to the kept ones, hashing every
/// character both times, was a tenth of training on multilingual text; on
/// one thread, decoding them once was still a tenth. Twice through tables,
/// without the code points in between, was no faster: walking the tally's
/// slots again cost what the buffer did, 30.2 -> 30.9 ms with the runs on
/// multilingual 10 MB.)
struct UnitChars {
    parts: Vec<UnitPart>,
    chars: Vec<char>,
    counts: Vec<u64>,
}

/// The units of one part: their characters' code points, and each unit's
/// end in them (it starts where the one before it ends) and count.
#[derive(Default)]
struct UnitPart {
    codes: Vec<u32>,
    ends: Vec<(usize, u64)>,
}

/// Occurrences of each character: the Basic Multilingual Plane (nearly all
/// characters) in a table, the others in a hash map.
struct CharTally {
    bmp: Vec<u64>,
    others: FxHashMap<char, u64>,
}

impl CharTally {
    fn new() -> Self {
        CharTally {
            bmp: vec![0; 1 << 16],
            others: FxHashMap::default(),
        }
    }

    #[inline]
    fn add(&mut self, c: char, n: u64) {
        match c as usize {
            a if a < 1 << 16 => self.bmp[a] += n,
            _ => *self.others.entry(c).or_default() += n,
        }
    }

    fn merge(mut self, other: CharTally) -> Self {
        for (a, b) in self.bmp.iter_mut().zip(&other.bmp) {
            *a += b;
        }
        for (c, n) in other.others {
            *self.others.entry(c).or_default() += n;
        }
        self
    }
}

impl UnitChars {
    fn of(counts: &SpmCounts) -> Self {
        // Each thread takes parts in turn into its own tally: a tally a part
        // (half a megabyte each, mostly untouched) cost its pages and a sum
        // of eight on two threads.
        let parts = 4 * rayon::current_num_threads();
        let next = AtomicUsize::new(0);
        let done: Vec<(Vec<(usize, UnitPart)>, CharTally)> = rayon::broadcast(|_| {
            let (mut mine, mut tally) = (Vec::new(), CharTally::new());
            loop {
                let p = next.fetch_add(1, Ordering::Relaxed);
                if p >= parts {
                    break;
                }
                let mut part = UnitPart::default();
                counts.for_each_unit_of_part(p, parts, |unit, n| {
                    for c in unit {
                        tally.add(c, n);
                        part.codes.push(c as u32);
                    }
                    part.ends.push((part.codes.len(), n));
                });
                mine.push((p, part));
            }
            (mine, tally)
        });
        let (mine, tallies): (Vec<_>, Vec<_>) = done.into_iter().unzip();
        let mut numbered: Vec<(usize, UnitPart)> = mine.into_iter().flatten().collect();
        numbered.sort_unstable_by_key(|&(p, _)| p);
        let parts = numbered.into_iter().map(|(_, part)| part).collect();
        let tally = tallies
            .into_iter()
            .reduce(CharTally::merge)
            .unwrap_or_else(CharTally::new);
        let mut chars = Vec::new();
        let mut char_counts = Vec::new();
        for (a, &n) in tally.bmp.iter().enumerate() {
            if n > 0 {
                chars.push(char::from_u32(a as u32).expect("a character counted"));
                char_counts.push(n);
            }
        }
        for (c, n) in tally.others {
            chars.push(c);
            char_counts.push(n);
        }
        UnitChars {
            parts,
            chars,
            counts: char_counts,
        }
    }

    /// Each part's units as runs of kept characters' indexes in `kept` (cut
    /// at the others), in one buffer a part: the buffer and each run's end
    /// and count.
    fn kept_runs(self, kept: &[char]) -> Vec<SymbolRuns> {
        let mut bmp = vec![NONE; 1 << 16];
        let mut others: FxHashMap<u32, u32> = FxHashMap::default();
        for (i, &c) in kept.iter().enumerate() {
            match c as usize {
                a if a < 1 << 16 => bmp[a] = i as u32,
                a => _ = others.insert(a as u32, i as u32),
            }
        }
        let id_of = |code: u32| match code {
            a if a < 1 << 16 => bmp[a as usize],
            a => others.get(&a).copied().unwrap_or(NONE),
        };
        self.parts
            .into_par_iter()
            .map(|part| part.kept_runs(id_of))
            .collect()
    }
}

impl UnitPart {
    /// The units as runs of `id_of` their code points (cut where it is
    /// NONE), in place: a run only moves towards the front as characters
    /// drop out, and starts where the run before it ends.
    fn kept_runs(self, id_of: impl Fn(u32) -> u32) -> SymbolRuns {
        let mut ids = self.codes;
        let mut ends = Vec::with_capacity(self.ends.len());
        let (mut write, mut from) = (0, 0);
        for &(to, n) in &self.ends {
            let mut start = write;
            for k in from..to {
                let id = id_of(ids[k]);
                if id != NONE {
                    ids[write] = id;
                    write += 1;
                    continue;
                }
                if write > start {
                    ends.push((write, n));
                }
                start = write;
            }
            if write > start {
                ends.push((write, n));
            }
            from = to;
        }
        ids.truncate(write);
        SymbolRuns { ids, ends }
    }
}

/// The characters kept: the most frequent ones covering `coverage` of all
/// character occurrences ("▁" always), most frequent first.
fn kept_chars(chars: &[char], counts: &[u64], coverage: f64) -> Vec<char> {
    let mut by_count: Vec<(char, u64)> =
        chars.iter().copied().zip(counts.iter().copied()).collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: u64 = by_count.iter().map(|&(_, n)| n).sum();
    let mut kept = Vec::new();
    let mut covered = 0u64;
    for (c, n) in by_count {
        if !kept.is_empty() && covered as f64 / total as f64 >= coverage && c != SPACE {
            continue;
        }
        covered += n;
        kept.push(c);
    }
    kept
}

/// Train from `counts`; `normalizer_spec` is written into the model as given.
pub fn train(
    counts: SpmCounts,
    normalizer_spec: NormalizerSpec,
    options: &SpmTrainOptions,
    progress: &Progress,
) -> Result<ModelProto, SpmTrainError> {
    let units = UnitChars::of(&counts);
    // Freed while the runs and the words are made (4-9 ms on multilingual
    // 10 MB), their spare tables unmapped: see `free_in_background`.
    crate::memory::free_in_background(counts);
    if units.chars.is_empty() {
        return Err(SpmTrainError::Empty);
    }
    let chars = kept_chars(&units.chars, &units.counts, options.character_coverage);
    let mut fixed: Vec<(String, Kind)> = vec![
        ("<unk>".into(), Kind::Unknown),
        ("<s>".into(), Kind::Control),
        ("</s>".into(), Kind::Control),
    ];
    fixed.extend(
        options
            .control_symbols
            .iter()
            .map(|s| (s.clone(), Kind::Control)),
    );
    fixed.extend(
        options
            .user_defined_symbols
            .iter()
            .map(|s| (s.clone(), Kind::UserDefined)),
    );
    if options.byte_fallback {
        fixed.extend((0..=255u8).map(|b| (format!("<0x{b:02X}>"), Kind::Byte)));
    }
    let mut taken: FxHashMap<String, ()> = FxHashMap::default();
    for (s, _) in &fixed {
        if taken.insert(s.clone(), ()).is_some() {
            return Err(SpmTrainError::Duplicate(s.clone()));
        }
    }
    let chars: Vec<char> = chars
        .into_iter()
        .filter(|c| !taken.contains_key(&c.to_string()))
        .collect();
    let room = options.vocab_size.checked_sub(fixed.len() + chars.len());
    let num_merges = match room {
        Some(n) if n > 0 => n,
        _ => {
            return Err(SpmTrainError::TooSmall {
                vocab_size: options.vocab_size,
                fixed: fixed.len(),
                chars: chars.len(),
            })
        }
    };
    let runs = units.kept_runs(&chars);
    let symbols: Vec<Vec<u8>> = chars.iter().map(|c| c.to_string().into_bytes()).collect();
    let train_options = TrainOptions {
        min_frequency: options.min_frequency,
        max_token_length: None,
    };
    let trained = train_on_symbols(
        runs,
        symbols,
        num_merges,
        &train_options,
        options.max_piece_chars,
        progress,
    )?;
    let mut pieces: Vec<SentencePiece> =
        Vec::with_capacity(fixed.len() + trained.merges.len() + chars.len());
    pieces.extend(fixed.iter().map(|(s, kind)| piece(s, 0.0, *kind)));
    let texts = TokenTexts::of(&chars, &trained.merges);
    // A merge that spells a piece again (a fixed one, or another merge's
    // text from other parts) adds no piece.
    let mut seen: FxHashSet<&str> =
        FxHashSet::with_capacity_and_hasher(pieces.capacity(), Default::default());
    seen.extend(fixed.iter().map(|(s, _)| s.as_str()));
    for k in 0..trained.merges.len() {
        let text = texts.get(chars.len() + k);
        if seen.insert(text) {
            let score = -((pieces.len() - fixed.len()) as f32);
            pieces.push(piece(text, score, Kind::Normal));
        }
    }
    let first_char_score = pieces.len() - fixed.len();
    for (j, c) in chars.iter().enumerate() {
        pieces.push(piece(
            &c.to_string(),
            -((first_char_score + j) as f32),
            Kind::Normal,
        ));
    }
    Ok(ModelProto {
        pieces,
        trainer_spec: Some(trainer_spec(options)),
        normalizer_spec: Some(normalizer_spec),
        self_test_data: None,
        denormalizer_spec: None,
    })
}

/// The text of every token of a training run: the characters, then one per
/// merge (its two parts joined), as spans of one buffer. (A string per
/// token, copied into the set of pieces seen and into its piece, was four
/// allocations a merge.)
struct TokenTexts {
    text: String,
    spans: Vec<(usize, usize)>,
}

impl TokenTexts {
    fn of(chars: &[char], merges: &[crate::train::Merge]) -> Self {
        let mut buf: Vec<u8> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(chars.len() + merges.len());
        let mut utf8 = [0u8; 4];
        for c in chars {
            let start = buf.len();
            buf.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            spans.push((start, buf.len()));
        }
        for m in merges {
            let (left, right) = (spans[m.left as usize], spans[m.right as usize]);
            let start = buf.len();
            buf.extend_from_within(left.0..left.1);
            buf.extend_from_within(right.0..right.1);
            spans.push((start, buf.len()));
        }
        let text = String::from_utf8(buf).expect("characters joined");
        TokenTexts { text, spans }
    }

    fn get(&self, token: usize) -> &str {
        let (start, end) = self.spans[token];
        &self.text[start..end]
    }
}

fn piece(text: &str, score: f32, kind: Kind) -> SentencePiece {
    SentencePiece {
        piece: Some(text.to_string()),
        score: Some(score),
        r#type: Some(kind.proto_type()),
    }
}

fn trainer_spec(options: &SpmTrainOptions) -> TrainerSpec {
    TrainerSpec {
        model_type: Some(2),
        vocab_size: Some(options.vocab_size as i32),
        character_coverage: Some(options.character_coverage as f32),
        byte_fallback: Some(options.byte_fallback),
        split_digits: Some(options.split_digits),
        allow_whitespace_only_pieces: Some(options.allow_whitespace_only_pieces),
        max_sentencepiece_length: Some(options.max_piece_chars as i32),
        control_symbols: options.control_symbols.clone(),
        user_defined_symbols: options.user_defined_symbols.clone(),
        unk_id: Some(0),
        bos_id: Some(1),
        eos_id: Some(2),
        pad_id: Some(-1),
        ..Default::default()
    }
}
