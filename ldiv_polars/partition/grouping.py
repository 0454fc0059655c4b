"""Groupers over an ordered table (Cormode et al. 2010): GG, RGG, SG, Anatomy, anatomization.

All of them are SA-intact *group-and-recode* methods: they assign every kept row a group id and
publish the QIs with the sensitive values permuted inside each group.

- :func:`greedy_grouping` (GG, Figure 2): sort by the QIs, cut into buckets of ``l`` rows, and
  grow a group bucket by bucket until it is l-diverse; the trailing rows that never form a
  diverse group (and the ``n mod l`` rows of an incomplete last bucket) are suppressed and
  counted. Deliberately vulnerable to the minimality attack.
- :func:`randomized_greedy_grouping` (RGG, §4.3): once the group is diverse, add one more bucket
  with probability ``p`` (seeded) and repeat.
- :func:`symmetric_grouping` (SG, Figure 7): halve the ordered table recursively (left half
  ``ceil(n/2)`` rows) while both halves are diverse.
- :func:`anatomy` and :func:`anatomize`: SA-only groupings (safe by Claim 4).

The order is one sort in the engine; the grouping decision reads one integer column of the
sorted sensitive values (numpy cumulative counts) and loops in Python only over *groups* (GG)
or recursion *levels* (SG) with vectorized searches; the output is a lazy plan that attaches
group ids from the group boundaries (``search_sorted``), re-verified with
:func:`ldiv_polars.check` before it is returned.

>>> import polars as pl
>>> df = pl.DataFrame({"q": [1, 2, 3, 4], "s": ["+", "+", "-", "-"]})
>>> g = greedy_grouping(df, ["q"], "s", 2, positive=["+"])
>>> g.frame.select("q", "group").collect().rows()    # {1,2} alone is not diverse: one group
[(1, 0), (2, 0), (3, 0), (4, 0)]
>>> symmetric_grouping(df, ["q"], "s", 2, positive=["+"]).sizes().tolist()
[4]
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import as_names, require_int_at_least, require_real, validate_columns
from ldiv_polars.errors import InvalidParameterError, LdivError, NullValuesError
from ldiv_polars.models import KAnonymity
from ldiv_polars.models.base import Model
from ldiv_polars.models.binary import BinaryLDiversity, simple_l_diversity
from ldiv_polars.models.verdict import CheckResult, check

__all__ = [
    "Grouping",
    "AnatomyResult",
    "GroupingError",
    "greedy_grouping",
    "randomized_greedy_grouping",
    "symmetric_grouping",
    "anatomy",
    "anatomize",
]

GROUP = "group"
_POS = "__ldiv_pos"
_MAX_CELLS = 200_000_000


class GroupingError(LdivError, ValueError):
    """The table cannot be grouped as requested (e.g. it is not l-eligible: some sensitive value
    occurs in more than 1/l of the rows)."""


@dataclass
class Grouping:
    """A grouped release: ``frame`` is the lazy table of kept rows (in the grouper's order for
    GG/RGG/SG) with the group id column ``group``; ``suppressed`` rows were dropped (counted,
    never silently); ``verification`` is the foundation checker's verdict on the output."""

    frame: pl.LazyFrame
    group: str
    qi: tuple[str, ...]
    sensitive: str
    algorithm: str
    l: float
    groups: int
    rows: int
    suppressed: int
    verification: CheckResult
    starts: np.ndarray | None = None
    """Start position of every group in the ordered table (GG/RGG/SG)."""
    positive: tuple[object, ...] | None = None

    def sizes(self) -> np.ndarray:
        """Group sizes (in group-id order)."""
        if self.starts is not None:
            return np.diff(np.append(self.starts, self.rows))
        return (self.frame.group_by(self.group).agg(pl.len().alias(COUNT)).sort(self.group)
                .collect()[COUNT].to_numpy())

    @property
    def average_group_size(self) -> float:
        """Rows per group (0.0 with no group)."""
        return self.rows / self.groups if self.groups else 0.0

    def to_dict(self) -> dict[str, object]:
        """The headline figures as a JSON-ready dict (algorithm, l, rows, suppressed,
        groups, verified)."""
        return {
            "algorithm": self.algorithm,
            "l": self.l,
            "rows": self.rows,
            "suppressed": self.suppressed,
            "groups": self.groups,
            "average_group_size": self.average_group_size,
            "verified": self.verification.passed,
        }


