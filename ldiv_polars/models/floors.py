"""Two shapes of suppression floor shared by the models whose verdict bounds one value's share
of a class (docs/anonymize.md, "Sound pruning with suppression"): the rows of a class that lie
in failing parts, however the class is split, when a passing part holds

- at most a share ``a`` of a value (:func:`cap_floor`: delta-disclosure's and beta-likeness's
  ``p <= a``): the value's count ``n`` is additive over the parts, at most ``a |C_i|`` in a
  passing part and at most ``|C_i|`` in a failing one, so ``n <= a P + F`` with
  ``P + F = |C|``: ``F >= (n - a |C|) / (1 - a)``;
- at least a share ``b > 0`` of a value (:func:`least_floor`: delta's ``p > q e^-delta``,
  npd-recursive's protected values): ``n >= b P``, so ``F >= |C| - n / b``.

The shares come from the reference distribution of the rows a specialization retains, which
the callers bound from the table's (:func:`retained_share_bounds`). Both floors are rounded
towards zero (:data:`WIDEN`), and the search decides with a margin of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.models.encoded import EncodedRows

WIDEN = 1e-12
"""Relative widening of every share bound (towards the weaker floor), far above the few ulps
of rounding in the shares and their products."""


def retained_share_bounds(q: np.ndarray, slack: float) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` bounds of a value's share among the retained rows, from its table share
    ``q`` when at most ``slack`` of the table's rows are removed: removing ``r`` rows, ``r_s``
    of them the value's, gives ``(q N - r_s) / (N - r)``, between ``(q - slack) / (1 - slack)``
    (``r_s = r = slack N``; clipped at 0: the value may vanish) and ``q / (1 - slack)``.

    >>> import numpy as np
    >>> [round(float(x[0]), 6) for x in retained_share_bounds(np.array([0.5]), 0.1)]
    [0.444444, 0.555556]
    """
    import numpy as np

    keep = 1.0 - slack
    low = np.maximum((q - slack) / keep, 0.0) * (1.0 - WIDEN) - WIDEN
    high = q / keep * (1.0 + WIDEN) + WIDEN
    return np.maximum(low, 0.0), high


def cap_floor(rows: EncodedRows, cap: np.ndarray) -> np.ndarray:
    """Per class of ``rows``: the rows lying in failing parts of any split when a passing
    part holds at most the share ``cap`` (one per row of ``rows``, already an upper bound) of
    that row's value — the largest ``(n - cap |C|) / (1 - cap)`` over the class's rows where
    ``cap < 1`` (0 elsewhere; float, >= 0).

    >>> import numpy as np
    >>> from ldiv_polars.models.encoded import EncodedRows
    >>> rows = EncodedRows(np.array([0, 0]), np.array([0, 1]), np.array([9, 1]), classes=1,
    ...                    n_sensitive=2)
    >>> [round(float(x), 6) for x in cap_floor(rows, np.array([0.5, 0.5]))]
    [8.0]
    """
    import numpy as np

    size = rows.size[rows.cls].astype(np.float64)
    usable = cap < 1.0 - 1e-9
    safe = np.where(usable, cap, 0.0)
    per_row = np.where(usable, (rows.n - safe * size) / (1.0 - safe), 0.0)
    return np.maximum(rows.class_max(per_row), 0.0)


def least_floor(count: np.ndarray, size: np.ndarray, least: np.ndarray | float) -> np.ndarray:
    """Per class: the rows lying in failing parts of any split when a passing part holds at
    least the share ``least`` (> 0, already a lower bound) of a value of which the class holds
    ``count`` rows: ``|C| - count / least``, clipped at 0.

    >>> import numpy as np
    >>> least_floor(np.array([1, 0]), np.array([10, 4]), 0.5).tolist()
    [8.0, 4.0]
    """
    import numpy as np

    return np.maximum(size.astype(np.float64) - count / least, 0.0)
