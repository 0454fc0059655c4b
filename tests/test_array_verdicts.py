"""Every model's array verdict (``Model.array_verdict`` on integer-encoded rows, the search's
numpy path) against its frame path (``evaluate_classes``), class by class.

Random small tables (hypothesis) with values whose string order differs from their numeric
order (so the ordered distance must sort the values, not the ids or their text), the ids
assigned in a shuffled order, random models of every family; boundary tables whose threshold
is taken from a class's own statistic computed here in exact arithmetic (so the statistic
equals the threshold), where the verdict must also equal that exact reference; both the dense
and the sparse EMD paths."""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldiv_polars.core import FrequencySet
from ldiv_polars.models import (
    AlphaKAnonymity,
    BetaLikeness,
    BinaryLDiversity,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    KAnonymity,
    MultiAttribute,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
    TCloseness,
    evaluate_classes,
)
from ldiv_polars.models.adjusted_entropy import adjusted_entropy
from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain, class_verdict

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

VALUES = [3, 10, 25, 100, 7, 42, 8]  # "10" < "100" < "25" < "3" as text
HIER = pl.DataFrame({"leaf": [str(v) for v in VALUES],
                     "l1": ["low", "mid", "mid", "high", "low", "high", "low"],
                     "l2": ["small", "small", "small", "big", "small", "big", "small"]})


# --- encoding and the two paths ----------------------------------------------------------------


def encode(frame: pl.DataFrame, sensitive: list[str], seed: int = 0) -> EncodedRows:
    """``frame`` (c, sensitive..., n) as encoded rows: ids in a shuffled order of the distinct
    sensitive tuples, the values behind them as the domain."""
    values = frame.select(sensitive).unique().sort(sensitive).sample(fraction=1.0, shuffle=True,
                                                                     seed=seed)
    ids = values.with_row_index("__id")
    rows = frame.join(ids, on=sensitive, how="left", nulls_equal=True).sort("c", maintain_order=True)
    return EncodedRows(rows["c"].to_numpy().astype(np.int64),
                       rows["__id"].to_numpy().astype(np.int32),
                       rows["n"].to_numpy().astype(np.int64),
                       classes=int(frame["c"].max()) + 1, n_sensitive=values.height,
                       domain=SensitiveDomain(values))


def frame_verdict(frame: pl.DataFrame, sensitive: list[str], model) -> np.ndarray:
    fs = FrequencySet(frame.lazy(), ("c",), tuple(sensitive))
    out = evaluate_classes(fs, [model]).select("c", f"pass_{model.key}").collect()
    got = np.ones(int(frame["c"].max()) + 1, dtype=bool)
    got[out["c"].to_numpy()] = out[f"pass_{model.key}"].to_numpy()
    return got


def array_verdict(frame: pl.DataFrame, sensitive: list[str], model, seed: int = 0
                  ) -> np.ndarray:
    rows = encode(frame, sensitive, seed)
    v = model.array_verdict(rows)
    assert v is not None, f"{model.describe()} has no array verdict"
    got = class_verdict(model, rows)
    assert got is not None
    return got


def table(classes: list[Counter], name: str = "s") -> pl.DataFrame:
    data = [(i, v, n) for i, c in enumerate(classes) for v, n in sorted(c.items())]
    return pl.DataFrame(data, schema={"c": pl.Int64, name: pl.Int64, "n": pl.Int64},
                        orient="row")


# --- strategies --------------------------------------------------------------------------------


@st.composite
def class_counters(draw, max_classes: int = 6):
    m = draw(st.integers(1, len(VALUES)))
    domain = draw(st.permutations(VALUES))[:m]
    out = []
    for _ in range(draw(st.integers(1, max_classes))):
        vals = draw(st.lists(st.sampled_from(domain), min_size=1, max_size=m, unique=True))
        if draw(st.booleans()):
            per = draw(st.integers(1, 5))
            out.append(Counter({v: per for v in vals}))
        else:
            out.append(Counter({v: draw(st.integers(1, 12)) for v in vals}))
    return out


subsets = st.lists(st.sampled_from(VALUES), max_size=3, unique=True)

