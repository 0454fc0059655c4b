"""The minimality-attack analyser on releases: App. B / Fig. 6, Monte Carlo vs enumeration vs
the exact programmes, RGG weighting, report and CLI."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

from ldiv_polars.attacks.minimality import (
    GGDecision,
    InconsistentReleaseError,
    Requirement,
    SGDecision,
    SplitDecision,
    exact_posterior,
    gg_bucket_posteriors,
    minimality_attack,
    mondrian_candidate_masks,
    rejection_posterior,
)
from ldiv_polars.cli import main
from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.partition import greedy_grouping, symmetric_grouping

FIG6A = pl.DataFrame({"qi": ["a", "b", "c", "d"], "g": [0] * 4, "s": ["+", "+", "-", "-"]})
FIG6B = pl.DataFrame({"qi": ["a", "b", "c", "c", "c", "d"], "g": [0] * 6,
                      "s": ["+", "+", "-", "-", "-", "-"]})


def test_fig6a_gg_posterior_is_one_for_a_and_b():
    r = minimality_attack(FIG6A, group="g", sensitive="s", l=2, positive=["+"])
    assert r.tuples["posterior"].to_list() == [1.0, 1.0, 0.0, 0.0]
    assert r.vulnerable_fraction == 0.5
    assert r.max_risk_times_l == 2.0
    # the same by enumerating every arrangement with the generic GG decision
    e = exact_posterior([1, 1, 0, 0], GGDecision(Requirement("binary", 2, frozenset({1})), 2), 2)
    assert e.posterior[:, 1].tolist() == [1.0, 1.0, 0.0, 0.0]
    assert e.accepted == 1            # one arrangement of ++-- is consistent


def test_fig6b_strict_mondrian_leaks_relaxed_does_not():
    strict = minimality_attack(FIG6B, group="g", sensitive="s", l=2, positive=["+"],
                               algorithm="mondrian-strict", qi=["qi"])
    assert strict.tuples["posterior"].to_list() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    relaxed = minimality_attack(FIG6B, group="g", sensitive="s", l=2, positive=["+"],
                                algorithm="mondrian-relaxed", qi=["qi"])
    # split {a,b,c} | {c,c,d} rejected iff both positives are on one side: 3 + 3 placements
    np.testing.assert_allclose(relaxed.tuples["posterior"].to_numpy(), [1 / 3] * 6)
    assert relaxed.vulnerable_fraction == 0.0


def test_candidate_masks_follow_the_split_rules():
    x = np.array([[0], [1], [2], [2], [2], [3]])
    assert mondrian_candidate_masks(x, relaxed=False).tolist() == [[True, True] + [False] * 4]
    assert mondrian_candidate_masks(x, relaxed=True).tolist() == [[True] * 3 + [False] * 3]
    # median equal to the minimum: the left side takes the median value
    y = np.array([[5], [5], [5], [7]])
    assert mondrian_candidate_masks(y, relaxed=False).tolist() == [[True, True, True, False]]
    assert mondrian_candidate_masks(np.array([[1], [1]]), relaxed=False).shape == (0, 2)


def _random_gg_group(rng, l, m, values):
    """Draw SA arrangements until GG (simple l-diversity) would produce exactly m buckets."""
    req = Requirement("simple", l)
    d = GGDecision(req, l)
    while True:
        codes = rng.integers(0, values, size=l * m)
        counts = np.bincount(codes, minlength=values)
        if req.holds(counts[None, :])[0] and d.weights(codes[None, :], values)[0] == 1:
            return codes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_monte_carlo_agrees_with_enumeration(seed):
    rng = np.random.default_rng(seed)
    codes = _random_gg_group(rng, 3, 3, 4)
    d = GGDecision(Requirement("simple", 3), 3)
    exact = exact_posterior(codes, d, 4)
    mc = rejection_posterior(codes, d, 4, samples=60_000, rng=seed)
    assert mc.accepted > 1000
    np.testing.assert_allclose(mc.posterior, exact.posterior, atol=0.02)
    again = rejection_posterior(codes, d, 4, samples=60_000, rng=seed)
    assert np.array_equal(again.posterior, mc.posterior)      # seeded


def test_weighted_monte_carlo_matches_rgg_programme():
    p = 0.4
    d = GGDecision(Requirement("binary", 3, frozenset({1})), 3, p)
    codes = np.array([1, 1, 0, 0, 1, 0, 0, 0, 0])       # m = 3 buckets, 3 positives
    exact = exact_posterior(codes, d, 2)
    dp = gg_bucket_posteriors(3, 3, positives=3, p=Fraction(2, 5))
    np.testing.assert_allclose(exact.posterior[:, 1], np.repeat([float(x) for x in dp], 3),
                               rtol=1e-12)
    mc = rejection_posterior(codes, d, 2, samples=40_000, rng=3)
    np.testing.assert_allclose(mc.posterior[:, 1], exact.posterior[:, 1], atol=0.02)


def test_sg_decision_enumeration_matches_closed_form():
    from ldiv_polars.attacks.minimality import sg_binary_posteriors

    codes = np.array([0] * 9 + [1, 1])          # 11 rows, 2 positives, l = 3
    e = exact_posterior(codes, SGDecision(Requirement("binary", 3, frozenset({1}))), 2)
    left, right = sg_binary_posteriors(11, 2, 3)
    np.testing.assert_allclose(e.posterior[:, 1], [float(left)] * 6 + [float(right)] * 5)


def test_split_decision_rejects_any_allowed_candidate():
    req = Requirement("binary", 2, frozenset({1}))
    masks = np.array([[True, True, False, False, False, False]])
    d = SplitDecision(req, masks)
    worlds = np.array([[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [1, 0, 1, 0, 0, 0]])
    assert d.weights(worlds, 2).tolist() == [1.0, 0.0, 0.0]


def test_attack_on_gg_release_matches_generic_enumeration():
    rng = np.random.default_rng(5)
    n = 60
    df = pl.DataFrame({"q": rng.integers(0, 100, n), "s": rng.choice(["+", "-", "-", "-"], n)})
    g = greedy_grouping(df, ["q"], "s", 3, positive=["+"])
    rel = g.frame.collect()
    rep = minimality_attack(rel, group="group", sensitive="s", l=3, positive=["+"])
    d = GGDecision(Requirement("binary", 3, frozenset({1})), 3)
    codes = (rel["s"] == "+").cast(pl.Int64).to_numpy()
    gids = rel["group"].to_numpy()
    expected = np.zeros(len(codes))
    for gid in np.unique(gids):
        rows = np.flatnonzero(gids == gid)
        expected[rows] = exact_posterior(codes[rows], d, 2, limit=10**6).posterior[:, 1]
    np.testing.assert_allclose(rep.tuples["posterior"].to_numpy(), expected, atol=1e-12)
    assert rep.vulnerable_fraction == pytest.approx(float((expected > 1 / 3 + 1e-9).mean()))
    assert rep.max_risk_times_l <= np.e


def test_sg_release_has_bounded_risk():
    rng = np.random.default_rng(8)
    n = 400
    df = pl.DataFrame({"q": rng.integers(0, 50, n), "s": rng.choice(["+"] + ["-"] * 5, n)})
    g = symmetric_grouping(df, ["q"], "s", 4, positive=["+"], k=4)
    rep = minimality_attack(g.frame.collect(), group="group", sensitive="s", l=4,
                            positive=["+"], algorithm="sg", k=4)
    assert rep.max_risk <= float(Fraction(2, 7)) + 1e-12           # 2/(2l-1)


def test_simple_gg_release_monte_carlo_report():
    rng = np.random.default_rng(2)
    n = 90
    df = pl.DataFrame({"q": np.arange(n), "s": rng.choice(list("abcde"), n)})
    g = greedy_grouping(df, ["q"], "s", 3)
    rel = g.frame.collect()
    rep = minimality_attack(rel, group="group", sensitive="s", l=3, samples=3000, seed=1,
                            exact_limit=10)
    again = minimality_attack(rel, group="group", sensitive="s", l=3, samples=3000, seed=1,
                              exact_limit=10)
    assert rep.tuples.equals(again.tuples)
    exact = minimality_attack(rel, group="group", sensitive="s", l=3)
    np.testing.assert_allclose(rep.tuples["posterior"].to_numpy(),
                               exact.tuples["posterior"].to_numpy(), atol=0.06)
    d = rep.to_dict(details=True)
    assert len(d["group_details"]) == g.groups
    assert sum(x["vulnerable_tuples"] for x in d["group_details"]) == rep.tuples["vulnerable"].sum()


def test_inconsistent_and_bad_releases():
    with pytest.raises(InconsistentReleaseError):      # 5 rows is not whole buckets of 2
        minimality_attack(pl.DataFrame({"g": [0] * 5, "s": list("+-+--")}), group="g",
                          sensitive="s", l=2, positive=["+"])
    with pytest.raises(InconsistentReleaseError):      # group 0 interrupted by group 1
        minimality_attack(pl.DataFrame({"g": [0, 1, 1, 0], "s": list("+--+")}), group="g",
                          sensitive="s", l=2, positive=["+"], algorithm="sg")
    with pytest.raises(InconsistentReleaseError):      # not diverse at all
        minimality_attack(pl.DataFrame({"g": [0] * 2, "s": list("++")}), group="g",
                          sensitive="s", l=2, positive=["+"])
    with pytest.raises(UnknownColumnError):
        minimality_attack(FIG6A, group="grp", sensitive="s", l=2)
    with pytest.raises(InvalidParameterError):
        minimality_attack(FIG6A, group="g", sensitive="s", l=2, algorithm="incognito")
    with pytest.raises(InvalidParameterError):
        minimality_attack(FIG6A, group="g", sensitive="s", l=2, algorithm="mondrian-strict")
    with pytest.raises(InvalidParameterError):
        minimality_attack(FIG6A, group="g", sensitive="s", l=2, p=0.3)


def test_cli_attack_json(tmp_path, capsys):
    path = tmp_path / "release.csv"
    FIG6A.write_csv(path)
    code = main(["attack", str(path), "--group", "g", "--sensitive", "s", "--l", "2",
                 "--positive", "+", "--json", "--details"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1                                    # a tuple is vulnerable
    assert out["vulnerable_fraction"] == 0.5
    assert out["max_risk_times_l"] == 2.0
    assert out["group_details"][0]["vulnerable"] is True
    safe = tmp_path / "safe.csv"
    pl.DataFrame({"g": [0, 0, 1, 1], "s": ["+", "-", "-", "+"]}).write_csv(safe)
    assert main(["attack", str(safe), "--group", "g", "--sensitive", "s", "--l", "2",
                 "--positive", "+", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vulnerable_fraction"] == 0.0
    assert main(["attack", str(path), "--group", "nope", "--sensitive", "s", "--l", "2"]) == 2
    assert main(["attack", str(path), "--group", "g", "--sensitive", "s", "--l", "2",
                 "--algorithm", "xx"]) == 2


def test_gg_on_adult_stays_within_theorem6(adult_csv):
    """GG on Adult (Table 1 QIs, Tech-support positive): every group's first-bucket risk is
    between 2/l (any multi-bucket group) and the closed form's supremum < e/l."""
    from ldiv_polars.attacks import gg_limit

    adult = pl.read_csv(adult_csv, separator=";")
    qi = ["age", "workclass", "education", "marital-status", "race", "sex"]
    l = 6
    g = greedy_grouping(adult, qi, "occupation", l, positive=["Tech-support"])
    assert g.verification.passed and g.rows + g.suppressed == adult.height
    rep = minimality_attack(g.frame.collect(), group="group", sensitive="occupation", l=l,
                            positive=["Tech-support"])
    multi = [x for x in rep.groups if x.size > l]
    assert multi
    assert all(x.max_posterior * l >= 2 - 1e-9 for x in multi)
    assert 2 <= rep.max_risk_times_l <= l * gg_limit(l) < np.e
    # single-bucket groups leak nothing: their tuples are never vulnerable
    single = {x.group for x in rep.groups if x.size == l}
    assert not rep.tuples.filter(pl.col("group").is_in(list(single)))["vulnerable"].any()


