"""The report of the Adult anonymization opened in a real browser (headless Chromium, the
Debian package that ``.ci/run`` installs): no console error, every chart rendered (a
non-empty SVG with drawn marks), the numbers shown equal ``summary()``'s, and a screenshot
that is not blank. Skips where no Chromium is installed, except in CI (``CI`` set), where a
missing browser fails the test."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli import main
from ldiv_polars.reporting.markup import fmt

pytestmark = pytest.mark.browser

QI = ["sex", "age", "race", "marital-status"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome")

# measures the page once it has loaded and writes what it found into the DOM, which
# --dump-dom prints; installed first in <head> so that it sees every error
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(
  e.message || ('cannot load ' + (e.target && (e.target.src || e.target.href)))), true);
const _err = console.error;
console.error = (...a) => { window.__errors.push(a.join(' ')); _err(...a); };
window.addEventListener('load', () => {
  const charts = [...document.querySelectorAll('svg')].map(s => {
    const r = s.getBoundingClientRect();
    return {w: r.width, h: r.height, marks: s.querySelectorAll('path, rect').length,
            label: s.getAttribute('aria-label') || ''};
  });
  const cells = [...document.querySelectorAll('[data-key]')].map(
    c => ({key: c.dataset.key, value: c.dataset.value, text: c.textContent}));
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify({errors: window.__errors, charts, cells});
  document.body.appendChild(pre);
});
</script>"""


def _browser() -> str:
    found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("no headless Chromium: .ci/run installs the Debian package 'chromium'")
        pytest.skip("no Chromium installed (apt-get install chromium)")
    return found


def _run(browser: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
         *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def adult_report(tmp_path_factory, adult_dir):
    d = tmp_path_factory.mktemp("browser")
    out, page = d / "adult_anon.parquet", d / "adult_report.html"
    rc = main(["anonymize", str(adult_dir / "adult.csv"), str(out), "--separator", ";",
               "--qi", ",".join(QI), "--hierarchies", str(adult_dir), "--sensitive",
               "occupation", "--k", "5", "--l", "3", "--suppression", "0.02",
               "--report", str(page)])
    assert rc == 0
    return adult_dir / "adult.csv", out, page


def test_report_in_chromium(adult_report, tmp_path):
    browser = _browser()
    source, release, page = adult_report
    text = page.read_text(encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    run = _run(browser, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert found, f"the page did not load: {run.stderr[-2000:]}"
    got = json.loads(html.unescape(found.group(1)))

    assert got["errors"] == []
    assert not re.search(r"CONSOLE|Uncaught|Failed to load resource", run.stderr)  # (if logged)
    assert len(got["charts"]) >= 2 + 2 * (len(QI) + 1)  # risk, then each column, both tables
    for chart in got["charts"]:
        assert chart["w"] > 50 and chart["h"] > 50 and chart["marks"] > 3, chart

    shown = {c["key"]: c for c in got["cells"]}
    tables = {"input": lp.summary(str(source), QI, "occupation", separator=";"),
              "release": lp.summary(str(release), QI, "occupation")}
    for name, summary in tables.items():
        for key in lp.SUMMARY_KEYS:
            cell = shown[f"{name}.{key}"]
            assert json.loads(cell["value"]) == summary[key], (name, key)
            assert cell["text"] == fmt(summary[key]), (name, key)
    assert pl.read_parquet(release).height == tables["release"]["rows"]


def test_report_screenshot_is_not_blank(adult_report, tmp_path):
    from PIL import Image  # matplotlib's dependency

    browser = _browser()
    _, _, page = adult_report
    shot = tmp_path / "report.png"
    run = _run(browser, "--window-size=1200,2400", f"--screenshot={shot}", page.as_uri())
    assert shot.exists(), run.stderr[-2000:]
    assert not re.search(r"CONSOLE|Uncaught|Failed to load resource", run.stderr)
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 2400)
    colors = image.getcolors(maxcolors=1 << 20) or []
    background = max(colors)[0] if colors else 0
    assert len(colors) > 50  # text, table lines, banner, chart colors
    assert background < 0.9 * image.size[0] * image.size[1]  # not one flat color
    keep = os.environ.get("LDIV_REPORT_SCREENSHOT")
    if keep:  # to look at it: LDIV_REPORT_SCREENSHOT=/tmp/report.png pytest ...
        shutil.copy(shot, keep)


def test_population_section_in_chromium(adult_dir, tmp_path):
    """``ldiv report --population usa --weight w`` with risk thresholds: the page loads without
    errors, and the population cells and the thresholds' verdicts equal the library's."""
    browser = _browser()
    data = tmp_path / "adult_w.parquet"
    pl.read_csv(adult_dir / "adult.csv", separator=";", infer_schema=False).with_columns(
        w=pl.lit(25.0)).write_parquet(data)
    page = tmp_path / "population.html"
    rc = main(["report", str(data), "--qi", ",".join(QI), "--sensitive", "occupation",
               "--out", str(page), "--population", "usa", "--weight", "w",
               "--average-risk", "0.5", "--sample-uniques", "0.5", "--json"])
    assert rc == 0
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("<head>", "<head>" + PROBE, 1),
                     encoding="utf-8")
    run = _run(browser, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert found, f"the page did not load: {run.stderr[-2000:]}"
    got = json.loads(html.unescape(found.group(1)))
    assert got["errors"] == []
    shown = {c["key"]: c for c in got["cells"]}
    prof = lp.risk_profile(str(data), QI, population_size="usa", weight="w")
    for key in ("population_size", "population_unique_share", "global_risk",
                "expected_reidentifications", "individual_risk_max"):
        assert json.loads(shown[f"input.{key}"]["value"]) == pytest.approx(
            getattr(prof, key), rel=1e-12), key
    verdicts = lp.check(str(data), QI, None, [lp.models.AverageRisk(0.5)]).models[0]
    assert verdicts.achieved == pytest.approx(prof.prosecutor_avg)
