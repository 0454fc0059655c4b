"""The sections of the report, each a function from the gathered facts to an HTML fragment.

A section reads :class:`~ldiv_polars.reporting.facts.TableFacts` of the input and, when there
is one, of the release (the table as published), plus the anonymization's result; it computes
nothing over rows. :func:`verdict_table` and :func:`anonymization_table` are also what the
result objects show in a notebook (``_repr_html_``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ldiv_polars.models.base import Model, ModelResult
from ldiv_polars.reporting.charts import INPUT_COLOR, RELEASE_COLOR, bar_chart
from ldiv_polars.reporting.facts import (
    FAILING_SHOWN,
    SIZE_BUCKETS,
    TableFacts,
)
from ldiv_polars.reporting.markup import esc, figure, fmt, num, section, table
from ldiv_polars.reporting.texts import plain_text
from ldiv_polars.table_summary import SUMMARY_KEYS, SUMMARY_LABELS


def _tables(inp: TableFacts, rel: TableFacts | None) -> list[tuple[str, TableFacts]]:
    return [("input", inp)] + ([("release", rel)] if rel is not None else [])


def _verdict_cell(passed: bool) -> str:
    return '<td class="pass-cell">pass</td>' if passed else '<td class="fail-cell">FAIL</td>'


def verdict_table(names: Sequence[str], verdicts: Sequence[ModelResult],
                  table_name: str | None = None) -> str:
    """One row per model: its name (with thresholds), the verdict, the achieved value and the
    failing classes and rows (``table_name`` adds a first column naming the table)."""
    header = (["table"] if table_name else []) + [
        "model", "verdict", "achieved", "failing classes", "failing rows"]
    rows = []
    for name, v in zip(names, verdicts):
        prefix = [esc(table_name)] if table_name else []
        rows.append(prefix + [f"<code>{esc(name)}</code>", _verdict_cell(v.passed),
                              num(v.achieved), num(v.failing_classes), num(v.failing_rows)])
    return table(header, rows)


def banner(inp: TableFacts, rel: TableFacts | None) -> str:
    """The one-line verdict on top: on the release when there is one, else on the input."""
    name, facts = _tables(inp, rel)[-1]
    if not facts.models:
        return '<p class="banner pass">No privacy model was requested: figures only.</p>'
    failed = [m.describe() for m, v in zip(facts.models, facts.verdicts) if not v.passed]
    if not failed:
        return (f'<p class="banner pass">PASS: the {name} satisfies every requested model '
                f"({esc(', '.join(m.describe() for m in facts.models))}).</p>")
    return (f'<p class="banner fail">FAIL: the {name} does not satisfy '
            f"{esc(', '.join(failed))}.</p>")


def checked(inp: TableFacts, rel: TableFacts | None, meta: dict[str, str],
            hierarchies: Mapping[str, str] | None = None) -> str:
    """What was checked: files, rows, columns, models, engine, version, date, hashes (of the
    files read, and per QI of ``hierarchies``: the SHA-256 of the hierarchy's ARX CSV text,
    :func:`~ldiv_polars.reporting.facts.hierarchy_digest`)."""
    items = [("input", esc(inp.source)), ("input rows", fmt(inp.summary["rows"]))]
    if rel is not None:
        items += [("release", esc(rel.source)), ("release rows", fmt(rel.summary["rows"]))]
    items += [
        ("quasi-identifiers", esc(", ".join(inp.qi))),
        ("sensitive column", esc(inp.sensitive)),
        ("models", "<br>".join(f"<code>{esc(m.describe())}</code>" for m in inp.models)
         or "none (figures only)"),
    ]
    items += [(k, esc(v)) for k, v in meta.items()]
    for _, facts in _tables(inp, rel):
        for path, digest in facts.files.items():
            items.append(("SHA-256", f'{esc(path)}<br><span class="hash">'
                                     f'{esc(digest or "not a regular file")}</span>'))
    for q, digest in (hierarchies or {}).items():
        items.append(("SHA-256", f"hierarchy of {esc(q)} (its ARX CSV text)<br>"
                                 f'<span class="hash">{esc(digest)}</span>'))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return section("checked", "What was checked", f"<dl>{body}</dl>")


def verdicts(inp: TableFacts, rel: TableFacts | None) -> str:
    """The verdict tables: the release's first (the one that counts), then the input's."""
    if not inp.models:
        return section("verdicts", "Verdicts", "<p>No privacy model was requested.</p>")
    parts = [verdict_table([m.describe() for m in f.models], f.verdicts, name)
             for name, f in reversed(_tables(inp, rel))]  # the release's first
    note = ('<p class="muted">The release is what would be published: its verdict is the one '
            "that counts; the input's (below) shows what the anonymization had to fix.</p>"
            if rel is not None else "")
    if rel is not None and rel.unjudged_rows:
        note += (f"<p>The release's {_count(rel.unjudged_rows, 'row')} masked to * in every "
                 "quasi-identifier are suppressed records: they belong to no class, so its "
                 "verdicts judge the other rows (as the anonymization's re-verification and ARX "
                 "do; models comparing a class with the table compare it with those rows). "
                 "The statistics below count every published row.</p>")
    return section("verdicts", "Verdicts", note + "".join(parts))


def model_texts(models: Sequence[Model]) -> str:
    """A plain-language paragraph per model (one per model class)."""
    seen: dict[str, str] = {}
    for m in models:
        seen.setdefault(type(m).__name__, f"<h3><code>{esc(m.describe())}</code></h3>"
                        f'<p class="model">{esc(plain_text(m))}</p>')
    body = "".join(seen.values()) or "<p>No privacy model was requested.</p>"
    return section("models", "What each model protects against, and what not", body)


def _count(n: int, noun: str) -> str:
    """``n`` and the noun, in the plural unless ``n`` is 1 ("1 row", "2 classes")."""
    plural = noun + ("es" if noun.endswith(("s", "sh", "ch")) else "s")
    return f"{fmt(n)} {noun if n == 1 else plural}"


def _bucket_label(lo: int, hi: int | None) -> str:
    size = f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}–{hi}")
    risk = f"{100 / lo:.3g}%" if lo == hi else (
        f"≤ {100 / lo:.3g}%" if hi is None else f"{100 / hi:.3g}–{100 / lo:.3g}%")
    return f"{size} (risk {risk})"


def risk(inp: TableFacts, rel: TableFacts | None) -> str:
    """The summary statistics, the class-size and risk charts, the records above thresholds."""
    tables = _tables(inp, rel)
    rows = [[esc(SUMMARY_LABELS[k])] + [num(f.summary[k], f"{name}.{k}") for name, f in tables]
            for k in SUMMARY_KEYS]
    stats = table(["statistic"] + [name for name, _ in tables], rows)
    labels = [_bucket_label(lo, hi) for lo, hi in SIZE_BUCKETS]
    charts = []
    xmax = max(max(f.size_buckets.get_column("rows")) for _, f in tables)
    for name, f in tables:
        color = RELEASE_COLOR if name == "release" else INPUT_COLOR
        classes = f.size_buckets.get_column("classes").to_list()
        recs = f.size_buckets.get_column("rows").to_list()
        title = f"Records by class size ({name})"
        charts.append(figure(
            bar_chart(labels, recs, title=title, color=color, xmax=xmax),
            title,
            f"Each record's prosecutor risk is 1 / the size of its class; records in small "
            f"classes are at high risk ({name}).",
            table(["class size (risk)", "classes", "records"],
                  [[esc(a), num(b), num(c)] for a, b, c in zip(labels, classes, recs)])))
    thresholds = _at_risk_table(tables)
    return section("risk", "Re-identification risk", stats + '<div class="pair">'
                   + "".join(charts) + "</div><h3>Records at risk</h3>" + thresholds)


POPULATION_LABELS = {
    "population_size": "population size",
    "population_model": "population model used",
    "population_unique_share": "population uniques, estimated share",
    "population_uniques": "population uniques, estimated number",
    "population_reason": "why no estimate",
    "weight": "sampling weight column",
    "individual_risk_max": "individual risk (weights), max",
    "expected_reidentifications": "expected re-identifications (weights)",
    "global_risk": "global risk (share of records)",
}
"""The population and weight figures of the report, in order, with their labels."""


def population(inp: TableFacts, rel: TableFacts | None) -> str:
    """The population-model section: the estimated population uniqueness and the risk with
    sampling weights, per table (empty when neither a population nor weights were given)."""
    tables = _tables(inp, rel)
    keys = [k for k in POPULATION_LABELS if any(f.population.get(k) is not None
                                                 for _, f in tables)]
    if not keys:
        return ""
    rows = [[esc(POPULATION_LABELS[k])] + [
        num(f.population[k], f"{name}.{k}") if isinstance(f.population.get(k), (int, float))
        else esc("–" if f.population.get(k) is None else str(f.population[k]))
        for name, f in tables] for k in keys]
    note = ("<p>Population uniques are estimated from the sample's class sizes and the "
            "population size (Pitman, Zayatz, SNB or Dankar et al.'s rule, as ARX); the "
            "weighted figures are sdcMicro's individual risk (Benedetti-Franconi) from the "
            "sampling weights. Both are estimates under their models' assumptions.</p>")
    return section("population", "Population model and sampling weights",
                   note + table(["figure"] + [name for name, _ in tables], rows))


def _at_risk_table(tables: list[tuple[str, TableFacts]]) -> str:
    first = tables[0][1]
    rows = []
    for t in first.at_risk:
        cells = [f"prosecutor risk above {t:g} (class size below {1 / t:g})"]
        for name, f in tables:
            n = f.at_risk[t]
            total = int(f.summary["rows"] or 0)  # type: ignore[call-overload]
            share = f" ({100 * n / total:.3g}%)" if total else ""
            cells.append(f'<td class="num" data-key="{name}.at_risk.{t:g}" data-value="{n}">'
                         f"{fmt(n)}{share}</td>")
        rows.append(cells)
    return table(["records"] + [name for name, _ in tables], rows)


def failing(inp: TableFacts, rel: TableFacts | None) -> str:
    """The smallest failing classes of every failing model (release first when given)."""
    parts = []
    for name, f in reversed(_tables(inp, rel)):
        for m, v in zip(f.models, f.verdicts):
            if v.passed:
                continue
            frame = f.failing[m.key]
            rows = [[esc(x) for x in r[:-2]] + [num(r[-2]), esc(r[-1])] for r in frame.rows()]
            shown = (f"the {len(rows)} smallest" if v.failing_classes > FAILING_SHOWN
                     else "all")
            opened = " open" if name == "release" or rel is None else ""
            parts.append(f"<h3>{esc(name)}: <code>{esc(m.describe())}</code></h3>"
                         f"<p>{_count(v.failing_classes, 'failing class')} "
                         f"({_count(v.failing_rows, 'row')}).</p>"
                         f"<details{opened}><summary>show {shown}</summary>"
                         + table([*f.qi, "size", "why it fails"], rows) + "</details>")
    if not parts:
        return ""
    return section("failing", "Failing classes", "".join(parts))


def distributions(inp: TableFacts, rel: TableFacts | None) -> str:
    """Each quasi-identifier's and the sensitive column's values, input and release side by
    side."""
    parts = []
    for col in [*inp.qi, inp.sensitive]:
        role = "sensitive" if col == inp.sensitive else "quasi-identifier"
        figs = []
        xmax = max(max(f.distributions[col].get_column("n"), default=0)
                   for _, f in _tables(inp, rel))
        for name, f in _tables(inp, rel):
            d = f.distributions[col]
            values, counts = d.get_column("value").to_list(), d.get_column("n").to_list()
            color = RELEASE_COLOR if name == "release" else INPUT_COLOR
            title = f"{col} ({name}): records per value"
            figs.append(figure(
                bar_chart(values, counts, title=title, color=color, xmax=xmax),
                title, f"{_count(f.distinct[col], 'distinct value')} in the {name}",
                table(["value", "records"], [[esc(a), num(b)] for a, b in zip(values, counts)])))
        parts.append(f"<h3>{esc(col)} <span class='muted'>({role})</span></h3>"
                     f'<div class="pair">{"".join(figs)}</div>')
    return section("distributions", "Distributions, input and release", "".join(parts))


def information_loss(inp: TableFacts, rel: TableFacts, metrics: dict[str, float]) -> str:
    """What the release lost against the input: rows, classes, distinct values per QI, the
    discernibility metric, and the search's metrics when the report follows an anonymization."""
    rows_in, rows_out = int(inp.summary["rows"] or 0), int(rel.summary["rows"] or 0)  # type: ignore[call-overload]
    items = [
        ("rows", num(rows_in), num(rows_out)),
        ("rows removed (suppressed by dropping)", "<td></td>", num(rows_in - rows_out)),
        ("rows with every quasi-identifier masked (*)", num(inp.masked_rows),
         num(rel.masked_rows)),
        ("equivalence classes", num(inp.summary["classes"]), num(rel.summary["classes"])),
        ("average class size", num(rows_in / max(int(inp.summary["classes"] or 0), 1)),  # type: ignore[call-overload]
         num(rows_out / max(int(rel.summary["classes"] or 0), 1))),  # type: ignore[call-overload]
        ("sum of squared class sizes (discernibility, no suppression penalty)",
         num(inp.discernibility),
         num(rel.discernibility)),
    ]
    items += [(f"distinct values of {q} (* counted as one)", num(inp.distinct[q]),
               num(rel.distinct[q]))
              for q in inp.qi]
    body = table(["measure", "input", "release"], [[esc(a), b, c] for a, b, c in items])
    if metrics:
        body += "<h3>Metrics of the chosen generalization (lower is better)</h3>" + table(
            ["metric", "value"], [[esc(k), num(v)] for k, v in sorted(metrics.items())])
    return section("loss", "Information loss", body)


