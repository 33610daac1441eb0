//! The scan of a text for user-defined pieces (leftmost-longest, as
//! SentencePiece matches them), done where the pieces share a prefix of two
//! or more bytes (Mistral's: "[REFERENCE_DOC_") by a substring search for
//! the prefix, each occurrence tried with the anchored matcher. aho-corasick
//! alone looks for their one first byte ("["), which is common in code: its
//! stops and restarts were 2-3% of encoding code with Mistral v3, against a
//! two-byte SIMD filter (memchr's `memmem`) that rarely stops there.

use aho_corasick::{AhoCorasick, Anchored, Input};
use memchr::memmem::Finder;

/// The user-defined pieces' matcher, and the finder of their common prefix.
pub(super) struct UserScan {
    matcher: AhoCorasick,
    /// Boxed: the finder holds AVX2 vectors (32-byte alignment), and an
    /// encoder inside a Python object is only 16-byte aligned (PyO3
    /// allocates it with Python's allocator): unboxed, its aligned loads
    /// faulted.
    prefix: Option<Box<Finder<'static>>>,
}

/// A match: (start, end, pattern index), in bytes of the text searched.
pub(super) type UserMatch = (usize, usize, usize);

impl UserScan {
    /// The scan for `pieces` (the patterns of `matcher`, in its order;
    /// `matcher` is leftmost-longest and allows anchored searches).
    pub(super) fn new(matcher: AhoCorasick, pieces: &[&str]) -> Self {
        let first = pieces.first().map_or(&[][..], |p| p.as_bytes());
        let shared = pieces.iter().fold(first.len(), |n, p| {
            let same = first.iter().zip(p.as_bytes()).take_while(|(a, b)| a == b);
            n.min(same.count())
        });
        let prefix = (shared >= 2).then(|| Box::new(Finder::new(&first[..shared]).into_owned()));
        UserScan { matcher, prefix }
    }

    /// Call `take` for each match in `text`, left to right, never
    /// overlapping: the matches of `AhoCorasick::find_iter`.
    pub(super) fn for_each(&self, text: &[u8], mut take: impl FnMut(UserMatch)) {
        let Some(prefix) = &self.prefix else {
            for m in self.matcher.find_iter(text) {
                take((m.start(), m.end(), m.pattern().as_usize()));
            }
            return;
        };
        // Every match starts with the prefix: the first occurrence where an
        // anchored match exists is the leftmost match, and its longest match
        // there is the leftmost-longest one.
        let mut at = 0;
        while let Some(found) = prefix.find(&text[at..]) {
            let start = at + found;
            let input = Input::new(text).range(start..).anchored(Anchored::Yes);
            match self.matcher.find(input) {
                Some(m) => {
                    take((m.start(), m.end(), m.pattern().as_usize()));
                    at = m.end();
                }
                None => at = start + 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::encode::user_matcher;
    use super::*;

    fn both(pieces: &[&str], text: &str) -> (Vec<UserMatch>, Vec<UserMatch>) {
        let matcher = user_matcher(pieces).unwrap().unwrap();
        let plain: Vec<UserMatch> = matcher
            .find_iter(text)
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
            .collect();
        let scan = UserScan::new(matcher, pieces);
        let mut found = vec![];
        scan.for_each(text.as_bytes(), |m| found.push(m));
        (plain, found)
    }

    #[test]
    fn the_prefix_search_finds_what_aho_corasick_finds() {
        let pieces = ["[REF_1]", "[REF_10]", "[REF_", "[REF_2]"];
        let texts = [
            "",
            "[REF_",
            "[[REF_1]][REF_10][REF_1",
            "a[REF_2][REF_[REF_10]]x[REF_1]",
            "[RE[REF_[REF_[REF_2]",
        ];
        for text in texts {
            let (plain, found) = both(&pieces, text);
            assert_eq!(plain, found, "{text:?}");
        }
        assert_eq!(both(&pieces, "x[REF_10]").1, vec![(1, 9, 1)]);
    }

    #[test]
    fn random_texts_of_the_pieces_letters() {
        use rand::{Rng, SeedableRng};
        let pieces = ["<ab>", "<abc>", "<a", "<ab>>", "<ax"];
        let letters = ['<', 'a', 'b', 'c', '>', 'x'];
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(34);
        for _ in 0..2000 {
            let n = rng.random_range(0..30);
            let text: String = (0..n)
                .map(|_| letters[rng.random_range(0..letters.len())])
                .collect();
            let (plain, found) = both(&pieces, &text);
            assert_eq!(plain, found, "{text:?}");
        }
        // The prefix search is used: "<a" is every piece's start.
        let scan = UserScan::new(user_matcher(&pieces).unwrap().unwrap(), &pieces);
        assert!(scan.prefix.is_some());
        // Pieces with no common prefix of two bytes go through aho-corasick alone.
        let apart = ["<ab>", "<b"];
        let scan = UserScan::new(user_matcher(&apart).unwrap().unwrap(), &apart);
        assert!(scan.prefix.is_none());
    }
}
