"""Utility metrics of partitioned releases.

- ``discernibility``: ``sum |G|^2`` (Bayardo & Agrawal; nothing is suppressed by Mondrian);
- ``aecs``: ``N / groups`` (as the lattice search reports it) and ``cavg = aecs / k``
  (LeFevre's normalized average class size);
- ``ncp``: per QI, the row-weighted mean of the group's normalized certainty penalty:
  numeric ``(max - min) / (table max - table min)``, categorical ``(|set| - 1) / (|domain| - 1)``
  (no hierarchy: the set itself is published); ``gcp`` is their mean over the QIs
  (Iyengar's LM / the search's ``loss`` for flat hierarchies).
- :func:`count_query_workload` and :func:`average_relative_error`: random COUNT queries
  ``WHERE q_i1 IN V_1 AND ... AND s IN V_s`` (Cormode et al. §5.3) answered on a grouping with
  permuted sensitive values by the standard estimator ``sum_G |G matching the QI predicate| *
  share of V_s in G``.

>>> import polars as pl
>>> f = pl.LazyFrame({"q": [1, 2, 3, 4], "group": [0, 0, 1, 1]})
>>> r = f.group_by("group").agg(pl.len().alias("size"), pl.col("q").min().alias("q_min"),
...                              pl.col("q").max().alias("q_max")).collect()
>>> m = grouping_metrics(f, r, ("q",), ("q",), 4, 2)
>>> m["discernibility"], m["aecs"], round(m["gcp"], 4)
(8, 2.0, 0.3333)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError

__all__ = [
    "CountQuery",
    "average_relative_error",
    "compare_are",
    "count_query_workload",
    "grouping_metrics",
]


def grouping_metrics(frame: pl.LazyFrame, ranges: pl.DataFrame, qi: Sequence[str],
                     numeric: Sequence[str], n: int, k: int = 1) -> dict[str, object]:
    """Discernibility, AECS, CAVG, per-QI NCP and GCP of a grouping (see module docstring).
    ``ranges`` holds one row per group with ``size`` and ``<qi>_min``/``<qi>_max`` or
    ``<qi>_set``."""
    sizes = ranges["size"].cast(pl.Int64)
    groups = ranges.height
    dom = frame.select(
        [(pl.col(c).max() - pl.col(c).min()).cast(pl.Float64).alias(c) if c in numeric
         else pl.col(c).n_unique().alias(c) for c in qi]
    ).collect().row(0, named=True)
    ncp: dict[str, float] = {}
    for c in qi:
        if c in numeric:
            span = float(dom[c] or 0.0)
            per = ((ranges[f"{c}_max"] - ranges[f"{c}_min"]).cast(pl.Float64) / span
                   if span > 0 else pl.Series([0.0] * groups))
        else:
            d = int(dom[c])
            per = ((ranges[f"{c}_set"].list.len() - 1).cast(pl.Float64) / (d - 1)
                   if d > 1 else pl.Series([0.0] * groups))
        ncp[c] = float((per * sizes).sum() / n) if n else 0.0
    aecs = n / groups if groups else 0.0
    return {
        "discernibility": int((sizes * sizes).sum()),
        "aecs": aecs,
        "cavg": aecs / k,
        "ncp": ncp,
        "gcp": float(np.mean(list(ncp.values()))) if ncp else 0.0,
    }


@dataclass(frozen=True)
class CountQuery:
    """``COUNT(*) WHERE qi[j] IN values[j] for j ... AND s IN s_values`` (codes)."""

    columns: tuple[int, ...]
    values: tuple[np.ndarray, ...]
    s_values: np.ndarray


def count_query_workload(codes: np.ndarray, s_codes: np.ndarray, *, queries: int = 1000,
                         qd: int = 2, sel: float = 0.3, seed: int = 0) -> list[CountQuery]:
    """Random COUNT queries over integer-coded QIs ``codes`` (``(n, d)``) and sensitive codes:
    ``qd`` QIs drawn at random, each with ``max(1, U{0..sel*|D|})`` random values (the paper
    allows 0, which yields empty queries), and the same rule for the sensitive values. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` on a parameter out of range or ``qd``
    beyond the number of QIs."""
    queries = require_int_at_least("queries", queries, 1)
    qd = require_int_at_least("qd", qd, 1)
    sel = require_real("sel", sel, low=0.0, high=1.0, low_open=True)
    if qd > codes.shape[1]:
        raise InvalidParameterError(f"qd={qd} exceeds the {codes.shape[1]} quasi-identifiers")
    rng = np.random.default_rng(seed)
    doms = [np.unique(codes[:, j]) for j in range(codes.shape[1])]
    sdom = np.unique(s_codes)

    def pick(dom: np.ndarray) -> np.ndarray:
        size = max(1, int(rng.integers(0, int(sel * len(dom)) + 1)))
        return rng.choice(dom, size=min(size, len(dom)), replace=False)

    out = []
    for _ in range(queries):
        cols = tuple(sorted(rng.choice(codes.shape[1], size=qd, replace=False).tolist()))
        out.append(CountQuery(cols, tuple(pick(doms[j]) for j in cols), pick(sdom)))
    return out


def average_relative_error(codes: np.ndarray, s_codes: np.ndarray, groups: np.ndarray,
                           workload: Sequence[CountQuery]) -> dict[str, float]:
    """ARE of ``workload`` on a grouping (``groups``: group id per row, ``-1`` = suppressed,
    which the estimator cannot see) with permuted sensitive values. Queries whose true count is
    0 are skipped (the relative error is undefined) and counted."""
    return compare_are(codes, s_codes, {"_": groups}, workload)["_"]


def compare_are(codes: np.ndarray, s_codes: np.ndarray, groupings: Mapping[str, np.ndarray],
                workload: Sequence[CountQuery]) -> dict[str, dict[str, float]]:
    """:func:`average_relative_error` of several groupings of the same rows on one workload
    (each query's row masks are computed once and shared)."""
    prepared = {}
    for name, groups in groupings.items():
        g = np.asarray(groups)
        if g.shape[0] != codes.shape[0]:
            raise InvalidParameterError(f"grouping {name!r} has {g.shape[0]} ids for "
                                        f"{codes.shape[0]} rows")
        kept = g >= 0
        ng = int(g.max()) + 1 if kept.any() else 0
        prepared[name] = (kept, g[kept], ng, np.bincount(g[kept], minlength=ng).astype(float))
    errors: dict[str, list[float]] = {name: [] for name in groupings}
    skipped = 0
    for q in workload:
        qmask = np.ones(codes.shape[0], dtype=bool)
        for j, vals in zip(q.columns, q.values):
            qmask &= np.isin(codes[:, j], vals)
        smask = np.isin(s_codes, q.s_values)
        true = int((qmask & smask).sum())
        if true == 0:
            skipped += 1
            continue
        for name, (kept, gk, ng, size) in prepared.items():
            match = np.bincount(gk, weights=qmask[kept].astype(float), minlength=ng)
            share = np.bincount(gk, weights=smask[kept].astype(float), minlength=ng)
            with np.errstate(invalid="ignore", divide="ignore"):
                est = float(np.nansum(match * share / size))
            errors[name].append(abs(true - est) / true)
    return {name: {"are": float(np.mean(e)) if e else float("nan"), "queries": len(e),
                   "skipped_empty": skipped} for name, e in errors.items()}
