"""`bytepair show` (bytepair/inspection/show.py): token views, the terminal rendering, and
the HTML page, checked in a real headless browser (Debian's chromium).

The browser test renders the page once, dumping the DOM and a screenshot in
the same run: the DOM must hold one span per token with the right id and
tooltip, and the screenshot must show the palette colours (the page really
drew coloured tokens, with no network access needed).
"""

from __future__ import annotations

import html.parser
import io
import os
import re
import shutil
import struct
import subprocess

import pytest

import bytepair
from bytepair.cli import main
from bytepair.inspection.show import (
    PALETTE,
    SPECIAL_STYLE,
    TOKEN_MARKER,
    render_html,
    render_terminal,
    summary,
    token_views,
)

SAMPLE = (
    "First Citizen:\nBefore we proceed any further, hear me speak."
    "<|endoftext|>Ünïcödé 日本語 😀\ttabs  and"
)


@pytest.fixture(scope="module")
def tok_path(tmp_path_factory, corpus):
    """A 1024-id Shakespeare tokenizer with <|endoftext|>, saved; (Tokenizer, path)."""
    tok = bytepair.train(
        corpus("shakespeare.txt"), 1024, special_tokens=["<|endoftext|>"], progress=False
    )
    path = tmp_path_factory.mktemp("show") / "shakespeare.json"
    tok.save(path)
    return tok, path


def test_token_views_cover_the_text(tok_path):
    tok, _ = tok_path
    views = token_views(tok, SAMPLE)
    ids = tok.encode(SAMPLE, allowed_special="all")
    assert [v.id for v in views] == ids
    assert b"".join(v.data for v in views) == SAMPLE.encode()
    special = [v for v in views if v.special]
    assert [(v.id, v.label) for v in special] == [(1023, "<|endoftext|>")]
    # 日 and 😀 are not in a Shakespeare vocabulary: their bytes come one by one, escaped
    partial = [v for v in views if v.partial]
    assert partial and all(v.label.startswith("\\x") for v in partial)
    assert all("\n" not in v.label or v.label.endswith("↵\n") for v in views)
    # specials as text when asked
    assert not any(v.special for v in token_views(tok, SAMPLE, allowed_special=set()))


def test_tooltip_and_summary():
    tok = bytepair.train_from_counts({"hug": 10, "pug": 5}, 258)
    views = token_views(tok, "hug\n")
    assert [(v.id, v.label) for v in views] == [(257, "hug"), (10, "↵\n")]
    assert views[0].tooltip == "id 257 · 3 bytes\nbytes 68 75 67\n'hug'"
    assert views[1].tooltip == "id 10 · 1 byte\nbytes 0a\n'\\n'"
    assert summary(views) == "2 tokens · 4 characters · 4 bytes · 2.00 bytes/token"


def test_render_terminal_colours_each_token(tok_path):
    from rich.console import Console

    tok, _ = tok_path
    views = token_views(tok, SAMPLE)
    text = render_terminal(views)
    assert text.plain == "".join(v.label for v in views)
    assert len(text.spans) == len(views)
    backgrounds = [str(span.style).split(" on ")[-1].split()[0] for span in text.spans]
    assert all(a != b for a, b in zip(backgrounds, backgrounds[1:]))  # neighbours always differ
    assert SPECIAL_STYLE[0] in backgrounds
    out = io.StringIO()
    Console(file=out, force_terminal=True, color_system="truecolor", width=200).print(text)
    r, g, b = (int(PALETTE[0][k : k + 2], 16) for k in (1, 3, 5))
    assert f"48;2;{r};{g};{b}" in out.getvalue()  # the first palette colour as a background


@pytest.mark.parametrize("system", ["truecolor", "256", "standard", "windows"])
def test_neighbours_differ_in_every_colour_depth(tok_path, system):
    """In 16- and 8-colour terminals the pastel palette collapsed: two adjacent
    tokens got the same background. Compared as the terminal
    shows them: downgraded to its colour system, and for 16 colours also as an
    8-colour terminal shows them (bright colours as their normal ones)."""
    from rich.color import ColorSystem
    from rich.style import Style

    tok, _ = tok_path
    views = token_views(tok, SAMPLE + " " + SAMPLE)
    text = render_terminal(views, system)
    depth = {"truecolor": ColorSystem.TRUECOLOR, "256": ColorSystem.EIGHT_BIT}.get(
        system, ColorSystem.STANDARD
    )
    shown = [Style.parse(str(span.style)).bgcolor.downgrade(depth) for span in text.spans]
    assert len(shown) == len(views) > 10 and any(v.special for v in views)
    keys = [
        c.triplet if c.triplet else c.number % (8 if depth == ColorSystem.STANDARD else 256)
        for c in shown
    ]
    assert all(a != b for a, b in zip(keys, keys[1:]))


