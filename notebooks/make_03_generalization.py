"""Generate and execute ``03_generalization.ipynb``: the l-diversity paper's homogeneity-attack
analysis (Figs. 9 and 11) and utility comparison (Figs. 15-20) on UCI Adult with ARX's
hierarchies, using the lattice search of ``ldiv_polars.search``.

    .venv/bin/python notebooks/make_03_generalization.py          # build + execute in place
    .venv/bin/python notebooks/make_03_generalization.py --no-run # build only
"""

from __future__ import annotations

from pathlib import Path

from nbbuild import NotebookCells, write_notebook

HERE = Path(__file__).resolve().parent
OUT = HERE / "03_generalization.ipynb"

cells = NotebookCells()
md, code = cells.md, cells.code


md(r"""
# Generalization lattices on UCI Adult: homogeneity attacks and utility

Machanavajjhala et al., *l-Diversity* (TKDD 2007), §6. Two experiments, rerun with
`ldiv_polars.search` on the Adult extract shipped with ARX (30,162 rows) and **ARX's**
generalization hierarchies:

1. **Homogeneity attack (Figs. 9 and 11).** QI = {age, sex, race, marital-status, education},
   sensitive = salary-class. For k = 2, 5, 10, 15, 20, 30, 50 the search returns *every minimal*
   k-anonymous full-domain generalization (no suppression); in each we count the classes whose
   sensitive value is the same for all rows (Fig. 9) or for >= 95% of them (Fig. 11).
2. **Utility (Figs. 15-20).** k-anonymity vs entropy l-diversity vs recursive (3,l)-diversity,
   k = l in {2, 4, 6, 8, 10}, sensitive = occupation, for three QI sets; the best (minimum)
   generalization height, average class size (AECS), discernibility and KL-divergence over all
   satisfying generalizations (these metrics are monotone without suppression, so the minimum is
   attained at a minimal node).

Every number below is computed from roll-ups of one frequency set per QI set; no row is rescanned.
""")

code(r"""
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import matplotlib.pyplot as plt
from IPython.display import display

plt.rcParams["figure.dpi"] = 60

try:
    import ldiv_polars  # noqa: F401
except ImportError:  # a checkout without an installed package
    sys.path.insert(0, str(Path.cwd().resolve().parent))
from ldiv_polars.core import FrequencySet
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import EntropyLDiversity, KAnonymity, RecursiveCLDiversity
from ldiv_polars.search import EncodedFrequencySet, MetricSuite, anonymize

DATA = Path.cwd().resolve().parent.parent / "shared" / "data" / "adult"
adult = pl.read_csv(DATA / "adult.csv", separator=";")
H = {c: Hierarchy.from_csv(DATA / f"adult_hierarchy_{c}.csv") for c in adult.columns}
pl.Config.set_tbl_rows(50)
pl.Config.set_tbl_cols(-1)
pl.Config.set_tbl_width_chars(400)
pl.Config.set_fmt_str_lengths(40)
pl.Config.set_tbl_hide_dataframe_shape(True)
T0 = time.perf_counter()
print(adult.height, "rows;", {c: H[c].height for c in adult.columns})
""")

md(r"""
## 1. Homogeneity attack: all minimal k-anonymous tables

The paper's hierarchies (LeFevre et al.) have heights age 4, sex 1, race 1, marital-status 2,
education 3 (Fig. 7, heights counted without the raw level). ARX's hierarchies have age 4 (5-, 10-,
20-year ranges, then `*`), sex 1, race 1, marital-status 2, education 3 — the same heights but
different groupings (e.g. ARX groups education into Undergraduate / High School / ... then
Higher / Secondary / Primary education). The lattice has 5 x 2 x 2 x 3 x 4 = 240 nodes.
""")

code(r"""
QI = ["age", "sex", "race", "marital-status", "education"]
fs = FrequencySet.build(adult, QI, "salary-class").materialize()
efs = EncodedFrequencySet(fs, H)


def homogeneity(levels):
    # share of the most frequent salary class in each class of the node's roll-up
    rolled = efs.rollup(levels)
    top = np.zeros(rolled.classes)
    np.maximum.at(top, rolled.row_class, rolled.snapshot.n)
    share = top / rolled.class_size
    full, p95 = share == 1.0, share >= 0.95
    return (int(full.sum()), int(rolled.class_size[full].sum()),
            int(p95.sum()), int(rolled.class_size[p95].sum()))


rows = []
searches = {}
for k in [2, 5, 10, 15, 20, 30, 50]:
    res = anonymize(adult, QI, "salary-class", H, [KAnonymity(k)], metric="height", verify=False)
    searches[k] = res
    stats = np.array([homogeneity([m[q] for q in QI]) for m in res.minimal])
    total = len(res.minimal)
    rows.append({
        "k": k, "minimal tables": total, "checked": res.checked,
        "affected (100%)": f"{int((stats[:, 0] > 0).sum())}/{total}",
        "avg groups (100%)": stats[:, 0].mean(), "avg tuples (100%)": stats[:, 1].mean(),
        "affected (95%)": f"{int((stats[:, 2] > 0).sum())}/{total}",
        "avg groups (95%)": stats[:, 2].mean(), "avg tuples (95%)": stats[:, 3].mean(),
    })
ours = pl.DataFrame(rows)
ours
""")

