//! Pre-tokenization: split text into pre-tokens ("words") with a regex, after
//! cutting it at special-token strings.
//!
//! Two engines, one contract: every split must equal Python's `regex` module
//! (`regex.findall(pattern, text)`) on the same pattern.
//!
//! * The presets (`gpt2`, `cl100k`, `o200k`) first try a hand-written scanner
//!   per preset, which decides a pre-token when only ASCII and 2-byte
//!   characters (Latin, Greek, Cyrillic, Hebrew, Arabic...; for o200k not its
//!   other letters and marks) are involved, and otherwise run on `regex-automata`'s DFA-based
//!   meta engine, which is several times faster than a backtracking engine but has
//!   no look-around. Their only look-around is the `\s+(?!\S)` branch, which we
//!   emulate exactly with a multi-pattern, leftmost-first, anchored search:
//!     pattern 0: every branch before `\s+(?!\S)`, with `\s+\z` in its place in
//!                the order (a whitespace run that reaches the end of the text
//!                satisfies the look-ahead whole);
//!     pattern 1: `\s+\s`, and we give the last character back: a run followed by
//!                a non-space keeps all but its last character, which is exactly
//!                what the backtracking engine ends up matching;
//!     pattern 2: `\s+` (the final fallback branch).
//!   Possessive quantifiers in cl100k (`?+`, `++`) are written as plain ones: in
//!   those positions backtracking can never produce a different match, because the
//!   character classes on either side are disjoint.
//! * Custom patterns run on `fancy-regex`, the backtracking engine tiktoken uses.
//!
//! Special tokens are found with Aho-Corasick, leftmost-longest: when two special
//! tokens overlap, the longest wins.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use aho_corasick::{AhoCorasick, MatchKind};
use fancy_regex::Regex as FancyRegex;
use regex_automata::meta::{Cache as MetaCache, Regex as MetaRegex};
use regex_automata::{Anchored, Input};

/// GPT-2's pattern (tiktoken `gpt2`, HF ByteLevel).
pub const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// tiktoken `cl100k_base`, as tiktoken >= 0.8 ships it: the `\s++$` branch sits
/// before `\s*[\r\n]`, so trailing whitespace holding a newline is one pre-token
/// (`"a\n  "` -> `a`, `\n  `), unlike the pattern first published.
pub const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
/// tiktoken `o200k_base`.
pub const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// The look-ahead-free rewrite of a preset: every branch before `\s+(?!\S)`,
/// with `\s+\z` for the whitespace run that reaches the end of the text (it
/// satisfies the look-ahead whole; cl100k's own `\s++$` branch is the same thing,
/// `$` being the end of the text in tiktoken's engine and, after a possessive
/// `\s++`, in Python's too). Possessive quantifiers become plain ones: in these
/// positions backtracking never changes the match, as the classes are disjoint.
fn preset_head(pattern: &str) -> Option<&'static str> {
    match pattern {
        GPT2_PATTERN => Some(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+\z"),
        CL100K_PATTERN => Some(
            r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+\z|\s*[\r\n]",
        ),
        O200K_PATTERN => Some(concat!(
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+\z"
        )),
        _ => None,
    }
}

/// Resolve a preset name to its regex; any other string is taken as a pattern.
pub fn resolve_pattern(name_or_pattern: &str) -> &str {
    match name_or_pattern {
        "gpt2" | "r50k_base" | "p50k_base" => GPT2_PATTERN,
        "cl100k" | "cl100k_base" => CL100K_PATTERN,
        "o200k" | "o200k_base" => O200K_PATTERN,
        other => other,
    }
}

/// Is `name_or_pattern` one of the presets (gpt2, cl100k, o200k; by name or regex)?
pub fn is_preset(name_or_pattern: &str) -> bool {
    preset_head(resolve_pattern(name_or_pattern)).is_some()
}

enum Engine {
    /// Preset: pattern ids 0 (take), 1 (give back the last char), 2 (take),
    /// behind the preset's hand-written scanner for the pre-tokens it can decide.
    /// `tag` names the regex in the threads' search caches (`RegexCaches`).
    Emulated { re: MetaRegex, scan: Scanner, tag: u64 },
    Fancy(FancyRegex),
}

