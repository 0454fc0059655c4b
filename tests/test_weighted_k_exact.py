"""WeightedKAnonymity decided exactly near k: a class whose float weight sum is within the
summation error bound of k is judged on the exact real sum of its records' weights (Fractions),
whatever order the engine (Polars or DuckDB) adds them in."""

from __future__ import annotations

import math
from fractions import Fraction

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ldiv_polars import check
from ldiv_polars.models import WeightedKAnonymity
from ldiv_polars.models.weight_exact import decide_weight_sums

ENGINES = ["polars", "duckdb"]
ULP_BELOW_1 = 1.0 - 2.0 ** -53  # the float just below 1

# exact real sum 1, but adding the big weight first loses each 2^-55 (below half an ulp)
EXACTLY_ONE = [ULP_BELOW_1] + [2.0 ** -55] * 4
# exact real sum 1 - 2^-55 < 1, but adding the small weights first rounds up to 1.0
JUST_BELOW_ONE = [ULP_BELOW_1] + [2.0 ** -55] * 3


def _seq(ws: list[float]) -> float:
    total = 0.0
    for w in ws:
        total += w
    return total


def _table(ws: list[float], scale: int) -> pl.DataFrame:
    # a second class far above k, so only the first is near the threshold
    return pl.DataFrame({"zip": ["a"] * len(ws) + ["b"],
                         "w": [w * scale for w in ws] + [100.0 * scale]})


def test_the_constructions_really_depend_on_the_order() -> None:
    """The float sums in the two orders land on both sides of / on k (the test's premise),
    while the exact sums are 1 and 1 - 2^-55."""
    assert _seq(EXACTLY_ONE) == ULP_BELOW_1 and _seq(EXACTLY_ONE[::-1]) == 1.0
    assert sum(map(Fraction, EXACTLY_ONE)) == 1
    assert _seq(JUST_BELOW_ONE[::-1]) == 1.0
    assert sum(map(Fraction, JUST_BELOW_ONE)) == 1 - Fraction(1, 2 ** 55)
    assert _seq([0.1] * 10) < 1 < sum([Fraction(0.1)] * 10)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("scale", [1, 8])  # k = scale: weights scaled by 2^3 stay exact
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("ws", [EXACTLY_ONE, JUST_BELOW_ONE], ids=["sum_k", "sum_below_k"])
def test_exact_verdict_in_either_order(engine: str, scale: int, reverse: bool,
                                       ws: list[float]) -> None:
    """Exactly k passes, reporting k; k - 2^-55 fails, reporting the float just below k
    (on the verdict's side), whichever order the rows come in."""
    passes = ws is EXACTLY_ONE
    r = check(_table(ws[::-1] if reverse else ws, scale), "zip", None,
              WeightedKAnonymity(scale), weight="w", engine=engine)
    m = r.models[0]
    assert (r.passed, m.failing_classes, m.failing_rows) == (passes, 0 if passes else 1,
                                                             0 if passes else len(ws))
    assert m.achieved == (float(scale) if passes else math.nextafter(float(scale), 0.0))


@pytest.mark.parametrize("engine", ENGINES)
def test_ten_tenths_reach_one(engine: str) -> None:
    """0.1 as a float is above 1/10, so ten of them exceed 1 exactly: they pass k=1."""
    r = check(_table([0.1] * 10, 1), "zip", None, WeightedKAnonymity(1), weight="w",
              engine=engine)
    assert r.passed


@pytest.mark.parametrize("engine", ENGINES)
def test_null_keys_and_integer_weights(engine: str) -> None:
    """A flagged class with a null key is matched in the input (nulls equal nulls); integer
    weights are summed exactly too."""
    df = pl.DataFrame({"zip": [None] * 5 + ["b"],
                       "w": [ULP_BELOW_1] + [2.0 ** -55] * 4 + [7.0]})
    r = check(df, "zip", None, WeightedKAnonymity(1), weight="w", engine=engine,
              nulls="value")
    assert r.passed and r.models[0].achieved == 1.0
    ints = pl.DataFrame({"zip": ["a", "a", "b"], "w": [2, 3, 9]})
    r = check(ints, "zip", None, WeightedKAnonymity(5), weight="w", engine=engine)
    assert r.passed and r.models[0].achieved == 5.0


