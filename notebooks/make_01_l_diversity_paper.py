"""Generate and execute ``01_l_diversity_paper.ipynb``: the worked examples of Machanavajjhala et
al., "l-Diversity: Privacy Beyond k-Anonymity" (TKDD 2007), reproduced with ldiv_polars.

Run from anywhere (the notebook executes with cwd = notebooks/)::

    .venv/bin/python notebooks/make_01_l_diversity_paper.py

Every figure the paper states is asserted inside the notebook, so executing it is a test.
Exact values come from ``../shared/design/paper-notes/l-diversity.md``.
"""

# ruff: noqa: E501  (the cells hold notebook code, kept as readable long lines)

from __future__ import annotations

from pathlib import Path

from nbbuild import NotebookCells, write_notebook

HERE = Path(__file__).resolve().parent
OUT = HERE / "01_l_diversity_paper.ipynb"

cells = NotebookCells()
md, code = cells.md, cells.code


# ---------------------------------------------------------------------------------------------
md(r"""
# l-Diversity: the paper's worked examples, with `ldiv_polars`

Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam, *l-Diversity: Privacy Beyond k-Anonymity*
(ACM TKDD 2007). This notebook rebuilds every worked example of the paper with the library and
**asserts** the paper's numbers, so running it is a test:

1. Fig. 1 microdata, the Fig. 2 (4-anonymous) and Fig. 4 (3-diverse) generalizations as Polars
   expressions, their block entropies, *2.8-diverse* (passes 2.8, fails 2.9) and the recursive
   (c,l) thresholds.
2. The homogeneity attack on Bob and the background-knowledge attack on Umeko, found with
   `violations`.
3. Algorithm 1 (adjusted entropy with a don't-care set): 1.77297 nats.
4. Appendix A values of the normalized entropy.
5. The gender example (pd-recursive, c > 3/7) and the multi-attribute counter-example (Def 4.6).
6. The back-of-envelope estimate: 1/81 homogeneous groups, 148 groups, 740 people.
7. The homogeneity attack on UCI Adult: homogeneous classes left in k-anonymous releases.

Logs are natural (nats), entropy l-diversity uses `>=`, recursive (c,l) the strict `<`.
""")

code(r"""
import math
import os
import sys
from fractions import Fraction
from pathlib import Path

import polars as pl

try:
    import ldiv_polars as lp
except ImportError:  # running from a checkout without an installed package
    sys.path.insert(0, str(Path.cwd().resolve().parent))
    import ldiv_polars as lp

pl.Config.set_tbl_rows(20)
pl.Config.set_tbl_cols(-1)
pl.Config.set_fmt_str_lengths(90)
pl.Config.set_tbl_width_chars(220)
pl.Config.set_tbl_hide_dataframe_shape(True)


def expand(counts: pl.DataFrame, n: str = "n") -> pl.DataFrame:
    # one row per unit of the count column: turns a small frequency table into microdata
    cols = [c for c in counts.columns if c != n]
    return counts.select(pl.col(cols).repeat_by(pl.col(n))).explode(cols)


def close(a: float, b: float, tol: float = 5e-5) -> bool:
    return abs(a - b) <= tol
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 1. Fig. 1 — Inpatient microdata

Zip code, age and nationality are the quasi-identifier; condition is sensitive.
""")

code(r"""
fig1 = pl.DataFrame({
    "id": list(range(1, 13)),
    "zip": ["13053", "13068", "13068", "13053", "14853", "14853",
            "14850", "14850", "13053", "13053", "13068", "13068"],
    "age": [28, 29, 21, 23, 50, 55, 47, 49, 31, 37, 36, 35],
    "nationality": ["Russian", "American", "Japanese", "American", "Indian", "Russian",
                    "American", "American", "American", "Indian", "Japanese", "American"],
    "condition": ["Heart Disease", "Heart Disease", "Viral Infection", "Viral Infection",
                  "Cancer", "Heart Disease", "Viral Infection", "Viral Infection",
                  "Cancer", "Cancer", "Cancer", "Cancer"],
})
QI, S = ["zip", "age", "nationality"], "condition"
print(lp.summary(fig1, QI, S))
fig1
""")

