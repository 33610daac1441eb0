"""Python's cyclic garbage collector paused while a batch's results are built.

A served batch of N texts makes a few container objects per text (its ids,
its attention mask, its `Encoding`), which live on in the caller's hands. Each
700 of them start a young-generation collection that traverses them all, and
every tenth of those an older one; every hundred, a collection of the whole
heap (tens of ms once transformers is imported). None of them can free
anything we make (the results hold no cycles). On batches of 1,000 documents
these collections took a third to a half of the calling thread's time
(profiled with py-spy; bench/README.md, transformers). So a large batch is
built with the collector paused. Its allocations still count: if the results
are alive when the pause ends, the next allocation runs one young collection
over them all (instead of one per 700 objects, each adding to the count that
starts the older ones); if they were freed first, their frees cancel them out
(CPython counts frees against allocations).

The one young collection at the pause's end still traversed every id of the
results (2 ms of a 4.5 ms call on 1,000 enwiki paragraphs), so the results'
lists of ids are also taken out of the collector's tracking
(`untrack_id_lists`), as CPython untracks a tuple of atomic items itself.

Paused process-wide (the collector is one for all threads): the first call to
enter pauses it, the last to leave restores it, and only if it was enabled
when the first entered, so a program that disabled the collector keeps it off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from bytepair._core import untrack_int_lists

# Batches of fewer texts are built with the collector running: a short prompt's
# call would pay for the pause and gain nothing.
MIN_BATCH = 64

_lock = threading.Lock()
_inside = 0  # calls inside `paused`
_restore = False  # whether the last one out enables the collector again


@contextmanager
def paused() -> Iterator[None]:
    """The collector paused for the block (callers use it for batches of at
    least `MIN_BATCH` texts)."""
    global _inside, _restore
    with _lock:
        if _inside == 0:
            _restore = gc.isenabled()
            gc.disable()
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0 and _restore:
                gc.enable()


def untrack_id_lists(out) -> None:
    """Untrack the lists of ints among the values of `out` (a ``BatchEncoding``
    or dict: input_ids, attention_mask, ...) from the cyclic collector. Only
    lists of exact ints are untracked (`bytepair._core.untrack_int_lists`):
    they cannot be part of a cycle unless a caller puts a container into one."""
    for value in out.values():
        if type(value) is list:
            untrack_int_lists(value)
