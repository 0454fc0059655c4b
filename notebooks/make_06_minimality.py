"""Build and execute notebooks/06_minimality.ipynb (run from the repository root or notebooks/).

    .venv/bin/python notebooks/make_06_minimality.py
"""

from __future__ import annotations

from pathlib import Path

from nbbuild import NotebookCells, write_notebook

HERE = Path(__file__).resolve().parent

cells = NotebookCells()
md, code = cells.md, cells.code


md("""
# 06 — Minimality attacks: GG, RGG, SG and Mondrian on Adult

Reproduces the experiments of Cormode, Srivastava, Li & Li, *Minimizing Minimality and
Maximizing Utility* (PVLDB 2010) with `ldiv_polars.partition` (groupers, Mondrian) and
`ldiv_polars.attacks` (the minimality-attack analyser):

* the exact closed form of the GG posterior under binary ℓ-diversity (App. D);
* **Fig. 3** — GG on Adult with *Tech-support* and *Craft-repair* as the positive value:
  fraction of vulnerable tuples (posterior > 1/ℓ) and maximum risk as a multiple of 1/ℓ, vs ℓ;
* **Fig. 4** — RGG at ℓ = 6 vs the merge probability p;
* a **utility comparison** (average relative error of random COUNT queries, average group size)
  of RGG, SG, Mondrian (relaxed and strict), the lattice search and the single-group baseline,
  with and without anatomization.

**Data.** ARX's Adult extract in `../shared/data/adult`: **30,162 rows** (the paper uses the
45,222-row version with missing values removed), so every number below differs from the
paper's. The QIs are Table 1's: age, workclass, education, marital-status, race, sex; the
sensitive attribute is occupation (14 values). GG/RGG/SG scan the table sorted
lexicographically in that QI order (the paper does not state its order).

**Exactness.** Under binary ℓ-diversity the GG and RGG posteriors are computed *exactly*
(a dynamic programme over buckets; RGG weights every world by p per voluntary merge, the
multi-merge generalization of App. C.4), SG exactly (one rejected split), Mondrian by
enumerating the arrangements of each group (sampling only for groups with more than 20,000
arrangements). The paper used Monte Carlo sampling throughout.
""")

code("""
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from ldiv_polars.attacks import gg_limit, gg_posterior_b1, minimality_attack
from ldiv_polars.models import KAnonymity
from ldiv_polars.partition import (
    BinaryLDiversity, anatomize, compare_are, count_query_workload, greedy_grouping, mondrian,
    randomized_greedy_grouping, symmetric_grouping,
)

T0 = time.perf_counter()
DATA = Path.cwd().parent.parent / "shared" / "data" / "adult"
QI = ["age", "workclass", "education", "marital-status", "race", "sex"]
S = "occupation"
adult = pl.read_csv(DATA / "adult.csv", separator=";").with_row_index("rid")
print(adult.height, "rows")
adult[S].value_counts(normalize=True).sort("proportion", descending=True).head(14)
""")

md("""
## The exact GG posterior (App. D)

ℓ·p(b₁) for a GG group of m buckets of ℓ tuples: 2 for m = 2, growing with m towards
(ℓ/(ℓ−1))^(ℓ−1) < e (Theorem 6). The notes' values (3,3) → 21/10, (4,4) → 364/165,
(6,5) → 585/253 appear in the table.
""")

code("""
rows = []
for l in range(2, 9):
    rows.append({"l": l, **{f"m={m}": str(l * gg_posterior_b1(m, l)) for m in range(2, 7)},
                 "limit m->inf": round(l * gg_limit(l), 4)})
pl.DataFrame(rows)
""")

md("""
## Fig. 3 — GG under binary ℓ-diversity

Craft-repair holds 13.4% of the rows, so the table is binary-ℓ-eligible only up to ℓ = 7
(1/7 = 14.3%); at ℓ = 7 GG already has to suppress the unmergeable tail (reported below).
""")

