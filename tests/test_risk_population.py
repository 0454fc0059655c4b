"""Population uniqueness (Pitman, Zayatz, SNB, Dankar) against ARX and independent derivations.

ARX's figures come from ``tests/data/arx_population_uniqueness.jsonl`` (provenance in
``tests/data/README.md``). Independent checks: exact rational arithmetic for Zayatz and the
Haas-Stokes class count, the likelihood equations summed term by term for Pitman, and the
thinned shifted negative binomial summed term by term for SNB.
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import special, stats

from ldiv_polars.errors import InvalidParameterError, NullValuesError
from ldiv_polars.risk import REGIONS, SizeHistogram, class_table, population_uniqueness
from ldiv_polars.risk.pitman import pitman
from ldiv_polars.risk.snb import fit, nonempty_classes, snb
from ldiv_polars.risk.zayatz import zayatz

ARX_CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "arx_population_uniqueness.jsonl").open()
]


def _case_id(case: dict) -> str:
    return f"{case['name']}@{case['population_arg']}"


@pytest.fixture(scope="module")
def adult_frame(adult_csv: Path) -> pl.DataFrame:
    return pl.read_csv(adult_csv, separator=";")


def _sizes(case: dict, request: pytest.FixtureRequest):
    if "qi" in case:
        adult = request.getfixturevalue("adult_frame")
        return class_table(adult, case["qi"].split(","))
    pairs = (item.split(":") for item in case["histogram"].split(","))
    return {int(size): int(count) for size, count in pairs}


def _population(case: dict) -> dict:
    arg = case["population_arg"]
    if arg.startswith("f="):
        return {"sampling_fraction": float(arg[2:])}
    return {"population_size": int(arg) if arg.isdigit() else arg}


def _same(ours: float | None, arx: float, rel: float = 1e-6) -> bool:
    return ours is not None and (ours == arx or math.isclose(ours, arx, rel_tol=rel))


@pytest.mark.parametrize("case", ARX_CASES, ids=_case_id)
def test_pitman_and_zayatz_equal_arx(case: dict, request: pytest.FixtureRequest) -> None:
    sizes = _sizes(case, request)
    for model in ("pitman", "zayatz"):
        assert case[f"{model}_available"], "every recorded case has ARX estimates"
        ours = population_uniqueness(sizes, model=model, **_population(case))
        assert ours.population_size == case["population"]
        assert ours.sample_size == case["records"] and ours.classes == case["classes"]
        assert _same(ours.fraction, case[model]), (model, ours.fraction, case[model])


@pytest.mark.parametrize("case", ARX_CASES, ids=_case_id)
def test_dankar_equals_arx_where_snb_is_not_consulted(case: dict,
                                                      request: pytest.FixtureRequest) -> None:
    """Up to a sampling fraction of 0.1 Dankar's rule reads Pitman (and Zayatz) only, and for a
    census SNB and Zayatz coincide: there the answer is ARX's. Above 0.1 it is the smaller of
    our SNB and Zayatz (ARX's SNB differs, see ldiv_polars/risk/snb.py)."""
    sizes = _sizes(case, request)
    ours = population_uniqueness(sizes, model="dankar", **_population(case))
    f = case["records"] / case["population"]
    if f <= 0.1 or f == 1.0:
        assert _same(ours.fraction, case["dankar"]), (ours.fraction, case["dankar"])
        if f <= 0.1 and case["dankar_model"] != "DANKAR":  # a census: SNB == Zayatz, a tie
            assert ours.used == case["dankar_model"].lower()
    else:
        z = population_uniqueness(sizes, model="zayatz", **_population(case)).fraction
        s = population_uniqueness(sizes, model="snb", **_population(case)).fraction
        assert ours.fraction == (min(z, s) if s is not None else z)
        assert ours.used == ("snb" if s is not None and s <= z else "zayatz")


@pytest.mark.parametrize("case", ARX_CASES, ids=_case_id)
def test_snb_solves_the_model_equations(case: dict, request: pytest.FixtureRequest) -> None:
    """Wherever our SNB converges, its parameters reproduce c_1 and c_2 through the thinned
    shifted negative binomial written as a Poisson-Gamma mixture (another route to the same
    probabilities; the fitted betas are too small for a term-by-term sum); for a census it
    equals ARX's figure."""
    sizes = _sizes(case, request)
    res = population_uniqueness(sizes, model="snb", **_population(case))
    h = SizeHistogram.of(sizes)
    if h.of_size(1) == 0:
        assert res.fraction == 0.0
        return
    if h.of_size(2) == 0:
        assert res.fraction is None and "size 2" in res.reason
        return
    assert res.fraction is not None, res.reason
    f = res.sampling_fraction
    p1, p2 = _thinned_snb_mixture(res.params["alpha"], res.params["beta"], f)
    k = res.params["classes"]
    assert k * p1 == pytest.approx(h.of_size(1), rel=1e-7)
    assert k * p2 == pytest.approx(h.of_size(2), rel=1e-7)
    if f == 1.0:
        assert _same(res.fraction, case["snb"])


def test_arx_unit_test_values(adult_frame: pl.DataFrame) -> None:
    """ARX's own expectations (TestRiskMetrics.testDecisionRule2, all nine Adult columns,
    ARX compares 4 digits): Pitman at sampling fractions 0.1 and 0.01, Zayatz at 0.2 and 1."""
    sizes = class_table(adult_frame, adult_frame.columns)
    expect = {("pitman", 0.1): 0.27684993883653597, ("pitman", 0.01): 0.1446083531167384,
              ("zayatz", 0.2): 0.3577099234829125, ("zayatz", 1.0): 0.5142895033485844}
    for (model, f), value in expect.items():
        got = population_uniqueness(sizes, sampling_fraction=f, model=model).fraction
        assert got == pytest.approx(value, rel=1e-9)


def test_the_issue_figure_from_rows(adult_csv: Path) -> None:
    """Adult, every column but salary-class, the USA: Dankar picks Pitman (ARX: 0.0296638...)."""
    qi = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
          "occupation"]
    res = population_uniqueness(adult_csv, qi, population_size="USA")
    assert res.used == "pitman" and res.population_size == 317_238_626
    assert res.fraction == pytest.approx(0.029663871358596695, rel=1e-6)
    assert res.to_dict()["fraction"] == res.fraction


