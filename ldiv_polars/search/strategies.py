"""Globally optimal, exact lattice search: :func:`search_lattice` picks a strategy from the
models' monotonicity and the suppression limit, runs it, and reports what it found.

``flash`` (:mod:`~ldiv_polars.search.flash`; the predicate "node passes" is monotone)
    Predictive tagging along paths; the set of minimal passing nodes is exact. The optimum:
    with a monotone metric it is one of the minimal nodes; otherwise (suppression > 0 and a
    metric other than height) a best-first walk upwards from the minimal nodes, ordered by the
    metric's suppression-free lower bound, stops once the bound reaches the best exact value
    found (:func:`~ldiv_polars.search.bounded.best_first`).
``exhaustive`` (:mod:`~ldiv_polars.search.exhaustive`; default when the predicate is not
monotone)
    Every node that could be minimal or optimal is decided; minimal set and optimum are exact.
``bounded`` (:mod:`~ldiv_polars.search.bounded`; ``auto`` on large frequency sets, see
:func:`_auto`)
    The optimum only. A monotone predicate under a metric bounded from the levels: best-first
    from the bottom by the metric's lower bound, a popped node decided first by Flash's search
    of a path upwards from it. Otherwise: Flash (over the models, or over the suppression
    floors when the predicate is not monotone) and the exhaustive walk, both leaving out every
    node whose metric lower bound exceeds the best value found, a passing node below it or
    not. The
    optimum is exact, the minimal set is not computed (``minimal_complete=False`` in the
    result of ``anonymize``).
``anytime`` (:mod:`~ldiv_polars.search.anytime`; ``auto`` on lattices of more than
``TUNING.anytime_min_nodes`` nodes)
    The best node found within a budget and a lower bound of the optimum's value (``bound``,
    ``gap``); exact (gap 0) when the budget suffices. The lattice is not materialized.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import Model
from ldiv_polars.search.anytime import Budget, VirtualLattice, anytime_search
from ldiv_polars.search.bounded import best_first, optimum_among
from ldiv_polars.search.exhaustive import exhaustive
from ldiv_polars.search.flash import flash
from ldiv_polars.search.lattice import Lattice
from ldiv_polars.search.metrics import BOUND_WITHOUT_ROLLUP, MetricSuite
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.state import NodeRecord, Progress, SearchState
from ldiv_polars.search.suppression import predicate_monotone
from ldiv_polars.search.tuning import TUNING

__all__ = ["STRATEGIES", "NodeRecord", "Progress", "SearchOutcome", "search_lattice"]

STRATEGIES = ("auto", "flash", "exhaustive", "bounded", "anytime")
"""Names accepted as ``strategy=`` (``auto``: anytime on lattices of more than
``TUNING.anytime_min_nodes`` nodes, else bounded or flash when the predicate is monotone
(:func:`_auto`), else exhaustive)."""


@dataclass
class SearchOutcome:
    """What :func:`search_lattice` found, and how."""

    lattice: Lattice
    strategy: str
    monotone: bool
    reason: str
    """Why the predicate is (not) monotone."""
    checked: int
    evaluations: int
    rollups: int
    records: dict[int, NodeRecord]
    passing: np.ndarray
    """Boolean over nodes: the passing nodes decided (not every one for ``bounded``, nor for
    ``exhaustive`` when nodes were pruned by the bound)."""
    minimal: list[int] | None
    """The minimal passing nodes (None: not computed, ``bounded``)."""
    optimum: int | None
    metric: str
    limit_rows: int
    notes: list[str] = field(default_factory=list)
    metrics: MetricSuite | None = None
    """The search's metric tables (of the searched frequency set)."""
    bound: float | None = None
    """A lower bound of the optimum's value (``anytime``; None for the exact strategies, whose
    optimum is proven, and for ``kl``)."""
    gap: float | None = 0.0
    """``(value - bound) / value`` (0: proven optimal; None: no bound or no node found)."""


Found = tuple[np.ndarray, list[int] | None, int | None, list[str]]
"""``(passing, minimal, optimum, notes)`` of one strategy's run."""


