//! Count the words of a text file as `WordCounter.count_files` does, for
//! profiling counting without Python:
//! `cargo run --release -p bytepair-core --example count_file -- TEXT [THREADS] [ROUNDS] [PATTERN]`
//! counts the whole file `ROUNDS` times (default 5) on a pool of `THREADS`
//! threads (default 1) with `PATTERN` (default gpt2) and `<|endoftext|>`,
//! 1 MiB blocks, and prints each round's wall MB/s, MB per CPU second of the
//! process, and the distinct words, then the medians of the rounds after the
//! first (a long job's steady state).

use bytepair_core::count::{count_files, Limits};
use bytepair_core::{CutRule, PreTokenizer, Progress};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("a text file").clone();
    let threads: usize = args.get(2).map_or(1, |s| s.parse().expect("threads"));
    let rounds: usize = args.get(3).map_or(5, |s| s.parse().expect("rounds"));
    let pattern = args.get(4).map_or("gpt2", String::as_str);
    let specials = ["<|endoftext|>".to_string()];
    let pre = PreTokenizer::new(pattern, &specials).expect("a pattern");
    let rule = CutRule::new(pattern, &specials);
    let mb = std::fs::metadata(&path).expect("a readable file").len() as f64 / 1e6;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let (mut walls, mut cpus) = (vec![], vec![]);
    for round in 0..rounds.max(2) {
        let (wall, cpu) = (std::time::Instant::now(), process_cpu_seconds());
        let tally = pool.install(|| {
            let paths = [path.clone()];
            let limits = Limits::default();
            count_files(
                &pre,
                &rule,
                &paths,
                1 << 20,
                false,
                &limits,
                &Progress::default(),
            )
        });
        let words = tally.expect("counted").len();
        let (wall, cpu) = (wall.elapsed().as_secs_f64(), process_cpu_seconds() - cpu);
        println!(
            "round {round}: {:.0} MB/s, {:.0} MB per CPU second, {words} words",
            mb / wall,
            mb / cpu
        );
        if round > 0 {
            walls.push(mb / wall);
            cpus.push(mb / cpu);
        }
    }
    println!(
        "{threads} threads, {mb:.1} MB: median {:.0} MB/s ({:.0} per thread), {:.0} MB per CPU second",
        median(&mut walls),
        median(&mut walls) / threads as f64,
        median(&mut cpus)
    );
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// CPU seconds of all the process's threads.
fn process_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}
