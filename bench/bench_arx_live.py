"""ARX measured live: ARX 3.9 in a warm JVM alternated with ours in-process, in ONE run.

For every configuration of issue 23's table (Adult, ARX's hierarchies) and the configurations
of ARX's own JUnit suite on Adult that the library can express, each round asks ARX's server
(``bench/arx/ArxLive.java``: one JVM, one request per round, ``--warmups`` untimed runs then
one timed run inside the JVM) and then runs ours the same way (``anonymize``, verify=False, in
this process: ``--ours-warmups`` untimed calls, by default as many as ARX's, then one timed
call; before session 13 ours ran once, timed right after ARX's reply, while the JVM's
collector and compiler threads still held the shared cores); the first round of each
configuration is a warm-up for both and is not counted.
Prints per configuration: the medians, the ratio ours / ARX, the CPU times (ours: this
process, every thread, Polars' included; ARX: the thread calling ``anonymize()``, which runs
ARX's whole search: steadier than wall times on a loaded machine), whether the optima are the
same node, nodes checked (ours, ARX), our roll-ups, and the load average before and after.

ARX is not part of this repository: build it from its public source first
(``ARX_GIT=<git dir of github.com/arx-deidentifier/arx> ../shared/tools/arx-bench/build.sh``,
into ``$ARX_BUILD``, default ``/tmp/arx-build``); this script compiles its harness against
that build into a temporary directory.

``--big-rows N`` measures the issue's whole-process goal instead: N rows sampled from Adult's
columns independently (seed 0, as ``bench_search.py``), 8 QIs, k=5, 2%, loss; per round ARX's
in-JVM ``anonymize()`` on that CSV (its server started with ``--csv``) alternated with one whole
``ldiv anonymize`` process (read CSV, search, write Parquet, re-verify), wall time and peak RSS.

Usage: python bench/bench_arx_live.py [--rounds 5] [--warmups 2] [--only NAME ...]
       [--ours-warmups N] [--coded] [--strategy bounded]
       python bench/bench_arx_live.py --big-rows 1000000 [--rounds 3] [--warmups 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
# LDIV_REPO: import the library of another checkout (bench_versions.py --live runs old vs new)
sys.path.insert(0, os.environ.get("LDIV_REPO") or str(REPO))

from ldiv_polars.hierarchy import Hierarchy  # noqa: E402
from ldiv_polars.models import (  # noqa: E402
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    Model,
    RecursiveCLDiversity,
    TCloseness,
)
from ldiv_polars.search import anonymize  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "adult"
Q8 = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
      "occupation"]
Q7 = Q8[:7]
Q8S = [*Q7, "salary-class"]  # ARX's JUnit layout: occupation sensitive, salary-class a QI
Models = Callable[[dict[str, Hierarchy]], list[Model]]


@dataclass(frozen=True)
class Case:
    """One configuration: ARX's spec (ArxLive's keys) and the same problem for ``anonymize``."""

    name: str
    arx: str
    qi: list[str]
    sensitive: str | None
    models: Models
    suppression: float
    metric: str = "loss"


def _t(t: float, distance: str = "equal") -> Models:
    return lambda hs: [TCloseness(t, distance,
                                  hs["occupation"] if distance == "hierarchical" else None)]


def _kt(k: int, t: float, distance: str) -> Models:
    return lambda hs: [KAnonymity(k), TCloseness(t, distance)]


CASES = [
    Case("8 QIs, k=5, 0%", "A0", Q8, None, lambda hs: [KAnonymity(5)], 0.0),
    Case("8 QIs, k=5, 2%", "A2", Q8, None, lambda hs: [KAnonymity(5)], 0.02),
    Case("7 QIs, distinct l=3, 2%", "B", Q7, "occupation",
         lambda hs: [DistinctLDiversity(3)], 0.02),
    Case("7 QIs, entropy l=3, 2%", "C-ent", Q7, "occupation",
         lambda hs: [EntropyLDiversity(3)], 0.02),
    Case("7 QIs, recursive (3,3), 2%", "C-rec", Q7, "occupation",
         lambda hs: [RecursiveCLDiversity(3, 3)], 0.02),
    Case("7 QIs, t=0.2 equal, 2%", "D-eq", Q7, "occupation", _t(0.2), 0.02),
    Case("7 QIs, t=0.2 hierarchical, 2%", "D-hier", Q7, "occupation",
         _t(0.2, "hierarchical"), 0.02),
    Case("7 QIs, t=0.2 ordered, 2%", "qi=7,tord=0.2,supp=0.02", Q7, "occupation",
         _t(0.2, "ordered"), 0.02),
    # ARX's JUnit suite on Adult (TestAnonymizationTCloseness / ...OrderedDistanceTCloseness):
    # the cases whose models the library has. Metric: ARX's DM (createDiscernabilityMetric(
    # false): |D| per suppressed row, our discernibility); the suite itself uses DM* (true),
    # which prices suppressed rows otherwise: the same without suppression
    Case("JUnit t 0: t=0.2 equal + k=5, 4%, DM", "qi=8s,teq=0.2,k=5,supp=0.04,metric=dm", Q8S,
         "occupation", _kt(5, 0.2, "equal"), 0.04, "discernibility"),
    Case("JUnit t 1: t=0.2 equal + k=100, 4%, DM", "qi=8s,teq=0.2,k=100,supp=0.04,metric=dm",
         Q8S, "occupation", _kt(100, 0.2, "equal"), 0.04, "discernibility"),
    Case("JUnit t 4: t=0.2 equal + k=5, 0%, DM", "qi=8s,teq=0.2,k=5,supp=0,metric=dm", Q8S,
         "occupation", _kt(5, 0.2, "equal"), 0.0, "discernibility"),
    Case("JUnit ord 0: t=0.2 ordered + k=5, 4%, DM", "qi=8s,tord=0.2,k=5,supp=0.04,metric=dm",
         Q8S, "occupation", _kt(5, 0.2, "ordered"), 0.04, "discernibility"),
    Case("JUnit ord 2: t=0.1 ordered + k=5, 0%, DM", "qi=8s,tord=0.1,k=5,supp=0,metric=dm",
         Q8S, "occupation", _kt(5, 0.1, "ordered"), 0.0, "discernibility"),
    Case("JUnit ord 3: t=0.2 ordered + k=100, 0%, DM",
         "qi=8s,tord=0.2,k=100,supp=0,metric=dm", Q8S, "occupation",
         _kt(100, 0.2, "ordered"), 0.0, "discernibility"),
]


class ArxServer:
    """ARX's harness in server mode: one warm JVM answering one configuration per line."""

    def __init__(self, build: Path, warmups: int, csv: Path | None = None) -> None:
        cp_file = build / "classpath"
        if not cp_file.exists():
            raise SystemExit(f"no ARX build in {build}: run ARX_GIT=<arx git dir> "
                             f"../shared/tools/arx-bench/build.sh (ARX_BUILD={build})")
        self.tmp = Path(tempfile.mkdtemp(prefix="arxlive"))
        cp = cp_file.read_text().strip()
        subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(self.tmp), "-cp",
                        cp, str(REPO / "bench" / "arx" / "ArxLive.java")], check=True)
        self.proc = subprocess.Popen(
            ["java", "-Xmx3g", "-cp", f"{cp}:{self.tmp}", "ArxLive", str(DATA), "-",
             str(warmups), "1", *(["--csv", str(csv)] if csv is not None else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)

    def run(self, spec: str) -> dict[str, str]:
        """One request: ``key=value`` fields of ARX's result line."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(spec + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if not line or "error=" in " ".join(line):
            raise SystemExit(f"ARX failed on {spec}: {' '.join(line)}")
        return dict(f.split("=", 1) for f in line[2:] if "=" in f)

    def close(self) -> None:
        """Stop the JVM and remove the compiled harness."""
        if self.proc.stdin is not None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _ours(df: pl.DataFrame, hs: dict[str, Hierarchy], case: Case, strategy: str = "auto"):
    return anonymize(df, case.qi, case.sensitive, {q: hs[q] for q in case.qi},
                     case.models(hs), suppression=case.suppression, metric=case.metric,
                     verify=False, strategy=strategy)


def coded_frame(case: Case, hs: dict[str, Hierarchy]) -> pl.DataFrame:
    """Adult read with the case's QI columns parsed straight into the Enum of their hierarchy's
    raw values (as ``ldiv anonymize`` reads a CSV, ``read_coded``): the dictionary-encoded
    records ARX's ``Data`` handle holds before its timed ``anonymize()`` (``ArxLive`` builds
    the handle, and so encodes the values, outside the timing)."""
    enums = {q: pl.Enum(hs[q].column(0).cast(pl.String)) for q in case.qi}
    return pl.read_csv(DATA / "adult.csv", separator=";", schema_overrides=enums)


def measure(arx: ArxServer, df: pl.DataFrame, hs: dict[str, Hierarchy], case: Case,
            rounds: int, warmups: int = 0, strategy: str = "auto") -> str:
    """``rounds`` alternated rounds after one warm-up round; one markdown row. ``warmups``:
    ours too runs that many untimed calls before its timed one in each round (ARX's own
    protocol; with none, our timed call starts while ARX's JVM still runs its collector
    and compiler threads on the shared cores). ``strategy``: ours' (``bounded``: the
    optimum only, as ARX computes; ``auto`` also proves the minimal set)."""
    ours_ms, arx_ms, ours_cpu, arx_cpu = [], [], [], []
    res, a = None, {}
    for r in range(rounds + 1):
        a = arx.run(case.arx)
        for _ in range(warmups):
            _ours(df, hs, case, strategy)
        t, c = time.perf_counter(), time.process_time()
        res = _ours(df, hs, case, strategy)
        elapsed, cpu = (time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3
        if r:
            ours_ms.append(elapsed)
            arx_ms.append(float(a["warm_median_ms"]))
            ours_cpu.append(cpu)
            arx_cpu.append(float(a.get("warm_cpu_median_ms", "nan")))
    assert res is not None
    mine = "none" if res.levels is None else \
        "[" + ",".join(str(res.levels[q]) for q in case.qi) + "]"
    o, x = statistics.median(ours_ms), statistics.median(arx_ms)
    oc, xc = statistics.median(ours_cpu), statistics.median(arx_cpu)
    return (f"| {case.name} | {o:,.0f} ms | {x:,.0f} ms | {o / x:.2f} | "
            f"{oc:,.0f} / {xc:,.0f} ms | {oc / xc:.2f} | "
            f"{'yes' if mine == a['optimum'] else 'NO: ' + mine + ' vs ' + a['optimum']} | "
            f"{res.strategy} | {res.checked:,} / {res.lattice_size:,} | {res.rollups:,} | "
            f"{int(a['checked']):,} |")


def big_process(build: Path, rows: int, rounds: int, warmups: int) -> None:
    """The issue's whole-process row: ``rows`` sampled from Adult, ARX alternated with ours."""
    import numpy as np
    from bench_search import run_measured  # the launcher that reads the child's peak RSS

    df = pl.read_csv(DATA / "adult.csv", separator=";")
    rng = np.random.default_rng(0)
    big = pl.DataFrame({c: df[c].sample(rows, with_replacement=True,
                                         seed=int(rng.integers(1 << 31))) for c in df.columns})
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "big.csv", Path(tmp) / "out.parquet"
        big.write_csv(src, separator=";")
        del big
        cmd = [sys.executable, "-m", "ldiv_polars", "anonymize", str(src), str(out), "--qi",
               ",".join(Q8), "--hierarchies", str(DATA), "--k", "5", "--suppression", "0.02",
               "--metric", "loss", "--json"]
        arx = ArxServer(build, warmups, src)
        load0 = os.getloadavg()
        ours, theirs, rss, mine = [], [], 0, ""
        try:
            for _ in range(rounds):
                a = arx.run("A2")
                theirs.append(float(a["warm_median_ms"]) / 1e3)
                wall, peak, proc = run_measured(cmd)
                if proc.returncode != 0:
                    raise SystemExit(proc.stderr)
                ours.append(wall)
                rss = max(rss, peak)
                levels = json.loads(proc.stdout)["optimum"]["levels"]
                mine = "[" + ",".join(str(levels[q]) for q in Q8) + "]"
        finally:
            arx.close()
        load1 = os.getloadavg()
    o, x = statistics.median(ours), statistics.median(theirs)
    print(f"{rows:,} rows, 8 QIs, k=5, 2%, loss: `ldiv anonymize` process {o:.2f} s "
          f"(median of {rounds}: {min(ours):.2f}-{max(ours):.2f} s, peak RSS {rss / 1e9:.2f} GB) "
          f"vs ARX in-JVM anonymize() {x:.2f} s ({min(theirs):.2f}-{max(theirs):.2f} s): "
          f"{o / x:.3f}x (goal <= 0.1x); same optimum as ARX: "
          f"{'yes' if mine == a['optimum'] else 'NO: ' + mine + ' vs ' + a['optimum']}; load average "
          f"{load0[0]:.1f} before, {load1[0]:.1f} after")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmups", type=int, default=2,
                    help="ARX's untimed runs inside the JVM before each timed one")
    ap.add_argument("--arx-build", type=Path,
                    default=Path(os.environ.get("ARX_BUILD", "/tmp/arx-build")))
    ap.add_argument("--only", nargs="*", help="configuration names (substrings) to run")
    ap.add_argument("--coded", action="store_true",
                    help="give ours the records with the QIs read as codes (coded_frame), as "
                         "ARX's timed call gets them, instead of string columns")
    ap.add_argument("--ours-warmups", type=int, default=None,
                    help="our untimed calls before each timed one (default: --warmups, ARX's "
                         "protocol; 0: timed right after ARX's reply, as before session 13)")
    ap.add_argument("--strategy", default="auto",
                    help="our search strategy (bounded: the optimum only, no minimal set, as "
                         "ARX; auto: also the complete minimal set)")
    ap.add_argument("--big-rows", type=int, default=None,
                    help="measure the whole-process row on this many sampled rows instead")
    args = ap.parse_args()
    if args.big_rows:
        big_process(args.arx_build, args.big_rows, args.rounds, args.warmups)
        return
    cases = [c for c in CASES if not args.only or any(s in c.name for s in args.only)]
    df = pl.read_csv(DATA / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(DATA / f"adult_hierarchy_{q}.csv") for q in [*Q8, "salary-class"]}
    arx = ArxServer(args.arx_build, args.warmups)
    load0 = os.getloadavg()
    ours_warmups = args.warmups if args.ours_warmups is None else args.ours_warmups
    print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; "
          f"{os.cpu_count()} cores; medians of {args.rounds} alternated rounds after a "
          f"warm-up round (ARX: {args.warmups} untimed runs in its warm JVM before each "
          f"timed one); ours: anonymize(verify=False) in-process, {ours_warmups} untimed "
          f"call(s) before each timed one"
          f"{'; QIs given as codes (--coded)' if args.coded else ''}; our strategy "
          f"{args.strategy}\n")
    print("| configuration (Adult, ARX hierarchies) | ours | ARX | ours / ARX | CPU ours / ARX "
          "| CPU ratio | same optimum | our strategy | ours checked / lattice | our roll-ups "
          "| ARX checked |")
    print("|" + "---|" * 11)
    try:
        for case in cases:
            data = coded_frame(case, hs) if args.coded else df
            print(measure(arx, data, hs, case, args.rounds, ours_warmups, args.strategy),
                  flush=True)
    finally:
        arx.close()
    load1 = os.getloadavg()
    print(f"\nload average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    main()
