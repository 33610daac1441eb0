//! Counting a corpus for training: each line's *units* (the strings no piece
//! may cross, see `train`'s module comment) counted in the byte-level
//! counter's tally (`count::WordTally`: packed keys in slot tables, probes
//! batched), on the rayon pool, one tally per thread, summed.
//!
//! Where normalization only escapes spaces and adds the dummy prefix (the
//! Llama 2 recipe: identity, spaces kept), units are cut and counted on the
//! text as it is, as the encoder's words are (the space view): a space stands
//! for "▁", and the newline before a line for its dummy prefix, so the units
//! of many lines are consecutive pieces of the text, counted without a copy
//! (a line's first unit starts at the newline before it). Other
//! normalizations (a charsmap, whitespace removal) normalize each line first.
//! The characters are counted afterwards from the distinct units.

use std::sync::atomic::{AtomicU64, Ordering};

use aho_corasick::AhoCorasick;

#[cfg(test)]
use rustc_hash::FxHashMap;

use super::normalize::{Normalizer, Place};
use super::train::SpmTrainOptions;
use super::units::UnitCutter;
use super::words::SPACE_CHAR;
use crate::count::{CountError, Limits, SplitWords, WordTally};
use crate::pretokenize::SearchError;
use crate::progress::Progress;

/// Bytes of text a thread counts at a time (cut after a newline).
pub(super) const CHUNK_BYTES: usize = 1 << 18;
/// Units handed to the tally at a time, at most (and a line's).
const FLUSH_UNITS: usize = 4096;

/// Units of a corpus, counted.
pub struct SpmCounts {
    /// Unit bytes -> occurrences; in the space view a space (and a newline
    /// at the start of a unit, the dummy prefix) stands for "▁".
    pub(super) units: WordTally,
    view: bool,
    /// Bytes of text counted (lines and their newlines).
    pub bytes: u64,
}

impl SpmCounts {
    /// Distinct units counted.
    pub fn distinct_units(&self) -> usize {
        self.units.len()
    }

    /// Every distinct unit as its characters ("▁" for a space) and its count.
    #[cfg(test)]
    pub(super) fn for_each_unit<F>(&self, f: F)
    where
        F: FnMut(&mut UnitCharIter<'_>, u64),
    {
        self.for_each_unit_of_part(0, 1, f);
    }

    /// `for_each_unit` over part `part` of `parts` (every unit is in one
    /// part), for threads that each visit a part.
    pub(super) fn for_each_unit_of_part<F>(&self, part: usize, parts: usize, mut f: F)
    where
        F: FnMut(&mut UnitCharIter<'_>, u64),
    {
        let view = self.view;
        self.units.for_each_word_of_part(part, parts, |word, n| {
            word.with_bytes(|b| {
                // SAFETY: units are whole characters of UTF-8 text (cut at
                // character boundaries), or a newline standing for "▁".
                let text = unsafe { std::str::from_utf8_unchecked(b) };
                let mut chars = UnitCharIter {
                    chars: text.char_indices(),
                    view,
                };
                f(&mut chars, n)
            })
        });
    }

    /// Occurrences of every character (from the units; the tests compare
    /// countings with it).
    #[cfg(test)]
    pub(super) fn chars(&self) -> FxHashMap<char, u64> {
        let mut ascii = [0u64; 128];
        let mut chars: FxHashMap<char, u64> = FxHashMap::default();
        self.for_each_unit(|unit, n| {
            for c in unit {
                match c as usize {
                    a if a < 128 => ascii[a] += n,
                    _ => *chars.entry(c).or_default() += n,
                }
            }
        });
        for (a, &n) in ascii.iter().enumerate() {
            if n > 0 {
                *chars.entry(a as u8 as char).or_default() += n;
            }
        }
        chars
    }
}

/// The characters of a unit as the model sees them: in the space view a
/// space, and a newline at the start of a unit (the dummy prefix), are "▁".
pub(super) struct UnitCharIter<'a> {
    chars: std::str::CharIndices<'a>,
    view: bool,
}

impl Iterator for UnitCharIter<'_> {
    type Item = char;

