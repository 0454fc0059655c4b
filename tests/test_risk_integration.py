"""Integration of the risk statistics: ``risk_profile(population_size=, weight=)``, the public
``ldiv_polars.population_uniqueness``, ``ldiv risk`` and ``ldiv check --population``. The
population figures on Adult are ARX's (tests/data/arx_population_uniqueness.jsonl); the
weighted ones are the risk package's own, already tested against sdcMicro."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli import main
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.risk import individual_risk, suda2

QI8 = "sex,age,race,marital-status,education,native-country,workclass,occupation"
ARX = {(c["name"], c["population_arg"]): c
       for c in map(json.loads,
                    (Path(__file__).parent / "data" / "arx_population_uniqueness.jsonl").open())}


@pytest.fixture(scope="module")
def adult(adult_csv: Path) -> pl.DataFrame:
    return pl.read_csv(adult_csv, separator=";")


@pytest.fixture()
def weighted(tmp_path: Path) -> Path:
    path = tmp_path / "w.csv"
    pl.DataFrame({
        "a": [1, 1, 1, 2, 2, 3, 4, 4, 5, 6],
        "b": ["x", "x", "y", "y", "y", "x", "z", "z", "x", "x"],
        "w": [10.0, 12.0, 3.0, 40.0, 2.5, 7.0, 1.0, 1.5, 100.0, 20.0],
    }).write_csv(path)
    return path


def test_public_population_uniqueness_equals_arx_on_adult(adult: pl.DataFrame) -> None:
    case = ARX[("adult8", "USA")]
    got = lp.population_uniqueness(adult, QI8.split(","), population_size="usa")
    assert got.used == case["dankar_model"].lower()
    assert math.isclose(got.fraction, case["dankar"], rel_tol=1e-6)


def test_risk_profile_keeps_its_keys_and_adds_the_new_figures(adult: pl.DataFrame) -> None:
    qi = QI8.split(",")
    before = lp.risk_profile(adult, qi, threshold=0.2).to_dict()
    after = lp.risk_profile(adult, qi, threshold=0.2, population_size="usa").to_dict()
    assert {k: after[k] for k in before if not k.startswith(("population", "weight"))} == {
        k: v for k, v in before.items() if not k.startswith(("population", "weight"))}
    assert after["population_size"] == 317_238_626 and after["population_model"] == "pitman"
    assert math.isclose(after["population_unique_share"], ARX[("adult8", "USA")]["dankar"],
                        rel_tol=1e-6)
    assert before["population_unique_share"] is None and before["global_risk"] is None


def test_risk_profile_with_weights(weighted: Path) -> None:
    df = pl.read_csv(weighted)
    got = lp.risk_profile(df, ["a", "b"], weight="w", population_size=1000)
    ir = individual_risk(df, ["a", "b"], weight="w")
    assert got.weight == "w"
    assert got.expected_reidentifications == pytest.approx(ir.expected_reidentifications,
                                                           rel=1e-12)
    assert got.global_risk == pytest.approx(ir.global_risk, rel=1e-12)
    assert got.individual_risk_max == ir.max_risk
    assert got.rows == 10 and got.sample_uniques == ir.sample_uniques
    assert df.ldiv.risk(["a", "b"], weight="w").global_risk == got.global_risk


def test_namespace_reaches_every_risk_statistic(adult: pl.DataFrame, weighted: Path) -> None:
    """``.ldiv`` on a frame gives the risk package's figures (issue 19: CLI, API, namespace):
    ARX's population uniqueness on Adult, the weighted risk and SUDA2 and attribute risks as
    the plain functions compute them."""
    got = adult.lazy().ldiv.population_uniqueness(QI8.split(","), population_size="usa")
    assert math.isclose(got.fraction, ARX[("adult8", "USA")]["dankar"], rel_tol=1e-6)
    df = pl.read_csv(weighted)
    assert df.ldiv.individual_risk(["a", "b"], weight="w").global_risk == pytest.approx(
        individual_risk(df, ["a", "b"], weight="w").global_risk, rel=1e-12)
    assert df.ldiv.suda2(["a", "b"], max_size=2).to_dict() == suda2(df, ["a", "b"],
                                                                    max_size=2).to_dict()
    assert df.ldiv.attribute_risks(["a", "b"]).equals(lp.attribute_risks(df, ["a", "b"]))


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    rc = main([*args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_cli_risk_json(capsys: pytest.CaptureFixture[str], weighted: Path) -> None:
    rc, got = _run_json(capsys, "risk", str(weighted), "--qi", "a,b", "--weight", "w",
                        "--population", "1000", "--suda", "--attributes", "--threshold", "0.3")
    assert rc == 0
    df = pl.read_csv(weighted)
    assert got["profile"] == lp.risk_profile(df, ["a", "b"], weight="w", threshold=0.3,
                                             population_size=1000).to_dict()
    assert got["individual"] == json.loads(json.dumps(
        individual_risk(df, ["a", "b"], weight="w", threshold=0.3).to_dict()))
    assert got["suda"] == json.loads(json.dumps(suda2(df, ["a", "b"]).to_dict()))
    assert [r["attributes"] for r in got["attributes"]] == \
        lp.attribute_risks(df, ["a", "b"])["attributes"].to_list()


def test_cli_risk_human_output(capsys: pytest.CaptureFixture[str], weighted: Path) -> None:
    assert main(["risk", str(weighted), "--qi", "a,b", "--population", "usa", "--suda",
                 "--attributes"]) == 0
    out = capsys.readouterr().out
    assert "population uniques, share" in out and "SUDA2" in out and "a, b" in out


@pytest.mark.parametrize("args", [
    ["--population", "mars"],
    ["--population", "5"],                 # smaller than the sample
    ["--model", "poisson", "--population", "100"],
    ["--nulls", "maybe"],
    ["--max-size", "0", "--suda"],
    ["--weight", "nope"],
    ["--threshold", "2"],
])
def test_cli_risk_bad_input_is_exit_2_one_line(capsys: pytest.CaptureFixture[str],
                                               weighted: Path, args: list[str]) -> None:
    assert main(["risk", str(weighted), "--qi", "a,b", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_cli_check_population(capsys: pytest.CaptureFixture[str], adult_csv: Path) -> None:
    for engine in ("polars", "duckdb"):
        rc, got = _run_json(capsys, "check", str(adult_csv), "--qi", QI8, "--sensitive",
                            "salary-class", "--population", "usa", "--engine", engine)
        assert rc == 0
        assert got["population_model"] == "pitman"
        assert math.isclose(got["population_unique_share"], ARX[("adult8", "USA")]["dankar"],
                            rel_tol=1e-6)
    rc, got = _run_json(capsys, "check", str(adult_csv), "--qi", QI8, "--sensitive",
                        "salary-class")
    assert "population_size" not in got


def test_population_parameter_errors(adult: pl.DataFrame) -> None:
    with pytest.raises(InvalidParameterError):
        lp.risk_profile(adult, ["sex"], population_size=10)
    with pytest.raises(InvalidParameterError):
        lp.population_uniqueness(adult, ["sex"], population_size="atlantis")


def test_cli_risk_takes_checks_population_model_flag(capsys: pytest.CaptureFixture[str],
                                                     weighted: Path) -> None:
    """``ldiv check`` names the estimator ``--population-model``; ``ldiv risk`` takes that
    spelling too (beside its ``--model``), with the same answer."""
    base = ["risk", str(weighted), "--qi", "a,b", "--population", "1000"]
    rc, short = _run_json(capsys, *base, "--model", "zayatz")
    rc2, long = _run_json(capsys, *base, "--population-model", "zayatz")
    assert rc == rc2 == 0 and long == short
    df = pl.read_csv(weighted)
    expected = lp.population_uniqueness(df, ["a", "b"], population_size=1000, model="zayatz")
    assert long["profile"]["population_model"] == expected.used == "zayatz"
