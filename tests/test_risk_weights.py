"""Sampling weights, individual and global risk, missing values as wildcards.

Expected values of the sdcMicro cases are copied from sdcMicro 5.8.1's tests
(tests/testthat/test_freqCalc.R, test_indivRisk.R, test_calcRisks.R at sdcTools/sdcMicro
cf32510); R is not available here, so the two calcRisks data sets drawn with ``set.seed(3)`` are
rebuilt with a port of R's random numbers (tests/r_random.py). Everything else is checked
against brute force: pairwise compatibility for wildcards, the negative-binomial series and a
numerical integral for the exact risk, a record-by-record port of mu-Argus' threshold loop.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, special, stats

from ldiv_polars.errors import InputFormatError, InvalidParameterError, NullValuesError
from ldiv_polars.risk import class_table, individual_risk, wildcard_counts
from ldiv_polars.risk.individual import (
    benedetti_franconi,
    global_threshold,
    risky_records,
)
from ldiv_polars.risk import BudgetExceededError
from ldiv_polars.risk.wildcard import wildcard_cost

from .r_random import RRandom, r_round

NA = None
WEIGHTS = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0]


def r_frame(values: list, nrow: int, names: list[str], weight: list[float] | None = None
            ) -> pl.DataFrame:
    """R's ``array(values, dim = c(nrow, ncol))`` (column-major) as a DataFrame."""
    cols = {name: values[i * nrow:(i + 1) * nrow] for i, name in enumerate(names)}
    df = pl.DataFrame(cols, schema={n: pl.Float64 for n in names})
    return df.with_columns(pl.Series("weight", weight)) if weight is not None else df


def per_record(df: pl.DataFrame, keys: list[str], table: pl.DataFrame, column: str) -> list:
    """``column`` of ``table`` (one row per key) for every row of ``df``, in row order."""
    rows = df.select(keys).with_row_index("__row")
    joined = rows.join(table.select(*keys, column), on=keys, how="left", nulls_equal=True)
    return joined.sort("__row")[column].to_list()


def fk_Fk(df: pl.DataFrame, keys: list[str], weighted: bool) -> tuple[list, list, object]:
    has_null = df.select(pl.any_horizontal(pl.col(keys).is_null())).to_series().any()
    res = individual_risk(df, keys, weight="weight" if weighted else None,
                          nulls="wildcard" if has_null else "error")
    return per_record(df, keys, res.table, "fk"), per_record(df, keys, res.table, "Fk"), res


# --- sdcMicro: freqCalc ---------------------------------------------------------------------

