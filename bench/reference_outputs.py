"""Fingerprints of the lattice search's results on the reference configurations, to check that a
change of the search's machinery leaves every result as it was.

The configurations: the six Adult configurations of ``bench_search.py`` (ARX's hierarchies) under
every metric, and (unless ``--quick``) the ~1M-row sample drawn from Adult's columns with a fixed
seed (8 QIs, k=5, 2%). For each, one JSON line: the optimum's levels, metric value (12
significant digits), classes, suppressed rows, the sorted minimal nodes, the strategy, and the
nodes checked. Two versions agree when their outputs are identical (``diff`` them); ``checked``
may legitimately change when the search's order changes, so ``--no-checked`` leaves it out.

Usage: python bench/reference_outputs.py [--quick] [--no-checked] [--arrays] > before.jsonl
(``LDIV_REPO=/other/checkout`` fingerprints that checkout's library with this script).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
# LDIV_REPO: fingerprint the library of another checkout (before/after on one script)
sys.path.insert(0, os.environ.get("LDIV_REPO") or str(REPO))

from bench_search import ARRAY_CONFIGS, CONFIGS, DATA, QI8  # noqa: E402

from ldiv_polars.hierarchy import Hierarchy  # noqa: E402
from ldiv_polars.models import KAnonymity  # noqa: E402
from ldiv_polars.search import anonymize  # noqa: E402

METRICS = ("aecs", "discernibility", "entropy", "height", "kl", "loss", "precision")


def fingerprint(name: str, metric: str, res, checked: bool) -> dict[str, object]:
    out: dict[str, object] = {
        "config": name,
        "metric": metric,
        "levels": res.levels,
        "value": None if res.value is None else float(f"{res.value:.12g}"),
        "classes": res.classes,
        "suppressed_rows": res.suppressed_rows,
        "minimal": None if res.minimal is None else sorted(
            tuple(sorted(m.items())) for m in res.minimal),
        "strategy": res.strategy,
    }
    if checked:
        out["checked"] = res.checked
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="Adult only (skip the 1M-row sample)")
    ap.add_argument("--no-checked", action="store_true", help="leave out the nodes checked")
    ap.add_argument("--big-rows", type=int, default=1_000_000)
    ap.add_argument("--arrays", action="store_true",
                    help="also the configurations of bench_search.ARRAY_CONFIGS")
    args = ap.parse_args()
    df = pl.read_csv(DATA / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(DATA / f"adult_hierarchy_{q}.csv") for q in QI8}
    configs = [c[:5] for c in CONFIGS] + (list(ARRAY_CONFIGS) if args.arrays else [])
    for name, qi, s, mk, sup in configs:
        for metric in METRICS:
            res = anonymize(df, qi, s, hs, mk(), suppression=sup, metric=metric, verify=False)
            print(json.dumps(fingerprint(name, metric, res, not args.no_checked)), flush=True)
    if not args.quick:
        big = pl.DataFrame({c: df[c].sample(args.big_rows, with_replacement=True, seed=i)
                            for i, c in enumerate(df.columns)})
        res = anonymize(big, QI8, None, hs, [KAnonymity(5)], suppression=0.02, metric="loss",
                        verify=False)
        print(json.dumps(fingerprint(f"{args.big_rows} sample, 8 QIs, k=5, 2%", "loss", res,
                                     not args.no_checked)), flush=True)


if __name__ == "__main__":
    main()
