"""Table-level verdicts: check a table against privacy models, list its classes, list the
violating classes with reasons (one streaming pass builds the frequency set; the rest reads it).
Transforms re-verify their output through :func:`check`.

>>> import polars as pl
>>> from ldiv_polars.models import KAnonymity, DistinctLDiversity
>>> df = pl.DataFrame({"zip": ["130", "130", "148", "148"], "s": ["a", "b", "a", "a"]})
>>> result = check(df, ["zip"], "s", [KAnonymity(2), DistinctLDiversity(2)])
>>> result.passed, [m.passed for m in result.models]
(False, [True, False])
>>> violations(df, ["zip"], "s", [DistinctLDiversity(2)]).collect()["reasons"].to_list()
[['1 distinct sensitive value(s) < l=2']]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import polars as pl

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.suppressed import release_mask, split_masked
from ldiv_polars.core.validate import NullPolicy
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import SIZE, Model, ModelResult
from ldiv_polars.models.results import table_results
from ldiv_polars.models.evaluate import (
    ClassNames,
    collect_unnamed,
    evaluate_classes,
    evaluate_unnamed,
    internal_keys,
)
from ldiv_polars.models.multi_attribute import MultiAttribute
from ldiv_polars.models.weight_exact import decide_weight_sums


@dataclass(frozen=True)
class CheckResult:
    """Verdicts of several models on one table."""

    rows: int
    classes: int
    models: list[ModelResult]
    unjudged_rows: int = 0
    """The rows of a release masked in every QI (suppressed records) that the verdicts leave
    out (``check(release=...)``); ``rows`` counts the others."""

    @property
    def passed(self) -> bool:
        """Whether every model passed."""
        return all(m.passed for m in self.models)

    def __getitem__(self, key: str) -> ModelResult:
        for m in self.models:
            if m.key == key or m.model == key:
                return m
        raise KeyError(key)

    def _repr_html_(self) -> str:
        """The verdicts as a plain HTML table (how a notebook shows the result: model,
        verdict, achieved value, failing classes and rows; ``ldiv_polars.report`` draws the
        full page)."""
        from html import escape

        def cell(v: object) -> str:
            return "&ndash;" if v is None else escape(f"{v:.6g}" if isinstance(v, float)
                                                       else str(v))

        head = "".join(f"<th>{h}</th>" for h in
                       ("model", "verdict", "achieved", "failing classes", "failing rows"))
        body = "".join(
            f"<tr><td><code>{escape(m.key)}</code></td><td>{'PASS' if m.passed else 'FAIL'}"
            f"</td><td>{cell(m.achieved)}</td><td>{cell(m.failing_classes)}</td>"
            f"<td>{cell(m.failing_rows)}</td></tr>" for m in self.models)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def to_dict(self) -> dict[str, object]:
        """The result as a JSON-ready dict: rows, classes, unjudged_rows, passed and
        ``models``, the list of the models' verdicts (:meth:`ModelResult.to_dict`, each with
        its ``key``): the shape of ``ldiv check --json``'s ``models``."""
        return {
            "rows": self.rows,
            "classes": self.classes,
            "unjudged_rows": self.unjudged_rows,
            "passed": self.passed,
            "models": [m.to_dict() for m in self.models],
        }


def check_models(
    models: Sequence[Model] | Model, sensitive: Sequence[str] | None = None, *,
    required_by: str | None = None,
) -> list[Model]:
    """``models`` (one model or a sequence) as a list, with the typed errors every entry point
    shares: something that is not a :class:`Model`; no model at all when ``required_by`` names
    the caller that needs one; and, when the sensitive columns are given, a model reading one
    sensitive column among several (it must be wrapped in :class:`MultiAttribute`) or a model
    needing a sensitive column when there is none.

    >>> from ldiv_polars.models import KAnonymity, DistinctLDiversity
    >>> [m.key for m in check_models(KAnonymity(2))]
    ['k_anonymity_2']
    >>> try:
    ...     check_models([DistinctLDiversity(2)], ())
    ... except ValueError as e:
    ...     print(e)
    distinct_l(l=2) need(s) a sensitive column; none was given
    """
    if isinstance(models, Model):
        models = [models]
    out = list(models)
    if not out and required_by is not None:
        raise InvalidParameterError(f"{required_by} needs at least one privacy model "
                                    "(e.g. KAnonymity(k))")
    for m in out:
        if not isinstance(m, Model):
            raise InvalidParameterError(f"not a privacy model: {m!r}")
    if sensitive is None:
        return out
    if len(sensitive) > 1:
        single = [m.describe() for m in out if m.needs_sensitive and not isinstance(
            m, MultiAttribute)]
        if single:
            raise InvalidParameterError(
                f"{', '.join(single)} read(s) one sensitive column but {len(sensitive)} were "
                "given: wrap the model in MultiAttribute(...) or pass one sensitive column"
            )
    if not sensitive:
        needing = [m.describe() for m in out if m.needs_sensitive]
        if needing:
            raise InvalidParameterError(
                f"{', '.join(needing)} need(s) a sensitive column; none was given")
    return out