md(r"""
## 2. Fig. 2 — the 4-anonymous table, as Polars expressions

Zip is partitioned into `1485*` and `130**` (two depths in one column: Def 2.3 allows any
partition), age into `< 30`, `3*` and `>= 40`, nationality suppressed.
""")

code(r"""
fig2_zip = (pl.when(pl.col("zip").str.starts_with("1485")).then(pl.lit("1485*"))
            .otherwise(pl.col("zip").str.slice(0, 3) + "**"))
fig2_age = (pl.when(pl.col("age") < 30).then(pl.lit("< 30"))
            .when(pl.col("age") < 40).then(pl.lit("3*"))
            .otherwise(pl.lit(">= 40")))
suppress = pl.lit("*")


def fig2_generalize(lf):
    return lf.with_columns(fig2_zip.alias("zip"), fig2_age.alias("age"),
                           suppress.alias("nationality"))


fig2 = fig2_generalize(fig1)
fig2
""")

code(r"""
models2 = [lp.KAnonymity(4), lp.DistinctLDiversity(2), lp.EntropyLDiversity(2),
           lp.RecursiveCLDiversity(3, 2)]
ent = lp.EntropyLDiversity(2)
blocks2 = (
    lp.classes(fig2, QI, S, [ent, lp.RecursiveCLDiversity(3, 2)])
    .with_columns(pl.col(ent.col("H")).alias("H (nats)"),
                  pl.col(ent.col("H")).exp().alias("exp H"))
    .sort("H (nats)", descending=True)
    .collect()
)
display_cols = ["zip", "age", "size", "distinct", "H (nats)", "exp H",
                "recursive_cl_3_2__r1", "recursive_cl_3_2__tail"]
print(blocks2.select(display_cols))

H = blocks2["H (nats)"].to_list()
assert close(H[0], 1.0397) and close(H[1], math.log(2), 1e-12) and H[2] == 0.0  # paper-notes 6.2
res2 = lp.check(fig2, QI, S, models2)
for m in res2.models:
    print(f"{m.key:28s} passed={m.passed!s:5s} achieved={m.achieved}")
assert res2["k_anonymity_4"].passed                       # 4-anonymous ...
assert not lp.check(fig2, QI, S, [lp.KAnonymity(5)]).passed  # ... not 5-anonymous
assert res2["entropy_l_2"].achieved == 1.0               # exp(min H) = exp(0)
assert not res2["distinct_l_2"].passed and not res2["entropy_l_2"].passed
assert res2["recursive_cl_3_2"].achieved == math.inf      # the Cancer block fails for every c
""")

md(r"""
### The homogeneity attack on Bob

Alice knows Bob is 31, American, zip 13053, and in the table. Generalizing his record with the
same expressions locates his block, and `violations` flags it: all four rows are *Cancer*.
""")

code(r"""
bob = pl.DataFrame({"zip": ["13053"], "age": [31], "nationality": ["American"]})
bob_block = fig2_generalize(bob)
viol2 = lp.violations(fig2, QI, S, [lp.DistinctLDiversity(2), lp.EntropyLDiversity(2)])
bob_viol = viol2.join(bob_block.lazy(), on=QI).collect()
print(bob_viol)
bob_values = fig2.join(bob_block, on=QI)[S].unique().to_list()
print("Bob's block holds:", bob_values)
assert bob_viol.height == 1 and bob_values == ["Cancer"]  # positive disclosure
""")

md(r"""
### The background-knowledge attack on Umeko

Umeko is 21, Japanese, zip 13068: she is in the `(130**, < 30)` block = {HD, HD, VI, VI}. Two
distinct values pass 2-diversity, but one piece of background knowledge ("Japanese have an
extremely low incidence of heart disease") leaves one value: the block cannot withstand l−1 = 2
pieces, i.e. it is not **3**-diverse. And even without it Alice learns Umeko does *not* have
cancer (negative disclosure): the block misses a value of the table, so delta-disclosure is
infinite there.
""")

