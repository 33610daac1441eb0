"""Megatron-LM's token files: the ``.idx`` index of its ``MMapIndexedDataset``
(``IndexedDataset`` in megatron/core/datasets/indexed_dataset.py), written and
read from the published layout, without a Megatron dependency. The ``.bin``
beside it is the ids back to back, which is what a bytepair shard holds anyway.

Layout of the ``.idx`` (``_IndexWriter``): the 9-byte magic ``MMIDIDX\\0\\0``;
version 1 (<Q); the dtype code (<B; its ``DType`` enum: 8 uint16, 4 int32, no
uint32); the sequence count (<Q) and the document-index count (<Q, documents +
1); the sequence lengths (int32); each sequence's byte offset in the ``.bin``
(int64); the document indices, where document d is sequences
``doc_idx[d]:doc_idx[d+1]`` (int64). bytepair writes one sequence per document.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy

MEGATRON_INDEX_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint16": 8, "int32": 4}
_HEADER_BYTES = 9 + 8 + 1 + 8 + 8


def megatron_index(lengths: "numpy.ndarray", dtype: str) -> bytes:
    """The ``.idx`` file of Megatron-LM's ``MMapIndexedDataset`` for sequences
    of `lengths` tokens of `dtype` (``uint16`` or ``int32``), one document each.
    The layout is in the module docs; `lengths` are token counts.
    """
    import numpy as np

    itemsize = np.dtype(dtype).itemsize
    n = len(lengths)
    pointers = np.zeros(n, dtype="<i8")
    np.cumsum(lengths[:-1] * itemsize, out=pointers[1:])
    return b"".join(
        [
            MEGATRON_INDEX_HEADER,
            struct.pack("<Q", 1),
            struct.pack("<B", MEGATRON_DTYPE_CODES[dtype]),
            struct.pack("<Q", n),
            struct.pack("<Q", n + 1),
            np.asarray(lengths, dtype="<i4").tobytes(),
            pointers.tobytes(),
            np.arange(n + 1, dtype="<i8").tobytes(),
        ]
    )


def read_megatron_index(path: str) -> tuple["numpy.ndarray", "numpy.ndarray", "numpy.ndarray", int]:
    """(sequence lengths, byte pointers, document indices, dtype code) of a
    Megatron-LM ``.idx`` file, read from the layout `megatron_index` writes.

    Raises:
        ValueError: not such a file (names it).
    """
    import numpy as np

    with open(path, "rb") as f:
        data = f.read()
    if data[:9] != MEGATRON_INDEX_HEADER or struct.unpack_from("<Q", data, 9)[0] != 1:
        raise ValueError(f"{path}: not a Megatron-LM MMapIndexedDataset index (version 1)")
    code = data[17]
    sequences, documents = struct.unpack_from("<QQ", data, 18)
    at = _HEADER_BYTES
    lengths = np.frombuffer(data, dtype="<i4", count=sequences, offset=at)
    pointers = np.frombuffer(data, dtype="<i8", count=sequences, offset=at + 4 * sequences)
    doc_idx = np.frombuffer(data, dtype="<i8", count=documents, offset=at + 12 * sequences)
    return lengths, pointers, doc_idx, code
