"""The linkage attack across releases (§2.3 of Rameshwar & Tandon).

An adversary knows the raw QI vector ``q`` of a user present in all t releases. In release j it
finds the class ``c_j`` holding ``q`` and computes ``n_[t](s) = min_j n^(c_j)(s)``; the linkage
is ``{(s, n_[t](s)) : n_[t](s) > 0}`` and its *diversity* the number of such ``s``. Everything
is a join of the releases' count tables in the engine:

* :func:`link` — one target: the linkage, its diversity and the class hit in every release;
* :func:`post_linkage` — every distinct QI vector of a universe (or the known domain): its
  post-linkage class ``(c_1, ..., c_t)``, diversity, the overall ``l_[t] = min`` and the targets
  that collapse to one value (full disclosure).

>>> from ldiv_polars.linkage.examples import table2_releases
>>> lk = link(table2_releases(), {"gender": "Female", "postal": "560010"})
>>> lk.diversity, lk.counts.rows()
(1, [('Cervical cancer', 1)])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.linkage.release import Release, ReleaseError, check_counts

DIVERSITY = "diversity"
REVEALED = "revealed"
STREAMING = "streaming"


def _check_releases(releases: Sequence[Release]) -> list[Release]:
    rs = list(releases)
    if len(rs) < 1:
        raise InvalidParameterError("give at least one release")
    for r in rs:
        if not isinstance(r, Release):
            raise InvalidParameterError(f"not a Release: {r!r}")
    s0 = rs[0].table.collect_schema()[rs[0].sensitive]
    for r in rs[1:]:
        s = r.table.collect_schema()[r.sensitive]
        if s != s0 and not (s.is_numeric() and s0.is_numeric()):
            raise ReleaseError(
                f"sensitive columns differ in type across releases ({s0} vs {s}); cast them")
    return rs


def _prefix(j: int) -> str:
    return f"__c{j}_"


def _class_cols(r: Release, j: int) -> list[str]:
    return [f"{_prefix(j)}{k}" for k in range(len(r.class_columns))]


def _counts_j(r: Release, j: int, s_name: str, s_dtype: pl.DataType,
              counts: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """Release ``j``'s count table (``counts``, or its lazy :meth:`Release.counts`), its class
    columns renamed by :func:`_prefix`, its sensitive column ``s_name`` of type ``s_dtype``
    and its count ``__n<j>``."""
    counts = r.counts() if counts is None else counts
    ren = {c: f"{_prefix(j)}{k}" for k, c in enumerate(r.class_columns)}
    return counts.rename({**ren, r.sensitive: s_name, COUNT: f"__n{j}"}).with_columns(
        pl.col(s_name).cast(s_dtype))


def _target_counts(r: Release, j: int, key: tuple[Any, ...] | None, s_name: str,
                   s_dtype: pl.DataType) -> pl.LazyFrame:
    """``(s_name, __n<j>)`` of release ``j``'s class ``key`` (empty when None), read once: the
    filter (the key, or a null sensitive value anywhere, which
    :meth:`~ldiv_polars.linkage.release.Release.require_sensitive` refuses) is pushed below
    the release's group-by."""
    n = f"__n{j}"
    hit = pl.all_horizontal([pl.col(c) == pl.lit(v) for c, v in zip(_class_cols(r, j), key)]) \
        if key is not None else pl.lit(False)
    counts = (_counts_j(r, j, s_name, s_dtype).filter(hit | pl.col(s_name).is_null())
              .collect(engine=STREAMING))
    r.require_sensitive(int(counts.filter(pl.col(s_name).is_null()).get_column(n).sum()))
    return counts.lazy().filter(hit).select(s_name, n)


@dataclass(frozen=True, eq=False)
class Linkage:
    """The result of linking t releases on one target."""

    target: dict[str, Any]
    counts: pl.DataFrame  # (sensitive, n) with n = min_j n^(c_j)(s) > 0, largest first
    diversity: int
    classes: list[dict[str, Any] | None]  # the class hit in every release (None: not covered)
    names: list[str] = field(default_factory=list)

    @property
    def covered(self) -> bool:
        """Whether every release maps the target to a non-empty class (Assumption 1)."""
        return all(c is not None for c in self.classes) and self.diversity > 0

    def to_dict(self) -> dict[str, Any]:
        """The linkage as a JSON-ready dict: the target, the linked sensitive counts, the
        diversity and the class matched in each release."""
        s = self.counts.columns[0]
        return {
            "target": self.target,
            "linkage": [{"s": v, "n": int(n)} for v, n in self.counts.select(s, COUNT).rows()],
            "diversity": self.diversity,
            "classes": {name: c for name, c in zip(self.names, self.classes)},
        }


