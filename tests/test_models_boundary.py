"""Exact verdicts on the boundary (issue 16), identical in every engine.

Tables are drawn *on* the boundary: class sizes and table sizes whose statistics are short
decimals (sizes made of 2s and 5s), thresholds taken from a class's own exact statistic
(``t = float(EMD of a class)``, ``c = float(r1/tail)``, uniform classes for entropy, ...), so
that a statistic equals its threshold exactly or is a few counts away. Every engine's verdict —
Polars (``check`` and ``evaluate_classes``), the numpy array verdicts, the SQL macros — must
equal a reference written here from the definitions in exact arithmetic: ``fractions.Fraction``
for the rational statistics, big integers / 60-digit decimals for the transcendental ones, with
the threshold read as the decimal it was written as (``Fraction(repr(t))``)."""

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

import ldiv_polars as lp
from ldiv_polars.core import FrequencySet
from ldiv_polars.errors import NoSqlFormError
from ldiv_polars.models import (
    AlphaKAnonymity,
    BetaLikeness,
    BinaryLDiversity,
    DeltaDisclosure,
    DistinctLDiversity,
    EncodedRows,
    EntropyLDiversity,
    KAnonymity,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
    TCloseness,
    class_verdict,
    evaluate_classes,
)

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

NICE = [1, 2, 4, 5, 8, 10, 16, 20, 25]
VALUES = ["a", "b", "c", "d", "e"]


def dec(x: float) -> Fraction:
    return Fraction(repr(float(x)))


# --- tables ------------------------------------------------------------------------------------