/// Source of the `Engine::Emulated` tags: a number no other regex in this process has.
static NEXT_REGEX_TAG: AtomicU64 = AtomicU64::new(1);

/// Search caches (the lazy DFA's states) of the last few preset regexes this
/// thread used, by tag. `MetaRegex::search` fetches a cache from the regex's
/// pool and puts it back on every call, and its dispatch costs as much again:
/// ~8% of encoding random Latin-1 text, which is all short non-ASCII
/// pre-tokens. A cache per `for_each_piece` call would rebuild the DFA for
/// every short document of a batch, so caches stay with the thread.
struct RegexCaches(Vec<(u64, MetaCache)>);

/// Caches a thread keeps (a trainer's counter and an encoder or two).
const CACHED_REGEXES: usize = 4;

thread_local! {
    static REGEX_CACHES: RefCell<RegexCaches> = const { RefCell::new(RegexCaches(Vec::new())) };
}

impl RegexCaches {
    /// This thread's cache for the regex `tag`, taken out (a nested call gets a new one).
    fn take(tag: u64, re: &MetaRegex) -> MetaCache {
        let found = REGEX_CACHES.with(|caches| {
            let mut caches = caches.borrow_mut();
            let i = caches.0.iter().position(|(t, _)| *t == tag)?;
            Some(caches.0.swap_remove(i).1)
        });
        found.unwrap_or_else(|| re.create_cache())
    }

    /// Give the cache back, dropping the oldest beyond `CACHED_REGEXES`.
    fn put(tag: u64, cache: MetaCache) {
        REGEX_CACHES.with(|caches| {
            let mut caches = caches.borrow_mut();
            if caches.0.len() >= CACHED_REGEXES {
                caches.0.remove(0);
            }
            caches.0.push((tag, cache));
        });
    }
}

/// A compiled pre-tokenizer: regex plus special-token splitter.
pub struct PreTokenizer {
    engine: Engine,
    specials: Option<AhoCorasick>,
}

impl PreTokenizer {
    /// Compile `pattern` (a preset name or a regex) with the given special tokens.
    pub fn new(pattern: &str, special_tokens: &[String]) -> Result<Self, String> {
        let pattern = resolve_pattern(pattern);
        let engine = match preset_head(pattern) {
            Some(head) => {
                let re = MetaRegex::new_many(&[head, r"\s+\s", r"\s+"])
                    .map_err(|e| format!("internal preset regex failed to compile: {e}"))?;
                Engine::Emulated { re, scan: scanner(pattern), tag: NEXT_REGEX_TAG.fetch_add(1, Ordering::Relaxed) }
            }
            None => Engine::Fancy(
                FancyRegex::new(pattern).map_err(|e| format!("invalid pattern {pattern:?}: {e}"))?,
            ),
        };
        Ok(PreTokenizer { engine, specials: special_matcher(special_tokens)? })
    }

    /// Call `f` on every pre-token of `text`, which holds no special tokens.
    /// Errors only when the backtracking engine gives up (catastrophic pattern).
    pub fn for_each_piece<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str),
    ) -> Result<(), String> {
        match &self.engine {
            Engine::Emulated { re, scan, tag } => {
                let mut cache = RegexCaches::take(*tag, re);
                let mut pos = 0;
                while pos < text.len() {
                    if let Some(end) = scan(text.as_bytes(), pos) {
                        f(&text[pos..end]);
                        pos = end;
                        continue;
                    }
                    let input = Input::new(text).range(pos..).anchored(Anchored::Yes);
                    let Some(m) = re.search_with(&mut cache, &input) else {
                        // Every preset covers every character; skip one if not.
                        pos += text[pos..].chars().next().map_or(1, char::len_utf8);
                        continue;
                    };
                    let mut end = m.end();
                    if m.pattern().as_usize() == 1 {
                        end -= text[..end].chars().next_back().map_or(0, char::len_utf8);
                    }
                    f(&text[pos..end]);
                    pos = end;
                }
                RegexCaches::put(*tag, cache);
            }
            Engine::Fancy(re) => {
                for m in re.find_iter(text) {
                    let m = m.map_err(|e| format!("regex engine error: {e}"))?;
                    if !m.as_str().is_empty() {
                        f(m.as_str());
                    }
                }
            }
        }
        Ok(())
    }

    /// Call `f` on every pre-token of `text`, cutting first at special tokens,
    /// which are dropped (they are hard boundaries and never counted as text).
    pub fn for_each_word<'t>(&self, text: &'t str, mut f: impl FnMut(&'t str)) -> Result<(), String> {
        match &self.specials {
            None => self.for_each_piece(text, f),
            Some(ac) => {
                let mut start = 0;
                for m in ac.find_iter(text) {
                    self.for_each_piece(&text[start..m.start()], &mut f)?;
                    start = m.end();
                }
                self.for_each_piece(&text[start..], f)
            }
        }
    }
}

