"""Roll-ups of an integer-encoded frequency set (ARX's snapshot idea, in numpy).

The frequency set ``(qi..., s..., n)`` is built once by the engine (the only pass over the
rows) and encoded once: every quasi-identifier value becomes the index of its raw value in the
hierarchy, every distinct sensitive tuple an integer. A lattice node is then evaluated by
*rolling up* a snapshot (the encoded frequency set of a more specific node, possibly the base)
with numpy lookup arrays (level-a code -> level-b code), a mixed-radix class key and
``np.unique``/``np.bincount`` — never by rescanning rows. Snapshots of checked nodes are cached
and the smallest cached specialization of a node is the source of its roll-up. The node data
types live in :mod:`ldiv_polars.search.snapshot`, the key-grouping primitives in
:mod:`ldiv_polars.search.grouping`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy, HierarchyValueMissingError
from ldiv_polars.search import counting
from ldiv_polars.search.grouping import (
    bincount_limit,
    count_limit,
    dense_rank,
    group_keys,
    group_sum,
    run_starts,
    run_sums,
)
from ldiv_polars.search.snapshot import (
    ClassCodes,
    Rolled,
    Snapshot,
    places,
    row_ids,
    zero_ids,
)

CLASS = "__ldiv_class"
"""The single class-key column of a rolled-up frequency set handed to the models."""

_KEY_LIMIT = 2**62
_NO_SOURCE = np.iinfo(np.int64).max
HUB_MIN_ROWS = 4096
"""Roll-ups from a source of at least this many rows go through a hub snapshot."""
HUB_MAX_ROWS = 1 << 20
"""...and of fewer than this many rows: from millions of rows a hub is a wide roll-up (one
sort of the source's keys, 0.2 s at 3M rows) that the few roll-ups it serves do not pay back
(measured on the 10M-row search: 0.4-0.6 s slower with them)."""
HUB_AFTER = 3
"""A hub is made on this request for it (not on a first one, which it would not pay back)."""
SORT_MAX_ROWS = 1 << 16
"""Class keys of a wider span than counting handles are sorted only up to this many."""
GROUP_LUTS_MAX_BYTES = 16 << 20
"""Most bytes of QI-group lookups kept for reuse (:meth:`EncodedFrequencySet._group_lut`; most
are used by one roll-up: a larger store only adds fresh memory to page in, 1M-row sample: 98 MB
of lookups, 112K page faults in the search against 88K within 16 MB)."""
GROUP_SPAN = 4096
"""Largest product of source cardinalities of one group of QIs in a grouped key (the group's
digit lookup has this many int64 entries at most)..."""
GROUP_SPAN_WIDE = 1 << 15
"""...or this many for a source of at least ``GROUP_WIDE_MIN_ROWS`` rows: fewer, larger
lookups (each built once per source and target levels, then reused), one gather less per row
for most keys (1M-row Adult sample, sources of 100-200K rows: search 1.33 -> 1.16 s; on
Adult's 30K rows the larger lookups' builds cost more than they save: 24 -> 28 ms)."""
GROUP_WIDE_MIN_ROWS = 1 << 16
GROUP_MIN_ROWS = 2048
GROUP_MAX_ROWS = 1 << 23
"""Sources of this many rows (between the two) used a second time get grouped codes (see
:meth:`EncodedFrequencySet._grouped_codes`)."""
GROUP_KEYED_MAX_ROWS = 1 << 40
"""...and, with the compiled kernel, snapshots of any size whose codes are implicit in their
class keys: their grouped codes are uint16, a few bytes a row, where the per-QI codes decoded
instead would be 4 bytes a QI (298 MB on a 12M-row snapshot of the 100M-row table)."""
GROUP_INTP_ROWS = 1 << 22
"""Grouped codes are intp up to this many rows, int32 beyond (half the memory; numpy's fancy
indexing takes int32 indices without the cast that ``np.take`` makes)."""
BASE_CLASSES_MAX_ROWS = 1 << 20
"""Frequency sets (with a sensitive column) up to this many rows are put in class order once
at encoding, so that their roll-ups can go through the classes."""
PIN_BUDGET = 2
""":meth:`EncodedFrequencySet.prime` pins hubs above the first level while the pinned rows stay
within this many times the row budget (the 1M-row Adult sample's 17 pins hold 2.8M rows, within
8M; a base of millions of rows keeps mostly the first-level pins, as before)."""
BATCH_CELLS = 1 << 20
"""Most (nodes x source rows) key cells built at once by a batched roll-up (8 MB of keys)."""

def _row_budget(base_rows: int) -> int:
    """Most frequency-set rows held by the snapshot cache, and by the hubs: twice the base's
    (its memory stays a small multiple of the base's), at least 4M rows (~100-180 MB)."""
    return max(2 * base_rows, 1 << 22)


class EncodedFrequencySet:
    """A materialized frequency set encoded against the QI hierarchies.

    Raises :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` (naming up to five
    values) when a QI value is not a raw value of its hierarchy.
    """

    def __init__(self, fs: FrequencySet, hierarchies: Mapping[str, Hierarchy],
                 *, cache_size: int = 2000, encoded: bool = False,
                 arrays: tuple[np.ndarray, np.ndarray] | None = None,
                 sensitive_ids: tuple[np.ndarray, pl.DataFrame] | None = None) -> None:
        """``encoded``: the QI columns of ``fs`` already hold the (validated, non-negative)
        index of each value among the hierarchy's raw values (see
        :func:`ldiv_polars.search.anonymize`, which encodes before grouping). ``arrays``:
        ``(codes, n)``, a frequency set already encoded, used as it is (``fs`` then only names
        the columns): ``codes`` is either a ``(q, rows)`` int32 array of such indices or, for
        a QI-only frequency set, the ``(rows,)`` int64 mixed-radix keys of those indices
        (first QI most significant, each QI's radix its number of raw values; rows in any
        order); ``n`` the int64 counts. Keys are kept as they are, the per-QI codes decoded
        only if a roll-up asks for them (most read grouped codes, computed from the keys).
        ``sensitive_ids``: with ``arrays`` of a frequency set with a sensitive column (and
        codes), each row's sensitive id (int32) and the table of the distinct sensitive
        tuples in id order."""
        self.qi = tuple(fs.qi)
        self.sensitive = tuple(fs.sensitive)
        missing = [q for q in self.qi if q not in hierarchies]
        if missing:
            raise InvalidParameterError(
                f"no hierarchy for quasi-identifier(s) {', '.join(map(repr, missing))}"
            )
        self.hierarchies = [hierarchies[q] for q in self.qi]
        keyed: np.ndarray | None = None
        if arrays is not None:
            if bool(self.sensitive) != (sensitive_ids is not None):
                raise InvalidParameterError(
                    "arrays= of a frequency set with a sensitive column needs sensitive_ids=")
            codes, counts = arrays
            if codes.ndim == 1:
                if sensitive_ids is not None:
                    raise InvalidParameterError(
                        "keys (one row per class) take no sensitive ids: pass codes")
                keyed = codes
                codes = None
            df = pl.DataFrame()
            self.total = int(counts.sum())
            self.base_rows = int(counts.shape[0])
        else:
            df = fs.frame.collect() if isinstance(fs.frame, pl.LazyFrame) else fs.frame
            self.total = int(df.get_column(fs.count).sum()) if df.height else 0
            self.base_rows = df.height
            codes = np.empty((len(self.qi), df.height), dtype=np.int32)
            counts = (df.get_column(fs.count).to_numpy().astype(np.int64) if df.height
                      else np.zeros(0, np.int64))
        pending = zip(self.qi, self.hierarchies) if arrays is None else ()
        for i, (q, h) in enumerate(pending):
            if encoded:
                codes[i] = df.get_column(q).cast(pl.Int32).to_numpy()
                continue
            col = df.get_column(q).cast(pl.String)
            known = h.column(0)
            bad = col.filter(~col.is_in(known.implode()) | col.is_null()).unique().sort()
            if bad.len():
                shown = bad.head(5).fill_null("<null>").to_list()
                raise HierarchyValueMissingError(q, shown, bad.len())
            codes[i] = col.replace_strict(
                known, pl.arange(0, known.len(), eager=True), return_dtype=pl.Int32
            ).to_numpy()
        if sensitive_ids is not None:
            sid, sdf = sensitive_ids
            self.sensitive_table = sdf
            self._sensitive_cols = [sdf.get_column(c) for c in self.sensitive]
        elif self.sensitive:
            sdf = df.select(self.sensitive).unique(maintain_order=True)
            sid = (
                df.select(self.sensitive)
                .with_row_index("__row")
                .join(sdf.with_row_index("__s"), on=list(self.sensitive), how="left",
                      nulls_equal=True)
                .sort("__row")
                .get_column("__s")
                .to_numpy()
                .astype(np.int32)
            )
            self.sensitive_table = sdf
            self._sensitive_cols = [sdf.get_column(c) for c in self.sensitive]
        else:
            sid = np.zeros(self.base_rows, dtype=np.int32)
            self.sensitive_table = pl.DataFrame()
        self.n_sensitive = max(int(self.sensitive_table.height), 1)
        self.base = Snapshot(tuple(0 for _ in self.qi), codes, sid, counts)
        # per QI, per level: raw index -> group code; number of groups; labels
        self.level_maps = [[m for m, _ in h.level_codes()] for h in self.hierarchies]
        self.level_labels = [[lab for _, lab in h.level_codes()] for h in self.hierarchies]
        self.cards = [[len(lab) for lab in labs] for labs in self.level_labels]
        self.base_ordered = False
        """Whether the base's rows are in key order (as every roll-up's are): its roll-ups then
        sort their keys by merging runs (see :func:`~ldiv_polars.search.grouping.group_sum`)."""
        if keyed is not None:
            self.base_ordered = bool((keyed[1:] >= keyed[:-1]).all())
            raw = [c[0] for c in self.cards]
            base_codes = ClassCodes(keyed, places(raw), raw)
            if keyed.shape[0] <= GROUP_MAX_ROWS:
                # the base's codes implicit in its keys (every row a class): its roll-ups read
                # grouped codes made from the keys, per-QI codes are decoded on demand
                self.base = Snapshot(self.base.levels, None, sid, counts,
                                     classes=(base_codes, None))
            else:
                # too large for grouped codes, its roll-ups read per-QI codes: decoded once
                # here, the keys not kept beside them
                self.base = Snapshot(self.base.levels, base_codes.full().T, sid, counts)
            del base_codes, keyed
        # per QI, per level: one raw index representing each group (to build a->b maps)
        self._rep = []
        for maps in self.level_maps:
            reps = []
            for m in maps:
                first = np.full(int(m.max()) + 1, -1, dtype=np.int64)
                # first raw index of each group (reverse order so the smallest index wins)
                first[m[::-1]] = np.arange(m.shape[0] - 1, -1, -1)
                reps.append(first)
            self._rep.append(reps)
        self._up: dict[tuple[int, int, int], np.ndarray] = {}
        self._scaled_cache: dict[tuple[int, int, int, int], np.ndarray] = {}
        self._group_luts: dict[tuple[object, ...], np.ndarray] = {}
        self._group_lut_bytes = 0
        self._grouped: dict[int, tuple[Snapshot, int, list[tuple[int, ...]],
                                       list[np.ndarray]]] = {}
        """id(source) -> (source, roll-ups from it, QI groups, grouped codes)."""
        self._cache: dict[tuple[int, ...], Snapshot] = {}
        self._cache_keys: list[tuple[int, ...]] = []
        self.cache_size = max(int(cache_size), 1)
        self._cache_levels = np.zeros((self.cache_size, len(self.qi)), dtype=np.int16)
        self._cache_rows = np.zeros(self.cache_size, dtype=np.int64)
        self.codes_only = False
        self._pinned: list[Snapshot] = []
        self._pin_levels = np.zeros((0, len(self.qi)), dtype=np.int16)
        self._pin_rows = np.zeros(0, dtype=np.int64)
        self.lazy_hubs = True
        """Make hub snapshots: those :meth:`prime` pins and the on-demand ones (see
        :meth:`_hub`). Off, every roll-up reads a cached snapshot or the base."""
        self._hubs: dict[tuple[int, ...], Snapshot | None] = {}
        self._hub_requests: dict[tuple[int, ...], int] = {}
        self._hub_rows = 0
        self._cached_rows = 0
        self.row_budget = _row_budget(self.base_rows)
        """Most frequency-set rows held by the snapshot cache (bounds its memory)."""
        self.known_raw_counts: list[np.ndarray] | None = None
        """Per QI, the rows of each raw value, when counted by the frequency set's builder
        or already summed by :meth:`raw_counts`."""
        self.rollups = 0
        self.base_sorted = self.n_sensitive > 1 and 0 < self.base_rows <= BASE_CLASSES_MAX_ROWS
        """Whether the base was put in class order at encoding (counted as one roll-up)."""
        if self.base_sorted:
            # the base in class order, with its class structure: roll-ups of wide key spaces
            # from it then go through its classes (counted as one roll-up)
            self.base = self._roll(self.base, self.base.levels, cache=False,
                                   keep_codes=True).snapshot

    def without_sensitive(self) -> EncodedFrequencySet:
        """The same frequency set with the sensitive columns summed out (one row per distinct
        QI combination), for searches whose models and metric read only class sizes and
        codes (e.g. k-anonymity with any metric but ``kl``): every class, class size and
        class code is the same, on fewer rows. Counts one roll-up (the grouping)."""
        if not self.sensitive:
            return self
        out = copy.copy(self)
        base = self.base
        q = len(self.qi)
        cols = [base.codes[i] for i in range(q)]
        key, span = self._combine(cols, [self.cards[i][0] for i in range(q)])
        first, n = group_keys(key, span, base.n) if base.rows else (
            np.zeros(0, np.int64), np.zeros(0, np.int64))
        codes = np.ascontiguousarray(base.codes[:, first]) if q else \
            np.zeros((0, first.shape[0]), np.int32)
        out.sensitive = ()
        out.sensitive_table = pl.DataFrame()
        out._sensitive_cols = []
        out.n_sensitive = 1
        out.codes_only = False
        out.base = Snapshot(base.levels, codes, np.zeros(first.shape[0], np.int32), n)
        out.base_ordered = True  # group_keys' rows are in key order
        out.base_rows = out.base.rows
        out._cache_levels = np.zeros_like(self._cache_levels)
        out._cache_rows = np.zeros_like(self._cache_rows)
        out.release()  # its own (empty) cache and hubs
        out._group_luts = {}
        out._group_lut_bytes = 0
        out.row_budget = _row_budget(out.base_rows)
        out.rollups = 1
        return out

    def raw_counts(self, i: int) -> np.ndarray:
        """Rows of each raw value of QI ``i`` (int64, indexed by its code): ``known_raw_counts``
        when the frequency set's builder counted them, else summed over the base rows (for a
        keyed base, from its grouped codes: no per-QI decoding)."""
        if self.known_raw_counts is not None:
            return self.known_raw_counts[i]
        base = self.base
        if base.keyed and base._classes is not None and base._classes[1] is None:
            # a keyed base: its grouped codes (made from the keys, for the search anyway) are
            # counted once per group of QIs, each QI's marginal summed out of its group's
            grouped = self._grouped_codes(base)
            assert grouped is not None  # a keyed base has at most GROUP_MAX_ROWS rows
            counts: list[np.ndarray] = [np.zeros(0, np.int64)] * len(self.qi)
            for g, gc in zip(*grouped):
                cards = [max(self.cards[j][0], 1) for j in g]
                joint = np.bincount(gc, weights=base.weights(),
                                    minlength=math.prod(cards)).reshape(cards)
                for a, j in enumerate(g):
                    others = tuple(b for b in range(len(g)) if b != a)
                    counts[j] = np.rint(joint.sum(axis=others)).astype(np.int64)
            self.known_raw_counts = counts
            return counts[i]
        codes = base.codes
        assert codes is not None
        return np.bincount(codes[i], weights=base.n,
                           minlength=len(self.level_maps[i][0])).astype(np.int64)

    def release(self) -> None:
        """Drop the snapshot cache and the hubs (memory); roll-ups still work, from the base."""
        self._cache = {}
        self._cache_keys = []
        self._cached_rows = 0
        self._pinned = []
        self._pin_levels = self._pin_levels[:0]
        self._pin_rows = self._pin_rows[:0]
        self._hubs = {}
        self._hub_requests = {}
        self._hub_rows = 0
        self._grouped = {}

    # --- maps ---------------------------------------------------------------------------------

    def up(self, q: int, a: int, b: int) -> np.ndarray:
        """Lookup array: level-``a`` code of QI ``q`` -> its level-``b`` code (a <= b)."""
        key = (q, a, b)
        arr = self._up.get(key)
        if arr is None:
            arr = self.level_maps[q][b][self._rep[q][a]].astype(np.int32)
            self._up[key] = arr
        return arr

    # --- roll-ups -----------------------------------------------------------------------------

    def source_for(self, levels: Sequence[int]) -> Snapshot:
        """The smallest cached (or pinned) snapshot that specializes ``levels`` (or the base)."""
        best = self.base
        target = np.asarray(levels, dtype=np.int16)
        if self._pinned:  # (in one array operation: ~20 pins are tested for every roll-up)
            ok = (self._pin_levels <= target).all(axis=1)
            rows = np.where(ok, self._pin_rows, _NO_SOURCE)
            i = int(rows.argmin())
            if rows[i] < best.rows:
                best = self._pinned[i]
        k = len(self._cache_keys)
        if not k:
            return best
        ok = (self._cache_levels[:k] <= target).all(axis=1)
        rows = np.where(ok, self._cache_rows[:k], _NO_SOURCE)
        i = int(rows.argmin())
        return self._cache[self._cache_keys[i]] if rows[i] < best.rows else best

    def prime(self, min_rows: int = 50_000) -> int:
        """Pin "hub" snapshots when the base frequency set is large (>= ``min_rows``): for each
        QI, the node with that QI one level up (the others raw), the node with every QI one
        level up, then each QI at its higher levels (a QI's chain rolled up level after level,
        each from the one below) while the pinned rows stay within ``PIN_BUDGET`` times the
        row budget; a hub is kept when it has at most 80% of the base's rows. Most nodes then
        roll up from a hub instead of the base (1M-row Adult sample: pins at every level rather
        than the first only, search 1.41 -> 1.30 s: many checked nodes have age at level 3 or
        4, whose single-QI pins hold 112K and 68K rows against the 181K of level 1). Returns
        the number of roll-ups done (counted)."""
        if self.base_rows < min_rows or not self.qi or not self.lazy_hubs:
            return 0
        heights = [h.height for h in self.hierarchies]
        cands = []
        for level in range(1, max(heights)):
            for i, h in enumerate(heights):
                if level < h:
                    lv = [0] * len(heights)
                    lv[i] = level
                    cands.append(tuple(lv))
            if level == 1:
                cands.append(tuple(min(1, h - 1) for h in heights))
        done = 0
        pinned_rows = 0
        for lv in dict.fromkeys(cands):
            if lv == self.base.levels:
                continue
            if max(lv) > 1 and pinned_rows >= PIN_BUDGET * self.row_budget:
                break  # (the first-level pins are always made)
            snap = self.rollup(lv, cache=False, keep_codes=True).snapshot
            done += 1
            if snap.rows <= 0.8 * self.base_rows:
                self._pin(snap)
                pinned_rows += snap.rows
            self._hubs[lv] = self._pinned[-1] if self._pinned and self._pinned[-1] is snap \
                else None
        return done

    def _pin(self, snap: Snapshot) -> None:
        """Make ``snap`` a source of the later roll-ups it specializes (:meth:`source_for`)."""
        self._pinned.append(snap)
        self._pin_levels = np.vstack([self._pin_levels,
                                      np.asarray(snap.levels, dtype=np.int16)[None]])
        self._pin_rows = np.append(self._pin_rows, snap.rows)

    def rollup(self, levels: Sequence[int], *, cache: bool = True,
               keep_codes: bool = False) -> Rolled:
        """Roll the best cached snapshot up to ``levels``; counts one roll-up. The per-row codes
        of the new snapshot (needed only to roll up *from* it) are materialized when it is
        cached or ``keep_codes`` is set; otherwise ``snapshot.codes`` is None (a row's codes are
        its class's, ``class_codes[row_class]``)."""
        if type(levels) is not tuple:  # the lattice's levels are already a tuple of ints
            levels = tuple(int(v) for v in levels)
        src = self.source_for(levels)
        if self.lazy_hubs and HUB_MIN_ROWS <= src.rows < HUB_MAX_ROWS:
            hub = self._hub(levels, src)
            if hub is not None and hub.rows < src.rows:
                src = hub
        return self._roll(src, levels, cache=cache, keep_codes=keep_codes)

    def rollup_many(self, levels_list: Sequence[Sequence[int]], *, cache: bool = True
                    ) -> list[Rolled]:
        """Roll-ups of several nodes (counted one each), the same as :meth:`rollup` node by
        node except that a snapshot made for one node of the list is not the source of
        another. Nodes sharing a source and a small key space are rolled up *together*: their
        keys are laid side by side in one key space and grouped by one ``bincount``, so the
        per-call cost of numpy is paid once per batch instead of once per node."""
        todo = [tuple(int(v) for v in lv) for lv in levels_list]
        out: list[Rolled | None] = [None] * len(todo)
        groups: dict[int, tuple[Snapshot, list[int]]] = {}
        for idx, lv in enumerate(todo):
            src = self.source_for(lv)
            if self.lazy_hubs and HUB_MIN_ROWS <= src.rows < HUB_MAX_ROWS:
                hub = self._hub(lv, src)
                if hub is not None and hub.rows < src.rows:
                    src = hub
            if self._span(lv) <= bincount_limit(src.rows):
                groups.setdefault(id(src), (src, []))[1].append(idx)
            else:
                out[idx] = self._roll(src, lv, cache=cache, keep_codes=False)
        for src, idxs in groups.values():
            per = max(1, BATCH_CELLS // max(src.rows, 1))
            for at in range(0, len(idxs), per):
                part = idxs[at:at + per]
                if len(part) == 1:
                    out[part[0]] = self._roll(src, todo[part[0]], cache=cache, keep_codes=False)
                    continue
                for i, r in zip(part, self._roll_counting_many(src, [todo[i] for i in part],
                                                               cache)):
                    out[i] = r
        return [r for r in out if r is not None]

    def _span(self, levels: Sequence[int]) -> int:
        span = self.n_sensitive
        for i, lv in enumerate(levels):
            span *= max(self.cards[i][lv], 1)
        return span

    def _roll_counting_many(self, src: Snapshot, levels_list: list[tuple[int, ...]],
                            cache: bool) -> list[Rolled]:
        """:meth:`_roll_full_key` (counting) for several nodes from one source: node ``j``'s
        keys are offset by the spans of the nodes before it, so one ``bincount`` groups them
        all and the output rows come out node by node, each node's in its own key order."""
        q = len(self.qi)
        ns = self.n_sensitive
        B = len(levels_list)
        self.rollups += B
        cards = np.array([[max(self.cards[i][lv[i]], 1) for i in range(q)]
                          for lv in levels_list], dtype=np.int64).reshape(B, q)
        radix = np.empty((B, q), dtype=np.int64)
        r = np.full(B, ns, dtype=np.int64)
        for i in range(q - 1, -1, -1):
            radix[:, i] = r
            r = r * cards[:, i]
        base = np.zeros(B + 1, dtype=np.int64)
        np.cumsum(r, out=base[1:])
        total = int(base[-1])
        rows = src.rows
        key = np.empty((B, rows), dtype=np.int64)
        key[:] = base[:-1, None]
        if ns > 1:
            key += src.s
        for i in range(q):
            a = src.levels[i]
            card_a = max(self.cards[i][a], 1)
            lut = np.concatenate([self._scaled(i, a, lv[i], int(radix[j, i]))
                                  for j, lv in enumerate(levels_list)])
            key += lut[src.codes[i] + (np.arange(B, dtype=np.int64) * card_a)[:, None]]
        flat = key.ravel()
        weights = np.tile(src.n, B)
        if total <= bincount_limit(flat.shape[0]):
            counts = np.bincount(flat, weights=weights, minlength=total)
            uniq = np.flatnonzero(counts != 0)  # a bool mask: ~5x faster than on floats
            n = counts[uniq].astype(np.int64)
            del counts
        else:
            # a wide key space: dense ranks (counting or one sort; monotone, so the keys and
            # their order are the same), then the sums
            inv, uniq = dense_rank(flat, total)
            n = np.bincount(inv, weights=weights, minlength=uniq.shape[0]).astype(np.int64)
            del inv
        del key, flat, weights
        node_of = np.searchsorted(base, uniq, side="right") - 1
        local = uniq - base[node_of]
        gck = uniq // ns  # node ranges are multiples of ns: global class keys stay disjoint
        new = run_starts(gck)
        cfirst = np.flatnonzero(new)
        row_class = np.cumsum(new) - 1
        class_size = np.add.reduceat(n, cfirst) if uniq.shape[0] else np.zeros(0, np.int64)
        class_node = node_of[cfirst]
        ck = local[cfirst] // ns
        class_codes = np.empty((ck.shape[0], q), np.int32, order="F")
        div = radix // ns
        for i in range(q):
            d = ck // div[class_node, i] if i < q - 1 else ck
            class_codes[:, i] = d % cards[class_node, i] if i else d
        s = (local % ns).astype(np.int32) if ns > 1 else np.zeros(uniq.shape[0], np.int32)
        nodes = np.arange(B + 1)
        rb = np.searchsorted(node_of, nodes)
        cb = np.searchsorted(class_node, nodes)
        out = []
        for j, lv in enumerate(levels_list):
            r0, r1, c0, c1 = int(rb[j]), int(rb[j + 1]), int(cb[j]), int(cb[j + 1])
            rc = row_class[r0:r1] - c0
            cc = class_codes[c0:c1]
            keep = cache and lv != self.base.levels and (r1 - r0) <= 0.8 * src.rows \
                and (r1 - r0) <= self.row_budget
            if keep:
                # copies: a cached snapshot must not pin the whole batch's arrays
                snap = Snapshot(lv, None, s[r0:r1].copy(), n[r0:r1].copy(),
                                classes=(cc.copy(order="F"), None if ns == 1 else rc.copy()))
            else:
                snap = Snapshot(lv, None, s[r0:r1], n[r0:r1])
            rolled = Rolled(snap, rc, cc, class_size[c0:c1])
            if keep:
                self._remember(snap, src)
            out.append(rolled)
        return out

    def _hub(self, levels: tuple[int, ...], src: Snapshot) -> Snapshot | None:
        """The hub of ``levels``: the node with every QI at ``min(level, 1)`` (the most
        generalized node of that form below ``levels``, hence the smallest), rolled up once
        from ``src`` and pinned when it has at most 80% of ``src``'s rows, within a budget of
        pinned rows. Flash and the level-wise searches roll up many nodes that have no checked
        specialization; from a hub they read a few thousand rows instead of the base's."""
        hub = tuple(min(v, 1) for v in levels)
        if hub == levels or hub == src.levels:
            return None
        if hub in self._hubs:
            return self._hubs[hub]
        if any(a > b for a, b in zip(src.levels, hub)) or self._hub_rows >= self.row_budget:
            return None
        # made on its third request: a hub asked for once costs a roll-up and saves none
        seen = self._hub_requests.get(hub, 0) + 1
        self._hub_requests[hub] = seen
        if seen < HUB_AFTER:
            return None
        snap = self._roll(src, hub, cache=False, keep_codes=True).snapshot
        keep = snap.rows <= 0.8 * src.rows
        self._hubs[hub] = snap if keep else None
        if keep:
            self._hub_rows += snap.rows
        return self._hubs[hub]

    def _scaled(self, q: int, a: int, b: int, radix: int) -> np.ndarray:
        """Lookup: level-``a`` code of QI ``q`` -> its level-``b`` code times ``radix`` (int64),
        i.e. the QI's digit of a mixed-radix key."""
        key = (q, a, b, radix)
        arr = self._scaled_cache.get(key)
        if arr is None:
            arr = self.up(q, a, b).astype(np.int64) * radix
            if len(self._scaled_cache) >= 4096:
                self._scaled_cache.clear()
            self._scaled_cache[key] = arr
        return arr

    def _roll(self, src: Snapshot, levels: tuple[int, ...], *, cache: bool,
              keep_codes: bool) -> Rolled:
        self.rollups += 1
        q = len(self.qi)
        cards = [max(self.cards[i][levels[i]], 1) for i in range(q)]
        span = self.n_sensitive
        for c in cards:
            span *= c
        if span <= counting.count_cells(src.rows, bincount_limit(src.rows)):
            rolled = self._roll_full_key(src, levels, cards, span, keep_codes, cache,
                                         by_count=True)
        elif self.n_sensitive > 1 and self._through_classes(src, cards):
            structure = src.class_structure()
            rolled = None if structure is None else self._roll_classes(
                src, structure, levels, cards, keep_codes, cache)
        else:
            rolled = None
        if rolled is not None:
            if rolled.snapshot.kept and cache and levels != self.base.levels:
                self._remember(rolled.snapshot, src)
            return rolled
        # (without a sensitive column every row is a class: the full key is the class key,
        # built from the source's grouped codes when it has them, and grouped by one sort)
        if span < _KEY_LIMIT and src.kept:
            rolled = self._roll_full_key(src, levels, cards, span, keep_codes, cache,
                                         by_count=False)
            if rolled.snapshot.kept and cache and levels != self.base.levels:
                self._remember(rolled.snapshot, src)
            return rolled
        # keys too wide for an int64: densified step by step
        cols = []
        for i in range(q):
            a, b = src.levels[i], levels[i]
            c = src.codes[i]
            cols.append(c if a == b else np.take(self.up(i, a, b), c.astype(np.intp)))
        class_key, span = self._combine(cols, [self.cards[i][levels[i]] for i in range(q)])
        if span * self.n_sensitive > count_limit(src.rows) and span <= count_limit(src.rows):
            class_key, uniq = dense_rank(class_key, span)  # monotone: same class order
            span = max(int(uniq.shape[0]), 1)
        key = class_key * self.n_sensitive + src.s
        span *= self.n_sensitive
        first, n = group_keys(key, span, src.n)
        rows = first.shape[0]
        keep = keep_codes or (cache and levels != self.base.levels
                              and rows <= 0.8 * src.rows and rows <= self.row_budget)
        s = src.s[first].astype(np.int32, copy=False)
        # rows are sorted by (class key, sensitive): classes are contiguous runs
        ck = class_key[first]
        starts = np.flatnonzero(ck[1:] != ck[:-1]) + 1 if rows else np.zeros(0, np.int64)
        cfirst = np.concatenate([[0], starts]).astype(np.int64) if rows else starts
        cinv = np.zeros(rows, dtype=np.int64)
        cinv[starts] = 1
        cinv = np.cumsum(cinv)
        crow = first[cfirst]
        # (classes, q) in Fortran order: each QI's column is written (and read by the
        # metrics) contiguously; a C-order stack along axis 1 was a strided transpose
        class_codes = np.empty((len(crow), q), np.int32, order="F")
        for i, c in enumerate(cols):
            if c.dtype == np.int32:
                np.take(c, crow, out=class_codes[:, i], mode="clip")
            else:  # (uint16 codes of a large base, or intp lookups: np.take casts only safely)
                class_codes[:, i] = c[crow]
        snap = Snapshot(levels, None, s, n,
                        classes=(class_codes, None if self.n_sensitive == 1 else cinv)
                        if keep else None)
        rolled = Rolled(
            snap,
            cinv,
            class_codes,
            np.add.reduceat(n, cfirst) if rows else np.zeros(0, np.int64),
        )
        if keep and cache and levels != self.base.levels:
            self._remember(snap, src)
        return rolled

    def _digits(self, src: Snapshot, levels: Sequence[int], radix: Sequence[int]
                ) -> tuple[list[np.ndarray], list[np.ndarray | None], list[int]]:
        """``(cols, tables, scale)`` of the mixed-radix int64 key of every source row at
        ``levels`` (see :func:`~ldiv_polars.search.counting.lookup_sum`): the sum over QIs of
        the (generalized) code times ``radix[i]``, or over QI groups when the source has
        grouped codes (:meth:`_grouped_codes`). An unchanged QI is one multiplication; a
        generalized one (or a group) a lookup."""
        grouped = self._grouped_codes(src)
        if grouped is not None:
            groups, gcols = grouped
            tables: list[np.ndarray | None] = [
                self._group_lut(src.levels, levels, radix, g) for g in groups]
            return list(gcols), tables, [1] * len(groups)
        codes = src.codes
        assert codes is not None
        return list(codes), self._digit_tables(src.levels, levels, radix), list(radix)

    def _grouped_codes(self, src: Snapshot
                       ) -> tuple[list[tuple[int, ...]], list[np.ndarray]] | None:
        """Grouped codes of a source: consecutive QIs are grouped while the product of their
        cardinalities stays within ``GROUP_SPAN``, and each group's codes are combined into
        one mixed-radix intp code per row. A key is then one gather per *group* from the
        group's digit lookup (:meth:`_group_lut`), not one per QI (on Adult's 8 QIs: 3
        gathers instead of 8). A snapshot made by a roll-up gets them from its class keys
        (a group's code is a run of the key's digits: one division and one modulo per group,
        instead of decoding every QI); a source with per-row codes (the base) gets them on
        its second use, if it has ``GROUP_MIN_ROWS..GROUP_MAX_ROWS`` rows (None before)."""
        hit = self._grouped.get(id(src))
        if hit is not None and hit[0] is src and hit[2]:
            return hit[2], hit[3]
        implicit = src.keyed
        if src.rows > (GROUP_KEYED_MAX_ROWS if implicit and counting.KERNEL else GROUP_MAX_ROWS):
            return None
        if not implicit:
            if src.rows < GROUP_MIN_ROWS:
                return None
            if hit is None or hit[0] is not src:
                self._grouped[id(src)] = (src, 1, [], [])
                return None
        groups: list[tuple[int, ...]] = []
        cur: list[int] = []
        span = widest = 1
        limit = GROUP_SPAN if src.rows < GROUP_WIDE_MIN_ROWS else GROUP_SPAN_WIDE
        for i, lv in enumerate(src.levels):
            c = max(self.cards[i][lv], 1)
            if cur and span * c > limit:
                groups.append(tuple(cur))
                cur, span = [], 1
            cur.append(i)
            span *= c
            widest = max(widest, span)
        if cur:
            groups.append(tuple(cur))
        gcodes = []
        dt = np.intp if src.rows <= GROUP_INTP_ROWS else np.int32
        if counting.KERNEL:  # (the kernel reads narrow codes: less memory to stream)
            dt = np.uint16 if widest <= 1 << 16 else np.int32
        if implicit:
            assert src._classes is not None
            cc, rc = src._classes
            for g in groups:
                d = cc.div[g[-1]]
                v = cc.keys // d if d > 1 else cc.keys.copy()
                if g[0] > 0:  # the first group's digits are the key's leading ones
                    v %= math.prod(max(cc.cards[i], 1) for i in g)
                gcodes.append(v.astype(dt, copy=False) if rc is None else
                              v.astype(dt, copy=False)[rc])
        else:
            codes = src.codes
            assert codes is not None
            for g in groups:
                gc = codes[g[0]].astype(dt if dt != np.uint16 else np.int32)
                for i in g[1:]:
                    gc *= max(self.cards[i][src.levels[i]], 1)
                    gc += codes[i]
                gcodes.append(gc.astype(dt, copy=False))
        self._grouped[id(src)] = (src, 2, groups, gcodes)
        return groups, gcodes

    def _group_lut(self, src_levels: tuple[int, ...], levels: Sequence[int],
                   radix: Sequence[int], group: tuple[int, ...]) -> np.ndarray:
        """Digit lookup of a QI group: grouped source code -> the sum of the group's QIs'
        digits (:meth:`_scaled`) of the target key."""
        # groups are runs of consecutive QIs; the radix of a group's QIs follows from its
        # last one's and the group's target levels
        g0, g1 = group[0], group[-1] + 1
        key = (g0, g1, src_levels[g0:g1], tuple(levels[g0:g1]), radix[g1 - 1])
        lut = self._group_luts.get(key)
        if lut is None:
            if self._group_lut_bytes >= GROUP_LUTS_MAX_BYTES:
                self._group_luts.clear()
                self._group_lut_bytes = 0
            # the group's digits in its own radix (its last QI's place 1), the same whatever
            # the QIs after it: built once per (source levels, target levels) of the group,
            # then scaled by the group's place in each target key (most lookups needed for a
            # new node differ from an earlier one's only in that place)
            local = self._group_luts.get(key[:4])
            if local is None:
                place = 1
                for i in reversed(group):
                    table = self._scaled(i, src_levels[i], levels[i], place)
                    local = table if local is None else np.add.outer(table, local).ravel()
                    place *= max(self.cards[i][levels[i]], 1)
                assert local is not None
                self._group_luts[key[:4]] = local
                self._group_lut_bytes += local.nbytes
            r = radix[g1 - 1]
            lut = local * r if r != 1 else local
            self._group_luts[key] = lut
            self._group_lut_bytes += lut.nbytes if r != 1 else 0
        return lut

    def _through_classes(self, src: Snapshot, cards: list[int]) -> bool:
        """Whether a wide roll-up from ``src`` (with a sensitive column) goes through its
        classes: the source has a class structure, the class keys fit in int64, and they can
        be densified by counting or by a sort of at most ``SORT_MAX_ROWS`` keys (beyond, the
        general path's stepwise densifying counts instead)."""
        if src._classes is None:
            return False
        cc = src._classes[0]
        classes_src = cc.keys.shape[0] if isinstance(cc, ClassCodes) else cc.shape[0]
        span_c = 1
        for c in cards:
            span_c *= c
        if span_c >= _KEY_LIMIT:
            return False
        return span_c <= count_limit(classes_src) or classes_src <= SORT_MAX_ROWS

    def _roll_classes(self, src: Snapshot, structure: tuple[np.ndarray, np.ndarray | None],
                      levels: tuple[int, ...], cards: list[int], keep_codes: bool,
                      cache: bool) -> Rolled | None:
        """Roll-up of a wide key space through the source's classes (a frequency set with a
        sensitive column): each source *class* gets its target class key (per-QI digits, on
        the classes rather than the rows), the keys are densified (monotone ranks, so the
        class order is the key order), and the rows are grouped on ``(dense class, sensitive
        id)`` — a narrow key space, counted by one ``bincount``. Same rows, in the same
        order, as the general path (see :meth:`_through_classes` for when it is used)."""
        cc, rc = structure
        assert rc is not None  # a sensitive column: rows are (class, sensitive) cells
        q = len(self.qi)
        ns = self.n_sensitive
        radix = places(cards)
        span_c = math.prod(cards)
        classes_src = cc.shape[0]
        ckey = self._mixed_key([cc[:, i] for i in range(q)], classes_src, src.levels, levels,
                               radix)
        inv, uniq = dense_rank(ckey, span_c)
        g = uniq.shape[0]
        key = inv[rc] * ns + src.s
        span = g * ns
        if span <= bincount_limit(src.rows):
            counts = np.bincount(key, weights=src.weights(), minlength=span)
            keys = np.flatnonzero(counts != 0)
            n = counts[keys].astype(np.int64)
        else:
            inv2, keys = dense_rank(key, span)
            n = np.bincount(inv2, weights=src.weights(), minlength=keys.shape[0]).astype(np.int64)
        rows = keys.shape[0]
        s = (keys % ns).astype(np.int32)
        row_class = keys // ns  # dense class ids: every one of the g classes has rows
        class_size = np.bincount(row_class, weights=n, minlength=g).astype(np.int64)
        class_codes = ClassCodes(uniq, radix, cards)
        keep = keep_codes or (cache and levels != self.base.levels and rows <= 0.8 * src.rows
                              and rows <= self.row_budget)
        classes = (class_codes, row_class) if keep else None
        return Rolled(Snapshot(levels, None, s, n, classes), row_class, class_codes,
                      class_size)

    def _roll_full_key(self, src: Snapshot, levels: tuple[int, ...], cards: list[int],
                       span: int, keep_codes: bool, cache: bool, *, by_count: bool) -> Rolled:
        """Roll-up on the full mixed-radix key (classes x sensitive ids) of every source row
        (:meth:`_digits`: a sum of per-QI or per-group digit lookups): grouped by one weighted
        count (:func:`~ldiv_polars.search.counting.lookup_count`) when the key space is small
        enough to count into (``by_count``), else by
        :func:`~ldiv_polars.search.grouping.group_sum` (one sort, near-linear on a source in
        key order); every output code is decoded from its key (no gather from the source
        rows). Same rows, in the same order, as the stepwise densifying of the general path."""
        ns = self.n_sensitive
        class_radix = places(cards)
        radix = [ns * p for p in class_radix]
        cols, tables, scale = self._digits(src, levels, radix)
        extra = src.s if ns > 1 else None
        if by_count:
            narrow = counting.KERNEL and self.total < 2**31
            uniq, n = counting.lookup_count(cols, tables, scale,
                                            src.narrow_counts() if narrow else src.n,
                                            span=span, total=self.total, extra=extra,
                                            fweights=None if narrow else src.weights())
        else:
            key = counting.lookup_sum(cols, tables, scale, src.rows, extra)
            # (the key is this roll-up's own array: the sort may pack and sum in it)
            uniq, n = group_sum(key, span, src.n, consume=True,
                                ordered=src is not self.base or self.base_ordered)
            del key
        rows = uniq.shape[0]
        if ns > 1:
            s = np.empty(rows, dtype=np.int32)
            np.remainder(uniq, ns, out=s, casting="unsafe")  # (< ns: fits)
            ck = np.floor_divide(uniq, ns, out=uniq)  # (the keys are this roll-up's own)
            del uniq
            new = run_starts(ck)
            cks = ck[new]
            del ck
            row_class = np.cumsum(new, dtype=np.int64)
            row_class -= 1
            class_size = run_sums(n.copy(), new)
        else:
            s = zero_ids(rows)
            # (the consumed key's buffer may hold the distinct keys in its front: a cached
            # snapshot must not keep the whole buffer alive)
            big = uniq.base is not None and uniq.base.nbytes > 2 * uniq.nbytes
            cks = uniq.copy() if big else uniq
            row_class = row_ids(rows)
            class_size = n
        class_codes = ClassCodes(cks, class_radix, cards)
        keep = keep_codes or (cache and levels != self.base.levels and rows <= 0.8 * src.rows
                              and rows <= self.row_budget)
        classes = (class_codes, None if ns == 1 else row_class) if keep else None
        return Rolled(Snapshot(levels, None, s, n, classes), row_class, class_codes,
                      class_size)

    def _remember(self, snap: Snapshot, src: Snapshot) -> None:
        # ARX's policy: keep snapshots that are clearly smaller than their source (<= 80%);
        # memory is bounded by a budget of cached rows (a few times the base frequency set)
        if snap.rows > 0.8 * src.rows or snap.levels in self._cache:
            return
        if snap.rows > self.row_budget:
            return
        while self._cache_keys and (len(self._cache) >= self.cache_size
                                    or self._cached_rows + snap.rows > self.row_budget):
            # evict the oldest snapshot; keep the arrays aligned with the key list
            old = self._cache_keys.pop(0)
            gone = self._cache.pop(old)
            self._cached_rows -= gone.rows
            self._grouped.pop(id(gone), None)
            self._cache_levels[:-1] = self._cache_levels[1:].copy()
            self._cache_rows[:-1] = self._cache_rows[1:].copy()
        i = len(self._cache_keys)
        self._cache_keys.append(snap.levels)
        self._cache[snap.levels] = snap
        self._cache_levels[i] = snap.levels
        self._cache_rows[i] = snap.rows
        self._cached_rows += snap.rows

    @staticmethod
    def _combine(cols: list[np.ndarray], cards: list[int]) -> tuple[np.ndarray, int]:
        """Mixed-radix int64 key of the code columns. The key is re-densified (a monotone
        rank, so the key order is unchanged) before a column would push its span past what
        counting handles, when that is cheap, and always before it could overflow."""
        if not cols:
            return np.zeros(0, dtype=np.int64), 1
        rows = cols[0].shape[0]
        limit = count_limit(rows)
        key = cols[0].astype(np.int64)
        span = max(cards[0], 1)
        for c, card in zip(cols[1:], cards[1:]):
            card = max(card, 1)
            if (span * card > limit and span <= limit) or span * card * 4096 >= _KEY_LIMIT:
                key, uniq = dense_rank(key, span)
                span = max(int(uniq.shape[0]), 1)
            np.multiply(key, card, out=key)  # key is this method's own array
            np.add(key, c, out=key)
            span *= card
        return key, span

    def _mixed_key(self, cols: list[np.ndarray], rows: int, src_levels: Sequence[int],
                   levels: Sequence[int], radix: Sequence[int],
                   extra: np.ndarray | None = None) -> np.ndarray:
        """int64 mixed-radix key of code columns (QI ``i``'s codes at ``src_levels[i]``): the
        sum over QIs of the level-``levels[i]`` code times ``radix[i]``, plus ``extra``, built
        by :func:`~ldiv_polars.search.counting.lookup_sum`."""
        return counting.lookup_sum(cols, self._digit_tables(src_levels, levels, radix), radix,
                                   rows, extra)

    def _digit_tables(self, src_levels: Sequence[int], levels: Sequence[int],
                      radix: Sequence[int]) -> list[np.ndarray | None]:
        """Per QI, the lookup of its digit of the key (:meth:`_scaled`), or None where its level
        is unchanged (the digit is then the code times ``radix[i]``)."""
        return [None if src_levels[i] == levels[i] else
                self._scaled(i, src_levels[i], levels[i], radix[i])
                for i in range(len(levels))]

    # --- frames for the models ----------------------------------------------------------------

    def model_rows(self, rolled: Rolled, keep: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rolled-up frequency set as arrays ``(class, sensitive id, n)``, rows sorted by
        class; ``keep`` optionally masks the rows to retain."""
        snap = rolled.snapshot
        cls, s, n = rolled.row_class, snap.s, snap.n
        if keep is not None:
            cls, s, n = cls[keep], s[keep], n[keep]
        return cls, s, n

    def model_rows_many(self, rolleds: Sequence[Rolled], offsets: Sequence[int]
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The roll-ups of several nodes stacked as arrays ``(class, sensitive id, n)``, the
        class ids of ``rolleds[i]`` shifted by ``offsets[i]`` (disjoint ids per node)."""
        cls = np.concatenate([r.row_class + int(off) for r, off in zip(rolleds, offsets)])
        s = np.concatenate([r.snapshot.s for r in rolleds])
        n = np.concatenate([r.snapshot.n for r in rolleds])
        return cls, s, n

    def frame_of(self, cls: np.ndarray, s: np.ndarray, n: np.ndarray, *,
                 class_col: str = CLASS, count: str = COUNT) -> pl.DataFrame:
        """``(class_col, sensitive..., count)`` frame of arrays from :meth:`model_rows`."""
        cols = [pl.Series(class_col, cls)]
        if self.sensitive:
            if self.codes_only:
                # the models read only the identity of sensitive values: hand them the codes
                cols.append(pl.Series(self.sensitive[0], s))
            else:
                cols.extend(self._sensitive_cols[i].gather(s) for i in range(len(self.sensitive)))
        cols.append(pl.Series(count, n, dtype=pl.Int64))
        return pl.DataFrame(cols)

    def class_labels(self, rolled: Rolled, which: np.ndarray | None = None) -> pl.DataFrame:
        """Generalized labels (one String column per QI) of the classes (or of ``which``)."""
        codes = rolled.class_codes if which is None else rolled.class_codes[which]
        lv = rolled.snapshot.levels
        return pl.DataFrame(
            {q: pl.Series(q, self.level_labels[i][lv[i]], dtype=pl.String)[codes[:, i]]
             for i, q in enumerate(self.qi)},
            schema={q: pl.String for q in self.qi},
        )
