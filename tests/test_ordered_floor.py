"""The suppression floor of ordered t-closeness (docs/anonymize.md, "Sound pruning with
suppression": the class's own dual function, flat into the values the suppression may remove).

1. Its terms ``(f.(p - q), max_C f - f.q)`` on the dense and on the sparse path equal the
   definition computed here in exact arithmetic (random classes, ids in a shuffled order).
2. The floor is a lower bound of the failing rows of every split against every reference
   within the slack (brute force over all splits of small classes and all removals), and the
   same brute force finds a violation when the floor is weakened: without the flat gaps (a
   value the suppression removes changes the distance), or without the slack.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldiv_polars.models import TCloseness, emd_arrays
from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain

VALUES = [3, 10, 25, 100, 7]  # "10" < "100" < "25" < "3" as text: the order is numeric


def _rows(classes: list[Counter], table: Counter, seed: int) -> EncodedRows:
    """Encoded rows of ``classes`` against the table counts ``table`` (ids shuffled)."""
    ids = list(np.random.default_rng(seed).permutation(VALUES))
    id_of = {v: i for i, v in enumerate(ids)}
    cls, s, n = [], [], []
    for c, counts in enumerate(classes):
        for v in sorted(counts, key=id_of.get):
            cls.append(c)
            s.append(id_of[v])
            n.append(counts[v])
    ref = np.array([table.get(v, 0) for v in ids], dtype=np.int64)
    return EncodedRows(np.array(cls), np.array(s), np.array(n), classes=len(classes),
                       n_sensitive=len(ids), reference=ref,
                       domain=SensitiveDomain(pl.DataFrame({"s": ids})))


def _terms_by_definition(c: Counter, table: Counter, vanishing: set[int]
                         ) -> tuple[Fraction, Fraction]:
    """``(f.(p - q), max_C f - f.q)`` of the floor's function, from its definition."""
    dom = sorted(v for v in table if table[v])
    size, total = sum(c.values()), sum(table[v] for v in dom)
    f = [Fraction(0)]
    big_p = big_q = Fraction(0)
    for i, v in enumerate(dom[:-1]):
        big_p += Fraction(c.get(v, 0), size)
        big_q += Fraction(table[v], total)
        step = 0 if dom[i + 1] in vanishing else (-1 if big_p >= big_q else 1)
        f.append(f[-1] + Fraction(step, len(dom) - 1))
    fp = sum(fv * Fraction(c.get(v, 0), size) for fv, v in zip(f, dom))
    fq = sum(fv * Fraction(table[v], total) for fv, v in zip(f, dom))
    fmax = max(fv for fv, v in zip(f, dom) if c.get(v, 0))
    return fp - fq, fmax - fq


def draw_classes(draw, dom: list[int], max_count: int, max_classes: int,
                 max_extra: int | None) -> tuple[list[Counter], Counter]:
    """Drawn classes over the values ``dom`` (1 to ``max_classes`` classes, each a non-empty
    set of distinct values with 1 to ``max_count`` rows each) and the table: their sum plus 0
    to ``max_extra`` more rows of each value (``None``: the classes' sum only)."""
    classes = [Counter({v: draw(st.integers(1, max_count)) for v in draw(
        st.lists(st.sampled_from(dom), min_size=1, max_size=len(dom), unique=True))})
        for _ in range(draw(st.integers(1, max_classes)))]
    table = sum(classes, Counter())
    if max_extra is not None:
        for v in dom:
            table[v] += draw(st.integers(0, max_extra))
    return classes, table


@st.composite
def _case(draw):
    m = draw(st.integers(2, len(VALUES)))
    dom = draw(st.permutations(VALUES))[:m]
    classes, table = draw_classes(draw, dom, 9, 6, 6)
    vanishing = set(draw(st.lists(st.sampled_from(dom), max_size=m, unique=True)))
    return classes, table, vanishing, draw(st.integers(0, 5))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_floor_terms_dense_sparse_and_definition(case):
    classes, table, vanishing, seed = case
    if sum(1 for v in table if table[v]) <= 1:  # one value: no distance, no terms
        assert emd_arrays.ordered_floor_terms(_rows(classes, table, seed),
                                              np.zeros(len(VALUES), dtype=bool)) is None
        return
    want = [_terms_by_definition(c, table, vanishing) for c in classes]
    for dense in (True, False):
        rows = _rows(classes, table, seed)
        if not dense:
            rows.prefers_dense = lambda width: False  # type: ignore[method-assign]
        mask = np.array([v in vanishing for v in rows.domain.column.to_list()])
        num, spread = emd_arrays.ordered_floor_terms(rows, mask)
        assert np.allclose(num, [float(w[0]) for w in want], rtol=0, atol=1e-12), dense
        assert np.allclose(spread, [float(w[1]) for w in want], rtol=0, atol=1e-12), dense
        assert (spread >= num - 1e-12).all()


