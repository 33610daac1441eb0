//! Memory helpers: big structures freed off the critical path, freed heap
//! memory handed back to the OS, and prefetch hints.

/// Free `value` on another thread: the word counts and the trainer each own
/// hundreds of thousands to millions of small allocations (a byte string per
/// word, a word list per pair); freeing the trainer took a tenth of a
/// training run (multilingual corpus), time the caller need not wait for.
/// If no thread can be started, the closure, value included, is dropped
/// right here.
pub(crate) fn drop_in_background<T: Send + 'static>(value: T) {
    drop_on_thread(value, release_freed_memory);
}

/// Free `value` on another thread between two stages of a run, then unmap
/// the spare tables (`SPARES`): what a stage leaves (SentencePiece's unit
/// counts after their characters are read, the units' runs once the words
/// are built) is freed while the next stage runs, not before it, and is not
/// held to the end of the run. Measured on multilingual 10 MB / 16k
/// (`examples/train_spm_file`): the counts took 4-9 ms to free (their
/// tables' pages, 27 k long words), and the counting threads' spare tables
/// stayed mapped under the merge loop: peak RSS 125 -> 80 MiB on two
/// threads, 102 -> 63 on one. The heaps are not trimmed (unlike
/// `drop_in_background`): the next stages allocate again, and a trim hands
/// back pages they would fault in afresh (with the runs freed here, the
/// pair index faulted 1.3 k pages where it faulted 2.7 k, one thread). If
/// no thread can be started, `value` is dropped right here.
pub(crate) fn free_in_background<T: Send + 'static>(value: T) {
    drop_on_thread(value, release_spares);
}

/// Drop `value` on a new thread, then run `then` there; if no thread can be
/// started, the closure, value included, is dropped right here.
fn drop_on_thread<T: Send + 'static>(value: T, then: fn()) {
    let _ = std::thread::Builder::new()
        .name("bytepair-free".into())
        .spawn(move || {
            drop(value);
            then();
        });
}

/// Return the free memory of glibc's heaps and arenas to the OS. Counting and
/// the merge loop run on worker threads, each allocating from its own arena,
/// and memory freed in one arena is not reused by the next phase's threads:
/// the counting maps stayed resident under the merge loop, and the trainer
/// under the Tokenizer built in Python (peak RSS of training on code.txt
/// 89-91 MB, 71-74 with both trims). Other allocators and systems: nothing.
pub(crate) fn release_freed_memory() {
    release_spares();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that no allocation uses.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// An empty vector with room for `capacity` items, the room advised to be
/// backed by transparent huge pages (Linux: `MADV_HUGEPAGE` on the 2 MiB
/// pages inside it) when it spans a few of them. On this machine a fresh 4
/// KiB page faulted in cost about 1.3 µs and a 2 MiB one about 90 µs (16 MiB
/// written: 5 ms against 0.7), and the trainer's words are built in about
/// 17 MB of fresh vectors on multilingual 10 MB (their keys, ranks, symbols
/// and counts). As for `ZeroedSlice`, where no huge page is free the OS
/// falls back to small ones.
pub(crate) fn vec_on_huge_pages<T>(capacity: usize) -> Vec<T> {
    let v = Vec::with_capacity(capacity);
    #[cfg(target_os = "linux")]
    {
        let bytes = capacity * std::mem::size_of::<T>();
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
        let end = (v.as_ptr() as usize + bytes) / HUGE_PAGE * HUGE_PAGE;
        if bytes >= 2 * HUGE_PAGE && end > start {
            // SAFETY: the range lies inside the vector's allocation; the
            // advice changes no contents.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    v
}

/// Hint the CPU to load the cache line at `ptr` into L1; any address will
/// do: a prefetch never faults (no effect on other targets).
#[inline(always)]
fn prefetch_line<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache and never faults.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(ptr.cast::<i8>(), _MM_HINT_T0);
    }
}

/// Hint the CPU to load the cache line of `value` into L1.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    prefetch_line(value);
}

/// `prefetch` of an address that may be past the end of an allocation.
#[inline(always)]
pub(crate) fn prefetch_ptr<T>(ptr: *const T) {
    prefetch_line(ptr);
}

/// A zero-filled slice of plain-data items (all-zero bytes must be a valid
/// value of `T`), on transparent huge pages where the OS offers them: aligned
/// to 2 MiB and advised (`MADV_HUGEPAGE`) before its first touch. A random
/// probe into a table of megabytes then rarely misses the TLB (with 4 KiB
/// pages an 8 MiB table spans 2048 pages, more than the TLB holds).
///
/// `mapped` maps a slice of `MAPPED` bytes or more from the OS itself
/// (Linux: `mmap`) and unmaps it when dropped, for the tables of counting
/// within a budget (see there), or keeps it as a spare for the next one of
/// its size (`SPARES`), for those of counting without one.
pub(crate) struct ZeroedSlice<T: Copy> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
    /// Bytes mapped with `mmap` (0: from the global allocator).
    mapped: usize,
    /// Kept in `SPARES` when dropped (`mapped` with `reuse`).
    reuse: bool,
}

