"""Generate and execute ``05_microaggregation.ipynb``: p-probabilistic k-anonymous
microaggregation (Rebollo-Monedero, Forné, Soriano, Puiggalí, Inform. Sci. 2017) with ldiv_polars.

Run from anywhere (the notebook executes with cwd = notebooks/)::

    .venv/bin/python notebooks/make_05_microaggregation.py

The paper's Tables II-IV are asserted inside the notebook (to the printed precision), so executing
it is a test. The figures are plots only in the paper; the notebook redraws them.
"""

from __future__ import annotations

from pathlib import Path

from nbbuild import NotebookCells, write_notebook

HERE = Path(__file__).resolve().parent
OUT = HERE / "05_microaggregation.ipynb"

cells = NotebookCells()
md, code = cells.md, cells.code


# ---------------------------------------------------------------------------------------------
md(r"""
# p-Probabilistic k-anonymous microaggregation, with `ldiv_polars`

Rebollo-Monedero, Forné, Soriano, Puiggalí, *p-Probabilistic k-Anonymous Microaggregation for the
Anonymization of Surveys with Uncertain Participation*, Inform. Sci. (2017).

A survey designer must fix the microaggregation cells **before** the respondents answer. Each
respondent takes part with probability $\pi$; a cell of $n$ candidates holds
$K_n\sim\mathrm{Bin}(n,\pi)$ active records and is k-anonymous iff $K_n\ge k$ or $K_n=0$. The
attained cell failure is $\bar q=P\{0<K_n<k\}$, and the **effective anonymity** $n_{\min}$ is
the smallest $n\ge k$ with $\bar q\le\bar p$ (Algorithm A). Microaggregating with MDAV at
$n_{\min}$ instead of $k$ gives cells that are k-anonymous with probability at least $p=1-\bar
p$.

This notebook reproduces:

1. **Table II** (Algorithm A vs a Monte Carlo simulation of $10^5$ cells), **Table III** and
   **Table IV** — asserted to the printed precision;
2. **Fig. 6** (numerical stability), **Fig. 7** ($n_{\min}$ vs $\bar p$), **Figs. 8-10**
   (approximations vs the exact $n_{\min}$);
3. **Figs. 11 and 13** on Gaussian data (distortion $D$ vs $k$, $\pi$, $\bar p$; the ratio
   $D(\pi{=}.75)/D(\pi{=}1)$ for $m=2,5,10$; the naive-cell failure), with a modest $N=4000$
   (the paper uses $10^4$) to keep the notebook fast;
4. `microaggregate` on a Polars table, and the data-independent design (`design_partition`,
   `assign`).
""")

code(r"""
import math
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np
import polars as pl

try:
    import ldiv_polars as lp
except ImportError:  # running from a checkout without an installed package
    sys.path.insert(0, str(Path.cwd().resolve().parent))
    import ldiv_polars as lp

import matplotlib.pyplot as plt
from ldiv_polars import microagg as ma

%matplotlib inline
plt.rcParams.update({"figure.figsize": (6.4, 3.6), "figure.dpi": 80, "axes.grid": True,
                     "grid.alpha": 0.3})
pl.Config.set_tbl_rows(20)
pl.Config.set_tbl_cols(-1)
pl.Config.set_tbl_width_chars(200)
pl.Config.set_tbl_hide_dataframe_shape(True)
T0 = time.perf_counter()


def printed(value: float, text: str) -> bool:
    # value rounds to the printed text at the number of significant digits printed
    mantissa = text.lower().split("e")[0].lstrip("0.").replace(".", "")
    return float(f"{value:.{max(len(mantissa), 1)}g}") == float(text)
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 1. Table II — Algorithm A against a Monte Carlo simulation

$k=20$, $\bar p=0.1$, $\pi=0.5$ give $n_{\min}=48$; $|\mathcal C|=10^5$ cells are simulated with
independent Bernoulli participation (`simulate_participation`, vectorized). Our simulation must
agree with Algorithm A within sampling error (4 standard errors), as the paper's does.
""")