SINGLE = st.one_of(
    st.tuples(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 1.0]),
              st.sampled_from(["equal", "ordered", "hierarchical"])).map(
        lambda a: TCloseness(a[0], a[1], HIER if a[1] == "hierarchical" else None)),
    st.sampled_from([0.1, 0.5, 1.0, math.log(2), 2.0, math.inf]).map(DeltaDisclosure),
    st.tuples(st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0, math.inf]), st.booleans()).map(
        lambda a: BetaLikeness(*a)),
    st.tuples(st.sampled_from([0.25, 0.5, 1.0]), st.integers(1, 5)).map(
        lambda a: AlphaKAnonymity(*a)),
    st.tuples(st.sampled_from([0.5, 1.0, 2.0, 3.0]), st.integers(1, 4), subsets).map(
        lambda a: PositiveDisclosureRecursive(*a)),
    st.tuples(st.sampled_from([0.5, 1.0, 3.0]), st.sampled_from([0.0, 10.0, 25.0, 50.0]),
              st.integers(1, 3), subsets, subsets).map(
        lambda a: NegativePositiveDisclosureRecursive(*a)),
    st.tuples(st.sampled_from([1, 1.5, 2, 2.5, 3]), subsets).map(
        lambda a: EntropyLDiversityDontCare(*a)),
    st.tuples(st.sampled_from([1, 1.5, 2, 3, 4]), subsets.filter(bool)).map(
        lambda a: BinaryLDiversity(*a)),
)


@SETTINGS
@given(class_counters(), SINGLE, st.integers(0, 3))
def test_array_verdict_equals_frame_verdict(classes, model, seed):
    frame = table(classes)
    want = frame_verdict(frame, ["s"], model)
    assert array_verdict(frame, ["s"], model, seed).tolist() == want.tolist(), model


INNER = st.one_of(
    st.integers(1, 3).map(DistinctLDiversity),
    st.sampled_from([1.5, 2]).map(EntropyLDiversity),
    st.tuples(st.sampled_from([1.0, 2.0]), st.integers(2, 3)).map(
        lambda a: RecursiveCLDiversity(*a)),
    st.sampled_from([0.2, 0.5]).map(TCloseness),
    st.sampled_from([0.2, 0.5]).map(lambda t: TCloseness(t, "ordered")),
    st.sampled_from([1.0, 2.0]).map(DeltaDisclosure),
    st.sampled_from([0.5, 1.0]).map(BetaLikeness),
    st.tuples(st.sampled_from([1.0, 2.0]), st.integers(2, 3), subsets).map(
        lambda a: PositiveDisclosureRecursive(*a)),
)


@SETTINGS
@given(class_counters(), class_counters(), INNER, st.integers(0, 3))
def test_multi_attribute_array_verdict_equals_frame_verdict(a, b, inner, seed):
    """Two sensitive columns: each class's rows pair the values of ``a``'s and ``b``'s class
    of the same index (cycling), so sub-classes share values across attributes."""
    rows = []
    for i in range(max(len(a), len(b))):
        ca, cb = a[i % len(a)], b[i % len(b)]
        for j, (v, n) in enumerate(sorted(ca.items())):
            w = sorted(cb)[j % len(cb)]
            rows.append((i, v, w, n))
    frame = pl.DataFrame(rows, schema={"c": pl.Int64, "s": pl.Int64, "t": pl.Int64,
                                       "n": pl.Int64}, orient="row")
    frame = frame.group_by("c", "s", "t").agg(pl.col("n").sum()).sort("c", "s", "t")
    model = MultiAttribute(inner)
    want = frame_verdict(frame, ["s", "t"], model)
    assert array_verdict(frame, ["s", "t"], model, seed).tolist() == want.tolist(), model


# --- boundary: the threshold taken from a class's exact statistic ------------------------------


def exact_ordered(c: Counter, t: Counter) -> Fraction:
    dom = sorted(t)
    size, total = sum(c.values()), sum(t.values())
    acc, cum = Fraction(0), Fraction(0)
    for v in dom[:-1]:
        cum += Fraction(c.get(v, 0), size) - Fraction(t[v], total)
        acc += abs(cum)
    return acc / (len(dom) - 1) if len(dom) > 1 else Fraction(0)


def exact_hier(c: Counter, t: Counter) -> Fraction:
    """The hierarchical EMD by its definition: per inner node, the extra mass of the children
    that must cross the node (min of the positive and negative extras), times its level."""
    paths = {int(r[0]): r for r in HIER.iter_rows()}
    size, total = sum(c.values()), sum(t.values())
    extra = {v: Fraction(c.get(v, 0), size) - Fraction(t[v], total) for v in t}
    height = HIER.width  # the root level added by the model (the last level has 2 values)
    cost = Fraction(0)
    for h in range(1, height + 1):
        def label(v, j):
            return paths[v][j] if j < HIER.width else "*"
        children: dict[tuple, Fraction] = {}
        for v, e in extra.items():
            key = (label(v, h), label(v, h - 1))
            children[key] = children.get(key, Fraction(0)) + e
        pos: dict[str, Fraction] = {}
        neg: dict[str, Fraction] = {}
        for (node, _), e in children.items():
            side = pos if e > 0 else neg
            side[node] = side.get(node, Fraction(0)) + abs(e)
        cost += h * sum(min(p, neg.get(node, Fraction(0))) for node, p in pos.items())
    return cost / height