def test_without_colour_a_marker_separates_the_tokens(tok_path, monkeypatch, capsys):
    """NO_COLOR, a pipe, TERM=dumb: no backgrounds at all, so a visible marker."""
    from bytepair.inspection.show import TOKEN_MARKER

    tok, path = tok_path
    views = token_views(tok, SAMPLE)
    assert render_terminal(views, None).plain == TOKEN_MARKER.join(v.label for v in views)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")  # a terminal, but NO_COLOR wins
    assert main(["show", "-t", str(path), "hear me speak"]) == 0
    out = capsys.readouterr().out
    codes = re.findall(r"\x1b\[([0-9;]*)m", out)
    assert codes and not any(
        c.startswith(("3", "4", "9", "10")) for c in codes
    )  # dim markers, no colour at all
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert plain.splitlines()[0] == TOKEN_MARKER.join(
        v.label for v in token_views(tok, "hear me speak")
    )


def test_cli_show_terminal(tok_path, capsys):
    tok, path = tok_path
    assert main(["show", "-t", str(path), "hear me speak", "--ids"]) == 0
    out = capsys.readouterr().out.splitlines()
    ids = tok.encode("hear me speak")
    assert out[0] == TOKEN_MARKER.join(
        v.label for v in token_views(tok, "hear me speak")
    )  # not a terminal
    assert out[1] == "ids: " + ", ".join(map(str, ids))
    assert (
        out[2] == f"{len(ids)} tokens · 13 characters · 13 bytes · {13 / len(ids):.2f} bytes/token"
    )


def test_cli_show_file_and_argument_errors(tok_path, tmp_path, capsys):
    _, path = tok_path
    src = tmp_path / "in.txt"
    src.write_text("to be\nor not")
    assert main(["show", "-t", str(path), "-f", str(src)]) == 0
    assert capsys.readouterr().out.replace(TOKEN_MARKER, "").splitlines()[:2] == [
        "to be↵",
        "or not",
    ]
    assert main(["show", "-t", str(path)]) == 1
    assert "either TEXT or -f FILE" in capsys.readouterr().err
    assert main(["show", "-t", str(path), "x", "-f", str(src)]) == 1


class _Spans(html.parser.HTMLParser):
    """Collect the token spans of a page: (data-id, title, text, class)."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[dict] = []
        self._open: dict | None = None
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if key in a:
                self.external.append(f"{tag} {key}={a[key]}")
        if tag in ("script", "link", "img", "iframe"):
            self.external.append(tag)
        if tag == "span" and "tok" in a.get("class", "").split():
            self._open = {
                "id": int(a["data-id"]),
                "title": a["title"],
                "class": a["class"],
                "text": "",
            }

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.spans.append(self._open)
            self._open = None


def test_html_page_is_self_contained(tok_path):
    tok, _ = tok_path
    views = token_views(tok, SAMPLE)
    page = render_html(views, title="t <&>", show_ids=True)
    parser = _Spans()
    parser.feed(page)
    assert parser.external == []
    assert "url(" not in page and "@import" not in page and "http" not in page
    assert [s["id"] for s in parser.spans] == [v.id for v in views]
    assert [s["text"] for s in parser.spans] == [v.label for v in views]
    assert "<title>t &lt;&amp;&gt;</title>" in page


def _png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_html_in_headless_chromium(tok_path, tmp_path):
    """One chromium run: --dump-dom (the DOM after parsing) and --screenshot."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    tok, path = tok_path
    page, shot = tmp_path / "show.html", tmp_path / "shot.png"
    assert main(["show", "-t", str(path), SAMPLE, "--html", str(page), "--ids"]) == 0
    run = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            "--window-size=900,400",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"HOME": str(tmp_path)},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    parser = _Spans()
    parser.feed(run.stdout)
    ids = tok.encode(SAMPLE, allowed_special="all")
    assert [s["id"] for s in parser.spans] == ids
    for s in parser.spans:
        assert s["title"].startswith(f"id {s['id']} · ")
        if "special" not in s["class"]:
            assert s["title"].splitlines()[1] == "bytes " + tok.vocab[s["id"]].hex(" ")
    assert _png_size(shot) == (900, 400)
    Image = pytest.importorskip("PIL.Image")
    with Image.open(shot) as im:
        colours = {c for _, c in im.convert("RGB").getcolors(maxcolors=1 << 24)}
    for c in (*PALETTE[:3], SPECIAL_STYLE[0]):
        assert tuple(int(c[k : k + 2], 16) for k in (1, 3, 5)) in colours, f"{c} not drawn"
