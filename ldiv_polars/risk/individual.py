"""Individual and global re-identification risk with sampling weights, as sdcMicro's
``freqCalc`` / ``indivRisk`` / ``measure_risk``.

Per key (equivalence class) ``k``: ``f_k`` records in the sample and ``F_k`` the sum of their
sampling weights, the estimated population frequency (``F_k = f_k`` without weights). Under the
negative-binomial super-population model (Benedetti & Franconi 1998; Franconi & Polettini 2004,
PSD, LNCS 3050:262) the risk of a record of key ``k`` is ``E[1/F | f_k]`` with ``F - f_k ~
NegBin(f_k, p_k)``, ``p_k = f_k / F_k``:

- ``method="exact"``: ``r = 2F1(1, f; f+1; -(1-p)/p) / f``  (``= p^f/f 2F1(f, f; f+1; 1-p)``,
  the series sdcMicro sums, in a form without cancellation);
- ``method="approx"`` (sdcMicro's default): ``f = 1``: ``p/(1-p) log(1/p)``; ``f = 2``:
  ``p/(1-p) - (p/(1-p))^2 log(1/p)``; ``f > 2``: ``p / (f - (1-p))``;

``r = 1/f_k`` when ``f_k = F_k`` (the class is the whole population) and without weights
(sdcMicro's ``survey = FALSE``); ``qual`` multiplies the result. Over the records:

- ``expected_reidentifications`` ``= sum of r`` and ``global_risk`` its share of the records;
- ``records_above``: records with ``r > threshold``;
- ``global_threshold``: mu-Argus' threshold for ``max_global_risk`` (mu-Argus 4.1 manual
  §2.3.4.1, sdcMicro ``measure_threshold``): the highest risk level ``t`` such that capping every
  record above ``t`` at ``t`` brings the expected re-identifications below
  ``max_global_risk * records`` (``None`` where sdcMicro reports ``NA``);
- ``risky_records``: sdcMicro's "observations with higher risk than the main part of the
  data", ``r > median(r) + 2 mad(r)`` and ``r > 0.1``;
- with ``k``: ``k_violations``, records whose class has ``F_k < k`` (k-anonymity on the
  estimated population frequency).

>>> import polars as pl
>>> df = pl.DataFrame({"q": [1, 1, 2, 3], "w": [10.0, 10.0, 5.0, 1.0]})
>>> r = individual_risk(df, "q", weight="w")
>>> r.table.sort("q").select("q", "fk", "Fk", pl.col("risk").round(4)).rows()
[(1, 2, 20.0, 0.0827), (2, 1, 5.0, 0.4024), (3, 1, 1.0, 1.0)]
>>> (r.records, round(r.expected_reidentifications, 4), r.sample_uniques, r.max_risk)
(4, 1.5677, 2, 1.0)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
import polars as pl
from scipy import special

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.inputs import TableLike
from ldiv_polars.core.validate import raise_on_nulls, require_int_at_least, require_real
from ldiv_polars.errors import InputFormatError, InvalidParameterError
from ldiv_polars.risk.tables import WEIGHT, RiskNullPolicy, check_risk_null_policy, class_table
from ldiv_polars.risk.wildcard import DEFAULT_BUDGET, FK, FK_POPULATION, wildcard_counts

RISK = "risk"
"""Column of the individual risk in :attr:`IndividualRisk.table`."""

RiskMethod = Literal["approx", "exact"]

MAD_CONSTANT = 1.4826
"""R's ``mad()`` scale constant (consistency with the normal standard deviation)."""


@dataclass(frozen=True)
class IndividualRisk:
    """Individual, global and threshold risk figures (see the module). ``table`` holds one row
    per key: the key columns, ``n`` (records with exactly that key), ``fk``, ``Fk`` and
    ``risk``; a record's risk is its key's."""

    records: int
    classes: int
    weighted: bool
    method: str | None
    qual: float
    nulls: str
    expected_reidentifications: float
    global_risk: float
    max_risk: float | None
    sample_uniques: int
    sample_pairs: int
    threshold: float | None
    records_above: int | None
    max_global_risk: float
    global_threshold: float | None
    risky_records: int
    k: int | None
    k_violations: int | None
    table: pl.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, object]:
        """Every figure but the per-key table."""
        out = asdict(self)
        out.pop("table")
        return out