# --- independent derivations --------------------------------------------------------------


def _zayatz_exact(h: dict[int, int], population: int) -> Fraction:
    n = sum(s * c for s, c in h.items())
    u = sum(h.values())

    def hit(j: int) -> Fraction:  # P(exactly one of a class of j in a sample of n out of N)
        return Fraction(j * math.comb(population - j, n - 1), math.comb(population, n))

    p_unique = Fraction(h.get(1, 0), u) * hit(1) / sum(Fraction(c, u) * hit(s)
                                                        for s, c in h.items())
    return h.get(1, 0) * p_unique / Fraction(n, population) / population


@pytest.mark.parametrize("hist,population", [({1: 60, 2: 20, 3: 10, 5: 4}, 1000),
                                             ({1: 7, 2: 3, 4: 1}, 40),
                                             ({1: 300, 2: 60, 3: 20, 4: 10, 6: 5}, 5000)])
def test_zayatz_equals_exact_rational_arithmetic(hist: dict, population: int) -> None:
    got = population_uniqueness(hist, population_size=population, model="zayatz").fraction
    assert got == pytest.approx(float(_zayatz_exact(hist, population)), rel=1e-12)


def test_zayatz_for_a_census_is_the_share_of_sample_uniques() -> None:
    hist = {1: 60, 2: 20, 3: 10, 5: 4}
    n = 60 + 40 + 30 + 20
    assert population_uniqueness(hist, sampling_fraction=1.0, model="zayatz").fraction == \
        pytest.approx(60 / n, rel=1e-12)


def _log_likelihood(h: dict[int, int], t: float, a: float) -> float:
    """Pitman's log-likelihood summed term by term (Hoshino 2001, eq. 2.2)."""
    u, n = sum(h.values()), sum(s * c for s, c in h.items())
    value = sum(math.log(t + i * a) for i in range(1, u))
    value -= sum(math.log(t + i) for i in range(1, n))
    value += sum(c * sum(math.log(k - a) for k in range(1, s)) for s, c in h.items())
    return value


@pytest.mark.parametrize("hist", [{1: 300, 2: 60, 3: 20, 4: 10, 6: 5, 10: 2},
                                  {1: 60, 2: 20, 3: 10, 5: 4},   # alpha < 0 (finite classes)
                                  {1: 2000, 2: 400, 3: 150, 4: 60, 5: 30, 10: 10, 50: 2}])
def test_pitman_is_a_maximum_of_the_likelihood(hist: dict) -> None:
    est = pitman(SizeHistogram.of(hist), 100_000)
    t, a = est.params["theta"], est.params["alpha"]
    base = _log_likelihood(hist, t, a)
    for dt, da in ((1e-3, 0), (-1e-3, 0), (0, 1e-4), (0, -1e-4), (1e-3, 1e-4), (-1e-3, -1e-4)):
        assert _log_likelihood(hist, t * (1 + dt), a + da) < base
    # the estimate: Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha
    expect = math.exp(math.lgamma(t + 1) - math.lgamma(t + a)) * 100_000**a
    # the exponent is a difference of log-gammas of size |lgamma(theta)|: each rounds with an
    # absolute error of a few ulps of that size, which becomes a relative error of the estimate
    scale = abs(math.lgamma(t + 1)) + abs(math.lgamma(t + a)) + abs(a * math.log(100_000))
    assert est.uniques == pytest.approx(expect, rel=8 * scale * sys.float_info.epsilon)


