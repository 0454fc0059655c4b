"""The HTML report (``ldiv_polars.report``, ``ldiv report``, ``ldiv anonymize --report``): its
figures against independent computations (brute force over the rows, ``risk_profile``,
``check``), the page's promises (self-contained, escaped, atomic, never over an input) and the
CLI's (exit codes, clean ``--json`` with progress on stderr, the whole wall time)."""

from __future__ import annotations

import inspect

import hashlib
import html
import json
import re
from collections import Counter
from fractions import Fraction

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli import main
from ldiv_polars.models import __all__ as model_names
from ldiv_polars.reporting import report
from ldiv_polars.reporting.facts import RISK_THRESHOLDS, TOP_VALUES, table_facts
from ldiv_polars.reporting.texts import DEFAULT_TEXT, MODEL_TEXTS, plain_text

TABLE = pl.DataFrame({
    "zip": ["130", "130", "130", "148", "148", "148", "149", "150", "150", "150"],
    "age": [21, 21, 21, 34, 34, 34, 50, 67, 67, 67],
    "disease": ["flu", "flu", "hiv", "flu", "cancer", "hiv", "flu", "flu", "flu", "<b>x</b>"],
})
QI = ["zip", "age"]
MODELS = [lp.KAnonymity(2), lp.DistinctLDiversity(2)]


@pytest.fixture()
def csv(tmp_path):
    path = tmp_path / "t.csv"
    TABLE.write_csv(path, separator=";")
    return path


def data_values(page: str) -> dict[str, object]:
    """The exact values the page carries beside the numbers it shows (``data-key``)."""
    pairs = re.findall(r'data-key="([^"]+)" data-value="([^"]*)"', page)
    return {k: json.loads(html.unescape(v)) for k, v in pairs}


def test_facts_match_brute_force_over_the_rows():
    f = table_facts(TABLE, QI, "disease", MODELS)
    sizes = Counter(zip(TABLE["zip"], TABLE["age"]))
    per_row = [sizes[(z, a)] for z, a in zip(TABLE["zip"], TABLE["age"])]
    for t in RISK_THRESHOLDS:  # rows whose risk 1/size exceeds t, in exact arithmetic
        assert f.at_risk[t] == sum(Fraction(1, s) > Fraction(t).limit_denominator() for s in
                                   per_row)
        profile = lp.risk_profile(TABLE, QI, threshold=t)
        assert f.at_risk[t] == round(profile.records_at_risk * profile.rows)
    assert f.discernibility == sum(s * s for s in sizes.values())
    assert f.size_buckets["rows"].sum() == TABLE.height
    assert f.size_buckets["classes"].sum() == len(sizes)
    by_bucket = dict(zip(f.size_buckets["bucket"], f.size_buckets["classes"]))
    assert by_bucket["1"] == sum(s == 1 for s in sizes.values())
    assert by_bucket["3-4"] == sum(3 <= s <= 4 for s in sizes.values())
    assert dict(zip(*f.distributions["disease"].get_columns())) == Counter(TABLE["disease"])
    assert f.distinct == {c: TABLE[c].n_unique() for c in [*QI, "disease"]}
    assert f.summary == lp.summary(TABLE, QI, "disease")
    expected = lp.check(TABLE, QI, "disease", MODELS)
    assert [v.to_dict() for v in f.verdicts] == [m.to_dict() for m in expected.models]
    assert f.files == {} and f.source == "a DataFrame"