code("""
fig3 = []
for pos in ["Tech-support", "Craft-repair"]:
    for l in range(2, 8):
        g = greedy_grouping(adult, QI, S, l, positive=[pos])
        rep = minimality_attack(g.frame.collect(), group="group", sensitive=S, l=l,
                                positive=[pos])
        fig3.append({"positive": pos, "l": l, "groups": g.groups, "suppressed": g.suppressed,
                     "vulnerable_fraction": rep.vulnerable_fraction,
                     "max_risk_times_l": rep.max_risk_times_l})
fig3 = pl.DataFrame(fig3)
fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
ls = np.arange(2, 8)
for i, pos in enumerate(["Tech-support", "Craft-repair"]):
    d = fig3.filter(pl.col("positive") == pos)
    ax[0].bar(ls + (i - 0.5) * 0.38, d["vulnerable_fraction"], width=0.38, label=pos)
    ax[1].bar(ls + (i - 0.5) * 0.38, d["max_risk_times_l"], width=0.38, label=pos)
ax[1].plot(ls, [l * gg_limit(int(l)) for l in ls], "k--", label="sup over m: (l/(l-1))^(l-1)")
ax[1].axhline(np.e, color="r", lw=0.8, label="e (Theorem 6)")
ax[0].set(xlabel="l", ylabel="fraction of vulnerable tuples", title="(a) GG: vulnerable tuples")
ax[1].set(xlabel="l", ylabel="max risk x l", title="(b) GG: maximum risk", ylim=(0, 3))
ax[0].legend(); ax[1].legend(fontsize=8, loc="lower right")
plt.tight_layout(); plt.show()
fig3
""")

md("""
The maximum risk stays between 2/ℓ and the closed form's supremum, below e/ℓ, as Theorem 6
says (the paper's 2.52 / 2.70 at ℓ = 6 exceed the binary supremum 2.488; see the notes). The
vulnerable fractions are larger than the paper's "mostly below 10%" for Craft-repair: with a
positive share close to 1/ℓ most GG groups need several buckets, and in every multi-bucket
group the first bucket is over-exposed.
""")

md("""
## Fig. 4 — RGG at ℓ = 6

Each world is weighted by p per voluntary merge (exact). Average group size and the average
relative error (ARE) of 1,000 random COUNT queries (2 QIs, selectivity 0.3; see below) are
shown as the price of the randomization.
""")

code("""
codes = np.column_stack([(adult[c].rank("dense") - 1).to_numpy() for c in QI])
s_codes = (adult[S].rank("dense") - 1).to_numpy()
workload = count_query_workload(codes, s_codes, queries=1000, qd=2, sel=0.3, seed=7)


def group_ids(frame: pl.LazyFrame) -> np.ndarray:
    df = frame.select("rid", "group").collect()
    out = np.full(adult.height, -1)
    out[df["rid"].to_numpy()] = df["group"].to_numpy()
    return out


L = 6
ps = [0.0, 0.2, 0.4, 0.6, 0.65, 0.8, 0.9]
fig4, groupings = [], {}
for pos in ["Tech-support", "Craft-repair"]:
    for p in ps:
        g = randomized_greedy_grouping(adult, QI, S, L, p=p, seed=1, positive=[pos])
        rep = minimality_attack(g.frame.collect(), group="group", sensitive=S, l=L,
                                positive=[pos], algorithm="rgg", p=p)
        fig4.append({"positive": pos, "p": p, "vulnerable_fraction": rep.vulnerable_fraction,
                     "max_risk_times_l": rep.max_risk_times_l,
                     "avg_group_size": g.average_group_size})
        if pos == "Tech-support":
            groupings[p] = group_ids(g.frame)
fig4 = pl.DataFrame(fig4)
are = compare_are(codes, s_codes, groupings, workload)
fig, ax = plt.subplots(1, 4, figsize=(15, 3.5))
for pos in ["Tech-support", "Craft-repair"]:
    d = fig4.filter(pl.col("positive") == pos)
    ax[0].plot(d["p"], d["vulnerable_fraction"], "o-", label=pos)
    ax[1].plot(d["p"], d["max_risk_times_l"], "o-", label=pos)
    ax[2].plot(d["p"], d["avg_group_size"], "o-", label=pos)
ax[3].plot(ps, [are[p]["are"] for p in ps], "o-", label="Tech-support")
for a, t in zip(ax, ["(a) vulnerable fraction", "(b) max risk x l", "(c) average group size",
                     "(d) ARE"]):
    a.set(xlabel="p", title=t); a.legend(fontsize=8)
plt.tight_layout(); plt.show()
fig4
""")

