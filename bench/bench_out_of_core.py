"""Out-of-core benchmark of the DuckDB engine: ``ldiv_summary`` over a synthetic Parquet file
whose in-memory size is at least 4x DuckDB's ``memory_limit``, next to a bare
``GROUP BY qi..., s`` + ``count(*)`` on the same file with the same limit (the frequency set's
own cost, the floor of any check). Each measurement runs in its own subprocess, which reports
its wall time and peak RSS; the parent prints a table and the ratio summary / bare group-by.
Optionally (``--polars``) the Polars engine's ``ldiv_polars.summary`` (streaming) on the same
file is timed too (Polars has no memory limit knob; its peak RSS is reported as is), and
(``--compare-sql FILE``) ``ldiv_summary`` with the macros of another ``ldiv.sql`` (e.g. an
older version: ``git show main:sql/ldiv.sql > /tmp/main.sql``) in the plan that
:func:`ldiv_polars.duckdb.summary_plan` picks, the three DuckDB measurements alternated within
each repetition. ``--sensitive income`` takes the numeric column (the ordered EMD) instead of
``disease``. ``--plan struct`` / ``--plan packed`` time ``ldiv_summary`` (which chooses its plan
in SQL by ``summary_plan``'s rule) / ``ldiv_summary_packed`` by name instead of the plan
``summary_plan`` picks (issue 23's goal is ``ldiv_summary``'s own). ``--ideas`` adds the
struct-key plans measured in session 16 (``IDEAS``: a 64-bit hash class key with and without
an exact collision check, one class pass on the struct key, GROUPING SETS, a scan gated by a
false scalar), each reduced to the work that idea adds to the frequency set, alternated with
the rest. Every child reports its wall time and its CPU seconds (user + system: less moved by
other jobs than wall time on a shared machine).

Usage (from the repository root)::

    .venv/bin/python bench/bench_out_of_core.py --rows 1000000
    .venv/bin/python bench/bench_out_of_core.py --rows 10000000 --polars
    .venv/bin/python bench/bench_out_of_core.py --rows 100000000 --limit-mb 1000   # long
    .venv/bin/python bench/bench_out_of_core.py --rows 10000000 --qi-set wide --repeat 3 \
        --compare-sql /tmp/main.sql
    .venv/bin/python bench/bench_out_of_core.py --rows 10000000 --qi-set wide --plan struct \
        --ideas --repeat 3

The synthetic file is cached in ``--dir`` (default: the system temp dir) by rows and seed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

QI_SETS = {
    # few classes (~18k): the frequency set is tiny, the scan dominates
    "demo": ["age", "sex", "race", "education"],
    # many classes (millions at 10M rows): the frequency set itself is large
    "wide": ["age", "sex", "race", "zip"],
}
SENSITIVE = "disease"

# The frequency set with a 64-bit hash h of the class key (a struct ec) and, when {keep_ec} is
# ", ec", the key itself; the sensitive domain d (sv, tn) and its totals t.
_HASH_FS = """f AS MATERIALIZED (SELECT hash(ec) AS h{keep_ec}, sv, n
                        FROM ldiv__fs_checked('data', {qi}, {s}, true)),
 d AS (SELECT sv, sum(n)::BIGINT AS tn FROM f GROUP BY sv),
 t AS (SELECT sum(tn)::BIGINT AS total, count(*) AS m FROM d)"""
# The class pass of the packed plan (ldiv__packed_classes: every statistic without the class
# size inside a sum) grouped by {key}, with {extra} aggregates.
_CLASS_PASS = """st AS (SELECT {key}, sum(n) AS size, count(*) AS dv, max(n) AS mx,
               sum(n * ln(n)) AS nln, sum(tn) AS tp,
               max(n::HUGEINT * (total + 1) + tn) AS top_nt, max(n / tn) AS hi,
               min(n / tn) AS lo{extra}
        FROM f JOIN d USING (sv) CROSS JOIN t GROUP BY {key})"""
_CLASS_ROW = """count(*), min(size), min(dv), max(mx / size), min(ln(size) - nln / size),
       max(tp), max(top_nt), max(hi / size), min(lo / size)"""
IDEAS = {
    # the floor of any hash-keyed plan: no collision check, no exact EMD pass
    "hash, no check": "WITH " + _HASH_FS.replace("{keep_ec}", "") + ", "
    + _CLASS_PASS.format(key="h", extra="") + " SELECT " + _CLASS_ROW + " FROM st",
    # exact: no collision iff as many hash groups as distinct class keys
    "hash + count(DISTINCT ec)": "WITH " + _HASH_FS.replace("{keep_ec}", ", ec") + ", "
    + _CLASS_PASS.format(key="h", extra="") + " SELECT " + _CLASS_ROW
    + ", (SELECT count(DISTINCT ec) FROM f) FROM st",
    # exact: no collision iff min(ec) = max(ec) in every hash group
    "hash + min/max(ec)": "WITH " + _HASH_FS.replace("{keep_ec}", ", ec") + ", "
    + _CLASS_PASS.format(key="h", extra=", min(ec) AS e0, max(ec) AS e1") + " SELECT "
    + _CLASS_ROW + ", bool_and(e0 IS NOT DISTINCT FROM e1) FROM st",
    # exact: the same per column (ec's fields)
    "hash + min/max per column": "WITH " + _HASH_FS.replace("{keep_ec}", ", ec") + ", "
    + _CLASS_PASS.format(key="h", extra=", {field_checks} AS same") + " SELECT "
    + _CLASS_ROW + ", bool_and(same) FROM st",
    # one GROUP BY of the struct key with the packed plan's size-free aggregates (no join back)
    "struct, one class pass": "WITH " + _HASH_FS.replace("{keep_ec}", ", ec") + ", "
    + _CLASS_PASS.format(key="ec", extra="") + " SELECT " + _CLASS_ROW + " FROM st",
    # the class count from DuckDB's own roll-up of the frequency set (GROUPING SETS)
    "GROUPING SETS ((q, s), (q))": """WITH f AS MATERIALIZED (
        SELECT hash({cols}) AS h, sv, n, g
        FROM (SELECT {cols}, sv, count(*) AS n, grouping(sv) AS g
              FROM (SELECT {cols}, {s_col} AS sv FROM data)
              GROUP BY GROUPING SETS (({cols}, sv), ({cols})))),
     d AS (SELECT sv, sum(n)::BIGINT AS tn FROM f WHERE g = 0 GROUP BY sv),
     t AS (SELECT sum(tn)::BIGINT AS total, count(*) AS m FROM d), """
    + _CLASS_PASS.format(key="h", extra="").replace("FROM f JOIN", "FROM (FROM f WHERE g = 0) JOIN")
    + " SELECT " + _CLASS_ROW + ", (SELECT count(*) FROM f WHERE g = 1) FROM st",
    # does DuckDB skip a pass whose scan is filtered by a false scalar? (0 rows, no class count)
    "gated scan (false scalar)": """WITH g AS MATERIALIZED (SELECT count(*) > 1e15 AS go FROM data)
        SELECT count(*) FROM (SELECT {cols}, {s_col}, count(*) FROM data
                              WHERE (SELECT go FROM g) GROUP BY ALL)""",
}


def idea_sql(name: str, qi: list[str], sensitive: str) -> str:
    """The statement of IDEAS[name] for these column names (quoted; the synthetic table's)."""
    def q(c: str) -> str:
        return '"' + c.replace('"', '""') + '"'

    def lit(c: str) -> str:
        return "'" + c.replace("'", "''") + "'"

    checks = " AND ".join(f"min(ec[{lit(c)}]) IS NOT DISTINCT FROM max(ec[{lit(c)}])"
                          for c in qi)
    return (IDEAS[name].replace("{field_checks}", checks)
            .replace("{qi}", "[" + ", ".join(lit(c) for c in qi) + "]")
            .replace("{s}", lit(sensitive)).replace("{s_col}", q(sensitive))
            .replace("{cols}", ", ".join(q(c) for c in qi)))


def bytes_per_row() -> float:
    """In-memory (Arrow/Polars) bytes per row of the synthetic table, measured on a sample."""
    from ldiv_polars.datasets.synth import synthesize

    sample = synthesize(200_000, seed=1)
    return sample.estimated_size() / sample.height


def ensure_file(rows: int, seed: int, directory: Path) -> Path:
    from ldiv_polars.datasets.synth import write_synthetic

    path = directory / f"ldiv_synth_{rows}_{seed}.parquet"
    if not path.exists():
        t0 = time.perf_counter()
        tmp = path.with_suffix(".tmp.parquet")
        write_synthetic(tmp, rows, seed)
        tmp.rename(path)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB on disk) in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    return path