code(r"""
# the paper's Figs. 9 and 11 (Adult, 45,222 rows, LeFevre's hierarchies), verbatim
paper = pl.DataFrame({
    "k": [2, 5, 10, 15, 20, 30, 50],
    "paper affected (100%)": ["8/8", "11/12", "10/12", "7/8", "8/10", "7/10", "5/5"],
    "paper avg groups (100%)": [7.38, 3.58, 1.75, 2.12, 1.20, 0.90, 1.00],
    "paper avg tuples (100%)": [558.00, 381.58, 300.42, 317.25, 228.20, 215.40, 202.80],
    "paper affected (95%)": ["8/8", "12/12", "12/12", "8/8", "10/10", "10/10", "5/5"],
    "paper avg groups (95%)": [20.50, 12.67, 7.83, 8.88, 7.10, 5.50, 5.80],
    "paper avg tuples (95%)": [13574.5, 13328.3, 10796.5, 12009.4, 11041.0, 11177.0, 8002.0],
})
side = ours.join(paper, on="k").select(
    "k", "minimal tables", "affected (100%)", "paper affected (100%)",
    pl.col("avg groups (100%)").round(2), "paper avg groups (100%)",
    pl.col("avg tuples (100%)").round(1), "paper avg tuples (100%)",
    "affected (95%)", "paper affected (95%)",
    pl.col("avg groups (95%)").round(2), "paper avg groups (95%)",
    pl.col("avg tuples (95%)").round(1), "paper avg tuples (95%)",
)
side
""")

code(r"""
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
ks = ours["k"].to_list()
for ax, col, title in [(axes[0], "avg tuples (100%)", "Fig. 9: tuples in homogeneous classes"),
                       (axes[1], "avg tuples (95%)",
                        "Fig. 11: tuples in >=95% homogeneous classes")]:
    ax.plot(ks, ours[col], "o-", label="ldiv_polars, ARX hierarchies (30,162 rows)")
    ax.plot(ks, paper["paper " + col], "s--", label="paper (45,222 rows)")
    ax.set_xlabel("k"); ax.set_ylabel("avg tuples affected per minimal table"); ax.set_title(title)
    ax.legend(fontsize=8)
fig.tight_layout()
display(fig)
plt.close(fig)
""")

code(r"""
# sanity: the homogeneity attack is real -- every k has minimal tables with >= 95%-homogeneous
# classes, as in Fig. 11 (affected = total for every k, like the paper)
assert all(a.split("/")[0] == a.split("/")[1] for a in ours["affected (95%)"])
# and fully homogeneous classes become rarer as k grows (shape of Fig. 9)
g = ours["avg groups (100%)"].to_list()
assert g[0] > g[-1]
""")

md(r"""
**Reading the comparison.** The *shape* matches the paper: with small k almost every minimal
k-anonymous table contains fully homogeneous classes (hundreds of people whose salary class is
disclosed), the count falls as k grows but not monotonically (neighbouring minimal nodes merge
as k changes, the paper's own remark), and with the 95% criterion *every* minimal table of every
k is affected, with thousands of tuples. The levels differ because:

- the data: 30,162 rows (ARX's extract, rows with missing values removed from the training set
  only) vs 45,222 (train + test) in the paper — fewer rows give fewer large homogeneous classes;
- the hierarchies: ARX's age ranges and education/marital-status taxonomies group differently
  from LeFevre's, which changes the set (and number) of minimal nodes — 12, 9, 7, 7, 8, 8, 6 here
  vs 8, 12, 12, 8, 10, 10, 5;
- the paper's "minimal" follows Incognito (no k-anonymous table at a lower level), as ours does
  (no satisfying node below in the lattice), so that part agrees.

Because salary-class has only two values (about 75% `<=50K`), homogeneity at 95% is common in
any generalization — the paper's point that k-anonymity alone does not protect the sensitive
attribute.
""")

md(r"""
## 2. Utility: k-anonymity vs entropy l-diversity vs recursive (3,l)-diversity

Sensitive = occupation (14 values). For each QI set and each model with parameter
k = l in {2, 4, 6, 8, 10}, the search returns the minimal nodes; the minimum of each metric over
all satisfying nodes is attained at one of them (monotone metrics, no suppression). Missing
points: no generalization satisfies the model (the table's own entropy bounds entropy l, and
recursive (3,l) needs the top value below 3x the tail).

The paper's Figs. 15-18 use a 5% Bernoulli sample and Fig. 20 the full data; we show both.
""")

