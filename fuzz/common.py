"""Shared pieces of the atheris harnesses in this directory.

- `Findings`: a contract violation is recorded (input + traceback, once per
  distinct signature) and fuzzing goes on, so one run reports every kind of
  failure it meets instead of stopping at the first;
- `small_tokenizer`: a tokenizer trained on a few generated sentences, whose
  files are the loaders' seed corpus (no data is copied from elsewhere);
- the GPT-2 tokenizer and tiktoken's offline reading of it, from
  ``../shared/corpora/cs336`` at run time, as tests/_gpt2.py does;
- text built from fuzz bytes, biased towards what the patterns treat specially.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
import traceback
import unicodedata
import warnings
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent
CORPORA = FUZZ_DIR.parents[0].parent / "shared" / "corpora"
EOT = "<|endoftext|>"
PRESETS = ("gpt2", "cl100k", "o200k")


class Findings:
    """Records contract violations of one target under `FUZZ_FINDINGS/<target>/`.

    A finding's signature is the exception type plus the innermost frame of
    the package that raised it (or the assertion's label), so the same bug
    met on many inputs is written once; the smallest input seen is kept.
    """

    def __init__(self, target: str) -> None:
        root = Path(os.environ.get("FUZZ_FINDINGS", FUZZ_DIR / "findings"))
        self.dir = root / target
        self.dir.mkdir(parents=True, exist_ok=True)

    def record(self, label: str, data: bytes, detail: str) -> None:
        signature = hashlib.sha1(label.encode()).hexdigest()[:12]
        path = self.dir / f"{signature}.input"
        if path.exists() and len(path.read_bytes()) <= len(data):
            return
        new = not path.exists()
        path.write_bytes(data)
        (self.dir / f"{signature}.txt").write_text(f"{label}\n\n{detail}\n", encoding="utf-8")
        if new:
            print(f"\n=== FINDING {signature}: {label}", file=sys.stderr, flush=True)

    def exception(self, data: bytes, exc: BaseException, note: str = "") -> None:
        """Record an exception that the contract does not allow."""
        label = f"{type(exc).__name__} at {_innermost_frame(exc)}"
        detail = note + "".join(traceback.format_exception(exc))
        self.record(label, data, detail)


def _innermost_frame(exc: BaseException) -> str:
    """file:function of the deepest frame inside bytepair (else the deepest)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "bytepair" in f.filename] or frames
    if not ours:
        return "?"
    f = ours[-1]
    return f"{Path(f.filename).name}:{f.name}:{f.lineno}"


# ---- tokenizers -------------------------------------------------------------

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "It's 2024 and we'll encode naïve café text, 東京 and Россия too!",
    "def f(self):\n    return self.x + 42\n",
    "hello hello hello world world",
]


@functools.cache
def small_tokenizer(pattern: str = "gpt2"):
    """A tokenizer with ~40 merges and two special tokens, trained on SENTENCES."""
    import bytepair

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bytepair.train_from_iterator(
            SENTENCES * 3, 300, special_tokens=[EOT, "<|pad|>"], pattern=pattern, progress=False
        )


def gpt2_files() -> tuple[Path, Path] | None:
    """(vocab.json, merges.txt) of GPT-2 from the shared corpora, or None."""
    root = CORPORA / "cs336"
    vocab, merges = root / "gpt2_vocab.json", root / "gpt2_merges.txt"
    return (vocab, merges) if vocab.is_file() and merges.is_file() else None


def tiktoken_gpt2(vocab: Path, merges: Path):
    """GPT-2 as a tiktoken.Encoding read by tiktoken's own loader (offline;
    that loader wants a ``#version`` line, so it reads a copy with one)."""
    import tempfile
    from unittest import mock

    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    import bytepair

    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}),
    ):
        bpe = Path(tmp) / "vocab.bpe"
        body = merges.read_bytes()
        bpe.write_bytes(body if body.startswith(b"#version") else b"#version: 0.2\n" + body)
        ranks = data_gym_to_mergeable_bpe_ranks(str(bpe), str(vocab))
    return tiktoken.Encoding(
        name="gpt2_fuzz",
        pat_str=bytepair.resolve_pattern("gpt2"),
        mergeable_ranks=ranks,
        special_tokens={EOT: 50256},
    )