/// Character classes as the preset patterns see them (`\s` is Unicode
/// White_Space: \x1c-\x1f are not spaces, U+0085 and U+00A0 are).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    Space,
    Other,
    /// A character the scanner does not classify (3 or 4 bytes of UTF-8; for
    /// o200k also Lm, Lo and marks): ask the regex.
    Unknown,
}

/// `ascii_class` as a table, for the scanners' inner loops.
static ASCII_CLASSES: [Class; 128] = {
    let mut table = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        table[b] = ascii_class(b as u8);
        b += 1;
    }
    table
};

const fn ascii_class(b: u8) -> Class {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Digit,
        b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' => Class::Space,
        0x80.. => Class::Unknown,
        _ => Class::Other,
    }
}

/// Unicode categories of a 2-byte character, as far as the presets tell them
/// apart. o200k's words take `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*` then
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` (or `+` then `*`), so for it upper-case
/// letters, lower-case ones and the rest (Lm, Lo, and marks, which are not
/// letters to `\p{L}`) behave differently.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Category {
    /// Lu, Lt.
    Upper,
    /// Ll.
    Lower,
    /// Lm, Lo.
    OtherLetter,
    /// \p{M}.
    Mark,
    Digit,
    Space,
    Other,
}

/// Categories of the 2-byte UTF-8 characters (U+0080..U+07FF: Latin-1 and
/// the Latin extensions, Greek, Cyrillic, Armenian, Hebrew, Arabic, ...), by
/// code point, taken from the regex engine's own Unicode classes, so the
/// scanners and the regex agree on every character by construction.
fn two_byte_categories() -> &'static [Category; 0x800] {
    static TABLE: std::sync::OnceLock<[Category; 0x800]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let is = |class: &str| MetaRegex::new(&format!(r"\A{class}\z")).expect("a Unicode class compiles");
        let categories = [
            (is(r"[\p{Lu}\p{Lt}]"), Category::Upper),
            (is(r"\p{Ll}"), Category::Lower),
            (is(r"\p{L}"), Category::OtherLetter),
            (is(r"\p{M}"), Category::Mark),
            (is(r"\p{N}"), Category::Digit),
            (is(r"\s"), Category::Space),
        ];
        let mut table = [Category::Other; 0x800];
        for (cp, slot) in table.iter_mut().enumerate().skip(0x80) {
            let c = char::from_u32(cp as u32).expect("U+0080..U+07FF are chars").to_string();
            *slot = categories.iter().find(|(re, _)| re.is_match(&c)).map_or(Category::Other, |&(_, cat)| cat);
        }
        table
    })
}

/// The class and byte length of the character at `i` (< bytes.len()): ASCII
/// and 2-byte characters are classified; longer ones are Unknown (length 1).
/// A `cased` scanner (o200k) reads upper- and lower-case letters as letters
/// and the other letters and marks as Unknown; the others read all letters as
/// letters and marks as other characters.
#[inline(always)]
fn char_at(bytes: &[u8], i: usize, cased: bool) -> (Class, usize) {
    let b = bytes[i];
    if b < 0x80 {
        (ASCII_CLASSES[b as usize], 1)
    } else {
        wide_char_at(bytes, i, cased)
    }
}

/// `char_at` for a non-ASCII character, out of line to keep the ASCII loops small.
#[inline(never)]
fn wide_char_at(bytes: &[u8], i: usize, cased: bool) -> (Class, usize) {
    let Some(category) = two_byte_category(bytes, i) else { return (Class::Unknown, 1) };
    let class = match category {
        Category::Upper | Category::Lower => Class::Letter,
        Category::OtherLetter if !cased => Class::Letter,
        Category::Mark if !cased => Class::Other,
        Category::OtherLetter | Category::Mark => Class::Unknown,
        Category::Digit => Class::Digit,
        Category::Space => Class::Space,
        Category::Other => Class::Other,
    };
    (class, 2)
}

/// The category of the 2-byte character at `i`, None for any other.
#[inline]
fn two_byte_category(bytes: &[u8], i: usize) -> Option<Category> {
    let b = bytes[i];
    // Valid UTF-8 (the text is a str): a continuation byte follows a lead byte.
    (0xC2..=0xDF).contains(&b).then(|| two_byte_categories()[((b as usize & 0x1F) << 6) | (bytes[i + 1] as usize & 0x3F)])
}

/// End of the run of characters of class `c` starting at `i`, or None if the
/// run reaches an Unknown character (which might continue it).
fn run_end(bytes: &[u8], mut i: usize, c: Class, cased: bool) -> Option<usize> {
    while i < bytes.len() {
        let (k, len) = char_at(bytes, i, cased);
        if k == c {
            i += len;
        } else if k == Class::Unknown {
            return None;
        } else {
            return Some(i);
        }
    }
    Some(i)
}

/// The whitespace run from `pos` (a space character): its end, the start of
/// its last character, and where a newline in it ends last, if any; None if
/// an Unknown character ends it (it might be a space).
fn whitespace_run(bytes: &[u8], pos: usize, cased: bool) -> Option<(usize, usize, Option<usize>)> {
    let (mut end, mut last, mut last_newline) = (pos, pos, None);
    while end < bytes.len() {
        match char_at(bytes, end, cased) {
            (Class::Space, len) => {
                last = end;
                end += len;
                if is_newline(bytes[last]) {
                    last_newline = Some(end);
                }
            }
            (Class::Unknown, _) => return None,
            _ => break,
        }
    }
    Some((end, last, last_newline))
}

/// `\s+(?!\S)|\s+` on a whitespace run `pos..end` whose last character starts
/// at `last`: the whole run at the end of the text; before a non-space, all
/// but its last character (or the single character).
fn space_before_text(bytes: &[u8], pos: usize, end: usize, last: usize) -> usize {
    if end == bytes.len() || last == pos {
        end
    } else {
        last
    }
}

/// The GPT-2 pre-token starting at `pos`, found by hand when the decision only
/// involves ASCII and 2-byte characters; None means "ask the regex"
/// (exactness over speed). Mirrors the pattern branch by branch:
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
fn gpt2_piece(bytes: &[u8], pos: usize) -> Option<usize> {
    let at = |i: usize| bytes.get(i).copied();
    if bytes[pos] == b'\'' {
        // Case-sensitive: no other character can match.
        let contraction = match (at(pos + 1), at(pos + 2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => Some(2),
            (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => Some(3),
            _ => None,
        };
        if let Some(n) = contraction {
            return Some(pos + n);
        }
    }
    let (first, len) = char_at(bytes, pos, false);
    match first {
        Class::Letter | Class::Digit | Class::Other => run_end(bytes, pos + len, first, false),
        Class::Space => {
            // ` ?X+`: a space followed by a letter, digit or other character.
            if bytes[pos] == b' ' && pos + 1 < bytes.len() {
                match char_at(bytes, pos + 1, false) {
                    (c @ (Class::Letter | Class::Digit | Class::Other), n) => return run_end(bytes, pos + 1 + n, c, false),
                    (Class::Unknown, _) => return None,
                    (Class::Space, _) => {}
                }
            }
            let (end, last, _) = whitespace_run(bytes, pos, false)?;
            Some(space_before_text(bytes, pos, end, last))
        }
        Class::Unknown => None,
    }
}

/// A preset's hand-written scanner: the end of the pre-token starting at `pos`
/// when the characters it reads decide it, None to hand over to the regex engine.
type Scanner = fn(&[u8], usize) -> Option<usize>;

fn scanner(pattern: &str) -> Scanner {
    match pattern {
        GPT2_PATTERN => gpt2_piece,
        CL100K_PATTERN => cl100k_piece,
        O200K_PATTERN => o200k_piece,
        _ => |_, _| None,
    }
}

fn is_newline(b: u8) -> bool {
    b == b'\r' || b == b'\n'
}

/// Length of the case-insensitive contraction `'s|'t|'re|'ve|'m|'ll|'d` at
/// `pos` (which holds `'`): Some(0) if there is none, None if a non-ASCII
/// character might case-fold into one (`'ſ` is `'s` to a Unicode engine).
fn contraction_len(bytes: &[u8], pos: usize) -> Option<usize> {
    let lower = |i: usize| match bytes.get(i) {
        Some(&b) if b >= 0x80 => None,
        Some(&b) => Some(Some(b.to_ascii_lowercase())),
        None => Some(None),
    };
    Some(match lower(pos + 1)? {
        Some(b's' | b't' | b'm' | b'd') => 2,
        Some(first @ (b'r' | b'v' | b'l')) => match (first, lower(pos + 2)?) {
            (b'r' | b'v', Some(b'e')) | (b'l', Some(b'l')) => 3,
            _ => 0,
        },
        _ => 0,
    })
}

