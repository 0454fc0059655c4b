"""The array verdicts on Adult (ARX's extract and hierarchies): for every model family, the
search's node checker decides a sample of lattice nodes in numpy exactly as through
``evaluate_classes`` (same verdict, same suppressed classes and rows, at a 2% limit), and
``anonymize`` returns the same optimum with and without the array path (0% and 2%)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ldiv_polars.core import FrequencySet
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import (
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversityDontCare,
    MultiAttribute,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    TCloseness,
)
from ldiv_polars.search import anonymize

pytestmark = pytest.mark.slow

QI = ["sex", "race", "marital-status", "education", "workclass"]
Y = ["Prof-specialty", "Craft-repair"]


def _occupation(adult_dir: Path) -> Hierarchy:
    return Hierarchy.from_csv(adult_dir / "adult_hierarchy_occupation.csv")


CONFIGS = {
    # name: (sensitive, models)
    "t_equal": ("occupation", lambda d: [TCloseness(0.4)]),
    "t_ordered_age": ("age", lambda d: [TCloseness(0.1, "ordered")]),
    "t_hierarchical": ("occupation", lambda d: [TCloseness(0.35, "hierarchical",
                                                           _occupation(d))]),
    "delta": ("occupation", lambda d: [DeltaDisclosure(4.0)]),
    "beta": ("occupation", lambda d: [BetaLikeness(6.0)]),
    "beta_enhanced": ("occupation", lambda d: [BetaLikeness(6.0, enhanced=True)]),
    "pd_recursive": ("occupation", lambda d: [PositiveDisclosureRecursive(3, 3, Y)]),
    "npd_recursive": ("occupation", lambda d: [NegativePositiveDisclosureRecursive(
        3, 1.0, 3, Y, ["Sales"])]),
    "adjusted_entropy": ("occupation", lambda d: [EntropyLDiversityDontCare(3, Y)]),
    "multi_attribute": (["occupation", "salary-class"],
                        lambda d: [MultiAttribute(DistinctLDiversity(2))]),
}


@pytest.fixture(scope="module")
def adult(adult_dir: Path) -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    df = pl.read_csv(adult_dir / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in QI}
    return df, hs


def _without_arrays(models):
    for m in models:
        m.array_verdict = lambda rows: None  # the frame path (evaluate_classes) everywhere
    return models


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_node_checker_arrays_equal_frame_path(adult, adult_dir, name):
    from ldiv_polars.search import EncodedFrequencySet, Lattice
    from ldiv_polars.search.suppression import NodeChecker, relaxations

    df, hs = adult
    sensitive, make = CONFIGS[name]
    models = make(adult_dir)
    efs = EncodedFrequencySet(FrequencySet.build(df, QI, sensitive).materialize(), hs)
    limit = int(0.02 * df.height)
    fast = NodeChecker(efs, models, limit, relaxations(models))
    slow = NodeChecker(efs, _without_arrays(make(adult_dir)), limit,
                       relaxations(models))
    lat = Lattice([hs[q].height for q in QI])
    nodes = np.random.default_rng(5).choice(lat.size, size=min(lat.size, 24), replace=False)
    for node in nodes.tolist():
        r = efs.rollup(lat.levels(node))
        a, b = fast.check(r), slow.check(r)
        assert (a.passed, a.suppressed_rows) == (b.passed, b.suppressed_rows), lat.levels(node)
        assert np.array_equal(a.suppressed, b.suppressed), lat.levels(node)
    assert fast.arrays and fast.engine_evaluations == 0  # every node decided in numpy
    assert slow.engine_evaluations == slow.evaluations


@pytest.mark.parametrize("suppression", [0.0, 0.02])
@pytest.mark.parametrize("name", ["t_ordered_age", "t_hierarchical", "delta", "beta",
                                  "pd_recursive", "adjusted_entropy", "multi_attribute"])
def test_anonymize_same_optimum_with_and_without_arrays(adult, adult_dir, name, suppression):
    df, hs = adult
    sensitive, make = CONFIGS[name]
    fast = anonymize(df, QI, sensitive, hs, make(adult_dir), suppression=suppression,
                     metric="loss")
    slow = anonymize(df, QI, sensitive, hs, _without_arrays(make(adult_dir)),
                     suppression=suppression, metric="loss")
    assert (fast.levels, fast.value, fast.suppressed_rows, fast.classes) == \
        (slow.levels, slow.value, slow.suppressed_rows, slow.classes)
