"""Argument types shared by the subcommands."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1 (a thread, part or worker count)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


def progress_bars(args: argparse.Namespace) -> bool | None:
    """The `progress` argument for a command: off with ``-q``, else None, which
    means "when stderr is a terminal" (no bars in pipes, logs or CI)."""
    return False if args.quiet else None
