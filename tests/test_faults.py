"""Faults injected for real, in subprocesses: nothing already written is lost
or half-written.

- A writer killed mid-write (SIGKILL, SIGTERM, SIGINT) leaves the previous file
  intact and no partial or temporary file behind (`bytepair.atomic`, and the
  CLI's `encode`, whose ids are streamed to disk).
- A full disk (simulated with RLIMIT_FSIZE, so write() fails with EFBIG) and a
  read-only directory (CAP_DAC_OVERRIDE dropped with setpriv when run as root):
  an OSError that names the file, the earlier file intact, the CLI exits 1 with
  one line.
- A Rust panic becomes a Python exception; the interpreter goes on.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import RESTORE_SIGINT

import bytepair
from bytepair import _core, atomic

OLD = b"the previous, complete file\n"


def _python(code: str, *, wrapper: list[str] = (), **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [*wrapper, sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _run(code: str, **kwargs) -> subprocess.CompletedProcess:
    proc = _python(code, **kwargs)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _only(directory: Path, *names: str) -> None:
    """The directory holds exactly `names`: no temporary or partial file."""
    assert sorted(os.listdir(directory)) == sorted(names)


# ---- killed mid-write ---------------------------------------------------------

_SLOW_WRITER = """
    import sys, time
    from bytepair import atomic
    if {force_named}:
        atomic.os.O_TMPFILE = None; del atomic.os.O_TMPFILE  # take the portable path
    with atomic.atomic_open({target!r}) as f:
        f.write(b"new data " * 100_000)
        f.flush()
        print("writing", flush=True)
        time.sleep(120)
"""


@pytest.mark.parametrize(
    "sig, force_named",
    [
        (signal.SIGKILL, False),  # anonymous O_TMPFILE: nothing to clean up
        (signal.SIGTERM, False),
        (signal.SIGINT, False),
        (signal.SIGINT, True),  # named temporary file: removed by the KeyboardInterrupt
    ],
)
def test_killed_writer_leaves_previous_file_and_nothing_else(tmp_path, sig, force_named):
    if force_named is False and not hasattr(os, "O_TMPFILE"):
        pytest.skip("O_TMPFILE is Linux only")
    target = tmp_path / "tokenizer.json"
    target.write_bytes(OLD)
    code = _SLOW_WRITER.format(target=str(target), force_named=force_named)
    proc = _python(code, wrapper=RESTORE_SIGINT)
    assert proc.stdout.readline() == "writing\n", proc.stderr.read()
    if force_named:
        assert len(os.listdir(tmp_path)) == 2, "the portable path writes a visible temporary file"
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    assert target.read_bytes() == OLD
    _only(tmp_path, "tokenizer.json")


def test_completed_write_replaces_the_file_with_umask_permissions(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(OLD)
    atomic.atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    _only(tmp_path, "out.bin")


def test_cli_encode_killed_mid_stream_leaves_nothing(tmp_path):
    """`bytepair encode` reading a FIFO is killed while it has streamed ids to
    its scratch file: the old output survives, nothing else is left."""
    tok = bytepair.train_from_iterator(
        ["some text to encode, again and again. " * 50], 300, progress=False
    )
    tok.save(tmp_path / "tok.json")
    (tmp_path / "ids.npy").write_bytes(OLD)
    fifo = tmp_path / "input.txt"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bytepair.cli",
            "encode",
            str(fifo),
            "-t",
            str(tmp_path / "tok.json"),
            "-o",
            str(tmp_path / "ids.npy"),
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with open(fifo, "w") as feed:
        feed.write("some text to encode, again and again.\n" * 200_000)  # 7.8 MB, many blocks
        feed.flush()
        time.sleep(1.0)  # the encoder has written ids; the FIFO stays open, so it waits for more
        assert proc.poll() is None
        proc.kill()
        proc.wait(timeout=30)
    assert (tmp_path / "ids.npy").read_bytes() == OLD
    _only(tmp_path, "tok.json", "ids.npy", "input.txt")


def test_cli_encode_reads_a_pipe(tmp_path):
    tok = _small_tokenizer()
    tok.save(tmp_path / "tok.json")
    text = "The lazy dog sleeps, the quick fox jumps.\n" * 50_000  # 2 MB: several blocks
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair.cli",
            "encode",
            "/dev/stdin",
            "-t",
            str(tmp_path / "tok.json"),
            "-o",
            str(tmp_path / "ids.npy"),
            "--quiet",
        ],
        input=text.encode(),
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    import numpy as np

    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode(text)


@pytest.mark.parametrize("text", ["", "a<|big|>b " * 1000])
def test_cli_encode_writes_npy_that_numpy_loads(tmp_path, text):
    """The .npy header is written by numpy and the ids copied after it in blocks:
    empty input, and uint32 ids (a special token at id 70000)."""
    import numpy as np

    tok = bytepair.Tokenizer(
        {i: bytes([i]) for i in range(256)}, [], special_tokens={"<|big|>": 70_000}
    )
    tok.save(tmp_path / "tok.json")
    (tmp_path / "in.txt").write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bytepair.cli",
            "encode",
            str(tmp_path / "in.txt"),
            "-t",
            str(tmp_path / "tok.json"),
            "-o",
            str(tmp_path / "ids.npy"),
            "--quiet",
            "--special",
            "allow",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    ids = np.load(tmp_path / "ids.npy")
    assert ids.dtype == np.uint32 and ids.tolist() == tok.encode(text, allowed_special="all")


def test_cli_encode_names_the_byte_offset_of_bad_utf8(tmp_path):
    _small_tokenizer().save(tmp_path / "tok.json")
    # A 3-byte character split by the 1 MiB read boundary, then a bad byte.
    good = b"a" * ((1 << 20) - 1) + "\u20ac".encode() + b"xy"
    (tmp_path / "in.txt").write_bytes(good + b"\xff tail")
    args = [
        sys.executable,
        "-m",
        "bytepair.cli",
        "encode",
        str(tmp_path / "in.txt"),
        "-t",
        str(tmp_path / "tok.json"),
        "-o",
        str(tmp_path / "ids.npy"),
        "--quiet",
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        f"bytepair encode: error: {tmp_path / 'in.txt'}: invalid UTF-8 at byte offset {len(good)} "
        "(use errors='replace' / --errors replace to replace bad bytes)"
    )
    assert not (tmp_path / "ids.npy").exists()
    proc = subprocess.run(
        args + ["--errors", "replace"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr


# ---- disk full and permission denied -------------------------------------------

_SAVE_UNDER_LIMIT = """
    import pickle, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
    tok = pickle.loads(bytes.fromhex({tok!r}))
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    try:
        tok.save({target!r})
    except OSError as e:
        print(e.errno, e.filename, sep="\\n")
