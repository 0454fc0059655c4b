"""Utility metrics, each recomputed independently from the anonymized output rows (row-level
definitions; KL by enumerating the whole Q x S domain), with and without suppression; and the
monotonicity claims checked over every node of a small lattice."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from ldiv_polars.core import FrequencySet
from ldiv_polars.models import KAnonymity
from ldiv_polars.search import METRICS, EncodedFrequencySet, Lattice, MetricSuite, anonymize
from tests.paper_tables import FIG1, FIG1_QI, fig1_hierarchies

QI = FIG1_QI
HS = fig1_hierarchies()

N = FIG1.height


def _row_level_metrics(out: pl.DataFrame, levels: dict[str, int]) -> dict[str, float]:
    """Metrics from the masked output (same row order as FIG1); '*' in every QI = suppressed."""
    supp = out.select(pl.all_horizontal([pl.col(q) == "*" for q in QI])).to_series().to_list()
    q = len(QI)
    prec = loss = ent = 0.0
    for col in QI:
        h = HS[col]
        lv = levels[col]
        leaves = h.leaves_under(lv)
        raw = FIG1[col].cast(pl.String).to_list()
        raw_count = {v: raw.count(v) for v in raw}
        gen = [h.mapping(lv)[v] for v in raw]
        gen_count = {g: gen.count(g) for g in gen}
        for i, v in enumerate(raw):
            if supp[i]:
                prec += 1
                loss += 1
                ent += math.log2(N / raw_count[v])
            else:
                prec += lv / (h.height - 1)
                loss += (leaves[gen[i]] - 1) / (len(h) - 1)
                ent += math.log2(gen_count[gen[i]] / raw_count[v])
    kept = out.filter(~pl.Series(supp))
    sizes = kept.group_by(QI).len()["len"].to_list()
    n_supp = sum(supp)
    disc = sum(s * s for s in sizes) + n_supp * N
    aecs = N / (len(sizes) + (1 if n_supp else 0))
    return {"precision": prec / (N * q), "loss": loss / (N * q), "entropy": ent,
            "discernibility": float(disc), "aecs": aecs,
            "height": float(sum(levels.values())), "kl": _kl_by_enumeration(out)}


def _kl_by_enumeration(out: pl.DataFrame) -> float:
    """KL(F || F*) over every point of dom(zip) x dom(age) x dom(nationality) x S, with F* the
    sum over published rows covering the point of 1 / (N * area(row))."""
    doms = {c: HS[c].values for c in QI}
    s_dom = sorted(set(FIG1["condition"].to_list()))
    cover = []  # per published row: (set per QI of covered raw values, s, area)
    for row in out.iter_rows(named=True):
        sets = []
        for c in QI:
            g = row[c]
            if g == "*":
                sets.append(set(doms[c]))
            else:
                h = HS[c]
                sets.append({raw for lv in range(h.height) for raw, gv in h.mapping(lv).items()
                             if gv == g})
        area = math.prod(len(s) for s in sets)
        cover.append((sets, row["condition"], area))
    emp = {}
    for row in FIG1.iter_rows(named=True):
        key = (*(str(row[c]) for c in QI), row["condition"])
        emp[key] = emp.get(key, 0) + 1
    kl = 0.0
    for point in itertools.product(*(doms[c] for c in QI), s_dom):
        f = emp.get(point, 0) / N
        if f == 0:
            continue
        fstar = sum(1 / (N * area) for sets, s, area in cover
                    if s == point[-1] and all(point[i] in sets[i] for i in range(len(QI))))
        kl += f * math.log(f / fstar)
    return kl


@pytest.mark.parametrize("suppression,expect_supp", [(0.0, 0), (1 / 3, 4)])
def test_metrics_match_row_level_definitions(suppression, expect_supp):
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], suppression=suppression,
                    metric="height")
    assert res.suppressed_rows == expect_supp
    ref = _row_level_metrics(res.output.collect(), res.levels)
    for name in METRICS:
        assert res.metrics[name] == pytest.approx(ref[name], rel=1e-9, abs=1e-12), name


def test_kl_is_zero_at_bottom_and_base_at_top():
    fs = FrequencySet.build(FIG1, QI, "condition").materialize()
    efs = EncodedFrequencySet(fs, HS)
    suite = MetricSuite(efs)
    assert suite.value("kl", efs.rollup((0, 0, 0))) == pytest.approx(0.0, abs=1e-12)
    # top: every QI suppressed -> F* = count(s) / (N * |dom|); KL = sum F ln(F N |dom| / n_s)
    top = suite.value("kl", efs.rollup((3, 2, 1)))
    dom = len(HS["zip"]) * len(HS["age"]) * len(HS["nationality"])
    n_s = FIG1["condition"].value_counts()
    ns = dict(zip(n_s["condition"].to_list(), n_s["count"].to_list()))
    expected = sum((1 / N) * math.log((1 / N) * N * dom / ns[s]) for s in FIG1["condition"])
    assert top == pytest.approx(expected)


def test_metrics_monotone_without_suppression_over_whole_lattice():
    fs = FrequencySet.build(FIG1, QI, "condition").materialize()
    efs = EncodedFrequencySet(fs, HS)
    suite = MetricSuite(efs)
    lat = Lattice([HS[q].height for q in QI])
    vals = {m: np.array([suite.value(m, efs.rollup(lat.levels(i))) for i in range(lat.size)])
            for m in METRICS}
    for i in range(lat.size):
        for j in lat.successors(i):
            for m in METRICS:
                assert vals[m][j] >= vals[m][i] - 1e-12, (m, lat.levels(i), lat.levels(j))
    # bounds from levels agree with the roll-up values
    for m in ("height", "precision", "loss", "entropy"):
        for i in range(lat.size):
            assert suite.bound_from_levels(m, lat.levels(i)) == pytest.approx(vals[m][i])


def test_suppression_makes_aecs_non_monotone_but_bound_holds():
    # with suppression, AECS can drop under generalization (fewer suppressed classes merge into
    # the all-* class) -- the search must not assume monotonicity; the bound never exceeds it
    fs = FrequencySet.build(FIG1, QI, "condition").materialize()
    efs = EncodedFrequencySet(fs, HS)
    suite = MetricSuite(efs)
    r = efs.rollup((0, 2, 1))
    supp = r.class_size < 4
    with_s = suite.value("aecs", r, supp)
    assert with_s == pytest.approx(12 / 3)  # two kept classes + the suppressed class
    assert suite.value("aecs", r) <= with_s
    assert suite.value("discernibility", r, supp) == 16 + 16 + 4 * 12
