"""Fuzz target `counts`: word-counts folders (`bytepair count`'s output) with a
doctored manifest or part, as a hostile or unlucky user hands them over.

An input is one kind byte and a payload: the payload replaces the manifest
(`_manifest.json`) raw, edits its parsed JSON (replace, delete or add values, as
the loaders target does), or replaces a Parquet part with the manifest's
checksum updated to match (so the part's own checks are reached, not only the
SHA-256 one).

Contract (`WordCounts.open`, `verify`, `train_from_counts`):
opening returns a WordCounts or raises ValueError naming the folder or file, or
OSError; an opened artifact verifies or raises ValueError; training from it
returns a Tokenizer or raises ValueError / OverflowError; never another
exception type, a pyo3 PanicException, a crash or a hang.

Run through run.py, or directly: python fuzz/fuzz_counts.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    EOT,
    SENTENCES,
    Findings,
    check_round_trip,
    edit_json,
    fuzz_main,
    message_shape,
)

bytepair = None  # imported by setup()
FINDINGS = Findings("counts")
WORK = (
    Path("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    / f"bytepair-fuzz-counts-{os.getuid()}"
)
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir()
atexit.register(shutil.rmtree, WORK, ignore_errors=True)
VALID: dict[str, bytes] = {}  # file name in the folder -> content
MANIFEST = "_manifest.json"
KINDS = ("raw manifest", "edited manifest", "part")


def setup() -> None:
    global bytepair
    with atheris.instrument_imports(include=["bytepair", "json"]):
        import bytepair
    src = WORK / "corpus.txt"
    src.write_text("\n".join(SENTENCES * 5), encoding="utf-8")
    VALID.update({p.name: p.read_bytes() for p in valid_artifact(src, WORK / "valid").iterdir()})


def valid_artifact(src: Path, out: Path) -> Path:
    """The word counts of `src` as a folder. `count`'s worker processes cannot
    load a coverage-instrumented extension (its libFuzzer symbols live in this
    process only), so the folder is made by the interpreter the fuzzing venv
    was made from, whose bytepair is a normal build; without a venv, here."""
    code = (
        f"import bytepair; bytepair.count({str(src)!r}, {str(out)!r}, parts=2, "
        f"special_tokens=[{EOT!r}], num_workers=1, progress=False)"
    )
    base = Path(sys.base_prefix) / "bin" / "python3"
    if sys.prefix != sys.base_prefix and base.exists():
        subprocess.run(
            [str(base), "-c", code],
            check=True,
            env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
        )
    else:
        exec(code)
    return out


def seeds() -> list[bytes]:
    out = [bytes([0]) + VALID[MANIFEST], bytes([2]) + VALID["part-00000.parquet"]]
    return out + [bytes([1]) + bytes((i * 53 + n) % 256 for i in range(n)) for n in (8, 32, 64)]


def case(kind: int, payload: bytes) -> Path:
    """A fresh folder: the valid artifact with the payload applied as `kind` says."""
    files = dict(VALID)
    if kind == 0:
        files[MANIFEST] = payload
    elif kind == 1:
        fdp = atheris.FuzzedDataProvider(payload)
        doc = json.loads(VALID[MANIFEST])
        for _ in range(fdp.ConsumeIntInRange(1, 4)):
            doc = edit_json(doc, fdp)
        files[MANIFEST] = json.dumps(doc).encode("utf-8", "surrogatepass")
    else:
        files["part-00000.parquet"] = payload
        doc = json.loads(VALID[MANIFEST])
        doc["parts"][0]["sha256"] = hashlib.sha256(payload).hexdigest()
        files[MANIFEST] = json.dumps(doc).encode()
    d = Path(tempfile.mkdtemp(dir=WORK))
    for name, content in files.items():
        (d / name).write_bytes(content)
    return d


def exercise(d: Path) -> None:
    counts = bytepair.WordCounts.open(d)
    counts.verify()
    try:
        tok = bytepair.train_from_counts(counts, 300)
    except OverflowError:
        return
    try:
        check_round_trip(tok, WORK)  # what trains saves and loads back
    except AssertionError as e:
        raise RoundTripError(str(e)) from e


class RoundTripError(Exception):
    """A trained tokenizer that did not save and load back (a finding)."""


def test_one_input(data: bytes) -> None:
    if not data:
        return
    kind = data[0] % len(KINDS)
    d = case(kind, data[1:])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exercise(d)
    except ValueError as e:
        if type(e) is not ValueError:
            FINDINGS.exception(
                data, e, f"{KINDS[kind]}: a ValueError subclass, not a ValueError naming the file\n"
            )
        elif d.name not in str(e):
            FINDINGS.record(
                f"ValueError without the folder in {KINDS[kind]}: {message_shape(e)}", data, str(e)
            )
    except OSError:
        pass
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        FINDINGS.exception(data, e, f"{KINDS[kind]}\n")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    fuzz_main(setup, test_one_input, seeds)
