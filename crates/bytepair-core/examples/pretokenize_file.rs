//! Pre-tokenize a text file with a preset, for profiling the pre-tokenizer:
//! `cargo run --release -p bytepair-core --example pretokenize_file -- PRESET TEXT [MB] [ROUNDS]`
//! prints the throughput of the block scanner (or scalar machine) and the
//! number of pre-tokens.

use std::time::Instant;

use bytepair_core::pretokenize::{blocks, Pieces, Preset};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let preset = Preset::of(&args[1]).expect("a preset name");
    let bytes = std::fs::read(&args[2]).expect("text file");
    let limit = args.get(3).map_or(10.0, |s| s.parse::<f64>().expect("MB")) * 1e6;
    let rounds: usize = args.get(4).map_or(5, |s| s.parse().expect("rounds"));
    let mut end = bytes.len().min(limit as usize);
    while end < bytes.len() && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    let text = &bytes[..end];
    let mut best = f64::MAX;
    let mut count = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        let mut pieces = Pieces::new(text, preset);
        let mut bounds = [0usize; 129];
        count = 0;
        loop {
            let n = pieces.fill(&mut bounds);
            if n == 0 {
                break;
            }
            count += n;
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    if blocks::available() {
        let mut walker = blocks::Walker::new(text, preset, true);
        let mut bounds = [0usize; 129];
        while walker.fill(&mut bounds) > 0 {}
        println!(
            "scalar machine: {} pre-tokens ({:.2}%)",
            walker.fallbacks(),
            100.0 * walker.fallbacks() as f64 / count as f64
        );
    }
    println!(
        "{:.1} MB, {count} pre-tokens: {:.1} MB/s (best of {rounds})",
        text.len() as f64 / 1e6,
        text.len() as f64 / 1e6 / best
    );
}
