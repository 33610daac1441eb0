//! The preset patterns as scalar state machines: `advance(text, pos)` is the
//! end of the pre-token that starts at `pos`, exactly as Python's `regex`
//! (leftmost-first alternation with backtracking) matches there. They are the
//! reference of the block scanner (`super::blocks`) and its fallback for what
//! it leaves undecided; no regex engine runs for a preset.
//!
//! Each function mirrors its pattern branch by branch, in order. Character
//! classes come from `super::unicode` (any code point); the text is valid
//! UTF-8 and `pos` a character boundary before its end.

use super::unicode::{
    flags_at, has_at, CASELESS, LETTER, LOWER, LOWER_SET, MARK, NUMBER, SPACE, UPPER_SET,
};

/// Classes of the GPT-2 and cl100k runs: a character is a letter, a number,
/// a space or, being none of these, "other" (punctuation, symbols, marks).
const OTHER: u8 = 0;

/// The run class of a character's flags (`LETTER`, `NUMBER`, `SPACE` or `OTHER`).
#[inline]
fn kind(flags: u8) -> u8 {
    flags & (LETTER | NUMBER | SPACE)
}

/// End of the run of characters of run class `class` from byte `i`.
#[inline]
fn run_end(b: &[u8], mut i: usize, class: u8) -> usize {
    while i < b.len() {
        let c = b[i];
        if c < 0x80 {
            if kind(super::unicode::ASCII[c as usize]) != class {
                break;
            }
            i += 1;
        } else {
            let (f, len) = flags_at(b, i);
            if kind(f) != class {
                break;
            }
            i += len;
        }
    }
    i
}

/// End of the run of characters that have any of the flags `set`, from byte `i`.
#[inline]
fn set_run_end(b: &[u8], mut i: usize, set: u8) -> usize {
    while i < b.len() {
        let (f, len) = flags_at(b, i);
        if f & set == 0 {
            break;
        }
        i += len;
    }
    i
}

#[inline]
fn is_newline(c: u8) -> bool {
    c == b'\r' || c == b'\n'
}

/// The whitespace run from `pos` (a space character): its end, the start of
/// its last character, and the end of its last `\r` or `\n`, if any.
#[inline]
fn whitespace_run(b: &[u8], pos: usize) -> (usize, usize, Option<usize>) {
    let (mut end, mut last, mut newline_end) = (pos, pos, None);
    while end < b.len() {
        let (f, len) = flags_at(b, end);
        if f & SPACE == 0 {
            break;
        }
        last = end;
        end += len;
        if is_newline(b[last]) {
            newline_end = Some(end);
        }
    }
    (end, last, newline_end)
}

/// `\s+(?!\S)`: a whitespace run `pos..end` whose last character starts at
/// `last` matches whole at the end of the text, else without its last
/// character (which is followed by a non-space); None if that leaves nothing.
#[inline]
fn space_not_before_text(b: &[u8], pos: usize, end: usize, last: usize) -> Option<usize> {
    if end == b.len() {
        Some(end)
    } else {
        (last > pos).then_some(last)
    }
}