/// Tables this large or larger get the huge-page alignment and advice.
const HUGE_PAGE: usize = 2 << 20;

/// Slices this large or larger are mapped from the OS (Linux).
const MAPPED: usize = 256 << 10;

/// `size` bytes (a multiple of 4 KiB) of fresh zero pages, aligned to 2 MiB
/// when `size` is that large (the head and tail of a larger mapping are
/// handed back), or None when the OS refuses.
#[cfg(target_os = "linux")]
fn map_zeroed(size: usize) -> Option<std::ptr::NonNull<u8>> {
    let align = if size >= HUGE_PAGE { HUGE_PAGE } else { 4096 };
    let span = size + align - 4096;
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let start = raw as usize;
    let aligned = start.next_multiple_of(align);
    // SAFETY: both ranges lie inside the mapping just made and outside the
    // `size` bytes kept.
    unsafe {
        if aligned > start {
            libc::munmap(raw, aligned - start);
        }
        let end = aligned + size;
        if start + span > end {
            libc::munmap(end as *mut libc::c_void, start + span - end);
        }
        if size >= HUGE_PAGE {
            libc::madvise(aligned as *mut libc::c_void, size, libc::MADV_HUGEPAGE);
        }
    }
    MAPPED_BYTES.fetch_add(size, std::sync::atomic::Ordering::Relaxed);
    std::ptr::NonNull::new(aligned as *mut u8)
}

/// Unmap the `bytes` bytes at `addr` that `map_zeroed` mapped.
///
/// # Safety
/// A whole mapping of `map_zeroed`, which nothing uses any more.
#[cfg(target_os = "linux")]
unsafe fn unmap(addr: usize, bytes: usize) {
    MAPPED_BYTES.fetch_sub(bytes, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: as the caller promised.
    unsafe { libc::munmap(addr as *mut libc::c_void, bytes) };
}

/// Bytes held in mappings of `map_zeroed` (spares included).
static MAPPED_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Bytes this process holds in tables mapped from the OS rather than taken
/// from the global allocator (Linux: the pair index's tables, the counting
/// tallies and their kept spares, each of 256 KiB or more). A counting
/// global allocator misses them: what training holds is its heap plus
/// these (`tests/training_budget.rs`).
pub fn mapped_bytes() -> usize {
    MAPPED_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

impl<T: Copy> ZeroedSlice<T> {
    fn layout(len: usize) -> std::alloc::Layout {
        let size = (len * std::mem::size_of::<T>()).max(1);
        // At least a cache line: a slot that divides 64 bytes never straddles two.
        let align = if size >= HUGE_PAGE {
            HUGE_PAGE
        } else {
            std::mem::align_of::<T>().max(64)
        };
        std::alloc::Layout::from_size_align(size, align).expect("a table of sane size")
    }

    /// `len` zeroed items.
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T`.
    pub(crate) unsafe fn new(len: usize) -> Self {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size. (Not alloc_zeroed: with this
        // alignment it writes the zeros itself, before the advice below.)
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = std::ptr::NonNull::new(raw.cast::<T>()) else {
            std::alloc::handle_alloc_error(layout)
        };
        #[cfg(target_os = "linux")]
        if layout.size() >= HUGE_PAGE {
            // SAFETY: the range is this allocation; the advice changes no contents.
            unsafe { libc::madvise(raw.cast(), layout.size(), libc::MADV_HUGEPAGE) };
        }
        // SAFETY: the allocation holds `layout.size()` bytes.
        unsafe { std::ptr::write_bytes(raw, 0, layout.size()) };
        ZeroedSlice {
            ptr,
            len,
            mapped: 0,
            reuse: false,
        }
    }

    /// `new`, but a slice of `MAPPED` bytes or more is mapped from the OS
    /// (Linux), so dropping it hands its memory back at once. From malloc,
    /// glibc kept freed tables in the thread's arena (its mmap threshold
    /// rises to the largest block freed, up to 32 MiB): counting enwiki
    /// within 64 MiB, whose job tallies come and go every megabyte, peaked
    /// at 55-60 MiB resident for a live heap of 46 MiB (52-53 mapped), and
    /// trimming the arenas after each job (`malloc_trim`) cost more time
    /// than the fresh pages do (a third of the counting time, against a
    /// quarter: ~70k more page faults for enwiki).
    ///
    /// With `reuse` such a slice is taken from the spares when one of its
    /// size is there (zeroed here), and kept there when dropped (see
    /// `SPARES`): the word tallies of counting without a budget, one per
    /// thread per count, sized for the text.
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T`.
    pub(crate) unsafe fn mapped(len: usize, reuse: bool) -> Self {
        let layout = Self::layout(len);
        #[cfg(target_os = "linux")]
        if layout.size() >= MAPPED {
            let size = layout.size().next_multiple_of(4096);
            let spare = reuse.then(|| take_spare(size)).flatten();
            if let Some(raw) = spare {
                // SAFETY: the spare is `size` bytes of this process's memory,
                // owned by no one else since it left `SPARES`.
                unsafe { std::ptr::write_bytes(raw.as_ptr(), 0, size) };
            }
            // Fresh anonymous pages read as zeros: nothing to write.
            if let Some(raw) = spare.or_else(|| map_zeroed(size)) {
                return ZeroedSlice {
                    ptr: raw.cast(),
                    len,
                    mapped: size,
                    reuse,
                };
            }
        }
        // SAFETY: as the caller promised.
        let mut slice = unsafe { Self::new(len) };
        // Freed to the allocator, but a table grown from it is reusable.
        slice.reuse = reuse;
        slice
    }

    /// True when made by `mapped` with `reuse` (a spare when dropped, if mapped).
    pub(crate) fn is_reusable(&self) -> bool {
        self.reuse
    }
}

impl<T: Copy> std::ops::Deref for ZeroedSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialized items for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for ZeroedSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for ZeroedSlice<T> {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.mapped > 0 {
            if self.reuse {
                keep_spare(self.ptr.cast(), self.mapped);
            } else {
                // SAFETY: mapped in `mapped` with this size, and no longer used.
                unsafe { unmap(self.ptr.as_ptr() as usize, self.mapped) };
            }
            return;
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), Self::layout(self.len)) };
    }
}

