"""The one-object summary of a table (the JSON of ``ldiv check``).

>>> import polars as pl
>>> df = pl.DataFrame({"q": [1, 1, 2, 2], "s": ["a", "b", "a", "a"]})
>>> summary(df, ["q"], "s", l=2)["l_distinct"]
1
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import polars as pl

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.core.inputs import TableLike, reads_input, translate_input_errors
from ldiv_polars.core.validate import NullPolicy, require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import SIZE
from ldiv_polars.models.results import table_results
from ldiv_polars.models.disclosure import AlphaKAnonymity, DeltaDisclosure
from ldiv_polars.models.evaluate import collect_unnamed
from ldiv_polars.models.k_anonymity import KAnonymity
from ldiv_polars.models.l_diversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
)
from ldiv_polars.models.t_closeness import TCloseness

SUMMARY_KEYS = (
    "rows",
    "classes",
    "k",
    "l_distinct",
    "l_entropy",
    "recursive_c",
    "alpha",
    "t",
    "delta",
    "prosecutor_max",
    "prosecutor_avg",
    "sample_uniques",
)
"""The keys of :func:`summary`, in order (also the JSON of ``ldiv check`` and the columns of
the SQL ``ldiv_summary`` macro)."""

SUMMARY_LABELS = {
    "rows": "rows",
    "classes": "equivalence classes",
    "k": "k (smallest class)",
    "l_distinct": "distinct l (fewest values in a class)",
    "l_entropy": "entropy l (exp of smallest entropy)",
    "recursive_c": "recursive c needed (c must exceed; — = ∞)",
    "alpha": "alpha (largest share of one value)",
    "t": "t (largest EMD)",
    "delta": "delta (largest |ln p/q|; — = ∞)",
    "prosecutor_max": "prosecutor risk, max",
    "prosecutor_avg": "prosecutor risk, average",
    "sample_uniques": "sample uniques (rows)",
}
"""What each of :data:`SUMMARY_KEYS` means, in words (the rows of ``ldiv check`` and of the
HTML report)."""


def is_ordered_dtype(dtype: pl.DataType) -> bool:
    """Whether t-closeness uses the ordered distance for a sensitive column of this type."""
    return dtype.is_numeric() or dtype.is_temporal()


def _finite(v: float | None) -> float | None:
    if v is None or math.isinf(v) or math.isnan(v):
        return None
    return float(v)


@reads_input
def summary(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str,
    l: int = 2,
    *,
    nulls: NullPolicy = "error",
    separator: str | None = None,
    engine: str | None = None,
) -> dict[str, object]:
    """Every headline statistic of the table in one pass (see :data:`SUMMARY_KEYS`), run by
    ``engine`` (``polars``, ``duckdb``, ``spark``; default: the engine whose native type
    ``data`` is, else Polars).

    ``recursive_c`` is the largest ``r1/(r_l+...+r_m)`` over classes for the given ``l`` (the
    table is recursive (c,l)-diverse iff c exceeds it; None when some class has fewer than l
    values); ``t`` uses the equal distance for a string/boolean column and the ordered distance
    for a numeric or temporal one; ``delta`` is None when infinite; an empty table gives zero
    counts and None statistics.

    Raises :class:`~ldiv_polars.errors.InvalidParameterError` for ``l < 1`` or a sensitive
    argument that is not one column name, and the input errors of
    :meth:`FrequencySet.build <ldiv_polars.core.frequency.FrequencySet.build>` (missing columns,
    nulls under ``nulls="error"``, unreadable rows).
    """
    l = require_int_at_least("l", l, 1)
    if not isinstance(sensitive, str):
        raise InvalidParameterError("summary() takes exactly one sensitive column")
    from ldiv_polars.core.engines.base import engine_for  # (numpy: not at import time)

    fs = engine_for(data, engine).plan_frequency_set(data, qi, sensitive, nulls=nulls,
                                                     separator=separator,
                                                     require_sensitive=True)
    return _summarize(fs.materialize(), l)


def frequency_set_summary(fs: FrequencySet, l: int = 2) -> dict[str, object]:
    """:func:`summary` of a frequency set already built with one sensitive column (collected
    with :meth:`FrequencySet.materialize` or still lazy): what ``ldiv check`` prints beside the
    verdicts of the models it checks on the same frequency set (one pass over the rows).

    Raises :class:`~ldiv_polars.errors.InvalidParameterError` for ``l < 1`` or a frequency set
    without exactly one sensitive column.

    >>> import polars as pl
    >>> fs = FrequencySet.build(pl.DataFrame({"q": [1, 1, 2], "s": ["a", "b", "a"]}), "q",
    ...                         "s").materialize()
    >>> frequency_set_summary(fs)["k"]
    1
    """
    l = require_int_at_least("l", l, 1)
    if len(fs.sensitive) != 1:
        raise InvalidParameterError("a summary reads exactly one sensitive column")
    with translate_input_errors():  # a lazy frequency set reads its rows here
        return _summarize(fs, l)


def _summarize(fs: FrequencySet, l: int) -> dict[str, object]:
    """The summary dict from a collected frequency set with one sensitive column: every
    model's achieved value and the class counts in one select over the evaluated classes."""
    dtype = fs.frame.collect_schema()[fs.sensitive[0]]
    models = [
        KAnonymity(1),
        DistinctLDiversity(1),
        EntropyLDiversity(1),
        RecursiveCLDiversity(1.0, l),
        AlphaKAnonymity(1.0, 1),
        TCloseness(1.0, "ordered" if is_ordered_dtype(dtype) else "equal"),
        DeltaDisclosure(float("inf")),
    ]
    classes = collect_unnamed(fs, models)
    if classes.height == 0:
        return {key: (0 if key in ("rows", "classes", "sample_uniques") else None)
                for key in SUMMARY_KEYS}
    res = {m.model: m.achieved for m in table_results(classes, models)}
    rows = int(classes.get_column(SIZE).sum())
    k = int(res["k_anonymity"])  # type: ignore[arg-type]
    uniques = int(classes.filter(pl.col(SIZE) == 1).get_column(SIZE).sum() or 0)
    return {
        "rows": rows,
        "classes": classes.height,
        "k": k,
        "l_distinct": int(res["distinct_l"]),  # type: ignore[arg-type]
        "l_entropy": _finite(res["entropy_l"]),
        "recursive_c": _finite(res["recursive_cl"]),
        "alpha": _finite(res["alpha_k"]),
        "t": _finite(res["t_closeness"]),
        "delta": _finite(res["delta_disclosure"]),
        "prosecutor_max": 1.0 / k,
        "prosecutor_avg": classes.height / rows,
        "sample_uniques": uniques,
    }
