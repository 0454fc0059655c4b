"""The Spark engine (``ldiv_polars.core.engines.spark``) against the Polars and DuckDB engines:
the same frequency sets on random tables (nulls, unicode and quoted names, a column named like
an SQL keyword), the same ``anonymize`` results (levels, value, suppressed rows, minimal nodes)
and the same released rows (a hash of the sorted rows of the written files), on a local classic
session and on a local Spark Connect server, both started here. Skipped with a reason when
PySpark or Java is missing (CI installs both: ``.ci/run``)."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'ldiv_polars[spark]')")
if shutil.which("java") is None:
    pytest.skip("no java on PATH: the Spark engine needs Java 17+", allow_module_level=True)

from pyspark.sql import SparkSession  # noqa: E402

import ldiv_polars as lp  # noqa: E402
from ldiv_polars.cli import main  # noqa: E402
from ldiv_polars.core.engines import duckdb as duck_engine  # noqa: E402
from ldiv_polars.core.engines import polars as polars_engine  # noqa: E402
from ldiv_polars.core.engines import spark as spark_engine  # noqa: E402
from ldiv_polars.core.engines.base import Engine, engine_for  # noqa: E402
from ldiv_polars.core.frequency import FrequencySet  # noqa: E402
from ldiv_polars.errors import (  # noqa: E402
    FrequencySetTooLargeError,
    InputFormatError,
    NullValuesError,
    OutputOverwritesInputError,
    UnknownColumnError,
    UnreadableInputError,
)
from ldiv_polars.hierarchy import interval_hierarchy, masking_hierarchy  # noqa: E402
from ldiv_polars.models import DistinctLDiversity, KAnonymity  # noqa: E402

SPARK = spark_engine.ENGINE
NAMES = ["select", 'q"uo`te', "zip code", "âge", "n"]


@pytest.fixture(scope="module")
def spark():
    s = (SparkSession.builder.master("local[1]").appName("ldiv-tests")
         .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    spark_engine.use_session(s)
    yield s


def _rows(fs: FrequencySet) -> list[tuple]:
    df = fs.frame.collect()
    return sorted(df.select([*fs.qi, *fs.sensitive, fs.count]).rows(),
                  key=lambda r: tuple((v is None, str(v)) for v in r))


def _brute(df: pl.DataFrame, keys: list[str]) -> list[tuple]:
    """The frequency set counted in Python (independent of every engine)."""
    counts: dict[tuple, int] = {}
    for row in df.select(keys).rows():
        counts[row] = counts.get(row, 0) + 1
    return sorted(((*k, n) for k, n in counts.items()),
                  key=lambda r: tuple((v is None, str(v)) for v in r))


def test_protocol_and_choice(spark):
    assert isinstance(SPARK, Engine) and SPARK.distributed
    sdf = spark.createDataFrame(pl.DataFrame({"a": [1]}).to_arrow())
    assert engine_for(sdf).name == "spark" and SPARK.accepts(sdf)
    assert engine_for("t.parquet", "spark") is SPARK


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_frequency_sets_agree_with_polars_and_duckdb(spark, tmp_path_factory, data):
    rows = data.draw(st.integers(0, 30))
    nq = data.draw(st.integers(1, 3))
    qi, s = NAMES[:nq], NAMES[4]
    values = st.one_of(st.none(), st.sampled_from(["a", "b", "é", "'", "`", ""]))
    cols = {c: data.draw(st.lists(values, min_size=rows, max_size=rows)) for c in [*qi, s]}
    df = pl.DataFrame(cols, schema={c: pl.String for c in cols})
    path = tmp_path_factory.mktemp("t") / "t.parquet"
    df.write_parquet(path)
    expected = _brute(df, [*qi, s])
    sdf = spark.createDataFrame(df.to_arrow())
    has_null = any(df.get_column(c).null_count() for c in [*qi, s])
    for src in (sdf, path):
        assert _rows(SPARK.frequency_set(src, qi, s, nulls="value")) == expected
        if has_null:
            with pytest.raises(NullValuesError) as err:
                SPARK.frequency_set(src, qi, s)
            with pytest.raises(NullValuesError) as ref:
                polars_engine.ENGINE.frequency_set(df, qi, s)
            assert str(err.value) == str(ref.value)
        else:
            assert _rows(SPARK.frequency_set(src, qi, s)) == expected
    for e in (polars_engine.ENGINE, duck_engine.ENGINE):
        assert _rows(e.frequency_set(path, qi, s, nulls="value")) == expected


def test_validation_errors_and_budget(spark, tmp_path):
    df = pl.DataFrame({"q": ["a", "b", "c"], "s": ["x", "y", "x"]})
    sdf = spark.createDataFrame(df.to_arrow())
    with pytest.raises(UnknownColumnError):
        SPARK.frequency_set(sdf, ["nope"], "s")
    with pytest.raises(InputFormatError):
        SPARK.frequency_set(tmp_path / "missing.parquet", ["q"], "s")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file PAR1")
    with pytest.raises(UnreadableInputError):
        SPARK.frequency_set(bad, ["q"], "s")
    with pytest.raises(FrequencySetTooLargeError, match="coarser bottom level"):
        SPARK.frequency_set(sdf, ["q"], "s", max_groups=2)
    assert _rows(SPARK.frequency_set(sdf, ["q"], "s", max_groups=3)) == _brute(df, ["q", "s"])


def test_check_summary_violations_risk_on_spark(spark, tmp_path):
    df = pl.DataFrame({"zip": ["1", "1", "2", "2", "3", "3", "3"],
                       "select": ["a", "b", "a", "a", "c", "a", "b"]})
    path = tmp_path / "t.parquet"
    df.write_parquet(path)
    sdf = spark.createDataFrame(df.to_arrow())
    models = [KAnonymity(2), DistinctLDiversity(2)]
    ref = lp.check(df, "zip", "select", models)
    for src, engine in ((sdf, None), (path, "spark")):
        assert lp.check(src, "zip", "select", models, engine=engine) == ref
        assert lp.summary(src, "zip", "select", engine=engine) == lp.summary(df, "zip", "select")
        got = lp.violations(src, "zip", "select", models, engine=engine).collect().sort("zip")
        assert got.equals(lp.violations(df, "zip", "select", models).collect().sort("zip"))
        assert lp.risk_profile(src, "zip", engine=engine, threshold=0.4) == \
            lp.risk_profile(df, "zip", threshold=0.4)


def _release_hash(path) -> str:
    """A hash of the sorted rows of a written release (a file or a Parquet directory), the QI
    columns read as strings (Polars writes them as Enums, Spark as strings)."""
    src = path if path.is_file() else path / "*.parquet"
    df = pl.read_parquet(src)
    df = df.with_columns(pl.col(c).cast(pl.String) for c, t in df.schema.items()
                         if isinstance(t, pl.Enum))
    rows = sorted(df.rows(), key=lambda r: tuple((v is None, str(v)) for v in r))
    return hashlib.sha256(repr((df.columns, rows)).encode()).hexdigest()


def _compare(ref, got) -> None:
    assert (got.levels, got.suppressed_rows, got.suppressed_classes, got.minimal,
            got.classes) == (ref.levels, ref.suppressed_rows, ref.suppressed_classes,
                             ref.minimal, ref.classes)
    assert got.value == (ref.value if ref.value is None else pytest.approx(ref.value, rel=1e-12))
    assert got.verification is None or got.verification.passed


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_anonymize_agrees_on_random_tables(spark, tmp_path_factory, data):
    rows = data.draw(st.integers(1, 40))
    ages = data.draw(st.lists(st.integers(0, 59), min_size=rows, max_size=rows))
    zips = data.draw(st.lists(st.sampled_from(["1301", "1302", "1411", "1412", "2001"]),
                              min_size=rows, max_size=rows))
    sens = data.draw(st.lists(st.sampled_from(["flu", "cold", "hiv"]), min_size=rows,
                              max_size=rows))
    df = pl.DataFrame({"zip": zips, "select": ages, "disease": sens})
    hs = {"zip": masking_hierarchy(pl.Series(["1301", "1302", "1411", "1412", "2001"])),
          "select": interval_hierarchy(pl.Series(list(range(60))), [10, 30])}
    models = data.draw(st.sampled_from([[KAnonymity(2)], [KAnonymity(3)],
                                        [KAnonymity(2), DistinctLDiversity(2)]]))
    suppression = data.draw(st.sampled_from([0.0, 0.2]))
    mode = data.draw(st.sampled_from(["mask", "drop"]))
    tmp = tmp_path_factory.mktemp("a")
    path = tmp / "in.parquet"
    df.write_parquet(path)
    kw = dict(suppression=suppression, suppression_mode=mode)
    ref = lp.anonymize(df, ["zip", "select"], "disease", hs, models, **kw)
    got = lp.anonymize(path, ["zip", "select"], "disease", hs, models, engine="spark", **kw)
    duck = lp.anonymize(path, ["zip", "select"], "disease", hs, models, engine="duckdb", **kw)
    _compare(ref, got)
    _compare(ref, duck)
    if ref.found:
        ref.sink(tmp / "ref.parquet")
        got.sink(tmp / "spark.parquet")
        duck.sink(tmp / "duck.parquet")
        assert got.verification.passed
        h = _release_hash(tmp / "ref.parquet")
        assert _release_hash(tmp / "spark.parquet") == h == _release_hash(tmp / "duck.parquet")


@pytest.mark.slow
def test_anonymize_adult_agrees(spark, adult_csv, tmp_path):
    qi = ["sex", "age", "race", "marital-status"]
    hs = {q: adult_csv.parent / f"adult_hierarchy_{q}.csv" for q in qi}
    df = pl.read_csv(adult_csv, separator=";")
    path = tmp_path / "adult.parquet"
    df.write_parquet(path)
    models = [KAnonymity(5), DistinctLDiversity(2)]
    kw = dict(suppression=0.02, metric="loss")
    ref = lp.anonymize(path, qi, "occupation", hs, models, **kw)
    got = lp.anonymize(spark.read.parquet(str(path)), qi, "occupation", hs, models, **kw)
    _compare(ref, got)
    ref.sink(tmp_path / "ref.parquet")
    got.sink(tmp_path / "spark.parquet")
    assert _release_hash(tmp_path / "ref.parquet") == _release_hash(tmp_path / "spark.parquet")
    # the written directory is never over an input, and is replaced atomically
    with pytest.raises(OutputOverwritesInputError):
        got.sink(path)
    got.sink(tmp_path / "spark.parquet")
    assert _release_hash(tmp_path / "spark.parquet") == _release_hash(tmp_path / "ref.parquet")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_unknown_value_and_null_errors_in_anonymize(spark):
    df = pl.DataFrame({"zip": ["1301", "9999", "1301"], "s": ["a", "b", "a"]})
    hs = {"zip": masking_hierarchy(pl.Series(["1301", "1302"]))}
    sdf = spark.createDataFrame(df.to_arrow())
    with pytest.raises(Exception) as ref:
        lp.anonymize(df, "zip", "s", hs, KAnonymity(2))
    with pytest.raises(type(ref.value)) as got:
        lp.anonymize(sdf, "zip", "s", hs, KAnonymity(2))
    assert str(got.value) == str(ref.value)
    nulls = spark.createDataFrame(pl.DataFrame({"zip": ["1301", "1302", "1301"],
                                                "s": ["a", None, "a"]}).to_arrow())
    with pytest.raises(NullValuesError):
        lp.anonymize(nulls, "zip", "s", hs, KAnonymity(1))


def test_docs_example_runs(spark, tmp_path, monkeypatch):
    """docs/spark.md's local example runs as written (in the session of this module)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "spark.md").read_text("utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/spark.md", "exec"), {})
    assert (tmp_path / "release.parquet" / "_SUCCESS").exists()


