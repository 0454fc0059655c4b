"""The l-diversity paper's worked examples (paper-notes/l-diversity.md §6-7): every number here
is printed in the paper or derived in the notes, not computed by the library."""

from __future__ import annotations

import math
from fractions import Fraction

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    KAnonymity,
    MultiAttribute,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
)
from tests.paper_tables import FIG1

# Fig. 2: zip -> 1485* / 130**, age -> <30 / 3* / >=40, nationality -> *
FIG2 = FIG1.with_columns(
    pl.when(pl.col("zip").str.starts_with("1485")).then(pl.lit("1485*")).otherwise(
        pl.lit("130**")).alias("zip"),
    pl.when(pl.col("age") < 30).then(pl.lit("<30")).when(pl.col("age") < 40).then(
        pl.lit("3*")).otherwise(pl.lit(">=40")).alias("age"),
    pl.lit("*").alias("nationality"),
)
# Fig. 4: zip -> first 4 digits, age -> <=40 / >40, nationality -> *
FIG4 = FIG1.with_columns(
    (pl.col("zip").str.slice(0, 4) + "*").alias("zip"),
    pl.when(pl.col("age") <= 40).then(pl.lit("<=40")).otherwise(pl.lit(">40")).alias("age"),
    pl.lit("*").alias("nationality"),
)
QI = ["zip", "age", "nationality"]


def achieved(df, model, qi=QI, s="condition"):
    return lp.check(df, qi, s, [model]).models[0]


def test_fig2_is_4_anonymous_but_not_2_diverse():
    res = lp.check(FIG2, QI, "condition", [KAnonymity(4), KAnonymity(5), EntropyLDiversity(2),
                                           RecursiveCLDiversity(1000.0, 2)])
    k4, k5, ent, rec = res.models
    assert (k4.passed, k5.passed) == (True, False)
    assert res.classes == 3
    assert ent.achieved == 1.0  # the Cancer block has entropy exactly 0 (not -4e-16)
    assert not ent.passed and ent.failing_rows == 4
    assert not rec.passed and rec.failing_classes == 1  # homogeneous block fails for every c


def test_fig2_block_entropies():
    blocks = lp.classes(FIG2, QI, "condition", [EntropyLDiversity(1)]).collect()
    h = sorted(blocks["entropy_l_1__H"].to_list())
    assert h == pytest.approx([0.0, math.log(2), 1.0397], abs=1e-4)


def test_homogeneity_attack_on_bob():
    bob = lp.violations(FIG2, QI, "condition", [DistinctLDiversity(2)]).collect()
    assert bob.select("zip", "age", "size").rows() == [("130**", "3*", 4)]


def test_fig4_is_2_8_diverse_not_2_9():
    assert achieved(FIG4, EntropyLDiversity(2.8)).achieved == pytest.approx(2 * math.sqrt(2))
    assert achieved(FIG4, EntropyLDiversity(2.8)).passed
    assert not achieved(FIG4, EntropyLDiversity(2.9)).passed
    assert lp.check(FIG4, QI, "condition", [KAnonymity(4), DistinctLDiversity(3)]).passed


@pytest.mark.parametrize(
    ("c", "l", "passes"),
    [(2.0, 3, False), (2.0001, 3, True), (1.0, 2, False), (1.0001, 2, True), (0.5, 1, True)],
)
def test_fig4_recursive_thresholds(c, l, passes):
    # Fig. 4 blocks are (2,1,1): recursive (c,3) iff c > 2, (c,2) iff c > 1, l=1 always
    assert achieved(FIG4, RecursiveCLDiversity(c, l)).passed is passes


def test_recursive_achieved_is_r1_over_tail():
    assert achieved(FIG4, RecursiveCLDiversity(3, 3)).achieved == pytest.approx(2.0)
    assert achieved(FIG4, RecursiveCLDiversity(3, 2)).achieved == pytest.approx(1.0)
    # Fig. 2's homogeneous block has fewer than 2 values: infinite
    assert math.isinf(achieved(FIG2, RecursiveCLDiversity(3, 2)).achieved)