/// `\p{N}{1,3}` from a digit at `pos`.
fn digits_end(bytes: &[u8], pos: usize, cased: bool) -> Option<usize> {
    let mut i = pos;
    for _ in 0..3 {
        if i == bytes.len() {
            break;
        }
        match char_at(bytes, i, cased) {
            (Class::Digit, len) => i += len,
            (Class::Unknown, _) => return None,
            _ => break,
        }
    }
    Some(i)
}

/// ` ?[^\s\p{L}\p{N}]+` then a greedy run of bytes in `trail`, from the first
/// non-space, non-letter, non-digit character at `start`.
fn punctuation_end(bytes: &[u8], start: usize, trail: fn(u8) -> bool, cased: bool) -> Option<usize> {
    let mut end = run_end(bytes, start, Class::Other, cased)?;
    while end < bytes.len() && trail(bytes[end]) {
        end += 1;
    }
    Some(end)
}

/// How the cl100k and o200k patterns differ; the rest of their branches
/// (`[^\r\n\p{L}\p{N}]?` before a word, `\p{N}{1,3}`, ` ?` before
/// punctuation, the whitespace rules) are the same.
struct TiktokenRules {
    /// End of the word starting at the letter `start`.
    word_end: fn(&[u8], usize) -> Option<usize>,
    /// Bytes a punctuation run takes after it: `[\r\n]*` or `[\r\n/]*`.
    trail: fn(u8) -> bool,
    /// cl100k's `\s++$` comes before its newline branch: a whitespace run that
    /// reaches the end of the text is one pre-token even if it holds a newline.
    run_to_end_first: bool,
    /// Letters by case, other letters and marks Unknown (`char_at`): o200k.
    cased: bool,
}