def dec(x: float) -> Fraction:
    return Fraction(repr(float(x)))


@st.composite
def boundary(draw):
    """Classes of sizes made of 2s and 5s (short decimal statistics) and a model whose
    threshold is class 0's exact statistic (or its float), with the exact verdict of every
    class."""
    classes = draw(class_counters(max_classes=4))
    classes = [Counter({v: n * draw(st.sampled_from([1, 2, 5])) for v, n in c.items()})
               for c in classes]
    t = sum(classes, Counter())
    kind = draw(st.sampled_from(["ordered", "hier", "pd", "binary", "npd"]))
    c0 = classes[0]
    if kind in ("ordered", "hier"):
        stat = exact_ordered if kind == "ordered" else exact_hier
        thr = min(float(stat(c0, t)), 1.0)
        model = TCloseness(thr, kind if kind == "ordered" else "hierarchical",
                           HIER if kind == "hier" else None)
        exact = [stat(c, t) <= dec(thr) for c in classes]
    elif kind == "pd":
        y = draw(subsets)
        l = 2
        ratios = [_pd_ratio(c, y, l) for c in classes]
        finite = [r for r in ratios if r is not None and r > 0]
        if not finite:
            return None
        cc = draw(st.sampled_from(finite))
        model = PositiveDisclosureRecursive(float(cc), l, y)
        exact = [_pd_pass(c, y, l, dec(float(cc))) for c in classes]
    elif kind == "binary":
        pos = draw(subsets.filter(bool))
        shares = [Fraction(sum(n for v, n in c.items() if v in pos), sum(c.values()))
                  for c in classes]
        positive = [s for s in shares if s > 0]
        if not positive:
            return None
        l = float(1 / draw(st.sampled_from(positive)))
        model = BinaryLDiversity(max(l, 1.0), pos)
        exact = [s * dec(max(l, 1.0)) <= 1 for s in shares]
    else:
        w = draw(st.sampled_from(sorted(c0)))
        pct = float(Fraction(c0[w] * 100, sum(c0.values())))
        if pct >= 100:
            return None
        model = NegativePositiveDisclosureRecursive(1e9, pct, 1, [], [w])
        exact = [Fraction(c.get(w, 0) * 100, sum(c.values())) >= dec(pct) for c in classes]
    return classes, model, exact


def _pd_ratio(c: Counter, y: list, l: int) -> Fraction | None:
    counts = sorted(c.values(), reverse=True)
    not_y = [n for v, n in c.items() if v not in y]
    if not not_y:
        return None
    r_y = max(not_y)
    # tail: total minus r_y minus the l-2 largest other counts (Def 4.3, paper-notes §2.7)
    others = sorted(counts, reverse=True)
    others.remove(r_y)
    tail = sum(c.values()) - r_y - sum(others[:l - 2])
    return Fraction(r_y, tail) if tail > 0 else None


def _pd_pass(c: Counter, y: list, l: int, cc: Fraction) -> bool:
    if all(v in y for v in c):
        return True
    r = _pd_ratio(c, y, l)
    return r is not None and r < cc


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(boundary())
def test_on_the_boundary_array_frame_and_exact_agree(case):
    if case is None:
        return
    classes, model, exact = case
    frame = table(classes)
    got = array_verdict(frame, ["s"], model).tolist()
    assert got == frame_verdict(frame, ["s"], model).tolist() == exact, model


def test_adjusted_entropy_on_the_boundary_is_decided_exactly():
    """``l`` set so that ``ln l - tol`` lands on a class's adjusted entropy (computed in high
    precision): both paths agree with the high-precision verdict of every class."""
    classes = [Counter({3: 2, 10: 2, 25: 9}), Counter({3: 5, 10: 1, 7: 4, 25: 1}),
               Counter({3: 1, 10: 1, 25: 1, 100: 3})]
    frame = table(classes)
    for c in classes:
        with localcontext() as ctx:
            ctx.prec = 50
            h = adjusted_entropy([n for v, n in c.items() if v == 25],
                                 [n for v, n in c.items() if v != 25])
            l = float((h + Decimal("1e-12")).exp())  # ln l - tol lands on H
        model = EntropyLDiversityDontCare(l, [25])
        with localcontext() as ctx:
            ctx.prec = 50
            thr = Decimal(Fraction(repr(l)).numerator).ln() \
                - Decimal(Fraction(repr(l)).denominator).ln() - Decimal("1e-12")
            want = []
            for d in classes:
                hd = adjusted_entropy([n for v, n in d.items() if v == 25],
                                      [n for v, n in d.items() if v != 25])
                want.append(hd is None or hd >= thr)
        assert array_verdict(frame, ["s"], model).tolist() == want
        assert frame_verdict(frame, ["s"], model).tolist() == want


