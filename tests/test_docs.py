"""The `>>>` examples in the public modules' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "bytepair",
    "bytepair.tokenizer",
    "bytepair.train",
    "bytepair.superbpe",
    "bytepair.formats.bytelevel",
    "bytepair.counts.artifact",
    "bytepair.dataset.reader",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples left to check"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
