"""A site applies a release plan to rows that differ from the counts it sent: a value it never
reported (outside the hierarchy, or a label no released row of the union holds), or a value of
a class the plan suppressed everywhere now in a retained class. The plan cannot release such
a row (the written Enums hold only the union's released labels): ``apply_plan`` raises
:class:`~ldiv_polars.errors.PlanMismatchError` naming the column and the value before anything
is written; ``ldiv apply-plan`` exits 2 with one line and writes nothing."""

from __future__ import annotations

import polars as pl
import pytest

from ldiv_polars.cli import main
from ldiv_polars.errors import PlanMismatchError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import KAnonymity
from ldiv_polars.search.federated import (
    ReleasePlan,
    anonymize_counts,
    apply_plan,
    site_counts,
    verify_site_release,
)

S = pl.Enum(["x", "y", "z", "w"])
HS = {"zip": Hierarchy([[v, "*"] for v in "abcd"], name="zip"),
      "g": Hierarchy([[v, "*"] for v in "pq"], name="g")}
# the union: class (c, p) is the only one below k = 3, suppressed
UNION = [("a", "p", "x")] * 3 + [("b", "q", "y")] * 3 + [("c", "p", "z")]


def _frame(rows) -> pl.DataFrame:
    return pl.DataFrame({"zip": [r[0] for r in rows], "g": [r[1] for r in rows],
                         "s": pl.Series([r[2] for r in rows], dtype=S)})


def _plan(mode: str) -> ReleasePlan:
    _, plan = anonymize_counts([site_counts(_frame(UNION), ["zip", "g"], "s")], HS,
                               KAnonymity(3), suppression=0.2, metric="height",
                               suppression_mode=mode)
    assert plan is not None and plan.suppressed == [["c", "p"]] and plan.levels["zip"] == 0
    return ReleasePlan.from_json(plan.to_json())


# (extra row at the site, the column and value the error must name, modes it fails in)
CASES = {
    "a raw value outside the hierarchy": (("e", "p", "x"), "zip", "e", ("mask", "drop")),
    "a label of the level no site reported": (("d", "q", "x"), "zip", "d", ("mask", "drop")),
    "a value only suppressed rows held, now retained": (("c", "q", "x"), "zip", "c",
                                                        ("mask", "drop")),
    "a sensitive value no released row held": (("a", "p", "w"), "s", "w", ("mask", "drop")),
    # masked, the suppressed class's sensitive value is released: 'z' is held then
    "a sensitive value only dropped rows held": (("a", "p", "z"), "s", "z", ("drop",)),
}


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("mode", ["mask", "drop"])
@pytest.mark.parametrize("case", list(CASES))
def test_apply_plan_to_mismatched_rows_is_typed_and_writes_nothing(tmp_path, case, mode,
                                                                   engine):
    row, column, value, failing = CASES[case]
    plan = _plan(mode)
    site = tmp_path / "site.parquet"
    _frame(UNION[:3] + [row]).write_parquet(site)
    before = site.read_bytes()
    out = tmp_path / "out.parquet"
    if mode not in failing:
        apply_plan(str(site), plan, HS, out, engine=engine)
        assert verify_site_release(str(site), str(out), plan, HS) == 0
        return
    with pytest.raises(PlanMismatchError) as err:
        apply_plan(str(site), plan, HS, out, engine=engine)
    assert (err.value.column, err.value.values) == (column, [value])
    assert f"{column!r}" in str(err.value) and f"{value!r}" in str(err.value)
    assert "verify_site_release" in str(err.value)
    assert site.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.parquet"]


def test_verify_site_release_on_rows_outside_the_hierarchy_is_typed(tmp_path):
    plan = _plan("mask")
    _frame(UNION[:3]).write_parquet(tmp_path / "site.parquet")
    apply_plan(str(tmp_path / "site.parquet"), plan, HS, tmp_path / "out.parquet")
    _frame(UNION[:3] + [("e", "p", "x")]).write_parquet(tmp_path / "other.parquet")
    with pytest.raises(PlanMismatchError, match="'e'"):
        verify_site_release(str(tmp_path / "other.parquet"), str(tmp_path / "out.parquet"),
                            plan, HS)


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_cli_apply_plan_to_mismatched_rows_is_exit_2_one_line(tmp_path, capsys, mode):
    (tmp_path / "h").mkdir()
    for q, h in HS.items():
        h.to_csv(tmp_path / "h" / f"{q}.csv")
    (tmp_path / "plan.json").write_text(_plan(mode).to_json())
    site = tmp_path / "site.csv"
    _frame(UNION[:3] + [("c", "q", "x")]).write_csv(site)
    before = site.read_bytes()
    out = tmp_path / "out.parquet"
    rc = main(["apply-plan", str(site), str(tmp_path / "plan.json"), str(out),
               "--hierarchies", str(tmp_path / "h")])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert err.startswith("error: ") and "\n" not in err and "'zip'" in err and "'c'" in err
    assert site.read_bytes() == before and not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".ldiv-tmp" in p.name]


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_release_site_counts_the_site_rows_once(tmp_path, monkeypatch, mode):
    """``release_site`` (``ldiv apply-plan``) checks the rows against the plan and
    re-verifies the release from one frequency set of the rows (it counted them twice)."""
    from ldiv_polars.search import federated

    plan = _plan(mode)
    _frame(UNION[:3] + [("b", "q", "y")]).write_parquet(tmp_path / "site.parquet")
    calls = []
    counted = federated._site_classes
    monkeypatch.setattr(federated, "_site_classes",
                        lambda *a, **k: calls.append(1) or counted(*a, **k))
    assert federated.release_site(str(tmp_path / "site.parquet"), plan, HS,
                                  tmp_path / "out.parquet") == 0
    assert len(calls) == 1
    # and the release is still verified against the rows: a release of other rows fails
    with pytest.raises(Exception, match="not the plan applied"):
        federated.verify_site_release(str(tmp_path / "site.parquet"),
                                      pl.DataFrame({"zip": ["a"], "g": ["p"]}), plan, HS)
