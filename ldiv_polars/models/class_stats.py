"""Per-class statistics of :class:`~ldiv_polars.models.encoded.EncodedRows` in one pass.

The array verdicts and floors of entropy and recursive (c,l)-diversity read, per class, the
number of values (rows), the largest count ``r1``, the sum of the ``j`` largest counts and
``sum n ln n``. In numpy that is a handful of passes over the rows (a ``bincount`` per sum, a
``reduceat`` per segmented maximum, a sort for ``j >= 3``); the optional compiled kernel
(``class_stats`` in ``_floors.c``) gives them in one pass. :func:`class_stats_numpy` is its
twin: the fallback without a compiler (or with ``LDIV_POLARS_NO_KERNEL=1``) and its parity
oracle. ``n ln n`` comes from one table (:func:`xlogx_table`, made by numpy) on both paths,
summed in row order as ``bincount`` sums: the two give the same floats.

>>> import numpy as np
>>> from ldiv_polars.models.encoded import EncodedRows
>>> rows = EncodedRows(np.array([0, 0, 0, 2]), np.array([0, 1, 2, 0]),
...                    np.array([3, 1, 2, 5]), classes=3, n_sensitive=3)
>>> st = class_stats(rows, 2, with_s=False)
>>> st["distinct"].tolist(), st["r1"].tolist(), st["top"].tolist()
([3, 0, 1], [3, 0, 5], [5, 0, 5])
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

try:
    from ldiv_polars.models import _floors as _kernel
except ImportError:  # built without a C compiler: the numpy twin
    _kernel = None

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.models.encoded import EncodedRows

KERNEL = _kernel is not None and not os.environ.get("LDIV_POLARS_NO_KERNEL")
"""Whether :func:`class_stats` runs the compiled kernel (tests set it to compare the paths)."""

MAX_J = 64
"""Most largest counts the kernel sums per class (more: the numpy twin)."""

XLOGX_MAX = 1 << 20
"""Largest count with an entry in :func:`xlogx_table` (8 MiB); a larger count: numpy's logs."""

_XLOGX: list[np.ndarray] = []


def xlogx_table(upto: int) -> np.ndarray | None:
    """``v ln v`` for ``v = 0 .. >= upto`` (0 at 0) as float64, computed once by numpy and grown
    by doubling; None when ``upto`` exceeds :data:`XLOGX_MAX`.

    >>> xlogx_table(3)[:3].tolist()
    [0.0, 0.0, 1.3862943611198906]
    """
    import numpy as np

    if upto > XLOGX_MAX:
        return None
    if not _XLOGX or _XLOGX[0].shape[0] <= upto:
        size = 1 << max(int(upto).bit_length(), 10)
        v = np.arange(size, dtype=np.float64)
        v[1:] *= np.log(v[1:])
        _XLOGX[:] = [v]
    return _XLOGX[0]


def class_stats(rows: EncodedRows, j: int, with_s: bool) -> dict[str, np.ndarray]:
    """Per class of ``rows``: ``distinct`` (rows), ``r1`` (largest count), ``top`` (sum of the
    ``j`` largest counts; all of them in a class with fewer), int64, and with ``with_s`` also
    ``s`` (``sum n ln n``, float64); 0 for a class without rows. From the kernel when built
    (:data:`KERNEL`), else (or when it declines: ``j`` beyond :data:`MAX_J`, a count beyond
    the table) from :func:`class_stats_numpy`, the same values."""
    import numpy as np

    table = xlogx_table(int(rows.n.max(initial=0))) if with_s else None
    if KERNEL and _kernel is not None and (table is not None or not with_s):
        out = {k: np.zeros(rows.classes, dtype=np.int64) for k in ("distinct", "r1", "top")}
        s = np.zeros(rows.classes if with_s else 0)
        rc = _kernel.class_stats(np.ascontiguousarray(rows.cls, dtype=np.int64),
                                 np.ascontiguousarray(rows.n, dtype=np.int64),
                                 table if table is not None else np.zeros(0), int(j),
                                 out["distinct"], out["r1"], out["top"], s)
        if rc == 0:
            if with_s:
                out["s"] = s
            return out
    return class_stats_numpy(rows, j, with_s)


def class_stats_numpy(rows: EncodedRows, j: int, with_s: bool) -> dict[str, np.ndarray]:
    """:func:`class_stats` in numpy (segmented over the class-grouped rows)."""
    import numpy as np

    n, cls, classes = rows.n, rows.cls, rows.classes
    distinct = rows.distinct
    starts = rows.starts()
    ids = cls[starts]
    r1 = np.zeros(classes, dtype=np.int64)
    if starts.shape[0]:
        r1[ids] = np.maximum.reduceat(n, starts)
    out = {"distinct": distinct, "r1": r1, "top": _top(n, cls, classes, starts, r1, j)}
    if with_s:
        table = xlogx_table(int(n.max(initial=0)))
        if table is not None:
            terms = table[n]
        else:
            nf = n.astype(np.float64)
            terms = nf * np.log(nf)
        out["s"] = np.bincount(cls, weights=terms, minlength=classes).astype(np.float64,
                                                                          copy=False)
    return out


def _top(n: np.ndarray, cls: np.ndarray, classes: int, starts: np.ndarray, r1: np.ndarray,
         j: int) -> np.ndarray:
    """Sum of the ``j`` largest counts per class (``r1`` the largest, ``starts`` each class's
    first row)."""
    import numpy as np

    ids = cls[starts]
    if j == 1:
        return r1
    if j == 2:
        # the second largest: the largest once one copy of the maximum is set aside
        is_max = n == r1[cls]
        ties = np.add.reduceat(is_max, starts) if starts.shape[0] else starts
        rest = np.maximum.reduceat(np.where(is_max, 0, n), starts) \
            if starts.shape[0] else starts
        v = r1.copy()
        v[ids] += np.where(ties >= 2, r1[ids], rest)
        return v
    # counts in decreasing order within each class (rows are grouped by class)
    big = int(n.max()) + 1 if n.shape[0] else 1
    order = np.argsort(cls * big + (big - 1 - n), kind="stable")
    ns = n[order]
    rank = np.arange(ns.shape[0]) - np.repeat(starts, np.diff(np.append(starts, ns.shape[0])))
    take = rank < j
    return np.bincount(cls[take], weights=ns[take], minlength=classes).astype(np.int64)
