"""SUDA2: sdcMicro's test and documentation expectations (R is not available here: the values
are the ones sdcMicro's tests/testthat/test_suda2.R and the sdcMicro book / SDC guidelines
state), and a brute force over the rows (every subset of every record, minimality checked
against every proper subset) on random small tables."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.errors import InvalidParameterError, NullValuesError
from ldiv_polars.risk import BudgetExceededError, suda2
from ldiv_polars.risk.suda import CONTRIBUTION_PREFIX, DIS_SCORE, SCORE, suda_cost

from .r_random import RRandom, r_round


def _record_scores(df: pl.DataFrame, qi: list[str], **kw: object) -> list[float]:
    """Per record (input order) SUDA scores."""
    r = suda2(df, qi, **kw)  # type: ignore[arg-type]
    return df.join(r.table, on=qi, how="left", nulls_equal=True)[SCORE].to_list()


def test_sdcmicro_simple_contributions() -> None:
    # test_suda2.R "suda2 simple example contrubtion" 1-4: the column order does not matter
    data = {"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]}
    for order in (["a", "b", "c"], ["a", "c", "b"], ["c", "a", "b"], ["c", "b", "a"]):
        r = suda2(pl.DataFrame(data).select(order), order)
        assert r.attribute_contributions == {"a": 50.0, "b": 37.5, "c": 37.5}


def test_sdcmicro_book_example() -> None:
    # test_suda2.R "suda2 book example": scores of records 5..8 are 4, 2, 6, 8
    tab = pl.DataFrame({
        "age": ["20s"] * 7 + ["60s"],
        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
        "income": ["50k+", "50k+"] + ["50k-"] * 6,
        "education": ["highschool"] * 4 + ["university", "highschool", "middleschool",
                                           "university"],
    })
    scores = _record_scores(tab, tab.columns)
    assert scores[4:8] == [4, 2, 6, 8]


def test_sdcmicro_sdc_guideline() -> None:
    # test_suda2.R "suda2 sdc guideline" (the SDC practice guide's example)
    testdat = pl.DataFrame({
        "Residence": ["Urban"] * 4 + ["Rural"] + ["Urban"] * 5,
        "Gender": ["Female", "Female", "Female", "Male", "Female", "Male", "Female", "Male",
                   "Female", "Female"],
        "Education": ["Secondary incomplete", "Secondary incomplete", "Primary incomplete",
                      "Secondary complete", "Secondary complete", "Secondary complete",
                      "Primary complete", "Post-secondary", "Secondary incomplete",
                      "Secondary incomplete"],
        "Labor": ["Employed", "Employed", "Non-LF", "Employed", "Unemployed", "Employed",
                  "Non-LF", "Unemployed", "Non-LF", "Non-LF"],
    })
    assert _record_scores(testdat, testdat.columns) == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]


def test_sdcmicro_seeded_sdc_object() -> None:
    # test_suda2.R "sdc without missing, DisFraction = default": set.seed(3); 30 runif draws,
    # then round(runif(10, 1, 4)), round(runif(10, 1, 6)), round(runif(10, 1, 3)) as keys
    rng = RRandom(3)
    rng.runif(30, 1, 100)
    cols = {name: [r_round(x) for x in rng.runif(10, 1, hi)]
            for name, hi in (("Var4", 4), ("Var5", 6), ("Var6", 3))}
    df = pl.DataFrame(cols)
    qi = list(cols)
    assert _record_scores(df, qi) == [0, 1, 0, 2, 2, 0, 4, 0, 3, 2]
    r = suda2(df, qi)
    share = df.join(r.table, on=qi, how="left")[f"{CONTRIBUTION_PREFIX}Var4"].to_list()
    assert share == pytest.approx([0, 0, 0, 0, 0.5, 0, 0.5, 0, 2 / 3, 0.5], abs=1e-12)


# ---------------------------------------------------------------- brute force over the rows


def _brute(rows: list[tuple], m: int, max_size: int, fraction: float
           ) -> tuple[list[float], list[float], list[list[float]], dict[int, int]]:
    """Per record: score, DIS score, contribution shares; and MSU counts by size."""
    def unique(r: int, s: tuple[int, ...]) -> bool:
        return all(any(rows[o][i] != rows[r][i] for i in s) for o in range(len(rows)) if o != r)

    scores, shares, by_size = [], [], {k: 0 for k in range(1, max_size + 1)}
    for r in range(len(rows)):
        score, contrib = 0.0, [0.0] * m
        for k in range(1, max_size + 1):
            for s in combinations(range(m), k):
                proper = (t for j in range(1, k) for t in combinations(s, j))
                if unique(r, s) and not any(unique(r, t) for t in proper):
                    w = math.factorial(m - k)
                    score += w
                    by_size[k] += 1
                    for i in s:
                        contrib[i] += w
        scores.append(score)
        shares.append([c / score if score else 0.0 for c in contrib])
    sizes = [sum(1 for o in rows if o == r) for r in rows]
    u, p = sizes.count(1), sizes.count(2)
    q = 1 + (8 - m) / 20
    adj = sum(s ** -q for s in scores if s)
    dis_risk = u * fraction / (u * fraction + p * (1 - fraction)) if u else 1.0
    dis = [1 / (1 + (u / dis_risk - u) / (s ** q * adj)) if s else 0.0 for s in scores]
    return scores, dis, shares, by_size


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 4),
    data=st.data(),
    fraction=st.sampled_from([0.01, 0.1, 0.5]),
)
def test_suda2_equals_brute_force(m: int, data: st.DataObject, fraction: float) -> None:
    n = data.draw(st.integers(1, 14))
    rows = [tuple(data.draw(st.integers(0, 2)) for _ in range(m)) for _ in range(n)]
    max_size = data.draw(st.integers(1, m))
    qi = [f"q{i}" for i in range(m)]
    df = pl.DataFrame(rows, schema=qi, orient="row")
    r = suda2(df, qi, max_size=max_size, dis_fraction=fraction)
    per_record = df.join(r.table, on=qi, how="left")
    scores, dis, shares, by_size = _brute(rows, m, max_size, fraction)
    assert per_record[SCORE].to_list() == scores
    assert np.allclose(per_record[DIS_SCORE].to_numpy(), dis, rtol=1e-12, atol=0)
    got = per_record.select(f"{CONTRIBUTION_PREFIX}{q}" for q in qi).to_numpy()
    assert np.allclose(got, np.array(shares).reshape(n, m), rtol=1e-12, atol=1e-15)
    assert r.msus_by_size == by_size
    assert r.total_score == sum(scores)
    assert r.records_with_msus == sum(1 for s in scores if s)


def test_suda2_on_a_class_size_table_equals_rows() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 2, 3], "b": [1, 2, 1, 1, 1], "c": [0, 0, 0, 1, 1]})
    table = df.group_by("a", "b", "c").len("n")
    assert suda2(table).to_dict() == suda2(df, ["a", "b", "c"]).to_dict()


def test_suda2_errors_and_budget() -> None:
    df = pl.DataFrame({"a": [1, None, 2], "b": [1, 2, 2]})
    with pytest.raises(NullValuesError):
        suda2(df, ["a", "b"])
    assert suda2(df, ["a", "b"], nulls="value").records == 3
    with pytest.raises(InvalidParameterError, match="wildcard"):
        suda2(df, ["a", "b"], nulls="wildcard")
    with pytest.raises(InvalidParameterError):
        suda2(df, ["a", "b"], nulls="value", dis_fraction=1.0)
    cost = suda_cost(3, 2, 2)
    assert cost == 3 * 3
    with pytest.raises(BudgetExceededError, match=f"{cost:,}"):
        suda2(df, ["a", "b"], nulls="value", budget=cost - 1)
