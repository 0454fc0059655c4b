"""Pitman's model of population uniqueness (Pitman 1996; Hoshino 2001), as ARX's ``ModelPitman``.

The class sizes of a sample are taken as a draw from the Pitman sampling formula with parameters
``theta > 0`` and ``alpha < 1``. With ``c_j`` classes of size ``j``, ``u`` classes and ``n``
records, the log-likelihood is (Hoshino 2001, eq. 2.2, up to a constant)

    L = sum_{i=1}^{u-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
        + sum_{j>=2} c_j sum_{k=1}^{j-1} log(k - alpha),

whose sums have closed forms in the digamma function ``psi``; the maximum-likelihood estimate
solves ``dL/dtheta = dL/dalpha = 0`` (scipy's MINPACK ``hybr``: from ARX's moment-based
starting point in ``(theta, alpha)`` as ARX does, then from a fixed grid in unconstrained
coordinates). As in ARX, ``alpha`` may be negative
(the model then has finitely many classes, ``m = theta / -alpha``; the likelihood needs
``m > u - 1``). The expected number of population uniques in a population of ``N`` is
``Gamma(theta + 1) / Gamma(theta + alpha) * N**alpha`` (Hoshino 2001, eq. 3.5).

>>> from ldiv_polars.risk.tables import SizeHistogram
>>> est = pitman(SizeHistogram.of({1: 300, 2: 60, 3: 20, 4: 10, 6: 5, 10: 2}), 10_000)
>>> round(est.params["theta"], 2), round(est.params["alpha"], 4), round(est.uniques / 10_000, 6)
(278.1, 0.4253, 0.127685)
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from ldiv_polars.risk.estimate import Estimate
from ldiv_polars.risk.tables import SizeHistogram

RESIDUAL_TOLERANCE = 1e-9
"""A root is accepted when each likelihood equation is zero to this fraction of the size of its
terms."""

MAX_THETA_PER_RECORD = 1e6
"""Roots with ``theta`` above this many times the sample size are rejected: there the sums lose
their precision (the likelihood grows towards ``theta = inf``, no finite estimate)."""


def _start(h: SizeHistogram) -> tuple[float, float]:
    """ARX's moment-based starting point ``(theta, alpha)`` (ModelPitman)."""
    # numpy floats: a zero denominator gives inf/nan (as in ARX's Java), not an exception;
    # :func:`_roots` skips a start that is not finite
    u, n = np.float64(h.n_classes), np.float64(h.records)
    c1 = np.float64(h.of_size(1))
    c2 = np.float64(h.of_size(2) or 1.0)  # ARX: no classes of size 2 -> 1 (overestimates)
    with np.errstate(all="ignore"):
        c = c1 * (c1 - 1.0) / c2
        t = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / (2.0 * c1 * u + c1 * c - n * c)
        a = (t * (c1 - n) + (n - 1.0) * c1) / (n * u)
    return float(t), float(a)


GRID_POSITIVE = tuple((t, a) for t in (1.0, 10.0, 100.0, 1000.0) for a in (0.2, 0.5, 0.8))
"""Fallback starts ``(theta, alpha)`` with ``0 < alpha < 1``."""
GRID_NEGATIVE = tuple((m, -b) for b in (0.1, 1.0) for m in (1.5, 4.0))
"""Fallback starts ``(m / (u - 1), alpha)`` with ``alpha < 0`` (``m = theta / -alpha``)."""


def _admissible(t: float, a: float, h: SizeHistogram) -> bool:
    """``(theta, alpha)`` in the model's domain (and ``theta`` small enough to be resolved)."""
    u = h.n_classes
    if not (np.isfinite(t) and np.isfinite(a) and 0.0 < t <= MAX_THETA_PER_RECORD * h.records
            and a < 1.0):
        return False
    return a >= 0.0 or t > (u - 1.0) * -a


def _sum_inverse(t: float, a: float, u: float) -> float:
    """``sum_{i=1}^{u-1} 1/(t + i a)`` in closed form, with positive digamma arguments for
    either sign of ``a``."""
    if a > 0.0:
        return float((special.digamma(t / a + u) - special.digamma(t / a + 1.0)) / a)
    if a < 0.0:
        m = t / -a
        return float((special.digamma(m) - special.digamma(m - u + 1.0)) / -a)
    return (u - 1.0) / t


