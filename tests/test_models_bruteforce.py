"""Every model against a brute-force reference (tests/reference.py) on random small tables.

The reference loops over rows and classes in plain Python, from the definitions; EMDs are
solved as transportation linear programs with scipy, independently of the library's sparse
closed forms."""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.models import (
    AlphaKAnonymity,
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    KAnonymity,
    MultiAttribute,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
    TCloseness,
)
from tests import reference as ref

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tables(draw, numeric_s: bool | None = None, min_rows: int = 1):
    n = draw(st.integers(min_rows, 40))
    n_q = draw(st.integers(1, 2))
    q_dom = draw(st.integers(1, 4))
    s_dom = draw(st.integers(1, 6))
    numeric = draw(st.booleans()) if numeric_s is None else numeric_s
    cols = {f"q{j}": draw(st.lists(st.integers(0, q_dom - 1), min_size=n, max_size=n))
            for j in range(n_q)}
    s_vals = draw(st.lists(st.integers(0, s_dom - 1), min_size=n, max_size=n))
    cols["s"] = s_vals if numeric else [f"v{v}" for v in s_vals]
    return pl.DataFrame(cols)


def ref_classes(df: pl.DataFrame, s: str = "s") -> dict[tuple, Counter]:
    qi = [c for c in df.columns if c.startswith("q")]
    return ref.classes_of((tuple(r[c] for c in qi), r[s]) for r in df.iter_rows(named=True))


def qi_of(df):
    return [c for c in df.columns if c.startswith("q")]


def run(df, model, s="s"):
    return lp.check(df, qi_of(df), s, [model]).models[0]


@SETTINGS
@given(tables(), st.integers(1, 6))
def test_k_and_distinct_l(df, k):
    cls = ref_classes(df)
    sizes = [sum(c.values()) for c in cls.values()]
    distinct = [len(c) for c in cls.values()]
    m = run(df, KAnonymity(k))
    assert (m.achieved, m.passed) == (min(sizes), min(sizes) >= k)
    assert m.failing_rows == sum(x for x in sizes if x < k)
    m = run(df, DistinctLDiversity(k))
    assert (m.achieved, m.passed) == (min(distinct), min(distinct) >= k)


@SETTINGS
@given(tables(), st.floats(1, 5))
def test_entropy_l(df, l):
    cls = ref_classes(df)
    hmin = min(ref.entropy(list(c.values())) for c in cls.values())
    m = run(df, EntropyLDiversity(l))
    assert m.achieved == pytest.approx(math.exp(hmin), rel=1e-9)
    if abs(hmin - math.log(l)) > 1e-9:
        assert m.passed == (hmin >= math.log(l))


@SETTINGS
@given(tables(), st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 4.0]), st.integers(1, 4))
def test_recursive_cl(df, c, l):
    cls = ref_classes(df)
    m = run(df, RecursiveCLDiversity(c, l))
    assert m.passed == all(ref.recursive_pass(list(x.values()), c, l) for x in cls.values())
    worst = max(ref.recursive_ratio(list(x.values()), l) for x in cls.values())
    assert m.achieved == pytest.approx(worst) if math.isfinite(worst) else math.isinf(m.achieved)


@SETTINGS
@given(tables(numeric_s=False), st.sampled_from([0.3, 0.5, 1.0, 2.0, 3.0]), st.integers(1, 4),
       st.sets(st.sampled_from([f"v{i}" for i in range(6)]), max_size=3))
def test_pd_recursive_against_the_two_case_rule(df, c, l, Y):
    cls = ref_classes(df)
    m = run(df, PositiveDisclosureRecursive(c, l, Y))
    assert m.passed == all(ref.pd_recursive_pass(x, c, l, Y) for x in cls.values())


