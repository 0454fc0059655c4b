"""Risk thresholds as privacy models (issue 19 item 5): exact boundaries in rational
arithmetic, ARX's k-map k' against ARX's own loop, and the lattice search against a brute force
that tries every set of classes to suppress (not only the smallest ones the library tries)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars import check
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import AverageRisk, KAnonymity, KMap, PopulationUniques, SampleUniques
from ldiv_polars.risk import population_uniqueness
from ldiv_polars.search import anonymize
from tests.lattice_brute import assert_search_matches, classes_at, nodes, random_qi


def _table(sizes: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"q": [str(i) for i, f in enumerate(sizes) for _ in range(f)]})


@pytest.mark.parametrize("sizes", [[3], [1, 2], [1, 1, 4, 4], [2, 3, 5, 7], [1] * 3 + [9]])
def test_average_risk_boundary_is_exact(sizes):
    exact = Fraction(len(sizes), sum(sizes))
    below = math.nextafter(float(exact), 0.0)
    above = math.nextafter(float(exact), 1.0)
    for r in (below, float(exact), above):
        got = check(_table(sizes), ["q"], None, [AverageRisk(r)]).models[0]
        assert got.passed == (exact <= Fraction(r))
        assert got.achieved == pytest.approx(float(exact))


@pytest.mark.parametrize("sizes", [[1, 2], [1, 1, 4, 4], [1, 1, 1, 7], [2, 2]])
def test_sample_uniques_boundary_is_exact(sizes):
    exact = Fraction(sizes.count(1), sum(sizes))
    for x in (math.nextafter(float(exact), 0.0), float(exact), math.nextafter(float(exact), 1)):
        if x < 0:
            continue
        got = check(_table(sizes), ["q"], None, [SampleUniques(x)]).models[0]
        assert got.passed == (exact <= Fraction(x))


def test_failing_table_model_reports_the_classes_to_suppress():
    # 10 rows in classes 1,1,4,4: average risk 0.4; <= 0.25 needs both singletons gone (2/8)
    got = check(_table([1, 1, 4, 4]), ["q"], None, [AverageRisk(0.25)]).models[0]
    assert (got.passed, got.failing_classes, got.failing_rows) == (False, 2, 2)


def test_population_uniques_is_the_estimator():
    sizes = [1] * 60 + [2] * 20 + [3] * 10 + [5] * 4
    est = population_uniqueness(np.array(sizes), population_size=10_000, model="zayatz")
    got = check(_table(sizes), ["q"], None,
                [PopulationUniques(est.fraction, 10_000, "zayatz")]).models[0]
    assert got.passed and got.achieved == est.fraction
    assert not check(_table(sizes), ["q"], None, [PopulationUniques(
        math.nextafter(est.fraction, 0), 10_000, "zayatz")]).passed


def _arx_k_poisson(k: int, pi: float, alpha: float, truncated: bool) -> int:
    """ARX's KMap.calculateKPoisson / calculateKZeroPoisson loops, transcribed."""
    from scipy.stats import poisson

    lam = pi * k
    if not truncated:
        counter, value = 0, 0.0
        while value < 1 - alpha:
            value = poisson.cdf(counter, lam)
            counter += 1
        return counter + 1
    v2 = 1 - poisson.pmf(0, lam)
    counter, value = 1, 0.0
    while value < 1 - alpha:
        value += poisson.pmf(counter, lam) / v2
        counter += 1
    return counter


@pytest.mark.parametrize("estimator", ["poisson", "zero_truncated_poisson"])
@pytest.mark.parametrize("k,n,pop,alpha", [(5, 1000, 100_000, 0.01), (10, 500, 1000, 0.05),
                                           (3, 300, 3000, 0.1), (20, 50_000, 60_000, 0.01)])
def test_k_map_derived_k_is_arx(estimator, k, n, pop, alpha):
    m = KMap(k, pop, estimator=estimator, significance=alpha).for_rows(n)
    arx = _arx_k_poisson(k, n / pop, alpha, estimator != "poisson")
    assert m.derived_k == max(1, min(k, n, arx))


def test_k_map_is_k_prime_anonymity_in_check():
    df = _table([2, 3, 4])
    m = KMap(5, 90, significance=0.01)  # pi = 0.1, lambda 0.5 -> k' = min(5, 9, arx)
    kp = m.for_rows(9).derived_k
    got = check(df, ["q"], None, [m]).models[0]
    assert got.passed == (2 >= kp)
    assert check(df, ["q"], None, [KAnonymity(kp)]).passed == got.passed