# --- soundness by brute force -------------------------------------------------------------------


def _exact_emd(part: Counter, kept: Counter) -> Fraction:
    """The ordered EMD of ``part`` against the retained table ``kept`` (its own domain)."""
    dom = sorted(v for v in kept if kept[v])
    if len(dom) <= 1:
        return Fraction(0)
    size, total = sum(part.values()), sum(kept[v] for v in dom)
    acc = cum = Fraction(0)
    for v in dom[:-1]:
        cum += Fraction(part.get(v, 0), size) - Fraction(kept[v], total)
        acc += abs(cum)
    return acc / (len(dom) - 1)


def _least_failing(cls: Counter, others: Counter, limit: int, t: Fraction) -> int:
    """The fewest rows of ``cls`` in failing parts over every split of ``cls`` into at most
    two parts and every removal of at most ``limit`` rows of ``others`` (whole values or
    not), the parts judged against the rows kept (the class's own failing rows removed too:
    they are suppressed)."""
    vals = sorted(cls)
    best = sum(cls.values())
    removals = [dict(zip(sorted(others), r)) for r in _within(
        [others[v] for v in sorted(others)], limit)]
    for first in itertools.product(*[range(cls[v] + 1) for v in vals]):
        a = Counter({v: x for v, x in zip(vals, first) if x})
        b = Counter({v: cls[v] - a.get(v, 0) for v in vals if cls[v] - a.get(v, 0)})
        for rem in removals:
            for fail_a, fail_b in itertools.product((False, True), repeat=2):
                failing = (sum(a.values()) if fail_a else 0) + (sum(b.values()) if fail_b
                                                                 else 0)
                if failing >= best or failing + sum(rem.values()) > limit:
                    continue
                kept = Counter({v: others[v] - rem.get(v, 0) for v in others})
                for part, fails in ((a, fail_a), (b, fail_b)):
                    if part and not fails:
                        kept.update(part)
                ok = all(not part or fails or _exact_emd(part, kept) <= t
                         for part, fails in ((a, fail_a), (b, fail_b)))
                if ok:
                    best = failing
    return best


def _within(counts: list[int], budget: int) -> list[tuple[int, ...]]:
    """Every way to take at most ``budget`` rows from values with ``counts`` rows."""
    if not counts:
        return [()]
    return [(r, *rest) for r in range(min(counts[0], budget) + 1)
            for rest in _within(counts[1:], budget - r)]


def _floor(model: TCloseness, cls: Counter, others: Counter, limit: int) -> float:
    table = cls + others
    floor = model.suppression_floor(_rows([cls], table, 0), limit / sum(table.values()))
    return 0.0 if floor is None else float(floor[0])


CASES = [
    # (class, the table's other rows, limit, t)
    (Counter({3: 3, 100: 1}), Counter({10: 1, 25: 2, 100: 3}), 1, Fraction(1, 5)),
    (Counter({3: 4}), Counter({7: 2, 10: 1, 25: 1, 100: 2}), 2, Fraction(1, 10)),
    (Counter({3: 2, 7: 1, 25: 2}), Counter({3: 1, 10: 2, 100: 2}), 2, Fraction(1, 5)),
    (Counter({7: 3, 100: 2}), Counter({3: 2, 10: 1, 25: 1}), 1, Fraction(3, 20)),
    # 25 (one row) may vanish: its flat gap is what keeps the floor at 0 here
    (Counter({100: 2, 3: 1}), Counter({10: 31, 3: 10, 7: 3, 100: 1, 25: 1}), 2, Fraction(1, 4)),
    # the reference may move towards the class: the slack keeps the floor at 0
    (Counter({7: 3}), Counter({25: 3, 7: 3}), 2, Fraction(1, 5)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_floor_is_a_lower_bound_by_brute_force(case):
    cls, others, limit, t = CASES[case]
    assert _floor(TCloseness(float(t), "ordered"), cls, others, limit) <= \
        _least_failing(cls, others, limit, t) + 1e-9


def test_weakened_floors_are_caught(monkeypatch):
    """Without the flat gaps, or without the slack, the floor claims rows that a split
    against an admissible reference keeps: the brute force above would fail on them."""
    cls, others, limit, t = CASES[4]
    assert _least_failing(cls, others, limit, t) == 0
    real = emd_arrays.vanishing_ids  # no value vanishes: every gap kept (both paths read it)
    monkeypatch.setattr(emd_arrays, "vanishing_ids",
                        lambda rows, slack: np.zeros_like(real(rows, slack)))
    assert _floor(TCloseness(float(t), "ordered"), cls, others, limit) > 1.0
    monkeypatch.undo()
    cls, others, limit, t = CASES[5]
    assert _least_failing(cls, others, limit, t) == 0
    assert _floor(TCloseness(float(t), "ordered"), cls, others, 0) > 1.0
