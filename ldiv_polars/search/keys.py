"""The mixed-radix key of every source row at a target node: what each roll-up groups.

A row's key at node ``levels`` is ``sum_i code_i(levels[i]) x radix[i]`` (plus the sensitive
id), the radices being the level cardinalities (first QI most significant, so the key order is
the class order). A digit is a lookup (level-a code -> level-b code x radix,
:meth:`~ldiv_polars.search.encoding.Encoding.scaled`) or, for an unchanged QI, a
multiplication. :class:`KeyBuilder` adds *grouped codes*: consecutive QIs of a source combined
into one code per row, so a key is one gather per group of QIs, from a lookup that sums the
group's digits in its own radix (:meth:`KeyBuilder.group_lut`), times the group's place,
instead of one per QI. Keys wider than an int64
are never built (:data:`KEY_LIMIT`); :func:`combine` densifies step by step instead.

>>> import numpy as np
>>> key, span = combine([np.array([2, 0, 2]), np.array([1, 1, 0])], [3, 2])
>>> key.tolist(), span
([5, 1, 4], 6)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ldiv_polars.search import counting
from ldiv_polars.search.encoding import Encoding
from ldiv_polars.search.grouping import count_limit, dense_rank
from ldiv_polars.search.snapshot import Snapshot
from ldiv_polars.search.tuning import TUNING

KEY_LIMIT = 2**62
"""Key spans of at least this many cells are not built as int64 keys (headroom for the
sensitive ids and offsets added to them). Lowering it only sends roll-ups down the stepwise
path (tests do)."""

Groups = list[tuple[int, ...]]


class KeyBuilder:
    """The key columns and lookups of roll-ups over one :class:`Encoding`, with the derived
    data it keeps: grouped codes per source (``grouped``: ``id(source) -> (source, uses,
    groups, grouped codes)``, dropped by :meth:`forget` when the source leaves the store) and
    QI-group lookups (the most recently used within ``TUNING.group_luts_max_bytes``)."""

    def __init__(self, encoding: Encoding) -> None:
        self.encoding = encoding
        self.grouped: dict[int, tuple[Snapshot, int, Groups, list[np.ndarray]]] = {}
        self._group_luts: OrderedDict[tuple[object, ...], np.ndarray] = OrderedDict()
        self._group_lut_bytes = 0

    def forget(self, src: Snapshot) -> None:
        """Drop what was derived from ``src`` (it left the snapshot store)."""
        self.grouped.pop(id(src), None)

    def forget_all(self) -> None:
        """Drop every source's grouped codes (the lookups stay)."""
        self.grouped = {}

    def digits(self, src: Snapshot, levels: Sequence[int], radix: Sequence[int]
               ) -> tuple[list[np.ndarray], list[np.ndarray | None], list[int]]:
        """``(cols, tables, scale)`` of the key of every row of ``src`` at ``levels`` with
        these radices, for :func:`~ldiv_polars.search.counting.lookup_sum`: per QI group when
        the source has grouped codes (:meth:`grouped_codes`; a group's lookup in its own
        radix, scaled by the radix of its last QI), else per QI (lookups holding their
        places, scale 1; a multiplication by the radix for an unchanged QI)."""
        grouped = self.grouped_codes(src)
        if grouped is not None:
            groups, gcols = grouped
            tables: list[np.ndarray | None] = [
                self.group_lut(src.levels, levels, g) for g in groups]
            return list(gcols), tables, [radix[g[-1]] for g in groups]
        codes = src.codes
        assert codes is not None
        tables = self.encoding.digit_tables(src.levels, levels, radix)
        return list(codes), tables, _scales(tables, radix)

    def mixed_key(self, cols: list[np.ndarray], rows: int, src_levels: Sequence[int],
                  levels: Sequence[int], radix: Sequence[int],
                  extra: np.ndarray | None = None) -> np.ndarray:
        """int64 key of per-QI code columns at ``src_levels`` (``rows`` rows): the sum over QIs
        of the level-``levels[i]`` code times ``radix[i]``, plus ``extra``."""
        tables = self.encoding.digit_tables(src_levels, levels, radix)
        return counting.lookup_sum(cols, tables, _scales(tables, radix), rows, extra)

    # --- grouped codes ------------------------------------------------------------------------

    def grouped_codes(self, src: Snapshot) -> tuple[Groups, list[np.ndarray]] | None:
        """The grouped codes of ``src``: its QIs in runs whose cardinalities multiply to at
        most ``TUNING.group_span`` (``group_span_wide`` from ``group_wide_min_rows`` rows),
        each run's codes combined into one mixed-radix code per row. A snapshot whose codes
        are its class keys gets them from the keys (a run's code is a run of the key's digits:
        no per-QI decoding), from ``TUNING.group_keyed_min_rows`` up to
        ``TUNING.group_keyed_max_rows`` rows with the kernel; a
        source with per-row codes gets them on its second request, if it has
        ``TUNING.group_min_rows`` to ``TUNING.group_max_rows`` rows. None otherwise (the
        caller then reads per-QI codes)."""
        hit = self.grouped.get(id(src))
        if hit is not None and hit[0] is src and hit[2]:
            return hit[2], hit[3]
        t = TUNING
        implicit = src.keyed
        if src.rows > (t.group_keyed_max_rows if implicit and counting.KERNEL
                       else t.group_max_rows):
            return None
        if implicit and src.rows < t.group_keyed_min_rows:
            return None
        if not implicit:
            if src.rows < t.group_min_rows:
                return None
            if hit is None or hit[0] is not src:
                self.grouped[id(src)] = (src, 1, [], [])  # grouped on the next request
                return None
        groups, widest = self._qi_groups(src)
        dt = np.intp if src.rows <= t.group_intp_rows else np.int32
        if counting.KERNEL:  # (the kernel reads narrow codes: less memory to stream)
            dt = np.uint16 if widest <= 1 << 16 else np.int32
        gcodes = self._from_keys(src, groups, dt) if implicit else \
            self._from_codes(src, groups, dt)
        self.grouped[id(src)] = (src, 2, groups, gcodes)
        return groups, gcodes

    def _qi_groups(self, src: Snapshot) -> tuple[Groups, int]:
        """Runs of consecutive QIs for :meth:`grouped_codes`, and the widest run's span."""
        cards = self.encoding.cards
        groups: Groups = []
        cur: list[int] = []
        span = widest = 1
        limit = TUNING.group_span if src.rows < TUNING.group_wide_min_rows \
            else TUNING.group_span_wide
        for i, lv in enumerate(src.levels):
            c = max(cards[i][lv], 1)
            if cur and span * c > limit:
                groups.append(tuple(cur))
                cur, span = [], 1
            cur.append(i)
            span *= c
            widest = max(widest, span)
        if cur:
            groups.append(tuple(cur))
        return groups, widest

    @staticmethod
    def _from_keys(src: Snapshot, groups: Groups, dt: type) -> list[np.ndarray]:
        """Grouped codes of a snapshot whose codes are its class keys, gathered by each row's
        class: when the keys are plain mixed-radix numbers (:func:`_plain_places`), the
        groups' digits from the least significant group, dividing the rest down (one division
        per group but the first, in int32 when the keys fit; ``v % m`` as ``v - v // m * m``:
        numpy divides by a scalar with libdivide, not its remainder); otherwise per group a
        division and a remainder of the keys."""
        assert src._classes is not None
        cc, rc = src._classes
        spans = [math.prod(max(cc.cards[i], 1) for i in g) for g in groups]
        if not _plain_places(cc.div, cc.cards):
            out = []
            for g, m in zip(groups, spans):
                d = cc.div[g[-1]]
                v = cc.keys // d if d > 1 else cc.keys.copy()
                if g[0] > 0:  # the first group's digits are the key's leading ones
                    v %= m
                out.append(v.astype(dt, copy=False))
        else:
            out = _group_digits(cc.keys, spans, dt)
        return out if rc is None else [c[rc] for c in out]

    def _from_codes(self, src: Snapshot, groups: Groups, dt: type) -> list[np.ndarray]:
        """Grouped codes of a snapshot with per-row codes: per group, its QIs' codes combined
        in mixed radix."""
        codes = src.codes
        assert codes is not None
        cards = self.encoding.cards
        out = []
        for g in groups:
            gc = codes[g[0]].astype(dt if dt != np.uint16 else np.int32)
            for i in g[1:]:
                gc *= max(cards[i][src.levels[i]], 1)
                gc += codes[i]
            out.append(gc.astype(dt, copy=False))
        return out

    def group_lut(self, src_levels: tuple[int, ...], levels: Sequence[int],
                  group: tuple[int, ...]) -> np.ndarray:
        """Digit lookup of a QI group (uint16 when the group's digits fit, else int64):
        grouped source code -> the sum of the group's QIs' digits of the key at ``levels`` in
        the group's own radix (its last QI's place 1; the key's digits are these times the
        last QI's radix in the key, whatever the QIs after the group: one lookup serves every
        target sharing the group's levels). Built by broadcasting, kept while among the most
        recently used within ``TUNING.group_luts_max_bytes``."""
        g0, g1 = group[0], group[-1] + 1
        key = (g0, g1, src_levels[g0:g1], tuple(levels[g0:g1]))
        lut = self._group_luts.get(key)
        if lut is not None:
            self._group_luts.move_to_end(key)
            return lut
        cards = self.encoding.cards
        # (uint16 when the values fit: a quarter of the kernel's cache lines)
        narrow = math.prod(max(cards[i][levels[i]], 1) for i in group) <= 1 << 16
        lut = self._local_lut(src_levels, levels, group, np.uint16 if narrow else np.int64)
        self._group_luts[key] = lut
        self._group_lut_bytes += lut.nbytes
        while self._group_lut_bytes > TUNING.group_luts_max_bytes and len(self._group_luts) > 1:
            _, old = self._group_luts.popitem(last=False)  # the least recently used
            self._group_lut_bytes -= old.nbytes
        return lut

    def _local_lut(self, src_levels: tuple[int, ...], levels: Sequence[int],
                   group: tuple[int, ...], dtype: type) -> np.ndarray:
        """A group's digit lookup in its own radix (the last QI's place 1), by broadcasting,
        in ``dtype`` (uint16 only when every sum is below 2**16: each partial sum is below
        the product of its QIs' cardinalities)."""
        cards = self.encoding.cards
        local: np.ndarray | None = None
        place = 1
        for i in reversed(group):
            table = self.encoding.scaled(i, src_levels[i], levels[i], place)
            if dtype != np.int64:
                table = table.astype(dtype)
            local = table if local is None else np.add.outer(table, local).ravel()
            place *= max(cards[i][levels[i]], 1)
        assert local is not None
        return local

    def raw_marginals(self, base: Snapshot) -> list[np.ndarray] | None:
        """Per QI, the rows of each raw value (int64), summed from the grouped codes of a base
        whose codes are its keys (one count per group of QIs, each QI's marginal summed out of
        its group's); None when the base has no grouped codes."""
        grouped = self.grouped_codes(base)
        if grouped is None:
            return None
        cards0 = [max(c[0], 1) for c in self.encoding.cards]
        counts: list[np.ndarray] = [np.zeros(0, np.int64)] * len(cards0)
        for g, gc in zip(*grouped):
            cards = [cards0[j] for j in g]
            joint = np.bincount(gc, weights=base.weights(),
                                minlength=math.prod(cards)).reshape(cards)
            for a, j in enumerate(g):
                others = tuple(b for b in range(len(g)) if b != a)
                counts[j] = np.rint(joint.sum(axis=others)).astype(np.int64)
        return counts


