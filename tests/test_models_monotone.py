"""Every model flagged ``monotone`` keeps passing when classes are merged (a coarser
generalization, no suppression): the lattice search prunes on that flag, so it is tested on
random tables rather than trusted."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.models import (
    AlphaKAnonymity,
    BetaLikeness,
    BinaryLDiversity,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    KAnonymity,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
    TCloseness,
)

HIER = pl.DataFrame({"v": ["0", "1", "2", "3"], "l1": ["a", "a", "b", "b"], "l2": ["*"] * 4})

MODELS = [
    KAnonymity(3),
    DistinctLDiversity(2),
    EntropyLDiversity(1.8),
    RecursiveCLDiversity(2.0, 2),
    RecursiveCLDiversity(3.0, 3),
    PositiveDisclosureRecursive(1.5, 2, {"0"}),
    NegativePositiveDisclosureRecursive(2.0, 10.0, 2, {"0"}, {"3"}),
    EntropyLDiversityDontCare(1.5, {"0"}),
    AlphaKAnonymity(0.7, 2),
    TCloseness(0.35),
    TCloseness(0.3, "ordered"),
    TCloseness(0.3, "hierarchical", HIER),
    DeltaDisclosure(1.2),
    BetaLikeness(1.0),
    BetaLikeness(1.0, enhanced=True),
    BinaryLDiversity(2, ["3"]),
]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 3)), min_size=1, max_size=60))
def test_monotone_models_survive_merging(rows):
    fine = pl.DataFrame({"q": [q for q, _ in rows], "s": [str(s) for _, s in rows]})
    coarse = fine.with_columns(pl.col("q") // 2)  # every coarse class is a union of fine ones
    top = fine.with_columns(pl.lit(0).alias("q"))  # everything merged
    for model in MODELS:
        assert model.monotone
        numeric = model.key.startswith("t_closeness") and "ordered" in model.key
        f, c, t = (d.with_columns(pl.col("s").cast(pl.Int64)) if numeric else d
                   for d in (fine, coarse, top))
        passed = [lp.check(d, ["q"], "s", [model]).passed for d in (f, c, t)]
        # once a generalization passes, every coarser one passes
        assert passed == sorted(passed), (model, passed)