def test_many_values_become_ranges_or_the_most_frequent():
    n = 300
    df = pl.DataFrame({"age": list(range(n)), "city": [f"c{i % 50:02d}" for i in range(n)],
                       "s": ["a", "b", "c"] * (n // 3)})
    f = table_facts(df, ["age", "city"], "s")
    ages = f.distributions["age"]
    assert ages.height == TOP_VALUES and ages["n"].sum() == n
    assert ages["value"][0] == "0–14" and ages["n"][0] == 15  # ceil(300 / 20) per range
    cities = f.distributions["city"]
    assert cities.height == TOP_VALUES and cities["n"].sum() == n
    assert cities["value"][-1] == "(other values)" and cities["n"][-1] == n - 19 * 6


def test_sha256_of_the_input_file(csv):
    f = table_facts(str(csv), QI, "disease", separator=";")
    assert f.files == {str(csv): hashlib.sha256(csv.read_bytes()).hexdigest()}


def test_page_shows_the_summary_and_verdicts_of_input_and_release(tmp_path, csv):
    release = tmp_path / "release.csv"
    TABLE.with_columns(pl.lit("1**").alias("zip")).write_csv(release)
    out = tmp_path / "r.html"
    page = report(str(csv), QI, "disease", MODELS, release=str(release), separator=";",
                  out=out)
    assert out.read_text(encoding="utf-8") == page
    shown = data_values(page)
    for name, data in (("input", TABLE), ("release", pl.read_csv(release))):
        expected = lp.summary(data, QI, "disease")
        assert {k: shown[f"{name}.{k}"] for k in lp.SUMMARY_KEYS} == expected
    release_check = lp.check(pl.read_csv(release), QI, "disease", MODELS)
    assert page.verdict_on == "release"
    assert page.passed == release_check.passed
    assert [v["passed"] for v in page.verdicts] == [m.passed for m in release_check.models]
    assert "Information loss" in page and "What each model protects against" in page
    for m in MODELS:
        assert html.escape(plain_text(m)) in page


def test_page_is_self_contained_and_escapes_the_data():
    page = report(TABLE, QI, "disease", MODELS)
    assert "<script" not in page.lower()
    assert not re.search(r'(src|href)="(https?:)?//', page)  # loads nothing
    assert "@import" not in page and not re.search(r"url\((?!#)", page)  # local refs only
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert page.count("<svg") == 1 + 3  # the risk chart, one per column
    assert not page.passed and page.verdict_on == "input"


def test_report_refuses_a_bad_or_overwriting_output(tmp_path):
    d = tmp_path / "dataset"
    d.mkdir()
    TABLE.write_parquet(d / "part-0.parquet")
    with pytest.raises(lp.OutputOverwritesInputError):
        report(str(d), QI, "disease", MODELS, out=d / "report.html")
    with pytest.raises(lp.OutputPathError):
        report(TABLE, QI, "disease", MODELS, out=tmp_path / "report.csv")
    with pytest.raises(lp.UnknownColumnError):
        report(TABLE, ["nope"], "disease", MODELS, out=tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_every_model_class_has_a_plain_text():
    classes = [n for n in model_names if isinstance(getattr(lp.models, n), type)
               and issubclass(getattr(lp.models, n), lp.Model) and n != "Model"
               and not inspect.isabstract(getattr(lp.models, n))]  # (TableModel: a base)
    assert sorted(set(classes) - set(MODEL_TEXTS)) == []
    assert "minimality" in MODEL_TEXTS["DistinctLDiversity"]
    assert plain_text(42) == DEFAULT_TEXT


def test_repr_html_of_results():
    res = lp.check(TABLE, QI, "disease", MODELS)
    assert "k_anonymity_2" in res._repr_html_() and "FAIL" in res._repr_html_()
    h = {"zip": lp.Hierarchy([[z, "*"] for z in TABLE["zip"].unique()], name="zip")}
    anon = lp.anonymize(TABLE, ["zip"], "disease", h, lp.KAnonymity(2))
    assert "nodes checked" in anon._repr_html_()
    assert "<iframe srcdoc=" in report(TABLE, QI, "disease")._repr_html_()


def test_cli_report_exit_codes_and_clean_json(tmp_path, csv, capsys, monkeypatch):
    out = tmp_path / "r.html"
    args = ["report", str(csv), "--separator", ";", "--qi", "zip,age", "--sensitive", "disease",
            "--out", str(out)]
    monkeypatch.setenv("LDIV_PROGRESS", "1")
    assert main([*args, "--k", "2", "--json"]) == 1
    captured = capsys.readouterr()
    got = json.loads(captured.out)  # stdout is the JSON alone
    assert got["passed"] is False and got["models"][0]["achieved"] == 1
    assert got["unjudged_rows"] == 0  # no release: every row judged
    assert "ldiv report: reading the input" in captured.err
    assert out.exists()
    assert main([*args, "--k", "1"]) == 0
    assert "passes every requested model" in capsys.readouterr().out
    assert main([*args[:-1], str(csv), "--k", "1"]) == 2  # .csv is no report name
    assert capsys.readouterr().err.startswith("error: ")


def test_cli_anonymize_report_and_wall_time(tmp_path, adult_dir, capsys, monkeypatch):
    out, page = tmp_path / "a.parquet", tmp_path / "a.html"
    monkeypatch.setenv("LDIV_PROGRESS", "1")
    rc = main(["anonymize", str(adult_dir / "adult.csv"), str(out), "--separator", ";",
               "--qi", "sex,age,race", "--hierarchies", str(adult_dir), "--sensitive",
               "occupation", "--k", "5", "--l", "3", "--suppression", "0.02", "--json",
               "--report", str(page)])
    captured = capsys.readouterr()
    got = json.loads(captured.out)
    assert rc == 0 and got["verified"] is True
    assert got["wall_s"] >= got["elapsed_s"] > 0
    assert "writing" in captured.err and "drawing the report" in captured.err
    text = page.read_text(encoding="utf-8")
    assert "Anonymization (lattice search)" in text
    shown = data_values(text)
    release = lp.summary(str(out), ["sex", "age", "race"], "occupation")
    assert {k: shown[f"release.{k}"] for k in lp.SUMMARY_KEYS} == release
    for q in ("sex", "age", "race"):  # the hierarchy files that made the release, hashed
        digest = hashlib.sha256((adult_dir / f"adult_hierarchy_{q}.csv").read_bytes())
        assert f"hierarchy of {q} (its ARX CSV text)" in text and digest.hexdigest() in text


def test_empty_table_reports_vacuous_verdicts():
    empty = TABLE.clear()
    page = report(empty, QI, "disease", MODELS, release=empty)
    assert page.passed and data_values(page)["release.rows"] == 0
    assert data_values(page)["input.k"] is None


def test_report_of_an_anonymization_without_a_written_release(tmp_path):
    h = {"zip": lp.Hierarchy([[z, z[:2] + "*", "*"] for z in TABLE["zip"].unique().sort()],
                             name="zip")}
    anon = lp.anonymize(TABLE, ["zip"], "disease", h, [lp.KAnonymity(3)])
    page = report(TABLE, ["zip"], "disease", [lp.KAnonymity(3)], anonymization=anon,
                  hierarchies=h)
    shown = data_values(page)
    released = lp.summary(anon.output.collect(), ["zip"], "disease")
    assert {k: shown[f"release.{k}"] for k in lp.SUMMARY_KEYS} == released
    assert page.passed and "zip=" in page and " of 2" in page  # level out of the height


def test_a_bad_release_column_is_reported_before_the_input_is_read(tmp_path):
    release = tmp_path / "release.csv"
    TABLE.drop("age").write_csv(release)
    with pytest.raises(lp.UnknownColumnError):
        report(str(tmp_path / "missing.csv"), QI, "disease", release=str(release))


def test_release_verdicts_judge_the_retained_rows_as_the_anonymizer_does(tmp_path):
    """A masked release holds its suppressed rows as one class of ``*``: the report judges the
    rows outside it, as ``anonymize``'s re-verification (and ARX) do, and says how many it left
    out; the statistics still describe every published row."""
    h = {"zip": lp.Hierarchy([[z, z[:2] + "*", "*"] for z in TABLE["zip"].unique().sort()],
                             name="zip")}
    anon = lp.anonymize(TABLE, ["zip"], "disease", h, [lp.KAnonymity(3)], suppression=0.1)
    assert anon.levels == {"zip": 0} and anon.suppressed_rows == 1 and anon.verification.passed
    out = tmp_path / "release.parquet"
    anon.sink(out)
    released = pl.read_parquet(out).with_columns(pl.col("zip").cast(pl.String))
    retained = released.filter(pl.col("zip") != "*")
    expected = lp.check(retained, ["zip"], "disease", [lp.KAnonymity(3)])
    naive = lp.check(released, ["zip"], "disease", [lp.KAnonymity(3)])
    assert expected.passed and not naive.passed
    for page in (report(TABLE, ["zip"], "disease", [lp.KAnonymity(3)], release=str(out)),
                 report(TABLE, ["zip"], "disease", [lp.KAnonymity(3)], anonymization=anon,
                        hierarchies=h)):
        assert page.passed and page.verdict_on == "release"
        assert [{"key": m.key, **m.to_dict()} for m in expected.models] == page.verdicts
        assert "1 row masked to * in every quasi-identifier" in page and page.unjudged_rows == 1
        assert data_values(page)["release.k"] == 1  # the statistics count every published row


def test_recursive_text_states_def_4_2():
    """Def 4.2: r1 < c (r_l + ... + r_m), r_i the i-th *most* frequent value's count."""
    text = plain_text(lp.RecursiveCLDiversity(3, 3))
    assert "r1 < c (r_l + ... + r_m)" in text and "l-th most frequent" in text
    assert "least frequent" not in text


def test_a_null_cell_beside_masked_ones_is_judged_not_dropped():
    """Only rows whose every QI is ``*`` are the suppressed records: a row with a null cell
    (a cell-suppressed release, ``nulls="value"``) and ``*`` elsewhere stays in the verdicts."""
    release = pl.DataFrame({"a": ["*", "*", None, "x", "x"], "b": ["*", "*", "*", "y", "y"],
                            "s": ["p", "q", "p", "p", "q"]})
    facts = table_facts(release, ["a", "b"], "s", [lp.KAnonymity(2)], nulls="value",
                        suppressed=True)
    assert facts.masked_rows == facts.unjudged_rows == 2
    # judged: the class (null, *) of 1 row fails k = 2, the class (x, y) passes
    assert [(v.passed, v.achieved, v.failing_rows) for v in facts.verdicts] == [(False, 1, 1)]
