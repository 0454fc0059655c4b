"""The DuckDB engine: CSV/Parquet paths (a file, a glob, a Parquet directory), table or view
names on a connection, DuckDB relations, Polars frames and pyarrow tables, grouped by DuckDB.

:func:`source` resolves any accepted input to a relation name on a connection (the SQL macros
of :mod:`ldiv_polars.duckdb` read it); :data:`ENGINE` gives the collected frequency set, the
encoded counts of a large Parquet file grouped out of core (:func:`build`: DuckDB's hash
aggregate stays within ``SET memory_limit``, spilling beyond it, and groups on one ``BIGINT``
key per row, the mixed-radix number of the QI values' raw indices, plus the sensitive value's
id), and the release (written by Polars over the same file: DuckDB has no release of its own
yet).

The ``(key, sensitive, n)`` table of :func:`build` is kept in a DuckDB file in a temporary
directory: the QI-only frequency set the search needs is summed out of it, and the chosen
node's ``(class, sensitive)`` counts (for the ``kl`` metric) are rolled up from it after the
search, so the sensitive column never has to be held in memory during the search. Values are
mapped exactly as the Polars engine maps them (each distinct value cast to a ``String`` by
Polars and looked up among the raw values); :func:`build` returns ``None`` (the caller takes
the Polars engine, which raises the typed errors) when a QI or sensitive value is null, a QI
value is not a raw value, or DuckDB reads a column with another type than Polars does.

>>> import tempfile, pathlib
>>> import polars as pl
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> pl.DataFrame({"zip": ["a", "b", "a", "a"], "s": ["x", "y", "y", "x"]}).write_parquet(
...     tmp / "t.parquet")
>>> ENGINE.frequency_set(tmp / "t.parquet", "zip", "s").frame.sort("zip", "s").collect().rows()
[('a', 'x', 2), ('a', 'y', 1), ('b', 'y', 1)]
>>> dfs = build(tmp / "t.parquet", ("zip",), ("s",), {"zip": pl.Series(["a", "b"])})
>>> keys, n = dfs.qi_frequency_set()
>>> dfs.decode(keys).tolist(), n.tolist(), dfs.total
([[0, 1]], [3, 1], 4)
>>> round(dfs.kl_const(), 6)  # sum of p log p over the (zip, s) cells: 2/4, 1/4, 1/4
-1.039721
>>> dfs.close()
"""

from __future__ import annotations

import math
import os
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from ldiv_polars.core.engines import polars as polars_engine
from ldiv_polars.core.engines.base import (
    KEY_LIMIT,
    EncodedCounts,
    OutputPlan,
    Release,
    decode_keys,
    deferred_frequency_set,
    places,
)
from ldiv_polars.core.frequency import (
    BAD_WEIGHTS,
    FrequencySet,
    check_weighted,
    count_name,
    weight_name,
)
from ldiv_polars.core.inputs import (
    input_paths,
    CSV_SUFFIXES,
    PARQUET_SUFFIXES,
    check_csv_header,
    check_input_path,
    check_separator,
    is_glob,
    sniff_separator,
    translate_input_errors,
)
from ldiv_polars.core.validate import (
    NullPolicy,
    check_null_policy,
    raise_on_nulls,
    validate_columns,
    validate_weight,
)
from ldiv_polars.errors import InputFormatError


