"""Generate (and execute) ``notebooks/04_ell_delta.ipynb``.

    .venv/bin/python notebooks/make_04_ell_delta.py          # build + execute in place
    .venv/bin/python notebooks/make_04_ell_delta.py --no-run # build only
"""

# ruff: noqa: E501  (the cells hold notebook code, kept as readable long lines)

from __future__ import annotations

from pathlib import Path

from nbbuild import write_notebook

HERE = Path(__file__).resolve().parent
OUT = HERE / "04_ell_delta.ipynb"

CELLS: list[tuple[str, str]] = [
    ("md", """# (l, δ)-diversity: linkage across releases, the mechanism, and the paper's figures

Reproduces Rameshwar & Tandon, *(ℓ,δ)-Diversity: Linkage-Robustness via a Composition Theorem*
with `ldiv_polars.linkage` (spec: `shared/design/paper-notes/ell-delta-diversity.md`):

1. the linkage attack of Table 2 and the worst case of Prop. 3.1;
2. Figures 1a, 1b (uniform marginals) and 2a, 2b (geometric ρ = 0.95) for |Q| = 3000, |S| = 50;
3. the table of N values of the notes, to the unit;
4. the class counts ⌊p_ℓ/p⌋ of Greedy-Generalize / Generalize-Ind, with exact arithmetic;
5. a Monte Carlo of the guarantee against the bound, and the contrast with pure ℓ-diversity."""),
    ("code", """import sys, time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path.cwd().parent))  # the repository root (notebook runs in notebooks/)

import matplotlib.pyplot as plt
%matplotlib inline
import numpy as np
import polars as pl

from ldiv_polars.linkage import (
    JointDistribution, generalize_ind, greedy_generalize, link, m_value, plan_mechanism,
    post_linkage, sample_size, sample_size_real, worst_case_l, worst_case_releases,
    brute_force_worst_case_l,
)
from ldiv_polars.linkage.examples import table1_raw, table2_releases
from ldiv_polars.linkage.ledger import CompositionLedger
from ldiv_polars.linkage.simulate import simulate_mechanism, simulate_pure

T0 = time.perf_counter()
uniform = JointDistribution.paper_setting("uniform")
geometric = JointDistribution.paper_setting("geometric")
uniform, geometric"""),
    ("md", """## 1. The linkage attack (Table 2) and the worst case (Prop. 3.1)

Both releases are 2-diverse; linking them on (Female, 560010) leaves one disease."""),
    ("code", """rels = table2_releases()
print([r.check(2).passed for r in rels])
lk = link(rels, {"gender": "Female", "postal": "560010"})
print("linkage:", lk.counts.rows(), "diversity:", lk.diversity)
post = post_linkage(rels, table1_raw())
post.to_dict(), post.collapsed.select("gender", "postal", "revealed")"""),
    ("code", """rows = []
for L, t in ((6, 2), (6, 3), (8, 4)):
    for l in range(1, L + 2):
        rels_wc, target = worst_case_releases(L, t, l)
        rows.append({"L": L, "t": t, "l": l, "Prop 3.1": worst_case_l(L, t, l),
                     "brute force": brute_force_worst_case_l(L, t, l),
                     "linked tables": link(rels_wc, target).diversity})
wc = pl.DataFrame(rows)
assert (wc["Prop 3.1"] == wc["brute force"]).all() and (wc["Prop 3.1"] == wc["linked tables"]).all()
wc.filter(pl.col("L") == 6)"""),
    ("md", """## 2. Figures 1a, 1b, 2a, 2b

N = ln(mℓ/δ) / ln(1/(1−p)) with m = min{|Q|, 1/(ℓp), Σ_{i≥ℓ} p_i / p}, p = β p_ℓ. With uniform
marginals mℓ = 1/p, so the curves for ℓ = 10 and ℓ = 30 coincide (drawn dashed on top)."""),
    ("code", """def n_real(dist, l, delta, p):
    ps = dist.p_sorted()
    return sample_size_real(l, delta, p, m_value(ps, l, Fraction(p), dist.n_qi))

deltas = np.linspace(0.001, 0.999, 200)
fig, axes = plt.subplots(2, 2, figsize=(12, 9))
ax = axes[0, 0]
for beta in ("0.01", "0.02"):
    for l, style in ((10, "-"), (30, "--")):
        p = Fraction(beta) * uniform.p_l(l)
        ax.plot(deltas, [n_real(uniform, l, float(d), p) for d in deltas], style,
                label=f"β={beta}, ℓ={l}")
ax.set(title="Fig 1a — uniform: N vs δ", xlabel="δ", ylabel="N"); ax.legend()

ax = axes[0, 1]
ps_grid = np.linspace(1e-3, 1 / 50, 200)
for delta in (0.01, 0.001):
    for l, style in ((10, "-"), (30, "--")):
        ax.plot(ps_grid, [n_real(uniform, l, delta, Fraction(repr(float(p)))) for p in ps_grid],
                style, label=f"δ={delta}, ℓ={l}")
ax.set(title="Fig 1b — uniform: N vs p", xlabel="p", ylabel="N", yscale="log"); ax.legend()

ax = axes[1, 0]
for beta in ("0.01", "0.02"):
    for l in (10, 30):
        p = Fraction(beta) * geometric.p_l(l)
        ax.plot(deltas, [n_real(geometric, l, float(d), p) for d in deltas],
                label=f"β={beta}, ℓ={l}")
ax.set(title="Fig 2a — geometric ρ=0.95: N vs δ", xlabel="δ", ylabel="N", yscale="log"); ax.legend()

ax = axes[1, 1]
ls_grid = np.arange(5, 41)
for beta in ("0.01", "0.02"):
    for delta in (0.01, 0.001):
        ax.plot(ls_grid, [n_real(geometric, int(l), delta, Fraction(beta) * geometric.p_l(int(l)))
                          for l in ls_grid], marker=".", label=f"β={beta}, δ={delta}")
ax.set(title="Fig 2b — geometric ρ=0.95: N vs ℓ", xlabel="ℓ", ylabel="N", yscale="log"); ax.legend()
fig.tight_layout()
plt.show()"""),
    ("md", """## 3. The N table of the notes, to the unit

`N_real` rounded to 2 decimals must equal the notes' value and `N` is its ceiling (the smallest N
with mℓ(1−p)^N ≤ δ)."""),
    ("code", """notes = [  # (marginal, l, p or beta, delta, value in the notes)
    ("uniform", 10, "p=2e-4", 0.01, 65605.26), ("uniform", 10, "p=2e-4", 0.001, 77117.03),
    ("uniform", 10, "p=2e-4", 0.1, 54093.48), ("uniform", 10, "p=2e-4", 0.5, 46047.10),
    ("uniform", 10, "p=4e-4", 0.01, 31066.83), ("uniform", 10, "p=4e-4", 0.001, 36822.14),
    ("uniform", 10, "p=4e-4", 0.1, 25311.51), ("uniform", 10, "p=1e-3", 0.01, 11507.17),
    ("uniform", 10, "p=1e-3", 0.001, 13808.60), ("uniform", 10, "p=0.01", 0.01, 916.42),
    ("uniform", 10, "p=0.01", 0.001, 1145.53), ("uniform", 10, "p=0.02", 0.01, 421.59),
    ("uniform", 10, "p=0.02", 0.001, 535.56),
    ("geometric", 5, "beta=0.01", 0.01, 27942.93), ("geometric", 5, "beta=0.01", 0.001, 33160.68),
    ("geometric", 10, "beta=0.01", 0.01, 36865.11), ("geometric", 10, "beta=0.01", 0.001, 43608.63),
    ("geometric", 30, "beta=0.01", 0.01, 111228.64),
    ("geometric", 30, "beta=0.01", 0.001, 130041.82),
    ("geometric", 40, "beta=0.01", 0.01, 192776.43),
    ("geometric", 40, "beta=0.01", 0.001, 224198.65),
    ("geometric", 10, "beta=0.02", 0.01, 17414.58), ("geometric", 10, "beta=0.02", 0.001, 20785.76),
    ("geometric", 30, "beta=0.02", 0.01, 52779.42), ("geometric", 30, "beta=0.02", 0.001, 62185.44),
    ("geometric", 40, "beta=0.02", 0.01, 91655.34),
    ("geometric", 40, "beta=0.02", 0.001, 107365.87),
]
rows = []
for marginal, l, spec, delta, value in notes:
    dist = uniform if marginal == "uniform" else geometric
    key, val = spec.split("=")
    plan = plan_mechanism(dist, l, delta, **{key: val})
    rows.append({"marginal": marginal, "l": l, spec.split("=")[0]: val, "delta": delta,
                 "p": float(plan.p), "m": float(plan.m), "N_real": round(plan.N_real, 2),
                 "notes": value, "N": plan.N, "classes": plan.classes})
table = pl.DataFrame([{k: r.get(k) for k in ("marginal", "l", "p", "beta", "delta", "m", "N_real",
                                                 "notes", "N", "classes")} for r in rows])
assert (table["N_real"] == table["notes"]).all()
ceil_notes = [int(np.ceil(v)) for v in table["notes"].to_list()]
assert table["N"].to_list() == ceil_notes
with pl.Config(tbl_rows=40, tbl_cols=-1, tbl_width_chars=200):
    print(table)"""),
    ("md", """## 4. Class counts ⌊p_ℓ/p⌋ and why the comparisons are exact

With uniform P_Q and P_S, Greedy-Generalize (Algorithm 2) and Generalize-Ind (Algorithm 3) give
⌊p_ℓ/p⌋ = ⌊1/β⌋ classes (Cor. 4.8): 100 at β = 0.01, 50 at β = 0.02. A float64 sweep loses a class
at β = 0.02 (sizes 61 and 72) because 60 × (1/3000)(1/50) summed in floating point falls just
short of 4e-4."""),
    ("code", """rows = []
for beta in ("0.005", "0.01", "0.02", "0.05", "0.1", "0.25"):
    p = Fraction(beta) * uniform.p_l(10)
    g = greedy_generalize(uniform, 10, p)
    rows.append({"beta": beta, "floor(p_l/p)": int(1 / Fraction(beta)), "greedy": g.classes,
                 "generalize_ind": generalize_ind(uniform, 10, p).classes,
                 "class sizes": sorted(set(g.sizes.tolist()))})
print(pl.DataFrame(rows))

def float_greedy_sizes(p, n_qi=3000, n_s=50, l=10):
    sizes, size, mass = [], 0, 0.0
    for _ in range(n_qi):
        size += 1; mass += (1 / n_qi) * (1 / n_s)
        if sum(mass >= p for _ in range(n_s)) >= l:
            sizes.append(size); size, mass = 0, 0.0
    if size: sizes[-1] += size
    return sizes
fs = float_greedy_sizes(0.02 * (1 / 50))
print("float64 greedy at beta=0.02:", len(fs), "classes, sizes", sorted(set(fs)),
      "| exact:", greedy_generalize(uniform, 10, Fraction(4, 10000)).classes)"""),
    ("code", """# planning in the other direction: a sample budget N -> the p with the most classes
rows = []
for budget in (5_000, 20_000, 31_067, 65_606, 200_000):
    plan = plan_mechanism(uniform, 10, 0.01, budget=budget)
    rows.append({"budget": budget, "p": float(plan.p), "beta": float(plan.beta), "N": plan.N,
                 "classes": plan.classes})
pl.DataFrame(rows)"""),
    ("md", """## 5. The guarantee, measured

Monte Carlo (vectorized numpy): t = 2 datasets of N i.i.d. records from P, the broadcast classes
applied, and the empirical probability that a dataset (or the post-linkage dataset) is not
ℓ-diverse, against the union bounds mℓ(1−p)^N and t·mℓ(1−p)^N (paper setting, uniform, β = 0.01,
100 classes).

* ℓ = 10: at the broadcast N = 65606 nothing fails in thousands of trials — the union bound is
  loose (a class fails only if 41 of its 50 values are all missing).
* ℓ = |S| = 50: every value of every class must appear, the union bound over the 5000 cells is
  nearly tight, and the empirical failure probability follows the bound closely (300 trials per
  point: about ±0.006 of sampling noise at the 1% level)."""),
    ("code", """from scipy.stats import binomtest

plan = plan_mechanism(uniform, 10, 0.01, beta=0.01)
res = simulate_mechanism(plan, t=2, trials=1500, seed=0)
print(f"l=10, N={res.N}: dataset failure {res.dataset_failure_rate:.4f} <= bound {res.bound:.4f}; "
      f"post-linkage failure {res.post_linkage_failure_rate:.4f} <= t*bound {res.linked_bound:.4f}")
print("post-linkage l_[t] over trials:", res.l_t_histogram)

plan50 = plan_mechanism(uniform, 50, 0.01, beta=0.01)
res50 = simulate_mechanism(plan50, t=2, trials=2000, seed=2)
k = round(res50.dataset_failure_rate * 2 * res50.trials)
ci = binomtest(k, 2 * res50.trials).proportion_ci(0.99)
print(f"l=50, N={res50.N}: dataset failure {res50.dataset_failure_rate:.4f} "
      f"(99% CI {ci.low:.4f}-{ci.high:.4f}) vs delta = bound {res50.bound:.4f}; "
      f"any of t=2 {res50.any_dataset_failure_rate:.4f}, post-linkage "
      f"{res50.post_linkage_strict_rate:.4f} vs t*delta {res50.linked_bound:.4f}")
assert ci.low <= 0.01

fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
panels = ((axes[0], plan, [2000, 3000, 4000, 5000, 6000, 8000, 12000], 300),
          (axes[1], plan50, [42000, 46000, 50000, 54000, 58000, 62000, 66000], 300))
for ax, pln, grid, trials in panels:
    sims = [simulate_mechanism(pln, t=2, trials=trials, N=n, seed=1) for n in grid]
    raw_bound = [float(pln.m) * pln.l * (1 - float(pln.p)) ** n for n in grid]
    ax.plot(grid, [s.dataset_failure_rate for s in sims], "o-", label="empirical, one dataset")
    ax.plot(grid, [s.post_linkage_strict_rate for s in sims], "s-",
            label="empirical, post-linkage (t=2)")
    ax.plot(grid, raw_bound, "--", label="bound mℓ(1−p)^N")
    ax.plot(grid, [2 * b for b in raw_bound], ":", label="bound t·mℓ(1−p)^N")
    ax.set(xlabel="N", ylabel="P[not ℓ-diverse]", yscale="log", ylim=(1e-3, 10),
           title=f"ℓ={pln.l}, β=0.01: empirical failure vs bound")
    ax.legend(fontsize=8)
plt.show()"""),
    ("md", """### Contrast: pure ℓ-diversity per dataset, then linkage

The same draws, each dataset anonymized on its own by the optimal contiguous *pure* ℓ-diverse partition of its
own counts (thousands of small, dataset-dependent classes). Linked, the adversary's post-linkage
diversity ℓ_[t] collapses far below ℓ = 10, while the mechanism keeps ℓ_[t] ≥ 10."""),
    ("code", """pure = simulate_pure(uniform, 10, plan.N, t=2, trials=3, seed=0, plan=plan)  # same draws
print("pure l-diversity: classes per dataset", pure.classes, "-> l_[t] per trial", pure.l_t)
print("mechanism on the same draws: 100 classes -> l_[t] per trial", pure.mechanism_l_t)

led = CompositionLedger()
for name in ("hospital A", "hospital B", "hospital C"):
    led.record_plan(name, plan)
print("ledger after 3 linked releases:", led.guarantee().to_dict())
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")"""),
]


if __name__ == "__main__":
    write_notebook(CELLS, OUT)
