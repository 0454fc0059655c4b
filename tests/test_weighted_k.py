"""Weighted k-anonymity (k-anonymity on F_k, the class's sum of sampling weights): the model,
the weighted frequency set of every engine, ``check(weight=)`` and ``ldiv check --weight``.

Expectations are independent: sdcMicro's ``freqCalc`` F_k (the case of
tests/test_risk_weights.py, copied from sdcMicro's tests) and a brute force with Python sums on
small random tables (weights are multiples of 1/4, so every float sum is exact whatever the
order of the additions).
"""

from __future__ import annotations

import json
from collections import defaultdict

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.core.engines.base import engine_for
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models import KAnonymity, WeightedKAnonymity

from .test_risk_weights import FREQCALC, r_frame

ENGINES = ["polars", "duckdb"]


def brute(rows: list[tuple], weights: list[float], k: int) -> tuple[float | None, int, int]:
    """(smallest F_k, failing classes, failing rows) by Python sums over the rows."""
    fk: dict[tuple, float] = defaultdict(float)
    size: dict[tuple, int] = defaultdict(int)
    for key, w in zip(rows, weights):
        fk[key] += w
        size[key] += 1
    failing = [key for key in fk if fk[key] < k]
    return (min(fk.values()) if fk else None, len(failing), sum(size[c] for c in failing))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("k", [17, 18, 101, 124])
def test_sdcmicro_freqcalc_fk(engine: str, k: int) -> None:
    values, nrow, ncol, weights, _, expect_Fk, _, _, _ = FREQCALC[0]  # complete, weighted
    names = [chr(ord("A") + i) for i in range(ncol)]
    df = r_frame(values, nrow, names, weights)
    r = lp.check(df, names, None, WeightedKAnonymity(k), weight="weight", engine=engine)
    keys = list(zip(*[df[n].to_list() for n in names]))
    per_class = dict(zip(keys, expect_Fk))  # sdcMicro's F_k of each record's class
    failing = {c for c, fk in per_class.items() if fk < k}
    m = r.models[0]
    assert m.achieved == min(expect_Fk)
    assert m.passed is (not failing)
    assert m.failing_classes == len(failing)
    assert m.failing_rows == sum(1 for c in keys if c in failing)


tables = st.integers(1, 25).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from("ab")), min_size=n, max_size=n),
    st.lists(st.integers(1, 40).map(lambda q: q / 4), min_size=n, max_size=n),
    st.lists(st.sampled_from("xyz"), min_size=n, max_size=n),
    st.integers(1, 12)))


@settings(max_examples=40, deadline=None)
@given(tables)
def test_check_equals_brute_force(case: tuple) -> None:
    keys, weights, sens, k = case
    df = pl.DataFrame({"a": [x for x, _ in keys], "b": [y for _, y in keys], "s": sens,
                       "w": weights})
    expect = brute(keys, weights, k)
    for engine in ENGINES:
        r = lp.check(df, ["a", "b"], "s", [WeightedKAnonymity(k), KAnonymity(1)],
                     weight="w", engine=engine)
        m = r["weighted_k_anonymity"]
        assert (m.achieved, m.failing_classes, m.failing_rows) == expect, engine
        assert m.passed is (expect[1] == 0)
        assert r["k_anonymity"].achieved == min(sum(1 for c in keys if c == key)
                                               for key in keys)  # counts still judged


def test_classes_and_violations_read_weights() -> None:
    df = pl.DataFrame({"q": [1, 1, 2], "w": [2.5, 2.5, 9.0]})
    m = WeightedKAnonymity(6)
    out = lp.classes(df, "q", None, m, weight="w").sort("q").collect()
    assert out[m.fk_col].to_list() == [5.0, 9.0]
    assert out["pass_weighted_k_anonymity_6"].to_list() == [False, True]
    bad = lp.violations(df, "q", None, m, weight="w").collect()
    assert bad["q"].to_list() == [1]
    assert bad["reasons"].to_list() == [["estimated population size F_k 5.0 < k=6"]]


