"""The classes of a cell-suppressed release under each counting semantics, and their verdicts.

A release assigns each key ``k`` a suppression *mask* (bit ``i`` set: QI ``i`` is suppressed,
written as null). The records of key ``k`` are then published as the *pattern* ``codes[k]`` with
the masked positions replaced by :data:`STAR` (-1). Two semantics say which records make up the
class a record is judged in:

- ``"value"`` (own value): a suppressed cell is a value of its own; a record's class is the
  records with exactly its pattern.
- ``"wildcard"`` (sdcMicro's): a suppressed cell stands for any value; a record's class is every
  record *compatible* with it, i.e. equal on every position where neither is suppressed. The
  class of each pattern is a sum over pairs of masks (:func:`compatible_sum`): for masks ``a``
  and ``b``, patterns match on the positions suppressed in neither.

The verdicts come from the models (:func:`class_verdicts`): the numpy verdicts of
:mod:`ldiv_polars.models.arrays` where they apply and are certain, else
:func:`~ldiv_polars.models.evaluate_classes`.

>>> import numpy as np
>>> codes = np.array([[0, 0], [0, 1], [1, 1]])
>>> pc, kp = patterns(codes, np.array([2, 2, 0]))  # keys 0 and 1 suppress QI 1
>>> pc.tolist(), kp.tolist()
([[0, -1], [1, 1]], [0, 0, 1])
>>> compatible_sum(pc, pc, np.array([[2], [1]])).ravel().tolist()  # wildcard class sizes
[2, 1]
>>> compatible_sum(np.array([[-1, 1]]), pc, np.array([[2], [1]])).ravel().tolist()
[3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain
from ldiv_polars.models.base import Model
from ldiv_polars.models.evaluate import evaluate_classes

Semantics = Literal["wildcard", "value"]
SEMANTICS = ("wildcard", "value")
STAR = -1
"""The code of a suppressed cell in a pattern."""
_CLASS = "__ldiv_class"


def check_semantics(semantics: str) -> Semantics:
    """``semantics`` if it is ``"wildcard"`` or ``"value"``; else
    :class:`~ldiv_polars.errors.InvalidParameterError`."""
    if semantics not in SEMANTICS:
        raise InvalidParameterError(
            f"semantics must be 'wildcard' or 'value', got {semantics!r}")
    return semantics  # type: ignore[return-value]


def mask_array(codes: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``codes`` with each row's masked positions set to :data:`STAR`."""
    q = codes.shape[1]
    bits = (masks[:, None].astype(np.int64) >> np.arange(q)) & 1
    return np.where(bits.astype(bool), STAR, codes)


def masks_of(pcodes: np.ndarray) -> np.ndarray:
    """The suppression mask of each pattern."""
    q = pcodes.shape[1]
    return ((pcodes == STAR).astype(np.int64) << np.arange(q)).sum(axis=1)


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, index of each input row among them) for small non-negative-or-STAR
    integer rows."""
    if rows.shape[0] == 0:
        return rows.copy(), np.zeros(0, dtype=np.int64)
    shifted = rows.astype(np.int64) + 1
    radix = shifted.max(axis=0) + 1
    flat = np.zeros(rows.shape[0], dtype=np.int64)
    for i in range(rows.shape[1]):
        flat = flat * int(radix[i]) + shifted[:, i]
    _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    return rows[first], inverse.astype(np.int64)


def patterns(codes: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct patterns, pattern index of each key) of the release ``masks``."""
    return unique_rows(mask_array(codes, masks))