@st.composite
def class_tables(draw, uniform: bool = False):
    """Classes as Counters of values with sizes made of 2s and 5s (short decimal statistics);
    the table total is padded to such a size by one more class when needed."""
    n_classes = draw(st.integers(1, 4))
    m = draw(st.integers(1, len(VALUES)))
    classes: list[Counter] = []
    for _ in range(n_classes):
        size = draw(st.sampled_from(NICE))
        vals = draw(st.lists(st.sampled_from(VALUES[:m]), min_size=1, max_size=m, unique=True))
        if uniform or draw(st.booleans()):
            per = max(size // len(vals), 1)
            counts = {v: per for v in vals}
        else:
            cuts = sorted(draw(st.lists(st.integers(1, max(size - 1, 1)),
                                        min_size=len(vals) - 1, max_size=len(vals) - 1)))
            bounds = [0, *cuts, size]
            counts = {v: max(b - a, 1) for v, a, b in zip(vals, bounds, bounds[1:])}
        classes.append(Counter(counts))
    total = sum(sum(c.values()) for c in classes)
    target = next(t for t in (2, 4, 5, 8, 10, 16, 20, 25, 40, 50, 80, 100, 125, 160, 200)
                  if t >= total)
    if target > total and draw(st.booleans()):
        classes.append(Counter({draw(st.sampled_from(VALUES[:m])): target - total}))
    return classes


def frame(classes: list[Counter]) -> pl.DataFrame:
    q, s = [], []
    for i, c in enumerate(classes):
        for v, n in c.items():
            q += [i] * n
            s += [v] * n
    return pl.DataFrame({"q": q, "s": s})


def table_of(classes: list[Counter]) -> Counter:
    t: Counter = Counter()
    for c in classes:
        t.update(c)
    return t


# --- exact references (from the definitions) ------------------------------------------------


def emd_equal(c: Counter, t: Counter) -> Fraction:
    nc, n = sum(c.values()), sum(t.values())
    return sum((abs(Fraction(c.get(v, 0), nc) - Fraction(t[v], n)) for v in t),
               Fraction(0)) / 2


# a 3-level value hierarchy over VALUES (ARX layout); ground distance = level of the lowest
# common ancestor / 3
HIER = pl.DataFrame({"value": VALUES, "l1": ["ab", "ab", "c", "de", "de"],
                     "l2": ["abc", "abc", "abc", "de", "de"], "l3": ["*"] * 5})
PATHS = {row[0]: row for row in HIER.iter_rows()}


def emd_hier(c: Counter, t: Counter) -> Fraction:
    """The EMD under the hierarchy's tree metric by the tree-EMD identity (independent of the
    paper's per-node formula the library uses): every edge weighs 1/(2H), so the EMD is
    ``1/(2H) sum over non-root nodes v of |P(subtree v) - Q(subtree v)|``."""
    height = HIER.width - 1
    nc, n = sum(c.values()), sum(t.values())
    acc = Fraction(0)
    for level in range(height):  # leaves (0) up to the root's children (H - 1)
        nodes = {PATHS[v][level] for v in VALUES}
        for node in nodes:
            under = [v for v in t if PATHS[v][level] == node]
            acc += abs(sum((Fraction(c.get(v, 0), nc) - Fraction(t[v], n) for v in under),
                           Fraction(0)))
    return acc / (2 * height)


def emd_ordered(c: Counter, t: Counter) -> Fraction:
    dom = sorted(t)
    nc, n = sum(c.values()), sum(t.values())
    if len(dom) <= 1:
        return Fraction(0)
    acc, cp, cq = Fraction(0), Fraction(0), Fraction(0)
    for v in dom[:-1]:
        cp += Fraction(c.get(v, 0), nc)
        cq += Fraction(t[v], n)
        acc += abs(cp - cq)
    return acc / (len(dom) - 1)


def entropy_ge(c: Counter, l: Fraction) -> bool:
    """H >= ln l  <=>  N^N b^N >= a^N prod n^n (big integers: small tables)."""
    n = sum(c.values())
    a, b = l.numerator, l.denominator
    left = n ** n * b ** n
    right = a ** n
    for k in c.values():
        right *= k ** k
    return left >= right


def ln60(x: Fraction) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        return Decimal(x.numerator).ln() - Decimal(x.denominator).ln()


def delta_ok(c: Counter, t: Counter, delta: Fraction) -> bool:
    if len(c) < len(t):
        return False
    nc, n = sum(c.values()), sum(t.values())
    with localcontext() as ctx:
        ctx.prec = 60
        d = Decimal(delta.numerator) / Decimal(delta.denominator)
        return all(abs(ln60(Fraction(k * n, t[v] * nc))) < d for v, k in c.items())


def gains(c: Counter, t: Counter) -> list[tuple[Fraction, Fraction]]:
    nc, n = sum(c.values()), sum(t.values())
    out = []
    for v, k in c.items():
        p, q = Fraction(k, nc), Fraction(t[v], n)
        if p > q:
            out.append(((p - q) / q, q))
    return out


def beta_ok(c: Counter, t: Counter, beta: Fraction, enhanced: bool) -> bool:
    for g, q in gains(c, t):
        if g > beta:
            return False
        if enhanced:
            with localcontext() as ctx:
                ctx.prec = 60
                if Decimal(g.numerator) / Decimal(g.denominator) > -ln60(q):
                    return False
    return True


def recursive_ok(c: Counter, cc: Fraction, l: int) -> bool:
    if l == 1:
        return True
    r = sorted(c.values(), reverse=True)
    return r[0] < cc * sum(r[l - 1:])


def pd_ok(c: Counter, cc: Fraction, l: int, y: set) -> bool:
    """Def 4.3 in the paper's two cases (ties: non-Y values first), as tests/reference.py."""
    if l == 1:
        return True
    items = sorted(c.items(), key=lambda kv: (-kv[1], kv[0] in y))
    r = [k for _, k in items]
    ys = [i for i, (v, _) in enumerate(items) if v not in y]
    if not ys:
        return True
    j = ys[0] + 1
    r_y = r[j - 1]
    if j <= l - 1:
        return r_y < cc * sum(r[l - 1:])
    return r_y < cc * (sum(r[l - 2: j - 1]) + sum(r[j:]))


def exact_pass(model, c: Counter, t: Counter) -> bool:
    """The reference verdict of one class."""
    name = model.name
    if name == "t_closeness":
        emd = {"equal": emd_equal, "ordered": emd_ordered,
               "hierarchical": emd_hier}[model.distance](c, t)
        return emd <= dec(model.t)
    if name == "beta_likeness":
        return beta_ok(c, t, dec(model.beta), model.enhanced)
    if name == "delta_disclosure":
        return delta_ok(c, t, dec(model.delta))
    if name == "alpha_k":
        size = sum(c.values())
        return size >= model.k and Fraction(max(c.values()), size) <= dec(model.alpha)
    if name == "entropy_l":
        return entropy_ge(c, dec(model.l))
    if name == "recursive_cl":
        return recursive_ok(c, dec(model.c), model.l)
    if name == "pd_recursive_cl":
        return pd_ok(c, dec(model.c), model.l, set(model.dont_care))
    if name == "npd_recursive_cl":
        size = sum(c.values())
        w_ok = all(Fraction(c.get(w, 0) * 100, size) >= dec(model.c2) for w in model.protected)
        return pd_ok(c, dec(model.c), model.l, set(model.dont_care)) and w_ok
    if name == "binary_l":
        size = sum(c.values())
        pos = sum(k for v, k in c.items() if v in model.positive)
        return Fraction(pos, size) <= 1 / dec(model.l)
    raise AssertionError(name)


# --- boundary models: thresholds taken from the table's own statistics -------------------------


@st.composite
def boundary_case(draw):
    classes = draw(class_tables())
    t = table_of(classes)
    c0 = draw(st.sampled_from(classes))
    size = sum(c0.values())
    r = sorted(c0.values(), reverse=True)
    kind = draw(st.sampled_from(["t_equal", "t_ordered", "t_hier", "beta", "beta_enh", "delta",
                                 "alpha", "entropy", "recursive", "pd", "npd", "binary"]))
    if kind == "t_equal":
        model = TCloseness(min(float(emd_equal(c0, t)), 1.0), "equal")
    elif kind == "t_ordered":
        model = TCloseness(min(float(emd_ordered(c0, t)), 1.0), "ordered")
    elif kind == "t_hier":
        model = TCloseness(min(float(emd_hier(c0, t)), 1.0), "hierarchical", HIER)
    elif kind in ("beta", "beta_enh"):
        g = [float(x) for x, _ in gains(c0, t)] or [0.5]
        model = BetaLikeness(max(draw(st.sampled_from(g)), 1e-3), enhanced=kind == "beta_enh")
    elif kind == "delta":
        nc, n = size, sum(t.values())
        logs = [abs(math.log(k * n / (t[v] * nc))) for v, k in c0.items()]
        model = DeltaDisclosure(max(draw(st.sampled_from(logs)), 1e-3))
    elif kind == "alpha":
        model = AlphaKAnonymity(r[0] / size, draw(st.integers(1, 3)))
    elif kind == "entropy":
        model = EntropyLDiversity(max(float(len(c0)), 1.0))
    elif kind == "recursive":
        l = draw(st.integers(2, 3))
        tail = sum(r[l - 1:])
        model = RecursiveCLDiversity(r[0] / tail if tail else 1.0, l)
    elif kind in ("pd", "npd"):
        l = draw(st.integers(2, 3))
        tail = sum(r[l - 1:])
        c = r[0] / tail if tail else 1.0
        y = draw(st.lists(st.sampled_from(VALUES), max_size=2, unique=True))
        if kind == "pd":
            model = PositiveDisclosureRecursive(c, l, y)
        else:
            w = draw(st.sampled_from(sorted(c0)))
            model = NegativePositiveDisclosureRecursive(c, min(c0[w] * 100 / size, 99.5), l, y,
                                                        [w])
    else:
        pos = draw(st.lists(st.sampled_from(sorted(c0)), min_size=1, unique=True))
        k = sum(c0[v] for v in pos)
        model = BinaryLDiversity(max(size / k, 1.0), pos)
    return classes, model


def polars_class_passes(df: pl.DataFrame, model) -> dict[int, bool]:
    fs = FrequencySet.build(df, ["q"], "s").materialize()
    out = evaluate_classes(fs, [model]).select("q", f"pass_{model.key}").collect()
    return dict(out.rows())


@SETTINGS
@given(boundary_case())
def test_polars_verdicts_are_exact_on_the_boundary(case):
    classes, model = case
    t = table_of(classes)
    want = {i: exact_pass(model, c, t) for i, c in enumerate(classes)}
    df = frame(classes)
    assert polars_class_passes(df, model) == want, model
    res = lp.check(df, ["q"], "s", [model]).models[0]
    assert res.passed == all(want.values())
    assert res.failing_classes == sum(not ok for ok in want.values())
    if sufficient(model):
        assert model.satisfied_by(res.achieved) == res.passed, (model, res.achieved)


def sufficient(model) -> bool:
    """Whether the achieved value decides the verdict (not (alpha,k)'s k part, not npd's W)."""
    return not ((model.name == "alpha_k" and model.k > 1) or model.name == "npd_recursive_cl")


@pytest.fixture(scope="module")
def con():
    import duckdb

    import ldiv_polars.duckdb as ld

    c = ld.install(duckdb.connect())
    yield c
    c.close()


@SETTINGS
@given(case=boundary_case())
def test_sql_verdicts_are_exact_on_the_boundary(con, case):
    import ldiv_polars.duckdb as ld

    classes, model = case
    try:
        model.sql_call()
    except NoSqlFormError:
        return
    t = table_of(classes)
    want = [exact_pass(model, c, t) for c in classes]
    got = ld.check(frame(classes), ["q"], "s", [model], con=con)[0]
    assert (got["passed"], got["failing_classes"]) == (all(want), sum(not w for w in want)), \
        model
    if sufficient(model):
        assert model.satisfied_by(got["achieved"] if got["achieved"] is not None
                                  else math.inf) == got["passed"], (model, got)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=boundary_case())
