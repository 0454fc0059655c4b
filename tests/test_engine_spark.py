"""The Spark engine (``ldiv_polars.core.engines.spark``) against the Polars and DuckDB engines:
the same frequency sets on random tables (nulls, unicode and quoted names, a column named like
an SQL keyword), the same ``anonymize`` results (levels, value, suppressed rows, minimal nodes)
and the same released rows (a hash of the sorted rows of the written files), on a local classic
session and on a local Spark Connect server, both started here. Skipped with a reason when
PySpark or Java is missing (CI installs both: ``.ci/run``)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
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
    InvalidParameterError,
    NullValuesError,
    OutputOverwritesInputError,
    UnknownColumnError,
    UnreadableInputError,
)
from ldiv_polars.hierarchy import interval_hierarchy, masking_hierarchy  # noqa: E402
from ldiv_polars.models import DistinctLDiversity, KAnonymity  # noqa: E402
from ldiv_polars.search.federated import ReleasePlan, verify_site_release  # noqa: E402

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


def test_encoded_counts_are_the_polars_engines(spark):
    """The search's counts from Spark's one raw groupBy, encoded on the driver, equal the
    Polars engine's (keys, framed codes with sensitive values); a value missing from a
    hierarchy or a null sensitive value under nulls="error" gives None (the caller then names
    them); the driver budget holds."""
    df = pl.DataFrame({"a": ["x", "y", "x", "z", "y", "x"], "b": [3, 1, 3, 2, 1, 1],
                       "s": ["p", "q", "p", None, "q", "p"]})
    sdf = spark.createDataFrame(df.to_arrow())
    leaves = {"a": pl.Series(["z", "y", "x"]), "b": pl.Series([1, 2, 3])}
    ref = polars_engine.ENGINE.encoded_counts(df, ("a", "b"), (), leaves, order_from=0)
    got = SPARK.encoded_counts(sdf, ("a", "b"), ("s",), leaves, qi_only=True, nulls="value",
                               order_from=0)
    assert got.form == "keys" and got.ordered
    assert (got.keys.tolist(), got.n.tolist()) == (ref.keys.tolist(), ref.n.tolist())
    framed = SPARK.encoded_counts(sdf, ("a", "b"), ("s",), leaves, nulls="value")
    want = polars_engine.ENGINE.encoded_counts(df, ("a", "b"), ("s",), leaves, nulls="value")
    assert _rows(framed.frame) == _rows(want.frame)
    assert SPARK.encoded_counts(sdf, ("a", "b"), ("s",), leaves, qi_only=True) is None
    with pytest.raises(NullValuesError):
        SPARK.encoded_counts(sdf, ("a", "b"), ("s",), leaves)
    assert SPARK.encoded_counts(sdf, ("a",), (), {"a": pl.Series(["x", "y"])}) is None
    with pytest.raises(FrequencySetTooLargeError):
        SPARK.encoded_counts(sdf, ("a", "b"), (), leaves, max_groups=3)  # 4 classes


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


def test_cli_risk_engine_spark(spark, tmp_path, capsys):
    """``ldiv risk --engine spark``: the class table grouped by Spark (weight sums with
    ``--weight``), every figure the Polars engine's; weights are binary fractions, so the sums
    are exact whatever the order Spark adds them in."""
    df = pl.DataFrame({"zip": ["1", "1", "2", "2", "3", "3", "3", "4"],
                       "n": [30, 30, 40, 41, 50, 50, 50, 60],  # a QI named like the count
                       "w": [2.5, 0.75, 4.0, 1.5, 8.0, 0.25, 3.0, 16.0]})
    parquet, csv = tmp_path / "t.parquet", tmp_path / "t.csv"
    df.write_parquet(parquet)
    df.write_csv(csv, separator="|")
    sdf = spark.createDataFrame(df.to_arrow())
    assert lp.risk_profile(sdf, "zip", weight="w", threshold=0.3) == \
        lp.risk_profile(df, "zip", weight="w", threshold=0.3)
    for path, flags in ((parquet, ["--qi", "zip,n", "--population", "10000", "--suda",
                                   "--attributes"]),
                        (parquet, ["--qi", "zip", "--weight", "w", "--threshold", "0.3"]),
                        (csv, ["--qi", "zip", "--weight", "w", "--separator", "|"])):
        assert main(["risk", str(path), *flags, "--json"]) == 0
        ref = json.loads(capsys.readouterr().out)
        assert main(["risk", str(path), *flags, "--json", "--engine", "spark"]) == 0
        assert json.loads(capsys.readouterr().out) == ref
    assert "individual" in ref and ref["profile"]["rows"] == 8
    with pytest.raises(InvalidParameterError, match="weight"):
        lp.risk_profile(sdf, "zip", weight="zip")
    assert main(["risk", str(parquet), "--qi", "zip", "--engine", "duckdb"]) == 2


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


def _parquet_columns(path: Path) -> list[tuple]:
    """Each column of a written release's Parquet schema: name, physical and logical type,
    definition level (nullability), one list per file (every part file of a directory)."""
    files = [path] if path.is_file() else sorted(path.glob("*.parquet"))
    schemas = {tuple((c.name, c.physical_type, str(c.logical_type), c.max_definition_level,
                      c.max_repetition_level) for c in pq.ParquetFile(f).schema)
               for f in files}
    assert len(schemas) == 1  # (Spark's part files agree)
    return list(schemas.pop())


def _arrow_fields(path: Path) -> list[tuple[str, pa.DataType]]:
    """The Arrow schema pyarrow reads, with the writers' own metadata taken off: a dictionary
    type as its value type (Polars' Enum), large_string as string (Polars' String)."""
    out = []
    for f in pq.read_schema(path) if path.is_file() else pads.dataset(path).schema:
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        out.append((f.name, pa.string() if pa.types.is_large_string(t) else t))
    return out


def test_release_schema_is_the_polars_paths(spark, tmp_path):
    """The release Spark writes has the Parquet schema the Polars path writes, column for
    column (names, order, physical and logical types, nullability) on every column type;
    what differs is each writer's metadata: Polars stores the Arrow schema (QI columns as
    Enums of the level's labels, in hierarchy order), Spark its own row metadata, so pyarrow
    reads the QI columns as dictionaries from one file and as strings from the other. The
    rows are the same (hashes)."""
    import datetime as dt

    n = 20
    df = pl.DataFrame({
        "zip": ["1301", "1302", "1301", "1302", "1411"] * 4, "select": [21, 22, 35, 36, 50] * 4,
        "s": ["a", "b", "a", "c", "a"] * 4, "x": [1.5, 2.0, 3.0, None, 1.0] * 4,
        "d": [dt.date(2020, 1, i + 1) for i in range(n)],
        "t": [dt.datetime(2020, 1, 1, i) for i in range(n)], "b": [True, False] * 10,
        "i32": pl.Series(range(n), dtype=pl.Int32), "i8": pl.Series(range(n), dtype=pl.Int8),
        "f32": pl.Series([0.5] * n, dtype=pl.Float32)})
    df.write_parquet(tmp_path / "in.parquet")
    hs = {"zip": masking_hierarchy(pl.Series(["1301", "1302", "1411"])),
          "select": interval_hierarchy(pl.Series(list(range(60))), [10, 30])}
    out = {}
    for engine in ("polars", "spark"):
        res = lp.anonymize(tmp_path / "in.parquet", ["zip", "select"], "s", hs, KAnonymity(5),
                           suppression=0.3, engine=engine)
        assert res.suppressed_rows == 4  # (the masked class is written too)
        res.sink(out.setdefault(engine, tmp_path / f"{engine}.parquet"))
    assert _parquet_columns(out["spark"]) == _parquet_columns(out["polars"])
    assert [c[0] for c in _parquet_columns(out["polars"])] == df.columns
    assert _arrow_fields(out["spark"]) == _arrow_fields(out["polars"])
    qi_types = {f.name: f.type for f in pq.read_schema(out["polars"]) if f.name in hs}
    assert all(pa.types.is_dictionary(t) for t in qi_types.values())
    assert _release_hash(out["spark"]) == _release_hash(out["polars"])


def test_sink_reverifies_the_written_files(spark, tmp_path):
    """``sink`` re-verifies what Spark wrote: the written directory's frequency set, the masked
    class taken out and its size checked. Where a retained class is written with every QI
    masked too (a label equal to the mask), the retained rows are recounted from the input
    instead: the verdict and the release are the Polars path's either way."""
    from ldiv_polars.hierarchy import Hierarchy
    from ldiv_polars.search.anonymize import VerificationError

    rows = ["1301"] * 3 + ["1302"] * 3 + ["9999"] * 5 + ["1411"]
    df = pl.DataFrame({"zip": rows, "s": list("abcabcabcabc")})
    df.write_parquet(tmp_path / "in.parquet")
    h = {"zip": Hierarchy([["1301", "130*", "*"], ["1302", "130*", "*"], ["9999", "*", "*"],
                           ["1411", "141*", "*"]], name="zip")}
    ref = lp.anonymize(df, "zip", "s", h, KAnonymity(5), suppression=0.1)
    got = lp.anonymize(tmp_path / "in.parquet", "zip", "s", h, KAnonymity(5), suppression=0.1,
                       engine="spark", verify=False)
    _compare(ref, got)
    assert got.levels == {"zip": 1} and got.suppressed_rows == 1
    assert got.output_plan.retained_classes(pl.DataFrame({"zip": ["*"], "n": [6]})) is None
    ref.sink(tmp_path / "ref.parquet")
    got.sink(tmp_path / "spark.parquet")  # the fallback: "*" is a label and the mask
    assert got.verification.passed
    assert _release_hash(tmp_path / "spark.parquet") == _release_hash(tmp_path / "ref.parquet")
    df2 = df.with_columns(pl.col("zip").replace("9999", "1301"))  # "*" is the mask only
    h2 = {"zip": Hierarchy([["1301", "130*", "*"], ["1302", "130*", "*"],
                            ["1411", "141*", "*"]], name="zip")}
    got2 = lp.anonymize(spark.createDataFrame(df2.to_arrow()), "zip", "s", h2, KAnonymity(5),
                        suppression=0.1, verify=False)
    got2.sink(tmp_path / "spark2.parquet")
    assert got2.verification.passed and got2.suppressed_rows == 1
    plan = got2._plan
    with pytest.raises(VerificationError, match="11 rows outside the suppressed classes"):
        plan.verify_written(tmp_path / "spark2.parquet", got2.output_plan, 12)


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


