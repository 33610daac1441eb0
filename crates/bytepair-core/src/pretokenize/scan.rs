//! Hand-written scanners for the preset patterns: the end of the pre-token at a
//! position, decided from ASCII and 2-byte characters alone, or None to hand the
//! decision to the regex engine (exactness over speed).

use regex_automata::meta::Regex as MetaRegex;

use super::presets::{CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN};

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
pub(super) type Scanner = fn(&[u8], usize) -> Option<usize>;

pub(super) fn scanner(pattern: &str) -> Scanner {
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