FREQCALC = [
    # (values, nrow, ncol, weights, weighted?, Fk, fk, n1, n2)
    ([2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, 1, 2, 1, 1, 1, 1], 8, 3, WEIGHTS, True,
     [108.0, 45.5, 108.0, 17.0, 100.0, 100.0, 123.5, 108.0], [3, 1, 3, 1, 2, 2, 1, 3], 3, 2),
    ([2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, 1, 2, 1, 1, 1, 1], 8, 3, WEIGHTS, False,
     [3, 1, 3, 1, 2, 2, 1, 3], [3, 1, 3, 1, 2, 2, 1, 3], 3, 2),
    ([2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, NA, 2, 1, 1, NA, 1], 8, 3, WEIGHTS,
     True, [108.0, 45.5, 125.0, 56.0, 100.0, 100.0, 123.5, 108.0], [3, 1, 4, 2, 2, 2, 1, 3], 2, 3),
    ([2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, NA, 2, 1, 1, NA, 1], 8, 3, WEIGHTS,
     False, [3, 1, 4, 2, 2, 2, 1, 3], [3, 1, 4, 2, 2, 2, 1, 3], 2, 3),
    ([2, 3, NA, 2, 3, 3, 1, 2, 3, 3, NA, 3, 3, 3, 4, 3] + [NA] * 8, 8, 3, WEIGHTS, True,
     [125.0, 184.5, 394.0, 125.0, 184.5, 184.5, 162.5, 125.0], [4, 4, 8, 4, 4, 4, 2, 4], 0, 1),
    ([2, 3, NA, 2, 3, 3, 1, 2, 3, 3, NA, 3, 3, 3, 4, 3] + [NA] * 8, 8, 3, WEIGHTS, False,
     [4, 4, 8, 4, 4, 4, 2, 4], [4, 4, 8, 4, 4, 4, 2, 4], 0, 1),
    ([2, 3, NA, 2, 1, NA, 1, 2], 8, 1, WEIGHTS, True,
     [133.0, 92.5, 394.0, 133.0, 262.5, 394.0, 262.5, 133.0], [5, 3, 8, 5, 4, 8, 4, 5], 0, 0),
    ([2, 3, NA, 2, 1, NA, 1, 2], 8, 1, WEIGHTS, False,
     [5, 3, 8, 5, 4, 8, 4, 5], [5, 3, 8, 5, 4, 8, 4, 5], 0, 0),
    ([2, 3, NA, 2, 3, 3, 1, NA, 3, 3, NA, 3, 3, 2, 2, 3, NA, NA, 1, 2, NA, NA, 4, 4], 3, 8,
     [18.0, 45.5, 122.0], True, [18.0, 167.5, 167.5], [1, 2, 2], 1, 2),
    ([2, 3, NA, 2, 3, 3, 1, NA, 3, 3, NA, 3, 3, 2, 2, 3, NA, NA, 1, 2, NA, NA, 4, 4], 3, 8,
     [18.0, 45.5, 122.0], False, [1, 2, 2], [1, 2, 2], 1, 2),
]


@pytest.mark.parametrize("case", FREQCALC, ids=[f"freqCalc-{i}" for i in range(len(FREQCALC))])
def test_sdcmicro_freqcalc(case: tuple) -> None:
    values, nrow, ncol, weights, weighted, expect_Fk, expect_fk, n1, n2 = case
    names = [chr(ord("A") + i) for i in range(ncol)]
    df = r_frame(values, nrow, names, weights)
    fk, big_fk, res = fk_Fk(df, names, weighted)
    assert fk == expect_fk
    assert big_fk == pytest.approx(expect_Fk, rel=1e-12)
    assert (res.sample_uniques, res.sample_pairs) == (n1, n2)


# --- sdcMicro: indivRisk --------------------------------------------------------------------

DATA_COMPLETE = [2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, 1, 2, 1, 1, 1, 1]
DATA_MISSING = [2, 3, 2, 2, 3, 3, 1, NA, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, NA, 2, 1, 1, NA, 1]
ONE_OVER_FK_COMPLETE = [1 / 3, 1, 1 / 3, 1, 1 / 2, 1 / 2, 1, 1 / 3]
ONE_OVER_FK_MISSING = [1 / 3, 1, 1 / 4, 1 / 2, 1 / 3, 1 / 3, 1, 1 / 5]

INDIVRISK = [
    # (data, weighted data?, method, qual, survey, expected rk)
    (DATA_COMPLETE, True, "approx", 1, True, [0.01369863, 0.08579129, 0.01369863, 0.17707583,
                                              0.01877883, 0.01877883, 0.03931625, 0.01369863]),
    (DATA_COMPLETE, True, "approx", 2, True, [0.02739726, 0.17158258, 0.02739726, 0.35415167,
                                              0.03755767, 0.03755767, 0.07863251, 0.02739726]),
    (DATA_COMPLETE, True, "exact", 1, True, [0.01355297, 0.08579129, 0.01355297, 0.17707583,
                                             0.01877883, 0.01877883, 0.03931625, 0.01355297]),
    (DATA_COMPLETE, True, "exact", 2, True, [0.02710594, 0.17158258, 0.02710594, 0.35415167,
                                             0.03755767, 0.03755767, 0.07863251, 0.02710594]),
    (DATA_MISSING, True, "approx", 1, True, [0.013698630, 0.085791288, 0.010554090, 0.032466112,
                                             0.009836066, 0.009836066, 0.039316254, 0.005973716]),
    (DATA_MISSING, True, "approx", 2, True, [0.02739726, 0.17158258, 0.02110818, 0.06493222,
                                             0.01967213, 0.01967213, 0.07863251, 0.01194743]),
    (DATA_MISSING, True, "exact", 1, True, [0.013552968, 0.085791288, 0.010504889, 0.032466112,
                                            0.009756889, 0.009756889, 0.039316254, 0.005962551]),
    (DATA_MISSING, True, "exact", 2, True, [0.02710594, 0.17158258, 0.02100978, 0.06493222,
                                            0.01951378, 0.01951378, 0.07863251, 0.01192510]),
]
for data, ones in ((DATA_COMPLETE, ONE_OVER_FK_COMPLETE), (DATA_MISSING, ONE_OVER_FK_MISSING)):
    for method in ("approx", "exact"):
        for qual in (1, 2):
            # survey = FALSE: 1/fk whatever the weights; unweighted data, survey = TRUE: qual/fk
            INDIVRISK.append((data, True, method, qual, False, ones))
            INDIVRISK.append((data, False, method, qual, False, ones))
            INDIVRISK.append((data, False, method, qual, True, [qual * r for r in ones]))