def test_the_bound_flags_only_classes_near_k() -> None:
    m = WeightedKAnonymity(10)
    t = pl.DataFrame({"size": [3, 3, 1000, 1],
                      m.fk_col: [10.0 - 1e-14, 9.99, 10.0 + 1e-12, 10.5]})
    assert t.select(m.weight_uncertain()).to_series().to_list() == [True, False, True, False]


def test_the_input_is_not_read_again_when_no_class_is_near_k() -> None:
    m = WeightedKAnonymity(4)
    t = pl.DataFrame({"k0": ["a"], "size": [2], m.fk_col: [5.0], m.col("value"): [5.0],
                      f"pass_{m.key}": [True]})

    def unread() -> pl.LazyFrame:
        raise AssertionError("the input was read again")

    assert decide_weight_sums(t, [m], unread, ["k0"], "w").equals(t)


weights = st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.7, 1.1, 2.0 ** -55, ULP_BELOW_1, 1 / 3]),
                   min_size=1, max_size=12)


@settings(max_examples=30, deadline=None)
@given(classes=st.lists(weights, min_size=1, max_size=4), k=st.integers(1, 3),
       engine=st.sampled_from(ENGINES))
@example(classes=[[0.3, 0.7]], k=1, engine="polars")  # 0.3 + 0.7 == 1.0 in floats, < 1 exactly
@example(classes=[[0.3, 0.7]], k=1, engine="duckdb")
@example(classes=[[0.1] * 10, [2.0] * 2], k=1, engine="duckdb")
def test_verdict_is_the_exact_one(classes: list[list[float]], k: int, engine: str) -> None:
    """Per class, the verdict and failing rows agree with a brute force on Fractions."""
    zips = [str(i) for i, ws in enumerate(classes) for _ in ws]
    df = pl.DataFrame({"zip": zips, "w": [w for ws in classes for w in ws]})
    r = check(df, "zip", None, WeightedKAnonymity(k), weight="w", engine=engine)
    exact = [sum(map(Fraction, ws)) for ws in classes]
    failing = [len(ws) for ws, s in zip(classes, exact) if s < k]
    m = r.models[0]
    assert (m.passed, m.failing_classes, m.failing_rows) == (not failing, len(failing),
                                                             sum(failing))
    assert (m.achieved >= k) == (min(exact) >= k)


@pytest.mark.parametrize("reverse", [False, True])
def test_mondrian_node_checks_and_verification_are_exact(reverse: bool) -> None:
    """Mondrian judges its candidate partitions on the exact sums: a table summing to exactly
    k is released as one group; one summing to k - 2^-55 is infeasible (no release that
    re-verification would have to reject)."""
    from ldiv_polars.partition import PartitionInfeasibleError, mondrian

    one = EXACTLY_ONE[::-1] if reverse else EXACTLY_ONE
    df = pl.DataFrame({"a": list(range(len(one))), "w": one})
    got = mondrian(df, ["a"], None, WeightedKAnonymity(1), weight="w")
    assert got.groups == 1 and got.verification.passed
    below = JUST_BELOW_ONE[::-1] if reverse else JUST_BELOW_ONE
    df = pl.DataFrame({"a": list(range(len(below))), "w": below})
    with pytest.raises(PartitionInfeasibleError):
        mondrian(df, ["a"], None, WeightedKAnonymity(1), weight="w")


def _zip_table(ws: list[float]) -> tuple[pl.DataFrame, dict]:
    from ldiv_polars.hierarchy import Hierarchy

    zips = [f"13{i:02d}" for i in range(len(ws))]
    h = Hierarchy(pl.DataFrame({"l0": zips, "l1": ["13**"] * len(zips),
                                "l2": ["*"] * len(zips)}), name="zip")
    return pl.DataFrame({"zip": zips, "w": ws}), {"zip": h}


