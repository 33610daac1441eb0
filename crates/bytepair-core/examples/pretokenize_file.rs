//! Pre-tokenize a text file with a preset, for profiling the pre-tokenizer:
//! `cargo run --release -p bytepair-core --example pretokenize_file -- PRESET TEXT [MB] [ROUNDS]`
//! prints the throughput of the block scanner (or scalar machine), in MB
//! per second of thread CPU time (the first call and the median of the
//! others), and the number of pre-tokens.

mod common;

use bytepair_core::pretokenize::{blocks, Pieces, Preset};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let preset = Preset::of(&args[1]).expect("a preset name");
    let mb = args.get(3).map_or(10.0, |s| s.parse::<f64>().expect("MB"));
    let rounds: usize = args.get(4).map_or(5, |s| s.parse().expect("rounds"));
    let text = common::read_text(&args[2], mb);
    let count_pieces = |text: &str| {
        let mut pieces = Pieces::new(text.as_bytes(), preset);
        let mut bounds = [0usize; 129];
        let mut count = 0;
        loop {
            let n = pieces.fill(&mut bounds);
            if n == 0 {
                return count;
            }
            count += n;
        }
    };
    common::time_calls(&text, rounds, "pre-tokens", count_pieces);
    let (count, text) = (count_pieces(&text), text.as_bytes());
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
}
