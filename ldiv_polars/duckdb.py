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
from collections import Counter
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
from ldiv_polars.core.engines.duckdb import null_counts
from ldiv_polars.core.engines.duckdb import quote as _quote
from ldiv_polars.core.engines.duckdb import source as _source
from ldiv_polars.core.engines.duckdb import temp_name as _tmp
from ldiv_polars.core.engines.duckdb import validate as _validate
from ldiv_polars.core.inputs import reads_input
from ldiv_polars.core.validate import (
    NullPolicy,
    as_names,
    check_null_policy,
    raise_null_counts,
    reject_nested,
    require_int_at_least,
)
from ldiv_polars.errors import InputFormatError, InvalidParameterError, UnknownColumnError
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
    "summary_plan",
]

SQL_FILES = ("ldiv.sql", "ldiv_udf.sql")
"""The macro files, in load order: closed forms first, then the macros calling Python UDFs."""


_INT_KEYS = frozenset({"rows", "classes", "k", "l_distinct", "sample_uniques"})

# --------------------------------------------------------------------------------------------
# Locating and installing the SQL
# --------------------------------------------------------------------------------------------


def sql_dir() -> Any:
    """Directory holding the macro files: ``ldiv_polars/sql`` inside an installed wheel, else
    the repository's ``sql/`` next to the package (editable or source checkout); raises
    :class:`~ldiv_polars.errors.InputFormatError` when neither holds them (a broken
    installation)."""
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
    """Text of one packaged SQL file (see :data:`SQL_FILES`); raises
    :class:`~ldiv_polars.errors.InvalidParameterError` for a name not among them."""
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


POPULATION_UNIQUENESS_FIELDS = {
    "model": "VARCHAR", "used": "VARCHAR", "fraction": "DOUBLE", "uniques": "DOUBLE",
    "population_size": "BIGINT", "sample_size": "BIGINT", "sampling_fraction": "DOUBLE",
    "classes": "BIGINT", "sample_uniques": "BIGINT", "reason": "VARCHAR",
}
"""The fields of ``ldiv_population_uniqueness`` (those of
:class:`ldiv_polars.risk.PopulationUniqueness` but the per-model details)."""


def _population_uniqueness_udf(sizes: list[int], classes: list[int], population: str,
                               model: str) -> dict[str, object]:
    """Native UDF: :func:`ldiv_polars.risk.population_uniqueness` on one frequency of
    frequencies (``population`` a number or a region name)."""
    from ldiv_polars.risk import population_uniqueness

    text = population.strip().replace("_", "")
    pop: int | str = int(text) if text.isdigit() else population
    result = population_uniqueness(dict(zip(sizes, classes)), population_size=pop,
                                   model=model)  # type: ignore[arg-type]
    out = result.to_dict()
    return {k: out[k] for k in POPULATION_UNIQUENESS_FIELDS}


def _k_map_k_udf(k: int, records: int, population: str, estimator: str,
                 significance: float) -> int:
    """Native UDF: ARX's ``k'`` of the estimated k-map of a table of ``records`` records
    (:attr:`ldiv_polars.models.KMap.derived_k`, the model's own derivation; ``population`` a
    number or a region name)."""
    from ldiv_polars.models import KMap

    text = population.strip().replace("_", "")
    pop: int | str = int(text) if text.isdigit() else population
    return KMap(int(k), pop, estimator=estimator, significance=significance,
                rows=int(records)).derived_k


def _decide_udf(spec: pa.Array, ranks: pa.Array, counts: pa.Array, table: pa.Array,
                labels: pa.Array) -> pa.Array:
    """Arrow UDF: the exact verdict and value of each (undecided) class of the batch, by the
    model's own routine (``Model.decide``; a loop over those classes, never rows)."""
    from ldiv_polars.models.boundary import reference_of
    from ldiv_polars.models.exact import ClassCounts, Reference
    from ldiv_polars.models.spec import from_spec

    passed: list[bool] = []
    values: list[float] = []
    ref: Reference | None = None
    key: tuple[Any, Any] | None = None
    for sp, rk, cn, tb, lb in zip(spec.to_pylist(), ranks.to_pylist(), counts.to_pylist(),
                                  table.to_pylist(), labels.to_pylist()):
        if key != (tb, lb):  # every class of one query shares the domain: built once
            key = (tb, lb)
            ref, _ = reference_of(lb, tb, lb)  # the labels are the values' text
        assert ref is not None
        ok, v = from_spec(sp).decide(ClassCounts(tuple(rk), tuple(int(c) for c in cn)), ref)
        passed.append(bool(ok))
        values.append(float(v))
    return pa.StructArray.from_arrays([pa.array(passed, pa.bool_()),
                                       pa.array(values, pa.float64())],
                                      names=["passed", "value"])


