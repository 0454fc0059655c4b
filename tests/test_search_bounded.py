"""The bounded strategy (best-first by the metric's lower bound) with Flash's path probes: a
popped node of a monotone predicate is decided by a path search upwards from it, and a node
tagged failing is not checked. The optimum equals the exhaustive strategy's and the plain
best-first walk's on random tables; ``auto`` runs it on large frequency sets only, where the
minimal set is then not reported."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.core import FrequencySet
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import DistinctLDiversity, KAnonymity
from ldiv_polars.search import EncodedFrequencySet, anonymize
from ldiv_polars.search.bounded import best_first
from ldiv_polars.search.state import SearchState
from ldiv_polars.search.strategies import search_lattice
from ldiv_polars.search.tuning import TUNING, tuned
from tests.lattice_brute import random_qi

QI = ["sex", "age", "race", "marital-status", "education"]
QI8 = [*QI, "native-country", "workclass", "occupation"]
METRICS = ["loss", "precision", "entropy", "height"]


@st.composite
def tables(draw):
    """A random table of 1-3 QIs (random hierarchies of height 1-2) and a sensitive column."""
    rows = draw(st.integers(4, 40))
    cols, hier = {}, {}
    for i in range(draw(st.integers(1, 3))):
        _, hier[f"q{i}"], cols[f"q{i}"] = random_qi(draw, st, i, rows)
    cols["s"] = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=rows, max_size=rows))
    return pl.DataFrame(cols), {q: Hierarchy(h) for q, h in hier.items()}


def _model(name: str):
    return {"k2": KAnonymity(2), "k3": KAnonymity(3), "d2": DistinctLDiversity(2)}[name]


@settings(max_examples=50, deadline=None)
@given(tables(), st.sampled_from(["k2", "k3", "d2"]), st.sampled_from([0.0, 0.1, 0.25]),
       st.sampled_from(METRICS))
def test_bounded_optimum_equals_exhaustive(data, model, suppression, metric):
    """Same found / not found and optimum value as the exhaustive strategy (every node that
    could be optimal decided), the optimum re-verified."""
    df, hs = data
    qi = list(hs)
    kw = dict(suppression=suppression, metric=metric)
    bounded = anonymize(df, qi, "s", hs, [_model(model)], strategy="bounded", **kw)
    exact = anonymize(df, qi, "s", hs, [_model(model)], strategy="exhaustive", **kw)
    assert bounded.found == exact.found
    assert bounded.minimal is None and not bounded.minimal_complete
    if exact.found:
        assert math.isclose(bounded.value, exact.value, rel_tol=1e-12, abs_tol=1e-12)
        assert bounded.suppressed_rows <= bounded.suppression_limit_rows
        assert bounded.verification.passed


@settings(max_examples=50, deadline=None)
@given(tables(), st.sampled_from(["k2", "k3", "d2"]), st.integers(0, 10),
       st.sampled_from(METRICS))
def test_probes_keep_the_best_first_optimum(data, model, limit, metric):
    """With or without the path probes, best-first returns the same node (least value, ties
    to the smaller id) with the same record: the probes only decide failing nodes by tags."""
    df, hs = data
    fs = FrequencySet.build(df, list(hs), "s").materialize()
    got = []
    for probe in (False, True):
        s = SearchState(EncodedFrequencySet(fs, hs), [_model(model)], limit, metric, None)
        node = best_first(s, [s.lattice.bottom], probe=probe)
        got.append((node, None if node is None else s.records[node].value))
    assert got[0] == got[1]


def _adult(adult_dir, qi):
    df = pl.read_csv(adult_dir / "adult.csv", separator=";").head(3000)
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in qi}
    return FrequencySet.build(df, qi, None).materialize(), hs


@pytest.fixture(scope="module")
def adult(adult_dir):
    return _adult(adult_dir, QI)


@pytest.fixture(scope="module")
def adult8(adult_dir):
    return _adult(adult_dir, QI8)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize(("k", "limit"), [(5, 30), (20, 60), (50, 150)])
def test_bounded_checks_fewer_nodes_than_flash_on_adult(adult8, metric, k, limit):
    """On Adult (3,000 rows, 8 QIs: 6,480 nodes) the bounded search finds Flash's optimum value
    with fewer checks: it decides the nodes below the optimum's bound, not the whole border
    (on small lattices the two check about as many)."""
    fs, hs = adult8
    flash = search_lattice(EncodedFrequencySet(fs, hs), [KAnonymity(k)], limit, metric,
                           strategy="flash")
    bounded = search_lattice(EncodedFrequencySet(fs, hs), [KAnonymity(k)], limit, metric,
                             strategy="bounded")
    assert bounded.minimal is None
    assert bounded.records[bounded.optimum].value == flash.records[flash.optimum].value
    assert bounded.records[bounded.optimum].passed
    assert bounded.checked < flash.checked


@pytest.mark.parametrize(("limit", "metric", "rows", "expected"), [
    (30, "loss", 0, "bounded"),        # suppression, a level bound, a large enough set
    (30, "precision", 0, "bounded"),
    (0, "loss", 0, "flash"),           # nothing suppressed: the optimum is a minimal node
    (30, "aecs", 0, "flash"),          # its bound needs a roll-up per node pushed
    (30, "loss", None, "flash"),       # the default threshold: 3,000 rows are below it
])
def test_auto_picks_bounded_on_large_sets_only(adult, limit, metric, rows, expected):
    """``auto`` runs bounded (no minimal set) from ``TUNING.bounded_min_rows`` rows of the
    frequency set when rows may be suppressed and the metric's bound needs no roll-up; else
    Flash, with the same optimum value either way."""
    fs, hs = adult
    with tuned(bounded_min_rows=TUNING.bounded_min_rows if rows is None else rows):
        out = search_lattice(EncodedFrequencySet(fs, hs), [KAnonymity(5)], limit, metric)
    flash = search_lattice(EncodedFrequencySet(fs, hs), [KAnonymity(5)], limit, metric,
                           strategy="flash")
    assert out.strategy == expected
    assert (out.minimal is None) == (expected == "bounded")
    assert out.records[out.optimum].value == flash.records[flash.optimum].value


def test_bounded_makes_no_hubs_and_restores_the_store(adult8):
    """The bounded search rolls up from cached snapshots and the base only (no pinned or
    on-demand hub: its few checks would not pay for them), leaves the store's hub setting as
    it found it, and finds the optimum the search with hubs finds."""
    fs, hs = adult8
    values = []
    with tuned(hub_min_rows=0, prime_min_rows=0):  # hubs on even for this small table
        for strategy in ("bounded", "flash"):
            efs = EncodedFrequencySet(fs, hs)
            out = search_lattice(efs, [KAnonymity(5)], 30, "loss", strategy=strategy)
            assert efs.lazy_hubs
            assert bool(efs.store.hubs) == (strategy == "flash")
            values.append(out.records[out.optimum].value)
    assert values[0] == values[1]