/// Mappings of dropped reusable `ZeroedSlice`s (`mapped`), (address, bytes),
/// oldest first, at most `MAX_SPARE_BYTES` in all. Each thread of a count
/// without a budget sizes its tally for its share of the text (16 MiB of
/// narrow slots for 33 MB of enwiki), and fresh pages are zeroed by the
/// kernel as they are first written: at two threads that was 13% of the CPU
/// time of counting enwiki on this VM (~2 GB/s: `clear_page_erms` under
/// the write faults), against ~1 ms per 16 MiB for a memset of pages
/// already mapped. The price: up to `MAX_SPARE_BYTES` held between counts,
/// until `release_freed_memory` (training, pruning for a budget) hands
/// them back.
static SPARES: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());

/// The most bytes `SPARES` keeps: the tables of a count of ~66 MB on two
/// threads (2 x 16 MiB of narrow slots, 2 x 2 MiB of wide ones, the mid ones).
const MAX_SPARE_BYTES: usize = 40 << 20;

fn spares() -> std::sync::MutexGuard<'static, Vec<(usize, usize)>> {
    SPARES.lock().unwrap_or_else(|e| e.into_inner())
}

/// A spare mapping of exactly `size` bytes, if one is kept.
#[cfg(target_os = "linux")]
fn take_spare(size: usize) -> Option<std::ptr::NonNull<u8>> {
    let mut spares = spares();
    let i = spares.iter().rposition(|&(_, bytes)| bytes == size)?;
    std::ptr::NonNull::new(spares.remove(i).0 as *mut u8)
}

/// Keep the mapping of `size` bytes at `ptr` as a spare, unmapping the
/// oldest spares when they would pass `MAX_SPARE_BYTES` (or this one, when
/// it alone would).
#[cfg(target_os = "linux")]
fn keep_spare(ptr: std::ptr::NonNull<u8>, size: usize) {
    let mut unmapped = vec![];
    {
        let mut spares = spares();
        if size > MAX_SPARE_BYTES {
            unmapped.push((ptr.as_ptr() as usize, size));
        } else {
            spares.push((ptr.as_ptr() as usize, size));
            let mut kept: usize = spares.iter().map(|&(_, bytes)| bytes).sum();
            while kept > MAX_SPARE_BYTES {
                let oldest = spares.remove(0);
                kept -= oldest.1;
                unmapped.push(oldest);
            }
        }
    }
    for (addr, bytes) in unmapped {
        // SAFETY: a mapping of `bytes` bytes that left `SPARES` (or never
        // entered it) and that no slice uses.
        unsafe { unmap(addr, bytes) };
    }
}

