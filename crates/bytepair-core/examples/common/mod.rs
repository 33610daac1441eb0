//! What the encode examples share: reading a text to encode and timing
//! rounds of encoding it by the thread's CPU time (on a shared host the wall
//! clock counts the other processes' turns).

/// The first `mb` megabytes (10^6 bytes) of the file at `path`, cut back to a
/// character boundary. Panics with a message when the file cannot be read or
/// is not UTF-8 (these are profiling tools, not the CLI).
pub fn read_text(path: &str, mb: f64) -> String {
    let bytes = std::fs::read(path).expect("text file");
    let mut end = bytes.len().min((mb * 1e6) as usize);
    while end < bytes.len() && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    String::from_utf8(bytes[..end].to_vec()).expect("UTF-8 text")
}

/// Encode `text` `rounds` times with `encode` (appending its ids to an empty
/// buffer) and print the throughput as [`time_calls`] does. The id buffer is
/// made once, with room for ~2 bytes per token, and reused, as the binding's
/// `encode_to_numpy` reuses its pooled one: growing a fresh buffer each
/// round cost the encoding with more ids per byte more (copies, page faults).
#[allow(dead_code)] // each example compiles this module; not all of them encode
pub fn time_rounds(text: &str, rounds: usize, encode: impl Fn(&str, &mut Vec<u32>)) {
    let mut ids = Vec::with_capacity(text.len() / 2 + 16);
    time_calls(text, rounds, "tokens", |text| {
        ids.clear();
        encode(text, &mut ids);
        ids.len()
    });
}

/// Call `call` on `text` `rounds` times and print the throughput of the
/// first, cold call and the median of the warm ones, in MB/s of thread CPU
/// time, with the count the last call returned (in `unit`s).
pub fn time_calls(text: &str, rounds: usize, unit: &str, mut call: impl FnMut(&str) -> usize) {
    let mut times = vec![];
    let mut count = 0;
    for _ in 0..rounds.max(1) {
        let start = thread_cpu_seconds();
        count = call(text);
        times.push(thread_cpu_seconds() - start);
    }
    let cold = times[0];
    let mut warm = times[1..].to_vec();
    warm.sort_by(f64::total_cmp);
    let median = warm.get(warm.len() / 2).copied().unwrap_or(cold);
    let mb = text.len() as f64 / 1e6;
    println!(
        "{:.1} MB, {count} {unit}: cold {:.1} MB/s, warm {:.1} MB/s",
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
