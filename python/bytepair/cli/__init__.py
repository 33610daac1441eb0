"""The `bytepair` command line. All argument parsing lives in this package,
one module per group of subcommands; each command calls the library function
that does the work (`bytepair.train`, `bytepair.counts`, `bytepair.formats`,
`bytepair.inspection`).

    bytepair ...  ==  python -m bytepair ...  ==  python -m bytepair.cli ...
"""

from bytepair.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
