"""``python -m ldiv_polars`` runs the ``ldiv`` command line."""

import sys

from ldiv_polars.cli import main

sys.exit(main())
