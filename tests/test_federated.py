"""Federated counts (``ldiv_polars.search.federated``, ``ldiv counts``): a table split into 3
sites, each counting its rows (with a different engine), gives by merging the counts exactly
the whole table's verdicts, summary and optimum (levels, value, suppressed rows, minimal
nodes), and each site's release under the aggregator's plan is the slice of the whole
release of its rows."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.cli import main
from ldiv_polars.errors import InputFormatError, InvalidParameterError
from ldiv_polars.hierarchy import interval_hierarchy, masking_hierarchy
from ldiv_polars.models import DistinctLDiversity, KAnonymity
from ldiv_polars.models.verdict import check_frequency_set, check_models
from ldiv_polars.search.federated import (
    ReleasePlan,
    anonymize_counts,
    apply_plan,
    read_counts,
    site_counts,
    write_counts,
)
from ldiv_polars.table_summary import frequency_set_summary

ZIPS = ["1301", "1302", "1411", "1412", "2001"]
HS = {"zip": masking_hierarchy(pl.Series(ZIPS)),
      "age": interval_hierarchy(pl.Series(list(range(60))), [10, 30])}
ENGINES = ["polars", "duckdb", "polars"]


def _table(data, rows: int) -> pl.DataFrame:
    return pl.DataFrame({
        "site": data.draw(st.lists(st.integers(0, 2), min_size=rows, max_size=rows)),
        "zip": data.draw(st.lists(st.sampled_from(ZIPS), min_size=rows, max_size=rows)),
        "age": data.draw(st.lists(st.integers(0, 59), min_size=rows, max_size=rows)),
        "disease": data.draw(st.lists(st.sampled_from(["flu", "cold", "hiv"]), min_size=rows,
                                      max_size=rows)),
    })


def _sorted(df: pl.DataFrame) -> list[tuple]:
    return sorted(df.rows(), key=lambda r: tuple(str(v) for v in r))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_three_sites_give_the_whole_tables_answers(tmp_path_factory, data):
    df = _table(data, data.draw(st.integers(1, 60)))
    tmp = tmp_path_factory.mktemp("fed")
    models = data.draw(st.sampled_from([[KAnonymity(2)], [KAnonymity(3), DistinctLDiversity(2)]]))
    kw = dict(suppression=data.draw(st.sampled_from([0.0, 0.25])),
              suppression_mode=data.draw(st.sampled_from(["mask", "drop"])),
              metric=data.draw(st.sampled_from(["aecs", "loss", "kl"])))
    files = []
    for i in range(3):
        part = df.filter(pl.col("site") == i)
        path = tmp / f"site{i}.parquet"
        part.write_parquet(path)
        fs = site_counts(path, ["zip", "age"], "disease", engine=ENGINES[i])
        write_counts(fs, tmp / f"counts{i}.parquet")
        files.append(tmp / f"counts{i}.parquet")
    merged, levels = read_counts(files)
    assert levels == {"zip": 0, "age": 0}
    whole = lp.check(df, ["zip", "age"], "disease", models)
    assert check_frequency_set(merged, check_models(models, merged.sensitive)) == whole
    assert frequency_set_summary(merged) == lp.summary(df, ["zip", "age"], "disease")
    ref = lp.anonymize(df, ["zip", "age"], "disease", HS, models, **kw)
    res, plan = anonymize_counts(files, HS, models, **kw)
    assert (res.levels, res.suppressed_rows, res.minimal, res.classes) == \
        (ref.levels, ref.suppressed_rows, ref.minimal, ref.classes)
    assert res.value == (ref.value if ref.value is None else pytest.approx(ref.value, rel=1e-12))
    if not ref.found:
        assert plan is None
        return
    assert res.verification.passed and res.output is None
    plan = ReleasePlan.from_json(plan.to_json())
    whole_out = ref.output.collect()
    for i in range(3):
        apply_plan(tmp / f"site{i}.parquet", plan, HS, tmp / f"out{i}.parquet")
        got = pl.read_parquet(tmp / f"out{i}.parquet")
        assert got.schema == whole_out.schema
        assert _sorted(got) == _sorted(whole_out.filter(pl.col("site") == i))


def test_counts_at_a_coarser_level_and_errors(tmp_path):
    df = pl.DataFrame({"zip": ["1301", "1302", "1411", "1412", "1301", "1302"],
                       "age": [1, 2, 3, 4, 5, 6], "s": ["a", "b", "a", "b", "a", "b"]})
    fs = site_counts(df, ["zip", "age"], "s", hierarchies=HS, levels={"zip": 2})
    assert sorted(fs.frame.collect().rows()) == [
        ("13**", 1, "a", 1), ("13**", 2, "b", 1), ("13**", 5, "a", 1), ("13**", 6, "b", 1),
        ("14**", 3, "a", 1), ("14**", 4, "b", 1)]
    write_counts(fs, tmp_path / "c.parquet", levels={"zip": 2})
    res, plan = anonymize_counts([tmp_path / "c.parquet"], HS, KAnonymity(2))
    ref = lp.anonymize(df, ["zip", "age"], "s", HS, KAnonymity(2), metric="aecs")
    assert res.levels["zip"] + 2 == plan.levels["zip"]
    assert plan.levels == {"zip": max(ref.levels["zip"], 2), "age": plan.levels["age"]}
    write_counts(site_counts(df, ["zip", "age"], "s"), tmp_path / "c0.parquet")
    with pytest.raises(InvalidParameterError, match="differ"):
        read_counts([tmp_path / "c.parquet", tmp_path / "c0.parquet"])
    df.write_parquet(tmp_path / "plain.parquet")
    with pytest.raises(InputFormatError, match="not a counts file"):
        read_counts([tmp_path / "plain.parquet"])
    with pytest.raises(InputFormatError):
        ReleasePlan.from_json("{}")


def test_ldiv_counts_command(tmp_path):
    df = pl.DataFrame({"zip": ["1301", "1302", "1301"], "s": ["a", "b", "a"]})
    df.write_parquet(tmp_path / "t.parquet")
    out = tmp_path / "c.parquet"
    assert main(["counts", str(tmp_path / "t.parquet"), "--qi", "zip", "--sensitive", "s",
                 "--out", str(out)]) == 0
    merged, levels = read_counts([out])
    assert sorted(merged.frame.collect().rows()) == [("1301", "a", 2), ("1302", "b", 1)]
    meta = json.loads(pl.read_parquet_metadata(out)["ldiv_counts"])
    assert meta == {"qi": ["zip"], "sensitive": ["s"], "levels": {"zip": 0}}
