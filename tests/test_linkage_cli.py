"""``ldiv plan`` and ``ldiv link`` in-process: JSON keys, values, exit codes."""

from __future__ import annotations

import json

import polars as pl
import pytest

from ldiv_polars.cli import main
from ldiv_polars.linkage.examples import table1_raw


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_plan_paper_setting(capsys):
    assert main(["plan", "--paper", "uniform", "--l", "10", "--delta", "0.01", "--beta", "0.01",
                 "--json"]) == 0
    out = _json(capsys)
    assert list(out) == ["p", "p_l", "beta", "m", "N", "classes", "class_bounds"]
    assert out["N"] == 65606 and out["classes"] == 100 and out["m"] == 500
    assert out["p"] == pytest.approx(2e-4) and out["p_l"] == pytest.approx(0.02)
    assert out["class_bounds"][1] == [[560001, "F", 30], [560001, "F", 59]]


def test_plan_budget_and_geometric(capsys):
    assert main(["plan", "--paper", "geometric", "--l", "10", "--delta", "0.001", "--beta",
                 "0.02", "--json"]) == 0
    assert _json(capsys)["N"] == 20786  # notes: 20785.76
    assert main(["plan", "--paper", "uniform", "--l", "10", "--delta", "0.01", "--budget",
                 "31067", "--json"]) == 0
    out = _json(capsys)
    assert out["classes"] == 50 and out["N"] <= 31067


def test_plan_from_reference_table(tmp_path, capsys):
    path = tmp_path / "ref.csv"
    pl.DataFrame({"age": [30, 30, 31, 31, 32, 32, 33, 33],
                  "s": ["a", "b", "a", "b", "a", "b", "a", "b"]}).write_csv(path)
    assert main(["plan", str(path), "--qi", "age", "--sensitive", "s", "--l", "2",
                 "--delta", "0.1", "--p", "1/8", "--json"]) == 0
    out = _json(capsys)
    # every age holds a and b with P = 1/8 each: each single age is admissible -> 4 classes
    assert out["classes"] == 4 and out["class_bounds"][0] == [[30], [30]]
    assert main(["plan", str(path), "--qi", "age", "--sensitive", "s", "--l", "2",
                 "--delta", "0.1", "--p", "1/8"]) == 0
    assert "4 classes" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["plan", "--paper", "uniform", "--l", "10", "--delta", "0.01"],
    ["plan", "--paper", "uniform", "--l", "99", "--delta", "0.01", "--beta", "0.5"],
    ["plan", "--paper", "zipf", "--l", "2", "--delta", "0.01", "--beta", "0.5"],
    ["plan", "--l", "2", "--delta", "0.01", "--beta", "0.5"],
])
def test_plan_bad_input_exits_2(argv, capsys):
    assert main(argv) == 2
    assert "error:" in capsys.readouterr().err


@pytest.fixture
def table2_files(tmp_path):
    d1 = pl.DataFrame({"gender": ["Male", "Male", "Female", "Female"],
                       "postal": ["56001*", "56001*", "560010", "560010"],
                       "disease": ["Heart disease", "Lung infection", "Osteoporosis",
                                   "Cervical cancer"]})
    m1 = pl.DataFrame({"gender": ["Male", "Male", "Female"],
                       "postal": ["560012", "560011", "560010"],
                       "gender_class": ["Male", "Male", "Female"],
                       "postal_class": ["56001*", "56001*", "560010"]})
    d2 = pl.DataFrame({"gender": ["Female"] * 4,
                       "postal": ["560008", "560008", "560010", "560010"],
                       "disease": ["Irritable bowel syndrome", "Lung infection",
                                   "Cervical cancer", "Amoebic dysentery"]})
    m2 = pl.DataFrame({"gender": ["Female", "Female"], "postal": ["560008", "560010"],
                       "gender_class": ["Female", "Female"],
                       "postal_class": ["560008", "560010"]})
    paths = {}
    for name, df in (("d1", d1), ("m1", m1), ("d2", d2), ("m2", m2)):
        paths[name] = tmp_path / f"{name}.csv"
        df.write_csv(paths[name])
    paths["universe"] = tmp_path / "raw.csv"
    table1_raw().write_csv(paths["universe"])
    return paths


def _link_args(p):
    return ["link", "--release", str(p["d1"]), "--mapping", str(p["m1"]),
            "--release", str(p["d2"]), "--mapping", str(p["m2"]),
            "--qi", "gender,postal", "--sensitive", "disease"]


def test_link_target(table2_files, capsys):
    argv = _link_args(table2_files) + ["--target", "gender=Female,postal=560010", "--json"]
    assert main(argv) == 0
    out = _json(capsys)
    assert out == {"target": {"gender": "Female", "postal": "560010"},
                   "linkage": [{"s": "Cervical cancer", "n": 1}], "diversity": 1}
    assert main(argv + ["--l", "2"]) == 1  # the requested guarantee fails
    capsys.readouterr()


def test_link_overall(table2_files, capsys):
    argv = _link_args(table2_files) + ["--universe", str(table2_files["universe"]), "--json"]
    assert main(argv) == 0
    out = _json(capsys)
    assert out["l_t"] == 1 and out["collapsed"] == 1
    assert main(_link_args(table2_files)) == 0  # default universe: the first mapping
    assert "collapse to one value" in capsys.readouterr().out


def test_link_bad_input(table2_files, capsys):
    args = _link_args(table2_files)
    assert main(args[:5] + args[7:] + ["--target", "gender=Female,postal=560010"]) == 2
    assert main(_link_args(table2_files) + ["--target", "gender"]) == 2
    assert main(_link_args(table2_files) + ["--target", "zip=1"]) == 2
    capsys.readouterr()