const CL100K_RULES: TiktokenRules = TiktokenRules {
    word_end: |b, start| run_end(b, start, Class::Letter, false),
    trail: is_newline,
    run_to_end_first: true,
    cased: false,
};

const O200K_RULES: TiktokenRules = TiktokenRules {
    word_end: o200k_word_end,
    trail: |c| is_newline(c) || c == b'/',
    run_to_end_first: false,
    cased: true,
};

/// The cl100k pre-token at `pos` when ASCII and 2-byte characters decide it.
/// Mirrors `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
///  ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s` branch by branch.
fn cl100k_piece(bytes: &[u8], pos: usize) -> Option<usize> {
    if bytes[pos] == b'\'' {
        let n = contraction_len(bytes, pos)?;
        if n > 0 {
            return Some(pos + n);
        }
    }
    tiktoken_piece(bytes, pos, &CL100K_RULES)
}

/// The o200k pre-token at `pos` when ASCII and 2-byte characters other than
/// Lm, Lo and marks decide it. Mirrors
/// `[^\r\n\p{L}\p{N}]?[upper]*[lower]+(contraction)?|[^\r\n\p{L}\p{N}]?[upper]+[lower]*(contraction)?|
/// \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+` branch by branch.
fn o200k_piece(bytes: &[u8], pos: usize) -> Option<usize> {
    tiktoken_piece(bytes, pos, &O200K_RULES)
}

