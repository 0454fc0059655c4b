"""Foundation benchmark: ``ldiv_polars.summary`` / ``check`` / ``ldiv check`` next to the floor,
the one pass the engine cannot avoid (a bare ``group_by(qi + [s]).len()`` on the same data),
and next to pycanon.

Two modes (run from the repository root):

- **In-memory tables** (Adult, or synthetic CSV rows with ``--rows N``)::

      .venv/bin/python bench/bench_check.py                  # Adult, 8 QIs, age in decades
      .venv/bin/python bench/bench_check.py --rows 1000000   # synthetic rows as CSV

  In one process, medians over ``--reps`` repetitions (after one warm-up) of: the bare pass
  ``pl.scan_csv(...).group_by(qi+[s]).len().collect(engine="streaming")``,
  ``ldiv_polars.summary(...)`` (all its models together), ``ldiv_polars.check(...)`` with eight
  models, and, as processes, the ``ldiv check --json`` CLI and the same bare pass in a fresh
  ``python`` (interpreter start and imports included in both). Then pycanon's time for k,
  distinct l, entropy l and t-closeness on the same CSV, run by ``.venv-pycanon`` when present
  (``scripts/setup_pycanon_venv.sh``; one repetition, it is slow). Last, the in-memory floor:
  ``ldiv_polars.summary(df, ...)`` on a frame already loaded against a bare eager
  ``df.group_by(qi+[s]).len()`` on the same frame, for the same table and (Adult without
  ``--qi``) for raw Adult with the 7 QIs of issue 17.

- **A big Parquet file** (``--parquet PATH``; make one with
  ``python -m ldiv_polars synth --rows 10000000 --out bench/data/synth10m.parquet``)::

      .venv/bin/python bench/bench_check.py --parquet bench/data/synth10m.parquet
      # both, written to BENCHMARKS.md (what the figures there come from):
      .venv/bin/python bench/bench_check.py --parquet bench/data/synth10m.parquet \
          --also-table --benchmarks-md BENCHMARKS.md

  Each measurement is a fresh wrapper process that starts the workload as its only child and
  reads the child's wall time and peak RSS (``resource.getrusage(RUSAGE_CHILDREN)``): the bare
  streaming ``scan_parquet(...).group_by(qi+[s]).len()`` and the ``ldiv check --json`` CLI.

Prints markdown tables; ``--markdown FILE`` also writes them to FILE and ``--benchmarks-md
BENCHMARKS.md`` replaces (or appends) the section ``## Foundation: ldiv check`` there.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

ADULT = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
ADULT_QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
            "salary-class"]
ADULT_SA = "occupation"
ADULT_QI7 = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
"""The in-memory configuration of issue 17: raw Adult (age as read), 7 QIs, occupation."""
SYNTH_QI = ["age", "sex", "race", "education", "marital_status"]
SYNTH_SA = "disease"
PYCANON_PY = REPO / ".venv-pycanon" / "bin" / "python"
RUNNER = REPO / "scripts" / "pycanon_runner.py"
SECTION = "## Foundation: ldiv check"


# ------------------------------------------------------------------------------------ helpers

def median_times(fns: list, reps: int, warmup: int = 1) -> list[tuple[float, object]]:
    """Median wall time of each function; repetitions are interleaved (f1, f2, ..., f1, f2,
    ...) so that every function sees the same machine load."""
    outs: list[object] = [None] * len(fns)
    for _ in range(warmup):
        outs = [fn() for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            outs[i] = fn()
            times[i].append(time.perf_counter() - t0)
    return [(statistics.median(t), o) for t, o in zip(times, outs)]


def measure_process(cmd: list[str]) -> dict:
    """Run ``cmd`` inside a fresh wrapper process; return its wall seconds and peak RSS (MB).

    The wrapper (this file with ``--measure``) has exactly one child, so
    ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` there is the workload's own peak."""
    wrapper = [sys.executable, str(Path(__file__).resolve()), "--measure", "--", *cmd]
    proc = subprocess.run(wrapper, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"measurement failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _measure_main(cmd: list[str]) -> int:
    t0 = time.perf_counter()
    child = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # ru_maxrss is KiB on Linux, bytes on macOS
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / (1024 * 1024)
    print(json.dumps({"seconds": seconds, "peak_rss_mb": usage.ru_maxrss * scale,
                      "returncode": child.returncode, "stdout": child.stdout[-4000:],
                      "stderr": child.stderr[-2000:]}))
    return 0


def bare_code(path: str, qi: list[str], s: str, separator: str | None) -> str:
    """Python source of the bare pass (the floor), for a fresh interpreter."""
    if path.endswith(".parquet"):
        scan = f"pl.scan_parquet({path!r})"
    else:
        scan = f"pl.scan_csv({path!r}, separator={separator!r}, infer_schema_length=10_000)"
    return (
        "import time, polars as pl\n"
        "t0 = time.perf_counter()\n"
        f"fs = {scan}.group_by({qi + [s]!r}).len().collect(engine='streaming')\n"
        "print(fs.height, time.perf_counter() - t0)\n"
    )


def cli_cmd(path: str, qi: list[str], s: str, separator: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "ldiv_polars", "check", path, "--qi", ",".join(qi),
           "--sensitive", s, "--json"]
    if separator:
        cmd += ["--separator", separator]
    return cmd


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:,.1f} ms"
    return f"{seconds:,.2f} s"


def machine() -> str:
    import duckdb
    import polars as pl

    return (f"{platform.machine()}, {os.cpu_count()} logical CPUs (shared with other jobs), "
            f"Python {platform.python_version()}, polars {pl.__version__}, "
            f"duckdb {duckdb.__version__}")


# ------------------------------------------------------------------------------ table mode

def models():
    import ldiv_polars as lp

    return [
        lp.KAnonymity(5),
        lp.DistinctLDiversity(2),
        lp.EntropyLDiversity(2),
        lp.RecursiveCLDiversity(3, 2),
        lp.AlphaKAnonymity(0.5, 2),
        lp.TCloseness(0.3),
        lp.DeltaDisclosure(2.0),
        lp.BetaLikeness(2.0),
    ]


def prepare_csv(args: argparse.Namespace, workdir: Path) -> tuple[str, Path, list[str], str]:
    """The CSV every tool reads: Adult with age in decades (a Polars expression), or synthetic
    rows. Returns (label, path, qi, sensitive)."""
    import polars as pl

    if args.rows:
        from ldiv_polars.datasets.synth import synthesize

        path = workdir / f"synth_{args.rows}_{args.seed}.csv"
        synthesize(args.rows, args.seed).write_csv(path, separator=";")
        return f"synthetic, {args.rows:,} rows", path, list(args.qi or SYNTH_QI), (
            args.sensitive or SYNTH_SA)
    adult = Path(args.adult)
    if not adult.exists():
        raise SystemExit(f"Adult not found at {adult} (use --adult or --rows N)")
    path = workdir / "adult_age_decades.csv"
    (
        pl.scan_csv(adult, separator=";")
        .with_columns((pl.col("age") // 10 * 10).cast(pl.String).alias("age"))
        .sink_csv(path, separator=";")
    )
    return "Adult (30,162 rows), 8 QIs, age in decades", path, list(args.qi or ADULT_QI), (
        args.sensitive or ADULT_SA)


def in_memory_lines(df, qi: list[str], s: str, reps: int, label: str) -> list[str]:
    """Markdown rows: ``ldiv_polars.summary`` on a frame already in memory against the in-memory
    floor, a bare eager ``df.group_by(qi + [s]).len()`` on the same frame (and the same group-by
    as a lazy in-memory query), medians of interleaved repetitions in this process."""
    import ldiv_polars as lp

    (t_eager, _), (t_lazy, _), (t_summary, _) = median_times(
        [lambda: df.group_by(qi + [s]).len(),
         lambda: df.lazy().group_by(qi + [s]).len().collect(),
         lambda: lp.summary(df, qi, s, l=2)],
        reps,
    )
    return [
        f"**In memory: {label}**; QI = {', '.join(qi)}; sensitive = {s}; the frame already "
        f"loaded; medians of {reps} interleaved repetitions after a warm-up.",
        "",
        "| task | time | vs in-memory floor |",
        "|---|---:|---:|",
        f"| floor: `df.group_by(qi+[s]).len()` (eager) | {fmt_s(t_eager)} | 1.00x |",
        f"| `df.lazy().group_by(qi+[s]).len().collect()` | {fmt_s(t_lazy)} | "
        f"{t_lazy / t_eager:.2f}x |",
        f"| `ldiv_polars.summary(df, ...)` | {fmt_s(t_summary)} | **{t_summary / t_eager:.2f}x** "
        f"({t_summary / t_lazy:.2f}x the lazy group-by) |",
    ]


def exact_step_lines(df, qi: list[str], s: str, reps: int) -> list[str]:
    """Markdown rows: what the Polars exact step (the classes within rounding of a float
    threshold decided by ``Model.decide``, issue 16) costs ``check`` on a frame in memory: the
    8 models with the step as shipped against the same call with every model's
    ``uncertain()`` patched to ``None`` (float verdicts only), interleaved in this process;
    CPU time (``time.process_time``, every thread) and wall, medians of ``reps``."""
    from contextlib import ExitStack
    from unittest import mock

    import ldiv_polars as lp

    ms = models()
    exact = [m for m in ms if m.uncertain() is not None]

    def without_step():
        with ExitStack() as stack:
            for cls in {type(m) for m in exact}:
                stack.enter_context(mock.patch.object(cls, "uncertain", lambda self: None))
            return lp.check(df, qi, s, ms)

    runs = {"on": [], "off": []}
    fns = {"on": lambda: lp.check(df, qi, s, ms), "off": without_step}
    for _ in range(2):  # warm-up
        for fn in fns.values():
            fn()
    for _ in range(reps):
        for key, fn in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            res = fn()
            runs[key].append((time.process_time() - c0, time.perf_counter() - t0, res))
    same = [m.passed for m in runs["on"][-1][2].models] == [
        m.passed for m in runs["off"][-1][2].models]
    cpu = {k: statistics.median(r[0] for r in v) for k, v in runs.items()}
    wall = {k: statistics.median(r[1] for r in v) for k, v in runs.items()}
    return [
        f"**The Polars exact step in `check`** ({len(exact)} of the {len(ms)} models have one: "
        f"{', '.join(m.key for m in exact)}); the frame in memory; medians of {reps} "
        f"interleaved runs; same verdicts: {same}.",
        "",
        "| `check`, 8 models | CPU | wall |",
        "|---|---:|---:|",
        f"| exact step off (float verdicts only) | {fmt_s(cpu['off'])} | {fmt_s(wall['off'])} |",
        f"| exact step on (as shipped) | {fmt_s(cpu['on'])} | {fmt_s(wall['on'])} |",
        f"| on / off | **{cpu['on'] / cpu['off']:.2f}x** | {wall['on'] / wall['off']:.2f}x |",
    ]


def run_pycanon(path: Path, qi: list[str], s: str) -> dict | None:
    if not PYCANON_PY.exists():
        print(f"(pycanon venv absent at {PYCANON_PY}: run scripts/setup_pycanon_venv.sh)",
              file=sys.stderr)
        return None
    job = [{"csv": str(path), "sep": ";", "qi": qi, "sa": s,
            "metrics": ["k", "l", "entropy_l", "t"]}]
    proc = subprocess.run([str(PYCANON_PY), str(RUNNER), "--batch"], input=json.dumps(job),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"(pycanon runner failed: {proc.stderr[-500:]})", file=sys.stderr)
        return None
    return json.loads(proc.stdout)[0]


def table_mode(args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory(prefix="ldiv_bench_") as tmp:
        return _table_mode(args, Path(tmp))


def _table_mode(args: argparse.Namespace, workdir: Path) -> str:
    import polars as pl

    import ldiv_polars as lp

    label, path, qi, s = prepare_csv(args, workdir)
    sep = ";"
    reps = args.reps

    def bare():
        return (
            pl.scan_csv(path, separator=sep, infer_schema_length=10_000)
            .group_by(qi + [s]).len().collect(engine="streaming")
        )

    ms = models()
    (t_bare, fs), (t_summary, summ), (t_check, res) = median_times(
        [bare,
         lambda: lp.summary(path, qi, s, l=2, separator=sep),
         lambda: lp.check(path, qi, s, ms, separator=sep)],
        reps,
    )
    proc_reps = max(3, reps // 2)
    bare_proc, cli_proc = [], []
    for _ in range(proc_reps):  # interleaved
        bare_proc.append(measure_process([sys.executable, "-c",
                                          bare_code(str(path), qi, s, sep)]))
        cli_proc.append(measure_process(cli_cmd(str(path), qi, s, sep)))
    cli_json = json.loads(cli_proc[-1]["stdout"])
    expected = json.loads(json.dumps(summ))
    # the summary's keys come first (then the requested models' verdicts: none here)
    assert list(cli_json)[:len(expected)] == list(expected) and all(
        (a is None and b is None) or (a is not None and b is not None
                                      and math.isclose(a, b, rel_tol=1e-9))
        for a, b in ((cli_json[k], expected[k]) for k in expected)
    ), f"CLI JSON {cli_json} differs from summary() {expected}"
    t_bare_proc = statistics.median(m["seconds"] for m in bare_proc)
    t_cli = statistics.median(m["seconds"] for m in cli_proc)
    pc = None if args.no_pycanon else run_pycanon(path, qi, s)

    lines = [
        f"**{label}**; QI = {', '.join(qi)}; sensitive = {s}; {summ['classes']:,} classes, "
        f"frequency set {fs.height:,} rows. Medians of {reps} interleaved repetitions after a "
        f"warm-up (processes: {proc_reps}; pycanon: one run each).",
        "",
        "| task | time | vs bare pass |",
        "|---|---:|---:|",
        f"| bare pass `scan_csv().group_by(qi+[s]).len()` (streaming) | {fmt_s(t_bare)} | 1.00x |",
        f"| `ldiv_polars.summary` (k, distinct/entropy/recursive l, alpha, t, delta, risk) | "
        f"{fmt_s(t_summary)} | **{t_summary / t_bare:.2f}x** |",
        f"| `ldiv_polars.check` with {len(ms)} models "
        f"({', '.join(m.key for m in ms)}) | {fmt_s(t_check)} | {t_check / t_bare:.2f}x |",
        f"| bare pass as a fresh `python -c` process | {fmt_s(t_bare_proc)} | "
        f"{t_bare_proc / t_bare:.2f}x |",
        f"| `ldiv check --json` CLI process | {fmt_s(t_cli)} | {t_cli / t_bare:.2f}x "
        f"({t_cli / t_bare_proc:.2f}x the bare process) |",
    ]
    if pc is not None:
        secs, vals = pc["seconds"], pc["values"]
        names = {"k": "k-anonymity", "l": "distinct l", "entropy_l": "entropy l",
                 "t": "t-closeness (equal distance)"}
        for key, name in names.items():
            lines.append(f"| pycanon {pc['pycanon_version']} {name} (value {vals[key]:.6g}) | "
                         f"{fmt_s(secs[key])} | {secs[key] / t_bare:,.0f}x |")
        total = sum(secs[k] for k in names)
        lines.append(f"| pycanon, those four together | {fmt_s(total)} | "
                     f"{total / t_bare:,.0f}x ({total / t_summary:,.0f}x `summary`) |")
    lines += ["", *in_memory_lines(pl.read_csv(path, separator=sep), qi, s, reps,
                                   "the same table")]
    if not args.rows and not args.qi:
        raw = pl.read_csv(args.adult, separator=";")
        lines += ["", *in_memory_lines(raw, ADULT_QI7, ADULT_SA, reps,
                                       "raw Adult (30,162 rows, age as read), 7 QIs")]
    lines += [
        "",
        f"summary: k = {summ['k']}, l_distinct = {summ['l_distinct']}, l_entropy = "
        f"{summ['l_entropy']:.6g}, alpha = {summ['alpha']:.6g}, t = {summ['t']:.6g}; "
        f"check passed = {res.passed}.",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- parquet mode

def parquet_mode(args: argparse.Namespace) -> str:
    import polars as pl

    path = str(Path(args.parquet).resolve())
    qi, s = list(args.qi or SYNTH_QI), args.sensitive or SYNTH_SA
    rows = pl.scan_parquet(path).select(pl.len()).collect().item()
    size_mb = Path(path).stat().st_size / 1e6
    reps = args.reps
    bare, cli = [], []
    for _ in range(reps):  # interleaved, so both see the same machine load
        bare.append(measure_process([sys.executable, "-c", bare_code(path, qi, s, None)]))
        cli.append(measure_process(cli_cmd(path, qi, s, None)))
    for m in cli:
        if m["returncode"] not in (0, 1):
            raise RuntimeError(f"ldiv check failed: {m['stderr']}")
    fs_rows = int(bare[-1]["stdout"].split()[0])
    summ = json.loads(cli[-1]["stdout"])
    tb = statistics.median(m["seconds"] for m in bare)
    tc = statistics.median(m["seconds"] for m in cli)
    inner = statistics.median(float(m["stdout"].split()[1]) for m in bare)
    rb = max(m["peak_rss_mb"] for m in bare)
    rc = max(m["peak_rss_mb"] for m in cli)
    lines = [
        f"**Synthetic Parquet, {rows:,} rows** ({size_mb:,.0f} MB on disk); QI = {', '.join(qi)}; "
        f"sensitive = {s}; {summ['classes']:,} classes, frequency set {fs_rows:,} rows. Each "
        f"figure: a fresh process (interpreter start and imports included), median of {reps}; "
        "peak RSS is the largest over the runs.",
        "",
        "| task | time | peak RSS | vs bare |",
        "|---|---:|---:|---:|",
        f"| bare `scan_parquet().group_by(qi+[s]).len()` (streaming) process | {fmt_s(tb)} "
        f"(query alone {fmt_s(inner)}) | {rb:,.0f} MB | 1.00x |",
        f"| `ldiv check --json` process | {fmt_s(tc)} | {rc:,.0f} MB | **{tc / tb:.2f}x** |",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- output

def write_section(md: Path, body: str) -> None:
    """Replace this benchmark's section of ``md`` (or append it), leaving others' sections. A
    hand-written ``### Notes`` block at the end of the section is kept."""
    text = md.read_text() if md.exists() else "# Benchmarks\n"
    start = text.find(SECTION + "\n")
    notes = ""
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        old = text[start:] if end < 0 else text[start:end + 1]
        if "\n### Notes\n" in old:
            notes = "\n" + old[old.index("\n### Notes\n") + 1:].rstrip("\n") + "\n"
    section = f"{SECTION}\n\n{body.strip()}\n{notes}"
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        text = text[:start] + section + ("" if end < 0 else text[end:])
    md.write_text(text)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["--measure", "--"]:
        return _measure_main(argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adult", default=str(ADULT), help="Adult CSV (';'-separated)")
    ap.add_argument("--rows", type=int, default=0, help="synthetic rows instead of Adult")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parquet", help="big Parquet file: bare pass vs `ldiv check` processes")
    ap.add_argument("--qi", type=lambda v: v.split(","), help="comma-separated QI columns")
    ap.add_argument("--sensitive", help="sensitive column")
    ap.add_argument("--reps", type=int, default=None,
                    help="repetitions (default 11 in-memory, 3 for --parquet)")
    ap.add_argument("--also-table", action="store_true",
                    help="with --parquet: run the in-memory (Adult / --rows) benchmark too and "
                         "print both")
    ap.add_argument("--table-reps", type=int, default=11,
                    help="repetitions of the in-memory benchmark with --also-table")
    ap.add_argument("--no-pycanon", action="store_true")
    ap.add_argument("--markdown", type=Path, help="also write the tables to this file")
    ap.add_argument("--benchmarks-md", type=Path,
                    help=f"replace or append the section '{SECTION}' of this file")
    ap.add_argument("--exact-step", action="store_true",
                    help="only the cost of the Polars exact step in check (Adult in memory)")
    args = ap.parse_args(argv)
    if args.exact_step:
        import polars as pl

        with tempfile.TemporaryDirectory() as tmp:
            _, path, qi, s = prepare_csv(args, Path(tmp))
            df = pl.read_csv(path, separator=";")
        print("\n".join(exact_step_lines(df, qi, s, args.reps or 21)))
        return 0
    if args.reps is None:
        args.reps = 3 if args.parquet else 11
    if args.parquet and args.also_table:
        big = parquet_mode(args)
        args.reps = args.table_reps
        body = table_mode(args) + "\n\n" + big
    else:
        body = parquet_mode(args) if args.parquet else table_mode(args)
    body += f"\n\nMachine: {machine()}."
    print(body)
    if args.markdown:
        args.markdown.write_text(body + "\n")
    if args.benchmarks_md:
        write_section(args.benchmarks_md, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
