"""The anytime search's decomposition bound (issue 22): the optimum of the table projected onto a
group of QIs bounds those QIs' share of the whole optimum, suppression included. Checked against
brute force on small random tables (every node of the lattice and of each projection judged):
the groups' optima never sum above the optimum, the cut relaxation with every group's constraint
never exceeds it, and dropping the suppression slack does (a fixed table), so the tests fail if
the accounting is removed; the search with the groups proves the brute-force optimum."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import DistinctLDiversity, KAnonymity
from ldiv_polars.search import anytime
from ldiv_polars.search.anytime import Budget, _Search, anytime_search
from ldiv_polars.search.anytime_cuts import CutRelaxation
from ldiv_polars.search.anytime_groups import decomposition_applies, partition
from ldiv_polars.search.metrics import MetricSuite
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.suppression import NodeChecker

SEPARABLE = ("loss", "precision", "entropy", "height")


def random_efs(seed: int, q: int, rows: int, sensitive: bool = False) -> EncodedFrequencySet:
    """A random table: ``q`` QIs of 2-5 values, 3-level hierarchies (values paired, then *)."""
    rng = np.random.default_rng(seed)
    cols, hs = {}, {}
    for i in range(q):
        vals = [f"v{j}" for j in range(int(rng.integers(2, 6)))]
        hs[f"q{i}"] = Hierarchy([[v, f"g{j // 2}", "*"] for j, v in enumerate(vals)],
                                name=f"q{i}")
        cols[f"q{i}"] = rng.choice(vals, rows).tolist()
    if sensitive:
        cols["s"] = rng.choice(["a", "b", "c"], rows).tolist()
    fs = FrequencySet.build(pl.DataFrame(cols), list(hs), "s" if sensitive else None)
    return EncodedFrequencySet.from_frame(fs.materialize(), hs)


def brute_optimum(efs: EncodedFrequencySet, models: list, limit: int, metric: str) -> float:
    """The least ``metric`` over every passing node (inf when none passes)."""
    suite, checker = MetricSuite(efs), NodeChecker(efs, models, limit)
    best = math.inf
    for x in itertools.product(*(range(h.height) for h in efs.hierarchies)):
        rolled = efs.rollup(x)
        verdict = checker.check(rolled)
        if verdict.passed:
            best = min(best, suite.value(metric, rolled, verdict.suppressed))
    return best


def group_relaxation(efs: EncodedFrequencySet, models: list, limit: int, metric: str,
                     groups: list[tuple[int, ...]], slack: bool = True) -> CutRelaxation:
    """The cut relaxation with one constraint per group, its optimum by brute force."""
    suite = MetricSuite(efs)
    s = _Search(efs, models, limit, metric, Budget(), suite)
    relax = CutRelaxation(s.separable_costs())
    room = [suite.suppression_cost_max(metric, j, limit) if slack else 0.0
            for j in range(len(efs.qi))]
    for g in groups:
        opt = brute_optimum(efs.project(g), models, limit, metric)
        relax.add_group(g, opt * suite.projection_scale(metric, len(g)), room)
    return relax


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(2, 4), st.integers(6, 30), st.integers(2, 3),
       st.integers(0, 4), st.sampled_from(SEPARABLE), st.booleans())
def test_group_bounds_never_exceed_the_brute_force_optimum(seed, q, rows, k, limit, metric,
                                                           ldiv):
    efs = random_efs(seed, q, rows, sensitive=ldiv)
    models = [DistinctLDiversity(2)] if ldiv else [KAnonymity(k)]
    assert decomposition_applies(models, limit)  # both union-closed
    opt = brute_optimum(efs, models, limit, metric)
    if math.isinf(opt):
        return
    suite = MetricSuite(efs)
    tol = 1e-9 * max(1.0, abs(opt))
    for size in range(1, q):  # a partition: the projections' optima sum to at most opt
        parts = partition(list(range(q)), size)
        total = sum(brute_optimum(efs.project(g), models, limit, metric)
                    * suite.projection_scale(metric, len(g)) for g in parts)
        assert total <= opt + tol
    every = [g for r in range(1, q) for g in itertools.combinations(range(q), r)]
    bound = group_relaxation(efs, models, limit, metric, every).solve()[0]
    assert bound <= opt + 1e-7


def test_without_the_suppression_slack_the_bound_exceeds_the_optimum():
    """The table (found by search) where the optimum suppresses rows and a projection's optimum
    counts suppressed cells its node's suppression-free cost does not: the constraint without
    the slack cuts the optimum off."""
    efs = random_efs(0, 3, 14)
    models, limit = [KAnonymity(2)], 3
    opt = brute_optimum(efs, models, limit, "loss")
    every = [g for r in (1, 2) for g in itertools.combinations(range(3), r)]
    assert group_relaxation(efs, models, limit, "loss", every, slack=False).solve()[0] > opt
    assert group_relaxation(efs, models, limit, "loss", every).solve()[0] <= opt + 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_search_adds_sound_group_constraints(seed, monkeypatch):
    """``_Search.add_groups`` (the path ``anytime_search`` runs) on tables whose optimum
    suppresses rows: its relaxation stays at or below the brute-force optimum, and above the
    relaxation with no constraint at all when some projection needs generalizing."""
    monkeypatch.setattr(anytime, "GROUP_SIZES", (1, 2))
    efs = random_efs(seed, 3, 14)
    models, limit = [KAnonymity(2)], 3
    opt = brute_optimum(efs, models, limit, "loss")
    s = _Search(efs, models, limit, "loss", Budget(seconds=60.0))
    relax = CutRelaxation(s.separable_costs())
    s.add_groups(relax)
    assert len(s.groups) == 3 + 2 and all(g.proven for g in s.groups)
    bound = relax.solve()[0]
    assert bound <= opt + 1e-9
    if any(g.lower > 0 for g in s.groups):
        assert bound > 0


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(3, 4), st.integers(8, 30), st.integers(0, 3),
       st.sampled_from(("loss", "entropy")))
@example(361, 3, 10, 1, "entropy")  # HiGHS's presolve fails on its first program (status 4)
def test_the_cut_loop_with_groups_proves_the_brute_force_optimum(seed, q, rows, limit, metric):
    efs = random_efs(seed, q, rows)
    models = [KAnonymity(2)]
    opt = brute_optimum(efs, models, limit, metric)
    old = anytime.GROUP_SIZES
    anytime.GROUP_SIZES = (1, 2)  # pairs get floors and failures from single QIs
    # (hypothesis: no function-scoped fixture)
    try:
        out = anytime_search(efs, models, limit, metric, 60.0, cuts=True, groups=True)
    finally:
        anytime.GROUP_SIZES = old
    if math.isinf(opt):
        assert out.best is None
        return
    assert out.proven and math.isclose(out.value, opt, rel_tol=1e-9, abs_tol=1e-12)
    assert out.bound is not None and out.bound <= opt + 1e-9 * max(1.0, opt)
    assert any("decomposition bound" in n for n in out.notes)


def test_the_decomposition_needs_a_monotone_predicate():
    from ldiv_polars.models import EntropyLDiversity

    assert not decomposition_applies([EntropyLDiversity(2.0)], 5)  # not union-closed
    assert decomposition_applies([EntropyLDiversity(2.0)], 0)  # monotone without suppression


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(2, 4), st.integers(8, 30), st.integers(0, 3),
       st.sampled_from(SEPARABLE), st.integers(1, 3), st.integers(1, 6))
def test_best_first_with_floors_stays_sound(seed, q, rows, limit, metric, size, nodes):
    """Floors (the groups' brute-force optima, a partition) raise the best-first keys: the
    bound after any number of checks stays at or below the optimum, and without a budget the
    optimum is proven."""
    efs = random_efs(seed, q, rows)
    models = [KAnonymity(2)]
    opt = brute_optimum(efs, models, limit, metric)
    floors = [(list(g), brute_optimum(efs.project(g), models, limit, metric))
              for g in partition(list(range(q)), size) if len(g) < q]
    floors = [(g, lo) for g, lo in floors if math.isfinite(lo)]
    short = anytime_search(efs, models, limit, metric, Budget(nodes=nodes), cuts=False,
                           floors=floors)
    full = anytime_search(efs, models, limit, metric, cuts=False, floors=floors)
    if math.isinf(opt):
        assert full.best is None
        return
    assert full.proven and math.isclose(full.value, opt, rel_tol=1e-9, abs_tol=1e-12)
    assert short.bound is not None and short.bound <= opt + 1e-9 * max(1.0, opt)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(10, 40), st.integers(0, 2), st.integers(2, 4))
def test_every_failure_a_projection_reports_fails_with_its_down_set(seed, rows, limit, k):
    """The failures each projection's search reports (its own, and those handed down from the
    smaller groups inside it, embedded with its other QIs at the top) fail on that projection
    with every node below them (brute force)."""
    efs = random_efs(seed, 3, rows)
    models = [KAnonymity(k)]
    s = _Search(efs, models, limit, "loss", Budget(seconds=60.0))
    old = anytime.GROUP_SIZES
    anytime.GROUP_SIZES = (1, 2)
    try:
        s.add_groups(CutRelaxation(s.separable_costs()))
    finally:
        anytime.GROUP_SIZES = old
    for g in s.groups:
        proj = efs.project(g.cols)
        checker = NodeChecker(proj, models, limit)
        for f in g.failures:
            for x in itertools.product(*(range(int(v) + 1) for v in f)):
                assert not checker.check(proj.rollup(x)).passed, (g.cols, f, x)
