//! Ids as the bytes a token file holds: little-endian unsigned ints of 2 or
//! 4 bytes each (NumPy's `<u2` / `<u4`, the `.bin` of a token dataset).

use std::mem::MaybeUninit;

/// The width of an id written as bytes: 2 bytes (vocabularies of up to 65,536
/// ids) or 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemSize {
    /// Little-endian u16.
    Two,
    /// Little-endian u32.
    Four,
}

impl ItemSize {
    /// Bytes per id: 2 or 4.
    pub fn bytes(self) -> usize {
        match self {
            ItemSize::Two => 2,
            ItemSize::Four => 4,
        }
    }
}

/// An item size other than 2 or 4 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("itemsize={0}: expected 2 or 4")]
pub struct BadItemSize(pub usize);

impl TryFrom<usize> for ItemSize {
    type Error = BadItemSize;

    /// The item size of `bytes` bytes per id (2 or 4).
    fn try_from(bytes: usize) -> Result<Self, BadItemSize> {
        match bytes {
            2 => Ok(ItemSize::Two),
            4 => Ok(ItemSize::Four),
            other => Err(BadItemSize(other)),
        }
    }
}

/// An id too large for 2 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("id {0} does not fit in 2 bytes")]
pub struct IdTooWide(pub u32);

/// Append `ids` to `out` as little-endian unsigned ints of `itemsize`. An id
/// of 65,536 or more with `ItemSize::Two` is an error (`out` then holds the
/// ids before it).
///
/// ```
/// use bytepair_core::encode::id_bytes::{push_ids, IdTooWide, ItemSize};
/// let mut out = Vec::new();
/// push_ids(&mut out, [1, 258], ItemSize::Two).unwrap();
/// assert_eq!(out, [1, 0, 2, 1]);
/// assert_eq!(push_ids(&mut out, [70_000], ItemSize::Two), Err(IdTooWide(70_000)));
/// ```
pub fn push_ids(
    out: &mut Vec<u8>,
    ids: impl IntoIterator<Item = u32>,
    itemsize: ItemSize,
) -> Result<(), IdTooWide> {
    for id in ids {
        match itemsize {
            ItemSize::Four => out.extend_from_slice(&id.to_le_bytes()),
            ItemSize::Two => {
                let narrow = u16::try_from(id).map_err(|_| IdTooWide(id))?;
                out.extend_from_slice(&narrow.to_le_bytes());
            }
        }
    }
    Ok(())
}

/// Write `ids` into `place` (`ids.len()` times `itemsize` bytes) as
/// little-endian unsigned ints of `itemsize`; every byte of `place` is
/// written unless an id is too wide.
pub fn write_ids(
    ids: &[u32],
    itemsize: ItemSize,
    place: &mut [MaybeUninit<u8>],
) -> Result<(), IdTooWide> {
    debug_assert_eq!(place.len(), ids.len() * itemsize.bytes());
    match itemsize {
        ItemSize::Four => {
            for (slot, &id) in place.chunks_exact_mut(4).zip(ids) {
                for (byte, b) in slot.iter_mut().zip(id.to_le_bytes()) {
                    byte.write(b);
                }
            }
        }
        ItemSize::Two => {
            for (slot, &id) in place.chunks_exact_mut(2).zip(ids) {
                let narrow = u16::try_from(id).map_err(|_| IdTooWide(id))?;
                for (byte, b) in slot.iter_mut().zip(narrow.to_le_bytes()) {
                    byte.write(b);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_little_endian_of_the_item_size() {
        let mut out = Vec::new();
        push_ids(&mut out, [0x0102, 0xFFFF], ItemSize::Two).unwrap();
        assert_eq!(out, [2, 1, 0xFF, 0xFF]);
        out.clear();
        push_ids(&mut out, [0x0102_0304, 0x1_0000], ItemSize::Four).unwrap();
        assert_eq!(out, [4, 3, 2, 1, 0, 0, 1, 0]);
        assert_eq!(
            push_ids(&mut out, [0x1_0000], ItemSize::Two),
            Err(IdTooWide(0x1_0000))
        );
        assert_eq!(ItemSize::try_from(3), Err(BadItemSize(3)));
        assert_eq!(ItemSize::try_from(4).map(ItemSize::bytes), Ok(4));
    }
}
