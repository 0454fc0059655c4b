"""Brute forces over small generalization lattices, shared by the tests of models the search
enforces (risk thresholds, population-table models): random hierarchies, a node's classes
written out, and the search's answer compared with the nodes that pass."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import polars as pl


def random_qi(draw, st, i: int, rows: int) -> tuple[list[str], list[list[str]], list[str]]:
    """QI ``q<i>``: its values, a random hierarchy of height 1 or 2 over them (rows of
    labels, ``*`` on top) and a column of ``rows`` values drawn from them."""
    vals = [f"v{i}_{j}" for j in range(draw(st.integers(1, 5)))]
    height = draw(st.integers(1, 2))
    hier = [[v, *(f"g{lv}_{j >> lv}" for lv in range(1, height)), "*"]
            for j, v in enumerate(vals)]
    return vals, hier, draw(st.lists(st.sampled_from(vals), min_size=rows, max_size=rows))


def random_table(draw, st, rows: int, n_qi: int) -> tuple[pl.DataFrame, dict[str, list]]:
    """A table of ``rows`` rows: QIs ``q0..`` (:func:`random_qi`, ``n_qi`` of them) and a
    sensitive column ``s`` over a, b and c; with the hierarchies by QI."""
    cols, hier = {}, {}
    for i in range(n_qi):
        _, hier[f"q{i}"], cols[f"q{i}"] = random_qi(draw, st, i, rows)
    cols["s"] = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=rows, max_size=rows))
    return pl.DataFrame(cols), hier


def nodes(hier: dict[str, list[list[str]]]) -> Iterator[tuple[int, ...]]:
    """Every node of the lattice of ``hier`` (one level per QI, in order)."""
    return itertools.product(*(range(len(rows[0])) for rows in hier.values()))


def classes_at(df: pl.DataFrame, hier: dict[str, list[list[str]]], levels) -> Counter:
    """The class sizes of ``df`` generalized to ``levels``, keyed by the generalized values."""
    qi = list(hier)
    maps = {q: [{r[0]: r[j] for r in hier[q]} for j in range(len(hier[q][0]))] for q in qi}
    return Counter(tuple(maps[q][lv][v] for q, lv, v in zip(qi, levels, row))
                   for row in df.select(qi).iter_rows())


def assert_search_matches(res, qi: list[str], good: list[tuple[int, ...]], limit: int, *,
                          require_complete: bool = True) -> None:
    """The search's result ``res`` (metric ``height``) against the passing nodes ``good``:
    the same minimal nodes (when the search reports them complete, or always with
    ``require_complete``), the least height, a verified release within the limit."""
    minimal = {lv for lv in good
               if not any(o != lv and all(a <= b for a, b in zip(o, lv)) for o in good)}
    if require_complete:
        assert res.minimal_complete
    if res.minimal_complete:
        assert {tuple(m[q] for q in qi) for m in res.minimal} == minimal
    if good:
        assert res.value == min(sum(lv) for lv in good)
        assert res.suppressed_rows <= limit and res.verification.passed
    else:
        assert not res.found