@pytest.mark.parametrize("case", INDIVRISK, ids=[f"indivRisk-{i}" for i in range(len(INDIVRISK))])
def test_sdcmicro_indivrisk(case: tuple) -> None:
    data, weighted, method, qual, survey, expected = case
    df = r_frame(data, 8, ["A", "B", "C"], WEIGHTS)
    nulls = "wildcard" if data is DATA_MISSING else "error"
    res = individual_risk(df, ["A", "B", "C"], weight="weight" if weighted and survey else None,
                          method=method, qual=qual if survey else 1.0, nulls=nulls)
    got = per_record(df, ["A", "B", "C"], res.table, "risk")
    # sdcMicro's values are printed to 8 significant digits (5 decimals for survey = FALSE)
    assert got == pytest.approx(expected, rel=2e-7, abs=5e-9 if survey else 5e-6)


# --- sdcMicro: calcRisks / measure_risk (data drawn with set.seed(3)) -----------------------


def test_sdcmicro_calcrisks_complete() -> None:
    r = RRandom(3)
    r.runif(30, 1, 100)                                     # the numeric variables
    keys = {"Var4": [r_round(v) for v in r.runif(10, 1, 4)],
            "Var5": [r_round(v) for v in r.runif(10, 1, 6)],
            "Var6": [r_round(v) for v in r.runif(10, 1, 3)]}
    df = pl.DataFrame(keys)
    res = individual_risk(df, list(keys))
    assert res.global_risk == 0.8 and res.expected_reidentifications == 8.0
    assert 100 * res.global_risk == 80
    assert res.global_threshold == 0.0 and res.max_global_risk == 0.01
    assert per_record(df, list(keys), res.table, "risk") == [0.5, 1, 0.5, 1, 1, 0.5, 1, 0.5, 1, 1]
    assert per_record(df, list(keys), res.table, "fk") == [2, 1, 2, 1, 1, 2, 1, 2, 1, 1]
    assert per_record(df, list(keys), res.table, "Fk") == [2, 1, 2, 1, 1, 2, 1, 2, 1, 1]


def test_sdcmicro_calcrisks_missing() -> None:
    r = RRandom(3)
    r.runif(20, 1, 100)
    highs = {"Var6": 2, "Var7": 4, "Var8": 6, "Var9": 3, "Var10": 5, "Var11": 2}
    keys = {name: [r_round(v) for v in r.runif(4, 1, high)] for name, high in highs.items()}
    missing = {"Var6": [0, 2, 3], "Var7": [1, 2], "Var8": [2], "Var9": [0, 2], "Var10": [1, 2],
               "Var11": [2]}
    for name, rows in missing.items():
        keys[name] = [None if i in rows else v for i, v in enumerate(keys[name])]
    df = pl.DataFrame(keys, schema={k: pl.Float64 for k in keys})
    res = individual_risk(df, list(keys), nulls="wildcard")
    assert res.global_risk == 0.4375 and res.expected_reidentifications == 1.75
    assert res.global_threshold == 0.0
    assert per_record(df, list(keys), res.table, "risk") == [0.5, 0.5, 0.25, 0.5]
    assert per_record(df, list(keys), res.table, "fk") == [2, 2, 4, 2]