def test_algorithm_1_worked_example():
    # don't-care counts 11, 10, 3, 2; sensitive counts 3 and 4 -> adjusted entropy 1.77297 nats
    rows = [("y1", 11), ("y2", 10), ("y3", 3), ("y4", 2), ("s1", 3), ("s2", 4)]
    df = pl.DataFrame({"q": [1] * 33, "s": [v for v, n in rows for _ in range(n)]})
    m = achieved(df, EntropyLDiversityDontCare(5.8, {"y1", "y2", "y3", "y4"}), ["q"], "s")
    assert math.log(m.achieved) == pytest.approx(1.77297, abs=1e-5)
    assert m.passed  # exp(1.77297) = 5.888 >= 5.8
    assert not achieved(df, EntropyLDiversityDontCare(5.9, {"y1", "y2", "y3", "y4"}),
                        ["q"], "s").passed
    # without the don't-care set it is the raw entropy 1.58966
    assert math.log(achieved(df, EntropyLDiversity(1), ["q"], "s").achieved) == pytest.approx(
        1.58966, abs=1e-5)


@pytest.mark.parametrize(
    ("x", "value"),
    [(400, 0.5004), (800, 0.3488), (600, 0.4101), (75, 0.6829), (125, 0.6870), (100, 0.6931)],
)
def test_appendix_a_normalized_entropy(x, value):
    df = pl.DataFrame({"q": [1] * (x + 100), "s": ["a"] * x + ["b"] * 100})
    assert math.log(achieved(df, EntropyLDiversity(1), ["q"], "s").achieved) == pytest.approx(
        value, abs=5e-5)


GENDER = pl.DataFrame(
    {
        "sex": ["M"] * 1000 + ["F"] * 1000,
        "s": ["Healthy"] * 700 + ["Hepatitis"] * 300 + ["Healthy"] * 700 + ["Cancer"] * 300,
    }
)


def test_gender_example_pd_recursive_needs_c_above_3_7():
    y = {"Healthy"}
    assert not achieved(GENDER, PositiveDisclosureRecursive(3 / 7, 2, y), ["sex"], "s").passed
    assert achieved(GENDER, PositiveDisclosureRecursive(3 / 7 + 1e-9, 2, y), ["sex"], "s").passed
    assert achieved(GENDER, PositiveDisclosureRecursive(1, 2, y), ["sex"], "s").achieved == (
        pytest.approx(3 / 7))
    # without the don't-care set, the table is not recursive (c,2)-diverse for c <= 7/3 ...
    assert not achieved(GENDER, RecursiveCLDiversity(Fraction(7, 3), 2), ["sex"], "s").passed
    # ... while the float 7 / 3 is the decimal 2.3333333333333335 > 7/3 (thresholds are read
    # as the decimals they were written as): r1 = 700 < 2.3333333333333335 * 300 passes
    assert achieved(GENDER, RecursiveCLDiversity(7 / 3, 2), ["sex"], "s").passed


def test_gender_example_adjusted_entropy_is_exactly_ln2():
    m = achieved(GENDER, EntropyLDiversityDontCare(2, {"Healthy"}), ["sex"], "s")
    assert math.log(m.achieved) == pytest.approx(math.log(2), abs=1e-12)
    assert m.passed  # passes only under >=, as Def 4.1 requires


def test_healthy_sick_c_bound():
    # Y = {healthy}, l = 2: passes iff sick < c * healthy
    df = pl.DataFrame({"q": [1] * 103, "s": ["healthy"] * 100 + ["sick"] * 3})
    y = {"healthy"}
    assert not achieved(df, PositiveDisclosureRecursive(0.03, 2, y), ["q"], "s").passed
    assert achieved(df, PositiveDisclosureRecursive(0.0301, 2, y), ["q"], "s").passed


def test_only_dont_care_values_pass():
    df = pl.DataFrame({"q": [1, 1, 2, 2], "s": ["ok", "ok", "ok", "x"]})
    y = {"ok"}
    res = lp.check(df, ["q"], "s", [PositiveDisclosureRecursive(5, 3, y),
                                    EntropyLDiversityDontCare(1.5, y)])
    per_class = lp.classes(df, ["q"], "s", [PositiveDisclosureRecursive(5, 3, y),
                                            EntropyLDiversityDontCare(1.5, y)]).sort("q").collect()
    assert per_class.row(0, named=True)["pass_pd_recursive_cl_5_3_ok"] is True
    assert per_class.row(0, named=True)["pass_entropy_l_dont_care_1.5_ok"] is True
    assert not res.passed  # class 2 has one non-Y value and the tail is too small


