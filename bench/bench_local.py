"""Cell suppression and local recoding on Adult, and the release of a large synthetic table.

``adult``: for QI sets of 5 to 8 of Adult's columns and k = 2, 3, 5, 10 (k-anonymity, sensitive
``occupation``), in one process, the same input for every method:

- ``full-domain``: :func:`ldiv_polars.anonymize` (optimal node, ``--suppression`` of the rows
  suppressed at most, metric ``loss``): the baseline;
- ``cells greedy`` / ``cells exact``: :func:`ldiv_polars.suppress_cells` (own-value semantics;
  exact: MILP with ``--time-limit``), cells suppressed, optimality or gap;
- ``gen+cells``: :func:`ldiv_polars.generalize_and_suppress` (greedy cells, metric ``loss``);
- ``local``: :func:`ldiv_polars.local_recode` (``--suppression`` per round, metric ``loss``);
- ``mondrian``: :func:`ldiv_polars.mondrian` (strict), its own metrics.

Rows touched: records whose QI cells are not all released raw (suppressed rows for
full-domain are counted apart). Loss: the per-cell ``loss`` of :mod:`ldiv_polars.local.utility`
(the search's ``loss`` on a full-domain node). Prints a Markdown table; ``--json`` writes rows.

``compare``: :func:`ldiv_polars.compare_methods` (what ``ldiv anonymize --compare`` / ``--method
auto`` run) on the same QI sets and k: every method's ``loss`` on the common per-cell measure
(Mondrian included), as a ratio to full-domain generalization's (the baseline, same run), the
method ``auto`` chooses, and each method's seconds.

``release``: ``suppress_cells`` (greedy, k=10) on a synthetic Parquet file of ``--rows`` rows
(:func:`ldiv_polars.datasets.write_synthetic`, or ``--path``), then :meth:`LocalResult.sink`
(write in batches + re-verification pass), each step in a subprocess reporting wall time and
peak RSS; baselines of the same run: the bare streaming group-by and a plain copy of the input
(``sink_parquet``); ``--local``: local recoding too.

``timelimit``: the exact method (``suppress_cells(method="exact")``) on Adult with ``--qis``
and ``--k`` under ``--time-limit``: wall seconds against the limit, status, the phase that found
the release, each phase's seconds (the final MILP's race included), whether optimality was
proven, the LP bound, the dive's release, each near MILP's (its reduced cost, release, seconds
since its round began), bound and gap; baseline (same run): the greedy's seconds.
The load average is printed beside the figures.

``peaks``: where the peak RSS of a cell-suppression release comes from, on the synthetic file of
``--rows`` rows, each step in a fresh process: the bare streaming group-by (baseline), the keys +
greedy + plan (no write), the same + the write in batches (``LocalResult.sink`` on a Parquet
input), the same through Polars' streamed sink (the earlier path), the batched write with its
re-verification, the same with
the plan's join only counted (no write), a plain copy of the input (scan, Parquet sink: Polars'
writer alone), and the re-verification alone of the written file (:func:`ldiv_polars.local.verify.verify_release`).

Usage (from the repository root)::

    .venv/bin/python bench/bench_local.py adult --time-limit 60
    .venv/bin/python bench/bench_local.py compare
    .venv/bin/python bench/bench_local.py release --rows 10000000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

ADULT = REPO.parent / "shared" / "data" / "adult"
QI_ORDER = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
            "salary-class"]


def adult(args: argparse.Namespace) -> None:
    import polars as pl

    import ldiv_polars as lp

    df = pl.read_csv(ADULT / "adult.csv", separator=";")
    hs = {q: lp.Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv") for q in QI_ORDER}
    rows = []
    for nq in args.qis:
        qi = QI_ORDER[:nq]
        for k in args.k:
            models = [lp.KAnonymity(k)]
            row: dict[str, object] = {"qis": nq, "k": k}
            t = time.perf_counter()
            full = lp.anonymize(df, qi, "occupation", hs, models, suppression=args.suppression,
                                metric="loss")
            row["full_s"] = time.perf_counter() - t
            row["full_rows_suppressed"] = full.suppressed_rows
            row["full_loss"] = full.metrics["loss"]
            t = time.perf_counter()
            g = lp.suppress_cells(df, qi, "occupation", models)
            row["greedy_s"] = time.perf_counter() - t
            row["greedy_cells"] = g.cells_suppressed
            row["greedy_rows"] = g.records_touched
            row["greedy_loss"] = g.utility["metrics"]["loss"]
            if nq <= args.exact_max_qis:
                t = time.perf_counter()
                e = lp.suppress_cells(df, qi, "occupation", models, method="exact",
                                      time_limit=args.time_limit)
                row["exact_s"] = time.perf_counter() - t
                row["exact_cells"] = e.cells_suppressed
                row["exact_status"] = e.details["status"]
                row["exact_bound"] = e.details["bound"]
                row["exact_gap"] = e.details["gap"]
                row["exact_rows"] = e.records_touched
            t = time.perf_counter()
            c = lp.generalize_and_suppress(df, qi, "occupation", hs, models)
            row["gencells_s"] = time.perf_counter() - t
            row["gencells_rows"] = c.records_touched
            row["gencells_cells"] = c.cells_suppressed
            row["gencells_loss"] = c.utility["metrics"]["loss"]
            row["gencells_node"] = list(c.details["node"].values())
            t = time.perf_counter()
            loc = lp.local_recode(df, qi, "occupation", hs, models,
                                  suppression=args.suppression)
            row["local_s"] = time.perf_counter() - t
            row["local_rows"] = loc.records_touched
            row["local_suppressed"] = loc.utility["records_suppressed"]
            row["local_rounds"] = len(loc.details["rounds"])
            row["local_loss"] = loc.utility["metrics"]["loss"]
            t = time.perf_counter()
            m = lp.mondrian(df, qi, "occupation", models)
            row["mondrian_s"] = time.perf_counter() - t
            row["mondrian_metrics"] = m.metrics
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(markdown(rows))


def markdown(rows: list[dict[str, object]]) -> str:
    head = ("| QIs | k | cells greedy | cells exact | greedy / lower bound | rows touched: "
            "full-domain supp. / cells / gen+cells / local | loss: full / cells / gen+cells / "
            "local | time s: full / greedy / exact / gen+cells / local / mondrian |")
    out = [head, "|" + "---|" * 7]
    for r in rows:
        if "exact_cells" not in r:
            exact = "-"
        elif r["exact_status"] == "too_large":
            exact = "not built (> 3M columns)"
        elif r["exact_status"] == "optimal":
            exact = f"{r['exact_cells']} (optimal)"
        elif r["exact_gap"] is None or r["exact_bound"] is None:
            exact = f"{r['exact_cells']} (LP not solved in time: no bound)"
        else:
            exact = (f"{r['exact_cells']} (bound {r['exact_bound']:.0f}, "
                     f"gap {100 * r['exact_gap']:.2f}%)")
        ratio = "-" if not r.get("exact_bound") else \
            f"{r['greedy_cells'] / r['exact_bound']:.3f}"
        out.append(
            f"| {r['qis']} | {r['k']} | {r['greedy_cells']} | {exact} | {ratio} | "
            f"{r['full_rows_suppressed']} / {r['greedy_rows']} / {r['gencells_rows']} / "
            f"{r['local_rows']} | {r['full_loss']:.4f} / {r['greedy_loss']:.4f} / "
            f"{r['gencells_loss']:.4f} / {r['local_loss']:.4f} | {r['full_s']:.2f} / "
            f"{r['greedy_s']:.2f} / {r.get('exact_s', float('nan')):.1f} / "
            f"{r['gencells_s']:.2f} / {r['local_s']:.2f} / {r['mondrian_s']:.2f} |")
    return "\n".join(out)


def release(args: argparse.Namespace) -> None:
    path = _synthetic(args)
    out = Path(args.dir) / f"ldiv_local_release_{args.rows}.parquet"
    qi = args.qi.split(",")
    model = f"lp.KAnonymity({args.k})"
    summary = ("extra = {'keys': r.details.get('keys'), 'cells': r.cells_suppressed, "
               "'rows_touched': r.records_touched, 'verified': r.verification.passed, "
               "'rows': r.verification.rows}\n")
    steps = {
        "bare streaming group-by (baseline)":
            f"pl.scan_parquet({str(path)!r}).group_by({[*qi, 'disease']!r}).len()"
            ".collect(engine='streaming')\n",
        "plain copy of the input (scan -> sink_parquet, Polars' writer alone)":
            f"pl.scan_parquet({str(path)!r}).sink_parquet({str(out) + '.copy'!r})\n",
        "cells (greedy): keys + plan + write + re-verification":
            f"r = lp.suppress_cells({str(path)!r}, {qi!r}, 'disease', {model}, verify=False)"
            f"\nr.sink({str(out)!r})\n" + summary,
        "local recoding: keys + rounds + plan + write + re-verification":
            f"from bench.bench_local import synth_hierarchies\n"
            f"r = lp.local_recode({str(path)!r}, {qi!r}, 'disease', "
            f"synth_hierarchies({qi!r}), {model}, suppression=0.01, verify=False)"
            f"\nr.sink({str(out)!r})\n" + summary
            + "extra['rounds'] = len(r.details['rounds'])\n",
    }
    if not args.local:
        steps = {k: v for k, v in steps.items() if not k.startswith("local")}
    _run_steps(f"{args.rows:,} rows, QI {args.qi}, k={args.k}", steps)
    out.unlink(missing_ok=True)
    Path(str(out) + ".copy").unlink(missing_ok=True)


def peaks(args: argparse.Namespace) -> None:
    path = _synthetic(args)
    out = Path(args.dir) / f"ldiv_cells_peaks_{args.rows}.parquet"
    qi = args.qi.split(",")
    cells = (f"r = lp.suppress_cells({str(path)!r}, {qi!r}, 'disease', "
             f"lp.KAnonymity({args.k}), verify=False)\n")
    steps = {
        "bare streaming group-by (baseline)":
            f"pl.scan_parquet({str(path)!r}).group_by({[*qi, 'disease']!r}).len()"
            ".collect(engine='streaming')\n",
        "keys + greedy + plan (no write)": cells,
        "keys + greedy + plan + write in batches (no re-verification)":
            cells + f"r.sink({str(out)!r}, verify=False)\n",
        "keys + greedy + plan + Polars' streamed sink (no re-verification)":
            cells + f"r._input = None  # the sink path\nr.sink({str(out)!r}, verify=False)\n",
        "keys + greedy + plan + write in batches + re-verification":
            cells + f"r.sink({str(out)!r})\n",
        "plan applied (the join), rows counted, no write":
            cells + "r.output.select(pl.len()).collect(engine='streaming')\n",
        "copy of the input, no join (Polars' Parquet sink alone)":
            f"pl.scan_parquet({str(path)!r}).sink_parquet({str(out) + '.copy'!r})\n",
        "re-verification alone of the written file":
            "from ldiv_polars.local.verify import verify_release\n"
            f"v = verify_release(pl.scan_parquet({str(out)!r}), {qi!r}, 'disease', "
            f"lp.KAnonymity({args.k}), 'value')\nassert v.passed, v\n",
    }
    _run_steps(f"{args.rows:,} rows, QI {args.qi}, k={args.k}", steps)
    out.unlink(missing_ok=True)
    Path(str(out) + ".copy").unlink(missing_ok=True)


def _synthetic(args: argparse.Namespace) -> Path:
    """The synthetic Parquet file of ``args.rows`` rows (written once, then reused)."""
    from ldiv_polars.datasets.synth import write_synthetic

    if args.path:
        return Path(args.path)
    path = Path(args.dir) / f"ldiv_synth_{args.rows}_{args.seed}.parquet"
    if not path.exists():
        tmp = path.with_suffix(".tmp.parquet")
        write_synthetic(tmp, args.rows, args.seed)
        tmp.rename(path)
    return path


def _run_steps(title: str, steps: dict[str, str]) -> None:
    """Run each step's code in a fresh process; print its time, peak RSS, ratio to the first."""
    head = f"import json, resource, sys, time; sys.path.insert(0, {str(REPO)!r})\n" \
        "import polars as pl, ldiv_polars as lp\nt = time.perf_counter()\n"
    tail = "print(json.dumps({'s': time.perf_counter() - t, 'peak_rss_mb': " \
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, " \
        "**globals().get('extra', {})}))\n"
    print(f"| {title} | time | peak RSS | vs bare |\n|---|---:|---:|---:|")
    base = None
    for name, body in steps.items():
        res = subprocess.run([sys.executable, "-c", head + body + tail], capture_output=True,
                             text=True, check=True, cwd=REPO)
        m = json.loads(res.stdout.strip().splitlines()[-1])
        base = base or m["s"]
        extra = {k: v for k, v in m.items() if k not in ("s", "peak_rss_mb")}
        print(f"| {name} {extra or ''} | {m['s']:.2f} s | {m['peak_rss_mb']:.0f} MB | "
              f"{m['s'] / base:.2f}x |", flush=True)


