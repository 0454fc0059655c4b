"""``--t`` means one model in every command: t-closeness with the ordered distance for a
numeric or temporal sensitive column, the equal distance otherwise — the model ``ldiv check``
and ``ldiv report`` judge and the summary's ``t`` reports. ``anonymize`` and ``mondrian`` used
the equal distance whatever the column, so on a numeric column they enforced another (stricter)
model than the one ``ldiv check --t`` then verified on their release."""

from __future__ import annotations

import json

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli import main

QI = ["sex", "race", "marital-status"]


@pytest.fixture(scope="module")
def adult(adult_dir):
    df = pl.read_csv(adult_dir / "adult.csv", separator=";")
    hs = {q: lp.Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in QI}
    return df, hs


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(list(argv))
    return rc, json.loads(capsys.readouterr().out)


def test_anonymize_t_on_a_numeric_column_is_the_ordered_model(capsys, tmp_path, adult_dir, adult):
    df, hs = adult
    levels = {d: lp.anonymize(df, QI, "age", hs, lp.TCloseness(0.2, d), suppression=0.02,
                              metric="loss").levels for d in ("equal", "ordered")}
    assert levels["equal"] != levels["ordered"]  # the two models choose different nodes here
    rc, got = run_json(capsys, "anonymize", str(adult_dir / "adult.csv"), str(tmp_path / "o.csv"),
                       "--separator", ";", "--qi", ",".join(QI), "--sensitive", "age",
                       "--hierarchies", str(adult_dir), "--t", "0.2", "--suppression", "0.02",
                       "--metric", "loss", "--json")
    assert rc == 0 and got["optimum"]["levels"] == levels["ordered"]


def test_mondrian_t_on_a_numeric_column_is_the_ordered_model(capsys, tmp_path, adult_dir, adult):
    df, _ = adult
    groups = {d: lp.mondrian(df, QI, "age", [lp.KAnonymity(5), lp.TCloseness(0.2, d)]).metrics
              for d in ("equal", "ordered")}
    assert groups["equal"]["aecs"] != groups["ordered"]["aecs"]
    rc, got = run_json(capsys, "mondrian", str(adult_dir / "adult.csv"), str(tmp_path / "m.csv"),
                       "--separator", ";", "--qi", ",".join(QI), "--sensitive", "age",
                       "--k", "5", "--t", "0.2", "--json")
    assert rc == 0 and "t_closeness(t=0.2, distance=ordered)" in got["models"]
    assert got["aecs"] == groups["ordered"]["aecs"]


def test_string_column_keeps_the_equal_distance(capsys, tmp_path, adult_dir):
    rc, got = run_json(capsys, "mondrian", str(adult_dir / "adult.csv"), str(tmp_path / "m.csv"),
                       "--separator", ";", "--qi", "sex,race", "--sensitive", "occupation",
                       "--k", "5", "--t", "0.5", "--json")
    assert rc == 0 and "t_closeness(t=0.5, distance=equal)" in got["models"]