def search_lattice(
    efs: EncodedFrequencySet, models: Sequence[Model], limit_rows: int, metric: str, *,
    strategy: str = "auto", progress: Progress | None = None, batch: int = 32,
    budget: Budget | float | None = None,
) -> SearchOutcome:
    """Search the lattice of ``efs``'s hierarchies for the minimal nodes where every model
    passes with at most ``limit_rows`` rows suppressed, and for the optimum under ``metric``
    (see the module docstring for the strategies). ``progress(decided, size)`` is called as
    nodes are decided; ``batch``: most nodes checked together; ``budget``: the anytime
    search's (seconds or a :class:`~ldiv_polars.search.anytime.Budget`; default
    ``TUNING.anytime_seconds`` when ``auto`` picks it).

    Raises :class:`~ldiv_polars.errors.InvalidParameterError` for an unknown strategy, or
    ``flash`` asked for a predicate that is not monotone.

    >>> import polars as pl
    >>> from ldiv_polars.core.frequency import FrequencySet
    >>> from ldiv_polars.hierarchy import Hierarchy
    >>> from ldiv_polars.models import KAnonymity
    >>> h = {"zip": Hierarchy([["130", "13*", "*"], ["131", "13*", "*"], ["140", "14*", "*"]],
    ...                       name="zip")}
    >>> fs = FrequencySet.build(pl.DataFrame({"zip": ["130", "131", "140", "140"]}), "zip", None)
    >>> out = search_lattice(EncodedFrequencySet.from_frame(fs.materialize(), h),
    ...                      [KAnonymity(2)], 0, "height")
    >>> out.strategy, [out.lattice.levels(n) for n in out.minimal], out.lattice.levels(out.optimum)
    ('flash', [(1,)], (1,))
    """
    if strategy not in STRATEGIES:
        raise InvalidParameterError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    auto = strategy == "auto"
    size = math.prod(h.height for h in efs.hierarchies)
    if strategy == "anytime" or (strategy == "auto" and size > TUNING.anytime_min_nodes):
        if budget is None and strategy == "auto":
            budget = TUNING.anytime_seconds
        return _by_anytime(efs, models, limit_rows, metric, Budget.of(budget), progress)
    strategy, monotone, reason = _lattice_strategy(strategy, models, limit_rows)
    if strategy == "flash" and auto:
        strategy = _auto(efs, limit_rows, metric)
    s = SearchState(efs, models, limit_rows, metric, progress, batch=max(int(batch), 1))
    passing, minimal, optimum, notes = _run(s, strategy, size)
    return SearchOutcome(
        lattice=s.lattice, strategy=strategy, monotone=monotone, reason=reason,
        checked=s.checked, evaluations=s.checker.evaluations, rollups=efs.rollups,
        records=s.records, passing=passing, minimal=minimal, optimum=optimum, metric=metric,
        limit_rows=limit_rows, notes=notes, metrics=s.metrics,
    )


def _lattice_strategy(strategy: str, models: Sequence[Model], limit_rows: int
                      ) -> tuple[str, bool, str]:
    """``(strategy, monotone, reason)``: ``auto`` resolved to Flash when the predicate is
    monotone, else exhaustive; raises :class:`InvalidParameterError` for ``flash`` on a
    predicate that is not monotone (``reason`` says why)."""
    monotone, reason = predicate_monotone(models, limit_rows > 0)
    if strategy == "auto":
        strategy = "flash" if monotone else "exhaustive"
    if strategy == "flash" and not monotone:
        raise InvalidParameterError(f"strategy 'flash' needs a monotone predicate; {reason}")
    return strategy, monotone, reason


def _run(s: SearchState, strategy: str, size: int) -> Found:
    """Run the exact ``strategy`` on ``s`` (a lattice of ``size`` nodes) with pinned hubs on
    large frequency sets (``efs.prime``), except the bounded search of a monotone predicate:
    without hubs, pinned or on demand (its few checks would not pay for them; the store's
    setting is restored after)."""
    efs = s.efs
    hubs = efs.lazy_hubs
    try:
        if strategy == "bounded" and _best_first(s):
            efs.lazy_hubs = False
        elif size >= TUNING.prime_min_nodes:
            efs.prime()  # (a no-op on small frequency sets)
        run = {"flash": _by_flash, "exhaustive": _by_exhaustive,
               "bounded": _by_bounded}[strategy]
        return run(s)
    finally:
        efs.lazy_hubs = hubs


def _auto(efs: EncodedFrequencySet, limit_rows: int, metric: str) -> str:
    """What ``auto`` runs for a monotone predicate: ``bounded`` on a frequency set of at least
    ``TUNING.bounded_min_rows`` rows when rows may be suppressed and the metric's lower bound
    comes from the levels alone (:data:`~ldiv_polars.search.metrics.BOUND_WITHOUT_ROLLUP`),
    else ``flash``. There the optimum needs a small part of Flash's checks (a popped node is
    decided by a path's few probes, its failure usually by a much smaller generalization),
    each a roll-up of a large source; what the caller loses is the set of minimal nodes
    (``strategy="flash"`` computes it). Without suppression Flash's minimal set holds the
    optimum of a metric monotone there; a bound that needs a roll-up would cost one per node
    pushed."""
    if limit_rows > 0 and metric in BOUND_WITHOUT_ROLLUP and \
            efs.base_rows >= TUNING.bounded_min_rows:
        return "bounded"
    return "flash"


