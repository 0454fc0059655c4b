"""The shifted negative binomial (SNB) model of population uniqueness (Chen & Keller-McNulty
1998), as ARX's ``ModelSNB`` but with two of its formulas corrected (see below).

Population class sizes are ``1 + G`` with ``G ~ NegBin(alpha, beta)``; a Bernoulli sample with
fraction ``f`` thins them. With ``K`` non-empty population classes and ``d = (1-f)(1-beta)``, the
expected numbers of sample classes of size 1 and 2 are

    E[c_1] = K f (beta / (1-d))^alpha (1 + alpha d / (1-d))
    E[c_2] = K alpha beta^alpha f^2 (1-beta) / 2 * (2 - (1-alpha) d) / (1-d)^(alpha+2)

(``tests/test_risk_population.py`` checks both against the thinned distribution summed term by
term). ``alpha, beta`` solve ``E[c_1] = c_1, E[c_2] = c_2`` (scipy's MINPACK ``hybr`` on the
logarithms, in the unconstrained coordinates ``log alpha, logit beta``, from a fixed grid of
starts); the expected number of population uniques is ``K * P(G = 0) = K beta^alpha``.

``K`` is Shlosser's estimator as modified by Haas & Stokes (1998), with ``q = f``:

    K = u + c_1 * [sum_i i q^2 (1-q^2)^(i-1) c_i] / [sum_i (1-q)^i ((1+q)^i - 1) c_i]
              * ([sum_i (1-q)^i c_i] / [sum_i i q (1-q)^(i-1) c_i])^2

(``K = u`` for a census, ``f = 1``). Differences from ARX 3.9.2 (``ModelSNB.java``): ARX
multiplies its second equation by ``(1-d)^(alpha+2)`` where the model divides (its Jacobian
divides), and it computes the second sum as ``sum_i [(1-q)^i c_i (1+q)^i - 1]`` (one is taken off
per distinct class size, not multiplied into each class count). With these, ARX's solver finds no
root on Adult for any sampling fraction below 1, and reports 0.

>>> from ldiv_polars.risk.tables import SizeHistogram
>>> round(snb(SizeHistogram.of({1: 60, 2: 20, 3: 10, 5: 4}), 1_000).uniques / 1_000, 4)
0.1193
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from ldiv_polars.risk.estimate import Estimate
from ldiv_polars.risk.tables import SizeHistogram

RESIDUAL_TOLERANCE = 1e-10
"""A root is accepted when both log-equations are zero to this tolerance."""

STARTS = tuple((a, b) for a in (0.1, 0.5, 1.0, 2.0, 5.0) for b in (0.01, 0.1, 0.5, 0.9))
"""Starting points ``(alpha, beta)`` tried in order; the first admissible root is kept."""


def nonempty_classes(h: SizeHistogram, f: float) -> float:
    """Haas & Stokes' modification of Shlosser's estimator of the number of non-empty
    population classes, for a Bernoulli sample with fraction ``f``."""
    if f >= 1.0:
        return float(h.n_classes)
    i, c = h.sizes.astype(float), h.classes.astype(float)
    q = f
    num1 = np.sum(i * q * q * (1.0 - q * q) ** (i - 1.0) * c)
    den1 = np.sum(_shlosser_terms(i, q) * c)
    num2 = np.sum((1.0 - q) ** i * c)
    den2 = np.sum(i * q * (1.0 - q) ** (i - 1.0) * c)
    return float(h.n_classes + h.of_size(1) * (num1 / den1) * (num2 / den2) ** 2)


def _shlosser_terms(i: np.ndarray, q: float) -> np.ndarray:
    """``(1 - q)^i ((1 + q)^i - 1)`` for class sizes ``i`` without overflow: written as
    ``(1 - q)^i expm1(i log1p(q))`` (exact for small ``q``), and, where ``(1 + q)^i`` would
    overflow, as the equal ``(1 - q^2)^i - (1 - q)^i`` (a large class at a sampling fraction
    of 0.3 made the product inf * 0 = nan, and the estimator None)."""
    x = i * np.log1p(q)
    small = x < 700.0
    down = np.exp(i * np.log1p(-q))
    return np.where(small, down * np.expm1(np.minimum(x, 700.0)),
                    np.exp(i * np.log1p(-q * q)) - down)


def _log_equations(x: np.ndarray, k: float, f: float, c1: float, c2: float) -> np.ndarray:
    a = float(np.exp(x[0]))
    b = float(special.expit(x[1]))
    d = (1.0 - f) * (1.0 - b)
    log_1md = np.log1p(-d)
    e1 = (np.log(k) + np.log(f) + a * (np.log(b) - log_1md) + np.log1p(a * d / (1.0 - d))
          - np.log(c1))
    e2 = (np.log(k) + np.log(a) + a * np.log(b) + 2.0 * np.log(f) + np.log1p(-b) - np.log(2.0)
          + np.log(2.0 - (1.0 - a) * d) - (a + 2.0) * log_1md - np.log(c2))
    return np.array([e1, e2])


def fit(k: float, f: float, c1: float, c2: float) -> tuple[float, float] | None:
    """``(alpha, beta)`` with ``E[c_1] = c1`` and ``E[c_2] = c2`` for ``k`` population classes
    and sampling fraction ``f`` (the first admissible root from :data:`STARTS`), or ``None``."""
    for a0, b0 in STARTS:
        x0 = np.array([np.log(a0), special.logit(b0)])
        with np.errstate(all="ignore"):
            sol = optimize.root(_log_equations, x0, args=(k, f, c1, c2), method="hybr",
                                options={"xtol": 1e-13})
        if np.all(np.isfinite(sol.fun)) and np.all(np.abs(sol.fun) <= RESIDUAL_TOLERANCE):
            return float(np.exp(sol.x[0])), float(special.expit(sol.x[1]))
    return None


def snb(h: SizeHistogram, population: int) -> Estimate:
    """Expected number of population uniques under the SNB model (``None`` with a reason when
    there are no classes of size 2 or the equations have no root from any start)."""
    f = h.records / population
    c1, c2 = float(h.of_size(1)), float(h.of_size(2))
    if c2 == 0.0:
        return Estimate(None, "SNB needs classes of size 2 (its second equation fits c_2)")
    k = nonempty_classes(h, f)
    if not (np.isfinite(k) and k > 0.0):
        return Estimate(None, f"SNB: the estimated number of population classes is {k!r}")
    root = fit(k, f, c1, c2)
    if root is None:
        return Estimate(None, "SNB's equations did not converge from any starting point",
                        {"classes": k})
    a, b = root
    uniques = k * b**a
    params = {"alpha": a, "beta": b, "classes": k}
    if not (np.isfinite(uniques) and 0.0 <= uniques <= population):
        return Estimate(None, f"SNB's estimate {uniques!r} is outside [0, population]", params)
    return Estimate(uniques, None, params)
