"""Bounds and approximations of n_min (§VI.C), the Monte Carlo simulator (Table II) and the
``ldiv participation`` command."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import special

from ldiv_polars.cli import main
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.microagg import (
    asymptotic_table_failure,
    effective_anonymity,
    effective_anonymity_k2,
    k2_log_approximations,
    kl_approximation,
    lambert_w_k2,
    limit_approximation,
    log_approximation,
    markov_bound,
    quadratic_approximation,
    quadratic_approximation_simple,
    simulate_participation,
    table_failure,
)


@pytest.mark.parametrize(
    "k, n_min, kl, quad, quad_simple, log2",
    [(10, 53, 55.39, 58.05, 54.12, 49.37), (50, 159, 164.45, 165.66, 163.85, 153.27)],
)
def test_general_k_values_from_notes(
    k: int, n_min: int, kl: float, quad: float, quad_simple: float, log2: float
) -> None:
    # notes §3, Fig. 9 [recomputed values]: pi = .5, p_bar = 1e-6
    assert effective_anonymity(k, 0.5, 1e-6).n_min == n_min
    assert round(kl_approximation(k, 0.5, 1e-6), 2) == kl
    assert round(quadratic_approximation(k, 0.5, 1e-6), 2) == quad
    assert round(quadratic_approximation_simple(k, 0.5, 1e-6), 2) == quad_simple
    assert round(log_approximation(k, 0.5, 1e-6), 2) == log2


def test_kl_root_solves_its_equation() -> None:
    for k, pi, p_bar in [(5, 0.3, 1e-3), (20, 0.75, 1e-8), (100, 0.5, 1e-5)]:
        n = kl_approximation(k, pi, p_bar)
        x = (k - 1) / n
        d = special.rel_entr(x, pi) + special.rel_entr(1 - x, 1 - pi)
        assert n * d == pytest.approx(-math.log(p_bar), rel=1e-10)
        assert x <= pi


def test_quadratic_forms_are_arithmetic_plus_geometric_mean() -> None:
    # n1' = (1/pi)(A + G)(2(k-1) + c, c) with c = -pi_bar ln p_bar (the notes write the first
    # argument as 2(k-1), which does not match the printed formula nor the Fig. 9 values)
    k, pi, p_bar = 17, 0.6, 1e-7
    c = -(1 - pi) * math.log(p_bar)
    a, b = 2 * (k - 1) + c, c
    assert quadratic_approximation(k, pi, p_bar) == pytest.approx(
        ((a + b) / 2 + math.sqrt(a * b)) / pi
    )


@pytest.mark.parametrize("pi", [0.1, 0.25, 0.5, 0.75, 0.9])
def test_k2_lambert_w_is_exact(pi: float) -> None:
    for e in np.arange(1.0, 12.0, 0.05):
        p_bar = 10.0**-e
        assert effective_anonymity_k2(pi, p_bar) == effective_anonymity(2, pi, p_bar).n_min
        x = lambert_w_k2(pi, p_bar)
        b = 1 - pi
        a = b / pi * p_bar
        if x > 2:
            assert x * b**x == pytest.approx(a, rel=1e-9)


@pytest.mark.parametrize("pi", [0.25, 0.5, 0.75])
def test_k2_log_approximations_fig10_claims(pi: float) -> None:
    # Fig. 10 (p_bar 1e-7 .. 1e-3): ceil(n1) is an upper bound; n2 is optimistic, mostly exact
    exact_hits = total = 0
    for e in np.arange(3.0, 7.0, 0.01):
        p_bar = 10.0**-e
        n = effective_anonymity(2, pi, p_bar).n_min
        n0, n1, n2 = k2_log_approximations(pi, p_bar)
        assert math.ceil(n1) >= n
        assert math.ceil(n2) <= n
        assert n0 == pytest.approx(1 + math.log(p_bar / pi) / math.log(1 - pi))
        exact_hits += math.ceil(n2) == n
        total += 1
    assert exact_hits / total > 0.9


def test_markov_lower_bound() -> None:
    for k in (2, 5, 10, 50):
        for pi in (0.1, 0.5, 0.9):
            for p_bar in (0.5, 1e-2, 1e-6):
                assert markov_bound(k, pi, p_bar) <= effective_anonymity(k, pi, p_bar).n_min


def test_limit_and_asymptotic_table_failure() -> None:
    # -(1/n) ln q_bar -> -ln pi_bar: ratio n_min / limit -> 1 as p_bar -> 0 (k fixed)
    ratios = [
        effective_anonymity(5, 0.5, 10.0**-e).n_min / limit_approximation(0.5, 10.0**-e)
        for e in (5, 50, 250)
    ]
    assert abs(ratios[-1] - 1) < abs(ratios[0] - 1) and abs(ratios[-1] - 1) < 0.1
    # t_bar ~ 1 - exp(-(N/n) q_bar), close when q_bar is small
    r = effective_anonymity(10, 0.75, 1e-6)
    for N in (10_000, 1_000_000):
        assert asymptotic_table_failure(N, r.n_min, r.q_bar) == pytest.approx(
            table_failure(10, 0.75, 1e-6, N), rel=0.05
        )


def test_approximation_bad_input() -> None:
    with pytest.raises(InvalidParameterError, match="pi must be"):
        kl_approximation(5, 1.0, 1e-3)
    with pytest.raises(InvalidParameterError, match="p_bar must be"):
        lambert_w_k2(0.5, 0.0)
    with pytest.raises(InvalidParameterError, match="k must be"):
        quadratic_approximation(0, 0.5, 1e-3)


# --- simulation ---------------------------------------------------------------------------------

TABLE_II_SIMULATION = {"q_bar": 0.09606, "u": 17.83, "r_bar": 0.03605}


def test_table_ii_simulation_column() -> None:
    alg = effective_anonymity(20, 0.5, 0.1)
    sim = simulate_participation(20, 0.5, alg.n_min, cells=100_000, seed=2016)
    # our simulation agrees with Algorithm A within 4 standard errors ...
    assert abs(sim.q_bar - alg.q_bar) < 4 * sim.q_bar_se
    assert abs(sim.u - alg.u) < 4 * sim.u_se
    assert abs(sim.r_bar - alg.r_bar) < 4 * sim.r_bar_se
    # ... and with the paper's own simulation within sampling error of two runs
    for key, paper in TABLE_II_SIMULATION.items():
        se = getattr(sim, f"{key}_se")
        assert abs(getattr(sim, key) - paper) < 4 * math.sqrt(2) * se, key


def test_simulation_bernoulli_matrix_per_record() -> None:
    pis = np.linspace(0.2, 0.9, 30)
    exact = effective_anonymity(8, pis, 1e-9)  # runs to n = 30 (cap)
    sim = simulate_participation(8, pis, 30, cells=60_000, seed=7)
    assert abs(sim.q_bar - exact.q_bar) < 4 * sim.q_bar_se
    assert abs(sim.r_bar - exact.r_bar) < 4 * sim.r_bar_se
    with pytest.raises(InvalidParameterError, match="entries"):
        simulate_participation(8, pis, 31)


def test_simulation_is_seeded() -> None:
    a = simulate_participation(10, 0.75, 25, cells=1000, seed=3)
    b = simulate_participation(10, 0.75, 25, cells=1000, seed=3)
    assert a == b


# --- CLI ---------------------------------------------------------------------------------------


def test_cli_participation_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["participation", "--k", "10", "--pi", "0.75", "--p-bar", "1e-4", "--N", "10000", "--json"]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert {"n_min", "q_bar", "u", "r_bar", "r_bar_active", "t_bar"} <= set(out)
    assert out["n_min"] == 25
    assert f"{out['q_bar']:.3g}" == "4.31e-05"
    assert f"{out['r_bar_active']:.3g}" == "2.02e-05"
    assert f"{out['t_bar']:.3g}" == "0.0171"


def test_cli_participation_without_n_and_failures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["participation", "--k", "50", "--pi", "0.5", "--p-bar", "1e-6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_min"] == 159 and out["t_bar"] is None
    # a table too small for the guarantee: exit 1
    assert main(["participation", "--k", "10", "--pi", "0.5", "--p-bar", "1e-6", "--N", "30"]) == 1
    capsys.readouterr()
    assert main(["participation", "--k", "10", "--pi", "2", "--p-bar", "1e-6"]) == 2
    assert "pi must be" in capsys.readouterr().err
