//! The block walker against the scalar machine.

use super::*;
use crate::pretokenize::Preset;

/// Split `text` with the walker and with the scalar machine; they must agree.
/// Batches of 16 and of 256 pre-tokens (the encoder's): a block's starts are
/// written eight at a time only where the batch has room for them.
fn check(preset: Preset, text: &str, simd: Simd) {
    check_batches(preset, text, simd, 16);
    check_batches(preset, text, simd, 256);
}

fn check_batches(preset: Preset, text: &str, simd: Simd, batch: usize) {
    let b = text.as_bytes();
    let mut want = vec![0];
    let mut pos = 0;
    while pos < b.len() {
        pos = preset.advance(b, pos);
        want.push(pos);
    }
    let mut walker = Walker::with_classifier(b, preset, simd);
    let mut got = vec![0];
    let mut bounds = vec![0usize; batch + 1];
    loop {
        let n = walker.fill(&mut bounds);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&bounds[1..=n]);
    }
    if got != want {
        let i = got
            .iter()
            .zip(&want)
            .position(|(g, w)| g != w)
            .unwrap_or(got.len().min(want.len()));
        let pieces = |bounds: &[usize]| -> Vec<String> {
            let lo = i.saturating_sub(3);
            bounds[lo..(i + 3).min(bounds.len())]
                .windows(2)
                .map(|w| String::from_utf8_lossy(&b[w[0]..w[1]]).into_owned())
                .collect()
        };
        panic!(
            "{preset:?} simd={simd:?} batch={batch}: boundary {i} (byte {}) differs: \
             walker {:?} vs scalar {:?}",
            want[i - 1],
            pieces(&got),
            pieces(&want)
        );
    }
}

fn all_paths(text: &str) {
    for preset in [
        Preset::Gpt2,
        Preset::Cl100k,
        Preset::O200k,
        Preset::Llama3,
        Preset::Qwen2,
    ] {
        check(preset, text, Simd::Portable);
        if available() {
            check(preset, text, Simd::Avx2);
            if Simd::best() == Simd::Avx512 {
                check(preset, text, Simd::Avx512);
            }
        }
    }
}

/// Texts drawn from a pool of fragments that exercise every rule, with
/// random lengths, so that every rule meets every block offset.
#[test]
fn walker_equals_scalar_on_generated_text() {
    let pool = [
        "a",
        "Z",
        "the",
        " the",
        "  ",
        "\t",
        "\n",
        "\r\n",
        " \n ",
        "\n\n",
        "'s",
        "'S",
        "'re",
        "'LL",
        "'ve",
        "'d",
        "'m",
        "'t",
        "'x",
        "''",
        "1",
        "12",
        "123",
        "1234567",
        " 99",
        ".",
        "..",
        "!?",
        "/",
        "./",
        "\n/",
        " .",
        "(",
        ")",
        "-",
        "_",
        "Hello",
        "HTTPServer",
        "fooBar",
        "ABC",
        "aB",
        "Ab",
        "\u{e9}",
        "\u{3042}",
        "\u{a0}",
        "\u{301}",
        "\u{17f}",
        "    ",
        "\x0b",
        "\x0c",
        "\x1c",
        "x",
        "I'm",
        "it's",
        "don't",
        "O'Neil",
        " '",
        "' ",
        ";\n",
        "}\n\n",
        "\r",
        "  x",
        "\u{41f}\u{440}\u{438}",
        "\u{43f}",
        "\u{3a9}\u{3b1}",
        "\u{201c}",
        "\u{201d}",
        "\u{2014}",
        "\u{3002}",
        "\u{4e2d}\u{6587}",
        "\u{660}\u{661}",
        "\u{1f600}",
        "\u{10400}",
        "\u{2028}",
        "\u{3000}",
        "\u{b2}",
        "\u{2160}",
        "caf\u{e9}'s",
        "\u{c9}COLE",
        "\u{2bc}",
        "\u{5d0}",
        "\u{e01}\u{e34}",
        "\u{85}",
        "\u{1c5}",
        "\u{df}",
        "'\u{17f}",
        // Mixed-case contractions, and long runs (found missing by hypothesis).
        "'lL",
        "'Ll",
        "'rE",
        "'vE",
        "A'lL",
        "111111111111111111111111111111",
        "                                ",
        // Quotes in code (`'\n'`): apostrophes that follow no letter.
        "'\\n'",
        "\\",
        "'a'",
        "x'",
        "[''",
    ];
    // WALKER_SEED and WALKER_ROUNDS (environment) run other or more texts.
    let mut state = std::env::var("WALKER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x2545_f491_4f6c_dd1du64);
    let mut next = |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    let rounds = std::env::var("WALKER_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 3000 } else { 30000 });
    for _ in 0..rounds {
        let len = next(300);
        let text: String = (0..len).map(|_| pool[next(pool.len())]).collect();
        all_paths(&text);
    }
}

/// o200k: whether an other run takes `\n\n/` after a mark decides
/// whether the `'` after it is a word's prefix (found with WALKER_SEED=8;
/// the walker split `'` from `LL`), at every offset in a block.
#[test]
fn a_taken_run_after_a_mark_decides_the_prefix_after_it() {
    for pad in 0..130 {
        all_paths(
            &("x".repeat(pad) + " [''\u{301}\n\n\n\n/'LLcaf\u{e9}'s \u{915}\u{93f}\u{928}'s"),
        );
    }
}

/// Every corpus of ../shared/corpora (when present), whole.
#[test]
fn walker_equals_scalar_on_corpora() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "txt") {
            let text = std::fs::read_to_string(&path).expect("corpora are UTF-8");
            // A debug build is slow: a slice there, whole files in release.
            let cut = if cfg!(debug_assertions) {
                text.len().min(200_000)
            } else {
                text.len()
            };
            let cut = (0..=cut)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            all_paths(&text[..cut]);
        }
    }
}

