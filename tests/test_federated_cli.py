"""The federated flow through the ``ldiv`` processes: 3 sites write counts (``ldiv counts``),
the aggregator checks (``ldiv check-counts``) and anonymizes (``ldiv anonymize-counts``) their
merged counts, each site releases its rows (``ldiv apply-plan``). The merged verdict equals the
whole table's ``ldiv check``, each site's release equals its slice of the whole table's release
(``ldiv anonymize``); bad input is exit 2 with one line."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import polars as pl
import pytest

from ldiv_polars.cli import main
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy import Hierarchy, interval_hierarchy, masking_hierarchy
from ldiv_polars.search.federated import ReleasePlan, verify_site_release

ZIPS = ["1301", "1302", "1411", "1412", "2001"]


def _ldiv(*args: object) -> subprocess.CompletedProcess:
    env = {**os.environ, "LDIV_DEBUG": ""}
    return subprocess.run([sys.executable, "-m", "ldiv_polars", *map(str, args)],
                          capture_output=True, text=True, env=env)


def _digest(df: pl.DataFrame) -> str:
    rows = sorted(tuple(str(v) for v in r) for r in df.rows())
    return hashlib.sha256(repr(rows).encode()).hexdigest()


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fedcli")
    rnd = random.Random(7)
    n = 90
    df = pl.DataFrame({"site": [rnd.randint(0, 2) for _ in range(n)],
                       "zip": [rnd.choice(ZIPS) for _ in range(n)],
                       "age": [rnd.randint(0, 59) for _ in range(n)],
                       "disease": [rnd.choice(["flu", "cold", "hiv"]) for _ in range(n)]})
    df.write_parquet(tmp / "whole.parquet")
    (tmp / "h").mkdir()
    masking_hierarchy(pl.Series(ZIPS)).to_csv(tmp / "h" / "zip.csv")
    interval_hierarchy(pl.Series(list(range(60))), [10, 30]).to_csv(tmp / "h" / "age.csv")
    for i in range(3):
        df.filter(pl.col("site") == i).write_parquet(tmp / f"site{i}.parquet")
        r = _ldiv("counts", tmp / f"site{i}.parquet", "--qi", "zip,age", "--sensitive",
                  "disease", "--out", tmp / f"counts{i}.parquet",
                  *(["--engine", "duckdb"] if i == 1 else []))
        assert r.returncode == 0, r.stderr
    return tmp, df


def _counts(tmp):
    return [tmp / f"counts{i}.parquet" for i in range(3)]


@pytest.mark.parametrize("flags", [["--k", "2"], ["--k", "4", "--l", "2"], ["--k", "40"],
                                   ["--t", "0.4", "--alpha", "0.8", "--l", "2",
                                    "--model", "entropy"]])
def test_merged_verdict_is_the_whole_tables(sites, flags):
    tmp, _ = sites
    whole = _ldiv("check", tmp / "whole.parquet", "--qi", "zip,age", "--sensitive", "disease",
                  *flags, "--json")
    merged = _ldiv("check-counts", *_counts(tmp), *flags, "--json")
    assert merged.returncode == whole.returncode and whole.returncode in (0, 1), merged.stderr
    assert json.loads(merged.stdout) == json.loads(whole.stdout)


@pytest.mark.parametrize("flags", [
    ["--k", "2", "--average-risk", "0.5", "--sample-uniques", "0.1"],
    ["--population", "100000", "--population-uniques", "0.05", "--population-model", "pitman",
     "--k-map", "2"]])
def test_merged_risk_thresholds_are_the_whole_tables(sites, flags):
    """check-counts takes check's risk and threshold flags (the shared risk options): the
    merged counts' population figures and risk verdicts are the whole table's."""
    tmp, _ = sites
    whole = _ldiv("check", tmp / "whole.parquet", "--qi", "zip,age", "--sensitive", "disease",
                  *flags, "--json")
    merged = _ldiv("check-counts", *_counts(tmp), *flags, "--json")
    assert merged.returncode == whole.returncode and whole.returncode in (0, 1), merged.stderr
    got = json.loads(merged.stdout)
    assert got == json.loads(whole.stdout)
    names = {m["model"] for m in got["models"]}
    assert names >= ({"average_risk", "sample_uniques"} if "--k" in flags
                    else {"population_uniques", "k_map"})
    assert ("population_unique_share" in got) == ("--population" in flags)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_each_sites_release_is_its_slice(sites, mode):
    tmp, _ = sites
    args = ["--k", "3", "--suppression", "0.1", "--mode", mode, "--metric", "loss"]
    r = _ldiv("anonymize-counts", *_counts(tmp), "--hierarchies", tmp / "h", "--plan-out",
              tmp / f"plan_{mode}.json", *args, "--json")
    assert r.returncode == 0, r.stderr
    w = _ldiv("anonymize", tmp / "whole.parquet", tmp / f"whole_{mode}.parquet", "--qi",
              "zip,age", "--sensitive", "disease", "--hierarchies", tmp / "h", *args, "--json")
    assert w.returncode == 0, w.stderr
    plan = ReleasePlan.from_json((tmp / f"plan_{mode}.json").read_text())
    got, want = json.loads(r.stdout), json.loads(w.stdout)
    assert plan.levels == want["optimum"]["levels"]
    metrics = got["optimum"].pop("metrics")  # sums in another order: last-digit differences
    assert metrics == pytest.approx(want["optimum"].pop("metrics"), rel=1e-12)
    assert (got["optimum"], got["minimal"], got["rows"]) == \
        (want["optimum"], want["minimal"], want["rows"])
    whole = pl.read_parquet(tmp / f"whole_{mode}.parquet")
    suppressed = []
    for i in range(3):
        out = tmp / f"out{i}_{mode}.parquet"
        r = _ldiv("apply-plan", tmp / f"site{i}.parquet", tmp / f"plan_{mode}.json", out,
                  "--hierarchies", tmp / "h", *(["--engine", "duckdb"] if i == 2 else []),
                  *(["--json"] if i else []))
        assert r.returncode == 0, r.stderr
        if i == 0:
            assert "release matches the plan" in r.stdout
            suppressed.append(int(r.stdout.split(" rows suppressed")[0].rsplit(" ", 1)[1]))
        else:
            site = json.loads(r.stdout)
            assert (site["verified"], site["levels"], site["mode"]) == (True, plan.levels, mode)
            suppressed.append(site["suppressed_rows"])
        assert _digest(pl.read_parquet(out)) == _digest(whole.filter(pl.col("site") == i))
    assert sum(suppressed) == want["optimum"]["suppressed"]  # the sites' rows add up
    hs = {q: Hierarchy.from_csv(tmp / "h" / f"{q}.csv", name=q) for q in plan.qi}
    with pytest.raises(InvalidParameterError, match="not the plan applied"):
        verify_site_release(str(tmp / "site0.parquet"), str(tmp / f"out1_{mode}.parquet"),
                            plan, hs)


def _one_line_exit_2(args, capsys) -> str:
    assert main([str(a) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err
    return err


def test_bad_input_is_exit_2(sites, capsys):
    tmp, df = sites
    other = tmp / "other_counts.parquet"
    assert main(["counts", str(tmp / "site0.parquet"), "--qi", "zip", "--sensitive",
                 "disease", "--out", str(other)]) == 0
    assert "differ" in _one_line_exit_2(["check-counts", *_counts(tmp), other, "--k", "2"],
                                        capsys)
    assert "differ" in _one_line_exit_2(
        ["anonymize-counts", _counts(tmp)[0], other, "--hierarchies", tmp / "h",
         "--plan-out", tmp / "p.json", "--k", "2"], capsys)
    assert "not a counts file" in _one_line_exit_2(
        ["check-counts", tmp / "whole.parquet", "--k", "2"], capsys)
    assert "no such file" in _one_line_exit_2(
        ["check-counts", tmp / "missing.parquet", "--k", "2"], capsys)
    (tmp / "junk.parquet").write_text("not parquet")
    assert "cannot read" in _one_line_exit_2(["check-counts", tmp / "junk.parquet"], capsys)
    bad = tmp / "bad_plan.json"
    bad.write_text(ReleasePlan(["zipcode"], {"zipcode": 1}).to_json())
    assert "other columns" in _one_line_exit_2(
        ["apply-plan", tmp / "site0.parquet", bad, tmp / "o.parquet", "--hierarchies",
         tmp / "h"], capsys)
    (tmp / "junk.json").write_text("{}")
    _one_line_exit_2(["apply-plan", tmp / "site0.parquet", tmp / "junk.json", tmp / "o.parquet",
                      "--hierarchies", tmp / "h"], capsys)
    bad.write_text(ReleasePlan(["zip", "age"], {"zip": 9, "age": 0}).to_json())
    assert "not a level" in _one_line_exit_2(
        ["apply-plan", tmp / "site0.parquet", bad, tmp / "o.parquet", "--hierarchies",
         tmp / "h"], capsys)
    bad.write_text(ReleasePlan(["zip"], {"zip": 0}, mode="blank").to_json())
    assert "not a release plan" in _one_line_exit_2(
        ["apply-plan", tmp / "site0.parquet", bad, tmp / "o.parquet", "--hierarchies",
         tmp / "h"], capsys)
    assert not (tmp / "o.parquet").exists() and not (tmp / "p.json").exists()


def test_no_plan_is_exit_1(sites):
    tmp, _ = sites
    r = _ldiv("anonymize-counts", *_counts(tmp), "--hierarchies", tmp / "h", "--plan-out",
              tmp / "none.json", "--k", "1000")
    assert r.returncode == 1 and not (tmp / "none.json").exists()


def test_docs_flow_is_the_readmes():
    """docs/spark.md shows the README's federated blocks verbatim (the README test runs them)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    docs = (root / "docs" / "spark.md").read_text("utf-8")
    readme = (root / "README.md").read_text("utf-8")
    flow = docs[docs.index("```python\nimport polars as pl\n\nadult"):]
    flow = flow[:flow.index("```bash")] + flow[flow.index("```bash"):].split("```\n", 1)[0]
    assert "ldiv apply-plan" in flow and flow in readme


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_a_release_failing_its_verification_leaves_the_target_untouched(
        sites, monkeypatch, capsys, engine):
    """The release is verified against the plan before it is renamed into place: when that
    fails (a bug) an existing file at the target keeps its bytes and no temporary is left."""
    from ldiv_polars.cli import main
    from ldiv_polars.search import federated

    tmp, _ = sites
    plan = tmp / f"plan_verify_{engine}.json"
    assert main(["anonymize-counts", *map(str, _counts(tmp)), "--hierarchies", str(tmp / "h"),
                 "--plan-out", str(plan), "--k", "3", "--suppression", "0.1"]) == 0
    out = tmp / f"kept_{engine}.parquet"
    out.write_bytes(b"an earlier release")

    def mismatch(*args, **kwargs):
        raise InvalidParameterError("the release is not the plan applied to the site's rows")

    monkeypatch.setattr(federated, "verify_site_release", mismatch)
    capsys.readouterr()
    rc = main(["apply-plan", str(tmp / "site0.parquet"), str(plan), str(out), "--hierarchies",
               str(tmp / "h"), "--engine", engine])
    err = capsys.readouterr().err
    assert rc == 3 and out.exists() and out.read_bytes() == b"an earlier release"
    assert "re-verification failed, nothing written" in err
    assert not [p for p in tmp.iterdir() if p.name.startswith(f".{out.name}.")]
