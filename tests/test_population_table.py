"""k-map against a population table and delta-presence (issue 19 item 5): check and the
lattice search against brute forces on small tables, and k-anonymity's answers when the
population is the sample itself."""

from __future__ import annotations

import math
from collections import Counter

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars import check
from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import DeltaPresence, KAnonymity, KMapPopulation
from ldiv_polars.search import anonymize
from tests.lattice_brute import assert_search_matches, classes_at, nodes, random_qi


@st.composite
def samples(draw):
    """A sample, a population containing it (plus extra records) and hierarchies."""
    n_qi = draw(st.integers(1, 2))
    rows = draw(st.integers(2, 12))
    extra = draw(st.integers(0, 12))
    cols, pcols, hier = {}, {}, {}
    for i in range(n_qi):
        vals, hier[f"q{i}"], cols[f"q{i}"] = random_qi(draw, st, i, rows)
        pcols[f"q{i}"] = cols[f"q{i}"] + draw(
            st.lists(st.sampled_from(vals), min_size=extra, max_size=extra))
    return pl.DataFrame(cols), pl.DataFrame(pcols), hier


def _ok(model, size: int, pop: int) -> bool:
    """The definitions, written out (Sweeney's k-map; Nergiz et al.'s delta-presence)."""
    if isinstance(model, KMapPopulation):
        return pop >= model.k
    return pop > 0 and model.delta_min <= size / pop <= model.delta_max


def _models(draw_kind: str, k: int, pop: pl.DataFrame):
    if draw_kind == "kmap":
        return KMapPopulation(k, pop)
    return DeltaPresence(*sorted((0.25 * (k - 1), 0.3 + 0.2 * k)), pop)


@settings(max_examples=40, deadline=None)
@given(samples(), st.sampled_from(["kmap", "delta"]), st.integers(1, 3))
def test_check_equals_the_definition(data, kind, k):
    df, pop, hier = data
    qi = list(hier)
    model = _models(kind, k, pop)
    sample, population = Counter(df.select(qi).iter_rows()), Counter(pop.select(qi).iter_rows())
    failing = [key for key, f in sample.items() if not _ok(model, f, population[key])]
    res = check(df, qi, None, model).models[0]
    assert res.passed == (not failing)
    assert res.failing_classes == len(failing)
    assert res.failing_rows == sum(sample[key] for key in failing)


@settings(max_examples=40, deadline=None)
@given(samples(), st.sampled_from(["kmap", "delta"]), st.integers(1, 3),
       st.sampled_from([0.0, 0.2, 0.4]))
def test_search_equals_brute_force(data, kind, k, suppression):
    df, pop, hier = data
    qi = list(hier)
    model = _models(kind, k, pop)
    limit = int(math.floor(suppression * df.height + 1e-9))
    good = []
    for levels in nodes(hier):
        sample, population = classes_at(df, hier, levels), classes_at(pop, hier, levels)
        if sum(f for key, f in sample.items() if not _ok(model, f, population[key])) <= limit:
            good.append(levels)
    res = anonymize(df, qi, None, {q: Hierarchy(r) for q, r in hier.items()}, model,
                    suppression=suppression, metric="height")
    assert res.monotone == (kind == "kmap")
    assert_search_matches(res, qi, good, limit, require_complete=False)


@pytest.mark.parametrize("dense,key_space", [(True, None), (False, None), (False, 0)])
@settings(max_examples=20, deadline=None)
@given(data=samples())
def test_population_counts_per_node_equal_the_brute_force(dense, key_space, data):
    """Each node's population count per class, counted densely, by sorted int64 keys and (key
    space exceeded) by rows of codes, equals the count of the generalized population."""
    from ldiv_polars.core.frequency import FrequencySet
    from ldiv_polars.search import population
    from ldiv_polars.search.rollup import EncodedFrequencySet

    df, pop, hier = data
    qi = list(hier)
    hs = {q: Hierarchy(r) for q, r in hier.items()}
    efs = EncodedFrequencySet.from_frame(FrequencySet.build(df, qi, None).materialize(), hs)
    counts = population.PopulationCounts(pop, efs.encoding)
    old = population.KEY_SPACE_MAX, population.DENSE_KEYS_MAX
    population.KEY_SPACE_MAX = old[0] if key_space is None else key_space
    population.DENSE_KEYS_MAX = old[1] if dense else 0
    try:
        for levels in nodes(hier):
            rolled = efs.rollup(list(levels))
            labels = efs.class_labels(rolled).select(qi).rows()
            expected = classes_at(pop, hier, levels)
            assert counts.per_class(rolled).tolist() == [expected[key] for key in labels]
    finally:
        population.KEY_SPACE_MAX, population.DENSE_KEYS_MAX = old