def benedetti_franconi(fk: np.ndarray, big_fk: np.ndarray, method: RiskMethod = "approx"
                       ) -> np.ndarray:
    """Individual risk ``E[1/F | f]`` per key for sample frequencies ``fk`` and estimated
    population frequencies ``big_fk >= fk`` (arrays of the same length)."""
    f = np.asarray(fk, dtype=float)
    p = f / np.asarray(big_fk, dtype=float)
    out = 1.0 / f
    est = p < 1.0
    f, p = f[est], p[est]
    if method == "exact":
        r = special.hyp2f1(1.0, f, f + 1.0, -(1.0 - p) / p) / f
    else:
        odds, log_inv = p / (1.0 - p), -np.log(p)
        r = np.where(f == 1.0, odds * log_inv,
                     np.where(f == 2.0, odds - odds * odds * log_inv, p / (f - (1.0 - p))))
    out[est] = r
    return out


def global_threshold(risk: np.ndarray, counts: np.ndarray, max_global_risk: float
                     ) -> float | None:
    """mu-Argus' risk threshold for ``max_global_risk`` over records with individual risks
    ``risk`` (``counts`` records each), computed on the distinct risk levels; ``None`` where
    sdcMicro's ``measure_risk`` reports ``NA`` (the file is already safe)."""
    order = np.argsort(-risk, kind="stable")
    levels, first = np.unique(-risk[order], return_index=True)  # ascending -risk: descending
    levels = -levels
    per_level = np.add.reduceat(counts[order].astype(float), first)
    mass = np.add.reduceat((risk * counts)[order], first)
    target = max_global_risk * counts.sum()
    total = mass.sum()
    if total < target:
        return None
    above = np.concatenate(([0.0], np.cumsum(per_level)[:-1]))     # records above each level
    remaining = total - np.concatenate(([0.0], np.cumsum(mass)[:-1]))
    hit = np.nonzero(remaining[1:] + levels[1:] * above[1:] < target)[0]
    if hit.size:
        return float(levels[hit[0] + 1])
    return None if levels[-1] == 0.0 else 0.0


