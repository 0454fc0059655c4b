"""Monte Carlo participation simulator (the paper's Table II check), vectorized with numpy.

Each simulated cell draws independent Bernoulli participation ``I_j ~ Ber(pi_j)`` for its ``n``
candidates; the estimates are the fraction of cells with ``0 < K < k`` (``q_bar``), the mean of
``K`` over failing cells (``u``) and the mean of ``K 1{fail}`` per record (``r_bar``), each with
its standard error.

>>> s = simulate_participation(20, 0.5, 48, cells=100_000, seed=1)
>>> abs(s.q_bar - 0.09671) < 4 * s.q_bar_se
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.microagg.participation import _check_pi

__all__ = ["ParticipationSimulation", "simulate_participation"]

_CHUNK_ELEMENTS = 4_000_000  # Bernoulli draws per chunk (bounded memory)


@dataclass(frozen=True)
class ParticipationSimulation:
    """Empirical failure metrics of ``cells`` simulated cells of ``n`` candidates."""

    cells: int
    n: int
    k: int
    q_bar: float
    u: float
    r_bar: float
    q_bar_se: float
    u_se: float
    r_bar_se: float

    def as_dict(self) -> dict[str, float | int]:
        """Every field as a JSON-ready dict."""
        return asdict(self)


def _active_counts(pis: float | np.ndarray, n: int, cells: int,
                   rng: np.random.Generator) -> np.ndarray:
    """The number of active candidates in each of ``cells`` simulated cells of ``n``
    (``Binomial(n, pi)`` for a constant ``pi``; Bernoulli draws in bounded chunks for one
    probability per position). Raises :class:`InvalidParameterError` when that vector's
    length is not ``n``."""
    if not isinstance(pis, np.ndarray):
        return rng.binomial(n, float(pis), size=cells)
    if pis.size != n:
        raise InvalidParameterError(
            f"pi has {pis.size} entries but the cell has n = {n} candidates"
        )
    counts = np.empty(cells, dtype=np.int64)
    step = max(1, _CHUNK_ELEMENTS // n)
    for lo in range(0, cells, step):  # loop over chunks of cells, not over rows
        hi = min(cells, lo + step)
        counts[lo:hi] = (rng.random((hi - lo, n)) < pis[None, :]).sum(axis=1)
    return counts


def simulate_participation(
    k: int,
    pi: float | Sequence[float] | np.ndarray,
    n: int,
    *,
    cells: int = 100_000,
    seed: int | np.random.Generator | None = 0,
) -> ParticipationSimulation:
    """Simulate ``cells`` independent cells of ``n`` candidates with participation ``pi``.

    ``pi`` is a constant or one probability per candidate position (length ``n``). With a
    constant ``pi`` the active count is drawn as ``Binomial(n, pi)`` (the sum of the Bernoulli
    draws, same law); with a vector the Bernoulli matrix is drawn in bounded chunks.
    """
    k = require_int_at_least("k", k, 1)
    n = require_int_at_least("n", n, 1)
    cells = require_int_at_least("cells", cells, 1)
    pis = _check_pi(pi)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    counts = _active_counts(pis, n, cells, rng)
    fail = (counts > 0) & (counts < k)
    q_bar = float(fail.mean())
    fail_counts = counts[fail].astype(np.float64)
    u = float(fail_counts.mean()) if fail_counts.size else 0.0
    u_se = (
        float(fail_counts.std(ddof=1) / np.sqrt(fail_counts.size)) if fail_counts.size > 1 else 0.0
    )
    per_record = np.where(fail, counts, 0) / n
    r_bar = float(per_record.mean())
    return ParticipationSimulation(
        cells=cells,
        n=n,
        k=k,
        q_bar=q_bar,
        u=u,
        r_bar=r_bar,
        q_bar_se=float(np.sqrt(max(q_bar * (1 - q_bar), 1e-300) / cells)),
        u_se=u_se,
        r_bar_se=float(per_record.std(ddof=1) / np.sqrt(cells)) if cells > 1 else 0.0,
    )