/// The branches cl100k and o200k share, in their order, from `pos`.
fn tiktoken_piece(bytes: &[u8], pos: usize, rules: &TiktokenRules) -> Option<usize> {
    let b = bytes[pos];
    let (first, len) = char_at(bytes, pos, rules.cased);
    match first {
        Class::Letter => return (rules.word_end)(bytes, pos),
        Class::Digit => return digits_end(bytes, pos, rules.cased),
        Class::Unknown => return None,
        Class::Space | Class::Other => {}
    }
    let next = (pos + len < bytes.len()).then(|| char_at(bytes, pos + len, rules.cased).0);
    if !is_newline(b) {
        // `[^\r\n\p{L}\p{N}]?` before a word: any space or other character.
        match next {
            Some(Class::Letter) => return (rules.word_end)(bytes, pos + len),
            Some(Class::Unknown) => return None,
            _ => {}
        }
    }
    if first == Class::Other {
        return punctuation_end(bytes, pos, rules.trail, rules.cased);
    }
    if b == b' ' && next == Some(Class::Other) {
        return punctuation_end(bytes, pos + 1, rules.trail, rules.cased);
    }
    let (end, last, last_newline) = whitespace_run(bytes, pos, rules.cased)?;
    if rules.run_to_end_first && end == bytes.len() {
        return Some(end);
    }
    Some(last_newline.unwrap_or_else(|| space_before_text(bytes, pos, end, last)))
}

/// An o200k word from the letter at `start`: upper-case letters, then
/// lower-case ones (without other letters and marks, which are Unknown, the
/// two word branches come down to this), then an optional case-insensitive
/// contraction.
fn o200k_word_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    for (case, is_ascii_case) in [(Category::Upper, u8::is_ascii_uppercase as fn(&u8) -> bool), (Category::Lower, u8::is_ascii_lowercase)] {
        while i < bytes.len() {
            let b = bytes[i];
            if is_ascii_case(&b) {
                i += 1;
            } else if b >= 0x80 && two_byte_category(bytes, i) == Some(case) {
                i += 2;
            } else {
                break;
            }
        }
    }
    match bytes.get(i) {
        None => Some(i),
        Some(b'\'') => Some(i + contraction_len(bytes, i)?),
        Some(&b) if b < 0x80 => Some(i),
        Some(_) => (wide_char_at(bytes, i, true).0 != Class::Unknown).then_some(i),
    }
}