# --------------------------------------------------------------------------------------------
# children
# --------------------------------------------------------------------------------------------


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all its threads)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def child(kind: str, path: str, qi: list[str], limit_mb: int, threads: int, spill: str,
          sql_file: str | None = None, sensitive: str = SENSITIVE, plan: str = "picked") -> dict:
    import duckdb

    t0, c0 = time.perf_counter(), cpu_seconds()
    if kind == "polars":
        import ldiv_polars as lp

        out = lp.summary(path, qi, sensitive, l=2)
        result: object = out
    else:
        import ldiv_polars.duckdb as ld

        con = duckdb.connect()
        con.execute(f"SET memory_limit = '{int(limit_mb)}MB'")
        con.execute(f"SET threads = {int(threads)}")
        con.execute("SET temp_directory = ?", [spill])
        con.execute("SET preserve_insertion_order = false")
        ld.install(con, udfs=False)
        if sql_file:  # the compared macros replace the installed ones (CREATE OR REPLACE)
            with open(sql_file, encoding="utf-8") as fh:
                for stmt in con.extract_statements(fh.read()):
                    con.execute(stmt)
        con.read_parquet(path).create_view("data")
        # exclude connection set-up from every DuckDB timing
        t0, c0 = time.perf_counter(), cpu_seconds()
        if kind in ("summary", "summary_cmp"):
            # the plan ld.summary picks (timed) or the one named, with these macros or the
            # compared ones
            packed = (plan == "packed" if plan != "picked"
                      else ld.summary_plan(con, "data", [*qi, sensitive]) == "packed")
            macro = "ldiv_summary_packed" if packed else "ldiv_summary"
            cur = con.execute(f"FROM {macro}('data', ?, ?, 2)", [qi, sensitive])
            names = [d[0] for d in cur.description]
            result = dict(zip(names, cur.fetchall()[0]))
        elif kind.startswith("idea:"):
            row = con.execute(idea_sql(kind[5:], qi, sensitive)).fetchall()[0]
            result = {"classes": row[0], "row": list(row)}
        else:
            row = con.execute(
                "SELECT count(*), sum(c) FROM (SELECT COLUMNS(lambda c: list_contains(?, c)), "
                "count(*) AS c FROM data GROUP BY ALL)",
                [[*qi, sensitive]],
            ).fetchall()[0]
            result = {"frequency_set_rows": row[0], "rows": int(row[1])}
    seconds, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return {"kind": kind, "seconds": seconds, "cpu": cpu, "peak_rss_mb": peak_rss_mb(),
            "result": result}