"""


def _small_tokenizer() -> bytepair.Tokenizer:
    text = "The quick brown fox jumps over the lazy dog; the dog sleeps. " * 200
    return bytepair.train_from_iterator([text], 256 + 300, progress=False)


def test_disk_full_on_save_names_the_file_and_keeps_the_old_one(tmp_path):
    import pickle

    target = tmp_path / "tokenizer.json"
    target.write_bytes(OLD)
    code = _SAVE_UNDER_LIMIT.format(tok=pickle.dumps(_small_tokenizer()).hex(), target=str(target))
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == [str(errno.EFBIG), str(target)]
    assert target.read_bytes() == OLD
    _only(tmp_path, "tokenizer.json")


def test_cli_encode_on_a_full_disk_exits_1_with_one_line(tmp_path):
    _small_tokenizer().save(tmp_path / "tok.json")
    (tmp_path / "in.txt").write_text("lazy dogs sleep all day long. " * 20_000)
    (tmp_path / "ids.npy").write_bytes(OLD)
    code = f"""
        import resource, signal, sys
        from bytepair.cli import main
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        sys.exit(main(["encode", {str(tmp_path / "in.txt")!r}, "-t", {str(tmp_path / "tok.json")!r},
                       "-o", {str(tmp_path / "ids.npy")!r}, "--quiet"]))
    """
    result = _run(code)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "File too large" in lines[0], result.stderr
    assert (tmp_path / "ids.npy").read_bytes() == OLD
    _only(tmp_path, "tok.json", "in.txt", "ids.npy")


def _without_write_permission() -> list[str]:
    """A command prefix under which a 0o555 directory is really read-only."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip(
            "running as root and setpriv (util-linux) is missing: cannot drop CAP_DAC_OVERRIDE"
        )
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def test_permission_denied_names_the_file_and_keeps_the_old_one(tmp_path):
    import pickle

    target = tmp_path / "ro" / "tokenizer.json"
    target.parent.mkdir()
    target.write_bytes(OLD)
    target.parent.chmod(0o555)
    try:
        code = f"""
            import pickle, sys
            tok = pickle.loads(bytes.fromhex({pickle.dumps(_small_tokenizer()).hex()!r}))
            try:
                tok.save({str(target)!r})
            except PermissionError as e:
                print(e.filename)
                print(e)
            from bytepair.cli import main
            sys.exit(main(["train", {str(target)!r}, "--format", "text", "--vocab-size", "257",
                           "-o", {str(target)!r}, "--quiet"]))
        """
        result = _run(code, wrapper=_without_write_permission())
    finally:
        target.parent.chmod(0o755)
    out = result.stdout.splitlines()
    assert out[0] == str(target), result.stderr
    assert "Permission denied" in out[1]
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "Permission denied" in result.stderr, (
        result.stderr
    )
    assert target.read_bytes() == OLD
    _only(target.parent, "tokenizer.json")


