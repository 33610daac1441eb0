//! Train SentencePiece-style BPE on a text file, for profiling the trainer
//! without Python: `cargo run --release -p bytepair-core --example
//! train_spm_file -- TEXT VOCAB [THREADS]` (the Llama 2 recipe, identity
//! normalization) prints the time of counting and of training (wall clock
//! and the process's CPU time) the number of pieces and a digest of the
//! model (FNV-1a of its bytes).

use std::time::Instant;

use bytepair_core::progress::Progress;
use bytepair_core::sentencepiece::count::count_texts;
use bytepair_core::sentencepiece::normalize::Normalizer;
use bytepair_core::sentencepiece::proto::NormalizerSpec;
use bytepair_core::sentencepiece::train::{train, SpmTrainOptions};
use bytepair_core::sentencepiece::Normalization;

/// CPU seconds of the whole process so far (every thread).
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: train_spm_file TEXT VOCAB [THREADS]");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("a UTF-8 text file");
    let vocab_size: usize = args[2].parse().expect("VOCAB");
    let threads: usize = args.get(3).map_or(1, |s| s.parse().expect("THREADS"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let rules = Normalization {
        charsmap: None,
        add_dummy_prefix: true,
        remove_extra_whitespaces: false,
        escape_whitespaces: true,
        treat_whitespace_as_suffix: false,
        metaspace_prefix: false,
        prefix_first_only: false,
    };
    let spec = NormalizerSpec {
        name: Some("identity".into()),
        add_dummy_prefix: Some(true),
        remove_extra_whitespaces: Some(false),
        escape_whitespaces: Some(true),
        ..Default::default()
    };
    let normalizer = Normalizer::new(rules, None);
    let options = SpmTrainOptions {
        vocab_size,
        ..Default::default()
    };
    let progress = Progress::default();
    pool.install(|| {
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        let counts = count_texts(&[&text], &normalizer, None, &options, &progress).expect("counts");
        let (wall1, cpu1) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        println!("count: wall {wall1:.3} s, cpu {cpu1:.3} s");
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        let proto = train(counts, spec, &options, &progress).expect("trains");
        let (wall2, cpu2) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        println!("train: wall {wall2:.3} s, cpu {cpu2:.3} s");
        // A digest of the model, to check that a change to the trainer keeps it.
        let digest = proto
            .to_bytes()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
        println!("{} pieces, model digest {digest:016x}", proto.pieces.len());
    });
}