/// Leftmost-longest matcher over the special-token strings, or None if there are none.
pub fn special_matcher(special_tokens: &[String]) -> Result<Option<AhoCorasick>, String> {
    if special_tokens.is_empty() {
        return Ok(None);
    }
    if let Some(t) = special_tokens.iter().find(|t| t.is_empty()) {
        return Err(format!("special token {t:?} is empty"));
    }
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(special_tokens)
        .map(Some)
        .map_err(|e| format!("cannot build special-token matcher: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pattern: &str, text: &str) -> Vec<String> {
        let p = PreTokenizer::new(pattern, &[]).unwrap();
        let mut out = vec![];
        p.for_each_piece(text, |w| out.push(w.to_string())).unwrap();
        out
    }

    #[test]
    fn gpt2_emulation_equals_backtracking() {
        let texts = [
            "Hello world", "a  b", "a \n\n b", "  lead", "trail  ", "x\n", "it's 12 o'clock!!",
            " \t\n x", "\n\n\n", "", "a\n  ", "a.\n \n", "x\n\ny  ", "héllo wörld 123 ...", "a\u{a0}\u{a0}b",
        ];
        for pat in ["gpt2", "cl100k", "o200k"] {
            let full = resolve_pattern(pat);
            for t in texts {
                let fancy = {
                    let re = FancyRegex::new(full).unwrap();
                    re.find_iter(t).map(|m| m.unwrap().as_str().to_string()).collect::<Vec<_>>()
                };
                assert_eq!(split(pat, t), fancy, "pattern {pat} text {t:?}");
            }
        }
    }

    #[test]
    fn scanners_equal_regex() {
        let texts = [
            "it's 'S 'll'' ''s x'd a'b", "  \n\n x  y\t\tz \r\n", "end  ", "a\x1cb\x1f c\x0b\x0cd", "!!  ..a1b2 3.4",
            "caf\u{e9} na\u{ef}ve \u{a0}x 'caf\u{e9}", " \u{3000}y", "x \u{85}\n", "'\u{e9}t\u{e9}'",
            "IT'S We'Re DON'T x'\u{17f} 'K HTTPServer fooBar ABC1 a\n  ", "1234567 x12y (foo) ...a  \n\n  b\t\tc",
            "a.\n/b }\n/* c */\n\n", "x\t\ty \t!z \r\n\r\n", "1\u{b2}3 ab\u{301}c",
            // 2-byte characters, which the gpt2 and cl100k scanners classify.
            "\u{3b1}\u{3b2}\u{3b3} \u{43f}\u{440}\u{438}\u{432}\u{435}\u{442} \u{5e9}\u{5dc}\u{5d5}\u{5dd}, \u{627}\u{644}\u{639}\u{631}\u{628}\u{64a}\u{629}!",
            "\u{a0}\u{a0}x \u{a0}\u{a0} \u{85}y\u{a0}", "\u{b2}\u{b3}\u{b9}4 \u{660}\u{661}\u{662}\u{663}\u{664} 1\u{bd}", "\u{a0}\u{e9}t\u{e9} \u{bf}qu\u{e9}? \u{ab}\u{bb}\u{a7}\u{b6}",
            "e\u{301}t\u{301} \u{301}\u{301}x \u{2c6}\u{2b0}a", "\u{e9}\u{4e2d}\u{6587} \u{3b1}\u{2003}\u{3b2}", "'\u{17f} x'\u{e9} \u{c9}T\u{c9}'S", "\u{a0}\u{a0}",
            "\u{100}\u{17f}\u{180}\u{24f}\u{250}\u{2af}\u{370}\u{3ff}\u{400}\u{4ff}\u{500}\u{7ff} \u{5be}\u{5c0}\u{5c3}\u{5c6}", "\r\n\u{a0}\n\u{85} z",
            // o200k's cased words: Lt, Lm, Lo and marks in and next to words.
            "\u{c0}\u{c9}cole \u{e9}T\u{c9} \u{c9}T\u{c9}'S \u{1c5}x \u{1c4}\u{1c5}\u{1c6} a\u{c9}b", "\u{2b0}a b\u{2b0} \u{5d0}b x\u{301}y \u{301}z",
            "\u{391}\u{3b8}\u{3ae}\u{3bd}\u{3b1} \u{41c}\u{41e}\u{421}\u{41a}\u{412}\u{410} \u{410}\u{431}\u{432}'\u{434} \u{ab}\u{41c}\u{438}\u{440}\u{bb}",
        ];
        for pattern in [GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN] {
            let re = FancyRegex::new(pattern).unwrap();
            for t in texts {
                let want: Vec<String> = re.find_iter(t).map(|m| m.unwrap().as_str().to_string()).collect();
                assert_eq!(split(pattern, t), want, "pattern {pattern} text {t:?}");
            }
        }
    }

    #[test]
    fn specials_are_dropped_longest_first() {
        let p = PreTokenizer::new("gpt2", &["<|a|>".into(), "<|a|><|b|>".into()]).unwrap();
        let mut out = vec![];
        p.for_each_word("x<|a|><|b|>y<|a|>z", |w| out.push(w)).unwrap();
        assert_eq!(out, ["x", "y", "z"]);
    }
}