def test_cli_attack_mondrian_and_rgg(tmp_path, capsys):
    path = tmp_path / "fig6b.parquet"
    FIG6B.write_parquet(path)
    code = main(["attack", str(path), "--group", "g", "--sensitive", "s", "--l", "2",
                 "--positive", "+", "--algorithm", "mondrian-strict", "--qi", "qi", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["max_risk_times_l"] == 2.0
    code = main(["attack", str(path), "--group", "g", "--sensitive", "s", "--l", "2",
                 "--positive", "+", "--algorithm", "mondrian-relaxed", "--qi", "qi", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["max_risk_times_l"] == pytest.approx(2 / 3)
    # RGG: two buckets of 3, one positive in each ordering; exact weighting
    rel = tmp_path / "rgg.csv"
    pl.DataFrame({"g": [0] * 6, "s": ["+", "-", "-", "-", "-", "-"]}).write_csv(rel)
    code = main(["attack", str(rel), "--group", "g", "--sensitive", "s", "--l", "3",
                 "--positive", "+", "--algorithm", "rgg", "--p", "0.5", "--json"])
    out = json.loads(capsys.readouterr().out)
    # every placement keeps bucket 1 diverse (a voluntary merge): uniform posterior 1/6
    assert code == 0 and out["max_risk"] == pytest.approx(1 / 6)