def test_sql_check_of_several_models_is_each_models_check(con, case):
    """The DuckDB check judges every model in one statement: a model whose classes are
    flagged uncertain, among others, gets the verdict it gets alone (exact, by the test
    above)."""
    import ldiv_polars.duckdb as ld

    classes, model = case
    try:
        model.sql_call()
    except NoSqlFormError:
        return
    others = [m for m in (KAnonymity(2), DistinctLDiversity(2)) if m.key != model.key]
    models = [others[0], model, *others[1:]]
    df = frame(classes)
    together = ld.check(df, ["q"], "s", models, con=con)
    alone = [ld.check(df, ["q"], "s", [m], con=con)[0] for m in models]
    # the verdicts are exact and identical; a float statistic that DuckDB sums in parallel
    # (the equal-distance EMD's sum over a class's values) may differ in its last bits from one
    # statement to the next, so the achieved value is compared to 1e-12
    for t, a in zip(together, alone):
        assert {k: v for k, v in t.items() if k != "achieved"} == \
            {k: v for k, v in a.items() if k != "achieved"}
        assert (t["achieved"] is None) == (a["achieved"] is None)
        if a["achieved"] is not None:
            assert math.isclose(t["achieved"], a["achieved"], rel_tol=1e-12, abs_tol=1e-15)


