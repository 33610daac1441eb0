//! `merge_runs`: the reduce of word-counts buckets as a merge of sorted runs
//! (`bytepair_core::wordcounts::merge_runs`), fed a batch of each run at a time.

use bytepair_core::wordcounts::{self, Run};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrow::le_i64s;
use crate::errors::columns_error;

/// One run as Python passes it: (data, offsets, counts) Arrow buffers and the first row to take.
type RunBuffers<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    usize,
);

/// What `merge_runs` returns: the merged part's (data, offsets, counts) and,
/// per run, the first row not taken.
type Merged<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Vec<usize>,
);

/// Merge sorted runs of word counts (each a part's batch: words sorted, each
/// once) up to and including the word `upto` (all rows when None), summing a
/// word's counts across runs (`bytepair_core::wordcounts::merge_runs`).
/// ValueError for a run out of order, bad buffers or a sum beyond 2**63 - 1.
#[pyfunction]
#[pyo3(signature = (runs, upto=None))]
pub fn merge_runs<'py>(
    py: Python<'py>,
    runs: Vec<RunBuffers<'py>>,
    upto: Option<&[u8]>,
) -> PyResult<Merged<'py>> {
    let columns = runs
        .iter()
        .map(|(_, offsets, counts, _)| {
            Ok((
                le_i64s(offsets.as_bytes(), "offsets")?,
                le_i64s(counts.as_bytes(), "counts")?,
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let borrowed: Vec<Run<'_>> = runs
        .iter()
        .zip(&columns)
        .map(|((data, _, _, start), (offsets, counts))| Run {
            data: data.as_bytes(),
            offsets,
            counts,
            start: *start,
        })
        .collect();
    let (part, next) = py
        .detach(|| wordcounts::merge_runs(&borrowed, upto))
        .map_err(columns_error)?;
    let le = |values: &[i64]| -> Vec<u8> { values.iter().flat_map(|x| x.to_le_bytes()).collect() };
    Ok((
        PyBytes::new(py, &part.data),
        PyBytes::new(py, &le(&part.offsets)),
        PyBytes::new(py, &le(&part.counts)),
        next,
    ))
}
