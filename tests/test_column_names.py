"""No column name is reserved (issue 16): a table whose quasi-identifiers and sensitive column
are named like the library's own columns (``n``, ``size``, ``distinct``, ``pass_*``, the
``__ldiv_*`` helpers, a model's statistic) gives, in every entry point, exactly what the same
table gives under plain names."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.core import FrequencySet
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import (
    ClassNames,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    TCloseness,
    evaluate_classes,
)
from ldiv_polars.partition import mondrian
from ldiv_polars.search import anonymize

TRICKY = ["n", "n_", "size", "size_", "distinct", "reasons", "pass_k_anonymity_2",
          "k_anonymity_2__value", "entropy_l_1.5__H", "__ldiv_p", "__ldiv_q", "__ldiv_m",
          "__ldiv_tn", "__ldiv_key0", "__ldiv_key1", "__ldiv_xv", "__ldiv_row", "__ldiv_pid",
          "__ldiv_d0", "__ldiv_class", "__ldiv_suppressed", "__ldiv_key", "__F", "__g_a"]
MODELS = [KAnonymity(2), DistinctLDiversity(2), EntropyLDiversity(1.5), TCloseness(0.4)]

PLAIN = pl.DataFrame({
    "a": [1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 4],
    "b": ["x", "x", "y", "y", "y", "x", "x", "x", "y", "y", "x", "x"],
    "s": ["u", "v", "u", "w", "u", "v", "v", "v", "u", "w", "w", "v"],
    "o": list(range(12)),
})
HS = {"a": Hierarchy([["1", "12", "*"], ["2", "12", "*"], ["3", "34", "*"], ["4", "34", "*"]]),
      "b": Hierarchy([["x", "*"], ["y", "*"]])}

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def names(draw):
    picked = draw(st.lists(st.sampled_from(TRICKY), min_size=4, max_size=4, unique=True))
    return dict(zip(["a", "b", "s", "o"], picked))


def renamed(df: pl.DataFrame, m: dict[str, str]) -> pl.DataFrame:
    return df.rename(m)


@SETTINGS
@given(names())
def test_check_violations_summary_risk(m):
    df = renamed(PLAIN, m)
    qi, s = [m["a"], m["b"]], m["s"]
    want = lp.check(PLAIN, ["a", "b"], "s", MODELS)
    got = lp.check(df, qi, s, MODELS)
    assert [(r.passed, r.achieved, r.failing_classes, r.failing_rows) for r in got.models] == \
        [(r.passed, r.achieved, r.failing_classes, r.failing_rows) for r in want.models]
    v_want = lp.violations(PLAIN, ["a", "b"], "s", MODELS).collect().sort("a", "b")
    v_got = lp.violations(df, qi, s, MODELS).collect()
    names_ = ClassNames(tuple(qi))
    assert v_got.columns == [*qi, names_.size, names_.column("reasons")]
    assert v_got.sort(qi).rows() == v_want.rows()
    assert lp.summary(df, qi, s, l=2) == lp.summary(PLAIN, ["a", "b"], "s", l=2)
    assert lp.risk_profile(df, qi) == lp.risk_profile(PLAIN, ["a", "b"])
    pop = pl.concat([df, df])
    assert lp.risk_profile(df, qi, population=pop) == lp.risk_profile(
        PLAIN, ["a", "b"], population=pl.concat([PLAIN, PLAIN]))


@SETTINGS
@given(names())
def test_classes_table_keeps_the_keys_and_renames_what_it_adds(m):
    df = renamed(PLAIN, m)
    qi, s = [m["a"], m["b"]], m["s"]
    fs = FrequencySet.build(df, qi, s)
    assert fs.count not in fs.keys
    got = evaluate_classes(fs, MODELS).collect()
    want = evaluate_classes(FrequencySet.build(PLAIN, ["a", "b"], "s"), MODELS).collect()
    names_ = ClassNames(tuple(qi))
    assert got.columns[:2] == qi and len(set(got.columns)) == got.width
    assert got.select(*qi, names_.size, *[names_.passed_col(x.key) for x in MODELS]).sort(
        qi).rows() == want.select("a", "b", "size", *[f"pass_{x.key}" for x in MODELS]).sort(
        "a", "b").rows()


@SETTINGS
@given(names(), st.sampled_from([0.0, 0.25]))
def test_anonymize_and_mondrian(m, suppression):
    df = renamed(PLAIN, m)
    qi, s = [m["a"], m["b"]], m["s"]
    hs = {m["a"]: HS["a"], m["b"]: HS["b"]}
    models = [KAnonymity(3), DistinctLDiversity(2)]
    want = anonymize(PLAIN, ["a", "b"], "s", HS, models, suppression=suppression)
    got = anonymize(df, qi, s, hs, models, suppression=suppression)
    assert list(got.levels.values()) == list(want.levels.values())
    assert (got.suppressed_rows, got.classes) == (want.suppressed_rows, want.classes)
    assert got.verification.passed
    out = got.output.collect()
    assert out.columns == df.columns
    back = out.rename({v: k for k, v in m.items()}).with_columns(pl.all().cast(pl.String))
    assert back.rows() == want.output.collect().with_columns(pl.all().cast(pl.String)).rows()
    mw = mondrian(PLAIN, ["a"], "s", models)
    mg = mondrian(df, [m["a"]], s, models)
    assert mg.groups == mw.groups and mg.verification.passed
    assert mg.frame.collect()["group"].to_list() == mw.frame.collect()["group"].to_list()
    assert mg.generalized().collect().columns == [*df.columns, "group"]


def test_public_frequency_set_names_its_count_and_refuses_a_clash():
    df = PLAIN.rename({"a": "n"})
    with pytest.raises(InvalidParameterError, match="count column"):
        lp.frequency_set(df, ["n", "b"], "s")
    out = lp.frequency_set(df, ["n", "b"], "s", count="rows").collect()
    assert out.columns == ["n", "b", "s", "rows"] and out["rows"].sum() == df.height


def test_sensitive_named_like_a_reference_helper_column():
    # found by hypothesis in CI: a sensitive column named "__ldiv_q" (the reference
    # distribution's share column) broke Mondrian's candidate evaluation
    df = pl.DataFrame({"n": [1, 1, 2, 2, 3, 3, 4, 4], "n_": [1, 2, 1, 2, 1, 2, 1, 2],
                       "__ldiv_q": ["a", "b", "a", "b", "a", "b", "b", "a"]})
    plain = df.rename({"__ldiv_q": "s"})
    models = [lp.KAnonymity(2), lp.DistinctLDiversity(2), lp.TCloseness(0.5)]
    got = lp.mondrian(df, ["n", "n_"], "__ldiv_q", models)
    want = lp.mondrian(plain, ["n", "n_"], "s", models)
    assert got.to_dict() == want.to_dict()
    assert [m.achieved for m in lp.check(df, ["n", "n_"], "__ldiv_q", models).models] == \
        [m.achieved for m in lp.check(plain, ["n", "n_"], "s", models).models]
