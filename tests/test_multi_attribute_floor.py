"""The suppression floor of multi-attribute l-diversity (Def 4.6 around a single-attribute
model; docs/anonymize.md, "Sound pruning with suppression"): for each attribute, the inner
model's floors summed over the class's sub-classes; the largest over the attributes.

1. A lower bound of the failing rows of every split (brute force: random classes over two
   sensitive attributes dealt to up to three parts, each part judged by the model's own
   verdict against a reference within the slack; hypothesis).
2. The brute force catches a weakened floor: summing the attributes' floors (instead of the
   largest) claims more rows than the class holds in failing parts.
3. The pruned search equals judging every node (random tables with two sensitive columns).
"""

from __future__ import annotations

import polars as pl
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    MultiAttribute,
    RecursiveCLDiversity,
    TCloseness,
)
from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain, class_verdict
from ldiv_polars.search import EncodedFrequencySet
from ldiv_polars.search.strategies import search_lattice
from ldiv_polars.search.suppression import NodeChecker, relaxations, suppression_limit_rows
from tests.test_search_pruning import _encoded as one_class
from tests.test_search_pruning import _unpruned as unpruned
from tests.test_search_pruning import parts_of

PAIRS = [(s, v) for s in "abc" for v in "xyz"]
DOMAIN = SensitiveDomain(pl.DataFrame({"S": [p[0] for p in PAIRS], "V": [p[1] for p in PAIRS]},
                                      orient="col"))
INNER = st.one_of(
    st.builds(DistinctLDiversity, st.integers(2, 3)),
    st.builds(EntropyLDiversity, st.sampled_from([1.5, 2.0])),
    st.builds(RecursiveCLDiversity, st.sampled_from([1, 2]), st.integers(2, 3)),
    st.builds(TCloseness, st.sampled_from([0.1, 0.3])),
)


def _encoded(counts: list[int], reference: list[int]) -> EncodedRows:
    return one_class(counts, reference, DOMAIN)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_floor_bounds_failing_rows_of_every_split(data):
    model = MultiAttribute(data.draw(INNER, label="inner"))
    m = len(PAIRS)
    cls = data.draw(st.lists(st.integers(0, 3), min_size=m, max_size=m), label="class")
    assume(sum(cls) > 0)
    others = data.draw(st.lists(st.integers(0, 6), min_size=m, max_size=m), label="others")
    table = [c + o for c, o in zip(cls, others)]
    limit = data.draw(st.integers(0, sum(table) // 4), label="limit")
    rows = [i for i, c in enumerate(cls) for _ in range(c)]
    owner = data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows)),
                      label="owner")
    budget, kept = limit, list(table)
    for i in range(m):  # a reference within the slack: rows of the others removed
        r = data.draw(st.integers(0, min(others[i], budget)), label=f"removed {i}")
        kept[i] -= r
        budget -= r
    failing = sum(sum(part) for part in parts_of(rows, owner, 3, m)
                  if not class_verdict(model, _encoded(part, kept))[0])
    floor = model.suppression_floor(_encoded(cls, table), limit / sum(table))
    assert floor is not None
    assert failing >= floor[0] - 1e-9, (cls, owner, failing, floor)


def test_a_floor_summed_over_the_attributes_is_caught():
    """Two rows (a, x): each attribute's sub-class fails distinct 2-diversity, so each
    attribute's floor is 2, the whole class; the sum (4) would claim rows that are not there."""
    model = MultiAttribute(DistinctLDiversity(2))
    cls = [2 if p == ("a", "x") else 0 for p in PAIRS]
    table = [c + 3 for c in cls]
    floor = model.suppression_floor(_encoded(cls, table), 0.0)
    assert floor.tolist() == [2.0]  # every split fails: the two rows
    subs = model._sub_rows(_encoded(cls, table))
    summed = sum(float(model.inner.suppression_floor(sub, 0.0).sum()) for _, sub in subs)
    assert summed == 4.0 > sum(cls)


@st.composite
def _tables(draw):
    rows = draw(st.integers(10, 50))
    vals = [f"v{j}" for j in range(draw(st.integers(2, 6)))]
    hs = {"q": Hierarchy([[v, f"g{j // 2}", "*"] for j, v in enumerate(vals)])}
    return pl.DataFrame({
        "q": draw(st.lists(st.sampled_from(vals), min_size=rows, max_size=rows)),
        "S": draw(st.lists(st.sampled_from("aabc"), min_size=rows, max_size=rows)),
        "V": draw(st.lists(st.sampled_from("xyz"), min_size=rows, max_size=rows)),
    }), hs


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pruned_search_equals_every_node_judged(data):
    df, hs = data.draw(_tables(), label="table")
    models = [MultiAttribute(data.draw(INNER, label="inner"))]
    if data.draw(st.booleans(), label="with k"):
        models.append(KAnonymity(2))
    limit = suppression_limit_rows(data.draw(st.sampled_from([0.1, 0.2, 0.3])), df.height)

    def efs():
        return EncodedFrequencySet(FrequencySet.build(df, ["q"], ["S", "V"]).materialize(), hs)

    e = efs()
    assert NodeChecker(e, models, limit, relaxations(models)).relaxed, \
        "the multi-attribute model states a floor"
    minimal, optimum, _ = unpruned(e, models, limit, "loss")  # (checks the floors' theorem)
    out = search_lattice(efs(), models, limit, "loss")
    assert sorted(out.minimal) == sorted(minimal)
    assert out.optimum == (optimum if optimum >= 0 else None)
