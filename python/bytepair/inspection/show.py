r"""How a text splits into tokens, drawn for people: coloured token boundaries
in the terminal (with `rich`) or as a self-contained HTML page.

* `token_views`: the tokens of a text, each with its id, bytes and the label to
  draw (what ``bytepair show`` colours);
* `render_terminal`: a `rich.text.Text`, one coloured run per token;
* `render_html`: a standalone page (inline CSS, no scripts, fonts or other
  network resources), one ``<span>`` per token whose ``title`` (the browser's
  hover tooltip) gives its id and bytes;
* `cmd_show`: the ``bytepair show`` command.

Labels: a token's bytes decoded as UTF-8; bytes that are only part of a
character (byte-level tokens may cut a character in two) are shown as
``\xNN``, and a newline as ``↵`` followed by the line break, so every token is
visible. Special-token strings in the text are shown as special tokens.

Not here: statistics over whole files (`bytepair.inspection.report`).

>>> import bytepair
>>> tok = bytepair.train_from_counts({"hug": 10, "pug": 5}, 258)
>>> [(v.id, v.label) for v in token_views(tok, "hug pug")]
[(257, 'hug'), (32, ' '), (112, 'p'), (256, 'ug')]
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bytepair.inspection.report import format_token

if TYPE_CHECKING:
    import rich.text

    from bytepair.tokenizer import Tokenizer

# Background colours cycled over the tokens (adjacent tokens always differ);
# light enough for black text, distinct enough to see boundaries.
PALETTE = ("#ffd6a5", "#caffbf", "#9bf6ff", "#bdb2ff", "#ffadad", "#fdffb6")
SPECIAL_STYLE = ("#6a4c93", "#ffffff")  # background, text
# 16- and 8-colour terminals: basic ANSI colours, each distinct in 8 colours.
BASIC_PALETTE = ("yellow", "cyan", "green", "magenta")
BASIC_SPECIAL = ("blue", "bright_white")
# Between two tokens when there is no colour.
TOKEN_MARKER = "\u2502"


@dataclass
class TokenView:
    """One token of a text as drawn: ``id``, its ``data`` (bytes), the ``label``
    shown, whether it is a ``special`` token, and whether it holds bytes that
    are ``partial`` characters (not valid UTF-8 on their own)."""

    id: int
    data: bytes
    label: str
    special: bool = False
    partial: bool = False

    @property
    def tooltip(self) -> str:
        """The hover text: id, byte count, the bytes in hex and as a string."""
        kind = (
            "special token"
            if self.special
            else f"{len(self.data)} byte{'s' * (len(self.data) != 1)}"
        )
        return f"id {self.id} · {kind}\nbytes {self.data.hex(' ')}\n{format_token(self.data)}"


def label_of(data: bytes) -> tuple[str, bool]:
    r"""What to draw for a token's bytes, and whether some were partial characters.

    >>> label_of(b"a\n"), label_of(b"\xe2\x80")
    (('a↵\n', False), ('\\xe2\\x80', True))
    """
    out, partial = [], False
    for c in data.decode("utf-8", "surrogateescape"):
        if 0xDC80 <= ord(c) <= 0xDCFF:
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
            partial = True
        elif c == "\n":
            out.append("↵\n")
        elif c == "\t" or c == " " or c.isprintable():
            out.append(c)
        else:
            out.append(repr(c)[1:-1])
    return "".join(out), partial


def token_views(
    tok: "Tokenizer", text: str, *, allowed_special: str | set[str] = "all"
) -> list[TokenView]:
    """Encode `text` and describe each token for drawing.

    Args:
        tok: the tokenizer.
        text: any str.
        allowed_special: special tokens recognised in `text` (default ``"all"``;
            ``set()`` encodes their strings as plain text).

    Returns:
        list of TokenView, in text order; their bytes join to ``text`` (UTF-8).
    """
    ids = tok.encode(text, allowed_special=allowed_special, disallowed_special=())
    special_ids = {i: s for s, i in tok.special_tokens.items()}
    views = []
    for i in ids:
        if i in special_ids:
            views.append(TokenView(i, special_ids[i].encode("utf-8"), special_ids[i], special=True))
        else:
            data = tok.vocab[i]
            label, partial = label_of(data)
            views.append(TokenView(i, data, label, partial=partial))
    return views


def summary(views: list[TokenView]) -> str:
    """``"12 tokens · 40 characters · 40 bytes · 3.33 bytes/token"``."""
    n_bytes = sum(len(v.data) for v in views)
    n_chars = len(b"".join(v.data for v in views).decode("utf-8", "replace"))
    ratio = f"{n_bytes / len(views):.2f}" if views else "n/a"
    return (
        f"{len(views):,} tokens · {n_chars:,} characters · {n_bytes:,} bytes · {ratio} bytes/token"
    )


def render_terminal(
    views: list[TokenView], color_system: str | None = "truecolor"
) -> "rich.text.Text":
    """The tokens as one `rich.text.Text`, each on a background that differs from
    its neighbours' in every colour depth (special tokens bold on their own
    colour, partial characters in italics).

    Args:
        views: from `token_views`.
        color_system: the terminal's, as `rich.console.Console.color_system`
            names it. ``"truecolor"`` and ``"256"`` get the pastel `PALETTE`
            (distinct in 256 colours); ``"standard"`` and ``"windows"`` (16 or 8
            colours, to which the pastels collapse, two neighbours sharing one)
            get four basic ANSI colours; None (no colour: ``NO_COLOR``, a pipe,
            ``TERM=dumb``) gets `TOKEN_MARKER` between tokens.

    Returns:
        rich.text.Text whose plain text is the labels (with markers when
        `color_system` is None); with colour, one span per token.
    """
    from rich.text import Text

    text = Text()
    if color_system is None:
        for k, v in enumerate(views):
            if k:
                text.append(TOKEN_MARKER, style="dim")
            text.append(v.label, style="bold" if v.special else ("italic" if v.partial else ""))
        return text
    basic = color_system in ("standard", "windows")
    palette, (special_bg, special_fg) = (
        (BASIC_PALETTE, BASIC_SPECIAL) if basic else (PALETTE, SPECIAL_STYLE)
    )
    for k, v in enumerate(views):
        if v.special:
            style = f"bold {special_fg} on {special_bg}"
        else:
            style = f"{'black' if basic else '#000000'} on {palette[k % len(palette)]}" + (
                " italic" if v.partial else ""
            )
        text.append(v.label, style=style)
    return text


_CSS = (
    """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem; color: #222;
  background: #fff; }
