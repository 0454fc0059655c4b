"""Cost of the compiled Arrow reader's checks (``core/engines/_arrow_codes.c``): the kernel's
``encode`` of a String column against its raw values, in the same run as Polars' Enum cast of
the same column (the baseline the kernel replaces) and, with ``--against``, another build of
the same module (say one compiled from a previous commit's ``_arrow_codes.c``), on
``--rows`` rows of 200 or 4000 distinct strings (:data:`CASES`), out of line and inline.

Run from the repository root::

    git show HEAD~1:ldiv_polars/core/engines/_arrow_codes.c > /tmp/old.c
    gcc -O3 -shared -fPIC -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \\
        /tmp/old.c -o /tmp/old.so
    nice .venv/bin/python bench/bench_arrow_codes.py --against /tmp/old.so
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.engines import arrow_codes
from ldiv_polars.core.engines.raw_codes import leaf_enum


CASES = [("200 out of line", "Married-civ-spouse-{:03d}", 200),
         ("200 inline", "value{:03d}", 200),
         ("4000 out of line", "Married-civ-spouse-{:04d}", 4000),
         ("4000 inline, 12 bytes", "2024-01-{:04d}", 4000)]
"""(name, format of the i-th raw value, number of raw values): labels differing in their
last bytes only, out of line (> 12 bytes) and inline."""


def _load(path: str) -> Any:
    """The ``_arrow_codes`` module built at ``path``."""
    loader = importlib.machinery.ExtensionFileLoader("_arrow_codes", path)
    spec = importlib.util.spec_from_file_location("_arrow_codes", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _best(fn: Callable[[], object], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    """Print one table row per string width: seconds of each reader and the ratios."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=250_000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--against", help="another build of _arrow_codes to compare with")
    args = ap.parse_args()
    mods = {"kernel": arrow_codes._kernel}
    if args.against:
        mods["against"] = _load(args.against)
    print(f"load average {os.getloadavg()}; rows {args.rows}; best of {args.reps}")
    rng = np.random.default_rng(1)
    for width, fmt, n in CASES:
        leaves = pl.Series([fmt.format(i) for i in range(n)])
        col = leaves.gather(rng.integers(0, n, args.rows))
        ids = np.empty(col.len(), np.int64)
        enum = leaf_enum(leaves)
        row = {"polars cast": _best(lambda: col.cast(enum).to_physical().to_numpy(), args.reps)}
        for name, m in mods.items():
            row[name] = _best(lambda m=m: m.encode(col.__arrow_c_stream__(), ids,
                                                   leaves.__arrow_c_stream__(), 0), args.reps)
        ratios = {k: round(v / row["polars cast"], 3) for k, v in row.items()}
        print(width, {k: round(v * 1e3, 2) for k, v in row.items()}, "ms; / polars", ratios)


if __name__ == "__main__":
    main()