# ---- panics -----------------------------------------------------------------------


def test_rust_panic_becomes_a_python_exception():
    with pytest.raises(BaseException, match="panic requested by a test") as caller:
        _core._panic_for_tests("caller")
    assert type(caller.value).__name__ == "PanicException"
    with pytest.raises(
        RuntimeError, match=r"internal error in bytepair \(Rust panic: panic requested by a test\)"
    ):
        _core._panic_for_tests("worker")
    # The interpreter and the core still work.
    tok = _small_tokenizer()
    assert tok.decode(tok.encode("the lazy dog")) == "the lazy dog"


# ---- sets of files: vocab.json + merges.txt, .tiktoken + sidecar, transformers folder ----
#
# A save of several files on a disk that filled up, or
# killed between its files, left a new file beside an old one, which no longer
# loaded. Each saver writes a set with `atomic.write_file_set`; the next load or
# save finishes (committed) or undoes (writer gone) an interrupted one.

_SAVERS = {
    "gpt2": (lambda tok, d: tok.save_gpt2(d), lambda d: d),
    "tiktoken": (
        lambda tok, d: tok.save_tiktoken(d / "tok.tiktoken"),
        lambda d: d / "tok.tiktoken",
    ),
    "pretrained": (lambda tok, d: tok.save_pretrained(d), lambda d: d),
}


def _old_and_new() -> tuple[bytepair.Tokenizer, bytepair.Tokenizer]:
    """Two tokenizers whose files differ (ids and sizes)."""
    old = bytepair.train_from_iterator(["hello old world " * 50], 268, progress=False)
    new = bytepair.train_from_iterator(
        ["The quick brown fox jumps over the lazy dog. " * 50],
        291,
        special_tokens=["<|endoftext|>"],
        progress=False,
    )
    return old, new


