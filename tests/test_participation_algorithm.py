"""Algorithm A (effective anonymity) against the paper's Tables II-IV, closed forms, brute-force
Poisson-binomial enumeration and scipy's binomial distribution."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.microagg import (
    attained_failure,
    effective_anonymity,
    failure_vector,
    leave_one_out_failure,
    naive_failure,
    pmf_vector,
    table_failure,
)

# Table III (verbatim from the paper): k, pi, p_bar, n_min, q_bar, u, r_bar, r_bar'
TABLE_III = [
    (10, 0.75, 1e-4, 25, "4.31e-5", "8.80", "1.52e-5", "2.02e-5"),
    (10, 0.75, 1e-5, 27, "6.05e-6", "8.82", "1.98e-6", "2.64e-6"),
    (10, 0.75, 1e-6, 29, "7.95e-7", "8.84", "2.42e-7", "3.23e-7"),
    (10, 0.5, 1e-4, 43, "8.51e-5", "8.69", "1.72e-5", "3.44e-5"),
    (10, 0.5, 1e-5, 48, "7.61e-6", "8.73", "1.38e-6", "2.77e-6"),
    (10, 0.5, 1e-6, 53, "6.1e-7", "8.77", "1.01e-7", "2.02e-7"),
    (50, 0.75, 1e-4, 88, "6.2e-5", "48.4", "3.41e-5", "4.54e-5"),
    (50, 0.75, 1e-5, 91, "9.82e-6", "48.4", "5.22e-6", "6.97e-6"),
    (50, 0.75, 1e-6, 95, "7.14e-7", "48.5", "3.64e-7", "4.86e-7"),
    (50, 0.5, 1e-4, 144, "7.86e-5", "48.1", "2.62e-5", "5.25e-5"),
    (50, 0.5, 1e-5, 151, "9.64e-6", "48.2", "3.08e-6", "6.15e-6"),
    (50, 0.5, 1e-6, 159, "7.35e-7", "48.3", "2.23e-7", "4.46e-7"),
]

# Table IV (verbatim): pi = 0.75; k, p_bar, t_bar for N = 1e4, 1e5, 1e6
TABLE_IV = [
    (10, 1e-4, ("0.0171", "0.158", "0.822")),
    (10, 1e-5, ("0.00223", "0.0221", "0.201")),
    (10, 1e-6, ("0.000273", "0.00274", "0.027")),
    (50, 1e-4, ("0.00692", "0.0679", "0.505")),
    (50, 1e-5, ("0.00106", "0.0107", "0.102")),
    (50, 1e-6, ("7.42e-5", "0.00075", "0.00748")),
]


def printed(value: float, text: str) -> bool:
    """``value`` rounds to the printed ``text`` at the number of significant digits printed."""
    mantissa = text.lower().split("e")[0].lstrip("0.").replace(".", "")
    digits = max(len(mantissa), 1)
    return float(f"{value:.{digits}g}") == float(text)


def test_printed_helper_can_fail() -> None:
    assert printed(4.307e-5, "4.31e-5") and not printed(4.32e-5, "4.31e-5")
    assert printed(0.000273, "0.000273") and not printed(0.000276, "0.000273")


@pytest.mark.parametrize("row", TABLE_III, ids=lambda r: f"k{r[0]}-pi{r[1]}-pbar{r[2]:g}")
@pytest.mark.parametrize("method", ["recursion", "paper", "binom"])
def test_table_iii(row: tuple, method: str) -> None:
    k, pi, p_bar, n_min, q_bar, u, r_bar, r_act = row
    r = effective_anonymity(k, pi, p_bar, method=method)
    assert r.n_min == n_min
    assert r.satisfied
    assert printed(r.q_bar, q_bar)
    assert printed(r.u, u)
    assert printed(r.r_bar, r_bar)
    assert printed(r.r_bar_active, r_act)


@pytest.mark.parametrize("row", TABLE_IV, ids=lambda r: f"k{r[0]}-pbar{r[1]:g}")
def test_table_iv(row: tuple) -> None:
    k, p_bar, expected = row
    for N, text in zip((10_000, 100_000, 1_000_000), expected):
        assert printed(table_failure(k, 0.75, p_bar, N), text), (k, p_bar, N)
        assert printed(table_failure(k, 0.75, p_bar, N, method="binom"), text)


def test_table_iv_r_bar_matches_table_iii() -> None:
    # the paper: for pi = .75, r and r' of Table IV are those of Table III
    for k, pi, p_bar, *_rest, r_bar, r_act in TABLE_III:
        if pi == 0.75:
            r = effective_anonymity(k, pi, p_bar, N=100_000)
            assert printed(r.r_bar, r_bar) and printed(r.r_bar_active, r_act)


def test_table_ii_algorithm_column() -> None:
    r = effective_anonymity(20, 0.5, 0.1)
    assert r.n_min == 48
    assert printed(r.q_bar, "0.09671")
    assert printed(r.u, "17.85")
    assert printed(r.r_bar, "0.03597")


def test_table_iv_by_definition() -> None:
    # t = q^(|C|-1) q' with the last cell of n' = n + N mod n records, from scipy
    k, pi, p_bar, N = 10, 0.75, 1e-4, 10_000
    n = 25
    cells = N // n
    last = N - (cells - 1) * n
    q = stats.binom.cdf(k - 1, n, pi) - (1 - pi) ** n
    q_last = stats.binom.cdf(k - 1, last, pi) - (1 - pi) ** last
    expected = 1 - (1 - q) ** (cells - 1) * (1 - q_last)
    assert table_failure(k, pi, p_bar, N) == pytest.approx(expected, rel=1e-9)


def test_fig7_values_from_notes() -> None:
    # notes (recomputed, [NOT IN PAPER]): pi = .5, k = 50, p_bar = 1e0 .. 1e-8
    expected = [50, 113, 125, 135, 144, 151, 159, 165, 172]
    got = [effective_anonymity(50, 0.5, 10.0**-e).n_min for e in range(9)]
    assert got == expected


@pytest.mark.parametrize("k", [1, 2, 5, 20, 50])
def test_certain_participation_or_no_requirement(k: int) -> None:
    for p_bar in (1e-12, 1e-4, 0.5, 1.0):
        assert effective_anonymity(k, 1.0, p_bar).n_min == k
    for pi in (0.01, 0.3, 0.5, 0.99):
        r = effective_anonymity(k, pi, 1.0)
        assert r.n_min == k


@pytest.mark.parametrize("k", [2, 3, 5, 10, 20])
def test_naive_cells_half_participation(k: int) -> None:
    expected = 1 - 2.0 ** (1 - k)
    assert naive_failure(k, 0.5) == pytest.approx(expected, rel=1e-14)
    assert attained_failure(k, 0.5, k) == pytest.approx(expected, rel=1e-14)
    for pi in (0.1, 0.75, 0.9):
        assert attained_failure(k, pi, k) == pytest.approx(1 - (1 - pi) ** k - pi**k, rel=1e-12)


@pytest.mark.parametrize("pi", [0.2, 0.5, 0.75])
def test_k2_closed_form(pi: float) -> None:
    for n in range(2, 40):
        assert attained_failure(2, pi, n) == pytest.approx(n * (1 - pi) ** (n - 1) * pi, rel=1e-12)
    r = effective_anonymity(2, pi, 1e-3)
    assert r.u == pytest.approx(1.0)


def _q_ref(k: int, n: int, pi: float) -> float:
    """sum_{j=1}^{k-1} Bin(n, pi)(j) in log space (no cancellation)."""
    logs = stats.binom.logpmf(np.arange(1, k), n, pi)
    return float(np.exp(special.logsumexp(logs)))


@pytest.mark.parametrize("k", [2, 5, 10, 20, 50])
@pytest.mark.parametrize("pi", [0.25, 0.5, 0.75, 0.9])
def test_stable_down_to_1e_minus_12_against_scipy(k: int, pi: float) -> None:
    p_bars = 10.0 ** -np.arange(1.0, 15.01, 0.25)  # 1e-1 down to 1e-15
    results = [effective_anonymity(k, pi, p) for p in p_bars]
    # reference: q_bar(n) = sum_{j=1}^{k-1} Bin(n, pi)(j) by scipy in log space, for all n at once
    ns = np.arange(k, max(r.n_min for r in results) + 3)
    logs = stats.binom.logpmf(np.arange(1, k)[None, :], ns[:, None], pi)
    q_ref = np.exp(special.logsumexp(logs, axis=1))
    for p_bar, r in zip(p_bars, results):
        n_ref = int(ns[np.flatnonzero(q_ref <= p_bar)[0]])
        assert r.n_min == n_ref, (k, pi, p_bar)
        assert r.q_bar == pytest.approx(q_ref[n_ref - k], rel=1e-9)
    for p_bar, r in list(zip(p_bars, results))[::8]:
        assert effective_anonymity(k, pi, p_bar, method="binom").n_min == r.n_min


def test_paper_recursion_reproduces_fig6_error() -> None:
    # Fig. 6: literal line 6 loses accuracy, -0.84 % at p_bar = 1e-17 (k = 20, pi = .5)
    lit = effective_anonymity(20, 0.5, 1e-17, method="paper")
    stable = effective_anonymity(20, 0.5, 1e-17)
    assert lit.n_min == stable.n_min == 132
    ref = _q_ref(20, 132, 0.5)
    assert (lit.q_bar - ref) / ref == pytest.approx(-0.0084, abs=0.0002)
    assert stable.q_bar == pytest.approx(ref, rel=1e-12)


# --- Poisson-binomial against enumeration -----------------------------------------------------


def _enumerate(k: int, pis: list[float]) -> tuple[float, float, float, list[float]]:
    """q_bar, u*q_bar, per-record P{I_j=1, fail}, by summing over all 2^n participation sets."""
    n = len(pis)
    q = uq = 0.0
    rec = [0.0] * n
    for bits in itertools.product((0, 1), repeat=n):
        p = math.prod(pi if b else 1 - pi for pi, b in zip(pis, bits))
        K = sum(bits)
        if 0 < K < k:
            q += p
            uq += K * p
            for j, b in enumerate(bits):
                if b:
                    rec[j] += p
    return q, uq, q and uq / q, rec


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 5),
    pis=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=9),
)
def test_poisson_binomial_vs_enumeration(k: int, pis: list[float]) -> None:
    n = len(pis)
    q, uq, _u, rec = _enumerate(k, pis)
    assert attained_failure(k, pis, n) == pytest.approx(q, abs=1e-12)
    p = pmf_vector(k, pis, n)
    assert float(np.dot(p, np.arange(k))) == pytest.approx(uq, abs=1e-12)
    assert failure_vector(k, pis) == pytest.approx(rec, abs=1e-12)
    loo = leave_one_out_failure(k, pis)
    for j in range(n):
        if pis[j] > 1e-6:  # below that rec[j] / pis[j] is dominated by underflow
            assert loo[j] == pytest.approx(rec[j] / pis[j], abs=1e-9)


def test_vector_pi_equals_constant_pi() -> None:
    for k, pi, p_bar in [(10, 0.75, 1e-4), (5, 0.5, 1e-6), (50, 0.5, 1e-5)]:
        c = effective_anonymity(k, pi, p_bar)
        v = effective_anonymity(k, [pi] * 1000, p_bar)
        assert v.n_min == c.n_min
        assert v.q_bar == pytest.approx(c.q_bar, rel=1e-12)
        assert v.u == pytest.approx(c.u, rel=1e-12)
        assert v.r_bar == pytest.approx(c.r_bar, rel=1e-12)
        assert v.r_bar_active == pytest.approx(c.r_bar_active, rel=1e-9)


def test_vector_pi_order_matters_and_cap() -> None:
    pis = [0.9] * 20 + [0.2] * 200
    a = effective_anonymity(5, pis, 1e-3)
    b = effective_anonymity(5, pis[::-1], 1e-3)
    assert a.n_min < b.n_min
    assert a.q_bar <= 1e-3 and b.q_bar <= 1e-3
    # vector exhausted before q_bar <= p_bar: n = N, not satisfied
    r = effective_anonymity(10, [0.5] * 15, 1e-6)
    assert r.n_min == 15 and not r.satisfied and r.q_bar > 1e-6
    # the t_bar of consecutive blocks equals the constant-pi table failure
    assert effective_anonymity(10, [0.75] * 1000, 1e-4).t_bar == pytest.approx(
        table_failure(10, 0.75, 1e-4, 1000), rel=1e-9
    )


# --- properties from the notes ------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(2, 40),
    pi=st.floats(0.05, 0.99),
    e=st.floats(0.5, 12.0),
    N=st.integers(1, 100_000),
)
def test_properties(k: int, pi: float, e: float, N: int) -> None:
    p_bar = 10.0**-e
    r = effective_anonymity(k, pi, p_bar)
    n = r.n_min
    assert n >= k and r.q_bar <= p_bar
    assert 0.0 <= r.u <= k - 1 + 1e-12
    assert r.r_bar <= (k - 1) * r.q_bar / n * (1 + 1e-12)
    assert r.r_bar_active == pytest.approx(r.r_bar / pi, rel=1e-12)
    assert r.r_bar_active <= (k - 1) * r.q_bar / (n * pi) * (1 + 1e-12)
    if n > k:
        assert attained_failure(k, pi, n - 1) > p_bar
    if N >= n:
        # t >= p^|C|, i.e. t_bar <= 1 - p^|C| (compared as failures: t may underflow 1 - t_bar)
        cells = N // n
        assert table_failure(k, pi, p_bar, N) <= -math.expm1(cells * math.log1p(-p_bar)) + 1e-12


def test_cap_N() -> None:
    r = effective_anonymity(10, 0.5, 1e-6, N=30)
    assert r.n_min == 30 and not r.satisfied
    assert r.q_bar == pytest.approx(attained_failure(10, 0.5, 30))
    assert r.t_bar == pytest.approx(r.q_bar)  # one cell


def test_zero_participation_and_zero_failure() -> None:
    r = effective_anonymity(5, 0.0, 1e-6)
    assert r.n_min == 5 and r.q_bar == 0.0 and r.u == 0.0 and r.r_bar_active == 0.0
    assert effective_anonymity(5, 1.0, 0.0).n_min == 5
    assert effective_anonymity(5, 0.5, 0.0, N=40).n_min == 40


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=0, pi=0.5, p_bar=0.1), "k must be"),
        (dict(k=2.5, pi=0.5, p_bar=0.1), "k must be"),
        (dict(k=5, pi=1.5, p_bar=0.1), "pi must be"),
        (dict(k=5, pi=[0.5, -0.1], p_bar=0.1), r"pi\[1\]"),
        (dict(k=5, pi=0.5, p_bar=1.5), "p_bar must be"),
        (dict(k=5, pi=0.5, p_bar=float("nan")), "p_bar must be"),
        (dict(k=5, pi=0.5, p_bar=0.0), "p_bar = 0"),
        (dict(k=5, pi=[0.5] * 3, p_bar=0.1, N=4), "exceeds"),
        (dict(k=5, pi=[0.5] * 3, p_bar=0.1, method="binom"), "constant pi"),
        (dict(k=5, pi=0.5, p_bar=0.1, method="exact"), "method must be"),
    ],
)
def test_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        effective_anonymity(**kwargs)


@settings(max_examples=30, deadline=None)
@given(pis=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8), extra=st.integers(1, 3),
       method=st.sampled_from(["recursion", "paper"]))
def test_k_above_the_table_is_a_verdict_in_closed_form(pis: list[float], extra: int,
                                                       method: str) -> None:
    """k above the cap (N, or the probabilities given): the whole table is one cell and never
    reaches k active records; every metric equals the enumeration over all 2^n participation
    sets, and a k far beyond any vector (it was a MemoryError) costs nothing."""
    n = len(pis)
    q, uq, u, rec = _enumerate(n + extra, pis)
    for k in (n + extra, 10**11):
        r = effective_anonymity(k, pis, 0.5, method=method)  # type: ignore[arg-type]
        assert r.n_min == n and not r.satisfied
        assert r.q_bar == pytest.approx(q, abs=1e-12) and r.t_bar == pytest.approx(q, abs=1e-12)
        assert r.u == pytest.approx(u, abs=1e-9) and r.r_bar == pytest.approx(uq / n, abs=1e-12)
        # P{fail | I_j = 1} = 1 for every record that can take part (the mean is over records)
        assert all(x / p == pytest.approx(1.0) for x, p in zip(rec, pis) if p > 1e-6)
        assert r.r_bar_active == 1.0
        c = effective_anonymity(k, pis[0], 0.5, N=n, method=method)  # type: ignore[arg-type]
        qc, _, uc, _ = _enumerate(n + extra, [pis[0]] * n)
        assert c.n_min == n and not c.satisfied and c.q_bar == pytest.approx(qc, abs=1e-12)
        assert c.u == pytest.approx(uc, abs=1e-9) and c.t_bar == pytest.approx(qc, abs=1e-12)


def test_k_beyond_the_search_is_refused() -> None:
    """Without a cap below it, k above SEARCH_K_MAX is refused before anything is allocated
    (k = 10^11 was a MemoryError); the bound itself is searched (binom: one block)."""
    from ldiv_polars.microagg.participation import SEARCH_K_MAX

    for k in (SEARCH_K_MAX + 1, 10**11):
        with pytest.raises(InvalidParameterError, match=f"k = {k} is above {SEARCH_K_MAX}"):
            effective_anonymity(k, 0.5, 0.1)
        with pytest.raises(InvalidParameterError, match="is above"):
            effective_anonymity(k, 0.5, 0.1, N=10**12)
    assert effective_anonymity(SEARCH_K_MAX, 1.0, 0.1, method="binom").n_min == SEARCH_K_MAX