@pytest.mark.parametrize("ws", [JUST_BELOW_ONE, JUST_BELOW_ONE[::-1], EXACTLY_ONE,
                                EXACTLY_ONE[::-1]])
def test_search_never_releases_a_class_below_k_exactly(ws: list[float]) -> None:
    """The search's node checks read rolled-up float sums (not exact near k); its final
    re-verification is exact: a node whose float sum passes but whose exact sum is below k
    is refused (VerificationError) instead of released, and a released node's exact sum
    reaches k."""
    import ldiv_polars as lp
    from ldiv_polars.search.anonymize import VerificationError

    df, hs = _zip_table(ws)
    exact = sum(map(Fraction, ws))
    try:
        r = lp.anonymize(df, "zip", None, hs, WeightedKAnonymity(1), weight="w")
    except VerificationError:
        assert exact < 1
        return
    if r.levels is not None:
        assert r.verification.passed and exact >= 1 and r.levels["zip"] >= 1


def test_search_re_verification_refuses_a_float_pass_below_k() -> None:
    """Small weights first: the engine's float sum of 1 - 2^-55 is 1.0, the node passes the
    search's float check, the exact re-verification refuses it."""
    import ldiv_polars as lp
    from ldiv_polars.search.anonymize import VerificationError

    df, hs = _zip_table(JUST_BELOW_ONE[::-1])
    assert check(df.with_columns(zip=pl.lit("13**")), "zip", None, WeightedKAnonymity(1),
                 weight="w").passed is False
    with pytest.raises(VerificationError, match="weighted_k_anonymity"):
        lp.anonymize(df, "zip", None, hs, WeightedKAnonymity(1), weight="w")


def test_search_re_verification_reads_the_released_rows_exactly() -> None:
    """A node found by the search is re-verified with the released rows at hand for the exact
    step (not needed here: F_k = 1.55 is far from k) and reports the exact sum's float."""
    import ldiv_polars as lp

    df, hs = _zip_table([0.5, 0.75, 0.1, 0.2])
    r = lp.anonymize(df, "zip", None, hs, WeightedKAnonymity(1), weight="w")
    assert r.levels == {"zip": 1} and r.verification.passed
    assert r.verification.models[0].achieved == float(sum(map(Fraction, [0.5, 0.75, 0.1, 0.2])))


@settings(max_examples=60, deadline=None)
@given(ws=st.lists(st.floats(min_value=2.0 ** -60, max_value=1e6, allow_nan=False,
                             allow_infinity=False), min_size=1, max_size=20),
       t=st.integers(1, 10 ** 6))
def test_exact_sum_compares_as_fractions(ws: list[float], t: int) -> None:
    """ExactSum's fsum sign test agrees with Fractions, also at a threshold equal to the sum."""
    from ldiv_polars.models.weight_exact import ExactSum

    exact = sum(map(Fraction, ws))
    for thr in (t, float(t), math.fsum(ws)):
        d = exact - Fraction(thr)
        assert ExactSum(ws).compare(thr) == (d > 0) - (d < 0)
    assert float(ExactSum(ws)) == float(exact)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("ws,rc", [(JUST_BELOW_ONE[::-1], 1), (EXACTLY_ONE, 0)])
def test_cli_check_decides_exactly(capsys, tmp_path, engine: str, ws: list[float],
                                   rc: int) -> None:
    """``ldiv check --weight`` (a CSV: the floats round-trip) gives the exact verdict: exit 1
    for a sum of k - 2^-55 that floats add to k, exit 0 for a sum of exactly k."""
    import json

    from ldiv_polars.cli import main

    path = tmp_path / "w.csv"
    pl.DataFrame({"zip": ["a"] * len(ws), "s": ["x"] * len(ws), "w": ws}).write_csv(path)
    got = main(["check", str(path), "--qi", "zip", "--sensitive", "s", "--weighted-k", "1",
                "--weight", "w",
                "--engine", engine, "--json"])
    (m,) = json.loads(capsys.readouterr().out)["models"]
    assert got == rc and m["passed"] == (rc == 0)
