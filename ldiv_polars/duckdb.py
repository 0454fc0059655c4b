"""The DuckDB engine: the same privacy checks as SQL macros, out of core.

``install(con)`` runs the packaged ``sql/*.sql`` files (plain ``CREATE OR REPLACE MACRO``
statements, also usable from the DuckDB CLI with ``.read``) on a connection and registers the
vectorized Python UDFs of the models without a closed SQL form. :func:`summary` and
:func:`check` are the Python entry points; they take a CSV/Parquet path, a table or view name
(with ``con``), a Polars frame or a pyarrow table, validate the column names against the
table *before* running anything, and pass every name to DuckDB as a bound list parameter
(never pasted into SQL), so a name that looks like SQL is just a missing column.

>>> import polars as pl
>>> df = pl.DataFrame({"zip": ["130", "130", "148", "148"], "s": ["a", "b", "a", "a"]})
>>> summary(df, ["zip"], "s")["l_distinct"]
1
>>> con = install(duckdb.connect())
>>> con.execute("SELECT ldiv_mask('13053', 2)").fetchall()[0][0]
'130**'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from ldiv_polars.core.engines.duckdb import Source as _Source
from ldiv_polars.core.engines.duckdb import quote as _quote
from ldiv_polars.core.engines.duckdb import source as _source
from ldiv_polars.core.engines.duckdb import temp_name as _tmp
from ldiv_polars.core.engines.duckdb import validate as _validate
from ldiv_polars.core.inputs import reads_input
from ldiv_polars.core.validate import (
    NullPolicy,
    as_names,
    check_null_policy,
    require_int_at_least,
)
from ldiv_polars.errors import InputFormatError, InvalidParameterError, NullValuesError
from ldiv_polars.table_summary import SUMMARY_KEYS

__all__ = [
    "SQL_FILES",
    "SUMMARY_KEYS",
    "adjusted_entropy",
    "check",
    "install",
    "register_hierarchy",
    "report",
    "sql_dir",
    "sql_text",
    "summary",
]

SQL_FILES = ("ldiv.sql", "ldiv_udf.sql")
"""The macro files, in load order: closed forms first, then the macros calling Python UDFs."""


_INT_KEYS = frozenset({"rows", "classes", "k", "l_distinct", "sample_uniques"})

# --------------------------------------------------------------------------------------------
# Locating and installing the SQL
# --------------------------------------------------------------------------------------------


def sql_dir() -> Any:
    """Directory holding the macro files: ``ldiv_polars/sql`` inside an installed wheel, else
    the repository's ``sql/`` next to the package (editable or source checkout)."""
    packaged = resources.files("ldiv_polars").joinpath("sql")
    if packaged.is_dir() and packaged.joinpath(SQL_FILES[0]).is_file():
        return packaged
    repo = Path(__file__).resolve().parent.parent / "sql"
    if (repo / SQL_FILES[0]).is_file():
        return repo
    raise InputFormatError(  # pragma: no cover - broken installation
        "the ldiv SQL files were not found (neither ldiv_polars/sql nor sql/ next to the package)"
    )


def sql_text(name: str = "ldiv.sql") -> str:
    """Text of one packaged SQL file (see :data:`SQL_FILES`)."""
    if name not in SQL_FILES:
        raise InvalidParameterError(f"unknown SQL file {name!r}; expected one of {SQL_FILES}")
    return sql_dir().joinpath(name).read_text(encoding="utf-8")


def adjusted_entropy(phi: Sequence[float], p: Sequence[float]) -> float | None:
    """Adjusted entropy (Def 4.5) of one class by the paper's Algorithm 1, in nats.

    ``phi`` are the don't-care counts, ``p`` the other counts. Don't-care counts are fixed in
    ascending order while ``ln(phi) < M(fixed)`` (M = log-entropic mean); the rest are lowered
    to ``exp(M)``. None when ``p`` holds no positive count (a class of don't-care values only).

    >>> round(adjusted_entropy([11, 10, 3, 2], [3, 4]), 5)
    1.77297
    """
    ps = [float(x) for x in p if x and x > 0]
    if not ps:
        return None
    a = sum(ps)
    b = sum(x * math.log(x) for x in ps)
    rest = sorted(float(x) for x in phi if x and x > 0)
    i = 0
    while i < len(rest) and math.log(rest[i]) * a < b:
        a += rest[i]
        b += rest[i] * math.log(rest[i])
        i += 1
    k = len(rest) - i
    m = b / a
    v = math.exp(m)
    total = a + k * v
    return math.log(total) - (b + k * v * m) / total