@settings(max_examples=30, deadline=None)
@given(samples(), st.integers(1, 4), st.sampled_from([0.0, 0.25]))
def test_population_equal_to_the_sample_is_k_anonymity(data, k, suppression):
    df, _, hier = data
    qi = list(hier)
    hs = {q: Hierarchy(r) for q, r in hier.items()}
    mine = check(df, qi, None, KMapPopulation(k, df)).models[0]
    ref = check(df, qi, None, KAnonymity(k)).models[0]
    assert (mine.passed, mine.failing_classes, mine.failing_rows) == \
        (ref.passed, ref.failing_classes, ref.failing_rows)
    a = anonymize(df, qi, None, hs, KMapPopulation(k, df), suppression=suppression,
                  metric="height")
    b = anonymize(df, qi, None, hs, KAnonymity(k), suppression=suppression, metric="height")
    assert a.found == b.found
    if a.found:
        assert (a.levels, a.suppressed_rows) == (b.levels, b.suppressed_rows)


def test_classes_absent_from_the_population_fail_and_keys_are_matched_as_text():
    pop = pl.DataFrame({"age": [30, 30, 40]})
    sample = pl.DataFrame({"age": [30, 50]})
    res = check(sample, "age", None, [KMapPopulation(1, pop), DeltaPresence(0.0, 1.0, pop)])
    assert [(m.passed, m.failing_rows) for m in res.models] == [(False, 1), (False, 1)]


def test_bad_input_is_typed():
    pop = pl.DataFrame({"zip": ["1"]})
    with pytest.raises(UnknownColumnError):
        check(pl.DataFrame({"age": ["1"]}), "age", None, KMapPopulation(2, pop))
    with pytest.raises(InvalidParameterError):
        DeltaPresence(0.6, 0.5, pop)
    with pytest.raises(InvalidParameterError):
        KMapPopulation(0, pop)


# --- the CLI -----------------------------------------------------------------------------------