/// Length in bytes of the case-sensitive contraction `'s|'t|'re|'ve|'m|'ll|'d`
/// at `pos` (which holds `'`), 0 if there is none.
#[inline]
fn contraction(b: &[u8], pos: usize) -> usize {
    match (b.get(pos + 1), b.get(pos + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => 2,
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
        _ => 0,
    }
}

/// Length in bytes of the case-insensitive contraction
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `pos`, 0 if there is none. Under simple
/// case folding the only non-ASCII character that folds into one of these
/// letters is U+017F (`ſ`, folds to `s`).
#[inline]
pub(super) fn contraction_ci(b: &[u8], pos: usize) -> usize {
    if b.get(pos) != Some(&b'\'') {
        return 0;
    }
    let lower = |i: usize| b.get(i).map(u8::to_ascii_lowercase);
    match (lower(pos + 1), lower(pos + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => 2,
        (Some(0xC5), Some(0xBF)) => 3, // ſ
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
        _ => 0,
    }
}

/// `\p{N}{1,3}` from the number at `pos`.
#[inline]
fn digits3(b: &[u8], pos: usize) -> usize {
    digits::<3>(b, pos)
}

/// `\p{N}{1,MAX}` from the number at `pos`.
#[inline]
fn digits<const MAX: usize>(b: &[u8], pos: usize) -> usize {
    let mut i = pos;
    for _ in 0..MAX {
        if !has_at(b, i, NUMBER) {
            break;
        }
        i += flags_at(b, i).1;
    }
    i
}

/// GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
pub fn gpt2(b: &[u8], pos: usize) -> usize {
    if b[pos] == b'\'' {
        let n = contraction(b, pos);
        if n > 0 {
            return pos + n;
        }
    }
    let (f, len) = flags_at(b, pos);
    let class = kind(f);
    if class != SPACE {
        return run_end(b, pos + len, class);
    }
    if b[pos] == b' ' && pos + 1 < b.len() {
        let (next, next_len) = flags_at(b, pos + 1);
        if kind(next) != SPACE {
            return run_end(b, pos + 1 + next_len, kind(next));
        }
    }
    let (end, last, _) = whitespace_run(b, pos);
    space_not_before_text(b, pos, end, last).unwrap_or(end)
}

/// cl100k: `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
///  ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`.
pub fn cl100k(b: &[u8], pos: usize) -> usize {
    if let Some(end) = cl100k_not_space::<3>(b, pos) {
        return end;
    }
    let (end, last, newline_end) = whitespace_run(b, pos);
    if end == b.len() {
        return end; // \s++$
    }
    if let Some(e) = newline_end {
        return e; // \s*[\r\n]: up to the last newline of the run
    }
    space_not_before_text(b, pos, end, last).unwrap_or(end)
}

/// Llama 3 (`super::presets::LLAMA3_PATTERN`):
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
///  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`. cl100k's branches up
/// to whitespace (the contractions are the same set; greedy and possessive
/// quantifiers end where nothing after them in their branch can fail), then
/// o200k's whitespace branches.
pub fn llama3(b: &[u8], pos: usize) -> usize {
    llama3_like::<3>(b, pos)
}

/// Qwen2 (`super::presets::QWEN2_PATTERN`): Llama 3's with `\p{N}` for `\p{N}{1,3}`.
pub fn qwen2(b: &[u8], pos: usize) -> usize {
    llama3_like::<1>(b, pos)
}

/// Llama 3's pattern with numbers of up to `DIGITS` characters.
#[inline]
fn llama3_like<const DIGITS: usize>(b: &[u8], pos: usize) -> usize {
    if let Some(end) = cl100k_not_space::<DIGITS>(b, pos) {
        return end;
    }
    let (end, last, newline_end) = whitespace_run(b, pos);
    if let Some(e) = newline_end {
        return e; // \s*[\r\n]+: up to the last newline of the run
    }
    space_not_before_text(b, pos, end, last).unwrap_or(end)
}

/// cl100k's branches before whitespace (contraction, word with its prefix,
/// up to `DIGITS` numbers, other characters with an optional space before
/// and `[\r\n]*` after): the end of the one that matches at `pos`, None
/// when `pos` starts a whitespace run that none of them takes.
#[inline]
fn cl100k_not_space<const DIGITS: usize>(b: &[u8], pos: usize) -> Option<usize> {
    let n = contraction_ci(b, pos);
    if n > 0 {
        return Some(pos + n);
    }
    let c = b[pos];
    let (f, len) = flags_at(b, pos);
    let class = kind(f);
    if class == LETTER {
        return Some(run_end(b, pos + len, LETTER));
    }
    // A prefix: anything but \r, \n, a letter or a number, before letters.
    if class != NUMBER && !is_newline(c) && has_at(b, pos + len, LETTER) {
        return Some(run_end(b, pos + len, LETTER));
    }
    if class == NUMBER {
        return Some(digits::<DIGITS>(b, pos));
    }
    if class == OTHER {
        return Some(newlines_end(b, run_end(b, pos + len, OTHER), is_newline));
    }
    if c == b' ' && pos + 1 < b.len() {
        let (next, next_len) = flags_at(b, pos + 1);
        if kind(next) == OTHER {
            let end = run_end(b, pos + 1 + next_len, OTHER);
            return Some(newlines_end(b, end, is_newline));
        }
    }
    None
}

/// End of the run of ASCII bytes `trail` accepts, from `i` (`[\r\n]*`, `[\r\n/]*`).
#[inline]
fn newlines_end(b: &[u8], mut i: usize, trail: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && trail(b[i]) {
        i += 1;
    }
    i
}

/// o200k (the pattern, over four lines)
/// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+`
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+`
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*`
/// `|\s*[\r\n]+|\s+(?!\S)|\s+`.
pub fn o200k(b: &[u8], pos: usize) -> usize {
    let c = b[pos];
    let (f, len) = flags_at(b, pos);
    let class = kind(f);
    let prefix = class != LETTER && class != NUMBER && !is_newline(c);
    if let Some(end) = o200k_word(b, pos, len, prefix) {
        return end + contraction_ci(b, end);
    }
    if class == NUMBER {
        return digits3(b, pos);
    }
    let slash_or_newline = |c: u8| is_newline(c) || c == b'/';
    if class == OTHER {
        return newlines_end(b, run_end(b, pos + len, OTHER), slash_or_newline);
    }
    if c == b' ' && pos + 1 < b.len() {
        let (next, next_len) = flags_at(b, pos + 1);
        if kind(next) == OTHER {
            return newlines_end(b, run_end(b, pos + 1 + next_len, OTHER), slash_or_newline);
        }
    }
    let (end, last, newline_end) = whitespace_run(b, pos);
    if let Some(e) = newline_end {
        return e; // \s*[\r\n]+: up to the last newline of the run
    }
    space_not_before_text(b, pos, end, last).unwrap_or(end)
}

/// The end of o200k's word branches at `pos` (before the contraction
/// suffix), trying each branch first after the one-character prefix (when
/// `prefix`: the character at `pos`, `len` bytes, may be one) and then
/// without it, as the backtracking engine does; None if neither matches.
fn o200k_word(b: &[u8], pos: usize, len: usize, prefix: bool) -> Option<usize> {
    let starts = if prefix {
        [Some(pos + len), Some(pos)]
    } else {
        [Some(pos), None]
    };
    for branch in [
        o200k_lower_branch as fn(&[u8], usize) -> Option<usize>,
        o200k_upper_branch,
    ] {
        for start in starts.into_iter().flatten() {
            if let Some(end) = branch(b, start) {
                return Some(end);
            }
        }
    }
    None
}

/// `[upper set]*[lower set]+` from `q`: the upper-set run U (greedy), then a
/// lower-set run; on backtracking, U gives back characters until one it gives
/// back is also in the lower set (Lm, Lo, M), which then ends the match (the
/// characters after it in U are Lu or Lt). None if U holds no such character
/// and none follows it.
fn o200k_lower_branch(b: &[u8], q: usize) -> Option<usize> {
    let mut i = q;
    let mut last_caseless_end = None;
    while i < b.len() {
        let (f, len) = flags_at(b, i);
        if f & UPPER_SET == 0 {
            break;
        }
        i += len;
        if f & (CASELESS | MARK) != 0 {
            last_caseless_end = Some(i);
        }
    }
    if has_at(b, i, LOWER) {
        return Some(set_run_end(b, i, LOWER_SET));
    }
    last_caseless_end
}

/// `[upper set]+[lower set]*` from `q`.
fn o200k_upper_branch(b: &[u8], q: usize) -> Option<usize> {
    let u_end = set_run_end(b, q, UPPER_SET);
    (u_end > q).then(|| set_run_end(b, u_end, LOWER_SET))
}

/// SuperBPE's stage 2 (`super::presets::SUPERBPE_PATTERN`): the isolated
/// runs `\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r/]*\n?| +(?!\S)`, and between them
/// the rest of each line, its `\n` included (`(?:(?!...)[^\n])+\n?|\n`).
pub fn superbpe(b: &[u8], pos: usize) -> usize {
    if let Some(end) = superbpe_isolated(b, pos) {
        return end;
    }
    if b[pos] == b'\n' {
        return pos + 1;
    }
    let mut i = pos + flags_at(b, pos).1;
    while i < b.len() && b[i] != b'\n' && !superbpe_isolates_at(b, i) {
        i += flags_at(b, i).1;
    }
    if b.get(i) == Some(&b'\n') {
        i + 1
    } else {
        i
    }
}

/// The end of the isolated run of SuperBPE's stage 2 that starts at `pos`, if any.
#[inline]
fn superbpe_isolated(b: &[u8], pos: usize) -> Option<usize> {
    let (f, len) = flags_at(b, pos);
    match kind(f) {
        NUMBER => return Some(digits3(b, pos)),
        OTHER => return other_run2(b, pos, len),
        _ => {}
    }
    if b[pos] != b' ' {
        return None;
    }
    if pos + 1 < b.len() {
        let (next, next_len) = flags_at(b, pos + 1);
        if kind(next) == OTHER {
            if let Some(end) = other_run2(b, pos + 1, next_len) {
                return Some(end);
            }
        }
    }
    // ` +(?!\S)`: the spaces, less the last one when text follows them.
    let mut end = pos + 1;
    while b.get(end) == Some(&b' ') {
        end += 1;
    }
    if end == b.len() || has_at(b, end, SPACE) {
        Some(end)
    } else {
        (end - pos >= 2).then_some(end - 1)
    }
}

/// `[^\s\p{L}\p{N}]{2,}[\r/]*\n?` from the "other" character at `pos`
/// (`len` bytes); None when the run holds one character only.
#[inline]
fn other_run2(b: &[u8], pos: usize, len: usize) -> Option<usize> {
    let end = run_end(b, pos + len, OTHER);
    if end == pos + len {
        return None;
    }
    let end = newlines_end(b, end, |c| c == b'\r' || c == b'/');
    Some(if b.get(end) == Some(&b'\n') {
        end + 1
    } else {
        end
    })
}

/// Does an isolated run start at `i` (`superbpe_isolated(b, i).is_some()`,
/// without finding its end)?
#[inline]
fn superbpe_isolates_at(b: &[u8], i: usize) -> bool {
    let (f, len) = flags_at(b, i);
    let after = |j: usize| (j < b.len()).then(|| kind(flags_at(b, j).0));
    match kind(f) {
        NUMBER => true,
        OTHER => after(i + len) == Some(OTHER),
        _ if b[i] == b' ' => match b.get(i + 1) {
            None | Some(b' ') => true,
            Some(_) => {
                let next_len = flags_at(b, i + 1).1;
                match after(i + 1) {
                    Some(SPACE) => true,
                    Some(OTHER) => after(i + 1 + next_len) == Some(OTHER),
                    _ => false,
                }
            }
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(advance: fn(&[u8], usize) -> usize, text: &str) -> Vec<&str> {
        let (b, mut pos, mut out) = (text.as_bytes(), 0, vec![]);
        while pos < b.len() {
            let end = advance(b, pos);
            assert!(end > pos && text.is_char_boundary(end), "{text:?} at {pos}");
            out.push(&text[pos..end]);
            pos = end;
        }
        out
    }

    #[test]
    fn gpt2_examples() {
        assert_eq!(
            split(gpt2, "it's  a test!!\n\n x"),
            ["it", "'s", " ", " a", " test", "!!", "\n\n", " x"]
        );
        assert_eq!(split(gpt2, "a  "), ["a", "  "]);
        assert_eq!(
            split(gpt2, " 's 'x\t b"),
            [" '", "s", " '", "x", "\t", " b"]
        );
    }

    #[test]
    fn cl100k_examples() {
        assert_eq!(
            split(cl100k, "It'S (hello) 12345\n\n  x"),
            ["It", "'S", " (", "hello", ")", " ", "123", "45", "\n\n", " ", " x"]
        );
        assert_eq!(split(cl100k, "a\n  "), ["a", "\n  "]);
        assert_eq!(
            split(cl100k, "..x\u{17f}'\u{17f}"),
            ["..", "x\u{17f}", "'\u{17f}"]
        );
    }

    #[test]
    fn llama3_and_qwen2_examples() {
        // Trailing whitespace: split after its last newline, unlike cl100k.
        assert_eq!(split(llama3, "a\n  "), ["a", "\n", "  "]);
        assert_eq!(split(cl100k, "a\n  "), ["a", "\n  "]);
        assert_eq!(split(llama3, "a \n"), ["a", " \n"]);
        assert_eq!(split(llama3, "a  "), ["a", "  "]);
        assert_eq!(
            split(llama3, "It'S (hello) 12345\n\n  x"),
            ["It", "'S", " (", "hello", ")", " ", "123", "45", "\n\n", " ", " x"]
        );
        assert_eq!(
            split(qwen2, "It'S 12345\r\n \t"),
            ["It", "'S", " ", "1", "2", "3", "4", "5", "\r\n", " \t"]
        );
    }

    #[test]
    fn o200k_examples() {
        assert_eq!(
            split(o200k, "HTTPServer fooBar ABC1 it's"),
            ["HTTPServer", " foo", "Bar", " ABC", "1", " it's"]
        );
        assert_eq!(split(o200k, "a\n  "), ["a", "\n", "  "]);
        // A mark alone: the prefix-less branch takes it as the word.
        assert_eq!(split(o200k, "\u{301}!x"), ["\u{301}", "!x"]);
        assert_eq!(split(o200k, "A\u{3042}B"), ["A\u{3042}", "B"]);
        assert_eq!(split(o200k, "}\n/x"), ["}\n/", "x"]);
    }

    #[test]
    fn superbpe_examples() {
        assert_eq!(
            split(superbpe, "By the way, it's 12345 dollars!!\nNext line  \n"),
            [
                "By the way, it's ",
                "123",
                "45",
                " dollars",
                "!!\n",
                "Next line",
                "  ",
                "\n"
            ]
        );
        assert_eq!(split(superbpe, "a  b"), ["a", " ", " b"]);
        assert_eq!(split(superbpe, "x .. y"), ["x", " ..", " y"]);
        assert_eq!(split(superbpe, "end.\n\n"), ["end.\n", "\n"]);
        assert_eq!(split(superbpe, "a}\r/\nb"), ["a}\r/\n", "b"]);
        assert_eq!(split(superbpe, "a}}\r/\nb"), ["a", "}}\r/\n", "b"]);
        assert_eq!(split(superbpe, "a }\r\r"), ["a }\r\r"]);
        assert_eq!(split(superbpe, " \t x"), [" ", "\t x"]);
        assert_eq!(split(superbpe, "tail "), ["tail", " "]);
    }
}