h1 { font-size: 1.2rem; margin: 0 0 .3rem 0; }
.summary { color: #555; margin: 0 0 1rem 0; }
.view { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 15px;
        line-height: 1.9; white-space: pre-wrap; overflow-wrap: anywhere; border: 1px solid #ddd;
        padding: .8rem; border-radius: 6px; }
.tok { border-radius: 3px; padding: 2px 0; color: #000; }
.tok:hover { outline: 2px solid #333; }
.partial { font-style: italic; color: #666; font-size: 12px; }
.special { font-weight: bold; }
.ids { font-family: ui-monospace, monospace; font-size: 13px; color: #444; word-break: break-all;
  margin-top: 1rem; }
"""
    + "".join(f".c{k} {{ background: {c}; }}\n" for k, c in enumerate(PALETTE))
    + (f".special {{ background: {SPECIAL_STYLE[0]}; color: {SPECIAL_STYLE[1]}; }}\n")
)


def render_html(views: list[TokenView], *, title: str = "bytepair", show_ids: bool = False) -> str:
    """A self-contained HTML page of the tokens: inline CSS only (no scripts,
    fonts, images or links), so it opens offline and anywhere.

    Each token is ``<span class="tok cK" data-id="ID" title="...">label</span>``;
    the ``title`` (shown on hover) gives the id, the byte count and the bytes.

    Args:
        views: from `token_views`.
        title: page title and heading (escaped).
        show_ids: also list the ids under the text.

    Returns:
        str, the page (UTF-8 declared).
    """
    spans = []
    for k, v in enumerate(views):
        cls = (
            "tok special"
            if v.special
            else f"tok c{k % len(PALETTE)}" + (" partial" if v.partial else "")
        )
        spans.append(
            f'<span class="{cls}" data-id="{v.id}" title="{html.escape(v.tooltip, quote=True)}">'
            f"{html.escape(v.label, quote=False)}</span>"
        )
    ids = (
        f'<div class="ids" id="ids">ids: {", ".join(str(v.id) for v in views)}</div>\n'
        if show_ids
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f'<p class="summary" id="summary">{html.escape(summary(views))}</p>\n'
        f'<div class="view" id="view">{"".join(spans)}</div>\n'
        f"{ids}</body>\n</html>\n"
    )