def _cli(*args):
    import subprocess
    import sys
    from pathlib import Path

    ldiv = Path(sys.executable).parent / "ldiv"
    if not ldiv.exists():
        pytest.skip(f"the installed `ldiv` script is not next to {sys.executable}")
    return subprocess.run([str(ldiv), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def files(tmp_path):
    rows = [("130", "1", "a"), ("131", "2", "b"), ("131", "3", "a"), ("140", "1", "b"),
            ("140", "1", "a"), ("130", "2", "b"), ("131", "2", "a")]
    pop = pl.DataFrame(rows, schema=["zip", "age", "s"], orient="row")
    pop.write_csv(tmp_path / "pop.csv")
    pop.head(4).write_csv(tmp_path / "sample.csv")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "zip.csv").write_text("130;13*;*\n131;13*;*\n140;14*;*\n")
    (tmp_path / "h" / "age.csv").write_text("1;a;*\n2;a;*\n3;b;*\n")
    return tmp_path


def test_cli_check_and_anonymize_with_a_population_table(files):
    pop, sample = files / "pop.csv", files / "sample.csv"
    # classes (130,1) and (131,3) have 1 population record each
    r = _cli("check", sample, "--qi", "zip,age", "--sensitive", "s", "--k-map", 2, "--population-table", pop,
             "--json")
    assert r.returncode == 1, r.stderr
    import json

    verdict = json.loads(r.stdout)["models"][0]
    assert (verdict["model"], verdict["failing_rows"]) == ("k_map_population", 2)
    out = files / "out.csv"
    r = _cli("anonymize", sample, out, "--qi", "zip,age", "--sensitive", "s", "--hierarchies", files / "h",
             "--k-map", 2, "--population-table", pop)
    assert r.returncode == 0, r.stdout + r.stderr
    # the lowest node where every class has >= 2 population records: age fully generalized
    assert pl.read_csv(out, schema_overrides={"zip": pl.String})["age"].to_list() == ["*"] * 4
    r = _cli("check", sample, "--qi", "zip,age", "--sensitive", "s", "--delta-presence", "0.2,0.7",
             "--population-table", pop)
    assert r.returncode == 1


@pytest.mark.parametrize("flags,message", [
    (["--delta-presence", "0.1"], "MIN,MAX"),
    (["--delta-presence", "0.1,0.5"], "needs --population-table"),
    (["--population-table", "POP"], "add one of them"),
    (["--k-map", "2", "--population-table", "POP", "--significance", "0.1"], "estimated"),
])
def test_cli_bad_flags_exit_2(files, flags, message):
    flags = [str(files / "pop.csv") if f == "POP" else f for f in flags]
    r = _cli("check", files / "sample.csv", "--qi", "zip,age", "--sensitive", "s", *flags)
    assert r.returncode == 2 and message in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_cli_population_table_read_with_the_command_separator(files):
    """``--population-table`` is read with ``--separator`` as the main table is (issue 19):
    with ``|`` the default sniffing would see one column and refuse the QIs."""
    pop, sample = (pl.read_csv(files / f) for f in ("pop.csv", "sample.csv"))
    pop.write_csv(files / "pop_bar.csv", separator="|")
    sample.write_csv(files / "sample_bar.csv", separator="|")
    r = _cli("check", files / "sample_bar.csv", "--qi", "zip,age", "--sensitive", "s",
             "--separator", "|", "--k-map", 2, "--population-table", files / "pop_bar.csv",
             "--json")
    import json

    verdict = json.loads(r.stdout)["models"][0]  # the same verdict as with commas
    assert (r.returncode, verdict["failing_rows"]) == (1, 2), r.stderr
    r = _cli("check", files / "sample_bar.csv", "--qi", "zip,age", "--sensitive", "s",
             "--separator", "|", "--k-map", 2, "--population-table", files / "pop_bar.csv",
             "--json", "--engine", "duckdb")  # the DuckDB form: the same verdict
    verdict = json.loads(r.stdout)["models"][0]
    assert (r.returncode, verdict["failing_rows"]) == (1, 2), r.stderr
    r = _cli("mondrian", files / "sample_bar.csv", files / "m.csv", "--qi", "zip,age",
             "--sensitive", "s", "--separator", "|", "--k", 1, "--k-map", 2,
             "--population-table", files / "pop_bar.csv", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["verified"]


def test_cli_mondrian_method_with_a_population_table(files):
    """``ldiv anonymize --method mondrian`` enforces k-map against the population table and
    re-verifies the written release (its groups matched with the population); the written
    groups each match >= 3 population records (counted here over the records)."""
    out = files / "m.csv"
    r = _cli("anonymize", files / "sample.csv", out, "--qi", "zip,age", "--sensitive", "s",
             "--hierarchies", files / "h", "--method", "mondrian", "--k-map", 3,
             "--population-table", files / "pop.csv")
    assert r.returncode == 0, r.stdout + r.stderr
    pop = pl.read_csv(files / "pop.csv")  # zip and age are numbers: released as ranges
    release = pl.read_csv(out, infer_schema=False)
    assert release.height == 4
    for cells in release.select("zip", "age").unique().iter_rows():
        ranges = [tuple(int(v) for v in (c.split("-") * 2)[:2]) for c in cells]
        n = sum(all(lo <= v <= hi for v, (lo, hi) in zip(row, ranges))
                for row in pop.select("zip", "age").iter_rows())
        assert n >= 3, cells
