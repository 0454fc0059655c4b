"""The class EMDs of :class:`~ldiv_polars.models.TCloseness` on integer-encoded rows (numpy),
for the ordered and the hierarchical ground distances: the same sums as the model's frame
form, from the integer counts, with a dense path (a ``classes x values`` matrix) and a sparse
path (the rows only) for many sensitive values.

- Ordered: ``EMD = 1/(m-1) sum_{i<m-1} |C_i / N_c - T_i / N|`` with ``C``, ``T`` the class's
  and the table's cumulative counts along the sorted domain of the ``m`` values present in the
  table. The sparse path sums each stretch between two values of the class in closed form
  (``C`` is constant there) from prefix sums of ``T``, split where ``T_j N_c <= C N``.
- Hierarchical: ``EMD = 1/H sum_h h sum_nodes min(pos, neg)`` over the nodes of level ``h``,
  with ``pos``/``neg`` the positive/negative extras ``p - q`` of the node's children (grouped
  by (node, child) label pairs, as the frame form groups them).

The results are floats; the model marks the classes within its rounding bound
(:func:`~ldiv_polars.models.t_closeness.emd_band`) uncertain and decides them exactly.

>>> import numpy as np, polars as pl
>>> from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain
>>> rows = EncodedRows(np.array([0, 1]), np.array([0, 1]), np.array([1, 1]), 2, 2,
...                    domain=SensitiveDomain(pl.DataFrame({"s": [10, 20]})))
>>> ordered_emd(rows).tolist()  # {10} against {10, 20}: half a step of the single gap
[0.5, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ldiv_polars.models.encoded import EncodedRows


def ordered_emd(rows: EncodedRows) -> np.ndarray:
    """The ordered-distance EMD of every class (0 for a class with no rows); the rows must
    carry a one-column :class:`~ldiv_polars.models.encoded.SensitiveDomain`."""
    assert rows.domain is not None
    table = rows.table_counts
    order = rows.domain.order()
    present = order[table[order] > 0]
    m = present.shape[0]
    emd = np.zeros(rows.classes)
    if m <= 1 or not rows.cls.shape[0]:
        return emd
    pos = np.full(table.shape[0], -1, dtype=np.int64)
    pos[present] = np.arange(m)
    cum_t = np.cumsum(table[present])  # T_i: exact integers
    size = np.maximum(rows.size, 1).astype(np.float64)
    if rows.prefers_dense(m):
        c = np.cumsum(rows.dense(rows.n.astype(np.float64), m, pos[rows.s]), axis=1)
        cum = c[:, :-1] / size[:, None] - cum_t[:-1] / float(cum_t[-1])
        return np.abs(cum).sum(axis=1) / (m - 1)
    return _ordered_sparse(rows, pos[rows.s], cum_t, size) / (m - 1)


def _ordered_sparse(rows: EncodedRows, at: np.ndarray, cum_t: np.ndarray,
                    size: np.ndarray) -> np.ndarray:
    """``sum_{i<m-1} |C_i / N_c - T_i / N|`` per class from the rows alone: ``at`` is each
    row's position in the domain, ``cum_t`` the table's cumulative counts."""
    m, total = cum_t.shape[0], int(cum_t[-1])
    key = rows.cls * m + at
    perm = np.argsort(key, kind="stable")
    cls, a, n = rows.cls[perm], at[perm], rows.n[perm]
    first = np.ones(cls.shape[0], dtype=bool)
    first[1:] = cls[1:] != cls[:-1]
    last = np.ones(cls.shape[0], dtype=bool)
    last[:-1] = first[1:]
    csum = np.cumsum(n)
    c = csum - np.repeat(csum[first] - n[first], np.diff(np.append(np.flatnonzero(first),
                                                                     cls.shape[0])))
    # the stretch of each row: its position up to the next value of the class (or m - 2)
    b = np.where(last, m - 2, np.append(a[1:], 0) - 1)
    st = np.concatenate([[0], np.cumsum(cum_t)])  # st[j + 1] = T_0 + ... + T_j (exact)
    nc = rows.size[cls]
    # last j with T_j <= C N / N_c (integers: T_j <= floor(C N / N_c))
    split = np.searchsorted(cum_t, (c * total) // nc, side="right") - 1
    split = np.minimum(np.maximum(split, a - 1), b)
    p = c / size[cls]
    low = (st[split + 1] - st[a]) / total  # sum of T_j / N over a..split
    high = (st[b + 1] - st[split + 1]) / total  # over split+1..b
    seg = np.where(b >= a, p * (split - a + 1) - low + high - p * (b - split), 0.0)
    head = np.where(first, st[a] / total, 0.0)  # before the class's first value: P = 0
    return np.bincount(cls, weights=seg + head, minlength=rows.classes)


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
    return np.clip(cost / height, 0.0, None)


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
