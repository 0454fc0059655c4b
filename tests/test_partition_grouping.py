"""GG, RGG, SG, Anatomy and anatomization against literal reference implementations of the
paper's pseudocode (Figures 2 and 7) on small tables."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.partition import (
    GroupingError,
    anatomize,
    anatomy,
    greedy_grouping,
    randomized_greedy_grouping,
    symmetric_grouping,
)


def diverse(vals: list[str], l: int, positive: set[str] | None, k: int = 1) -> bool:
    if len(vals) < k or not vals:
        return False
    if positive is not None:
        return sum(v in positive for v in vals) * l <= len(vals)
    return max(vals.count(v) for v in set(vals)) * l <= len(vals)


def ref_gg(s: list[str], l: int, positive: set[str] | None, k: int = 1) -> list[int]:
    """Figure 2 literally: buckets of l; add buckets until the group is diverse; a trailing
    non-diverse group (and an incomplete bucket) is dropped. Returns group sizes."""
    buckets = [s[i:i + l] for i in range(0, len(s) - len(s) % l, l)]
    sizes = []
    i = 0
    while i < len(buckets):
        g = list(buckets[i])
        i += 1
        while not diverse(g, l, positive, k) and i < len(buckets):
            g += buckets[i]
            i += 1
        if diverse(g, l, positive, k):
            sizes.append(len(g))
    return sizes


def ref_sg(s: list[str], l: int, positive: set[str] | None, k: int = 1) -> list[int]:
    """Figure 7 literally (left half = ceil(n/2))."""
    def rec(a: int, b: int) -> list[int]:
        mid = a + (b - a + 1) // 2
        if b - a >= 2 and diverse(s[a:mid], l, positive, k) and diverse(s[mid:b], l, positive, k):
            return rec(a, mid) + rec(mid, b)
        return [b - a]
    return rec(0, len(s))


def table(svals: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"q": list(range(len(svals))), "s": svals})


sens = st.lists(st.sampled_from(["+", "-", "-", "a", "b", "c"]), min_size=4, max_size=60)


@settings(max_examples=60, deadline=None)
@given(sens, st.integers(2, 4), st.booleans())
def test_gg_matches_figure2(svals, l, binary):
    positive = {"+"} if binary else None
    expected = ref_gg(svals, l, positive)
    if not expected:
        with pytest.raises(GroupingError):
            greedy_grouping(table(svals), ["q"], "s", l, positive=positive)
        return
    g = greedy_grouping(table(svals), ["q"], "s", l, positive=positive)
    assert g.sizes().tolist() == expected
    assert g.rows == sum(expected) and g.suppressed == len(svals) - sum(expected)
    assert g.verification.passed
    assert g.frame.collect()["q"].to_list() == list(range(sum(expected)))   # order kept


@settings(max_examples=60, deadline=None)
@given(sens, st.integers(2, 4), st.booleans(), st.integers(1, 4))
def test_sg_matches_figure7(svals, l, binary, k):
    positive = {"+"} if binary else None
    if not diverse(svals, l, positive, k):
        with pytest.raises(GroupingError):
            symmetric_grouping(table(svals), ["q"], "s", l, positive=positive, k=k)
        return
    g = symmetric_grouping(table(svals), ["q"], "s", l, positive=positive, k=k)
    assert g.sizes().tolist() == ref_sg(svals, l, positive, k)
    assert g.verification.passed and g.suppressed == 0


def test_gg_sorts_by_qi_and_keeps_other_columns():
    df = pl.DataFrame({"q": [4, 3, 2, 1], "x": ["d", "c", "b", "a"], "s": ["-", "-", "+", "+"]})
    g = greedy_grouping(df, ["q"], "s", 2, positive=["+"])
    out = g.frame.collect()
    assert out["q"].to_list() == [1, 2, 3, 4] and out["x"].to_list() == ["a", "b", "c", "d"]
    assert out["group"].to_list() == [0, 0, 0, 0]   # Fig. 6(a): {1,2} = {+,+} is not diverse


def test_rgg():
    rng = np.random.default_rng(0)
    svals = rng.choice(["+", "-", "-", "-", "-"], 600).tolist()
    df = table(svals)
    gg = greedy_grouping(df, ["q"], "s", 4, positive=["+"])
    r0 = randomized_greedy_grouping(df, ["q"], "s", 4, p=0.0, positive=["+"])
    assert r0.sizes().tolist() == gg.sizes().tolist()
    r1 = randomized_greedy_grouping(df, ["q"], "s", 4, p=0.5, seed=3, positive=["+"])
    r2 = randomized_greedy_grouping(df, ["q"], "s", 4, p=0.5, seed=3, positive=["+"])
    assert r1.sizes().tolist() == r2.sizes().tolist()
    assert r1.verification.passed
    assert r1.average_group_size > gg.average_group_size
    # every RGG group is a union of GG-style diverse closings: its size is a multiple of l
    assert all(s % 4 == 0 for s in r1.sizes())
    with pytest.raises(InvalidParameterError):
        randomized_greedy_grouping(df, ["q"], "s", 4, p=1.0, positive=["+"])


def test_anatomy_groups_hold_distinct_values():
    rng = np.random.default_rng(1)
    svals = rng.choice(list("abcdefg"), 203).tolist()
    df = pl.DataFrame({"q": range(203), "s": svals})
    a = anatomy(df, ["q"], "s", 4, seed=2)
    out = a.grouping.frame.collect()
    per = out.group_by("group").agg(pl.len(), pl.col("s").n_unique().alias("u"))
    assert a.grouping.groups == 203 // 4
    assert set(per["len"].to_list()) <= {4, 5}
    assert (per["len"] == per["u"]).all()
    assert out.height == 203 and sorted(out["q"].to_list()) == list(range(203))
    # the two tables describe the same release
    st_ = a.st.collect()
    assert st_["n"].sum() == 203
    qsizes = a.qit.collect().group_by("group").len().sort("group")
    ssizes = st_.group_by("group").agg(pl.col("n").sum()).sort("group")
    assert qsizes["len"].to_list() == ssizes["n"].to_list()
    assert a.qit.collect_schema().names() == ["q", "group"]


def test_anatomy_rejects_ineligible_tables():
    df = pl.DataFrame({"q": range(6), "s": ["a", "a", "a", "a", "b", "c"]})
    with pytest.raises(GroupingError, match="eligible"):
        anatomy(df, ["q"], "s", 2)


def test_anatomy_of_fig6():
    # (a): two groups of one positive and one negative each
    a = anatomy(pl.DataFrame({"q": list("abcd"), "s": ["-", "-", "+", "+"]}), ["q"], "s", 2)
    per = a.st.collect().group_by("group").agg(pl.col("s").sort())
    assert sorted(per["s"].to_list()) == [["+", "-"], ["+", "-"]]
    # (b): anatomizing the single binary-2-diverse group gives 3 groups with <= 1 positive
    df = pl.DataFrame({"q": list("abcccd"), "s": ["-", "-", "-", "-", "+", "+"]})
    g = symmetric_grouping(df, ["q"], "s", 2, positive=["+"], k=6)     # one group of 6
    assert g.groups == 1
    an = anatomize(g, seed=1)
    per = an.frame.collect().group_by("group").agg((pl.col("s") == "+").sum().alias("pos"),
                                                   pl.len())
    assert an.groups == 3 and per["pos"].max() <= 1 and set(per["len"]) == {2}


def test_anatomize_sg_groups():
    rng = np.random.default_rng(4)
    svals = rng.choice(list("abcdef"), 300).tolist()
    df = pl.DataFrame({"q": rng.integers(0, 40, 300), "s": svals})
    g = symmetric_grouping(df, ["q"], "s", 3, k=3)
    an = anatomize(g, seed=0)
    out = an.frame.collect()
    sizes = out.group_by("group").len()["len"]
    assert sizes.min() >= 3 and sizes.max() <= 5
    assert out.height == g.rows and an.verification.passed
    assert an.groups >= g.groups


def test_bad_input():
    df = table(["+", "-", "-", "-"])
    with pytest.raises(UnknownColumnError):
        greedy_grouping(df, ["nope"], "s", 2)
    with pytest.raises(InvalidParameterError):
        greedy_grouping(df, ["q"], "s", 1)
    with pytest.raises(InvalidParameterError):
        greedy_grouping(df, ["q"], "s", 2, positive=[])
    with pytest.raises(InvalidParameterError):
        greedy_grouping(df.with_columns(group=pl.lit(1)), ["q"], "s", 2)