def _score(h: SizeHistogram):
    """The score equations ``(dL/dtheta, dL/dalpha)`` at an admissible ``(theta, alpha)``, and
    the size of each equation's terms (for the convergence test)."""
    u, n = float(h.n_classes), float(h.records)
    big = h.sizes > 1
    sizes, counts = h.sizes[big].astype(float), h.classes[big].astype(float)
    psi = special.digamma

    def score(t: float, a: float) -> tuple[np.ndarray, np.ndarray]:
        s1 = _sum_inverse(t, a, u)                                  # sum_i 1/(t + i a)
        si = ((u - 1.0) - t * s1) / a if a else u * (u - 1.0) / (2.0 * t)  # sum_i i/(t + i a)
        tn = float(psi(t + n) - psi(t + 1.0))                       # sum_i 1/(t + i)
        sj = float(np.dot(counts, psi(sizes - a) - psi(1.0 - a)))  # sum_j c_j sum_k 1/(k - a)
        return np.array([s1 - tn, si - sj]), np.array([abs(s1) + abs(tn), abs(si) + abs(sj)])

    return score


def _roots(h: SizeHistogram):
    """Candidate roots, lazily: from ARX's start in ``(theta, alpha)``, then from the grids in
    unconstrained coordinates (``log theta, logit alpha``; ``log(m - u + 1), log -alpha``)."""
    u = float(h.n_classes)
    score = _score(h)
    penalty = np.array([1e10, 1e10])

    def raw(x: np.ndarray) -> tuple[float, float]:
        return float(x[0]), float(x[1])

    def positive(x: np.ndarray) -> tuple[float, float]:
        return float(np.exp(x[0])), float(special.expit(x[1]))

    def negative(x: np.ndarray) -> tuple[float, float]:
        b = float(np.exp(x[1]))
        return b * (u - 1.0 + float(np.exp(x[0]))), -b

    def solve(to_params, x0: np.ndarray) -> tuple[float, float] | None:
        def fun(x: np.ndarray) -> np.ndarray:
            t, a = to_params(x)
            if not _admissible(t, a, h):
                return penalty
            g, size = score(t, a)
            return g / size  # each equation relative to its terms: they differ by 1e4 and more

        with np.errstate(all="ignore"):
            sol = optimize.root(fun, x0, method="hybr", options={"xtol": 1e-13})
            t, a = to_params(sol.x)
            if not _admissible(t, a, h):
                return None
            g, size = score(t, a)
        return (t, a) if np.all(np.abs(g) <= RESIDUAL_TOLERANCE * size) else None

    start = np.array(_start(h))
    yield solve(raw, start) if np.all(np.isfinite(start)) else None
    for t0, a0 in GRID_POSITIVE:
        yield solve(positive, np.array([np.log(t0), special.logit(a0)]))
    for m0, a0 in GRID_NEGATIVE:
        yield solve(negative, np.array([np.log((m0 - 1.0) * (u - 1.0) + 1.0), np.log(-a0)]))


def pitman(h: SizeHistogram, population: int) -> Estimate:
    """Expected number of population uniques under Pitman's model (``None`` with a reason when
    the likelihood equations have no admissible root from any start)."""
    if h.n_classes < 2 or h.records <= h.n_classes:
        return Estimate(None, "Pitman's model needs at least two classes and one class of "
                              "size >= 2")
    for root in _roots(h):
        if root is None:
            continue
        t, a = root
        with np.errstate(all="ignore"):
            log_u = special.gammaln(t + 1.0) - special.gammaln(t + a) + a * np.log(population)
            uniques = float(np.exp(log_u))
        params = {"theta": t, "alpha": a}
        if not (np.isfinite(uniques) and 0.0 <= uniques <= population):
            return Estimate(None, f"Pitman's estimate {uniques!r} is outside [0, population]",
                            params)
        return Estimate(uniques, None, params)
    return Estimate(None, "Pitman's likelihood equations have no admissible root (theta > 0, "
                          "alpha < 1) from any starting point")
