"""Reading any supported file (`load`), describing it (`info`), converting
between formats (`convert`), and the ``bytepair convert`` / ``bytepair info``
subcommands.

Detection looks at the content, then at the neighbours:
  - a protobuf whose first field is a piece: a SentencePiece ``.model`` file;
  - a JSON object with a ``"model"`` object: HuggingFace tokenizer.json;
  - a JSON object with a ``"config"`` object and a ``"vocab"`` list: Mistral's
    tekken.json;
  - a JSON object of ``token: id`` with a merges file beside it (``merges.txt``,
    the same name with ``vocab`` -> ``merges`` and ``.json`` -> ``.txt``, or
    OpenAI's ``vocab.bpe`` next to ``encoder.json``): GPT-2 files; a merges file
    given directly finds its vocab.json the same way;
  - ``base64 rank`` lines (plain or gzipped): a ``.tiktoken`` rank file, with its
    sidecar ``<file>.json`` (the sidecar's own path works too);
  - a directory: its ``tokenizer.json``, else ``vocab.json`` + ``merges.txt``,
    else its single ``.tiktoken`` file;
  - a pipe (``-``, ``<(...)``, a FIFO) is read once, whole: a tokenizer.json or a
    rank file (GPT-2's two files cannot come through one pipe).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bytepair.atomic import recover_file_sets
from bytepair.formats.by_name import get_encoding, list_encodings
from bytepair.formats.gpt2 import MERGES_NAME, VOCAB_NAME, from_gpt2_files, save_gpt2
from bytepair.formats.hf import from_hf_json
from bytepair.formats.hf_regex import preset_name
from bytepair.formats.reading import (
    GZIP_MAGIC,
    MAX_INFLATED_BYTES,
    gunzip,
    maybe_gunzip,
    parse_json,
)
from bytepair.formats.spm import from_model_file, looks_like_model_file
from bytepair.formats.tekken import from_tekken, looks_like_tekken, save_tekken
from bytepair.formats.tiktoken_files import (
    SIDECAR_SUFFIX,
    from_tiktoken,
    looks_like_rank_file,
    save_tiktoken,
)

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer

FORMATS = ("hf", "tiktoken", "gpt2", "tekken", "spm")
_FORMAT_NAMES = {
    "spm": "SentencePiece .model",
    "hf": "HuggingFace tokenizer.json",
    "tiktoken": "tiktoken rank file",
    "gpt2": "GPT-2 vocab.json + merges.txt",
    "tekken": "Mistral tekken.json",
}


def _beside(path: str, candidates: list[str]) -> str | None:
    directory = os.path.dirname(os.path.abspath(path))
    for name in candidates:
        p = os.path.join(directory, name)
        if name and os.path.isfile(p) and os.path.abspath(p) != os.path.abspath(path):
            return p
    return None


def _merges_for(vocab_path: str) -> str | None:
    base = os.path.basename(vocab_path)
    swapped = (
        base.replace("vocab", "merges").removesuffix(".json") + ".txt" if "vocab" in base else ""
    )
    return _beside(
        vocab_path, [MERGES_NAME, swapped, "vocab.bpe" if base == "encoder.json" else ""]
    )


def _vocab_for(merges_path: str) -> str | None:
    base = os.path.basename(merges_path)
    swapped = (
        base.replace("merges", "vocab").removesuffix(".txt") + ".json" if "merges" in base else ""
    )
    return _beside(
        merges_path, [VOCAB_NAME, swapped, "encoder.json" if base == "vocab.bpe" else ""]
    )


def _read_head(path: str, size: int = 1 << 16) -> bytes:
    """The first `size` bytes of the file's content (gunzipped if it is gzip)."""
    with open(path, "rb") as f:
        head = f.read(size)
    if head[:2] == GZIP_MAGIC:
        with open(path, "rb") as f:
            head = gunzip(f.read(), source=path, limit=size)
    return head


def _detect_pipe(path: str) -> tuple[str, dict[str, Any]]:
    """`detect_format` for a file that can be read only once: its content is kept
    (``"doc"`` for tokenizer.json, ``"data"`` for a rank file)."""
    with open(path, "rb") as f:
        data = f.read(MAX_INFLATED_BYTES + 1)
    if len(data) > MAX_INFLATED_BYTES:
        raise ValueError(f"{path}: more than {MAX_INFLATED_BYTES:,} bytes; not a tokenizer file")
    data = maybe_gunzip(data, source=path)
    if looks_like_model_file(data[:64]):
        return "spm", {"path": path, "data": data}
    if data.lstrip()[:1] in (b"{", b"[", b""):
        doc = parse_json(data, source=path)
        if isinstance(doc, dict) and isinstance(doc.get("model"), dict):
            return "hf", {"path": path, "doc": doc}
        if looks_like_tekken(doc):
            return "tekken", {"path": path, "doc": doc}
        raise ValueError(
            f"{path}: JSON read from a pipe but not a tokenizer.json (GPT-2's vocab.json needs its "
            "merges.txt beside it: give the file's path)"
        )
    if looks_like_rank_file(data[: 1 << 16]):
        return "tiktoken", {"path": path, "data": data}
    raise ValueError(f"{path}: read from a pipe: neither a tokenizer.json nor a tiktoken rank file")


