"""Attribute risks (distinction, separation, uniques per QI combination) against ARX's
RiskModelAttributes (tests/data/arx_attribute_risks.jsonl, provenance in tests/data/README.md)
and a brute force over record pairs."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.risk import BudgetExceededError, attribute_risks
from ldiv_polars.risk.attributes import attribute_cost

ARX = [json.loads(line)
       for line in (Path(__file__).parent / "data" / "arx_attribute_risks.jsonl").open()]


@pytest.mark.parametrize("name", sorted({c["name"] for c in ARX}))
def test_distinction_and_separation_equal_arx(name: str, adult_csv: Path) -> None:
    cases = [c for c in ARX if c["name"] == name]
    qi = cases[0]["qi"].split(",")
    adult = pl.read_csv(adult_csv, separator=";")
    ours = {frozenset(row["attributes"].split(", ")): row
            for row in attribute_risks(adult, qi).iter_rows(named=True)}
    assert len(ours) == len(cases) == 2 ** len(qi) - 1
    for c in cases:
        row = ours[frozenset(c["attributes"].split(","))]
        assert math.isclose(row["distinction"], c["distinction"], rel_tol=1e-12)
        assert math.isclose(row["separation"], c["separation"], rel_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 3), data=st.data())
def test_attribute_risks_equal_brute_force(m: int, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 12))
    rows = [tuple(data.draw(st.integers(0, 2)) for _ in range(m)) for _ in range(n)]
    max_size = data.draw(st.integers(1, m))
    qi = [f"q{i}" for i in range(m)]
    got = attribute_risks(pl.DataFrame(rows, schema=qi, orient="row"), qi, max_size=max_size)
    assert got.height == sum(math.comb(m, k) for k in range(1, max_size + 1))
    for row in got.iter_rows(named=True):
        idx = [qi.index(a) for a in row["attributes"].split(", ")]
        proj = [tuple(r[i] for i in idx) for r in rows]
        pairs = list(combinations(range(n), 2))
        differ = sum(proj[a] != proj[b] for a, b in pairs)
        assert row["classes"] == len(set(proj))
        assert row["distinction"] == pytest.approx(len(set(proj)) / n, rel=1e-12)
        assert row["separation"] == pytest.approx(differ / len(pairs) if pairs else 0.0,
                                                  rel=1e-12)
        assert row["uniques"] == sum(proj.count(p) == 1 for p in proj)
    shares = got["unique_share"].to_list()
    assert shares == sorted(shares, reverse=True)


def test_attribute_risks_parameters() -> None:
    df = pl.DataFrame({"a": [1, 2, 3], "b": [1, 1, 2]})
    with pytest.raises(InvalidParameterError):
        attribute_risks(df, ["a", "b"], max_size=0)
    with pytest.raises(InvalidParameterError):
        attribute_risks(df, ["a", "b"], nulls="wildcard")
    cost = attribute_cost(3, 2, 2)
    with pytest.raises(BudgetExceededError, match=f"{cost:,}"):
        attribute_risks(df, ["a", "b"], budget=cost - 1)