code(r"""
umeko = pl.DataFrame({"zip": ["13068"], "age": [21], "nationality": ["Japanese"]})
umeko_block = fig2_generalize(umeko)
viol_u = (lp.violations(fig2, QI, S, [lp.DistinctLDiversity(3), lp.DeltaDisclosure(10.0)])
          .join(umeko_block.lazy(), on=QI).collect())
print(viol_u)
umeko_values = sorted(fig2.join(umeko_block, on=QI)[S].to_list())
print("Umeko's block:", umeko_values)
after_knowledge = {v for v in umeko_values if v != "Heart Disease"}
print("after ruling out heart disease:", after_knowledge)
assert viol_u.height == 1 and len(viol_u["reasons"][0]) == 2
assert after_knowledge == {"Viral Infection"} and "Cancer" not in umeko_values
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 3. Fig. 4 — the 3-diverse table

Uniform generalization: zip to its first four digits, age split at 40 (`<= 40` / `> 40`),
nationality suppressed. Every block has counts (2,1,1): H = 1.0397 nats, exp H = 2√2 = 2.828 —
the paper's "**2.8-diverse**". Recursive (c,3) holds iff c > 2 and (c,2) iff c > 1 (strict).
""")

code(r"""
def fig4_generalize(lf):
    return lf.with_columns(
        (pl.col("zip").str.slice(0, 4) + "*").alias("zip"),
        pl.when(pl.col("age") <= 40).then(pl.lit("<= 40")).otherwise(pl.lit("> 40")).alias("age"),
        suppress.alias("nationality"),
    )


fig4 = fig4_generalize(fig1)
print(fig4.sort("zip", "age"))
blocks4 = (lp.classes(fig4, QI, S, [ent]).with_columns(pl.col(ent.col("H")).exp().alias("exp H"))
           .sort("zip").collect())
print(blocks4.select("zip", "age", "size", "distinct", ent.col("H"), "exp H"))
assert blocks4["size"].to_list() == [4, 4, 4] and blocks4["distinct"].to_list() == [3, 3, 3]

e = lp.check(fig4, QI, S, [lp.EntropyLDiversity(2.8)]).models[0]
print("entropy l achieved:", e.achieved, " 2*sqrt(2) =", 2 * math.sqrt(2))
assert close(e.achieved, 2 * math.sqrt(2), 1e-12) and close(math.log(e.achieved), 1.0397)
assert e.passed                                                   # 2.8-diverse
assert not lp.check(fig4, QI, S, [lp.EntropyLDiversity(2.9)]).passed  # not 2.9-diverse
assert lp.check(fig4, QI, S, [lp.KAnonymity(4), lp.DistinctLDiversity(3)]).passed
""")

code(r"""
rows = []
for c, l in [(2, 3), (2.001, 3), (1, 2), (1.001, 2)]:
    m = lp.check(fig4, QI, S, [lp.RecursiveCLDiversity(c, l)]).models[0]
    rows.append({"c": c, "l": l, "passed": m.passed, "needs c >": m.achieved})
print(pl.DataFrame(rows))
assert [r["passed"] for r in rows] == [False, True, False, True]
assert rows[0]["needs c >"] == 2.0 and rows[2]["needs c >"] == 1.0
""")

code(r"""
# Bob and Umeko in Fig. 4: each now sits in a block of three conditions
for name, person in [("Bob", bob), ("Umeko", umeko)]:
    block = fig4.join(fig4_generalize(person), on=QI)
    print(f"{name}: ids {sorted(block['id'].to_list())} -> {sorted(block[S].to_list())}")
assert sorted(fig4.join(fig4_generalize(bob), on=QI)["id"].to_list()) == [1, 4, 9, 10]
assert sorted(fig4.join(fig4_generalize(umeko), on=QI)["id"].to_list()) == [2, 3, 11, 12]
assert lp.violations(fig4, QI, S, [lp.DistinctLDiversity(3)]).collect().height == 0
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 4. Algorithm 1 — adjusted entropy with a don't-care set

Don't-care counts φ = (11, 10, 3, 2), sensitive counts p = (3, 4). The paper's trace of the
log-entropic mean M: M{3,4} = 1.263; log 2 < 1.263 so 2 is fixed, M = 1.136; log 3 < 1.136 so 3
is fixed, M = 1.127; log 10 > 1.127 so 10 and 11 are lowered to e^1.127 = 3.086. The adjusted
entropy is **1.77297 nats** (raw entropy 1.58966). `EntropyLDiversityDontCare` computes it in
closed form inside one aggregation.
""")

