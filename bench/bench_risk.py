"""Cost of the disclosure-risk statistics (ldiv_polars.risk) as a ratio to one frequency-set
pass over the same input, measured in the same run.

For each synthetic table (``ldiv_polars.datasets.write_synthetic``, cached under bench/data/),
in one process, medians over ``--reps`` repetitions (after one warm-up), the measurements
alternating so that a load change hits all of them:

- ``pass``: the bare streaming ``scan_parquet(...).group_by(qi).len()`` (the baseline);
- ``class_table``: ldiv's pass (the class-size table the statistics read);
- ``population_uniqueness`` (Dankar's rule, USA), ``risk_profile(population_size=)``;
- ``individual_risk`` with sampling weights (a weight column derived in the scan; its baseline
  is the bare pass over the same scan);
- ``individual_risk(nulls="wildcard")`` on a scan that nulls ~2% of education and ~1.4% of sex
  (baseline: the bare pass over that scan);
- ``suda2`` and ``attribute_risks`` for several ``max_size`` (reported with the distinct keys);
  SUDA2 also over 6 QIs (zip added: many more distinct keys), MSUs of up to 2.

With ``--suite thresholds`` (section ``## Risk thresholds as privacy models``), ``check`` with
each risk threshold (average risk, sample-unique share, population-unique share with the USA,
k-map estimated for the USA) and with all of them, against the bare pass and against ``check``
with k-anonymity alone; and the HTML report (``--population usa``) against ``ldiv check``'s
library call with the same models and sensitive column.

Run from the repository root::

    .venv/bin/python bench/bench_risk.py                          # 1M and 10M rows
    .venv/bin/python bench/bench_risk.py --rows 1000000 --reps 3 --benchmarks-md BENCHMARKS.md

``--benchmarks-md`` replaces (or appends) the section ``## Disclosure-risk statistics``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import polars as pl  # noqa: E402

from ldiv_polars.datasets import write_synthetic  # noqa: E402
from ldiv_polars.models.risk import risk_profile  # noqa: E402
from ldiv_polars.risk import (  # noqa: E402
    attribute_risks,
    class_table,
    individual_risk,
    population_uniqueness,
    suda2,
)

QI = ["age", "sex", "race", "education", "marital_status"]
QI6 = [*QI, "zip"]
SECTION = "## Disclosure-risk statistics"
THRESHOLDS_SECTION = "## Risk thresholds as privacy models"


def _data(rows: int) -> Path:
    path = REPO / "bench" / "data" / f"synth{rows}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_synthetic(path, rows, seed=0)
    return path


def _weighted(path: Path) -> pl.LazyFrame:
    return pl.scan_parquet(path).with_columns(
        ((pl.col("income") % 97 + 1) * 10.0).alias("w"))


def _with_nulls(path: Path) -> pl.LazyFrame:
    inc = pl.col("income")
    return pl.scan_parquet(path).with_columns(
        pl.when(inc % 50 == 0).then(None).otherwise(pl.col("education")).alias("education"),
        pl.when(inc % 73 == 0).then(None).otherwise(pl.col("sex")).alias("sex"))


def _bare(lf: Callable[[], pl.LazyFrame], qi: list[str]) -> Callable[[], object]:
    return lambda: lf().group_by(qi).len().collect(engine="streaming")


def workloads(path: Path) -> list[tuple[str, str, Callable[[], object], Callable[[], object]]]:
    """``(name, baseline name, workload, baseline)``."""
    plain = lambda: pl.scan_parquet(path)  # noqa: E731
    weighted = lambda: _weighted(path)  # noqa: E731
    nulls = lambda: _with_nulls(path)  # noqa: E731
    base, base_w, base_n, base6 = (_bare(plain, QI), _bare(weighted, QI), _bare(nulls, QI),
                                   _bare(plain, QI6))
    out = [
        ("class_table", "pass", lambda: class_table(plain(), QI), base),
        ("population_uniqueness (dankar, USA)", "pass",
         lambda: population_uniqueness(plain(), QI, population_size="usa"), base),
        ("risk_profile(population_size=USA)", "pass",
         lambda: risk_profile(plain(), QI, population_size="usa"), base),
        ("individual_risk (weights)", "pass, weight column in the scan",
         lambda: individual_risk(weighted(), QI, weight="w"), base_w),
        ("individual_risk (nulls as wildcards)", "pass, nulls in the scan",
         lambda: individual_risk(nulls(), QI, nulls="wildcard"), base_n),
    ]
    for k in (2, 3, 5):
        out.append((f"suda2 (max_size {k})", "pass",
                    lambda k=k: suda2(plain(), QI, max_size=k), base))
    for k in (2,):
        out.append((f"suda2 6 QIs (max_size {k})", "pass (6 QIs)",
                    lambda k=k: suda2(plain(), QI6, max_size=k), base6))
    out.append(("attribute_risks (all 31 combinations)", "pass",
                lambda: attribute_risks(plain(), QI), base))
    return out


def threshold_workloads(path: Path
                        ) -> list[tuple[str, str, Callable[[], object], Callable[[], object]]]:
    """``check`` with each risk threshold and all of them (baselines: the bare pass and
    ``check`` with k-anonymity), and the report against ``check`` (same models, sensitive
    column ``disease``, the population figures)."""
    import ldiv_polars as lp
    from ldiv_polars.models import AverageRisk, KMap, PopulationUniques, SampleUniques
    from ldiv_polars.reporting import report

    src = str(path)
    base = _bare(lambda: pl.scan_parquet(path), QI)
    kanon = [lp.KAnonymity(5)]
    each = {"average risk <= 0.1": AverageRisk(0.1), "sample uniques <= 0.01": SampleUniques(
        0.01), "population uniques <= 0.01 (USA)": PopulationUniques(0.01, "usa"),
        "k-map 5 (USA, Poisson)": KMap(5, "usa")}
    every = list(each.values())

    def run(models: list[object], s: str | None = None) -> Callable[[], object]:
        return lambda: lp.check(src, QI, s, models)

    out = [("check k-anonymity 5", "pass", run(kanon), base)]
    for name, m in each.items():
        out += [(f"check {name}", "pass", run([m]), base),
                (f"check {name} ", "check k-anonymity 5", run([m]), run(kanon))]
    out += [("check all four", "pass", run(every), base),
            ("check all four ", "check k-anonymity 5", run(every), run(kanon)),
            ("report --population usa, all four", "check, same models and sensitive",
             lambda: report(src, QI, "disease", every, population_size="usa"),
             run(every, "disease"))]
    return out


def verdict_costs(path: Path, reps: int) -> list[dict[str, object]]:
    """The table-level verdicts alone (``table_level_result`` on the class sizes, medians of
    5), passing and failing (the failing ones search the classes to suppress), beside the
    class-size pass they follow (median of ``reps``), measured in the same run."""
    from ldiv_polars.models import AverageRisk, PopulationUniques, SampleUniques
    from ldiv_polars.models.base import table_level_result

    passes = []
    for _ in range(max(reps, 1)):
        t0 = time.perf_counter()
        sizes = class_table(pl.scan_parquet(path), QI)["n"].to_numpy()
        passes.append(time.perf_counter() - t0)
    base = statistics.median(passes)
    rows = []
    for m in (AverageRisk(0.1), SampleUniques(0.01), PopulationUniques(0.01, "usa"),
              AverageRisk(0.001), SampleUniques(0.0), PopulationUniques(1e-7, "usa")):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            verdict = table_level_result(m, sizes)
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        rows.append({"figure": f"verdict {m.describe()} "
                               f"({'passes' if verdict.passed else 'fails'})",
                     "baseline": "class_table pass", "seconds": t, "base": base,
                     "ratio": t / base, "keys": len(sizes)})
    return rows


def measure(path: Path, reps: int, suite: str = "statistics",
            skip: tuple[str, ...] = ()) -> list[dict[str, object]]:
    jobs = workloads(path) if suite == "statistics" else threshold_workloads(path)
    jobs = [job for job in jobs if not job[0].startswith(skip)] if skip else jobs
    times: dict[str, list[float]] = {}
    bases: dict[str, list[float]] = {}
    for rep in range(reps + 1):  # rep 0 warms up
        for name, _, work, base in jobs:
            for store, fn in ((bases, base), (times, work)):
                t0 = time.perf_counter()
                fn()
                if rep:
                    store.setdefault(name, []).append(time.perf_counter() - t0)
    keys = class_table(pl.scan_parquet(path), QI).height
    keys6 = class_table(pl.scan_parquet(path), QI6).height if suite == "statistics" else 0
    rows = []
    for name, base_name, _, _ in jobs:
        t, b = statistics.median(times[name]), statistics.median(bases[name])
        rows.append({"figure": name, "baseline": base_name, "seconds": t, "base": b,
                     "ratio": t / b, "keys": keys6 if "6 QIs" in name else keys})
    return rows + (verdict_costs(path, reps) if suite == "thresholds" else [])


def markdown(results: dict[int, list[dict[str, object]]], reps: int,
             suite: str = "statistics") -> str:
    lines = [
        SECTION if suite == "statistics" else THRESHOLDS_SECTION, "",
        f"`bench/bench_risk.py --suite {suite} --reps {reps}` on {platform.machine()}, {os.cpu_count()} cores "
        f"(shared: other jobs ran; medians of {reps} alternating repetitions), Polars "
        f"{pl.__version__}. Synthetic tables (`write_synthetic`, seed 0), QIs "
        f"{', '.join(QI)} (6 QIs: + zip). Ratio = the figure's time / its baseline's "
        "(the bare streaming `group_by(qi).len()` over the same scan, or the named call), "
        f"measured in the same run. Load average at the start: {_load()}.", "",
    ]
    for rows, res in results.items():
        lines += [f"**{rows:,} rows**", "",
                  "| figure | distinct keys | seconds | baseline | baseline s | ratio |",
                  "|---|---:|---:|---|---:|---:|"]
        for r in res:
            lines.append(f"| {r['figure']} | {r['keys']:,} | {r['seconds']:.3g} | "
                         f"{r['baseline']} | {r['base']:.3f} | {r['ratio']:.2g} |")
        lines.append("")
    return "\n".join(lines)


def _load() -> str:
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - no load average on this platform
        return "unknown"


def _write_section(path: Path, text: str) -> None:
    old = path.read_text() if path.exists() else ""
    title = text.split("\n", 1)[0]
    start = old.find(title)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    else:
        end = old.find("\n## ", start + len(title))
        new = old[:start] + text + ("\n" + old[end + 1:] if end >= 0 else "\n")
    path.write_text(new)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--benchmarks-md", type=Path)
    ap.add_argument("--suite", choices=["statistics", "thresholds"], default="statistics")
    ap.add_argument("--path", type=Path, help="a synthetic table already written (its rows "
                    "are counted; instead of --rows)")
    ap.add_argument("--skip", action="append", default=[], help="leave out the figures whose "
                    "name starts with this (e.g. 'suda2 6 QIs', over SUDA2's budget at 100M)")
    args = ap.parse_args()
    tables = {pl.scan_parquet(args.path).select(pl.len()).collect().item(): args.path} \
        if args.path else {rows: _data(rows) for rows in args.rows}
    results = {rows: measure(path, args.reps, args.suite, tuple(args.skip))
               for rows, path in tables.items()}
    text = markdown(results, args.reps, args.suite)
    print(text)
    if args.benchmarks_md:
        _write_section(args.benchmarks_md, text)


if __name__ == "__main__":
    main()
