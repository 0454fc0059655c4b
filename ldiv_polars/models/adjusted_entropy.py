"""The adjusted entropy of Machanavajjhala et al. (Def 4.5, Algorithm 1) on encoded rows
(numpy, for search loops) and in high precision (the exact step of the classes within rounding
of the threshold). The model is
:class:`~ldiv_polars.models.EntropyLDiversityDontCare`; its frame form computes the same.

Algorithm 1 in closed form: the don't-care counts ``phi`` are taken in ascending order and
*fixed* while ``ln(phi) < M`` (``M = B / A``, the log-entropic mean of the fixed counts:
``A = sum n``, ``B = sum n ln n``, starting from the counts not in Y); the ``K`` others are
lowered to ``v = exp(M)``. Then ``H = ln T - (B + K v M) / T`` with ``T = A + K v``. A class
with no count outside Y has no adjusted entropy (it passes). Whether a count tied with the
mean is fixed does not change ``H`` (fixing a count equal to ``exp(M)`` leaves ``M`` as it is).

>>> from decimal import Decimal, localcontext
>>> with localcontext() as ctx:  # the paper's worked example: 1.77297 nats
...     ctx.prec = 30
...     round(float(adjusted_entropy([11, 10, 3, 2], [3, 4])), 5)
1.77297
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ldiv_polars.models.encoded import EncodedRows
from ldiv_polars.models.exact import EPS, ln, sign, ulps


def adjusted_entropy_band(distinct: object, log_size: object) -> object:
    """Rounding bound of a float adjusted entropy and of ``ln l`` (four times the entropy's,
    :func:`~ldiv_polars.models.l_diversity.entropy_band`: the mean also passes through an
    exp): ``256 eps (d + 4) (1 + ln N)``."""
    return 256 * EPS * (distinct + 4) * (1 + log_size)


def adjusted_entropy_rows(rows: EncodedRows, is_y: np.ndarray, not_y: np.ndarray
                          ) -> np.ndarray:
    """The adjusted entropy (nats) of every class of ``rows``, NaN where it is undefined (no
    count outside Y, or no rows); ``is_y`` / ``not_y`` flag each sensitive id (one of the
    two; a null value is not in Y)."""
    n = rows.n.astype(np.float64)
    nlogn = n * np.log(n)
    base = not_y[rows.s]
    a0 = np.bincount(rows.cls[base], weights=n[base], minlength=rows.classes)
    b0 = np.bincount(rows.cls[base], weights=nlogn[base], minlength=rows.classes)
    y = np.flatnonzero(is_y[rows.s])
    fa, fb, k = _fixed(rows.cls[y], n[y], nlogn[y], a0, b0, rows.classes)
    a, b = a0 + fa, b0 + fb
    with np.errstate(divide="ignore", invalid="ignore"):
        m = b / a
        v = np.exp(m)
        t = a + k * v
        h = np.log(t) - (b + k * v * m) / t
    return np.where(a0 > 0, h, np.nan)


def settle_uniform(rows: EncodedRows, is_y: np.ndarray, not_y: np.ndarray,
                   passed: np.ndarray, uncertain: np.ndarray, l: Fraction,
                   tol: Fraction) -> None:
    """Decide in place the uncertain classes whose adjusted entropy is ``ln m`` exactly: the
    counts outside Y all equal ``c`` and every don't-care count at least ``c`` (none is fixed,
    all are lowered to ``exp(ln c) = c``), ``m`` the number of their values. Such a class
    passes iff ``ln m >= ln l - tol``: iff ``l / m <= e^tol``, which ``1 + tol`` and
    ``1 + tol + tol^2`` bracket; a class between the two stays uncertain."""
    which = np.flatnonzero(uncertain)
    if not which.shape[0]:
        return
    n = rows.n.astype(np.float64)
    base, y = not_y[rows.s], is_y[rows.s]
    hi = rows.class_max(np.where(base, n, 0.0))
    lo = -rows.class_max(np.where(base, -n, -np.inf), empty=-np.inf)
    y_lo = -rows.class_max(np.where(y, -n, -np.inf), empty=-np.inf)
    m = np.bincount(rows.cls[base | y], minlength=rows.classes)
    for c in which[(hi[which] > 0) & (lo[which] == hi[which]) & (y_lo[which] >= hi[which])]:
        ratio = l / int(m[c])
        if ratio <= 1 + tol or ratio > 1 + tol + tol * tol:
            passed[c] = ratio <= 1 + tol
            uncertain[c] = False


def _fixed(cls: np.ndarray, phi: np.ndarray, phi_log: np.ndarray, a0: np.ndarray,
           b0: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per class: the sums ``A``, ``B`` of the fixed don't-care counts and the number ``K``
    of the others (the loop of Algorithm 1 as running sums over the ascending counts)."""
    order = np.lexsort((phi, cls))
    cls, phi, phi_log = cls[order], phi[order], phi_log[order]
    first = np.ones(cls.shape[0], dtype=bool)
    first[1:] = cls[1:] != cls[:-1]
    lens = np.diff(np.append(np.flatnonzero(first), cls.shape[0]))

    def before(x: np.ndarray) -> np.ndarray:  # sum of the class's earlier entries
        c = np.cumsum(x)
        return c - x - np.repeat((c - x)[first], lens)

    a = a0[cls] + before(phi)
    with np.errstate(divide="ignore", invalid="ignore"):
        fix = (a > 0) & (np.log(phi) * a < b0[cls] + before(phi_log))
    broken = (~fix).astype(np.int64)
    fixed = (np.cumsum(broken) - np.repeat((np.cumsum(broken) - broken)[first], lens)) == 0
    fa = np.bincount(cls[fixed], weights=phi[fixed], minlength=classes)
    fb = np.bincount(cls[fixed], weights=phi_log[fixed], minlength=classes)
    k = np.bincount(cls[~fixed], minlength=classes).astype(np.float64)
    return fa, fb, k


def adjusted_entropy(phis: Sequence[int], counts: Sequence[int]) -> Decimal | None:
    """The adjusted entropy of a class with don't-care counts ``phis`` and other counts
    ``counts`` at the current :mod:`decimal` precision (None: no count outside Y)."""
    a = sum(Decimal(c) for c in counts if c > 0)
    if a == 0:
        return None
    b = sum(Decimal(c) * Decimal(c).ln() for c in counts if c > 0)
    k = 0
    for phi in sorted(int(p) for p in phis):
        if k == 0 and Decimal(phi).ln() * a < b:
            a += phi
            b += Decimal(phi) * Decimal(phi).ln()
        else:
            k += 1
    m = b / a
    v = m.exp()
    t = a + k * v
    return t.ln() - (b + k * v * m) / t


def adjusted_entropy_at_least(phis: Sequence[int], counts: Sequence[int], l: Fraction,
                              tol: Fraction) -> bool:
    """Whether the adjusted entropy is at least ``ln l - tol`` (a class with no count outside
    Y passes), decided in :mod:`decimal` arithmetic at increasing precision."""
    size = sum(int(c) for c in (*phis, *counts))

    def approx() -> tuple[Decimal, Decimal]:
        h = adjusted_entropy(phis, counts)
        assert h is not None
        thr = ln(l) - Decimal(tol.numerator) / Decimal(tol.denominator)
        scale = (1 + Decimal(size).ln()) * (Decimal(len(phis) + len(counts)) + 4)
        return h - thr, ulps(40) * scale * scale

    if adjusted_entropy(phis, counts) is None:
        return True
    return sign(approx) >= 0