def _prepare(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model,
    nulls: NullPolicy,
    separator: str | None,
    engine: str | None = None,
    weight: str | None = None,
) -> tuple[FrequencySet, list[Model]]:
    from ldiv_polars.core.engines.base import engine_for  # (numpy: not at import time)

    reader = engine_for(data, engine)
    if weight is None:
        require_weights(check_models(models), None)
    fs = reader.plan_frequency_set(data, qi, sensitive, nulls=nulls, separator=separator,
                                   weight=weight)
    return fs, check_models(models, fs.sensitive)


def require_weights(models: Sequence[Model], weight: str | None) -> None:
    """Raise :class:`~ldiv_polars.errors.InvalidParameterError` when a model reads sampling
    weights (``needs_weight``) and no ``weight`` column is given: before any row is read.

    >>> from ldiv_polars.models import WeightedKAnonymity
    >>> require_weights([WeightedKAnonymity(5)], None)
    Traceback (most recent call last):
    ...
    ldiv_polars.errors.InvalidParameterError: weighted_k_anonymity(k=5) read(s) sampling weights: pass weight= (CLI: --weight)
    """
    needing = [m.describe() for m in models if m.needs_weight]
    if needing and weight is None:
        raise InvalidParameterError(
            f"{', '.join(needing)} read(s) sampling weights: pass weight= (CLI: --weight)")


@reads_input
def check(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model,
    *,
    nulls: NullPolicy = "error",
    separator: str | None = None,
    engine: str | None = None,
    reference: pl.DataFrame | pl.LazyFrame | None = None,
    weight: str | None = None,
    release: bool | str | None = None,
) -> CheckResult:
    """Evaluate ``models`` on ``data``: one streaming pass builds the frequency set, everything
    else reads it. Columns, parameters and model compatibility are validated first.
    ``release``: whether ``data`` is a release whose rows masked in every QI are suppressed
    records, left out of the verdicts and counted (:attr:`CheckResult.unjudged_rows`), as
    the anonymizer's re-verification and the report judge it: True (mask ``*``, or the one
    the file records), a string (that mask), False (every row judged), or None (default:
    a release when the Parquet file records one, as ``anonymize``'s ``sink`` writes it:
    :func:`~ldiv_polars.core.suppressed.release_mask`).
    ``engine`` (``polars``, ``duckdb``, ``spark``) runs that pass; by default the engine
    whose native type ``data`` is (a Spark DataFrame: Spark), else Polars. ``weight`` names
    a column of sampling weights (finite, > 0): the pass also sums them per class, for the
    models that read them (:class:`~ldiv_polars.models.WeightedKAnonymity`; every other
    model judges the sample counts); a model reading weights without ``weight`` is an
    :class:`~ldiv_polars.errors.InvalidParameterError` before any row is read."""
    fs, models = _prepare(data, qi, sensitive, models, nulls, separator, engine, weight)
    rows = None if weight is None else WeightRows(
        lambda: to_lazyframe(data, separator=separator), weight)
    mask = release_mask(data, release)
    if mask is None:
        return check_frequency_set(fs.materialize(), models, reference=reference,
                                   weight_rows=rows)
    kept, unjudged = split_masked(fs, mask)
    result = check_frequency_set(kept, models, reference=reference, weight_rows=rows)
    return replace(result, unjudged_rows=unjudged)