code(r"""
alg = ma.effective_anonymity(20, 0.5, 0.1)
sim = ma.simulate_participation(20, 0.5, alg.n_min, cells=100_000, seed=2016)
paper = {"q_bar": ("0.09671", "0.09606"), "u": ("17.85", "17.83"), "r_bar": ("0.03597", "0.03605")}
rows = []
for key, (p_alg, p_sim) in paper.items():
    a, s, se = getattr(alg, key), getattr(sim, key), getattr(sim, f"{key}_se")
    assert printed(a, p_alg), key                 # Algorithm column: exact to the printed digits
    assert abs(s - a) < 4 * se, key               # our simulation: within sampling error
    rows.append({"variable": key, "algorithm": a, "paper algorithm": float(p_alg),
                 "simulation (ours)": s, "std. error": se, "paper simulation": float(p_sim),
                 "rel. err. [%]": 100 * (s - a) / a})
print(f"n_min = {alg.n_min}")
pl.DataFrame(rows)
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 2. Table III — $n_{\min}$ and the failure metrics

$\bar q$: cell failure; $u=E[K_n\mid 0<K_n<k]$: unprotected records given failure;
$\bar r=u\bar q/n$: record failure; $\bar r'=\bar r/\pi$: failure of a participating respondent.
""")

code(r"""
TABLE_III = [
    (10, 0.75, 1e-4, 25, "4.31e-5", "8.80", "1.52e-5", "2.02e-5"),
    (10, 0.75, 1e-5, 27, "6.05e-6", "8.82", "1.98e-6", "2.64e-6"),
    (10, 0.75, 1e-6, 29, "7.95e-7", "8.84", "2.42e-7", "3.23e-7"),
    (10, 0.5, 1e-4, 43, "8.51e-5", "8.69", "1.72e-5", "3.44e-5"),
    (10, 0.5, 1e-5, 48, "7.61e-6", "8.73", "1.38e-6", "2.77e-6"),
    (10, 0.5, 1e-6, 53, "6.1e-7", "8.77", "1.01e-7", "2.02e-7"),
    (50, 0.75, 1e-4, 88, "6.2e-5", "48.4", "3.41e-5", "4.54e-5"),
    (50, 0.75, 1e-5, 91, "9.82e-6", "48.4", "5.22e-6", "6.97e-6"),
    (50, 0.75, 1e-6, 95, "7.14e-7", "48.5", "3.64e-7", "4.86e-7"),
    (50, 0.5, 1e-4, 144, "7.86e-5", "48.1", "2.62e-5", "5.25e-5"),
    (50, 0.5, 1e-5, 151, "9.64e-6", "48.2", "3.08e-6", "6.15e-6"),
    (50, 0.5, 1e-6, 159, "7.35e-7", "48.3", "2.23e-7", "4.46e-7"),
]
rows = []
for k, pi, p_bar, n_min, *texts in TABLE_III:
    r = ma.effective_anonymity(k, pi, p_bar)
    got = [r.q_bar, r.u, r.r_bar, r.r_bar_active]
    assert r.n_min == n_min and all(printed(g, t) for g, t in zip(got, texts)), (k, pi, p_bar)
    rows.append({"k": k, "pi": pi, "p_bar": p_bar, "n_min": r.n_min, "q_bar": f"{r.q_bar:.3g}",
                 "u": f"{r.u:.3g}", "r_bar": f"{r.r_bar:.3g}", "r_bar'": f"{r.r_bar_active:.3g}"})
print("all 60 entries of Table III reproduced at the printed precision")
pl.DataFrame(rows)
""")

md(r"""
## 3. Table IV — table failure $\bar t = 1-q^{\lfloor N/n\rfloor-1}q'$

$\pi=0.75$; the last cell holds $n'=n+N\bmod n$ records. The asymptotic
$\bar t\approx 1-e^{-(N/n_{\min})\bar q}$ is shown beside it.
""")