def test_cli_engine_spark(spark, tmp_path, capsys):
    df = pl.DataFrame({"zip": ["1301", "1302", "1301", "1302", "1411"],
                       "s": ["a", "b", "a", "c", "a"]})
    df.write_parquet(tmp_path / "t.parquet")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "zip.csv").write_text("1301;130*;*\n1302;130*;*\n1411;141*;*\n")
    args = ["--qi", "zip", "--sensitive", "s", "--k", "2", "--json"]
    assert main(["check", str(tmp_path / "t.parquet"), *args]) == 1
    ref = capsys.readouterr().out
    assert main(["check", str(tmp_path / "t.parquet"), *args, "--engine", "spark"]) == 1
    assert capsys.readouterr().out == ref
    for engine, out in (("polars", "p.parquet"), ("spark", "s.parquet")):
        assert main(["anonymize", str(tmp_path / "t.parquet"), str(tmp_path / out), *args,
                     "--hierarchies", str(tmp_path / "h"), "--suppression", "0.2",
                     "--engine", engine]) == 0
    assert _release_hash(tmp_path / "p.parquet") == _release_hash(tmp_path / "s.parquet")
    assert main(["check", str(tmp_path / "t.parquet"), *args, "--spark-master", "local"]) == 2


def test_cli_apply_plan_engine_spark(spark, tmp_path):
    """A site counts and releases its rows with Spark under the aggregator's plan: the same
    release as Polars', re-verified against the plan by Spark's class sizes."""
    df = pl.DataFrame({"zip": ["1301", "1302", "1301", "1302", "1411", "1411"],
                       "s": ["a", "b", "a", "c", "a", "b"]})
    df.write_parquet(tmp_path / "t.parquet")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "zip.csv").write_text("1301;130*;*\n1302;130*;*\n1411;141*;*\n")
    assert main(["counts", str(tmp_path / "t.parquet"), "--qi", "zip", "--sensitive", "s",
                 "--out", str(tmp_path / "c.parquet"), "--engine", "spark"]) == 0
    assert main(["anonymize-counts", str(tmp_path / "c.parquet"), "--hierarchies",
                 str(tmp_path / "h"), "--plan-out", str(tmp_path / "plan.json"), "--k", "3",
                 "--suppression", "0.4"]) == 0
    for engine in ("polars", "spark"):
        assert main(["apply-plan", str(tmp_path / "t.parquet"), str(tmp_path / "plan.json"),
                     str(tmp_path / f"{engine}.parquet"), "--hierarchies", str(tmp_path / "h"),
                     "--engine", engine]) == 0
    assert _release_hash(tmp_path / "polars.parquet") == \
        _release_hash(tmp_path / "spark.parquet")