/// A run that fills a whole block after a character the masks leave
/// unsure (a non-ASCII digit, a non-ASCII space) is unsure in every block
/// it fills: the mask of "all 64 bits" once came out as none (a shift by 64).
#[test]
fn contractions_with_mixed_case() {
    for c in ["'lL", "'Ll", "'rE", "'Ve", "'sS", "'dD"] {
        for pad in 0..70 {
            all_paths(&(" ".repeat(pad) + "A" + c + "  x"));
            all_paths(&(" ".repeat(pad) + "ab" + c + "Cd"));
        }
    }
}

#[test]
fn runs_filling_a_block_after_an_unsure_character() {
    for lead in ["\u{663}", "\u{b2}", "\u{a0}", "\u{3000}", "\u{e9}", "x"] {
        for run in ["1", " ", "a", "\t", "."] {
            for n in [62, 63, 64, 126, 127, 128, 129, 200] {
                for pad in 0..3 {
                    all_paths(&(" ".repeat(pad) + lead + &run.repeat(n) + "z"));
                    all_paths(&(" ".repeat(pad) + lead + &run.repeat(n)));
                }
            }
        }
    }
}

#[test]
fn walker_equals_scalar_at_every_offset() {
    let base = "It's 12345 o'clock.\n\n  Hello,  WORLD's fooBar\t\t(x)./\n/ y  \r\n z 'S'll 'ab'  ";
    for pad in 0..70 {
        let text = format!("{}{base}{base}", "x".repeat(pad));
        all_paths(&text);
        let text = format!("{}{base}", " ".repeat(pad));
        all_paths(&text);
    }
}

/// `forward64` (an addition's carries) equals the Kogge-Stone scan it
/// replaced, bit by bit, on random and edge-case masks.
#[test]
fn forward64_is_the_carry_scan() {
    fn scan(seed: u64, through: u64) -> u64 {
        let (mut g, mut p) = (seed, through);
        for s in [1, 2, 4, 8, 16, 32] {
            g |= p & (g << s);
            p &= p << s;
        }
        g
    }
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let edges = [0, 1, 1 << 63, !0, !0 >> 1, !0 << 1, 0x5555_5555_5555_5555];
    for &seed in &edges {
        for &through in &edges {
            assert_eq!(forward64(seed, through), scan(seed, through));
        }
    }
    for _ in 0..100_000 {
        let seed = next() & next() & next();
        let through = next() | next();
        assert_eq!(
            forward64(seed, through),
            scan(seed, through),
            "{seed:#x} {through:#x}"
        );
    }
}

/// `reaches_forward` equals the two scans it replaced (the next block's,
/// whose first bit carries into the current block's): the current block's
/// positions and the next block's first, on random and edge-case masks.
#[test]
fn reaches_forward_equals_two_backward_scans() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let edges = [
        0,
        1,
        2,
        1 << 63,
        !0,
        !0 >> 1,
        !0 << 1,
        0x5555_5555_5555_5555,
    ];
    let mask = |block: u64, next_block: u64| WindowMask {
        prev_block: 0,
        block,
        next_block,
    };
    let check = |seed: WindowMask, through: WindowMask| {
        let n = backward64(seed.next_block, through.next_block);
        let c = backward64(seed.block | ((n & 1) << 63 & through.block), through.block);
        let got = reaches_forward(seed, through);
        assert_eq!(
            (got.block, got.next_block),
            (c, n & 1),
            "{seed:?} {through:?}"
        );
    };
    for &sb in &edges {
        for &sn in &edges {
            for &tb in &edges {
                for &tn in &edges {
                    check(mask(sb, sn), mask(tb, tn));
                }
            }
        }
    }
    for round in 0..200_000 {
        // Sparse seeds, dense runs; now and then no seed in a block.
        let sb = if round % 3 == 0 {
            0
        } else {
            next() & next() & next()
        };
        let sn = if round % 5 == 0 {
            0
        } else {
            next() & next() & next() & next()
        };
        let (tb, tn) = (next() | next() | next(), next() | next() | next());
        check(mask(sb, sn), mask(tb, tn));
    }
}

/// The walker computes the block after the current one ahead: pre-tokens
/// that begin unsure and run past it (the scalar machine then jumps over
/// it), unsure runs that end inside, at the start of or past it, and texts
/// ending at every length up to three blocks and a bit, reach their blocks
/// each way (computed ahead, next with none ahead at the end of the text,
/// after a jump).
#[test]
fn blocks_reached_ahead_after_a_jump_and_at_the_end() {
    let mixed = "It's 12 o'clock.\n Hello,  x ".repeat(8);
    for unsure in ["\u{3000}", "\u{a0}", "\u{663}"] {
        for n in [10, 20, 21, 22, 31, 32, 33, 42, 43, 44, 64, 65, 66, 100] {
            all_paths(&format!("ab {}{mixed}", unsure.repeat(n)));
            all_paths(&format!("{}{mixed}", unsure.repeat(n)));
        }
        for run in ["a", ".", " "] {
            for n in [60, 64, 100, 127, 128, 129, 140, 191, 192, 200] {
                all_paths(&format!("{unsure}{}{mixed}", run.repeat(n)));
            }
        }
    }
    for len in 0..=200 {
        all_paths(&mixed[..len]);
    }
}
