//! Encode a text file with a SentencePiece BPE `.model`, for profiling the
//! SentencePiece encoder without Python: `cargo run --release -p
//! bytepair-core --example encode_spm_file -- MODEL TEXT [MB] [ROUNDS]`
//! prints the throughput of a cold first call and the median of the warm
//! ones (one thread, the text as one input), by the thread's CPU time: on a
//! shared host the wall clock counts the other processes' turns.

use bytepair_core::sentencepiece::{Model, ModelProto, SpmEncoder};

mod common;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: encode_spm_file MODEL TEXT [MB] [ROUNDS]");
        std::process::exit(2);
    }
    let proto = ModelProto::from_bytes(&std::fs::read(&args[1]).expect("model file"))
        .expect("a ModelProto");
    let model = Model::from_proto(&proto).expect("a BPE model");
    let enc = SpmEncoder::new(model, vec![]).expect("encoder");
    let mb = args.get(3).map_or(10.0, |s| s.parse::<f64>().expect("MB"));
    let rounds: usize = args.get(4).map_or(5, |s| s.parse().expect("rounds"));
    let text = common::read_text(&args[2], mb);
    common::time_rounds(&text, rounds, |text, ids| {
        enc.encode_ordinary_into(text, ids).expect("encodes");
    });
}