def _weighted_median(values: np.ndarray, counts: np.ndarray) -> float:
    """R's ``median`` of ``values`` repeated ``counts`` times (the mean of the two middle
    values for an even total)."""
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.cumsum(counts[order])
    total = int(cum[-1])
    lo = v[np.searchsorted(cum, (total + 1) // 2)]
    hi = v[np.searchsorted(cum, total // 2 + 1)]
    return float((lo + hi) / 2.0)


def risky_records(risk: np.ndarray, counts: np.ndarray) -> int:
    """Records with ``risk > median + 2 mad`` and ``risk > 0.1`` (sdcMicro's print method)."""
    med = _weighted_median(risk, counts)
    mad = MAD_CONSTANT * _weighted_median(np.abs(risk - med), counts)
    return int(counts[(risk > med + 2.0 * mad) & (risk > 0.1)].sum())


def _key_table(table: TableLike | pl.DataFrame, qi: str | Iterable[str] | None,
               weight: str | None, nulls: RiskNullPolicy) -> tuple[pl.DataFrame, list[str], str | None]:
    """The class-size table, its key columns and its weight-sum column (or None)."""
    if qi is not None:
        policy = "value" if nulls == "wildcard" else nulls
        built = class_table(table, qi, weight=weight, nulls=policy)
        return built, [c for c in built.columns if c not in (COUNT, WEIGHT)], \
            (WEIGHT if weight else None)
    if not isinstance(table, pl.DataFrame) or COUNT not in table.columns:
        raise InputFormatError(
            f"without qi, individual_risk reads a class-size table: a DataFrame with column "
            f"{COUNT!r} (and optionally {WEIGHT!r})"
        )
    wcol = weight or (WEIGHT if WEIGHT in table.columns else None)
    if wcol is not None and wcol not in table.columns:
        raise InvalidParameterError(f"weight-sum column {wcol!r} is not in the class-size table")
    keys = [c for c in table.columns if c not in (COUNT, wcol)]
    if nulls == "error":
        raise_on_nulls(table, keys, COUNT)
    return table, keys, wcol


def _checked_parameters(nulls: str, method: str, qual: float, max_global_risk: float,
                        threshold: float | None, k: int | None
                        ) -> tuple[float, float, float | None, int | None]:
    """:func:`individual_risk`'s parameters checked (typed errors), as numbers."""
    check_risk_null_policy(nulls)
    if method not in ("approx", "exact"):
        raise InvalidParameterError(f"method must be 'approx' or 'exact', got {method!r}")
    qual = require_real("qual", qual, low=0.0, low_open=True)
    max_global_risk = require_real("max_global_risk", max_global_risk, low=0.0, high=1.0,
                                   low_open=True, high_open=True)
    if threshold is not None:
        threshold = require_real("threshold", threshold, low=0.0)
    if k is not None:
        k = require_int_at_least("k", k, 1)
    return qual, max_global_risk, threshold, k


def individual_risk(
    table: TableLike | pl.DataFrame,
    qi: str | Iterable[str] | None = None,
    *,
    weight: str | None = None,
    method: RiskMethod = "approx",
    qual: float = 1.0,
    threshold: float | None = None,
    max_global_risk: float = 0.01,
    k: int | None = None,
    nulls: RiskNullPolicy = "error",
    budget: int = DEFAULT_BUDGET,
) -> IndividualRisk:
    """Individual risk per key and the global figures (see the module).

    With ``qi``, ``table`` holds rows (``weight`` names their sampling-weight column) and one
    engine group-by builds the class-size table; without, ``table`` is a class-size table
    (column ``n``, weight sums in ``weight_sum`` or the column ``weight`` names; every other
    column is a key). ``nulls="wildcard"`` counts missing key values as wildcards
    (:mod:`ldiv_polars.risk.wildcard`, bounded by ``budget``).

    Raises :class:`InvalidParameterError` for bad parameters, weights that make an estimated
    population class smaller than its sample class (weights below 1), or a wildcard computation
    over ``budget``; :class:`~ldiv_polars.errors.NullValuesError` for nulls with
    ``nulls="error"``.
    """
    qual, max_global_risk, threshold, k = _checked_parameters(nulls, method, qual,
                                                             max_global_risk, threshold, k)
    classes, keys, wcol = _key_table(table, qi, weight, nulls)
    if nulls == "wildcard":
        classes = wildcard_counts(classes, keys, weight=wcol, budget=budget)
    else:
        big = pl.col(wcol).cast(pl.Float64) if wcol else pl.col(COUNT).cast(pl.Float64)
        classes = classes.with_columns(pl.col(COUNT).cast(pl.Int64).alias(FK),
                                       big.alias(FK_POPULATION))
    fk = classes[FK].to_numpy().astype(float)
    big_fk = classes[FK_POPULATION].to_numpy().astype(float)
    if wcol is not None and np.any(big_fk < fk * (1.0 - 1e-12)):
        raise InvalidParameterError(
            "some classes have a weight sum below their record count (sampling weights < 1): "
            "the estimated population class cannot be smaller than the sample class"
        )
    if wcol is None:
        risk = 1.0 / fk
    else:
        risk = benedetti_franconi(fk, big_fk, method)
    risk = risk * qual
    classes = classes.with_columns(pl.Series(RISK, risk))
    return _summarize(classes, risk, threshold, max_global_risk, k, wcol is not None, method,
                      qual, nulls)


def _summarize(classes: pl.DataFrame, risk: np.ndarray, threshold: float | None,
               max_global_risk: float, k: int | None, weighted: bool, method: str, qual: float,
               nulls: str) -> IndividualRisk:
    counts = classes[COUNT].to_numpy().astype(np.int64)
    fk = classes[FK].to_numpy()
    records = int(counts.sum())
    expected = float(np.dot(counts, risk))
    empty = records == 0
    return IndividualRisk(
        records=records,
        classes=classes.height,
        weighted=weighted,
        method=method if weighted else None,
        qual=qual,
        nulls=nulls,
        expected_reidentifications=expected,
        global_risk=0.0 if empty else expected / records,
        max_risk=None if empty else float(risk.max()),
        sample_uniques=int(counts[fk == 1].sum()),
        sample_pairs=int(counts[fk == 2].sum()),
        threshold=threshold,
        records_above=None if threshold is None else int(counts[risk > threshold].sum()),
        max_global_risk=max_global_risk,
        global_threshold=None if empty else global_threshold(risk, counts, max_global_risk),
        risky_records=0 if empty else risky_records(risk, counts),
        k=k,
        k_violations=None if k is None else int(
            counts[classes[FK_POPULATION].to_numpy() < k].sum()),
        table=classes,
    )
