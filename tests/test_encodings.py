"""OpenAI's encodings by name, offline: `bytepair.get_encoding`
finds the rank file in $BYTEPAIR_ENCODINGS, tiktoken's cache or an installed
package, and gives tiktoken's ids, pattern and special tokens."""

from __future__ import annotations

import base64
import gzip
import hashlib
import shutil
import sys
from pathlib import Path
from unittest import mock

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _gpt2 import EOT, gpt2_tokenizer, tiktoken_gpt2  # noqa: E402

import bytepair  # noqa: E402
from bytepair.cli import main  # noqa: E402

TEXT = "Hello world, naïve café 日本語 <|endoftext|> it's 12345 <|endofprompt|>\n\n  x"
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No BYTEPAIR_ENCODINGS, and tiktoken's cache an empty folder."""
    monkeypatch.delenv("BYTEPAIR_ENCODINGS", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    (tmp_path / "cache").mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def installed_rank_file(name: str) -> Path:
    bpe_openai = pytest.importorskip(
        "bpe_openai", reason="bpe-openai (ships OpenAI's rank files) not installed"
    )
    return Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"


def tiktoken_offline(name: str, rank_file: Path):
    """tiktoken's own Encoding for `name` (pattern and special tokens from
    tiktoken_ext), with the ranks read from `rank_file` instead of downloaded."""
    import tiktoken
    import tiktoken_ext.openai_public as op

    data = rank_file.read_bytes()
    data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    ranks = {
        base64.b64decode(t): int(r) for t, r in (line.split() for line in data.splitlines() if line)
    }
    with mock.patch.object(op, "load_tiktoken_bpe", lambda *a, **k: ranks):
        return tiktoken.Encoding(**getattr(op, name)())


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_get_encoding_from_an_installed_package_equals_tiktoken(clean_env, name):
    enc = tiktoken_offline(name, installed_rank_file(name))
    tok = bytepair.get_encoding(name)
    assert tok.special_tokens == enc._special_tokens
    assert tok.encode(TEXT, allowed_special="all") == enc.encode(TEXT, allowed_special="all")
    assert tok.n_vocab == enc.n_vocab and tok.eot_token == enc.eot_token


def test_get_encoding_from_the_named_folder_and_from_tiktokens_cache(clean_env, monkeypatch):
    folder = clean_env / "mine"
    folder.mkdir()
    gpt2_tokenizer().save_tiktoken(folder / "r50k_base.tiktoken")
    monkeypatch.setenv("BYTEPAIR_ENCODINGS", str(folder))
    enc = tiktoken_gpt2()
    for name in ("gpt2", "r50k_base"):
        tok = bytepair.get_encoding(name)
        assert tok.special_tokens == {EOT: 50256}
        assert tok.encode(TEXT, allowed_special={EOT}, disallowed_special=()) == enc.encode(
            TEXT, allowed_special={EOT}, disallowed_special=()
        )
    # tiktoken's cache keeps a download under the SHA-1 of its URL.
    monkeypatch.delenv("BYTEPAIR_ENCODINGS")
    cached = clean_env / "cache" / hashlib.sha1(URL.format("r50k_base").encode()).hexdigest()
    shutil.copy(folder / "r50k_base.tiktoken", cached)
    assert bytepair.get_encoding("gpt2") == bytepair.Tokenizer.load(folder / "r50k_base.tiktoken")


def test_a_missing_or_unknown_encoding_says_what_to_do(clean_env):
    with pytest.raises(FileNotFoundError) as info:
        bytepair.get_encoding("p50k_base")
    message = str(info.value)
    assert (
        "p50k_base.tiktoken" in message
        and "BYTEPAIR_ENCODINGS" in message
        and URL.format("p50k_base") in message
    )
    with pytest.raises(ValueError, match="cl100k_base"):
        bytepair.get_encoding("cl100k")
    assert bytepair.list_encodings() == [
        "cl100k_base",
        "gpt2",
        "o200k_base",
        "p50k_base",
        "r50k_base",
    ]


def test_the_cli_takes_an_encoding_name_for_a_tokenizer_file(clean_env, capsys):
    installed_rank_file("cl100k_base")
    (clean_env / "a.txt").write_text("Hello world " * 100, encoding="utf-8")
    assert (
        main(
            [
                "stats",
                str(clean_env / "a.txt"),
                "-t",
                "cl100k_base",
                "--compare",
                "o200k_base",
                "--json",
            ]
        )
        == 0
    )
    assert '"tokens"' in capsys.readouterr().out
    assert bytepair.Tokenizer.load("o200k_base") == bytepair.get_encoding("o200k_base")


# ---- model folders (save_pretrained) and tokenizer.json every reader knows --------------


def test_save_pretrained_gives_transformers_our_ids_and_roles(tmp_path):
    transformers = pytest.importorskip("transformers")
    tok = gpt2_tokenizer()
    written = tok.save_pretrained(
        tmp_path / "model", eos_token=EOT, bos_token=EOT, pad_token=EOT, model_max_length=1024
    )
    assert sorted(Path(p).name for p in written) == [
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "model"))
    assert (hf.eos_token, hf.bos_token, hf.pad_token, hf.unk_token) == (EOT, EOT, EOT, None)
    assert hf.eos_token_id == 50256 and hf.model_max_length == 1024
    assert hf.encode(TEXT, add_special_tokens=False) == tok.encode(TEXT, allowed_special="all")
    assert bytepair.Tokenizer.load(tmp_path / "model") == tok
    with pytest.raises(ValueError, match="not a special token"):
        tok.save_pretrained(tmp_path / "bad", eos_token="</s>")


def test_gpt2_pattern_is_written_as_hf_byte_level_which_every_reader_loads(tmp_path):
    """GPT-2's pattern as HF's ByteLevel(use_regex=true), the form of OpenAI's own
    GPT-2 tokenizer.json: gigatoken refused our Split regex ("Unknown
    pre_tokenizer Split regexes")."""
    import json

    tokenizers = pytest.importorskip("tokenizers")
    tok = gpt2_tokenizer()
    tok.save(tmp_path / "tok.json")
    doc = json.loads((tmp_path / "tok.json").read_text(encoding="utf-8"))
    assert doc["pre_tokenizer"] == {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": True,
    }
    assert bytepair.Tokenizer.load(tmp_path / "tok.json") == tok
    text = TEXT * 20 + " ".join(str(i) for i in range(300))
    ids = tok.encode(text, allowed_special="all")
    assert (
        tokenizers.Tokenizer.from_file(str(tmp_path / "tok.json"))
        .encode(text, add_special_tokens=False)
        .ids
        == ids
    )
    gigatoken = pytest.importorskip("gigatoken", reason="gigatoken (a bench extra) not installed")
    plain = text.replace(EOT, " ").replace("<|endofprompt|>", " ")
    assert list(gigatoken.Tokenizer(str(tmp_path / "tok.json")).encode(plain)) == tok.encode(plain)