@dataclass
class AnatomyResult:
    """Anatomy's two tables: ``qit`` (QI columns + group id) and ``st`` (group id, sensitive
    value, count), plus the row-level :class:`Grouping`."""

    qit: pl.LazyFrame
    st: pl.LazyFrame
    grouping: Grouping


def _requirement_models(l: float, positive: tuple[object, ...] | None, k: int) -> list[Model]:
    models: list[Model] = [BinaryLDiversity(l, positive) if positive else simple_l_diversity(l)]
    if k > 1:
        models.append(KAnonymity(k))
    return models


def _prepare(data: TableLike, qi: str | Iterable[str], sensitive: str, l: float,
             positive: Iterable[object] | None, order: str | Iterable[str] | None,
             group: str) -> tuple[pl.LazyFrame, tuple[str, ...], str, float,
                                  tuple[object, ...] | None, list[str]]:
    lf = to_lazyframe(data)
    qi_t, s_t = validate_columns(lf, qi, sensitive)
    if len(s_t) != 1:
        raise InvalidParameterError("groupers take exactly one sensitive column")
    s = s_t[0]
    l_val = require_real("l", l, low=1.0)
    pos: tuple[object, ...] | None = None
    if positive is not None:
        if isinstance(positive, (str, bytes)):
            positive = [positive]
        pos = tuple(positive)
        if not pos:
            raise InvalidParameterError("positive must list at least one sensitive value")
    order_cols = list(as_names(order)) if order is not None else list(qi_t)
    names = lf.collect_schema().names()
    missing = [c for c in order_cols if c not in names]
    if missing:
        from ldiv_polars.errors import UnknownColumnError

        raise UnknownColumnError(missing, names)
    if group in names:
        raise InvalidParameterError(f"the group column name {group!r} is already a column")
    return lf, qi_t, s, l_val, pos, order_cols


def _codes(sorted_lf: pl.LazyFrame, s: str, positive: tuple[object, ...] | None
           ) -> tuple[np.ndarray, int]:
    """Sensitive column of the ordered table as integer codes (binary: 0/1 positive flag)."""
    col = sorted_lf.select(s).collect(engine="streaming")[s]
    if col.null_count():
        raise NullValuesError({s: int(col.null_count())})
    if positive is not None:
        return col.is_in(list(positive)).cast(pl.Int8).to_numpy().astype(np.int64), 1
    codes = (col.rank("dense") - 1).cast(pl.Int64).to_numpy()
    return codes, int(codes.max()) + 1 if len(codes) else 0


