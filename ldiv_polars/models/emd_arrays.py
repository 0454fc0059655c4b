"""The class EMDs of :class:`~ldiv_polars.models.TCloseness` on integer-encoded rows (numpy),
for the ordered and the hierarchical ground distances: the same sums as the model's frame
form, from the integer counts.

- Ordered: ``EMD = 1/(m-1) sum_{i<m-1} |C_i / N_c - T_i / N|`` with ``C``, ``T`` the class's
  and the table's cumulative counts along the sorted domain of the ``m`` values present in the
  table: on a small ``classes x values`` matrix (dense), or on the rows only: ``C`` is one
  segmented cumulative sum over the rows in (class, value) order (the search numbers the
  values in that order, so they come sorted), constant between two values of the class, and
  each such stretch is summed in closed form from prefix sums of ``T``, split where
  ``T_j N_c <= C N``. The same stretches give the terms of the model's suppression floor
  (:func:`ordered_floor_terms`).
- Hierarchical: ``EMD = 1/H sum_h h sum_nodes min(pos, neg)`` over the nodes of level ``h``,
  with ``pos``/``neg`` the positive/negative extras ``p - q`` of the node's children (grouped
  by (node, child) label pairs, as the frame form groups them); a dense path (a ``classes x
  values`` matrix) and a sparse path (the rows only) for many sensitive values.

The results are floats; the model marks the classes within its rounding bound
(:func:`~ldiv_polars.models.t_closeness.emd_band`) uncertain and decides them exactly.

The ordered sums (the EMD and the floor's terms) run in a small compiled kernel when it was
built (``ldiv_polars.models._emd``, optional like the roll-ups' kernel): one pass over the
rows, each stretch closed-form in exact integers (or, for a small domain, each gap's term
over the domain: the same integers), one rounding per class. :func:`ordered_verdict` and
:func:`ordered_floor` add the model's verdict or floor to the same call (one call per node of
a search). The numpy forms
here are its fallback and its parity oracle (:data:`KERNEL` selects; ``LDIV_POLARS_NO_KERNEL=1``
in the environment turns it off, as for the roll-ups).

>>> import numpy as np, polars as pl
>>> from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain
>>> rows = EncodedRows(np.array([0, 1]), np.array([0, 1]), np.array([1, 1]), 2, 2,
...                    domain=SensitiveDomain(pl.DataFrame({"s": [10, 20]})))
>>> ordered_emd(rows).tolist()  # {10} against {10, 20}: half a step of the single gap
[0.5, 0.5]
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from ldiv_polars.models.encoded import EncodedRows

try:  # the compiled ordered EMD (absent when the package was built without a C compiler)
    from ldiv_polars.models import _emd as _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None

KERNEL = _kernel is not None and not os.environ.get("LDIV_POLARS_NO_KERNEL")
"""Whether the ordered sums run in the compiled kernel (tests set it to compare the paths)."""


def ordered_emd(rows: EncodedRows) -> np.ndarray:
    """The ordered-distance EMD of every class (0 for a class with no rows); the rows must
    carry a one-column :class:`~ldiv_polars.models.encoded.SensitiveDomain`."""
    assert rows.domain is not None
    hit = rows._cache.get("ordered_emd") if KERNEL else None
    if hit is not None:  # (a floor's compiled pass computed it)
        return hit
    emd = np.zeros(rows.classes)
    dom = _domain(rows)
    if dom.m <= 1 or not rows.cls.shape[0]:
        return emd
    if KERNEL:
        return _compiled(rows, dom)[0]
    if rows.prefers_dense(dom.m):  # a small matrix: fewer numpy calls than the stretches
        size = np.maximum(rows.size, 1).astype(np.float64)
        c = np.cumsum(rows.dense(rows.n.astype(np.float64), dom.m, dom.pos[rows.s]), axis=1)
        cum = c[:, :-1] / size[:, None] - dom.cum_t[:-1] / float(dom.total)
        return np.abs(cum).sum(axis=1) / (dom.m - 1)
    st = _stretches(rows)
    # per stretch sum (P - Q) over [a, split] + sum (Q - P) over (split, b], plus the head
    # before the class's first value (P = 0): the T sums are exact integers
    t_sums = (dom.st[st.a] * (1 + st.first) + dom.st[st.b + 1] - 2 * dom.st[st.split + 1])
    seg = st.p * (2 * st.split - st.a - st.b + 1) + t_sums / dom.total
    return np.bincount(st.cls, weights=seg, minlength=rows.classes) / (dom.m - 1)


def ordered_verdict(rows: EncodedRows, t: float, band: Callable[[int], float | np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """With the compiled kernel, in one call: per class ``(EMD, passed, uncertain)`` where
    ``passed`` is ``EMD <= t`` or the class has no rows and ``uncertain`` is ``|EMD - t| <=
    band`` for a class with rows (None when no class is); ``band(m)`` gives the rounding bound
    for a table of ``m`` values, one float or one per class. The verdict's rule is the
    model's (:meth:`TCloseness.array_verdict
    <ldiv_polars.models.TCloseness.array_verdict>`: its numpy form is the parity oracle).
    None without the kernel or with at most one value in the table (the caller's numpy form
    is then used).

    >>> import numpy as np, polars as pl
    >>> from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain
    >>> rows = EncodedRows(np.array([0, 1]), np.array([0, 1]), np.array([1, 1]), 2, 2,
    ...                    domain=SensitiveDomain(pl.DataFrame({"s": [10, 20]})))
    >>> out = ordered_verdict(rows, 0.5, lambda m: 1e-12)
    >>> out is None or (out[1].tolist(), out[2].tolist()) == ([True, True], [True, True])
    True
    """
    dom = _kernel_domain(rows)
    if dom is None:
        return None
    assert _kernel is not None
    bound = np.asarray(band(dom.m), dtype=np.float64).reshape(-1)
    k = rows.classes
    emd, passed, unc = np.empty(k), np.empty(k, dtype=bool), np.empty(k, dtype=bool)
    n_unc = _call_sorted(_kernel.ordered_verdict, rows, dom, dom.pos, rows.size, dom.cum_t,
                         dom.st, dom.total, emd, float(t), bound, passed, unc)
    return emd, passed, (unc if n_unc else None)


def ordered_floor(rows: EncodedRows, vanishing: np.ndarray, tau: float,
                  band: Callable[[int], float | np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """With the compiled kernel, in one call: per class ``(EMD, floor)``, the floor being
    :meth:`TCloseness.suppression_floor <ldiv_polars.models.TCloseness.suppression_floor>`'s
    ordered one (the model owns it, and its numpy form is the parity oracle) from the terms of
    :func:`ordered_floor_terms` with ``tau = t + slack`` and the rounding bound ``band(m)``
    (one float or one per class). None without the kernel or with at most one value in the
    table (the caller's numpy form is then used)."""
    dom = _kernel_domain(rows)
    if dom is None:
        return None
    assert _kernel is not None
    kept, kst, _ = dom.flat_prefixes(vanishing)
    bound = np.asarray(band(dom.m), dtype=np.float64).reshape(-1)
    k = rows.classes
    emd, numer, spread, floor = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
    _call_sorted(_kernel.ordered_floor, rows, dom, dom.pos, rows.size, dom.cum_t, dom.st,
                 dom.total, emd, kept, kst, numer, spread, float(tau), bound, floor)
    rows._cache["ordered_emd"] = emd
    return emd, floor


def _kernel_domain(rows: EncodedRows) -> _Domain | None:
    """The rows' ordered domain when the one-call kernels run on them (built and not turned
    off, some rows, at least two values in the table); else None."""
    assert rows.domain is not None
    if not KERNEL or not rows.cls.shape[0]:
        return None
    dom = _domain(rows)
    return dom if dom.m > 1 else None


def _call_sorted(fn: Callable[..., int], rows: EncodedRows, dom: _Domain, *args: object
                 ) -> int:
    """``fn(cls, s, n, *args)`` on the rows as the kernel reads them; when it answers below 0
    (rows not grouped by class in position order) once more on the rows so sorted. Raises
    ValueError when a (class, value) pair appears twice."""
    cls, n = _int64(rows.cls), _int64(rows.n)
    s = rows.s if rows.s.dtype in _IDS and rows.s.flags.c_contiguous else _int64(rows.s)
    rc = fn(cls, s, n, *args)
    if rc < 0:
        perm = np.lexsort((dom.pos[s], cls))
        rc = fn(cls[perm], s[perm], n[perm], *args)
        if rc < 0:
            raise ValueError("a (class, sensitive value) pair appears twice in the rows")
    return rc


def vanishing_ids(rows: EncodedRows, slack: float) -> np.ndarray:
    """Per sensitive id, whether its table count (``rows``' reference) is positive and at
    most ``slack`` of the table's rows: a value the suppression may remove from the retained
    rows' domain. Kept with the ordered domain of the rows' reference (one per search).

    >>> import numpy as np, polars as pl
    >>> from ldiv_polars.models.encoded import SensitiveDomain
    >>> rows = EncodedRows(np.array([0, 0]), np.array([0, 1]), np.array([1, 9]), classes=1,
    ...                    n_sensitive=3, reference=np.array([1, 9, 0]),
    ...                    domain=SensitiveDomain(pl.DataFrame({"s": ["a", "b", "c"]})))
    >>> vanishing_ids(rows, 0.1).tolist()
    [True, False, False]
    """
    return _domain(rows).vanishing(rows.table_counts, slack)


def ordered_floor_terms(rows: EncodedRows, vanishing: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per class, ``(f.(p - q), max_C f - f.q)`` for the 1-Lipschitz function ``f`` of the
    ordered distance that is the class's own EMD dual (``f`` falls by ``1/(m-1)`` across each
    gap ``i -> i+1`` where ``P_i >= Q_i``, rises where ``P_i < Q_i``) except that it is flat
    across each gap into a ``vanishing`` value (a bool per id: the values the suppression may
    remove from the table), so that it stays 1-Lipschitz for the distance of every domain
    those removals leave (the floor's proof: docs/anonymize.md). ``max_C`` is over the
    class's own values, ``q`` the table's shares; the first term is the class's EMD less its
    flat gaps' terms. None when the domain has at most one value."""
    dom = _domain(rows)
    if dom.m <= 1:
        return None
    kept, kst, kq = dom.flat_prefixes(vanishing)
    if KERNEL:  # (the EMD of the same pass kept with the rows)
        emd, numer, spread = _compiled(rows, dom, (kept, kst))
        rows._cache["ordered_emd"] = emd
        return numer, spread  # type: ignore[return-value]
    st = _stretches(rows)
    total, mm = float(dom.total), float(dom.m - 1)
    # over [a, split]: P >= Q, f falls; over (split, b]: P < Q, f rises; before the class's
    # first value P = 0 < Q and f rises from f_0 = 0 (each sum over the kept gaps only)
    lo, mid, hi, first = st.a, st.split + 1, st.b + 1, st.first.astype(np.int64)
    step = kept[lo] + kept[hi] - 2 * kept[mid]  # rises minus falls
    num = (kst[lo] * (1 + first) + kst[hi] - 2 * kst[mid]) / total - st.p * step
    fq = kq[lo] * (1 + first) + kq[hi] - 2 * kq[mid]
    rise = kept[lo] * first
    # f at each row's value, in steps of 1/(m-1) (integers): the head's rise plus the steps
    # of the class's earlier stretches
    at = np.cumsum(step + rise) - step
    starts = np.flatnonzero(st.first)
    f_at = at - np.repeat((at - rise)[starts], np.diff(np.append(starts, at.shape[0])))
    n_cls = rows.classes
    numer = np.bincount(st.cls, weights=num, minlength=n_cls) / mm
    fdotq = np.bincount(st.cls, weights=fq, minlength=n_cls) / mm
    fmax = np.zeros(n_cls)
    if starts.shape[0]:
        fmax[st.cls[starts]] = np.maximum.reduceat(f_at, starts) / mm
    return numer, np.where(rows.present, fmax - fdotq, 0.0)


def _compiled(rows: EncodedRows, dom: _Domain,
              flat: tuple[np.ndarray, np.ndarray] | None = None
              ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``(EMD, f.(p - q), max_C f - f.q)`` per class from the kernel (the last two with
    ``flat``: the kept gaps' prefix counts and ``T`` sums of :meth:`_Domain.flat_prefixes`,
    else None); rows not in (class, position) order are sorted first."""
    assert _kernel is not None
    cls, n = _int64(rows.cls), _int64(rows.n)
    s = rows.s if rows.s.dtype in _IDS and rows.s.flags.c_contiguous else _int64(rows.s)
    outs = _kernel_pass(cls, s, n, rows, dom, flat)
    if outs is None:  # not in (class, position) order: sorted once
        perm = np.lexsort((dom.pos[s], cls))
        outs = _kernel_pass(cls[perm], s[perm], n[perm], rows, dom, flat)
        if outs is None:
            raise ValueError("a (class, sensitive value) pair appears twice in the rows")
    return outs[0], (outs[1] if flat else None), (outs[2] if flat else None)


def _kernel_pass(cls: np.ndarray, s: np.ndarray, n: np.ndarray, rows: EncodedRows,
                 dom: _Domain, flat: tuple[np.ndarray, np.ndarray] | None
                 ) -> list[np.ndarray] | None:
    """One call of the kernel; None when the rows are not in (class, position) order."""
    assert _kernel is not None
    outs = [np.zeros(rows.classes) for _ in range(1 if flat is None else 3)]
    args = [cls, s, n, dom.pos, rows.size, dom.cum_t, dom.st, dom.total, outs[0]]
    if flat is not None:
        args += [flat[0], flat[1], outs[1], outs[2]]
    return None if _kernel.ordered_emd(*args) else outs


def _int64(a: np.ndarray) -> np.ndarray:
    """An integer array as the kernel reads it: C-contiguous int64."""
    return a if a.dtype == np.int64 and a.flags.c_contiguous else \
        np.ascontiguousarray(a, dtype=np.int64)


_IDS = (np.dtype(np.int32), np.dtype(np.int64))


@dataclass(frozen=True)
class _Domain:
    """The table's side of the ordered EMD: the ``m`` ids present in the table in domain
    order (``present``), each id's position among them (``pos``, -1 if absent), the cumulative
    table counts ``cum_t`` along them (exact integers), their prefix sums ``st``
    (``st[j + 1] = T_0 + ... + T_j``) and the table's size."""

    present: np.ndarray
    pos: np.ndarray
    cum_t: np.ndarray
    st: np.ndarray
    total: int
    _flat: tuple[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    _vanishing: tuple[float, np.ndarray] | None = None

    @property
    def m(self) -> int:
        """The number of values present in the table."""
        return int(self.present.shape[0])

    def vanishing(self, table: np.ndarray, slack: float) -> np.ndarray:
        """:func:`vanishing_ids` of ``table`` (this domain's table counts), kept per
        ``slack``."""
        if self._vanishing is not None and self._vanishing[0] == slack:
            return self._vanishing[1]
        out = (table > 0) & (table <= slack * float(table.sum()) + 1e-9)
        object.__setattr__(self, "_vanishing", (slack, out))
        return out

    def flat_prefixes(self, vanishing: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Prefix sums over the gaps ``i -> i + 1`` that do not lead into a ``vanishing``
        value: their number, their ``T_i`` and their ``1 - T_i / N`` (the last one kept)."""
        key = vanishing.tobytes()
        if self._flat is not None and self._flat[0] == key:
            return self._flat[1]
        keep = ~vanishing[self.present[1:]]
        out = (np.concatenate([[0], np.cumsum(keep)]),
               np.concatenate([[0], np.cumsum(np.where(keep, self.cum_t[:-1], 0))]),
               np.concatenate([[0.0], np.cumsum(np.where(
                   keep, 1.0 - self.cum_t[:-1] / self.total, 0.0))]))
        object.__setattr__(self, "_flat", (key, out))
        return out


def _domain(rows: EncodedRows) -> _Domain:
    """:class:`_Domain` of ``rows``: kept with the rows, or with their domain when they carry
    a ``reference`` array (the search hands every whole roll-up the same one)."""
    hit = rows._cache.get("ordered_domain")
    if hit is None:
        dom = rows.domain
        assert dom is not None
        ref = rows.reference
        if isinstance(ref, np.ndarray):
            hit = dom.derived(ref, "ordered_domain", lambda: _domain_of(rows))
        else:
            hit = _domain_of(rows)
        rows._cache["ordered_domain"] = hit  # type: ignore[assignment]
    return hit  # type: ignore[return-value]


def _domain_of(rows: EncodedRows) -> _Domain:
    assert rows.domain is not None
    table = rows.table_counts
    order = rows.domain.order()
    present = order[table[order] > 0]
    pos = np.full(table.shape[0], -1, dtype=np.int64)
    pos[present] = np.arange(present.shape[0])
    cum_t = np.cumsum(table[present])
    st = np.concatenate([[0], np.cumsum(cum_t)])
    return _Domain(present, pos, cum_t, st, int(cum_t[-1]) if cum_t.shape[0] else 0)


@dataclass(frozen=True)
class _Stretches:
    """The rows sorted by (class, position of the value): per row its class, position ``a``,
    the class's share ``p = C / N_c`` up to and including it, the last position ``b`` of its
    stretch (before the class's next value, or ``m - 2``), ``split`` (the last position of
    the stretch, or ``a - 1``, with ``T_j <= C N / N_c``: ``P >= Q`` up to it, ``P < Q``
    after) and whether it is its class's first row."""

    cls: np.ndarray
    a: np.ndarray
    p: np.ndarray
    b: np.ndarray
    split: np.ndarray
    first: np.ndarray


def _stretches(rows: EncodedRows) -> _Stretches:
    """:class:`_Stretches` of ``rows`` (kept with them). Rows already in (class, position)
    order (the search numbers sensitive values in domain order) are not sorted again."""
    hit = rows._cache.get("ordered_stretches")
    if hit is not None:
        return hit  # type: ignore[return-value]
    dom = _domain(rows)
    m, total = dom.m, dom.total
    at = dom.pos[rows.s]
    cls, n = rows.cls, rows.n
    key = cls * m + at
    if key.shape[0] > 1 and not bool((key[1:] > key[:-1]).all()):
        perm = np.argsort(key, kind="stable")
        cls, at, n = cls[perm], at[perm], n[perm]
    first = np.ones(cls.shape[0], dtype=bool)
    first[1:] = cls[1:] != cls[:-1]
    last = np.ones(cls.shape[0], dtype=bool)
    last[:-1] = first[1:]
    csum = np.cumsum(n)
    c = csum - np.repeat(csum[first] - n[first], np.diff(np.append(np.flatnonzero(first),
                                                                     cls.shape[0])))
    b = np.where(last, m - 2, np.append(at[1:], 0) - 1)
    nc = rows.size[cls]
    # last j with T_j <= C N / N_c (integers: T_j <= floor(C N / N_c))
    split = np.searchsorted(dom.cum_t, (c * total) // nc, side="right") - 1
    split = np.minimum(np.maximum(split, at - 1), b)
    out = _Stretches(cls, at, c / np.maximum(nc, 1).astype(np.float64), b, split, first)
    rows._cache["ordered_stretches"] = out  # type: ignore[assignment]
    return out


@dataclass(frozen=True)
class _Level:
    """One level ``h`` of a value hierarchy over the ids: each id's (node, child) pair, each
    pair's child label and node, as codes."""

    h: int
    pair: np.ndarray  # id -> pair code
    child: np.ndarray  # id -> child label code (level h - 1)
    node: np.ndarray  # id -> node label code (level h)
    pair_child: np.ndarray  # pair -> child label code
    pair_node: np.ndarray  # pair -> node code
    n_child: int
    n_node: int


@dataclass(frozen=True)
class HierarchyCodes:
    """A value hierarchy over the ids: its levels, and for a tree (every label has one parent)
    each id's rank in depth-first order, in which every level's (node, child) pairs and nodes
    are contiguous runs (None for a hierarchy that is not a tree)."""

    levels: list[_Level]
    dfs: np.ndarray | None


def hierarchy_levels(hierarchy: pl.DataFrame, text: list[str | None]) -> HierarchyCodes | None:
    """The levels 1..H of ``hierarchy`` (ARX layout, strings) over the ids whose values cast to
    strings are ``text``; None when a value is not a leaf of the hierarchy."""
    paths = {row[0]: row for row in hierarchy.iter_rows()}
    rows = [paths.get(t) if t is not None else None for t in text]
    if any(r is None for r in rows):
        return None
    width = hierarchy.width
    labels = [np.array([r[j] for r in rows], dtype=object) for j in range(width)]
    codes = [np.unique(lab, return_inverse=True)[1].astype(np.int64) for lab in labels]
    out = []
    tree = True
    for h in range(1, width):
        n_child, n_node = int(codes[h - 1].max()) + 1, int(codes[h].max()) + 1
        pairs, pair = np.unique(codes[h] * n_child + codes[h - 1], return_inverse=True)
        tree = tree and pairs.shape[0] == np.unique(codes[h - 1]).shape[0]
        out.append(_Level(h, pair.astype(np.int64), codes[h - 1], codes[h],
                          pairs % n_child, pairs // n_child, n_child, n_node))
    dfs = None
    if tree:  # ids sorted by their path from the root down
        order = np.lexsort(codes)
        dfs = np.empty(order.shape[0], dtype=np.int64)
        dfs[order] = np.arange(order.shape[0])
    return HierarchyCodes(out, dfs)


def hierarchical_emd(rows: EncodedRows, hier: HierarchyCodes) -> np.ndarray:
    """The hierarchical-distance EMD of every class (0 for a class with no rows) over the
    hierarchy of :func:`hierarchy_levels`."""
    levels = hier.levels
    height = len(levels)
    cost = np.zeros(rows.classes)
    if not rows.cls.shape[0] or not height:
        return cost
    table = rows.table_counts
    q = table / float(int(table.sum()))
    dense = rows.prefers_dense(table.shape[0])
    pm = rows.dense(rows.p, table.shape[0], rows.s) if dense else None
    runs = None if dense or hier.dfs is None else _runs(rows, hier.dfs)
    for lv in levels:
        qc = np.bincount(lv.child, weights=q, minlength=lv.n_child)
        qn = np.bincount(lv.node, weights=q, minlength=lv.n_node)
        if pm is not None:
            cost += lv.h * _level_dense(pm, lv, qc, qn)
        elif runs is not None:
            cost += lv.h * _level_runs(runs, lv, qc, qn, rows.classes)
        else:
            cost += lv.h * _level_sparse(rows, lv, qc, qn)
    return np.maximum(cost / height, 0.0)


def _runs(rows: EncodedRows, dfs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(class, id, p)`` of the rows sorted by class and depth-first rank of the value."""
    order = np.argsort(rows.cls * dfs.shape[0] + dfs[rows.s], kind="stable")
    return rows.cls[order], rows.s[order], rows.p[order]


def _starts(*keys: np.ndarray) -> np.ndarray:
    """Where a run of equal ``keys`` begins (the arrays are sorted by them)."""
    new = np.zeros(keys[0].shape[0], dtype=bool)
    new[:1] = True
    for k in keys:
        new[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(new)


def _level_runs(runs: tuple[np.ndarray, np.ndarray, np.ndarray], lv: _Level, qc: np.ndarray,
                qn: np.ndarray, classes: int) -> np.ndarray:
    """:func:`_level_dense` on rows sorted depth-first: each (class, pair) and (class, node)
    group is a run."""
    cls, s, p = runs
    pair = lv.pair[s]
    starts = _starts(cls, pair)
    pc = np.add.reduceat(p, starts)
    g_cls, g_pair = cls[starts], pair[starts]
    extra = pc - qc[lv.pair_child[g_pair]]
    node = lv.pair_node[g_pair]
    nstarts = _starts(g_cls, node)
    pos = np.add.reduceat(np.maximum(extra, 0.0), nstarts)
    pn = np.add.reduceat(pc, nstarts)
    per_node = np.minimum(pos, pos - (pn - qn[node[nstarts]]))
    return np.bincount(g_cls[nstarts], weights=per_node, minlength=classes)


def _group_columns(mat: np.ndarray, code: np.ndarray, width: int) -> np.ndarray:
    """The columns of ``mat`` summed by ``code`` (column -> group): a product with the
    0/1 matrix of the grouping (every product exact, the sums as any summation)."""
    onehot = np.zeros((code.shape[0], width))
    onehot[np.arange(code.shape[0]), code] = 1.0
    return mat @ onehot


def _level_dense(pm: np.ndarray, lv: _Level, qc: np.ndarray, qn: np.ndarray) -> np.ndarray:
    """One level's ``sum_nodes min(pos, neg)`` per class from the ``classes x ids`` shares
    (an absent (node, child) pair has no positive extra: it adds to neither side)."""
    n_pairs = lv.pair_child.shape[0]
    pc = _group_columns(pm, lv.pair, n_pairs)
    extra = pc - qc[lv.pair_child]
    pos = _group_columns(np.maximum(extra, 0.0), lv.pair_node, lv.n_node)
    pn = _group_columns(pc, lv.pair_node, lv.n_node)
    return np.minimum(pos, pos - (pn - qn)).sum(axis=1)


def _level_sparse(rows: EncodedRows, lv: _Level, qc: np.ndarray, qn: np.ndarray
                  ) -> np.ndarray:
    """:func:`_level_dense` on the rows: the (class, pair) and (class, node) groups present."""
    n_pairs = lv.pair_child.shape[0]
    keys, inv = np.unique(rows.cls * n_pairs + lv.pair[rows.s], return_inverse=True)
    pc = np.bincount(inv, weights=rows.p)
    pair = keys % n_pairs
    extra = pc - qc[lv.pair_child[pair]]
    nodes, inv2 = np.unique((keys // n_pairs) * lv.n_node + lv.pair_node[pair],
                            return_inverse=True)
    pos = np.bincount(inv2, weights=np.maximum(extra, 0.0))
    pn = np.bincount(inv2, weights=pc)
    per_node = np.minimum(pos, pos - (pn - qn[nodes % lv.n_node]))
    return np.bincount(nodes // lv.n_node, weights=per_node, minlength=rows.classes)