def _register_udfs(con: duckdb.DuckDBPyConnection) -> None:
    dbl_list = duckdb.list_type(duckdb.sqltypes.DOUBLE)
    big_list = duckdb.list_type(duckdb.sqltypes.BIGINT)
    str_list = duckdb.list_type(duckdb.sqltypes.VARCHAR)
    for name in ("ldiv_adjusted_entropy", "ldiv_decide", "ldiv_population_uniqueness_of",
                 "ldiv_k_map_k"):
        try:
            con.remove_function(name)
        except Exception:  # noqa: BLE001 - not registered yet on this connection
            pass
    con.create_function(
        "ldiv_population_uniqueness_of",
        _population_uniqueness_udf,
        [big_list, big_list, duckdb.sqltypes.VARCHAR, duckdb.sqltypes.VARCHAR],
        duckdb.struct_type(POPULATION_UNIQUENESS_FIELDS),  # type: ignore[arg-type]
        type="native",
        side_effects=False,
    )
    con.create_function(
        "ldiv_k_map_k", _k_map_k_udf,
        [duckdb.sqltypes.BIGINT, duckdb.sqltypes.BIGINT, duckdb.sqltypes.VARCHAR,
         duckdb.sqltypes.VARCHAR, duckdb.sqltypes.DOUBLE],
        duckdb.sqltypes.BIGINT, type="native", side_effects=False,
    )
    con.create_function(
        "ldiv_adjusted_entropy",
        _adjusted_entropy_udf,
        [dbl_list, dbl_list],
        duckdb.sqltypes.DOUBLE,
        type="arrow",
        null_handling="special",
    )
    con.create_function(
        "ldiv_decide",
        _decide_udf,
        [duckdb.sqltypes.VARCHAR, big_list, big_list, big_list, str_list],
        duckdb.struct_type({"passed": duckdb.sqltypes.BOOLEAN,
                            "value": duckdb.sqltypes.DOUBLE}),
        type="arrow",
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


_PROBE = "ldiv__eps(), ldiv__share_le(0, 0, 0.0)"
"""Two scalar macros of ``ldiv.sql``, its first and its last: both exist once it ran."""
_UDF_PROBE = ("ldiv_decide(NULL, NULL, NULL, NULL, NULL), ldiv_adjusted_entropy(NULL, NULL), "
              "ldiv_population_uniqueness_of(NULL, NULL, NULL, NULL)")
"""The Python UDFs :func:`install` registers with ``udfs=True``."""


def _installed(con: duckdb.DuckDBPyConnection, udfs: bool) -> bool:
    """Whether :func:`install` ran on ``con`` (with the UDFs when ``udfs``): a statement that
    calls the probe functions and returns no row binds (a missing function is a
    ``CatalogException``), which costs far less than listing ``duckdb_functions()``."""
    probe = _PROBE + (", " + _UDF_PROBE if udfs else "")
    try:
        con.execute(f"SELECT {probe} WHERE false").fetchall()
    except duckdb.CatalogException:
        return False
    return True


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
            fields = [c for c in src.columns if c in qi]  # struct fields follow the table order
            exprs = {c: f"struct_extract_at(ec, {i})" for i, c in enumerate(fields, 1)} | {
                s: "sv"}
            raise_null_counts(null_counts(con, name, exprs, "n"), report or [*qi, s])
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


#: :func:`summary_plan`'s thresholds: ``ldiv_summary_packed`` (see docs/sql.md, "Out of core")
#: pays its distinct-value scans and planning only on a table of at least PACKED_MIN_ROWS rows
#: whose frequency set is large, told by the share of distinct rows among the first PROBE_ROWS
#: (the measurements behind these numbers: BENCHMARKS.md, session 15, sql7).
PACKED_MIN_ROWS = 1_000_000
PROBE_ROWS = 50_000


def summary_plan(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str]) -> str:
    """The macro :func:`summary` runs on the table or view ``table`` of ``con`` grouped on
    ``columns`` (validated names): ``'packed'`` (``ldiv_summary_packed``) when it has at
    least :data:`PACKED_MIN_ROWS` rows and at least half of its first :data:`PROBE_ROWS` rows
    are distinct on ``columns`` (the frequency set is of the order of the table), else
    ``'struct'`` (``ldiv_summary_struct``); the SQL macro ``ldiv_summary`` chooses by the
    same rule at run time (``ldiv_summary_plan`` tells its choice, defaults: these
    thresholds). Costs a row count (metadata for a DuckDB table, a Parquet
    file, an Arrow table) and, on a large table only, one read of that prefix. (A CSV file is
    not asked: :func:`summary` keeps the struct key there, since the packed plan reads its
    input once per column and a CSV is parsed at every read.)

    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT range % 7 AS q, 'a' AS s FROM range(10)")
    >>> summary_plan(con, "t", ["q", "s"])
    'struct'
    """
    rows = con.execute("SELECT count(*) FROM query_table(?)", [table]).fetchall()[0][0]
    if rows < PACKED_MIN_ROWS:
        return "struct"
    combos = con.execute(
        f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(_quote(c) for c in columns)} "
        f"FROM (FROM query_table(?) LIMIT {int(PROBE_ROWS)}))", [table]).fetchall()[0][0]
    return "packed" if 2 * combos >= PROBE_ROWS else "struct"


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
        # an input read in full at every pass (a CSV file: its row count is such a pass) keeps
        # the struct key: the packed plan reads its input once per column and once more
        plan = "struct" if src.count_reads_rows else summary_plan(src.con, src.name,
                                                                   [*qi_l, *s_l])
        if plan == "struct":  # null check on the fs
            with _frequency_set(src, qi_l, s_l[0], nulls) as fs:
                return _summary_of(src.con, fs, l)
        if nulls == "error":  # one scan of the named columns, before the summary's passes
            names = [*qi_l, *s_l]
            raise_null_counts(null_counts(src.con, src.name, {c: _quote(c) for c in names},
                                          None), names)
        return _summary_row(src.con.execute("FROM ldiv_summary_packed(?, ?, ?, ?)",
                                            [src.name, qi_l, s_l[0], l]))


