"""The distinct keys of a table: what cell suppression and local recoding work on.

One streaming pass builds the frequency set ``(qi..., sensitive..., n)``; it is collected (it is
small: one row per distinct (key, sensitive value)) and encoded as integer arrays: each QI value
becomes its index among the column's sorted distinct values, each distinct QI combination a
*key*, each distinct sensitive tuple a sensitive id. Nothing here reads rows again.

>>> import polars as pl
>>> df = pl.DataFrame({"zip": ["b", "a", "a", "b"], "age": [1, 2, 2, 1], "s": ["x", "y", "x", "x"]})
>>> t = KeyTable.build(df, ["zip", "age"], "s")
>>> t.codes.tolist(), t.n.tolist(), t.total
([[0, 1], [1, 0]], [2, 2], 4)
>>> t.histogram().tolist()  # rows: keys; columns: sensitive ids (x, y)
[[1, 1], [2, 0]]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.core.inputs import TableLike
from ldiv_polars.errors import InvalidParameterError, NullValuesError

Importance = Sequence[str] | Mapping[str, float] | None
"""A per-QI importance: ``None`` (every cell costs 1), a list of QI names from the most to the
least important, or explicit positive weights ``{qi: weight}`` (the cost of one suppressed
cell of that QI)."""


def require_count_n(fs: FrequencySet) -> FrequencySet:
    """``fs``, whose count column must be ``n``: the cell-level code reads it by that name, so
    a QI or sensitive column named ``n`` is an :class:`InvalidParameterError` here."""
    if fs.count != COUNT:
        raise InvalidParameterError(
            f"cell suppression and local recoding do not accept a column named {COUNT!r} "
            "(their internal count column); rename it")
    return fs


@dataclass
class KeyTable:
    """A frequency set encoded for the local algorithms.

    ``codes[k, i]`` is key ``k``'s index among ``values[i]`` (QI ``i``'s sorted distinct values);
    ``n[k]`` its rows; the frequency set's cells are ``(cell_key, cell_s, cell_n)`` with
    ``cell_s`` an id into ``s_values`` (the distinct sensitive tuples; one column of zeros and
    an empty ``s_values`` when no sensitive column is given).
    """

    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    values: list[pl.Series]
    codes: np.ndarray
    n: np.ndarray
    cell_key: np.ndarray
    cell_s: np.ndarray
    cell_n: np.ndarray
    s_values: pl.DataFrame
    schema: dict[str, pl.DataType] = field(default_factory=dict)
    _hist: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def build(cls, data: TableLike, qi: str | Iterable[str],
              sensitive: str | Iterable[str] | None, *,
              separator: str | None = None, parquet: Path | None = None) -> KeyTable:
        """Encode ``data``'s frequency set (one streaming pass; nulls in a QI or sensitive
        column are a :class:`~ldiv_polars.errors.NullValuesError`: a null is the suppressed
        marker of the release). ``parquet``: the one Parquet file ``data`` reads
        (:func:`~ldiv_polars.core.batches.single_parquet_file`), grouped by the DuckDB engine
        instead, which holds far less memory on a large file than Polars' streaming
        group-by (BENCHMARKS.md); the engines give the same frequency set, its columns cast
        to the dtypes Polars reads (the release joins the input on them)."""
        try:
            if parquet is not None:
                from ldiv_polars.core.engines.duckdb import ENGINE as DUCKDB

                fs = require_count_n(DUCKDB.frequency_set(str(parquet), qi, sensitive,
                                                          nulls="error"))
                schema = pl.scan_parquet(parquet).collect_schema()
                df = fs.collect().cast({c: schema[c] for c in (*fs.qi, *fs.sensitive)})
            else:
                fs = require_count_n(FrequencySet.build(data, qi, sensitive, nulls="error",
                                                        separator=separator))
                df = fs.collect()
        except NullValuesError as e:
            parts = ", ".join(f"{c!r}: {n} null(s)" for c, n in e.counts.items())
            e.args = (f"null values in {parts}: the release writes suppressed cells as null, "
                      "so the input may hold none (fill or drop them first)",)
            raise
        return cls.from_frequency_set(df, fs.qi, fs.sensitive)

    @classmethod
    def from_frequency_set(cls, df: pl.DataFrame, qi: Sequence[str],
                           sensitive: Sequence[str]) -> KeyTable:
        """Encode a collected frequency set ``(qi..., sensitive..., n)`` (no nulls). Raises
        :class:`~ldiv_polars.errors.InvalidParameterError` when the QI combinations are too
        many to number (2^62 or more combinations)."""
        qi_t, s_t = tuple(qi), tuple(sensitive)
        df = df.filter(pl.col(COUNT) > 0)
        values = [df.get_column(q).unique().sort() for q in qi_t]
        codes = np.stack(
            [df.get_column(q).rank("dense").cast(pl.Int64).to_numpy() - 1 for q in qi_t], axis=1
        ) if df.height else np.zeros((0, len(qi_t)), dtype=np.int64)
        radix = np.array([max(v.len(), 1) for v in values], dtype=np.int64)
        if float(np.prod(radix.astype(np.float64))) >= 2.0**62:
            raise InvalidParameterError("too many distinct QI combinations to encode")
        flat = _mixed(codes, radix)
        ukeys, cell_key = np.unique(flat, return_inverse=True)
        n_cells = df.get_column(COUNT).to_numpy().astype(np.int64)
        n = np.bincount(cell_key, weights=n_cells, minlength=ukeys.shape[0]).astype(np.int64)
        key_codes = np.zeros((ukeys.shape[0], len(qi_t)), dtype=np.int32)
        key_codes[cell_key] = codes
        if s_t:
            sid = df.select(pl.struct(list(s_t)).rank("dense").cast(pl.Int64)).to_series()
            cell_s = sid.to_numpy() - 1
            order = np.argsort(cell_s, kind="stable")
            first = order[np.r_[0, np.flatnonzero(np.diff(cell_s[order])) + 1]] \
                if cell_s.shape[0] else np.zeros(0, dtype=np.int64)
            s_values = df.select(s_t)[first]
        else:
            cell_s = np.zeros(df.height, dtype=np.int64)
            s_values = pl.DataFrame()
        schema = {c: df.schema[c] for c in [*qi_t, *s_t]}
        return cls(qi_t, s_t, values, key_codes, n, cell_key.astype(np.int64),
                   cell_s.astype(np.int64), n_cells, s_values, schema)

    @property
    def keys(self) -> int:
        """The number of distinct keys (rows of the table)."""
        return int(self.n.shape[0])

    @property
    def total(self) -> int:
        """The number of records (sum of the key counts)."""
        return int(self.n.sum())

    @property
    def n_sensitive(self) -> int:
        """The number of distinct sensitive values (at least 1)."""
        return max(self.s_values.height, 1)

    def histogram(self) -> np.ndarray:
        """Dense ``(keys, sensitive ids)`` counts (cached)."""
        if self._hist is None:
            h = np.zeros((self.keys, self.n_sensitive), dtype=np.int64)
            np.add.at(h, (self.cell_key, self.cell_s), self.cell_n)
            self._hist = h
        return self._hist

    def reference(self) -> np.ndarray:
        """The table's count of each sensitive id."""
        return self.histogram().sum(axis=0)

    def key_frame(self) -> pl.DataFrame:
        """One row per key: the raw QI values (their own dtypes) and ``n``."""
        cols = [self.values[i].gather(self.codes[:, i]).alias(q) for i, q in enumerate(self.qi)]
        return pl.DataFrame([*cols, pl.Series(COUNT, self.n, dtype=pl.Int64)])

    def coarsen(self, codes: np.ndarray, values: list[pl.Series]) -> tuple[KeyTable,
                                                                           np.ndarray]:
        """(the table of the keys relabelled by ``codes`` -- ``(keys, q)`` indices into
        ``values``, e.g. a generalization's group codes --, each key's new key). Keys that
        become equal are merged, their cells summed."""
        radix = np.array([max(v.len(), 1) for v in values], dtype=np.int64)
        ukeys, new_key = np.unique(_mixed(codes, radix), return_inverse=True)
        key_codes = np.zeros((ukeys.shape[0], codes.shape[1]), dtype=np.int32)
        key_codes[new_key] = codes
        n = np.bincount(new_key, weights=self.n, minlength=ukeys.shape[0]).astype(np.int64)
        cell = new_key[self.cell_key] * self.n_sensitive + self.cell_s
        ucell, inv = np.unique(cell, return_inverse=True)
        cell_n = np.bincount(inv, weights=self.cell_n).astype(np.int64)
        table = KeyTable(self.qi, self.sensitive, values, key_codes, n,
                         ucell // self.n_sensitive, ucell % self.n_sensitive, cell_n,
                         self.s_values, dict(self.schema))
        return table, new_key.astype(np.int64)

    def subset(self, keys: np.ndarray) -> KeyTable:
        """The table of the given keys only (same value lists and sensitive ids)."""
        keep = np.zeros(self.keys, dtype=bool)
        keep[keys] = True
        new = np.full(self.keys, -1, dtype=np.int64)
        new[keys] = np.arange(keys.shape[0])
        on = keep[self.cell_key]
        return KeyTable(self.qi, self.sensitive, self.values, self.codes[keys], self.n[keys],
                        new[self.cell_key[on]], self.cell_s[on], self.cell_n[on],
                        self.s_values, dict(self.schema))

    def cells_frame(self) -> pl.DataFrame:
        """The frequency set ``(qi..., sensitive..., n)`` with the QI values as strings."""
        cols = [self.values[i].cast(pl.String).gather(self.codes[self.cell_key, i]).alias(q)
                for i, q in enumerate(self.qi)]
        cols += [self.s_values.get_column(c).gather(self.cell_s) for c in self.sensitive]
        return pl.DataFrame([*cols, pl.Series(COUNT, self.cell_n, dtype=pl.Int64)])

    def weights(self, importance: Importance) -> np.ndarray:
        """Cost of one suppressed cell per QI (see :data:`Importance`). A list orders the QIs
        from the most to the least important and is read as weights from ``2 - 1/q`` down to
        ``1``: a more important cell costs more, but never as much as two cells. Raises
        :class:`~ldiv_polars.errors.InvalidParameterError` for a mapping naming a non-QI
        column or holding a weight that is not finite and positive, or a list that does not
        name every QI once.

        >>> t = KeyTable.build(__import__("polars").DataFrame({"a": [1], "b": [2]}), ["a", "b"],
        ...                    None)
        >>> t.weights(None).tolist(), t.weights(["b", "a"]).tolist(), t.weights({"a": 3}).tolist()
        ([1.0, 1.0], [1.0, 1.5], [3.0, 1.0])
        """
        q = len(self.qi)
        if importance is None:
            return np.ones(q)
        if isinstance(importance, Mapping):
            unknown = sorted(set(importance) - set(self.qi))
            if unknown:
                raise InvalidParameterError(f"importance names non-QI column(s): {unknown}")
            w = np.array([float(importance.get(c, 1.0)) for c in self.qi])
            if not np.all(np.isfinite(w)) or np.any(w <= 0):
                raise InvalidParameterError("importance weights must be finite and > 0")
            return w
        order = [importance] if isinstance(importance, str) else list(importance)
        if sorted(order) != sorted(self.qi):
            raise InvalidParameterError(
                f"importance must list every QI once (most important first), got {order}")
        rank = {c: i for i, c in enumerate(order)}
        return np.array([1.0 + (q - 1 - rank[c]) / q for c in self.qi])


def _mixed(codes: np.ndarray, radix: np.ndarray) -> np.ndarray:
    """Mixed-radix int64 number of each row of ``codes`` (first column most significant)."""
    out = np.zeros(codes.shape[0], dtype=np.int64)
    for i in range(codes.shape[1]):
        out = out * int(radix[i]) + codes[:, i].astype(np.int64)
    return out