def anonymization_table(result: Any, heights: dict[str, int] | None = None) -> str:
    """The lattice search of an :class:`~ldiv_polars.search.AnonymizationResult`: levels per
    QI, the optimum, the minimal nodes, nodes checked, suppression and verification."""
    heights = heights or {}

    def level(q: str, v: int) -> str:
        return f"{q}={v}" + (f" of {heights[q] - 1}" if q in heights else "")

    rows = [["strategy", esc(result.strategy)],
            ["lattice nodes", fmt(result.lattice_size)],
            ["nodes checked", fmt(result.checked)],
            ["roll-ups", fmt(result.rollups)]]
    if result.found:
        rows += [
            ["optimum (generalization level per QI)",
             esc(", ".join(level(q, v) for q, v in result.levels.items()))],
            [f"{esc(result.metric)} of the optimum", fmt(result.value)],
            ["classes (suppressed rows not counted)", fmt(result.classes)],
            ["suppressed rows", f"{fmt(result.suppressed_rows)} of at most "
                                f"{fmt(result.suppression_limit_rows)} ({esc(result.suppression_mode)})"],
            ["minimal nodes", _minimal(result)],
        ]
        if result.verification is not None:
            rows.append(["output re-verified", _verdict_cell(result.verification.passed)])
    else:
        rows.append(["optimum", '<td class="fail-cell">no node satisfies the models</td>'])
    rows.append(["monotone", esc(result.monotone_reason or fmt(result.monotone))])
    rows += [["note", esc(n)] for n in result.notes]
    rows.append(["search time", esc(f"{result.elapsed_s:.3f} s")])
    return table(["lattice search", ""], rows)


def _minimal(result: Any) -> str:
    if result.minimal is None:
        return "not computed"
    nodes = ["(" + ", ".join(f"{q}={v}" for q, v in node.items()) + ")"
             for node in result.minimal[:20]]
    more = f" … and {len(result.minimal) - 20} more" if len(result.minimal) > 20 else ""
    done = "" if result.minimal_complete else " (search stopped early: maybe incomplete)"
    return esc(f"{len(result.minimal)}: " + ", ".join(nodes) + more + done)