def _adjusted_entropy_udf(phi: pa.Array, p: pa.Array) -> pa.Array:
    """Arrow UDF: one adjusted entropy per class of the batch (a loop over classes, never rows)."""
    phis = phi.to_pylist()
    ps = p.to_pylist()
    out = np.empty(len(ps), dtype=np.float64)
    mask = np.zeros(len(ps), dtype=bool)
    for i, (f, q) in enumerate(zip(phis, ps)):
        h = adjusted_entropy(f or [], q or [])
        if h is None:
            mask[i] = True
            out[i] = 0.0
        else:
            out[i] = h
    return pa.array(out, mask=mask)


def _register_udfs(con: duckdb.DuckDBPyConnection) -> None:
    dbl_list = duckdb.list_type(duckdb.sqltypes.DOUBLE)
    try:
        con.remove_function("ldiv_adjusted_entropy")
    except Exception:  # noqa: BLE001 - not registered yet on this connection
        pass
    con.create_function(
        "ldiv_adjusted_entropy",
        _adjusted_entropy_udf,
        [dbl_list, dbl_list],
        duckdb.sqltypes.DOUBLE,
        type="arrow",
        null_handling="special",
    )


def install(
    con: duckdb.DuckDBPyConnection | None = None, *, udfs: bool = True
) -> duckdb.DuckDBPyConnection:
    """Create every ``ldiv_*`` macro on ``con`` (a new in-memory connection when None) and,
    with ``udfs=True``, register the Python UDFs and the macros that call them. Installing
    twice is harmless (``CREATE OR REPLACE``). Returns the connection.

    >>> con = install()
    >>> con.execute("SELECT count(*) > 10 FROM duckdb_functions() "
    ...             "WHERE function_name LIKE 'ldiv_%'").fetchall()[0][0]
    True
    """
    if con is None:
        con = duckdb.connect()
    for stmt in con.extract_statements(sql_text("ldiv.sql")):
        con.execute(stmt)
    if udfs:
        _register_udfs(con)
        for stmt in con.extract_statements(sql_text("ldiv_udf.sql")):
            con.execute(stmt)
    return con


def _installed(con: duckdb.DuckDBPyConnection, udfs: bool) -> bool:
    names = ["ldiv_summary", "ldiv__fs"] + (["ldiv_adjusted_entropy"] if udfs else [])
    row = con.execute(
        "SELECT count(DISTINCT function_name) FROM duckdb_functions() "
        "WHERE list_contains(?, function_name)",
        [names],
    ).fetchall()
    return bool(row and row[0][0] == len(names))


# --------------------------------------------------------------------------------------------
# Frequency set (materialized once per call) and the null policy
# --------------------------------------------------------------------------------------------


@contextmanager
def _frequency_set(src: _Source, qi: list[str], s: str, nulls: NullPolicy,
                   report: Sequence[str] | None = None) -> Iterator[str]:
    """Materialize ``ldiv__fs(src, qi, s)`` (ec STRUCT, sv, n) into a temp table: the only
    pass over the rows. Raises NullValuesError (from the small table) under nulls='error',
    naming the columns in the order ``report`` (default: qi, then s)."""
    con = src.con
    name = _tmp("fs")
    con.execute(
        f"CREATE TEMP TABLE {_quote(name)} AS FROM ldiv__fs(?, ?, ?)", [src.name, qi, s]
    )
    try:
        if nulls == "error":
            order = [c for c in src.columns if c in qi]  # struct fields follow the table order
            exprs = [
                f"coalesce(sum(n) FILTER (WHERE struct_extract_at(ec, {i}) IS NULL), 0)"
                for i in range(1, len(order) + 1)
            ]
            exprs.append("coalesce(sum(n) FILTER (WHERE sv IS NULL), 0)")
            row = con.execute(f"SELECT {', '.join(exprs)} FROM {_quote(name)}").fetchall()[0]
            by_name = dict(zip([*order, s], (int(v) for v in row)))
            counts = {c: by_name[c] for c in (report or [*qi, s]) if by_name[c]}
            if counts:
                raise NullValuesError(counts)
        yield name
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_quote(name)}")