def combine(cols: list[np.ndarray], cards: list[int]) -> tuple[np.ndarray, int]:
    """``(key, span)``: the mixed-radix int64 key of the code columns (``cards`` their
    cardinalities, first column most significant) and its span. Before a column would push the
    span past what counting handles (when that is cheap), and always before it could overflow
    (:data:`KEY_LIMIT`), the key is re-densified by a monotone rank: the key order stays the
    columns' lexicographic order, the span shrinks to the distinct keys so far."""
    if not cols:
        return np.zeros(0, dtype=np.int64), 1
    rows = cols[0].shape[0]
    limit = count_limit(rows)
    key = cols[0].astype(np.int64)
    span = max(cards[0], 1)
    for c, card in zip(cols[1:], cards[1:]):
        card = max(card, 1)
        if (span * card > limit and span <= limit) or span * card * 4096 >= KEY_LIMIT:
            key, uniq = dense_rank(key, span)
            span = max(int(uniq.shape[0]), 1)
        np.multiply(key, card, out=key)  # key is this function's own array
        np.add(key, c, out=key)
        span *= card
    return key, span


def _scales(tables: Sequence[np.ndarray | None], radix: Sequence[int]) -> list[int]:
    """The scales of per-QI digit lookups (:meth:`~ldiv_polars.search.encoding.Encoding.
    digit_tables`, which hold their places: 1) and of unchanged QIs (their radix)."""
    return [1 if t is not None else r for t, r in zip(tables, radix)]