@reads_input
def link(releases: Sequence[Release], target: Mapping[str, Any] | pl.DataFrame) -> Linkage:
    """Link ``releases`` on one raw QI vector ``target`` (a dict ``{qi column: value}`` or a
    one-row DataFrame): ``n_[t](s) = min_j n^(c_j)(s)`` as an inner join of the count tables on
    ``s`` in the engine. A target that some release does not cover gets diversity 0.
    Raises :class:`~ldiv_polars.errors.UnknownColumnError` when the target lacks a QI column and
    :class:`~ldiv_polars.errors.InvalidParameterError` when it is not a dict or a one-row
    DataFrame."""
    rs = _check_releases(releases)
    if isinstance(target, pl.DataFrame):
        if target.height != 1:
            raise InvalidParameterError("target must be one row")
        tgt = target.row(0, named=True)
    elif isinstance(target, Mapping):
        tgt = dict(target)
    else:
        raise InvalidParameterError("target must be a dict or a one-row DataFrame")
    needed = sorted({c for r in rs for c in r.qi})
    missing = [c for c in needed if c not in tgt]
    if missing:
        raise UnknownColumnError(missing, list(tgt))
    tlf = pl.DataFrame({c: [tgt[c]] for c in needed}).lazy()
    s_name = rs[0].sensitive
    s_dtype = rs[0].table.collect_schema()[s_name]
    hit: list[dict[str, Any] | None] = []
    joined: pl.LazyFrame | None = None
    for j, r in enumerate(rs):
        cc = _class_cols(r, j)
        key_row = r.classify(tlf, _prefix(j)).select(cc).collect()
        vals = key_row.row(0)
        covered = not any(v is None for v in vals)
        hit.append(dict(zip(r.class_columns, vals)) if covered else None)
        part = _target_counts(r, j, vals if covered else None, s_name, s_dtype)
        joined = part if joined is None else joined.join(part, on=s_name, how="inner",
                                                         nulls_equal=True)
    assert joined is not None
    ncols = [f"__n{j}" for j in range(len(rs))]
    out = (joined.select(s_name, pl.min_horizontal(ncols).alias(COUNT))
           .filter(pl.col(COUNT) > 0)
           .sort([COUNT, s_name], descending=[True, False])
           .collect())
    return Linkage(target=tgt, counts=out, diversity=out.height, classes=hit,
                   names=[r.label(j) for j, r in enumerate(rs)])


@dataclass(frozen=True, eq=False)
class PostLinkage:
    """Post-linkage view of every target of a universe.

    ``targets``: one row per distinct raw QI vector (QI columns, the class key in every release
    ``<release>.<class column>``, ``diversity``, ``revealed`` = the single value when diversity is
    1). ``classes``: one row per post-linkage class (class keys, ``diversity``, ``size``).
    ``dataset``: the overall post-linkage dataset D_[t] as counts (class keys, s, n).
    """

    targets: pl.DataFrame
    classes: pl.DataFrame
    dataset: pl.DataFrame
    class_columns: list[str]
    sensitive: str
    qi: list[str]

    @property
    def covered(self) -> pl.DataFrame:
        """Targets present in every release (diversity > 0)."""
        return self.targets.filter(pl.col(DIVERSITY) > 0)

    @property
    def uncovered(self) -> int:
        """Targets that some release does not cover (or whose classes share no value)."""
        return int(self.targets.filter(pl.col(DIVERSITY) == 0).height)

    @property
    def l_t(self) -> int | None:
        """Overall post-linkage diversity l_[t] = min over covered targets (None if none)."""
        cov = self.covered
        return None if cov.height == 0 else int(cov[DIVERSITY].min())  # type: ignore[arg-type]

    @property
    def collapsed(self) -> pl.DataFrame:
        """Targets whose linkage has one value left: the adversary learns it (``revealed``)."""
        return self.targets.filter(pl.col(DIVERSITY) == 1)

    def check(self, l: int) -> Any:
        """``DistinctLDiversity(l)`` of the overall post-linkage dataset by the foundation
        checker (a ``ModelResult``; cross-checks :attr:`l_t`)."""
        return check_counts(self.dataset.lazy(), self.class_columns, self.sensitive, l)

    def to_dict(self) -> dict[str, Any]:
        """The headline figures as a JSON-ready dict (``l_t``, collapsed, targets,
        uncovered, classes)."""
        return {
            "l_t": self.l_t,
            "collapsed": self.collapsed.height,
            "targets": self.targets.height,
            "uncovered": self.uncovered,
            "post_linkage_classes": self.classes.height,
        }