def test_bad_parameters_are_typed_errors():
    for bad in (lambda: AverageRisk(1.5), lambda: SampleUniques(-0.1),
                lambda: PopulationUniques(0.1, 10, "nope"), lambda: KMap(3, 10, estimator="x"),
                lambda: KMap(3, "atlantis"), lambda: KMap(3, 10).derived_k):
        with pytest.raises(InvalidParameterError):
            bad()


# --- the search against a brute force -------------------------------------------------------


@st.composite
def tables(draw):
    n_qi = draw(st.integers(1, 2))
    rows = draw(st.integers(3, 14))
    cols, hier = {}, {}
    for i in range(n_qi):
        _, hier[f"q{i}"], cols[f"q{i}"] = random_qi(draw, st, i, rows)
    return pl.DataFrame(cols), hier


def _holds(name: str, x: Fraction, sizes: list[int]) -> bool:
    n = sum(sizes)
    if n == 0:
        return True
    value = Fraction(len(sizes), n) if name == "avg" else Fraction(sizes.count(1), n)
    return value <= x


def _node_passes(name, x, kmin, sizes, limit):
    """Some set of classes, holding every class under ``kmin`` and at most ``limit`` rows,
    leaves a table meeting the threshold (every subset tried)."""
    forced = [i for i, f in enumerate(sizes) if f < kmin]
    rest = [i for i, f in enumerate(sizes) if f >= kmin]
    base = sum(sizes[i] for i in forced)
    if base > limit:
        return False
    for r in range(len(rest) + 1):
        for extra in itertools.combinations(rest, r):
            if base + sum(sizes[i] for i in extra) > limit:
                continue
            drop = set(forced) | set(extra)
            if _holds(name, x, [f for i, f in enumerate(sizes) if i not in drop]):
                return True
    return False


@settings(max_examples=40, deadline=None)
@given(tables(), st.sampled_from(["avg", "uniq"]), st.sampled_from([0.0, 0.2, 0.34, 0.5]),
       st.sampled_from([0.0, 0.15, 0.3]), st.sampled_from([1, 2]))
def test_search_equals_brute_force(data, name, x, suppression, kmin):
    df, hier = data
    qi = list(hier)
    limit = int(math.floor(suppression * df.height + 1e-9))
    model = AverageRisk(x) if name == "avg" else SampleUniques(x)
    models = [model] + ([KAnonymity(kmin)] if kmin > 1 else [])
    good = [levels for levels in nodes(hier) if _node_passes(
        name, Fraction(x), kmin, list(classes_at(df, hier, levels).values()), limit)]
    res = anonymize(df, qi, None, {q: Hierarchy(r) for q, r in hier.items()}, models,
                    suppression=suppression, metric="height")
    assert_search_matches(res, qi, good, limit)


# --- the CLI -----------------------------------------------------------------------------------


def _cli(*args):
    import subprocess
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    ldiv = Path(sys.executable).parent / "ldiv"
    if not ldiv.exists():
        pytest.skip(f"the installed `ldiv` script is not next to {sys.executable}")
    p = subprocess.run([str(ldiv), *map(str, args)], capture_output=True, text=True,
                       timeout=300)
    return SimpleNamespace(exit_code=p.returncode, stdout=p.stdout, output=p.stdout + p.stderr)


def test_cli_check_risk_thresholds(tmp_path):
    import json

    path = tmp_path / "t.csv"
    _table([1, 1, 4, 4]).with_columns(s=pl.lit("x")).write_csv(path)
    ok = _cli("check", path, "--qi", "q", "--sensitive", "s", "--average-risk", 0.4,
              "--sample-uniques", 0.2, "--json")
    assert ok.exit_code == 0, ok.output
    verdicts = {v["model"]: v for v in json.loads(ok.stdout)["models"]}
    assert verdicts["average_risk"]["achieved"] == 0.4 and verdicts["sample_uniques"]["passed"]
    bad = _cli("check", path, "--qi", "q", "--sensitive", "s", "--sample-uniques", 0.1)
    assert bad.exit_code == 1
    for flags in (["--k-map", 3], ["--population-uniques", 0.1], ["--significance", 0.1],
                  ["--population-model", "snb"], ["--average-risk", 2]):
        r = _cli("check", path, "--qi", "q", "--sensitive", "s", *flags)
        assert r.exit_code == 2 and "Traceback" not in r.output