    #[inline]
    fn next(&mut self) -> Option<char> {
        let (i, c) = self.chars.next()?;
        Some(match c {
            ' ' if self.view => SPACE_CHAR,
            '\n' if self.view && i == 0 => SPACE_CHAR,
            c => c,
        })
    }
}

/// What cuts lines into units: the rules (`UnitCutter`), the
/// normalization, and whether the text is counted as it is (the space view).
pub(super) struct UnitSplitter<'a> {
    cutter: UnitCutter,
    normalizer: &'a Normalizer,
    user: Option<&'a AhoCorasick>,
    view: bool,
    dummy: bool,
    /// Bytes of the lines split so far that are not empty, a newline each.
    bytes: AtomicU64,
}

impl UnitSplitter<'_> {
    /// Split the line `b[ls..le]` (not empty) into units, appended to
    /// `bounds` (flushed to `f` wherever the tiling breaks); `dummy`: where
    /// the byte standing for its dummy prefix is (`ls - 1`).
    fn line(
        &self,
        b: &[u8],
        (ls, le): (usize, usize),
        dummy: Option<usize>,
        bounds: &mut Vec<usize>,
        f: &mut impl FnMut(&[u8], &[usize]),
    ) {
        let mut from = dummy.unwrap_or(ls);
        let lead = dummy.filter(|&d| b[d] == b'\n');
        let mut part = |from: usize, to: usize, bounds: &mut Vec<usize>| {
            if from == to {
                return;
            }
            if bounds.last() != Some(&from) {
                flush(b, bounds, f);
                bounds.push(from);
            }
            self.cutter.split(b, from, to, lead, bounds);
            bounds.push(to);
        };
        if let Some(user) = self.user {
            for m in user.find_iter(&b[ls..le]) {
                part(from, ls + m.start(), bounds);
                from = ls + m.end();
            }
        }
        part(from, le, bounds);
    }

    /// The units of a chunk of whole lines of the space view (it starts
    /// with the newline that ends the line before it, or starts its text).
    fn view_chunk(&self, b: &[u8], f: &mut impl FnMut(&[u8], &[usize])) {
        let mut bounds = Vec::with_capacity(FLUSH_UNITS + 256);
        let mut ls = usize::from(b.first() == Some(&b'\n'));
        let mut bytes = 0;
        while ls <= b.len() {
            let le = memchr::memchr(b'\n', &b[ls..]).map_or(b.len(), |n| ls + n);
            if le > ls {
                bytes += le - ls + 1;
                if !self.dummy || ls > 0 {
                    let dummy = self.dummy.then(|| ls - 1);
                    self.line(b, (ls, le), dummy, &mut bounds, f);
                } else {
                    // The text's first line: its dummy prefix as a space before it.
                    let mut first = Vec::with_capacity(le + 1);
                    first.push(b' ');
                    first.extend_from_slice(&b[..le]);
                    let mut own = vec![];
                    self.line(&first, (1, le + 1), Some(0), &mut own, f);
                    flush(&first, &mut own, f);
                }
            }
            if bounds.len() >= FLUSH_UNITS {
                // Handed over in batches that stay in the cache; the next
                // line's units go on from the last boundary.
                let last = bounds[bounds.len() - 1];
                flush(b, &mut bounds, f);
                bounds.push(last);
            }
            ls = le + 1;
        }
        flush(b, &mut bounds, f);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The units of a chunk of lines, each normalized first.
    fn normalized_chunk(&self, text: &str, f: &mut impl FnMut(&[u8], &[usize])) {
        let (mut norm, mut bounds) = (Vec::new(), Vec::new());
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            self.bytes
                .fetch_add(line.len() as u64 + 1, Ordering::Relaxed);
            self.normalizer
                .normalize(line, Place::Start, &mut norm, None);
            self.line(&norm, (0, norm.len()), None, &mut bounds, f);
            flush(&norm, &mut bounds, f);
        }
    }
}

/// Hand the units `bounds` mark in `b` to `f`, and start afresh.
fn flush(b: &[u8], bounds: &mut Vec<usize>, f: &mut impl FnMut(&[u8], &[usize])) {
    if bounds.len() >= 2 {
        f(b, bounds);
    }
    bounds.clear();
}

