"""Charts of the report as static inline SVG, drawn by matplotlib (imported here only, when a
report is built; the ``report`` extra installs it).

Why static SVG from matplotlib (docs/report.md has the comparison): the page needs no script at
all to show a chart, so it opens on an offline machine, in a mail client's preview or an
archive viewer, and prints as it shows; a chart is a small SVG with no script library inlined
(docs/report.md compares the sizes); text stays text (``svg.fonttype``
"none"), so the numbers can be searched and read by a screen reader, and every chart carries an
``aria-label`` and a data table beside it; matplotlib is a well-kept dependency the project's
notebooks already use.

>>> svg = bar_chart(["a", "b"], [3, 1], title="rows per value")
>>> svg.startswith("<svg") and 'role="img"' in svg and "<script" not in svg
True
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence

INPUT_COLOR = "#4c72b0"
RELEASE_COLOR = "#dd8452"


def pyplot():  # type: ignore[no-untyped-def]
    """``matplotlib.pyplot`` on the Agg backend, set up for the report's SVG (text as text)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "ldiv-report",
                         "font.size": 9, "font.family": "sans-serif"})
    return plt


def _svg(fig: object, label: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog; its natural size, shrunk by
    the page's style sheet to a narrow window), labelled for assistive technology."""
    plt = pyplot()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return text.replace(
        "<svg", f'<svg role="img" aria-label="{html.escape(label, quote=True)}" '
                'class="chart"', 1)


CHAR_IN = 0.075
"""Width of one label character at the charts' font size, in inches (fixed margins: a tight
bounding box costs matplotlib a second rendering of the figure)."""


def bar_chart(labels: Sequence[str], values: Sequence[float], *, title: str,
              color: str = INPUT_COLOR, plot_width: float = 3.2,
              xmax: float | None = None) -> str:
    """A horizontal bar chart (one bar per label, top to bottom in the given order) with each
    bar's value printed beside it, as an inline SVG element labelled ``title`` (the page shows
    the title, which names the unit, in HTML: the chart has no axis label). ``xmax``: the largest value the axis must hold (charts shown side by
    side share it, so that their bars compare)."""
    plt = pyplot()
    shown = [_short(s) for s in labels]
    left = 0.2 + CHAR_IN * max((len(s) for s in shown), default=1)
    height = 0.55 + 0.22 * max(len(labels), 1)
    fig = plt.figure(figsize=(left + plot_width + 0.2, height))
    ax = fig.add_axes((left / (left + plot_width + 0.2), 0.35 / height,
                       plot_width / (left + plot_width + 0.2), 1 - 0.45 / height))
    pos = list(range(len(labels)))[::-1]
    ax.barh(pos, values, color=color)
    ax.set_yticks(pos, shown)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    for y, v in zip(pos, values):  # plain texts: cheaper to lay out than bar_label's
        ax.text(v, y, f" {v:,.0f}" if float(v).is_integer() else f" {v:.3g}",
                va="center", fontsize=8)
    ax.xaxis.set_major_locator(plt.MaxNLocator(nbins=4, integer=True))
    ax.xaxis.set_major_formatter(lambda x, _: f"{x:,.0f}")
    ax.set_xlim(0, max([xmax or 0, *values, 1]) * 1.22)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, f"{title}: " + ", ".join(f"{a} {b:,}" for a, b in zip(labels, values)))


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
