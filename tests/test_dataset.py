"""Token datasets (`bytepair.encode_dataset`, `TokenShards`, `bytepair encode
INPUT... -o OUT_DIR`, `bytepair shards inspect`): the shards of a folder of
mixed inputs (text, compressed, JSON Lines, Parquet) hold exactly each document
encoded on its own plus the end-of-document token, for any thread count; a
killed run resumes to the same manifest; `verify` finds corrupt shards; the
Megatron-LM layout reads back with a reader written from its published layout;
CLI errors speak in flags. The Ray engine's tests are in test_dataset_ray.py."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import EOT

import bytepair
from bytepair.dataset import shards as shards_module

TOKENIZER = "cl100k_base"  # ids above 65535: uint32 shards; the byte tokenizer below gives uint16


def _texts(corpus_text) -> dict[str, list[str]]:
    """Documents from the corpora: stories, code files, multilingual sections."""
    stories = [
        s for s in corpus_text("tinystories_v1_valid_head.txt", 120_000).split("\n\n") if s.strip()
    ]
    code = corpus_text("code.txt", 60_000, at=0.4).split("\n\n")
    multi = [s for s in corpus_text("multilingual.txt", 80_000, at=0.5).split("\n\n") if s]
    shakespeare = corpus_text("shakespeare.txt", 40_000)
    return {"stories": stories, "code": code, "multi": multi, "shakespeare": [shakespeare]}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, corpus_text) -> tuple[Path, list[str]]:
    """A folder of every input kind, and its documents in the order a dataset
    holds them (files sorted by path, records in file order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = _texts(corpus_text)
    d = tmp_path_factory.mktemp("mixed")
    (d / "sub").mkdir()
    files: dict[str, list[str]] = {}
    (d / "a_whole.txt").write_text(t["shakespeare"][0], encoding="utf-8")  # one document
    files["a_whole.txt"] = t["shakespeare"]
    with gzip.open(d / "b_records.jsonl.gz", "wt", encoding="utf-8") as f:
        for s in t["stories"][:150]:
            f.write(json.dumps({"id": 1, "text": s}) + "\n")
    files["b_records.jsonl.gz"] = t["stories"][:150]
    pq.write_table(pa.table({"text": t["code"]}), d / "c_rows.parquet", row_group_size=7)
    files["c_rows.parquet"] = t["code"]
    with lzma.open(d / "sub" / "d_split.txt.xz", "wt", encoding="utf-8") as f:
        f.write(EOT + EOT.join(t["multi"]) + EOT)  # separators at both ends: no empty documents
    files["sub/d_split.txt.xz"] = t["multi"]
    (d / "sub" / "e_split.txt.bz2").write_bytes(bz2.compress(EOT.join(t["stories"][150:]).encode()))
    files["sub/e_split.txt.bz2"] = t["stories"][150:]
    with pa.CompressedOutputStream(str(d / "sub" / "f_records.ndjson.zst"), "zstd") as f:
        f.write("".join(json.dumps({"text": s}) + "\n" for s in t["code"][:20]).encode())
    files["sub/f_records.ndjson.zst"] = t["code"][:20]
    (d / "sub" / "g_empty.jsonl").write_text("")
    return d, [doc for name in sorted(files, key=lambda n: str(d / n)) for doc in files[name]]


@pytest.fixture(scope="module")
def tok():
    return bytepair.get_encoding(TOKENIZER)


def expected_ids(tok, documents: list[str], eot: int | None) -> np.ndarray:
    """Each document encoded on its own (special-token strings as text), EOT after it."""
    tail = [] if eot is None else [eot]
    return np.array(
        [i for doc in documents for i in tok.encode_ordinary(doc) + tail], dtype=np.int64
    )


def encode(inputs, out, tok, **kwargs) -> bytepair.TokenShards:
    kwargs = {
        "separator": EOT,
        "shard_size": 20_000,
        "task_bytes": 64 << 10,
        "progress": False,
        **kwargs,
    }
    return bytepair.encode_dataset(inputs, out, tok, **kwargs)


@pytest.mark.parametrize("threads", [1, 2])
def test_shards_equal_each_document_encoded_on_its_own(mixed, tok, tmp_path, threads):
    folder, documents = mixed
    ds = encode(folder, tmp_path / "ds", tok, num_threads=threads)
    m = ds.manifest
    assert len(ds) == len(documents) == m["documents"]
    assert m["dtype"] == "uint32" and m["eot"] == tok.eot_token
    expected = expected_ids(tok, documents, tok.eot_token)
    assert np.array_equal(ds.tokens.astype(np.int64), expected)
    assert m["tokens"] == len(expected) == sum(s["tokens"] for s in m["shards"])
    for i in (0, 1, len(documents) // 2, len(documents) - 1, -1):
        assert ds[i].tolist() == tok.encode_ordinary(documents[i]) + [tok.eot_token]
    # several tasks and several shards per task: the test covers their seams
    tasks = {s["name"].split("-")[1] for s in m["shards"]}
    assert len(tasks) >= 3 and len(m["shards"]) > len(tasks)
    for s in m["shards"][:-1]:
        ids = np.memmap(ds.path + "/" + s["name"] + ".bin", dtype="<u4", mode="r")
        offsets = np.load(ds.path + "/" + s["index"])
        assert len(ids) == s["tokens"] == offsets[-1] and len(offsets) == s["documents"] + 1


def test_same_shards_for_one_and_two_threads(mixed, tok, tmp_path):
    folder, _ = mixed
    one = encode(folder, tmp_path / "one", tok, num_threads=1).manifest
    two = encode(folder, tmp_path / "two", tok, num_threads=2).manifest
    assert one == two


def test_same_shards_for_any_batch_size(mixed, tok, tmp_path, monkeypatch):
    """Separated text is read in batches of a size set per thread: documents
    straddling batches, and shards closing inside a batch, change no byte."""
    from bytepair.dataset import protocol

    folder, _ = mixed
    whole = encode(folder, tmp_path / "whole", tok, num_threads=1).manifest
    monkeypatch.setattr(protocol, "SEPARATED_BATCH_BYTES_PER_THREAD", 997)
    small = encode(folder, tmp_path / "small", tok, num_threads=1).manifest
    assert small == whole


def test_uint16_when_the_vocabulary_fits_and_no_eot(tmp_path, corpus_text):
    from conftest import byte_tokenizer

    text = corpus_text("shakespeare.txt", 5000)
    (tmp_path / "a.txt").write_text(text)
    tok = byte_tokenizer(special_tokens=[EOT])
    ds = bytepair.encode_dataset(tmp_path / "a.txt", tmp_path / "ds", tok, eot=None, progress=False)
    assert ds.manifest["dtype"] == "uint16" and ds.manifest["eot"] is None
    raw = np.fromfile(tmp_path / "ds" / "shard-00000-00000.bin", dtype="<u2")
    assert raw.tolist() == list(text.encode())


def test_rerun_of_a_finished_dataset_does_nothing_and_other_settings_are_refused(
    mixed, tok, tmp_path
):
    folder, _ = mixed
    first = encode(folder, tmp_path / "ds", tok)
    stamp = os.stat(tmp_path / "ds" / "_manifest.json").st_mtime_ns
    assert encode(folder, tmp_path / "ds", tok).manifest == first.manifest
    assert os.stat(tmp_path / "ds" / "_manifest.json").st_mtime_ns == stamp
    with pytest.raises(FileExistsError, match="another dataset"):
        encode(folder, tmp_path / "ds", tok, shard_size=999)


_KILL_AFTER_SECOND_TASK = """
import os, signal, sys
import bytepair
from bytepair.dataset import shards
real = shards.encode_task
def dying(task, *args, **kwargs):
    record = real(task, *args, **kwargs)
    if task == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return record
shards.encode_task = dying
bytepair.encode_dataset(sys.argv[1], sys.argv[2], bytepair.get_encoding(sys.argv[3]),
                        separator="<|endoftext|>", shard_size=20_000, task_bytes=64 << 10,
                        progress=False)
"""


def test_resume_after_a_killed_run_gives_the_same_manifest(mixed, tok, tmp_path):
    folder, _ = mixed
    out = tmp_path / "ds"
    killed = subprocess.run(
        [sys.executable, "-c", _KILL_AFTER_SECOND_TASK, str(folder), str(out), TOKENIZER],
        capture_output=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr.decode()
    assert not (out / "_manifest.json").exists()
    with pytest.raises(FileNotFoundError, match="resume"):
        bytepair.TokenShards.open(out)
    kept = {p.name: p.stat().st_ino for p in out.glob("shard-0000[01]-*")}
    assert kept
    resumed = encode(folder, out, tok)
    clean = encode(folder, tmp_path / "clean", tok)
    assert resumed.manifest == clean.manifest
    assert {n: (out / n).stat().st_ino for n in kept} == kept, "finished tasks were encoded again"
    assert not (out / "_progress").exists()


def test_a_corrupt_task_is_redone_on_resume(mixed, tok, tmp_path, monkeypatch):
    folder, _ = mixed
    out = tmp_path / "ds"
    real = shards_module.encode_task

    def failing(task, *args, **kwargs):
        if task == 2:
            raise KeyboardInterrupt
        return real(task, *args, **kwargs)

    monkeypatch.setattr(shards_module, "encode_task", failing)
    with pytest.raises(KeyboardInterrupt):
        encode(folder, out, tok)
    monkeypatch.setattr(shards_module, "encode_task", real)
    damaged = out / "shard-00001-00000.bin"
    damaged.write_bytes(b"\0" + damaged.read_bytes()[1:])
    inode = (out / "shard-00000-00000.bin").stat().st_ino
    assert encode(folder, out, tok).manifest == encode(folder, tmp_path / "clean", tok).manifest
    assert (out / "shard-00000-00000.bin").stat().st_ino == inode
    bytepair.TokenShards.open(out).verify()


def test_verify_finds_corrupt_shards(mixed, tok, tmp_path):
    folder, _ = mixed
    ds = encode(folder, tmp_path / "ds", tok)
    ds.verify()
    shard = tmp_path / "ds" / ds.manifest["shards"][1]["name"]
    data = bytearray(Path(f"{shard}.bin").read_bytes())
    data[len(data) // 2] ^= 1
    Path(f"{shard}.bin").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"{shard.name}.bin: SHA-256 does not match"):
        ds.verify()
    Path(f"{shard}.bin").write_bytes(bytes(data[:-4]))  # truncated
    with pytest.raises(ValueError, match="SHA-256 does not match"):
        bytepair.TokenShards.open(tmp_path / "ds").verify()


def read_megatron(prefix: Path) -> list[np.ndarray]:
    """Documents of a Megatron-LM MMapIndexedDataset, read from the published
    layout (megatron/core/datasets/indexed_dataset.py): b"MMIDIDX\\x00\\x00",
    <Q version 1, <B dtype code (4 int32, 8 uint16), <Q sequence count, <Q
    document count, int32 lengths, int64 byte pointers, int64 document indices."""
    idx = (prefix.parent / (prefix.name + ".idx")).read_bytes()
    assert idx[:9] == b"MMIDIDX\x00\x00"
    version, code, sequences, documents = struct.unpack_from("<QBQQ", idx, 9)
    assert version == 1
    dtype = {4: np.int32, 8: np.uint16}[code]
    at = 9 + 8 + 1 + 8 + 8
    lengths = np.frombuffer(idx, np.int32, sequences, at)
    pointers = np.frombuffer(idx, np.int64, sequences, at + 4 * sequences)
    doc_index = np.frombuffer(idx, np.int64, documents, at + 12 * sequences)
    assert len(idx) == at + 12 * sequences + 8 * documents
    assert doc_index.tolist() == list(range(sequences + 1))
    data = np.memmap(prefix.parent / (prefix.name + ".bin"), dtype=dtype, mode="r")
    return [
        np.asarray(data[p // dtype().itemsize : p // dtype().itemsize + n])
        for p, n in zip(pointers, lengths)
    ]


def test_megatron_layout_reads_back_the_same_documents(mixed, tok, tmp_path):
    folder, documents = mixed
    ds = encode(folder, tmp_path / "ds", tok, layout="megatron")
    assert ds.manifest["dtype"] == "int32" and ds.manifest["layout"] == "megatron"
    read = [
        doc for s in ds.manifest["shards"] for doc in read_megatron(tmp_path / "ds" / s["name"])
    ]
    assert len(read) == len(documents)
    for doc, ids in zip(documents, read):
        assert ids.tolist() == tok.encode_ordinary(doc) + [tok.eot_token]
    assert ds[3].tolist() == read[3].tolist()
    ds.verify()


def test_megatron_uint16(tmp_path):
    from conftest import byte_tokenizer

    (tmp_path / "a.txt").write_text("ab<|endoftext|>cde<|endoftext|>")
    ds = bytepair.encode_dataset(
        tmp_path / "a.txt",
        tmp_path / "ds",
        byte_tokenizer(special_tokens=[EOT]),
        separator=EOT,
        layout="megatron",
        progress=False,
    )
    assert [d.tolist() for d in read_megatron(tmp_path / "ds" / "shard-00000-00000")] == [
        [97, 98, 256],
        [99, 100, 101, 256],
    ]
    assert ds.manifest["dtype"] == "uint16" and ds[1].tolist() == [99, 100, 101, 256]


def test_bad_utf8_names_the_file_and_record(tmp_path, tok):
    (tmp_path / "a.txt").write_bytes(b"fine" + EOT.encode() + b"bad \xff here")
    with pytest.raises(ValueError, match=r"a.txt: record 1: invalid UTF-8 at byte offset 4"):
        bytepair.encode_dataset(
            tmp_path / "a.txt", tmp_path / "ds", tok, separator=EOT, progress=False
        )
    ds = bytepair.encode_dataset(
        tmp_path / "a.txt", tmp_path / "ds2", tok, separator=EOT, errors="replace", progress=False
    )
    assert ds[1].tolist() == tok.encode_ordinary("bad \ufffd here") + [tok.eot_token]


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "bytepair", *args], capture_output=True, text=True, timeout=300
    )
    assert not check or done.returncode == 0, done.stderr
    return done


def test_cli_writes_a_dataset_and_inspects_it(mixed, tmp_path):
    folder, documents = mixed
    run_cli(
        "encode",
        str(folder),
        "-t",
        TOKENIZER,
        "-o",
        str(tmp_path / "ds"),
        "--separator",
        EOT,
        "--shard-size",
        "20K",
        "--threads",
        "2",
    )
    ds = bytepair.TokenShards.open(tmp_path / "ds")
    assert len(ds) == len(documents) and ds.manifest["shard_size"] == 20 << 10
    shown = run_cli("shards", "inspect", str(tmp_path / "ds"), "--verify").stdout
    assert f"documents       {len(documents):,}" in shown and "all shards match" in shown


def test_cli_one_file_still_writes_npy(tmp_path):
    (tmp_path / "a.txt").write_text("hello world")
    run_cli(
        "encode", str(tmp_path / "a.txt"), "-t", TOKENIZER, "-o", str(tmp_path / "ids.npy"), "-q"
    )
    assert np.load(tmp_path / "ids.npy").tolist() == [15339, 1917]


def test_cli_one_file_writes_numpys_npy_header_without_importing_numpy(tmp_path):
    """`bytepair encode FILE -o ids.npy` writes the ids after a header it makes
    itself (importing NumPy was 40-70 ms of its start-up): byte for byte
    NumPy's header, for any count and both id sizes."""
    import io

    from bytepair.cli.encode_file import _npy_header

    for itemsize in (2, 4):
        for count in (0, 1, 9, 10, 123_456_789, 10**20):
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, {"descr": f"<u{itemsize}", "fortran_order": False, "shape": (count,)}
            )
            assert _npy_header(itemsize, count) == header.getvalue()
    (tmp_path / "a.txt").write_text("hello world")
    script = (
        "import sys; from bytepair.cli.main import main; "
        f"status = main(['encode', {str(tmp_path / 'a.txt')!r}, '-t', {TOKENIZER!r}, '-o', "
        f"{str(tmp_path / 'ids.npy')!r}, '-q']); print(status, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.stdout.strip() == "0 False", out.stderr
    assert np.load(tmp_path / "ids.npy").tolist() == [15339, 1917]


@pytest.mark.parametrize(
    "flags,message",
    [
        (["-o", "{tmp}/ids.npy", "--shard-size", "10"], "-o {tmp}/ids.npy: a dataset is a folder"),
        (["-o", "-", "--shard-size", "10"], "give -o OUT_DIR, not -o -"),
        (["-o", "{tmp}/ds", "--eot", "<|nope|>"], "eot '<|nope|>' is not a special token"),
        (["-o", "{tmp}/ds", "--eot", EOT, "--no-eot"], "give --eot TOKEN or --no-eot, not both"),
        (
            ["-o", "{tmp}/ds", "--input-format", "jsonl", "--separator", "x"],
            "--separator is for text files",
        ),
        (
            ["-o", "{tmp}/ds", "--special", "allow", "--shard-size", "9"],
            "--special allow: a dataset encodes",
        ),
        (["-o", "{tmp}", "--shard-size", "9"], "not empty and not a dataset"),
        (["-o", "{tmp}/ds", "--ray-address", "auto"], "--ray-address is for --engine ray"),
    ],
)
def test_cli_errors_in_cli_words(tmp_path, flags, message):
    (tmp_path / "a.txt").write_text("hello")
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    done = run_cli(
        "encode",
        str(tmp_path / "a.txt"),
        str(tmp_path / "a.txt"),
        "-t",
        TOKENIZER,
        *flags,
        check=False,
    )
    assert done.returncode == 1 and done.stderr.startswith("bytepair encode: error: ")
    assert message.replace("{tmp}", str(tmp_path)) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_cli_glob_that_matches_nothing(tmp_path):
    done = run_cli(
        "encode",
        str(tmp_path / "*.jsonl"),
        "-t",
        TOKENIZER,
        "-o",
        str(tmp_path / "ds"),
        check=False,
    )
    assert done.returncode == 1 and "no file matches this pattern" in done.stderr


def test_inputs_glob_and_a_dataset_inside_the_input_folder_is_not_read(mixed, tok, tmp_path):
    folder, _ = mixed
    assert (
        encode(str(folder / "sub" / "*.txt.*"), tmp_path / "ds", tok).manifest["input"]["files"]
        == 2
    )
    inner = encode(folder / "sub", folder / "sub" / "tokens", tok)
    try:
        again = encode(folder / "sub", tmp_path / "again", tok)
        assert again.manifest["input"]["files"] == inner.manifest["input"]["files"] == 4
    finally:
        import shutil

        shutil.rmtree(folder / "sub" / "tokens")


def test_a_long_document_is_cut_into_segments_with_the_same_ids(tmp_path, tok, corpus_text):
    """A document over 1 MiB is encoded in parallel segments cut at safe cuts
    (one big file uses every thread): the ids are those of the whole."""
    text = corpus_text("enwiki.txt", 3 << 20, at=0.3)
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    ds = bytepair.encode_dataset(
        tmp_path / "big.txt", tmp_path / "ds", tok, num_threads=2, progress=False
    )
    assert len(ds) == 1
    assert np.array_equal(ds[0], np.array(tok.encode_ordinary(text) + [tok.eot_token]))


@pytest.mark.parametrize("batch_bytes", [1, 3, 7, 64, 1 << 20])
@pytest.mark.parametrize("readinto", [True, False])
def test_separated_documents_across_batches_equal_a_plain_split(tok, batch_bytes, readinto):
    """A text file cut at a separator in batches of any size (the core finds
    the documents of each; a document straddling batches is held for the
    next, a separator may straddle them too): the documents are Python's
    ``bytes.split`` of the whole, empty pieces dropped, with or without the
    file's ``readinto`` and however short its reads."""
    from bytepair import _core

    class ShortReads(io.RawIOBase):
        """Reads at most 5 bytes per call; no ``readinto`` unless asked for."""

        def __init__(self, data):
            self.data, self.at = data, 0

        def readable(self):
            return True

        def read(self, n=-1):
            block = self.data[self.at : self.at + min(n, 5)]
            self.at += len(block)
            return block

        def readinto(self, buffer):
            block = self.read(len(buffer))
            buffer[: len(block)] = block
            return len(block)

        def __getattribute__(self, name):
            if name == "readinto" and not readinto:
                raise AttributeError(name)
            return super().__getattribute__(name)

    rng = np.random.default_rng(batch_bytes)
    words = [b"", b"a", b"bb", b"<|", b"|>", b"\xc3\xa9t\xc3\xa9", b" x\n"]
    content = b"".join(
        words[i] if i < len(words) else b"<|sep|>" for i in rng.integers(0, 10, 2000)
    )
    content = b"<|sep|>" + content + b"<|sep|><|sep|>" + b"y" * 3 * min(batch_bytes, 1000)
    reader = _core.SeparatedReader(ShortReads(content), b"<|sep|>", batch_bytes)
    got, total = [], 0
    while (batch := reader.next_batch()) is not None:
        assert batch.first == len(got) and len(batch) > 0
        ids, lengths = tok._core.encode_documents(
            batch, None, "mem.txt", batch.first, [], [], None, 4, False, 1
        )
        ids, ends = np.frombuffer(ids, "<u4").tolist(), np.cumsum(np.frombuffer(lengths, "<i8"))
        got += [tok.decode_bytes(ids[a:b]) for a, b in zip([0, *ends[:-1]], ends)]
        total += batch.document_bytes
    want = [d for d in content.split(b"<|sep|>") if d]
    assert got == want
    assert total == sum(map(len, want))
    assert reader.next_batch() is None


def test_tokenizer_sha256_hashes_the_pattern_specials_and_every_token_in_id_order(tok):
    """The digest a dataset's manifest pins (its definition, in Python):
    the JSON of [regex, sorted special tokens], then each (id, length) as two
    little-endian u64 and the token's bytes, in id order (the core packs them)."""
    import hashlib
    import json

    vocab = {i: bytes([i]) for i in range(256)} | {300: b"ab"}
    small = bytepair.Tokenizer(vocab, [(b"a", b"b")], ["<|x|>"])
    for t in (tok, small):
        digest = hashlib.sha256()
        digest.update(json.dumps([t.pattern_regex, sorted(t.special_tokens.items())]).encode())
        for i in sorted(t.vocab):
            digest.update(struct.pack("<QQ", i, len(t.vocab[i])) + t.vocab[i])
        assert shards_module.tokenizer_sha256(t) == digest.hexdigest()
    with pytest.raises(TypeError):
        bytepair._core.packed_vocab({1: "not bytes"})
