"""The snapshot store (ARX's *History*): which rolled-up frequency sets are kept, and which one a
node is rolled up from.

Three kinds of snapshot are kept, all within a budget of rows (:func:`row_budget`):

- the **cache**: snapshots of checked nodes, kept when clearly smaller than their source
  (ARX's policy, ``TUNING.keep_ratio``), oldest evicted first;
- **pinned hubs** (:meth:`SnapshotStore.prime`): before a search of a large frequency set, each
  QI one level up (then at its higher levels) and every QI one level up;
- **on-demand hubs** (:meth:`SnapshotStore.hub`): the node with every QI at ``min(level, 1)``,
  made on its ``TUNING.hub_after``-th request.

:meth:`SnapshotStore.source` is the choice of a node's source: the smallest kept snapshot that
specializes the node (or the base), then its hub if that is smaller. Any source gives the same
roll-up; the choice only decides how many rows are read. The store never rolls up itself: the
caller passes the function that makes a hub or a pin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ldiv_polars.search.snapshot import Snapshot
from ldiv_polars.search.tuning import TUNING

_NO_SOURCE = np.iinfo(np.int64).max

MakeHub = Callable[[Snapshot, tuple[int, ...]], "Snapshot | None"]
"""``make(source, levels)``: the snapshot of ``levels`` rolled up from ``source``, with its codes
kept (a roll-up, counted by the caller), or None when the caller knows it would not be kept
(too many rows) without rolling it up."""


def row_budget(base_rows: int) -> int:
    """Most snapshot rows held by the cache, and by the hubs: ``TUNING.row_budget_factor``
    times the base's rows, at least ``TUNING.row_budget_min_rows``.

    >>> row_budget(10) == TUNING.row_budget_min_rows
    True
    """
    return max(TUNING.row_budget_factor * base_rows, TUNING.row_budget_min_rows)


class SnapshotStore:
    """The kept snapshots of one encoded frequency set of ``q`` QIs and ``base_rows`` rows.

    ``row_budget`` bounds the rows of the cache and, separately, of the hubs; ``lazy_hubs``
    off makes no hubs (neither pinned nor on demand): every roll-up then reads a cached
    snapshot or the base. ``forget(snapshot)`` is called for every snapshot evicted from the
    cache (to drop what was derived from it)."""

    def __init__(self, q: int, base_rows: int, cache_size: int | None = None,
                 forget: Callable[[Snapshot], None] | None = None) -> None:
        self.cache_size = max(int(TUNING.cache_size if cache_size is None else cache_size), 1)
        self.row_budget = row_budget(base_rows)
        self.lazy_hubs = True
        self._forget = forget
        self._cache_levels = np.zeros((self.cache_size, q), dtype=np.int16)
        self._cache_rows = np.zeros(self.cache_size, dtype=np.int64)
        self._pin_levels = np.zeros((0, q), dtype=np.int16)
        self._pin_rows = np.zeros(0, dtype=np.int64)
        self.release()

    def release(self) -> None:
        """Drop every kept snapshot (memory); sources are then the base only."""
        self.cached: dict[tuple[int, ...], Snapshot] = {}
        self._cache_keys: list[tuple[int, ...]] = []
        self._cached_rows = 0
        self.pinned: list[Snapshot] = []
        self._pin_levels = self._pin_levels[:0]
        self._pin_rows = self._pin_rows[:0]
        self.hubs: dict[tuple[int, ...], Snapshot | None] = {}
        """Hub levels -> the hub, or None when it was made and not kept."""
        self._hub_requests: dict[tuple[int, ...], int] = {}
        self._hub_rows = 0

    # --- the choice of a source ---------------------------------------------------------------

    def source(self, levels: tuple[int, ...], base: Snapshot, make: MakeHub) -> Snapshot:
        """The source of the roll-up of ``levels``: :meth:`source_for`, or the node's hub
        (:meth:`hub`) when that source has ``TUNING.hub_min_rows`` to ``TUNING.hub_max_rows``
        rows and the hub is smaller."""
        src = self.source_for(levels, base)
        if self.lazy_hubs and TUNING.hub_min_rows <= src.rows < TUNING.hub_max_rows:
            hub = self.hub(levels, src, make)
            if hub is not None and hub.rows < src.rows:
                src = hub
        return src

    def source_for(self, levels: Sequence[int], base: Snapshot) -> Snapshot:
        """The smallest cached or pinned snapshot that specializes ``levels`` (every level at
        most the node's), or ``base``."""
        best = base
        target = np.asarray(levels, dtype=np.int16)
        if self.pinned:  # (in one array operation: ~20 pins are tested for every roll-up)
            ok = (self._pin_levels <= target).all(axis=1)
            rows = np.where(ok, self._pin_rows, _NO_SOURCE)
            i = int(rows.argmin())
            if rows[i] < best.rows:
                best = self.pinned[i]
        k = len(self._cache_keys)
        if not k:
            return best
        ok = (self._cache_levels[:k] <= target).all(axis=1)
        rows = np.where(ok, self._cache_rows[:k], _NO_SOURCE)
        i = int(rows.argmin())
        return self.cached[self._cache_keys[i]] if rows[i] < best.rows else best

    def hub(self, levels: tuple[int, ...], src: Snapshot, make: MakeHub) -> Snapshot | None:
        """The hub of ``levels``: the node with every QI at ``min(level, 1)`` (the most
        generalized node of that form below ``levels``, hence the smallest), made from ``src``
        on its ``TUNING.hub_after``-th request and kept when it has at most
        ``TUNING.keep_ratio`` of ``src``'s rows, within the row budget. None when there is no
        such hub (yet): the node is its own hub, the source is it, or the source does not
        specialize it."""
        hub = tuple(min(v, 1) for v in levels)
        if hub == levels or hub == src.levels:
            return None
        if hub in self.hubs:
            return self.hubs[hub]
        if any(a > b for a, b in zip(src.levels, hub)) or self._hub_rows >= self.row_budget:
            return None
        seen = self._hub_requests.get(hub, 0) + 1
        self._hub_requests[hub] = seen
        if seen < TUNING.hub_after:
            return None
        snap = make(src, hub)
        keep = snap is not None and snap.rows <= TUNING.keep_ratio * src.rows
        self.hubs[hub] = snap if keep else None
        if keep:
            self._hub_rows += snap.rows
        return self.hubs[hub]

    # --- what is kept -------------------------------------------------------------------------

    def remember(self, snap: Snapshot, src: Snapshot) -> None:
        """Cache ``snap`` (rolled up from ``src``) when it has at most ``TUNING.keep_ratio`` of
        ``src``'s rows and fits the row budget, evicting the oldest snapshots as needed."""
        if snap.rows > TUNING.keep_ratio * src.rows or snap.levels in self.cached:
            return
        if snap.rows > self.row_budget:
            return
        while self._cache_keys and (len(self.cached) >= self.cache_size
                                    or self._cached_rows + snap.rows > self.row_budget):
            self._evict_oldest()
        i = len(self._cache_keys)
        self._cache_keys.append(snap.levels)
        self.cached[snap.levels] = snap
        self._cache_levels[i] = snap.levels
        self._cache_rows[i] = snap.rows
        self._cached_rows += snap.rows

    def _evict_oldest(self) -> None:
        old = self._cache_keys.pop(0)
        gone = self.cached.pop(old)
        self._cached_rows -= gone.rows
        if self._forget is not None:
            self._forget(gone)
        # keep the arrays aligned with the key list
        self._cache_levels[:-1] = self._cache_levels[1:].copy()
        self._cache_rows[:-1] = self._cache_rows[1:].copy()

    def pin(self, snap: Snapshot) -> None:
        """Make ``snap`` a source of every later roll-up it specializes (until
        :meth:`release`)."""
        self.pinned.append(snap)
        self._pin_levels = np.vstack([self._pin_levels,
                                      np.asarray(snap.levels, dtype=np.int16)[None]])
        self._pin_rows = np.append(self._pin_rows, snap.rows)

    def prime(self, base_levels: tuple[int, ...], base_rows: int, heights: Sequence[int],
              make: Callable[[tuple[int, ...]], Snapshot], min_rows: int | None = None) -> int:
        """Pin hub snapshots when the base (of ``base_rows`` rows at ``base_levels``) has at
        least ``min_rows`` rows (default
        ``TUNING.prime_min_rows``) and hubs are on: for each QI the node with that QI one level
        up (the others raw), the node with every QI one level up, then each QI at its higher
        levels, while the pinned rows stay within ``TUNING.pin_budget`` times the row budget
        (the first-level ones are always made). ``make(levels)`` rolls a node up (from the best
        source so far, pins included). A hub is pinned when it has at most
        ``TUNING.keep_ratio`` of the base's rows. Returns the number of roll-ups made."""
        limit = TUNING.prime_min_rows if min_rows is None else min_rows
        if base_rows < limit or not heights or not self.lazy_hubs:
            return 0
        done = 0
        pinned_rows = 0
        for lv in _prime_levels(heights):
            if lv == base_levels:
                continue
            if max(lv) > 1 and pinned_rows >= TUNING.pin_budget * self.row_budget:
                break
            snap = make(lv)
            done += 1
            if snap.rows <= TUNING.keep_ratio * base_rows:
                self.pin(snap)
                pinned_rows += snap.rows
            self.hubs[lv] = self.pinned[-1] if self.pinned and self.pinned[-1] is snap \
                else None
        return done


def _prime_levels(heights: Sequence[int]) -> list[tuple[int, ...]]:
    """The nodes :meth:`SnapshotStore.prime` considers, in order: level by level, each QI alone
    at that level, and after the first level every QI at level 1.

    >>> _prime_levels([2, 3])
    [(1, 0), (0, 1), (1, 1), (0, 2)]
    """
    cands = []
    for level in range(1, max(heights)):
        for i, h in enumerate(heights):
            if level < h:
                lv = [0] * len(heights)
                lv[i] = level
                cands.append(tuple(lv))
        if level == 1:
            cands.append(tuple(min(1, h - 1) for h in heights))
    return list(dict.fromkeys(cands))