def _cumulative(codes: np.ndarray, n_values: int, binary: bool, step: int = 1) -> np.ndarray:
    """Cumulative counts at positions 0, step, 2*step, ... (rows: prefix lengths / step)."""
    n = len(codes)
    if binary:
        c = np.concatenate([[0], np.cumsum(codes)])[::step]
        return c[:, None]
    if n * n_values // step > _MAX_CELLS:
        raise InvalidParameterError(
            f"{n_values} distinct sensitive values x {n} rows is too many for simple "
            f"l-diversity grouping; use binary l-diversity (positive=...)"
        )
    out = np.zeros((n // step + 1, n_values), dtype=np.int32)
    onehot_idx = np.arange(n) // step + 1
    # counts per block, then cumulative
    np.add.at(out, (onehot_idx[: (n // step) * step], codes[: (n // step) * step]), 1)
    return np.cumsum(out, axis=0)


def _first_diverse(dmat: np.ndarray, i: int, start: int) -> int | None:
    """First j >= start with dmat[j] <= dmat[i] in every column (window doubling)."""
    last = dmat.shape[0]
    ref = dmat[i]
    s, w = start, 64
    while s < last:
        e = min(last, s + w)
        ok = (dmat[s:e] <= ref).all(axis=1)
        hit = np.flatnonzero(ok)
        if hit.size:
            return s + int(hit[0])
        s, w = e, w * 2
    return None


def _gg_bounds(codes: np.ndarray, n_values: int, binary: bool, l: int, k: int, p: float,
               rng: np.random.Generator | None) -> np.ndarray:
    """Bucket boundaries (in buckets) of the GG/RGG groups: [b_0=0, b_1, ..., b_g]."""
    cum = _cumulative(codes, n_values, binary, step=l).astype(np.int64)
    nb = cum.shape[0] - 1
    # group [i, j) (buckets) is diverse iff counts <= (j - i) for every value: D[j] <= D[i]
    dmat = cum - np.arange(nb + 1)[:, None]
    min_b = max(1, math.ceil(k / l))
    bounds = [0]
    i = 0
    while i < nb:
        j = _first_diverse(dmat, i, i + min_b)
        if j is None:
            break
        if p > 0 and rng is not None:
            while j < nb and rng.random() < p:
                j2 = _first_diverse(dmat, i, j + 1)
                if j2 is None:
                    break
                j = j2
        bounds.append(j)
        i = j
    return np.asarray(bounds, dtype=np.int64)


def _finish(sorted_lf: pl.LazyFrame, starts: np.ndarray, kept: int, total: int, group: str,
            qi: tuple[str, ...], s: str, l: float, positive: tuple[object, ...] | None,
            k: int, algorithm: str) -> Grouping:
    starts_s = pl.Series(starts.astype(np.int64))
    frame = (
        sorted_lf.with_row_index(_POS)
        .filter(pl.col(_POS) < kept)
        .with_columns(
            (pl.lit(starts_s).search_sorted(pl.col(_POS).cast(pl.Int64), side="right")
             .cast(pl.Int64) - 1).alias(group)
        )
        .drop(_POS)
    )
    models = _requirement_models(l, positive, k)
    verification = check(frame, [group], s, models)
    if not verification.passed:  # pragma: no cover - would be a bug in the grouper
        raise GroupingError(f"{algorithm} output failed re-verification: "
                            f"{[m.to_dict() for m in verification.models]}")
    return Grouping(frame, group, qi, s, algorithm, l, len(starts), kept, total - kept,
                    verification, starts, positive)


@reads_input
def greedy_grouping(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str,
    l: int,
    *,
    positive: Iterable[object] | None = None,
    k: int = 1,
    order: str | Iterable[str] | None = None,
    group: str = GROUP,
) -> Grouping:
    """GG (Figure 2): order the rows by ``order`` (default: the QIs, lexicographically, stable),
    cut them into buckets of ``l`` rows and close a group as soon as it is l-diverse (binary
    when ``positive`` lists the positive values, otherwise simple l-diversity) and has ``k``
    rows. Rows after the last diverse group are suppressed (counted in ``suppressed``)."""
    return _greedy(data, qi, sensitive, l, positive, k, order, group, 0.0, None, "gg")


@reads_input
def randomized_greedy_grouping(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str,
    l: int,
    *,
    p: float,
    seed: int = 0,
    positive: Iterable[object] | None = None,
    k: int = 1,
    order: str | Iterable[str] | None = None,
    group: str = GROUP,
) -> Grouping:
    """RGG (§4.3): like GG, but a group that is already diverse takes one more bucket (and keeps
    growing until diverse again) with probability ``p``; seeded. If the table ends while such a
    voluntary extension is still not diverse, the group closes at its last diverse point.

    >>> import polars as pl
    >>> df = pl.DataFrame({"q": range(8), "s": ["+", "-"] * 4})
    >>> randomized_greedy_grouping(df, ["q"], "s", 2, p=0.0, positive=["+"]).groups
    4
    """
    p = require_real("p", p, low=0.0, high=1.0, high_open=True)
    rng = np.random.default_rng(require_int_at_least("seed", seed, 0))
    return _greedy(data, qi, sensitive, l, positive, k, order, group, p, rng, "rgg")


def _greedy(data: TableLike, qi: str | Iterable[str], sensitive: str, l: int,
            positive: Iterable[object] | None, k: int, order: str | Iterable[str] | None,
            group: str, p: float, rng: np.random.Generator | None, algorithm: str) -> Grouping:
    l = require_int_at_least("l", l, 2)
    k = require_int_at_least("k", k, 1)
    lf, qi_t, s, l_val, pos, order_cols = _prepare(data, qi, sensitive, l, positive, order, group)
    sorted_lf = lf.sort(order_cols, maintain_order=True)
    codes, nv = _codes(sorted_lf, s, pos)
    bounds = _gg_bounds(codes, nv, pos is not None, l, k, p, rng)
    if len(bounds) < 2:
        raise GroupingError(f"{algorithm} found no l-diverse group (l={l}) in {len(codes)} rows")
    starts = bounds[:-1] * l
    kept = int(bounds[-1] * l)
    return _finish(sorted_lf, starts, kept, len(codes), group, qi_t, s, l_val, pos, k, algorithm)


@reads_input
def symmetric_grouping(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str,
    l: float,
    *,
    positive: Iterable[object] | None = None,
    k: int = 1,
    order: str | Iterable[str] | None = None,
    group: str = GROUP,
) -> Grouping:
    """SG (Figure 7): starting from the whole ordered table, split a group into its first
    ``ceil(n/2)`` and last ``floor(n/2)`` rows when both halves are l-diverse (and have ``k``
    rows), recursively; otherwise keep it. Vectorized level by level. Raises
    :class:`GroupingError` when the whole table is not l-diverse."""
    k = require_int_at_least("k", k, 1)
    lf, qi_t, s, l_val, pos, order_cols = _prepare(data, qi, sensitive, l, positive, order, group)
    sorted_lf = lf.sort(order_cols, maintain_order=True)
    codes, nv = _codes(sorted_lf, s, pos)
    n = len(codes)
    cum = _cumulative(codes, nv, pos is not None).astype(np.int64)

    def diverse(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        cnt = cum[b] - cum[a]
        size = b - a
        top = cnt[:, 0] if pos is not None else cnt.max(axis=1)
        return (size >= k) & (top * l_val <= size + 1e-9) & (size > 0)

    if n == 0 or not diverse(np.array([0]), np.array([n]))[0]:
        raise GroupingError(f"the whole table is not l-diverse (l={l_val}, k={k}): SG cannot start")
    seg_a, seg_b = np.array([0]), np.array([n])
    final_a: list[np.ndarray] = []
    while seg_a.size:
        size = seg_b - seg_a
        mid = seg_a + (size + 1) // 2
        ok = (size >= 2) & diverse(seg_a, mid) & diverse(mid, seg_b)
        final_a.append(seg_a[~ok])
        seg_a, seg_b = (np.concatenate([seg_a[ok], mid[ok]]),
                        np.concatenate([mid[ok], seg_b[ok]]))
    starts = np.sort(np.concatenate(final_a))
    return _finish(sorted_lf, starts, n, n, group, qi_t, s, l_val, pos, k, "sg")


def _eligible(lf: pl.LazyFrame, s: str, l: int) -> tuple[int, int]:
    """``(n, g)``: the rows and Anatomy's number of groups ``floor(n/l)``; raises
    :class:`NullValuesError` on a null sensitive value and :class:`GroupingError` unless the
    table is l-eligible (no value in more than ``n/l`` rows)."""
    freq = lf.group_by(s).agg(pl.len().alias(COUNT)).collect(engine="streaming")
    if freq[s].null_count():
        raise NullValuesError({s: int(freq.filter(pl.col(s).is_null())[COUNT].sum())})
    n = int(freq[COUNT].sum())
    g = n // l
    top = int(freq[COUNT].max() or 0)
    if g == 0 or top > g:
        raise GroupingError(
            f"the table is not {l}-eligible: a sensitive value occurs in {top} of {n} rows "
            f"(more than n/l = {n / l:.2f})"
        )
    return n, g


@reads_input
def anatomy(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str,
    l: int,
    *,
    seed: int = 0,
    group: str = GROUP,
) -> AnatomyResult:
    """Anatomy's grouping step, SA-only (Claim 4: safe from the minimality attack), computed
    in the engine: shuffle the rows within each sensitive value (seeded), sort them by value
    frequency (descending) and value, and deal row ``i`` to group ``i mod g`` with
    ``g = floor(n/l)``. Every group gets ``l`` or ``l + 1`` rows with pairwise distinct sensitive
    values (a value's rows occupy consecutive positions, at most ``g`` of them), which is what
    Xiao & Tao's top-l bucket draw achieves; the table must be l-eligible (no value in more than
    ``n/l`` rows). Returns the QI table and the sensitive table. Raises :class:`GroupingError`
    when the table is not l-eligible and :class:`~ldiv_polars.errors.NullValuesError` on a
    null sensitive value.

    >>> import polars as pl
    >>> df = pl.DataFrame({"q": range(6), "s": ["a", "a", "b", "b", "c", "c"]})
    >>> a = anatomy(df, ["q"], "s", 3)
    >>> a.grouping.groups, sorted(a.st.collect()["n"].to_list())
    (2, [1, 1, 1, 1, 1, 1])
    """
    l = require_int_at_least("l", l, 2)
    seed = require_int_at_least("seed", seed, 0)
    lf, qi_t, s, l_val, _, _ = _prepare(data, qi, sensitive, l, None, None, group)
    n, g = _eligible(lf, s, l)
    f = "__ldiv_freq"
    r = "__ldiv_rand"
    frame = (
        lf.with_columns(
            pl.len().over(s).alias(f),
            pl.int_range(pl.len(), dtype=pl.Int64).shuffle(seed).alias(r),
        )
        .sort([f, s, r], descending=[True, False, False], maintain_order=True)
        .with_row_index(_POS)
        .with_columns((pl.col(_POS).cast(pl.Int64) % g).alias(group))
        .drop(_POS, f, r)
    )
    models = [simple_l_diversity(l), KAnonymity(l)]
    verification = check(frame, [group], s, models)
    if not verification.passed:  # pragma: no cover
        raise GroupingError("anatomy output failed re-verification")
    grouping = Grouping(frame, group, qi_t, s, "anatomy", l_val, g, n, 0, verification)
    qit = frame.select(*qi_t, group)
    st = frame.group_by(group, s).agg(pl.len().cast(pl.Int64).alias(COUNT)).sort(group, s)
    return AnatomyResult(qit, st, grouping)


def _dealt(grouping: Grouping, li: int, new: str, seed: int) -> pl.LazyFrame:
    """The rows of ``grouping`` dealt round-robin within each group (see :func:`anatomize`),
    the new dense group id in ``new`` (the old id dropped when renamed)."""
    old = grouping.group
    s = grouping.sensitive
    key = "__ldiv_key"
    kf, gs, r, slot = "__ldiv_kf", "__ldiv_gs", "__ldiv_rand", "__ldiv_slot"
    lf = grouping.frame
    if grouping.positive:
        lf = lf.with_columns(pl.col(s).is_in(list(grouping.positive)).not_().alias(key))
    else:
        lf = lf.with_columns(pl.col(s).alias(key))
    if grouping.positive:
        sort_by, desc = [old, key, r], [False, False, False]   # positives (key False) first
    else:
        sort_by, desc = [old, kf, key, r], [False, True, False, False]
    plan = (
        lf.with_columns(
            pl.len().over(old).alias(gs),
            pl.len().over(old, key).alias(kf),
            pl.int_range(pl.len(), dtype=pl.Int64).shuffle(seed).alias(r),
        )
        .sort(sort_by, descending=desc, maintain_order=True)
        .with_columns(
            (pl.int_range(pl.len(), dtype=pl.Int64).over(old) % (pl.col(gs) // li)).alias(slot)
        )
    )
    return (
        plan.with_columns(pl.struct(old, slot).rank("dense").cast(pl.Int64).sub(1).alias(new))
        .drop([c for c in (key, kf, gs, r, slot) if c != new] + ([old] if new != old else []))
    )


def anatomize(grouping: Grouping, *, seed: int = 0, group: str | None = None) -> Grouping:
    """Anatomization of large groups (§3.1): split every group of ``grouping`` into
    ``floor(|G|/l)`` groups of ``l`` to ``2l - 1`` rows by dealing its rows round-robin in
    (sensitive-key frequency, key, random) order, so each new group holds distinct values
    (simple l-diversity) or at most one positive (binary). Any l-diverse group can be split
    this way; the result is re-verified. New group ids are dense, ordered by (old group, slot).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the grouping's ``l`` is not
    an integer and :class:`GroupingError` when a group cannot be split so.
    """
    seed = require_int_at_least("seed", seed, 0)
    l = grouping.l
    if not float(l).is_integer():
        raise InvalidParameterError(f"anatomization needs an integer l, got {l}")
    li = int(l)
    new = group or grouping.group
    frame = _dealt(grouping, li, new, seed)
    s = grouping.sensitive
    models = _requirement_models(l, grouping.positive, li)
    verification = check(frame, [new], s, models)
    if not verification.passed:
        raise GroupingError(
            "anatomization failed: some group is not l-eligible "
            f"({[m.to_dict() for m in verification.models if not m.passed]})"
        )
    groups = verification.classes
    return Grouping(frame, new, grouping.qi, s, f"{grouping.algorithm}+anatomy", l, groups,
                    grouping.rows, grouping.suppressed, verification, None, grouping.positive)