def test_pitman_without_a_finite_estimate_says_so() -> None:
    """All classes unique: the likelihood grows without bound in theta; no silent 0."""
    res = population_uniqueness({1: 50}, population_size=10_000, model="pitman")
    assert res.fraction is None and res.used is None and "Pitman" in res.reason
    res = population_uniqueness({1: 50, 2: 1}, population_size=10_000, model="pitman")
    assert res.fraction is None and "no admissible root" in res.reason
    # Dankar then falls back to Zayatz, as ARX does
    res = population_uniqueness({1: 50, 2: 1}, population_size=10_000, model="dankar")
    assert res.used == "zayatz" and res.estimates["pitman"] is None
    assert res.fraction == population_uniqueness({1: 50, 2: 1}, population_size=10_000,
                                                 model="zayatz").fraction


def _thinned_snb(a: float, b: float, f: float) -> tuple[float, float]:
    """P(sample size 1), P(sample size 2) of a population class of size 1 + NegBin(a, b) thinned
    with fraction f, summed term by term."""
    j = np.arange(1, 200_000, dtype=float)
    log_pf = (special.gammaln(j + a - 1) - special.gammaln(a) - special.gammaln(j)
              + a * np.log(b) + (j - 1) * np.log1p(-b))
    pf = np.exp(log_pf)
    return (float(np.sum(pf * stats.binom.pmf(1, j, f))),
            float(np.sum(pf * stats.binom.pmf(2, j, f))))


def _thinned_snb_mixture(a: float, b: float, f: float) -> tuple[float, float]:
    """The same two probabilities from NegBin(a, b) = Poisson(L), L ~ Gamma(a, (1-b)/b): the
    sampled part of the class is 1 w.p. f plus Poisson(f L), and E[L^k exp(-f L)] is the
    Gamma's Laplace transform, a (a+1)...(a+k-1) s^k (1 + f s)^(-a-k) with s = (1-b)/b."""
    s = (1.0 - b) / b
    m0 = (1.0 + f * s) ** -a
    m1 = a * s * (1.0 + f * s) ** (-a - 1.0)
    m2 = a * (a + 1.0) * s * s * (1.0 + f * s) ** (-a - 2.0)
    p1 = f * m0 + (1.0 - f) * f * m1
    p2 = f * f * m1 + (1.0 - f) * f * f * m2 / 2.0
    return p1, p2


def test_the_two_routes_to_the_thinned_probabilities_agree() -> None:
    for a, b, f in ((0.7, 0.3, 0.2), (0.2, 0.05, 0.5), (2.0, 0.6, 0.05)):
        assert _thinned_snb_mixture(a, b, f) == pytest.approx(_thinned_snb(a, b, f), rel=1e-9)


@pytest.mark.parametrize("a,b,f", [(0.7, 0.3, 0.2), (0.2, 0.05, 0.5), (2.0, 0.6, 0.05),
                                   (0.05, 0.01, 0.9)])
def test_snb_fit_recovers_the_parameters(a: float, b: float, f: float) -> None:
    k = 5_000.0
    p1, p2 = _thinned_snb(a, b, f)
    got = fit(k, f, k * p1, k * p2)
    assert got is not None
    assert got[0] == pytest.approx(a, rel=1e-6) and got[1] == pytest.approx(b, rel=1e-6)


def test_snb_class_count_equals_exact_rational_arithmetic() -> None:
    hist = {1: 300, 2: 60, 3: 20, 4: 10, 6: 5, 10: 2}
    q = Fraction(57, 200)
    c1 = hist[1]
    num1 = sum(i * q * q * (1 - q * q) ** (i - 1) * c for i, c in hist.items())
    den1 = sum((1 - q) ** i * ((1 + q) ** i - 1) * c for i, c in hist.items())
    num2 = sum((1 - q) ** i * c for i, c in hist.items())
    den2 = sum(i * q * (1 - q) ** (i - 1) * c for i, c in hist.items())
    exact = sum(hist.values()) + c1 * num1 / den1 * (num2 / den2) ** 2
    assert nonempty_classes(SizeHistogram.of(hist), float(q)) == pytest.approx(float(exact),
                                                                              rel=1e-12)
    assert nonempty_classes(SizeHistogram.of(hist), 1.0) == sum(hist.values())


def test_models_without_a_solution_return_none_and_a_reason() -> None:
    h = SizeHistogram.of({1: 40, 3: 10, 7: 2})
    assert snb(h, 200).uniques is None and "size 2" in snb(h, 200).reason
    assert zayatz(h, 200).uniques is not None


# --- API ------------------------------------------------------------------------------------


