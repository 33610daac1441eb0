"""`python -m bytepair`: the `bytepair` command."""

import sys

from bytepair.cli.main import main

sys.exit(main())