def _plain_places(div: Sequence[int], cards: Sequence[int]) -> bool:
    """Whether ``div`` are the places of plain mixed-radix keys of these cardinalities (the
    last QI's place 1, each other's the next one's times its cardinality)."""
    return bool(div) and div[-1] == 1 and all(
        div[i] == div[i + 1] * max(cards[i + 1], 1) for i in range(len(div) - 1))


def _group_digits(keys: np.ndarray, spans: Sequence[int], dt: type) -> list[np.ndarray]:
    """The digits of mixed-radix ``keys`` (non-negative, below the product of ``spans``) in
    the radices ``spans`` (the first most significant), each a fresh ``dt`` array: from the
    least significant digit, dividing the rest down, in int32 when the keys fit.

    >>> [d.tolist() for d in _group_digits(np.array([0, 7, 23]), [2, 3, 4], np.int32)]
    [[0, 0, 1], [0, 1, 2], [0, 3, 3]]
    """
    wt = np.int32 if math.prod(spans) <= 2**31 else np.int64
    rest = keys.astype(wt, copy=False)
    out: list[np.ndarray] = [rest] * len(spans)
    t = np.empty(keys.shape[0], wt)
    for j in range(len(spans) - 1, 0, -1):
        quo = np.floor_divide(rest, spans[j])
        np.multiply(quo, spans[j], out=t)
        out[j] = np.empty(keys.shape[0], dt)
        np.subtract(rest, t, out=out[j], casting="unsafe")  # < spans[j]: fits dt
        rest = quo
    out[0] = rest.astype(dt, copy=rest is keys)
    return out
