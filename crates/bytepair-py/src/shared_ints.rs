//! The Python ints an encoder's id lists share, and the way back from an
//! int's address to its token's bytes, which decoding those lists uses.

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
}

impl SharedInts {
    /// How many ints (ids `0..len()`).
    pub fn len(&self) -> usize {
        self.ints.len()
    }

    /// Ints for ids `0..n`.
    pub fn new(py: Python<'_>, n: u32) -> Self {
        SharedInts {
            ints: (0..n).map(|id| new_int(py, id).unbind()).collect(),
        }
    }

    /// `ids` as a new Python list of these ints (new ints for ids beyond them).
    /// The list is made at its final length and its items stored in place:
    /// pyo3's `PyList::new` converts and checks each item (a large share of
    /// encoding prose), where a store and an increment are a few instructions.
    pub fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        use pyo3::ffi;
        let len = ffi::Py_ssize_t::try_from(ids.len())
            .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("too many ids for a list"))?;
        // SAFETY: PyList_New returns a new list of `len` NULL items (or NULL
        // with an error set); each item is set once, to an owned reference,
        // before the list is handed to Python code.
        unsafe {
            let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?;
            for (i, &id) in ids.iter().enumerate() {
                let item = match self.ints.get(id as usize) {
                    Some(int) => {
                        ffi::Py_INCREF(int.as_ptr());
                        int.as_ptr()
                    }
                    None => new_int(py, id).into_ptr(),
                };
                ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, item);
            }
            Ok(list.cast_into_unchecked())
        }
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
