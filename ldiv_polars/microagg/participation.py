"""Effective anonymity under uncertain participation (Rebollo-Monedero et al., Inform. Sci. 2017).

A survey designer fixes the microaggregation cells *before* respondents answer; respondent ``j``
takes part with probability ``pi_j``. With ``K_n`` the number of active records of a cell of
``n`` candidates, the cell is k-anonymous iff ``K_n >= k`` or ``K_n = 0``; its attained failure
is ``q_bar = P{0 < K_n < k}``. The **effective anonymity** ``n_min`` is the smallest ``n >= k``
with ``q_bar <= p_bar`` (Algorithm A of the paper).

>>> r = effective_anonymity(10, 0.75, 1e-4)
>>> r.n_min, f"{r.q_bar:.3g}", f"{r.u:.3g}", f"{r.r_bar:.3g}", f"{r.r_bar_active:.3g}"
(25, '4.31e-05', '8.8', '1.52e-05', '2.02e-05')
>>> f"{table_failure(10, 0.75, 1e-4, 10_000):.3g}"
'0.0171'

Numerics. The paper's line 6 evaluates ``q_bar = P_n(k-1) - p_n(0)`` where ``P_n(k-1)`` is
updated by subtraction from 1; that loses relative accuracy once ``q_bar`` is below ~1e-13
(the paper's Fig. 6: -0.84 % at 1e-17). The default ``method="recursion"`` runs the very same
recursion on the probability vector ``p_n = (P{K_n=0}, ..., P{K_n=k-1})`` but evaluates line 6
in the algebraically identical, cancellation-free form ``q_bar = sum_{j=1}^{k-1} p_n(j)``: every
operation then adds non-negative numbers, so the relative error stays at a few ulps for any
``p_bar`` down to the double-precision underflow range. ``method="paper"`` keeps the literal
subtraction (to reproduce Fig. 6) and ``method="binom"`` (constant ``pi`` only) evaluates
``q_bar(n)`` for blocks of ``n`` with :func:`scipy.stats.binom.pmf`, an independent reference.
The recursion costs ``O(n_min k)`` (a Python step per candidate, numpy over ``k``); for very
small ``pi`` (``n_min`` in the millions) ``method="binom"`` is faster: it starts its scan at the
Markov lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from scipy import stats

from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError

Method = Literal["recursion", "paper", "binom"]

__all__ = [
    "EffectiveAnonymity",
    "attained_failure",
    "effective_anonymity",
    "failure_vector",
    "leave_one_out_failure",
    "naive_failure",
    "pmf_vector",
    "table_failure",
]


@dataclass(frozen=True)
class EffectiveAnonymity:
    """Result of Algorithm A.

    Attributes:
        n_min: effective anonymity (the cell size to use instead of ``k``).
        q_bar: attained cell failure ``P{0 < K_n < k}`` at ``n_min``.
        u: expected number of unprotected (active) records given failure,
            ``E[K_n | 0 < K_n < k]`` (0 when ``q_bar = 0``; the paper leaves 0/0 open).
        r_bar: mean record failure ``(1/n) sum_j P{I_j = 1, 0 < K_n < k} = u q_bar / n``.
        r_bar_active: mean conditional record failure ``(1/n) sum_j P{0 < K_n < k | I_j = 1}``
            (``r_bar / pi`` for a constant ``pi``; the paper's r-bar-prime).
        t_bar: table failure ``1 - prod_c q_c`` over ``floor(N/n_min)`` cells (the last one of
            size ``n_min + N mod n_min``); ``None`` when ``N`` is not given.
        satisfied: ``q_bar <= p_bar`` (False only when the cap ``N`` stopped the search).
    """

    n_min: int
    q_bar: float
    u: float
    r_bar: float
    r_bar_active: float
    t_bar: float | None
    satisfied: bool
    k: int
    p_bar: float
    N: int | None

    def as_dict(self) -> dict[str, object]:
        """Plain dict (JSON-ready) of the result."""
        return asdict(self)


# --- validation ---------------------------------------------------------------------------------


SEARCH_K_MAX = 100_000
"""Largest k Algorithm A searches for: the search holds k probabilities and runs at least k
steps over them (n_min >= k), k^2 operations (10^10 at this bound). A larger k is refused
(:class:`~ldiv_polars.errors.InvalidParameterError`) unless it exceeds the table size ``N``:
then no cell can reach it, and the verdict (``satisfied`` False) has a closed form."""


def _check_k(k: object) -> int:
    return require_int_at_least("k", k, 1)


def _check_pi(pi: float | Sequence[float] | np.ndarray) -> float | np.ndarray:
    if isinstance(pi, (int, float)) and not isinstance(pi, bool):
        return require_real("pi", pi, low=0.0, high=1.0)
    try:
        arr = np.asarray(pi, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"pi must be a number or a sequence of numbers: {exc}") from exc
    if arr.ndim == 0:
        return require_real("pi", float(arr), low=0.0, high=1.0)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameterError(
            f"pi must be a number or a non-empty 1-d sequence, got shape {arr.shape}"
        )
    bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidParameterError(
            f"participation probabilities must lie in [0, 1]; pi[{i}] = {arr[i]!r} "
            f"({int(bad.sum())} bad)"
        )
    return arr


def _check_p_bar(p_bar: object) -> float:
    return require_real("p_bar", p_bar, low=0.0, high=1.0)


# --- the recursion ------------------------------------------------------------------------------


def _step(p: np.ndarray, pi_n: float) -> np.ndarray:
    """``p_n = pi_bar_n p_{n-1} + pi_n ShiftDown(p_{n-1})`` (truncated to k entries)."""
    out = (1.0 - pi_n) * p
    out[1:] += pi_n * p[:-1]
    return out


def pmf_vector(k: int, pi: float | Sequence[float] | np.ndarray, n: int) -> np.ndarray:
    """``(P{K_n = 0}, ..., P{K_n = k-1})`` for the first ``n`` candidates (Poisson-binomial).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when ``n`` exceeds the probabilities
    given.

    >>> pmf_vector(3, 0.5, 4).round(4).tolist()
    [0.0625, 0.25, 0.375]
    """
    k = _check_k(k)
    n = require_int_at_least("n", n, 0)
    pis = _check_pi(pi)
    if isinstance(pis, np.ndarray) and n > pis.size:
        raise InvalidParameterError(
            f"n = {n} exceeds the {pis.size} participation probabilities given"
        )
    p = np.zeros(k)
    p[0] = 1.0
    for j in range(n):
        p = _step(p, float(pis if not isinstance(pis, np.ndarray) else pis[j]))
    return p


def attained_failure(k: int, pi: float | Sequence[float] | np.ndarray, n: int) -> float:
    """``q_bar = P{0 < K_n < k}`` for a cell of the first ``n`` candidates.

    >>> attained_failure(2, 0.5, 2)   # 1 - 0.5**2 - 0.5**2
    0.5
    """
    p = pmf_vector(k, pi, n)
    return float(p[1:].sum())


def naive_failure(k: int, pi: float) -> float:
    """Failure of naive cells of exactly ``k`` records: ``1 - pi_bar^k - pi^k`` (Fig. 13(b)).

    >>> naive_failure(3, 0.5)   # 1 - 2**(1-3)
    0.75
    """
    k = _check_k(k)
    pi = require_real("pi", pi, low=0.0, high=1.0)
    return float(-math.expm1(math.log1p(-pi) * k) - pi**k) if pi < 1 else 0.0


@dataclass
class _Run:
    n: int
    p: np.ndarray | None  # (P{K_n = 0}, ..., P{K_n = k-1}); None for an unreachable k
    q_bar: float
    satisfied: bool
    weighted: float | None = None  # E[K_n 1{K_n < k}] when p is None


def _run_unreachable(k: int, pis: float | np.ndarray, cap: int) -> _Run:
    """Algorithm A when ``k > cap``: no cell of at most ``cap`` records reaches k active ones,
    so the search ends at ``n = cap`` unsatisfied, every active cell fails (``0 < K_n <= cap <
    k``): ``q_bar = P{K_n > 0} = 1 - prod_j (1 - pi_j)`` and ``E[K_n 1{K_n < k}] = E[K_n] =
    sum_j pi_j``, in closed form (no vector of k probabilities, no step per record)."""
    if isinstance(pis, np.ndarray):
        pis = pis[:cap]
        with np.errstate(divide="ignore"):  # a certain participant: log(0) = -inf
            log_none, mean = float(np.log1p(-pis).sum()), float(pis.sum())
    else:
        log_none = cap * math.log1p(-pis) if pis < 1 else -math.inf
        mean = cap * float(pis)
    q_bar = float(-math.expm1(log_none))
    return _Run(cap, None, q_bar, False, weighted=mean)


def _run_recursion(
    k: int, pis: float | np.ndarray, p_bar: float, cap: int | None, literal: bool
) -> _Run:
    const = not isinstance(pis, np.ndarray)
    p = np.zeros(k)
    p[0] = 1.0
    big_p = 1.0  # P_n(k-1), only used by the literal variant
    n = 0
    q_bar = 0.0
    while True:
        n += 1
        pi_n = float(pis) if const else float(pis[n - 1])  # type: ignore[index]
        if literal:
            big_p = big_p - pi_n * p[k - 1]
        p = _step(p, pi_n)
        q_bar = float(big_p - p[0]) if literal else float(p[1:].sum())
        if (n >= k and q_bar <= p_bar) or (cap is not None and n == cap):
            break
    return _Run(n, p, q_bar, q_bar <= p_bar)


def _binom_qbar(k: int, pi: float, ns: np.ndarray) -> np.ndarray:
    j = np.arange(1, k)
    return stats.binom.pmf(j[None, :], ns[:, None], pi).sum(axis=1) if k > 1 else np.zeros(ns.size)


def _run_binom(k: int, pi: float, p_bar: float, cap: int | None) -> _Run:
    # every n with q_bar(n) <= p_bar satisfies the Markov bound n >= k (p - pi_bar^k) / pi
    # (p <= q <= n pi / k + pi_bar^n), so the scan may start there: O(1) blocks even for tiny pi
    most = max(1, (1 << 24) // k)  # a block holds block x k probabilities: at most 2^24
    start, block = 1, min(256, most)
    if pi > 0 and p_bar < 1:
        bound = k * ((1.0 - p_bar) - (1.0 - pi) ** k) / pi
        start = max(1, int(math.floor(bound)) - 1)
        if cap is not None:
            start = min(start, cap)
    while True:
        stop = start + block if cap is None else min(start + block, cap + 1)
        ns = np.arange(start, stop)
        qb = _binom_qbar(k, pi, ns)
        ok = (ns >= k) & (qb <= p_bar)
        if cap is not None:
            ok |= ns == cap
        hit = np.flatnonzero(ok)
        if hit.size:
            n = int(ns[hit[0]])
            p = stats.binom.pmf(np.arange(k), n, pi)
            q = float(qb[hit[0]])
            return _Run(n, p, q, q <= p_bar)
        start, block = stop, min(block * 2, 1 << 16, most)


def leave_one_out_failure(k: int, pis: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-record conditional failure ``r_bar'_j = P{0 < K_n < k | I_j = 1}`` of one cell.

    Given ``I_j = 1``, the cell fails iff the other records contribute at most ``k - 2``
    participants. The leave-one-out Poisson-binomial is the convolution of prefix and suffix
    probability vectors (both truncated to ``k`` entries): ``O(n k^2)``, vectorized over records.

    >>> leave_one_out_failure(2, [0.5, 0.5]).round(6).tolist()   # other record absent
    [0.5, 0.5]
    """
    k = _check_k(k)
    arr = _check_pi(pis)
    if not isinstance(arr, np.ndarray):
        arr = np.array([arr])
    n = arr.size
    if k == 1:
        return np.zeros(n)
    pre = np.zeros((n, k))
    suf = np.zeros((n, k))
    p = np.zeros(k)
    p[0] = 1.0
    for j in range(n):  # prefix vectors: records before j
        pre[j] = p
        p = _step(p, float(arr[j]))
    p = np.zeros(k)
    p[0] = 1.0
    for j in range(n - 1, -1, -1):  # suffix vectors: records after j
        suf[j] = p
        p = _step(p, float(arr[j]))
    loo = np.zeros((n, k - 1))  # P{K_{-j} = 0..k-2}
    for a in range(k - 1):  # small loop over counts, vectorized over records
        loo[:, a:] += pre[:, a : a + 1] * suf[:, : k - 1 - a]
    return loo.sum(axis=1)


def failure_vector(k: int, pis: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-record failure ``r_bar_j = P{I_j = 1, 0 < K_n < k} = pi_j r_bar'_j`` of one cell."""
    arr = np.asarray(_check_pi(pis), dtype=np.float64).reshape(-1)
    return arr * leave_one_out_failure(k, arr)


def _metrics(k: int, run: _Run) -> tuple[float, float]:
    """``(u, r_bar)`` of a run: ``u = E[K_n | 0 < K_n < k]`` and ``r_bar = u q_bar / n``."""
    weighted = (run.weighted if run.p is None
                else float(np.dot(run.p, np.arange(k))))  # p_n^T (0, 1, ..., k-1)
    u = weighted / run.q_bar if run.q_bar > 0 else 0.0
    return u, weighted / run.n


def _table_failure_const(k: int, pi: float, n: int, q_bar: float, N: int, method: Method) -> float:
    cells = max(N // n, 1)
    last = N - (cells - 1) * n
    if method == "binom":
        q_last = float(_binom_qbar(k, pi, np.array([last]))[0])
    else:
        q_last = attained_failure(k, pi, last)
    log_t = (
        (cells - 1) * math.log1p(-q_bar) + math.log1p(-q_last)
        if max(q_bar, q_last) < 1
        else -math.inf
    )
    return float(-math.expm1(log_t))


def effective_anonymity(k: int, pi: float | Sequence[float] | np.ndarray, p_bar: float,
                        N: int | None = None, *, method: Method = "recursion"
                        ) -> EffectiveAnonymity:
    """Algorithm A: the effective anonymity ``n_min`` and the failure metrics at it.

    Args:
        k: the anonymity every cell must reach among its *active* records.
        pi: participation probability; a number (constant ``pi``, ``K_n ~ Bin(n, pi)``) or one
            probability per respondent in the predefined order (Poisson-binomial ``K_n``).
        p_bar: acceptable cell failure probability ``1 - p`` (``0 < p_bar <= 1``; 0 is allowed
            only with a cap ``N``).
        N: table size. Caps the search (``n_min <= N``; ``satisfied`` is False when the cap
            stops it) and, for a constant ``pi``, gives ``t_bar``. With a vector ``pi`` the cap
            is ``len(pi)`` and ``N`` must not exceed it.
        method: ``"recursion"`` (default, cancellation-free), ``"paper"`` (the literal line 6),
            or ``"binom"`` (constant pi: scipy's binomial pmf).

    A ``k`` above the cap (``N``, or the probabilities given) is a model that cannot hold: the
    result is the whole table as one cell, ``satisfied`` False, every metric in closed form
    (any ``method``). Otherwise ``k`` is at most :data:`SEARCH_K_MAX`.

    Raises:
        InvalidParameterError: an argument out of range, ``k > SEARCH_K_MAX`` not above the
            cap, or an unknown ``method``.

    >>> effective_anonymity(20, 0.5, 0.1).n_min
    48
    >>> effective_anonymity(10, 1.0, 1e-6).n_min   # certain participation: n_min = k
    10
    """
    k = _check_k(k)
    pis = _check_pi(pi)
    p_bar = _check_p_bar(p_bar)
    if method not in ("recursion", "paper", "binom"):
        raise InvalidParameterError(
            f"method must be 'recursion', 'paper' or 'binom', got {method!r}"
        )
    if N is not None:
        N = require_int_at_least("N", N, 1)
    run = _run(k, pis, p_bar, _search_cap(pis, p_bar, N, method), method)
    u, r_bar = _metrics(k, run)
    r_act, t_bar = _active_and_table_failure(k, pis, run, r_bar, N, method)
    return EffectiveAnonymity(n_min=run.n, q_bar=run.q_bar, u=u, r_bar=r_bar, r_bar_active=r_act,
                              t_bar=t_bar, satisfied=run.satisfied, k=k, p_bar=p_bar, N=N)


def _run(k: int, pis: float | np.ndarray, p_bar: float, cap: int | None, method: str) -> _Run:
    """Algorithm A's run: closed form for ``k`` above ``cap``, else the search by ``method``.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` for ``k > SEARCH_K_MAX``."""
    if cap is not None and k > cap:
        return _run_unreachable(k, pis, cap)
    if k > SEARCH_K_MAX:
        raise InvalidParameterError(
            f"k = {k} is above {SEARCH_K_MAX}, the largest k Algorithm A searches for (it "
            f"holds k probabilities over at least k steps); a table of N < k records is a "
            f"verdict, no search")
    if method == "binom":
        return _run_binom(k, float(pis), p_bar, cap)  # type: ignore[arg-type]
    return _run_recursion(k, pis, p_bar, cap, literal=(method == "paper"))


def _search_cap(pis: float | np.ndarray, p_bar: float, N: int | None, method: str) -> int | None:
    """The largest ``n`` Algorithm A may try: ``N`` (None: unbounded) for a constant ``pi``,
    else ``N`` or the number of probabilities given. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` for an unattainable ``p_bar = 0``
    without a cap, ``method="binom"`` with a vector ``pi`` and ``N`` beyond the vector."""
    if not isinstance(pis, np.ndarray):
        if N is None and p_bar == 0.0 and 0.0 < pis < 1.0:
            raise InvalidParameterError(
                "p_bar = 0 can never be attained when 0 < pi < 1; give p_bar > 0 or a cap N"
            )
        return N
    if method == "binom":
        raise InvalidParameterError("method='binom' needs a constant pi")
    if N is not None and N > pis.size:
        raise InvalidParameterError(
            f"N = {N} exceeds the {pis.size} participation probabilities given"
        )
    return N if N is not None else pis.size


def _active_and_table_failure(k: int, pis: float | np.ndarray, run: _Run, r_bar: float,
                              N: int | None, method: str) -> tuple[float, float | None]:
    """``(r_bar_active, t_bar)`` at the run's ``n_min``: the failure rate seen by an active
    record, and the table's failure probability (None for a constant ``pi`` without ``N``)."""
    t_bar: float | None = None
    if run.p is None:  # k above the table: one cell of every record, each active one fails
        none_active = not isinstance(pis, np.ndarray) and pis == 0
        return (0.0 if none_active else 1.0), run.q_bar
    if not isinstance(pis, np.ndarray):
        pic = float(pis)
        r_act = r_bar / pic if pic > 0 else 0.0
        if N is not None:
            t_bar = _table_failure_const(k, pic, run.n, run.q_bar, N, method)
        return r_act, t_bar
    r_act = float(leave_one_out_failure(k, pis[: run.n]).mean())
    total = N if N is not None else pis.size
    return r_act, _table_failure_blocks(k, pis[:total], run.n)


def _table_failure_blocks(k: int, pis: np.ndarray, n: int) -> float:
    """``1 - prod_c q_c`` over consecutive blocks of ``n`` records (the last absorbs the rest)."""
    total = pis.size
    cells = max(total // n, 1)
    log_t = 0.0
    for c in range(cells):  # loop over cells (small state), each cell vectorized over k
        lo = c * n
        hi = total if c == cells - 1 else lo + n
        qb = attained_failure(k, pis[lo:hi], hi - lo)
        if qb >= 1.0:
            return 1.0
        log_t += math.log1p(-qb)
    return float(-math.expm1(log_t))


def table_failure(
    k: int, pi: float, p_bar: float, N: int, *, method: Method = "recursion"
) -> float:
    """Table failure ``t_bar = 1 - q^(|C|-1) q'`` for ``N`` records in cells of ``n_min``.

    ``|C| = floor(N / n_min)``; the last cell has ``n' = n_min + N mod n_min`` records and
    success ``q'`` (Algorithm A with ``N = n'`` and ``p_bar = 0``). Evaluated in log space.

    >>> f"{table_failure(50, 0.75, 1e-6, 1_000_000):.3g}"
    '0.00748'
    """
    r = effective_anonymity(k, pi, p_bar, N, method=method)
    assert r.t_bar is not None
    return r.t_bar
