//! Memory helpers: big structures freed off the critical path, freed heap
//! memory handed back to the OS, and prefetch hints.

/// Free `value` on another thread: the word counts and the trainer each own
/// hundreds of thousands to millions of small allocations (a byte string per
/// word, a word list per pair); freeing the trainer took ~0.2 s of a 2 s
/// training run (multilingual corpus), time the caller need not wait for.
/// If no thread can be started, the closure, value included, is dropped
/// right here.
pub(crate) fn drop_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new().name("bytepair-free".into()).spawn(move || {
        drop(value);
        release_freed_memory();
    });
}

/// Return the free memory of glibc's heaps and arenas to the OS. Counting and
/// the merge loop run on worker threads, each allocating from its own arena,
/// and memory freed in one arena is not reused by the next phase's threads:
/// the counting maps stayed resident under the merge loop, and the trainer
/// under the Tokenizer built in Python (peak RSS of training on code.txt
/// 89-91 MB, 71-74 with both trims). Other allocators and systems: nothing.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that no allocation uses.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Hint the CPU to load the cache line of `value` (no effect on other targets).
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; `value` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch((value as *const T).cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
}