def _same(a: object, b: object) -> bool:
    """Equal, or two floats equal up to rounding (relative 1e-9)."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)
    return a == b


def peak_rss_mb() -> float:
    """Peak resident set size of this process (VmHWM: fresh after exec, unlike ru_maxrss which
    Linux carries over from the forking parent)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(args: argparse.Namespace, kind: str, path: Path, qi: list[str],
              limit_mb: int) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--path", str(path), "--qi", ",".join(qi),
           "--limit-mb", str(limit_mb), "--threads", str(args.threads), "--spill",
           str(args.spill), "--sensitive", args.sensitive, "--plan", args.plan]
    if kind == "summary_cmp":
        cmd += ["--compare-sql", str(args.compare_sql)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if proc.returncode != 0:
        raise SystemExit(f"child {kind} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


LABELS = {"groupby": "DuckDB bare GROUP BY count(*)", "summary": "DuckDB summary",
          "summary_cmp": "the same, --compare-sql macros", "polars": "Polars ldiv_polars.summary"}


def run_qi_set(args: argparse.Namespace, name: str, path: Path, limit_mb: int) -> None:
    """Every measurement of one QI set, alternated, ``--repeat`` times; prints the best wall
    time (and the best CPU seconds) of each against the bare group-by's."""
    qi = QI_SETS[name]
    kinds = (["groupby", "summary"] + (["summary_cmp"] if args.compare_sql else [])
             + (["polars"] if args.polars else [])
             + ([f"idea:{i}" for i in IDEAS] if args.ideas else []))
    best: dict[str, dict] = {}
    for _ in range(args.repeat):  # alternated: each repetition runs every kind once
        for kind in kinds:
            r = run_child(args, kind, path, qi, limit_mb)
            print(f"  ({kind}: {r['seconds']:.2f} s, cpu {r['cpu']:.2f} s)", flush=True)
            min_cpu = min(r["cpu"], best[kind]["min_cpu"]) if kind in best else r["cpu"]
            if kind not in best or r["seconds"] < best[kind]["seconds"]:
                best[kind] = r
            best[kind]["min_cpu"] = min_cpu
    base = best["groupby"]
    print(f"\nQI set '{name}': {qi} / sensitive {args.sensitive!r}; plan {args.plan}; "
          f"frequency set = {base['result']['frequency_set_rows']:,} rows")
    print(f"  {'measurement':<40}{'time (s)':>9}{'x':>7}{'cpu (s)':>9}{'x':>7}{'RSS MiB':>9}")
    for kind in kinds:
        r = best[kind]
        print(f"  {LABELS.get(kind, kind[5:]):<40}{r['seconds']:>9.2f}"
              f"{r['seconds'] / base['seconds']:>6.2f}x{r['min_cpu']:>9.2f}"
              f"{r['min_cpu'] / base['min_cpu']:>6.2f}x{r['peak_rss_mb']:>9.0f}")
    check_results(args, best, base)


def check_results(args: argparse.Namespace, best: dict[str, dict], base: dict) -> None:
    """The summaries agree (up to rounding) and every idea found the summary's classes."""
    s = best["summary"]["result"]
    assert s["rows"] == args.rows == base["result"]["rows"], (s["rows"], args.rows)
    if "summary_cmp" in best:  # the same summary, up to rounding
        other = best["summary_cmp"]["result"]
        assert all(_same(s[k], other[k]) for k in s), (s, other)
    for kind, r in best.items():
        if kind.startswith("idea:") and "gated" not in kind:
            assert r["result"]["classes"] == s["classes"], (kind, r["result"], s["classes"])
    print(f"  summary: classes={s['classes']:,} k={s['k']} l_distinct={s['l_distinct']} "
          f"t={s['t']:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--qi-set", choices=sorted(QI_SETS), action="append",
                    help="which QI set(s) to run (default: both)")
    ap.add_argument("--limit-mb", type=int, default=None,
                    help="DuckDB memory_limit; default: in-memory size / 4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (best kept)")
    ap.add_argument("--polars", action="store_true", help="also time the Polars engine")
    ap.add_argument("--sensitive", default=SENSITIVE,
                    help=f"the sensitive column (default {SENSITIVE!r}; 'income' is numeric)")
    ap.add_argument("--compare-sql", type=Path, default=None,
                    help="also time ldiv_summary with the macros of this ldiv.sql")
    ap.add_argument("--plan", choices=["picked", "struct", "packed"], default="picked",
                    help="the summary macro: summary_plan's pick, ldiv_summary (its own "
                         "choice in SQL, since session 16's sql9) or ldiv_summary_packed")
    ap.add_argument("--ideas", action="store_true",
                    help="also time the struct-key plan ideas (IDEAS)")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--spill", type=Path, default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--path", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--qi", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        print(json.dumps(child(args.child, args.path, args.qi.split(","), args.limit_mb,
                               args.threads, str(args.spill),
                               args.compare_sql and str(args.compare_sql), args.sensitive,
                               args.plan),
                         default=str))
        return

    args.spill = args.spill or (args.dir / "ldiv_duckdb_spill")
    args.spill.mkdir(parents=True, exist_ok=True)
    path = ensure_file(args.rows, args.seed, args.dir)
    in_memory_mb = bytes_per_row() * args.rows / 2**20
    limit_mb = args.limit_mb or max(int(in_memory_mb / 4), 1)
    print(f"rows={args.rows:,}  parquet={path.stat().st_size / 2**20:.0f} MiB  "
          f"in-memory~{in_memory_mb:.0f} MiB  duckdb memory_limit={limit_mb} MiB "
          f"(data/limit = {in_memory_mb / limit_mb:.1f}x)  threads={args.threads}", flush=True)
    for name in args.qi_set or sorted(QI_SETS):
        run_qi_set(args, name, path, limit_mb)


if __name__ == "__main__":
    main()
