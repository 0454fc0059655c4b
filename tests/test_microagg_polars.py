"""``microaggregate`` on Polars frames and the ``ldiv microaggregate`` command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ldiv_polars.cli import main
from ldiv_polars.core import frequency_set
from ldiv_polars.errors import InvalidParameterError, NullValuesError, UnknownColumnError
from ldiv_polars.microagg import (
    InsufficientRecordsError,
    effective_anonymity,
    mdav,
    microaggregate,
    microaggregate_details,
)


@pytest.fixture()
def survey() -> pl.DataFrame:
    rng = np.random.default_rng(42)
    n = 1000
    return pl.DataFrame(
        {
            "id": np.arange(n),
            "age": rng.integers(18, 90, n),
            "bmi": rng.normal(26, 4, n).round(1),
            "tsh": rng.lognormal(0.5, 0.6, n),
            "diagnosis": rng.choice(["none", "hashimoto", "graves"], n).tolist(),
        }
    )


def test_microaggregate_replaces_qis_by_centroids(survey: pl.DataFrame) -> None:
    cols = ["age", "bmi", "tsh"]
    out = microaggregate(survey, cols, k=5, pi=0.75, p_bar=1e-5)
    assert isinstance(out, pl.LazyFrame)
    df = out.collect()
    n_min = effective_anonymity(5, 0.75, 1e-5).n_min
    # every row kept, in order; the other columns untouched
    assert df.height == survey.height
    assert df["id"].to_list() == survey["id"].to_list()
    assert df["diagnosis"].to_list() == survey["diagnosis"].to_list()
    # QIs are the per-cell means of the original values, the cells those of MDAV(n_min)
    labels = mdav(survey.select(cols).to_numpy().astype(float), n_min).labels
    assert df["cell"].to_list() == labels.tolist()
    means = survey.with_columns(cell=pl.Series(labels)).group_by("cell").agg(pl.col(cols).mean())
    joined = df.join(means, on="cell", suffix="_mean")
    for c in cols:
        assert np.allclose(joined[c].to_numpy(), joined[f"{c}_mean"].to_numpy(), rtol=1e-12)
    # k-anonymous (indeed n_min-anonymous) on the QI columns, by an independent group-by
    sizes = frequency_set(out, cols, None).collect()["n"]
    assert sizes.min() >= n_min
    assert df.group_by("cell").len()["len"].min() >= n_min


def test_details_and_summary(survey: pl.DataFrame) -> None:
    res = microaggregate_details(survey.lazy(), ["age", "bmi"], k=4)
    s = res.summary()
    assert s["n_min"] == 4 and s["rows"] == 1000 and s["cells"] == 250
    assert s["smallest_class"] >= 4
    assert 0 < s["distortion"] < 1
    assert res.participation is None


def test_weights_column(survey: pl.DataFrame) -> None:
    rng = np.random.default_rng(1)
    df = survey.with_columns(pi=pl.Series(rng.uniform(0.3, 1.0, survey.height)))
    out = microaggregate(df, ["age", "bmi"], k=5, weights="pi").collect()
    g = (
        df.with_columns(cell=out["cell"])
        .group_by("cell")
        .agg(((pl.col("age") * pl.col("pi")).sum() / pl.col("pi").sum()).alias("wage"))
    )
    j = out.join(g, on="cell")
    assert np.allclose(j["age"].to_numpy(), j["wage"].to_numpy())
    assert out["pi"].to_list() == df["pi"].to_list()


def test_input_errors(survey: pl.DataFrame) -> None:
    with pytest.raises(InvalidParameterError, match="numeric"):
        microaggregate(survey, ["age", "diagnosis"], k=5)
    with pytest.raises(UnknownColumnError):
        microaggregate(survey, ["age", "weight"], k=5)
    with pytest.raises(InvalidParameterError, match="already exists"):
        microaggregate(survey, ["age"], k=5, cell_column="id")
    with pytest.raises(InvalidParameterError, match="go together"):
        microaggregate(survey, ["age"], k=5, pi=0.5)
    with pytest.raises(InvalidParameterError, match="pi must be"):
        microaggregate(survey, ["age"], k=5, pi=0.0, p_bar=0.1)
    with pytest.raises(InsufficientRecordsError, match="n_min"):
        microaggregate(survey.head(40), ["age"], k=10, pi=0.5, p_bar=1e-6)
    with pytest.raises(InsufficientRecordsError, match="k = 5"):
        microaggregate(survey.head(4), ["age"], k=5)
    with_null = survey.with_columns(
        pl.when(pl.col("id") == 3).then(None).otherwise(pl.col("bmi")).alias("bmi")
    )
    with pytest.raises(NullValuesError, match="bmi"):
        microaggregate(with_null, ["age", "bmi"], k=5)


def test_cli_microaggregate(
    tmp_path: Path, survey: pl.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.csv"
    survey.write_csv(src)
    dst = tmp_path / "out.parquet"
    code = main(
        [
            "microaggregate",
            str(src),
            str(dst),
            "--columns",
            "age,bmi,tsh",
            "--k",
            "5",
            "--pi",
            "0.75",
            "--p-bar",
            "1e-5",
            "--json",
        ]
    )
    assert code == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_min"] == effective_anonymity(5, 0.75, 1e-5).n_min
    out = pl.read_parquet(dst)
    assert out.height == survey.height and "cell" in out.columns
    assert out.group_by(["age", "bmi", "tsh"]).len()["len"].min() >= info["n_min"]
    dst_csv = tmp_path / "out.csv"
    assert main(["microaggregate", str(src), str(dst_csv), "--columns", "age", "--k", "3"]) == 0
    assert pl.read_csv(dst_csv).group_by("age").len()["len"].min() >= 3
    capsys.readouterr()
    assert (
        main(["microaggregate", str(src), str(dst), "--columns", "age,diagnosis", "--k", "3"]) == 2
    )
    assert "numeric" in capsys.readouterr().err
    assert (
        main(["microaggregate", str(src), str(tmp_path / "o.xlsx"), "--columns", "age", "--k", "3"])
        == 2
    )


def test_microaggregate_per_record_pi(
    survey: pl.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(5)
    df = survey.with_columns(p=pl.Series(rng.uniform(0.4, 1.0, survey.height)))
    res = microaggregate_details(df, ["age", "bmi"], k=5, pi="p", p_bar=1e-5)
    s = res.summary()
    assert s["max_cell_failure"] <= 1e-5 and s["cells_above_p_bar"] == 0
    out = res.frame.collect()
    assert out.height == df.height and out["p"].to_list() == df["p"].to_list()
    assert out.group_by(["age", "bmi"]).len()["len"].min() >= 5
    # pi-weighted centroids
    g = (
        df.with_columns(cell=out["cell"])
        .group_by("cell")
        .agg(((pl.col("bmi") * pl.col("p")).sum() / pl.col("p").sum()).alias("wb"))
    )
    j = out.join(g, on="cell")
    assert np.allclose(j["bmi"].to_numpy(), j["wb"].to_numpy())
    with pytest.raises(InsufficientRecordsError, match="cannot form"):
        microaggregate(df.head(12), ["age"], k=10, pi="p", p_bar=1e-9)
    with pytest.raises(UnknownColumnError):
        microaggregate(df, ["age"], k=5, pi="nope", p_bar=1e-5)
    src = tmp_path / "in.parquet"
    df.write_parquet(src)
    assert (
        main(
            [
                "microaggregate",
                str(src),
                str(tmp_path / "o.parquet"),
                "--columns",
                "age,bmi",
                "--k",
                "5",
                "--pi-column",
                "p",
                "--p-bar",
                "1e-5",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["cells_above_p_bar"] == 0


def test_namespace_method_when_registered(survey: pl.DataFrame) -> None:
    import ldiv_polars  # noqa: F401  (registers .ldiv)

    lf = survey.lazy()
    if not hasattr(lf.ldiv, "microaggregate"):
        pytest.skip("lf.ldiv.microaggregate is not registered yet (the lead integrates it)")
    a = lf.ldiv.microaggregate(["age", "bmi"], k=5, pi=0.75, p_bar=1e-5).collect()
    b = microaggregate(survey, ["age", "bmi"], k=5, pi=0.75, p_bar=1e-5).collect()
    assert a.equals(b)
    assert survey.ldiv.microaggregate("age", k=3).collect()["cell"].to_list() == (
        microaggregate(survey, ["age"], k=3).collect()["cell"].to_list()
    )
