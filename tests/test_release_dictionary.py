"""A release names no value that only suppressed rows (or cells) held: the Enum dtypes of the
outputs (a Parquet file's dictionary) list only values some released row holds (audit8 finding,
the rest of its class). The expected dictionaries are the values of the released rows
themselves, read back from the written file."""

from __future__ import annotations

import polars as pl
import pyarrow.parquet as pq
import pytest

import ldiv_polars as lp
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.local.cells import suppress_cells
from ldiv_polars.models import KAnonymity
from ldiv_polars.search.federated import ReleasePlan, anonymize_counts, apply_plan, site_counts

ROWS = [("a", "x")] * 3 + [("b", "y")] * 3 + [("c", "rare")]
HS = {"zip": Hierarchy([[v, "*"] for v in "abc"], name="zip")}


def _frame(zip_dtype: pl.DataType = pl.String, s_dtype: pl.DataType = pl.String) -> pl.DataFrame:
    return pl.DataFrame({"zip": [r[0] for r in ROWS], "s": [r[1] for r in ROWS]},
                        schema={"zip": zip_dtype, "s": s_dtype})


def _dictionary(path, column: str) -> list[str]:
    """The dictionary the Parquet file's column stores (every row group's chunk)."""
    col = pq.read_table(path).column(column)
    return sorted({v for chunk in col.chunks for v in chunk.dictionary.to_pylist()})


def _held(path, column: str) -> list[str]:
    return sorted(set(pl.read_parquet(path)[column].drop_nulls().cast(pl.String).to_list()))


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_anonymize_enum_sensitive_names_only_released_values(tmp_path, mode):
    # the rare row's class is suppressed: dropped, its sensitive value leaves the release
    # and must leave the dictionary too; masked, the row (and its value) is released
    df = _frame(s_dtype=pl.Enum(["x", "y", "rare"]))
    res = lp.anonymize(df, ["zip"], "s", HS, KAnonymity(3), suppression=0.2,
                       metric="height", suppression_mode=mode)
    assert res.levels == {"zip": 0} and res.suppressed_rows == 1
    res.sink(tmp_path / "o.parquet")
    assert _dictionary(tmp_path / "o.parquet", "s") == _held(tmp_path / "o.parquet", "s")
    assert ("rare" in _dictionary(tmp_path / "o.parquet", "s")) == (mode == "mask")
    assert _dictionary(tmp_path / "o.parquet", "zip") == sorted(["a", "b", "*"])


def test_cell_suppression_of_an_enum_qi_names_only_released_values(tmp_path):
    src = tmp_path / "in.parquet"
    _frame(zip_dtype=pl.Enum(["a", "b", "c"])).write_parquet(src)
    for data in (src, pl.read_parquet(src)):  # batched Parquet write, streaming sink
        res = suppress_cells(data, ["zip"], "s", KAnonymity(3))
        res.sink(tmp_path / "o.parquet")
        got = pl.read_parquet(tmp_path / "o.parquet")
        # ("a" goes too: a suppressed cell is a value, and "c"'s null class needs k rows)
        assert "c" not in got["zip"].to_list() and res.cells_suppressed == 4
        held = _held(tmp_path / "o.parquet", "zip")
        assert _dictionary(tmp_path / "o.parquet", "zip") == held
        assert got["zip"].dtype == pl.Enum([v for v in "abc" if v in held])  # input's order


