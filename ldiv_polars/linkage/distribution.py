"""The joint distribution P_{Q,S} of the (l,delta) mechanism, held exactly as integer weights.

``P(q, s) = w(q, s) / total`` over an *ordered* quasi-identifier domain (row ``i`` of
:attr:`JointDistribution.domain` is the i-th QI vector of the order) and a list of sensitive
values. Two layouts:

* **sparse** (general joint): the non-zero cells ``(q_idx, s_idx, weight)`` sorted by
  ``(s_idx, q_idx)`` as int64 numpy arrays, e.g. the frequency set of a reference table;
* **product** (``P = P_Q * P_S``): ``wq`` (int64 numpy, one weight per QI vector) and ``ws``
  (exact Python integers, one per sensitive value), ``total = sum(wq) * sum(ws)``. Exact
  geometric marginals need big integers (``rho = 19/20`` over 50 values is ~ 20**49), which only
  the sensitive side has to hold.

Every comparison ``P(class, s) >= p`` of the mechanism is done on these integers (see
``paper-notes/ell-delta-diversity.md`` §3: the float64 version loses a class in the paper's own
setting).

>>> d = JointDistribution.uniform(6, 3)
>>> d.n_qi, d.n_sensitive, d.kind
(6, 3, 'product')
>>> d.p_sorted()
[Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Literal

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.core.inputs import TableLike, reads_input
from ldiv_polars.core.validate import NullPolicy, require_int_at_least
from ldiv_polars.errors import InvalidParameterError, LdivError

INT64_SAFE = 2**62
"""Totals above this cannot be summed twice in int64; such inputs are rejected."""

Exact = int | float | Fraction | str


class SparseIndex:
    """Threshold-independent arrays over a sparse joint's cells, built once per distribution
    (:attr:`JointDistribution.sparse_index`) and shared by every greedy sweep on it.

    Cells are in the distribution's ``(s, q)`` order (CSC: one column per sensitive value).

    * ``cum0[i]``: total weight of the cells before cell ``i`` (int64, length nnz + 1), so
      ``cum0[j + 1] - cum0[i]`` is the weight of cells ``i..j``;
    * ``col_start`` / ``col_end``: the cell range of every column;
    * ``csr``: the cells in ``(q, s)`` order (indices into the CSC arrays) and ``rowptr`` (the
      cells of QI position ``q`` are ``csr[rowptr[q]:rowptr[q + 1]]``), built on first use;
    * ``key``: ``s * (n + 1) + q``, sorted, for searching a position inside every column.
    """

    def __init__(self, q_idx: np.ndarray, s_idx: np.ndarray, weight: np.ndarray, n_qi: int,
                 n_sensitive: int, csr: np.ndarray | None = None,
                 rowptr: np.ndarray | None = None) -> None:
        self.q, self.s, self.w = q_idx, s_idx, weight
        self.n, self.ns = n_qi, n_sensitive
        self.nnz = int(weight.size)
        cum0 = np.empty(self.nnz + 1, dtype=np.int64)
        cum0[0] = 0
        np.cumsum(weight, out=cum0[1:])
        self.cum0 = cum0
        self.col_end = np.searchsorted(s_idx, np.arange(1, n_sensitive + 1)).astype(np.int64)
        self.col_start = np.concatenate(([0], self.col_end[:-1])).astype(np.int64)
        self.col_base = np.arange(n_sensitive, dtype=np.int64) * (n_qi + 1)
        self._csr = csr
        if rowptr is not None:
            self.__dict__["rowptr"] = rowptr
        self.pos_dtype = np.int32 if n_qi < 2**31 - 2 else np.int64

    @cached_property
    def csr(self) -> np.ndarray:
        if self._csr is not None:
            return self._csr
        return np.argsort(self.q, kind="stable")  # column runs are sorted: a k-way merge

    @cached_property
    def rowptr(self) -> np.ndarray:
        out = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.q, minlength=self.n), out=out[1:])
        return out

    @cached_property
    def csr_s(self) -> np.ndarray:
        return self.s[self.csr].astype(np.intp, copy=False)

    @cached_property
    def key(self) -> np.ndarray:
        return self.s * (self.n + 1) + self.q


class DistributionError(LdivError, ValueError):
    """A joint distribution that the mechanism cannot use (empty, negative, not independent...)."""


def as_fraction(name: str, value: Exact) -> Fraction:
    """Read a number exactly. Floats are read as their shortest decimal representation
    (``0.01 -> 1/100``), which is what a caller typing ``0.01`` means; ``Fraction`` and ``int``
    are kept, strings such as ``"1/3"`` or ``"2e-4"`` are parsed.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` unless ``value`` is a finite number.

    >>> as_fraction("beta", 0.01)
    Fraction(1, 100)
    >>> as_fraction("p", "2e-4")
    Fraction(1, 5000)
    """
    if isinstance(value, bool):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    try:
        if isinstance(value, Fraction):
            out = value
        elif isinstance(value, int):
            out = Fraction(value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidParameterError(f"{name} must be finite, got {value!r}")
            out = Fraction(repr(value))
        elif isinstance(value, str):
            out = Fraction(value.strip())
        elif isinstance(value, (np.integer, np.floating)):
            return as_fraction(name, value.item())
        else:
            raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    except (ValueError, ZeroDivisionError) as exc:
        raise InvalidParameterError(f"{name} must be a number, got {value!r}") from exc
    return out


def _int_weights(name: str, values: Iterable[Exact]) -> list[int]:
    """Exact non-negative integer weights proportional to ``values`` (common denominator)."""
    fr = [as_fraction(name, v) for v in values]
    if not fr:
        raise DistributionError(f"{name} is empty")
    if any(f < 0 for f in fr):
        raise DistributionError(f"{name} has a negative entry")
    den = 1
    for f in fr:
        den = den * f.denominator // math.gcd(den, f.denominator)
    ints = [int(f * den) for f in fr]
    g = 0
    for v in ints:
        g = math.gcd(g, v)
    if g == 0:
        raise DistributionError(f"{name} sums to zero")
    return [v // g for v in ints]


def _domain_frame(domain: pl.DataFrame | Sequence[object] | None, n: int,
                  name: str) -> pl.DataFrame:
    if domain is None:
        return pl.DataFrame({name: np.arange(n, dtype=np.int64)})
    if isinstance(domain, pl.DataFrame):
        df = domain
    else:
        df = pl.DataFrame({name: list(domain)})
    if df.height != n:
        raise DistributionError(f"{name} domain has {df.height} rows but {n} weights were given")
    if df.is_duplicated().any():
        raise DistributionError(f"{name} domain lists a value twice")
    return df


def _codes(col: pl.Series) -> tuple[np.ndarray, pl.Series]:
    """Dense codes (int64) of a column in its sorted order (nulls last) and the sorted distinct
    values. Integers of a small span use a lookup table; other types a join on the distinct
    values (null equal to null)."""
    if col.dtype.is_integer() and col.null_count() == 0 and col.len() > 0:
        lo, hi = col.min(), col.max()
        if -(2**62) < lo and hi < 2**62 and hi - lo < max(4 * col.len(), 1 << 16):  # type: ignore[operator]
            off = np.subtract(col.to_numpy(), int(lo), dtype=np.int64)  # type: ignore[arg-type]
            present = np.zeros(int(hi) - int(lo) + 1, dtype=bool)  # type: ignore[arg-type]
            present[off] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            values = pl.Series(col.name, np.flatnonzero(present) + int(lo)).cast(col.dtype)  # type: ignore[arg-type]
            return rank[off], values
    values = col.unique().sort(nulls_last=True)
    codes = col.to_frame().join(
        values.to_frame().with_row_index("__code"), on=col.name, how="left", nulls_equal=True,
        maintain_order="left").get_column("__code")
    return codes.to_numpy().astype(np.int64), values


def _lexicographic_cells(counts: pl.DataFrame, qi_cols: list[str], s_col: str
                         ) -> tuple[pl.DataFrame, pl.Series, np.ndarray, np.ndarray,
                                    np.ndarray] | None:
    """Domain (QI vectors sorted lexicographically, nulls last), sensitive values, and the
    cells as (q_idx, s_idx, weight) in the frequency set's order, without sorting the cells:
    every column is coded by its sorted distinct values and the codes are combined in
    mixed radix. None when the combined code would not fit int64."""
    coded = [_codes(counts.get_column(c)) for c in qi_cols]
    span = 1
    for _, values in coded:
        span *= max(1, values.len())
    if span >= 2**62:
        return None
    key = coded[0][0]
    for codes, values in coded[1:]:
        key = key * values.len() + codes
    if len(coded) == 1:
        dom = coded[0][1].to_frame()
        q_idx = key
    else:
        q_idx, keys = _codes(pl.Series("__key", key))
        dom_keys = keys.to_numpy()
        cols = {}
        for c, (_, values) in reversed(list(zip(qi_cols, coded))):
            m = values.len()
            cols[c] = values.gather(dom_keys % m)
            dom_keys = dom_keys // m
        dom = pl.DataFrame([cols[c] for c in qi_cols])
    s_idx, sv = _codes(counts.get_column(s_col))
    w = counts.get_column(COUNT).cast(pl.Int64).to_numpy()
    return dom, sv, q_idx, s_idx, w


@dataclass(frozen=True, eq=False)
class JointDistribution:
    """P_{Q,S} as exact integer weights over an ordered QI domain (see the module docstring).

    Build it with :meth:`from_frequency_set` (estimate from a reference table),
    :meth:`product` / :meth:`uniform` / :meth:`geometric_product` (given marginals),
    :meth:`from_matrix` (a dense weight matrix) or :meth:`paper_setting` (§5 of the paper).
    """

    domain: pl.DataFrame
    sensitive_values: pl.Series
    total: int
    q_idx: np.ndarray | None = None
    s_idx: np.ndarray | None = None
    weight: np.ndarray | None = None
    wq: np.ndarray | None = None
    ws: tuple[int, ...] | None = None

    # --- shape ----------------------------------------------------------------------------------

    @property
    def kind(self) -> Literal["sparse", "product"]:
        """``"product"`` when the distribution is stored as QI weights times one sensitive
        distribution, ``"sparse"`` when it is a table of joint cells."""
        return "product" if self.wq is not None else "sparse"

    @property
    def n_qi(self) -> int:
        """The number of QI vectors of the domain."""
        return self.domain.height

    @property
    def n_sensitive(self) -> int:
        """The number of sensitive values."""
        return self.sensitive_values.len()

    @property
    def qi(self) -> tuple[str, ...]:
        """The QI column names (the columns of the domain)."""
        return tuple(self.domain.columns)

    @property
    def sensitive(self) -> str:
        """The sensitive column name."""
        return self.sensitive_values.name

    # --- constructors ---------------------------------------------------------------------------

    @classmethod
    def product(
        cls,
        wq: Sequence[Exact] | np.ndarray,
        ws: Sequence[Exact],
        *,
        domain: pl.DataFrame | Sequence[object] | None = None,
        sensitive_values: Sequence[object] | pl.Series | None = None,
        qi_name: str = "q",
        sensitive_name: str = "s",
    ) -> JointDistribution:
        """Independent QI and sensitive marginals, given as weights or probabilities (read
        exactly, see :func:`as_fraction`). ``domain`` lists the QI vectors in order.
        Raises :class:`DistributionError` on a zero sensitive probability, a negative or all-zero
        ``P_Q``, weights of another length than the sensitive values, or weights beyond int64.

        >>> d = JointDistribution.product([1, 1, 2], ["1/2", "1/4", "1/4"])
        >>> d.total, d.ws
        (16, (2, 1, 1))
        """
        if isinstance(wq, np.ndarray) and wq.dtype.kind in "iu":
            wq_arr = wq.astype(np.int64)
            if (wq_arr < 0).any():
                raise DistributionError("P_Q has a negative entry")
            if int(wq_arr.sum()) == 0:
                raise DistributionError("P_Q sums to zero")
        else:
            wq_arr = np.asarray(_int_weights("P_Q", list(wq)), dtype=object)
            if max(wq_arr) >= INT64_SAFE:
                raise DistributionError("P_Q weights too large for int64; pass integer weights")
            wq_arr = wq_arr.astype(np.int64)
        ws_int = _int_weights("P_S", list(ws))
        if any(w == 0 for w in ws_int):
            raise DistributionError("P_S has a zero entry; drop sensitive values of probability 0")
        zq = int(wq_arr.sum())
        if zq >= INT64_SAFE:
            raise DistributionError("P_Q weights sum beyond int64; rescale them")
        dom = _domain_frame(domain, len(wq_arr), qi_name)
        if isinstance(sensitive_values, pl.Series):
            sv = sensitive_values
        elif sensitive_values is None:
            sv = pl.Series(sensitive_name, np.arange(len(ws_int), dtype=np.int64))
        else:
            sv = pl.Series(sensitive_name, list(sensitive_values))
        if sv.len() != len(ws_int):
            raise DistributionError(
                f"{sv.len()} sensitive values but {len(ws_int)} sensitive weights")
        return cls(domain=dom, sensitive_values=sv, total=zq * sum(ws_int), wq=wq_arr,
                   ws=tuple(ws_int))

    @classmethod
    def uniform(cls, n_qi: int, n_sensitive: int, **kw: object) -> JointDistribution:
        """Uniform P_Q on ``n_qi`` vectors times uniform P_S on ``n_sensitive`` values."""
        n_qi = require_int_at_least("n_qi", n_qi, 1)
        n_sensitive = require_int_at_least("n_sensitive", n_sensitive, 1)
        return cls.product(np.ones(n_qi, dtype=np.int64), [1] * n_sensitive, **kw)  # type: ignore[arg-type]

    @classmethod
    def geometric_product(cls, n_qi: int, n_sensitive: int, rho: Exact = "0.95",
                          **kw: object) -> JointDistribution:
        """Uniform P_Q times geometric P_S(s) = p_1 rho^(s-1), exact (``rho`` read exactly).
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` unless ``0 < rho <= 1``."""
        n_qi = require_int_at_least("n_qi", n_qi, 1)
        n_sensitive = require_int_at_least("n_sensitive", n_sensitive, 1)
        r = as_fraction("rho", rho)
        if not 0 < r <= 1:
            raise InvalidParameterError(f"rho must be in (0, 1], got {rho!r}")
        a, b = r.numerator, r.denominator
        ws = [a**i * b ** (n_sensitive - 1 - i) for i in range(n_sensitive)]
        return cls.product(np.ones(n_qi, dtype=np.int64), ws, **kw)  # type: ignore[arg-type]

    @classmethod
    def paper_setting(cls, marginal: Literal["uniform", "geometric"] = "uniform",
                      rho: Exact = "0.95") -> JointDistribution:
        """§5 of the paper: QI = Postal-Code x Gender x Age (10 x 3 x 100 = 3000 vectors,
        lexicographic order, uniform P_Q), 50 diseases with a uniform or geometric marginal.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` on a marginal other than
        ``uniform`` or ``geometric``."""
        domain = pl.DataFrame({
            "postal": np.repeat(np.arange(560001, 560011, dtype=np.int64), 300),
            "gender": np.tile(np.repeat(np.array(["F", "M", "X"]), 100), 10),
            "age": np.tile(np.arange(100, dtype=np.int64), 30),
        })
        sv = pl.Series("disease", [f"d{i:02d}" for i in range(1, 51)])
        if marginal == "uniform":
            return cls.uniform(3000, 50, domain=domain, sensitive_values=sv)
        if marginal == "geometric":
            return cls.geometric_product(3000, 50, rho, domain=domain, sensitive_values=sv)
        raise InvalidParameterError(f"marginal must be 'uniform' or 'geometric', got {marginal!r}")

    @classmethod
    def from_matrix(
        cls,
        weights: np.ndarray | Sequence[Sequence[int]],
        *,
        domain: pl.DataFrame | Sequence[object] | None = None,
        sensitive_values: Sequence[object] | pl.Series | None = None,
        qi_name: str = "q",
        sensitive_name: str = "s",
    ) -> JointDistribution:
        """A dense ``|Q| x |S|`` matrix of non-negative integer weights (rows in QI order).
        Raises :class:`DistributionError` unless ``weights`` is a non-empty 2-D matrix of non-
        negative integers."""
        w = np.asarray(weights)
        if w.ndim != 2 or w.size == 0:
            raise DistributionError("weights must be a non-empty 2-D matrix (|Q| x |S|)")
        if w.dtype.kind not in "iu":
            raise DistributionError(
                "weights must be integers (counts); scale probabilities to integers first")
        w = w.astype(np.int64)
        if (w < 0).any():
            raise DistributionError("weights must be non-negative")
        q, s = np.nonzero(w.T)  # sorted by (s, q)
        s_idx, q_idx = q.astype(np.int64), s.astype(np.int64)
        vals = w[q_idx, s_idx]
        dom = _domain_frame(domain, w.shape[0], qi_name)
        if sensitive_values is None:
            sv = pl.Series(sensitive_name, np.arange(w.shape[1], dtype=np.int64))
        elif isinstance(sensitive_values, pl.Series):
            sv = sensitive_values
        else:
            sv = pl.Series(sensitive_name, list(sensitive_values))
        return cls._sparse(dom, sv, q_idx, s_idx, vals)

    @classmethod
    def _sparse(cls, dom: pl.DataFrame, sv: pl.Series, q_idx: np.ndarray, s_idx: np.ndarray,
                w: np.ndarray) -> JointDistribution:
        q_idx = np.asarray(q_idx, dtype=np.int64)
        s_idx = np.asarray(s_idx, dtype=np.int64)
        w = np.asarray(w, dtype=np.int64)
        keep = w > 0
        if not keep.all():
            q_idx, s_idx, w = q_idx[keep], s_idx[keep], w[keep]
        if w.size == 0:
            raise DistributionError("the joint distribution has no positive cell")
        if (w < 0).any():
            raise DistributionError("weights must be non-negative")
        combined = s_idx * max(1, dom.height) + q_idx
        if combined.size > 1 and not bool((combined[1:] > combined[:-1]).all()):
            order = np.argsort(combined, kind="stable")
            q_idx, s_idx, w = q_idx[order], s_idx[order], w[order]
            combined = combined[order]
            if bool((combined[1:] == combined[:-1]).any()):
                raise DistributionError("a (QI, sensitive) cell is listed twice")
        total = int(w.sum(dtype=np.int64))
        if total >= INT64_SAFE:
            raise DistributionError("weights sum beyond int64; rescale them")
        present = np.bincount(s_idx, minlength=sv.len()) > 0
        if not present.all():
            missing = np.flatnonzero(~present).tolist()
            raise DistributionError(
                f"sensitive value(s) {[sv[i] for i in missing[:5]]} have probability 0; "
                "drop them from sensitive_values")
        return cls(domain=dom, sensitive_values=sv, total=total, q_idx=q_idx, s_idx=s_idx,
                   weight=w)

    @classmethod
    @reads_input
    def from_frequency_set(
        cls, data: TableLike | FrequencySet, qi: str | Iterable[str] | None = None,
        sensitive: str | None = None, *,
        order: Literal["lexicographic"] | pl.DataFrame = "lexicographic",
        nulls: NullPolicy = "error",
    ) -> JointDistribution:
        """Estimate P_{Q,S} by the empirical frequencies of a reference table (counts, exact).

        Only the frequency set is collected (one streaming group-by), never the rows.
        ``order`` is ``"lexicographic"`` (sort the QI vectors by the columns in ``qi`` order)
        or a DataFrame listing every QI vector in the wanted order (vectors absent from the data
        get weight 0 and still belong to a class).
        Raises :class:`DistributionError` on an empty table and
        :class:`~ldiv_polars.errors.InvalidParameterError` on another ``order``.

        >>> df = pl.DataFrame({"age": [30, 30, 31, 32], "s": ["a", "b", "a", "c"]})
        >>> d = JointDistribution.from_frequency_set(df, ["age"], "s")
        >>> d.domain["age"].to_list(), d.total, d.p_sorted()[0]
        ([30, 31, 32], 4, Fraction(1, 2))
        """
        fs = _one_sensitive_frequency_set(data, qi, sensitive, nulls)
        counts = fs.collect()
        qi_cols = list(fs.qi)
        s_col = fs.sensitive[0]
        if counts.height == 0:
            raise DistributionError("the reference table is empty")
        if isinstance(order, str):
            if order != "lexicographic":
                raise InvalidParameterError(
                    f"order must be 'lexicographic' or a DataFrame of QI vectors, got {order!r}")
            fast = _lexicographic_cells(counts, qi_cols, s_col)
            if fast is not None:
                return cls._from_cells(*fast)
            dom = counts.select(qi_cols).unique().sort(qi_cols, nulls_last=True)
        elif isinstance(order, pl.DataFrame):
            dom = _ordered_domain(order, counts, qi_cols)
        else:
            raise InvalidParameterError("order must be 'lexicographic' or a DataFrame")
        sv = counts.get_column(s_col).unique().sort(nulls_last=True)
        pos = dom.with_row_index("__q").with_columns(pl.col("__q").cast(pl.Int64))
        spos = sv.to_frame().with_row_index("__s").with_columns(pl.col("__s").cast(pl.Int64))
        cells = (
            counts.join(pos, on=qi_cols, nulls_equal=True)
            .join(spos, on=s_col, nulls_equal=True)
            .select("__q", "__s", pl.col(COUNT).cast(pl.Int64))
        )
        return cls._sparse(dom, sv, cells["__q"].to_numpy(), cells["__s"].to_numpy(),
                           cells[COUNT].to_numpy())

    @classmethod
    def _from_cells(cls, dom: pl.DataFrame, sv: pl.Series, q_idx: np.ndarray, s_idx: np.ndarray,
                    w: np.ndarray) -> JointDistribution:
        """Sparse joint from unique cells in any order, without a general sort: a stable
        counting pass per sensitive value puts the cells in (q, s) order (CSR), a stable radix
        argsort on s then gives the (s, q) layout; the CSR order is kept for the sweeps."""
        n, ns, nnz = dom.height, sv.len(), int(w.size)
        if ns > 4096 or nnz == 0 or not bool((w > 0).all()):
            return cls._sparse(dom, sv, q_idx, s_idx, w)
        by_s = np.argsort(s_idx.astype(np.uint16), kind="stable")
        col_count = np.bincount(s_idx, minlength=ns)
        col_end = np.cumsum(col_count)
        row_count = np.bincount(q_idx, minlength=n)
        rowptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(row_count, out=rowptr[1:])
        fill = rowptr[:-1].copy()
        csr_cell = np.empty(nnz, dtype=np.int64)  # CSR position -> input cell
        s_r = np.empty(nnz, dtype=np.uint16)  # sensitive value of every CSR position
        start = 0
        for s in range(ns):  # the QI positions of one sensitive value are distinct
            idx = by_s[start:col_end[s]]
            qs = q_idx[idx]
            dest = fill[qs]
            csr_cell[dest] = idx
            s_r[dest] = s
            fill[qs] += 1
            start = int(col_end[s])
        del by_s
        if not np.array_equal(fill, rowptr[1:]):
            raise DistributionError("a (QI, sensitive) cell is listed twice")
        perm = np.argsort(s_r, kind="stable")  # CSC position -> CSR position (radix on s)
        del s_r
        q_csc = np.repeat(np.arange(n, dtype=np.int64), row_count)[perm]
        s_csc = np.repeat(np.arange(ns, dtype=np.int64), col_count)
        w_csc = np.asarray(w, dtype=np.int64)[csr_cell[perm]]
        del csr_cell
        total = int(w_csc.sum(dtype=np.int64))
        if total >= INT64_SAFE:
            raise DistributionError("weights sum beyond int64; rescale them")
        out = cls(domain=dom, sensitive_values=sv, total=total, q_idx=q_csc, s_idx=s_csc,
                  weight=w_csc)
        csr = np.empty(nnz, dtype=np.int64)
        csr[perm] = np.arange(nnz, dtype=np.int64)
        out.__dict__["sparse_index"] = SparseIndex(out.q_idx, out.s_idx, out.weight, n, ns,
                                                   csr=csr, rowptr=rowptr)
        return out

    @cached_property
    def sparse_index(self) -> SparseIndex:
        """The cached :class:`SparseIndex` of a sparse joint (cumulative weights, CSR order)."""
        if self.q_idx is None or self.s_idx is None or self.weight is None:
            raise DistributionError("sparse_index needs the sparse layout; call to_sparse()")
        return SparseIndex(self.q_idx, self.s_idx, self.weight, self.n_qi, self.n_sensitive)

    # --- marginals ------------------------------------------------------------------------------

    def sensitive_weights(self) -> list[int]:
        """W_S(s) = total * P_S(s), exact, in the order of :attr:`sensitive_values`."""
        if self.ws is not None:
            assert self.wq is not None
            zq = int(self.wq.sum())
            return [zq * w for w in self.ws]
        assert self.s_idx is not None and self.weight is not None
        starts = np.searchsorted(self.s_idx, np.arange(self.n_sensitive))
        return [int(v) for v in np.add.reduceat(self.weight, starts)]

    def qi_weights(self) -> np.ndarray:
        """W_Q(q) per QI position (int64; for a product joint, up to the factor sum(ws))."""
        if self.wq is not None:
            return self.wq
        assert self.q_idx is not None and self.weight is not None
        out = np.zeros(self.n_qi, dtype=np.int64)
        np.add.at(out, self.q_idx, self.weight)
        return out

    def p_sorted(self) -> list[Fraction]:
        """p_1 >= p_2 >= ... : the sensitive marginal sorted decreasingly, exact."""
        return sorted((Fraction(w, self.total) for w in self.sensitive_weights()), reverse=True)

    def p_l(self, l: int) -> Fraction:
        """p_l, the l-th largest value of P_S.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` when ``l`` exceeds the number of
        sensitive values."""
        l = require_int_at_least("l", l, 1)
        if l > self.n_sensitive:
            raise InvalidParameterError(
                f"l={l} exceeds the number of sensitive values ({self.n_sensitive})")
        return self.p_sorted()[l - 1]

    def dense(self) -> np.ndarray:
        """The ``|Q| x |S|`` weight matrix as Python ints (object array): small domains only.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the domain is too large for
        a dense matrix."""
        if self.n_qi * self.n_sensitive > 5_000_000:
            raise InvalidParameterError("dense(): domain too large")
        out = np.zeros((self.n_qi, self.n_sensitive), dtype=object)
        if self.wq is not None:
            assert self.ws is not None
            for i, wq in enumerate(self.wq.tolist()):
                for j, w in enumerate(self.ws):
                    out[i, j] = wq * w
        else:
            assert self.q_idx is not None and self.s_idx is not None and self.weight is not None
            for q, s, w in zip(self.q_idx.tolist(), self.s_idx.tolist(), self.weight.tolist()):
                out[q, s] = w
        return out

    def is_independent(self) -> bool:
        """Exact test of P = P_Q * P_S."""
        if self.kind == "product":
            return True
        assert self.q_idx is not None and self.s_idx is not None and self.weight is not None
        if self.weight.size != self.n_qi * self.n_sensitive:
            return False
        wq = self.qi_weights().astype(object)
        ws = np.asarray(self.sensitive_weights(), dtype=object)
        lhs = self.weight.astype(object) * self.total
        rhs = wq[self.q_idx] * ws[self.s_idx]
        return bool((lhs == rhs).all())

    def as_product(self) -> JointDistribution:
        """The same distribution in product layout; raises when it is not independent."""
        if self.kind == "product":
            return self
        if not self.is_independent():
            raise DistributionError(
                "P_{Q,S} is not P_Q * P_S (Algorithm 3 needs independence); use greedy_generalize")
        wq = self.qi_weights()
        g = int(np.gcd.reduce(wq))
        ws = self.sensitive_weights()
        gs = 0
        for w in ws:
            gs = math.gcd(gs, w)
        wq_r = wq // g
        ws_r = tuple(w // gs for w in ws)
        return JointDistribution(domain=self.domain, sensitive_values=self.sensitive_values,
                                 total=int(wq_r.sum()) * sum(ws_r), wq=wq_r, ws=ws_r)

    def to_sparse(self) -> JointDistribution:
        """The same distribution in sparse layout (product joints only; int64 must suffice).
        Raises :class:`DistributionError` when the weights exceed the int64 layout."""
        if self.kind == "sparse":
            return self
        assert self.wq is not None and self.ws is not None
        if max(self.ws) * int(self.wq.max()) >= INT64_SAFE or self.total >= INT64_SAFE:
            raise DistributionError("weights too large for the sparse int64 layout")
        nq, ns = self.n_qi, self.n_sensitive
        s_idx = np.repeat(np.arange(ns, dtype=np.int64), nq)
        q_idx = np.tile(np.arange(nq, dtype=np.int64), ns)
        w = np.repeat(np.asarray(self.ws, dtype=np.int64), nq) * np.tile(self.wq, ns)
        return JointDistribution._sparse(self.domain, self.sensitive_values, q_idx, s_idx, w)

    def __repr__(self) -> str:
        return (f"JointDistribution({self.kind}, |Q|={self.n_qi}, |S|={self.n_sensitive}, "
                f"total={self.total})")


def _one_sensitive_frequency_set(data: TableLike | FrequencySet, qi: str | Iterable[str] | None,
                                 sensitive: str | None, nulls: NullPolicy) -> FrequencySet:
    """``data`` itself when it is a frequency set, else its lazy frequency set; raises
    :class:`~ldiv_polars.errors.InvalidParameterError` unless there is exactly one sensitive
    column (and, for a table, ``qi`` and ``sensitive`` are given)."""
    if isinstance(data, FrequencySet):
        if len(data.sensitive) != 1:
            raise InvalidParameterError("the (l,delta) mechanism needs one sensitive column")
        return data
    if qi is None or sensitive is None:
        raise InvalidParameterError("qi and sensitive are required")
    if not isinstance(sensitive, str):
        raise InvalidParameterError("the (l,delta) mechanism needs one sensitive column")
    return FrequencySet.build(data, qi, sensitive, nulls=nulls, require_sensitive=True)


def _ordered_domain(order: pl.DataFrame, counts: pl.DataFrame, qi: list[str]) -> pl.DataFrame:
    """The QI vectors of ``order`` in its row order; raises when a QI column is missing, a
    vector is listed twice, or a vector of the data (``counts``) is not listed."""
    missing = [c for c in qi if c not in order.columns]
    if missing:
        raise InvalidParameterError(f"order lacks the QI column(s) {missing}")
    dom = order.select(qi)
    if dom.is_duplicated().any():
        raise DistributionError("order lists a QI vector twice")
    uncovered = counts.select(qi).unique().join(dom, on=qi, how="anti", nulls_equal=True)
    if uncovered.height:
        raise DistributionError(
            f"order misses {uncovered.height} QI vector(s) of the data, e.g. "
            f"{uncovered.row(0)}")
    return dom
