//! Id buffers that NumPy arrays own, recycled when the arrays are dropped.
//!
//! `encode_to_numpy` hands the buffer it encoded into to NumPy (no copy).
//! Each call used to allocate a fresh one, and whether glibc then hands out
//! memory it already has or maps new pages depends on what the process freed
//! before (its mmap threshold moves only when a mapping of at most 32 MiB is
//! freed): after a large str was freed, every call faulted in its ids page
//! by page, and the ids of a text of more than ~64 MB always were (a buffer
//! past the largest threshold). An array's buffer now goes back to a small
//! pool when the array is freed, and the next call that fits takes it: its
//! pages are already there, whatever the allocator's history.

use bytepair_core::BufferPool;
use numpy::ndarray::ArrayView1;
use numpy::PyArray1;
use pyo3::prelude::*;

/// Buffers at most kept for reuse: one serves a loop that replaces its last
/// array with the next (`ids = encode(text)`: call k reuses the buffer of call
/// k - 2, freed when call k - 1's array took its place).
const POOL_BUFFERS: usize = 1;
/// Texts below this many bytes get a fresh buffer, and buffers of fewer
/// bytes are not kept: small allocations come from the allocator's heap,
/// which reuses its memory anyway.
const POOLED_FROM_BYTES: usize = 256 << 10;
/// Buffers of more bytes than this are not kept: at most this much stays
/// allocated in a process that is done encoding.
const POOLED_UP_TO_BYTES: usize = 256 << 20;
/// A pooled buffer is given to a text whose `capacity` (the ids it may
/// need) is at most the buffer's and more than the buffer's / `FIT`: a small
/// array kept for long does not pin a large buffer.
const FIT: usize = 4;

/// Buffers of arrays freed.
static POOL: BufferPool<u32> = BufferPool::new(POOL_BUFFERS);

/// An empty id buffer with room for `capacity` ids, for a text of
/// `text_bytes`: from the pool if one is large enough (and not far too
/// large), else new. A pooled buffer is never grown: `reserve` on it is a
/// `realloc`, which copies the whole old buffer (its length is not known to
/// the allocator) into fresh pages when it cannot grow in place, and so
/// faulted in every page of the ids again on calls 2-4 of a loop on one
/// 10 MB text (2570 minor faults per call, ~25% of the call).
pub fn take(capacity: usize, text_bytes: usize) -> Vec<u32> {
    if text_bytes >= POOLED_FROM_BYTES {
        let fits =
            |b: &Vec<u32>| b.capacity() >= capacity && b.capacity() <= capacity.saturating_mul(FIT);
        if let Some(ids) = POOL.take(fits) {
            return ids;
        }
    }
    Vec::with_capacity(capacity)
}

/// `ids` as a NumPy array that owns them; their buffer goes back to the pool
/// when the array is freed. The spare capacity stays (only a pooled buffer's
/// pages once written are resident): shrinking it made the next call that
/// took the buffer grow it again (see `take`).
pub fn into_array(py: Python<'_>, ids: Vec<u32>) -> PyResult<Bound<'_, PyArray1<u32>>> {
    let owner = Bound::new(py, IdBuffer { ids })?;
    let ids = &owner.get().ids;
    // SAFETY: the array's base is `owner`, which holds the ids and never
    // changes them (frozen): the memory stays valid, unmoved, while the
    // array lives, and `ids.len()` u32s are initialized there.
    unsafe {
        let view = ArrayView1::from_shape_ptr(ids.len(), ids.as_ptr());
        Ok(PyArray1::borrow_from_array(&view, owner.into_any()))
    }
}

/// The owner of an array's ids (the array's base object).
#[pyclass(module = "bytepair._core", frozen)]
struct IdBuffer {
    ids: Vec<u32>,
}

impl Drop for IdBuffer {
    fn drop(&mut self) {
        let mut ids = std::mem::take(&mut self.ids);
        if !(POOLED_FROM_BYTES..=POOLED_UP_TO_BYTES).contains(&(ids.capacity() * 4)) {
            return;
        }
        ids.clear();
        POOL.keep(ids);
    }
}