def _finite(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


def _single_sensitive(sensitive: str | Iterable[str]) -> str:
    names = as_names(sensitive)
    if len(names) != 1:
        raise InvalidParameterError(
            f"the DuckDB engine takes exactly one sensitive column, got {len(names)}"
        )
    return names[0]


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


@reads_input
def summary(
    data: Any,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str],
    l: int = 2,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    separator: str | None = None,
    nulls: NullPolicy = "error",
) -> dict[str, object]:
    """The summary of ``ldiv_polars.summary`` computed by the ``ldiv_summary`` macro in DuckDB:
    a dict with exactly :data:`SUMMARY_KEYS` (None where infinite or undefined).

    ``data``: a CSV/Parquet path (CSV separator sniffed as on the Polars side unless given), a
    table or view name on ``con``, a Polars DataFrame/LazyFrame (a LazyFrame is collected), a
    pyarrow Table or a DuckDB relation. Column names are validated first
    (:class:`~ldiv_polars.errors.UnknownColumnError`, ...); with ``nulls="error"`` a null in a
    quasi-identifier or the sensitive column raises
    :class:`~ldiv_polars.errors.NullValuesError`, ``nulls="value"`` keeps null as a value.

    >>> import polars as pl
    >>> df = pl.DataFrame({"q": [1, 1, 2, 2], "s": ["a", "b", "a", "a"]})
    >>> out = summary(df, ["q"], "s", l=2)
    >>> out["k"], out["l_distinct"], out["recursive_c"], out["t"]
    (2, 1, None, 0.25)
    """
    l = require_int_at_least("l", l, 1)
    check_null_policy(nulls)
    if not isinstance(sensitive, str):
        raise InvalidParameterError("summary() takes exactly one sensitive column")
    with _source(data, con, separator) as src:
        qi_l, s_l = _validate(src, qi, sensitive)
        if not _installed(src.con, udfs=False):
            install(src.con, udfs=False)
        with _frequency_set(src, qi_l, s_l[0], nulls) as fs:
            return _summary_of(src.con, fs, l)


def _summary_of(con: duckdb.DuckDBPyConnection, fs: str, l: int) -> dict[str, object]:
    """:func:`summary` of a materialized frequency set (the temp table ``fs``)."""
    cur = con.execute("FROM ldiv__summary_fs(?, ?)", [fs, l])
    names = [d[0] for d in cur.description]
    row = cur.fetchall()[0]
    assert tuple(names) == SUMMARY_KEYS
    out: dict[str, object] = {}
    for key, v in zip(names, row):
        if v is not None and key in _INT_KEYS:
            v = int(v)
        elif v is not None:
            v = float(v)
        out[key] = _finite(v)
    return out


def register_hierarchy(
    con: duckdb.DuckDBPyConnection, name: str, hierarchy: Any
) -> str:
    """Register a value hierarchy for ``ldiv_t_closeness_hierarchical`` as a relation
    ``(leaf VARCHAR, path VARCHAR[])`` named ``name`` on ``con``.

    ``hierarchy``: a Polars DataFrame in ARX layout (first column the value, one column per
    level) or an object with such a ``.frame`` (``ldiv_polars.hierarchy.Hierarchy``). As on the
    Polars side, a root level ``*`` is added when the last column has more than one value.
    """
    frame = getattr(hierarchy, "frame", hierarchy)
    if not isinstance(frame, pl.DataFrame) or frame.width < 2:
        raise InvalidParameterError(
            "a hierarchy must be a polars DataFrame in ARX layout (first column the value, one "
            "column per level) or an object with such a `.frame`"
        )
    frame = frame.select(pl.all().cast(pl.String))
    if frame.null_count().sum_horizontal().item():
        raise InvalidParameterError("the hierarchy has empty cells (ragged rows)")
    cols = frame.columns
    path = pl.concat_list([pl.col(c) for c in cols[1:]])
    if frame.get_column(cols[-1]).n_unique() > 1:
        path = pl.concat_list([path, pl.lit(["*"])])
    table = frame.select(pl.col(cols[0]).alias("leaf"), path.alias("path")).to_arrow()
    con.register(name, table)
    return name


def _result_row(key: str, row: tuple[Any, ...]) -> dict[str, object]:
    """One model macro's ``(model, passed, achieved, failing_classes, failing_rows)`` row as the
    dict :func:`check` returns."""
    model, passed, achieved, fc, fr = row
    return {
        "model": model,
        "key": key,
        "passed": bool(passed),
        "achieved": None if achieved is None else _finite(float(achieved)),
        "failing_classes": int(fc),
        "failing_rows": int(fr),
    }


