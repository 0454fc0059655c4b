"""Property test of the release dictionaries (session 16's leak1: ``output_dtype(h, level,
held)``, ``_held_labels``, ``OutputPlan.dtypes``, ``held_enum``). On random small tables,
random hierarchies and requirements (so random levels and suppressed classes), in mask and
drop mode, for a local release (``anonymize`` then ``sink``) and a federated one (sites'
counts, ``anonymize_counts``, each site's ``apply_plan``):

- every Enum column of a written file lists exactly the values its rows hold: nothing only a
  suppressed row held, nothing a written row holds missing. The one exception is a QI's mask
  label, which the dtype always lists. A column passed through keeps the input's dtype
  unless rows are dropped (masked, every row is released). The check reads each file's Parquet
  dictionary (what the file stores) and its Polars dtype;
- reading a file back gives the rows of the in-memory release, dtypes included;
- the union of the sites' files is the local release of the union of their rows (the same
  levels, the same rows suppressed).

The expected values are the written rows themselves, and the same rows computed a second way
(the local release of the union)."""

from __future__ import annotations

import polars as pl
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.core.engines.base import engine_for
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import DistinctLDiversity, KAnonymity
from ldiv_polars.search.anonymize import MASK
from ldiv_polars.search.federated import (
    ReleasePlan,
    anonymize_counts,
    apply_plan,
    site_counts,
)

ZIPS = list("abcdef")
ZIP_ENUM = pl.Enum([*ZIPS, "unused"])
S_ENUM = pl.Enum(["x", "y", "z", "unused"])
NOTE_ENUM = pl.Enum(["n1", "n2", "n3", "unused"])


@st.composite
def problems(draw):
    n = draw(st.integers(1, 24))

    def column(values):
        return draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))

    df = pl.DataFrame({
        "zip": pl.Series(column(ZIPS), dtype=draw(st.sampled_from([pl.String, ZIP_ENUM]))),
        "age": pl.Series(column(list(range(6))), dtype=pl.Int64),
        "s": pl.Series(column(["x", "y", "z"]), dtype=S_ENUM),
        "note": pl.Series(column(["n1", "n2", "n3"]), dtype=NOTE_ENUM),
    })
    groups = draw(st.lists(st.integers(0, 2), min_size=len(ZIPS), max_size=len(ZIPS)))
    cut = draw(st.integers(1, 5))
    hs = {"zip": Hierarchy([[z, f"g{g}", "*"] for z, g in zip(ZIPS, groups)], name="zip"),
          "age": Hierarchy([[str(a), f"<{cut}" if a < cut else f">={cut}", "*"]
                            for a in range(6)], name="age")}
    k = draw(st.integers(1, 4))
    models = [KAnonymity(k)] + ([DistinctLDiversity(2)] if draw(st.booleans()) else [])
    options = {"suppression": draw(st.sampled_from([0.0, 0.1, 0.3, 0.6])),
               "suppression_mode": draw(st.sampled_from(["mask", "drop"])),
               "metric": draw(st.sampled_from(["height", "loss", "discernibility"]))}
    sites = column([0, 1, 2])
    return df, hs, models, options, sites


def _dictionary(path, column: str) -> set[str]:
    """The values the Parquet file's column stores in its dictionaries (every chunk)."""
    col = pq.read_table(path).column(column)
    return {v for chunk in col.chunks for v in chunk.dictionary.to_pylist()}


def _rows(df: pl.DataFrame) -> list[tuple]:
    return sorted(tuple("<null>" if v is None else str(v) for v in r) for r in df.rows())


def _check_dictionaries(path, qi, passthrough: dict[str, pl.DataType],
                        shared: tuple[str, ...] = ()) -> None:
    """Every Enum column of the file at ``path`` lists exactly the values its rows hold (a QI:
    the mask label aside); a column of ``passthrough`` has that dtype instead; one of
    ``shared`` (a site's column whose dtype the plan gives: the union's values) at least the
    values its rows hold."""
    got = pl.read_parquet(path)
    for c, dt in got.schema.items():
        if not isinstance(dt, pl.Enum):
            continue
        held = set(got[c].drop_nulls().cast(pl.String).to_list())
        categories = set(dt.categories.to_list())
        if c in passthrough:
            assert dt == passthrough[c], (c, dt)
            continue
        # a Parquet dictionary page holds only what the writer was given: the Enum's
        # categories (an empty file stores no dictionary at all)
        stored = _dictionary(path, c) if got.height else categories
        spare = {MASK} if c in qi else set()
        assert held <= categories, (c, held - categories)
        assert stored == categories, (c, stored ^ categories)
        if c not in shared:
            assert categories - spare == held - spare, (c, categories - held)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(problem=problems())
def test_release_dictionaries_hold_exactly_the_released_values(problem, tmp_path_factory):
    df, hs, models, options, sites = problem
    tmp = tmp_path_factory.mktemp("dict")
    qi = ["zip", "age"]
    res = lp.anonymize(df, qi, "s", hs, models, **options)
    if res.levels is None:  # no node satisfies the models within the suppression limit
        return
    local = tmp / "local.parquet"
    res.sink(local)
    written = pl.read_parquet(local)
    memory = res.output.collect() if isinstance(res.output, pl.LazyFrame) else res.output
    assert written.schema == memory.schema
    assert _rows(written) == _rows(memory)
    drop = options["suppression_mode"] == "drop"
    # a passed-through column is narrowed only when rows were dropped
    _check_dictionaries(local, qi, {} if drop and res.suppressed_rows else {"note": NOTE_ENUM})

    # federated: the same rows at up to three sites
    parts = [df.filter(pl.Series([s == i for s in sites])) for i in range(3)]
    parts = [p for p in parts if p.height]
    fed, plan = anonymize_counts([site_counts(p, qi, "s") for p in parts], hs, models,
                                 **options)
    assert plan is not None and fed.levels == res.levels
    plan = ReleasePlan.from_json(plan.to_json())
    outs = []
    for i, part in enumerate(parts):
        out = tmp / f"site{i}.parquet"
        apply_plan(part, plan, hs, out)
        got = pl.read_parquet(out)
        mem = engine_for(part, None).release(part, plan.output_plan(hs)).output.collect()
        assert got.schema == mem.schema and _rows(got) == _rows(mem)
        # the sites' QI and sensitive dtypes are the plan's (the union's released values);
        # a passed-through column is narrowed per site when the plan drops classes
        _check_dictionaries(out, qi, {} if drop and plan.suppressed else {"note": NOTE_ENUM},
                            shared=("zip", "age", "s"))
        outs.append(got)
    union = pl.concat([o.select(pl.all().cast(pl.String)) for o in outs])
    for c in ["zip", "age", "s"]:
        sites_held = set(union[c].drop_nulls().to_list()) - {MASK}
        dtype = outs[0].schema[c]
        assert all(o.schema[c] == dtype for o in outs)
        if isinstance(dtype, pl.Enum):
            assert set(dtype.categories.to_list()) - {MASK} == sites_held, c
    assert _rows(union) == _rows(written.select(pl.all().cast(pl.String)))
