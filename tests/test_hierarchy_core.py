"""Hierarchies: ARX CSV io, typed validation errors, builders, generalization expressions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from ldiv_polars.errors import InvalidParameterError, LdivError
from ldiv_polars.hierarchy import (
    Hierarchy,
    HierarchyDuplicateValueError,
    HierarchyError,
    HierarchyNotCoarseningError,
    HierarchyRaggedError,
    HierarchyValueMissingError,
    check_coverage,
    date_hierarchy,
    generalize,
    generalize_expr,
    interval_hierarchy,
    masking_hierarchy,
    ordered_hierarchy,
    taxonomy_hierarchy,
)

ADULT_HEIGHTS = {"sex": 2, "age": 5, "race": 2, "marital-status": 3, "education": 4,
                 "native-country": 3, "workclass": 3, "occupation": 3, "salary-class": 2}


def test_adult_hierarchies_load_with_arx_heights(adult_dir: Path):
    for col, height in ADULT_HEIGHTS.items():
        h = Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{col}.csv")
        assert h.height == height, col
        assert set(h.column(h.max_level).to_list()) == {"*"}
    age = Hierarchy.from_csv(adult_dir / "adult_hierarchy_age.csv")
    assert age.generalize_value(39, 1) == "35-39"
    assert age.generalize_value(39, 3) == "20-39"
    # the product of the heights of the 8 QIs of the issue is the lattice size 6,480
    prod = 1
    for c, hgt in ADULT_HEIGHTS.items():
        if c != "salary-class":
            prod *= hgt
    assert prod == 6480


def test_adult_data_is_covered(adult_dir: Path):
    df = pl.read_csv(adult_dir / "adult.csv", separator=";")
    hs = {c: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{c}.csv") for c in ADULT_HEIGHTS}
    check_coverage(df, hs)  # no error


def test_csv_roundtrip_with_other_separator(tmp_path: Path):
    h = masking_hierarchy(["13053", "13068", "14853"])
    text = h.to_csv(separator="|")
    assert text.splitlines()[0] == "13053|1305*|130**|13***|1****|*"
    p = tmp_path / "zip.csv"
    h.to_csv(p, separator="|")
    back = Hierarchy.from_csv(p, separator="|")
    assert back == h
    # read with the wrong separator, every row is one cell: the error names the separator to
    # pass (it used to be read silently as a one-level hierarchy, then reported as values
    # missing from it)
    with pytest.raises(HierarchyError, match=r"looks '\|'-separated; pass separator='\|'"):
        Hierarchy.from_csv(p, separator=";")


def test_ragged_rows_named(tmp_path: Path):
    p = tmp_path / "h.csv"
    p.write_text("a;x;*\nb;x;*\nc;*\n")
    with pytest.raises(HierarchyRaggedError, match=r"rows 3"):
        Hierarchy.from_csv(p)


def test_duplicate_raw_value():
    with pytest.raises(HierarchyDuplicateValueError, match="'a'"):
        Hierarchy([["a", "x", "*"], ["a", "y", "*"]])


def test_non_coarsening_levels_named():
    # 'x' at level 1 splits into 'p' and 'q' at level 2
    rows = [["a", "x", "p", "*"], ["b", "x", "q", "*"], ["c", "y", "q", "*"]]
    with pytest.raises(HierarchyNotCoarseningError, match=r"'x' at level 1 maps to 2"):
        Hierarchy(rows)


def test_missing_values_named_and_counted():
    h = Hierarchy([["a", "*"], ["b", "*"]])
    with pytest.raises(HierarchyValueMissingError) as ei:
        h.check_covers(["a", "c", "d", "e", "f", "g", "h", "b"], column="col")
    err = ei.value
    assert isinstance(err, LdivError)
    assert err.total_missing == 6 and err.missing == ["c", "d", "e", "f", "g"]
    assert "'col'" in str(err) and "and 1 more" in str(err)


def test_interval_builder_widths_and_coding():
    h = interval_hierarchy(range(15, 95), widths=[5, 10, 20], bottom=20, top=80)
    m1, m2, m3 = h.mapping(1), h.mapping(2), h.mapping(3)
    assert (m1["17"], m1["20"], m1["24"], m1["79"], m1["80"], m1["94"]) == \
        ("<20", "20-24", "20-24", "75-79", ">=80", ">=80")
    assert (m2["24"], m2["39"], m3["39"], m3["40"]) == ("20-29", "30-39", "20-39", "40-59")
    assert h.height == 5 and set(h.column(4).to_list()) == {"*"}
    with pytest.raises(InvalidParameterError, match="multiple"):
        interval_hierarchy([1, 2], widths=[5, 7])
    f = interval_hierarchy([0.5, 1.7], widths=[0.5])
    assert f.mapping(1) == {"0.5": "[0.5, 1)", "1.7": "[1.5, 2)"}


def test_masking_builder():
    h = masking_hierarchy(["13053", "14850"])
    assert h.frame.row(0) == ("13053", "1305*", "130**", "13***", "1****", "*")
    assert h.mapping(2) == {"13053": "130**", "14850": "148**"}


def test_date_builder():
    h = date_hierarchy([dt.date(1994, 3, 7), dt.date(2001, 12, 31)],
                       ["month", "quarter", "year", "decade"])
    assert h.frame.rows() == [
        ("1994-03-07", "1994-03", "1994-Q1", "1994", "1990s", "*"),
        ("2001-12-31", "2001-12", "2001-Q4", "2001", "2000s", "*"),
    ]
    with pytest.raises(InvalidParameterError):
        date_hierarchy([dt.date(2000, 1, 1)], ["year", "month"])


def test_ordered_and_taxonomy_builders():
    h = ordered_hierarchy(["a", "b", "c", "d", "e"], [2, 4])
    assert h.mapping(1) == {"a": "a..b", "b": "a..b", "c": "c..d", "d": "c..d", "e": "e"}
    assert h.mapping(2)["e"] == "e" and h.mapping(2)["c"] == "a..d"
    t = taxonomy_hierarchy({"Married": ["Married-civ-spouse", "Married-AF-spouse"],
                            "Single": {"Never": ["Never-married"], "Ended": ["Divorced"]}})
    assert t.height == 4
    assert t.mapping(1)["Married-civ-spouse"] == "Married-civ-spouse"  # padded shallow leaf
    assert t.mapping(2)["Divorced"] == "Single" and t.mapping(1)["Divorced"] == "Ended"


def test_generalize_expr_matches_mapping(adult_dir: Path):
    df = pl.read_csv(adult_dir / "adult.csv", separator=";").head(500)
    age = Hierarchy.from_csv(adult_dir / "adult_hierarchy_age.csv")
    for level in range(age.height):
        got = df.select(generalize_expr("age", age, level)).to_series().to_list()
        m = age.mapping(level)
        assert got == [m[str(v)] for v in df.get_column("age").to_list()]
    out = generalize(df, {"age": age}, {"age": 2}).collect()
    assert out.columns == df.columns and out.height == df.height


def test_generalize_reports_missing_values():
    df = pl.DataFrame({"zip": ["13053", "99999"]})
    h = masking_hierarchy(["13053"])
    with pytest.raises(HierarchyValueMissingError, match="'99999'"):
        generalize(df, {"zip": h}, {"zip": 1}).collect()
    with pytest.raises(InvalidParameterError, match="level 9"):
        generalize_expr("zip", h, 9)


def test_frame_is_accepted_by_hierarchical_t_closeness(adult_dir: Path):
    from ldiv_polars.models import TCloseness

    occ = Hierarchy.from_csv(adult_dir / "adult_hierarchy_occupation.csv")
    assert occ.frame.columns[0] == "level_0"
    TCloseness(0.2, "hierarchical", hierarchy=occ)
    TCloseness(0.2, "hierarchical", hierarchy=occ.frame)


def test_csv_with_bom_and_crlf(tmp_path: Path):
    p = tmp_path / "h.csv"
    p.write_bytes("\ufeffa;x;*\r\nb;x;*\r\n\r\nc;y;*\r\n".encode())
    h = Hierarchy.from_csv(p)
    assert h.values == ["a", "b", "c"] and h.mapping(1) == {"a": "x", "b": "x", "c": "y"}
