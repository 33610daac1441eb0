//! Criterion benchmarks of each stage on slices of the real corpora
//! (`../shared/corpora` beside the repository, or `BYTEPAIR_CORPORA`):
//! pre-tokenization and counting per preset, the merge loop, encoding.
//!
//! `cargo bench -p bytepair-core` (all), `cargo bench -p bytepair-core -- encode`
//! (one group). Throughput is reported in bytes of input per second. Without
//! the corpora every benchmark is skipped with a message. The peer
//! comparisons (tiktoken, HF tokenizers, rustbpe, gigatoken) are in bench/*.py.

use std::path::PathBuf;

use bytepair_core::count::{count_text, WordCounts};
use bytepair_core::{train, Encoder, PreTokenizer, Progress};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

/// Bytes of each corpus a benchmark reads.
const SLICE_BYTES: usize = 4 << 20;
const CORPORA: [&str; 3] = ["enwiki", "code", "multilingual"];
const PRESETS: [&str; 3] = ["gpt2", "cl100k", "o200k"];

fn corpora_dir() -> PathBuf {
    match std::env::var_os("BYTEPAIR_CORPORA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora"),
    }
}

/// The first `SLICE_BYTES` of corpus `name`, cut at the last newline; None
/// (with a message) when the file is absent.
fn corpus_slice(name: &str) -> Option<String> {
    let path = corpora_dir().join(format!("{name}.txt"));
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!(
            "skipping {name}: {} is absent (set BYTEPAIR_CORPORA)",
            path.display()
        );
        return None;
    };
    let mut end = bytes.len().min(SLICE_BYTES);
    if end < bytes.len() {
        end = bytes[..end]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(end, |i| i + 1);
    }
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

fn word_counts(pre: &PreTokenizer, text: &str) -> WordCounts {
    let mut counts = WordCounts::default();
    count_text(pre, text, &mut counts).expect("presets never fail");
    counts
}

fn pretokenize(c: &mut Criterion) {
    let mut group = c.benchmark_group("pretokenize");
    for name in CORPORA {
        let Some(text) = corpus_slice(name) else {
            continue;
        };
        group.throughput(Throughput::Bytes(text.len() as u64));
        for preset in PRESETS {
            let pre = PreTokenizer::new(preset, &[]).unwrap();
            group.bench_function(format!("{preset}/{name}"), |b| {
                b.iter(|| {
                    let mut pieces = 0usize;
                    pre.for_each_piece(&text, |_| pieces += 1).unwrap();
                    pieces
                })
            });
        }
    }
    group.finish();
}

fn count(c: &mut Criterion) {
    let mut group = c.benchmark_group("count");
    for name in CORPORA {
        let Some(text) = corpus_slice(name) else {
            continue;
        };
        group.throughput(Throughput::Bytes(text.len() as u64));
        let pre = PreTokenizer::new("gpt2", &[]).unwrap();
        group.bench_function(format!("gpt2/{name}"), |b| {
            b.iter(|| word_counts(&pre, &text).len())
        });
    }
    group.finish();
}

fn merge_loop(c: &mut Criterion) {
    let mut group = c.benchmark_group("train");
    group.sample_size(10);
    for name in CORPORA {
        let Some(text) = corpus_slice(name) else {
            continue;
        };
        let counts = word_counts(&PreTokenizer::new("gpt2", &[]).unwrap(), &text);
        group.bench_function(format!("8000 merges/{name}"), |b| {
            b.iter_batched(
                || counts.clone(),
                |counts| train::train(counts, 8000, &Progress::default()),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    let Some(training) = corpus_slice("enwiki") else {
        return;
    };
    let counts = word_counts(&PreTokenizer::new("gpt2", &[]).unwrap(), &training);
    let merged = train::train(counts, 32000 - 256, &Progress::default())
        .unwrap()
        .merged_tokens();
    let enc = Encoder::from_merged(merged, &[], "gpt2").unwrap();
    for name in CORPORA {
        let Some(text) = corpus_slice(name) else {
            continue;
        };
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("gpt2 32k/{name}"), |b| {
            b.iter(|| {
                let mut ids = Vec::new();
                enc.encode_ordinary_into(&text, &mut ids).unwrap();
                ids.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, pretokenize, count, merge_loop, encode);
criterion_main!(benches);
