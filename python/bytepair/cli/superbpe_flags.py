"""``bytepair train``'s SuperBPE flags and the lines its summary adds for a
SuperBPE run (`bytepair.superbpe`)."""

from __future__ import annotations

import argparse

from bytepair.cli.args import positive_int


def add_superbpe_flags(parser: argparse.ArgumentParser) -> None:
    """Add --superbpe-transition, --superbpe-pattern, --superbpe-max-words and
    --superbpe-counts to ``bytepair train``."""
    parser.add_argument(
        "--superbpe-transition",
        type=positive_int,
        default=None,
        metavar="T",
        help="SuperBPE: ordinary merges until the vocabulary holds T ids, then merges across words "
        "up to --vocab-size (the inputs are read twice)",
    )
    parser.add_argument(
        "--superbpe-pattern",
        default="superbpe",
        metavar="P",
        help="SuperBPE's stage-2 pre-tokenization (default: superbpe, the authors' regex per line)",
    )
    parser.add_argument(
        "--superbpe-max-words",
        type=int,
        default=4,
        metavar="N",
        help="SuperBPE: no token of more than N words (default 4; 0: no limit)",
    )
    parser.add_argument(
        "--superbpe-counts",
        metavar="COUNTS",
        default=None,
        help="with --from-counts: the word-counts folder of the stage-2 pieces "
        "(bytepair count --pattern superbpe)",
    )


def superbpe_summary(s) -> str:
    """The summary's SuperBPE lines (none for ordinary BPE)."""
    if not s.superbpe_transition:
        return ""
    sample = (
        f"  stage-2 sample {s.superbpe_pruned_pieces:,} distinct pieces left out "
        f"({s.superbpe_pruned_occurrences:,} occurrences), threshold {s.superbpe_sample_threshold} "
        "to stay within --max-memory\n"
        if s.superbpe_pruned_pieces
        else ""
    )
    return (
        f"  superbpe       {s.superbpe_merges:,} of them stage 2's, from vocab size "
        f"{s.superbpe_transition:,} on\n{sample}"
    )
