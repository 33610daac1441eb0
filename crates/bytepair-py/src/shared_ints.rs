//! The Python ints an encoder's id lists share, and the way back from an
//! int's address to its token's bytes, which decoding those lists uses.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList};

use bytepair_core::encode::push_inline;

/// One Python int per id below `Encoder::dense_id_bound`, made on the first
/// encode: an id list holds references to them, so building it is an
/// increment per id instead of allocating a new int (that was a large share
/// of encoding 10 MB of prose), and a list of n ids takes 8n bytes
/// instead of 40n.
///
/// The price is paid when such a list is decoded: the ints lie wherever the
/// allocator put them, often in reused blocks spread over tens of MB, so
/// reading each one's value is a cache miss, followed by a second one on the
/// decoder's entry for the id. `TokensByAddress` answers both with one read.
pub struct SharedInts {
    ints: Vec<Py<PyInt>>,
    /// The ints' addresses, each with the uses lists being built made of it
    /// (`Counting`, which holds the lock).
    uses: Mutex<Vec<Uses>>,
}

/// A shared int's address and how many references to it a list holds that
/// its reference count does not show yet.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Uses {
    int: usize,
    count: usize,
}

impl SharedInts {
    /// How many ints (ids `0..len()`).
    pub fn len(&self) -> usize {
        self.ints.len()
    }

    /// Ints for ids `0..n`.
    pub fn new(py: Python<'_>, n: u32) -> Self {
        let ints: Vec<Py<PyInt>> = (0..n).map(|id| new_int(py, id).unbind()).collect();
        let uses = ints
            .iter()
            .map(|int| Uses {
                int: int.as_ptr() as usize,
                count: 0,
            })
            .collect();
        SharedInts {
            ints,
            uses: Mutex::new(uses),
        }
    }

    /// `ids` as a new Python list of these ints (new ints for ids beyond them).
    /// The list is made at its final length and its items stored in place:
    /// pyo3's `PyList::new` converts and checks each item (a large share of
    /// encoding prose), where a store and an increment are a few instructions.
    /// A list of more than a few ids counts the uses instead of
    /// incrementing (`Counting`).
    pub fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        if ids.len() >= COUNTED_FROM {
            if let Some(mut counting) = self.counting() {
                return counting.list(py, ids);
            }
        }
        // SAFETY: each item is set once, to an owned reference, before the
        // list is handed to Python code.
        unsafe {
            let (list, items) = new_list(py, ids.len())?;
            for (i, &id) in ids.iter().enumerate() {
                let item = match self.ints.get(id as usize) {
                    Some(int) => {
                        pyo3::ffi::Py_INCREF(int.as_ptr());
                        int.as_ptr()
                    }
                    None => new_int(py, id).into_ptr(),
                };
                *items.add(i) = item;
            }
            Ok(list)
        }
    }

    /// A `Counting` of lists made with these ints, if this build can add
    /// many references at once (`COUNTED`) and no other thread is counting.
    pub fn counting(&self) -> Option<Counting<'_>> {
        if !COUNTED {
            return None;
        }
        // try_lock: a thread holding the guard may have released the GIL
        // (encode_batch), so waiting for it here, with the GIL, could deadlock.
        let uses = self.uses.try_lock().ok()?;
        Some(Counting {
            uses,
            touched: Vec::new(),
        })
    }

    /// The tokens of these ints by address; `inline_token(id)` gives an id's
    /// 16-byte inline entry (`Encoder::inline_token`; length byte zero for a
    /// token decoded the long way). The result is sound while `self` lives.
    pub fn tokens_by_address(&self, inline_token: impl Fn(u32) -> [u8; 16]) -> TokensByAddress {
        let address = |id: usize| self.ints[id].as_ptr() as usize;
        let small = SmallRun::new((0..self.ints.len()).map(address), &inline_token);
        let rest =
            (small.entries.len()..self.ints.len()).map(|id| (address(id), inline_token(id as u32)));
        TokensByAddress {
            small,
            rest: AddressTable::new(rest),
        }
    }
}

/// Lists of shared ints whose references are counted per int while they
/// are built and added to the ints' reference counts when this is dropped.
/// An increment per id wrote to the int itself, and the ints of a large
/// vocabulary lie spread over megabytes (o200k: 200k ints), so most ids cost
/// a cache miss that waited; here the count sits next to the address (one
/// 16-byte entry per int), entries are fetched a few dozen ids ahead, and
/// each int is written once per `Counting`: about half the time of building
/// o200k lists. `encode_batch` keeps one for a whole batch.
///
/// Sound because the ints are not freed meanwhile: each is kept alive by
/// `SharedInts`, and the lists built are reachable from no Python code until
/// the counts are added. Drop it with the GIL held, before any list it built
/// can be freed (a struct holding both declares it first).
pub struct Counting<'a> {
    uses: std::sync::MutexGuard<'a, Vec<Uses>>,
    /// The ids whose count is not zero, each once.
    touched: Vec<u32>,
}