@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4),
       method=st.sampled_from(["cells-value", "cells-wildcard", "local"]))
def test_spark_applies_the_local_release_plan_as_polars_does(spark, seed, k, method):
    """Issue 20's plan (per distinct key: mask or levels) applied by Spark
    (:func:`ldiv_polars.local.plan.apply_spark`, a broadcast join) gives the rows of
    :meth:`ReleasePlan.apply`: cell suppression under both semantics, local recoding with
    its level columns; QI names with quotes, backticks and spaces."""
    import numpy as np

    from ldiv_polars.local.plan import apply_spark

    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 40))
    df = pl.DataFrame({"zip code": rng.choice(["130", "131", "140", "141"], n).tolist(),
                       'q"uo`te': rng.integers(0, 6, n).tolist(),
                       "s": rng.choice(list("pqr"), n).tolist()})
    qi = ["zip code", 'q"uo`te']
    if method == "local":
        df = df.with_columns(pl.col('q"uo`te').cast(pl.String))
        hs = {"zip code": masking_hierarchy(pl.Series(["130", "131", "140", "141"])),
              'q"uo`te': masking_hierarchy(pl.Series([str(a) for a in range(6)]))}
        res = lp.local_recode(df, qi, "s", hs, KAnonymity(k), suppression=0.2, verify=False)
    else:
        res = lp.suppress_cells(df, qi, "s", KAnonymity(k), semantics=method.split("-")[1],
                                verify=False)
    levels = method == "local"
    ref = res.plan.apply(df, levels=levels).collect()
    got = pl.from_arrow(apply_spark(res.plan, df, levels=levels).toArrow())
    assert got.columns == ref.columns and got.height == ref.height == n
    order = lambda r: tuple((v is None, str(v)) for v in r)  # noqa: E731
    assert sorted(got.cast(pl.String).rows(), key=order) == \
        sorted(ref.cast(pl.String).rows(), key=order)


