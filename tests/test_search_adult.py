"""Adult with ARX's hierarchies, the 8 QIs of the issue (6,480 nodes), k=5, no suppression:
the search's minimal set and optima equal a brute-force enumeration of the whole lattice.

The brute force is independent of the search code: it reads the hierarchy CSVs with the csv
module, generalizes a QI-only frequency set with plain dict mappings, and groups every one of the
6,480 nodes with Polars (no roll-ups, no pruning, no lattice class)."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import KAnonymity
from ldiv_polars.search import anonymize

QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
      "occupation"]


def _read_hierarchy(path: Path) -> list[list[str]]:
    with path.open(newline="") as fh:
        return [r for r in csv.reader(fh, delimiter=";") if r]


@pytest.fixture(scope="module")
def brute(adult_dir: Path) -> dict[str, object]:
    df = pl.read_csv(adult_dir / "adult.csv", separator=";")
    fs = df.group_by(QI).agg(pl.len().alias("n"))
    n = fs.get_column("n")
    gen: dict[tuple[str, int], pl.Series] = {}
    heights = []
    for q in QI:
        rows = _read_hierarchy(adult_dir / f"adult_hierarchy_{q}.csv")
        heights.append(len(rows[0]))
        raw = fs.get_column(q).cast(pl.String)
        for j in range(len(rows[0])):
            mapping = {r[0]: r[j] for r in rows}
            gen[(q, j)] = pl.Series(q, [mapping[v] for v in raw.to_list()]).rank("dense")
    nodes, min_size, classes, disc, small_rows, big_classes = [], [], [], [], [], []
    for levels in itertools.product(*(range(h) for h in heights)):
        frame = pl.DataFrame([gen[(q, lv)] for q, lv in zip(QI, levels)] + [n])
        sizes = frame.group_by(QI).agg(pl.col("n").sum()).get_column("n").to_numpy()
        nodes.append(levels)
        min_size.append(int(sizes.min()))
        classes.append(sizes.shape[0])
        disc.append(float((sizes.astype(np.float64) ** 2).sum()))
        small_rows.append(int(sizes[sizes < 5].sum()))
        big_classes.append(int((sizes >= 5).sum()))
    return {
        "nodes": np.array(nodes), "min_size": np.array(min_size), "classes": np.array(classes),
        "disc": np.array(disc), "small_rows": np.array(small_rows),
        "big_classes": np.array(big_classes), "rows": df.height, "df": df,
    }


@pytest.fixture(scope="module")
def hierarchies(adult_dir: Path) -> dict[str, Hierarchy]:
    return {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in QI}


def _minimal(nodes: np.ndarray, passing: np.ndarray) -> set[tuple[int, ...]]:
    p = nodes[passing]
    out = set()
    for row in p:
        if int((p <= row).all(axis=1).sum()) == 1:  # only itself below-or-equal
            out.add(tuple(int(v) for v in row))
    return out


def test_lattice_size_is_6480(brute):
    assert len(brute["nodes"]) == 6480


def test_minimal_k5_nodes_equal_brute_force(brute, hierarchies):
    passing = brute["min_size"] >= 5
    expected = _minimal(brute["nodes"], passing)
    res = anonymize(brute["df"], QI, "salary-class", hierarchies, [KAnonymity(5)], metric="aecs",
                    verify=False)
    assert res.lattice_size == 6480
    assert res.minimal_complete and res.strategy == "flash"
    got = {tuple(m[q] for q in QI) for m in res.minimal}
    assert got == expected
    assert res.checked < 6480 // 10  # pruning happened (a count, not a clock)


def test_aecs_optimum_equals_brute_force(brute, hierarchies):
    passing = brute["min_size"] >= 5
    best = brute["rows"] / brute["classes"][passing].max()
    res = anonymize(brute["df"], QI, "salary-class", hierarchies, [KAnonymity(5)], metric="aecs")
    assert res.value == pytest.approx(best, rel=1e-12)
    node = tuple(res.levels[q] for q in QI)
    i = int(np.flatnonzero((brute["nodes"] == node).all(axis=1))[0])
    assert brute["min_size"][i] >= 5
    assert res.classes == brute["classes"][i]
    assert res.verification is not None and res.verification.passed
    assert res.suppressed_rows == 0


def test_discernibility_optimum_equals_brute_force(brute, hierarchies):
    passing = brute["min_size"] >= 5
    res = anonymize(brute["df"], QI, "salary-class", hierarchies, [KAnonymity(5)],
                    metric="discernibility", verify=False)
    assert res.value == pytest.approx(brute["disc"][passing].min(), rel=1e-12)


def test_k5_with_suppression_brute_force(brute, hierarchies):
    """2% suppression, AECS (not monotone with suppression): the search's optimum equals the
    brute-force optimum, where a node passes iff rows in classes < 5 fit within the limit and
    AECS counts the suppressed rows as one class."""
    df = brute["df"]
    limit = int(0.02 * brute["rows"])
    res = anonymize(df, QI, "salary-class", hierarchies, [KAnonymity(5)], suppression=0.02,
                    metric="aecs", verify=True)
    assert res.suppression_limit_rows == limit
    assert res.suppressed_rows <= limit
    assert res.verification.passed
    # brute force over the whole lattice: a node passes iff the rows of its classes smaller
    # than 5 fit within the limit
    passing = brute["small_rows"] <= limit
    kept = brute["big_classes"] + (brute["small_rows"] > 0)
    best = (brute["rows"] / kept[passing]).min()
    assert res.value == pytest.approx(best, rel=1e-12)
    node = tuple(res.levels[q] for q in QI)
    i = int(np.flatnonzero((brute["nodes"] == node).all(axis=1))[0])
    assert res.suppressed_rows == brute["small_rows"][i]
    assert {tuple(m[q] for q in QI) for m in res.minimal} == _minimal(brute["nodes"], passing)
    # the masked output keeps every row; the suppressed ones have '*' in every QI
    out = res.output.collect()
    assert out.height == brute["rows"]
    masked = out.filter(pl.all_horizontal([pl.col(q) == "*" for q in QI]))
    assert masked.height >= res.suppressed_rows


@pytest.mark.parametrize("model_name", ["entropy", "recursive"])
def test_non_monotone_suppression_on_adult_equals_brute_force(adult_dir, model_name):
    """Entropy l=3 / recursive (3,3) on occupation with 2% suppression (not monotone): the
    exhaustive search (with the distinct-l relaxation's pruning) returns the brute-force minimal
    set and optimum. Brute force: every node generalized with the hierarchies' own mappings and
    judged by the foundation's per-class verdicts, failing classes suppressed."""
    from ldiv_polars.hierarchy import generalize
    from ldiv_polars.models import EntropyLDiversity, RecursiveCLDiversity
    from ldiv_polars.models.verdict import classes as foundation_classes

    df = pl.read_csv(adult_dir / "adult.csv", separator=";")
    qi = ["sex", "age", "race", "marital-status"]
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in qi}
    model = EntropyLDiversity(3) if model_name == "entropy" else RecursiveCLDiversity(3, 3)
    res = anonymize(df, qi, "occupation", hs, [model], suppression=0.02, metric="height")
    assert res.strategy == "exhaustive" and res.minimal_complete
    limit = int(0.02 * df.height)
    fs = df.group_by([*qi, "occupation"]).len("n")  # generalize the small table, same verdicts
    passing = []
    for levels in itertools.product(*(range(hs[q].height) for q in qi)):
        gen = generalize(fs, hs, dict(zip(qi, levels)), check=False).group_by(
            [*qi, "occupation"]).agg(pl.col("n").sum())
        expanded = gen.select(pl.all().repeat_by(pl.col("n"))).explode(pl.all()).drop("n")
        cl = foundation_classes(expanded, qi, "occupation", [model]).collect()
        failing = int(cl.filter(~pl.col(f"pass_{model.key}"))["size"].sum())
        passing.append(failing <= limit)
    nodes = np.array(list(itertools.product(*(range(hs[q].height) for q in qi))))
    passing = np.array(passing)
    assert {tuple(m[q] for q in qi) for m in res.minimal} == _minimal(nodes, passing)
    assert res.value == nodes[passing].sum(axis=1).min()
    assert res.verification.passed and res.suppressed_rows <= limit
