"""Deprecated module: the array verdicts now live in their models
(:meth:`Model.array_verdict <ldiv_polars.models.Model.array_verdict>`), the encoded rows in
:mod:`ldiv_polars.models.encoded`. Kept as aliases for a release.

>>> import numpy as np
>>> from ldiv_polars.models import KAnonymity
>>> rows = EncodedRows(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([2, 1, 3]), 2, 2)
>>> supported(KAnonymity(3)), verdict(KAnonymity(3), rows).passed.tolist()
(True, [True, True])
"""

from __future__ import annotations

import numpy as np

from ldiv_polars.models.base import Model
from ldiv_polars.models.encoded import ClassVerdict, EncodedRows

__all__ = ["ClassVerdict", "EncodedRows", "supported", "verdict"]

_EMPTY = EncodedRows(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64),
                     classes=0, n_sensitive=1)


def supported(model: Model) -> bool:
    """Whether ``model`` has an array form (deprecated: call ``model.array_verdict``)."""
    return model.array_verdict(_EMPTY) is not None


def verdict(model: Model, rows: EncodedRows) -> ClassVerdict:
    """``model.array_verdict(rows)``; TypeError when the model has none (deprecated)."""
    v = model.array_verdict(rows)
    if v is None:
        raise TypeError(f"no array verdict for {model.describe()}")
    return v
