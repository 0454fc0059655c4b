"""The ``bounded`` strategy (the optimum only, docs/anonymize.md "Strategies"): Flash — over the
models when "the node passes" is monotone, else over the suppression floors — and then the walk
by height, both leaving out every node whose metric lower bound exceeds the best value found.

1. Its optimum and the optimum's value equal judging every node of the lattice without any
   pruning (brute force), on random tables for every model family with a floor and for the
   union-closed ones, under every metric with a bound (hypothesis).
2. Two deliberately unsound variants are caught by the same comparison: leaving out the nodes
   whose bound *equals* the best value (ties decide the optimum's node), and taking a node
   left out for failing (its specializations tagged failing with it).
3. The vectorized bound (``MetricSuite.bounds_from_levels``) is the per-node one, bit for bit.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from ldiv_polars.search import Lattice
from ldiv_polars.search import flash as flash_mod
from ldiv_polars.search.metrics import MetricSuite
from ldiv_polars.search.state import SearchState
from ldiv_polars.search.strategies import search_lattice
from ldiv_polars.search.suppression import suppression_limit_rows
from tests.test_search_pruning import FAMILIES, _efs, _tables, _unpruned

METRICS = ["loss", "height", "discernibility", "aecs", "precision", "entropy"]


def _bounded_matches(df: pl.DataFrame, hs: dict, models, limit: int, metric: str) -> bool:
    """Whether the bounded search's optimum and value are those of judging every node."""
    _, optimum, value = _unpruned(_efs(df, hs), models, limit, metric)
    out = search_lattice(_efs(df, hs), models, limit, metric, strategy="bounded")
    assert out.strategy == "bounded" and out.minimal is None
    if optimum < 0:
        return out.optimum is None
    return out.optimum == optimum and out.records[optimum].value == value


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bounded_optimum_equals_every_node_judged(family, data):
    df, hs = data.draw(_tables(), label="table")
    models = [data.draw(FAMILIES[family], label="model")]
    if data.draw(st.booleans(), label="with k"):
        models.append(KAnonymity(data.draw(st.integers(2, 4), label="k")))
    limit = suppression_limit_rows(data.draw(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3])),
                                   df.height)
    metric = data.draw(st.sampled_from(METRICS), label="metric")
    assert _bounded_matches(df, hs, models, limit, metric)


def _random_table(rng: np.random.Generator) -> tuple[pl.DataFrame, dict]:
    """2-3 QIs of 3-6 values with nested hierarchies of 2-4 levels, 20-60 rows, a skewed
    sensitive column over five values."""
    rows = int(rng.integers(20, 61))
    cols, hs = {}, {}
    for i in range(int(rng.integers(2, 4))):
        vals = [f"v{i}_{j}" for j in range(int(rng.integers(3, 7)))]
        height = int(rng.integers(1, 4))
        hs[f"q{i}"] = Hierarchy([[v, *(f"g{lv}_{j // 2 ** lv}" for lv in range(1, height)), "*"]
                                 for j, v in enumerate(vals)])
        cols[f"q{i}"] = rng.choice(vals, rows).tolist()
    cols["s"] = rng.choice(list("aabbcde"), rows).tolist()
    return pl.DataFrame(cols), hs


MODELS = [lambda: [EntropyLDiversity(2)], lambda: [RecursiveCLDiversity(2, 2)],
          lambda: [TCloseness(0.2)], lambda: [DistinctLDiversity(2)],
          lambda: [KAnonymity(3)], lambda: [TCloseness(0.15, "ordered"), KAnonymity(2)]]


def _cases(n: int):
    rng = np.random.default_rng(23)
    for i in range(n):
        df, hs = _random_table(rng)
        limit = suppression_limit_rows(float(rng.choice([0.05, 0.1, 0.2])), df.height)
        yield df, hs, MODELS[i % len(MODELS)](), limit, METRICS[(i // 2) % len(METRICS)]


def test_unsound_variants_are_caught(monkeypatch):
    """The comparison with every node judged fails for two plausible but unsound shortcuts,
    and holds for the strategy itself on the same tables."""
    cases = list(_cases(48))
    assert all(_bounded_matches(*c) for c in cases)

    # 1. ties left out: a node whose bound equals the best value may still be the optimum
    mark = SearchState.mark_beyond

    def ties_too(self):
        out = mark(self)
        best, key = self.best_passing()
        if key is not None:
            out |= np.array([self.bound(n) >= best for n in range(self.lattice.size)])
        return out

    with monkeypatch.context() as m:
        m.setattr(SearchState, "mark_beyond", ties_too)
        assert not all(_bounded_matches(*c) for c in cases)

    # 2. a node left out taken for failing: Flash tags its specializations failing with it
    path_from, probe = flash_mod.path_from, flash_mod.probe

    def fail_beyond(state, node, tags, relaxed):
        if state.within_bound and state.mark_beyond()[node]:
            state.lattice.tag(tags, state.lattice.box_below(node), -1)
            return False
        return probe(state, node, tags, relaxed)

    with monkeypatch.context() as m:
        m.setattr(flash_mod, "path_from", lambda state, start, tags, beyond=None:
                  path_from(state, start, tags))
        m.setattr(flash_mod, "probe", fail_beyond)
        assert not all(_bounded_matches(*c) for c in cases)


@pytest.mark.parametrize("metric", ["loss", "height", "precision", "entropy"])
def test_bounds_from_levels_equal_the_per_node_bound(metric):
    df, hs = _random_table(np.random.default_rng(7))
    efs = _efs(df, hs)
    suite = MetricSuite(efs)
    lat = Lattice([h.height for h in efs.hierarchies])
    grid = suite.bounds_from_levels(metric)
    assert grid.tolist() == [suite.bound_from_levels(metric, lat.levels(n))
                             for n in range(lat.size)]