code(r"""
TABLE_IV = [
    (10, 1e-4, ("0.0171", "0.158", "0.822")), (10, 1e-5, ("0.00223", "0.0221", "0.201")),
    (10, 1e-6, ("0.000273", "0.00274", "0.027")), (50, 1e-4, ("0.00692", "0.0679", "0.505")),
    (50, 1e-5, ("0.00106", "0.0107", "0.102")), (50, 1e-6, ("7.42e-5", "0.00075", "0.00748")),
]
rows = []
for k, p_bar, texts in TABLE_IV:
    row = {"k": k, "p_bar": p_bar}
    for N, text in zip((10**4, 10**5, 10**6), texts):
        r = ma.effective_anonymity(k, 0.75, p_bar, N=N)
        assert printed(r.t_bar, text), (k, p_bar, N)
        row[f"t_bar N={N:.0e}"] = f"{r.t_bar:.3g}"
        row[f"asympt. N={N:.0e}"] = f"{ma.asymptotic_table_failure(N, r.n_min, r.q_bar):.3g}"
    rows.append(row)
print("all 18 entries of Table IV reproduced at the printed precision")
pl.DataFrame(rows)
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 4. Fig. 6 — numerical stability

The paper's line 6 computes $\bar q=P_n(k-1)-p_n(0)$ with $P_n(k-1)$ updated by subtraction from 1,
which cancels once $\bar q\lesssim10^{-13}$ (the paper reports $-0.84\,\%$ at $10^{-17}$). The
library's default evaluates the same recursion as $\bar q=\sum_{j=1}^{k-1}p_n(j)$ — additions of
non-negative numbers only — and stays at machine precision. Reference: scipy's binomial pmf summed
in log space. $k=20$, $\pi=0.5$.
""")

code(r"""
from scipy import special, stats

p_bars = 10.0 ** -np.arange(1, 17.01, 0.1)
err_paper, err_ours = [], []
for p_bar in p_bars:
    lit = ma.effective_anonymity(20, 0.5, p_bar, method="paper")
    ours = ma.effective_anonymity(20, 0.5, p_bar)
    ref = lambda n: np.exp(special.logsumexp(stats.binom.logpmf(np.arange(1, 20), n, 0.5)))
    err_paper.append((lit.q_bar - ref(lit.n_min)) / ref(lit.n_min))
    err_ours.append((ours.q_bar - ref(ours.n_min)) / ref(ours.n_min))
worst = int(np.argmax(np.abs(err_paper)))
print(f"literal recursion: worst relative error {100 * err_paper[worst]:.3f} % "
      f"at p_bar = {p_bars[worst]:.1e}")
print(f"default recursion: worst relative error {100 * max(map(abs, err_ours)):.1e} %")
assert abs(err_paper[worst] + 0.0084) < 2e-4 and max(map(abs, err_ours)) < 1e-12
fig, ax = plt.subplots()
ax.semilogx(p_bars, 100 * np.array(err_paper), label="paper's line 6 (subtraction)")
ax.semilogx(p_bars, 100 * np.array(err_ours), label="library default (sum of p_n(1..k-1))")
ax.invert_xaxis(); ax.set_xlabel(r"$\bar p$"); ax.set_ylabel("relative error of $\\bar q$ [%]")
ax.set_title("Fig. 6: stability, k = 20, $\\pi$ = 0.5"); ax.legend(); plt.show()
""")

md(r"""
## 5. Fig. 7 — effective anonymity vs acceptable failure

$\pi=0.5$, $k=50$; at $\bar p=1$, $n_{\min}=k$. Reference lines: six-sigma ($3.4\cdot10^{-6}$)
and the particle-physics $5\sigma$ ($2.87\cdot10^{-7}$).
""")

code(r"""
p_bars = np.logspace(0, -8, 161)
n_min = [ma.effective_anonymity(50, 0.5, p).n_min for p in p_bars]
assert [ma.effective_anonymity(50, 0.5, 10.0**-e).n_min for e in range(9)] == \
    [50, 113, 125, 135, 144, 151, 159, 165, 172]
fig, ax = plt.subplots()
ax.semilogx(p_bars, n_min, drawstyle="steps-post")
for p, name in ((3.4e-6, "six sigma"), (2.87e-7, "5 sigma")):
    ax.axvline(p, ls="--", c="grey"); ax.text(p, 60, " " + name, rotation=90, va="bottom")
ax.invert_xaxis(); ax.set_xlabel(r"$\bar p$"); ax.set_ylabel(r"$n_{\min}$")
ax.set_title(r"Fig. 7: $n_{\min}$ vs $\bar p$ ($\pi$ = 0.5, k = 50)"); plt.show()
""")