# ---- text from fuzz bytes -------------------------------------------------------

# Pieces the preset patterns and the special-token scan treat specially; a fuzz
# byte picks one of them (see `text_from`).
ATOMS = [
    EOT,
    "<|endoftext",
    "|>",
    "<|",
    "<|pad|>",
    "'s",
    "'S",
    "'t",
    "'re",
    "'VE",
    "'m",
    "'ll",
    "'D",
    "'ſ",
    "'\u212a",
    "\u2019s",
    "'",
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\xa0",
    "\u2028",
    "\u3000",
    "\ufeff",
    "\u200b",
    "a",
    "Z",
    "é",
    "e\u0301",
    "ǅ",
    "ʰ",
    "ß",
    "İ",
    "字",
    "ア",
    "한",
    "ا",
    "1",
    "123",
    "٣",
    "½",
    "Ⅻ",
    "²",
    ".",
    "/",
    "!",
    "$",
    "😀",
    "👍🏻",
    "\ud83d",
    "\ude00",
    "\x00",
    "\U0010ffff",
    " the",
    " don't",
    "HTTPServer",
    "\n\n",
    "    ",
    " 2024",
]


def text_from(data: bytes, *, surrogates: bool = True) -> str:
    """A string made from fuzz bytes: the data is read as UTF-8 (invalid bytes
    becoming lone surrogates when `surrogates`, else dropped); each char
    U+0080..U+00BF that started as one of the bytes 0xF8..0xFF is replaced by
    an ATOM, so the mutator reaches the interesting pieces by flipping one byte.
    """
    out = []
    i = 0
    while i < len(data):
        b = data[i]
        if b >= 0xF8 and i + 1 < len(data):
            out.append(ATOMS[data[i + 1] % len(ATOMS)])
            i += 2
            continue
        j = i + 1
        while j < len(data) and data[j] < 0xF8:
            j += 1
        out.append(data[i:j].decode("utf-8", "surrogateescape" if surrogates else "ignore"))
        i = j
    text = "".join(out)
    if not surrogates:
        text = text.encode("utf-8", "ignore").decode("utf-8")
    return text


