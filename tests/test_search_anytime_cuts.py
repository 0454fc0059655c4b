"""The anytime search's cut loop (issue 22): the MILP over failure cuts and no-goods gives the
least separable cost over the nodes they allow (brute force over small lattices); the search's
lifted failures are maximal (every one-level raise of one QI no longer fails); on lattices small
enough for the exact strategies the loop finds their optimum and proves it, and with any budget
its release passes and its bound never exceeds the exact optimum."""

from __future__ import annotations

import itertools
import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.datasets.wide import synthesize_wide, wide_columns, wide_hierarchies
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import KAnonymity
from ldiv_polars.search import anonymize, anytime
from ldiv_polars.search.anytime import Budget, _Search
from ldiv_polars.search.anytime_cuts import CutRelaxation
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.suppression import NodeChecker, suppression_limit_rows
from tests.test_search_anytime import assert_sound_against_exact
from tests.test_search_property import tables


@st.composite
def programs(draw):
    heights = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    cost = [sorted(draw(st.lists(st.integers(-3, 9), min_size=h, max_size=h)))
            if draw(st.booleans()) else
            draw(st.lists(st.integers(-3, 9), min_size=h, max_size=h)) for h in heights]
    nodes = list(itertools.product(*(range(h) for h in heights)))
    fails = draw(st.lists(st.sampled_from(nodes), max_size=4))
    excluded = draw(st.lists(st.sampled_from(nodes), max_size=4))
    return heights, cost, nodes, fails, excluded


@settings(max_examples=60, deadline=None)
@given(programs())
def test_relaxation_is_the_brute_force_minimum(program):
    heights, cost, nodes, fails, excluded = program
    r = CutRelaxation([[float(c) for c in row] for row in cost])
    for f in fails:
        r.add_failure(f)
    for x in excluded:
        r.exclude(x)
    allowed = [x for x in nodes if x not in excluded
               and not any(all(a <= b for a, b in zip(x, f)) for f in fails)]
    bound, node = r.solve()
    if not allowed:
        assert bound == math.inf and node is None
        return
    best = min(sum(c[v] for c, v in zip(cost, x)) for x in allowed)
    assert math.isclose(bound, best, abs_tol=1e-6)
    assert node in allowed and math.isclose(r.value(node), best, abs_tol=1e-6)


def test_a_dominated_failure_adds_no_cut():
    r = CutRelaxation([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]])
    assert r.add_failure((1, 0))
    assert not r.add_failure((0, 0))  # below (1, 0): implied
    assert r.add_failure((1, 1))  # above: replaces (1, 0)
    assert [f.tolist() for f in r.failures] == [[1, 1]]
    bound, node = r.solve()
    assert bound == 2.0 and node in ((2, 0), (0, 2))


def _small(qis: int, rows: int, seed: int, k: int, suppression: float):
    efs = EncodedFrequencySet.from_frame(
        FrequencySet.build(synthesize_wide(rows, qis=qis, seed=seed), wide_columns(qis),
                           None).materialize(), wide_hierarchies(qis))
    limit = suppression_limit_rows(suppression, efs.total)
    checker = NodeChecker(efs, [KAnonymity(k)], limit)
    heights = [h.height for h in efs.hierarchies]
    verdicts = {x: checker.check(efs.rollup(x, cache=False))
                for x in itertools.product(*(range(h) for h in heights))}
    return efs, limit, heights, verdicts


def test_lifted_failures_are_maximal():
    efs, limit, heights, verdicts = _small(5, 1500, 2, 4, 0.01)
    search = _Search(efs, [KAnonymity(4)], limit, "loss", Budget())
    search.costs = search.separable_costs()
    ranks = [None, [0.3, 0.9, 0.1, 0.5, 0.7], [4.0, 3.0, 2.0, 1.0, 0.0]]  # None: by cost
    for x, cheap_first, rank in itertools.product([(0,) * 5, (1, 0, 2, 0, 1), (0, 2, 0, 1, 0)],
                                                  [False, True], ranks):
        lifted = search.lift(x, cheap_first, rank)
        if verdicts[x].passed:
            assert lifted is None
            continue
        assert lifted is not None and not verdicts[lifted].passed
        assert all(a >= b for a, b in zip(lifted, x))
        for j in range(5):
            if lifted[j] + 1 < heights[j]:
                assert verdicts[lifted[:j] + (lifted[j] + 1,) + lifted[j + 1:]].passed
    for f in search.fails[:search.n_fails]:
        assert not verdicts[tuple(int(v) for v in f)].passed


@pytest.mark.parametrize(("seed", "k", "suppression"), [(2, 4, 0.0), (3, 3, 0.02)])
def test_the_cut_loop_proves_the_brute_force_optimum(seed, k, suppression):
    efs, limit, heights, verdicts = _small(5, 1500, seed, k, suppression)
    search = _Search(efs, [KAnonymity(k)], limit, "loss", Budget())
    bound = search.run_cuts()
    assert search.stopped == "proven"
    best = min(search.metrics.value("loss", efs.rollup(x, cache=False), v.suppressed)
               for x, v in verdicts.items() if v.passed)
    assert math.isclose(search.best_val, best, rel_tol=1e-9)
    assert bound == search.best_val
    assert verdicts[search.best].passed