code(r"""
QSETS = {
    "age, sex, race": ["age", "sex", "race"],
    "+ marital-status": ["age", "sex", "race", "marital-status"],
    "+ education": ["age", "sex", "race", "marital-status", "education"],
}
MODELS = {
    "k-anonymity": lambda p: [KAnonymity(p)],
    "entropy l": lambda p: [EntropyLDiversity(p)],
    "recursive (3,l)": lambda p: [RecursiveCLDiversity(3, p)],
}
PARAMS = [2, 4, 6, 8, 10]
METRICS = ["height", "aecs", "discernibility", "kl"]


def utility_table(data):
    out = []
    for qname, qi in QSETS.items():
        fs2 = FrequencySet.build(data, qi, "occupation").materialize()
        e2 = EncodedFrequencySet(fs2, H)
        suite = MetricSuite(e2)
        base_kl = suite.value("kl", e2.rollup([H[q].height - 1 for q in qi]))
        for mname, mk in MODELS.items():
            for p in PARAMS:
                res = anonymize(data, qi, "occupation", H, mk(p), metric="height", verify=False)
                row = {"qi": qname, "model": mname, "param": p, "base_kl": base_kl,
                       "minimal": len(res.minimal)}
                vals = [suite.values(e2.rollup([m[q] for q in qi])) for m in res.minimal]
                for met in METRICS:
                    row[met] = min(v[met] for v in vals) if vals else None
                out.append(row)
    return pl.DataFrame(out)


sample = adult.filter(pl.Series(np.random.default_rng(7).random(adult.height) < 0.05))
util_sample = utility_table(sample)
util_full = utility_table(adult)
print(sample.height, "rows in the 5% sample")
util_full.select("qi", "model", "param", "minimal", "height", "aecs", "discernibility",
                 pl.col("kl").round(4), pl.col("base_kl").round(4))
""")

code(r"""
def plot(util, title):
    fig, axes = plt.subplots(len(QSETS), len(METRICS), figsize=(14, 9))
    for i, qname in enumerate(QSETS):
        for j, met in enumerate(METRICS):
            ax = axes[i, j]
            for mname, style in zip(MODELS, ["o-", "s--", "^-."]):
                d = util.filter(pl.col("qi") == qname, pl.col("model") == mname)
                ax.plot(d["param"], d[met], style, label=mname)
            if met == "kl":
                ax.axhline(util.filter(pl.col("qi") == qname)["base_kl"][0], color="grey",
                           lw=0.8, label="Base (all QIs suppressed)")
            if met == "discernibility":
                ax.set_yscale("log")
            ax.set_title(f"{qname}: min {met}", fontsize=9)
            ax.set_xlabel("k = l")
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    display(fig)
    plt.close(fig)


plot(util_sample, "5% sample of Adult (cf. Figs. 15-19)")
plot(util_full, "full Adult, 30,162 rows (cf. Fig. 20)")
""")

code(r"""
# The paper's qualitative claims, checked on our numbers
full = util_full.filter(pl.col("height").is_not_null())
def best(model, qi, met, p):
    d = util_full.filter(pl.col("model") == model, pl.col("qi") == qi, pl.col("param") == p)
    return d[met][0]
# (1) recursive (3,l) is never worse than entropy l (c allows some skew)
pairs = []
for qname in QSETS:
    for p in PARAMS:
        e, r = best("entropy l", qname, "height", p), best("recursive (3,l)", qname, "height", p)
        if e is not None and r is not None:
            pairs.append((qname, p, r <= e))
print("recursive height <= entropy height:", all(ok for *_, ok in pairs), f"({len(pairs)} pairs)")
# (2) l-diversity costs more than k-anonymity with k = l at larger parameters
print("KL, 5 QIs, k=l=10:", {m: best(m, "+ education", "kl", 10) for m in MODELS})
# (3) no generalization is entropy l-diverse beyond the table's own entropy l
fs_occ = adult.group_by("occupation").len()["len"].to_numpy()
p_occ = fs_occ / fs_occ.sum()
print("table entropy l of occupation:", round(float(np.exp(-(p_occ * np.log(p_occ)).sum())), 2))
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
""")

md(r"""
**Reading the plots.** As in the paper: the minimum heights of k-anonymity and l-diversity with
k = l are close for small parameters and the gap opens as l grows; recursive (3,l) gives
better (lower) utility loss than entropy l-diversity because c lets the most frequent value
dominate up to c times the tail; and the larger QI sets show the steepest cost of diversity.
The occupation column of this extract is entropy 10.53-diverse (the paper's 45,222-row
Adult: 10.57), so entropy l = 10 is still reachable but only at heavy generalization. Absolute
values differ from the paper (different hierarchies, rows, and the paper's unreadable image
figures leave only qualitative claims to compare).
""")


if __name__ == "__main__":
    write_notebook(cells, OUT)
