"""Build and execute notebooks/07_risk.ipynb (run from the repository root or notebooks/).

    .venv/bin/python notebooks/make_07_risk.py
"""

from __future__ import annotations

from pathlib import Path

from nbbuild import NotebookCells, write_notebook

HERE = Path(__file__).resolve().parent

cells = NotebookCells()
md, code = cells.md, cells.code


md("""
# 07 — Disclosure risk: population uniqueness, sampling weights, SUDA2, identifying attributes

`ldiv_polars.risk` (definitions, citations and costs in `docs/risk.md`) next to ARX's own
figures. ARX's numbers come from our harness `bench/arx/ArxRisk.java`, which only calls ARX's
public API (ARX 3.9.2); its output is recorded in `tests/data/arx_*.jsonl` with the command
(`tests/data/README.md`), and the tests compare to it. Data: ARX's Adult extract (30,162 rows).
""")

code("""
import json
from pathlib import Path

import polars as pl
import ldiv_polars as lp
from ldiv_polars.risk import class_table

DATA = Path("../../shared/data/adult/adult.csv")
TESTDATA = Path("../tests/data")
adult = pl.read_csv(DATA, separator=";")
QI8 = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
       "occupation"]
adult.shape
""")

md("""
## 1. Population uniqueness: ours beside ARX's

All columns but salary-class as QIs, several populations (a region or a sampling fraction).
`dankar` is Dankar et al.'s decision rule. ARX's SNB differs from ours on purpose (two formulas
of ARX's `ModelSNB` are corrected here, see `docs/risk.md`): ARX reports 0 ("not available")
where its solver finds no root; ours reports `None` with a reason where there is none.
""")

code("""
arx = [json.loads(l) for l in (TESTDATA / "arx_population_uniqueness.jsonl").open()]
rows = []
sizes = class_table(adult, QI8)       # one pass; every estimate below reads it
for case in arx:
    if case["name"] != "adult8":
        continue
    arg = case["population_arg"]
    kw = ({"sampling_fraction": float(arg[2:])} if arg.startswith("f=")
          else {"population_size": int(arg) if arg.isdigit() else arg})
    row = {"population": arg}
    for model in ("pitman", "zayatz", "snb", "dankar"):
        ours = lp.population_uniqueness(sizes, **kw, model=model)
        row[f"{model} (ours)"] = ours.fraction
        row[f"{model} (ARX)"] = case[model] if case[f"{model}_available"] else None
    rows.append(row)
pl.DataFrame(rows)
""")

md("""
## 2. Sampling weights (sdcMicro's individual risk)

Adult has no weights; as an illustration, records are given a weight from their salary class (a
stratified design: 1 in 2,000 for `<=50K`, 1 in 500 for `>50K`). The individual risk is
Benedetti-Franconi's `E[1/F | f]`, the global risk the expected share of re-identifications.
""")

code("""
weighted = adult.with_columns(
    pl.when(pl.col("salary-class") == ">50K").then(500.0).otherwise(2000.0).alias("w"))
r = lp.individual_risk(weighted, ["sex", "age", "race", "marital-status"], weight="w",
                       threshold=0.05)
{k: v for k, v in r.to_dict().items() if k in (
    "records", "classes", "expected_reidentifications", "global_risk", "max_risk",
    "records_above", "sample_uniques")}
""")

md("""
## 3. SUDA2: which records and attributes carry the special uniqueness

Minimal sample uniques of up to 3 attributes over the 8 QIs; a record's score sums `(8 - k)!`
over its MSUs of size `k`.
""")

code("""
s = lp.suda2(adult, QI8, max_size=3)
print(s.records_with_msus, "records with MSUs; MSUs by size:", s.msus_by_size)
pl.DataFrame({"attribute": list(s.attribute_contributions),
              "contribution %": list(s.attribute_contributions.values())}
             ).sort("contribution %", descending=True)
""")

md("""
## 4. Which attributes identify: ours beside ARX's `RiskModelAttributes`

Distinction (classes / records) and separation (share of record pairs told apart) of every
combination of the 8 QIs, all from one frequency set; ARX's figures beside them.
""")

code("""
arx_attr = {frozenset(c["attributes"].split(",")): c
            for c in map(json.loads, (TESTDATA / "arx_attribute_risks.jsonl").open())
            if c["name"] == "adult8"}
ours = lp.attribute_risks(adult, QI8)
key = ours["attributes"].map_elements(lambda a: frozenset(a.split(", ")), return_dtype=pl.Object)
ours = ours.with_columns(
    pl.Series("ARX distinction", [arx_attr[k]["distinction"] for k in key]),
    pl.Series("ARX separation", [arx_attr[k]["separation"] for k in key]))
print("largest difference:",
      ours.select((pl.col("distinction") - pl.col("ARX distinction")).abs().max(),
                  (pl.col("separation") - pl.col("ARX separation")).abs().max()).row(0))
ours.head(10)
""")

