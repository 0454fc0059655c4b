"""(l,delta) mechanism: every exact number of the paper notes, Greedy vs brute force, planning,
applying the broadcast classes with the engine and re-verifying with the checker."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.errors import InvalidParameterError, LdivError
from ldiv_polars.linkage.distribution import DistributionError, JointDistribution, as_fraction
from ldiv_polars.linkage.mechanism import (
    Partition,
    admissible_counts,
    generalize_ind,
    greedy_generalize,
    m_value,
    p_for_budget,
    plan_mechanism,
    sample_size,
    sample_size_real,
)
from ldiv_polars.models import DistinctLDiversity
from ldiv_polars.models.verdict import check

UNIFORM_P = [Fraction(1, 50)] * 50


@pytest.fixture(scope="module")
def uniform() -> JointDistribution:
    return JointDistribution.paper_setting("uniform")


@pytest.fixture(scope="module")
def geometric() -> JointDistribution:
    return JointDistribution.paper_setting("geometric")


# --- N table (paper-notes §4, derived reference values) ---------------------------------------

@pytest.mark.parametrize(("p", "delta", "expected"), [
    (2e-4, 0.01, 65605.26), (2e-4, 0.001, 77117.03), (2e-4, 0.1, 54093.48),
    (2e-4, 0.5, 46047.10), (4e-4, 0.01, 31066.83), (4e-4, 0.001, 36822.14),
    (4e-4, 0.1, 25311.51), (1e-3, 0.01, 11507.17), (1e-3, 0.001, 13808.60),
    (0.01, 0.01, 916.42), (0.01, 0.001, 1145.53), (0.02, 0.01, 421.59), (0.02, 0.001, 535.56),
])
@pytest.mark.parametrize("l", [10, 30])
def test_uniform_sample_sizes_match_the_notes_and_do_not_depend_on_l(p, delta, expected, l):
    pf = as_fraction("p", p)
    m = m_value(UNIFORM_P, l, pf, 3000)
    assert m == 1 / (l * pf)  # the minimum is 1/(l p): m l = 1/p
    assert round(sample_size_real(l, delta, pf, m), 2) == pytest.approx(expected, abs=0.006)
    assert sample_size(l, delta, pf, m) == math.ceil(expected)


@pytest.mark.parametrize(("beta", "l", "n001", "n0001"), [
    ("0.01", 5, 27942.93, 33160.68), ("0.01", 10, 36865.11, 43608.63),
    ("0.01", 30, 111228.64, 130041.82), ("0.01", 40, 192776.43, 224198.65),
    ("0.02", 10, 17414.58, 20785.76), ("0.02", 30, 52779.42, 62185.44),
    ("0.02", 40, 91655.34, 107365.87),
])
def test_geometric_sample_sizes_match_the_notes(geometric, beta, l, n001, n0001):
    for delta, expected in ((0.01, n001), (0.001, n0001)):
        plan = plan_mechanism(geometric, l, delta, beta=beta)
        assert plan.N_real == pytest.approx(expected, abs=0.006)
        assert plan.N == math.ceil(expected)
        assert plan.m == 1 / (l * plan.p)  # the notes: the minimum is 1/(l p) in every case


def test_geometric_normalization_and_p_l(geometric):
    p = geometric.p_sorted()
    assert float(p[0]) == pytest.approx(0.0541680, abs=5e-8)  # (1-rho)/(1-rho^50)
    assert p[1] / p[0] == Fraction(19, 20)
    assert float(Fraction(1, 100) * p[4]) == pytest.approx(4.412e-4, abs=5e-8)  # l=5, beta=0.01
    assert sum(p) == 1


def test_m_for_uniform_examples():
    assert m_value(UNIFORM_P, 10, Fraction(1, 5000), 3000) == 500
    assert m_value(UNIFORM_P, 30, Fraction(1, 5000), 3000) == Fraction(500, 3)  # 166.67


def test_remark_1_neither_term_always_smaller():
    p = Fraction(1, 10**6)
    third = [Fraction(1, 3)] * 3
    assert 1 / (2 * p) <= Fraction(2, 3) / p
    assert m_value(third, 2, p, 10**9) == 1 / (2 * p)
    skew = [Fraction(99, 100), Fraction(9, 1000), Fraction(1, 1000)]
    assert Fraction(1, 1000) / p < 1 / (3 * p)
    assert m_value(skew, 3, p, 10**9) == Fraction(1, 1000) / p


def test_class_counts_floor_pl_over_p(uniform):
    for beta, classes, size in (("0.01", 100, 30), ("0.02", 50, 60)):
        plan = plan_mechanism(uniform, 10, 0.01, beta=beta)
        assert plan.classes == classes == math.floor(1 / as_fraction("b", beta))
        assert set(plan.partition.sizes.tolist()) == {size}
        ind = plan_mechanism(uniform, 10, 0.01, beta=beta, method="ind")
        assert ind.classes == classes  # Cor 4.8: Generalize-Ind = Greedy = floor(p_l / p)


def _float_greedy(n_qi: int, n_s: int, l: int, p: float) -> list[int]:
    """The float64 version of Algorithm 2 for uniform P: P(c, s) = sum_{q in c} P(q, s)
    accumulated in floating point (what the notes warn about). Returns the class sizes."""
    sizes: list[int] = []
    size, mass = 0, 0.0
    for _ in range(n_qi):
        size += 1
        mass += (1 / n_qi) * (1 / n_s)
        if sum(1 for _ in range(n_s) if mass >= p) >= l:
            sizes.append(size)
            size, mass = 0, 0.0
    if size:
        sizes[-1] += size  # merge the deficient tail
    return sizes


def test_float64_loses_a_class_exact_does_not(uniform):
    p = 0.02 * (1 / 50)
    sizes = _float_greedy(3000, 50, 10, p)
    assert len(sizes) == 49 and set(sizes) == {61, 72}  # the notes: 49 classes, sizes 61 and 72
    assert greedy_generalize(uniform, 10, p).classes == 50


def test_p_l_at_most_one_over_l_and_lemma_4_2():
    rng = np.random.default_rng(3)
    for _ in range(20):
        w = rng.integers(0, 6, size=(7, 5))
        w[:, rng.integers(0, 5)] += 1  # every s and q gets mass
        w[rng.integers(0, 7), :] += 1
        d = JointDistribution.from_matrix(w)
        for l in range(1, d.n_sensitive + 1):
            pl_ = d.p_l(l)
            assert pl_ <= Fraction(1, l)
            one = Partition(np.zeros(1, dtype=np.int64), d.n_qi)
            assert admissible_counts(d, one, pl_)[0] >= l  # the single class is admissible


# --- Greedy is optimal among contiguous admissible partitions (Prop. 4.6) ----------------------

def _admissible(dense: np.ndarray, a: int, b: int, l: int, p: Fraction, total: int) -> bool:
    col = dense[a:b].sum(axis=0)
    return sum(1 for v in col if Fraction(int(v), total) >= p) >= l


def _brute_force_optimum(dense: np.ndarray, l: int, p: Fraction) -> int:
    """Most classes of a contiguous partition into admissible classes (DP, exact)."""
    n = dense.shape[0]
    total = int(dense.sum())
    best = [-1] * (n + 1)
    best[0] = 0
    for j in range(1, n + 1):
        for i in range(j):
            if best[i] >= 0 and _admissible(dense, i, j, l, p, total):
                best[j] = max(best[j], best[i] + 1)
    return best[n]


@st.composite
def _instances(draw):
    nq = draw(st.integers(1, 8))
    ns = draw(st.integers(1, 4))
    w = np.array(draw(st.lists(st.lists(st.integers(0, 4), min_size=ns, max_size=ns),
                               min_size=nq, max_size=nq)), dtype=np.int64)
    for s in range(ns):
        if w[:, s].sum() == 0:
            w[draw(st.integers(0, nq - 1)), s] = 1
    l = draw(st.integers(1, ns))
    return w, l, draw(st.integers(1, 1000))


@settings(max_examples=120, deadline=None)
@given(_instances())
def test_greedy_equals_brute_force_optimum(inst):
    w, l, k = inst
    d = JointDistribution.from_matrix(w)
    pl_ = d.p_l(l)
    p = pl_ * Fraction(k, 1000)
    part = greedy_generalize(d, l, p)
    assert part.classes == _brute_force_optimum(w, l, p)
    for mode in ("csc", "csr", "sweep", "band", "band1", "band2", "band3"):
        # every way of closing a class gives the same partition
        assert greedy_generalize(d, l, p, _mode=mode).starts.tolist() == part.starts.tolist()
    total = int(w.sum())
    for a, b in part.bounds():
        assert _admissible(w, a, b + 1, l, p, total)
    assert int(part.sizes.sum()) == d.n_qi and part.starts[0] == 0
    assert part.classes <= m_value(d.p_sorted(), l, p, d.n_qi)  # Lemma 4.3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=12),
       st.lists(st.integers(1, 5), min_size=1, max_size=5), st.integers(1, 1000), st.data())
def test_product_and_sparse_paths_agree(wq, ws, k, data):
    d = JointDistribution.product(wq, ws)
    l = data.draw(st.integers(1, len(ws)))
    p = d.p_l(l) * Fraction(k, 1000)
    a = greedy_generalize(d, l, p)
    b = greedy_generalize(d.to_sparse(), l, p)
    assert a.starts.tolist() == b.starts.tolist()
    assert a.classes == _brute_force_optimum(d.dense().astype(np.int64), l, p)


def test_generalize_ind_lemma_4_7_non_uniform():
    wq = [2, 3, 2, 4, 2, 5, 2, 2, 3, 2, 2, 3]
    d = JointDistribution.product(wq, [5, 3, 2])
    for l in (1, 2, 3):
        pl_ = d.p_l(l)
        for k in (1, 2, 5, 10, 20):
            p = pl_ / k
            part = generalize_ind(d, l, p)
            theta = Fraction(len(wq) * min(wq), sum(wq))
            bound = math.floor(theta * pl_ / p)
            assert (admissible_counts(d, part, p) >= l).all()
            if bound >= 1 and len(wq) % bound == 0:
                assert part.classes >= bound
            assert greedy_generalize(d, l, p).classes >= part.classes


def test_generalize_ind_rejects_dependent_joint():
    d = JointDistribution.from_matrix(np.array([[3, 0], [0, 3]]))
    with pytest.raises(DistributionError, match="independ"):
        generalize_ind(d, 1, Fraction(1, 4))


# --- planning both directions ------------------------------------------------------------------

def test_budget_planning_maximizes_classes():
    rng = np.random.default_rng(11)
    w = rng.integers(1, 5, size=(40, 6))
    d = JointDistribution.from_matrix(w)
    l, delta = 3, 0.05
    ps = d.p_sorted()
    total = d.total
    # every candidate threshold P(c, s) of a contiguous class (the paper's p-search)
    cands = set()
    cum = np.vstack([np.zeros((1, 6), dtype=np.int64), np.cumsum(w, axis=0)])
    for a in range(40):
        for b in range(a + 1, 41):
            for v in (cum[b] - cum[a]).tolist():
                f = Fraction(v, total)
                if 0 < f <= ps[l - 1]:
                    cands.add(f)
    for budget in (200, 500, 2000):
        plan = plan_mechanism(d, l, delta, budget=budget)
        assert plan.N <= budget
        best = max(greedy_generalize(d, l, c).classes for c in cands
                   if sample_size(l, delta, c, m_value(ps, l, c, 40)) <= budget)
        assert plan.classes == best


def test_budget_round_trip_uniform(uniform):
    plan = plan_mechanism(uniform, 10, 0.01, budget=65606)
    assert plan.p == Fraction(1, 5000) and plan.classes == 100 and plan.N == 65606
    assert p_for_budget(uniform, 10, 0.01, 65606) <= Fraction(1, 5000)
    with pytest.raises(InvalidParameterError, match="too small"):
        plan_mechanism(uniform, 10, 0.01, budget=400)


def test_plan_json_keys(uniform):
    d = plan_mechanism(uniform, 10, 0.01, beta=0.01).to_dict()
    assert list(d) == ["p", "p_l", "beta", "m", "N", "classes", "class_bounds"]
    assert d["class_bounds"][0] == [[560001, "F", 0], [560001, "F", 29]]
    assert d["class_bounds"][-1] == [[560010, "X", 70], [560010, "X", 99]]
    assert d["beta"] == pytest.approx(0.01) and d["N"] == 65606 and d["m"] == 500


@pytest.mark.parametrize(("kw", "msg"), [
    ({"l": 51, "delta": 0.01, "beta": 0.5}, "exceeds"),
    ({"l": 10, "delta": 1.0, "beta": 0.5}, "delta"),
    ({"l": 10, "delta": 0.01, "p": 0.03}, "p must be in"),
    ({"l": 10, "delta": 0.01, "beta": 0.5, "p": 0.001}, "exactly one"),
    ({"l": 10, "delta": 0.01}, "exactly one"),
    ({"l": 10, "delta": 0.01, "beta": 1.5}, "beta"),
    ({"l": 0, "delta": 0.01, "beta": 0.5}, "l must"),
])
def test_plan_rejects_bad_parameters(uniform, kw, msg):
    with pytest.raises(InvalidParameterError, match=msg):
        plan_mechanism(uniform, **kw)


def test_distribution_validation():
    with pytest.raises(DistributionError):
        JointDistribution.product([1, 2], [1, 0])
    with pytest.raises(DistributionError):
        JointDistribution.from_matrix(np.array([[0.5, 0.5]]))
    with pytest.raises(LdivError):
        JointDistribution.from_matrix(np.array([[1, 0], [1, 0]]))  # a value of probability 0
    assert as_fraction("beta", 0.01) == Fraction(1, 100)


# --- applying the broadcast classes ------------------------------------------------------------

def test_estimate_from_reference_table_and_apply_with_engine():
    rng = np.random.default_rng(5)
    n = 4000
    ref = pl.DataFrame({"age": rng.integers(20, 60, n), "s": rng.choice(list("abcdef"), n)})
    d = JointDistribution.from_frequency_set(ref, ["age"], "s")
    counts = ref.group_by("age", "s").len()
    assert d.total == n and d.n_qi == ref["age"].n_unique()
    plan = plan_mechanism(d, 3, 0.05, beta="1/2")
    owner = pl.DataFrame({"age": rng.integers(15, 65, 3000), "s": rng.choice(list("abcdef"), 3000)})
    via_expr = plan.apply(owner).collect()
    via_join = owner.lazy().join(plan.class_map().lazy(), on="age", how="left",
                                 maintain_order="left").collect()
    inside = via_join["ec"].is_not_null()
    assert via_expr.filter(inside)["ec"].to_list() == via_join.filter(inside)["ec"].to_list()
    out_of_domain = int((~owner["age"].is_between(20, 59)).sum())
    assert via_expr["ec"].null_count() == out_of_domain
    narrow = plan.apply(owner.with_columns(pl.col("age").cast(pl.Int16))).collect()
    assert narrow["ec"].to_list() == via_expr["ec"].to_list()  # dtype of the owner's column
    anon = plan.anonymize(owner, "s")
    assert anon.rows == 3000 and anon.suppressed == out_of_domain
    released = anon.frame.collect()
    assert released.height == 3000 - out_of_domain
    own = released.group_by("ec").agg(pl.col("s").n_unique()).get_column("s").min()
    assert anon.achieved_l == own and anon.passed == (own >= 3)
    res = check(released, ["ec"], "s", [DistinctLDiversity(3)])
    assert res.passed == anon.passed
    assert counts.height > 0


def test_apply_multi_column_domain_by_join(uniform):
    plan = plan_mechanism(uniform, 10, 0.01, beta=0.02)
    owner = pl.DataFrame({"postal": [560001, 560001, 560010, 999999],
                          "gender": ["F", "M", "X", "F"], "age": [59, 60, 99, 1]})
    out = plan.apply(owner).collect()["ec"].to_list()
    # lexicographic order: (560001,F,59) is position 59 -> class 0; (560001,M,60) is 160 -> 2
    assert out == [0, 2, 49, None]


def test_given_order_with_unseen_vectors_and_count_releases():
    ref = pl.DataFrame({"zone": ["b", "b", "a", "a", "c", "c"],
                        "s": ["x", "y", "x", "y", "x", "y"]})
    order = pl.DataFrame({"zone": ["c", "z", "b", "a"]})  # "z" never seen: weight 0
    d = JointDistribution.from_frequency_set(ref, ["zone"], "s", order=order)
    assert d.domain["zone"].to_list() == ["c", "z", "b", "a"]
    assert d.qi_weights().tolist() == [2, 0, 2, 2]
    part = greedy_generalize(d, 2, Fraction(1, 6))
    # c alone is admissible; z (weight 0) joins b; a alone
    assert part.bounds() == [(0, 0), (1, 2), (3, 3)]
    plan = plan_mechanism(d, 2, 0.1, p="1/6")
    mapped = plan.apply(pl.DataFrame({"zone": ["z", "a", "q"]})).collect()["ec"].to_list()
    assert mapped == [1, 2, None]
    with pytest.raises(DistributionError, match="misses"):
        JointDistribution.from_frequency_set(ref, ["zone"], "s", order=order.head(2))


def test_degenerate_single_value_needs_one_record():
    d = JointDistribution.uniform(4, 1)
    plan = plan_mechanism(d, 1, 0.01, beta=1)
    assert plan.p == 1 and plan.N == 1 and plan.classes == 1  # P(c, s) >= 1: whole domain
    assert sample_size(1, 0.5, "1/2", 1) == 1  # 1 * (1/2)^1 <= 1/2
    assert sample_size(1, 0.49, "1/2", 1) == 2
    with pytest.raises(InvalidParameterError):
        sample_size(1, 0.5, 0, 1)


def test_sparse_modes_agree_on_a_larger_joint():
    rng = np.random.default_rng(21)
    w = rng.integers(0, 3, size=(3000, 40)) * (rng.random((3000, 40)) < 0.08)
    w[0, :] += 1
    d = JointDistribution.from_matrix(w)
    for l, k in ((2, 1), (2, 2000), (3, 5000), (12, 50), (30, 200)):
        p = d.p_l(l) / k
        parts = [greedy_generalize(d, l, p, _mode=m).starts.tolist()
                 for m in ("auto", "csc", "csr", "sweep", "band", "band32")]
        assert all(part == parts[0] for part in parts)


@pytest.mark.parametrize("density,l,k", [(0.3, 3, 5000), (0.05, 2, 1000), (0.2, 5, 1500),
                                         (0.1, 1, 6000), (0.3, 3, 1000)])
def test_many_class_regime_auto_equals_reference_scan(density, l, k):
    """Thousands of short classes: ``auto`` switches to the windowed sweep and the band; the
    partition equals the pure-Python reference scan and every class is admissible."""
    rng = np.random.default_rng(int(density * 1000) + l)
    nq, ns = 20_000, 30
    w = rng.integers(1, 6, size=(nq, ns)) * (rng.random((nq, ns)) < density)
    w[0, :] += 1
    d = JointDistribution.from_matrix(w)
    p = d.p_l(l) / k
    auto = greedy_generalize(d, l, p)
    assert auto.classes > 1000
    for mode in ("csr", "sweep", "band4"):
        assert greedy_generalize(d, l, p, _mode=mode).starts.tolist() == auto.starts.tolist()
    counts = admissible_counts(d, auto, p)
    assert int(counts.min()) >= l
    # no class can be split: the prefix of every class up to its last-but-one position fails
    cw = np.cumsum(w, axis=0, dtype=np.int64)
    t = -(-p.numerator * d.total // p.denominator)
    for a, b in auto.bounds()[:-1]:
        before = cw[a - 1] if a else 0
        assert int(((cw[b] - before) >= t).sum()) >= l
        if b > a:
            assert int(((cw[b - 1] - before) >= t).sum()) < l


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_frequency_set_fast_path_equals_the_generic_path(seed, monkeypatch):
    """Coded columns (integers of small and large span, strings, nulls as values, two QI
    columns) give the same domain, cells and partition as sorting and joining the frames."""
    import ldiv_polars.linkage.distribution as dist_mod

    rng = np.random.default_rng(seed)
    nrows = 3000
    zips = rng.choice(["z1", "z10", "z2", None], nrows).tolist()
    ages = rng.integers(-5, 40, nrows) * (10**15 if seed == 2 else 1)
    sens = rng.choice(["flu", "hiv", None, "acne"] if seed else ["flu", "hiv", "acne"],
                      nrows).tolist()
    df = pl.DataFrame({"zip": zips, "age": ages, "s": sens})
    qi = ["zip", "age"] if seed != 1 else ["age"]
    fast = JointDistribution.from_frequency_set(df, qi, "s", nulls="value")
    monkeypatch.setattr(dist_mod, "_lexicographic_cells", lambda *a: None)
    slow = JointDistribution.from_frequency_set(df, qi, "s", nulls="value")
    assert fast.domain.equals(slow.domain, null_equal=True)
    assert fast.sensitive_values.equals(slow.sensitive_values, null_equal=True)
    for a, b in ((fast.q_idx, slow.q_idx), (fast.s_idx, slow.s_idx), (fast.weight, slow.weight)):
        assert a.tolist() == b.tolist()
    assert fast.sparse_index.csr.tolist() == np.argsort(fast.q_idx, kind="stable").tolist()
    p = fast.p_l(2) / 20
    assert greedy_generalize(fast, 2, p).starts.tolist() == \
        greedy_generalize(slow, 2, p).starts.tolist()


def test_auto_on_a_mixed_joint_short_then_long_classes():
    """Dense short classes first (auto picks the band), then a sparse stretch where classes
    are long (the band leaves them to the sweep): same partition as the reference scan."""
    rng = np.random.default_rng(5)
    nq, ns = 30_000, 12
    w = rng.integers(1, 4, size=(nq, ns)) * (rng.random((nq, ns)) < 0.6)
    w[nq // 2:] *= rng.random((nq - nq // 2, ns)) < 0.03
    w[0, :] += 1
    d = JointDistribution.from_matrix(w)
    for l, k in ((2, 3000), (4, 1500)):
        p = d.p_l(l) / k
        auto = greedy_generalize(d, l, p)
        assert auto.classes > 1000
        assert max(auto.sizes[:-1]) > 64  # some classes are longer than any band
        for mode in ("csr", "csc", "sweep"):
            assert greedy_generalize(d, l, p, _mode=mode).starts.tolist() == \
                auto.starts.tolist()


def test_frequency_set_with_a_repeated_cell_is_rejected():
    from ldiv_polars.core.frequency import FrequencySet

    frame = pl.DataFrame({"q": [1, 1, 2], "s": ["a", "a", "b"], "n": [2, 3, 1]})
    with pytest.raises(DistributionError, match="twice"):
        JointDistribution.from_frequency_set(FrequencySet(frame.lazy(), ("q",), ("s",)))
