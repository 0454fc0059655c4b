"""Per-class statistics in one pass (``models/class_stats.py``, kernel ``class_stats`` in
``_floors.c``): the kernel equals its numpy twin exactly (the same integers, the same floats)
and both equal the definitions written out class by class; the kernel declines what it does
not handle (rows not grouped by class, ``j`` beyond ``MAX_J``, a count beyond the table) and
the twin then answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.models import class_stats as cs
from ldiv_polars.models.encoded import EncodedRows

pytestmark = pytest.mark.skipif(cs._kernel is None, reason="the C kernel is not built")


@st.composite
def encoded_rows(draw):
    """Classes (some without rows) of 1-7 values with counts of 1-40 (ties drawn on purpose)."""
    classes = draw(st.integers(1, 12))
    cls, s, n = [], [], []
    for c in range(classes):
        values = draw(st.integers(0, 7))
        counts = draw(st.lists(st.sampled_from([1, 2, 2, 3, 5, 40]) | st.integers(1, 40),
                               min_size=values, max_size=values))
        for v, k in enumerate(counts):
            cls.append(c)
            s.append(v)
            n.append(k)
    return EncodedRows(np.array(cls, dtype=np.int64), np.array(s, dtype=np.int64),
                       np.array(n, dtype=np.int64), classes=classes, n_sensitive=8)


def _by_definition(rows: EncodedRows, j: int) -> dict[str, list]:
    out: dict[str, list] = {"distinct": [], "r1": [], "top": [], "s": []}
    for c in range(rows.classes):
        counts = rows.n[rows.cls == c].tolist()
        ranked = sorted(counts, reverse=True)
        out["distinct"].append(len(counts))
        out["r1"].append(ranked[0] if ranked else 0)
        out["top"].append(sum(ranked[:j]))
        out["s"].append(math.fsum(k * math.log(k) for k in counts))
    return out


@settings(max_examples=150, deadline=None)
@given(rows=encoded_rows(), j=st.integers(1, 6), with_s=st.booleans())
def test_kernel_equals_numpy_and_the_definition(rows, j, with_s):
    was, cs.KERNEL = cs.KERNEL, True
    try:
        kernel = cs.class_stats(rows, j, with_s)
    finally:
        cs.KERNEL = was
    twin = cs.class_stats_numpy(rows, j, with_s)
    assert kernel.keys() == twin.keys()
    for key in kernel:
        assert kernel[key].dtype == twin[key].dtype
        assert kernel[key].tolist() == twin[key].tolist(), key  # the same floats too
    want = _by_definition(rows, j)
    for key in ("distinct", "r1", "top"):
        assert kernel[key].tolist() == want[key]
    if with_s:
        assert np.allclose(kernel["s"], want["s"], rtol=1e-12, atol=1e-12)


def test_kernel_declines_and_the_twin_answers(monkeypatch):
    rows = EncodedRows(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([3, 1, 2]),
                       classes=2, n_sensitive=2)
    z = [np.zeros(2, dtype=np.int64) for _ in range(3)]
    # not grouped by class: declined (1)
    assert cs._kernel.class_stats(np.array([1, 0, 0]), rows.n, np.zeros(0), 1, *z,
                                  np.zeros(0)) == 1
    # j beyond MAX_J, and a count beyond the table: declined, the twin's values returned
    assert cs._kernel.class_stats(rows.cls, rows.n, np.zeros(0), cs.MAX_J + 1, *z,
                                  np.zeros(0)) == 1
    assert cs._kernel.class_stats(rows.cls, rows.n, np.zeros(2), 1, *z, np.zeros(2)) == 1
    monkeypatch.setattr(cs, "KERNEL", True)
    got = cs.class_stats(rows, cs.MAX_J + 1, True)
    assert got["top"].tolist() == [4, 2] and got["r1"].tolist() == [3, 2]
    big = EncodedRows(np.array([0, 0]), np.array([0, 1]),
                      np.array([cs.XLOGX_MAX + 1, 1]), classes=1, n_sensitive=2)
    k = float(cs.XLOGX_MAX + 1)
    assert cs.class_stats(big, 1, True)["s"].tolist() == [k * math.log(k)]
    # a class out of range raises
    with pytest.raises(IndexError):
        cs._kernel.class_stats(np.array([0, 5]), rows.n[:2], np.zeros(0), 1, *z, np.zeros(0))