@pytest.mark.parametrize("engine", ENGINES)
def test_weighted_frequency_set_per_engine(engine: str, tmp_path) -> None:
    path = tmp_path / "t.parquet"
    pl.DataFrame({"q": [1, 1, 2], "s": ["a", "a", "b"], "w": [1, 2, 4]}).write_parquet(path)
    fs = engine_for(str(path), engine).plan_frequency_set(str(path), "q", "s", weight="w")
    assert fs.frame.sort("q").collect().rows() == [(1, "a", 2, 3.0), (2, "b", 1, 4.0)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bad", [None, -1.0, 0.0, float("nan"), float("inf")])
def test_bad_weights_are_typed_errors(engine: str, bad: float | None) -> None:
    df = pl.DataFrame({"q": [1, 1, 2], "w": [1.0, bad, 3.0]}, schema={"q": pl.Int64,
                                                                      "w": pl.Float64})
    with pytest.raises(InvalidParameterError, match="1 null, non-finite or non-positive"):
        lp.check(df, "q", None, WeightedKAnonymity(2), weight="w", engine=engine)


@pytest.mark.parametrize("weight,match", [("nope", "not in the data"),
                                          ("q", "also a quasi-identifier"),
                                          ("t", "must be numeric")])
def test_weight_column_checked_before_reading(weight: str, match: str) -> None:
    df = pl.DataFrame({"q": [1], "t": ["x"]})
    with pytest.raises(InvalidParameterError, match=match):
        lp.check(df, "q", None, WeightedKAnonymity(1), weight=weight)


def test_model_without_weight_is_a_typed_error() -> None:
    df = pl.DataFrame({"q": [1]})
    with pytest.raises(InvalidParameterError, match="pass weight="):
        lp.check(df, "q", None, [KAnonymity(1), WeightedKAnonymity(1)])


def test_other_models_ignore_weights() -> None:
    df = pl.DataFrame({"q": [1, 1, 2], "w": [100.0, 100.0, 100.0]})
    assert lp.check(df, "q", None, KAnonymity(2), weight="w").passed is False


# --- ldiv check --weighted-k --weight -------------------------------------------------------


@pytest.fixture()
def weighted_csv(tmp_path):
    path = tmp_path / "w.csv"
    pl.DataFrame({"zip": ["130", "130", "148"], "s": ["a", "b", "a"],
                  "w": [2.5, 2.5, 9.0]}).write_csv(path)
    return path


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("k,rc", [(5, 0), (6, 1)])
def test_cli_check_weighted_k(capsys, weighted_csv, engine: str, k: int, rc: int) -> None:
    from ldiv_polars.cli import main

    got = main(["check", str(weighted_csv), "--qi", "zip", "--sensitive", "s", "--weighted-k",
                str(k), "--weight", "w", "--engine", engine, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert got == rc
    (m,) = out["models"]
    assert (m["model"], m["achieved"], m["failing_rows"]) == ("weighted_k_anonymity", 5.0,
                                                              0 if rc == 0 else 2)


@pytest.mark.parametrize("flags,match", [
    (["--weighted-k", "2"], "pass weight="),
    (["--k", "2", "--weight", "w"], "--weight is read by --weighted-k only"),
    (["--weighted-k", "2", "--weight", "nope"], "not in the data"),
])
def test_cli_check_weight_errors(capsys, weighted_csv, flags: list[str], match: str) -> None:
    from ldiv_polars.cli import main

    got = main(["check", str(weighted_csv), "--qi", "zip", "--sensitive", "s", *flags])
    err = capsys.readouterr().err
    assert got == 2 and match in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# --- anonymize(weight=): the search rolls F_k up with every node -----------------------------

ZIP = [["130", "13*", "*"], ["131", "13*", "*"], ["140", "14*", "*"], ["141", "14*", "*"]]
AGE = [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"], ["4", "3-4", "*"]]


def brute_nodes(rows: list[tuple[str, str]], weights: list[float], k: int, limit: int
                ) -> dict[tuple[int, int], int]:
    """Every passing node (zip level, age level) with its suppressed rows, by Python sums:
    the classes whose weight sum is below k are suppressed; the node passes within ``limit``."""
    up = [{r[0]: r for r in ZIP}, {r[0]: r for r in AGE}]
    out = {}
    for a in range(3):
        for b in range(3):
            keys = [(up[0][z][a], up[1][g][b]) for z, g in rows]
            fk: dict[tuple, float] = defaultdict(float)
            n: dict[tuple, int] = defaultdict(int)
            for key, w in zip(keys, weights):
                fk[key] += w
                n[key] += 1
            suppressed = sum(n[c] for c in fk if fk[c] < k)
            if suppressed <= limit:
                out[(a, b)] = suppressed
    return out


search_tables = st.integers(1, 14).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.sampled_from([r[0] for r in ZIP]), st.sampled_from([r[0] for r in AGE])),
             min_size=n, max_size=n),
    st.lists(st.integers(1, 40).map(lambda q: q / 4), min_size=n, max_size=n),
    st.integers(1, 30), st.sampled_from([0.0, 0.2, 0.5])))


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(search_tables)
def test_anonymize_equals_brute_force_over_every_node(case: tuple) -> None:
    from ldiv_polars.hierarchy import Hierarchy
    from ldiv_polars.search.suppression import suppression_limit_rows

    rows, weights, k, suppression = case
    df = pl.DataFrame({"zip": [z for z, _ in rows], "age": [g for _, g in rows],
                       "w": weights})
    hs = {"zip": Hierarchy(ZIP, name="zip"), "age": Hierarchy(AGE, name="age")}
    limit = suppression_limit_rows(suppression, len(rows))
    passing = brute_nodes(rows, weights, k, limit)
    r = lp.anonymize(df, ["zip", "age"], None, hs, WeightedKAnonymity(k), weight="w",
                     suppression=suppression, metric="height")
    if not passing:
        assert r.levels is None
        return
    levels = (r.levels["zip"], r.levels["age"])
    assert levels in passing
    assert sum(levels) == min(a + b for a, b in passing)  # the optimum of the height metric
    assert r.suppressed_rows == passing[levels]
    assert r.verification is not None and r.verification.passed