@reads_input
def check(
    data: Any,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str],
    models: Any,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    separator: str | None = None,
    nulls: NullPolicy = "error",
) -> list[dict[str, object]]:
    """Evaluate foundation model objects (``ldiv_polars.models``) with the SQL macros: one pass
    over the rows builds the frequency set, its extended form (class ids and sizes, table
    frequencies) is built once, and each model's ``ldiv__<model>_x`` macro reads it.

    Returns one dict per model: ``model``, ``key``, ``passed``, ``achieved`` (None where the
    Polars side reports infinity), ``failing_classes``, ``failing_rows``. Supported:
    KAnonymity, DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity,
    PositiveDisclosureRecursive, NegativePositiveDisclosureRecursive, AlphaKAnonymity,
    TCloseness (equal, ordered, hierarchical), DeltaDisclosure, BetaLikeness (basic and
    enhanced), EntropyLDiversityDontCare (Python UDF); with several sensitive columns,
    KAnonymity and MultiAttribute around DistinctLDiversity, EntropyLDiversity or
    RecursiveCLDiversity (one frequency set per sensitive column, the others joining the
    quasi-identifier, as Def 4.6 says). Others raise InvalidParameterError.

    >>> import polars as pl
    >>> from ldiv_polars.models import KAnonymity
    >>> df = pl.DataFrame({"q": [1, 1, 2], "s": ["a", "b", "a"]})
    >>> [(r["model"], r["passed"], r["achieved"]) for r in check(df, "q", "s", [KAnonymity(2)])]
    [('k_anonymity', False, 1.0)]
    """
    check_null_policy(nulls)
    model_list = _model_list(models)
    if len(as_names(sensitive)) > 1:
        return _check_multi(data, qi, as_names(sensitive), model_list, con=con,
                            separator=separator, nulls=nulls)
    s = _single_sensitive(sensitive)
    calls = [_sql_call(m) for m in model_list]  # fail on unsupported models before any work
    with _source(data, con, separator) as src:
        qi_l, s_l = _validate(src, qi, s)
        if not _installed(src.con, udfs=True):
            install(src.con, udfs=True)
        with _frequency_set(src, qi_l, s_l[0], nulls) as fs:
            return _check_of(src.con, fs, model_list, calls)


def _check_of(con: duckdb.DuckDBPyConnection, fs: str, model_list: list[Any],
              calls: list[tuple[str, list[Any], Any]]) -> list[dict[str, object]]:
    """:func:`check` of a materialized frequency set (the temp table ``fs``): its extended
    form (class ids, sizes, table frequencies) is built once and shared by every model."""
    out: list[dict[str, object]] = []
    hier_names: list[str] = []
    x_name = _tmp("fsx")
    con.execute(f"CREATE TEMP TABLE {_quote(x_name)} AS FROM ldiv__fsx(?)", [fs])
    try:
        for m, (macro, params, hierarchy) in zip(model_list, calls):
            args: list[Any] = [x_name, *params]
            if hierarchy is not None:
                hname = register_hierarchy(con, _tmp("hier"), hierarchy)
                hier_names.append(hname)
                _check_leaves(con, fs, hname)
                args.append(hname)
            marks = ", ".join("?" for _ in args)
            cur = con.execute(
                f"SELECT model, passed, achieved, failing_classes, failing_rows "
                f"FROM {macro}({marks})",
                args,
            )
            out.append(_result_row(m.key, cur.fetchall()[0]))
    finally:
        for hname in hier_names:
            con.unregister(hname)
        con.execute(f"DROP TABLE IF EXISTS {_quote(x_name)}")
    return out


@reads_input
def report(
    data: Any,
    qi: str | Iterable[str],
    sensitive: str,
    models: Any,
    l: int = 2,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    separator: str | None = None,
    nulls: NullPolicy = "error",
) -> tuple[dict[str, object], list[dict[str, object]]]:
    """:func:`summary` and :func:`check` (one sensitive column) from ONE pass over the rows:
    the frequency set is built once and both read it (what ``ldiv check --engine duckdb``
    prints). Same arguments, results and errors as the two functions.

    >>> import polars as pl
    >>> from ldiv_polars.models import KAnonymity
    >>> df = pl.DataFrame({"q": [1, 1, 2], "s": ["a", "b", "a"]})
    >>> stats, results = report(df, "q", "s", [KAnonymity(2)])
    >>> stats["k"], [(r["key"], r["passed"]) for r in results]
    (1, [('k_anonymity_2', False)])
    """
    l = require_int_at_least("l", l, 1)
    check_null_policy(nulls)
    if not isinstance(sensitive, str):
        raise InvalidParameterError("report() takes exactly one sensitive column")
    model_list = _model_list(models)
    calls = [_sql_call(m) for m in model_list]
    with _source(data, con, separator) as src:
        qi_l, s_l = _validate(src, qi, sensitive)
        if not _installed(src.con, udfs=True):
            install(src.con, udfs=True)
        with _frequency_set(src, qi_l, s_l[0], nulls) as fs:
            return _summary_of(src.con, fs, l), _check_of(src.con, fs, model_list, calls)


