"""Build and execute ``notebooks/02_sql.ipynb``: the DuckDB SQL macros on Adult and on a Parquet
file. Run from anywhere: ``.venv/bin/python notebooks/make_02_sql.py``."""
# ruff: noqa: E501  (the cells' code is notebook code, kept as readable long lines)

from __future__ import annotations

from pathlib import Path

from nbbuild import write_notebook

HERE = Path(__file__).resolve().parent

cells: list[tuple[str, str]] = [
    ("md", """# 02 · Privacy checks as DuckDB SQL macros

`ldiv_polars` ships its checks twice: as Polars expressions and as plain DuckDB SQL macros
(`sql/ldiv.sql`, packaged as `ldiv_polars/sql/`). Both read the same **frequency set**
(`GROUP BY qi..., s` with a count), and they give the same numbers.

In the DuckDB CLI you only need `.read sql/ldiv.sql`. From Python, `ldiv_polars.duckdb.install(con)`
runs the same files and also registers the few Python UDFs. Every macro takes a table or view
name, a **list** of quasi-identifier column names and the sensitive column name. Columns are
picked with `COLUMNS(lambda c: list_contains(qi, c))`, so names are compared as strings and never
pasted into SQL."""),
    ("code", """import sys
from pathlib import Path
import time

sys.path.insert(0, str(Path.cwd().parent))  # the repository checkout

import duckdb
import polars as pl
import ldiv_polars as lp
import ldiv_polars.duckdb as ld

con = ld.install(duckdb.connect())
print("macro files:", [str(ld.sql_dir() / f) for f in ld.SQL_FILES])
public = con.execute("SELECT DISTINCT function_name FROM duckdb_functions() "
                     "WHERE starts_with(function_name, 'ldiv_') "
                     "AND NOT starts_with(function_name, 'ldiv__') ORDER BY 1").fetchall()
print(len(public), "public macros/UDFs:", ", ".join(r[0] for r in public))"""),
    ("md", """## Adult (ARX extract, 30,162 rows)

We register the `;`-separated CSV as a view. A view is also how a Parquet file or any other
query gets passed to the macros."""),
    ("code", """ADULT = Path.cwd().parent.parent / "shared" / "data" / "adult" / "adult.csv"
con.read_csv(str(ADULT), sep=";").create_view("adult")
QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
con.sql("FROM adult LIMIT 3")"""),
    ("md", """`ldiv_summary(tbl, qi, s, l)` returns one row. Its columns are exactly the keys of
`ldiv_polars.summary` (and of the JSON of `ldiv check`)."""),
    ("code", """con.sql("FROM ldiv_summary('adult', ?, 'occupation', 2)", params=[QI]).pl()"""),
    ("code", """# the same through the Python API of both engines
sql_side = ld.summary(ADULT, QI, "occupation", l=2, con=con)
polars_side = lp.summary(ADULT, QI, "occupation", l=2)
for key in sql_side:
    print(f"{key:>15}  duckdb={sql_side[key]!r:<24} polars={polars_side[key]!r}")"""),
    ("md", """### Frequency set and equivalence classes"""),
    ("code", """con.sql("FROM ldiv_frequency_set('adult', ['sex', 'race'], 'salary-class') "
        "ORDER BY n DESC LIMIT 5").pl()"""),
    ("code", """con.sql("SELECT sex, race, size, distinct_values, round(l_entropy, 3) AS l_entropy, "
        "counts, round(emd_equal, 4) AS emd FROM ldiv_classes('adult', ['sex', 'race'], 'occupation') "
        "ORDER BY size LIMIT 6").pl()"""),
    ("md", """### One macro per model

Each model macro returns `model, passed, achieved, failing_classes, failing_rows`. `achieved`
is the table's best value for the model's parameter: the smallest k, exp of the smallest
entropy, the largest EMD, and so on. It is NULL where the Polars side reports infinity."""),
    ("code", """QI3 = ["age", "sex", "race"]
queries = [
    ("FROM ldiv_k_anonymity('adult', ?, 5)", [QI3]),
    ("FROM ldiv_distinct_l('adult', ?, 'occupation', 3)", [QI3]),
    ("FROM ldiv_entropy_l('adult', ?, 'occupation', 3)", [QI3]),
    ("FROM ldiv_recursive_cl('adult', ?, 'occupation', 3, 3)", [QI3]),
    ("FROM ldiv_pd_recursive_cl('adult', ?, 'salary-class', 3, 2, dont_care := ['<=50K'])", [QI3]),
    ("SELECT * EXCLUDE (achieved_k) FROM ldiv_alpha_k('adult', ?, 'occupation', 0.5, 5)", [QI3]),
    ("FROM ldiv_t_closeness('adult', ?, 'occupation', 0.3)", [QI3]),
    ("FROM ldiv_t_closeness('adult', ['sex', 'race', 'education'], 'age', 0.1)", []),
    ("FROM ldiv_delta_disclosure('adult', ?, 'occupation', 2.0)", [QI3]),
    ("FROM ldiv_beta_likeness('adult', ?, 'occupation', 2.0)", [QI3]),
    ("FROM ldiv_beta_likeness('adult', ?, 'occupation', 2.0, enhanced := true)", [QI3]),
    ("FROM ldiv_entropy_l_dont_care('adult', ?, 'salary-class', 2, ['<=50K'])", [QI3]),
    ("SELECT * EXCLUDE (average_risk) FROM ldiv_prosecutor_risk('adult', ?, max_risk := 0.2)", [QI3]),
    ("SELECT * EXCLUDE (fraction) FROM ldiv_sample_uniques('adult', ?)", [QI3]),
]
pl.concat([con.sql(q, params=p or None).pl() for q, p in queries], how="vertical_relaxed")"""),
    ("md", """`ldiv_entropy_l_dont_care` calls the Python Arrow UDF `ldiv_adjusted_entropy`, which
implements Algorithm 1 of the l-diversity paper for each class. In the plain CLI this macro
cannot run, because the CLI has no Python. The t-closeness check on `age` uses the ordered
distance, since `age` is numeric.

### Which classes fail, and why"""),
    ("code", """con.sql("SELECT * FROM ldiv_violations('adult', ?, 'occupation', k := 5, l := 3, t := 0.4) "
        "LIMIT 8", params=[QI3]).pl()"""),
    ("md", """### Generalize in a view, then check the view

The scalar macros `ldiv_bin`, `ldiv_mask`, `ldiv_date_trunc` / `ldiv_date_label`,
`ldiv_top_code` and `ldiv_bottom_code` let SQL users generalize in a view, and then run the
same macros on that view."""),
    ("code", """con.execute(\"\"\"
CREATE OR REPLACE VIEW adult_gen AS
SELECT ldiv_bin(ldiv_top_bottom_code(age, 20, 79), 10) AS age, sex,
       CASE WHEN race = 'White' THEN 'White' ELSE 'Other' END AS race,
       occupation
FROM adult\"\"\")
print(con.execute("SELECT ldiv_mask('13053', 2), ldiv_bin(37, 10), ldiv_date_label(DATE '2024-05-07', 'quarter')").fetchall())
con.sql("SELECT rows, classes, k, l_distinct, round(l_entropy, 3) AS l_entropy, round(t, 4) AS t "
        "FROM ldiv_summary('adult_gen', ?, 'occupation', 2)", params=[QI3]).pl()"""),
    ("md", """## A Parquet file, with a memory limit

The macros do not need the table in memory. `read_parquet` goes behind a view, and DuckDB
streams the single `GROUP BY` and spills it if needed. Below we use a 1M-row synthetic census
file (`ldiv_polars.datasets.synth`) and a 64 MB memory limit. That limit is below the ~70 MB
the rows take in memory. `bench/bench_out_of_core.py` runs the same measurement at 10M rows and
more, each step in its own subprocess."""),
    ("code", """import tempfile
from ldiv_polars.datasets.synth import write_synthetic

tmp = Path(tempfile.mkdtemp())
path = write_synthetic(tmp / "synth.parquet", 1_000_000, seed=0)
print(f"{path.stat().st_size / 2**20:.1f} MiB on disk")

pq = duckdb.connect()
pq.execute("SET memory_limit = '64MB'")
pq.execute("SET temp_directory = ?", [str(tmp / "spill")])
ld.install(pq, udfs=False)
pq.read_parquet(str(path)).create_view("synth")
qi = ["age", "sex", "race", "education"]
t0 = time.perf_counter()
summary_row = pq.sql("FROM ldiv_summary('synth', ?, 'disease', 2)", params=[qi]).pl()
t1 = time.perf_counter()
groups = pq.execute("SELECT count(*) FROM (SELECT COLUMNS(lambda c: list_contains(?, c)), count(*) "
                    "FROM synth GROUP BY ALL)", [qi + ["disease"]]).fetchall()[0][0]
t2 = time.perf_counter()
print(f"ldiv_summary: {t1 - t0:.2f} s; bare GROUP BY: {t2 - t1:.2f} s ({groups:,} (qi, s) groups)")
summary_row"""),
    ("code", """# the same file through the Polars engine: identical summary
same = ld.summary(path, qi, "disease", con=pq) == lp.summary(path, qi, "disease")
print("identical:", same)
pq.close()
import shutil
shutil.rmtree(tmp)  # the temporary Parquet file and spill directory"""),
    ("md", """## Names that need quoting, and names that try to inject SQL

Column names reach DuckDB only as bound list parameters. They are matched as strings, so
names with spaces, quotes, reserved words or unicode work. A name that looks like SQL is only
a column that does not exist."""),
    ("code", """odd = pl.DataFrame({"zip code": ["130", "130", "148"], 'the "age"': [20, 20, 30],
                    "select": ["flu", "hiv", "flu"]})
print(ld.summary(odd, ["zip code", 'the "age"'], "select", con=con))
try:
    ld.summary(odd, ['zip code"); DROP TABLE adult; --'], "select", con=con)
except lp.UnknownColumnError as e:
    print("UnknownColumnError:", e)"""),
]


if __name__ == "__main__":
    write_notebook(cells, HERE / "02_sql.ipynb")
