"""OpenAI's encodings by name, offline: ``bytepair.get_encoding("cl100k_base")``
gives tiktoken's ``get_encoding`` ids, pattern and special tokens, from a rank
file already on this machine (nothing is downloaded). The file is looked for,
in order:

1. in the folder named by ``BYTEPAIR_ENCODINGS``: ``<name>.tiktoken`` or
   ``<name>.tiktoken.gz``;
2. in tiktoken's cache (``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``,
   else ``<tmp>/data-gym-cache``), where tiktoken keeps a downloaded file under
   the SHA-1 of its URL;
3. in installed packages that ship the files (the ``bpe-openai`` wheel:
   cl100k_base and o200k_base).

``gpt2`` is ``r50k_base`` (the same ranks, pattern and special token in tiktoken).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from bytepair.formats.tiktoken_files import KNOWN_ENCODINGS, from_tiktoken

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

ALIASES = {"gpt2": "r50k_base"}
_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
# Installed packages that ship rank files: (package, folder inside it).
_PACKAGES = (("bpe_openai", "data"),)


def list_encodings() -> list[str]:
    """The names `get_encoding` knows."""
    return sorted([*ALIASES, *KNOWN_ENCODINGS])


def _tiktoken_cache() -> Path | None:
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if folder == "":  # tiktoken's way of turning its cache off
        return None
    return Path(folder) if folder else Path(tempfile.gettempdir()) / "data-gym-cache"


def _candidates(name: str) -> list[Path]:
    """Where `name`'s rank file may be, in the order of the module docstring."""
    out = []
    if os.environ.get("BYTEPAIR_ENCODINGS"):
        folder = Path(os.environ["BYTEPAIR_ENCODINGS"])
        out += [folder / f"{name}.tiktoken", folder / f"{name}.tiktoken.gz"]
    cache = _tiktoken_cache()
    if cache is not None:
        out.append(cache / hashlib.sha1(_URL.format(name).encode()).hexdigest())
    for package, sub in _PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            for root in spec.submodule_search_locations:
                out += [
                    Path(root) / sub / f"{name}.tiktoken",
                    Path(root) / sub / f"{name}.tiktoken.gz",
                ]
    return out


def encoding_file(name: str) -> Path:
    """The rank file of encoding `name` on this machine.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
        FileNotFoundError: no copy found; the message says which file to put where.
    """
    ranks_name = ALIASES.get(name, name)
    if ranks_name not in KNOWN_ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(list_encodings())}")
    for path in _candidates(ranks_name):
        if path.is_file():
            return path
    cache = _tiktoken_cache()
    raise FileNotFoundError(
        f"encoding {name!r}: no {ranks_name}.tiktoken on this machine (bytepair downloads "
        f"nothing). Put {_URL.format(ranks_name)} as {ranks_name}.tiktoken in a folder and set "
        f"BYTEPAIR_ENCODINGS to it{f', or let tiktoken cache it in {cache}' if cache else ''}, or "
        "pip install bpe-openai (ships cl100k_base and o200k_base)"
    )


def get_encoding(name: str) -> "Tokenizer":
    """OpenAI's encoding `name` (``gpt2``, ``r50k_base``, ``p50k_base``,
    ``cl100k_base``, ``o200k_base``) as a Tokenizer with tiktoken's ids,
    pattern and special tokens, read offline (see the module docstring).

    Raises:
        ValueError: an unknown name, or a damaged rank file (names it).
        FileNotFoundError: the rank file is nowhere on this machine.
    """
    path = encoding_file(name)
    pattern, specials, _ = KNOWN_ENCODINGS[ALIASES.get(name, name)]
    return from_tiktoken(path, pattern=pattern, special_tokens=specials)
