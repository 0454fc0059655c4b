"""SUDA2: minimal sample uniques (MSUs), SUDA and DIS-SUDA scores and attribute contributions
(Elliot, Manning, Mayes, Gurd & Bane, *SUDA: a program for detecting special uniques*, 2005;
Manning, Haglin & Keane, Data Min Knowl Disc 16:165, 2008; sdcMicro's ``suda2``).

A set ``S`` of quasi-identifiers is a *sample unique* of a record when no other record shares
its values on ``S``, and a *minimal* sample unique when no proper subset of ``S`` is one. Only
records unique on all the QIs have MSUs. With ``ATT`` quasi-identifiers, an MSU of size ``k``
scores ``(ATT - k)!`` (sdcMicro's ``original_scores = TRUE``: Elliot et al.'s
``prod_{i=k}^{M} (ATT - i)`` with ``M = ATT - 1``; a smaller ``max_size`` only limits the
search, it does not rescale the scores, which would multiply every score by one constant). A
record's SUDA score is the sum over its MSUs; its contribution of an attribute is the share of
its score from MSUs containing the attribute. DIS-SUDA (sdcMicro's formula, from the IHSN code):
with ``U`` sample uniques, ``P`` records in classes of size 2 and the sampling fraction ``f``,
``dis = U f / (U f + P (1 - f))``, ``Q = 1 + (8 - ATT) / 20``, ``A = sum over scored records of
score^-Q``, and a record's DIS-SUDA score is ``1 / (1 + (U / dis - U) / (score^Q A))``.

Computed on the table of distinct keys: level by level (subset size ``k = 1..max_size``), the
count of every ``k``-subset's projection over the keys (a windowed sum of the counts), and an
MSU test against the ``k - 1`` subsets of the level before. Cost: ``keys x sum_{k <= max_size}
C(ATT, k)`` cells (:func:`suda_cost`), bounded by ``budget``.

>>> import polars as pl
>>> df = pl.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
>>> r = suda2(df, ["a", "b", "c"])
>>> r.table.sort("a", "b").select("a", "b", "c", "score").rows()
[(1, 0, 0, 2.0), (1, 3, 6, 4.0), (2, 0, 0, 2.0)]
>>> r.attribute_contributions
{'a': 50.0, 'b': 37.5, 'c': 37.5}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.inputs import TableLike
from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.risk.budget import DEFAULT_BUDGET, check_budget
from ldiv_polars.risk.tables import class_size_table

SCORE = "score"
DIS_SCORE = "dis_score"
MSU_PREFIX = "msu_"
"""Columns ``msu_1 .. msu_M``: a key's number of MSUs of each size."""
CONTRIBUTION_PREFIX = "contribution_"
"""Columns ``contribution_<qi>``: the share of a key's score from MSUs containing the QI."""


@dataclass(frozen=True)
class Suda:
    """SUDA2 figures (see the module). ``table`` holds one row per distinct key: the key
    columns, ``n``, ``score``, ``dis_score``, ``msu_1..msu_M`` and ``contribution_<qi>``; a
    record's figures are its key's. ``attribute_contributions`` is sdcMicro's per-attribute
    share of the total score, in percent (the shares add up to more than 100 when MSUs have
    several attributes)."""

    qi: list[str]
    max_size: int
    dis_fraction: float
    records: int
    sample_uniques: int
    records_with_msus: int
    msus_by_size: dict[int, int]
    total_score: float
    max_score: float
    attribute_contributions: dict[str, float]
    table: pl.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, object]:
        """Every figure but the per-key table."""
        out = asdict(self)
        out.pop("table")
        return out


def suda_cost(keys: int, attributes: int, max_size: int) -> int:
    """Cells SUDA2 computes: ``keys x`` the number of QI subsets of size ``<= max_size``."""
    return keys * sum(math.comb(attributes, k) for k in range(1, max_size + 1))


def msu_weight(attributes: int, size: int) -> float:
    """Score of one MSU of ``size`` attributes among ``attributes``: ``(attributes - size)!``."""
    return float(math.factorial(attributes - size))


