//! Character classes as the preset patterns see them, for every code point:
//! one byte of flags per character from a two-stage table (256-character
//! pages, identical pages shared), so classifying a character is two loads.
//!
//! The table is built once from `regex-syntax`'s Unicode property tables
//! (`\p{L}`, `\p{N}`, `\s`, ...), the same data the regex engines of this
//! crate use, so the scanners and a regex agree on every character by
//! construction. (`\s` is the White_Space property: U+0085 and U+00A0 are
//! spaces, `\x1c`-`\x1f` are not, as in Python's `regex`.)

use std::sync::OnceLock;

/// `\p{L}`: a letter.
pub const LETTER: u8 = 1;
/// `\p{N}`: a number (Nd, Nl, No).
pub const NUMBER: u8 = 1 << 1;
/// `\s`: Unicode White_Space.
pub const SPACE: u8 = 1 << 2;
/// `\p{Lu}` or `\p{Lt}`: o200k's upper-case letters.
pub const UPPER: u8 = 1 << 3;
/// `\p{Ll}`: o200k's lower-case letters.
pub const LOWER: u8 = 1 << 4;
/// `\p{Lm}` or `\p{Lo}`: letters without case.
pub const CASELESS: u8 = 1 << 5;
/// `\p{M}`: a combining mark (not a letter to `\p{L}`).
pub const MARK: u8 = 1 << 6;

/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
pub const UPPER_SET: u8 = UPPER | CASELESS | MARK;
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
pub const LOWER_SET: u8 = LOWER | CASELESS | MARK;

const PAGE: usize = 256;
const PAGES: usize = 0x110000 / PAGE;

pub struct Table {
    /// Page of each 256-character block of code points.
    index: Box<[u16; PAGES]>,
    /// The distinct pages of flags.
    pages: Vec<[u8; PAGE]>,
}

/// The flags of `c` (a combination of the constants above; 0 for a character
/// that is none of them, e.g. punctuation).
#[inline]
pub fn flags(c: char) -> u8 {
    let cp = c as usize;
    if cp < 128 {
        return ASCII[cp];
    }
    table().get(c)
}

/// The flag table of every code point (built on first use).
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(build)
}

impl Table {
    /// The flags of `c`: two loads, for a loop that holds the table.
    #[inline(always)]
    pub fn get(&self, c: char) -> u8 {
        let cp = c as usize;
        self.pages[self.index[cp / PAGE] as usize][cp % PAGE]
    }
}

/// The flags of the ASCII characters (the same values the table holds).
pub static ASCII: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        table[b] = match b as u8 {
            b'a'..=b'z' => LETTER | LOWER,
            b'A'..=b'Z' => LETTER | UPPER,
            b'0'..=b'9' => NUMBER,
            b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' => SPACE,
            _ => 0,
        };
        b += 1;
    }
    table
};

/// The code point ranges of a regex class such as `\p{Lu}`, from regex-syntax.
fn ranges(class: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    let hir = regex_syntax::Parser::new()
        .parse(class)
        .expect("a Unicode class parses");
    match hir.kind() {
        HirKind::Class(Class::Unicode(set)) => set
            .ranges()
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        other => panic!("{class} is not a Unicode class: {other:?}"),
    }
}

fn build() -> Table {
    let mut flags = vec![0u8; 0x110000];
    for (class, flag) in [
        (r"\p{L}", LETTER),
        (r"\p{N}", NUMBER),
        (r"\s", SPACE),
        (r"[\p{Lu}\p{Lt}]", UPPER),
        (r"\p{Ll}", LOWER),
        (r"[\p{Lm}\p{Lo}]", CASELESS),
        (r"\p{M}", MARK),
    ] {
        for (start, end) in ranges(class) {
            for f in &mut flags[start as usize..=end as usize] {
                *f |= flag;
            }
        }
    }
    let mut index = Box::new([0u16; PAGES]);
    let mut pages: Vec<[u8; PAGE]> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, chunk) in flags.chunks_exact(PAGE).enumerate() {
        let page: [u8; PAGE] = chunk.try_into().expect("a whole page");
        let id = *seen.entry(page).or_insert_with(|| {
            pages.push(page);
            pages.len() - 1
        });
        index[i] = id as u16;
    }
    Table { index, pages }
}

/// The character at byte `i` of valid UTF-8 `bytes` and its length in bytes.
#[inline(always)]
pub fn char_at(bytes: &[u8], i: usize) -> (char, usize) {
    let b = bytes[i];
    if b < 0x80 {
        return (b as char, 1);
    }
    let (len, init) = match b {
        0xC0..=0xDF => (2, (b & 0x1F) as u32),
        0xE0..=0xEF => (3, (b & 0x0F) as u32),
        _ => (4, (b & 0x07) as u32),
    };
    let mut cp = init;
    for k in 1..len {
        cp = cp << 6 | (bytes[i + k] & 0x3F) as u32;
    }
    // Valid UTF-8 (the caller's contract) decodes to a char.
    (
        char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER),
        len,
    )
}

/// The flags and byte length of the character at byte `i` of valid UTF-8 `bytes`.
#[inline(always)]
pub fn flags_at(bytes: &[u8], i: usize) -> (u8, usize) {
    let b = bytes[i];
    if b < 0x80 {
        return (ASCII[b as usize], 1);
    }
    let (c, len) = char_at(bytes, i);
    (flags(c), len)
}

/// Does the character at byte `i` of valid UTF-8 `bytes` have any of `set`?
/// The end of the text has none.
#[inline(always)]
pub fn has_at(bytes: &[u8], i: usize, set: u8) -> bool {
    i < bytes.len() && flags_at(bytes, i).0 & set != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_agrees_with_the_regex_engine_on_every_code_point() {
        let is = |class: &str| regex_automata::meta::Regex::new(&format!(r"\A{class}\z")).unwrap();
        let classes = [
            (is(r"\p{L}"), LETTER),
            (is(r"\p{N}"), NUMBER),
            (is(r"\s"), SPACE),
            (is(r"\p{M}"), MARK),
        ];
        for cp in (0..0x110000u32).step_by(7) {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let s = c.to_string();
            for (re, flag) in &classes {
                assert_eq!(
                    re.is_match(&s),
                    flags(c) & flag != 0,
                    "U+{cp:04X} flag {flag}"
                );
            }
        }
        assert_eq!(flags('\u{85}') & SPACE, SPACE);
        assert_eq!(flags('\u{1c}') & SPACE, 0);
        assert_eq!(flags('\u{17f}'), LETTER | LOWER);
    }

    #[test]
    fn ascii_table_equals_the_unicode_table() {
        for b in 0..128u8 {
            let t = table();
            assert_eq!(
                ASCII[b as usize], t.pages[t.index[0] as usize][b as usize],
                "byte {b}"
            );
        }
    }

    #[test]
    fn char_at_decodes_every_length() {
        let s = "a\u{e9}\u{4e2d}\u{1f600}";
        let b = s.as_bytes();
        assert_eq!(char_at(b, 0), ('a', 1));
        assert_eq!(char_at(b, 1), ('\u{e9}', 2));
        assert_eq!(char_at(b, 3), ('\u{4e2d}', 3));
        assert_eq!(char_at(b, 6), ('\u{1f600}', 4));
    }
}
