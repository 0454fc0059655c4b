"""Generalization + cell suppression and local recoding: node choice against an exhaustive
search, outputs checked by the library's checker and read back row by row."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.local.combined import generalize_and_suppress, node_table
from ldiv_polars.local.greedy import greedy_masks
from ldiv_polars.local.keys import KeyTable
from ldiv_polars.local.plan import LEVEL_PREFIX, SUPPRESSED
from ldiv_polars.local.recode import local_recode
from ldiv_polars.local.utility import CellCosts
from ldiv_polars.search.lattice import Lattice

AGE = lp.Hierarchy([[str(a), f"{a // 10 * 10}s", "*"] for a in range(20, 60)], name="age")
ZIP = lp.Hierarchy([[z, z[:2] + "*", "*"] for z in ("130", "131", "140", "141")], name="zip")


@st.composite
def tables(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(6, 40))
    ages = draw(st.lists(st.integers(20, 59), min_size=n, max_size=n))
    zips = draw(st.lists(st.sampled_from(["130", "131", "140", "141"]), min_size=n, max_size=n))
    s = draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    return pl.DataFrame({"age": [str(a) for a in ages], "zip": zips, "s": s})


@settings(max_examples=25, deadline=None)
@given(df=tables(), k=st.integers(2, 4))
def test_combined_node_is_the_least_loss_over_every_node(df: pl.DataFrame, k: int) -> None:
    hs = {"age": AGE, "zip": ZIP}
    models = [lp.KAnonymity(k)]
    if df.height < k:
        return
    res = generalize_and_suppress(df, ["age", "zip"], "s", hs, models, metric="loss")
    # every node, exhaustively: generalize, greedy cells, total loss per cell
    table = KeyTable.build(df, ["age", "zip"], "s")
    costs = CellCosts(table, hs)
    best = np.inf
    for node in range(Lattice([3, 3]).size):
        levels = Lattice([3, 3]).levels(node)
        gen, key_map = node_table(table, costs.raw, costs.level_maps, [AGE, ZIP], levels)
        masks, _ = greedy_masks(gen, models, np.ones(2), "value")
        supp = ((masks[key_map][:, None] >> np.arange(2)) & 1).astype(bool)
        lv = np.where(supp, SUPPRESSED, np.array(levels)[None, :])
        best = min(best, float((costs.costs("loss", lv) * table.n[:, None]).sum())
                   / (table.total * 2))
    assert res.details["value"] == pytest.approx(best)
    assert res.utility["metrics"]["loss"] == pytest.approx(best)
    out = res.output.collect()
    assert out.height == df.height
    assert lp.check(out, ["age", "zip"], "s", models, nulls="value").passed


@settings(max_examples=25, deadline=None)
@given(df=tables(), k=st.integers(2, 4), ell=st.integers(1, 2))
def test_local_recoding_output_passes_and_reads_back(df: pl.DataFrame, k: int, ell: int) -> None:
    hs = {"age": AGE, "zip": ZIP}
    models = [lp.KAnonymity(k), lp.DistinctLDiversity(ell)]
    try:
        res = local_recode(df, ["age", "zip"], "s", hs, models, suppression=0.2)
    except lp.local.InfeasibleError:  # the whole table, as one class, fails
        whole = df.with_columns(pl.lit(0).alias("all"))
        assert not lp.check(whole, ["all"], "s", models).passed
        return
    out = res.output.collect()
    assert out.height == df.height
    assert lp.check(out.select("age", "zip", "s"), ["age", "zip"], "s", models,
                    nulls="value").passed
    # each released value is the hierarchy's label at the record's level (null: suppressed)
    for q in hs:
        lv = out.get_column(f"{LEVEL_PREFIX}{q}")
        assert (lv.is_null() == out.get_column(q).is_null()).all()
    assert out.get_column("s").sort().to_list() == df.get_column("s").sort().to_list()
    touched = out.filter(pl.any_horizontal(pl.col(f"{LEVEL_PREFIX}{q}").fill_null(1) != 0
                                           for q in hs)).height
    assert touched == res.records_touched
    assert res.verification is not None and res.verification.passed


def test_local_recoding_levels_match_labels() -> None:
    df = pl.DataFrame({"age": ["21", "22", "35", "36", "37", "51"],
                       "zip": ["130", "130", "140", "141", "141", "131"],
                       "s": list("abcabc")})
    res = local_recode(df, ["age", "zip"], "s", {"age": AGE, "zip": ZIP}, lp.KAnonymity(2))
    out = res.output.collect()
    for row in out.iter_rows(named=True):
        for q, h in (("age", AGE), ("zip", ZIP)):
            lv = row[f"{LEVEL_PREFIX}{q}"]
            if lv is None:
                assert row[q] is None
            else:
                assert row[q] in set(h.column(lv).to_list())
    assert lp.check(out, ["age", "zip"], "s", lp.KAnonymity(2), nulls="value").passed


def test_adult_methods_verified(adult_csv, adult_dir) -> None:
    qi = ["sex", "age", "race", "marital-status", "education"]
    hs = {q: lp.Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in qi}
    models = [lp.KAnonymity(5), lp.EntropyLDiversity(2)]
    full = lp.anonymize(adult_csv, qi, "occupation", hs, models, suppression=0.05,
                        metric="loss")
    cells = lp.suppress_cells(adult_csv, qi, "occupation", models)
    comb = lp.generalize_and_suppress(adult_csv, qi, "occupation", hs, models)
    loc = lp.local_recode(adult_csv, qi, "occupation", hs, models)
    for r in (cells, comb, loc):
        assert r.verification.passed and r.utility["rows"] == 30162
    # less information lost than full-domain generalization with record suppression
    assert comb.utility["metrics"]["loss"] < full.metrics["loss"]
    assert loc.utility["metrics"]["loss"] < full.metrics["loss"]


def test_exact_nodes_share_one_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """``generalize_and_suppress(method="exact")`` passes the MILP of each node a share of
    one budget: on a fake clock that each solve advances by the whole limit it was given, the
    limits passed add up to at most ``time_limit``, every node visited gets one, and the
    result is the greedy's node choice (the fake returns the greedy masks)."""
    from ldiv_polars.local import combined
    from ldiv_polars.local.milp import ExactOutcome

    rng = np.random.default_rng(3)
    df = pl.DataFrame({"age": [str(a) for a in rng.integers(20, 60, 60)],
                       "zip": rng.choice(["130", "131", "140", "141"], 60).tolist(),
                       "s": rng.choice(list("abcd"), 60).tolist()})
    now = [0.0]
    limits: list[float] = []

    def fake_exact(gen, models, weights, semantics, limit, *, incumbent):  # type: ignore[no-untyped-def]
        limits.append(limit)
        now[0] += limit  # the solve spends all it was given
        return ExactOutcome(incumbent, "time_limit", None, None, None, limit, 0, 0, "")

    monkeypatch.setattr(combined, "exact_masks", fake_exact)
    table = KeyTable.build(df, ["age", "zip"], "s")
    costs = CellCosts(table, {"age": AGE, "zip": ZIP})
    args = (table, costs, Lattice([3, 3]), [AGE, ZIP], [lp.KAnonymity(4)], np.ones(2), "value")
    (g_total, _, g_node), g_tried = combined._best_node(*args, "greedy", 60.0, "loss")
    (e_total, _, e_node), e_tried = combined._best_node(*args, "exact", 60.0, "loss",
                                                        clock=lambda: now[0])
    assert g_tried > 1  # several nodes share the budget
    assert len(limits) == e_tried == g_tried
    assert sum(limits) <= 60.0 + 1e-9
    assert all(x > 0 for x in limits)
    assert (e_total, e_node) == (g_total, g_node)
    # the old behaviour (each node the full limit) would have passed g_tried * 60 s
    assert sum(limits) < g_tried * 60.0