def group_sum(index: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    """Rows of ``values`` (2-d) summed by ``index``."""
    out = np.zeros((groups, values.shape[1]), dtype=values.dtype)
    np.add.at(out, index, values)
    return out


def compatible_sum(query: np.ndarray, data: np.ndarray, hist: np.ndarray) -> np.ndarray:
    """For each query pattern, the sum of ``hist`` over the data patterns compatible with it
    (equal wherever neither is :data:`STAR`). One pass per pair of masks present."""
    out = np.zeros((query.shape[0], hist.shape[1]), dtype=hist.dtype)
    if not query.shape[0] or not data.shape[0]:
        return out
    qm, dm = masks_of(query), masks_of(data)
    q = query.shape[1]
    for a in np.unique(qm):
        qi = np.flatnonzero(qm == a)
        for b in np.unique(dm):
            di = np.flatnonzero(dm == b)
            cols = [i for i in range(q) if not ((int(a) | int(b)) >> i) & 1]
            if not cols:
                out[qi] += hist[di].sum(axis=0)
                continue
            both = np.concatenate([query[qi][:, cols], data[di][:, cols]])
            _, inv = unique_rows(both)
            qk, dk = inv[: qi.shape[0]], inv[qi.shape[0]:]
            sums = group_sum(dk, hist[di], int(inv.max()) + 1)
            out[qi] += sums[qk]
    return out


def class_histograms(pcodes: np.ndarray, phist: np.ndarray, semantics: Semantics
                     ) -> np.ndarray:
    """The sensitive histogram of the class each pattern's records are judged in."""
    return phist if semantics == "value" else compatible_sum(pcodes, pcodes, phist)


_DOMAINS: list[tuple[pl.DataFrame, SensitiveDomain]] = []


def _domain(s_values: pl.DataFrame) -> SensitiveDomain | None:
    """The :class:`SensitiveDomain` of ``s_values`` (the last one is kept: the callers ask
    for the same table's values again and again)."""
    if not s_values.width:
        return None
    if not _DOMAINS or _DOMAINS[0][0] is not s_values:
        _DOMAINS[:] = [(s_values, SensitiveDomain(s_values))]
    return _DOMAINS[0][1]


def class_verdicts(hists: np.ndarray, models: Sequence[Model], s_values: pl.DataFrame,
                   reference: np.ndarray) -> np.ndarray:
    """Whether each class (a row of ``hists``: counts per sensitive id, ids indexing the rows
    of ``s_values``) passes every model; ``reference`` is the table's count per sensitive id
    (the distribution models compare classes with). Empty classes pass."""
    classes = hists.shape[0]
    ok = np.ones(classes, dtype=bool)
    if not classes or not models:
        return ok
    cls, s = np.nonzero(hists)
    n = hists[cls, s]
    rows = EncodedRows(cls=cls, s=s, n=n, classes=classes, n_sensitive=hists.shape[1],
                       reference=reference, sizes=hists.sum(axis=1),
                       domain=_domain(s_values))
    rest: list[Model] = []
    unsure = np.zeros(classes, dtype=bool)
    for m in models:
        v = m.array_verdict(rows)
        if v is None:
            rest.append(m)
            continue
        if v.uncertain is not None and v.uncertain.any():
            rest.append(m)
            unsure |= v.uncertain
            ok &= v.passed | v.uncertain
        else:
            ok &= v.passed
    if rest:
        ok &= _engine_verdicts(cls, s, n, classes, rest, s_values, reference)
    return ok


def _engine_verdicts(cls: np.ndarray, s: np.ndarray, n: np.ndarray, classes: int,
                     models: Sequence[Model], s_values: pl.DataFrame, reference: np.ndarray
                     ) -> np.ndarray:
    """Verdicts from :func:`evaluate_classes` on the classes as a frequency set."""
    sens = tuple(s_values.columns)
    cols = [pl.Series(_CLASS, cls, dtype=pl.Int64)]
    cols += [s_values.get_column(c).gather(s) for c in sens]
    frame = pl.DataFrame([*cols, pl.Series(COUNT, n, dtype=pl.Int64)])
    ref = None
    if sens:
        ref = s_values.with_columns(pl.Series(COUNT, reference, dtype=pl.Int64)) \
            .filter(pl.col(COUNT) > 0)
    fs = FrequencySet(frame.lazy(), (_CLASS,), sens)
    for m in models:
        m.validate(fs)
    out = evaluate_classes(fs, models, reference=ref).select(
        _CLASS, pl.all_horizontal(pl.col(f"pass_{m.key}") for m in models).alias("ok")
    ).collect()
    ok = np.ones(classes, dtype=bool)
    ok[out.get_column(_CLASS).to_numpy()] = out.get_column("ok").to_numpy()
    return ok


def release_verdicts(codes: np.ndarray, masks: np.ndarray, key_hist: np.ndarray,
                     models: Sequence[Model], s_values: pl.DataFrame, reference: np.ndarray,
                     semantics: Semantics) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray]:
    """(patterns, pattern of each key, pattern histograms, pattern passes) of a release."""
    pcodes, kp = patterns(codes, masks)
    phist = group_sum(kp, key_hist, pcodes.shape[0])
    ok = class_verdicts(class_histograms(pcodes, phist, semantics), models, s_values,
                        reference)
    return pcodes, kp, phist, ok
