"""MDAV: the pruned implementation against the brute-force reference, hand-worked cells, the
distortion definitions, and the data-independent design (spec export, assign)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.microagg import (
    PartitionSpec,
    assign,
    design_partition,
    distortion,
    effective_anonymity,
    mdav,
    mdav_reference,
)


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert np.array_equal(a.labels, b.labels)
    assert np.array_equal(a.references, b.references)
    assert np.array_equal(a.radii, b.radii)
    assert a.boundary_ties == b.boundary_ties


@pytest.mark.parametrize(
    "n, m, k, kind",
    [
        (400, 2, 3, "normal"),
        (1000, 5, 5, "normal"),
        (2500, 10, 5, "normal"),
        (300, 1, 4, "normal"),
        (900, 3, 7, "int"),
        (600, 2, 4, "sorted"),
        (500, 4, 10, "skewed"),
        (64, 2, 20, "normal"),
    ],
)
def test_fast_equals_reference(n: int, m: int, k: int, kind: str) -> None:
    rng = np.random.default_rng(n + m + k)
    if kind == "int":  # many exact ties and duplicates
        x = rng.integers(0, 6, size=(n, m)).astype(float)
    elif kind == "sorted":
        x = np.sort(rng.normal(size=(n, m)), axis=0)
    elif kind == "skewed":
        x = rng.lognormal(sigma=1.5, size=(n, m))
    else:
        x = rng.normal(size=(n, m))
    a, b = mdav(x, k), mdav_reference(x, k)
    _same(a, b)
    assert a.distortion == b.distortion


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 120),
    m=st.integers(1, 4),
    k=st.integers(1, 9),
    seed=st.integers(0, 10**6),
    ints=st.booleans(),
)
def test_fast_equals_reference_property(n: int, m: int, k: int, seed: int, ints: bool) -> None:
    if n < k:
        with pytest.raises(InvalidParameterError, match="at least k"):
            mdav(np.zeros((n, m)), k)
        return
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(n, m)).astype(float) if ints else rng.normal(size=(n, m))
    a, b = mdav(x, k), mdav_reference(x, k)
    _same(a, b)
    # MDAV's cell sizes: all exactly k except the last, which has k .. 2k-1
    sizes = np.bincount(a.labels)
    assert sizes.sum() == n
    assert (
        (sizes[:-1] == k).all() and k <= sizes[-1] <= 2 * k - 1 or (sizes.size == 1 and n < 2 * k)
    )
    assert a.n_cells == n // k


def test_hand_worked_one_dimension() -> None:
    # 9 values, k = 3: centroid 41.33, farthest 62 -> {60,61,62}; farthest from 62 is 21 ->
    # {21,22,23}; the rest {40,41,42}
    x = np.array([21, 22, 23, 40, 41, 42, 60, 61, 62], dtype=float)
    res = mdav(x, 3)
    assert res.labels.tolist() == [1, 1, 1, 2, 2, 2, 0, 0, 0]
    assert res.references.tolist() == [8, 0, -1]
    assert res.centroids[:, 0].tolist() == [61.0, 22.0, 41.0]
    # D = SSE / SST: SSE = 3 * 2 = 6 (raw units); SST = sum (x - mean)^2
    sst = float(((x - x.mean()) ** 2).sum())
    assert res.distortion == pytest.approx(6.0 / sst)


def test_two_k_to_three_k_branch() -> None:
    # 7 records, k = 3: one cell around the farthest record, the rest (4) form the last cell
    x = np.array([0.0, 0.1, 0.2, 5.0, 5.1, 5.2, 9.0])
    assert mdav(x, 3).labels.tolist() == [1, 1, 1, 1, 0, 0, 0]


def test_standardization_makes_units_irrelevant() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(500, 3))
    scaled = x * np.array([1.0, 1000.0, 0.001]) + np.array([5.0, -3.0, 100.0])
    a, b = mdav(x, 5), mdav(scaled, 5)
    assert np.array_equal(a.labels, b.labels)
    # without standardization the big column dominates: a different partition
    assert not np.array_equal(a.labels, mdav(scaled, 5, standardize=False).labels)


def test_weighted_centroids_and_distortion() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(200, 2))
    w = rng.uniform(0.2, 1.0, size=200)
    res = mdav(x, 6, weights=w)
    for c in range(res.n_cells):
        members = res.labels == c
        expected = (w[members, None] * x[members]).sum(0) / w[members].sum()
        assert res.centroids[c] == pytest.approx(expected)
    # weighted D by its definition: (1/(m sum w)) sum w |z - zhat_w|^2
    z = (x - x.mean(0)) / x.std(0)
    num = 0.0
    for c in range(res.n_cells):
        mbr = res.labels == c
        zc = (w[mbr, None] * z[mbr]).sum(0) / w[mbr].sum()
        num += float((w[mbr] * ((z[mbr] - zc) ** 2).sum(1)).sum())
    assert res.weighted_distortion == pytest.approx(num / (2 * w.sum()))
    # equal weights: weighted D = D = SSE / (m n)
    eq = mdav(x, 6, weights=np.full(200, 0.75))
    assert eq.weighted_distortion == pytest.approx(eq.distortion)
    sse = sum(
        float(((z[eq.labels == c] - z[eq.labels == c].mean(0)) ** 2).sum())
        for c in range(eq.n_cells)
    )
    assert eq.distortion == pytest.approx(sse / (2 * 200))
    assert distortion(x, eq.labels) == pytest.approx(eq.distortion)


def test_distortion_grows_with_cell_size() -> None:
    # Fig. 11: D rises as pi falls (n_min grows) and only slowly as p_bar falls
    x = np.random.default_rng(3).normal(size=(1500, 3))
    d = {pi: mdav(x, effective_anonymity(5, pi, 1e-5).n_min).distortion for pi in (1.0, 0.75, 0.5)}
    assert d[1.0] < d[0.75] < d[0.5]
    d6 = mdav(x, effective_anonymity(5, 0.75, 1e-6).n_min).distortion
    assert d[0.75] <= d6 < 1.25 * d[0.75]


def test_bad_input() -> None:
    with pytest.raises(InvalidParameterError, match="finite"):
        mdav(np.array([[1.0], [np.nan], [2.0]]), 1)
    with pytest.raises(InvalidParameterError, match="at least k"):
        mdav(np.zeros((3, 2)), 4)
    with pytest.raises(InvalidParameterError, match="one entry per record"):
        mdav(np.zeros((6, 2)), 2, weights=[1.0, 2.0])
    with pytest.raises(InvalidParameterError, match="k must be"):
        mdav(np.zeros((6, 2)), 0)
    with pytest.raises(InvalidParameterError, match="numeric"):
        mdav([["a", "b"]], 1)


# --- design -------------------------------------------------------------------------------------


def test_design_assign_reproduces_model_population() -> None:
    pop = np.random.default_rng(8).normal(size=(1200, 3))
    spec = design_partition(pop, k=5, pi=0.75, p_bar=1e-5)
    assert spec.n_min == effective_anonymity(5, 0.75, 1e-5).n_min
    assert spec.boundary_ties == 0
    assert np.array_equal(spec.labels, mdav(pop, spec.n_min).labels)
    for method in ("intensional", "extensional"):
        assert np.array_equal(assign(pop, spec, method=method), spec.labels)  # type: ignore[arg-type]
    # exported and read back (exact floats), the intensional form alone suffices
    back = PartitionSpec.from_json(spec.to_json(extensional=False))
    assert np.array_equal(assign(pop, back), spec.labels)
    with pytest.raises(InvalidParameterError, match="without its model points"):
        assign(pop, back, method="extensional")
    # a single respondent applies it locally
    assert int(assign(pop[17], back)[0]) == int(spec.labels[17])


def test_design_new_respondents() -> None:
    rng = np.random.default_rng(9)
    pop = rng.normal(size=(600, 2))
    spec = design_partition(pop, k=4)
    new = rng.normal(size=(50, 2))
    got = assign(new, spec, method="extensional")
    # extensional: the cell of the nearest model point (brute force)
    z_new = (new - spec.mean) / spec.scale
    nearest = ((z_new[:, None, :] - spec.points[None]) ** 2).sum(-1).argmin(1)
    assert np.array_equal(got, spec.labels[nearest])
    # intensional: the first referenced ball containing the point, else the rest cell
    inten = assign(new, spec)
    for i, z in enumerate(z_new):
        inside = [
            c
            for c in range(spec.references.shape[0])
            if ((z - spec.references[c]) ** 2).sum() <= spec.radii[c]
        ]
        assert inten[i] == (inside[0] if inside else spec.rest_cell)


def test_design_with_polars_frame_and_ties() -> None:
    import polars as pl

    rng = np.random.default_rng(2)
    df = pl.DataFrame({"a": rng.integers(0, 3, 200), "b": rng.integers(0, 3, 200)})
    spec = design_partition(df, ["a", "b"], k=5)
    assert spec.columns == ("a", "b")
    got = assign(df, spec, method="extensional")
    # with duplicated points a record may take the cell of an identical record: same x
    x = df.to_numpy()
    for i in range(200):
        same_x = (x == x[i]).all(1)
        assert got[i] in set(spec.labels[same_x].tolist())
    with pytest.raises(InvalidParameterError, match="p_bar is required"):
        design_partition(df, ["a", "b"], k=5, pi=0.5)
    with pytest.raises(InvalidParameterError, match="not an ldiv"):
        PartitionSpec.from_json('{"format": "other"}')


# --- p-probabilistic MDAV -----------------------------------------------------------------------

from ldiv_polars.microagg import attained_failure, cell_failures, p_probabilistic_mdav  # noqa: E402


def test_cell_failures_vectorized_equals_per_cell() -> None:
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 7, 120)
    pis = rng.uniform(0.1, 1.0, 120)
    got = cell_failures(labels, pis, 4)
    for c in range(7):
        assert got[c] == pytest.approx(
            attained_failure(4, pis[labels == c], int((labels == c).sum())), abs=1e-15
        )
    assert cell_failures(labels, 0.5, 1).tolist() == [0.0] * 7


@pytest.mark.parametrize("n, m, k", [(500, 2, 5), (800, 3, 4), (333, 1, 7)])
def test_p_probabilistic_reduces_to_mdav(n: int, m: int, k: int) -> None:
    x = np.random.default_rng(n).normal(size=(n, m))
    # per-record pi all 1: exactly MDAV(k); all equal to pi: exactly MDAV(n_min)
    assert np.array_equal(
        p_probabilistic_mdav(x, k, np.ones(n), 1e-6).mdav.labels, mdav(x, k).labels
    )
    for pi in (0.75, 0.5):
        n_min = effective_anonymity(k, pi, 1e-5).n_min
        var = p_probabilistic_mdav(x, k, np.full(n, pi), 1e-5)
        const = p_probabilistic_mdav(x, k, pi, 1e-5)
        assert np.array_equal(var.mdav.labels, mdav(x, n_min).labels)
        assert np.array_equal(const.mdav.labels, var.mdav.labels) and const.n_min == n_min
        assert var.satisfied and const.satisfied


def test_p_probabilistic_variable_cells() -> None:
    rng = np.random.default_rng(21)
    x = rng.normal(size=(1500, 3))
    pis = rng.uniform(0.3, 1.0, 1500)
    res = p_probabilistic_mdav(x, 5, pis, 1e-5)
    sizes = res.mdav.sizes
    assert res.satisfied and (res.cell_failure <= 1e-5).all()
    assert sizes.min() >= 5 and sizes.min() < sizes.max()  # sizes adapt to the probabilities
    # each cell but the last is minimal along its distance order: dropping its farthest member
    # (the last one Algorithm A added) breaks the requirement
    z = (x - x.mean(0)) / x.std(0)
    for c in range(res.mdav.n_cells - 1):
        members = np.flatnonzero(res.mdav.labels == c)
        ref = int(res.mdav.references[c])
        d = ((z[members] - z[ref]) ** 2).sum(1)
        order = members[np.lexsort((members, d))]
        if order.size > 5:
            assert attained_failure(5, pis[order[:-1]], order.size - 1) > 1e-5
    # centroids are pi-weighted
    c0 = res.mdav.labels == 0
    assert res.mdav.centroids[0] == pytest.approx((pis[c0, None] * x[c0]).sum(0) / pis[c0].sum())


def test_p_probabilistic_too_few_records() -> None:
    x = np.random.default_rng(0).normal(size=(12, 2))
    res = p_probabilistic_mdav(x, 10, np.full(12, 0.5), 1e-6)
    assert not res.satisfied and res.mdav.n_cells == 1
    with pytest.raises(InvalidParameterError, match="one entry per record"):
        p_probabilistic_mdav(x, 2, np.full(11, 0.5), 1e-6)
