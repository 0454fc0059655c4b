"""Monte Carlo of the guarantee: against exact probabilities on a small case, against the
bounds, against the engine + checker on the same draws, and the pure l-diversity contrast."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.linkage.distribution import JointDistribution
from ldiv_polars.linkage.mechanism import plan_mechanism
from ldiv_polars.linkage.simulate import (
    dataset_frame,
    draw_dataset,
    simulate_mechanism,
    simulate_pure,
)


def _support_distribution(probs: list[Fraction], n: int) -> dict[frozenset[int], Fraction]:
    """Exact distribution of the set of values seen in n i.i.d. draws (enumeration)."""
    out: dict[frozenset[int], Fraction] = {}
    for seq in itertools.product(range(len(probs)), repeat=n):
        pr = Fraction(1)
        for v in seq:
            pr *= probs[v]
        key = frozenset(seq)
        out[key] = out.get(key, Fraction(0)) + pr
    return out


def test_failure_rates_match_exact_probabilities():
    # one class (p = p_l), values with P = (1/2, 1/4, 1/4), l = 2, N = 4 records
    d = JointDistribution.product([1], [2, 1, 1])
    plan = plan_mechanism(d, 2, 0.5, beta=1)
    assert plan.classes == 1
    n, trials = 4, 20_000
    sup = _support_distribution([Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)], n)
    p_fail = float(sum(pr for s, pr in sup.items() if len(s) < 2))
    assert p_fail == pytest.approx(0.0703125)  # (1/2)^4 + 2 (1/4)^4
    p_any = 1 - (1 - p_fail) ** 2
    p_post = float(sum(pa * pb for (a, pa), (b, pb) in itertools.product(sup.items(), repeat=2)
                       if 0 < len(a & b) < 2))
    p_strict = float(sum(pa * pb for (a, pa), (b, pb) in itertools.product(sup.items(), repeat=2)
                         if len(a & b) < 2))
    res = simulate_mechanism(plan, t=2, trials=trials, N=n, seed=7)

    def close(emp: float, exact: float, draws: int) -> bool:
        sd = (exact * (1 - exact) / draws) ** 0.5
        return abs(emp - exact) <= 5 * sd + 1e-9

    assert close(res.dataset_failure_rate, p_fail, 2 * trials)
    assert close(res.any_dataset_failure_rate, p_any, trials)
    assert close(res.post_linkage_failure_rate, p_post, trials)
    assert close(res.post_linkage_strict_rate, p_strict, trials)
    # the union bounds hold (here they are loose but valid)
    assert res.bound == pytest.approx(min(1.0, float(plan.m) * 2 * (1 - 0.25) ** n))


def test_paper_setting_rates_below_delta():
    d = JointDistribution.paper_setting("uniform")
    plan = plan_mechanism(d, 10, 0.01, beta=0.01)
    res = simulate_mechanism(plan, t=2, trials=60, seed=3)
    assert res.N == 65606 and res.classes == 100
    assert res.bound <= 0.01 and res.linked_bound <= 0.02
    assert res.dataset_failure_rate <= res.bound
    assert res.post_linkage_failure_rate <= res.linked_bound
    assert min(res.l_t_histogram) >= 10  # post-linkage l kept in every trial
    assert sum(res.l_t_histogram.values()) == 60


def test_small_n_fails_often_and_bound_is_vacuous():
    d = JointDistribution.paper_setting("uniform")
    plan = plan_mechanism(d, 10, 0.01, beta=0.01)
    res = simulate_mechanism(plan, t=2, trials=40, N=1500, seed=1)
    assert res.bound == 1.0
    assert res.any_dataset_failure_rate > 0.5


def test_numpy_flags_agree_with_engine_and_checker():
    d = JointDistribution.paper_setting("geometric")
    plan = plan_mechanism(d, 10, 0.01, beta=0.02)
    outcomes = set()
    for seed, n in ((0, 300), (3, 600), (1, 9000), (2, 20000)):
        q, s = draw_dataset(d, n, seed)
        cls = plan.partition.class_of_position()[q]
        counts = np.zeros((plan.classes, d.n_sensitive), dtype=np.int64)
        np.add.at(counts, (cls, s), 1)
        nonempty = counts.sum(axis=1) > 0
        own = int((counts > 0).sum(axis=1)[nonempty].min())
        frame = dataset_frame(d, n, seed)
        assert frame.height == n and frame.columns == ["postal", "gender", "age", "disease"]
        anon = plan.anonymize(frame, "disease")  # engine join + foundation checker
        assert anon.suppressed == 0
        assert anon.achieved_l == own
        assert anon.passed == (own >= 10)
        outcomes.add(anon.passed)
    assert outcomes == {True, False}  # both verdicts exercised


def test_pure_l_diversity_collapses_under_linkage():
    d = JointDistribution.paper_setting("uniform")
    plan = plan_mechanism(d, 10, 0.01, beta=0.01)
    res = simulate_pure(d, 10, 65606, t=2, trials=2, seed=0, plan=plan)
    assert all(lt < 10 for lt in res.l_t)  # dataset-dependent classes: l_[t] collapses
    assert all(c > 100 for cs in res.classes for c in cs)  # far more classes than the mechanism
    assert res.mechanism_l_t is not None and min(res.mechanism_l_t) >= 10  # same draws
    mech = simulate_mechanism(plan, t=2, trials=2, seed=0)
    assert min(mech.l_t_histogram) >= 10


def test_pure_on_small_data_with_absent_values():
    # few records: some sensitive values are absent from a dataset; pure greedy still runs
    d = JointDistribution.uniform(30, 8)
    plan = plan_mechanism(d, 2, 0.2, beta="1/2")
    res = simulate_pure(d, 3, 15, t=2, trials=5, seed=4, plan=plan)
    # literal reference on the same draws (same generator, same order of draws)
    rng = np.random.default_rng(4)
    cls_mech = plan.partition.class_of_position()
    for trial in range(5):
        pure_counts, mech_counts, present = [], [], np.ones(30, dtype=bool)
        for _ in range(2):
            q, s = draw_dataset(d, 15, rng)
            counts = np.zeros((30, 8), dtype=np.int64)
            np.add.at(counts, (q, s), 1)
            present &= counts.sum(axis=1) > 0
            bounds, start, seen = [], 0, set()
            for pos in range(30):  # literal sweep: close when 3 distinct values are seen
                seen |= set(np.flatnonzero(counts[pos]).tolist())
                if len(seen) >= 3:
                    bounds.append((start, pos))
                    start, seen = pos + 1, set()
            if start < 30:
                bounds[-1] = (bounds[-1][0], 29)
            per_q = np.zeros_like(counts)
            for a_, b_ in bounds:
                per_q[a_:b_ + 1] = counts[a_:b_ + 1].sum(axis=0)
            pure_counts.append(per_q)
            mc = np.zeros((plan.classes, 8), dtype=np.int64)
            np.add.at(mc, cls_mech, counts)
            mech_counts.append(mc)
        m = (np.minimum(*pure_counts) > 0).sum(axis=1)[present]
        assert res.l_t[trial] == int(m[m > 0].min())
        mm = (np.minimum(*mech_counts) > 0).sum(axis=1)
        assert res.mechanism_l_t[trial] == int(mm[mm > 0].min())


def test_simulation_parameter_errors():
    d = JointDistribution.uniform(10, 3)
    plan = plan_mechanism(d, 2, 0.1, beta="1/2")
    with pytest.raises(InvalidParameterError):
        simulate_mechanism(plan, trials=0)
    with pytest.raises(InvalidParameterError):
        simulate_pure(d, 5, 100)
    with pytest.raises(InvalidParameterError):
        draw_dataset(d, 0)
    assert isinstance(dataset_frame(d, 5, 0), pl.DataFrame)


def test_engine_pipeline_equals_numpy_on_the_same_draws():
    from ldiv_polars.linkage.simulate import simulate_engine

    d = JointDistribution.paper_setting("geometric")
    plan = plan_mechanism(d, 10, 0.01, beta=0.02)
    n = 5000  # well below the broadcast N: verdicts and l_[t] vary
    eng = simulate_engine(plan, t=2, trials=3, N=n, seed=9)
    ref = simulate_pure(d, 10, n, t=2, trials=3, seed=9, plan=plan)
    assert eng.l_t == ref.mechanism_l_t  # engine + checker + post_linkage == numpy
    rng = np.random.default_rng(9)
    for trial in range(3):
        for j in range(2):
            q, s = draw_dataset(d, n, rng)
            counts = np.zeros((plan.classes, d.n_sensitive), dtype=np.int64)
            np.add.at(counts, (plan.partition.class_of_position()[q], s), 1)
            own = (counts > 0).sum(axis=1)
            assert eng.achieved_l[trial][j] == int(own[own > 0].min())
    assert 0 <= eng.dataset_failure_rate <= 1