def synth_hierarchies(qi: list[str]) -> dict[str, object]:
    """Hierarchies of the synthetic table's QIs (:mod:`ldiv_polars.datasets.synth`): age in
    intervals of 5, 10, 20 years; every other QI its value, then ``*``."""
    import ldiv_polars as lp
    from ldiv_polars.datasets import synth

    values = {"sex": synth.SEXES, "race": synth.RACES, "education": synth.EDUCATION,
              "marital_status": synth.MARITAL}
    out: dict[str, object] = {}
    for q in qi:
        if q == "age":
            out[q] = lp.interval_hierarchy(range(0, 121), [5, 10, 20], name=q)
        else:
            out[q] = lp.Hierarchy([[v, "*"] for v in values[q]], name=q)
    return out


def compare(args: argparse.Namespace) -> None:
    import polars as pl

    import ldiv_polars as lp

    df = pl.read_csv(ADULT / "adult.csv", separator=";")
    hs = {q: lp.Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv") for q in QI_ORDER}
    from ldiv_polars.local import METHODS as methods
    print("| QIs | k | loss: " + " / ".join(methods) + " | ratio to global: "
          + " / ".join(methods[1:]) + " | auto | time s: " + " / ".join(methods) + " |")
    print("|---" * 6 + "|")
    for nq in args.qis:
        qi = QI_ORDER[:nq]
        for k in args.k:
            cmp = lp.compare_methods(df, qi, "occupation", lp.KAnonymity(k),
                                     hierarchies={q: hs[q] for q in qi},
                                     suppression=args.suppression)
            o = cmp.outcomes
            base = o["global"].loss
            print(f"| {nq} | {k} | " + " / ".join(f"{o[m].loss:.4f}" for m in methods)
                  + " | " + " / ".join(f"{o[m].loss / base:.2f}" for m in methods[1:])
                  + f" | {cmp.chosen} | "
                  + " / ".join(f"{o[m].elapsed_s:.2f}" for m in methods) + " |", flush=True)


def timelimit(args: argparse.Namespace) -> None:
    import os

    import polars as pl

    import ldiv_polars as lp

    df = pl.read_csv(ADULT / "adult.csv", separator=";")
    for nq in args.qis:
        for k in args.k:
            qi, models = QI_ORDER[:nq], [lp.KAnonymity(k)]
            t = time.perf_counter()
            lp.suppress_cells(df, qi, "occupation", models)
            greedy_s = time.perf_counter() - t
            t = time.perf_counter()
            e = lp.suppress_cells(df, qi, "occupation", models, method="exact",
                                  time_limit=args.time_limit)
            wall = time.perf_counter() - t
            d = e.details
            print(json.dumps({"qis": nq, "k": k, "time_limit": args.time_limit,
                              "exact_wall_s": round(wall, 2), "greedy_s": round(greedy_s, 2),
                              "status": d["status"], "release_from": d["release_from"],
                              "cells": e.cells_suppressed, "greedy_cost": d["greedy_cost"],
                              "cost": d["cost"], "bound": d["bound"], "gap": d["gap"],
                              "proven": d["status"] == "optimal",
                              "phase_s": d["steps"].get("phase_s"),
                              "lp_bound": d["steps"].get("lp_bound"),
                              "dive": d["steps"].get("dive"),
                              "near": d["steps"].get("near"),
                              "columns_fixed": d["steps"].get("columns_fixed"),
                              "load": os.getloadavg()}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("adult")
    a.add_argument("--qis", type=int, nargs="+", default=[5, 6, 7, 8])
    a.add_argument("--k", type=int, nargs="+", default=[2, 3, 5, 10])
    a.add_argument("--time-limit", type=float, default=60.0)
    a.add_argument("--exact-max-qis", type=int, default=8)
    a.add_argument("--suppression", type=float, default=0.05)
    a.add_argument("--json")
    c = sub.add_parser("compare")
    c.add_argument("--qis", type=int, nargs="+", default=[5, 6, 7, 8])
    c.add_argument("--k", type=int, nargs="+", default=[2, 3, 5, 10])
    c.add_argument("--suppression", type=float, default=0.05)
    for name in ("release", "peaks"):  # both on the synthetic file
        r = sub.add_parser(name)
        r.add_argument("--rows", type=int, default=10_000_000)
        r.add_argument("--seed", type=int, default=1)
        r.add_argument("--k", type=int, default=10)
        r.add_argument("--qi", default="age,sex,race,education,marital_status")
        r.add_argument("--dir", default=tempfile.gettempdir())
        r.add_argument("--path", help="an existing synthetic file of --rows rows to use")
        r.add_argument("--local", action="store_true", help="release: local recoding too")
    tl = sub.add_parser("timelimit")
    tl.add_argument("--qis", type=int, nargs="+", default=[5])
    tl.add_argument("--k", type=int, nargs="+", default=[3])
    tl.add_argument("--time-limit", type=float, default=60.0)
    args = p.parse_args()
    {"adult": adult, "compare": compare, "release": release, "timelimit": timelimit,
     "peaks": peaks}[args.cmd](args)


if __name__ == "__main__":
    main()