@SETTINGS
@given(tables(numeric_s=False), st.sampled_from([1.0, 2.0, 3.0]), st.integers(1, 3),
       st.sets(st.sampled_from([f"v{i}" for i in range(6)]), max_size=2),
       st.sets(st.sampled_from([f"v{i}" for i in range(6)]), max_size=2),
       st.sampled_from([0.0, 5.0, 20.0, 50.0]))
def test_npd_recursive(df, c1, l, Y, W, c2):
    cls = ref_classes(df)
    m = run(df, NegativePositiveDisclosureRecursive(c1, c2, l, Y, W))
    expected = all(
        ref.pd_recursive_pass(x, c1, l, Y)
        and all(100.0 * x.get(w, 0) / sum(x.values()) >= c2 for w in W)
        for x in cls.values()
    )
    assert m.passed == expected


@SETTINGS
@given(tables(numeric_s=False, min_rows=2),
       st.sets(st.sampled_from([f"v{i}" for i in range(6)]), min_size=1, max_size=3))
def test_adjusted_entropy_against_algorithm_1(df, Y):
    cls = ref_classes(df)
    values = []
    for x in cls.values():
        phi = [n for v, n in x.items() if v in Y]
        p = [n for v, n in x.items() if v not in Y]
        values.append(ref.adjusted_entropy(phi, p))
    m = run(df, EntropyLDiversityDontCare(1.0, Y))
    finite = [v for v in values if v is not None]
    if finite:
        assert math.log(m.achieved) == pytest.approx(min(finite), rel=1e-9, abs=1e-12)
    else:
        assert math.isinf(m.achieved)


@SETTINGS
@given(tables(), st.sampled_from([0.3, 0.5, 0.8, 1.0]), st.integers(1, 5))
def test_alpha_k(df, alpha, k):
    cls = ref_classes(df)
    m = run(df, AlphaKAnonymity(alpha, k))
    shares = [max(x.values()) / sum(x.values()) for x in cls.values()]
    assert m.achieved == pytest.approx(max(shares))
    assert m.passed == all(sum(x.values()) >= k and max(x.values()) <= alpha * sum(x.values())
                           for x in cls.values())


@SETTINGS
@given(tables(), st.sampled_from([0.1, 0.5, 1.0, 2.0]))
def test_delta_disclosure(df, delta):
    cls = ref_classes(df)
    total = ref.table_distribution(cls)
    n = sum(total.values())
    worst = 0.0
    for x in cls.values():
        size = sum(x.values())
        for v, qn in total.items():
            p = x.get(v, 0) / size
            worst = max(worst, math.inf if p == 0 else abs(math.log(p / (qn / n))))
    m = run(df, DeltaDisclosure(delta))
    if math.isinf(worst):
        assert math.isinf(m.achieved) and not m.passed
    else:
        assert m.achieved == pytest.approx(worst, abs=1e-12)
        assert m.passed == (worst < delta)


@SETTINGS
@given(tables(), st.sampled_from([0.2, 0.5, 1.0, 3.0]), st.booleans())
@example(pl.DataFrame({"q0": [0, 0, 1], "s": ["v0", "v1", "v0"]}), 0.5, False)  # gain exactly 1/2
def test_beta_likeness(df, beta, enhanced):
    cls = ref_classes(df)
    total = ref.table_distribution(cls)
    n = sum(total.values())
    # exact arithmetic: thresholds are decimals (beta=0.5 is 1/2), gains are fractions, and
    # -ln q is compared at 50 digits (a rational gain never equals it)
    gains, ok, feasible = [Fraction(0)], True, True
    limit = Fraction(repr(beta))
    for x in cls.values():
        size = sum(x.values())
        for v, cnt in x.items():
            p, q = Fraction(cnt, size), Fraction(total[v], n)
            if p > q:
                g = (p - q) / q
                gains.append(g)
                with localcontext() as ctx:
                    ctx.prec = 50
                    neg_ln_q = -(Decimal(q.numerator) / Decimal(q.denominator)).ln()
                    below_ln = Decimal(g.numerator) / Decimal(g.denominator) <= neg_ln_q
                ok &= g <= limit and (below_ln or not enhanced)
                feasible &= (not enhanced) or below_ln
    m = run(df, BetaLikeness(beta, enhanced))
    assert m.passed == ok
    if feasible:
        assert m.achieved == pytest.approx(float(max(gains)))
    else:
        assert math.isinf(m.achieved)