md(r"""
## 6. Figs. 8-9 — approximations for arbitrary $k$

$\pi=0.5$, $\bar p=10^{-6}$. $\tilde n_1$ solves $-\frac1n\ln\bar p=D(\frac{k-1}{n}\|\pi)$ (Brent's
method, `scipy.optimize.brentq`); $\tilde n_1'$, $\tilde n_1''$ use the quadratic approximation of
the divergence and $\tilde n_2$ the logarithmic one. The Markov bound is a lower bound.
""")

code(r"""
ks = np.arange(2, 101)
exact = np.array([ma.effective_anonymity(int(k), 0.5, 1e-6).n_min for k in ks])
approx = {
    r"KL root $\tilde n_1$": [ma.kl_approximation(int(k), 0.5, 1e-6) for k in ks],
    r"$\tilde n_1'$": [ma.quadratic_approximation(int(k), 0.5, 1e-6) for k in ks],
    r"$\tilde n_1''$": [ma.quadratic_approximation_simple(int(k), 0.5, 1e-6) for k in ks],
    r"$\tilde n_2$": [ma.log_approximation(int(k), 0.5, 1e-6) for k in ks],
}
markov = [ma.markov_bound(int(k), 0.5, 1e-6) for k in ks]
assert all(m <= e for m, e in zip(markov, exact))
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
a1.plot(ks, exact, "k", lw=2, label="Algorithm A")
a1.plot(ks, approx[r"KL root $\tilde n_1$"], "--", label=r"KL root $\tilde n_1$")
a1.plot(ks, markov, ":", label="Markov lower bound")
a1.set_xlabel("k"); a1.set_ylabel(r"$n_{\min}$"); a1.set_title("Fig. 8"); a1.legend()
for name, vals in approx.items():
    a2.plot(ks, 100 * (np.array(vals) - exact) / exact, label=name)
a2.set_xlabel("k"); a2.set_ylabel("relative error [%]"); a2.set_title("Fig. 9"); a2.legend()
plt.tight_layout(); plt.show()
for k in (10, 50):
    i = k - 2
    names = ["KL root n1", "n1'", "n1''", "n2"]
    vals = ", ".join(f"{n}={v[i]:.2f}" for n, v in zip(names, approx.values()))
    print(f"k={k}: n_min={exact[i]}, {vals}")
""")

md(r"""
## 7. Fig. 10 — $k=2$: Lambert W and the logarithmic approximations

For $k=2$, $\bar q=n\bar\pi^{n-1}\pi$ and $n_{\min}$ solves $xb^x=a$ with $a=(\bar\pi/\pi)\bar p$,
$b=\bar\pi$: $x=W_{-1}(a\ln b)/\ln b$ (`scipy.special.lambertw`), exact after the ceiling. The paper
does not state $\pi$ for this figure; we use $\pi=0.5$. Its claims — $\lceil\tilde n_1\rceil$ is an
upper bound, $\lceil\tilde n_2\rceil$ optimistic but more often exact — are asserted.
""")

code(r"""
p_bars = 10.0 ** -np.arange(3, 7.0005, 0.001)
exact = np.array([ma.effective_anonymity(2, 0.5, p).n_min for p in p_bars])
lam = np.array([ma.effective_anonymity_k2(0.5, p) for p in p_bars])
assert (lam == exact).all()
n1 = np.array([math.ceil(ma.k2_log_approximations(0.5, p)[1]) for p in p_bars])
n2 = np.array([math.ceil(ma.k2_log_approximations(0.5, p)[2]) for p in p_bars])
assert (n1 >= exact).all() and (n2 <= exact).all()
print(f"ceil(n2) exact for {100 * (n2 == exact).mean():.1f} % of p_bar, ceil(n1) for "
      f"{100 * (n1 == exact).mean():.1f} %; Lambert W exact everywhere")
fig, ax = plt.subplots()
ax.semilogx(p_bars, 100 * (n1 - exact) / exact, label=r"$\lceil\tilde n_1\rceil$ (1st order)")
ax.semilogx(p_bars, 100 * (n2 - exact) / exact, label=r"$\lceil\tilde n_2\rceil$ (2nd order)")
ax.invert_xaxis(); ax.set_xlabel(r"$\bar p$"); ax.set_ylabel("relative error [%]")
ax.set_title(r"Fig. 10: k = 2, $\pi$ = 0.5"); ax.legend(); plt.show()
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 8. Fig. 11 — distortion on Gaussian data

Zero-mean, unit-variance independent Gaussian data, $m=10$, $N=4000$ (the paper: $10^4$). MDAV
with the minimum cell size $n_{\min}(k,\pi,\bar p)$; $D=\mathrm{SSE}/\mathrm{SST}$ on standardized
data ($\pi=1$ is traditional microaggregation). As in the paper, $D$ rises with uncertainty —
gently at high $\pi$, sharply at low $\pi$ — and is remarkably insensitive to $\bar p$.
""")

