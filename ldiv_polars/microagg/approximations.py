"""Bounds and approximations of the effective anonymity ``n_min`` (constant ``pi``, §VI.C).

All logarithms are natural. ``a = (pi_bar / pi) p_bar`` and ``b = pi_bar`` for ``k = 2``, where
``n_min = min{n >= 2 : n b^n <= a}`` exactly (``q_bar = n pi_bar^(n-1) pi``).

>>> round(kl_approximation(10, 0.5, 1e-6), 2), round(quadratic_approximation(10, 0.5, 1e-6), 2)
(55.39, 58.05)
>>> round(quadratic_approximation_simple(10, 0.5, 1e-6), 2)
54.12
>>> round(log_approximation(10, 0.5, 1e-6), 2)
49.37
>>> lambert_w_k2(0.5, 1e-6), effective_anonymity_k2(0.5, 1e-6)  # doctest: +ELLIPSIS
(24.549..., 25)
"""

from __future__ import annotations

import math

from scipy import optimize, special

from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError

__all__ = [
    "asymptotic_table_failure",
    "effective_anonymity_k2",
    "k2_log_approximations",
    "kl_approximation",
    "lambert_w_k2",
    "limit_approximation",
    "log_approximation",
    "markov_bound",
    "quadratic_approximation",
    "quadratic_approximation_simple",
]


def _open_pi(pi: float) -> float:
    return require_real("pi", pi, low=0.0, high=1.0, low_open=True, high_open=True)


def _open_pbar(p_bar: float) -> float:
    return require_real("p_bar", p_bar, low=0.0, high=1.0, low_open=True, high_open=True)


def markov_bound(k: int, pi: float, p_bar: float) -> float:
    """Markov lower bound on ``n_min``: ``n >= k (p - pi_bar^k) / pi`` (§VI.A).

    From ``p <= q <= (n/k) pi + pi_bar^n`` and ``n >= k``. ``n_min >= max(k, ceil(bound))``.

    >>> round(markov_bound(10, 0.5, 1e-4), 3)
    19.978
    """
    k = require_int_at_least("k", k, 1)
    pi = require_real("pi", pi, low=0.0, high=1.0, low_open=True)
    p_bar = require_real("p_bar", p_bar, low=0.0, high=1.0)
    return k * ((1.0 - p_bar) - (1.0 - pi) ** k) / pi


def _k2_ab(pi: float, p_bar: float) -> tuple[float, float]:
    pi = _open_pi(pi)
    p_bar = _open_pbar(p_bar)
    return (1.0 - pi) / pi * p_bar, 1.0 - pi


def lambert_w_k2(pi: float, p_bar: float) -> float:
    """Real solution ``x`` of ``x b^x = a`` on the lower Lambert-W branch: ``W_-1(a ln b) / ln b``.

    ``n_min = max(2, ceil(x))`` for ``k = 2`` (see :func:`effective_anonymity_k2`). When
    ``a ln b < -1/e`` the equation has no real root, ``n b^n <= a`` for every ``n`` and the
    function returns 2.0.
    """
    a, b = _k2_ab(pi, p_bar)
    z = a * math.log(b)
    if z < -math.exp(-1.0):
        return 2.0
    w = special.lambertw(z, k=-1)
    return float(w.real) / math.log(b)


def effective_anonymity_k2(pi: float, p_bar: float) -> int:
    """Closed-form ``n_min`` for ``k = 2`` via Lambert W (equals Algorithm A's result).

    ``q_bar(n) = n pi pi_bar^(n-1)`` rises up to ``n = -1/ln pi_bar`` and then falls, so
    ``n_min = 2`` when ``q_bar(2) <= p_bar`` and otherwise the ceiling of the upper root.

    >>> effective_anonymity_k2(0.75, 1e-4)
    10
    """
    a, b = _k2_ab(pi, p_bar)
    if 2.0 * pi * b <= p_bar:
        return 2
    x = lambert_w_k2(pi, p_bar)
    n = max(2, math.ceil(x))
    # W is accurate to a few ulps; settle an integer root on the exact criterion
    while n > 2 and (n - 1) * b ** (n - 2) * pi <= p_bar:
        n -= 1
    while n * b ** (n - 1) * pi > p_bar:
        n += 1
    return n