impl SplitWords for UnitSplitter<'_> {
    /// The units of `text`, a chunk of whole lines (see `chunks`).
    fn split_words(
        &self,
        text: &str,
        mut f: impl FnMut(&[u8], &[usize]),
    ) -> Result<(), SearchError> {
        if self.view {
            self.view_chunk(text.as_bytes(), &mut f);
        } else {
            self.normalized_chunk(text, &mut f);
        }
        Ok(())
    }
}

/// `text` in chunks of about `CHUNK_BYTES` of whole lines, each after the
/// first starting with the newline that ends the line before it.
fn chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let want = (start + CHUNK_BYTES).min(text.len());
        let end = match memchr::memchr(b'\n', &text.as_bytes()[want..]) {
            Some(n) => want + n,
            None => text.len(),
        };
        let chunk = &text[start..end];
        start = end;
        Some(chunk)
    })
}

/// Can lines be counted in the space view (see the module comment)? Only
/// when normalizing is escaping spaces and the plain dummy prefix, and no
/// user-defined piece holds a space or "▁" (it would match the normalized
/// text differently from the text as it is).
pub(super) fn space_view(normalizer: &Normalizer, options: &SpmTrainOptions) -> bool {
    let rules = normalizer.rules();
    let spaced = |s: &String| s.contains(' ') || s.contains('\u{2581}');
    rules.charsmap.is_none()
        && !rules.remove_extra_whitespaces
        && rules.escape_whitespaces
        && !rules.treat_whitespace_as_suffix
        && !rules.metaspace_prefix
        && !options.user_defined_symbols.iter().any(spaced)
}

/// Count the units of `texts` (each split into lines) on the current rayon
/// pool: each line normalized by `normalizer` (in the space view when that is
/// only escaping spaces and the dummy prefix), user-defined pieces (`user`)
/// cut out. Errors: `Cancelled` through `progress`.
pub fn count_texts(
    texts: &[&str],
    normalizer: &Normalizer,
    user: Option<&AhoCorasick>,
    options: &SpmTrainOptions,
    progress: &Progress,
) -> Result<SpmCounts, crate::train::TrainError> {
    let view = space_view(normalizer, options);
    count_units(texts, normalizer, user, options, view, progress)
}

/// `count_texts`, in the space view or not (`view`).
fn count_units(
    texts: &[&str],
    normalizer: &Normalizer,
    user: Option<&AhoCorasick>,
    options: &SpmTrainOptions,
    view: bool,
    progress: &Progress,
) -> Result<SpmCounts, crate::train::TrainError> {
    let chunks: Vec<&str> = texts.iter().flat_map(|t| chunks(t)).collect();
    count_with(normalizer, user, options, view, |splitter, limits| {
        crate::count::count_chunks(splitter, &chunks, limits, progress)
    })
    .map_err(|_| crate::train::TrainError::Cancelled)
}