code(r"""
def M(counts):
    # log-entropic mean: sum c log c / sum c
    return sum(c * math.log(c) for c in counts) / sum(counts)


trace = [M([3, 4]), M([2, 3, 4]), M([2, 3, 3, 4])]
print("M trace:", [round(v, 3) for v in trace], " e^M =", round(math.exp(trace[-1]), 4))
assert [round(v, 3) for v in trace] == [1.263, 1.136, 1.127]

alg1 = expand(pl.DataFrame({"q": ["b"] * 6, "s": ["y1", "y2", "y3", "y4", "s1", "s2"],
                            "n": [11, 10, 3, 2, 3, 4]}))
dc = lp.EntropyLDiversityDontCare(5.0, dont_care=["y1", "y2", "y3", "y4"])
adj = lp.check(alg1, ["q"], "s", [dc]).models[0]
raw = lp.check(alg1, ["q"], "s", [lp.EntropyLDiversity(1)]).models[0]
print(f"adjusted entropy {math.log(adj.achieved):.5f} nats (exp {adj.achieved:.3f}); "
      f"raw {math.log(raw.achieved):.5f} nats (exp {raw.achieved:.3f})")
assert close(math.log(adj.achieved), 1.77297, 5e-6) and close(math.log(raw.achieved), 1.58966, 5e-6)
assert adj.passed                                       # exp(1.77297) = 5.888 >= 5
assert not lp.check(alg1, ["q"], "s", [lp.EntropyLDiversityDontCare(5.9, ["y1", "y2", "y3", "y4"])]).passed
""")

md(r"""
## 5. Appendix A — the normalized entropy is neither concave nor convex

f(x) = Ĥ(x, 100) (natural log): f(400) = .5004, f(800) = .3488, f(600) = .4101, f(75) = .6829,
f(125) = .6870, f(100) = .6931. Each x is a block with counts (x, 100); one `classes` call
evaluates all six.
""")

code(r"""
xs = [400, 800, 600, 75, 125, 100]
blocks = expand(pl.DataFrame({"x": xs * 2, "s": ["a"] * 6 + ["b"] * 6, "n": xs + [100] * 6}))
fx = (lp.classes(blocks, ["x"], "s", [ent]).select("x", pl.col(ent.col("H")).alias("f(x)"))
      .collect())
fx = fx.sort(pl.col("x").replace_strict(xs, list(range(6))))
print(fx)
paper = [0.5004, 0.3488, 0.4101, 0.6829, 0.6870, 0.6931]
assert all(close(a, b) for a, b in zip(fx["f(x)"].to_list(), paper))
# f(600) = .4101 < (f(400) + f(800)) / 2 = .4246: not concave;  f(100) > (f(75) + f(125)) / 2
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 6. Don't-care sets: the gender example (Sec. 4.2)

2,000 patients: 1,000 men (700 Healthy, 300 Hepatitis), 1,000 women (700 Healthy, 300 Cancer).
With *Healthy* as a don't-care value the table is 2-diverse without generalizing: under
pd-recursive (c,2) (Def 4.3) each gender block needs 300 < c·700, i.e. **c > 3/7**; the adjusted
entropy lowers 700 to 300 and is exactly ln 2 (passes entropy-2 only because the test is `>=`).
""")

code(r"""
gender = expand(pl.DataFrame({
    "sex": ["M", "M", "F", "F"], "condition": ["Healthy", "Hepatitis", "Healthy", "Cancer"],
    "n": [700, 300, 700, 300]}))
pd_ok = lp.check(gender, ["sex"], "condition", [lp.PositiveDisclosureRecursive(0.43, 2, ["Healthy"])])
pd_edge = lp.check(gender, ["sex"], "condition", [lp.PositiveDisclosureRecursive(3 / 7, 2, ["Healthy"])])
needed = pd_ok.models[0].achieved
print("pd-recursive (c,2), Y={Healthy}: needs c >", needed, "= 3/7:", Fraction(needed).limit_denominator(100))
assert pd_ok.passed and not pd_edge.passed and close(needed, 3 / 7, 1e-12)

adj_g = lp.check(gender, ["sex"], "condition", [lp.EntropyLDiversityDontCare(2, ["Healthy"])]).models[0]
plain_g = lp.check(gender, ["sex"], "condition", [lp.EntropyLDiversity(2)]).models[0]
print(f"adjusted entropy: {math.log(adj_g.achieved):.12f} nats (ln 2 = {math.log(2):.12f}), "
      f"passes entropy-2: {adj_g.passed}; without the don't-care set: exp H = {plain_g.achieved:.4f}, "
      f"passes: {plain_g.passed}")
assert adj_g.passed and close(math.log(adj_g.achieved), math.log(2), 1e-12) and not plain_g.passed
""")

