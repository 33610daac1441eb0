"""`python -m bytepair.cli`: the `bytepair` command."""

import sys

from bytepair.cli.main import main

sys.exit(main())
