"""Proof that a model is one class: a model defined here, in a few lines and with only the
required methods, runs through ``check``, ``violations``, ``anonymize`` (the lattice search, with
and without suppression) and ``mondrian`` without touching the library, and every verdict equals
a brute force written from its definition (plain Python over the rows)."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from fractions import Fraction

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.core.frequency import COUNT
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import SIZE, ClassContext, Model
from ldiv_polars.partition import PartitionInfeasibleError, mondrian
from ldiv_polars.search import anonymize


class AtMostShare(Model):
    """Every class has at most ``pct`` percent of any one sensitive value (integer test
    ``100 * max count <= pct * size``). Monotone: the share of a value in a union of classes is
    a weighted mean of its shares in the parts."""

    name = "at_most_share"
    higher_is_better = False

    def __init__(self, pct: int) -> None:
        self.pct = pct

    def params(self) -> dict[str, object]:
        return {"pct": self.pct}

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return [pl.col(COUNT).max().alias(self.col("top"))]

    def value(self) -> pl.Expr:
        return 100.0 * pl.col(self.col("top")) / pl.col(SIZE)

    def passes(self) -> pl.Expr:
        return 100 * pl.col(self.col("top")) <= self.pct * pl.col(SIZE)


def brute_classes(rows, qi, s):
    out: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        out[tuple(r[q] for q in qi)][r[s]] += 1
    return out


def brute_passes(counts: Counter, pct: int) -> bool:
    return Fraction(max(counts.values()), sum(counts.values())) * 100 <= pct


SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tables(draw):
    n = draw(st.integers(1, 40))
    return pl.DataFrame({
        "a": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
        "b": draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n)),
        "s": draw(st.lists(st.sampled_from(["s0", "s1", "s2", "s3"]), min_size=n, max_size=n)),
    })


@SETTINGS
@given(tables(), st.sampled_from([25, 34, 50, 67, 100]))
def test_check_and_violations_equal_brute_force(df, pct):
    model = AtMostShare(pct)
    cls = brute_classes(df.iter_rows(named=True), ["a", "b"], "s")
    failing = {k: c for k, c in cls.items() if not brute_passes(c, pct)}
    res = lp.check(df, ["a", "b"], "s", [model]).models[0]
    assert res.passed == (not failing)
    assert res.failing_classes == len(failing)
    assert res.failing_rows == sum(sum(c.values()) for c in failing.values())
    worst = max(Fraction(max(c.values()), sum(c.values())) for c in cls.values())
    assert res.achieved == pytest.approx(float(worst * 100))
    got = lp.violations(df, ["a", "b"], "s", [model]).collect()
    assert {(r["a"], r["b"]) for r in got.iter_rows(named=True)} == set(failing)


A_LEVELS = {0: "0", 1: "0", 2: "1", 3: "1"}
HS = {
    "a": Hierarchy([[str(v), A_LEVELS[v], "*"] for v in range(4)]),
    "b": Hierarchy([["x", "xy", "*"], ["y", "xy", "*"], ["z", "z", "*"]]),
}


def _generalize(row, levels):
    a = [str(row["a"]), A_LEVELS[row["a"]], "*"][levels[0]]
    b = {"x": ["x", "xy", "*"], "y": ["y", "xy", "*"], "z": ["z", "z", "*"]}[row["b"]][levels[1]]
    return {"a": a, "b": b, "s": row["s"]}


def brute_search(df, pct, limit):
    """Every node of the 3 x 3 lattice: passing when the rows of failing classes fit in the
    suppression limit (the model does not read the table distribution, so suppressing a class
    changes no other class's verdict). Returns {levels: suppressed rows} of passing nodes."""
    out = {}
    for levels in itertools.product(range(3), range(3)):
        cls = brute_classes((_generalize(r, levels) for r in df.iter_rows(named=True)),
                            ["a", "b"], "s")
        bad = sum(sum(c.values()) for c in cls.values() if not brute_passes(c, pct))
        if bad <= limit:
            out[levels] = bad
    return out


@SETTINGS
@given(tables(), st.sampled_from([34, 50, 67, 100]), st.sampled_from([0.0, 0.1, 0.25]))
def test_anonymize_search_equals_brute_force(df, pct, suppression):
    model = AtMostShare(pct)
    limit = int(suppression * df.height + 1e-9)
    passing = brute_search(df, pct, limit)
    res = anonymize(df, ["a", "b"], "s", HS, [model], suppression=suppression, metric="height")
    if not passing:
        assert res.levels is None
        return
    best = min(sum(lv) for lv in passing)
    assert res.levels is not None and sum(res.levels.values()) == best
    node = (res.levels["a"], res.levels["b"])
    assert node in passing and res.suppressed_rows == passing[node]
    assert res.verification.passed
    if suppression == 0.0:  # monotone without suppression: Flash's minimal nodes are exact
        minimal = {lv for lv in passing
                   if not any(o != lv and o[0] <= lv[0] and o[1] <= lv[1] for o in passing)}
        assert {(m["a"], m["b"]) for m in res.minimal} == minimal


@SETTINGS
@given(tables(), st.sampled_from([50, 67, 100]), st.booleans())
def test_mondrian_groups_pass_brute_force(df, pct, relaxed):
    model = AtMostShare(pct)
    whole = Counter(df["s"].to_list())
    if not brute_passes(whole, pct):
        with pytest.raises(PartitionInfeasibleError):
            mondrian(df, ["a"], "s", [model], relaxed=relaxed)
        return
    res = mondrian(df, ["a"], "s", [model], relaxed=relaxed)
    out = res.frame.collect()
    groups = brute_classes(out.iter_rows(named=True), ["group"], "s")
    assert all(brute_passes(c, pct) for c in groups.values())
    assert res.verification.passed and res.groups == len(groups)