@reads_input
def post_linkage(releases: Sequence[Release], universe: TableLike | None = None) -> PostLinkage:
    """Post-linkage class and diversity of every distinct raw QI vector of ``universe`` (a table
    with the QI columns, e.g. the population or one of the raw tables; ``None``: the domain
    known to the first release's class map).

    Lazy throughout: the releases are only read by their group-bys (streaming engine); the
    joins run on count tables whose size is bounded by (post-linkage classes) x |S|.
    """
    rs = _check_releases(releases)
    needed = list(dict.fromkeys(c for r in rs for c in r.qi))
    u = _universe(rs[0], universe, needed)
    s_name = rs[0].sensitive
    all_cc: list[str] = []
    for j, r in enumerate(rs):
        u = r.classify(u, _prefix(j))
        all_cc += _class_cols(r, j)
    u = u.collect(engine=STREAMING)
    dataset = _linked_dataset(rs, u.select(all_cc).unique().drop_nulls().lazy(), all_cc)
    classes = dataset.group_by(all_cc).agg(
        pl.len().cast(pl.Int64).alias(DIVERSITY),
        pl.col(COUNT).sum().alias("size"),
        pl.when(pl.len() == 1).then(pl.col(s_name).first()).alias(REVEALED),
    )
    targets = (u.join(classes.select(*all_cc, DIVERSITY, REVEALED), on=all_cc, how="left")
               .with_columns(pl.col(DIVERSITY).fill_null(0)))
    pretty = {}
    for j, r in enumerate(rs):
        for k, c in enumerate(r.class_columns):
            pretty[f"{_prefix(j)}{k}"] = f"{r.label(j)}.{c}"
    if len(set(pretty.values())) == len(pretty):
        targets = targets.rename(pretty)
        classes = classes.rename(pretty)
        dataset = dataset.rename(pretty)
        all_cc = [pretty[c] for c in all_cc]
    return PostLinkage(targets=targets.sort(needed), classes=classes.sort(all_cc),
                       dataset=dataset, class_columns=all_cc, sensitive=s_name, qi=needed)


def _universe(first: Release, universe: TableLike | None, needed: list[str]) -> pl.LazyFrame:
    """The distinct QI vectors to link: of ``universe``, or of the first release's class map
    when None. Raises when a QI column is missing from it."""
    if universe is None:
        u = first.domain()
        names = u.collect_schema().names()
        absent = [c for c in needed if c not in names]
        if absent:
            raise InvalidParameterError(
                f"the first release's domain lacks QI column(s) {absent}; pass a universe")
    else:
        u = to_lazyframe(universe)
        names = u.collect_schema().names()
        absent = [c for c in needed if c not in names]
        if absent:
            raise UnknownColumnError(absent, names)
    return u.select(needed).unique()


def _linked_dataset(rs: list[Release], combos: pl.LazyFrame, all_cc: list[str]) -> pl.DataFrame:
    """The post-linkage dataset: per combination of classes (one per release) and sensitive
    value, the smallest of the releases' counts (rows with a positive count only)."""
    s_name = rs[0].sensitive
    s_dtype = rs[0].table.collect_schema()[s_name]
    lk = combos
    for j, r in enumerate(rs):
        cc = _class_cols(r, j)
        on = cc if j == 0 else [*cc, s_name]
        # counts first: each release's count table is one group-by in the engine, collected
        # (it is bounded by classes x |S|); the joins then run on small frames
        counts = r.counts().collect(engine=STREAMING)
        r.require_sensitive(int(counts.filter(pl.col(r.sensitive).is_null())
                                .get_column(COUNT).sum()))
        lk = lk.join(_counts_j(r, j, s_name, s_dtype, counts.lazy()), on=on, how="inner",
                     nulls_equal=True)
    ncols = [f"__n{j}" for j in range(len(rs))]
    return (lk.select(*all_cc, s_name, pl.min_horizontal(ncols).alias(COUNT))
            .filter(pl.col(COUNT) > 0)
            .collect(engine=STREAMING))