def _model_list(models: Any) -> list[Any]:
    """``models`` (one model or a sequence) as a list of model objects."""
    from ldiv_polars.models.verdict import check_models

    return check_models(models)


def _multi_inner(m: Any) -> tuple[str, str, list[Any], int, bool]:
    """(ok expression, value expression, their parameters, tail start l, higher is better) of
    a multi-attribute inner model over ``ldiv__class_stats_x`` columns."""
    from ldiv_polars import models as M

    inner = m.inner
    if isinstance(inner, M.DistinctLDiversity):
        return "distinct_values >= ?", "distinct_values::DOUBLE", [inner.l], 1, True
    if isinstance(inner, M.EntropyLDiversity) and not isinstance(
            inner, M.EntropyLDiversityDontCare):
        return ("entropy >= ln(?) - 1e-12", "exp(entropy)", [float(inner.l)], 1, True)
    if type(inner) is M.RecursiveCLDiversity:
        return ("? <= 1 OR (tail IS NOT NULL AND max_count < ? * tail)",
                "CASE WHEN tail > 0 THEN max_count / tail ELSE 'inf'::DOUBLE END",
                [inner.l, inner.c], inner.l, False)
    raise InvalidParameterError(
        f"{m.describe()} has no SQL form in the DuckDB engine yet (multi-attribute supports "
        "distinct, entropy and recursive (c,l) inner models); use the Polars engine"
    )


def _check_multi(data: Any, qi: str | Iterable[str], sensitive: tuple[str, ...],
                 model_list: list[Any], *, con: duckdb.DuckDBPyConnection | None,
                 separator: str | None, nulls: NullPolicy) -> list[dict[str, object]]:
    """Several sensitive columns: KAnonymity and MultiAttribute models (Def 4.6)."""
    from ldiv_polars import models as M

    plans: list[Any] = []
    for m in model_list:
        if isinstance(m, M.MultiAttribute):
            plans.append(_multi_inner(m))
        elif isinstance(m, M.KAnonymity):
            plans.append(None)
        else:
            raise InvalidParameterError(
                f"{m.describe()} read(s) one sensitive column but {len(sensitive)} were given: "
                "wrap the model in MultiAttribute(...) or pass one sensitive column"
            )
    with _source(data, con, separator) as src:
        qi_l, s_l = _validate(src, qi, sensitive)
        if not _installed(src.con, udfs=True):
            install(src.con, udfs=True)
        conn = src.con
        created: list[str] = []
        with ExitStack() as stack:
            try:
                # one frequency set per sensitive column, the other sensitive columns in the key
                # (its extended form materialized once, so that class ids agree); the original
                # class = row(<the qi fields of the key, by position>)
                fs_names: list[str] = []
                oc_exprs: list[str] = []
                for i, s_i in enumerate(s_l):
                    key = qi_l + [o for o in s_l if o != s_i]
                    name = stack.enter_context(_frequency_set(
                        src, key, s_i, nulls if i == 0 else "value", report=[*qi_l, *s_l]))
                    conn.execute(f"CREATE TEMP TABLE {_quote(name + '_x')} AS FROM ldiv__fsx(?)",
                                 [name])
                    created.append(name + "_x")
                    fs_names.append(name)
                    fields = [c for c in src.columns if c in key]  # struct field order
                    pos = [fields.index(c) + 1 for c in src.columns if c in qi_l]
                    oc_exprs.append("row(" + ", ".join(f"struct_extract_at(ec, {p})" for p in pos)
                                    + ")")
                sizes = _tmp("msz")
                conn.execute(f"CREATE TEMP TABLE {_quote(sizes)} AS SELECT {oc_exprs[0]} AS oc, "
                             f"sum(n)::BIGINT AS size FROM {_quote(fs_names[0])} GROUP BY ALL")
                created.append(sizes)
                out: list[dict[str, object]] = []
                for m, plan in zip(model_list, plans):
                    if plan is None:
                        row = conn.execute("FROM ldiv__k_anonymity_of(?, ?)", [sizes, m.k]
                                           ).fetchall()[0]
                    else:
                        ok_sql, value_sql, params, tail_l, higher = plan
                        parts = []
                        args: list[Any] = []
                        for name, oc in zip(fs_names, oc_exprs):
                            parts.append(
                                f"SELECT {oc} AS oc, {ok_sql} AS ok, {value_sql} AS v "
                                f"FROM ldiv__class_stats_x(?, ?) "
                                f"JOIN (SELECT cid, any_value(ec) AS ec FROM {_quote(name + '_x')} "
                                f"GROUP BY cid) USING (cid)"
                            )
                            args += [*params, name + "_x", tail_l]
                        worst = "min(v)" if higher else "max(v)"
                        row = conn.execute(
                            f"WITH p AS ({' UNION ALL '.join(parts)}), "
                            f"c AS (SELECT oc, bool_and(ok) AS ok, {worst} AS v FROM p "
                            f"GROUP BY oc), "
                            f"z AS (SELECT c.ok, c.v, s.size FROM c JOIN {_quote(sizes)} s "
                            f"ON c.oc IS NOT DISTINCT FROM s.oc) "
                            f"SELECT 'multi_attribute', coalesce(bool_and(ok), true), {worst}, "
                            f"count(*) FILTER (WHERE NOT ok), "
                            f"coalesce(sum(size) FILTER (WHERE NOT ok), 0) FROM z",
                            args,
                        ).fetchall()[0]
                    out.append(_result_row(m.key, row))
                return out
            finally:
                for name in created:
                    conn.execute(f"DROP TABLE IF EXISTS {_quote(name)}")


