//! Encode a text file with a SentencePiece BPE `.model`, for profiling the
//! SentencePiece encoder without Python: `cargo run --release -p
//! bytepair-core --example encode_spm_file -- MODEL TEXT [MB] [ROUNDS]`
//! prints the throughput of a cold first call and the median of the warm
//! ones (one thread, the text as one input), by the thread's CPU time: on a
//! shared host the wall clock counts the other processes' turns.

use bytepair_core::sentencepiece::{Model, ModelProto, SpmEncoder};

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
    let limit = args.get(3).map_or(10.0, |s| s.parse::<f64>().expect("MB")) * 1e6;
    let rounds: usize = args.get(4).map_or(5, |s| s.parse().expect("rounds"));
    let bytes = std::fs::read(&args[2]).expect("text file");
    let mut end = bytes.len().min(limit as usize);
    while end < bytes.len() && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    let text = std::str::from_utf8(&bytes[..end]).expect("UTF-8 text");
    let mut times = vec![];
    let mut count = 0;
    for _ in 0..rounds {
        let start = thread_cpu_seconds();
        let mut ids = Vec::new();
        enc.encode_ordinary_into(text, &mut ids).expect("encodes");
        times.push(thread_cpu_seconds() - start);
        count = ids.len();
    }
    let cold = times[0];
    let mut warm = times[1..].to_vec();
    warm.sort_by(f64::total_cmp);
    let median = warm.get(warm.len() / 2).copied().unwrap_or(cold);
    let mb = text.len() as f64 / 1e6;
    println!(
        "{:.1} MB, {count} tokens: cold {:.1} MB/s, warm {:.1} MB/s",
        mb,
        mb / cold,
        mb / median
    );
}

/// This thread's CPU time, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}