def _summary_of(con: duckdb.DuckDBPyConnection, fs: str, l: int) -> dict[str, object]:
    """:func:`summary` of a materialized frequency set (the temp table ``fs``)."""
    return _summary_row(con.execute("FROM ldiv__summary_fs(?, ?)", [fs, l]))


def _summary_row(cur: duckdb.DuckDBPyConnection) -> dict[str, object]:
    """The one summary row of ``cur`` (columns :data:`SUMMARY_KEYS`) as :func:`summary`'s
    dict: integers as ``int``, the rest as ``float``, None where infinite."""
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
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` on anything else, a frame of
    fewer than two columns, or empty cells. Returns ``name``.
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
    """One ``ldiv__result`` row ``(model, passed, achieved, failing_classes, failing_rows,
    undecided_classes)`` as the dict :func:`check` returns."""
    model, passed, achieved, fc, fr, undecided = row
    if undecided:  # pragma: no cover - the exact step decides every class when installed
        raise InvalidParameterError(f"{model}: {undecided} class(es) left undecided")
    return {
        "model": model,
        "key": key,
        "passed": bool(passed),
        "achieved": None if achieved is None else _finite(float(achieved)),
        "failing_classes": int(fc),
        "failing_rows": int(fr),
    }


class _Calls:
    """Runs models' SQL forms (``Model.sql_call``) over extended frequency sets on one
    connection: registers their hierarchies (checking the sensitive values are leaves) and
    drops them at the end."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.hierarchies: list[str] = []
        self.sources = ExitStack()  # the population tables read by the models

    def _arguments(self, call: Any, x_name: str, fs: str) -> list[Any]:
        """The macro's arguments: the extended frequency set, the parameters and, for a
        hierarchical model, its hierarchy registered (the sensitive values checked as leaves)."""
        args: list[Any] = [x_name, *call.params]
        if call.hierarchy is not None:
            hname = register_hierarchy(self.con, _tmp("hier"), call.hierarchy)
            self.hierarchies.append(hname)
            _check_leaves(self.con, fs, hname)
            args.append(hname)
        if call.population is not None:
            args += self._population(call.population, fs)
        return args

    def _population(self, population: Any, fs: str) -> list[Any]:
        """The population table of a model judged against one, as a relation on the
        connection (kept until :meth:`close`), and the class key's field names; raises
        :class:`~ldiv_polars.errors.UnknownColumnError` when it lacks one,
        :class:`~ldiv_polars.errors.InvalidParameterError` when one is nested."""
        qi = [d[0] for d in self.con.execute(
            f"SELECT unnest(ec) FROM {_quote(fs)} LIMIT 0").description]
        if isinstance(population, pl.LazyFrame):  # collect the QI columns only
            names = population.collect_schema().names()
            population = population.select([c for c in names if c.lower() in
                                            {q.lower() for q in qi}])
        src = self.sources.enter_context(_source(population, self.con, None))
        known = {c.lower() for c in src.columns}
        missing = [q for q in qi if q.lower() not in known]
        if missing:
            raise UnknownColumnError(missing, src.columns)
        reject_nested(pl.Schema({c: pl.List(pl.Null) if c in src.nested else pl.Null
                                 for c in src.columns}),
                      [c for c in src.columns if c.lower() in {q.lower() for q in qi}],
                      "the population table")
        return [src.name, qi]

    def classes(self, call: Any, x_name: str, fs: str) -> tuple[str, list[Any]]:
        """SQL (a parenthesized relation) and parameters of the per-class verdicts of
        ``call`` over the extended frequency set ``x_name`` (built from ``fs``), the uncertain
        classes decided exactly."""
        args = self._arguments(call, x_name, fs)
        marks = ", ".join("?" for _ in args)
        cte = _tmp("c")
        sql = (f"(WITH {_quote(cte)} AS (FROM {call.macro}({marks})) "
               f"FROM ldiv__decide_x(?, ?, ?))")
        return sql, [*args, cte, x_name, call.spec_json]

    def verdicts(self, pairs: Sequence[tuple[Any, Any]], x_name: str, fs: str
                 ) -> list[tuple[Any, ...]]:
        """The ``ldiv__result`` rows of several models (``(model, call)`` pairs, ``call`` the
        model's SQL form) over the extended frequency set ``x_name``, in one statement: each
        model's per-class form is a CTE and its ``ldiv__result`` one branch of a UNION ALL,
        which gives the float verdict and the count of classes flagged uncertain; the class
        statistics two forms or more read are computed once (:meth:`_shared_stats`). Only a
        model with a flagged class is then decided exactly (:meth:`_decided`), so that the
        exact step costs nothing on a table where no class is within rounding of a
        threshold (or a model whose SQL form decides every class exactly)."""
        if not pairs:
            return []
        ctes, cte_args, shared = self._shared_stats([call for _, call in pairs], x_name)
        branches, result_args, model_args = [], [], []
        for i, (model, call) in enumerate(pairs):
            args = self._arguments(call, x_name, fs)
            macro, form_args = call.macro, args
            if call.stats_macro is not None and call.stats in shared:
                macro, form_args = call.stats_macro, [x_name, shared[call.stats], *args[1:]]
            cte = _tmp("c")
            ctes.append(f"{_quote(cte)} AS (FROM {macro}({', '.join('?' for _ in form_args)}))")
            branches.append(f"SELECT {i} AS i, * FROM ldiv__result(?, ?, ?)")
            cte_args += form_args
            result_args += [cte, model.name, model.higher_is_better]
            model_args.append(args)
        rows = self.con.execute(f"WITH {', '.join(ctes)} {' UNION ALL '.join(branches)} "
                                "ORDER BY i", [*cte_args, *result_args]).fetchall()
        # no undecided class (the last column): the float verdicts are the exact ones
        return [row[1:] if not row[-1] else self._decided(call, args, x_name, model)
                for row, (model, call), args in zip(rows, pairs, model_args)]

    @staticmethod
    def _shared_stats(calls: Sequence[Any], x_name: str
                      ) -> tuple[list[str], list[Any], dict[int, str]]:
        """The CTEs (and their parameters) of the class statistics
        ``ldiv__class_stats_x(x_name, l)`` that two forms or more among ``calls`` read
        (``SqlCall.stats_macro``), materialized once per ``l``, and the CTE's name by ``l``;
        a statistic one form alone reads stays inside that form."""
        readers = Counter(c.stats for c in calls if c.stats_macro is not None)
        shared = {l: _tmp("st") for l, count in readers.items() if count > 1}
        ctes = [f"{_quote(name)} AS MATERIALIZED (FROM ldiv__class_stats_x(?, ?))"
                for name in shared.values()]
        return ctes, [a for l in shared for a in (x_name, l)], shared

    def _decided(self, call: Any, args: list[Any], x_name: str, model: Any
                 ) -> tuple[Any, ...]:
        """The ``ldiv__result`` row with the uncertain classes decided exactly: the per-class
        table materialized, then ``ldiv__decide_x`` (the ``ldiv_decide`` UDF) over it."""
        marks = ", ".join("?" for _ in args)
        cl, source = _tmp("cl"), _tmp("d")
        self.con.execute(f"CREATE TEMP TABLE {_quote(cl)} AS FROM {call.macro}({marks})", args)
        try:
            self.con.execute(f"CREATE TEMP TABLE {_quote(source)} AS "
                             "FROM ldiv__decide_x(?, ?, ?)", [cl, x_name, call.spec_json])
            return self.con.execute("FROM ldiv__result(?, ?, ?)",
                                    [source, model.name, model.higher_is_better]
                                    ).fetchall()[0]
        finally:
            self.con.execute(f"DROP TABLE IF EXISTS {_quote(source)}")
            self.con.execute(f"DROP TABLE IF EXISTS {_quote(cl)}")

    def close(self) -> None:
        for hname in self.hierarchies:
            self.con.unregister(hname)
        self.sources.close()


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
    frequencies) is built once, and each model's SQL form (``Model.sql_call``: a per-class
    macro) reads it; the classes within rounding of a threshold are decided exactly by the
    model's own routine (the ``ldiv_decide`` UDF), as in the Polars engine.

    Returns one dict per model: ``model``, ``key``, ``passed``, ``achieved`` (None where the
    Polars side reports infinity), ``failing_classes``, ``failing_rows``. Every model with a
    SQL form is supported (a model without one raises
    :class:`~ldiv_polars.errors.NoSqlFormError`); with several sensitive columns, models that
    read no sensitive column and ``MultiAttribute`` around a model with a SQL form (one
    frequency set per sensitive column, the others joining the quasi-identifier, as Def 4.6
    says).

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
    _require_sql_forms(model_list)
    with _source(data, con, separator) as src:
        qi_l, s_l = _validate(src, qi, s)
        if not _installed(src.con, udfs=True):
            install(src.con, udfs=True)
        with _frequency_set(src, qi_l, s_l[0], nulls) as fs:
            _validate_models(src.con, fs, qi_l, s_l[0], model_list)
            return _check_of(src.con, fs, model_list)


def _validate_models(con: duckdb.DuckDBPyConnection, fs: str, qi: list[str], s: str,
                     model_list: list[Any]) -> None:
    """The models' own checks (``Model.validate``: e.g. a value set against the sensitive
    column's type) on an empty frame of the frequency set's schema, before any model runs,
    as on the Polars side: the macros compare Y and W as text, where ``1`` and a DOUBLE
    ``1.0`` differ."""
    from ldiv_polars.core.frequency import FrequencySet, count_name

    count = count_name([*qi, s])
    empty = con.sql(f"SELECT unnest(ec), sv AS {_quote(s)}, n AS {_quote(count)} "
                    f"FROM {_quote(fs)} LIMIT 0").pl()
    frame = FrequencySet(empty.lazy(), tuple(qi), (s,), count)
    for m in model_list:
        m.validate(frame)


def _require_sql_forms(model_list: list[Any]) -> None:
    """Raise :class:`~ldiv_polars.errors.NoSqlFormError` before any work when a model has no
    SQL form (a model sized by the table asked as for a table of one record: its form does
    not depend on the size)."""
    for m in model_list:
        m.for_rows(1).sql_call()


def _check_of(con: duckdb.DuckDBPyConnection, fs: str, model_list: list[Any]
              ) -> list[dict[str, object]]:
    """:func:`check` of a materialized frequency set (the temp table ``fs``): its extended
    form (class ids, sizes, table frequencies) is built once and shared by every model, whose
    SQL form (``Model.sql_call()``, the models bound to the table's records) reads it: one
    statement judges every per-class model (:meth:`_Calls.verdicts`); a table-level model's
    form reads the class sizes (:func:`_table_level_row`)."""
    out: list[dict[str, object]] = []
    x_name = _tmp("fsx")
    con.execute(f"CREATE TEMP TABLE {_quote(x_name)} AS FROM ldiv__fsx(?)", [fs])
    runner = _Calls(con)
    try:
        model_list = _bound(con, x_name, model_list)
        pairs = [(m, m.sql_call()) for m in model_list]
        per_class = iter(runner.verdicts([p for p in pairs if not p[0].table_level], x_name, fs))
        out = [_table_level_row(con, x_name, m, call) if m.table_level
               else _result_row(m.key, next(per_class)) for m, call in pairs]
    finally:
        runner.close()
        con.execute(f"DROP TABLE IF EXISTS {_quote(x_name)}")
    return out


def _bound(con: duckdb.DuckDBPyConnection, x_name: str, model_list: list[Any]) -> list[Any]:
    """The models bound to the table's records (``Model.for_rows``), counted on the extended
    frequency set only when a model asks."""
    from ldiv_polars.models.verdict import bind_models

    if not any(m.for_rows(1) is not m for m in model_list):
        return model_list
    rows = con.execute(f"SELECT coalesce(sum(n), 0)::BIGINT FROM {_quote(x_name)}").fetchone()
    return bind_models(model_list, int(rows[0]))  # type: ignore[index]


def _table_level_row(con: duckdb.DuckDBPyConnection, x_name: str, m: Any, call: Any
                     ) -> dict[str, object]:
    """A table-level model's verdict: its SQL form (``call.macro``) gives the frequencies of
    the class sizes (a small table), the model decides on them
    (:func:`~ldiv_polars.models.results.table_level_result`)."""
    import numpy as np

    from ldiv_polars.models.results import table_level_result

    hist = con.execute(f"FROM {call.macro}(?) ORDER BY size", [x_name]).fetchall()
    sizes = np.repeat(np.array([h[0] for h in hist], dtype=np.int64),
                      np.array([h[1] for h in hist], dtype=np.int64))
    result = table_level_result(m, sizes)
    return {"model": m.name, "key": m.key, "passed": result.passed,
            "achieved": result.achieved, "failing_classes": result.failing_classes,
            "failing_rows": result.failing_rows, **result.details}


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
    _require_sql_forms(model_list)
    with _source(data, con, separator) as src:
        qi_l, s_l = _validate(src, qi, sensitive)
        if not _installed(src.con, udfs=True):
            install(src.con, udfs=True)
        with _frequency_set(src, qi_l, s_l[0], nulls) as fs:
            return _summary_of(src.con, fs, l), _check_of(src.con, fs, model_list)


def _model_list(models: Any) -> list[Any]:
    """``models`` (one model or a sequence) as a list of model objects."""
    from ldiv_polars.models.verdict import check_models

    return check_models(models)


def _multi_rows(runner: _Calls, model_list: list[Any], fs_names: list[str],
                oc_exprs: list[str], whole: str) -> list[dict[str, object]]:
    """The verdicts of :func:`_check_multi` once its frequency sets exist: ``whole`` (the
    classes of the quasi-identifier alone), one per sensitive column (``fs_names``, with the
    expressions of the original class ``oc_exprs``); the models bound to the records."""
    conn = runner.con
    out: list[dict[str, object]] = []
    for m in _bound(conn, whole + "_x", model_list):
        call = m.sql_call() if m.each_attribute is None else m.each_attribute.sql_call()
        if m.table_level:
            out.append(_table_level_row(conn, whole + "_x", m, call))
            continue
        if m.each_attribute is None:
            sql, args = runner.classes(call, whole + "_x", whole)
        else:
            sql, args = _per_attribute(runner, call, fs_names, oc_exprs, whole,
                                       m.each_attribute.higher_is_better)
        cl = _tmp("cl")
        row = conn.execute(f"WITH {_quote(cl)} AS {sql} FROM ldiv__result(?, ?, ?)",
                           [*args, cl, m.name, m.higher_is_better]).fetchall()[0]
        out.append(_result_row(m.key, row))
    return out


def _check_multi(data: Any, qi: str | Iterable[str], sensitive: tuple[str, ...],
                 model_list: list[Any], *, con: duckdb.DuckDBPyConnection | None,
                 separator: str | None, nulls: NullPolicy) -> list[dict[str, object]]:
    """Several sensitive columns: models reading no sensitive column, judged on the classes
    of the quasi-identifier, and models applying one single-attribute model to each sensitive
    column in turn (``Model.each_attribute``, Def 4.6)."""
    from ldiv_polars.models.verdict import check_models

    check_models(model_list, sensitive)
    _require_sql_forms([m if m.each_attribute is None else m.each_attribute
                        for m in model_list])
    with _source(data, con, separator) as src:
        qi_l, s_l = _validate(src, qi, sensitive)
        if not _installed(src.con, udfs=True):
            install(src.con, udfs=True)
        conn = src.con
        created: list[str] = []
        runner = _Calls(conn)
        with ExitStack() as stack:
            try:
                fs_names, oc_exprs = _per_sensitive_sets(stack, src, qi_l, s_l, nulls, created)
                whole = _qi_classes(conn, fs_names[0], oc_exprs[0], created)
                return _multi_rows(runner, model_list, fs_names, oc_exprs, whole)
            finally:
                runner.close()
                for name in created:
                    conn.execute(f"DROP TABLE IF EXISTS {_quote(name)}")


def _per_sensitive_sets(stack: ExitStack, src: _Source, qi_l: list[str], s_l: list[str],
                        nulls: NullPolicy, created: list[str]) -> tuple[list[str], list[str]]:
    """One frequency set per sensitive column, the other sensitive columns in the key (its
    extended form materialized once, so that class ids agree; its name appended to
    ``created``): their table names and, per set, the SQL of the original class
    ``row(<the qi fields of the key, by position>)``. Nulls are judged on the first."""
    fs_names: list[str] = []
    oc_exprs: list[str] = []
    for i, s_i in enumerate(s_l):
        key = qi_l + [o for o in s_l if o != s_i]
        name = stack.enter_context(_frequency_set(
            src, key, s_i, nulls if i == 0 else "value", report=[*qi_l, *s_l]))
        src.con.execute(f"CREATE TEMP TABLE {_quote(name + '_x')} AS FROM ldiv__fsx(?)", [name])
        created.append(name + "_x")
        fs_names.append(name)
        fields = [c for c in src.columns if c in key]  # struct field order
        pos = [fields.index(c) + 1 for c in src.columns if c in qi_l]
        oc_exprs.append("row(" + ", ".join(f"struct_extract_at(ec, {p})" for p in pos) + ")")
    return fs_names, oc_exprs


def _qi_classes(conn: duckdb.DuckDBPyConnection, fs_name: str, oc_expr: str,
                created: list[str]) -> str:
    """The frequency set of the quasi-identifier's classes alone (with the first sensitive
    column) and its extended form, both appended to ``created``; returns its name."""
    whole = _tmp("mfs")
    conn.execute(f"CREATE TEMP TABLE {_quote(whole)} AS SELECT {oc_expr} AS ec, "
                 f"sv, sum(n)::BIGINT AS n FROM {_quote(fs_name)} GROUP BY ALL")
    conn.execute(f"CREATE TEMP TABLE {_quote(whole + '_x')} AS FROM ldiv__fsx(?)", [whole])
    created += [whole, whole + "_x"]
    return whole


def _per_attribute(runner: _Calls, call: Any, fs_names: list[str], oc_exprs: list[str],
                   whole: str, higher: bool) -> tuple[str, list[Any]]:
    """The per-class verdicts of Def 4.6 over the original classes (those of ``whole``): a
    class passes iff every sub-class (class x values of the other sensitive columns) passes
    the inner model for every sensitive column; its value is the worst."""
    parts, args = [], []
    for name, oc in zip(fs_names, oc_exprs):
        sql, a = runner.classes(call, name + "_x", name)
        parts.append(f"SELECT {oc} AS oc, d.ok, d.v, d.unc FROM {sql} d "
                     f"JOIN (SELECT cid, any_value(ec) AS ec FROM {_quote(name + '_x')} "
                     f"GROUP BY cid) USING (cid)")
        args += a
    worst = "min(v)" if higher else "max(v)"
    sizes = (f"(SELECT ec AS oc, sum(n)::BIGINT AS size FROM {_quote(whole)} GROUP BY ec)")
    sql = (f"(WITH p AS ({' UNION ALL '.join(parts)}), "
           f"z AS (SELECT oc, bool_and(ok) AS ok, bool_or(unc) AS unc, {worst} AS v FROM p "
           f"GROUP BY oc) "
           f"SELECT 0 AS cid, s.size, z.ok, z.v, z.unc FROM z JOIN {sizes} s "
           f"ON z.oc IS NOT DISTINCT FROM s.oc)")
    return sql, args


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