/// Unmap every spare (`SPARES`).
fn release_spares() {
    let spares = std::mem::take(&mut *spares());
    #[cfg(target_os = "linux")]
    for (addr, bytes) in spares {
        // SAFETY: as in `keep_spare`.
        unsafe { unmap(addr, bytes) };
    }
    #[cfg(not(target_os = "linux"))]
    drop(spares);
}

/// Buffers kept from call to call so that their pages stay mapped: a fresh
/// large `Vec` is a fresh mapping whose pages fault in (and are zeroed by
/// the kernel) as they are first written, whatever the process freed before.
/// The id buffers of a multi-threaded encode (`encode::runs`), those NumPy
/// arrays own and the batch buffers of `encode_dataset`'s reader (binding)
/// each keep one. What fits and what is worth keeping is the caller's call;
/// the pool holds at most `most` buffers, freeing the oldest past that.
pub struct BufferPool<T> {
    kept: std::sync::Mutex<Vec<Vec<T>>>,
    most: usize,
}

impl<T> BufferPool<T> {
    /// An empty pool that keeps at most `most` buffers.
    pub const fn new(most: usize) -> Self {
        BufferPool {
            kept: std::sync::Mutex::new(Vec::new()),
            most,
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Vec<T>>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The most recently kept buffer for which `fits` holds, out of the pool.
    pub fn take(&self, fits: impl Fn(&Vec<T>) -> bool) -> Option<Vec<T>> {
        let mut kept = self.kept();
        let i = kept.iter().rposition(fits)?;
        Some(kept.swap_remove(i))
    }

    /// Keep `buffer` (as it is: clear it first if its items are not wanted)
    /// for a later `take`, freeing the oldest kept one when the pool is full.
    pub fn keep(&self, buffer: Vec<T>) {
        let mut kept = self.kept();
        if kept.len() >= self.most {
            if self.most == 0 {
                return;
            }
            kept.remove(0);
        }
        kept.push(buffer);
    }
}

// SAFETY: the slice owns its items like a Box<[T]>.
unsafe impl<T: Copy + Send> Send for ZeroedSlice<T> {}
// SAFETY: shared access gives `&[T]` only.
unsafe impl<T: Copy + Sync> Sync for ZeroedSlice<T> {}

/// Many short byte strings in one buffer: string `i` is
/// `bytes[ends[i - 1]..ends[i]]`. A `Vec<Vec<u8>>` of a vocabulary's tokens
/// costs a 24-byte header and a heap block of at least 32 bytes per token
/// (o200k: ~12 MB for 2 MB of bytes); this costs 4 bytes per string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PackedBytes {
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl PackedBytes {
    /// Room for `n` strings.
    pub(crate) fn with_capacity(n: usize) -> Self {
        PackedBytes {
            bytes: Vec::new(),
            ends: Vec::with_capacity(n),
        }
    }

    /// Append `s`. Panics past 4 GiB of bytes in all.
    pub(crate) fn push(&mut self, s: &[u8]) {
        self.bytes.extend_from_slice(s);
        let end = u32::try_from(self.bytes.len()).expect("under 4 GiB of strings");
        self.ends.push(end);
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// String `i`.
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Give back spare capacity (after the last `push`).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::{PackedBytes, ZeroedSlice};

    #[test]
    #[cfg(target_os = "linux")]
    fn a_reusable_slice_comes_back_zeroed_and_is_released() {
        // A size no other test maps (77 pages), so no other test takes the spare.
        let len = 77 * 4096 / 8;
        // SAFETY: all-zero bytes are a valid u64.
        let mut first = unsafe { ZeroedSlice::<u64>::mapped(len, true) };
        first.fill(u64::MAX);
        let address = first.as_ptr();
        drop(first);
        // SAFETY: as above.
        let second = unsafe { ZeroedSlice::<u64>::mapped(len, true) };
        assert_eq!(second.as_ptr(), address, "the spare is reused");
        assert!(second.iter().all(|&x| x == 0));
        drop(second);
        // SAFETY: as above.
        let small = unsafe { ZeroedSlice::<u64>::mapped(16, true) };
        assert!(small.is_reusable(), "a table grown from it is reusable too");
        super::release_freed_memory();
        assert!(super::spares().iter().all(|&(_, bytes)| bytes != len * 8));
    }

    #[test]
    fn packed_bytes_give_back_each_string() {
        let strings: [&[u8]; 4] = [b"a", b"", b"hello", b"\xff\x00"];
        let mut packed = PackedBytes::with_capacity(2);
        for s in strings {
            packed.push(s);
        }
        assert_eq!(packed.len(), 4);
        assert!(packed.iter().eq(strings));
        assert_eq!(packed.get(2), b"hello");
    }
}
