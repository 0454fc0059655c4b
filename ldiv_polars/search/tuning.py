"""The lattice search's tuning knobs, in one place: :class:`SearchTuning` and its process-wide
instance :data:`TUNING`, which every part of the search reads when it decides.

No knob changes a result: every roll-up path, sort and cache policy they choose between gives
the same arrays, the same verdicts and the same optimum (tests force each branch by setting
knobs to extremes), except ``anytime_min_nodes`` and ``anytime_seconds``: past them
``strategy="auto"`` runs the anytime search, whose node may fall short of the optimum (it says
by how much at most); and ``bounded_min_rows``: from it on ``auto`` may run the bounded search,
which finds the same optimum but not the set of minimal nodes. They trade time against
memory, and one cost against another; each field says what it trades. The measurements behind
the defaults are in ``BENCHMARKS.md`` (lattice search) and ``docs/anonymize.md``.

Tests and experiments change a knob on :data:`TUNING` (``monkeypatch.setattr(TUNING, "hub_after",
1)``) or for a block with :func:`tuned`:

>>> with tuned(hub_after=1):
...     TUNING.hub_after
1
>>> TUNING.hub_after
3
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields

from ldiv_polars.errors import InvalidParameterError


@dataclass(slots=True)
class SearchTuning:
    """The thresholds the search's machinery chooses by (defaults measured on 2 cores).

    Grouped by the part of the search that reads them: the snapshot store
    (:mod:`~ldiv_polars.search.store`), the encoding of the base
    (:mod:`~ldiv_polars.search.encoding`), the key builders (:mod:`~ldiv_polars.search.keys`),
    the roll-up paths (:mod:`~ldiv_polars.search.rolling`), snapshots
    (:mod:`~ldiv_polars.search.snapshot`), grouping (:mod:`~ldiv_polars.search.grouping`),
    counting (:mod:`~ldiv_polars.search.counting`) and the strategies
    (:mod:`~ldiv_polars.search.flash`)."""

    # --- the snapshot store -------------------------------------------------------------------
    cache_size: int = 2000
    """Most snapshots in the cache (the row budget below usually binds first)."""
    keep_ratio: float = 0.8
    """A snapshot is cached, and a hub kept, only when it has at most this share of its
    source's rows (ARX's policy): a snapshot barely smaller than its source saves its later
    roll-ups little for the memory it holds."""
    row_budget_factor: int = 2
    row_budget_min_rows: int = 1 << 22
    """The cache holds at most ``max(row_budget_factor x base rows, row_budget_min_rows)``
    snapshot rows, and the hubs as many: more memory buys smaller sources."""
    hub_min_rows: int = 4096
    hub_max_rows: int = 1 << 20
    """Roll-ups from a source of ``hub_min_rows`` to ``hub_max_rows`` rows go through a hub:
    below, the source is cheap to read anyway; from millions of rows a hub is itself a wide
    roll-up (a sort) that its few uses do not pay back."""
    hub_after: int = 3
    """A hub is made on this request for it: a hub asked for once costs a roll-up and saves
    none."""
    pin_budget: int = 2
    """:meth:`~ldiv_polars.search.store.SnapshotStore.prime` pins hubs above the first level
    while the pinned rows stay within this many times the row budget (the first-level pins
    are always made)."""
    prime_min_rows: int = 50_000
    """Bases of fewer rows get no pinned hubs: their roll-ups are cheap from the base."""
    prime_min_nodes: int = 2000
    """Lattices of fewer nodes get no pinned hubs: too few roll-ups to pay back their making."""

    # --- the encoded base ---------------------------------------------------------------------
    base_classes_max_rows: int = 1 << 20
    """Frequency sets with a sensitive column and at most this many rows are put in class
    order once at encoding (one roll-up), so that wide roll-ups from the base can go through
    its classes; larger ones would hold a second copy of the base while sorting."""

    # --- key builders: grouped codes and lookups ----------------------------------------------
    group_span: int = 4096
    """Largest product of source cardinalities of one group of QIs in a grouped code (its
    lookup has that many int64 entries): larger groups mean fewer gathers per row, larger
    lookups to build and keep in cache."""
    group_span_wide: int = 1 << 15
    group_wide_min_rows: int = 1 << 16
    """Sources of at least ``group_wide_min_rows`` rows group QIs up to ``group_span_wide``:
    on many rows one gather less per row pays for the larger lookups' builds."""
    group_min_rows: int = 2048
    group_max_rows: int = 1 << 23
    """Sources with per-row codes get grouped codes on their second use when they have
    ``group_min_rows`` to ``group_max_rows`` rows: below, the grouping costs more than it
    saves; above, the grouped codes would add memory to a large base."""
    group_keyed_max_rows: int = 1 << 40
    """With the compiled kernel, snapshots whose codes are implicit in their class keys get
    grouped (uint16) codes up to this many rows: a few bytes a row, where decoding per-QI
    codes would hold 4 bytes a QI a row."""
    group_keyed_min_rows: int = 4096
    """...and from this many rows: a smaller one reads its per-QI codes (decoded from the class
    keys once, kept) with a lookup per QI, where grouped codes would cost a lookup per group
    built over every code combination of the source's levels (up to ``group_span`` entries,
    mostly for one roll-up: the roll-ups of small searches, ~10-15% of their time)."""
    group_intp_rows: int = 1 << 22
    """Grouped codes are intp up to this many rows, int32 beyond: half the memory for an
    index cast on each gather."""
    group_luts_max_bytes: int = 16 << 20
    """Most bytes of QI-group lookups kept for reuse: most are used by one roll-up, and a
    larger store only adds fresh memory to page in."""
    digit_tables_max: int = 4096
    """Most per-QI digit lookups (level-a code -> level-b code x place) kept for reuse."""

    # --- roll-up paths ------------------------------------------------------------------------
    classes_sort_max_rows: int = 1 << 16
    """A wide roll-up goes through the source's classes when their keys can be counted, or
    sorted if there are at most this many classes; beyond, the full keys are grouped."""
    batch_cells: int = 1 << 20
    """Most (nodes x source rows) key cells built at once by a batched roll-up (8 bytes
    each): larger batches pay numpy's per-call cost fewer times, for more memory."""

    # --- snapshots ----------------------------------------------------------------------------
    weights_min_rows: int = 1 << 16
    weights_max_rows: int = 1 << 23
    """Sources of ``weights_min_rows`` to ``weights_max_rows`` rows keep their counts
    converted once (float64 weights for numpy, int32 for the kernel): below, converting per
    roll-up is cheaper than keeping; above, the copy would hold too much memory."""

    # --- grouping of integer keys -------------------------------------------------------------
    sort_polars_min_rows: int = 1 << 12
    """Keys of at least this many rows are sorted by Polars' multithreaded sort; fewer by
    numpy (no call overhead)."""
    presorted_stride: int = 64
    """Row distance of the sample that tests keys for being nearly sorted."""
    ordered_sort_min_rows: int = 1 << 16
    ordered_sort_max_rows: int = 1 << 22
    """Roll-ups of this many rows from a source in key order are sorted by numpy's timsort
    (merging runs) whatever the sample says; fewer rows are cheaper to count."""
    count_rows_factor: int = 16
    count_min_cells: int = 1 << 12
    count_max_cells: int = 1 << 26
    """Key spans up to ``count_rows_factor x rows`` (at least ``count_min_cells``, at most
    ``count_max_cells``) are densified by counting (a presence array over the span, O(rows +
    span)) rather than by one sort (O(rows log rows)); the cap bounds the span's memory (5
    bytes a cell)."""
    bincount_rows_factor: int = 4
    bincount_min_cells: int = 1 << 10
    bincount_max_cells: int = 1 << 25
    """Key spans up to ``bincount_rows_factor x rows`` (at least ``bincount_min_cells``, at
    most ``bincount_max_cells``) are summed by numpy's weighted ``bincount`` (8 bytes a cell,
    every cell touched) rather than densified first."""
    presorted_count_factor: int = 2
    """Nearly sorted keys of a span above this many times their rows are sorted (near-linear,
    little fresh memory) rather than counted."""
    pack_chunk: int = 1 << 20
    """Rows per chunk of the row indices packed beside sorted keys and of the gathers by
    them: bounds those temporaries."""
    inplace_sort_min_rows: int = 1 << 24
    """Keys given away of at least this many rows are sorted by numpy in their own buffer (no
    copy of the rows' size, ~3x the time of Polars' sort, which makes one)."""

    # --- counting (the compiled kernel and its numpy twin) ------------------------------------
    kernel_count_cells: int = 1 << 22
    """With the kernel, key spans up to this many cells are counted whatever the source's
    rows (its cost is O(rows + span / 64)); numpy counts only spans within its bincount
    limit and sorts the keys beyond."""
    radix_max_rows: int = 1 << 22
    """With the kernel, roll-ups of a key span too wide to count from sources of at most this
    many rows are grouped by its radix sort of the keys packed with their weights
    (:func:`~ldiv_polars.search.counting.lookup_sort_sum`, two copies of 8 bytes a row held
    while it runs); larger sources, or keys and weights too wide to pack, are sorted as
    :func:`~ldiv_polars.search.grouping.group_sum` does."""
    window_cells: int = 1 << 25
    window_max_passes: int = 16
    window_min_rows: int = 1 << 20
    """Sources of at least ``window_min_rows`` rows have wider key spans counted window by
    window (one pass over the rows per window of ``window_cells``, up to
    ``window_max_passes``) rather than sorted: a pass per window against a sort that holds the
    keys twice. Smaller sources sort (a window would be mostly untouched pages)."""
    scratch_max_cells: int = 1 << 22
    """Key spans up to this many cells are counted into a per-thread array kept between
    roll-ups (no fresh pages per roll-up); larger ones into a fresh array."""
    flag_max_cells: int = 1 << 22
    """With the kernel, whole key spans up to this many cells (and at most
    ``scratch_max_cells``) are counted with a kept flag byte per cell: each counted cell
    flagged by a plain store, the flags gathered into the bitmap at the end, rather than a
    read-modify-write of the bitmap per row (the kernel also keeps the bitmap from 8 cells a
    row: the gather reads every flag). 0: never."""
    key_chunk: int = 1 << 16
    chunked_key_rows: int = 1 << 16
    """numpy builds the keys of sources of at least ``chunked_key_rows`` rows in chunks of
    ``key_chunk`` rows: the temporaries stay in cache, none of the rows' size is made."""

    # --- strategies ---------------------------------------------------------------------------
    border_quantile: float = 0.1
    """Flash probes a path first at the node whose score reaches this quantile of the
    scores of the first passing nodes found so far (negative: plain binary search). Only the
    number of checks depends on it, never a tag."""
    anytime_min_nodes: int = 2_000_000
    """``strategy="auto"`` runs the anytime search (:mod:`~ldiv_polars.search.anytime`) on
    lattices of more nodes than this (the exact strategies hold a node array and tags per
    node, and their checks grow with the lattice); it may return a node short of the optimum,
    with its gap."""
    anytime_seconds: float = 60.0
    """The anytime search's time budget when ``auto`` picks it and none was given."""
    bounded_min_rows: int = 1 << 17
    """``strategy="auto"`` runs the bounded search (the optimum only, no minimal set) rather
    than Flash on frequency sets of at least this many rows when the predicate is monotone,
    rows may be suppressed and the metric's lower bound needs no roll-up: there Flash's
    minimal set costs several times the optimum's checks, each a roll-up of a large source
    (BENCHMARKS.md, "The 1M search, session 16")."""


TUNING = SearchTuning()
"""The tuning every part of the search reads (one per process)."""


@contextmanager
def tuned(**changes: object) -> Iterator[SearchTuning]:
    """Set fields of :data:`TUNING` inside the ``with`` block, restore them after (not
    thread-safe). An unknown field is an :class:`~ldiv_polars.errors.InvalidParameterError`."""
    names = {f.name for f in fields(SearchTuning)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise InvalidParameterError(f"unknown search tuning field(s): {', '.join(unknown)}")
    before = {k: getattr(TUNING, k) for k in changes}
    try:
        for k, v in changes.items():
            setattr(TUNING, k, v)
        yield TUNING
    finally:
        for k, v in before.items():
            setattr(TUNING, k, v)