def _check_leaves(con: duckdb.DuckDBPyConnection, fs: str, hier: str) -> None:
    row = con.execute(
        "SELECT count(*), list(v ORDER BY v)[1:5] FROM (SELECT DISTINCT CAST(sv AS VARCHAR) AS v "
        "FROM query_table(?)) WHERE v IS NULL OR v NOT IN (SELECT leaf FROM query_table(?))",
        [fs, hier],
    ).fetchall()[0]
    if row[0]:
        raise InvalidParameterError(
            f"{row[0]} sensitive value(s) missing from the hierarchy, e.g. "
            f"{', '.join(repr(v) for v in row[1])}"
        )


def _sql_call(m: Any) -> tuple[str, list[Any], Any]:
    """(macro reading the extended frequency set, parameters after its name, hierarchy or
    None) for a model object."""
    from ldiv_polars import models as M

    if isinstance(m, M.KAnonymity):
        return "ldiv__k_anonymity_x", [m.k], None
    if isinstance(m, M.DistinctLDiversity):
        return "ldiv__distinct_l_x", [m.l], None
    if isinstance(m, M.EntropyLDiversityDontCare):
        return "ldiv__entropy_l_dont_care_fs", [float(m.l), [str(v) for v in m.dont_care]], None
    if isinstance(m, M.EntropyLDiversity):
        return "ldiv__entropy_l_x", [float(m.l)], None
    if isinstance(m, M.NegativePositiveDisclosureRecursive):
        return ("ldiv__npd_recursive_cl_x",
                [m.c, m.c2, m.l, [str(v) for v in m.dont_care], [str(v) for v in m.protected]],
                None)
    if isinstance(m, M.PositiveDisclosureRecursive):
        return "ldiv__pd_recursive_cl_x", [m.c, m.l, [str(v) for v in m.dont_care]], None
    if type(m) is M.RecursiveCLDiversity:
        return "ldiv__recursive_cl_x", [m.c, m.l], None
    if isinstance(m, M.AlphaKAnonymity):
        return "ldiv__alpha_k_x", [m.alpha, m.k], None
    if isinstance(m, M.TCloseness):
        if m.distance == "hierarchical":
            return "ldiv__t_closeness_hierarchical_x", [m.t], m.hierarchy
        return "ldiv__t_closeness_x", [m.t, m.distance], None
    if isinstance(m, M.DeltaDisclosure):
        return "ldiv__delta_disclosure_x", [m.delta], None
    if isinstance(m, M.BetaLikeness):
        return "ldiv__beta_likeness_x", [m.beta, m.enhanced], None
    raise InvalidParameterError(
        f"{m.describe()} has no SQL form in the DuckDB engine yet; use the Polars engine"
    )
