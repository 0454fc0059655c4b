"""Brute-force, pure-Python reference implementations of the privacy models, written directly
from the definitions (paper-notes/l-diversity.md and the t-closeness / delta / beta papers).
They loop over rows and classes on purpose: they are the independent side of the tests."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence

import numpy as np
from scipy.optimize import linprog


def classes_of(rows: Iterable[tuple[tuple[Hashable, ...], Hashable]]) -> dict[tuple, Counter]:
    out: dict[tuple, Counter] = defaultdict(Counter)
    for q, s in rows:
        out[q][s] += 1
    return dict(out)


def entropy(counts: Sequence[int]) -> float:
    n = sum(counts)
    return -sum((c / n) * math.log(c / n) for c in counts if c)


def recursive_ratio(counts: Sequence[int], l: int) -> float:
    """The c a class needs: ``r1 / (r_l + ... + r_m)``; 0 for l = 1 (every class passes
    recursive (c,1) whatever c), inf with fewer than l values."""
    if l == 1:
        return 0.0
    r = sorted(counts, reverse=True)
    tail = sum(r[l - 1:])
    return math.inf if tail == 0 else r[0] / tail


def recursive_pass(counts: Sequence[int], c: float, l: int) -> bool:
    if l == 1:
        return True
    r = sorted(counts, reverse=True)
    return r[0] < c * sum(r[l - 1:])


def pd_recursive_pass(counter: Counter, c: float, l: int, Y: set) -> bool:
    """Def 4.3, the paper's two-case rule (ties: non-Y values first)."""
    if l == 1:
        return True
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0] in Y))
    r = [n for _, n in items]
    ys = [i for i, (v, _) in enumerate(items) if v not in Y]
    if not ys:
        return True  # r_y = 0: only don't-care values
    y = ys[0] + 1  # 1-based
    r_y = r[y - 1]
    # r_j for j = 1..m (1-based) -> r[j-1]
    if y <= l - 1:
        return r_y < c * sum(r[l - 1:])
    tail = sum(r[l - 2: y - 1]) + sum(r[y:])
    return r_y < c * tail


def adjusted_entropy(phi: Sequence[float], p: Sequence[float]) -> float | None:
    """The paper's Algorithm 1, literally (a while loop over the changeable set)."""
    if not [x for x in p if x > 0]:
        return None

    def M(vals: list[float]) -> float:
        vals = [v for v in vals if v > 0]
        return sum(v * math.log(v) for v in vals) / sum(vals)

    x = list(phi)
    fixed = list(p)
    changeable = list(range(len(x)))
    m = M(fixed)
    while changeable and (x[min(changeable, key=lambda i: x[i])] == 0 or
                          math.log(x[min(changeable, key=lambda i: x[i])]) < m):
        i = min(changeable, key=lambda j: x[j])
        fixed.append(x[i])
        changeable.remove(i)
        m = M(fixed)
    for i in changeable:
        x[i] = math.exp(m)
    return entropy(x + list(p))


def emd(p: Sequence[float], q: Sequence[float], dist: np.ndarray) -> float:
    """Earth Mover's Distance as a transportation linear program (scipy.optimize.linprog)."""
    m = len(p)
    c = dist.reshape(-1)
    a_eq = []
    b_eq = []
    for i in range(m):  # row sums = p_i
        row = np.zeros((m, m))
        row[i, :] = 1
        a_eq.append(row.reshape(-1))
        b_eq.append(p[i])
    for j in range(m):  # column sums = q_j
        col = np.zeros((m, m))
        col[:, j] = 1
        a_eq.append(col.reshape(-1))
        b_eq.append(q[j])
    res = linprog(c, A_eq=np.array(a_eq), b_eq=np.array(b_eq), bounds=(0, None), method="highs")
    assert res.success, res.message
    return float(res.fun)


def equal_distance(m: int) -> np.ndarray:
    return 1.0 - np.eye(m)


def ordered_distance(m: int) -> np.ndarray:
    idx = np.arange(m)
    return np.abs(idx[:, None] - idx[None, :]) / max(m - 1, 1)


def hierarchical_distance(paths: Sequence[Sequence[str]]) -> np.ndarray:
    """paths[i] = (leaf, level1, ..., root) of value i; distance = level of the lowest common
    ancestor / height."""
    m = len(paths)
    H = len(paths[0]) - 1
    d = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            if i == j:
                continue
            lvl = next(h for h in range(1, H + 1) if paths[i][h] == paths[j][h])
            d[i, j] = lvl / H
    return d


def table_distribution(classes: dict[tuple, Counter]) -> Counter:
    total: Counter = Counter()
    for cnt in classes.values():
        total.update(cnt)
    return total
