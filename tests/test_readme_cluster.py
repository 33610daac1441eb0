"""The README's "Beyond one machine" shell block runs as written (Ray and Spark
on this machine), gives the tokenizer that training on the files gives, and the
token dataset that encoding each document gives."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import engine_available

import bytepair

README = Path(__file__).parents[1] / "README.md"


def readme_commands() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Beyond one machine") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [
        line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.mark.slow
def test_readme_block_runs_as_written(tmp_path, corpus_text):
    engine_available("ray")
    engine_available("pyspark")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, at in enumerate((0.0, 0.3, 0.6)):
        (corpus / f"part{i}.txt").write_text(
            corpus_text("enwiki.txt", 400_000, at) + "<|endoftext|>"
        )
    (corpus / "code.txt").write_text(corpus_text("code.txt", 300_000))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    commands = readme_commands()
    assert any("--engine ray" in c for c in commands) and any(
        "--engine spark" in c for c in commands
    )
    for command in commands:
        r = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert r.returncode == 0, f"{command}\n{r.stdout}\n{r.stderr}"
    ray_counts = bytepair.WordCounts.open(tmp_path / "counts")
    spark_counts = bytepair.WordCounts.open(tmp_path / "counts-spark")
    assert dict(ray_counts.items()) == dict(spark_counts.items())
    files = sorted(str(p) for p in corpus.iterdir())
    with warnings.catch_warnings():  # the small corpus runs out of pairs before 32000: expected
        warnings.simplefilter("ignore")
        direct = bytepair.train(files, 32000, special_tokens=["<|endoftext|>"], progress=False)
    from_counts = bytepair.Tokenizer.load(tmp_path / "tokenizer.json")
    assert from_counts.merges == direct.merges
    assert from_counts.special_tokens == direct.special_tokens
    assert any(shlex.split(c)[:3] == ["bytepair", "train", "--from-counts"] for c in commands)
    # the dataset encoded on Ray: each document (text between separators) on its own, EOT after it
    assert any(shlex.split(c)[:2] == ["bytepair", "encode"] and "--engine" in c for c in commands)
    ds = bytepair.TokenShards.open(tmp_path / "tokens")
    eot = from_counts.special_tokens["<|endoftext|>"]
    documents = [d for f in files for d in Path(f).read_text().split("<|endoftext|>") if d]
    assert len(ds) == len(documents)
    assert ds.tokens.tolist() == [
        i for d in documents for i in from_counts.encode_ordinary(d) + [eot]
    ]
