"""The engine boundary: one module per query engine (``polars``, ``duckdb``; ``spark`` when
installed) turning any accepted input into the frequency set, the encoded counts the lattice
search reads, and the written release. :mod:`~ldiv_polars.core.engines.base` holds the
:class:`~ldiv_polars.core.engines.base.Engine` protocol, the engine choice and the facts
every engine shares (the mixed-radix key of the encoded counts, the output plan).

Engines know no privacy model and no hierarchy object: they read plain values (each QI's raw
values, the labels of the chosen level) and return counts; the layers above decide what to
count and judge the counts.
"""