def test_cli_anonymize_average_risk_with_suppression(tmp_path):
    import json

    data = tmp_path / "t.csv"
    pl.DataFrame({"age": ["21", "22", "23", "31", "32", "33", "41", "45", "46", "47"],
                  "s": ["x"] * 10}).write_csv(data)
    hdir = tmp_path / "h"
    hdir.mkdir()
    (hdir / "age.csv").write_text("".join(f"{a};{a[0]}*;*\n" for a in
                                          ["21", "22", "23", "31", "32", "33", "41", "45",
                                           "46", "47"]))
    out = tmp_path / "out.csv"
    r = _cli("anonymize", data, out, "--qi", "age", "--hierarchies", hdir, "--average-risk",
             0.35, "--json")
    assert r.exit_code == 0, r.output
    levels = json.loads(r.stdout)["optimum"]["levels"]
    assert levels == {"age": 1}  # 3 classes of 10 rows: 0.3 <= 0.35 (raw: 1.0)
    got = check(pl.read_csv(out, infer_schema=False), ["age"], None, [AverageRisk(0.35)])
    assert got.passed


# --- DuckDB: the engine's check and the SQL macros ---------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=0, max_size=12),
       st.sampled_from(["avg", "uniq"]), st.integers(0, 6))
def test_sql_macros_equal_the_models(sizes, name, shift):
    """ldiv_average_risk / ldiv_sample_unique_share equal the models, also on the exact boundary
    (the threshold the table's own share, and the doubles either side)."""
    import duckdb

    from ldiv_polars.duckdb import install

    df = _table(sizes) if sizes else pl.DataFrame({"q": []}, schema={"q": pl.String})
    n = sum(sizes)
    share = Fraction(len(sizes) if name == "avg" else sizes.count(1), n) if n else Fraction(0)
    x = [math.nextafter(float(share), 0.0), float(share), math.nextafter(float(share), 1.0),
         min(1.0, shift / 6)][shift % 4]
    x = min(max(x, 0.0), 1.0)
    con = duckdb.connect()
    install(con)
    con.register("t", df.to_arrow())
    macro = "ldiv_average_risk" if name == "avg" else "ldiv_sample_unique_share"
    passed, achieved = con.execute(f"SELECT passed, achieved FROM {macro}('t', ['q'], ?)",
                                   [x]).fetchone()
    model = AverageRisk(x) if name == "avg" else SampleUniques(x)
    got = check(df, ["q"], None, [model]).models[0]
    assert passed == got.passed == (share <= Fraction(x))
    assert achieved == got.achieved


def test_duckdb_engine_checks_the_thresholds_like_polars():
    from ldiv_polars.duckdb import check as duck_check

    df = _table([1, 1, 2, 3, 5, 8]).with_columns(s=pl.lit("x"))
    models = [AverageRisk(0.3), SampleUniques(0.1), PopulationUniques(0.5, 1000),
              KMap(3, 100), KAnonymity(2)]
    polars_side = check(df, ["q"], "s", models).models
    duck_side = duck_check(df, ["q"], "s", models)
    for p, d in zip(polars_side, duck_side):
        assert (p.key, p.passed, p.failing_classes, p.failing_rows) == (
            d["key"], d["passed"], d["failing_classes"], d["failing_rows"])
        assert p.achieved == pytest.approx(d["achieved"])


@settings(max_examples=25, deadline=None)
@given(tables(), st.sampled_from([0.02, 0.1, 0.3]), st.sampled_from(["pitman", "zayatz",
                                                                     "dankar"]))
def test_population_uniques_search_equals_brute_force(data, x, model_name):
    """Not monotone: the search is exhaustive, and its minimal nodes and optimum equal the
    nodes whose class sizes the estimator itself puts at or below x (no suppression)."""
    df, hier = data
    qi = list(hier)
    pop = 10 * df.height
    model = PopulationUniques(x, pop, model_name)
    good = []
    for levels in nodes(hier):
        counts = classes_at(df, hier, levels)
        est = population_uniqueness(np.array(list(counts.values())), population_size=pop,
                                    model=model_name).fraction
        if est is not None and est <= x:
            good.append(levels)
    res = anonymize(df, qi, None, {q: Hierarchy(r) for q, r in hier.items()}, [model],
                    metric="height")
    assert res.monotone is False
    assert_search_matches(res, qi, good, 0)


