"""Mondrian with the models judged against a population table (issue 19): every released
group checked against the population by a brute force over the records (its box: the range
of each numeric QI and the set of each other QI of its rows), the release re-verified, and
k-anonymity's partition when the population is the table itself."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.errors import UnknownColumnError
from ldiv_polars.models import DeltaPresence, KAnonymity, KMapPopulation
from ldiv_polars.partition.mondrian import PartitionInfeasibleError, mondrian
from tests.test_population_table import _ok as _holds  # the definitions, written out

QI = ["age", "zip", "sex"]
NUMERIC = {"age", "zip"}


@st.composite
def tables(draw):
    """A sample (age, zip numeric; sex text) and a population holding it plus extra records,
    some with values the sample lacks (matching no released set or range)."""
    n = draw(st.integers(2, 14))
    row = st.tuples(st.integers(18, 30), st.integers(1, 6), st.sampled_from("MF"))
    rows = draw(st.lists(row, min_size=n, max_size=n))
    extra = draw(st.lists(st.tuples(st.integers(15, 33), st.integers(0, 7),
                                    st.sampled_from("MFX")), max_size=25))
    sample = pl.DataFrame(rows, schema=QI, orient="row").with_columns(
        s=pl.Series([str(i % 2) for i in range(n)]))
    pop = pl.DataFrame(rows + extra, schema=QI, orient="row")
    return sample, pop


def _box_count(rows: list[dict], pop: pl.DataFrame) -> int:
    """Population records inside the box of ``rows`` (written out over the records)."""
    lo = {c: min(r[c] for r in rows) for c in NUMERIC}
    hi = {c: max(r[c] for r in rows) for c in NUMERIC}
    sets = {c: {r[c] for r in rows} for c in QI if c not in NUMERIC}
    return sum(all(lo[c] <= p[c] <= hi[c] for c in NUMERIC)
               and all(p[c] in sets[c] for c in sets) for p in pop.iter_rows(named=True))


def _model(kind: str, k: int, pop: pl.DataFrame):
    if kind == "kmap":
        return KMapPopulation(k, pop)
    return DeltaPresence(0.15 * (k - 1), min(1.0, 0.35 + 0.2 * k), pop)


@settings(max_examples=60, deadline=None)
@given(tables(), st.sampled_from(["kmap", "delta"]), st.integers(1, 4), st.booleans())
def test_every_group_satisfies_the_model_against_the_population(data, kind, k, relaxed):
    sample, pop = data
    model = _model(kind, k, pop)
    rows = sample.to_dicts()
    try:
        res = mondrian(sample, QI, "s", [model], relaxed=relaxed)
    except PartitionInfeasibleError:  # then the whole table fails, by the brute force
        assert not _holds(model, len(rows), _box_count(rows, pop))
        return
    assert res.verification.passed
    groups = res.frame.collect().to_dicts()
    for g in {r["group"] for r in groups}:
        members = [r for r in groups if r["group"] == g]
        assert _holds(model, len(members), _box_count(members, pop)), (g, members)


@settings(max_examples=30, deadline=None)
@given(tables(), st.integers(1, 4))
def test_population_equal_to_the_table_gives_k_anonymity(data, k):
    """Strict Mondrian's groups are disjoint regions, so with the table as its own population
    a group's population count is its size: k-map is k-anonymity, and delta-presence with
    ``delta_max = 1`` allows every split (k-anonymity with k = 1)."""
    sample, _ = data
    pop = sample.select(QI)
    for model, same in ((KMapPopulation(k, pop), KAnonymity(k)),
                        (DeltaPresence(0.5, 1.0, pop), KAnonymity(1))):
        try:
            got = mondrian(sample, QI, "s", [model]).ranges
        except PartitionInfeasibleError:
            with pytest.raises(PartitionInfeasibleError):
                mondrian(sample, QI, "s", [same])
            continue
        assert got.equals(mondrian(sample, QI, "s", [same]).ranges)


def test_delta_presence_is_checked_not_assumed_monotone():
    """The mediant example of docs/risk.md: the whole table passes delta-presence while its
    halves do not (one above delta_max, one below delta_min), so Mondrian keeps one group."""
    sample = pl.DataFrame({"age": [20, 20, 20, 40], "s": list("abab")})
    pop = pl.DataFrame({"age": [20, 20, 20] + [40] * 9})
    res = mondrian(sample, ["age"], "s", [DeltaPresence(0.25, 0.75, pop)])
    assert res.groups == 1 and res.verification.passed  # 4/12 passes; 3/3 and 1/9 fail
    assert res.verification.models[0].to_dict()["passed"]


def test_population_values_are_compared_by_value():
    """A population read with other types (zip as text, age as float) matches the same
    records; a population without a QI column is a typed error."""
    sample = pl.DataFrame({"age": [20, 21, 30, 31], "zip": ["1", "1", "2", "2"],
                           "s": list("abab")})
    pop = pl.DataFrame({"age": [20.0, 21.0, 30.0, 31.0, 20.0], "zip": ["1", "1", "2", "2", "1"]})
    res = mondrian(sample, ["age", "zip"], "s", [KMapPopulation(2, pop)])
    assert res.groups == 2 and res.verification.passed
    with pytest.raises(UnknownColumnError):
        mondrian(sample, ["age", "zip"], "s", [KMapPopulation(2, pop.drop("zip"))])