def test_spark_connect_session(tmp_path):
    """A local Spark Connect server (``remote("local[1]")``, started by pyspark) serves the
    same check and anonymize. pyspark refuses a local Connect server beside a classic session
    in one process: the classic one is stopped first (this test runs last)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    connect = SparkSession.builder.remote("local[1]").getOrCreate()
    spark_engine.use_session(connect)
    try:
        df = pl.DataFrame({"zip": ["1301", "1302", "1301", "1302", "1411"],
                           "s": ["a", "b", "a", "c", "a"]})
        cdf = connect.createDataFrame(df.to_arrow())
        assert type(cdf).__module__.startswith("pyspark.sql.connect")
        models = [KAnonymity(2)]
        assert lp.check(cdf, "zip", "s", models) == lp.check(df, "zip", "s", models)
        hs = {"zip": masking_hierarchy(pl.Series(["1301", "1302", "1411"]))}
        ref = lp.anonymize(df, "zip", "s", hs, models, suppression=0.2)
        got = lp.anonymize(cdf, "zip", "s", hs, models, suppression=0.2)
        _compare(ref, got)
        ref.sink(tmp_path / "ref.parquet")
        got.sink(tmp_path / "connect.parquet")
        assert _release_hash(tmp_path / "ref.parquet") == \
            _release_hash(tmp_path / "connect.parquet")
    finally:
        connect.stop()