def test_check_t_and_release_of_a_spark_directory(spark, tmp_path, capsys):
    """``check --t --engine spark`` reads the sensitive column's type through Spark (a
    directory Spark wrote: Polars cannot scan it) and judges a Spark release's retained rows
    as its verification did, the mask recorded beside the part files."""
    from ldiv_polars.hierarchy import Hierarchy

    rows = ["1301"] * 3 + ["1302"] * 3 + ["1411"]
    df = pl.DataFrame({"zip": rows, "s": [1, 2, 3, 1, 2, 3, 9]})
    df.write_parquet(tmp_path / "in.parquet")
    h = {"zip": Hierarchy([["1301", "130*", "*"], ["1302", "130*", "*"], ["1411", "141*", "*"]],
                          name="zip")}
    got = lp.anonymize(tmp_path / "in.parquet", "zip", "s", h, [KAnonymity(3)],
                       suppression=0.2, engine="spark", verify=False)
    got.sink(tmp_path / "rel.parquet")
    assert got.suppressed_rows == 1 and got.verification.passed
    args = ["--qi", "zip", "--sensitive", "s", "--k", "3", "--t", "0.5", "--json"]
    assert main(["check", str(tmp_path / "rel.parquet"), *args, "--engine", "spark"]) == 0
    spark_json = json.loads(capsys.readouterr().out)
    assert spark_json["unjudged_rows"] == 1
    assert spark_json["models"][1]["key"] == "t_closeness_0.5_ordered"  # Int64: ordered
    by_hand = lp.check(pl.read_parquet(str(tmp_path / "rel.parquet" / "*.parquet"))
                       .filter(pl.col("zip").cast(pl.String) != "*"), "zip", "s",
                       [KAnonymity(3), lp.TCloseness(0.5, distance="ordered")])
    assert spark_json["models"] == by_hand.to_dict()["models"]


