"""``python -m ldiv_polars`` runs the ``ldiv`` command line."""

from ldiv_polars.cli import run

run()
