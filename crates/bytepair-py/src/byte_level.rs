//! Reading the vocabulary and merges of a byte-level `tokenizer.json` (GPT-2's
//! printable form of bytes, `formats/bytelevel.py`) from the parsed JSON
//! objects in one native pass: the Python loops over 200k tokens and 200k
//! merges were most of loading o200k's tokenizer.json.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

/// GPT-2's `bytes_to_unicode` inverted: code point -> byte, for the 324 code
/// points below U+0144 (-1: not a byte-level character).
fn char_to_byte() -> [i16; 324] {
    let printable = |b: u32| {
        (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b)
    };
    let mut table = [-1i16; 324];
    let mut extra = 0;
    for b in 0..256u32 {
        let c = if printable(b) {
            b
        } else {
            extra += 1;
            255 + extra
        };
        table[c as usize] = b as i16;
    }
    table
}

/// The bytes of a byte-level token string; None if a character is not one.
fn decode(text: &str, table: &[i16; 324], out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    for c in text.chars() {
        let b = *table.get(c as usize)?;
        out.push(u8::try_from(b).ok()?);
    }
    Some(())
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
    let table = char_to_byte();
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
        if !seen.insert(id) || decode(text, &table, &mut buf).is_none() {
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
                Some((a, b)) if !b.contains(' ') => {
                    decode(a, &table, &mut buf).and(decode(b, &table, &mut right))
                }
                _ => None,
            },
            Err(_) => match merge.cast::<PyList>() {
                Ok(list) if list.len() == 2 => {
                    let (a, b) = (list.get_item(0)?, list.get_item(1)?);
                    match (a.cast::<PyString>(), b.cast::<PyString>()) {
                        (Ok(a), Ok(b)) => match (a.to_str(), b.to_str()) {
                            (Ok(a), Ok(b)) => {
                                decode(a, &table, &mut buf).and(decode(b, &table, &mut right))
                            }
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