def _emd_reference(df, dist_fn):
    cls = ref_classes(df)
    total = ref.table_distribution(cls)
    domain = sorted(total)
    n = sum(total.values())
    q = [total[v] / n for v in domain]
    d = dist_fn(domain)
    out = []
    for x in cls.values():
        size = sum(x.values())
        out.append(ref.emd([x.get(v, 0) / size for v in domain], q, d))
    return max(out)


@settings(max_examples=40, deadline=None)
@given(tables(numeric_s=False))
def test_t_closeness_equal_distance_against_linprog(df):
    expected = _emd_reference(df, lambda dom: ref.equal_distance(len(dom)))
    m = run(df, TCloseness(0.5))
    assert m.achieved == pytest.approx(expected, abs=1e-9)
    assert m.passed == (expected <= 0.5 + 1e-12) or abs(expected - 0.5) < 1e-9


@settings(max_examples=40, deadline=None)
@given(tables(numeric_s=True))
def test_t_closeness_ordered_distance_against_linprog(df):
    expected = _emd_reference(df, lambda dom: ref.ordered_distance(len(dom)))
    m = run(df, TCloseness(0.3, "ordered"))
    assert m.achieved == pytest.approx(expected, abs=1e-9)


HIER = pl.DataFrame({
    "value": ["v0", "v1", "v2", "v3", "v4", "v5"],
    "l1": ["a", "a", "b", "b", "c", "c"],
    "l2": ["ab", "ab", "ab", "ab", "c", "c"],
    "l3": ["*"] * 6,
})


@settings(max_examples=40, deadline=None)
@given(tables(numeric_s=False))
def test_t_closeness_hierarchical_distance_against_linprog(df):
    paths = {r[0]: r for r in HIER.rows()}
    expected = _emd_reference(df, lambda dom: ref.hierarchical_distance([paths[v] for v in dom]))
    m = run(df, TCloseness(0.3, "hierarchical", HIER))
    assert m.achieved == pytest.approx(expected, abs=1e-9)


def test_ordered_emd_on_the_t_closeness_paper_example():
    # Li et al. 2007: salaries {3k..11k}; class {3k,4k,5k} vs the whole table: EMD = 0.375
    salary = [3, 4, 5, 6, 7, 8, 9, 10, 11]
    df = pl.DataFrame({"q": [1, 1, 1, 2, 2, 2, 3, 3, 3], "s": [3, 4, 5, 6, 8, 11, 7, 9, 10]})
    m = run(df, TCloseness(1.0, "ordered"))
    assert m.achieved == pytest.approx(0.375)
    assert sorted(salary) == sorted(df["s"].to_list())


@SETTINGS
@given(tables(numeric_s=False), tables(numeric_s=False))
def test_multi_attribute_against_definition(df, other):
    n = min(df.height, other.height)
    df = df.head(n).with_columns(other.head(n)["s"].alias("t"))
    qi = qi_of(df)
    for l in (1, 2, 3):
        expected = True
        for s, others in (("s", ["t"]), ("t", ["s"])):
            cls = ref.classes_of((tuple(r[c] for c in qi + others), r[s])
                                 for r in df.iter_rows(named=True))
            expected &= all(len(c) >= l for c in cls.values())
        got = lp.check(df, qi, ["s", "t"], [MultiAttribute(DistinctLDiversity(l))])
        assert got.passed == expected