def test_federated_site_release_names_only_released_labels(tmp_path):
    df = _frame()
    df.write_parquet(tmp_path / "site.parquet")
    res, plan = anonymize_counts([site_counts(df, ["zip"], "s")], HS, KAnonymity(3),
                                 suppression=0.2, metric="height")
    assert res.suppressed_rows == 1 and plan is not None
    plan = ReleasePlan.from_json(plan.to_json())
    assert plan.held == {"zip": ["a", "b", "*"]}
    apply_plan(tmp_path / "site.parquet", plan, HS, tmp_path / "out.parquet")
    assert _dictionary(tmp_path / "out.parquet", "zip") == \
        _held(tmp_path / "out.parquet", "zip") == ["*", "a", "b"]
    # a plan written before held labels existed still applies (every label of the level)
    old = ReleasePlan(plan.qi, plan.levels, plan.suppressed, plan.mode, plan.mask)
    apply_plan(tmp_path / "site.parquet", old, HS, tmp_path / "old.parquet")
    assert pl.read_parquet(tmp_path / "old.parquet")["zip"].cast(pl.String).equals(
        pl.read_parquet(tmp_path / "out.parquet")["zip"].cast(pl.String))


def test_federated_site_drop_release_names_only_released_sensitive_values(tmp_path):
    # two sites, the rare row at the second: dropped, its Enum sensitive value must leave
    # the site's dictionary too (the plan carries the union's released values)
    df = _frame(s_dtype=pl.Enum(["x", "y", "rare"]))
    sites = [df.head(3), df.tail(4)]
    for i, part in enumerate(sites):
        part.write_parquet(tmp_path / f"site{i}.parquet")
    res, plan = anonymize_counts([site_counts(p, ["zip"], "s") for p in sites], HS,
                                 KAnonymity(3), suppression=0.2, metric="height",
                                 suppression_mode="drop")
    assert res.suppressed_rows == 1 and plan is not None
    plan = ReleasePlan.from_json(plan.to_json())
    for i in range(2):
        out = tmp_path / f"out{i}.parquet"
        apply_plan(tmp_path / f"site{i}.parquet", plan, HS, out)
        assert "rare" not in _dictionary(out, "s") and "c" not in _dictionary(out, "zip")
    got = pl.concat([pl.read_parquet(tmp_path / f"out{i}.parquet") for i in range(2)])
    assert sorted(got["s"].cast(pl.String).to_list()) == ["x"] * 3 + ["y"] * 3


def test_anonymize_drop_names_no_value_of_another_enum_column_only_dropped_rows_held(tmp_path):
    # a column neither QI nor sensitive, passed through: its Enum is narrowed to the retained
    # rows' values when dropping (masked rows are released, so theirs stay)
    note = pl.Enum(["n1", "n2", "secret", "unused"])
    df = _frame().with_columns(pl.Series("note", ["n1"] * 3 + ["n2"] * 3 + ["secret"],
                                         dtype=note))
    for mode, want in (("drop", ["n1", "n2"]), ("mask", ["n1", "n2", "secret", "unused"])):
        res = lp.anonymize(df, ["zip"], "s", HS, KAnonymity(3), suppression=0.2,
                           metric="height", suppression_mode=mode)
        res.sink(tmp_path / "o.parquet")
        assert _dictionary(tmp_path / "o.parquet", "note") == sorted(want)
        assert pl.read_parquet(tmp_path / "o.parquet").columns == df.columns


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_written_file_holds_no_byte_of_a_suppressed_only_value(tmp_path, mode):
    # the strongest form: the value is nowhere in the file (dictionary, Arrow schema, metadata)
    rare = "zz-only-suppressed-qq"
    df = pl.DataFrame({"zip": ["aa"] * 3 + ["bb"] * 3 + [rare], "s": ["x", "y", "x"] * 2 + ["x"]})
    hs = {"zip": Hierarchy([[v, "*"] for v in sorted(set(df["zip"]))], name="zip")}
    res = lp.anonymize(df, ["zip"], "s", hs, KAnonymity(3), suppression=0.2, metric="height",
                       suppression_mode=mode)
    assert res.levels == {"zip": 0} and res.suppressed_rows == 1
    res.sink(tmp_path / "o.parquet")
    assert rare.encode() not in (tmp_path / "o.parquet").read_bytes()
    assert b"bb" in (tmp_path / "o.parquet").read_bytes()  # (a released value is found)
