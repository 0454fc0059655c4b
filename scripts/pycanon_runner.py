"""Compute pycanon's values for one table and print them as JSON.

Run BY the pycanon venv's interpreter (``.venv-pycanon/bin/python``, made by
``scripts/setup_pycanon_venv.sh``), never imported by the test suite: pycanon pins numpy, pandas,
scipy and typer, so it lives in its own environment and we talk to it through a subprocess.

Usage::

    .venv-pycanon/bin/python scripts/pycanon_runner.py CSV --sep ';' --qi a,b,c --sa s \
        [--metrics k,l,entropy_l,recursive_cl,alpha_k,t,delta,basic_beta,enhanced_beta] \
        [--repeat N]
    .venv-pycanon/bin/python scripts/pycanon_runner.py --batch < jobs.json

Metric ``ec_sizes`` gives the sorted sizes of pycanon's equivalence classes. Prints one JSON
object ``{"pycanon_version", "rows", "sa_dtype", "values": {...}, "seconds": {...}}`` (a list of
them with ``--batch``).
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


def compute(data, qi: list[str], sa: str, metrics: list[str], repeat: int = 1) -> dict:
    """pycanon's values and median timings for one (table, QI, SA)."""
    from pycanon import anonymity as an
    from pycanon.anonymity.utils.aux_anonymity import get_equiv_class

    s = [sa]
    calls = {
        "k": lambda: an.k_anonymity(data, qi),
        "l": lambda: an.l_diversity(data, qi, s),
        "entropy_l": lambda: an.entropy_l_diversity(data, qi, s),
        "recursive_cl": lambda: an.recursive_c_l_diversity(data, qi, s),
        "alpha_k": lambda: an.alpha_k_anonymity(data, qi, s),
        "t": lambda: an.t_closeness(data, qi, s),
        "delta": lambda: an.delta_disclosure(data, qi, s),
        "basic_beta": lambda: an.basic_beta_likeness(data, qi, s),
        "enhanced_beta": lambda: an.enhanced_beta_likeness(data, qi, s),
        # the equivalence classes pycanon works on (its own grouping), as sorted sizes
        "ec_sizes": lambda: sorted(len(ec) for ec in get_equiv_class(data, qi)),
    }
    values: dict[str, object] = {}
    seconds: dict[str, float] = {}
    for metric in metrics:
        if metric not in calls:
            raise SystemExit(f"unknown metric {metric!r}; choose from {', '.join(ALL_METRICS)}")
        times = []
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            result = calls[metric]()
            times.append(time.perf_counter() - t0)
        values[metric] = _jsonable(result)
        seconds[metric] = statistics.median(times)
    return {
        "pycanon_version": version("pycanon"),
        "rows": int(len(data)),
        "sa_dtype": str(data[sa].dtype),
        "values": values,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?")
    ap.add_argument("--sep", default=";")
    ap.add_argument("--qi", help="comma-separated quasi-identifiers")
    ap.add_argument("--sa", help="sensitive attribute")
    ap.add_argument("--metrics", default=",".join(ALL_METRICS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--batch", action="store_true",
                    help="read a JSON list of {csv, sep, qi, sa, metrics} jobs from stdin and "
                         "print a JSON list of results (one interpreter, each CSV read once)")
    args = ap.parse_args(argv)

    import pandas as pd

    frames: dict[tuple[str, str], object] = {}

    def read(path: str, sep: str):
        if (path, sep) not in frames:
            frames[(path, sep)] = pd.read_csv(path, sep=sep)
        return frames[(path, sep)]

    if args.batch:
        jobs = json.load(sys.stdin)
        out = [
            compute(read(j["csv"], j.get("sep", ";")), list(j["qi"]), j["sa"],
                    list(j["metrics"]), int(j.get("repeat", 1)))
            for j in jobs
        ]
    else:
        if not (args.csv and args.qi and args.sa):
            ap.error("CSV, --qi and --sa are required (or use --batch)")
        out = compute(read(args.csv, args.sep), [c for c in args.qi.split(",") if c], args.sa,
                      [m for m in args.metrics.split(",") if m], args.repeat)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