code(r"""
rng = np.random.default_rng(2016)
N = 4000
X10 = rng.standard_normal((N, 10))
t = time.perf_counter()
ks = [2, 3, 5, 7, 10, 15, 20, 30, 50]
pis = [1.0, 0.9, 0.75, 0.5]
D = {pi: [ma.mdav(X10, ma.effective_anonymity(k, pi, 1e-5).n_min).distortion for k in ks]
     for pi in pis}
p_grid = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8]
Dp = {pi: [ma.mdav(X10, ma.effective_anonymity(10, pi, p).n_min).distortion for p in p_grid]
      for pi in (0.9, 0.75, 0.5)}
print(f"{len(ks) * len(pis) + 3 * len(p_grid)} MDAV runs in {time.perf_counter() - t:.1f} s")
for i in range(len(ks)):
    assert D[1.0][i] <= D[0.9][i] <= D[0.75][i] <= D[0.5][i]
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
for pi in pis:
    a1.plot(ks, D[pi], "o-", ms=3, label=fr"$\pi$ = {pi}")
a1.set_xlabel("k"); a1.set_ylabel("D"); a1.set_title(r"Fig. 11: D vs k ($\bar p=10^{-5}$, m = 10)")
a1.legend()
for pi, vals in Dp.items():
    a2.semilogx(p_grid, vals, "o-", ms=3, label=fr"$\pi$ = {pi}")
a2.invert_xaxis(); a2.set_xlabel(r"$\bar p$"); a2.set_ylabel("D")
a2.set_title("D vs $\\bar p$ (k = 10)")
a2.legend(); plt.tight_layout(); plt.show()
""")

md(r"""
## 9. Fig. 13 — the price of uncertainty, and naive cells

(a) $D(\pi{=}0.75)/D(\pi{=}1)$ vs $k$ for $\bar p=10^{-5}$ and $m=2,5,10$: the penalty is largest
for small $k$ and shrinks as $k$ or $m$ grows. (b) Naive cells of exactly $k$ records fail with
$\bar q=1-\bar\pi^k-\pi^k$, worst at $\pi=\tfrac12$ where $\bar q=1-2^{1-k}$.
""")

code(r"""
ks = [2, 3, 5, 7, 10, 15, 20, 30, 50]
ratio = {}
for m in (2, 5, 10):
    X = X10[:, :m]
    ratio[m] = [ma.mdav(X, ma.effective_anonymity(k, 0.75, 1e-5).n_min).distortion
                / ma.mdav(X, k).distortion for k in ks]
assert all(r > 1 for v in ratio.values() for r in v)
assert ratio[2][0] > ratio[2][-1] and ratio[10][0] > ratio[10][-1]   # shrinks with k
assert ratio[2][0] > ratio[5][0] > ratio[10][0]                      # and with m
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
for m, vals in ratio.items():
    a1.plot(ks, vals, "o-", ms=3, label=f"m = {m}")
a1.set_xlabel("k"); a1.set_ylabel(r"$D(\pi=.75)\,/\,D(\pi=1)$")
a1.set_title("Fig. 13(a)"); a1.legend()
pi_grid = np.linspace(0, 1, 201)
for k in (2, 5, 10, 20):
    a2.plot(pi_grid, [ma.naive_failure(k, p) for p in pi_grid], label=f"k = {k}")
    assert math.isclose(ma.naive_failure(k, 0.5), 1 - 2.0 ** (1 - k))
a2.set_xlabel(r"$\pi$"); a2.set_ylabel(r"$\bar q$ (cells of k)")
a2.set_title("Fig. 13(b)"); a2.legend()
plt.tight_layout(); plt.show()
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 10. With Polars: `microaggregate`, and the data-independent design

`microaggregate` collects only the numeric quasi-identifiers for MDAV, replaces them by their
cell centroids in the lazy plan and adds a `cell` column; the output is re-verified with the
library's checker (every QI combination occurs at least $n_{\min}$ times).
""")