def test_sample_without_uniques_estimates_zero_and_empty_sample_says_so() -> None:
    for model in ("pitman", "zayatz", "snb", "dankar"):
        res = population_uniqueness({2: 30, 3: 10}, population_size=1000, model=model)
        assert res.fraction == 0.0 and res.uniques == 0.0 and res.reason is None
    res = population_uniqueness(pl.DataFrame({"n": []}, schema={"n": pl.Int64}),
                                population_size=10)
    assert res.fraction is None and res.reason == "the sample is empty"


def test_population_arguments() -> None:
    hist = {1: 60, 2: 20, 3: 10, 5: 4}                       # 150 records
    assert population_uniqueness(hist, population_size="usa").population_size == REGIONS["usa"]
    assert population_uniqueness(hist, population_size="North America").population_size == \
        565_265_000
    # ARX rounds n / f half up (Java's Math.round): 150 / 0.4 = 375; 30162 / 0.8 = 37702.5
    assert population_uniqueness(hist, sampling_fraction=0.4).population_size == 375
    assert population_uniqueness([1] * 30162, sampling_fraction=0.8).population_size == 37703
    with pytest.raises(InvalidParameterError, match="exactly one"):
        population_uniqueness(hist)
    with pytest.raises(InvalidParameterError, match="exactly one"):
        population_uniqueness(hist, population_size=10, sampling_fraction=0.5)
    with pytest.raises(InvalidParameterError, match="smaller than the sample"):
        population_uniqueness(hist, population_size=100)
    with pytest.raises(InvalidParameterError, match="unknown population region"):
        population_uniqueness(hist, population_size="atlantis")
    with pytest.raises(InvalidParameterError, match="model must be"):
        population_uniqueness(hist, population_size=1000, model="poisson")  # type: ignore
    with pytest.raises(InvalidParameterError):
        population_uniqueness(hist, sampling_fraction=0.0)


def test_size_table_forms_agree() -> None:
    sizes = [1, 1, 1, 2, 2, 3, 5]
    forms = [sizes, np.array(sizes), {1: 3, 2: 2, 3: 1, 5: 1},
             pl.DataFrame({"q": range(7), "n": sizes}),
             pl.DataFrame({"size": [1, 2, 3, 5, 7], "classes": [3, 2, 1, 1, 0]})]
    results = [population_uniqueness(f, population_size=500).to_dict() for f in forms]
    assert all(r == results[0] for r in results)


def test_rows_and_table_give_the_same_answer_and_nulls_follow_the_policy() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 3, 3, 3, 4, 5], "b": ["x", "x", "y", "z", "z", "w", "v", "v"]})
    direct = population_uniqueness(df, ["a", "b"], population_size=100, model="zayatz")
    table = population_uniqueness(class_table(df, ["a", "b"]), population_size=100,
                                  model="zayatz")
    assert direct == table
    with_null = df.with_columns(pl.when(pl.col("a") == 5).then(None).otherwise(pl.col("a"))
                                .alias("a"))
    with pytest.raises(NullValuesError):
        population_uniqueness(with_null, ["a", "b"], population_size=100)
    assert population_uniqueness(with_null, ["a", "b"], population_size=100,
                                 nulls="value").classes == direct.classes


def test_pitman_with_a_zero_denominator_in_arx_start_uses_the_other_starts() -> None:
    """Class sizes {6, 1, 1}: ARX's moment start divides by 2*c1*u + c1*c - n*c = 0 (found by
    hypothesis); the start is skipped, not an exception, and the answer is what the fallback
    starts give (a root or None with a reason)."""
    res = population_uniqueness({6: 1, 1: 2}, population_size=1000, model="pitman")
    assert (res.fraction is None) == (res.reason is not None)


def test_shlosser_terms_equal_exact_arithmetic_and_do_not_overflow() -> None:
    """(1-q)^i ((1+q)^i - 1) against Fractions for small classes, and finite for a class of
    10,000 records at q = 0.3 (where (1+q)^i overflows: the estimator returned None at 100M
    rows before)."""
    from ldiv_polars.risk.snb import _shlosser_terms, nonempty_classes

    q = Fraction(3, 10)
    sizes = np.array([1, 2, 3, 7, 50, 400])
    got = _shlosser_terms(sizes.astype(float), 0.3)
    for i, g in zip(sizes.tolist(), got.tolist()):
        want = (1 - q) ** i * ((1 + q) ** i - 1)
        assert g == pytest.approx(float(want), rel=1e-12)
    big = _shlosser_terms(np.array([10_000.0]), 0.3)
    assert np.isfinite(big).all()
    assert big[0] == pytest.approx((1 - 0.09) ** 10_000, rel=1e-9)
    k = nonempty_classes(SizeHistogram.of({1: 500, 2: 100, 3: 20, 10_000: 1}), 0.3)
    assert np.isfinite(k) and k > 621