def _contents(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


_INTERRUPTED_SAVE = """
    import os, pickle, signal, sys
    from pathlib import Path
    from bytepair import atomic
    tok = pickle.loads(bytes.fromhex({tok!r}))
    target = Path({target!r})
    where, nth = {where!r}, {nth}
    calls = [0]

    def fail(real, *args):
        calls[0] += 1
        if calls[0] == nth:
            if {kill}:
                os.kill(os.getpid(), signal.SIGKILL)
            raise OSError(28, "No space left on device", str(args[-1]))
        return real(*args)

    if where == "write":  # the nth file of the set fails (disk full) or is killed
        real_write = atomic._write_new_file
        atomic._write_new_file = lambda *a: fail(real_write, *a)
    else:  # killed between renames: the nth rename of a temporary file over its target
        real_replace = os.replace
        def replace(src, dst):
            if not str(src).endswith(".tmp") or ".bytepair-set-" in str(dst):
                return real_replace(src, dst)
            return fail(real_replace, src, dst)
        atomic.os.replace = replace
    try:
        {save}
    except OSError as e:
        print("OSError", e.errno, e.filename)
"""


def _interrupt(tmp_path, saver: str, new, *, where: str, nth: int, kill: bool):
    import pickle

    save = {
        "gpt2": "tok.save_gpt2(target)",
        "tiktoken": "tok.save_tiktoken(target / 'tok.tiktoken')",
        "pretrained": "tok.save_pretrained(target)",
    }[saver]
    code = _INTERRUPTED_SAVE.format(
        tok=pickle.dumps(new).hex(),
        target=str(tmp_path),
        where=where,
        nth=nth,
        kill=kill,
        save=save,
    )
    return _run(code)


@pytest.mark.parametrize("saver", sorted(_SAVERS))
def test_a_file_set_on_a_full_disk_keeps_the_old_set(tmp_path, saver):
    """The disk fills at the first, second or third file: an OSError naming the
    file, the old set intact, no temporary file or journal left."""
    old, new = _old_and_new()
    save, path = _SAVERS[saver]
    save(old, tmp_path)
    before = _contents(tmp_path)
    for nth in range(1, len(before) + 1):
        result = _interrupt(tmp_path, saver, new, where="write", nth=nth, kill=False)
        assert result.returncode == 0, result.stderr
        _, errno_, filename = result.stdout.split()
        assert int(errno_) == errno.ENOSPC and Path(filename).name in before
        assert _contents(tmp_path) == before
        assert bytepair.Tokenizer.load(path(tmp_path)) == old


@pytest.mark.parametrize("saver", sorted(_SAVERS))
def test_a_file_set_killed_between_renames_is_finished_by_the_next_load(tmp_path, saver):
    """Killed after the first rename: the journal says the new set is whole, so
    the next load renames the rest into place and reads the new tokenizer,
    byte for byte the files an uninterrupted save writes."""
    old, new = _old_and_new()
    save, path = _SAVERS[saver]
    d = tmp_path / "set"
    d.mkdir()
    save(old, d)
    names = set(_contents(d))
    result = _interrupt(d, saver, new, where="rename", nth=2, kill=True)
    assert result.returncode == -signal.SIGKILL, result.stderr
    left = set(os.listdir(d)) - names
    assert any(n.startswith(".bytepair-set-") for n in left), "the journal is there"
    assert any(n.endswith(".tmp") for n in left), "a file not yet renamed"
    assert bytepair.Tokenizer.load(path(d)) == new
    _only(d, *names)
    (tmp_path / "fresh").mkdir()
    save(new, tmp_path / "fresh")
    assert _contents(d) == _contents(tmp_path / "fresh")


@pytest.mark.parametrize("saver", sorted(_SAVERS))
def test_a_file_set_killed_before_its_commit_is_rolled_back(tmp_path, saver):
    """Killed while writing the second file: the writer is gone, so the next
    save (or load) removes what it left; the old set was never touched."""
    old, new = _old_and_new()
    save, path = _SAVERS[saver]
    save(old, tmp_path)
    before = _contents(tmp_path)
    result = _interrupt(tmp_path, saver, new, where="write", nth=2, kill=True)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert set(os.listdir(tmp_path)) > set(before), "a journal and a temporary file are left"
    assert bytepair.Tokenizer.load(path(tmp_path)) == old
    assert _contents(tmp_path) == before
    save(new, tmp_path)
    assert bytepair.Tokenizer.load(path(tmp_path)) == new
    _only(tmp_path, *before)


def test_a_set_of_a_live_writer_is_left_alone(tmp_path):
    """A journal in state "writing" of a live process (here: this one) is not
    rolled back by a load: that writer may still be writing."""
    atomic._write_journal(str(tmp_path / ".bytepair-set-abc.json"), "writing", [(".a.tmp", "a")])
    (tmp_path / ".a.tmp").write_bytes(b"partial")
    atomic.recover_file_sets(tmp_path)
    _only(tmp_path, ".bytepair-set-abc.json", ".a.tmp")


def test_a_real_full_disk_mid_set_keeps_the_old_pair(tmp_path):
    """RLIMIT_FSIZE (write() fails with EFBIG): the rank file fits, the sidecar
    (thousands of special tokens) does not."""
    old, _ = _old_and_new()
    old.save_tiktoken(tmp_path / "tok.tiktoken")
    before = _contents(tmp_path)
    code = f"""
        import bytepair, resource, signal
        tok = bytepair.train_from_iterator(
            ["hello new world " * 50], 3300, reserve_special_tokens=3000, progress=False
        )
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
        try:
            tok.save_tiktoken({str(tmp_path / "tok.tiktoken")!r})
        except OSError as e:
            print(e.errno, e.filename)
    """
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(errno.EFBIG), str(tmp_path / "tok.tiktoken.json")]
    assert _contents(tmp_path) == before