def test_sql_without_python_reports_undecided_classes():
    """What a DuckDB-CLI user who `.read`s ldiv.sql gets on a boundary: the float verdict
    cannot decide, and says so (passed NULL, undecided_classes), never a silent answer."""
    import duckdb

    import ldiv_polars.duckdb as ld

    c = duckdb.connect()
    for stmt in c.extract_statements(ld.sql_text("ldiv.sql")):
        c.execute(stmt)
    df = pl.DataFrame({"q": [1, 1, 1, 0, 1, 0, 0, 0, 0, 1],
                       "s": [str(v) for v in [0, 0, 2, 0, 0, 1, 0, 2, 1, 0]]})
    c.register("t", df.to_arrow())
    row = c.execute("SELECT passed, failing_classes, undecided_classes "
                    "FROM ldiv_t_closeness('t', ['q'], 's', 0.2, distance := 'equal')"
                    ).fetchall()[0]
    assert row[0] is None and row[2] >= 1 and row[1] + row[2] <= 2
    # with a decided failure the verdict is certain
    row = c.execute("SELECT passed FROM ldiv_t_closeness('t', ['q'], 's', 0.1, "
                    "distance := 'equal')").fetchall()[0]
    assert row == (False,)
    # installed from Python, the same macro decides exactly
    ld.install(c)
    assert c.execute("SELECT passed, undecided_classes FROM ldiv_t_closeness('t', ['q'], 's', "
                     "0.2, distance := 'equal')").fetchall() == [(True, 0)]


def encoded(classes: list[Counter]) -> EncodedRows:
    cls, s, n = [], [], []
    for i, c in enumerate(classes):
        for v in sorted(c):
            cls.append(i)
            s.append(VALUES.index(v))
            n.append(c[v])
    from ldiv_polars.models.encoded import SensitiveDomain

    return EncodedRows(np.array(cls, np.int64), np.array(s, np.int32), np.array(n, np.int64),
                       classes=len(classes), n_sensitive=len(VALUES),
                       domain=SensitiveDomain(pl.DataFrame({"s": VALUES})))


@SETTINGS
@given(boundary_case())
def test_array_verdicts_are_exact_on_the_boundary(case):
    classes, model = case
    got = class_verdict(model, encoded(classes))
    if got is None:  # no array form
        return
    t = table_of(classes)
    assert got.tolist() == [exact_pass(model, c, t) for c in classes], model


def test_issue_16_t_closeness_example():
    # both classes have an EMD of exactly 1/5
    df = pl.DataFrame({"q": [1, 1, 1, 0, 1, 0, 0, 0, 0, 1],
                       "s": [str(v) for v in [0, 0, 2, 0, 0, 1, 0, 2, 1, 0]]})
    res = lp.check(df, ["q"], "s", [TCloseness(0.2)]).models[0]
    assert res.passed and res.achieved == 0.2
    assert not lp.check(df, ["q"], "s", [TCloseness(0.19999999999999998)]).passed


