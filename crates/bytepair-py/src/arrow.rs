//! Arrow buffers as Python hands them over (the bytes of a `large_binary`
//! column's offsets, an INT64 column): read into the slices the core takes.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Little-endian i64s from a bytes buffer (Arrow offsets or an INT64 column);
/// `what` names the buffer in the error.
pub fn le_i64s(raw: &[u8], what: &str) -> PyResult<Vec<i64>> {
    if !raw.len().is_multiple_of(8) {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes is not a whole number of int64",
            raw.len()
        )));
    }
    Ok(raw
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect())
}