def k2_log_approximations(pi: float, p_bar: float) -> tuple[float, float, float]:
    """The k = 2 logarithmic approximations ``(n0, n1, n2)`` of §VI.C.3.

    ``n0 = ln a / ln b``; ``n1 = (1 - ln(n0)/(1 + ln a)) n0`` (first-order Taylor of ln x;
    its ceiling is an upper bound per the paper); ``n2 = (2 + ln a + sqrt((1 + ln a)^2 +
    2 ln n0)) n0`` (second order; optimistic but more often exact).
    """
    a, b = _k2_ab(pi, p_bar)
    la = math.log(a)
    n0 = la / math.log(b)
    n1 = (1.0 - math.log(n0) / (1.0 + la)) * n0
    disc = (1.0 + la) ** 2 + 2.0 * math.log(n0)
    n2 = (2.0 + la + math.sqrt(disc)) * n0 if disc >= 0 else math.nan
    return n0, n1, n2


def _kl(x: float, pi: float) -> float:
    """Binary KL divergence ``D(x || pi)`` in nats."""
    return float(special.rel_entr(x, pi) + special.rel_entr(1.0 - x, 1.0 - pi))


def kl_approximation(k: int, pi: float, p_bar: float) -> float:
    """Heuristic ``n1``: root of ``n D((k-1)/n || pi) = -ln p_bar`` (Brent's method, ``brentq``).

    The root is sought on ``n >= (k-1)/pi``, where ``(k-1)/n <= pi``.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the equation has no root below
    1e15.
    """
    k = require_int_at_least("k", k, 1)
    pi = _open_pi(pi)
    p_bar = _open_pbar(p_bar)
    target = -math.log(p_bar)

    def f(n: float) -> float:
        return n * _kl((k - 1) / n, pi) - target

    lo = max((k - 1) / pi, 1e-12)
    hi = max(2.0 * lo, 1.0)
    while f(hi) < 0:
        hi *= 2.0
        if hi > 1e15:  # pragma: no cover - only for absurd parameters
            raise InvalidParameterError("the KL equation has no root below 1e15")
    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-14))


def quadratic_approximation(k: int, pi: float, p_bar: float) -> float:
    """``n1' = [k-1 + c + sqrt(c (2(k-1) + c))] / pi`` with ``c = -pi_bar ln p_bar``."""
    k = require_int_at_least("k", k, 1)
    pi, p_bar = _open_pi(pi), _open_pbar(p_bar)
    c = -(1.0 - pi) * math.log(p_bar)
    return (k - 1 + c + math.sqrt(c * (2 * (k - 1) + c))) / pi


def quadratic_approximation_simple(k: int, pi: float, p_bar: float) -> float:
    """``n1'' = (k-1 + sqrt(-2 pi_bar ln p_bar) sqrt(k-1) - pi_bar ln p_bar) / pi``."""
    k = require_int_at_least("k", k, 1)
    pi, p_bar = _open_pi(pi), _open_pbar(p_bar)
    c = -(1.0 - pi) * math.log(p_bar)
    return (k - 1 + math.sqrt(2.0 * c) * math.sqrt(k - 1) + c) / pi


def log_approximation(k: int, pi: float, p_bar: float) -> float:
    """``n2`` from ``D(kappa || pi) ~ -ln pi_bar (1 - kappa/pi)^2`` (§VI.C.4)."""
    k = require_int_at_least("k", k, 1)
    pi, p_bar = _open_pi(pi), _open_pbar(p_bar)
    lb, lp = math.log(1.0 - pi), math.log(p_bar)
    disc = pi * lp * (pi * lp + 4 * (k - 1) * lb)
    return (2 * (k - 1) * lb + pi * lp - math.sqrt(disc)) / (2 * pi * lb)


def limit_approximation(pi: float, p_bar: float) -> float:
    """The pure limit ``n_min ~ ln p_bar / ln pi_bar`` (the paper: "of little practical use")."""
    pi, p_bar = _open_pi(pi), _open_pbar(p_bar)
    return math.log(p_bar) / math.log(1.0 - pi)


def asymptotic_table_failure(N: int, n_min: int, q_bar: float) -> float:
    """``t_bar ~ 1 - exp(-(N / n_min) q_bar)`` (§VI.C)."""
    N = require_int_at_least("N", N, 1)
    n_min = require_int_at_least("n_min", n_min, 1)
    q_bar = require_real("q_bar", q_bar, low=0.0, high=1.0)
    return float(-math.expm1(-(N / n_min) * q_bar))
