"""Small HTML building blocks of the report: escaped text, tables, figures, the page frame.

Every piece of text from the data (column names, values, file names) goes through
:func:`esc`; the page holds no script and loads nothing (its style sheet is inline).

>>> table(["a", "b"], [["1", esc("<x>")]])
'<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>&lt;x&gt;</td></tr></tbody></table>'
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence

CSS = """
:root { --pass: #1a7f37; --fail: #b42318; --muted: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
       margin: 0; background: #f6f8fa; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 1.6em; margin: 0 0 .2em; } h2 { font-size: 1.25em; margin-top: 2em;
  border-bottom: 1px solid var(--line); padding-bottom: .2em; } h3 { font-size: 1.05em; }
nav a { margin-right: 1em; font-size: .9em; }
.banner { font-size: 1.15em; font-weight: 600; padding: .6em 1em; border-radius: 6px;
          margin: 1em 0; }
.banner.pass { background: #dafbe1; color: var(--pass); }
.banner.fail { background: #ffebe9; color: var(--fail); }
.pass-cell { color: var(--pass); font-weight: 600; } .fail-cell { color: var(--fail);
  font-weight: 600; }
table { border-collapse: collapse; margin: .6em 0 1em; font-size: .92em; }
th, td { border: 1px solid var(--line); padding: 4px 10px; text-align: left;
         vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
dt { font-weight: 600; } dd { margin: 0; overflow-wrap: anywhere; }
code, .hash { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85em; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; align-items: start; }
figure { margin: 0 0 1em; } .chart-title { font-weight: 600; font-size: .9em; } figcaption { color: var(--muted); font-size: .85em; }
svg.chart { max-width: 100%; height: auto; }
.muted { color: var(--muted); } p.model { max-width: 60em; }
details { margin: .2em 0 1em; } summary { cursor: pointer; color: var(--muted); }
@media print { body { background: #fff; } main { padding: 0; } details { display: none; } }
"""


def esc(value: object) -> str:
    """``value`` as escaped HTML text."""
    return html.escape(str(value), quote=True)


def fmt(value: object) -> str:
    """A number as the report shows it: integers with thousands separators, floats with 6
    significant digits, None as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:.6g}"
    return str(value)


def num(value: object, key: str | None = None) -> str:
    """A right-aligned table cell with a number; with ``key``, the cell carries the exact value
    (``data-key``, ``data-value`` as JSON) so that a reader's tools (and the tests) can compare
    it with the library's result."""
    attrs = ""
    if key is not None:
        raw = None if isinstance(value, float) and not math.isfinite(value) else value
        attrs = f' data-key="{esc(key)}" data-value="{esc(json.dumps(raw))}"'
    return f'<td class="num"{attrs}>{esc(fmt(value))}</td>'


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str = "") -> str:
    """An HTML table: ``header`` cells are escaped; ``rows`` hold ready HTML (plain cells are
    wrapped in ``<td>``, cells already starting with ``<td`` are kept)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>"
        for row in rows)
    klass = f' class="{cls}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def figure(svg: str, title: str, caption: str, data: str = "") -> str:
    """A chart under its title, with its caption and, folded, the table of its numbers."""
    details = f"<details><summary>numbers</summary>{data}</details>" if data else ""
    return (f'<figure><div class="chart-title">{esc(title)}</div>{svg}'
            f"<figcaption>{esc(caption)}</figcaption>{details}</figure>")


def section(anchor: str, title: str, body: str) -> str:
    """A ``<section>`` with its ``<h2>`` title and an ``id`` to link to."""
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def page(title: str, body: str) -> str:
    """The whole self-contained document."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head>"
            f"<body><main>{body}</main></body></html>\n")
