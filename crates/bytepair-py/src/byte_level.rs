//! Reading the vocabulary and merges of a byte-level `tokenizer.json` (GPT-2's
//! printable form of bytes: `bytepair_core::byte_level`, `formats/bytelevel.py`)
//! from the parsed JSON objects in one native pass: the Python loops over 200k
//! tokens and 200k merges were most of loading o200k's tokenizer.json.

use bytepair_core::byte_level::decode_into;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

/// The bytes of a byte-level token string into `out`; None if a character is not one.
fn decode(text: &str, out: &mut Vec<u8>) -> Option<()> {
    decode_into(text, out).ok()
}

/// (ids, tokens' bytes objects, merges as tuples of bytes objects).
type ByteLevelTables<'py> = (Vec<u32>, Bound<'py, PyList>, Bound<'py, PyList>);

/// `model.vocab` (token string -> id) and `model.merges` ("left right"
/// strings or [left, right] lists) of a byte-level tokenizer.json as
/// (ids in the vocab's order, their tokens' bytes, merges as byte pairs), or
/// None for anything irregular (an id that is not an int in [0, 2**32) or is
/// repeated, a string that is not byte-level, a malformed merge): the Python
/// reader then finds and words the fault.
#[pyfunction]
pub fn byte_level_tables<'py>(
    py: Python<'py>,
    vocab: &Bound<'py, PyDict>,
    merges: &Bound<'py, PyList>,
) -> PyResult<Option<ByteLevelTables<'py>>> {
    let mut buf = Vec::new();
    let mut ids = Vec::with_capacity(vocab.len());
    let mut seen = rustc_hash::FxHashSet::default();
    let tokens = PyList::empty(py);
    for (text, id) in vocab.iter() {
        // JSON `true` is a Python bool, which `extract::<u32>` would take as 1.
        if id.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(None);
        }
        let (Ok(text), Ok(id)) = (text.cast::<PyString>(), id.extract::<u32>()) else {
            return Ok(None);
        };
        // A lone surrogate (no UTF-8 form) is irregular too: the Python reader words it.
        let Ok(text) = text.to_str() else {
            return Ok(None);
        };
        if !seen.insert(id) || decode(text, &mut buf).is_none() {
            return Ok(None);
        }
        ids.push(id);
        tokens.append(PyBytes::new(py, &buf))?;
    }
    let pairs = PyList::empty(py);
    let mut right = Vec::new();
    for merge in merges.iter() {
        let decoded = match merge.cast::<PyString>() {
            Ok(text) => match text.to_str().ok().and_then(|t| t.split_once(' ')) {
                Some((a, b)) if !b.contains(' ') => decode(a, &mut buf).and(decode(b, &mut right)),
                _ => None,
            },
            Err(_) => match merge.cast::<PyList>() {
                Ok(list) if list.len() == 2 => {
                    let (a, b) = (list.get_item(0)?, list.get_item(1)?);
                    match (a.cast::<PyString>(), b.cast::<PyString>()) {
                        (Ok(a), Ok(b)) => match (a.to_str(), b.to_str()) {
                            (Ok(a), Ok(b)) => decode(a, &mut buf).and(decode(b, &mut right)),
                            _ => None,
                        },
                        _ => None,
                    }
                }
                _ => None,
            },
        };
        if decoded.is_none() {
            return Ok(None);
        }
        pairs.append(PyTuple::new(
            py,
            [PyBytes::new(py, &buf), PyBytes::new(py, &right)],
        )?)?;
    }
    Ok(Some((ids, tokens, pairs)))
}