md(r"""
## 7. Multi-attribute l-diversity (Def 4.6): the counter-example

One block {(s1,v1), (s1,v2), (s2,v3), (s3,v3)}: 3-diverse in S alone and in V alone, yet if
S ≠ s1 then V = v3. Treating the other sensitive attribute as part of the quasi-identifier
(Def 4.6) exposes it: the block is not even 2-diverse. Per attribute it fails entropy-3
(H = 1.0397 < ln 3) and recursive (2,3) under the strict rule (the paper calls it "recursive
(2,3)-diverse", which holds only with `<=`); (2.01,3) passes.
""")

code(r"""
multi = pl.DataFrame({"q": ["q*"] * 4, "S": ["s1", "s1", "s2", "s3"], "V": ["v1", "v2", "v3", "v3"]})
for s in ["S", "V"]:
    print(s, "alone: distinct-3", lp.check(multi, ["q"], s, [lp.DistinctLDiversity(3)]).passed,
          "| entropy-3", lp.check(multi, ["q"], s, [lp.EntropyLDiversity(3)]).passed,
          "| recursive (2,3)", lp.check(multi, ["q"], s, [lp.RecursiveCLDiversity(2, 3)]).passed,
          "| recursive (2.01,3)", lp.check(multi, ["q"], s, [lp.RecursiveCLDiversity(2.01, 3)]).passed)
    assert lp.check(multi, ["q"], s, [lp.DistinctLDiversity(3), lp.RecursiveCLDiversity(2.01, 3)]).passed
    assert not lp.check(multi, ["q"], s, [lp.EntropyLDiversity(3)]).passed
    assert not lp.check(multi, ["q"], s, [lp.RecursiveCLDiversity(2, 3)]).passed
def46 = lp.check(multi, ["q"], ["S", "V"], [lp.MultiAttribute(lp.DistinctLDiversity(2))])
print("Def 4.6 with distinct 2-diversity:", def46.passed, "| achieved l:", def46.models[0].achieved)
assert not def46.passed and def46.models[0].achieved == 1
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 8. The back-of-envelope calculation (Sec. 1.1)

60,000 distinct tuples, a sensitive attribute with 3 values uncorrelated with the
quasi-identifier, 5-anonymized into ≈ 12,000 groups: a group is homogeneous with probability
3·(1/3)^5 = **1/81**, so ≈ **148 groups** and **740 people** are exposed. A simulation of such a
table, checked with `violations`, lands within sampling error of that.
""")

code(r"""
p_homog = 3 * Fraction(1, 3) ** 5
groups = 60_000 // 5
print("P(homogeneous group) =", p_homog, f"-> {float(groups * p_homog):.1f} groups, "
      f"{float(groups * p_homog * 5):.1f} people")
assert p_homog == Fraction(1, 81)
assert round(float(groups * p_homog)) == 148 and round(float(groups * p_homog * 5)) == 741
assert int(groups * p_homog * 5) == 740  # "740 people" (740.7)

import numpy as np

rng = np.random.default_rng(81)
sim = pl.DataFrame({"group": np.repeat(np.arange(groups), 5),
                    "s": rng.integers(0, 3, size=groups * 5)})
homog = lp.violations(sim, ["group"], "s", [lp.DistinctLDiversity(2)]).collect()
sd = math.sqrt(groups * (1 / 81) * (80 / 81))
print(f"simulated: {homog.height} homogeneous groups, {homog['size'].sum()} people "
      f"(expected 148.1 ± {sd:.1f})")
assert abs(homog.height - groups / 81) < 4 * sd
""")

# ---------------------------------------------------------------------------------------------
md(r"""
## 9. The homogeneity attack on UCI Adult

The paper's Fig. 9 setting: quasi-identifier {age, gender, race, marital status, education},
sensitive attribute *salary class*. Here: four generalizations written as Polars expressions
(age in 5-, 10- or 20-year bands, education kept or suppressed), and for each k the
k-anonymous release obtained by suppressing the classes smaller than k. We count the classes
that remain **homogeneous** (one salary class: `distinct == 1`, a failed distinct 2-diversity)
and **95 % homogeneous** (the top value holds ≥ 95 % of the class), and the people in them. One
`classes` call per generalization computes everything; the k sweep is a filter on it.
""")

