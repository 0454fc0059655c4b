"""Composition ledger (Theorem 4.5)."""

from __future__ import annotations

import pytest

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.linkage.distribution import JointDistribution
from ldiv_polars.linkage.ledger import CompositionLedger, classes_fingerprint
from ldiv_polars.linkage.mechanism import plan_mechanism


@pytest.fixture(scope="module")
def plans():
    d = JointDistribution.paper_setting("uniform")
    return (plan_mechanism(d, 10, 0.01, beta=0.01), plan_mechanism(d, 10, 0.01, beta=0.02),
            plan_mechanism(d, 10, 0.001, beta=0.01))


def test_t_releases_compose_to_t_delta(plans):
    a = plans[0]
    led = CompositionLedger()
    for t in range(1, 6):
        led.record_plan(f"owner {t}", a)
        g = led.guarantee()
        assert g.applies and g.l == 10 and g.releases == t
        assert g.delta == pytest.approx(t * 0.01)


def test_mixed_parameters_same_classes_sum_deltas(plans):
    a, _, c = plans  # same classes (beta 0.01), deltas 0.01 and 0.001
    assert classes_fingerprint(a) == classes_fingerprint(c)
    led = CompositionLedger()
    led.record_plan("x", a)
    led.record_plan("y", c)
    led.record("z", l=12, delta=0.005, classes=a)
    g = led.guarantee()
    assert g.applies and g.l == 10 and g.delta == pytest.approx(0.016)
    assert led.guarantee(["y", "z"]).delta == pytest.approx(0.006)
    assert led.guarantee(["y", "z"]).l == 10


def test_different_classes_have_no_guarantee(plans):
    a, b, _ = plans
    assert classes_fingerprint(a) != classes_fingerprint(b)
    led = CompositionLedger()
    led.record_plan("x", a)
    led.record_plan("y", b)
    g = led.guarantee()
    assert not g.applies and g.l is None and "different classes" in g.reason


def test_vacuous_budget_and_json(plans):
    led = CompositionLedger()
    for i in range(3):
        led.record(f"r{i}", l=3, delta=0.4, classes="grid-A")
    g = led.guarantee()
    assert g.vacuous and g.delta == pytest.approx(1.2) and g.to_dict()["vacuous"]
    led2 = CompositionLedger.from_json(led.to_json())
    assert led2.guarantee() == g
    small = CompositionLedger()
    small.record("a", l=2, delta=0.01, classes="g")
    assert small.releases_within(0.05) == 4  # 0.04 left / 0.01


def test_ledger_errors():
    led = CompositionLedger()
    assert not led.guarantee().applies
    led.record("a", l=2, delta=0.1)
    with pytest.raises(InvalidParameterError):
        led.record("a", l=2, delta=0.1)
    with pytest.raises(InvalidParameterError):
        led.record("b", l=0, delta=0.1)
    with pytest.raises(InvalidParameterError):
        led.record("c", l=2, delta=1.5)
    with pytest.raises(InvalidParameterError):
        led.guarantee(["nope"])
