"""Cost of the models judged against a population table (k-map with a population table,
delta-presence) as a ratio to k-anonymity, measured in the same run.

On Adult (``/work/shared/data/adult``, ARX's hierarchies; skipped with a message when absent),
a research subset (``--fraction`` of the rows, seed 7) is the sample and the whole of Adult
the population. In one process, medians over ``--reps`` alternating repetitions (after one
warm-up):

- ``check`` with ``KMapPopulation(5, adult)`` against ``check`` with ``KAnonymity(5)`` (the
  population's extra work: one group-by of the population and a join);
- ``mondrian`` (strict) with ``KMapPopulation(5, adult)`` against ``mondrian`` with
  ``KAnonymity(5)`` (the extra work per round: the population keys matched with every
  candidate child's ranges and sets);
- ``anonymize`` (Flash, suppression 2%, metric loss) with ``KMapPopulation(5, adult)`` against
  the same search with ``KAnonymity(5)`` (the extra work per node: the population's distinct
  keys rolled to the node and matched with its classes), and with ``DeltaPresence`` (not
  monotone: exhaustive) against k-anonymity's exhaustive search.

Run from the repository root::

    nice .venv/bin/python bench/bench_population.py --reps 3 --benchmarks-md BENCHMARKS.md
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

import ldiv_polars as lp  # noqa: E402
from ldiv_polars.hierarchy import Hierarchy  # noqa: E402

DATA = Path("/work/shared/data/adult")
QI = ["age", "sex", "race", "marital-status", "education", "native-country"]
SECTION = "## Models against a population table"


def workloads(fraction: float, copies: int = 1
              ) -> list[tuple[str, str, Callable[[], object], Callable[[], object]]]:
    """(figure, baseline name, figure call, baseline call) pairs; the population is
    ``copies`` copies of Adult (k-map's k scaled with it: ``5 * copies``)."""
    adult = pl.read_csv(DATA / "adult.csv", separator=";")
    sample = adult.sample(fraction=fraction, seed=7)
    population = pl.concat([adult] * copies)
    h = {q: Hierarchy.from_csv(DATA / f"adult_hierarchy_{q}.csv") for q in QI}
    kmap, kanon = lp.KMapPopulation(5 * copies, population), lp.KAnonymity(5)
    delta = lp.DeltaPresence(0.0, 0.5 / copies, population)

    def search(model: object, strategy: str = "auto") -> Callable[[], object]:
        return lambda: lp.anonymize(sample, QI, None, h, model, suppression=0.02,
                                    metric="loss", strategy=strategy)

    def part(model: object) -> Callable[[], object]:
        return lambda: lp.mondrian(sample, QI, None, [model])

    return [
        (f"mondrian k-map {5 * copies} (population table)", "mondrian k-anonymity 5",
         part(kmap), part(kanon)),
        (f"check k-map {5 * copies} (population table)", "check k-anonymity 5",
         lambda: lp.check(sample, QI, None, kmap), lambda: lp.check(sample, QI, None, kanon)),
        (f"anonymize k-map {5 * copies} (population table)", "anonymize k-anonymity 5",
         search(kmap), search(kanon)),
        (f"anonymize delta-presence [0, {0.5 / copies:g}] (exhaustive)",
         "anonymize k-anonymity 5, exhaustive",
         search(delta), search(kanon, "exhaustive")),
    ]


def measure(fraction: float, reps: int, copies: int = 1) -> list[dict[str, object]]:
    rows = []
    for name, base_name, fig, base in workloads(fraction, copies):
        fig(), base()  # warm-up
        ft, bt = [], []
        for _ in range(reps):
            for call, out in ((fig, ft), (base, bt)):
                t0 = time.perf_counter()
                call()
                out.append(time.perf_counter() - t0)
        f, b = statistics.median(ft), statistics.median(bt)
        rows.append({"figure": name, "baseline": base_name, "seconds": f, "base": b,
                     "ratio": f / b})
    return rows


def markdown(rows: list[dict[str, object]], reps: int, fraction: float, load: str,
             copies: int = 1) -> str:
    lines = [SECTION, "",
             f"`bench/bench_population.py --reps {reps} --fraction {fraction} --copies "
             f"{copies}` on "
             f"{platform.machine()}, {os.cpu_count()} cores (shared: other jobs ran; medians of "
             f"{reps} alternating repetitions), Polars {pl.__version__}. Adult (30,162 rows; "
             f"{copies} copies of it) is the population, a {fraction:.0%} sample (seed 7) the released table; QIs "
             f"{', '.join(QI)} with ARX's hierarchies; suppression 2%, metric loss. Ratio = "
             f"figure / baseline, measured in the same run. Load average at the start: {load}.",
             "", "| figure | seconds | baseline | baseline s | ratio |", "|---|---:|---|---:|---:|"]
    lines += [f"| {r['figure']} | {r['seconds']:.3g} | {r['baseline']} | {r['base']:.3g} | "
              f"{r['ratio']:.2g} |" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument("--copies", type=int, default=1,
                    help="the population is this many copies of Adult (k-map's k scaled)")
    ap.add_argument("--benchmarks-md", type=Path)
    args = ap.parse_args()
    if not (DATA / "adult.csv").exists():
        sys.exit(f"no Adult data at {DATA}: nothing measured")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    text = markdown(measure(args.fraction, args.reps, args.copies), args.reps, args.fraction,
                    load, args.copies)
    print(text)
    if args.benchmarks_md:
        old = args.benchmarks_md.read_text() if args.benchmarks_md.exists() else ""
        args.benchmarks_md.write_text(old.rstrip("\n") + "\n\n" + text)


if __name__ == "__main__":
    main()
