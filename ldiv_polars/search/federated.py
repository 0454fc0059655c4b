"""Federated counts: sites that may not share rows share frequency sets, a trusted aggregator
merges them (a frequency set is a sum) and judges or anonymizes the union, and each site
applies the aggregator's release plan to its own rows.

- :func:`site_counts` / :func:`write_counts`: a site's frequency set, from any engine, at the
  bottom level or generalized to given hierarchy levels first (coarser counts disclose less),
  written to Parquet with its roles and levels in the file's metadata (``ldiv counts``);
- :func:`read_counts`: several counts files merged by summing on the key
  (:func:`~ldiv_polars.core.frequency.merge_frequency_sets`), their roles and levels checked
  to agree; :func:`~ldiv_polars.models.verdict.check_frequency_set` and
  :func:`~ldiv_polars.table_summary.frequency_set_summary` judge the merged set;
- :func:`anonymize_counts`: the lattice search of :func:`~ldiv_polars.search.anonymize` on
  the merged counts, its optimum re-verified on them; :class:`ReleasePlan` (levels and the
  suppressed classes' labels, JSON) is what the aggregator sends back;
- :func:`apply_plan`: a site's release of its rows under the plan, by any engine; the union
  of the sites' releases is the release of the union of their rows.

Counts are disclosive themselves (a class of size 1 is a person): they go to a trusted
aggregator only (docs/spark.md, "Federated counts").

>>> import polars as pl
>>> from ldiv_polars.hierarchy import Hierarchy
>>> from ldiv_polars.models import KAnonymity
>>> h = {"zip": Hierarchy([["a", "*"], ["b", "*"]], name="zip")}
>>> a = site_counts(pl.DataFrame({"zip": ["a", "b"], "s": ["x", "y"]}), "zip", "s")
>>> b = site_counts(pl.DataFrame({"zip": ["a", "b"], "s": ["y", "x"]}), "zip", "s")
>>> res, plan = anonymize_counts([a, b], h, KAnonymity(2))
>>> res.levels, plan.levels, plan.suppressed
({'zip': 0}, {'zip': 0}, [])
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ldiv_polars.core.engines.base import OutputPlan, engine_for
from ldiv_polars.core.frequency import COUNT, FrequencySet, merge_frequency_sets
from ldiv_polars.core.output import PARQUET_SUFFIXES, atomic_output
from ldiv_polars.core.inputs import check_input_path, translate_input_errors
from ldiv_polars.core.validate import NullPolicy
from ldiv_polars.errors import InputFormatError, InvalidParameterError, PlanMismatchError
from ldiv_polars.hierarchy.hierarchy import Hierarchy, HierarchyValueMissingError
from ldiv_polars.models.base import Model
from ldiv_polars.search.anonymize import (
    MASK,
    AnonymizationResult,
    VerificationError,
    anonymize,
    output_dtype,
    prepare_hierarchies,
)

META_KEY = "ldiv_counts"
"""The Parquet metadata key of a counts file: JSON ``{"qi", "sensitive", "levels"}``."""


def site_counts(data: Any, qi: str | Iterable[str], sensitive: str | Iterable[str] | None, *,
                hierarchies: Mapping[str, Any] | None = None,
                levels: Mapping[str, int] | None = None, engine: str | None = None,
                nulls: NullPolicy = "error", separator: str | None = None) -> FrequencySet:
    """A site's frequency set ``(qi..., sensitive..., n)`` counted by ``engine`` (default: the
    engine of ``data``'s type, else Polars), each QI in ``levels`` (with its hierarchy in
    ``hierarchies``) generalized to that level on the counts (its values the level's labels,
    the counts summed). Raises the engines' input errors, and
    :class:`~ldiv_polars.errors.InvalidParameterError` for a level without a hierarchy."""
    fs = engine_for(data, engine).frequency_set(data, qi, sensitive, nulls=nulls,
                                                separator=separator)
    frame = fs.frame.collect().rename({fs.count: COUNT}) if fs.count != COUNT \
        else fs.frame.collect()
    lv = {q: int(v) for q, v in (levels or {}).items() if int(v) != 0}
    if lv:
        hs = prepare_hierarchies(list(lv), hierarchies or {})
        frame = _labels_at(frame, hs, lv).group_by([*fs.qi, *fs.sensitive]) \
            .agg(pl.col(COUNT).sum())
    return FrequencySet(frame.lazy(), fs.qi, fs.sensitive)


def _labels_at(frame: pl.DataFrame, hs: Mapping[str, Hierarchy],
               levels: Mapping[str, int]) -> pl.DataFrame:
    """A counts ``frame`` with each QI of ``levels`` replaced by its label at that level (a
    string; a null stays null). Raises
    :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` for a value its hierarchy lacks
    (checked on the counts' distinct values, before the mapping)."""
    for q in levels:
        hs[q].check_covers(frame.get_column(q).drop_nulls(), column=q)
    return frame.with_columns(
        pl.col(q).cast(pl.String).replace_strict(hs[q].column(0).cast(pl.String),
                                                 hs[q].column(v).cast(pl.String))
        for q, v in levels.items())


def write_counts(fs: FrequencySet, path: str | Path, *, levels: Mapping[str, int] | None = None,
                 inputs: Iterable[object] = ()) -> None:
    """Write a frequency set (``count`` column ``n``) to the Parquet file ``path`` atomically,
    its roles and ``levels`` (default 0 for every QI) in the file's metadata (:data:`META_KEY`).
    Raises the output errors of :func:`~ldiv_polars.core.output.atomic_output`."""
    meta = {"qi": list(fs.qi), "sensitive": list(fs.sensitive),
            "levels": {q: int((levels or {}).get(q, 0)) for q in fs.qi}}
    frame = fs.frame.collect() if isinstance(fs.frame, pl.LazyFrame) else fs.frame
    with atomic_output(path, inputs=inputs, suffixes=PARQUET_SUFFIXES) as out:
        frame.select([*fs.qi, *fs.sensitive, fs.count]).rename({fs.count: COUNT}) \
            .write_parquet(out.path, metadata={META_KEY: json.dumps(meta)})
        out.check_rows(frame.height)


def read_counts(paths: Sequence[str | Path]) -> tuple[FrequencySet, dict[str, int]]:
    """The counts files ``paths`` merged by summing on the key, and their levels. Raises
    :class:`~ldiv_polars.errors.InputFormatError` for a missing file or one without counts
    metadata, :class:`~ldiv_polars.errors.UnreadableInputError` for one that is not Parquet, and
    :class:`~ldiv_polars.errors.InvalidParameterError` when the files' roles or levels
    differ or a file is given twice."""
    metas, frames = [], []
    _refuse_twice(paths)
    for p in paths:
        check_input_path(p)  # a missing or unreadable file: typed errors (exit 2)
        with translate_input_errors(p):
            raw = pl.read_parquet_metadata(p).get(META_KEY)
        if raw is None:
            raise InputFormatError(f"{str(p)!r} is not a counts file (written by ldiv counts)")
        metas.append(json.loads(raw))
        frames.append(pl.read_parquet(p))
    if any(m != metas[0] for m in metas):
        raise InvalidParameterError("the counts files differ in their columns or levels: "
                                    + "; ".join(json.dumps(m) for m in metas))
    meta = metas[0]
    return (merge_frequency_sets(frames, meta["qi"], meta["sensitive"]),
            {q: int(v) for q, v in meta["levels"].items()})


def _refuse_twice(paths: Sequence[str | Path]) -> None:
    """Raise :class:`~ldiv_polars.errors.InvalidParameterError` when two of ``paths`` are the
    same file (a path given twice, or a link to another): merged, its rows would count twice
    and every class look twice as large as it is."""
    seen: dict[tuple[int, int], str] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue  # check_input_path says why
        key = (st.st_dev, st.st_ino)
        if key in seen:
            also = "" if seen[key] == str(p) else f" (also as {str(p)!r})"
            raise InvalidParameterError(
                f"the counts file {seen[key]!r} is given twice{also}: its rows would count "
                "twice")
        seen[key] = str(p)


@dataclass
class ReleasePlan:
    """What a site needs to release its rows: each QI's hierarchy level, the suppressed
    classes (their labels at those levels, one list per class in ``qi`` order), how they
    are suppressed (``mode`` ``mask`` with ``mask``, or ``drop``), and per QI (and Enum
    sensitive column) the labels the union's released rows hold (``held``: the sites' outputs
    are Enums of only these, so no site's file names a value only suppressed rows held; None:
    every label of the level, a sensitive column's dtype as read)."""

    qi: list[str]
    levels: dict[str, int]
    suppressed: list[list[str]] = field(default_factory=list)
    mode: str = "mask"
    mask: str = MASK
    held: dict[str, list[str]] | None = None

    def to_json(self) -> str:
        """The plan as JSON (:meth:`from_json` reads it back)."""
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> ReleasePlan:
        """A plan from :meth:`to_json`'s text; :class:`InputFormatError` when it is not one."""
        try:
            d = json.loads(text)
            held = d.get("held")
            plan = cls(list(d["qi"]), {k: int(v) for k, v in d["levels"].items()},
                       [list(map(str, r)) for r in d["suppressed"]], str(d["mode"]),
                       str(d["mask"]), None if held is None else
                       {str(q): list(map(str, v)) for q, v in held.items()})
            if plan.mode not in ("mask", "drop") or set(plan.levels) != set(plan.qi):
                raise ValueError("mode must be mask or drop, one level per QI")
            return plan
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputFormatError(f"not a release plan: {exc}") from None

    def output_plan(self, hierarchies: Mapping[str, Hierarchy]) -> OutputPlan:
        """The engines' :class:`~ldiv_polars.core.engines.base.OutputPlan` of this plan over
        rows whose QIs are the hierarchies' raw values (the output dtypes of
        :func:`~ldiv_polars.search.anonymize.anonymize`)."""
        hs = {q: hierarchies[q] for q in self.qi}
        for q in self.qi:
            if not 0 <= self.levels.get(q, -1) < hs[q].height:
                raise InvalidParameterError(
                    f"the plan's level {self.levels.get(q)} of {q!r} is not a level of its "
                    f"hierarchy (0..{hs[q].height - 1}): a plan for other hierarchies")
        if any(len(r) != len(self.qi) for r in self.suppressed):
            raise InvalidParameterError("the plan's suppressed classes do not have one label "
                                        "per QI")
        dtypes = {q: output_dtype(hs[q], self.levels[q]) for q in self.qi}
        self._check_labels(dtypes)
        labels = {q: hs[q].column(self.levels[q]).cast(pl.String).cast(dtypes[q])
                  for q in self.qi}
        supp = None
        if self.suppressed:
            cols = list(zip(*self.suppressed))
            supp = pl.DataFrame({q: pl.Series(q, list(c), pl.String).cast(dtypes[q])
                                 for q, c in zip(self.qi, cols)}).to_struct("classes")
        written: dict[str, pl.DataType] = {
            c: output_dtype(hs[c], self.levels[c], v) if c in hs else pl.Enum(v)
            for c, v in (self.held or {}).items()}
        return OutputPlan(tuple(self.qi), {q: hs[q].column(0) for q in self.qi}, labels, supp,
                          mode="drop" if self.mode == "drop" else "mask", mask=self.mask,
                          dtypes=written)

    def _check_labels(self, dtypes: Mapping[str, pl.DataType]) -> None:
        """Raise :class:`InvalidParameterError` when a suppressed class or the held labels of
        a QI name a label its level (``dtypes``: the level's Enum) does not have."""
        for i, q in enumerate(self.qi):
            known = set(dtypes[q].categories.to_list())  # type: ignore[attr-defined]
            named = {r[i] for r in self.suppressed} | set((self.held or {}).get(q, ()))
            if named - known:
                shown = ", ".join(map(repr, sorted(named - known)[:5]))
                raise InvalidParameterError(
                    f"the plan names {shown} for {q!r}, not a label of level "
                    f"{self.levels[q]} of its hierarchy: a plan for other hierarchies")


def _cut(h: Hierarchy, level: int) -> Hierarchy:
    """The hierarchy of counts generalized to ``level``: its levels from ``level`` up."""
    if level == 0:
        return h
    frame = pl.DataFrame([h.column(j) for j in range(level, h.height)]).unique(
        maintain_order=True)
    return Hierarchy(frame, name=h.name)


def anonymize_counts(sets: Sequence[FrequencySet | str | Path],
                     hierarchies: Mapping[str, Any], models: Sequence[Model] | Model, *,
                     levels: Mapping[str, int] | None = None, **kwargs: Any
                     ) -> tuple[AnonymizationResult, ReleasePlan | None]:
    """The optimal full-domain generalization of the union of the sites' rows, found on
    their merged counts (``sets``: frequency sets or counts files, see :func:`read_counts`)
    with :func:`~ldiv_polars.search.anonymize.anonymize`'s search and keyword arguments, and
    its :class:`ReleasePlan` (None when no node satisfies the models). ``levels``: the levels
    the counts were built at (read from the files). The result has no ``output`` (the rows
    stay at the sites); its ``verification`` is the models checked on the merged counts at
    the chosen node."""
    if sets and all(isinstance(s, (str, Path)) for s in sets):
        fs, levels = read_counts(list(sets))  # type: ignore[arg-type]
    else:
        fs = merge_frequency_sets(list(sets))  # type: ignore[arg-type]
    base = {q: int((levels or {}).get(q, 0)) for q in fs.qi}
    hs = prepare_hierarchies(fs.qi, hierarchies)
    cut = {q: _cut(hs[q], base[q]) for q in fs.qi}
    result = anonymize(fs, fs.qi, fs.sensitive or None, cut, models, **kwargs)
    if result.levels is None or result.output_plan is None:
        return result, None
    op = result.output_plan
    supp = [] if op.suppressed is None else [
        [str(v) for v in row.values()] for row in op.suppressed.to_list()]
    held = {q: [str(v) for v in dt.categories.to_list()]  # type: ignore[attr-defined]
            for q, dt in (op.dtypes or {}).items()}
    plan = ReleasePlan(list(fs.qi), {q: base[q] + result.levels[q] for q in fs.qi}, supp,
                       op.mode, op.mask, held or None)
    return result, plan


def apply_plan(data: Any, plan: ReleasePlan, hierarchies: Mapping[str, Any],
               out: str | Path, *, engine: str | None = None) -> None:
    """Release a site's rows under ``plan`` (each QI generalized to its level, the plan's
    suppressed classes masked or dropped) with ``engine`` (default: the engine of ``data``'s
    type, else Polars), written to ``out`` atomically (never over the input). The rows are
    first checked against the plan (:func:`check_site_rows`: a
    :class:`~ldiv_polars.errors.PlanMismatchError` before anything is written). They are not
    re-verified here: the models hold on the union of the sites (the aggregator's check), not
    on one site's slice."""
    hs = prepare_hierarchies(plan.qi, hierarchies)
    eng = engine_for(data, engine)
    check_site_rows(data, plan, hs, engine=engine)
    release = eng.release(data, plan.output_plan(hs))
    eng.write(release.output, out, inputs=eng.input_paths(data))


def check_site_rows(data: Any, plan: ReleasePlan, hierarchies: Mapping[str, Any], *,
                    engine: str | None = None) -> None:
    """Check that ``plan`` can release the site's rows ``data``: every QI value is a raw value
    of its hierarchy, and every value the release would hold (a QI's label, masked where the
    plan suppresses; a column of the plan's ``held``) is one of the plan's written dtype. One
    frequency set of the rows (``engine``), no row collected. Raises
    :class:`~ldiv_polars.errors.PlanMismatchError` naming the first column that differs and
    its values: the site's rows are not those it counted (a value it never reported, or a
    value whose rows the plan suppressed everywhere now in a class it releases)."""
    _checked_sizes(data, plan, prepare_hierarchies(plan.qi, hierarchies), engine)


def _checked_sizes(data: Any, plan: ReleasePlan, hs: Mapping[str, Hierarchy],
                   engine: str | None) -> tuple[pl.DataFrame, int]:
    """:func:`check_site_rows`, then what :func:`expected_release_sizes` returns, from the
    same frequency set of the rows."""
    written = plan.output_plan(hs).dtypes or {}
    schema = engine_for(data, engine).schema(data)
    # a held column is checked whatever its dtype at this site (the Polars engine casts only
    # Enums): a value outside it is a row the site did not count either way
    extra = [c for c in written if c not in plan.qi and c in schema]
    released, suppressed = _released_classes(data, plan, hs, extra, engine)
    for c in [*plan.qi, *extra]:
        if c not in written:
            continue
        categories = written[c].categories  # type: ignore[attr-defined]
        bad = released.select(pl.col(c).drop_nulls().unique().sort()) \
            .filter(~pl.col(c).is_in(categories.implode())).to_series()
        if bad.len():
            raise PlanMismatchError(c, bad.head(5).to_list(),
                                    "in rows the plan releases; no released row of the union "
                                    "holds it")
    return _class_sizes(released, plan.qi), suppressed


def _site_classes(data: Any, plan: ReleasePlan, hs: Mapping[str, Hierarchy],
                  extra: Sequence[str], engine: str | None) -> pl.DataFrame:
    """The site's frequency set over the QIs (generalized to the plan's levels) and the
    ``extra`` columns, every column a string, the count ``n``. Raises
    :class:`~ldiv_polars.errors.PlanMismatchError` for a QI value its hierarchy lacks."""
    fs = engine_for(data, engine).frequency_set(data, plan.qi, list(extra) or None,
                                                nulls="value")
    frame = fs.frame.collect().rename({fs.count: COUNT}) if fs.count != COUNT \
        else fs.frame.collect()
    try:
        frame = _labels_at(frame, hs, plan.levels)
    except HierarchyValueMissingError as exc:
        raise PlanMismatchError(str(exc.column), exc.missing,
                                "not a value of its hierarchy") from None
    return frame.with_columns(pl.col(c).cast(pl.String) for c in extra) \
        .group_by([*plan.qi, *extra]).agg(pl.col(COUNT).sum())


def _released_classes(data: Any, plan: ReleasePlan, hs: Mapping[str, Hierarchy],
                      extra: Sequence[str], engine: str | None) -> tuple[pl.DataFrame, int]:
    """The classes of the site's release under ``plan`` (:func:`_site_classes`, the
    suppressed classes' QIs masked, or the classes dropped), and the number of the site's
    rows the plan suppresses."""
    sizes = _site_classes(data, plan, hs, extra, engine)
    supp = pl.DataFrame([pl.Series(q, [r[i] for r in plan.suppressed], pl.String)
                         for i, q in enumerate(plan.qi)])
    hit = sizes.join(supp, on=plan.qi, how="semi", nulls_equal=True)
    kept = sizes.join(supp, on=plan.qi, how="anti", nulls_equal=True)
    suppressed = int(hit[COUNT].sum())
    if plan.mode == "mask" and suppressed:
        masks = [pl.lit(plan.mask).cast(output_dtype(hs[q], plan.levels[q]), strict=False)
                 .cast(pl.String).alias(q) for q in plan.qi]
        kept = pl.concat([kept, hit.select(*masks, *extra, pl.col(COUNT))])
    return kept, suppressed


def release_site(data: Any, plan: ReleasePlan, hierarchies: Mapping[str, Any],
                 out: str | Path, *, engine: str | None = None) -> int:
    """:func:`apply_plan` and :func:`verify_site_release` in one: the site's release written
    to ``out`` and checked to be ``plan`` applied to ``data``. Returns the number of the
    site's rows suppressed. With a local engine (Polars, DuckDB: a Polars plan written by
    :func:`~ldiv_polars.core.output.atomic_output`) the temporary file is verified before
    it is renamed, so a release that fails leaves ``out`` untouched (an existing file
    included); a distributed engine's directory is verified once written (the caller removes
    it when this raises). Raises :class:`~ldiv_polars.search.anonymize.VerificationError`
    when the release is not the plan applied to the rows (a bug); before anything is
    written, the typed input errors of :func:`apply_plan` (a
    :class:`~ldiv_polars.errors.PlanMismatchError` for rows that are not those counted)."""
    hs = prepare_hierarchies(plan.qi, hierarchies)
    eng = engine_for(data, engine)
    # one frequency set of the rows: checked against the plan, then the expected sizes
    expected = _checked_sizes(data, plan, hs, engine)
    release = eng.release(data, plan.output_plan(hs))
    if eng.distributed:
        eng.write(release.output, out, inputs=eng.input_paths(data))
        return _verified(data, out, plan, hs, engine=engine, expected=expected)
    with atomic_output(out, inputs=eng.input_paths(data)) as f:
        f.write(release.output)
        written = pl.scan_parquet(f.path) if f.format == "parquet" else \
            pl.scan_csv(f.path, separator=f.separator, infer_schema=False)
        return _verified(data, written, plan, hs, engine=engine, release_engine="polars",
                         expected=expected)


def _verified(data: Any, release: Any, plan: ReleasePlan, hs: Mapping[str, Any],
              **engines: Any) -> int:
    """:func:`verify_site_release`, its mismatch raised as a ``VerificationError``."""
    try:
        return verify_site_release(data, release, plan, hs, **engines)
    except InvalidParameterError as exc:
        raise VerificationError(str(exc)) from None


def _class_sizes(frame: pl.DataFrame | pl.LazyFrame, qi: Sequence[str]) -> pl.DataFrame:
    """A counts frame's class sizes (column ``n``), every QI as a string, sorted."""
    return frame.lazy().group_by([pl.col(q).cast(pl.String) for q in qi]) \
        .agg(pl.col(COUNT).sum()).sort(list(qi), nulls_last=True).collect()


def expected_release_sizes(data: Any, plan: ReleasePlan, hierarchies: Mapping[str, Any], *,
                           engine: str | None = None) -> tuple[pl.DataFrame, int]:
    """The class sizes (QIs as strings, ``n``) a site's release under ``plan`` must have,
    counted on the site's rows generalized to the plan's levels (the suppressed classes
    masked or dropped), and the number of the site's rows the plan suppresses. Raises
    :class:`~ldiv_polars.errors.PlanMismatchError` for a QI value outside its hierarchy."""
    hs = prepare_hierarchies(plan.qi, hierarchies)
    kept, suppressed = _released_classes(data, plan, hs, (), engine)
    return _class_sizes(kept, plan.qi), suppressed


def verify_site_release(data: Any, release: Any, plan: ReleasePlan,
                        hierarchies: Mapping[str, Any], *, engine: str | None = None,
                        release_engine: str | None = None,
                        expected: tuple[pl.DataFrame, int] | None = None) -> int:
    """Check that ``release`` is ``plan`` applied to the site's rows ``data``: its class sizes
    over the QIs equal the site's rows generalized to the plan's levels with the plan's
    suppressed classes masked or dropped (two frequency sets, no rows collected). Returns the
    number of the site's rows suppressed; raises
    :class:`~ldiv_polars.errors.InvalidParameterError` when the release differs. This cannot
    prove the models hold: they hold on the union of the sites' releases (the aggregator's
    check on the merged counts), a site's slice alone may have small classes.
    ``release_engine``: the engine counting ``release`` (default: ``engine``); ``expected``:
    :func:`expected_release_sizes`' answer when already counted."""
    want, suppressed = expected or expected_release_sizes(data, plan, hierarchies,
                                                          engine=engine)
    got = _class_sizes(engine_for(release, release_engine or engine).frequency_set(
        release, plan.qi, None, nulls="value").frame, plan.qi)
    if not got.equals(want):
        raise InvalidParameterError("the release is not the plan applied to the site's rows "
                                    f"({got[COUNT].sum()} rows in {got.height} classes, "
                                    f"expected {want[COUNT].sum()} in {want.height})")
    return suppressed


__all__ = ["META_KEY", "ReleasePlan", "anonymize_counts", "apply_plan", "check_site_rows",
           "expected_release_sizes", "read_counts", "release_site", "site_counts",
           "verify_site_release", "write_counts"]