def test_anonymize_needs_weight_and_checks_it() -> None:
    from ldiv_polars.hierarchy import Hierarchy

    df = pl.DataFrame({"zip": ["130", "131"], "w": [1.0, -2.0]})
    hs = {"zip": Hierarchy(ZIP, name="zip")}
    with pytest.raises(InvalidParameterError, match="pass weight="):
        lp.anonymize(df, "zip", None, hs, WeightedKAnonymity(2))
    with pytest.raises(InvalidParameterError, match="not in the data"):
        lp.anonymize(df, "zip", None, hs, WeightedKAnonymity(2), weight="nope")
    with pytest.raises(InvalidParameterError, match="non-positive"):
        lp.anonymize(df, "zip", None, hs, WeightedKAnonymity(2), weight="w")


@pytest.fixture()
def lattice_files(tmp_path):
    data = tmp_path / "a.csv"
    pl.DataFrame({"zip": ["130", "131", "140", "141", "141"], "s": ["a", "b", "a", "a", "b"],
                  "w": [2.0, 3.0, 1.0, 1.5, 6.0]}).write_csv(data)
    hdir = tmp_path / "h"
    hdir.mkdir()
    (hdir / "zip.csv").write_text("".join(";".join(r) + "\n" for r in ZIP))
    return data, hdir


