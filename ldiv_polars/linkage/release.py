"""A *release*: an anonymized table plus the map from a raw QI vector to its class.

The adversary of the linkage attack knows a user's raw QI vector and finds the class holding it
in every release; so a release is (a) its anonymized table (class columns + sensitive column,
as rows or as a count table) and (b) a class map. Three kinds of class map:

* :meth:`Release.from_mapping` — an explicit table ``(raw qi..., class columns...)``;
* :meth:`Release.from_intervals` — contiguous intervals ``[lo, hi]`` of one ordered QI column
  (a lazy ``search_sorted`` expression, no join);
* :meth:`Release.from_hierarchy` — a hierarchy node per QI column (ARX layout: first column the
  raw value, one column per level), at a chosen level.

Everything stays lazy: :meth:`Release.counts` is the group-by of the release in the engine and
:meth:`Release.classify` adds the class key to any frame holding raw QI columns.

>>> table = pl.DataFrame({"age": ["[20,29]", "[20,29]", "[30,39]"], "s": ["a", "b", "a"]})
>>> r = Release.from_intervals(table, "age", "s", [(20, 29), (30, 39)],
...                            labels=["[20,29]", "[30,39]"])
>>> r.classify(pl.LazyFrame({"age": [25, 35, 50]}), prefix="c").collect()["c0"].to_list()
['[20,29]', '[30,39]', None]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import as_names, validate_columns
from ldiv_polars.errors import InvalidParameterError, LdivError, UnknownColumnError

DOMAIN_LIMIT = 10_000_000
"""Largest domain :meth:`Release.domain` enumerates."""


class ReleaseError(LdivError, ValueError):
    """A release whose class map does not fit its table (missing columns, overlapping
    intervals, unknown hierarchy level, ...)."""


@dataclass(frozen=True, eq=False)
class _MappingMap:
    frame: pl.LazyFrame  # raw qi columns + class columns named by the release's class columns
    raw: tuple[str, ...]
    classes: tuple[str, ...]  # names of the class columns inside ``frame``


@dataclass(frozen=True, eq=False)
class _IntervalMap:
    column: str
    lows: pl.Series
    highs: pl.Series
    labels: pl.Series


@dataclass(frozen=True, eq=False)
class _HierarchyMap:
    frames: dict[str, pl.DataFrame]  # column -> (raw: String, gen: String)


@dataclass(frozen=True, eq=False)
class Release:
    """An anonymized table and its class map (build with the ``from_*`` constructors)."""

    table: pl.LazyFrame
    qi: tuple[str, ...]
    sensitive: str
    class_columns: tuple[str, ...]
    kind: Literal["mapping", "intervals", "hierarchy"]
    _map: Any = field(repr=False)
    count: str | None = None
    name: str | None = None
    source: str | None = None  # the file the table was read from (named in errors)

    # --- constructors ---------------------------------------------------------------------------

    @classmethod
    @reads_input
    def from_mapping(
        cls,
        table: TableLike,
        qi: str | Iterable[str],
        sensitive: str,
        mapping: pl.DataFrame | pl.LazyFrame | Mapping[Any, Any],
        *,
        class_columns: str | Iterable[str] | None = None,
        mapping_class_columns: str | Iterable[str] | None = None,
        count: str | None = None,
        name: str | None = None,
        source: str | None = None,
        mapping_source: str | None = None,
    ) -> Release:
        """Explicit class map.

        ``table`` holds the ``class_columns`` (default: the QI names, generalized values) and
        ``sensitive`` (and ``count`` when it is a count table). ``mapping`` holds the raw QI
        columns and the class columns; a class column named like a raw QI column appears in the
        mapping as ``<name>_class`` unless ``mapping_class_columns`` names them. A Python dict
        ``{raw: class}`` (tuples for several columns) is accepted too.

        The map is a partition of the raw QI vectors (the paper's equivalence classes are
        disjoint, §2.3): a raw vector in two classes, or a null raw or class value, is a
        :class:`ReleaseError` naming ``mapping_source`` (the map's file, when given), the column
        and the value; a row given twice is one fact. ``source`` (the table's file) is named
        when the table holds a null sensitive value (raised by :func:`link` and
        :func:`post_linkage`, which read it).

        >>> t = pl.DataFrame({"zip": ["1300*", "1300*"], "s": ["a", "b"]})
        >>> m = pl.DataFrame({"zip": ["13001", "13002"], "zip_class": ["1300*", "1300*"]})
        >>> Release.from_mapping(t, "zip", "s", m).counts().collect().height
        2
        """
        qi_t = as_names(qi)
        cc = as_names(class_columns) if class_columns is not None else qi_t
        lf = _release_table(table, cc, sensitive, count)
        mlf, mcc = _mapping_frame(mapping, qi_t, cc, mapping_class_columns)
        mdf = _checked_class_map(mlf.select(*qi_t, *mcc).unique().collect(), qi_t, mcc,
                                 mapping_source or name or "the class map")
        return cls(table=lf, qi=qi_t, sensitive=sensitive, class_columns=cc, kind="mapping",
                   _map=_MappingMap(mdf.lazy(), qi_t, mcc), count=count, name=name,
                   source=source)

    @classmethod
    def from_intervals(
        cls,
        table: TableLike,
        column: str,
        sensitive: str,
        bounds: Sequence[tuple[Any, Any]],
        *,
        labels: Sequence[Any] | None = None,
        class_column: str | None = None,
        count: str | None = None,
        name: str | None = None,
    ) -> Release:
        """Contiguous intervals ``[lo, hi]`` (inclusive, ascending, disjoint) of one ordered QI
        column. The table's ``class_column`` (default: ``column``) holds ``labels[k]`` for the
        k-th interval (default labels: 0, 1, ...).
        Raises :class:`ReleaseError` when no interval is given, the labels do not match the
        intervals, or the intervals are not ascending and disjoint."""
        if not bounds:
            raise ReleaseError("no intervals given")
        lows = [b[0] for b in bounds]
        highs = [b[1] for b in bounds]
        for k, (lo, hi) in enumerate(bounds):
            if lo > hi:
                raise ReleaseError(f"interval {k} has lo > hi: {(lo, hi)!r}")
            if k and lo <= highs[k - 1]:
                raise ReleaseError(
                    f"intervals must be ascending and disjoint; {bounds[k - 1]!r} and {(lo, hi)!r}")
        labs = list(range(len(bounds))) if labels is None else list(labels)
        if len(labs) != len(bounds):
            raise ReleaseError(f"{len(labs)} labels for {len(bounds)} intervals")
        cc = class_column or column
        lf = _release_table(table, (cc,), sensitive, count)
        return cls(table=lf, qi=(column,), sensitive=sensitive, class_columns=(cc,),
                   kind="intervals",
                   _map=_IntervalMap(column, pl.Series(lows), pl.Series(highs), pl.Series(labs)),
                   count=count, name=name)

    @classmethod
    def from_hierarchy(
        cls,
        table: TableLike,
        sensitive: str,
        hierarchies: Mapping[str, Any],
        levels: Mapping[str, int],
        *,
        count: str | None = None,
        name: str | None = None,
    ) -> Release:
        """Full-domain generalization: QI column ``c`` is generalized to level ``levels[c]`` of
        ``hierarchies[c]`` (a :class:`~ldiv_polars.hierarchy.Hierarchy` or a DataFrame in ARX
        layout). The table holds the generalized values under the QI column names.
        Raises :class:`ReleaseError` when no hierarchy is given, the hierarchies and levels name
        different columns, a level is out of range, or a hierarchy is not a partition at its
        level (a leaf in two nodes, a null leaf or node: as :meth:`from_mapping`), and
        :class:`~ldiv_polars.errors.InvalidParameterError` on a hierarchy of another type."""
        if set(hierarchies) != set(levels):
            raise ReleaseError("hierarchies and levels must name the same QI columns")
        qi_t = tuple(hierarchies)
        if not qi_t:
            raise ReleaseError("no hierarchy given")
        frames: dict[str, pl.DataFrame] = {}
        for c in qi_t:
            h = hierarchies[c]
            df = h.frame if hasattr(h, "frame") and isinstance(h.frame, pl.DataFrame) else h
            if not isinstance(df, pl.DataFrame):
                raise InvalidParameterError(
                    f"hierarchy for {c!r} must be a Hierarchy or a DataFrame, "
                    f"got {type(h).__name__}")
            lvl = levels[c]
            if isinstance(lvl, bool) or not isinstance(lvl, int) or not 0 <= lvl < df.width:
                raise ReleaseError(
                    f"level {lvl!r} out of range for the hierarchy of {c!r} (0..{df.width - 1})")
            pairs = df.select(pl.col(df.columns[0]).cast(pl.String).alias(c),
                              pl.col(df.columns[lvl]).cast(pl.String).alias(f"{c} level {lvl}"))
            frames[c] = _checked_class_map(pairs.unique(), (c,), (f"{c} level {lvl}",),
                                           f"the hierarchy of {c!r}").rename(
                {c: "raw", f"{c} level {lvl}": "gen"})
        lf = _release_table(table, qi_t, sensitive, count)
        lf = lf.with_columns([pl.col(c).cast(pl.String) for c in qi_t])
        return cls(table=lf, qi=qi_t, sensitive=sensitive, class_columns=qi_t, kind="hierarchy",
                   _map=_HierarchyMap(frames), count=count, name=name)

    # --- lazy views -----------------------------------------------------------------------------

    def label(self, j: int = 0) -> str:
        """The release's name, or ``release_<j+1>`` for an unnamed ``j``-th release."""
        return self.name or f"release_{j + 1}"

    def counts(self, prefix: str | None = None) -> pl.LazyFrame:
        """Lazy count table ``(class columns..., sensitive, n)`` — the release's sufficient
        statistic (one group-by in the engine). With ``prefix`` the class columns are renamed
        ``prefix0, prefix1, ...``."""
        keys = [*self.class_columns, self.sensitive]
        agg = pl.len() if self.count is None else pl.col(self.count).sum()
        out = self.table.group_by(keys).agg(agg.cast(pl.Int64).alias(COUNT))
        out = out.filter(pl.col(COUNT) > 0)
        if prefix is not None:
            out = out.rename({c: f"{prefix}{k}" for k, c in enumerate(self.class_columns)})
        return out

    def require_sensitive(self, nulls: int) -> None:
        """Raise :class:`ReleaseError` naming the table's ``source`` (or the release's name)
        when ``nulls`` (the number of the release's records with a null sensitive value, which
        the caller counted in its own read of the table) is not 0: the paper's records hold a
        value s_i of 𝒮 (§2.2), and a null would be linked as a value of its own."""
        if nulls:
            where = self.source or self.name or "a release"
            raise ReleaseError(f"{where}: {nulls} null value(s) in the sensitive column "
                               f"{self.sensitive!r}; every record of a release holds a "
                               "sensitive value")

    def classify(self, lf: pl.LazyFrame, prefix: str) -> pl.LazyFrame:
        """``lf`` (holding the raw QI columns) with this release's class key added as columns
        ``prefix0, prefix1, ...`` (null where the map does not cover the QI vector).
        Raises :class:`~ldiv_polars.errors.UnknownColumnError` when ``data`` lacks a QI column."""
        schema = lf.collect_schema()
        missing = [c for c in self.qi if c not in schema]
        if missing:
            raise UnknownColumnError(missing, schema.names())
        out_names = [f"{prefix}{k}" for k in range(len(self.class_columns))]
        target_types = self.table.collect_schema()
        if self.kind == "intervals":
            m: _IntervalMap = self._map
            col = pl.col(m.column)
            lows = m.lows.cast(schema[m.column], strict=False)
            highs = m.highs.cast(schema[m.column], strict=False)
            idx = pl.lit(lows).search_sorted(col, side="right").cast(pl.Int64) - 1
            safe = idx.clip(0, m.lows.len() - 1)
            inside = (idx >= 0) & (col <= pl.lit(highs).gather(safe))
            labels = m.labels.cast(target_types[self.class_columns[0]], strict=False)
            return lf.with_columns(
                pl.when(inside).then(pl.lit(labels).gather(safe)).otherwise(None)
                .alias(out_names[0]))
        if self.kind == "hierarchy":
            h: _HierarchyMap = self._map
            out = lf
            for k, c in enumerate(self.qi):
                mf = h.frames[c].lazy().rename({"raw": "__raw", "gen": out_names[k]})
                out = out.with_columns(pl.col(c).cast(pl.String).alias("__raw")).join(
                    mf, on="__raw", how="left", maintain_order="left").drop("__raw")
            return out
        mm: _MappingMap = self._map
        ren = {f"__raw{k}": c for k, c in enumerate(mm.raw)}
        mf = mm.frame.select(
            *[pl.col(c).cast(schema[c], strict=False).alias(f"__raw{k}")
              for k, c in enumerate(mm.raw)],
            *[pl.col(c).cast(target_types[cc], strict=False).alias(out_names[k])
              for k, (c, cc) in enumerate(zip(mm.classes, self.class_columns))],
        )
        out = lf.with_columns([pl.col(c).alias(k) for k, c in ren.items()])
        return out.join(mf, on=list(ren), how="left", nulls_equal=True,
                        maintain_order="left").drop(list(ren))

    def domain(self) -> pl.LazyFrame:
        """Every raw QI vector the class map knows (mapping rows, hierarchy leaves crossed,
        integer points of the intervals); raises when it is not enumerable or too large."""
        if self.kind == "mapping":
            return self._map.frame.select(self.qi).unique()
        if self.kind == "hierarchy":
            sizes = 1
            for c in self.qi:
                sizes *= self._map.frames[c].height
            if sizes > DOMAIN_LIMIT:
                raise ReleaseError(f"domain of {sizes} QI vectors is too large; pass a universe")
            out: pl.LazyFrame | None = None
            for c in self.qi:
                leaves = self._map.frames[c].select(pl.col("raw").alias(c)).lazy()
                out = leaves if out is None else out.join(leaves, how="cross")
            assert out is not None
            return out
        m: _IntervalMap = self._map
        if not m.lows.dtype.is_integer():
            raise ReleaseError("the domain of non-integer intervals is not enumerable; "
                               "pass a universe")
        total = int(((m.highs - m.lows) + 1).sum())
        if total > DOMAIN_LIMIT:
            raise ReleaseError(f"domain of {total} values is too large; pass a universe")
        parts = [pl.int_range(int(lo), int(hi) + 1, eager=True)
                 for lo, hi in zip(m.lows.to_list(), m.highs.to_list())]
        return pl.concat(parts).alias(m.column).to_frame().lazy()

    def check(self, l: int) -> Any:
        """The release's own l-diversity by the foundation checker (``DistinctLDiversity(l)``
        evaluated on the release's count table; returns a ``ModelResult``)."""
        return check_counts(self.counts(), self.class_columns, self.sensitive, l)


def check_counts(counts: pl.LazyFrame, class_columns: Sequence[str], sensitive: str,
                 l: int) -> Any:
    """``DistinctLDiversity(l)`` of a count table ``(class columns..., sensitive, n)`` by the
    foundation's ``evaluate_classes`` (no row is expanded). Returns the ``ModelResult``.
    Raises :class:`ReleaseError` on an empty count table."""
    from ldiv_polars.core.frequency import FrequencySet
    from ldiv_polars.models import DistinctLDiversity, evaluate_classes, table_results

    model = DistinctLDiversity(l)
    fs = FrequencySet(counts.select(*class_columns, sensitive, COUNT).collect().lazy(),
                      tuple(class_columns), (sensitive,))
    classes = evaluate_classes(fs, [model]).collect()
    if classes.height == 0:
        raise ReleaseError("the count table is empty")
    return table_results(classes, [model])[0]


def _checked_class_map(frame: pl.DataFrame, raw: tuple[str, ...], classes: tuple[str, ...],
                       where: str) -> pl.DataFrame:
    """``frame`` (the distinct rows of a class map) when it is a partition of its raw QI
    vectors: no null raw or class value, no raw vector in two classes. Raises
    :class:`ReleaseError` naming ``where``, the column and the value otherwise."""
    for cols, what in ((raw, "raw"), (classes, "class")):
        for c in cols:
            n = frame.get_column(c).null_count()
            if n:
                raise ReleaseError(f"{where}: {n} null {what} value(s) in {c!r}; a class map "
                                   "maps known raw QI values to classes")
    dup = frame.filter(pl.len().over(list(raw)) > 1).sort(list(raw)).head(2)
    if dup.height:
        vec = dup.row(0)[: len(raw)]
        shown = repr(vec[0]) if len(raw) == 1 else repr(vec)
        cls_pair = [r[len(raw):] for r in dup.rows()]
        cls_show = [repr(c[0]) if len(c) == 1 else repr(c) for c in cls_pair]
        raise ReleaseError(
            f"{where}: raw value {shown} of {', '.join(map(repr, raw))} is in two classes "
            f"({cls_show[0]} and {cls_show[1]}); equivalence classes must be disjoint")
    return frame


def _mapping_frame(mapping: pl.DataFrame | pl.LazyFrame | Mapping[Any, Any],
                   qi: tuple[str, ...], class_columns: tuple[str, ...],
                   mapping_class_columns: str | Iterable[str] | None
                   ) -> tuple[pl.LazyFrame, tuple[str, ...]]:
    """The class map of :meth:`Release.from_mapping` as a frame of the raw QI columns and the
    class columns, and the class columns' names in it. Raises :class:`ReleaseError` on an
    empty or malformed dict or mismatched ``mapping_class_columns``,
    :class:`UnknownColumnError` on a missing column, :class:`InvalidParameterError` on another
    type."""
    default = tuple(f"{c}_class" if c in qi else c for c in class_columns)
    if isinstance(mapping, Mapping):
        return _dict_mapping(mapping, qi, class_columns, default), default
    if not isinstance(mapping, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError("mapping must be a DataFrame, LazyFrame or dict")
    mlf = mapping.lazy()
    mcc = default
    if mapping_class_columns is not None:
        mcc = as_names(mapping_class_columns)
        if len(mcc) != len(class_columns):
            raise ReleaseError("mapping_class_columns must name one column per class column")
    names = mlf.collect_schema().names()
    missing = [c for c in (*qi, *mcc) if c not in names]
    if missing:
        raise UnknownColumnError(missing, names)
    return mlf, mcc


def _dict_mapping(mapping: Mapping[Any, Any], qi: tuple[str, ...],
                  class_columns: tuple[str, ...], names: tuple[str, ...]) -> pl.LazyFrame:
    """A dict ``{raw: class}`` (tuples for several columns) as a frame of the raw QI columns
    and the class columns ``names``; raises :class:`ReleaseError` when it is empty or an
    entry has the wrong number of values."""
    rows = []
    for raw, klass in mapping.items():
        raw_t = raw if isinstance(raw, tuple) else (raw,)
        cls_t = klass if isinstance(klass, tuple) else (klass,)
        if len(raw_t) != len(qi) or len(cls_t) != len(class_columns):
            raise ReleaseError(
                f"mapping entry {raw!r} -> {klass!r} does not have {len(qi)} raw and "
                f"{len(class_columns)} class value(s)")
        rows.append((*raw_t, *cls_t))
    if not rows:
        raise ReleaseError("the mapping is empty")
    return pl.DataFrame(rows, schema=[*qi, *names], orient="row").lazy()


def _release_table(table: TableLike, class_columns: Sequence[str], sensitive: str,
                   count: str | None) -> pl.LazyFrame:
    if not isinstance(sensitive, str):
        raise InvalidParameterError("a release has one sensitive column")
    lf = to_lazyframe(table)
    validate_columns(lf, list(class_columns), [sensitive])
    if count is not None:
        names = lf.collect_schema().names()
        if count not in names:
            raise UnknownColumnError([count], names)
    return lf