md("""
With the exact weighting the risk falls steadily with p but does **not** vanish at p = 0.65 as
in the paper's Fig. 4 (1/ℓ for both values there): a world with few voluntary merges still
outweighs one with many, so the first bucket of a long group stays over-exposed. The paper
does not say how it weighted worlds with several voluntary merges (App. C.4 treats one merge),
which is the likely source of the difference; the price in group size and ARE grows quickly
for Craft-repair, whose share is close to 1/ℓ.
""")

md("""
## Utility comparison (ℓ = 6, positive = Tech-support, groups of at least 6 rows)

All groupings are released as permutations (QIs exact, occupation permuted inside each
group), and every COUNT query `WHERE q₁ ∈ V₁ AND … AND occupation ∈ V_s` is estimated by
Σ_G |G ∩ QI predicate| · share of V_s in G (the paper does not state its estimator). The
lattice search (ARX hierarchies, loss metric, ≤ 2% suppression) publishes equivalence
classes, treated here as groups; its suppressed rows form one all-`*` group. "Base" is the
single-group baseline (QIs and SA as independent tables). Anatomization splits each group
into ℓ-diverse groups of ℓ to 2ℓ−1 rows (§3.1). The attack columns are computed for the
deterministic or randomized groupers the analyser models (n/a: SA-only or not modelled).
""")