# --- independent checks ---------------------------------------------------------------------


def _nb_series(f: int, p: float) -> float:
    """E[1/F] for F = f + NegBin(f, p), summed term by term."""
    j = np.arange(0, 200_000)
    return float(np.sum(stats.nbinom.pmf(j, f, p) / (f + j)))


def _integral(f: int, p: float) -> float:
    """E[1/F] = p * int_0^1 t^(f-1) / (p + (1-p) t) dt."""
    return p * integrate.quad(lambda t: t ** (f - 1) / (p + (1 - p) * t), 0, 1,
                              epsabs=0, epsrel=1e-13)[0]


@pytest.mark.parametrize("f,big", [(1, 45.5), (2, 100.0), (3, 108.0), (5, 20.0), (12, 13.0),
                                   (40, 400.0), (1, 1.0001), (7, 7.5)])
def test_exact_risk_is_the_negative_binomial_expectation(f: int, big: float) -> None:
    p = f / big
    got = benedetti_franconi(np.array([f]), np.array([big]), "exact")[0]
    assert got == pytest.approx(_integral(f, p), rel=1e-10)
    if p > 0.05:
        assert got == pytest.approx(_nb_series(f, p), rel=1e-8)
    if f <= 2:  # the approximation is the exact value for one and two records
        assert benedetti_franconi(np.array([f]), np.array([big]), "approx")[0] == \
            pytest.approx(got, rel=1e-12)


def _threshold_by_record(risk: list[float], max_global_risk: float) -> float | None:
    """sdcMicro's measure_threshold (src/Measure_Threshold.h), record by record, with the
    NA rule of measure_risk.R."""
    risk = sorted(risk, reverse=True)
    er, sum_risk = max_global_risk * len(risk), sum(risk)
    current, threshold, sum_freq = risk[0], 0.0, 0
    if sum_risk < er:
        threshold = current
    else:
        for r in risk:
            if r != current:
                if sum_risk + r * sum_freq < er:
                    threshold = r
                    break
                current = r
            sum_freq += 1
            sum_risk -= r
    return None if current == threshold else threshold


@given(st.lists(st.tuples(st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.2, 0.25, 1 / 3, 0.5, 1.0]),
                          st.integers(1, 6)), min_size=1, max_size=12),
       st.sampled_from([0.0013, 0.0101, 0.0517, 0.2031, 0.4999, 0.9013]))
def test_global_threshold_equals_the_record_loop(levels: list, max_global_risk: float) -> None:
    """(Budgets chosen off the exact ties, where both sides' float sums decide.)"""
    risk = np.array([r for r, _ in levels])
    counts = np.array([c for _, c in levels])
    records = [r for r, c in levels for _ in range(c)]
    assert global_threshold(risk, counts, max_global_risk) == \
        _threshold_by_record(records, max_global_risk)


@given(st.lists(st.tuples(st.floats(0, 1), st.integers(1, 5)), min_size=1, max_size=15))
def test_risky_records_equals_median_and_mad_over_records(levels: list) -> None:
    risk = np.array([r for r, _ in levels])
    counts = np.array([c for _, c in levels])
    x = np.repeat(risk, counts)
    med = np.median(x)
    mad = 1.4826 * np.median(np.abs(x - med))
    assert risky_records(risk, counts) == int(np.sum((x > med + 2 * mad) & (x > 0.1)))


def _brute_wildcard(rows: list[tuple], weights: list[float]) -> tuple[list[int], list[float]]:
    def ok(a: tuple, b: tuple) -> bool:
        return all(x is None or y is None or x == y for x, y in zip(a, b))

    fk = [sum(ok(r, s) for s in rows) for r in rows]
    big = [sum(w for s, w in zip(rows, weights) if ok(r, s)) for r in rows]
    return fk, big


