"""t-closeness (Li, Li, Venkatasubramanian, ICDE 2007): the Earth Mover's Distance between each
class's sensitive distribution P and the table's distribution Q is at most t.

Three ground distances, all computed sparsely from the frequency set (only values present in a
class are touched, so the cost is the size of the frequency set, not classes x domain):

- ``"equal"`` (categorical): every pair of values at distance 1;
  ``EMD = 1/2 sum_s |p_s - q_s|``.
- ``"ordered"`` (numeric or ordinal): the domain sorted ascending, distance ``|i-j|/(m-1)``;
  ``EMD = 1/(m-1) sum_{i<m} |P_i - Q_i|`` with cumulative P, Q. Between two values present in
  the class P is constant, so each stretch is summed in closed form from prefix sums of Q.
- ``"hierarchical"``: a value hierarchy (ARX layout: first column the value, one column per
  level); ``EMD = sum_N level(N)/H * min(pos_extra(N), neg_extra(N))`` over inner nodes N.

>>> import polars as pl
>>> from ldiv_polars import check
>>> df = pl.DataFrame({"q": [1, 1, 2, 2], "s": ["a", "a", "b", "b"]})
>>> check(df, ["q"], "s", [TCloseness(0.5)]).models[0].achieved
0.5
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.core.validate import require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import (
    DISTINCT,
    ROW_M,
    ROW_P,
    ROW_Q,
    ClassContext,
    Model,
    SqlCall,
    reason_number,
    reason_param,
)
from ldiv_polars.models.exact import EPS, ClassCounts, Reference, agreeing, decimal

Distance = Literal["equal", "ordered", "hierarchical"]

if TYPE_CHECKING:
    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


def hierarchy_frame(hierarchy: Any) -> pl.DataFrame:
    """Accept a DataFrame in ARX layout, an object with a ``.frame`` DataFrame in that layout,
    or its rows (a list of equal-length lists, as a model spec carries it to the SQL exact
    step); return it with every column cast to string. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` on anything else, a frame of fewer than
    two columns, or empty cells (ragged rows)."""
    frame = getattr(hierarchy, "frame", hierarchy)
    if isinstance(frame, (list, tuple)) and frame and all(
            isinstance(r, (list, tuple)) and len(r) == len(frame[0]) for r in frame):
        frame = pl.DataFrame([[None if v is None else str(v) for v in r] for r in frame],
                             orient="row",
                             schema=[f"level{i}" for i in range(len(frame[0]))])
    if not isinstance(frame, pl.DataFrame):
        raise InvalidParameterError(
            "a hierarchy must be a polars DataFrame in ARX layout (first column the value, one "
            "column per level), an object with such a `.frame`, or its rows"
        )
    if frame.width < 2:
        raise InvalidParameterError("a hierarchy needs the value column and at least one level")
    frame = frame.select(pl.all().cast(pl.String))
    if frame.null_count().sum_horizontal().item():
        raise InvalidParameterError("the hierarchy has empty cells (ragged rows)")
    return frame


def emd_band(distinct: object, domain: object, height: int | None, distance: str) -> object:
    """Rounding bound of a class EMD as the engines compute it: ``64 eps (d + 4)`` for the
    equal distance (a sum over the class's d values), times ``(m + 4)`` for the ordered one
    (prefix sums over the m-value domain), ``64 eps (d + m + 4) (H + 1)`` for a hierarchy of
    height H."""
    if distance == "equal":
        return 64 * EPS * (distinct + 4)
    if distance == "ordered":
        return 64 * EPS * (distinct + 4) * (domain + 4)
    return 64 * EPS * (distinct + domain + 4) * ((height or 0) + 1)


SHARED_BAND_VALUES = 64
"""Up to this many sensitive values in the table, an array verdict bounds every class's EMD
rounding by the bound of a class holding all of them (no per-class count of values)."""


class TCloseness(Model):
    """t-closeness with the chosen EMD ground distance: ``EMD <= t`` in every class.
    Achieved: the largest class EMD.

    The EMD is a ratio of integers (equal: ``sum |n_s N - n_s' N_c| / (2 N_c N)``; ordered:
    ``sum_i |C_i N - T_i N_c| / ((m-1) N_c N)`` with cumulative counts; hierarchical likewise
    per level); a class within rounding of ``t`` (read as the decimal it was written as) is
    decided on those integers, so an EMD of exactly 1/5 passes ``t=0.2``."""

    name = "t_closeness"
    higher_is_better = False
    needs_q = True

    def __init__(
        self, t: float, distance: Distance = "equal", hierarchy: Any | None = None
    ) -> None:
        self.t = require_real("t", t, low=0.0, high=1.0)
        if distance not in ("equal", "ordered", "hierarchical"):
            raise InvalidParameterError(
                f"distance must be 'equal', 'ordered' or 'hierarchical', got {distance!r}"
            )
        self.distance: Distance = distance
        self._hierarchy: pl.DataFrame | None = None
        if distance == "hierarchical":
            if hierarchy is None:
                raise InvalidParameterError("hierarchical t-closeness needs a hierarchy")
            self._hierarchy = _with_root(hierarchy_frame(hierarchy))
        elif hierarchy is not None:
            raise InvalidParameterError("a hierarchy is only used with distance='hierarchical'")
        self._exact_t = decimal(t)
        self._paths: dict[str, tuple[str, ...]] | None = None

    @property
    def exact_needs_text(self) -> bool:
        """The exact routine matches values with hierarchy leaves by their text."""
        return self.distance == "hierarchical"

    def params(self) -> dict[str, object]:
        return {"t": self.t, "distance": self.distance}

    @property
    def identity_only(self) -> bool:  # type: ignore[override]
        """The equal distance reads only which values are equal; the others their order or
        their place in the hierarchy."""
        return self.distance == "equal"

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved <= self.t

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        fast = self._compiled_verdict(rows)
        if fast is not None:
            return fast
        emd = self._array_emd(rows)
        if emd is None:
            return None
        absent = ~rows.present
        band = self._band(rows)
        passed = (emd <= self.t) | absent
        uncertain = (np.abs(emd - self.t) <= band) & ~absent
        return ClassVerdict(passed, uncertain)

    def suppression_floor(self, rows: EncodedRows, slack: float) -> Any:
        # A part passing against the retained rows' distribution q' has f.(p - q) <= t + slack
        # for every 1-Lipschitz f (f.(p - q') <= EMD(p, q') <= t, and f.(q' - q) <= slack:
        # removing at most slack*N of the N rows moves q by at most slack in total variation,
        # and f spans at most 1); a failing part has f.p <= max_C f. Summed over the parts,
        # f.n <= P (t + slack + f.q) + F max_C f, so F >= |C| (f.(p - q) - tau) /
        # (max_C f - f.q - tau). The equal and hierarchical distances take f.(p - q) = EMD
        # and max_C f - f.q <= 1 (the convexity bound); the ordered one the class's own dual,
        # flat into the values the suppression may remove (docs/anonymize.md).
        import numpy as np

        from ldiv_polars.models import emd_arrays

        tau = self.t + slack
        if tau >= 1.0:
            return None
        ordered = self.distance == "ordered" and rows.domain is not None \
            and rows.domain.width == 1
        vanishing = emd_arrays.vanishing_ids(rows, slack) if ordered else None
        if vanishing is not None:  # the EMD and the floor in one compiled call
            fast = emd_arrays.ordered_floor(rows, vanishing, tau, lambda m: self._band(rows, m))
            if fast is not None:
                rows.own(self, "emd", fast[0])
                return fast[1]
        band = self._band(rows)
        size = rows.size
        terms = None
        if ordered and emd_arrays.KERNEL:  # one compiled pass: the EMD kept with the rows
            terms = emd_arrays.ordered_floor_terms(rows, vanishing)
        emd = self._array_emd(rows)
        if emd is None:
            return None
        if self.distance != "ordered":
            return np.maximum(size * (emd - band - tau) / (1.0 - tau), 0.0)
        out = np.zeros(rows.classes)
        # f.(p - q) <= EMD: only the classes whose EMD exceeds tau can have a floor
        which = np.flatnonzero(emd - band > tau)
        if not which.shape[0]:
            return out
        if terms is None and vanishing is not None:
            terms = emd_arrays.ordered_floor_terms(rows, vanishing)
        if terms is None:
            return out
        num, spread = terms[0][which], terms[1][which]
        band = band if np.ndim(band) == 0 else band[which]
        excess = num - band - tau
        # spread >= num exactly; the band and a relative 1e-12 widen it against rounding
        den = (np.maximum(spread, num) + band - tau) * (1.0 + 1e-12)
        out[which] = np.where(excess > 0, size[which] * np.maximum(excess, 0.0) / den, 0.0)
        return out

    def _compiled_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        """:meth:`array_verdict` of the ordered distance in one compiled call (the EMD kept
        with the rows for the floor); None when it does not apply (another distance, no
        kernel, the EMD already computed, no one-column domain): the numpy form decides."""
        from ldiv_polars.models import emd_arrays
        from ldiv_polars.models.encoded import ClassVerdict

        dom = rows.domain
        if self.distance != "ordered" or not emd_arrays.KERNEL \
                or rows.owned(self, "emd") is not None or dom is None or dom.width != 1:
            return None
        out = emd_arrays.ordered_verdict(rows, self.t, lambda m: self._band(rows, m))
        if out is None:
            return None
        rows.own(self, "emd", out[0])
        return ClassVerdict(out[1], out[2])

    def _band(self, rows: EncodedRows, m: int | None = None) -> Any:
        """The rounding bound of the class EMDs (:func:`emd_band`): with a class's distinct
        values at most the table's ``m`` (given, or :attr:`EncodedRows.domain_size`), one
        number for every class when ``m`` is small (at most :data:`SHARED_BAND_VALUES`: the
        bound stays below ``1e-10``, and a class within it is decided exactly all the same),
        else per class from its values."""
        import numpy as np

        height = None if self._hierarchy is None else self._hierarchy.width - 1
        m = rows.domain_size if m is None else m
        distinct = m if m <= SHARED_BAND_VALUES else rows.distinct
        return emd_band(distinct, m, height, self.distance)

    def _array_emd(self, rows: EncodedRows) -> Any:
        """The float EMD of every class of ``rows``; None when the distance reads the values
        and the rows carry no one-column domain (or a value is not in the hierarchy). Kept
        with the rows (the verdict and the suppression floor both read it)."""
        emd = rows.owned(self, "emd")
        if emd is None:
            emd = self._compute_emd(rows)
            rows.own(self, "emd", emd)
        return emd

    def _compute_emd(self, rows: EncodedRows) -> Any:
        import numpy as np

        from ldiv_polars.models import emd_arrays

        if self.distance == "equal":
            q = rows.q
            s = np.bincount(rows.cls, weights=np.abs(rows.p - q) - q, minlength=rows.classes)
            return 0.5 * (1.0 + s)
        dom = rows.domain
        if dom is None or dom.width != 1:
            return None
        if self.distance == "ordered":
            return emd_arrays.ordered_emd(rows)
        assert self._hierarchy is not None
        hierarchy = self._hierarchy
        levels = dom.derived(self, "levels",
                             lambda: emd_arrays.hierarchy_levels(hierarchy, dom.text()))
        return None if levels is None else emd_arrays.hierarchical_emd(rows, levels)

    def uncertain(self) -> pl.Expr | None:
        height = None if self._hierarchy is None else self._hierarchy.width - 1
        m = None if self.distance == "equal" else pl.col(self.col("m"))
        band = emd_band(pl.col(DISTINCT), m, height, self.distance)
        return (pl.col(self.col("emd")) - self.t).abs() <= band

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        emd = self.exact_emd(cls, ref)
        passed = emd <= self._exact_t
        return passed, agreeing(emd, passed, self.t, "<=")

    def exact_emd(self, cls: ClassCounts, ref: Reference) -> Fraction:
        """The class's EMD as a fraction of integers (counts ``n`` of the class, ``n_s`` of
        the table; class size ``N_c``, table size ``N``)."""
        total, size = ref.total, cls.size
        own = dict(zip(cls.ranks, cls.counts))
        # e_s = n_s(class) N - n_s(table) N_c: the p - q of each value, scaled by N_c N
        extra = [own.get(i, 0) * total - tn * size for i, tn in enumerate(ref.counts)]
        scale = size * total
        if self.distance == "equal":
            return Fraction(sum(abs(e) for e in extra), 2 * scale)
        if self.distance == "ordered":
            m = len(extra)
            if m <= 1:
                return Fraction(0)
            acc = cum = 0
            for e in extra[:-1]:
                cum += e
                acc += abs(cum)
            return Fraction(acc, (m - 1) * scale)
        return self._hierarchical_exact(extra, ref, scale)

    def _hierarchical_exact(self, extra: list[int], ref: Reference, scale: int) -> Fraction:
        """``sum over levels h, nodes N at h of h * min(pos(N), neg(N)) / (H N_c N)``, with
        pos/neg the positive/negative extras of N's children (as the Polars form groups them:
        by node and child label per level)."""
        paths = self._leaf_paths()
        text = ref.text if ref.text is not None else tuple(str(v) for v in ref.labels)
        rows = [(paths[t], e) for t, e in zip(text, extra) if e]
        height = self._hierarchy.width - 1 if self._hierarchy is not None else 0
        cost = 0
        for h in range(1, height + 1):
            per_child: dict[tuple[str, str], int] = {}
            for path, e in rows:
                key = (path[h], path[h - 1])
                per_child[key] = per_child.get(key, 0) + e
            pos: dict[str, int] = {}
            neg: dict[str, int] = {}
            for (node, _), e in per_child.items():
                side = pos if e > 0 else neg
                side[node] = side.get(node, 0) + abs(e)
            cost += h * sum(min(v, neg.get(node, 0)) for node, v in pos.items())
        return Fraction(cost, height * scale)

    def _leaf_paths(self) -> dict[str, tuple[str, ...]]:
        """Leaf text -> (leaf, its ancestors at levels 1..H)."""
        if self._paths is None:
            assert self._hierarchy is not None
            self._paths = {row[0]: tuple(row) for row in self._hierarchy.iter_rows()}
        return self._paths

    def sql_call(self) -> SqlCall:
        spec = {"model": self.name, "t": self._exact_t, "distance": self.distance}
        if self._hierarchy is not None:
            return SqlCall("ldiv__t_closeness_hierarchical_classes_x", (self.t,),
                           self._hierarchy, spec | {"hierarchy": self._hierarchy.rows()},
                           stats_macro="ldiv__t_closeness_hierarchical_classes_st")
        return SqlCall("ldiv__t_closeness_classes_x", (self.t, self.distance), spec=spec,
                       stats_macro="ldiv__t_closeness_classes_st")

    @property
    def hierarchy(self) -> pl.DataFrame | None:
        """The value hierarchy of the hierarchical distance (ARX layout, strings, with a root
        level added when the last level has several values); None for the other distances."""
        return self._hierarchy

    def validate(self, fs: FrequencySet) -> None:
        if self._hierarchy is None:
            return
        s = fs.sensitive[0]
        leaves = self._hierarchy.get_column(self._hierarchy.columns[0])
        values = fs.frame.select(pl.col(s).cast(pl.String).unique()).collect().to_series()
        missing = values.filter(~values.is_in(leaves.implode()) | values.is_null())
        if missing.len():
            shown = ", ".join(repr(v) for v in missing.head(5).to_list())
            raise InvalidParameterError(
                f"{missing.len()} value(s) of {s!r} missing from the hierarchy, e.g. {shown}"
            )

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        if self.distance == "equal":
            p, q = pl.col(ROW_P), pl.col(ROW_Q)
            return [(0.5 * (1.0 + ((p - q).abs() - q).sum())).alias(self.col("emd"))]
        return [pl.col(ROW_M).first().alias(self.col("m"))]

    def frames(self, ctx: ClassContext) -> list[pl.LazyFrame]:
        if self.distance == "ordered":
            return [_ordered_emd(ctx, self.col("emd"))]
        if self.distance == "hierarchical":
            assert self._hierarchy is not None
            return [_hierarchical_emd(ctx, self._hierarchy, self.col("emd"))]
        return []

    def value(self) -> pl.Expr:
        return pl.col(self.col("emd"))

    def passes(self) -> pl.Expr:
        return pl.col(self.col("emd")) <= self.t

    def reason(self) -> pl.Expr:
        return pl.format(
            f"EMD ({self.distance}) {{}} > t={reason_param(self.t)}",
            reason_number(pl.col(self.col("emd")))
        )


def _ordered_emd(ctx: ClassContext, out: str) -> pl.LazyFrame:
    """The ordered-distance EMD of every class (column ``out``, one row per class): per row of
    a class, the closed-form sum over the stretch of the domain from its value to the next
    value the class holds (:func:`_ordered_rows`), plus the stretch before the class's first
    value; divided by ``m - 1`` for a domain of ``m`` values."""
    domain = _ordered_domain(ctx)
    sq = domain.select("__idx", "__SQ")

    def lookup(frame: pl.LazyFrame, key: str, name: str) -> pl.LazyFrame:
        return frame.join(
            sq.rename({"__idx": key, "__SQ": name}), on=key, how="left"
        ).with_columns(pl.col(name).fill_null(0.0))

    rows = _ordered_rows(ctx, domain).with_columns((pl.col("__idx") - 1).alias("__a1"))
    rows = lookup(rows, "__a1", "__SQa1")
    rows = lookup(rows, "__split", "__SQs")
    rows = lookup(rows, "__b", "__SQb")
    P = pl.col("__P")
    seg = (
        pl.when(pl.col("__b") >= pl.col("__idx"))
        .then(
            P * (pl.col("__split") - pl.col("__idx") + 1)
            - (pl.col("__SQs") - pl.col("__SQa1"))
            + (pl.col("__SQb") - pl.col("__SQs"))
            - P * (pl.col("__b") - pl.col("__split"))
        )
        .otherwise(0.0)
    )
    head = pl.when(pl.col("__first")).then(pl.col("__SQa1")).otherwise(0.0)
    return rows.group_by(list(ctx.qi)).agg(
        pl.when(pl.col("__m").first() > 1)
        .then((seg + head).sum() / (pl.col("__m").first() - 1))
        .otherwise(0.0)
        .alias(out)
    )


def _ordered_domain(ctx: ClassContext) -> pl.LazyFrame:
    """The table's values in order: index ``__idx``, cumulative reference share ``__Q``, its
    running sum ``__SQ`` and the domain size ``__m``."""
    return (
        ctx.reference.sort(ctx.s)
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("__idx"),
            pl.col(ROW_Q).cum_sum().alias("__Q"),
            pl.len().cast(pl.Int64).alias("__m"),
        )
        .with_columns(pl.col("__Q").cum_sum().alias("__SQ"))
    )


def _ordered_rows(ctx: ClassContext, domain: pl.LazyFrame) -> pl.LazyFrame:
    """Each row of a class with its value's index, the class's cumulative share ``__P`` up to
    it, the end ``__b`` of its stretch (the index before the class's next value), whether it is
    the class's first value, and ``__split``: where ``P - Q`` changes sign in the stretch (the
    last index with ``Q <= P``, clipped to the stretch)."""
    qi, s = list(ctx.qi), ctx.s
    rows = ctx.rows.select(*qi, s, ROW_P).join(
        domain.select(s, "__idx", "__m"), on=s, how="left", nulls_equal=True
    )
    rows = rows.with_columns(
        pl.col(ROW_P).cum_sum().over(qi, order_by="__idx").alias("__P"),
        (
            pl.col("__idx").shift(-1).over(qi, order_by="__idx").fill_null(pl.col("__m") - 1)
            - 1
        ).alias("__b"),
        (pl.col("__idx") == pl.col("__idx").min().over(qi)).alias("__first"),
    )
    # g = last domain index with Q_g <= P (-1 if none)
    return (
        rows.sort("__P")
        .join_asof(
            domain.select(pl.col("__Q"), pl.col("__idx").alias("__g")).sort("__Q"),
            left_on="__P",
            right_on="__Q",
            strategy="backward",
        )
        .with_columns(pl.col("__g").fill_null(-1))
        .with_columns(
            pl.min_horizontal(pl.max_horizontal(pl.col("__g"), pl.col("__idx") - 1), pl.col("__b"))
            .alias("__split")
        )
    )


def _with_root(frame: pl.DataFrame) -> pl.DataFrame:
    last = frame.columns[-1]
    if frame.get_column(last).n_unique() > 1:
        frame = frame.with_columns(pl.lit("*").alias(f"{last}__root"))
    return frame


def _hierarchical_emd(ctx: ClassContext, hierarchy: pl.DataFrame, out: str) -> pl.LazyFrame:
    qi, s = list(ctx.qi), ctx.s
    levels = hierarchy.columns  # level 0 = leaf ... level H = root
    H = len(levels) - 1
    names = [f"__h{j}" for j in range(H + 1)]
    hier = hierarchy.rename(dict(zip(levels, names))).lazy()
    rows = (
        ctx.rows.select(*qi, pl.col(s).cast(pl.String).alias("__h0"), ROW_P)
        .join(hier, on="__h0", how="left")
    )
    ref = ctx.reference.select(pl.col(s).cast(pl.String).alias("__h0"), ROW_Q).join(
        hier, on="__h0", how="left"
    )
    parts: list[pl.LazyFrame] = []
    for h in range(1, H + 1):
        child, node = names[h - 1], names[h]
        q_child = ref.group_by(child).agg(pl.col(ROW_Q).sum().alias("__qc"))
        q_node = ref.group_by(node).agg(pl.col(ROW_Q).sum().alias("__qn"))
        per_child = (
            rows.group_by(*qi, node, child)
            .agg(pl.col(ROW_P).sum().alias("__pc"))
            .join(q_child, on=child, how="left")
            .with_columns((pl.col("__pc") - pl.col("__qc")).alias("__extra"))
        )
        per_node = (
            per_child.group_by(*qi, node)
            .agg(
                pl.col("__extra").clip(lower_bound=0.0).sum().alias("__pos"),
                pl.col("__pc").sum().alias("__pn"),
            )
            .join(q_node, on=node, how="left")
            .with_columns((pl.col("__pn") - pl.col("__qn")).alias("__extraN"))
            .select(
                *qi,
                (
                    (h / H)
                    * pl.min_horizontal(pl.col("__pos"), pl.col("__pos") - pl.col("__extraN"))
                ).alias("__cost"),
            )
        )
        parts.append(per_node)
    return pl.concat(parts).group_by(qi).agg(
        pl.col("__cost").sum().clip(lower_bound=0.0).alias(out)
    )