def replace_surrogates(text: str) -> str:
    """What tiktoken encodes for a str with lone surrogates: a surrogate pair
    held as two code points becomes its character, a lone one U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@functools.cache
def _regex():
    import regex

    return regex


def newer_than_unicodedata(c: str) -> bool:
    """Assigned in regex's Unicode tables (17.0) but not in Python's unicodedata
    (and the Rust regex crate, 16.0): the known version skew of test_pretokenize."""
    return unicodedata.category(c) == "Cn" and not _regex().fullmatch(r"\p{Cn}", c)


# ---- running a harness ------------------------------------------------------------


def expose_libfuzzer_symbols() -> None:
    """Make the __sanitizer_cov_* symbols of atheris's libFuzzer global, so a
    bytepair._core built with coverage instrumentation (README: "Rust
    coverage") can be loaded and libFuzzer sees its edges. Harmless otherwise.

    Must run only inside atheris.Fuzz() (atheris loads its libFuzzer core
    there, privately; dlopen with RTLD_GLOBAL promotes that same copy) or when
    not fuzzing at all: done before Fuzz(), atheris would take the library for
    a preloaded libFuzzer and refuse to start.
    """
    import ctypes

    import atheris

    for core in Path(atheris.__file__).parent.glob("core_with_libfuzzer*.so"):
        ctypes.CDLL(str(core), mode=os.RTLD_GLOBAL | os.RTLD_NOW)


def fuzz_main(setup, test_one_input, seeds) -> None:
    """The command line of every harness: ``--write-seeds DIR``, or libFuzzer's
    own arguments. `setup()` imports bytepair and builds what the target needs;
    it runs on the first input, after libFuzzer has started (see
    `expose_libfuzzer_symbols`)."""
    import atheris

    if "--write-seeds" in sys.argv:
        expose_libfuzzer_symbols()
        setup()
        out = Path(sys.argv[sys.argv.index("--write-seeds") + 1])
        out.mkdir(parents=True, exist_ok=True)
        for i, seed in enumerate(seeds()):
            (out / f"seed-{i:02d}").write_bytes(seed)
        return
    ready = []

    def first_then_test(data: bytes) -> None:
        if not ready:
            expose_libfuzzer_symbols()
            setup()
            ready.append(True)
        test_one_input(data)

    atheris.Setup(sys.argv, first_then_test)
    atheris.Fuzz()


# ---- structured edits of JSON files -------------------------------------------


def hostile_value(fdp):
    """A JSON value of a type or range a loader might not expect (`fdp`: an
    atheris.FuzzedDataProvider)."""
    choice = fdp.ConsumeIntInRange(0, 19)
    small_str = fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 12))
    return [
        None,
        True,
        False,
        0,
        -1,
        1 << 32,
        1 << 70,
        2.5,
        float("inf"),
        "",
        small_str,
        [],
        {},
        [small_str],
        {small_str: 1},
        "\u0120",
        EOT,
        [1, 2],
        {"type": small_str},
        "\ud800",
    ][choice]


def edit_json(doc, fdp):
    """Walk into `doc` as the data says, then replace, delete or add there."""
    node, key = None, None
    cur = doc
    while isinstance(cur, (dict, list)) and cur and fdp.ConsumeIntInRange(0, 3) != 0:
        keys = list(cur) if isinstance(cur, dict) else list(range(len(cur)))
        node, key = cur, keys[fdp.ConsumeIntInRange(0, len(keys) - 1)]
        cur = node[key]
    if node is None:
        return hostile_value(fdp) if fdp.ConsumeIntInRange(0, 7) == 0 else doc
    action = fdp.ConsumeIntInRange(0, 3)
    if action == 0 and isinstance(node, dict):
        del node[key]
    elif action == 1 and isinstance(node, dict):
        node[fdp.ConsumeUnicode(6)] = hostile_value(fdp)
    elif action == 2 and isinstance(node, list):
        node.insert(key, hostile_value(fdp))
    else:
        node[key] = hostile_value(fdp)
    return doc


def message_shape(e: BaseException) -> str:
    """The message with its quoted values and numbers blanked, so one check
    failing on many inputs is one finding."""
    text = re.sub(r"b?'(?:[^'\\]|\\.)*'|b?\"(?:[^\"\\]|\\.)*\"", "<v>", str(e))
    return re.sub(r"\d+", "<n>", text)[:100]


ROUND_TRIP_FORMATS = ("hf", "tiktoken", "gpt2")


def check_round_trip(tok, work: Path) -> None:
    """What a format accepts loads back equal: each format
    either refuses `tok` with a ValueError before writing anything, or writes
    files that `Tokenizer.load` reads back as `tok` (AssertionError otherwise;
    a load that raises is a finding too)."""
    import tempfile

    import bytepair.formats

    for fmt in ROUND_TRIP_FORMATS:
        d = Path(tempfile.mkdtemp(dir=work))
        try:
            if fmt == "hf":
                tok.save(d / "tokenizer.json")
                path = d / "tokenizer.json"
            elif fmt == "tiktoken":
                tok.save_tiktoken(d / "t.tiktoken")
                path = d / "t.tiktoken"
            else:
                tok.save_gpt2(d)
                path = d
        except ValueError:
            assert not any(d.iterdir()), f"{fmt}: refused, but wrote {sorted(os.listdir(d))}"
            continue
        # GPT-2 files hold no pattern: it is given again when they are read.
        pattern = tok.pattern if fmt == "gpt2" else None
        loaded = bytepair.formats.load(path, pattern=pattern)
        assert loaded == tok, f"{fmt}: saved and loaded back, not equal"
