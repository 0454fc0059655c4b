"""Compute pycanon's values for one table and print them as JSON.

Run BY the pycanon venv's interpreter (``.venv-pycanon/bin/python``, made by
``scripts/setup_pycanon_venv.sh``), never imported by the test suite: pycanon pins numpy, pandas,
scipy and typer, so it lives in its own environment and we talk to it through a subprocess.

Usage::

    .venv-pycanon/bin/python tests/pycanon_runner.py CSV --sep ';' --qi a,b,c --sa s \
        [--metrics k,l,entropy_l,recursive_cl,alpha_k,t,delta,basic_beta,enhanced_beta,ec_sizes] \
        [--repeat N]

Prints one JSON object: ``{"pycanon_version", "rows", "values": {...}, "seconds": {...}}``.
``values`` holds pycanon's own return values (NaN/inf become the strings "nan"/"inf");
``seconds`` the median wall time of each metric call over ``--repeat`` runs (reading the CSV is
not included).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from importlib.metadata import version

ALL_METRICS = (
    "k",
    "l",
    "entropy_l",
    "recursive_cl",
    "alpha_k",
    "t",
    "delta",
    "basic_beta",
    "enhanced_beta",
    "ec_sizes",
)


def _jsonable(v):
    """numpy scalars / tuples -> plain JSON values (non-finite floats as strings)."""
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--sep", default=";")
    ap.add_argument("--qi", required=True, help="comma-separated quasi-identifiers")
    ap.add_argument("--sa", required=True, help="sensitive attribute")
    ap.add_argument("--metrics", default=",".join(ALL_METRICS))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)

    import pandas as pd
    from pycanon import anonymity as an
    from pycanon.anonymity.utils.aux_anonymity import get_equiv_class

    data = pd.read_csv(args.csv, sep=args.sep)
    qi = [c for c in args.qi.split(",") if c]
    sa = [args.sa]
    calls = {
        "k": lambda: an.k_anonymity(data, qi),
        "l": lambda: an.l_diversity(data, qi, sa),
        "entropy_l": lambda: an.entropy_l_diversity(data, qi, sa),
        "recursive_cl": lambda: an.recursive_c_l_diversity(data, qi, sa),
        "alpha_k": lambda: an.alpha_k_anonymity(data, qi, sa),
        "t": lambda: an.t_closeness(data, qi, sa),
        "delta": lambda: an.delta_disclosure(data, qi, sa),
        "basic_beta": lambda: an.basic_beta_likeness(data, qi, sa),
        "enhanced_beta": lambda: an.enhanced_beta_likeness(data, qi, sa),
        # the equivalence classes pycanon works on (its own grouping), as sorted sizes
        "ec_sizes": lambda: sorted(len(ec) for ec in get_equiv_class(data, qi)),
    }
    values: dict[str, object] = {}
    seconds: dict[str, float] = {}
    for metric in [m for m in args.metrics.split(",") if m]:
        if metric not in calls:
            print(f"unknown metric {metric!r}; choose from {', '.join(ALL_METRICS)}",
                  file=sys.stderr)
            return 2
        times = []
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            result = calls[metric]()
            times.append(time.perf_counter() - t0)
        values[metric] = _jsonable(result)
        seconds[metric] = statistics.median(times)
    out = {
        "pycanon_version": version("pycanon"),
        "rows": int(len(data)),
        "sa_dtype": str(data[args.sa].dtype),
        "values": values,
        "seconds": seconds,
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