# --- dense and sparse paths --------------------------------------------------------------------


# not a tree: "mid" sits under both "small" and "big" (the (node, child) pairs are grouped
# apart, as the frame form groups them)
NOT_TREE = HIER.with_columns(pl.when(pl.col("leaf") == "42").then(pl.lit("mid"))
                             .otherwise(pl.col("l1")).alias("l1"))


@SETTINGS
@given(class_counters(), st.sampled_from(["ordered", "hierarchical"]), st.integers(0, 3))
def test_dense_and_sparse_emds_are_the_same(classes, distance, seed):
    """Dense, and sparse (depth-first runs for a tree hierarchy), against the definition."""
    model = TCloseness(0.2, distance, HIER if distance == "hierarchical" else None)
    rows = encode(table(classes), ["s"], seed)
    dense = model._array_emd(rows)
    sparse_rows = encode(table(classes), ["s"], seed)
    sparse_rows.prefers_dense = lambda width: False  # type: ignore[method-assign]
    sparse = model._array_emd(sparse_rows)
    want = [float(exact_ordered(c, sum(classes, Counter())) if distance == "ordered"
                  else exact_hier(c, sum(classes, Counter()))) for c in classes]
    assert np.allclose(dense, want, rtol=0, atol=1e-12)
    assert np.allclose(sparse, want, rtol=0, atol=1e-12)


@SETTINGS
@given(class_counters(), st.sampled_from([0.05, 0.1, 0.2, 0.3]), st.booleans())
def test_hierarchy_that_is_not_a_tree(classes, t, dense):
    """The sparse path of a hierarchy that is not a tree (grouped by (class, pair), no
    depth-first runs) and the dense path, against the frame path."""
    model = TCloseness(t, "hierarchical", NOT_TREE)
    frame = table(classes)
    rows = encode(frame, ["s"])
    if not dense:
        rows.prefers_dense = lambda width: False  # type: ignore[method-assign]
    got = class_verdict(model, rows)
    assert got.tolist() == frame_verdict(frame, ["s"], model).tolist()


def test_many_sensitive_values_take_the_sparse_path():
    """300 values, 400 classes of 2 values each: the sparse path (a dense matrix would hold
    120,000 cells for 800 rows), equal to the frame path."""
    rng = np.random.default_rng(7)
    c = np.repeat(np.arange(400), 2)
    s = rng.choice(300, size=800)
    s[1::2] = (s[0::2] + 1 + rng.choice(298, size=400)) % 300
    frame = pl.DataFrame({"c": c, "s": s, "n": rng.integers(1, 9, 800)}).with_columns(
        pl.col("s").cast(pl.Int64), pl.col("n").cast(pl.Int64))
    rows = encode(frame, ["s"])
    assert not rows.prefers_dense(300)
    model = TCloseness(0.3, "ordered")
    assert array_verdict(frame, ["s"], model).tolist() == \
        frame_verdict(frame, ["s"], model).tolist()


@pytest.mark.parametrize("model", [
    TCloseness(0.2, "ordered"), TCloseness(0.2, "hierarchical", HIER),
    PositiveDisclosureRecursive(2, 2, [3]), BinaryLDiversity(2, [3]),
    EntropyLDiversityDontCare(2, [3]), MultiAttribute(DistinctLDiversity(2)),
])
def test_models_reading_values_have_no_array_form_without_the_domain(model):
    rows = EncodedRows(np.array([0, 0]), np.array([0, 1]), np.array([1, 1]), 1, 2)
    assert model.array_verdict(rows) is None


def test_kanonymity_needs_no_domain():
    rows = EncodedRows(np.array([0, 0]), np.array([0, 1]), np.array([1, 1]), 1, 2)
    assert KAnonymity(2).array_verdict(rows) is not None


@pytest.mark.parametrize(("l", "want"), [(3, True), (3 + 1e-13, True), (3.0000000001, False),
                                         (2.5, True), (4, False)])
def test_adjusted_entropy_of_uniform_classes_is_ln_m_exactly(l, want):
    """Counts outside Y all equal, don't-care counts at least as large (lowered to the same
    count): the adjusted entropy is ln 3 exactly, decided without high precision in the array
    path (``settle_uniform``), and the same as the frame path's exact step; within the 1e-12
    tolerance ``l`` slightly above 3 still passes."""
    classes = [Counter({3: 4, 10: 4, 25: 6}), Counter({3: 2, 7: 2, 25: 2})]
    model = EntropyLDiversityDontCare(l, [25])
    frame = table(classes)
    rows = encode(frame, ["s"])
    v = model.array_verdict(rows)
    assert not v.uncertain.any()
    assert v.passed.tolist() == [want, want]
    assert frame_verdict(frame, ["s"], model).tolist() == [want, want]
