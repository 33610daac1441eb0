"""Interrupts, concurrent use and worker processes.

- Ctrl-C during a long `train` stops it within about a second with
  KeyboardInterrupt (the Rust core polls signals every 100 ms); the CLI exits
  130 with a one-line message and leaves no output or temporary file behind.
- One Tokenizer shared by many Python threads gives the same ids as one thread.
- A Tokenizer pickles into multiprocessing workers (spawn and fork).
"""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import CORPORA, RESTORE_SIGINT

import bytepair

ENWIKI = CORPORA / "enwiki.txt"
needs_enwiki = pytest.mark.skipif(not ENWIKI.exists(), reason=f"{ENWIKI} not found (no corpora)")


def _start(args: list[str]) -> subprocess.Popen:
    """`args` as a child that `_interrupt_after` can interrupt."""
    return subprocess.Popen(
        [*RESTORE_SIGINT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _interrupt_after(proc: subprocess.Popen, seconds: float) -> float:
    """Send SIGINT after `seconds`; return how long the process took to exit after it."""
    time.sleep(seconds)
    assert proc.poll() is None, (
        "the job finished before it could be interrupted; use a bigger input"
    )
    proc.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    proc.wait(timeout=30)
    return time.perf_counter() - sent


@pytest.mark.slow
@needs_enwiki
def test_ctrl_c_stops_training_with_keyboard_interrupt():
    # 1.3 GB: counting runs ~470 MB/s on 2 cores, so 4 copies (264 MB) could
    # finish before the Ctrl-C at 1 s (half the runs did).
    code = (
        "import bytepair, sys\n"
        "print('ready', flush=True)\n"
        f"bytepair.train([{str(ENWIKI)!r}] * 20, 60000, progress=False)\n"
    )
    proc = _start([sys.executable, "-c", code])
    assert proc.stdout.readline().strip() == "ready"
    took = _interrupt_after(proc, 1.0)
    err = proc.stderr.read()
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert took < 2.0, f"stopped {took:.2f} s after Ctrl-C"


@pytest.mark.slow
@needs_enwiki
def test_ctrl_c_in_cli_exits_130_and_writes_nothing(tmp_path):
    out = tmp_path / "tok.json"
    # A regex that is not a preset runs on the regex engine, many times slower than
    # the preset scanners (which count these 200 MB in about a second).
    proc = _start(
        [
            sys.executable,
            "-m",
            "bytepair.cli",
            "train",
            str(ENWIKI),
            str(ENWIKI),
            str(ENWIKI),
            "--vocab-size",
            "60000",
            "-q",
            "-o",
            str(out),
            "--pattern",
            r" ?\p{L}+(?!\S)| ?\S+|\s+",
        ]
    )
    took = _interrupt_after(proc, 1.5)
    err = proc.stderr.read()
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "bytepair: interrupted"
    assert took < 2.0, f"stopped {took:.2f} s after Ctrl-C"
    assert list(tmp_path.iterdir()) == [], "an interrupted run must leave no file behind"


_ENCODE_CALLS = {
    # 1.1-1.5 s of work each on 2 idle cores (encode_batch on one thread to last as long);
    # text and tokenizer are ready before "ready", the Ctrl-C comes 0.4 s after it.
    "encode": "tok.encode(text)",
    "encode_ordinary": "tok.encode_ordinary(text)",
    "encode_batch": "tok.encode_batch([text[i:i + 200_000] for i in range(0, len(text), 200_000)],"
    " num_threads=1)",
}


@pytest.mark.slow
@needs_enwiki
@pytest.mark.parametrize("call", sorted(_ENCODE_CALLS))
def test_ctrl_c_stops_a_long_encode(call):
    """One encode call on 200 MB runs in ~1 MiB segments (cut where the ids
    cannot change) with a Ctrl-C check between them; encode_batch polls while
    its workers run."""
    code = (
        "import bytepair, sys\n"
        f"tok = bytepair.train({str(ENWIKI)!r}, 1000, progress=False)\n"
        f"text = open({str(ENWIKI)!r}, encoding='utf-8').read() * 3\n"
        "print('ready', flush=True)\n"
        f"{_ENCODE_CALLS[call]}\n"
        "print('finished', flush=True)\n"
    )
    proc = _start([sys.executable, "-c", code])
    assert proc.stdout.readline().strip() == "ready"
    took = _interrupt_after(proc, 0.4)
    err = proc.stderr.read()
    assert "finished" not in proc.stdout.read(), "the call ended before the Ctrl-C"
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert took < 2.0, f"stopped {took:.2f} s after Ctrl-C"


def test_segmented_encode_equals_whole_text_encode(small_tokenizer):
    """A text over the 1 MiB segment size: the same ids as encoding its halves at
    a safe cut, and a disallowed special token far in names its true offset."""
    line = "The cat met 3 dogs, it's fine!\n"
    text = line * 80_000  # 2.5 MB
    ids = small_tokenizer.encode(text)
    assert ids == small_tokenizer.encode(line) * 80_000
    with pytest.raises(ValueError, match=f"at character offset {len(text)}"):
        small_tokenizer.encode(text + "<|endoftext|>")


@pytest.fixture(scope="module")
def small_tokenizer() -> bytepair.Tokenizer:
    texts = [f"The {i}th story: a cat met {i % 7} dogs, it's fine!\n" for i in range(3000)]
    return bytepair.train_from_iterator(
        texts, 600, special_tokens=["<|endoftext|>"], progress=False
    )


def _texts() -> list[str]:
    return [
        f"doc {i}: {'héllo wörld ' * (i % 13)}{'x' * (i % 300)}<|endoftext|>\n\t end {i}"
        for i in range(200)
    ]


def test_many_threads_share_one_tokenizer(small_tokenizer):
    tok = small_tokenizer
    texts = _texts()
    want = [tok.encode(t, allowed_special="all") for t in texts]
    failures: list[str] = []

    def work(seed: int) -> None:
        for round_ in range(5):
            k = (seed + round_) % len(texts)
            if tok.encode(texts[k], allowed_special="all") != want[k]:
                failures.append(f"encode {k}")
            if (
                tok.encode_batch(texts[k : k + 20], num_threads=2, allowed_special="all")
                != want[k : k + 20]
            ):
                failures.append(f"encode_batch {k}")
            if tok.decode(want[k]) != texts[k]:
                failures.append(f"decode {k}")

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert failures == []


def _encode_in_worker(args: tuple[bytepair.Tokenizer, str]) -> list[int]:
    tok, text = args
    return tok.encode(text, allowed_special="all")


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_tokenizer_works_in_worker_processes(small_tokenizer, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"start method {method} not available on this platform")
    texts = _texts()[:8]
    want = [small_tokenizer.encode(t, allowed_special="all") for t in texts]
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        got = pool.map(_encode_in_worker, [(small_tokenizer, t) for t in texts])
    assert got == want


def _parallel_work(path: str) -> None:
    """Everything that runs on bytepair's thread pools: loading a .tiktoken
    (merges recovered in parallel), a batch encode and training."""
    tok = bytepair.Tokenizer.load(path)
    texts = _texts()
    assert tok.encode_batch(texts, allowed_special="all") == [
        tok.encode(t, allowed_special="all") for t in texts
    ]
    bytepair.train_from_iterator(texts * 20, 300, progress=False)


def test_parallel_work_in_a_fork_started_child_after_the_parent_used_threads(
    small_tokenizer, tmp_path
):
    """A child made with fork (multiprocessing's default on Linux, PyTorch's
    DataLoader workers) has none of the parent's pool threads; a job sent to
    an inherited pool waited forever (loading a .tiktoken and encode_batch
    both hung) until pools were tagged with the process id."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("start method fork not available on this platform")
    path = str(tmp_path / "small.tiktoken")
    small_tokenizer.save_tiktoken(path)
    _parallel_work(path)
    child = multiprocessing.get_context("fork").Process(target=_parallel_work, args=(path,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("parallel work hung in a fork-started child")
    assert child.exitcode == 0


def test_tokenizer_of_one_repeated_character_builds_and_encodes():
    """Training on 1 MB of one letter counts it as words of at most 64 KiB
    (the word-length bound of counting), so no token is longer; building the
    encoder must not try every split of them (that took minutes: quadratic),
    and the 1 MB pre-token still encodes and decodes exactly."""
    code = (
        "import bytepair, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "text = 'a' * 1_000_000\n"
        "tok = bytepair.train_from_iterator([text], 300, progress=False)\n"
        "ids = tok.encode(text)\n"
        "assert max(len(t) for t in tok.vocab.values()) == 65536\n"
        "assert len(ids) < 40 and tok.decode(ids) == text\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "ok", result.stderr[-2000:]
