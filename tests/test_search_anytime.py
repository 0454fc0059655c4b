"""The anytime search (issue 22): on lattices small enough for the exact strategies it finds
their optimum and proves it; with any budget its node passes (re-verified by the checker) and
its bound never exceeds the exact optimum's value."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.cli import main
from ldiv_polars.datasets.wide import synthesize_wide, wide_columns, wide_hierarchies
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import DistinctLDiversity, EntropyLDiversity, KAnonymity
from ldiv_polars.search import anonymize
from ldiv_polars.search.anytime import Budget
from ldiv_polars.search.metrics import METRICS
from ldiv_polars.search.tuning import tuned
from tests.test_search_property import tables

ADULT_QI = ["sex", "age", "race", "marital-status", "education", "native-country",
            "workclass", "occupation"]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _assert_proven_same(exact, any_) -> None:
    assert any_.strategy == "anytime"
    assert exact.found == any_.found
    if exact.found:
        assert _close(any_.value, exact.value)
        assert any_.gap == 0.0 and _close(any_.bound, exact.value)
        assert any_.verification.passed


@pytest.fixture(scope="module")
def adult(adult_dir: Path) -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    df = pl.read_csv(adult_dir / "adult.csv", separator=";", infer_schema=False)
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv", name=q)
          for q in [*ADULT_QI, "salary-class"]}
    return df, hs


@pytest.mark.parametrize(("metric", "suppression", "models"), [
    ("loss", 0.0, [KAnonymity(5)]),
    ("loss", 0.02, [KAnonymity(5)]),
    ("entropy", 0.02, [KAnonymity(10)]),
    ("discernibility", 0.01, [KAnonymity(5)]),
    ("precision", 0.02, [DistinctLDiversity(2)]),
])
def test_adult_8_qis_anytime_proves_the_exact_optimum(adult, metric, suppression, models):
    df, hs = adult
    sens = "occupation" if models[0].needs_sensitive else None
    qi = [q for q in ADULT_QI if q != sens]
    if sens:
        qi.append("salary-class")
    kw = dict(suppression=suppression, metric=metric)
    exact = anonymize(df, qi, sens, hs, models, **kw)
    any_ = anonymize(df, qi, sens, hs, models, strategy="anytime", **kw)
    assert exact.strategy in ("flash", "exhaustive")
    _assert_proven_same(exact, any_)


def test_adult_9_qis_anytime_proves_the_exact_optimum(adult):
    df, hs = adult
    qi = [*ADULT_QI, "salary-class"]
    kw = dict(suppression=0.02, metric="loss")
    exact = anonymize(df, qi, None, hs, [KAnonymity(5)], strategy="bounded", **kw)
    _assert_proven_same(exact, anonymize(df, qi, None, hs, [KAnonymity(5)],
                                         strategy="anytime", **kw))


def _three_levels(h: Hierarchy) -> Hierarchy:
    """The hierarchy with its raw level, its second-to-last and ``*`` (a smaller lattice)."""
    rows = h.frame.rows()
    return Hierarchy([[r[0], r[-2], r[-1]] for r in rows], name=h.name)


def test_synthetic_12_qis_anytime_proves_the_exact_optimum():
    qi = wide_columns(12)
    df = synthesize_wide(3000, qis=12, seed=5)
    hs = {q: _three_levels(h) for q, h in wide_hierarchies(12).items()}
    kw = dict(suppression=0.05, metric="loss")
    exact = anonymize(df, qi, None, hs, [KAnonymity(3)], **kw)
    assert exact.lattice_size == 3 ** 12 and exact.strategy == "flash"
    _assert_proven_same(exact, anonymize(df, qi, None, hs, [KAnonymity(3)],
                                         strategy="anytime", **kw))


@settings(max_examples=60, deadline=None)
@given(tables(), st.sampled_from(["k", "distinct", "entropy"]), st.integers(2, 3),
       st.sampled_from([0.0, 0.1, 0.3]), st.sampled_from(METRICS),
       st.one_of(st.none(), st.integers(1, 12)))
def test_anytime_release_is_valid_and_its_bound_sound(table, kind, param, suppression, metric,
                                                      nodes):
    assert_sound_against_exact(table, kind, param, suppression, metric, nodes)


def assert_sound_against_exact(table, kind: str, param: int, suppression: float, metric: str,
                               nodes: int | None):
    """The anytime search on a random table (``tables()``) against the exact strategy: its
    release passes, its value and bound bracket the optimum, and without a budget it proves
    it. Returns the anytime result."""
    df, hier_rows = table
    hs = {q: Hierarchy(rows, name=q) for q, rows in hier_rows.items()}
    qi = list(hier_rows)
    model = {"k": KAnonymity(param), "distinct": DistinctLDiversity(param),
             "entropy": EntropyLDiversity(float(param))}[kind]
    sens = None if kind == "k" else "s"
    kw = dict(suppression=suppression, metric=metric)
    exact = anonymize(df, qi, sens, hs, [model], **kw)
    res = anonymize(df, qi, sens, hs, [model], strategy="anytime",
                    budget=Budget(nodes=nodes) if nodes else None, **kw)
    if not exact.found:
        assert not res.found
        return res
    if res.found:
        assert res.verification is not None and res.verification.passed
        assert res.value >= exact.value or _close(res.value, exact.value)
    if res.bound is not None:
        assert res.bound <= exact.value or _close(res.bound, exact.value)
    else:
        assert metric == "kl" or not res.found
    if nodes is None:  # no budget: the optimum, proven
        assert res.found and _close(res.value, exact.value) and res.gap == 0.0
    return res
    if res.gap is not None and res.found:
        assert 0.0 <= res.gap <= 1.0


def test_auto_picks_anytime_above_the_lattice_threshold():
    qi = wide_columns(4)
    df = synthesize_wide(500, qis=4, seed=1)
    hs = wide_hierarchies(4)
    with tuned(anytime_min_nodes=10):
        res = anonymize(df, qi, None, hs, [KAnonymity(2)], metric="loss", budget=5.0)
    exact = anonymize(df, qi, None, hs, [KAnonymity(2)], metric="loss")
    assert exact.strategy == "flash"
    _assert_proven_same(exact, res)


def test_budget_is_validated_before_work():
    df = pl.DataFrame({"a": ["x", "y"]})
    hs = {"a": Hierarchy([["x", "*"], ["y", "*"]], name="a")}
    for bad in (0, -1.0, "10", True):
        with pytest.raises(InvalidParameterError, match="budget"):
            anonymize(df, "a", None, hs, [KAnonymity(1)], strategy="anytime", budget=bad)
    with pytest.raises(InvalidParameterError, match="budget nodes"):
        Budget(nodes=0)


def test_wide_generator_is_deterministic_and_chunk_independent(tmp_path):
    from ldiv_polars.datasets.wide import write_wide
    a = synthesize_wide(2500, qis=15, seed=9, chunk_rows=1000)
    path = write_wide(tmp_path / "w.parquet", 2500, qis=15, seed=9, chunk_rows=1000)
    assert pl.read_parquet(path).equals(a)
    assert not synthesize_wide(2500, qis=15, seed=10, chunk_rows=1000).equals(a)
    # every value is covered by its column's hierarchy, and columns are dependent
    hs = wide_hierarchies(15)
    for q in wide_columns(15):
        assert set(a.get_column(q).unique()) <= set(hs[q].mapping(1))
    ct = a.group_by("q00", "q01").len()
    expected = (a.group_by("q00").len().rename({"len": "a"})
                .join(a.group_by("q01").len().rename({"len": "b"}), how="cross")
                .with_columns(e=pl.col("a") * pl.col("b") / a.height))
    chi2 = (expected.join(ct, on=["q00", "q01"], how="left").fill_null(0)
            .select(((pl.col("len") - pl.col("e")) ** 2 / pl.col("e")).sum()).item())
    dof = (a.get_column("q00").n_unique() - 1) * (a.get_column("q01").n_unique() - 1)
    assert chi2 > dof + 10 * math.sqrt(2 * dof)  # far beyond independence
    with pytest.raises(InvalidParameterError):
        synthesize_wide(10, qis=51)


def test_cli_budget_json_gives_bound_and_gap(tmp_path, capsys):
    df = synthesize_wide(800, qis=6, seed=2)
    data = tmp_path / "w.csv"
    df.write_csv(data)
    hdir = tmp_path / "h"
    hdir.mkdir()
    for q, h in wide_hierarchies(6).items():
        h.to_csv(hdir / f"{q}.csv")
    out = tmp_path / "o.parquet"
    rc = main(["anonymize", str(data), str(out), "--qi",
               ",".join(wide_columns(6)), "--hierarchies", str(hdir), "--k", "3",
               "--metric", "loss", "--strategy", "anytime", "--budget", "30", "--json"])
    assert rc == 0
    got = json.loads(capsys.readouterr().out)
    assert got["strategy"] == "anytime" and got["gap"] == 0.0
    assert math.isclose(got["bound"], got["optimum"]["value"], rel_tol=1e-9)
    assert got["verified"] is True
    rc = main(["anonymize", str(data), str(tmp_path / "p.parquet"), "--qi", "q00",
               "--hierarchies", str(hdir), "--k", "3", "--budget", "-1"])
    assert rc == 2 and "budget" in capsys.readouterr().err


def test_namespace_passes_the_budget():
    import ldiv_polars  # noqa: F401  (registers .ldiv)
    df = pl.DataFrame({"a": ["x", "y", "x", "y", "x"]})
    hs = {"a": Hierarchy([["x", "*"], ["y", "*"]], name="a")}
    res = df.ldiv.anonymize("a", None, hs, KAnonymity(3), metric="height",
                            strategy="anytime", budget=Budget(nodes=50))
    assert res.strategy == "anytime" and res.levels == {"a": 1} and res.gap == 0.0
    with pytest.raises(InvalidParameterError, match="budget"):
        df.ldiv.anonymize("a", None, hs, KAnonymity(3), strategy="anytime", budget=-2)
