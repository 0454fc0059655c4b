"""The roll-up of a snapshot to a more general node: :meth:`Roller.roll`, and several nodes from
one source at once: :meth:`Roller.roll_many`.

A roll-up maps every source row to its ``(class, sensitive id)`` cell at the target node and
sums the counts per cell; its output rows are sorted by class key, then sensitive id, and its
classes numbered in that order, whichever path computed it. The path depends only on the size
of the target's key space (``span``: classes x sensitive ids) and on the source, and is chosen
in one place, :meth:`Roller.path`:

============  ==============================================================================
path          when, and how
============  ==============================================================================
``count``     the span can be counted (numpy's ``bincount`` limit, or the compiled kernel's
              cells and windows: :func:`~ldiv_polars.search.counting.count_cells`): each
              row's key is a sum of digit lookups, counted over the span and read out in
              key order (:func:`~ldiv_polars.search.counting.lookup_count`).
``classes``   a sensitive column, and the source's *classes* can be keyed and densified
              cheaply: the class keys are computed per source class, densified by a monotone
              rank, and the rows counted on ``(dense class, sensitive id)``, a narrow span.
``sort``      otherwise, when the key fits an int64 and the source's codes are kept: the full
              keys are grouped by one sort (the kernel's radix sort of the keys packed with
              their counts, :func:`~ldiv_polars.search.counting.lookup_sort_sum`, or
              :func:`~ldiv_polars.search.grouping.group_sum`).
``stepwise``  keys too wide for an int64: the code columns are combined and re-densified step
              by step (:func:`~ldiv_polars.search.keys.combine`), then grouped.
============  ==============================================================================

Every path gives the same rows in the same order (tests force each one). :meth:`Roller.roll_many`
lays the keys of several nodes side by side in one key space and groups them with one
``bincount`` (nodes whose span is within numpy's ``bincount`` limit: :meth:`Roller.batchable`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from ldiv_polars.search import counting
from ldiv_polars.search import keys as mixed_keys
from ldiv_polars.search.encoding import Encoding
from ldiv_polars.search.grouping import (
    bincount_limit,
    count_limit,
    dense_rank,
    group_keys,
    group_sum,
    run_starts,
    run_sums,
)
from ldiv_polars.search.keys import KeyBuilder
from ldiv_polars.search.snapshot import ClassCodes, Rolled, Snapshot, places, row_ids, zero_ids
from ldiv_polars.search.tuning import TUNING

PATHS = ("count", "classes", "sort", "stepwise")
"""The roll-up paths, in the order :meth:`Roller.path` considers them."""


class Roller:
    """Roll-ups over one :class:`~ldiv_polars.search.encoding.Encoding` of a frequency set of
    ``total`` rows in all, its keys built by ``keys``.

    Whether a roll-up keeps its snapshot's codes (to be a source later) is the caller's
    choice: ``keep_codes`` always, or ``cache_rows``: when the output has at most that many
    rows and at most ``TUNING.keep_ratio`` of the source's (what the snapshot store would
    cache; -1: never)."""

    def __init__(self, encoding: Encoding, keys: KeyBuilder, total: int) -> None:
        self.encoding = encoding
        self.keys = keys
        self.total = total

    # --- one node -----------------------------------------------------------------------------

    def path(self, src: Snapshot, cards: Sequence[int], span: int) -> str:
        """The path (one of :data:`PATHS`) of a roll-up from ``src`` to a node with these level
        cardinalities and ``span`` cells (see the module's table)."""
        if span <= counting.count_cells(src.rows, bincount_limit(src.rows)):
            return "count"
        if self.encoding.n_sensitive > 1 and _classes_fit(src, cards):
            return "classes"
        if span < mixed_keys.KEY_LIMIT and src.kept:
            return "sort"
        return "stepwise"

    def roll(self, src: Snapshot, levels: tuple[int, ...], *, keep_codes: bool = False,
             cache_rows: int = -1, ordered: bool = True) -> Rolled:
        """The roll-up of ``src`` to ``levels`` (every level at least the source's).
        ``ordered``: the source's rows are in key order (every roll-up's are; the base's may
        not be), which only changes how a sort is done."""
        cards = self.encoding.level_cards(levels)
        span = self.encoding.n_sensitive * math.prod(cards)
        path = self.path(src, cards, span)
        if path == "count" or path == "sort":
            return self._full_key(src, levels, cards, span, keep_codes, cache_rows,
                                  by_count=path == "count", ordered=ordered)
        if path == "classes":
            structure = src.class_structure()
            assert structure is not None
            return self._through_classes(src, structure, levels, cards, keep_codes, cache_rows)
        return self._stepwise(src, levels, keep_codes, cache_rows)

    def _full_key(self, src: Snapshot, levels: tuple[int, ...], cards: list[int], span: int,
                  keep_codes: bool, cache_rows: int, *, by_count: bool, ordered: bool
                  ) -> Rolled:
        """The ``count`` and ``sort`` paths: the full mixed-radix key (classes x sensitive ids)
        of every source row (:meth:`~ldiv_polars.search.keys.KeyBuilder.digits`), grouped by
        one weighted count (``by_count``) or one sort (the kernel's
        :func:`~ldiv_polars.search.counting.lookup_sort_sum` when it applies, else
        :func:`~ldiv_polars.search.grouping.group_sum`);
        every output code is decoded from its key, only when read (no gather from the source
        rows)."""
        ns = self.encoding.n_sensitive
        class_radix = places(cards)
        radix = [ns * p for p in class_radix]
        cols, tables, scale = self.keys.digits(src, levels, radix)
        extra = src.s if ns > 1 else None
        narrow = counting.KERNEL and self.total < 2**31
        split = counting.lookup_count_split(  # (the kernel's read-out splits the keys)
            cols, tables, scale, src.narrow_counts() if narrow else src.n, span=span,
            total=self.total, ns=ns, extra=extra) if by_count and ns > 1 else None
        if split is not None:
            return self._rolled(src, levels, cards, class_radix, *split, keep_codes,
                                cache_rows)
        if by_count:
            uniq, n = counting.lookup_count(cols, tables, scale,
                                            src.narrow_counts() if narrow else src.n,
                                            span=span, total=self.total, extra=extra,
                                            fweights=None if narrow else src.weights())
        else:
            packed = counting.lookup_sort_sum(  # (the kernel's radix sort, when it fits)
                cols, tables, scale, src.narrow_counts() if narrow else src.n, span=span,
                total=self.total, extra=extra)
            if packed is not None:
                uniq, n = packed
            else:
                key = counting.lookup_sum(cols, tables, scale, src.rows, extra)
                # (the key is this roll-up's own array: the sort may pack and sum in it)
                uniq, n = group_sum(key, span, src.n, consume=True, ordered=ordered)
                del key
        return self._rolled(src, levels, cards, class_radix, *_split_keys(uniq, n, ns),
                            keep_codes, cache_rows)

    def _rolled(self, src: Snapshot, levels: tuple[int, ...], cards: list[int],
                class_radix: list[int], s: np.ndarray, n: np.ndarray, row_class: np.ndarray,
                cks: np.ndarray, class_size: np.ndarray, keep_codes: bool, cache_rows: int
                ) -> Rolled:
        """The :class:`Rolled` of a roll-up's split arrays (rows in key order: sensitive id,
        count, class index; per class its key and size)."""
        class_codes = ClassCodes(cks, class_radix, cards)
        rows = s.shape[0]
        keep = _keeps(rows, src.rows, keep_codes, cache_rows)
        ns = self.encoding.n_sensitive
        classes = (class_codes, None if ns == 1 else row_class) if keep else None
        return Rolled(Snapshot(levels, None, s, n, classes), row_class, class_codes,
                      class_size)

    def _through_classes(self, src: Snapshot, structure: tuple[np.ndarray, np.ndarray | None],
                         levels: tuple[int, ...], cards: list[int], keep_codes: bool,
                         cache_rows: int) -> Rolled:
        """The ``classes`` path: each source *class* gets its target class key (per-QI digits,
        on the classes rather than the rows), the keys are densified (monotone ranks, so the
        class order is the key order), and the rows are grouped on ``(dense class, sensitive
        id)``, a narrow key space counted by one ``bincount`` (or densified again)."""
        cc, rc = structure
        assert rc is not None  # a sensitive column: rows are (class, sensitive) cells
        ns = self.encoding.n_sensitive
        radix = places(cards)
        classes_src = cc.shape[0]
        ckey = self.keys.mixed_key([cc[:, i] for i in range(len(levels))], classes_src,
                                   src.levels, levels, radix)
        inv, uniq = dense_rank(ckey, math.prod(cards))
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
        keep = _keeps(rows, src.rows, keep_codes, cache_rows)
        classes = (class_codes, row_class) if keep else None
        return Rolled(Snapshot(levels, None, s, n, classes), row_class, class_codes,
                      class_size)

    def _stepwise(self, src: Snapshot, levels: tuple[int, ...], keep_codes: bool,
                  cache_rows: int) -> Rolled:
        """The ``stepwise`` path (keys too wide for an int64): each QI's codes generalized by
        a lookup, the class key combined and re-densified step by step
        (:func:`~ldiv_polars.search.keys.combine`), the ``(class, sensitive id)`` rows grouped
        by :func:`~ldiv_polars.search.grouping.group_keys`, the class codes gathered from one
        source row of each class."""
        enc = self.encoding
        ns = enc.n_sensitive
        cols = [c if a == b else np.take(enc.up(i, a, b), c.astype(np.intp))
                for i, (a, b, c) in enumerate(zip(src.levels, levels, src.codes))]
        class_key, span = mixed_keys.combine(cols, [enc.cards[i][lv]
                                                    for i, lv in enumerate(levels)])
        limit = count_limit(src.rows)
        if span * ns > limit and span <= limit:
            class_key, uniq = dense_rank(class_key, span)  # monotone: same class order
            span = max(int(uniq.shape[0]), 1)
        first, n = group_keys(class_key * ns + src.s, span * ns, src.n)
        rows = first.shape[0]
        keep = _keeps(rows, src.rows, keep_codes, cache_rows)
        s = src.s[first].astype(np.int32, copy=False)
        # rows are sorted by (class key, sensitive): classes are contiguous runs
        cfirst, row_class = _runs(class_key[first])
        class_codes = _gather_codes(cols, first[cfirst])
        snap = Snapshot(levels, None, s, n,
                        classes=(class_codes, None if ns == 1 else row_class) if keep else None)
        class_size = np.add.reduceat(n, cfirst) if rows else np.zeros(0, np.int64)
        return Rolled(snap, row_class, class_codes, class_size)

    def classes_floor(self, src: Snapshot, levels: tuple[int, ...]) -> int:
        """A lower bound of the number of classes of the roll-up of ``src`` to ``levels``,
        without grouping: the distinct values of a 64-bit polynomial hash of each row's target
        codes (hash collisions only merge classes). One lookup per QI and one hashed distinct
        count: a few times cheaper than a ``stepwise`` roll-up of the same rows, which tells
        whether that roll-up would shrink the source (a hub worth making). Needs ``src``'s
        codes.

        >>> import numpy as np
        >>> from ldiv_polars.hierarchy import Hierarchy
        >>> from ldiv_polars.search.encoding import encode_frame
        >>> from ldiv_polars.core.frequency import FrequencySet
        >>> import polars as pl
        >>> h = {"a": Hierarchy([["1", "*"], ["2", "*"], ["3", "*"]], name="a")}
        >>> eb = encode_frame(FrequencySet.build(pl.DataFrame({"a": ["1", "2", "3"]}), "a",
        ...                                      None).materialize(), h)
        >>> r = Roller(eb.encoding, KeyBuilder(eb.encoding), 3)
        >>> r.classes_floor(eb.base, (0,)), r.classes_floor(eb.base, (1,))
        (3, 1)
        """
        import polars as pl

        codes = src.codes
        assert codes is not None
        h = np.zeros(src.rows, dtype=np.uint64)
        for i, (a, b) in enumerate(zip(src.levels, levels)):
            c = codes[i] if a == b else np.take(self.encoding.up(i, a, b),
                                                codes[i].astype(np.intp))
            np.multiply(h, np.uint64(0x9E3779B97F4A7C15), out=h)  # wraps modulo 2**64
            np.add(h, c.astype(np.uint64), out=h)
        return int(pl.Series(h).n_unique()) if src.rows else 0

    # --- several nodes from one source --------------------------------------------------------

    def batchable(self, src: Snapshot, levels: Sequence[int]) -> bool:
        """Whether a roll-up from ``src`` to ``levels`` can join a batch of
        :meth:`roll_many` (its span within numpy's ``bincount`` limit for the source)."""
        return self.encoding.span(levels) <= bincount_limit(src.rows)

    def roll_many(self, src: Snapshot, levels_list: Sequence[tuple[int, ...]],
                  cache_rows: Sequence[int], *, ordered: bool = True) -> Iterator[Rolled]:
        """The roll-ups of ``src`` to each of ``levels_list`` (all :meth:`batchable`), yielded
        in order, the same as :meth:`roll` of each (``cache_rows[j]`` for node ``j``). Nodes
        are grouped ``TUNING.batch_cells // source rows`` at a time: their keys, offset by the
        spans of the nodes before them, grouped by one ``bincount``; a group of one is a
        plain :meth:`roll`."""
        per = max(1, TUNING.batch_cells // max(src.rows, 1))
        for at in range(0, len(levels_list), per):
            part = list(levels_list[at:at + per])
            rows = list(cache_rows[at:at + per])
            if len(part) == 1:
                yield self.roll(src, part[0], keep_codes=False, cache_rows=rows[0],
                                ordered=ordered)
            else:
                yield from self._batch(src, part, rows)

    def _batch(self, src: Snapshot, levels_list: list[tuple[int, ...]],
               cache_rows: list[int]) -> Iterator[Rolled]:
        """One batch of :meth:`roll_many`: the nodes' keys in one key space (node ``j``'s
        offset by the spans before it), one grouping, then each node's rows and classes cut
        out of the result (rows come out node by node, each node's in its own key order)."""
        ns = self.encoding.n_sensitive
        q = len(src.levels)
        uniq, n, offsets, radix, cards = self._batch_counts(src, levels_list)
        node_of = np.searchsorted(offsets, uniq, side="right") - 1
        local = uniq - offsets[node_of]
        new = run_starts(uniq // ns)  # node ranges are multiples of ns: class keys disjoint
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
        nodes = np.arange(len(levels_list) + 1)
        rb = np.searchsorted(node_of, nodes)
        cb = np.searchsorted(class_node, nodes)
        for j, lv in enumerate(levels_list):
            r0, r1, c0, c1 = int(rb[j]), int(rb[j + 1]), int(cb[j]), int(cb[j + 1])
            rc = row_class[r0:r1] - c0
            cc = class_codes[c0:c1]
            if _keeps(r1 - r0, src.rows, False, cache_rows[j]):
                # copies: a kept snapshot must not pin the whole batch's arrays
                snap = Snapshot(lv, None, s[r0:r1].copy(), n[r0:r1].copy(),
                                classes=(cc.copy(order="F"), None if ns == 1 else rc.copy()))
            else:
                snap = Snapshot(lv, None, s[r0:r1], n[r0:r1])
            yield Rolled(snap, rc, cc, class_size[c0:c1])

    def _batch_counts(self, src: Snapshot, levels_list: list[tuple[int, ...]]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(keys, sums, offsets, radix, cards)`` of a batch: the distinct batch keys in
        increasing order and their summed counts; node ``j``'s keys start at ``offsets[j]``;
        ``radix[j, i]`` and ``cards[j, i]`` are QI ``i``'s place and cardinality at node
        ``j``."""
        enc = self.encoding
        ns = enc.n_sensitive
        q = len(src.levels)
        b = len(levels_list)
        cards = np.array([enc.level_cards(lv) for lv in levels_list],
                         dtype=np.int64).reshape(b, q)
        radix = np.empty((b, q), dtype=np.int64)
        r = np.full(b, ns, dtype=np.int64)
        for i in range(q - 1, -1, -1):
            radix[:, i] = r
            r = r * cards[:, i]
        offsets = np.zeros(b + 1, dtype=np.int64)
        np.cumsum(r, out=offsets[1:])
        total = int(offsets[-1])
        key = np.empty((b, src.rows), dtype=np.int64)
        key[:] = offsets[:-1, None]
        if ns > 1:
            key += src.s
        for i in range(q):
            a = src.levels[i]
            card_a = max(enc.cards[i][a], 1)
            lut = np.concatenate([enc.scaled(i, a, lv[i], int(radix[j, i]))
                                  for j, lv in enumerate(levels_list)])
            key += lut[src.codes[i] + (np.arange(b, dtype=np.int64) * card_a)[:, None]]
        flat = key.ravel()
        weights = np.tile(src.n, b)
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
        return uniq, n, offsets, radix, cards


def _keeps(rows: int, src_rows: int, keep_codes: bool, cache_rows: int) -> bool:
    """Whether a roll-up of ``rows`` rows from ``src_rows`` keeps its snapshot's codes."""
    return keep_codes or (rows <= cache_rows and rows <= TUNING.keep_ratio * src_rows)


def _classes_fit(src: Snapshot, cards: Sequence[int]) -> bool:
    """Whether the ``classes`` path applies to ``src``: it has a class structure, the class
    keys fit an int64, and they can be densified by counting or by a sort of at most
    ``TUNING.classes_sort_max_rows`` classes."""
    classes = src.class_count
    if classes is None:
        return False
    span = math.prod(cards)
    if span >= mixed_keys.KEY_LIMIT:
        return False
    return span <= count_limit(classes) or classes <= TUNING.classes_sort_max_rows


def _runs(ck: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first row of each run, each row's run index)`` of the equal values of ``ck``."""
    rows = ck.shape[0]
    starts = np.flatnonzero(ck[1:] != ck[:-1]) + 1 if rows else np.zeros(0, np.int64)
    cfirst = np.concatenate([[0], starts]).astype(np.int64) if rows else starts
    run = np.zeros(rows, dtype=np.int64)
    run[starts] = 1
    return cfirst, np.cumsum(run)


def _gather_codes(cols: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """``(len(rows), q)`` int32 codes of the given rows, in Fortran order (each QI's column
    written, and later read by the metrics, contiguously)."""
    out = np.empty((len(rows), len(cols)), np.int32, order="F")
    for i, c in enumerate(cols):
        if c.dtype == np.int32:
            np.take(c, rows, out=out[:, i], mode="clip")
        else:  # (uint16 codes of a large base, or intp lookups: np.take casts only safely)
            out[:, i] = c[rows]
    return out


def _split_keys(uniq: np.ndarray, n: np.ndarray, ns: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A roll-up's distinct keys (``class * ns + sensitive id``, ascending; the roll-up's own
    array, overwritten) and counts split as :class:`Rolled` reads them: ``(s, n, row_class,
    class keys, class sizes)``."""
    rows = uniq.shape[0]
    if ns > 1:
        s = np.empty(rows, dtype=np.int32)
        np.remainder(uniq, ns, out=s, casting="unsafe")  # (< ns: fits)
        ck = np.floor_divide(uniq, ns, out=uniq)
        del uniq
        new = run_starts(ck)
        cks = ck[new]
        del ck
        row_class = np.cumsum(new, dtype=np.int64)
        row_class -= 1
        return s, n, row_class, cks, run_sums(n.copy(), new)
    # (the consumed key's buffer may hold the distinct keys in its front: a cached snapshot
    # must not keep the whole buffer alive)
    big = uniq.base is not None and uniq.base.nbytes > 2 * uniq.nbytes
    return zero_ids(rows), n, row_ids(rows), uniq.copy() if big else uniq, n