code(r"""
from ldiv_polars.datasets.synth import synthesize

survey = synthesize(5000, 5).select("age", "income", "sex", "disease")
res = ma.microaggregate_details(survey, ["age", "income"], k=5, pi=0.75, p_bar=1e-5)
print(res.summary())
out = res.frame.collect()
print(lp.check(out, ["age", "income"], "disease", [lp.KAnonymity(5)]).passed)
out.head(5)
""")

md(r"""
**Unequal participation.** With one probability per respondent (here a column `p`), the cells
get variable sizes: MDAV picks its reference records as usual and each cell grows along the
distance order until Algorithm A (Poisson-binomial) reaches $\bar q\le\bar p$ — the paper's
suggestion of ordering by distance to a reference; the acceptance rule for the last cell is
ours. Centroids are $\pi$-weighted (§VI.B).
""")

code(r"""
rng = np.random.default_rng(3)
survey_p = survey.with_columns(p=pl.Series(rng.uniform(0.4, 1.0, survey.height)))
res_p = ma.microaggregate_details(survey_p, ["age", "income"], k=5, pi="p", p_bar=1e-5)
print(res_p.summary())
sizes = res_p.mdav.sizes
assert res_p.summary()["cells_above_p_bar"] == 0 and sizes.min() >= 5
fig, ax = plt.subplots()
ax.hist(sizes, bins=np.arange(sizes.min(), sizes.max() + 2) - 0.5)
ax.set_xlabel("cell size"); ax.set_ylabel("cells")
ax.set_title(r"variable cells, $\pi_j\sim U(0.4, 1)$, k = 5, $\bar p=10^{-5}$"); plt.show()
""")

md(r"""
**Design before the survey** (locally trusted mode): the party running the survey builds the
partition on a *model population*, publishes it — the MDAV reference points in selection order
with the squared distance to the last point each took (intensional), and optionally the model
points with their cells (extensional) — and each respondent computes their own cell locally with
`assign`. Assigning the model population reproduces its cells.
""")

code(r"""
rng = np.random.default_rng(11)
# a model population of continuous QIs (exact age in years, income): no two records tie
model = synthesize(3000, 11).select(
    (pl.col("age") + pl.Series(rng.uniform(0, 1, 3000))).alias("age"),
    (pl.col("income") + pl.Series(rng.uniform(0, 1, 3000))).alias("income"),
)
spec = ma.design_partition(model, ["age", "income"], k=5, pi=0.75, p_bar=1e-5)
published = spec.to_json(extensional=False)
print(f"n_min = {spec.n_min}, {spec.n_cells} cells, "
      f"intensional spec {len(published) / 1024:.0f} KiB, boundary ties: {spec.boundary_ties}")
back = ma.PartitionSpec.from_json(published)
assert spec.boundary_ties == 0
assert (ma.assign(model, back) == spec.labels).all()                       # intensional
assert (ma.assign(model, spec, method="extensional") == spec.labels).all()  # extensional
respondent = pl.DataFrame({"age": [37.4], "income": [52_000.0]})
cell = int(ma.assign(respondent, back)[0])
print(f"respondent (37.4, 52000) -> cell {cell}, centroid {back.centroids[cell].round(1).tolist()}")
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
""")

md(r"""
With integer-valued QIs many records sit at exactly the radius of an earlier cell; the index
tie-break that MDAV used is not in the intensional spec (`boundary_ties` counts such cells), so
for tied data publish the extensional form as well — the paper notes that an ordering rule for
equidistant points may be needed.
""")


if __name__ == "__main__":
    write_notebook(cells, OUT, timeout=300)
