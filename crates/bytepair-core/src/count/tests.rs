//! Tests of `count` (the module's own functions).

use super::*;
use crate::pretokenize::PreTokenizer;
use std::io::Write;

#[test]
fn words_given_as_counted_are_cut_at_special_tokens() {
    let specials = crate::pretokenize::special_matcher(&["<s>".into(), "<s>x".into()])
        .unwrap()
        .unwrap();
    let pieces = |word: &[u8]| {
        let mut out = Vec::new();
        for_each_piece(word, Some(&specials), |p| out.push(p.to_vec()));
        out
    };
    assert_eq!(pieces(b"ab"), vec![b"ab".to_vec()]);
    assert_eq!(pieces(b"<s>"), Vec::<Vec<u8>>::new());
    assert_eq!(pieces(b"a<s>b<s><s>"), vec![b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(pieces(b"a<s>xb"), vec![b"a".to_vec(), b"b".to_vec()]); // the longest wins
    assert_eq!(pieces(b""), vec![b"".to_vec()]);
    let mut whole = Vec::new();
    for_each_piece(b"a<s>", None, |p| whole.push(p.to_vec()));
    assert_eq!(whole, vec![b"a<s>".to_vec()]);
}

fn counts_of(pre: &PreTokenizer, text: &str) -> WordCounts {
    let mut c = WordCounts::default();
    count_text(pre, text, &mut c).unwrap();
    c
}

#[test]
fn chunk_size_does_not_change_counts() {
    let text =
        "Hello world.\nIt's  here\n\n  and\tthere \nx\ny\n\u{a0}\nz end  \n}\n/* c */\n}\nx\n";
    let dir = std::env::temp_dir().join(format!("bytepair-count-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.txt");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    for pattern in ["gpt2", "cl100k", "o200k"] {
        let pre = PreTokenizer::new(pattern, &[]).unwrap();
        let want = counts_of(&pre, text);
        for chunk_size in [1, 2, 3, 5, 8, 13, 1000] {
            let path = path.to_string_lossy().to_string();
            let rule = CutRule::new(pattern, &[]);
            let got = count_files(
                &pre,
                &rule,
                &[path],
                chunk_size,
                false,
                &Limits::default(),
                &Progress::default(),
            )
            .unwrap()
            .into_counts();
            assert_eq!(got, want, "pattern {pattern} chunk size {chunk_size}");
        }
    }
}

#[test]
fn long_words_are_cut_at_character_boundaries_within_the_bound() {
    let text = "\u{e9}".repeat(50) + &"x".repeat(7) + "\u{20ac}\u{1f600}";
    for max in [4, 5, 6, 7, 10, 64] {
        let words: Vec<&[u8]> = split_long_word(text.as_bytes(), max).collect();
        assert_eq!(words.concat(), text.as_bytes());
        assert!(
            words
                .iter()
                .all(|w| !w.is_empty() && w.len() <= max && std::str::from_utf8(w).is_ok()),
            "max {max}"
        );
    }
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    let mut tally = WordTally::new(64);
    tally.add_text(&pre, &"\0".repeat(1000)).unwrap();
    let counts = tally.into_counts();
    assert_eq!(counts.len(), 2);
    assert_eq!(
        (counts[&vec![0u8; 64]], counts[&vec![0u8; 1000 % 64]]),
        (1000 / 64, 1)
    );
}

#[test]
fn a_line_without_newlines_is_read_in_chunks() {
    let text = "Word,".repeat(1000);
    let path = std::env::temp_dir().join(format!("bytepair-line-{}.txt", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let rule = CutRule::new("gpt2", &[]);
    let chunks: Vec<Chunk> = ChunkReader::open(&path.to_string_lossy(), 100, rule)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    std::fs::remove_file(&path).unwrap();
    assert!(
        chunks.iter().all(|c| c.bytes.len() <= 100),
        "every chunk within chunk_size"
    );
    assert_eq!(
        chunks.iter().map(|c| c.bytes.len()).sum::<usize>(),
        text.len()
    );
}

/// Counts of `texts` within `budget` on `threads` threads, each job first
/// sleeping a time drawn from `seed` (so the jobs finish in another order).
fn budgeted_counts(
    texts: &[String],
    budget: usize,
    threads: usize,
    seed: u64,
) -> (WordCounts, Pruned) {
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    let limits = Limits {
        max_memory: Some(budget),
        ..Limits::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let tally = pool
        .install(|| {
            let jobs = texts.iter().enumerate().map(Ok);
            count_parallel(
                jobs,
                0,
                &limits,
                &Progress::default(),
                |(i, text), tally| {
                    let wait = xxhash_rust::xxh3::xxh3_64_with_seed(&i.to_le_bytes(), seed) % 3;
                    std::thread::sleep(std::time::Duration::from_millis(wait));
                    tally.add_text(&pre, text)?;
                    Ok(())
                },
            )
        })
        .unwrap();
    let pruned = tally.pruned();
    (tally.into_counts(), pruned)
}

#[test]
fn counts_within_a_budget_do_not_depend_on_threads_or_timing() {
    // Words of a Zipf-like law: a frequent head and a tail the budget prunes.
    let mut state = 1u64;
    let mut texts = Vec::new();
    for _ in 0..120 {
        let mut text = String::new();
        for _ in 0..3000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((state >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            let rank = (u.powf(-4.0) as u64) % 200_000;
            let word: String = format!("{rank}")
                .bytes()
                .map(|d| (b'a' + d - b'0') as char)
                .collect();
            text.push(' ');
            text.push_str(&word);
        }
        texts.push(text);
    }
    let budget = 1 << 20;
    let want = budgeted_counts(&texts, budget, 1, 0);
    assert!(want.1.words > 1000, "the budget pruned: {:?}", want.1);
    for (threads, seed) in [(2, 1), (3, 2), (2, 3), (4, 4), (1, 5)] {
        let got = budgeted_counts(&texts, budget, threads, seed);
        assert!(got == want, "{threads} threads, timing {seed}");
    }
}

#[test]
fn a_parallel_merge_sums_as_the_serial_one() {
    // Two tallies that share a third of their words, of different table
    // sizes, with counts that pass 32 bits when summed (markers) or alone.
    let word = |i: u64| format!("w{i}").into_bytes();
    let big = u64::from(u32::MAX) - 3;
    let tally = |words: std::ops::Range<u64>, slots_for: u64| {
        let mut tally = WordTally::default();
        tally.expect_text_bytes(slots_for);
        for i in words {
            let n = match i % 97 {
                0 => big,
                1 => 1 << 40,
                _ => i % 13 + 1,
            };
            tally.add(&word(i), n);
            if i % 7 == 0 {
                // Words of 12 and of 16 bytes (the wide and mid tables).
                tally.add(format!("wide{i:08}").as_bytes(), i % 5 + 1);
                tally.add(format!("mid-word{i:08}").as_bytes(), 2);
            }
        }
        tally.add(b"a much longer word than any key holds", 2);
        tally.add("ünïcödé wörd".as_bytes(), 3);
        tally
    };
    for (threads, big_first) in [(2, true), (2, false), (3, true), (16, false)] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let (a, b) = (tally(0..30_000, 1 << 30), tally(20_000..60_000, 0));
        let (a, b) = if big_first { (a, b) } else { (b, a) };
        let mut want = tally(0..30_000, 0);
        want.merge(tally(20_000..60_000, 0));
        let mut got = a;
        pool.install(|| got.merge_parallel(b));
        assert_eq!(got.len(), want.len());
        let got = got.into_counts();
        assert_eq!(got[&word(97 * 250)], 2 * big, "a sum past 32 bits");
        assert_eq!(got, want.into_counts(), "{threads} threads");
    }
}

#[test]
fn counts_are_the_same_when_a_count_reuses_the_tables_of_the_last() {
    // ~2 MB of words, so each thread's tables are mapped (256 KiB or more)
    // and kept as spares for the next count of the same size, which takes
    // them back dirty and must zero them.
    let text: String = (0..200_000u64)
        .map(|i| format!(" w{} x{}\n", i * 7919 % 50_000, i % 300))
        .collect();
    let texts: Vec<&str> = text.split_inclusive('\n').collect();
    let pre = PreTokenizer::new("gpt2", &[]).unwrap();
    let want = counts_of(&pre, &text);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for round in 0..3 {
        let got = pool.install(|| {
            count_texts(&pre, &texts, &Limits::default(), &Progress::default())
                .unwrap()
                .into_counts()
        });
        assert!(got == want, "round {round}");
    }
}
