"""Hand-made tables with known minimal sets and optima (the l-diversity paper's Fig. 1
inpatient table), suppression accounting (mask / drop), non-monotone models searched
exhaustively and compared with a brute force built on the foundation checker."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy import (
    HierarchyValueMissingError,
    generalize,
    masking_hierarchy,
)
from ldiv_polars.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from ldiv_polars.models.verdict import classes as foundation_classes
from ldiv_polars.search import Lattice, anonymize, predicate_monotone
from tests.paper_tables import FIG1, FIG1_QI, fig1_hierarchies

QI = FIG1_QI
HS = fig1_hierarchies()


def _levels(res) -> set[tuple[int, ...]]:
    return {tuple(m[q] for q in QI) for m in res.minimal}


def test_fig1_k4_minimal_and_optimum_by_hand():
    # worked out by hand: nationality must be suppressed (only 2 Russians); then
    # (130**, age buckets) and (1305*/1306*/1485*, any age) -- the latter is Fig. 4's grouping
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], metric="loss")
    assert res.lattice_size == 24
    assert _levels(res) == {(2, 1, 1), (1, 2, 1)}
    # loss: (1/3 + 3/11 + 1)/3 = 53/99 at (2,1,1) vs (1/9 + 1 + 1)/3 = 19/27 at (1,2,1)
    assert res.levels == {"zip": 2, "age": 1, "nationality": 1}
    assert res.value == pytest.approx(53 / 99)
    assert res.metrics["precision"] == pytest.approx(13 / 18)
    assert res.classes == 3 and res.metrics["aecs"] == 4 and res.metrics["discernibility"] == 48
    res_p = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], metric="precision")
    assert res_p.levels == res.levels
    out = res.output.collect()
    assert out.height == 12
    assert out.filter(pl.col("zip") == "130**", pl.col("age") == "3*")["condition"].to_list() == \
        ["Cancer"] * 4  # the homogeneity attack on Bob


def test_fig1_distinct_l2_picks_fig4_grouping():
    # rows 9-12 (130**, 3*) are all Cancer, so (2,1,1) fails 2-diversity; Fig. 4's grouping passes
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4), DistinctLDiversity(2)],
                    metric="loss")
    assert res.levels == {"zip": 1, "age": 2, "nationality": 1}
    assert (1, 2, 1) in _levels(res)
    assert res.verification.passed


def test_suppression_accounting_mask_and_drop():
    # limit 4 of 12 rows: (0,2,1) passes by suppressing the four 1485* rows (two classes of 2)
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], suppression=1 / 3,
                    metric="height")
    assert res.suppression_limit_rows == 4
    assert _levels(res) == {(0, 2, 1), (2, 1, 1)}
    assert res.levels == {"zip": 0, "age": 2, "nationality": 1}
    assert res.suppressed_rows == 4 and res.suppressed_classes == 2
    out = res.output.collect()
    assert out.height == 12
    masked = out.filter(pl.col("zip") == "*")
    assert masked.height == 4
    assert masked.select(QI).unique().rows() == [("*", "*", "*")]
    assert sorted(masked["condition"].to_list()) == sorted(
        FIG1.filter(pl.col("zip").str.starts_with("1485"))["condition"].to_list())
    dropped = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], suppression=1 / 3,
                        metric="height", suppression_mode="drop")
    d = dropped.output.collect()
    assert d.height == 8 and dropped.suppressed_rows == 4
    assert set(d["zip"].to_list()) == {"13053", "13068"}
    # just below the limit (3 rows) that node no longer passes
    res3 = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], suppression=3 / 12,
                     metric="height")
    assert res3.suppression_limit_rows == 3
    assert _levels(res3) == {(2, 1, 1), (1, 2, 1)}


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_output_columns_are_enums_of_the_level_labels(mode):
    # each QI: an Enum of its level's labels that a retained row holds (the suppressed 1485*
    # rows' zips are not named), in hierarchy order, plus "*" (the mask) when it is not one
    # of them; the values are generalize()'s strings
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], suppression=1 / 3,
                    metric="height", suppression_mode=mode)
    out = res.output.collect()
    ref = generalize(FIG1, HS, res.levels).collect().filter(
        ~pl.col("zip").str.starts_with("1485"))
    for q in QI:
        labels = HS[q].column(res.levels[q]).cast(pl.String).unique(maintain_order=True)
        want = [v for v in labels.to_list() if v in set(ref[q].to_list())]
        want += [] if "*" in want else ["*"]
        assert out.schema[q] == pl.Enum(want)
    assert "14853" not in out.schema["zip"].categories.to_list()
    kept = out.filter(pl.col("zip") != "*").cast({q: pl.String for q in QI})
    assert kept.sort(kept.columns).equals(ref.sort(ref.columns))
    # the Enum sorts in hierarchy order (age buckets by age, not as strings)
    assert out.sort("age")["age"].unique(maintain_order=True).to_list() == [
        v for v in want if v in set(out["age"].to_list())]


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_release_made_on_first_read_equals_the_verified_one(tmp_path, mode):
    # verify=False makes the output plan and release only when read; they must be the ones
    # verify=True builds in the call (labels, dtypes, suppressed classes, every output row),
    # and sink() must still re-verify what it writes
    kw = dict(suppression=1 / 3, metric="height", suppression_mode=mode)
    eager = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], **kw)
    lazy = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], verify=False, **kw)
    assert lazy.verification is None and eager.verification.passed
    assert (lazy.levels, lazy.metrics, lazy.suppressed_rows) == (
        eager.levels, eager.metrics, eager.suppressed_rows)
    a, b = eager.output_plan, lazy.output_plan
    assert (a.qi, a.mode, a.suppressed.to_list()) == (b.qi, b.mode, b.suppressed.to_list())
    assert b.suppressed.len() == 2  # the two 1485* classes
    for q in QI:
        assert a.labels[q].dtype == b.labels[q].dtype
        assert a.labels[q].to_list() == b.labels[q].to_list()
    assert lazy.output.collect().equals(eager.output.collect())
    lazy.sink(tmp_path / "out.parquet")
    assert lazy.verification.passed
    assert pl.read_parquet(tmp_path / "out.parquet").height == 12 - (4 if mode == "drop" else 0)


def test_release_made_later_reads_the_rows_the_search_checked():
    # verify=False makes the release on first read; a frame changed in place after the call
    # (a column replaced, rows appended) must not leak into it
    df = FIG1.clone()
    kw = dict(suppression=1 / 3, metric="height")
    want = anonymize(df, QI, "condition", HS, [KAnonymity(4)], **kw).output.collect()
    res = anonymize(df, QI, "condition", HS, [KAnonymity(4)], verify=False, **kw)
    df.replace_column(df.get_column_index("condition"),
                      pl.Series("condition", ["leak"] * df.height))
    df.extend(df.head(1))
    assert res.output.collect().equals(want)


def test_no_solution_reported():
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(13)])
    assert not res.found and res.output is None and res.minimal == []


def _brute_force(models, limit_rows, metric_fn):
    """Every node: generalize with the foundation's expressions, evaluate classes with the
    foundation checker, suppress failing classes (local models only), apply the limit."""
    heights = [HS[q].height for q in QI]
    passing, values = {}, {}
    for levels in itertools.product(*(range(h) for h in heights)):
        gen = generalize(FIG1, HS, dict(zip(QI, levels))).collect()
        cl = foundation_classes(gen, QI, "condition", models).collect()
        ok = pl.all_horizontal([pl.col(f"pass_{m.key}") for m in models])
        failing = int(cl.filter(~ok)["size"].sum())
        if failing <= limit_rows:
            passing[levels] = True
            values[levels] = metric_fn(levels)
    return passing, values


@pytest.mark.parametrize("model", [EntropyLDiversity(2), RecursiveCLDiversity(2, 2)])
def test_non_monotone_with_suppression_exhaustive_equals_brute_force(model):
    models = [model]
    mono, reason = predicate_monotone(models, True)
    assert not mono and "not monotone" in reason
    res = anonymize(FIG1, QI, "condition", HS, models, suppression=4 / 12, metric="height")
    assert res.strategy == "exhaustive" and res.minimal_complete
    passing, values = _brute_force(models, 4, lambda lv: sum(lv))
    lat = Lattice([HS[q].height for q in QI])
    mask = np.zeros(lat.size, dtype=bool)
    for lv in passing:
        mask[lat.id_of(lv)] = True
    expected = {lat.levels(i) for i in lat.minimal_of(mask)}
    assert _levels(res) == expected
    assert res.value == min(values.values())
    bounded = anonymize(FIG1, QI, "condition", HS, models, suppression=4 / 12, metric="height",
                        strategy="bounded")
    assert bounded.value == res.value and bounded.minimal is None
    assert not bounded.minimal_complete


def test_t_closeness_with_suppression_is_verified():
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(2), TCloseness(0.3)],
                    suppression=0.25, metric="loss")
    assert res.found and res.strategy == "exhaustive"
    assert res.verification.passed  # checked on the retained rows
    assert res.suppressed_rows <= 3


def test_flash_refuses_non_monotone():
    with pytest.raises(InvalidParameterError, match="monotone"):
        anonymize(FIG1, QI, "condition", HS, [EntropyLDiversity(2)], suppression=0.1,
                  strategy="flash")


def test_bad_input_errors():
    with pytest.raises(InvalidParameterError, match="no hierarchy"):
        anonymize(FIG1, QI, "condition", {"zip": HS["zip"]}, [KAnonymity(2)])
    with pytest.raises(InvalidParameterError, match="metric"):
        anonymize(FIG1, QI, "condition", HS, [KAnonymity(2)], metric="utility")
    with pytest.raises(InvalidParameterError, match="suppression"):
        anonymize(FIG1, QI, "condition", HS, [KAnonymity(2)], suppression=1.5)
    with pytest.raises(InvalidParameterError, match="suppression_mode"):
        anonymize(FIG1, QI, "condition", HS, [KAnonymity(2)], suppression_mode="blank")
    with pytest.raises(InvalidParameterError, match="at least one"):
        anonymize(FIG1, QI, "condition", HS, [])
    short = dict(HS, zip=masking_hierarchy(["13053", "13068"]))
    with pytest.raises(HierarchyValueMissingError, match="'14850', '14853'"):
        anonymize(FIG1, QI, "condition", short, [KAnonymity(2)])
    # without a sensitive column (the one-key path), in memory and lazily
    for data in (FIG1, FIG1.lazy()):
        with pytest.raises(HierarchyValueMissingError, match="'14850', '14853'"):
            anonymize(data, QI, None, short, [KAnonymity(2)])


def test_sensitive_required_before_work():
    with pytest.raises(InvalidParameterError, match="sensitive"):
        anonymize(FIG1, QI, None, HS, [DistinctLDiversity(2)])
    # k-anonymity alone needs no sensitive column
    res = anonymize(FIG1, QI, None, HS, [KAnonymity(4)], metric="loss")
    assert res.levels == {"zip": 2, "age": 1, "nationality": 1}


def test_generalize_expr_accepts_expressions():
    from ldiv_polars.hierarchy import generalize_expr

    out = FIG1.select(generalize_expr(pl.col("zip"), HS["zip"], 2))
    assert out.columns == ["zip"] and out["zip"].unique().sort().to_list() == ["130**", "148**"]


def test_progress_callback_and_result_dict():
    calls = []
    res = anonymize(FIG1, QI, "condition", HS, [KAnonymity(4)], metric="loss",
                    progress=lambda done, total: calls.append((done, total)))
    assert calls and all(t == res.lattice_size for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert len(calls) == res.checked
    d = res.to_dict()
    assert d["optimum"]["levels"] == res.levels and d["minimal"] == res.minimal
    assert d["checked"] == res.checked and d["verified"] is True


def test_empty_frames_are_new_frames_of_their_schema():
    """anonymize's empty frames naming the encoded set's columns (made once per schema of
    Int32, Int64 and String columns, cleared per use) are new frames of exactly that schema:
    one changed in place leaves the next untouched; other dtypes are built each time."""
    import sys

    mod = sys.modules["ldiv_polars.search.anonymize"]
    plain = (("a", pl.Int32), ("s", pl.String()), ("n", pl.Int64))
    first = mod._empty_frame(plain)
    first.insert_column(0, pl.Series("x", [], pl.Float64))
    again = mod._empty_frame(plain)
    assert again is not first and again.height == 0
    assert again.schema == pl.Schema({"a": pl.Int32, "s": pl.String, "n": pl.Int64})
    for dt in (pl.Datetime("ns", "UTC"), pl.Datetime("us"), pl.Enum(["p", "q"]), pl.Float64):
        assert mod._empty_frame((("a", pl.Int32), ("s", dt))).schema == \
            pl.Schema({"a": pl.Int32, "s": dt})