def test_issue_16_beta_gain_of_exactly_one():
    # table a, b, c, d twice each; class 0 = {a, b}: p = 1/2 = 2q -> gains of exactly 1
    df = pl.DataFrame({"q": [0, 0, 1, 1, 1, 1, 1, 1], "s": list("ababccdd")})
    t = Counter(df["s"].to_list())
    assert [g for g, _ in gains(Counter("ab"), t)] == [1, 1]
    res = lp.check(df, ["q"], "s", [BetaLikeness(1.0)]).models[0]
    assert res.passed and res.achieved == 1.0
    assert not lp.check(df, ["q"], "s", [BetaLikeness(0.9999999999999999)]).passed


def test_entropy_uniform_classes_pass_exactly_and_report_l():
    df = pl.DataFrame({"q": [0] * 3 + [1] * 6, "s": list("abc") + list("aabbcc")})
    res = lp.check(df, ["q"], "s", [EntropyLDiversity(3)]).models[0]
    assert res.passed and res.achieved == 3.0
    assert not lp.check(df, ["q"], "s", [EntropyLDiversity(3.0000000000000004)]).passed


@pytest.mark.parametrize("l", [2, 3])
def test_recursive_l_needs_no_more_than_the_ratio(l):
    # counts 6, 3, 1: r1 / tail = 6/4 (l = 2), 6/1 (l = 3): c equal to it fails (strict)
    df = pl.DataFrame({"q": [0] * 10, "s": list("aaaaaabbbc")})
    ratio = 6 / 4 if l == 2 else 6.0
    res = lp.check(df, ["q"], "s", [RecursiveCLDiversity(ratio, l)]).models[0]
    assert not res.passed and res.achieved == ratio
    assert lp.check(df, ["q"], "s", [RecursiveCLDiversity(math.nextafter(ratio, 9), l)]).passed


@pytest.mark.parametrize("model", [RecursiveCLDiversity(1e-9, 1),
                                   PositiveDisclosureRecursive(1e-9, 1, ["x"])])
def test_recursive_l1_needs_no_c_in_every_engine(con, model):
    # l = 1: every class passes whatever c, so the achieved value is 0 (no c is needed; it was
    # 1.0 on one table and 0.5 on another while passing at c = 1e-9), in Polars, SQL and summary
    import ldiv_polars.duckdb as ld
    from ldiv_polars.table_summary import summary

    for df in (pl.DataFrame({"q": [0, 0, 0, 1, 1], "s": list("aabcc")}),
               pl.DataFrame({"q": [0, 0, 1, 1], "s": list("abab")})):
        res = lp.check(df, ["q"], "s", [model]).models[0]
        assert (res.passed, res.achieved) == (True, 0.0)
        assert model.satisfied_by(res.achieved)
        got = ld.check(df, ["q"], "s", [model], con=con)[0]
        assert (got["passed"], got["achieved"]) == (True, 0.0)
        assert summary(df, ["q"], "s", l=1)["recursive_c"] == 0.0


@st.composite
def random_case(draw):
    """A random small table and a random model with a random threshold (not on purpose on the
    boundary): the achieved value's table-level test must give the verdict."""
    n = draw(st.integers(1, 30))
    df = pl.DataFrame({"q": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
                       "s": draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n))})
    x = draw(st.sampled_from([0.05, 0.2, 0.3, 1 / 3, 0.5, 0.75, 1.0]))
    l = draw(st.integers(1, 4))
    y = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True))
    model = draw(st.sampled_from([
        KAnonymity(l), DistinctLDiversity(l), EntropyLDiversity(1 + 2 * x),
        RecursiveCLDiversity(4 * x, l), PositiveDisclosureRecursive(4 * x, l, y),
        AlphaKAnonymity(x, 1), TCloseness(x, "equal"), TCloseness(x, "ordered"),
        TCloseness(x, "hierarchical", HIER), BetaLikeness(2 * x),
        BetaLikeness(2 * x, enhanced=True), DeltaDisclosure(2 * x),
        BinaryLDiversity(1 + 2 * x, y)]))
    return df, model


@SETTINGS
@given(random_case())
def test_achieved_value_agrees_with_the_verdict_on_random_tables(con, case):
    import ldiv_polars.duckdb as ld

    df, model = case
    res = lp.check(df, ["q"], "s", [model]).models[0]
    assert model.satisfied_by(res.achieved) == res.passed, (model, res.achieved)
    try:
        model.sql_call()
    except NoSqlFormError:
        return
    got = ld.check(df, ["q"], "s", [model], con=con)[0]
    assert got["passed"] == res.passed, (model, got)
    achieved = got["achieved"] if got["achieved"] is not None else math.inf
    assert model.satisfied_by(achieved) == got["passed"], (model, got)