def test_spark_release_that_fails_verification_leaves_out_untouched(spark, tmp_path,
                                                                     monkeypatch):
    """``apply-plan --engine spark`` verifies the temporary directory before the rename: a
    failing verification leaves an existing OUT as it was and no temporary directory."""
    from ldiv_polars.search import federated
    from ldiv_polars.search.anonymize import VerificationError

    df = pl.DataFrame({"zip": ["1301", "1302", "1301", "1302", "1411", "1411"],
                       "s": ["a", "b", "a", "c", "a", "b"]})
    _site_plan(tmp_path, df, "t.parquet", k=3, suppression=0.4)
    out = tmp_path / "out.parquet"
    run = ["apply-plan", str(tmp_path / "t.parquet"), str(tmp_path / "plan.json"), str(out),
           "--hierarchies", str(tmp_path / "h"), "--engine", "spark"]
    assert main(run) == 0  # an earlier release at OUT
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert "_ldiv_release.json" in before  # the release records its mask

    def failing(*args, **kwargs):
        raise VerificationError("made to fail")

    monkeypatch.setattr(federated, "_verified", failing)
    assert main(run) == 3
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.parquet", "h", "out.parquet",
                                                          "plan.json", "t.parquet"]


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
        _apply_plan_over_connect(tmp_path, df)
    finally:
        connect.stop()