def test_npd_recursive_c2_percent():
    df = pl.DataFrame({"q": [1] * 10 + [2] * 10,
                       "s": ["a"] * 4 + ["b"] * 3 + ["w"] * 3 + ["a"] * 4 + ["b"] * 5 + ["w"]})
    base = dict(c1=3, l=2, dont_care=None, protected={"w"})
    assert lp.check(df, ["q"], "s", [NegativePositiveDisclosureRecursive(c2=10, **base)]).passed
    res = lp.check(df, ["q"], "s", [NegativePositiveDisclosureRecursive(c2=10.01, **base)])
    assert not res.passed and res.models[0].failing_classes == 1
    # a protected value missing from a class has 0%
    res = lp.check(df, ["q"], "s", [NegativePositiveDisclosureRecursive(
        c1=3, c2=1, l=2, protected={"zz"})])
    assert res.models[0].failing_classes == 2


def test_multi_attribute_counter_example():
    block = pl.DataFrame({"q": [1] * 4, "S": ["s1", "s1", "s2", "s3"],
                          "V": ["v1", "v2", "v3", "v3"]})
    # 3 distinct values in S and 3 in V taken alone...
    assert lp.check(block, ["q"], "S", [DistinctLDiversity(3)]).passed
    assert lp.check(block, ["q"], "V", [DistinctLDiversity(3)]).passed
    # ...but entropy-3 fails per attribute: H = 1.0397 < ln 3
    assert not lp.check(block, ["q"], "S", [EntropyLDiversity(3)]).passed
    # strict recursive (2,3) fails, (2.01,3) passes
    assert not lp.check(block, ["q"], "S", [RecursiveCLDiversity(2, 3)]).passed
    assert lp.check(block, ["q"], "S", [RecursiveCLDiversity(2.01, 3)]).passed
    # Def 4.6 fails for l = 2 (if S != s1 then V = v3)
    assert not lp.check(block, ["q"], ["S", "V"], [MultiAttribute(DistinctLDiversity(2))]).passed
    assert lp.check(block, ["q"], ["S", "V"], [MultiAttribute(DistinctLDiversity(1))]).passed


def test_ell_delta_table_1_and_2_releases_are_2_anonymous_and_2_diverse():
    # (l,delta) paper, Tables 1-2: both releases are 2-diverse (linkage breaks them: issue 5)
    d1 = pl.DataFrame({"ec": ["M*", "M*", "F560010", "F560010"],
                       "disease": ["Heart disease", "Lung infection", "Osteoporosis",
                                   "Cervical cancer"]})
    d2 = pl.DataFrame({"ec": ["F560008", "F560008", "F560010", "F560010"],
                       "disease": ["Irritable bowel syndrome", "Lung infection",
                                   "Cervical cancer", "Amoebic dysentery"]})
    raw = pl.DataFrame({"ec": ["M*", "M*", "F560010", "F560010", "F560010"],
                        "disease": ["Heart disease", "Lung infection", "Osteoporosis",
                                    "Cervical cancer", "Osteoporosis"]})
    for table in (d1, d2, raw):
        assert lp.check(table, ["ec"], "disease", [KAnonymity(2), DistinctLDiversity(2)]).passed


def test_back_of_envelope_homogeneous_groups():
    # 3 equiprobable values, 5-anonymous groups: P(homogeneous) = 3 (1/3)^5 = 1/81
    # (the paper's 148 groups / 740 people of 12,000 groups); checked by exact enumeration
    import itertools

    groups = list(itertools.product("abc", repeat=5))
    df = pl.DataFrame({"g": [i for i, g in enumerate(groups) for _ in g],
                       "s": [v for g in groups for v in g]})
    res = lp.check(df, ["g"], "s", [DistinctLDiversity(2)])
    assert res.models[0].failing_classes / len(groups) == pytest.approx(1 / 81)
    assert 12_000 * res.models[0].failing_classes / len(groups) == pytest.approx(148.1, abs=0.1)
