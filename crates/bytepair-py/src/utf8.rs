//! The UTF-8 of a Python str for one call, without leaving a copy behind.
//!
//! CPython stores a str as Latin-1, UCS-2 or UCS-4 code points, and
//! `PyUnicode_AsUTF8AndSize` (pyo3's `to_str`) encodes a non-ASCII one into a
//! new buffer that it keeps for the life of the str. For a stream of short
//! documents that all stay alive (a list of them, encoded once each), every
//! one of those buffers is fresh heap: on 121 MB of enwiki, code and
//! multilingual text as 100 KB documents, 57 ms of encoding plus 37 ms of
//! page faults (19k), and a copy of the corpus held to the end. A short str
//! is encoded here instead into a per-thread buffer reused from call to call
//! (`encoding_rs`); a long one keeps CPython's copy, which a warm call on
//! the same big text reads again for free, and so does a short str seen
//! again (`RECENT`): a loop over the same texts would otherwise encode them
//! to UTF-8 on every call (-12% on 10 KB of enwiki, -28% on multilingual
//! text, calls in a loop), and one call with CPython's copy makes it theirs.

use std::cell::RefCell;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Strs of at most this many code points are encoded into the reused
/// buffer; longer ones get CPython's kept copy (see the module doc). Above
/// the 100 KB documents of a stream and below the 1 MB documents encoded
/// twice in a row by bench_scale.py's second-pass row.
const OWN_UTF8_MAX_CHARS: usize = 256 << 10;

/// Strs whose address `RECENT` remembers.
const RECENT_STRS: usize = 64;

thread_local! {
    /// The UTF-8 of the last short str encoded on this thread; its length
    /// is the room written so far (at most 3 bytes per code point of
    /// `OWN_UTF8_MAX_CHARS`: 768 KiB).
    static UTF8: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The addresses of the last `RECENT_STRS` strs encoded into `UTF8` on
    /// this thread, and where the next one goes. A str found here is given
    /// CPython's copy instead. The address of a str freed since may be a new
    /// str's: that one takes the copy too, which is all it costs.
    static RECENT: RefCell<([usize; RECENT_STRS], usize)> =
        const { RefCell::new(([0; RECENT_STRS], 0)) };
}

/// Whether `op` is among the strs recently encoded into `UTF8`; if not, it
/// is remembered now.
fn seen_recently(op: *mut ffi::PyObject) -> bool {
    let address = op as usize;
    RECENT.with(|cell| {
        let (recent, next) = &mut *cell.borrow_mut();
        if recent.contains(&address) {
            return true;
        }
        recent[*next] = address;
        *next = (*next + 1) % RECENT_STRS;
        false
    })
}

/// Call `f` with the UTF-8 of `text`: a str that is ASCII or already has
/// CPython's UTF-8 copy, that is longer than `OWN_UTF8_MAX_CHARS` or was
/// encoded here recently, through `to_str`; another Latin-1 or UCS-2 one
/// encoded into this thread's buffer. Errors: as `to_str` (UnicodeEncodeError for a lone
/// surrogate, which leaves UCS-2 strs with surrogates to `to_str`).
pub fn with_utf8<R>(
    text: &Bound<'_, PyString>,
    f: impl FnOnce(&str) -> PyResult<R>,
) -> PyResult<R> {
    match kind_and_data(text) {
        Some(Units::Latin1(units)) => with_buffer(2 * units.len(), f, |dst| {
            encoding_rs::mem::convert_latin1_to_utf8(units, dst)
        }),
        Some(Units::Ucs2(units)) if !has_surrogate(units) => {
            with_buffer(3 * units.len(), f, |dst| {
                encoding_rs::mem::convert_utf16_to_utf8(units, dst)
            })
        }
        _ => f(text.to_str()?),
    }
}

/// A str's code points as CPython stores them.
enum Units<'a> {
    Latin1(&'a [u8]),
    Ucs2(&'a [u16]),
}

/// The code points of `text` when it is a compact, non-ASCII str of
/// Latin-1 or UCS-2 kind, of at most `OWN_UTF8_MAX_CHARS`, without
/// CPython's UTF-8 copy and not seen recently; None otherwise.
fn kind_and_data<'a>(text: &'a Bound<'_, PyString>) -> Option<Units<'a>> {
    let op = text.as_ptr();
    // SAFETY: `op` is a live str (the Bound holds a reference); the macros
    // read its header. A compact non-ASCII str is a PyCompactUnicodeObject,
    // whose `utf8` is CPython's copy (null until made), and its code points
    // (`len` of `kind`'s width) live as long as the str, which the caller's
    // borrow of `text` outlives the slice's use by.
    unsafe {
        if ffi::PyUnicode_IS_COMPACT(op) == 0 || ffi::PyUnicode_IS_ASCII(op) != 0 {
            return None;
        }
        if !(*op.cast::<ffi::PyCompactUnicodeObject>()).utf8.is_null() {
            return None;
        }
        let len = usize::try_from(ffi::PyUnicode_GET_LENGTH(op)).ok()?;
        if len > OWN_UTF8_MAX_CHARS {
            return None;
        }
        let data = ffi::PyUnicode_DATA(op);
        let units = match ffi::PyUnicode_KIND(op) {
            ffi::PyUnicode_1BYTE_KIND => {
                Units::Latin1(std::slice::from_raw_parts(data.cast::<u8>(), len))
            }
            ffi::PyUnicode_2BYTE_KIND => {
                Units::Ucs2(std::slice::from_raw_parts(data.cast::<u16>(), len))
            }
            _ => return None,
        };
        (!seen_recently(op)).then_some(units)
    }
}

/// Whether any code point of a UCS-2 str is a surrogate (then it is a lone
/// one, or a pair Python keeps as two code points: neither has UTF-8).
fn has_surrogate(units: &[u16]) -> bool {
    // A branch-free pass per chunk (it vectorizes), not an early exit per unit.
    units
        .chunks(256)
        .any(|chunk| chunk.iter().fold(false, |s, &u| s | (u & 0xF800 == 0xD800)))
}

/// Encode into this thread's buffer (`room` bytes at least, `encode`
/// returning the bytes written), then call `f` with them. The buffer is
/// taken out for the call, so a nested call gets a fresh one.
fn with_buffer<R>(
    room: usize,
    f: impl FnOnce(&str) -> PyResult<R>,
    encode: impl FnOnce(&mut [u8]) -> usize,
) -> PyResult<R> {
    let mut buffer = UTF8.with(|cell| std::mem::take(&mut *cell.borrow_mut()));
    if buffer.len() < room {
        buffer.resize(room, 0);
    }
    let written = encode(&mut buffer[..room]);
    // SAFETY: encoding_rs writes UTF-8 from Latin-1, and from UTF-16 without
    // surrogates (checked before).
    let result = f(unsafe { std::str::from_utf8_unchecked(&buffer[..written]) });
    UTF8.with(|cell| *cell.borrow_mut() = buffer);
    result
}
