"""The HTML report (``ldiv report``, :func:`report`): one self-contained page a data-protection
officer can read, archive and attach to a release decision.

The page is built from frequency sets (:mod:`~ldiv_polars.reporting.facts`), drawn as static
SVG (:mod:`~ldiv_polars.reporting.charts`, matplotlib: the ``report`` extra), and holds no
script and loads nothing: it opens offline. Sections: :mod:`~ldiv_polars.reporting.sections`;
plain-language model texts: :mod:`~ldiv_polars.reporting.texts`. See ``docs/report.md``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.core.inputs import TableLike, input_paths
from ldiv_polars.core.output import atomic_output, check_output
from ldiv_polars.core.validate import NullPolicy, require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import Model
from ldiv_polars.models.verdict import check_models, require_weights

REPORT_SUFFIXES = (".html", ".htm")
"""What a report's output file may be named."""


class HtmlReport(str):
    """The report's HTML document (a ``str``) with its verdict: ``passed`` (every requested
    model holds on ``verdict_on``: ``"release"`` when there is one, else ``"input"``) and
    ``verdicts`` (one dict per model, the ``models`` of ``ldiv check --json``);
    ``unjudged_rows``: the release's rows masked to ``*`` in every QI, suppressed records the
    verdicts leave out (0 without a release). A notebook
    shows the page inline, in a sandboxed frame so that its style sheet does not touch the
    notebook's."""

    passed: bool
    verdict_on: str
    verdicts: list[dict[str, object]]
    unjudged_rows: int

    def __new__(cls, text: str, *, verdict_on: str = "input",
                verdicts: Sequence[Any] = (), unjudged_rows: int = 0) -> HtmlReport:
        obj = super().__new__(cls, text)
        obj.verdict_on = verdict_on
        obj.unjudged_rows = unjudged_rows
        obj.verdicts = [{"key": v.key, **v.to_dict()} for v in verdicts]
        obj.passed = all(v.passed for v in verdicts)
        return obj

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self, quote=True)}" sandbox '
                'style="width:100%;height:640px;border:1px solid #d0d7de"></iframe>')


def report(
    data: TableLike, qi: str | Sequence[str], sensitive: str,
    models: Sequence[Model] | Model = (), *, release: TableLike | None = None,
    anonymization: Any = None, hierarchies: Mapping[str, Any] | None = None,
    out: str | Path | None = None, l: int = 2, nulls: NullPolicy = "error",
    separator: str | None = None, release_separator: str | None = None,
    title: str | None = None, command: str | None = None,
    progress: Callable[[str], None] | None = None,
    population_size: int | str | None = None, weight: str | None = None,
) -> HtmlReport:
    """The HTML report of ``data`` (a path, glob, LazyFrame or DataFrame) checked against
    ``models`` on the quasi-identifiers ``qi`` and the ``sensitive`` column.

    ``release``: the table as published (e.g. ``ldiv anonymize``'s output), reported beside
    the input (verdicts, risk, distributions, information loss). ``anonymization``: the
    :class:`~ldiv_polars.search.AnonymizationResult` that made it (adds the lattice section;
    without ``release`` its ``output`` is reported as the release, one more pass over the
    input); ``hierarchies`` give the lattice's heights. ``out``: also write the page there,
    atomically (``.html``/``.htm``; checked before any work, never over an input). ``l``: the
    ``l`` of the summary's ``recursive_c``. ``command``: the command line, shown on the page.
    ``progress`` is called with a short description of each stage. ``population_size`` (a
    number or region) and ``weight`` (sampling weights) add the population section; a
    model reading weights (``WeightedKAnonymity``) reads ``weight``, which it then needs.

    Raises the typed errors of :func:`~ldiv_polars.check` before the pass over the rows, and
    :class:`~ldiv_polars.errors.OutputPathError` /
    :class:`~ldiv_polars.errors.OutputOverwritesInputError` for ``out``.
    """
    from ldiv_polars.reporting.facts import table_facts

    _require_matplotlib()
    qi = [qi] if isinstance(qi, str) else list(qi)
    l = require_int_at_least("l", l, 1)
    models = check_models(models, [sensitive])
    require_weights(models, weight)
    sources = _checked_sources(data, release, anonymization, out, qi, sensitive, nulls=nulls,
                               release_separator=release_separator)
    say = progress or (lambda _: None)
    drawing = _warm_up_charts()
    say("reading the input")
    pop = dict(population_size=population_size, weight=weight, l=l, nulls=nulls)
    inp = table_facts(data, qi, sensitive, models, separator=separator, **pop)
    rel = _release_facts(release, anonymization, qi, sensitive, models, release_separator,
                         say, **pop)
    say("drawing the report")
    drawing.join()
    page = _html_report(inp, rel, anonymization, hierarchies, title=title, command=command)
    if out is not None:
        _write(page, out, sources)
    return page