code(r"""
shared = Path(os.environ.get("LDIV_SHARED_DATA", Path.cwd().resolve().parents[1] / "shared" / "data"))
adult_path = shared / "adult" / "adult.csv"
HAVE_ADULT = adult_path.exists()
print(adult_path, "found" if HAVE_ADULT else "NOT FOUND: the Adult cells below are skipped")
""")

code(r"""
ADULT_QI = ["age", "sex", "race", "marital-status", "education"]
ADULT_S = "salary-class"
ks = [2, 5, 10, 15, 20, 30, 50]


def band(width):
    lo = pl.col("age") // width * width
    return (lo.cast(pl.String) + "-" + (lo + width - 1).cast(pl.String)).alias("age")


generalizations = {
    "age 5-year bands": [band(5)],
    "age 10-year bands": [band(10)],
    "age 20-year bands": [band(20)],
    "age 10-year, education *": [band(10), pl.lit("*").alias("education")],
}
alpha = lp.AlphaKAnonymity(0.95, 1)
curves = []
if HAVE_ADULT:
    adult = pl.scan_csv(adult_path, separator=";")
    for name, exprs in generalizations.items():
        cls = lp.classes(adult.with_columns(exprs), ADULT_QI, ADULT_S,
                         [lp.DistinctLDiversity(2), alpha]).collect()
        top_share = pl.col(alpha.col("max_n")) / pl.col("size")
        for k in ks:
            kept = cls.filter(pl.col("size") >= k)
            h = kept.filter(pl.col("distinct") == 1)
            h95 = kept.filter(top_share >= 0.95)
            curves.append({"generalization": name, "k": k, "classes": kept.height,
                           "suppressed rows": int(cls["size"].sum() - kept["size"].sum()),
                           "homogeneous": h.height, "people (homog.)": int(h["size"].sum()),
                           "95% homogeneous": h95.height,
                           "people (95%)": int(h95["size"].sum())})
    curves = pl.DataFrame(curves)
    print(curves)
""")

code(r"""
if HAVE_ADULT:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), dpi=80)
    for name in generalizations:
        c = curves.filter(pl.col("generalization") == name)
        axes[0].plot(c["k"], c["homogeneous"], marker="o", label=name)
        axes[1].plot(c["k"], c["people (95%)"], marker="o", label=name)
    axes[0].set(xlabel="k (classes smaller than k suppressed)",
                ylabel="homogeneous classes (one salary class)",
                title="Adult: k-anonymity leaves homogeneous classes")
    axes[1].set(xlabel="k", ylabel="people in 95%-homogeneous classes",
                title="…and thousands of people in near-homogeneous ones")
    axes[0].legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.show()

    # the paper's qualitative claim: k-anonymity does not remove homogeneity, even at large k
    at50 = curves.filter(pl.col("k") == 50)
    assert at50["95% homogeneous"].sum() > 0 and (curves["homogeneous"] > 0).any()
    # and homogeneity is not monotone in k in general, but the k=2 release exposes the most
    for name in generalizations:
        c = curves.filter(pl.col("generalization") == name)
        assert c["homogeneous"][0] == c["homogeneous"].max()
""")

md(r"""
Counting homogeneous classes is `distinct == 1` on the class table; an l-diverse table has
none. The same Adult QI with entropy 2-diversity instead of k-anonymity:
""")

code(r"""
if HAVE_ADULT:
    g = adult.with_columns(generalizations["age 20-year bands"])
    print(lp.check(g, ADULT_QI, ADULT_S, [lp.KAnonymity(2), lp.DistinctLDiversity(2),
                                           lp.EntropyLDiversity(2)]).to_dict()["models"])
    v = lp.violations(g, ADULT_QI, ADULT_S, [lp.DistinctLDiversity(2)]).collect()
    print(f"{v.height} classes ({v['size'].sum()} people) would have to be suppressed or "
          "generalized further for distinct 2-diversity; the largest:")
    print(v.sort("size", descending=True).head(5))
""")


if __name__ == "__main__":
    write_notebook(cells, OUT, timeout=300)