impl Counting<'_> {
    /// `ids` as a new Python list of the shared ints (new ints for ids beyond them).
    pub fn list<'py>(&mut self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        // SAFETY: each item is set once, to a reference this guard counts
        // (added to the int's count on drop) or to a new int, before the
        // list reaches Python code.
        unsafe {
            let (list, items) = new_list(py, ids.len())?;
            for (i, &id) in ids.iter().enumerate() {
                if let Some(&ahead) = ids.get(i + PREFETCH_AHEAD) {
                    prefetch(self.uses.as_ptr().wrapping_add(ahead as usize));
                }
                let item = match self.uses.get_mut(id as usize) {
                    Some(u) => {
                        if u.count == 0 {
                            self.touched.push(id);
                        }
                        u.count += 1;
                        u.int as *mut pyo3::ffi::PyObject
                    }
                    None => new_int(py, id).into_ptr(),
                };
                *items.add(i) = item;
            }
            Ok(list)
        }
    }
}

impl Drop for Counting<'_> {
    fn drop(&mut self) {
        for &id in &self.touched {
            let u = &mut self.uses[id as usize];
            // SAFETY: the GIL is held (see the type's comment) and the int is
            // alive (SharedInts holds it).
            unsafe { add_references(u.int as *mut pyo3::ffi::PyObject, u.count) };
            u.count = 0;
        }
    }
}

/// A new list of `len` items, all NULL, and its item array.
///
/// # Safety
/// Every item must be set before the list reaches Python code.
unsafe fn new_list(
    py: Python<'_>,
    len: usize,
) -> PyResult<(Bound<'_, PyList>, *mut *mut pyo3::ffi::PyObject)> {
    use pyo3::ffi;
    let len = ffi::Py_ssize_t::try_from(len)
        .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("too many ids for a list"))?;
    let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?;
    let items = (*list.as_ptr().cast::<ffi::PyListObject>()).ob_item;
    Ok((list.cast_into_unchecked(), items))
}

/// Lists of fewer ids take a reference per item (`Counting` costs a lock and
/// a buffer).
const COUNTED_FROM: usize = 64;

/// How many ids ahead of its use a shared int's entry is fetched.
const PREFETCH_AHEAD: usize = 64;

/// Hint the CPU to load the cache line at `ptr` (any address will do).
#[inline(always)]
fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache and never faults.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(ptr.cast::<i8>(), _MM_HINT_T0);
    }
}

/// Whether `add_references` can add to a reference count in one step: a
/// build for one CPython version before 3.12 (3.12 made some ints immortal,
/// with reference counts that must not change).
const COUNTED: bool = cfg!(not(any(
    Py_3_12,
    Py_GIL_DISABLED,
    Py_LIMITED_API,
    PyPy,
    GraalPy,
    py_sys_config = "Py_REF_DEBUG"
)));

/// Add `n` references to `op`'s reference count.
///
/// # Safety
/// The GIL is held and `op` is a live object.
unsafe fn add_references(op: *mut pyo3::ffi::PyObject, n: usize) {
    if COUNTED {
        (*op).ob_refcnt += n as pyo3::ffi::Py_ssize_t;
    } else {
        for _ in 0..n {
            pyo3::ffi::Py_INCREF(op);
        }
    }
}

