"""The DuckDB engine decides (alpha,k) and recursive (c,l) exactly in SQL, on integers (the
threshold as the decimal it was written as: ``max n * den <= num * size``, ``r1 * den <
num * tail``), never asking the Python exact step: checked with the ``ldiv_decide`` UDF
replaced by one that fails, on classes sitting exactly on the threshold, against the verdicts
computed here with fractions."""

from __future__ import annotations

from fractions import Fraction

import polars as pl
import pytest

duckdb = pytest.importorskip("duckdb")

from ldiv_polars.models import AlphaKAnonymity, RecursiveCLDiversity  # noqa: E402

# class q: its sensitive values (3 of 10 = 0.3 exactly; 1/2; 2/3; r1 = tail for l = 2)
CLASSES = {
    1: ["a"] * 3 + ["b", "c", "d", "e", "f", "g", "h"],
    2: ["a", "a", "b", "b"],
    3: ["a", "a", "b"],
    4: ["a", "a", "a", "b", "b", "c"],
}


def frame() -> pl.DataFrame:
    rows = [(q, v) for q, vs in CLASSES.items() for v in vs]
    return pl.DataFrame(rows, schema=["q", "s"], orient="row")


def counts(vs: list[str]) -> list[int]:
    return sorted((vs.count(v) for v in set(vs)), reverse=True)


def alpha_passes(alpha: str, k: int) -> list[bool]:
    return [len(vs) >= k and Fraction(counts(vs)[0], len(vs)) <= Fraction(alpha)
            for vs in CLASSES.values()]


def recursive_passes(c: str, l: int) -> list[bool]:
    out = []
    for vs in CLASSES.values():
        r = counts(vs)
        out.append(len(r) >= l and r[0] < Fraction(c) * sum(r[l - 1:]))
    return out


@pytest.fixture()
def con(monkeypatch):
    import ldiv_polars.duckdb as ld

    def refuse(spec, ranks, counts, table, labels):  # the UDF's signature
        raise AssertionError("the Python exact step was asked")

    monkeypatch.setattr(ld, "_decide_udf", refuse)
    c = ld.install(duckdb.connect())
    yield c
    c.close()


@pytest.mark.parametrize("model, want", [
    (AlphaKAnonymity(0.3, 1), alpha_passes("0.3", 1)),
    (AlphaKAnonymity(0.5, 1), alpha_passes("0.5", 1)),
    (AlphaKAnonymity(0.5, 5), alpha_passes("0.5", 5)),
    (AlphaKAnonymity(2 / 3, 1), alpha_passes(repr(2 / 3), 1)),
    (RecursiveCLDiversity(1, 2), recursive_passes("1", 2)),
    (RecursiveCLDiversity(1.5, 2), recursive_passes("1.5", 2)),
    (RecursiveCLDiversity(0.6, 3), recursive_passes("0.6", 3)),
])
def test_on_the_threshold_decided_in_sql(con, model, want):
    import ldiv_polars.duckdb as ld

    got = ld.check(frame(), "q", "s", [model], con=con)[0]
    sizes = [len(vs) for vs in CLASSES.values()]
    assert got["passed"] == all(want), (model, got)
    assert got["failing_classes"] == sum(not w for w in want)
    assert got["failing_rows"] == sum(n for n, w in zip(sizes, want) if not w)
    if model.name == "recursive_cl" or model.k == 1:  # the achieved value decides the verdict
        assert model.satisfied_by(got["achieved"]) == got["passed"], (model, got)


def test_a_threshold_beyond_bigint_keeps_the_float_form_and_the_exact_step():
    from ldiv_polars.models.exact import int64_ratio

    assert AlphaKAnonymity(1e-30, 1).sql_call().macro == "ldiv__alpha_k_classes_x"
    assert AlphaKAnonymity(0.5, 1).sql_call().macro == "ldiv__alpha_k_exact_classes_x"
    assert int64_ratio(Fraction(2**63 - 1, 2)) == (2**63 - 1, 2)
    assert int64_ratio(Fraction(2**63, 3)) is None
