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
//! (`encoding_rs`; in `encode_batch` by the thread that encodes the text, so
//! that this work is parallel too). A long str keeps CPython's copy, which a
//! warm call on the same big text reads again for free, and so does a short
//! str seen again (`RECENT`): a loop over the same texts would otherwise
//! encode them to UTF-8 on every call (-12% on 10 KB of enwiki, -28% on
//! multilingual text, calls in a loop), and one call with CPython's copy
//! makes it theirs. Other builds than CPython's with the GIL keep CPython's
//! copy throughout.

use std::cell::RefCell;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Strs of at most this many code points are encoded into the reused
/// buffer; longer ones get CPython's kept copy (see the module doc). Above
/// the 100 KB documents of a stream and below the 1 MB documents encoded
/// twice in a row by bench_scale.py's second-pass row.
const OWN_UTF8_MAX_CHARS: usize = 256 << 10;

/// Slots of `RECENT` (a power of two): a batch of up to a few thousand
/// texts called again finds its texts there.
const RECENT_SLOTS: usize = 1 << 12;

thread_local! {
    /// The UTF-8 of the last short str encoded on this thread; its length
    /// is the room written so far (at most 3 bytes per code point of
    /// `OWN_UTF8_MAX_CHARS`: 768 KiB).
    static UTF8: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The strs recently given to be encoded into a `UTF8` buffer (from
    /// this thread), one per slot by a hash of the address: address, and
    /// length with the first code units. A str found here is given CPython's
    /// copy instead. A str freed since whose address a new one took is told
    /// apart by the rest (a stream of documents, each freed after its call);
    /// a new one that matches all the same takes the copy too, which is all
    /// it costs.
    static RECENT: RefCell<Box<[(usize, u64)]>> =
        RefCell::new(vec![(0, 0); RECENT_SLOTS].into());
}

/// Whether the str at `op`, of `len` code points starting with `units`
/// (up to 8 bytes of them), is among the strs recently given to be encoded
/// into a `UTF8` buffer; if not, it is remembered now.
fn seen_recently(op: *mut ffi::PyObject, len: usize, units: &[u8]) -> bool {
    let address = op as usize;
    let mut head = [0u8; 8];
    let n = units.len().min(8);
    head[..n].copy_from_slice(&units[..n]);
    let fingerprint = u64::from_le_bytes(head) ^ (len as u64).rotate_left(32);
    // Fibonacci hashing of the address (objects are 16-byte aligned).
    let slot = ((address >> 4) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52;
    RECENT.with(|cell| {
        let recent = &mut *cell.borrow_mut();
        std::mem::replace(&mut recent[slot as usize], (address, fingerprint))
            == (address, fingerprint)
    })
}

/// Call `f` with the UTF-8 of `text` (see `StrUtf8::of`).
pub fn with_utf8<R>(
    text: &Bound<'_, PyString>,
    f: impl FnOnce(&str) -> PyResult<R>,
) -> PyResult<R> {
    StrUtf8::of(text)?.with_str(f)
}

/// Where the UTF-8 of a str comes from: CPython's copy, or its code points
/// encoded when needed by the thread that needs it (no Python involved, so
/// `encode_batch`'s workers encode their texts' UTF-8 themselves). A str's
/// code points never change while it is shared (CPython resizes only a str
/// no one else references), so any thread may read them while `'a` lasts.
pub enum StrUtf8<'a> {
    Copy(&'a str),
    Latin1(&'a [u8]),
    Ucs2(&'a [u16]),
}

impl<'a> StrUtf8<'a> {
    /// A str that is ASCII or already has CPython's UTF-8 copy, that is
    /// longer than `OWN_UTF8_MAX_CHARS` or was seen recently (`RECENT`),
    /// through `to_str`; another Latin-1 or UCS-2 one by its code points.
    /// Errors: as `to_str` (UnicodeEncodeError for a lone surrogate: UCS-2
    /// strs with surrogates are left to it).
    pub fn of(text: &'a Bound<'_, PyString>) -> PyResult<Self> {
        Ok(match kind_and_data(text) {
            Some(Units::Latin1(units)) => StrUtf8::Latin1(units),
            Some(Units::Ucs2(units)) if !has_surrogate(units) => StrUtf8::Ucs2(units),
            _ => StrUtf8::Copy(text.to_str()?),
        })
    }

    /// Code points (or bytes of the copy): at most the bytes of the UTF-8.
    pub fn len(&self) -> usize {
        match self {
            StrUtf8::Copy(text) => text.len(),
            StrUtf8::Latin1(units) => units.len(),
            StrUtf8::Ucs2(units) => units.len(),
        }
    }

    /// Call `f` with the UTF-8, encoded into this thread's buffer if not a copy.
    pub fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match *self {
            StrUtf8::Copy(text) => f(text),
            StrUtf8::Latin1(units) => with_buffer(2 * units.len(), f, |dst| {
                encoding_rs::mem::convert_latin1_to_utf8(units, dst)
            }),
            StrUtf8::Ucs2(units) => with_buffer(3 * units.len(), f, |dst| {
                encoding_rs::mem::convert_utf16_to_utf8(units, dst)
            }),
        }
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
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED)))]
fn kind_and_data<'a>(text: &'a Bound<'_, PyString>) -> Option<Units<'a>> {
    let op = text.as_ptr();
    // SAFETY: `op` is a live str (the Bound holds a reference); the macros
    // read its header. A compact non-ASCII str is a PyCompactUnicodeObject,
    // whose `utf8` is CPython's copy (null until made), and its code points
    // (`len` of `kind`'s width) live as long as the str: the slices borrow
    // `text` for 'a.
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
        let head = match units {
            Units::Latin1(units) => units,
            Units::Ucs2(units) => std::slice::from_raw_parts(data.cast::<u8>(), 2 * units.len()),
        };
        (!seen_recently(op, len, head)).then_some(units)
    }
}

/// Elsewhere (no CPython str layout, or another thread may be making
/// CPython's copy meanwhile), always CPython's copy.
#[cfg(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED))]
fn kind_and_data<'a>(_text: &'a Bound<'_, PyString>) -> Option<Units<'a>> {
    None
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
    f: impl FnOnce(&str) -> R,
    encode: impl FnOnce(&mut [u8]) -> usize,
) -> R {
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
