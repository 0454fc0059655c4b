"""The engine boundary (``ldiv_polars.core.engines``): every engine gives the same frequency set
and the same encoded counts of the same input, under one validation, null policy and error
mapping; frequency sets merge by summing counts; the engine is chosen from the input."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.core.engines import duckdb as duck_engine
from ldiv_polars.core.engines import polars as polars_engine
from ldiv_polars.core.engines.base import (
    Engine,
    OutputPlan,
    decode_keys,
    engine_for,
    places,
)
from ldiv_polars.core.frequency import COUNT, FrequencySet, merge_frequency_sets
from ldiv_polars.errors import (
    InputFormatError,
    InvalidParameterError,
    NullValuesError,
    UnknownColumnError,
    UnreadableInputError,
)

ENGINES = [polars_engine.ENGINE, duck_engine.ENGINE]


def _rows(fs: FrequencySet) -> list[tuple]:
    df = fs.frame.collect()
    return sorted(df.select([*fs.qi, *fs.sensitive, COUNT]).rows(),
                  key=lambda r: tuple((v is None, str(v)) for v in r))


def _brute(df: pl.DataFrame, keys: list[str]) -> list[tuple]:
    """The frequency set counted in Python (independent of both engines)."""
    counts: dict[tuple, int] = {}
    for row in df.select(keys).rows():
        counts[row] = counts.get(row, 0) + 1
    return sorted(((*k, n) for k, n in counts.items()),
                  key=lambda r: tuple((v is None, str(v)) for v in r))


def test_every_engine_satisfies_the_protocol():
    for e in ENGINES:
        assert isinstance(e, Engine)


# column names an SQL engine could misread: a keyword, quotes, unicode, spaces
NAMES = ["select", 'q"uote', "zip code", "âge", "n_"]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_frequency_sets_agree_across_engines(tmp_path_factory, data):
    rows = data.draw(st.integers(0, 40))
    nq = data.draw(st.integers(1, 3))
    qi = NAMES[:nq]
    s = NAMES[4]
    values = st.one_of(st.none(), st.sampled_from(["a", "b", "é", "'", ""]))
    cols = {c: data.draw(st.lists(values, min_size=rows, max_size=rows)) for c in [*qi, s]}
    df = pl.DataFrame(cols, schema={c: pl.String for c in cols})
    path = tmp_path_factory.mktemp("t") / "t.parquet"
    df.write_parquet(path)
    expected = _brute(df, [*qi, s])
    has_null = any(df.get_column(c).null_count() for c in [*qi, s])
    for e in ENGINES:
        for src in (df, path):
            assert _rows(e.frequency_set(src, qi, s, nulls="value")) == expected, (e.name, src)
            if has_null:
                with pytest.raises(NullValuesError):
                    e.frequency_set(src, qi, s)
            else:
                assert _rows(e.frequency_set(src, qi, s)) == expected


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
def test_one_validation_and_error_mapping(tmp_path, engine):
    df = pl.DataFrame({"q": ["a"], "s": ["x"]})
    with pytest.raises(UnknownColumnError):
        engine.frequency_set(df, ["nope"], "s")
    with pytest.raises(InvalidParameterError):
        engine.frequency_set(df, ["q"], "s", nulls="maybe")
    with pytest.raises(InputFormatError):
        engine.frequency_set(tmp_path / "missing.csv", ["q"], "s")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file PAR1")
    with pytest.raises(UnreadableInputError):
        engine.frequency_set(bad, ["q"], "s")
    # no key name is reserved on any engine: a QI named like the count column moves the count
    fs = engine.frequency_set(pl.DataFrame({COUNT: [1, 1, 2], "s": ["x", "x", "y"]}), [COUNT], "s")
    assert fs.count != COUNT and fs.qi == (COUNT,)
    got = fs.frame.collect().sort(COUNT).rows()
    assert got == [(1, "x", 2), (2, "y", 1)]


def test_duckdb_engine_reads_its_own_inputs():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('a', 'x'), ('a', 'y'), ('a', 'x')) "
                "v(q, s)")
    rel = con.sql("FROM t")
    expected = [("a", "x", 2), ("a", "y", 1)]
    assert _rows(duck_engine.ENGINE.frequency_set(rel, "q", "s")) == expected
    assert _rows(duck_engine.ENGINE.frequency_set("t", "q", "s", con=con)) == expected
    table = pa.table({"q": ["a", "a", "a"], "s": ["x", "y", "x"]})
    assert _rows(duck_engine.ENGINE.frequency_set(table, "q", "s")) == expected
    assert engine_for(rel).name == "duckdb" and duck_engine.ENGINE.accepts(rel)


def test_engine_choice():
    assert engine_for(pl.DataFrame({"a": [1]})).name == "polars"
    assert engine_for(pl.LazyFrame({"a": [1]})).name == "polars"
    assert engine_for("t.csv").name == "polars"
    assert engine_for("t.csv", "duckdb").name == "duckdb"
    with pytest.raises(InvalidParameterError, match="engine must be one of"):
        engine_for("t.csv", "oracle")


def _leaves(df: pl.DataFrame, qi: list[str]) -> dict[str, pl.Series]:
    return {q: df.get_column(q).cast(pl.String).unique().sort().reverse() for q in qi}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_encoded_counts_agree_across_engines(tmp_path, seed):
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({"a": rng.integers(0, 5, 300), "b": rng.choice(["x", "y", "z"], 300),
                       "s": rng.choice(["p", "q"], 300)})
    path = tmp_path / "t.parquet"
    df.write_parquet(path)
    qi = ["a", "b"]
    leaves = _leaves(df, qi)
    cards = [len(leaves[q]) for q in qi]
    # the expected counts, from the leaves' positions computed in Python
    pos = {q: {v: i for i, v in enumerate(leaves[q].to_list())} for q in qi}
    want: dict[int, int] = {}
    for a, b in df.select(qi).rows():
        k = pos["a"][str(a)] * places(cards)[0] + pos["b"][b]
        want[k] = want.get(k, 0) + 1
    keyed = polars_engine.ENGINE.encoded_counts(df.lazy(), qi, (), leaves, order_from=0)
    small = polars_engine.ENGINE.encoded_counts(df, qi, (), leaves)
    duck = duck_engine.ENGINE.encoded_counts(path, qi, ("s",), leaves, qi_only=True)
    try:
        for enc in (keyed, small, duck):
            assert enc is not None and enc.form == "keys" and enc.ordered
            assert dict(zip(enc.keys.tolist(), enc.n.tolist())) == want
            assert np.all(np.diff(enc.keys) > 0)
        # DuckDB and the small-frame path counted each raw value's rows in their pass
        for i, q in enumerate(qi):
            expect = [int((df.get_column(q).cast(pl.String) == v).sum())
                      for v in leaves[q].to_list()]
            assert duck.raw_counts[i].tolist() == expect == small.raw_counts[i].tolist()
    finally:
        duck.close()
    # the (QI, sensitive) forms: a frame (Polars' group-by of a LazyFrame) and cells (DuckDB,
    # and numpy's grouping of a small DataFrame), the same cells
    frame = polars_engine.ENGINE.encoded_counts(df.lazy(), qi, ("s",), leaves)
    assert frame.form == "frame"
    got = frame.frame.frame.collect().select(*qi, "s", COUNT).rows()
    for cells in (duck_engine.ENGINE.encoded_counts(path, qi, ("s",), leaves),
                  polars_engine.ENGINE.encoded_counts(df, qi, ("s",), leaves)):
        assert cells.form == "cells"
        svals = cells.sensitive_values.to_list()
        assert svals == sorted(svals)
        other = [(*map(int, cells.cell_codes()[:, j]), svals[cells.sensitive_ids[j]],
                  int(cells.n[j])) for j in range(cells.n.shape[0])]
        assert sorted(got) == sorted(other)
    # a value that is not a raw value: no encoded counts (the caller reports it)
    short = {"a": leaves["a"][1:], "b": leaves["b"]}
    assert polars_engine.ENGINE.encoded_counts(df, qi, (), short) is None
    assert polars_engine.ENGINE.encoded_counts(df.lazy(), qi, (), short) is None
    assert duck_engine.ENGINE.encoded_counts(path, qi, ("s",), short, qi_only=True) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_in_memory_keys_are_grouped_by_a_sort(monkeypatch, seed):
    """A DataFrame above the small-frame limit has its keys grouped by one numpy sort
    (``_sorted_key_counts``): the same classes and counts as the streaming group-by and as a
    count in Python, ascending; a null or unknown QI value still gives None."""
    monkeypatch.setattr(polars_engine, "SMALL_FRAME_MAX_ROWS", 0)
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({"a": rng.integers(0, 6, 2000), "b": rng.choice(["x", "y", "z"], 2000)})
    qi = ["a", "b"]
    leaves = _leaves(df, qi)
    pos = {q: {v: i for i, v in enumerate(leaves[q].to_list())} for q in qi}
    want: dict[int, int] = {}
    for a, b in df.rows():
        k = pos["a"][str(a)] * places([6, 3])[0] + pos["b"][b]
        want[k] = want.get(k, 0) + 1
    eng = polars_engine.ENGINE
    for order_from, ordered in ((0, True), (len(want), True), (len(want) + 1, False), (None,
                                                                                       False)):
        mem = eng.encoded_counts(df, qi, (), leaves, order_from=order_from)
        assert mem.form == "keys" and mem.ordered is ordered
        assert mem.keys.tolist() == sorted(want) and mem.n.tolist() == [want[k] for k in
                                                                        sorted(want)]
    streamed = eng.encoded_counts(df.lazy(), qi, (), leaves, order_from=0)
    assert np.array_equal(streamed.keys, mem.keys) and np.array_equal(streamed.n, mem.n)
    assert eng.encoded_counts(df, qi, (), {"a": leaves["a"][1:], "b": leaves["b"]}) is None
    nulled = df.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(None)
                             .otherwise(pl.col("b")).alias("b"))
    assert eng.encoded_counts(nulled, qi, (), leaves) is None
    empty = polars_engine._sorted_key_counts(pl.Series([], dtype=pl.Int64), ("a",), 0)
    assert empty.keys.tolist() == [] and empty.n.tolist() == [] and empty.ordered


def test_decode_keys_inverts_places():
    rng = np.random.default_rng(0)
    cards = [7, 1, 300, 4]
    codes = np.stack([rng.integers(0, c, 1000) for c in cards])
    keys = sum(codes[i].astype(np.int64) * p for i, p in enumerate(places(cards)))
    assert np.array_equal(decode_keys(keys, cards).T, codes)


def test_release_masks_or_drops_the_suppressed_classes():
    df = pl.DataFrame({"z": ["a", "b", "c", "c"], "s": [1, 2, 3, 4]})
    dtype = pl.Enum(["ab", "c", "*"])
    labels = pl.Series(["ab", "ab", "c"]).cast(dtype)
    supp = pl.DataFrame({"z": pl.Series(["c"]).cast(dtype)}).select(
        pl.struct("z").alias("x")).get_column("x")
    for mode, rows in (("mask", [("ab", 1), ("ab", 2), ("*", 3), ("*", 4)]),
                       ("drop", [("ab", 1), ("ab", 2)])):
        plan = OutputPlan(("z",), {"z": pl.Series(["a", "b", "c"])}, {"z": labels}, supp,
                          mode=mode)
        rel = polars_engine.ENGINE.release(df, plan)
        out = rel.output.collect()
        assert out.select(pl.col("z").cast(pl.String), "s").rows() == rows
        assert rel.retained.collect().height == 2


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 4)),
                min_size=0, max_size=40),
       st.sets(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 4)),
               max_size=6), st.sampled_from(["mask", "drop"]))
def test_keyed_release_counts_equal_the_column_group_by(rows, suppressed, mode):
    """The release's suppressed flag on one Int64 key per row and the QI-only frequency set
    grouped on that key (``keyed_frequency_set``) equal the struct test and the group-by on
    the label columns (brute force in Python for the counts), for random Enum releases."""
    enums = [pl.Enum([f"v{i}" for i in range(c)] + ["*"]) for c in (4, 3, 5)]
    qi = ["a", "b", "c"]
    df = pl.DataFrame({q: [f"v{r[i]}" for r in rows] for i, q in enumerate(qi)},
                      schema={q: pl.String for q in qi})
    leaves = {q: pl.Series([f"v{i}" for i in range(c)]) for q, c in zip(qi, (4, 3, 5))}
    labels = {q: leaves[q].cast(e) for q, e in zip(qi, enums)}
    supp = pl.DataFrame({q: [f"v{s[i]}" for s in sorted(suppressed)] for i, q in enumerate(qi)},
                        schema=dict(zip(qi, enums))).select(pl.struct(qi).alias("x"))["x"]
    plan = OutputPlan(tuple(qi), leaves, labels, supp if len(supp) else None, mode=mode)
    rel = polars_engine.ENGINE.release(df, plan)
    kept = [r for r in rows if r not in suppressed]
    assert rel.retained.collect().height == len(kept)
    out = rel.output.collect()
    assert out.height == (len(rows) if mode == "mask" else len(kept))
    if mode == "mask":  # a suppressed row is masked in every QI, the others keep their labels
        got = out.select(pl.col(q).cast(pl.String) for q in qi).rows()
        assert got == [("*",) * 3 if r in suppressed else tuple(f"v{x}" for x in r)
                       for r in rows]
    keyed = polars_engine.keyed_frequency_set(rel.retained, qi)
    assert keyed is not None and keyed.qi == tuple(qi) and not keyed.sensitive
    got = keyed.frame.collect()
    assert got.schema == FrequencySet.build(rel.retained, qi, None).frame.collect().schema
    brute: dict[tuple, int] = {}
    for r in kept:
        brute[tuple(f"v{x}" for x in r)] = brute.get(tuple(f"v{x}" for x in r), 0) + 1
    assert {tuple(r[:3]): r[3] for r in got.select(
        *(pl.col(q).cast(pl.String) for q in qi), keyed.count).rows()} == brute
    assert got.height == len(brute)


def test_keyed_frequency_set_needs_enums_and_refuses_nulls():
    e = pl.Enum(["x", "y"])
    lf = pl.LazyFrame({"a": ["x", None, "y"], "b": ["y", "y", "x"]}, schema={"a": e, "b": e})
    with pytest.raises(NullValuesError):
        polars_engine.keyed_frequency_set(lf, ["a", "b"]).frame.collect()
    assert polars_engine.keyed_frequency_set(lf.with_columns(pl.col("a").cast(pl.String)),
                                             ["a", "b"]) is None
    wide = pl.Enum([str(i) for i in range(70_000)])
    assert polars_engine.enum_key(list("abcd"), [wide] * 4) is None  # 70000**4 > 2**62


def test_merged_frequency_sets_equal_the_whole_table():
    rng = np.random.default_rng(1)
    df = pl.DataFrame({"a": rng.integers(0, 4, 500), "b": rng.choice(["x", "y"], 500),
                       "s": rng.choice(["p", "q", "r"], 500)})
    whole = polars_engine.ENGINE.frequency_set(df, ["a", "b"], "s")
    parts = [df.slice(0, 100), df.slice(100, 300), df.slice(400, 100)]
    sites = [polars_engine.ENGINE.frequency_set(p, ["a", "b"], "s") for p in parts]
    merged = merge_frequency_sets(sites)
    assert (merged.qi, merged.sensitive) == (("a", "b"), ("s",))
    assert _rows(merged) == _rows(whole) == _brute(df, ["a", "b", "s"])
    frames = [s.frame.collect() for s in sites]
    assert _rows(merge_frequency_sets(frames, ["a", "b"], "s")) == _rows(whole)
    with pytest.raises(InvalidParameterError, match="different columns"):
        merge_frequency_sets([sites[0], FrequencySet(sites[1].frame, ("a",), ("b",))])
    with pytest.raises(InvalidParameterError, match="dtypes"):
        merge_frequency_sets([frames[0], frames[1].with_columns(pl.col("a").cast(pl.String))],
                             ["a", "b"], "s")
    with pytest.raises(InvalidParameterError):
        merge_frequency_sets([])


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, "x"]),
                          st.sampled_from([None, "p", "q"]), st.sampled_from([None, "u"])),
                min_size=1, max_size=12))
def test_one_null_policy_in_every_engine_and_the_sql_wrappers(rows):
    """The Polars engine, the DuckDB engine and the DuckDB check (one and two sensitive
    columns, QIs given in another order than the table's) raise the same NullValuesError: the
    rows with a null per column, counted here row by row, in the order the columns were
    given."""
    import ldiv_polars as lp
    import ldiv_polars.duckdb as ld
    from ldiv_polars.models import DistinctLDiversity, KAnonymity, MultiAttribute

    df = pl.DataFrame(rows, schema=["a", "b", "s", "t"], orient="row")
    for qi, s in ((["b", "a"], ["s"]), (["b", "a"], ["t", "s"])):
        expect = {c: sum(r[df.columns.index(c)] is None for r in rows) for c in [*qi, *s]}
        expect = {c: n for c, n in expect.items() if n}
        models = [KAnonymity(1), MultiAttribute(DistinctLDiversity(1))] if len(s) > 1 else \
            [KAnonymity(1)]
        calls = [lambda e=e: e.frequency_set(df, qi, s) for e in ENGINES]
        calls += [lambda: lp.check(df, qi, s, models), lambda: ld.check(df, qi, s, models)]
        for call in calls:
            if expect:
                with pytest.raises(NullValuesError) as err:
                    call()
                assert list(err.value.counts.items()) == list(expect.items())
            else:
                call()


def _cells(enc) -> list[tuple]:
    """The ``(codes..., sensitive value, n)`` rows of encoded counts in any form, sorted."""
    if enc.form == "frame":
        df = enc.frame.frame.collect()
        rows = df.select(*enc.qi, *enc.sensitive, enc.frame.count).rows()
    elif enc.form == "keys":
        rows = list(zip(enc.keys.tolist(), enc.n.tolist()))
    else:
        svals = enc.sensitive_values.to_list()
        rows = [(*map(int, enc.cell_codes()[:, j]), svals[enc.sensitive_ids[j]], int(enc.n[j]))
                for j in range(enc.n.shape[0])]
    return sorted(rows, key=lambda r: tuple((v is None, str(v)) for v in r))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 40), st.integers(1, 3), st.booleans(), st.booleans(),
       st.sampled_from(["str", "int", "null"]), st.booleans(), st.integers(0, 2**31 - 1))
def test_small_frame_counts_equal_the_group_by(rows, q, unknown, null_qi, s_kind, coded, seed):
    """The numpy grouping of a small DataFrame gives exactly the Polars group-by's counts (of
    the same frame, lazy): the keys, the cells with sorted sensitive ids, each raw value's
    rows, also with QI columns read as codes (``coded``: the Enum of their raw values, as
    ``read_coded`` reads a CSV); where it does not apply (a QI value unknown or null, a
    sensitive column that is not String or holds nulls) the group-by's answer, None
    included."""
    rng = np.random.default_rng(seed)
    cols = {f"q{i}": rng.choice(["a", "b", "c", "d"], rows).tolist() for i in range(q)}
    if null_qi and rows:
        cols["q0"][0] = None
    svals = rng.choice(["x", "y", "z"], rows).tolist()
    if s_kind == "int":
        svals = rng.integers(0, 3, rows).tolist()
    elif s_kind == "null" and rows:
        svals[-1] = None
    df = pl.DataFrame({**cols, "s": svals}, schema={**{c: pl.String for c in cols},
                                                    "s": pl.Int64 if s_kind == "int"
                                                    else pl.String})
    qi = tuple(cols)
    leaves = {c: pl.Series(["d", "c", "b"] if unknown else ["d", "c", "b", "a"]) for c in qi}
    if seed % 2:  # an integer QI (mapped by a table over its range), wide every third time
        nums = rng.integers(-1, 3, rows).tolist()
        wide = seed % 3 == 0 and rows
        if wide:
            nums[0] = 10**6
        df = df.with_columns(pl.Series("num", nums, dtype=pl.Int16 if not wide else pl.Int32))
        qi = (*qi, "num")
        leaves["num"] = pl.Series(["2", "1", "0"] + ([] if unknown else ["-1"])
                                  + (["1000000"] if wide else []))
    if coded and not unknown:  # the first QI read as codes, the others as strings
        df = df.with_columns(pl.col("q0").cast(polars_engine.leaf_enum(leaves["q0"])))
    eng = polars_engine.ENGINE
    for sens in ((), ("s",)):
        small = eng.encoded_counts(df, qi, sens, leaves, nulls="value", order_from=0)
        big = eng.encoded_counts(df.lazy(), qi, sens, leaves, nulls="value", order_from=0)
        if big is None:
            assert small is None
            continue
        assert small is not None and _cells(small) == _cells(big)
        if small.form == "cells":  # ids number the values in sorted order
            values = small.sensitive_values.to_list()
            assert values == sorted(set(svals))
        if small.raw_counts is not None:
            for i, c in enumerate(qi):
                want = [df.get_column(c).cast(pl.String).eq(v).sum() for v in leaves[c]]
                assert small.raw_counts[i].tolist() == want


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-40, 40), min_size=1, max_size=30),
       st.sets(st.integers(-45, 45), max_size=20), st.sampled_from([pl.Int8, pl.Int64]))
def test_integer_index_is_the_cast_of_every_row(values, numbers, dtype):
    """An integer column's raw indices by the table over its range are the Enum cast of each
    row's string (raw_index), -1 where that cast finds no raw value; raw values that are not an
    integer's own string ('03', '+3', '-0', ' 4') never match, as in the cast."""
    from ldiv_polars.core.engines.raw_codes import integer_index, raw_index

    leaves = pl.Series(sorted({str(v) for v in numbers} | {"03", "+3", "-0", " 4", "x"}))
    col = pl.Series("c", values, dtype=dtype)
    want = pl.DataFrame(col).select(
        raw_index("c", leaves, pl.Schema({"c": dtype}), strict=False)
        .cast(pl.Int64).fill_null(-1)).to_series().to_list()
    assert integer_index(col, leaves).tolist() == want
    assert integer_index(col.cast(pl.String), leaves) is None  # not an integer column
