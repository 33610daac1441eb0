//! Python lists of ids, built and read back fast: CPython-specific tricks that
//! belong to the binding, not the core. Encoding shares one int object per id
//! (`SharedInts`), and decoding reads list items in place and finds a shared
//! int's token by the int's address (`TokensByAddress`), once that pays.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytepair_core::Encoder;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;

use crate::shared_ints::{SharedInts, TokensByAddress};

/// Ids decoded per shared int after which decoding builds `TokensByAddress`
/// (see `IdLists::tokens_by_address`).
const TABLE_AFTER_IDS_PER_INT: usize = 4;

/// The Python-side state of one encoder's id lists.
pub struct IdLists {
    /// The ints id lists share, made on the first encode (`SharedInts`).
    ints: PyOnceLock<SharedInts>,
    /// Their tokens by address, made by the decode that brings
    /// `ids_decoded_without_table` to its threshold; sound because `ints`,
    /// which keeps every int at its address, lives as long.
    tokens_by_address: PyOnceLock<TokensByAddress>,
    /// Ids decoded before `tokens_by_address` was built.
    ids_decoded_without_table: AtomicUsize,
}

impl IdLists {
    pub fn new() -> Self {
        IdLists {
            ints: PyOnceLock::new(),
            tokens_by_address: PyOnceLock::new(),
            ids_decoded_without_table: AtomicUsize::new(0),
        }
    }

    /// `ids` as a Python list of ints, sharing the ints of `enc`'s dense ids.
    pub fn to_list<'py>(
        &self,
        py: Python<'py>,
        enc: &Encoder,
        ids: &[u32],
    ) -> PyResult<Bound<'py, PyList>> {
        self.shared_ints(py, enc).list(py, ids)
    }

    /// The ints lists of `enc`'s ids share (made on first use).
    pub fn shared_ints(&self, py: Python<'_>, enc: &Encoder) -> &SharedInts {
        self.ints
            .get_or_init(py, || SharedInts::new(py, enc.dense_id_bound() as u32))
    }

    /// The tokens of the shared ints by address, once decoding without them
    /// has cost about as much as building them: decodes of `ids` ids each
    /// count up, and the table is built when the count reaches
    /// `TABLE_AFTER_IDS_PER_INT` per shared int. Building costs a few times
    /// what the table saves on one decode of a shared int, so building it on
    /// the first decode of a text (o200k, 1.1 MB of Shakespeare) made that
    /// decode much slower. Buying only after renting has cost as much (the
    /// rent-or-buy rule) costs at most about twice the better choice.
    fn tokens_by_address(
        &self,
        py: Python<'_>,
        enc: &Encoder,
        ints: &SharedInts,
        ids: usize,
    ) -> Option<&TokensByAddress> {
        if let Some(table) = self.tokens_by_address.get(py) {
            return Some(table);
        }
        let decoded = self
            .ids_decoded_without_table
            .fetch_add(ids, Ordering::Relaxed)
            + ids;
        if decoded < TABLE_AFTER_IDS_PER_INT * ints.len() {
            return None;
        }
        Some(
            self.tokens_by_address
                .get_or_init(py, || ints.tokens_by_address(|id| enc.inline_token(id))),
        )
    }

    /// The joined bytes of the ids in `ids`, read straight from the list: no
    /// Vec<i64> copy of it first (the copy was most of the time decoding took).
    /// A shared int of a short token is found by its address (`TokensByAddress`).
    pub fn joined_bytes(
        &self,
        py: Python<'_>,
        enc: &Encoder,
        ids: &Bound<'_, PyList>,
    ) -> PyResult<Vec<u8>> {
        let by_address = self
            .ints
            .get(py)
            .and_then(|ints| self.tokens_by_address(py, enc, ints, ids.len()));
        let mut out = Vec::with_capacity(ids.len() * 4);
        for i in 0..ids.len() {
            let item = borrowed_item(ids, i);
            if by_address.is_some_and(|t| t.push_token_at(item as usize, &mut out)) {
                continue;
            }
            let id = match exact_int(item) {
                Some(id) => id,
                None => ids.get_item(i)?.extract::<i64>()?,
            };
            if !enc.push_token_bytes(id, &mut out) {
                return Err(PyValueError::new_err(format!(
                    "token id {id} is not in the vocabulary"
                )));
            }
        }
        Ok(out)
    }
}

/// `list[i]` as a borrowed pointer (NULL if out of range): no reference-count
/// traffic per id (a measurable share of decoding), and no function call (the
/// bounds and the item are read inline). Valid until Python code runs, which
/// could change the list: the bounds are checked on every call.
#[inline]
fn borrowed_item(list: &Bound<'_, PyList>, i: usize) -> *mut pyo3::ffi::PyObject {
    use pyo3::ffi;
    // SAFETY: `list` is a live list and we hold the GIL; `i` is checked
    // against its current length before its item is read.
    unsafe {
        if i < ffi::PyList_GET_SIZE(list.as_ptr()) as usize {
            ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t)
        } else {
            std::ptr::null_mut()
        }
    }
}

/// The value of `item` (from `borrowed_item`) when it is an exact `int` that
/// fits an i64. None sends the caller to the general conversion, which raises
/// the usual errors; an exact int has no `__index__`, so no Python code runs.
fn exact_int(item: *mut pyo3::ffi::PyObject) -> Option<i64> {
    use pyo3::ffi;
    if item.is_null() {
        return None;
    }
    // SAFETY: `item` is a live object, borrowed from a list we hold, and we hold the GIL.
    unsafe {
        if ffi::PyLong_CheckExact(item) == 0 {
            return None;
        }
        let value = ffi::PyLong_AsLongLong(item);
        if value == -1 && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(value)
    }
}

/// Take each item of `lists` that is a list (exactly) of ints (exactly) out
/// of the cyclic garbage collector's tracking, as CPython itself untracks a
/// tuple or dict of atomic items: such a list cannot be part of a cycle. A
/// batch of 1,000 documents served to transformers makes ~3,000 lists of
/// ~400k ids in all, and the one young collection that followed the batch
/// traversed every id (2 ms of a 4.5 ms call on enwiki paragraphs).
/// Unlike a dict, a list is not tracked again when a container is put into
/// it later: a cycle made through such a list would not be collected, so
/// this is only for lists the caller hands out as ids.
///
/// Returns the number of lists untracked; other items are left as they are.
#[pyfunction]
pub fn untrack_int_lists(lists: &Bound<'_, PyList>) -> usize {
    let mut untracked = 0;
    for item in lists.iter() {
        let Ok(list) = item.cast_exact::<PyList>() else {
            continue;
        };
        if holds_only_ints(list) {
            // SAFETY: a live list (we hold the GIL); untracking a list that is
            // not tracked is allowed.
            unsafe { pyo3::ffi::PyObject_GC_UnTrack(list.as_ptr().cast()) };
            untracked += 1;
        }
    }
    untracked
}

/// Whether every item of `list` is an exact `int` (no Python code runs).
fn holds_only_ints(list: &Bound<'_, PyList>) -> bool {
    (0..list.len()).all(|i| {
        let item = borrowed_item(list, i);
        // SAFETY: a live item of a list we hold, with the GIL held.
        !item.is_null() && unsafe { pyo3::ffi::PyLong_CheckExact(item) } != 0
    })
}