@SETTINGS
@given(tables(), st.floats(0.0, 1.0))
def test_risk_profile(df, threshold):
    cls = ref_classes(df)
    sizes = [sum(c.values()) for c in cls.values()]
    n = sum(sizes)
    r = lp.risk_profile(df, qi_of(df), threshold=threshold)
    assert r.prosecutor_max == pytest.approx(1 / min(sizes))
    assert r.prosecutor_avg == pytest.approx(len(sizes) / n)
    assert r.sample_uniques == sum(1 for x in sizes if x == 1)
    assert r.records_at_risk == pytest.approx(sum(x for x in sizes if 1 / x > threshold) / n)


def test_journalist_and_marketer_risk_against_population():
    sample = pl.DataFrame({"q": [1, 1, 2, 3]})
    population = pl.DataFrame({"q": [1] * 4 + [2] * 2 + [3] * 10})
    r = lp.risk_profile(sample, ["q"], population=population)
    assert r.journalist_max == pytest.approx(1 / 2)
    assert r.journalist_avg == pytest.approx((2 / 4 + 1 / 2 + 1 / 10) / 4)
    assert r.marketer == pytest.approx((2 / 4 + 1 / 2 + 1 / 10) / 4)


@SETTINGS
@given(tables(), st.integers(1, 4))
def test_summary_matches_reference(df, l):
    cls = ref_classes(df)
    s = lp.summary(df, qi_of(df), "s", l=l)
    sizes = [sum(c.values()) for c in cls.values()]
    assert s["rows"] == df.height and s["classes"] == len(cls)
    assert s["k"] == min(sizes)
    assert s["l_distinct"] == min(len(c) for c in cls.values())
    assert s["l_entropy"] == pytest.approx(
        math.exp(min(ref.entropy(list(c.values())) for c in cls.values())))
    worst = max(ref.recursive_ratio(list(c.values()), l) for c in cls.values())
    assert (s["recursive_c"] is None) if math.isinf(worst) else s["recursive_c"] == pytest.approx(
        worst)
    assert s["sample_uniques"] == sum(x for x in sizes if x == 1)
    numeric = df.schema["s"].is_numeric()
    dist = ref.ordered_distance if numeric else ref.equal_distance
    assert s["t"] == pytest.approx(_emd_reference(df, lambda dom: dist(len(dom))), abs=1e-9)


def test_reference_emd_sanity():
    # the LP reference itself: moving all mass one step on a 3-value ordered domain costs 1/2
    assert ref.emd([1, 0, 0], [0, 1, 0], ref.ordered_distance(3)) == pytest.approx(0.5)
    assert ref.emd([0.5, 0.5], [0.5, 0.5], ref.equal_distance(2)) == pytest.approx(0.0)
    assert np.allclose(ref.hierarchical_distance([("x", "a", "*"), ("y", "b", "*")]),
                       [[0, 1], [1, 0]])


@SETTINGS
@given(tables(), st.booleans())
def test_distinct_values_per_class_counted_either_way(df, with_null):
    """``distinct`` counts a class's rows when the frequency set's keys are unique (a built
    one), its distinct sensitive values otherwise (rows repeating their keys): the brute-force
    count both times, a null sensitive value counting as one value."""
    from ldiv_polars.core import FrequencySet
    from ldiv_polars.models import evaluate_classes

    if with_null:
        df = df.with_columns(pl.when(pl.int_range(pl.len()) % 3 == 0).then(None)
                             .otherwise(pl.col("s")).alias("s"))
    qi = qi_of(df)
    want = {k: len(c) for k, c in ref_classes(df).items()}
    built = FrequencySet.build(df, qi, "s", nulls="value")
    rows = FrequencySet(df.lazy().with_columns(pl.lit(1, pl.Int64).alias("n")), tuple(qi),
                        ("s",))  # one row per record: keys repeat
    assert built.unique and not rows.unique
    for fs in (built, rows):
        got = evaluate_classes(fs, [DistinctLDiversity(2)]).collect()
        assert {tuple(r[q] for q in qi): r["distinct"] for r in got.iter_rows(named=True)} \
            == want