def detect_format(path: str | os.PathLike) -> tuple[str, dict[str, Any]]:
    """Which format `path` holds, and the files that make it up.

    Returns:
        ``("hf", {"path", "doc"})``, ``("tekken", {"path", "doc"})``,
        ``("gpt2", {"vocab", "merges"})``, ``("tiktoken", {"path"})`` or
        ``("spm", {"path"})``.

    Raises:
        FileNotFoundError: no such file or directory.
        ValueError: the content matches no format, or a GPT-2 file lacks its
            partner; the message says what was expected.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "tokenizer.json")):
            return detect_format(os.path.join(path, "tokenizer.json"))
        if os.path.isfile(os.path.join(path, VOCAB_NAME)) and os.path.isfile(
            os.path.join(path, MERGES_NAME)
        ):
            return "gpt2", {
                "vocab": os.path.join(path, VOCAB_NAME),
                "merges": os.path.join(path, MERGES_NAME),
            }
        ranks = [n for n in sorted(os.listdir(path)) if n.endswith((".tiktoken", ".tiktoken.gz"))]
        if len(ranks) == 1:
            return "tiktoken", {"path": os.path.join(path, ranks[0])}
        raise ValueError(
            f"{path}: a directory without tokenizer.json, vocab.json + merges.txt, or a single "
            ".tiktoken file"
        )
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    if not os.path.isfile(path):
        return _detect_pipe(path)
    head = _read_head(path)
    if looks_like_model_file(head):
        return "spm", {"path": path}
    if head.lstrip()[:1] in (b"{", b"[", b""):
        with open(path, "rb") as f:
            data = f.read()
        doc = parse_json(data, source=path)
        # A vocab.json may hold the token "model": test for it first.
        if isinstance(doc, dict) and doc and all(type(v) is int for v in doc.values()):
            merges = _merges_for(path)
            if merges is None:
                raise ValueError(f"{path}: a GPT-2 style vocab.json, but no merges.txt beside it")
            return "gpt2", {"vocab": path, "merges": merges}
        if isinstance(doc, dict) and "model" in doc:
            return "hf", {"path": path, "doc": doc}
        if looks_like_tekken(doc):
            return "tekken", {"path": path, "doc": doc}
        if isinstance(doc, dict) and "pat_str" in doc and path.endswith(SIDECAR_SUFFIX):
            return "tiktoken", {"path": path.removesuffix(SIDECAR_SUFFIX)}
        raise ValueError(
            f"{path}: JSON, but no 'model' object (not a tokenizer.json) and not a vocab.json "
            "(token -> id)"
        )
    if looks_like_rank_file(head):
        return "tiktoken", {"path": path}
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    if first.startswith(b"#version") or len(first.split(b" ")) == 2:
        vocab = _vocab_for(path)
        if vocab is None:
            raise ValueError(
                f"{path}: looks like a GPT-2 merges.txt, but there is no vocab.json beside it"
            )
        return "gpt2", {"vocab": vocab, "merges": path}
    raise ValueError(
        f"{path}: cannot tell the format (expected a HuggingFace tokenizer.json, GPT-2 vocab.json "
        "+ merges.txt, or a tiktoken rank file of 'base64 rank' lines)"
    )


def load(
    path: str | os.PathLike,
    *,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> "Tokenizer":
    """Load a tokenizer from any supported file, detecting the format (see the
    module docstring).

    Args:
        path: a file or directory.
        pattern, special_tokens: for a ``.tiktoken`` file without a sidecar (and
            to override one); for GPT-2 files, `pattern` replaces GPT-2's.

    A name of `bytepair.list_encodings` where no such file exists loads that
    encoding (`bytepair.get_encoding`), so every ``-t FILE`` of the CLI takes one.

    Raises:
        FileNotFoundError, ValueError: as `detect_format` and the format's reader.
    """
    path = os.fspath(path)
    recover_file_sets(path if os.path.isdir(path) else os.path.dirname(path))
    if (
        not os.path.exists(path)
        and os.fspath(path) in list_encodings()
        and pattern is special_tokens is None
    ):
        return get_encoding(os.fspath(path))
    return _load_detected(*detect_format(path), pattern=pattern, special_tokens=special_tokens)


def _load_detected(
    kind: str, parts: dict[str, Any], *, pattern=None, special_tokens=None
) -> "Tokenizer":
    if kind == "spm":
        if pattern is not None or special_tokens is not None:
            raise ValueError(
                f"{parts['path']}: a SentencePiece model holds its normalizer and special tokens; "
                "do not pass them"
            )
        return from_model_file(parts["path"], parts.get("data"))
    if kind == "hf":
        if pattern is not None or special_tokens is not None:
            raise ValueError(
                f"{parts['path']}: a tokenizer.json holds its pattern and special tokens; do not "
                "pass them"
            )
        return from_hf_json(parts["doc"], source=parts["path"])
    if kind == "tekken":
        if pattern is not None or special_tokens is not None:
            raise ValueError(
                f"{parts['path']}: a tekken.json holds its pattern and special tokens; do not pass "
                "them"
            )
        return from_tekken(parts["doc"], source=parts["path"])
    if kind == "gpt2":
        gpt2_pattern = "gpt2" if pattern is None else pattern  # "" is a pattern too
        return from_gpt2_files(parts["vocab"], parts["merges"], special_tokens, gpt2_pattern)
    return from_tiktoken(
        parts["path"], pattern=pattern, special_tokens=special_tokens, data=parts.get("data")
    )


def infer_target(out: str) -> str:
    """The format to write to `out`, from its name: ``.tiktoken`` -> tiktoken,
    ``.json`` with ``tekken`` in the name -> tekken, other ``.json`` -> hf, an existing directory or
    a path ending in a separator -> gpt2.

    Raises:
        ValueError: none of these; pass ``to=`` / ``--to``.
    """
    if out.endswith(".tiktoken"):
        return "tiktoken"
    if out.endswith(".model"):
        return "spm"
    if out.endswith(".json") and "tekken" in os.path.basename(
        out
    ):  # mistral-common's own rule (is_tekken)
        return "tekken"
    if out.endswith(".json"):
        return "hf"
    if os.path.isdir(out) or out.endswith(("/", os.sep)):
        return "gpt2"
    raise ValueError(
        f"{out}: cannot tell the output format from the name (use .tiktoken, .json, or a directory "
        "for vocab.json + merges.txt), or pass --to tiktoken|hf|gpt2"
    )


def save_as(tok: "Tokenizer", out: str | os.PathLike, to: str) -> list[str]:
    """Write `tok` to `out` in format `to` (``hf``, ``tiktoken``, ``gpt2``, ``tekken``); the files
    written."""
    out = os.fspath(out)
    if to == "hf":
        tok.save(out)
        return [out]
    if to == "tiktoken":
        return list(save_tiktoken(tok, out))
    if to == "gpt2":
        return list(save_gpt2(tok, out))
    if to == "tekken":
        save_tekken(tok, out)
        return [out]
    if to == "spm":
        if not hasattr(tok, "save_model"):
            raise ValueError(
                "only a SentencePiece model can be written as a .model file; "
                "this is a byte-level BPE"
            )
        tok.save_model(out)
        return [out]
    raise ValueError(f"unknown format {to!r} (expected one of {', '.join(FORMATS)})")


def convert(
    src: str | os.PathLike,
    out: str | os.PathLike,
    to: str | None = None,
    *,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> list[str]:
    """Load `src` (any format) and write it to `out` in format `to` (inferred
    from `out` when None, see `infer_target`). Returns the files written."""
    tok = load(src, pattern=pattern, special_tokens=special_tokens)
    return save_as(tok, out, to or infer_target(os.fspath(out)))


def info(path: str | os.PathLike) -> dict[str, Any]:
    """What a tokenizer file holds: ``format``, ``files``, ``vocab_size``,
    ``merges``, ``special_tokens`` (string -> id), ``pattern`` (preset name or
    regex), ``preset`` (bool), ``max_id``, ``pipeline`` (a tokenizer.json
    pipeline in one line, None without one)."""
    kind, parts = detect_format(path)
    tok = _load_detected(kind, parts)
    files = [parts.get("path")] if kind != "gpt2" else [parts["vocab"], parts["merges"]]
    if kind == "tiktoken" and os.path.isfile(parts["path"] + SIDECAR_SUFFIX):
        files.append(parts["path"] + SIDECAR_SUFFIX)
    name = preset_name(tok.pattern_regex)
    return {
        "format": kind,
        "files": files,
        "vocab_size": tok.vocab_size,
        "merges": len(tok.merges),
        "special_tokens": dict(sorted(tok.special_tokens.items(), key=lambda kv: kv[1])),
        "pattern": name,
        "preset": name != tok.pattern_regex,
        "max_id": tok.n_vocab - 1,
        "pipeline": tok.pipeline.describe() if tok.pipeline else None,
    }


# ---- command line -------------------------------------------------------------------