/// The units that `count` counts (in a tally it makes with `limits`, each
/// chunk of lines split by the splitter it is given), as `SpmCounts`.
pub(super) fn count_with(
    normalizer: &Normalizer,
    user: Option<&AhoCorasick>,
    options: &SpmTrainOptions,
    view: bool,
    count: impl FnOnce(&UnitSplitter<'_>, &Limits) -> Result<WordTally, CountError>,
) -> Result<SpmCounts, CountError> {
    let splitter = UnitSplitter {
        cutter: UnitCutter::new(
            options.split_digits,
            options.allow_whitespace_only_pieces,
            view,
        ),
        normalizer,
        user,
        view,
        dummy: normalizer.rules().add_dummy_prefix,
        bytes: AtomicU64::new(0),
    };
    let limits = Limits {
        max_word_bytes: usize::MAX,
        ..Limits::default()
    };
    let units = count(&splitter, &limits)?;
    let bytes = splitter.bytes.into_inner();
    Ok(SpmCounts { units, view, bytes })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sentencepiece::encode::user_matcher;
    use crate::sentencepiece::Normalization;

    /// Identity normalization with "▁" for spaces, with or without the
    /// dummy prefix.
    pub(crate) fn identity_rules(dummy: bool) -> Normalization {
        Normalization {
            charsmap: None,
            add_dummy_prefix: dummy,
            remove_extra_whitespaces: false,
            escape_whitespaces: true,
            treat_whitespace_as_suffix: false,
            metaspace_prefix: false,
            prefix_first_only: false,
        }
    }

    /// Units as strings ("▁" for spaces) and their counts.
    pub(crate) fn units(counts: &SpmCounts) -> FxHashMap<String, u64> {
        let mut all = FxHashMap::default();
        counts.for_each_unit(|unit, n| *all.entry(unit.collect::<String>()).or_default() += n);
        all
    }

    /// The parts of the units (one a thread) hold every unit once (in the
    /// space view " x" and "\nx" are two keys of one unit); the bytes
    /// counted are those of the lines that are not empty, a newline each.
    #[test]
    fn the_parts_of_the_units_are_the_units() {
        let text = "the cat  sat 12 times, naïve 日本語 and 😀 \u{2581}x\n".repeat(50)
            + &(0..3000).map(|i| format!("w{i} ")).collect::<String>()
            + &"long日本語テキストの単位はとても長い ".repeat(3);
        let normalizer = Normalizer::new(
            Normalization {
                charsmap: None,
                add_dummy_prefix: true,
                remove_extra_whitespaces: false,
                escape_whitespaces: true,
                treat_whitespace_as_suffix: false,
                metaspace_prefix: false,
                prefix_first_only: false,
            },
            None,
        );
        let options = SpmTrainOptions::default();
        let counts =
            count_texts(&[&text], &normalizer, None, &options, &Progress::default()).unwrap();
        let lines = text.split('\n').filter(|l| !l.is_empty());
        assert_eq!(counts.bytes, lines.map(|l| l.len() as u64 + 1).sum::<u64>());
        let whole = units(&counts);
        for parts in [1, 3, 8] {
            let (mut seen, mut visits) = (FxHashMap::<String, u64>::default(), 0);
            for part in 0..parts {
                counts.for_each_unit_of_part(part, parts, |unit, n| {
                    *seen.entry(unit.collect()).or_default() += n;
                    visits += 1;
                });
            }
            assert_eq!(visits, counts.distinct_units(), "{parts} parts");
            assert_eq!(seen, whole, "{parts} parts");
        }
    }

    /// The space view counts the units and bytes that normalizing each line
    /// first counts: lines that start or end a text or chunk, blank lines,
    /// runs of spaces, a literal "▁", digits, marks, scripts, user pieces.
    #[test]
    fn the_space_view_counts_what_normalizing_each_line_counts() {
        let line = "x  naïve a\u{300}b \u{2581}y 12,345 日本語テキスト 😀😀 a<sep>b\r\tz   ";
        let body = format!("{line}\n\n  lead\n{line}\ntrail  \n");
        let big = body.repeat(CHUNK_BYTES / body.len() + 7); // more than one chunk
        let texts = ["\n\nfirst line", &big, "no newline at the end", ""];
        for (dummy, digits, runs) in [
            (true, true, true),
            (false, false, false),
            (true, false, true),
        ] {
            let rules = identity_rules(dummy);
            let user = user_matcher(&["<sep>", "z"]).unwrap();
            let normalizer = Normalizer::new(rules, user.clone());
            let options = SpmTrainOptions {
                split_digits: digits,
                allow_whitespace_only_pieces: runs,
                user_defined_symbols: vec!["<sep>".into(), "z".into()],
                ..Default::default()
            };
            assert!(space_view(&normalizer, &options));
            for spaced in ["a b", "\u{2581}the"] {
                let options = SpmTrainOptions {
                    user_defined_symbols: vec![spaced.into()],
                    ..options.clone()
                };
                assert!(!space_view(&normalizer, &options), "{spaced}");
            }
            let count = |view| {
                let progress = Progress::default();
                count_units(
                    &texts,
                    &normalizer,
                    user.as_ref(),
                    &options,
                    view,
                    &progress,
                )
                .unwrap()
            };
            let (fast, slow) = (count(true), count(false));
            assert_eq!(fast.bytes, slow.bytes);
            assert_eq!(
                units(&fast),
                units(&slow),
                "dummy {dummy} digits {digits} runs {runs}"
            );
            assert_eq!(fast.chars(), slow.chars());
        }
    }
}