code("""
req = [BinaryLDiversity(L, ["Tech-support"]), KAnonymity(L)]
methods, attack, sizes = {}, {}, {}

rgg = randomized_greedy_grouping(adult, QI, S, L, p=0.65, seed=1, positive=["Tech-support"])
sg = symmetric_grouping(adult, QI, S, L, positive=["Tech-support"], k=L)
mon_r = mondrian(adult, QI, S, req, relaxed=True)
mon_s = mondrian(adult, QI, S, req, relaxed=False)
for name, g, alg, kw in [("RGG p=0.65", rgg, "rgg", {"p": 0.65}), ("SG", sg, "sg", {"k": L}),
                         ("Mondrian relaxed", mon_r, "mondrian-relaxed", {"qi": QI, "k": L}),
                         ("Mondrian strict", mon_s, "mondrian-strict", {"qi": QI, "k": L})]:
    methods[name] = group_ids(g.frame)
    rep = minimality_attack(g.frame.collect(), group="group", sensitive=S, l=L,
                            positive=["Tech-support"], algorithm=alg, **kw)
    attack[name] = (rep.vulnerable_fraction, rep.max_risk_times_l)
methods["Base"] = np.zeros(adult.height, dtype=np.int64)

for name, g in [("RGG p=0.65", rgg), ("SG", sg)]:
    methods[name + " (Ana)"] = group_ids(anatomize(g, seed=1).frame)
from ldiv_polars.partition import Grouping
from ldiv_polars.models.verdict import check as _check
mon_as_grouping = Grouping(mon_r.frame, "group", tuple(QI), S, "mondrian-relaxed", L,
                           mon_r.groups, adult.height, 0, mon_r.verification, None,
                           ("Tech-support",))
methods["Mondrian relaxed (Ana)"] = group_ids(anatomize(mon_as_grouping, seed=1).frame)
base_grouping = Grouping(adult.lazy().with_columns(group=pl.lit(0, dtype=pl.Int64)), "group",
                         tuple(QI), S, "base", L, 1, adult.height, 0,
                         _check(adult.with_columns(group=pl.lit(0)), ["group"], S, req), None,
                         ("Tech-support",))
methods["Base (Ana)"] = group_ids(anatomize(base_grouping, seed=1).frame)

try:
    from ldiv_polars.search import anonymize
    hs = {c: DATA / f"adult_hierarchy_{c}.csv" for c in QI}
    lat = anonymize(adult, QI, S, {c: str(p) for c, p in hs.items()}, req, suppression=0.02,
                    metric="loss")
    out = lat.output.collect()
    methods["Lattice search"] = (out.select(pl.struct(QI).rank("dense") - 1)
                                 .to_series().to_numpy().astype(np.int64))
    print("lattice levels", lat.levels, "suppressed rows", lat.suppressed_rows)
except ImportError as exc:
    print("lattice search not available:", exc)

qds = [1, 2, 3, 4]
are_by_qd = {qd: compare_are(codes, s_codes, methods,
                             count_query_workload(codes, s_codes, queries=1000, qd=qd, sel=0.3,
                                                  seed=qd))
             for qd in qds}
summary = pl.DataFrame([
    {"method": name, "groups": int(ids.max()) + 1,
     "avg_group_size": adult.height / (int(ids.max()) + 1),
     **{f"ARE qd={qd}": are_by_qd[qd][name]["are"] for qd in qds},
     "vulnerable_fraction": attack.get(name, (None, None))[0],
     "max_risk_times_l": attack.get(name, (None, None))[1]}
    for name, ids in methods.items()
])
fig, ax = plt.subplots(1, 2, figsize=(13, 4))
for name in methods:
    ax[0].plot(qds, [are_by_qd[qd][name]["are"] for qd in qds], "o-", label=name)
ax[0].set(xlabel="query dimension qd (sel = 0.3)", ylabel="average relative error",
          yscale="log", title="ARE of random COUNT queries")
ax[0].legend(fontsize=7, loc="lower right", ncol=2)
ax[1].barh(summary["method"], summary["avg_group_size"])
ax[1].set(xscale="log", xlabel="average group size", title="group size")
plt.tight_layout(); plt.show()
summary
""")

md("""
**Reading the comparison** (this run; seeded, so the numbers are stable):

* Every QI-aware grouping answers COUNT queries much better than the single-group baseline.
* Strict Mondrian has the lowest error but leaks under the minimality attack (Fig. 6b's
  mechanism; the worst tuple reaches 3/ℓ here).
* **Relaxed (even-split) Mondrian leaks too**, though far less: when no split of a final group
  is allowed, the attacker intersects the rejections of *every* candidate split (one per QI
  dimension), whereas Theorem 5 bounds a single rejected split. This is a finding of this
  reproduction, not a claim of the paper.
* SG is safe (max risk exactly 1/ℓ, as Theorem 5 predicts for one split with children of at
  least ℓ rows) and, on this extract, has a *lower* error than RGG at p = 0.65, whose groups are
  more than twice as large. The paper's Fig. 5 found RGG below SG; its RGG p was chosen to
  remove the attack under its own weighting, which with the exact weighting used here does not
  happen at p = 0.65 (Fig. 4 above).
* Anatomization helps most where groups are large (RGG, Base) and changes little for SG and
  Mondrian, whose groups are already between ℓ and 2ℓ.
* The error *grows* with the number of QIs in the predicate here (smaller true counts), while
  the paper reports it falling; its query generator and estimator are not fully specified.
* The absolute figures differ from the paper's (30,162 instead of 45,222 rows, unknown sort
  order and estimator, exact instead of sampled posteriors).
""")

code("""
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
""")


if __name__ == "__main__":
    write_notebook(cells, HERE / "06_minimality.ipynb")