@pytest.mark.parametrize("k,levels,rc", [(5, 1, 0), (9, 2, 0), (14, None, 1)])
def test_cli_anonymize_weighted_k(capsys, tmp_path, lattice_files, k, levels, rc) -> None:
    from ldiv_polars.cli import main

    data, hdir = lattice_files
    out = tmp_path / "out.csv"
    got = main(["anonymize", str(data), str(out), "--qi", "zip", "--hierarchies", str(hdir),
                "--weighted-k", str(k), "--weight", "w", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert got == rc
    # F_k at level 0: 130: 2, 131: 3, 140: 1, 141: 7.5; level 1: 13*: 5, 14*: 8.5; top: 13.5
    assert ((res["optimum"] or {}).get("levels") or {}).get("zip") == levels
    if rc == 0:
        assert res["verified"] is True
        assert pl.read_csv(out)["w"].to_list() == [2.0, 3.0, 1.0, 1.5, 6.0]  # kept as is
    else:
        assert not out.exists()


def test_cli_anonymize_report_with_weights(capsys, tmp_path, lattice_files) -> None:
    pytest.importorskip("matplotlib", reason="ldiv report draws with matplotlib")
    from ldiv_polars.cli import main

    data, hdir = lattice_files
    out, page = tmp_path / "o.csv", tmp_path / "r.html"
    assert main(["anonymize", str(data), str(out), "--qi", "zip", "--sensitive", "s",
                 "--hierarchies", str(hdir), "--weighted-k", "5", "--weight", "w",
                 "--report", str(page)]) == 0
    capsys.readouterr()
    assert out.exists() and "weighted_k_anonymity" in page.read_text()


def test_cli_anonymize_weight_only_with_the_global_search(capsys, tmp_path,
                                                         lattice_files) -> None:
    from ldiv_polars.cli import main

    data, hdir = lattice_files
    got = main(["anonymize", str(data), str(tmp_path / "o.csv"), "--qi", "zip", "--hierarchies",
                str(hdir), "--weighted-k", "5", "--weight", "w", "--method", "cells"])
    assert got == 2 and "--method global only" in capsys.readouterr().err


mondrian_tables = st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.integers(0, 9), st.sampled_from("abc")), min_size=n, max_size=n),
    st.lists(st.integers(1, 40).map(lambda q: q / 4), min_size=n, max_size=n),
    st.integers(1, 6), st.integers(1, 4), st.booleans()))


