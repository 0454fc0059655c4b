"""Property test: on random small tables and random hierarchies, the search's minimal set and
optimum equal a pure-Python brute force over the whole lattice — for k-anonymity and distinct
l-diversity with suppression (the union-closed case where Flash prunes) and for entropy
l-diversity with suppression (the non-monotone case, searched exhaustively)."""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import DistinctLDiversity, EntropyLDiversity, KAnonymity
from ldiv_polars.search import anonymize


@st.composite
def tables(draw):
    n_qi = draw(st.integers(1, 3))
    rows = draw(st.integers(4, 40))
    hier_rows = []
    cols = {}
    for i in range(n_qi):
        n_vals = draw(st.integers(1, 6))
        height = draw(st.integers(1, 3))  # levels above raw, the last one '*'
        vals = [f"v{i}_{j}" for j in range(n_vals)]
        h = []
        for j, v in enumerate(vals):
            row = [v]
            for lv in range(1, height):
                # nested groups: group index j // 2**lv keeps coarsening
                row.append(f"g{lv}_{j // (2 ** lv)}")
            row.append("*")
            h.append(row)
        hier_rows.append(h)
        cols[f"q{i}"] = draw(st.lists(st.sampled_from(vals), min_size=rows, max_size=rows))
    cols["s"] = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=rows, max_size=rows))
    return pl.DataFrame(cols), {f"q{i}": hier_rows[i] for i in range(n_qi)}


def _class_ok(counts: Counter, model) -> bool:
    size = sum(counts.values())
    if isinstance(model, KAnonymity):
        return size >= model.k
    if isinstance(model, DistinctLDiversity):
        return len(counts) >= model.l
    h = -sum(c / size * math.log(c / size) for c in counts.values())
    return h >= math.log(model.l) - 1e-12


def _metric(name, levels, classes, model, n):
    kept = [sum(c.values()) for c in classes.values() if _class_ok(c, model)]
    supp = n - sum(kept)
    if name == "height":
        return sum(levels)
    if name == "discernibility":
        return sum(k * k for k in kept) + supp * n
    return n / (len(kept) + (1 if supp else 0))  # aecs


def _brute(df, hier_rows, model, limit, metric="height"):
    qi = [c for c in df.columns if c != "s"]
    maps = {q: [{r[0]: r[j] for r in hier_rows[q]} for j in range(len(hier_rows[q][0]))]
            for q in qi}
    heights = [len(hier_rows[q][0]) for q in qi]
    passing = {}
    for levels in itertools.product(*(range(h) for h in heights)):
        classes = defaultdict(Counter)
        for row in df.iter_rows(named=True):
            key = tuple(maps[q][lv][row[q]] for q, lv in zip(qi, levels))
            classes[key][row["s"]] += 1
        failing = sum(sum(c.values()) for c in classes.values() if not _class_ok(c, model))
        passing[levels] = (failing <= limit, _metric(metric, levels, classes, model, df.height))
    good = [lv for lv, (ok, _) in passing.items() if ok]
    minimal = {lv for lv in good
               if not any(o != lv and all(a <= b for a, b in zip(o, lv)) for o in good)}
    best = min((passing[lv][1] for lv in good), default=None)
    return minimal, best


@settings(max_examples=60, deadline=None)
@given(tables(), st.sampled_from(["k2", "k3", "d2", "e2"]), st.sampled_from([0.0, 0.1, 0.25]),
       st.sampled_from(["height", "discernibility", "aecs"]))
def test_search_equals_brute_force(data, model_name, suppression, metric):
    df, hier_rows = data
    model = {"k2": KAnonymity(2), "k3": KAnonymity(3), "d2": DistinctLDiversity(2),
             "e2": EntropyLDiversity(2)}[model_name]
    hs = {q: Hierarchy(rows) for q, rows in hier_rows.items()}
    qi = list(hs)
    limit = int(math.floor(suppression * df.height + 1e-9))
    res = anonymize(df, qi, "s", hs, [model], suppression=suppression, metric=metric)
    minimal, best = _brute(df, hier_rows, model, limit, metric)
    assert res.minimal_complete
    assert {tuple(m[q] for q in qi) for m in res.minimal} == minimal
    if best is None:
        assert not res.found
    else:
        assert math.isclose(res.value, best, rel_tol=1e-12) and res.suppressed_rows <= limit
        assert res.verification.passed


class _Tie(Exception):
    pass


def _tclose_failing(classes: dict, t: float, limit: int) -> int:
    """Suppressed rows under the documented semantics: classes failing equal-distance
    t-closeness against the distribution of the retained rows, as a fixpoint."""
    failed: set = set()
    while True:
        kept = {k: c for k, c in classes.items() if k not in failed}
        total = Counter()
        for c in kept.values():
            total.update(c)
        n = sum(total.values())
        if n == 0:
            break
        q = {s: v / n for s, v in total.items()}
        new = set()
        for k, c in kept.items():
            size = sum(c.values())
            emd = 0.5 * sum(abs(c.get(s, 0) / size - q[s]) for s in q)
            if abs(emd - t) < 1e-9:
                raise _Tie
            if emd > t:
                new.add(k)
        if not new:
            break
        failed |= new
        if sum(sum(classes[k].values()) for k in failed) > limit:
            break
    return sum(sum(classes[k].values()) for k in failed)


@settings(max_examples=40, deadline=None)
@given(tables(), st.sampled_from([0.15, 0.3, 0.45]), st.sampled_from([0.0, 0.15, 0.3]))
def test_t_closeness_with_suppression_equals_fixpoint_brute_force(data, t, suppression):
    from hypothesis import assume

    from ldiv_polars.models import TCloseness

    df, hier_rows = data
    qi = [c for c in df.columns if c != "s"]
    hs = {q: Hierarchy(rows) for q, rows in hier_rows.items()}
    limit = int(math.floor(suppression * df.height + 1e-9))
    maps = {q: [{r[0]: r[j] for r in hier_rows[q]} for j in range(len(hier_rows[q][0]))]
            for q in qi}
    good = []
    try:
        for levels in itertools.product(*(range(len(hier_rows[q][0])) for q in qi)):
            classes = defaultdict(Counter)
            for row in df.iter_rows(named=True):
                classes[tuple(maps[q][lv][row[q]] for q, lv in zip(qi, levels))][row["s"]] += 1
            if _tclose_failing(classes, t, limit) <= limit:
                good.append(levels)
    except _Tie:
        assume(False)
    minimal = {lv for lv in good
               if not any(o != lv and all(a <= b for a, b in zip(o, lv)) for o in good)}
    res = anonymize(df, qi, "s", hs, [TCloseness(t)], suppression=suppression, metric="height")
    assert {tuple(m[q] for q in qi) for m in res.minimal} == minimal
    if good:
        assert res.value == min(sum(lv) for lv in good)
        assert res.verification.passed
    else:
        assert not res.found