# --- the cut loop through anonymize (every lattice: CUT_LOOP_MIN_NODES lowered to 1) ----------

SEPARABLE = ["height", "precision", "loss", "entropy"]


@pytest.fixture
def cut_loop_everywhere(monkeypatch):
    monkeypatch.setattr(anytime, "CUT_LOOP_MIN_NODES", 1)


@settings(max_examples=25, deadline=None)
@given(tables(), st.sampled_from(["k", "distinct", "entropy"]), st.integers(2, 3),
       st.sampled_from([0.0, 0.1, 0.3]), st.sampled_from(SEPARABLE),
       st.one_of(st.none(), st.integers(1, 12)))
def test_cut_loop_release_is_valid_and_its_bound_sound(table, kind, param, suppression, metric,
                                                       nodes):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(anytime, "CUT_LOOP_MIN_NODES", 1)
        res = assert_sound_against_exact(table, kind, param, suppression, metric, nodes)
    assert any("cut loop" in n for n in res.notes)
    assert res.bound is not None or not res.found


def test_cut_loop_proves_the_synthetic_8_qis_optimum(cut_loop_everywhere):
    # 8 QIs, not 12: on the 3^12 lattice the loop proves the optimum too, but needs ~1000 s on
    # this machine (far more cuts than flash needs checks: BENCHMARKS.md, "Anytime search")
    qi = wide_columns(8)
    df = synthesize_wide(3000, qis=8, seed=5)
    hs = {q: Hierarchy([[r[0], r[-2], r[-1]] for r in h.frame.rows()], name=q)
          for q, h in wide_hierarchies(8).items()}
    kw = dict(suppression=0.0, metric="loss")
    exact = anonymize(df, qi, None, hs, [KAnonymity(3)], **kw)
    res = anonymize(df, qi, None, hs, [KAnonymity(3)], strategy="anytime", **kw)
    assert exact.strategy == "flash" and any("cut loop" in n for n in res.notes)
    assert res.gap == 0.0 and math.isclose(res.value, exact.value, rel_tol=1e-9)
    assert math.isclose(res.bound, exact.value, rel_tol=1e-9) and res.verification.passed


def test_cut_loop_proves_the_adult_8_qis_optimum(adult_dir, cut_loop_everywhere):
    qi = ["sex", "age", "race", "marital-status", "education", "native-country",
          "workclass", "occupation"]
    df = pl.read_csv(adult_dir / "adult.csv", separator=";", infer_schema=False)
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv", name=q) for q in qi}
    kw = dict(suppression=0.0, metric="loss")
    exact = anonymize(df, qi, None, hs, [KAnonymity(5)], **kw)
    res = anonymize(df, qi, None, hs, [KAnonymity(5)], strategy="anytime", **kw)
    assert any("cut loop" in n for n in res.notes)
    assert res.gap == 0.0 and math.isclose(res.value, exact.value, rel_tol=1e-9)
    assert res.verification.passed


@pytest.mark.parametrize(("seed", "k", "suppression"), [(2, 4, 0.0), (3, 3, 0.02), (4, 5, 0.05)])
def test_the_ratio_descent_ends_at_a_cheapest_passing_neighbourhood(seed, k, suppression):
    """From the top, the ratio descent ends at a pass (brute force) none of whose
    predecessors passes with a lower value; the incumbent is the least value checked."""
    efs, limit, heights, verdicts = _small(5, 1500, seed, k, suppression)
    search = _Search(efs, [KAnonymity(k)], limit, "loss", Budget())

    def value(x):
        return search.metrics.value("loss", efs.rollup(x, cache=False), verdicts[x].suppressed)

    end = search.descend_by_ratio(tuple(h - 1 for h in heights))
    assert verdicts[end].passed
    for j in range(5):
        p = end[:j] + (end[j] - 1,) + end[j + 1:]
        if end[j] and verdicts[p].passed:
            assert value(p) >= value(end) - 1e-12
    assert search.best is not None and verdicts[search.best].passed
    assert math.isclose(search.best_val, min(value(x) for x, rec in search.records.items()
                                             if rec[0]), rel_tol=1e-12)


def test_the_ratio_descent_leaves_the_bound_its_share_of_the_budget():
    """Past its share of a seconds budget the ratio descent checks nothing more (here the
    share is spent before it starts: it returns its start, checked once); with only a node
    budget it runs to its end."""
    efs, limit, heights, verdicts = _small(5, 1500, 3, 3, 0.02)
    top = tuple(h - 1 for h in heights)
    spent = _Search(efs, [KAnonymity(3)], limit, "loss", Budget(seconds=1e-9))
    assert spent.past_share(0.5) and spent.descend_by_ratio(top) == top and spent.checked == 1
    free = _Search(efs, [KAnonymity(3)], limit, "loss", Budget(nodes=10 ** 6))
    assert not free.past_share(anytime.RATIO_DESCENT_SHARE)
    end = free.descend_by_ratio(top)
    assert end != top and verdicts[end].passed