@dataclass(frozen=True)
class WeightRows:
    """Where the exact step of the weighted models reads the input again: ``rows()`` gives
    the input rows lazily (the quasi-identifier columns under the frequency set's names and
    the ``weight`` column), called only when a class's weight sum is within rounding of a
    threshold (:mod:`ldiv_polars.models.weight_exact`)."""

    rows: Callable[[], pl.LazyFrame]
    weight: str


def check_frequency_set(fs: FrequencySet, models: Sequence[Model], *,
                        reference: pl.DataFrame | pl.LazyFrame | None = None,
                        weight_rows: WeightRows | None = None) -> CheckResult:
    """:func:`check` on a frequency set already built (and collected, see
    :meth:`FrequencySet.materialize`) from the rows, e.g. in the same pass that writes them;
    ``models`` as returned by :func:`check_models` for it (bound to the table's rows,
    :func:`bind_models`). ``weight_rows``: the input rows, read again for the classes whose
    weight sum is within rounding of a threshold (decided exactly); without it those classes
    keep the float verdict of the engine's summation order."""
    models = bind_models(models, fs)
    for m in models:
        m.validate(fs)
    classes = collect_unnamed(fs, models, reference=reference)
    if weight_rows is not None:
        inner = internal_keys(fs)[:len(fs.qi)]  # the class table's key names
        w = weight_rows.weight
        classes = decide_weight_sums(
            classes, models, lambda: weight_rows.rows().select(
                *[pl.col(q).alias(i) for q, i in zip(fs.qi, inner)], pl.col(w)), inner, w)
    rows = int(classes.get_column(SIZE).sum() or 0)
    return CheckResult(rows=rows, classes=classes.height, models=table_results(classes, models))


def bind_models(models: Sequence[Model], fs: FrequencySet | int) -> list[Model]:
    """``models`` bound to the table of the frequency set ``fs`` (or of ``fs`` rows):
    :meth:`Model.for_rows` with its number of records, counted only when a model asks.

    >>> from ldiv_polars.models import KAnonymity, KMap
    >>> [m.describe() for m in bind_models([KAnonymity(2), KMap(3, 10)], 5)][1]
    'k_map(k=3, population=10, estimator=poisson, significance=0.01)'
    """
    if all(type(m).for_rows is Model.for_rows for m in models):
        return list(models)
    if isinstance(fs, FrequencySet):
        rows = int(fs.frame.lazy().select(pl.col(fs.count).sum()).collect().item() or 0)
    else:
        rows = int(fs)
    return [m.for_rows(rows) for m in models]


def classes(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model = (),
    *,
    nulls: NullPolicy = "error",
    separator: str | None = None,
    engine: str | None = None,
    weight: str | None = None,
) -> pl.LazyFrame:
    """Lazy table of equivalence classes: qi columns, ``size``, ``distinct`` (when a sensitive
    column is given), each model's statistics and ``pass_<key>`` columns (``weight`` as
    :func:`check`). Nothing is collected."""
    fs, models = _prepare(data, qi, sensitive, models, nulls, separator, engine, weight)
    return evaluate_classes(fs, models)


def violations(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model,
    *,
    nulls: NullPolicy = "error",
    separator: str | None = None,
    engine: str | None = None,
    weight: str | None = None,
) -> pl.LazyFrame:
    """Lazy table of the classes failing at least one model: qi columns, ``size`` and
    ``reasons`` (a list of strings, one per failed model; ``weight`` as :func:`check`).
    Raises the typed errors of :func:`check` on bad columns or models, and
    :class:`~ldiv_polars.errors.InvalidParameterError` when no model is given."""
    fs, models = _prepare(data, qi, sensitive, models, nulls, separator, engine, weight)
    if not models:
        raise InvalidParameterError("violations() needs at least one model")
    names = ClassNames(fs.qi)
    evaluated = evaluate_unnamed(fs, models)
    reasons = pl.concat_list(
        [pl.when(~pl.col(f"pass_{m.key}")).then(m.reason()).otherwise(None) for m in models]
    ).list.drop_nulls()
    failing = pl.any_horizontal([~pl.col(f"pass_{m.key}") for m in models])
    return evaluated.filter(failing).select(
        *[pl.col(k).alias(q) for k, q in zip(internal_keys(fs), fs.qi)],
        pl.col(SIZE).alias(names.size),
        reasons.alias(names.column("reasons")))