class DuckDBEngine:
    """The DuckDB engine (see the module docstring)."""

    name = "duckdb"
    distributed = False

    def accepts(self, data: object) -> bool:
        """DuckDB relations are this engine's own."""
        return isinstance(data, duckdb.DuckDBPyRelation)

    def frequency_set(self, data: Any, qi: Any, sensitive: Any, *, nulls: NullPolicy = "error",
                      separator: str | None = None, weight: str | None = None,
                      con: duckdb.DuckDBPyConnection | None = None) -> FrequencySet:
        """The frequency set grouped by DuckDB and collected as a Polars frame (``data`` and
        ``con`` as :func:`source` takes them). Same validation, null policy, weight sums
        (``weight``) and errors as the Polars engine."""
        check_null_policy(nulls)
        with translate_input_errors(data if isinstance(data, (str, Path)) else None), \
                source(data, con, separator) as src:
            qi_t, s_t = validate(src, qi, sensitive, require_sensitive=False)
            keys = [*qi_t, *s_t]
            count = count_name(keys)  # no key name is reserved
            cols = ", ".join(quote(c) for c in keys)
            wname, extra = _weight_sql(src, weight, keys)
            df = src.con.sql(
                f"SELECT {cols}, count(*)::BIGINT AS {quote(count)}{extra} FROM "
                f"query_table({quote_literal(src.name)}) GROUP BY ALL").pl()
        if weight is not None:
            df = check_weighted(df.cast({wname: pl.Float64}), weight)
        if nulls == "error":
            raise_on_nulls(df, keys, count)
        return FrequencySet(df.lazy(), tuple(qi_t), tuple(s_t), count, weight=wname)

    def encoded_counts(self, data: Any, qi: Sequence[str], sensitive: Sequence[str],
                       leaves: Mapping[str, pl.Series], *, nulls: NullPolicy = "error",
                       qi_only: bool = False, order_from: int | None = None
                       ) -> EncodedCounts | None:
        """The encoded counts of a Parquet file grouped by :func:`build`: with ``qi_only``
        the keys (ascending) summed out of DuckDB's table, which stays open as ``source``
        (for the ``kl`` metric's counts after the search); otherwise the ``(QI, sensitive)``
        cells read into arrays and DuckDB closed. ``None`` when :func:`build` declines (nulls
        are then reported by the Polars engine, whatever ``nulls``)."""
        if not isinstance(data, (str, Path)) or len(sensitive) > 1:
            return None
        with translate_input_errors(data):
            dfs = build(data, qi, sensitive, leaves)
        if dfs is None:
            return None
        if qi_only:
            keys, n = dfs.qi_frequency_set()
            dfs.disconnect()  # DuckDB's buffers are not needed during the search
            return EncodedCounts(tuple(qi), (), keys=keys, n=n, ordered=True,
                                 raw_counts=dfs.raw_counts, rollups=1 if dfs.sensitive else 0,
                                 source=dfs)
        try:
            codes, sid, n = dfs.cells()
        finally:
            dfs.close()
        return EncodedCounts(tuple(qi), tuple(sensitive), codes=codes, sensitive_ids=sid, n=n,
                             sensitive_values=dfs.sensitive_values, raw_counts=dfs.raw_counts)

    def release(self, data: Any, plan: OutputPlan) -> Release:
        """The Polars engine's release over the same input (a path Polars reads)."""
        return polars_engine.ENGINE.release(data, plan)

    def write(self, output: Any, path: str | Path, *, inputs: Iterable[object] = (),
              expected_rows: int | None = None) -> None:
        """The Polars engine's write (the release is a Polars plan)."""
        polars_engine.ENGINE.write(output, path, inputs=inputs, expected_rows=expected_rows)

    def input_paths(self, data: Any) -> tuple[str, ...]:
        """The files ``data`` reads (:func:`~ldiv_polars.core.inputs.input_paths`)."""
        return input_paths(data)

    def schema(self, data: Any, separator: str | None = None,
               con: duckdb.DuckDBPyConnection | None = None) -> pl.Schema:
        """The columns as DuckDB reads them (``LIMIT 0``: no rows)."""
        with translate_input_errors(data if isinstance(data, (str, Path)) else None), \
                source(data, con, separator) as src:
            return src.con.sql(
                f"SELECT * FROM query_table({quote_literal(src.name)}) LIMIT 0").pl().schema

    def plan_frequency_set(self, data: Any, qi: Any, sensitive: Any, *,
                           nulls: NullPolicy = "error", separator: str | None = None,
                           require_sensitive: bool = False, weight: str | None = None
                           ) -> FrequencySet:
        """The frequency set grouped by DuckDB when collected
        (:func:`~ldiv_polars.core.engines.base.deferred_frequency_set`)."""
        return deferred_frequency_set(self, data, qi, sensitive, nulls=nulls,
                                      separator=separator,
                                      require_sensitive=require_sensitive, weight=weight)


ENGINE = DuckDBEngine()


