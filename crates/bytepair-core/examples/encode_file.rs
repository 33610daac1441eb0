//! Encode a text file with a tiktoken rank file, for profiling the encoder
//! without Python: `cargo run --release -p bytepair-core --example encode_file --
//! RANKS.tiktoken PRESET TEXT [MB] [ROUNDS]` prints the throughput of a cold
//! first call and the median of the warm ones (one thread), by the thread's
//! CPU time: on a shared host the wall clock counts the other processes' turns.

use std::time::Instant;

use bytepair_core::rank_file::parse_rank_file;
use bytepair_core::Encoder;

mod common;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: encode_file RANKS.tiktoken PRESET TEXT [MB] [ROUNDS]");
        std::process::exit(2);
    }
    let start = Instant::now();
    let mut tokens =
        parse_rank_file(&std::fs::read(&args[1]).expect("rank file")).expect("a rank file");
    tokens.sort_by_key(|&(_, rank)| rank);
    let merged: Vec<Vec<u8>> = tokens
        .iter()
        .filter(|(t, _)| t.len() > 1)
        .map(|(t, _)| t.clone())
        .collect();
    let parsed = start.elapsed();
    let enc = Encoder::new(tokens, merged, vec![], &args[2]).expect("encoder");
    eprintln!(
        "rank file parsed in {parsed:.2?}, encoder built in {:.2?}",
        start.elapsed() - parsed
    );
    let mb = args.get(4).map_or(10.0, |s| s.parse::<f64>().expect("MB"));
    let rounds: usize = args.get(5).map_or(5, |s| s.parse().expect("rounds"));
    let text = common::read_text(&args[3], mb);
    common::time_rounds(&text, rounds, |text, ids| {
        enc.encode_ordinary_into(text, ids).expect("encodes");
    });
}