def _codes(table: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """The keys as dense integer codes ``c0..`` (nulls a code of their own) and the count."""
    return table.select(
        *[pl.col(k).rank("dense").fill_null(0).cast(pl.Int64).alias(f"c{i}")
          for i, k in enumerate(keys)],
        pl.col(COUNT).cast(pl.Int64),
    )


def _unique_on(codes: pl.DataFrame, subsets: list[tuple[int, ...]], keep: pl.Series
               ) -> np.ndarray:
    """``(kept keys x subsets)`` booleans: the key is the only record with its values on the
    subset (its projection's count is 1)."""
    exprs = [(pl.col(COUNT).sum().over([f"c{i}" for i in s]) == 1).alias(f"s{j}")
             for j, s in enumerate(subsets)]
    return codes.with_columns(exprs).filter(keep).select(
        [f"s{j}" for j in range(len(subsets))]).to_numpy()


def _msus(codes: pl.DataFrame, m: int, max_size: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For the sample-unique keys: their row indices, MSU counts by size, scores and raw
    per-attribute contributions."""
    keep = codes[COUNT] == 1
    rows = np.nonzero(keep.to_numpy())[0]
    counts = np.zeros((rows.size, max_size), dtype=np.int64)
    score = np.zeros(rows.size)
    contrib = np.zeros((rows.size, m))
    prev: dict[tuple[int, ...], np.ndarray] = {}
    for size in range(1, max_size + 1):
        subsets = list(combinations(range(m), size))
        uniq = _unique_on(codes, subsets, keep) if rows.size else np.zeros((0, len(subsets)), bool)
        w = msu_weight(m, size)
        level: dict[tuple[int, ...], np.ndarray] = {}
        for j, s in enumerate(subsets):
            u = uniq[:, j]
            level[s] = u
            msu = u.copy()
            if size > 1:
                for drop in range(size):
                    msu &= ~prev[s[:drop] + s[drop + 1:]]
            counts[:, size - 1] += msu
            score += w * msu
            for i in s:
                contrib[:, i] += w * msu
        prev = level
    return rows, counts, score, contrib


def _dis(score: np.ndarray, uniques: int, pair_records: int, m: int, fraction: float
         ) -> np.ndarray:
    """DIS-SUDA scores of the scored keys (sdcMicro's formula, see the module)."""
    scored = score > 0
    if not scored.any():
        return np.zeros_like(score)
    dis = uniques * fraction / (uniques * fraction + pair_records * (1.0 - fraction))
    q = 1.0 + (8.0 - m) / 20.0
    adj = float(np.sum(score[scored] ** -q))
    out = np.zeros_like(score)
    out[scored] = 1.0 / (1.0 + (uniques / dis - uniques) / (score[scored] ** q * adj))
    return out


def suda2(
    table: TableLike | pl.DataFrame,
    qi: str | Iterable[str] | None = None,
    *,
    max_size: int | None = None,
    dis_fraction: float = 0.01,
    nulls: str = "error",
    budget: int = DEFAULT_BUDGET,
) -> Suda:
    """SUDA2 over ``qi`` (see the module): MSUs of up to ``max_size`` attributes (default: all
    of them), SUDA and DIS-SUDA scores (``dis_fraction`` is the sampling fraction, sdcMicro's
    ``DisFraction``) and attribute contributions.

    With ``qi``, ``table`` holds rows and one engine group-by builds the distinct keys (nulls
    per ``nulls``: ``"error"`` or ``"value"``, a null then being a value of its own); without,
    ``table`` is a class-size table (column ``n``; every other column is a QI).

    Raises :class:`InvalidParameterError` for bad parameters and
    :class:`~ldiv_polars.risk.budget.BudgetExceededError` when :func:`suda_cost` exceeds
    ``budget`` (before the work).
    """
    if nulls not in ("error", "value"):
        raise InvalidParameterError(f"suda2: nulls must be 'error' or 'value', got {nulls!r}")
    dis_fraction = require_real("dis_fraction", dis_fraction, low=0.0, high=1.0,
                                low_open=True, high_open=True)
    keys_table = class_size_table(table, qi, nulls, "suda2")
    keys = [c for c in keys_table.columns if c != COUNT]
    m = len(keys)
    if m == 0:
        raise InvalidParameterError("suda2 needs at least one quasi-identifier")
    max_size = m if max_size is None else min(require_int_at_least("max_size", max_size, 1), m)
    check_budget(suda_cost(keys_table.height, m, max_size), budget,
                 f"SUDA2 over {keys_table.height:,} distinct keys, {m} attributes and MSUs of "
                 f"up to {max_size}", "lower max_size, raise budget= or generalize the QIs")
    codes = _codes(keys_table, keys)
    rows, counts, score, contrib = _msus(codes, m, max_size)
    n = codes[COUNT].to_numpy()
    uniques, pair_records = int(np.sum(n == 1)), int(2 * np.sum(n == 2))
    dis = _dis(score, uniques, pair_records, m, dis_fraction)
    return _result(keys_table, keys, max_size, dis_fraction, rows, counts, score, dis, contrib)


def _result(keys_table: pl.DataFrame, keys: list[str], max_size: int, dis_fraction: float,
            rows: np.ndarray, counts: np.ndarray, score: np.ndarray, dis: np.ndarray,
            contrib: np.ndarray) -> Suda:
    h = keys_table.height

    def spread(values: np.ndarray) -> np.ndarray:
        full = np.zeros((h,) + values.shape[1:], dtype=values.dtype)
        full[rows] = values
        return full

    share = np.divide(contrib, score[:, None], out=np.zeros_like(contrib),
                      where=score[:, None] > 0)
    total = float(score.sum())
    columns = {SCORE: spread(score), DIS_SCORE: spread(dis)}
    columns |= {f"{MSU_PREFIX}{k + 1}": spread(counts[:, k]) for k in range(max_size)}
    columns |= {f"{CONTRIBUTION_PREFIX}{q}": spread(share[:, i]) for i, q in enumerate(keys)}
    out = keys_table.with_columns(pl.Series(name, v) for name, v in columns.items())
    return Suda(
        qi=keys,
        max_size=max_size,
        dis_fraction=dis_fraction,
        records=int(keys_table[COUNT].sum()),
        sample_uniques=int(rows.size),
        records_with_msus=int(np.sum(score > 0)),
        msus_by_size={k + 1: int(counts[:, k].sum()) for k in range(max_size)},
        total_score=total,
        max_score=float(score.max()) if score.size else 0.0,
        attribute_contributions={
            q: (100.0 * float(contrib[:, i].sum()) / total if total else 0.0)
            for i, q in enumerate(keys)},
        table=out,
    )
