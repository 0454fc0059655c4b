"""Built-in data: a deterministic synthetic census-like microdata generator."""

from ldiv_polars.datasets.synth import SYNTH_COLUMNS, synthesize, write_synthetic

__all__ = ["SYNTH_COLUMNS", "synthesize", "write_synthetic"]