def _html_report(inp: Any, rel: Any, anonymization: Any, hierarchies: Any, *,
                 title: str | None, command: str | None) -> HtmlReport:
    """The page with its verdict, judged on the release when there is one, else the input."""
    return HtmlReport(_page(inp, rel, anonymization, hierarchies, title=title, command=command),
                      verdict_on="input" if rel is None else "release",
                      verdicts=(rel if rel is not None else inp).verdicts,
                      unjudged_rows=0 if rel is None else rel.unjudged_rows)


def _write(page: str, out: str | Path, sources: list[Any]) -> None:
    """Write the page to ``out`` atomically, never over one of the input files ``sources``."""
    with atomic_output(out, inputs=sources, suffixes=REPORT_SUFFIXES) as f:
        f.path.write_text(page, encoding="utf-8")


def _checked_sources(data: TableLike, release: TableLike | None, anonymization: Any,
                     out: str | Path | None, qi: list[str], sensitive: str, *,
                     nulls: NullPolicy, release_separator: str | None) -> list[Any]:
    """The input files the report reads (``out`` may overwrite none), after checking ``out``
    and the release's columns, before any pass over the input's rows."""
    sources = [*input_paths(data), *(input_paths(release) if release is not None else ()),
               *getattr(anonymization, "sources", ())]
    if out is not None:
        check_output(out, inputs=sources, suffixes=REPORT_SUFFIXES)
    if release is not None:  # the release's columns are checked before the input's pass too
        FrequencySet.build(release, qi, sensitive, nulls=nulls, separator=release_separator,
                           require_sensitive=True)
    return sources


def _release_facts(release: TableLike | None, anonymization: Any, qi: list[str],
                   sensitive: str, models: list[Model], separator: str | None,
                   say: Callable[[str], None], **kw: Any) -> Any:
    """The facts of the release: the ``release`` table, else the anonymization's output (one
    more pass over the input), else None; its rows masked to ``*`` in every QI are
    suppressed records, which its verdicts leave out (``table_facts(suppressed=True)``)."""
    from ldiv_polars.reporting.facts import table_facts

    if release is not None:
        say("reading the release")
        return table_facts(release, qi, sensitive, models, separator=separator,
                           suppressed=True, **kw)
    if anonymization is not None and anonymization.output is not None:
        say("generalizing the input (the anonymization's output)")
        return dataclasses.replace(
            table_facts(anonymization.output, qi, sensitive, models, hash_files=False,
                        suppressed=True, **kw),
            source="the anonymization's output (not written)")
    return None


def _warm_up_charts() -> threading.Thread:
    """Import matplotlib in a thread while the engine reads the rows (the engine releases the
    interpreter, so the import overlaps the pass over the rows)."""
    from ldiv_polars.reporting.charts import pyplot

    thread = threading.Thread(target=pyplot, name="ldiv-report-charts", daemon=True)
    thread.start()
    return thread


def _require_matplotlib() -> None:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidParameterError(
            "the HTML report draws its charts with matplotlib, which is not installed: "
            "pip install 'ldiv_polars[report]'")


def _page(inp: Any, rel: Any, anonymization: Any, hierarchies: Mapping[str, Any] | None, *,
          title: str | None, command: str | None) -> str:
    from ldiv_polars import __version__
    from ldiv_polars.reporting import sections as S
    from ldiv_polars.reporting.facts import hierarchy_digest
    from ldiv_polars.reporting.markup import esc, page, section

    meta = {"engine": "polars (streaming group-by; the frequency set only is collected)",
            "library": f"ldiv_polars {__version__}",
            "generated (UTC)": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")}
    if command:
        meta["command"] = command
    title = title or f"Privacy report: {Path(inp.source).name if inp.files else inp.source}"
    digests = {q: hierarchy_digest(h) for q, h in (hierarchies or {}).items()}
    parts = [
        f"<h1>{esc(title)}</h1>",
        S.banner(inp, rel),
        S.checked(inp, rel, meta, digests),
        S.verdicts(inp, rel),
        S.model_texts(inp.models),
        S.risk(inp, rel),
        S.population(inp, rel),
        S.failing(inp, rel),
        S.distributions(inp, rel),
    ]
    if rel is not None:
        metrics = dict(getattr(anonymization, "metrics", None) or {})
        parts.append(S.information_loss(inp, rel, metrics))
    if anonymization is not None:
        heights = {q: h.height for q, h in (hierarchies or {}).items()}
        parts.append(section("anonymization", "Anonymization (lattice search)",
                             S.anonymization_table(anonymization, heights)))
    return page(title, "".join(parts))


__all__ = ["REPORT_SUFFIXES", "HtmlReport", "report"]