md("""
## 5. Risk thresholds as privacy models

The thresholds are models like k-anonymity (`docs/risk.md` §5): `check` gives their verdict and
`anonymize` searches the lattice for the least generalization meeting them, suppressing at most
2% of the records. Four QIs with ARX's hierarchies. A research subset (a 10% sample of Adult,
Adult standing for its population) is released under k-map against that population table and
under delta-presence (every released class holds between 5% and 20% of its population class).
`node` gives the levels of age/sex/race/marital-status; delta-presence is not monotone, so its
search is exhaustive.
""")

code("""
from ldiv_polars.hierarchy import Hierarchy

QI4 = ["age", "sex", "race", "marital-status"]
H = {c: Hierarchy.from_csv(DATA.parent / f"adult_hierarchy_{c}.csv") for c in QI4}
sample = adult.sample(fraction=0.1, seed=7)
thresholds = {
    "average risk <= 0.05": lp.AverageRisk(0.05),
    "sample uniques <= 1%": lp.SampleUniques(0.01),
    "k-map 10 (estimated, USA)": lp.KMap(10, "usa"),
    "k-map 10 (population table)": lp.KMapPopulation(10, adult),
    "delta-presence [0.05, 0.2]": lp.DeltaPresence(0.05, 0.2, adult),
}
rows = []
for name, model in thresholds.items():
    raw = lp.check(sample, QI4, None, model).models[0]
    res = lp.anonymize(sample, QI4, None, H, model, suppression=0.02, metric="loss")
    rows.append({"model": name, "raw table passes": raw.passed,
                 "node": "/".join(str(res.levels[q]) for q in QI4) if res.found else None,
                 "suppressed": res.suppressed_rows, "classes": res.classes,
                 "loss": round(res.value, 4) if res.found else None,
                 "monotone": res.monotone})
pl.DataFrame(rows)
""")


md("""
Mondrian enforces the same population-table models: a group is released as ranges (age) and
value sets (the others), and its population count is the number of Adult records inside them;
every group is re-verified against the population.
""")

code("""
rows = []
for name in ("k-map 10 (population table)", "delta-presence [0.05, 0.2]"):
    m = lp.mondrian(sample, QI4, None, [thresholds[name]])
    rows.append({"model": name, "groups": m.groups, "verified": m.verification.passed,
                 "aecs": round(m.metrics["aecs"], 2), "gcp": round(m.metrics["gcp"], 4)})
pl.DataFrame(rows)
""")

md("""
## 6. Risk against generalization

How the risk figures fall as the table is generalized: a path through the lattice of the four
QIs above (ARX's hierarchies), raising age to its top level first, then marital-status, race
and sex. At every node, from one class-size table: the average re-identification risk (classes
/ records, ARX's average prosecutor risk), the share of sample uniques, and the estimated share
of population uniques (Dankar et al.'s rule, Adult as a sample of the USA); and, for the 10%
research subset, the share of its records in classes that match fewer than 10 records of
Adult (k-map against the population table, both generalized alike).
""")

code(r"""
import matplotlib.pyplot as plt
from ldiv_polars.hierarchy.generalize import generalize

path, levels = [], {q: 0 for q in QI4}
path.append(dict(levels))
for q in ["age", "marital-status", "race", "sex"]:
    while levels[q] < H[q].max_level:
        levels[q] += 1
        path.append(dict(levels))
curve = []
for node in path:
    sizes = class_table(generalize(adult, H, node), QI4)["n"]
    pu = lp.population_uniqueness(generalize(adult, H, node), QI4, population_size="usa")
    kmap = lp.check(generalize(sample, H, node), QI4, None,
                    lp.KMapPopulation(10, generalize(adult, H, node))).models[0]
    curve.append({"node": "/".join(str(node[q]) for q in QI4),
                  "average risk": sizes.len() / sizes.sum(),
                  "sample uniques": (sizes == 1).sum() / sizes.sum(),
                  "population uniques (est.)": pu.fraction,
                  "subset records failing k-map 10": kmap.failing_rows / sample.height})
curve = pl.DataFrame(curve)
fig, ax = plt.subplots(figsize=(11, 3.8))
for col in curve.columns[1:]:
    ax.plot(range(curve.height), curve[col], "o-", label=col)
ax.set_yscale("symlog", linthresh=1e-9)
ax.set_xticks(range(curve.height), curve["node"], rotation=60, fontsize=8)
ax.set_xlabel("generalization levels age/sex/race/marital-status")
ax.set_ylabel("share"); ax.legend(fontsize=8); ax.set_title("Adult: risk against generalization")
fig.tight_layout()
display(fig)
plt.close(fig)
curve
""")


if __name__ == "__main__":
    write_notebook(cells, HERE / "07_risk.ipynb")