def _site_plan(tmp_path: Path, df: pl.DataFrame, name: str, *, k: int,
               suppression: float) -> None:
    """The site's rows ``df`` written to ``name``, the zip hierarchy to ``h/``, and the plan
    of the aggregator (one site: its own counts) to ``plan.json``."""
    df.write_parquet(tmp_path / name)
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "zip.csv").write_text("1301;130*;*\n1302;130*;*\n1411;141*;*\n")
    assert main(["counts", str(tmp_path / name), "--qi", "zip", "--sensitive", "s",
                 "--out", str(tmp_path / "c.parquet")]) == 0
    assert main(["anonymize-counts", str(tmp_path / "c.parquet"), "--hierarchies",
                 str(tmp_path / "h"), "--plan-out", str(tmp_path / "plan.json"), "--k", str(k),
                 "--suppression", str(suppression)]) == 0


def _apply_plan_over_connect(tmp_path: Path, df: pl.DataFrame) -> None:
    """``ldiv apply-plan --engine spark --spark-remote local[1]`` (the Connect server running)
    releases a site's rows as the Polars engine does, re-verified against the plan by the
    Connect session's class sizes; a release that is not the plan's is refused."""
    _site_plan(tmp_path, df, "site.parquet", k=2, suppression=0.2)
    for engine, extra in (("polars", []), ("spark", ["--spark-remote", "local[1]"])):
        assert main(["apply-plan", str(tmp_path / "site.parquet"), str(tmp_path / "plan.json"),
                     str(tmp_path / f"{engine}.parquet"), "--hierarchies", str(tmp_path / "h"),
                     "--engine", engine, *extra]) == 0
    assert (tmp_path / "spark.parquet" / "_SUCCESS").is_file()
    release = _release_hash(tmp_path / "spark.parquet")
    assert release == _release_hash(tmp_path / "polars.parquet")
    plan = ReleasePlan.from_json((tmp_path / "plan.json").read_text())
    hs = {"zip": tmp_path / "h" / "zip.csv"}
    assert verify_site_release(str(tmp_path / "site.parquet"), str(tmp_path / "spark.parquet"),
                               plan, hs, engine="spark") == 1
    with pytest.raises(InvalidParameterError, match="not the plan applied"):  # rows as read
        verify_site_release(str(tmp_path / "site.parquet"), str(tmp_path / "site.parquet"),
                            plan, hs, engine="spark")

