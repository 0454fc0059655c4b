"""``link`` with its null-sensitive check (trust11) against the read it had before, alternated
in one process. Run from the repository root::

    nice .venv/bin/python bench/bench_link_nulls.py [--rows 2000000] [--reps 7]

Two CSV releases of ``--rows`` rows (1000 classes x 50 values) linked on one target. Baseline:
the count table filtered to the target's class only (the code before the check). Measured: the
filter ``key OR null s`` pushed below the same group-by, then the check on the rows it kept.
Prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ldiv_polars.linkage import Release, link  # noqa: E402
from ldiv_polars.linkage import attack  # noqa: E402


def before(r, j, key, s_name, s_dtype):
    """The target's counts as read before the check: the key filter only."""
    c = attack._counts_j(r, j, s_name, s_dtype)
    if key is None:
        c = c.head(0)
    else:
        c = c.filter(pl.all_horizontal(
            [pl.col(x) == pl.lit(v) for x, v in zip(attack._class_cols(r, j), key)]))
    return c.collect(engine=attack.STREAMING).lazy().select(s_name, f"__n{j}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "release.csv"
        pl.DataFrame({"q": rng.integers(0, 1000, a.rows).astype(str),
                      "s": rng.integers(0, 50, a.rows).astype(str)}).write_csv(path)
        m = pl.DataFrame({"q": [str(i) for i in range(1000)],
                          "q_class": [str(i) for i in range(1000)]})
        rels = [Release.from_mapping(str(path), "q", "s", m, name=f"r{j}") for j in range(2)]
        variants = {"before (baseline)": before, "with the check": attack._target_counts}
        times: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(a.reps):
            for name, fn in variants.items():
                attack._target_counts = fn
                t0 = time.perf_counter()
                link(rels, {"q": "7"})
                times[name].append(time.perf_counter() - t0)
        attack._target_counts = variants["with the check"]
    med = {k: float(np.median(v)) for k, v in times.items()}
    base = med["before (baseline)"]
    print("| variant | median | ratio |\n|---|---|---|")
    for k, v in med.items():
        print(f"| {k} | {v * 1000:.0f} ms | {v / base:.2f}x |")


if __name__ == "__main__":
    main()