def _by_anytime(efs: EncodedFrequencySet, models: Sequence[Model], limit_rows: int,
                metric: str, budget: Budget, progress: Progress | None) -> SearchOutcome:
    metrics = MetricSuite(efs)
    out = anytime_search(efs, models, limit_rows, metric, budget, metrics=metrics,
                         progress=progress)
    lat = VirtualLattice([h.height for h in efs.hierarchies])
    monotone, reason = predicate_monotone(models, limit_rows > 0)
    return SearchOutcome(
        lattice=lat, strategy="anytime", monotone=monotone, reason=reason,  # type: ignore[arg-type]
        checked=out.checked, evaluations=out.evaluations, rollups=efs.rollups, records={},
        passing=np.zeros(0, dtype=bool), minimal=None,
        optimum=None if out.best is None else lat.id_of(out.best), metric=metric,
        limit_rows=limit_rows, notes=out.notes, metrics=metrics,
        bound=out.bound if out.best is not None else None, gap=out.gap)


def _by_flash(s: SearchState) -> Found:
    flash(s)
    passing = s.tags == 1
    minimal = s.lattice.minimal_of(passing, upward=True)  # (Flash tags passing upwards)
    if s.metric_monotone:
        optimum = optimum_among(s, minimal)
        note = f"metric {s.metric!r} is monotone here: the optimum is a minimal node"
    else:
        optimum = best_first(s, minimal) if minimal else None
        note = (f"metric {s.metric!r} is not monotone with suppression: best-first from the "
                f"minimal nodes, pruned by its suppression-free lower bound")
    return passing, minimal, optimum, [note]


def _by_exhaustive(s: SearchState) -> Found:
    exhaustive(s)
    passing = s.tags == 1
    minimal = s.lattice.minimal_of(passing)
    cand = [int(i) for i in np.flatnonzero(passing)]
    optimum = optimum_among(s, cand) if cand else None
    notes = ["predicate not monotone: every node that could be minimal or optimal decided "
             "(zero-suppression passes tagged upwards only)"]
    if s.pruned:
        notes.append(f"{s.pruned} node(s) with a passing node below them and a metric lower "
                     f"bound beyond the optimum were left unchecked (neither minimal nor "
                     f"optimal)")
    if s.relaxed:
        notes.append("nodes whose suppression floors ("
                     + ", ".join(m.describe() for m in s.relaxed)
                     + ") exceed the limit were tagged failing with everything below them "
                     f"(Flash over the floors; {s.checker.floor_decided} node(s) decided by "
                     "their floors alone)")
    return passing, minimal, optimum, notes


def _best_first(s: SearchState) -> bool:
    """Whether the bounded search runs best-first (:func:`_by_bounded`): for a monotone
    predicate whose metric's bound comes from the levels alone. A bound that needs a roll-up
    (``aecs``, ``discernibility``) would cost one for every node pushed, most of the lattice
    on a table without suppression; the bound-pruned Flash learns it from its checks."""
    return s.monotone and s.metric in BOUND_WITHOUT_ROLLUP


def _by_bounded(s: SearchState) -> Found:
    """The optimum only. A monotone predicate under a metric bounded from the levels
    (:func:`_best_first`): best-first from the bottom, each popped node decided by Flash's
    path probes (:func:`~ldiv_polars.search.bounded.best_first`; it
    checks fewer nodes than the bound-pruned Flash below under most metrics: BENCHMARKS.md,
    "Lead, session 16: the bounded search's two halves").
    Otherwise: Flash (over the models when the predicate is monotone, else over the
    suppression floors), then the walk by height, both leaving out every node whose metric
    bound exceeds the best value found (:attr:`SearchState.within_bound`)."""
    notes = ["bounded: optimum exact by lower-bound pruning; minimal nodes not computed "
             "(strategy 'flash' or 'exhaustive' computes them)"]
    if _best_first(s):
        return s.tags == 1, None, best_first(s, [s.lattice.bottom], probe=True), notes
    s.within_bound = True
    if s.monotone:
        flash(s)
    exhaustive(s, minimal=False)
    passing = s.tags == 1
    beyond = s.mark_beyond()
    cand = [int(n) for n in np.flatnonzero(passing & ~beyond)
            if (int(n) in s.records and s.records[int(n)].checked) or s.zero[n]]
    optimum = optimum_among(s, cand) if cand else None
    if s.pruned:
        notes.append(f"{s.pruned} node(s) whose metric lower bound exceeds the best value "
                     f"found were left unchecked")
    return passing, None, optimum, notes