def _weight_sql(src: Source, weight: str | None, keys: Sequence[str]
                ) -> tuple[str | None, str]:
    """The weight-sum column's name and the SQL aggregations of a weighted frequency set (its
    sum as a double and the rows whose weight is not a sampling weight, as
    :func:`~ldiv_polars.core.frequency.weighted_aggs`), after checking the column on the
    table's schema; ``(None, "")`` without ``weight``."""
    if weight is None:
        return None, ""
    schema = src.con.sql(f"SELECT * FROM query_table({quote_literal(src.name)}) LIMIT 0"
                         ).pl().schema
    validate_weight(schema, weight, keys)
    wname, w = weight_name(keys), f"{quote(weight)}::DOUBLE"
    bad = f"{w} IS NULL OR isnan({w}) OR isinf({w}) OR {w} <= 0"
    return wname, (f", sum({w}) AS {quote(wname)}, "
                   f"count(*) FILTER (WHERE {bad})::BIGINT AS {quote(BAD_WEIGHTS)}")


def quote_literal(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


@dataclass
class Source:
    """An input resolved to the relation ``name`` on ``con``, with its column names."""

    con: duckdb.DuckDBPyConnection
    name: str
    columns: list[str]
    count_reads_rows: bool = False
    """Whether counting its rows reads the whole input (a CSV file), where a DuckDB table, a
    Parquet file or an Arrow table answer from metadata."""
    nested: tuple[str, ...] = ()
    """The columns of a nested type (list, array, struct, map, union), which no QI or
    sensitive column may be (:func:`validate`)."""


def temp_name(prefix: str) -> str:
    """A fresh name for a temporary object on a connection."""
    return f"ldiv_{prefix}_{uuid.uuid4().hex}"


def quote(ident: str) -> str:
    """``ident`` as a quoted SQL identifier."""
    return '"' + ident.replace('"', '""') + '"'


def null_counts(con: duckdb.DuckDBPyConnection, table: str, columns: Mapping[str, str],
                count: str | None) -> dict[str, int]:
    """Rows with a null in each column of the frequency set ``table`` on ``con``, weighted by
    its ``count`` column (``None``: a table of rows, each counting once), in one scan of that
    table: ``columns`` maps each name to its SQL expression (a column, or a field of a struct
    key). The DuckDB side of the null policy
    (:func:`~ldiv_polars.core.validate.raise_null_counts` makes the error).

    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE f AS SELECT * FROM (VALUES ('a', 2), (NULL, 3)) t(z, n)")
    >>> null_counts(con, "f", {"z": quote("z")}, "n")
    {'z': 3}
    >>> null_counts(con, "f", {"z": quote("z")}, None)
    {'z': 1}
    """
    if not columns:
        return {}
    n = "1" if count is None else quote(count)
    exprs = [f"coalesce(sum({n}) FILTER (WHERE {e} IS NULL), 0)" for e in columns.values()]
    row = con.execute(f"SELECT {', '.join(exprs)} FROM query_table({quote_literal(table)})"
                      ).fetchall()[0]
    return {c: int(v) for c, v in zip(columns, row)}


_NESTED = frozenset({"list", "array", "struct", "map", "union"})


def columns_of(con: duckdb.DuckDBPyConnection, name: str) -> tuple[list[str], tuple[str, ...]]:
    """The column names of relation ``name`` and those of a nested type;
    :class:`InputFormatError` when there is no such relation.

    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT 1 AS a, [1] AS b, {'x': 1} AS c")
    >>> columns_of(con, "t")
    (['a', 'b', 'c'], ('b', 'c'))
    """
    try:
        cur = con.execute("SELECT * FROM query_table(?) LIMIT 0", [name])
    except duckdb.CatalogException as exc:
        raise InputFormatError(f"no table or view named {name!r} on this connection") from exc
    names = [d[0] for d in cur.description]
    nested = tuple(d[0] for d in cur.description if getattr(d[1], "id", "") in _NESTED)
    cur.fetchall()  # complete the result: DuckDB 2 refuses other work on a pending one
    return names, nested


def _csv_file(data: Any, con: duckdb.DuckDBPyConnection | None) -> bool:
    """Whether :func:`source` reads ``data`` as a CSV file (or a glob of CSV files)."""
    return (isinstance(data, (str, Path)) and looks_like_file(data, con)
            and Path(str(data)).suffix.lower() in CSV_SUFFIXES)


@contextmanager
def source(data: Any, con: duckdb.DuckDBPyConnection | None, separator: str | None
           ) -> Iterator[Source]:
    """Resolve ``data`` to a relation name on a connection; temporary objects are dropped on
    exit and a connection opened here is closed. Raises :class:`InputFormatError` on an input
    of another kind, or a name that is no table or view on ``con``."""
    own = con is None
    conn = duckdb.connect() if con is None else con
    cleanup: list[tuple[str, str]] = []
    try:
        if isinstance(data, (str, Path)) and looks_like_file(data, con):
            name = temp_name("src")
            file_relation(conn, data, separator).create_view(name, replace=True)
            cleanup.append(("view", name))
        elif isinstance(data, str):
            name = data  # a table or view name on `con`
        elif isinstance(data, (pl.DataFrame, pl.LazyFrame, pa.Table)):
            if isinstance(data, pl.LazyFrame):
                data = data.collect(engine="streaming")
            table = data.to_arrow() if isinstance(data, pl.DataFrame) else data
            name = temp_name("src")
            conn.register(name, table)
            cleanup.append(("register", name))
        elif isinstance(data, duckdb.DuckDBPyRelation):
            name = temp_name("src")
            if own:  # the relation lives on a connection we were not given: bring its rows
                conn.register(name, data.to_arrow_table())
                cleanup.append(("register", name))
            else:  # a view on the relation's connection, which must be `con`
                data.create_view(name, replace=True)
                cleanup.append(("view", name))
        else:
            raise InputFormatError(
                "expected a CSV/Parquet path, a table or view name (with con=...), a polars "
                f"DataFrame/LazyFrame, a pyarrow Table or a DuckDB relation, got "
                f"{type(data).__name__}"
            )
        names, nested = columns_of(conn, name)
        yield Source(conn, name, names, _csv_file(data, con), nested)
    finally:
        for kind, name in reversed(cleanup):
            try:
                if kind == "register":
                    conn.unregister(name)
                else:
                    conn.execute(f"DROP VIEW IF EXISTS {quote(name)}")
            except Exception:  # noqa: BLE001 - connection may already be closed
                pass
        if own:
            conn.close()


def looks_like_file(data: str | Path, con: duckdb.DuckDBPyConnection | None) -> bool:
    """Whether a string names a file (not a table on ``con``): always without a connection;
    with one, when the path exists or is a CSV/Parquet glob."""
    if isinstance(data, Path) or con is None:
        return True
    s = str(data)
    if os.path.exists(s):
        return True
    return Path(s).suffix.lower() in PARQUET_SUFFIXES | CSV_SUFFIXES and is_glob(s)


def file_relation(
    con: duckdb.DuckDBPyConnection, data: str | Path, separator: str | None
) -> duckdb.DuckDBPyRelation:
    """DuckDB's relation over a CSV or Parquet path (a file, a glob, a Parquet directory),
    checked as the Polars side checks it (:func:`~ldiv_polars.core.inputs.check_input_path`,
    the separator, duplicate header names).
    Raises :class:`~ldiv_polars.errors.InputFormatError` when the suffix names no CSV or Parquet
    format."""
    text = str(data)
    check_separator(separator)
    first = check_input_path(text)
    globbed = is_glob(text)
    suffix = Path(text).suffix.lower()
    if suffix in PARQUET_SUFFIXES or (first.is_dir() and not globbed):
        target = str(Path(text) / "**" / "*.parquet") if first.is_dir() else text
        return con.read_parquet(target)
    if suffix in CSV_SUFFIXES:
        sep = separator or sniff_separator(first, first.suffix.lower())
        check_csv_header(first, sep)
        # skip=0: the sniffer may not skip leading rows to find a consistent dialect (it took
        # a ragged file's last row for its header); a ragged file is then an error
        return con.sql("FROM read_csv($path, sep=$sep, header=true, skip=0)",
                       params={"path": text, "sep": sep})
    raise InputFormatError(
        f"cannot tell the format of {text!r}: use a .csv/.tsv/.txt or .parquet file"
    )


def validate(src: Source, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
             *, require_sensitive: bool = True, reserved: Sequence[str] = ()
             ) -> tuple[list[str], list[str]]:
    """The foundation's column checks (same errors and messages), on the table's names (a
    nested column stands in as a list)."""
    schema = pl.LazyFrame(schema={c: pl.List(pl.Null) if c in src.nested else pl.Null
                                  for c in src.columns})
    qi_t, s_t = validate_columns(schema, qi, sensitive, require_sensitive=require_sensitive,
                                 reserved=reserved)
    return list(qi_t), list(s_t)


# --- out-of-core encoded counts of a Parquet file -------------------------------------------

MEMORY_LIMIT = "1GB"
"""DuckDB's ``memory_limit`` while grouping (it spills to the temporary directory beyond)."""

MEMORY_TABLE_MAX_ROWS = 16_000_000
"""Inputs of at most this many rows keep their frequency-set table in memory (a temporary
table of the open connection: at most this many ``(key, sensitive, n)`` rows, 20 bytes each);
larger ones write it to the database file and close the connection during the search."""
COUNT_MAX_SPAN = 1 << 23
"""Most ``(class, sensitive)`` cells of a node counted in numpy by
:meth:`DuckFrequencySet.rolled_counts` (a float64 array of this many entries, 8 bytes each)."""
FETCH_ROWS = 1 << 20
"""Rows per batch read back from DuckDB."""


class DuckFrequencySet:
    """The ``(key, sensitive id, n)`` frequency set of a Parquet file, in a DuckDB file.

    ``cards[i]`` is the number of raw values of QI ``i``'s hierarchy and ``mult[i]`` its
    place value in the key (the last QI varies fastest, so ascending keys sort the rows by
    their QI codes, first QI first). Use :func:`build`."""

    def __init__(self, tmp: tempfile.TemporaryDirectory[str], qi: tuple[str, ...],
                 sensitive: tuple[str, ...], cards: list[int], n_sensitive: int,
                 total: int, memory_limit: str) -> None:
        self._tmp = tmp
        self.qi = qi
        self.sensitive = sensitive
        self.cards = cards
        self.mult = places(cards)
        self.n_sensitive = n_sensitive
        self.total = total
        self.memory_limit = memory_limit
        self._con: duckdb.DuckDBPyConnection | None = None
        self.in_memory = False
        """The table is a temporary one of the open connection (see :func:`build`)."""
        self.raw_counts: list[np.ndarray] = []
        """Per QI, the rows of each raw hierarchy value (int64, indexed by its code)."""
        self.sensitive_values: pl.Series | None = None
        """The sensitive column's distinct values, in the order of their ids."""

    @property
    def path(self) -> Path:
        """The DuckDB database file holding the frequency set (in a temporary directory)."""
        return Path(self._tmp.name) / "fs.duckdb"

    def connect(self) -> duckdb.DuckDBPyConnection:
        """The connection to the frequency-set database (opened on demand)."""
        if self._con is None:
            self._con = _connect(self.path, Path(self._tmp.name), self.memory_limit)
        return self._con

    def disconnect(self) -> None:
        """Close the connection (frees DuckDB's buffers; the table stays on disk). A no-op
        while the table is held in memory by the connection (``in_memory``)."""
        if self._con is not None and not self.in_memory:
            self._con.close()
            self._con = None

    def close(self) -> None:
        """Close the connection and delete the temporary directory."""
        self.in_memory = False
        self.disconnect()
        self._tmp.cleanup()

    def decode(self, key: np.ndarray) -> np.ndarray:
        """(q, rows) int32 QI codes of mixed-radix keys."""
        return decode_keys(key, self.cards).T  # F-ordered: .T is C-contiguous

    def qi_frequency_set(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, n)``: the QI-only frequency set (sensitive summed out), one row per
        distinct QI combination: its mixed-radix keys, ascending (:meth:`decode` gives the
        codes), and int64 counts. The ``(key, n)`` cells are read in key order, in batches,
        and their runs summed in numpy (cheaper than a second group-by in DuckDB; see
        BENCHMARKS.md)."""
        reader = self.connect().sql("SELECT k, n FROM fs ORDER BY k").to_arrow_reader(
            FETCH_ROWS)
        keys: list[np.ndarray] = []
        sums: list[np.ndarray] = []
        for batch in reader:
            k = batch.column(0).to_numpy().astype(np.int64, copy=False)
            n = batch.column(1).to_numpy().astype(np.int64, copy=False)
            if not k.shape[0]:
                continue
            starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
            uk, un = k[starts], np.add.reduceat(n, starts)
            if keys and uk[0] == keys[-1][-1]:  # a run continued from the previous batch
                sums[-1][-1] += un[0]
                uk, un = uk[1:], un[1:]
            if uk.shape[0]:
                keys.append(uk)
                sums.append(un)
        if not keys:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(keys), np.concatenate(sums)

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(codes, s, n)``: the whole ``(QI, sensitive)`` frequency set as arrays, the QI
        codes decoded (``(q, rows)``, uint16 when every QI has at most 65,536 raw values, else
        int32), the sensitive ids int32 and the counts int64; rows in no particular order.
        Read in batches into arrays allocated once (no copy of the table's rows beyond them).
        Raises ``RuntimeError`` when DuckDB's table changes while it is read (a bug, never
        expected)."""
        con = self.connect()
        rows = int(con.execute("SELECT count(*) FROM fs").fetchall()[0][0])
        narrow = max(self.cards, default=0) <= 1 << 16
        codes = np.empty((len(self.qi), rows), dtype=np.uint16 if narrow else np.int32)
        s = np.empty(rows, dtype=np.int32)
        n = np.empty(rows, dtype=np.int64)
        at = 0
        for batch in con.sql("SELECT k, s, n FROM fs").to_arrow_reader(FETCH_ROWS):
            k = batch.column(0).to_numpy()
            hi = at + k.shape[0]
            codes[:, at:hi] = self.decode(k)
            s[at:hi] = batch.column(1).to_numpy()
            n[at:hi] = batch.column(2).to_numpy()
            at = hi
        if at != rows:  # pragma: no cover - the table changed under us
            raise RuntimeError("DuckDB's frequency set changed while it was read")
        return codes, s, n

    def kl_const(self) -> float:
        """``sum p log p`` over the ``(QI, sensitive)`` cells, ``p = n / total`` (the constant
        term of the ``kl`` metric; a compensated sum, as accurate as numpy's pairwise one and
        independent of the cells' order)."""
        if not self.total:
            return 0.0
        t = float(self.total)
        val = self.connect().execute(
            f"SELECT fsum((n::DOUBLE / {t!r}) * ln(n::DOUBLE / {t!r})) FROM fs").fetchall()[0][0]
        return float(val or 0.0)

    def rolled_counts(self, levels: Sequence[int], level_maps: Sequence[np.ndarray],
                      cards: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(class key, sensitive id, n)`` at node ``levels``, sorted by class key then
        sensitive id: the class key is the mixed-radix number of the level codes
        (``level_maps[i]`` maps QI ``i``'s raw codes to its level-``levels[i]`` codes;
        ``cards`` the level cardinalities), first QI most significant, as the roll-ups order
        their classes. When the node's ``(class, sensitive)`` key space has at most
        ``COUNT_MAX_SPAN`` cells, the table is read in batches and counted into it by numpy
        (faster than DuckDB's group-by there; see BENCHMARKS.md); otherwise DuckDB groups it.
        Raises ``OverflowError`` when the node's class key space does not fit a 64-bit key."""
        span = self.n_sensitive
        for c in cards:
            span *= max(int(c), 1)
        if span <= COUNT_MAX_SPAN:
            return self._counted(level_maps, cards, span)
        con = self.connect()
        terms, params = [], []
        place = 1
        for i in range(len(self.qi) - 1, -1, -1):
            raw = f"(k // {self.mult[i]}) % {self.cards[i]}" if i else f"k // {self.mult[i]}"
            if levels[i]:
                # the level map as a list parameter, indexed by the raw code (1-based): a
                # lookup per row, ~3x faster than a join on a mapping table
                params.append([int(v) for v in np.asarray(level_maps[i])])
                terms.append(f"(?::BIGINT[])[({raw}) + 1] * {place}")
            else:
                terms.append(f"({raw}) * {place}")
            place *= max(int(cards[i]), 1)
        if place >= KEY_LIMIT:  # pragma: no cover - the base key already fits
            raise OverflowError("class key space too large")
        ck = " + ".join(terms) if terms else "0"
        res = con.execute(
            f"SELECT ({ck})::BIGINT AS ck, s, sum(n)::BIGINT AS n FROM fs "
            "GROUP BY ck, s ORDER BY ck, s", params).fetchnumpy()
        return (np.asarray(res["ck"], dtype=np.int64), np.asarray(res["s"], dtype=np.int32),
                np.asarray(res["n"], dtype=np.int64))


    def _counted(self, level_maps: Sequence[np.ndarray], cards: Sequence[int], span: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`rolled_counts` by counting the ``(class key, sensitive id)`` cells of the
        table's rows, read in batches, into one array of ``span`` cells."""
        ns = self.n_sensitive
        place = [ns * p for p in places([max(int(c), 1) for c in cards])]
        # QI i's raw code -> its level code's place in the cell key
        luts = [np.asarray(m, dtype=np.int64) * p for m, p in zip(level_maps, place)]
        counts = np.zeros(span, dtype=np.float64)  # float64 sums are exact below 2**53 rows
        for batch in self.connect().sql("SELECT k, s, n FROM fs").to_arrow_reader(FETCH_ROWS):
            k = batch.column(0).to_numpy()
            key = batch.column(1).to_numpy().astype(np.int64)
            for i, (lut, m, c) in enumerate(zip(luts, self.mult, self.cards)):
                raw = k // m  # QI i's raw codes, int64 (faster lookups than decode()'s int32)
                if i:
                    raw %= c
                key += lut[raw]
            counts += np.bincount(key, weights=batch.column(2).to_numpy(), minlength=span)
        cells = np.flatnonzero(counts)
        return cells // ns, (cells % ns).astype(np.int32), counts[cells].astype(np.int64)


def _connect(path: Path, tmp: Path, memory_limit: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    con.execute(f"SET memory_limit = {quote_literal(memory_limit)}")
    con.execute(f"SET temp_directory = {quote_literal(str(tmp / 'spill'))}")
    con.execute("SET preserve_insertion_order = false")
    return con


def build(path: str | Path, qi: Sequence[str], sensitive: Sequence[str],
          leaves: Mapping[str, pl.Series], *, memory_limit: str = MEMORY_LIMIT,
          ) -> DuckFrequencySet | None:
    """Group the Parquet file ``path`` by its QI codes (and sensitive value) in DuckDB: one
    pass for the distinct values of each column (:func:`_value_maps`), one grouped pass
    (:func:`_group`). ``leaves[q]``: QI ``q``'s raw values in hierarchy order (a value's code
    is its index). ``None`` when a value is null, a QI value is missing from its hierarchy, a
    column reads with another type in DuckDB than in Polars, at most one sensitive column is
    supported, or the key would overflow. Any other error (e.g. an unreadable file, out of
    memory) propagates, the temporary directory removed."""
    qi, sensitive = tuple(qi), tuple(sensitive)
    if len(sensitive) > 1:
        return None
    cards = [len(leaves[q]) for q in qi]
    if math.prod(max(c, 1) for c in cards) >= KEY_LIMIT:
        return None
    schema = pl.scan_parquet(path).collect_schema()
    tmp = tempfile.TemporaryDirectory(prefix="ldiv-fs-")
    con: duckdb.DuckDBPyConnection | None = None
    try:
        con = _connect(Path(tmp.name) / "fs.duckdb", Path(tmp.name), memory_limit)
        src = f"read_parquet({quote_literal(str(path))})"
        total, maps, raw_counts = _value_maps(con, src, qi, sensitive, schema, leaves, cards)
        # a small input's table is a temporary one (in memory: no compressed write to the
        # file), kept with the open connection; a large one's is written to the file
        in_memory = total <= MEMORY_TABLE_MAX_ROWS
        _group(con, src, qi, sensitive, maps, cards, in_memory)
        if not in_memory:
            con.close()
    except (_Declined, duckdb.BinderException, duckdb.ConversionException,
            duckdb.NotImplementedException):
        # a value or column DuckDB cannot read or compare as Polars does: the Polars engine
        # decides (and raises the typed errors)
        if con is not None:
            con.close()
        tmp.cleanup()
        return None
    except BaseException:
        tmp.cleanup()
        raise
    n_sensitive = maps[-1].height if sensitive else 1
    dfs = DuckFrequencySet(tmp, qi, sensitive, cards, max(n_sensitive, 1), total, memory_limit)
    dfs.raw_counts = raw_counts
    if sensitive:
        dfs.sensitive_values = maps[-1].get_column("v")
    if in_memory:
        dfs._con, dfs.in_memory = con, True
    return dfs


class _Declined(Exception):
    """A value :func:`build` leaves to the Polars engine (a null, a value outside its
    hierarchy, a dtype DuckDB reads differently)."""


def _value_maps(con: duckdb.DuckDBPyConnection, src: str, qi: tuple[str, ...],
                sensitive: tuple[str, ...], schema: pl.Schema, leaves: Mapping[str, pl.Series],
                cards: Sequence[int]) -> tuple[int, list[pl.DataFrame], list[np.ndarray]]:
    """One pass for each column's distinct values and their row counts: the row count, one
    ``(v, c)`` map per column (a QI value's code; a sensitive value's id, in the order read)
    and each QI's raw marginals (the metrics need them: read in this pass instead of from the
    frequency set). Raises :class:`_Declined` for what the Polars engine must judge."""
    cols = [*qi, *sensitive]
    distinct = con.sql(
        "SELECT __ldiv_rows, "
        + ", ".join(f"map_keys(h{i}) AS d{i}, map_values(h{i}) AS f{i}, z{i}"
                    for i in range(len(cols)))
        + " FROM (SELECT count(*) AS __ldiv_rows, "
        + ", ".join(f"histogram({quote(c)}) AS h{i}, "
                    f"count(*) - count({quote(c)}) AS z{i}" for i, c in enumerate(cols))
        + f" FROM {src})").pl()
    maps: list[pl.DataFrame] = []
    raw_counts: list[np.ndarray] = []
    for i, c in enumerate(cols):
        values = distinct.get_column(f"d{i}").explode().rename("v")
        freq = distinct.get_column(f"f{i}").explode()
        if distinct.item(0, f"z{i}") or values.null_count() or values.dtype != schema[c]:
            raise _Declined(c)
        if c not in qi:
            maps.append(pl.DataFrame([values, pl.arange(0, values.len(), eager=True,
                                                        dtype=pl.Int64).alias("c")]))
            continue
        raw = leaves[c]
        if raw.null_count() or raw.n_unique() != raw.len():
            raise _Declined(c)
        try:
            code = values.cast(pl.String).cast(pl.Enum(raw), strict=False).to_physical()
        except pl.exceptions.PolarsError:  # e.g. binary values: the Polars engine decides
            raise _Declined(c) from None
        if code.null_count():
            raise _Declined(c)
        maps.append(pl.DataFrame([values, code.cast(pl.Int64).alias("c")]))
        raw_counts.append(np.bincount(code.to_numpy(), weights=freq.to_numpy(),
                                      minlength=cards[len(raw_counts)]).astype(np.int64))
    return int(distinct.item(0, "__ldiv_rows")), maps, raw_counts


def _group(con: duckdb.DuckDBPyConnection, src: str, qi: tuple[str, ...],
           sensitive: tuple[str, ...], maps: list[pl.DataFrame], cards: Sequence[int],
           in_memory: bool) -> None:
    """The grouped pass: table ``fs`` of ``(k, s, n)``, ``k`` the mixed-radix key of the
    QI codes and ``s`` the sensitive id, each value mapped by a join on its column's map (a
    temporary table when ``in_memory``, else written to the database file)."""
    cols = [*qi, *sensitive]
    mult = places(cards)
    joins = []
    for i, c in enumerate(cols):
        con.register(f"__ldiv_m{i}", maps[i])
        joins.append(f"JOIN __ldiv_m{i} ON t.{quote(c)} = __ldiv_m{i}.v")
    terms = [f"__ldiv_m{i}.c * {mult[i]}" for i in range(len(qi))]
    key = " + ".join(terms) if terms else "0"
    s = f"__ldiv_m{len(qi)}.c::INTEGER" if sensitive else "0::INTEGER"
    con.execute(
        f"CREATE {'TEMP ' if in_memory else ''}TABLE fs AS SELECT ({key})::BIGINT AS k, "
        f"{s} AS s, count(*)::BIGINT AS n FROM {src} t {' '.join(joins)} GROUP BY ALL"
    ).fetchall()
    for i in range(len(cols)):
        con.unregister(f"__ldiv_m{i}")