@settings(max_examples=30, deadline=None)
@given(mondrian_tables)
def test_mondrian_weighted(case: tuple) -> None:
    from ldiv_polars.partition import PartitionInfeasibleError, mondrian

    keys, weights, k, c, relaxed = case
    df = pl.DataFrame({"a": [x for x, _ in keys], "b": [y for _, y in keys], "w": weights})
    # every weight c: F_k = c * f_k, so F_k >= c * k is k-anonymity: the same partition
    const = df.with_columns(w=pl.lit(float(c)))
    try:
        want = mondrian(const, ["a", "b"], None, KAnonymity(k), relaxed=relaxed)
    except PartitionInfeasibleError:
        with pytest.raises(PartitionInfeasibleError):
            mondrian(const, ["a", "b"], None, WeightedKAnonymity(c * k), relaxed=relaxed,
                     weight="w")
    else:
        got = mondrian(const, ["a", "b"], None, WeightedKAnonymity(c * k), relaxed=relaxed,
                       weight="w")
        assert got.ranges.equals(want.ranges)
    # any weights: every released group's F_k (Python sums) is at least k
    k = max(1, int(sum(weights) // 3))
    try:
        got = mondrian(df, ["a", "b"], None, WeightedKAnonymity(k), relaxed=relaxed,
                       weight="w")
    except PartitionInfeasibleError:
        assert sum(weights) < k
        return
    groups = got.frame.select("group", "w").collect()
    fk: dict[int, float] = defaultdict(float)
    for g, w in groups.iter_rows():
        fk[g] += w
    assert min(fk.values()) >= k and len(fk) == got.groups
    assert got.verification.passed


def test_mondrian_weight_errors() -> None:
    from ldiv_polars.partition import mondrian

    df = pl.DataFrame({"q": [1, 2], "w": [1.0, 0.0]})
    with pytest.raises(InvalidParameterError, match="pass weight="):
        mondrian(df, "q", None, WeightedKAnonymity(1))
    with pytest.raises(InvalidParameterError, match="1 null, non-finite or non-positive"):
        mondrian(df, "q", None, WeightedKAnonymity(1), weight="w")
    with pytest.raises(InvalidParameterError, match="not in the data"):
        mondrian(df, "q", None, WeightedKAnonymity(1), weight="x")


def test_polars_namespace_passes_weights() -> None:
    import ldiv_polars.namespace  # noqa: F401 (registers df.ldiv)
    from ldiv_polars.hierarchy import Hierarchy

    df = pl.DataFrame({"zip": ["130", "131", "140", "141", "141"],
                       "w": [2.0, 3.0, 1.0, 1.5, 6.0]})
    assert df.ldiv.check("zip", None, WeightedKAnonymity(2), weight="w").models[0].achieved == 1.0
    r = df.ldiv.anonymize("zip", None, {"zip": Hierarchy(ZIP, name="zip")},
                          WeightedKAnonymity(5), weight="w")
    assert r.levels == {"zip": 1}


@pytest.mark.parametrize("k,rc,groups", [(5, 0, 2), (18, 1, None)])
def test_cli_mondrian_weighted_k(capsys, tmp_path, k, rc, groups) -> None:
    from ldiv_polars.cli import main

    data, out = tmp_path / "m.csv", tmp_path / "o.csv"
    pl.DataFrame({"zip": [130, 131, 140, 141, 141, 150], "s": list("abcabc"),
                  "w": [2.0, 3.0, 1.0, 1.5, 6.0, 4.0]}).write_csv(data)
    got = main(["mondrian", str(data), str(out), "--qi", "zip", "--sensitive", "s", "--k", "1",
                "--weighted-k", str(k), "--weight", "w", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert got == rc
    if rc == 0:  # strict median splits: {130, 131, 140} F_k 6, {141, 141, 150} F_k 11.5
        assert res["groups"] == groups and res["verified"] is True
        assert pl.read_csv(out).group_by("group").agg(pl.col("w").sum()).sort("group")[
            "w"].to_list() == [6.0, 11.5]
    else:
        assert res["feasible"] is False and not out.exists()


def test_sql_engine_and_counts_and_report_refuse_weighted_models(capsys, tmp_path,
                                                                weighted_csv) -> None:
    from ldiv_polars.cli import main
    from ldiv_polars.duckdb import check as sql_check
    from ldiv_polars.errors import NoSqlFormError

    with pytest.raises(NoSqlFormError):  # the SQL macros read no weights
        sql_check(str(weighted_csv), "zip", "s", [WeightedKAnonymity(2)])
    counts = tmp_path / "c.parquet"
    assert main(["counts", str(weighted_csv), "--qi", "zip", "--sensitive", "s", "--out",
                 str(counts)]) == 0
    capsys.readouterr()
    assert main(["check-counts", str(counts), "--weighted-k", "2"]) == 2
    assert "sampling weights" in capsys.readouterr().err
    assert main(["report", str(weighted_csv), "--qi", "zip", "--sensitive", "s", "--out",
                 str(tmp_path / "r.html"), "--weighted-k", "2"]) == 2
    assert "sampling weights" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("k,rc", [(5, 0), (6, 1)])
def test_cli_report_weighted_k(capsys, tmp_path, weighted_csv, k: int, rc: int) -> None:
    pytest.importorskip("matplotlib", reason="ldiv report draws with matplotlib")
    from ldiv_polars.cli import main

    out = tmp_path / "r.html"
    got = main(["report", str(weighted_csv), "--qi", "zip", "--sensitive", "s", "--out",
                str(out), "--weighted-k", str(k), "--weight", "w", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert got == rc and out.exists()  # the page is written either way; exit 1: a model fails
    (m,) = res["models"]
    assert (m["model"], m["achieved"], m["passed"]) == ("weighted_k_anonymity", 5.0, rc == 0)