@given(st.lists(st.tuples(st.sampled_from([None, 1, 2, 3]), st.sampled_from([None, "x", "y"]),
                          st.sampled_from([None, 0, 1]), st.integers(1, 9)),
                min_size=1, max_size=25))
def test_wildcard_counts_equal_pairwise_compatibility(rows: list) -> None:
    keys = [r[:3] for r in rows]
    weights = [float(r[3]) for r in rows]
    df = pl.DataFrame({"a": [k[0] for k in keys], "b": [k[1] for k in keys],
                       "c": [k[2] for k in keys], "w": weights},
                      schema={"a": pl.Int64, "b": pl.String, "c": pl.Int64, "w": pl.Float64})
    table = wildcard_counts(class_table(df, ["a", "b", "c"], weight="w", nulls="value"),
                            ["a", "b", "c"], weight="weight_sum")
    fk, big = _brute_wildcard(keys, weights)
    assert per_record(df, ["a", "b", "c"], table, "fk") == fk
    assert per_record(df, ["a", "b", "c"], table, "Fk") == pytest.approx(big, rel=1e-12)


def test_wildcard_budget_names_the_cost() -> None:
    df = pl.DataFrame({"a": [1, None, 2, 3], "b": ["x", "y", None, "x"]})
    table = class_table(df, ["a", "b"], nulls="value")
    cost = wildcard_cost(table, ["a", "b"])
    assert cost == 2 * 3 * 4 + 20_000 * 9                   # 3 null patterns, 4 keys
    with pytest.raises(BudgetExceededError, match=f"{cost:,}"):
        individual_risk(df, ["a", "b"], nulls="wildcard", budget=cost - 1)
    assert individual_risk(df, ["a", "b"], nulls="wildcard", budget=cost).records == 4


# --- figures and errors ---------------------------------------------------------------------


def test_threshold_k_and_table_input() -> None:
    df = pl.DataFrame({"q": [1, 1, 1, 2, 2, 3], "w": [5.0, 5.0, 5.0, 2.0, 1.0, 30.0]})
    res = individual_risk(df, "q", weight="w", threshold=0.1, k=10)
    risk = dict(zip(res.table["q"], res.table["risk"]))
    assert res.records_above == sum(n for q, n in ((1, 3), (2, 2), (3, 1)) if risk[q] > 0.1)
    assert res.k_violations == 2                             # class 2: F = 3 < 10
    assert risk[2] == pytest.approx(2 - 4 * math.log(1.5), rel=1e-12)  # f = 2, p = 2/3
    again = individual_risk(class_table(df, "q", weight="w"), threshold=0.1, k=10)
    assert again.to_dict() == res.to_dict()
    unweighted = individual_risk(class_table(df, "q"), k=2)
    assert unweighted.weighted is False and unweighted.k_violations == 1
    assert unweighted.to_dict()["method"] is None


def test_errors() -> None:
    df = pl.DataFrame({"q": [1, 1, 2], "w": [1.0, 0.5, 3.0]})
    with pytest.raises(InvalidParameterError, match="below their record count"):
        individual_risk(df, "q", weight="w")
    with pytest.raises(InvalidParameterError, match="non-positive"):
        individual_risk(df.with_columns(pl.lit(-1.0).alias("w")), "q", weight="w")
    with pytest.raises(InvalidParameterError, match="not in the data"):
        individual_risk(df, "q", weight="weights")
    with pytest.raises(InvalidParameterError, match="method"):
        individual_risk(df, "q", method="fast")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="max_global_risk"):
        individual_risk(df, "q", max_global_risk=1.0)
    with pytest.raises(InvalidParameterError, match="nulls"):
        individual_risk(df, "q", nulls="drop")  # type: ignore[arg-type]
    with pytest.raises(NullValuesError):
        individual_risk(pl.DataFrame({"q": [1, None]}), "q")
    with pytest.raises(InputFormatError):
        individual_risk(pl.DataFrame({"q": [1]}))
    assert special.hyp2f1(1, 1, 2, 0.0) == 1.0             # scipy sanity for the exact form