fn new_int(py: Python<'_>, id: u32) -> Bound<'_, PyInt> {
    let Ok(int) = id.into_pyobject(py);
    int
}

/// The token bytes of the shared ints of short tokens, by the int's address
/// (about 16 bytes per id: 4 MiB for o200k, built once decodes have used
/// enough ids, see `IdLists::tokens_by_address`).
pub struct TokensByAddress {
    /// The ints that lie in one array from id 0 on: CPython's cache of small
    /// ints (0 to 256, the byte tokens, frequent in any non-English text).
    small: SmallRun,
    /// The other ints of tokens of up to 11 bytes.
    rest: AddressTable,
}

impl TokensByAddress {
    /// Append the bytes of the token of the shared int at `address` to `out`;
    /// false, with `out` unchanged, when no shared int of a short token (of
    /// up to 15 bytes from the small run, else 11) lives there.
    #[inline]
    pub fn push_token_at(&self, address: usize, out: &mut Vec<u8>) -> bool {
        if let Some(entry) = self.small.get(address) {
            push_inline(entry, out);
        } else if let Some(entry) = self.rest.get(address) {
            push_inline(entry, out);
        } else {
            return false;
        }
        true
    }
}

/// A one-digit int's block: CPython's small ints are an array of them.
const INT_STRIDE: usize = 32;

/// The inline entries of the ints of ids 0, 1, ... that lie `INT_STRIDE`
/// bytes apart from the first one on, as an array by address.
struct SmallRun {
    base: usize,
    entries: Vec<[u8; 16]>,
}

impl SmallRun {
    fn new(addresses: impl Iterator<Item = usize>, inline_token: impl Fn(u32) -> [u8; 16]) -> Self {
        let mut addresses = addresses.peekable();
        let base = addresses.peek().copied().unwrap_or(0);
        let len = addresses
            .enumerate()
            .take_while(|&(id, address)| address == base + id * INT_STRIDE)
            .count();
        SmallRun {
            base,
            entries: (0..len as u32).map(inline_token).collect(),
        }
    }

    #[inline]
    fn get(&self, address: usize) -> Option<&[u8; 16]> {
        let offset = address.wrapping_sub(self.base);
        if !offset.is_multiple_of(INT_STRIDE) {
            return None;
        }
        self.entries
            .get(offset / INT_STRIDE)
            .filter(|entry| entry[15] != 0)
    }
}

/// The inline entries of the shared ints' tokens of up to 11 bytes (most of
/// any text's tokens), by the int's address: open addressing with linear
/// probing, 16-byte slots (address key, then bytes and length), at most 4/5
/// full, so a lookup nearly always reads one cache line. The addresses are
/// spread over tens of MB, hence a hash table and not an array. Sound
/// whatever the layout: an entry is only found at the exact address of a
/// shared int, which stays alive as long as the table.
struct AddressTable {
    slots: Vec<Slot>,
    /// Lowest address of a shared int; keys are addresses above it in 16-byte units, plus one.
    base: usize,
    mask: usize,
    shift: u32,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
struct Slot {
    /// 0 for an empty slot.
    key: u32,
    /// Token bytes, then the length in the last byte.
    bytes: [u8; 12],
}

/// CPython's object alignment: no two objects share a 16-byte unit.
const UNIT: usize = 16;

impl AddressTable {
    fn new(placed: impl Iterator<Item = (usize, [u8; 16])>) -> Self {
        let placed: Vec<(usize, Slot)> = placed
            .filter_map(|(address, entry)| Some((address, Slot::of(&entry)?)))
            .collect();
        let base = placed
            .iter()
            .map(|&(address, _)| address)
            .min()
            .unwrap_or(0);
        let bits = (placed.len() * 5 / 4 + 1)
            .next_power_of_two()
            .trailing_zeros()
            .max(4);
        let mut table = AddressTable {
            slots: vec![Slot::default(); 1 << bits],
            base,
            mask: (1 << bits) - 1,
            shift: 64 - bits,
        };
        for (address, mut slot) in placed {
            let Some(key) = table.key(address) else {
                continue;
            };
            slot.key = key;
            let mut i = table.home(key);
            while table.slots[i].key != 0 {
                i = (i + 1) & table.mask;
            }
            table.slots[i] = slot;
        }
        table
    }

    /// The key of `address`, None if no shared int can live there.
    #[inline]
    fn key(&self, address: usize) -> Option<u32> {
        let offset = address.wrapping_sub(self.base);
        if !offset.is_multiple_of(UNIT) {
            return None;
        }
        u32::try_from(offset / UNIT).ok()?.checked_add(1)
    }

    /// Fibonacci hashing: the keys' low bits follow the allocator's layout.
    #[inline]
    fn home(&self, key: u32) -> usize {
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn get(&self, address: usize) -> Option<&[u8; 12]> {
        let key = self.key(address)?;
        let mut i = self.home(key);
        loop {
            let slot = &self.slots[i];
            if slot.key == key {
                return Some(&slot.bytes);
            }
            if slot.key == 0 {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }
}

impl Slot {
    /// The slot of an inline entry (`Encoder::inline_token`) of 1 to 11 bytes.
    fn of(entry: &[u8; 16]) -> Option<Slot> {
        let len = entry[15];
        if len == 0 || len > 11 {
            return None;
        }
        let mut bytes = [0u8; 12];
        bytes[..11].copy_from_slice(&entry[..11]);
        bytes[11] = len;
        Some(Slot { key: 0, bytes })
    }
}