# --- Mondrian ------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=60), st.sampled_from(["avg", "uniq"]),
       st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]), st.booleans())
def test_mondrian_meets_the_thresholds(ages, name, x, relaxed):
    """The release holds the threshold (exact), every group passes the per-class model, and a
    threshold the unconstrained partition already meets changes nothing."""
    from ldiv_polars.partition.mondrian import mondrian

    df = pl.DataFrame({"age": ages, "s": ["x"] * len(ages)})
    model = AverageRisk(x) if name == "avg" else SampleUniques(x)
    free = mondrian(df, ["age"], "s", [KAnonymity(1)], relaxed=relaxed)
    free_sizes = free.ranges["size"].to_list()
    if not _holds(name, Fraction(x), [len(ages)]):
        with pytest.raises(Exception, match="no partition"):
            mondrian(df, ["age"], "s", [model], relaxed=relaxed)
        return
    res = mondrian(df, ["age"], "s", [model], relaxed=relaxed)
    sizes = res.ranges["size"].to_list()
    assert sum(sizes) == len(ages) and _holds(name, Fraction(x), sizes)
    if _holds(name, Fraction(x), free_sizes):
        assert sorted(sizes) == sorted(free_sizes)


def test_cli_mondrian_average_risk(tmp_path):
    import json

    data = tmp_path / "t.csv"
    pl.DataFrame({"age": list(range(40)), "s": ["x"] * 40}).write_csv(data)
    r = _cli("mondrian", data, tmp_path / "o.csv", "--qi", "age", "--sensitive", "s", "--k",
             1, "--average-risk", 0.1, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["groups"] <= 4  # 4 groups of 40 rows: 0.1


def test_pitman_start_with_a_vanishing_denominator_is_no_crash():
    """Sizes 6, 1, 1 make ARX's starting point divide by zero (2 c1 u + c1 c = n c): the
    estimator goes on from its fallback starts (an estimate or None with a reason)."""
    est = population_uniqueness(np.array([6, 1, 1]), population_size=80, model="pitman")
    assert (est.fraction is None) == (est.reason is not None)


@settings(max_examples=20, deadline=None)
@given(tables(), st.sampled_from(["avg", "uniq"]), st.sampled_from([0.0, 0.2, 0.35]),
       st.sampled_from([0.0, 0.1, 0.3]), st.sampled_from(["aecs", "discernibility", "loss"]))
def test_every_strategy_finds_the_exhaustive_optimum(data, name, x, suppression, metric):
    """Flash (pruning with the thresholds' monotonicity), the bounded and the anytime search
    reach the optimum of the exhaustive search, with suppression and utility metrics."""
    df, hier = data
    qi = list(hier)
    hs = {q: Hierarchy(r) for q, r in hier.items()}
    model = AverageRisk(x) if name == "avg" else SampleUniques(x)
    ref = anonymize(df, qi, None, hs, [model], suppression=suppression, metric=metric,
                    strategy="exhaustive")
    for strategy in ("flash", "bounded", "anytime"):
        got = anonymize(df, qi, None, hs, [model], suppression=suppression, metric=metric,
                        strategy=strategy)
        assert got.found == ref.found
        if ref.found:
            assert math.isclose(got.value, ref.value, rel_tol=1e-9), strategy


def test_cli_check_json_is_the_same_on_both_engines(tmp_path):
    """``ldiv check --json`` prints one document whatever the engine: the table-level models'
    verdicts carried ``table_level`` on Polars only."""
    import json

    path = tmp_path / "t.csv"
    _table([1, 1, 2, 3, 5, 8]).with_columns(s=pl.lit("x")).write_csv(path)
    flags = ["check", path, "--qi", "q", "--sensitive", "s", "--k", 2, "--average-risk", 0.3,
             "--sample-uniques", 0.1, "--population", 1000, "--population-uniques", 0.5,
             "--json"]
    got = {e: _cli(*flags, "--engine", e) for e in ("polars", "duckdb")}
    assert {r.exit_code for r in got.values()} == {1}
    polars_side, duck_side = (json.loads(got[e].stdout) for e in ("polars", "duckdb"))
    assert polars_side == duck_side
    assert [m.get("table_level", False) for m in duck_side["models"]] == [
        False, True, True, True]
