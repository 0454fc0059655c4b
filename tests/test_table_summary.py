"""``summary`` keyed by class number against the summary computed on the qi columns.

The summary groups by one integer class number instead of the qi columns (it never reads the qi
values). The reference here is the previous implementation: :func:`evaluate_classes` over the
frequency set keyed by the qi columns themselves and :func:`table_results` for the achieved
values. Counts must be equal; floats equal up to summation order (a few ulps).
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.models import (
    AlphaKAnonymity,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from ldiv_polars.models.base import SIZE
from ldiv_polars.models.evaluate import evaluate_classes
from ldiv_polars.models.results import table_results
from ldiv_polars.table_summary import SUMMARY_KEYS, frequency_set_summary, is_ordered_dtype

ADULT_QI7 = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _finite(v):
    return None if v is None or math.isinf(v) or math.isnan(v) else float(v)


def reference_summary(df: pl.DataFrame, qi: list[str], s: str, l: int, nulls="error") -> dict:
    """The summary as computed on the qi columns (no class numbering)."""
    fs = FrequencySet.build(df, qi, s, nulls=nulls).materialize()
    dist = "ordered" if is_ordered_dtype(df.schema[s]) else "equal"
    models = [KAnonymity(1), DistinctLDiversity(1), EntropyLDiversity(1),
              RecursiveCLDiversity(1.0, l), AlphaKAnonymity(1.0, 1), TCloseness(1.0, dist),
              DeltaDisclosure(float("inf"))]
    classes = evaluate_classes(fs, models).collect()
    if classes.height == 0:
        return {k: (0 if k in ("rows", "classes", "sample_uniques") else None)
                for k in SUMMARY_KEYS}
    res = {m.model: m.achieved for m in table_results(classes, models)}
    rows = int(classes[SIZE].sum())
    k = int(res["k_anonymity"])
    return {
        "rows": rows, "classes": classes.height, "k": k, "l_distinct": int(res["distinct_l"]),
        "l_entropy": _finite(res["entropy_l"]), "recursive_c": _finite(res["recursive_cl"]),
        "alpha": _finite(res["alpha_k"]), "t": _finite(res["t_closeness"]),
        "delta": _finite(res["delta_disclosure"]), "prosecutor_max": 1.0 / k,
        "prosecutor_avg": classes.height / rows,
        "sample_uniques": int(classes.filter(pl.col(SIZE) == 1)[SIZE].sum() or 0),
    }


def assert_same(got: dict, want: dict) -> None:
    assert list(got) == list(want) == list(SUMMARY_KEYS)
    for key in SUMMARY_KEYS:
        a, b = got[key], want[key]
        if isinstance(b, int) or b is None:
            assert a == b and type(a) is type(b), (key, a, b)
        else:
            assert isinstance(a, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15), (
                key, a, b)


@st.composite
def tables(draw):
    n = draw(st.integers(0, 40))
    n_q = draw(st.integers(1, 3))
    q_dom, s_dom = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    null_values = draw(st.booleans())
    def column(dom):
        vals = st.integers(0, dom - 1)
        return draw(st.lists(st.one_of(vals, st.none()) if null_values else vals,
                             min_size=n, max_size=n))
    cols = {f"q{j}": [None if v is None else f"x{v}" if j % 2 else v for v in column(q_dom)]
            for j in range(n_q)}
    s_vals = column(s_dom)
    cols["s"] = s_vals if draw(st.booleans()) else [None if v is None else f"v{v}"
                                                    for v in s_vals]
    return pl.DataFrame(cols, schema={k: (pl.String if any(isinstance(v, str) for v in vals)
                                          else pl.Int64) for k, vals in cols.items()})


@SETTINGS
@given(tables(), st.integers(1, 4))
def test_summary_equals_qi_keyed_reference(df, l):
    qi = [c for c in df.columns if c.startswith("q")]
    assert_same(lp.summary(df, qi, "s", l=l, nulls="value"),
                reference_summary(df, qi, "s", l, nulls="value"))


@SETTINGS
@given(tables(), st.integers(1, 4))
def test_frequency_set_summary_lazy_or_collected(df, l):
    qi = [c for c in df.columns if c.startswith("q")]
    lazy = FrequencySet.build(df, qi, "s", nulls="value")
    want = reference_summary(df, qi, "s", l, nulls="value")
    assert_same(frequency_set_summary(lazy, l), want)
    assert_same(frequency_set_summary(lazy.materialize(), l), want)


def test_sensitive_named_like_the_class_number():
    df = pl.DataFrame({"q": [1, 1, 2, 2, 2], "__ldiv_class": ["a", "b", "a", "a", "c"]})
    assert_same(lp.summary(df, ["q"], "__ldiv_class", l=2),
                reference_summary(df, ["q"], "__ldiv_class", 2))


@pytest.mark.parametrize("qi,s,l", [
    (ADULT_QI7, "occupation", 2),
    (ADULT_QI7, "occupation", 3),
    (["sex", "race"], "age", 2),  # numeric sensitive: ordered distance
    (["sex", "race", "education"], "occupation", 3),
])
def test_adult_summary_equals_qi_keyed_reference(adult_csv, qi, s, l):
    df = pl.read_csv(adult_csv, separator=";")
    assert_same(lp.summary(df, qi, s, l=l), reference_summary(df, qi, s, l))


def test_adult_summary_values(adult_csv):
    # the 7-QI summary of bench/bench_check.py as printed before the class numbering
    df = pl.read_csv(adult_csv, separator=";")
    assert_same(lp.summary(df, ADULT_QI7, "occupation", l=2), {
        "rows": 30162, "classes": 11089, "k": 1, "l_distinct": 1, "l_entropy": 1.0,
        "recursive_c": None, "alpha": 1.0, "t": 0.9997016112989855, "delta": None,
        "prosecutor_max": 1.0, "prosecutor_avg": 0.36764803395000334, "sample_uniques": 7653,
    })
