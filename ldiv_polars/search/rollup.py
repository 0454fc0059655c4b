"""The encoded frequency set the lattice search reads: :class:`EncodedFrequencySet`.

The frequency set ``(qi..., s..., n)`` is built once by the engine (the only pass over the rows)
and encoded once (:mod:`~ldiv_polars.search.encoding`); a lattice node is then evaluated by
*rolling up* a snapshot, the encoded frequency set of a more specific node or the base, never
by rescanning rows. This class wires the four parts of that machinery together, the way ARX
splits it:

- the **encoding** (:class:`~ldiv_polars.search.encoding.Encoding`): level maps, labels,
  sensitive ids, and the way back to values;
- the **snapshot store** (:class:`~ldiv_polars.search.store.SnapshotStore`, ARX's History):
  the cache, pinned and on-demand hubs, the row budget, and the choice of a node's source;
- the **roll-up kernels** (:class:`~ldiv_polars.search.rolling.Roller`, with the key
  builders of :mod:`~ldiv_polars.search.keys` and the grouping and counting primitives): one
  ``roll(source, levels)``;
- the **strategies** that decide which nodes to roll up live elsewhere
  (:mod:`~ldiv_polars.search.strategies`).

:meth:`EncodedFrequencySet.rollup` is the whole protocol: the store picks the source, the
roller rolls it up, the store may keep the result.

>>> import polars as pl
>>> from ldiv_polars.core.frequency import FrequencySet
>>> from ldiv_polars.hierarchy import Hierarchy
>>> h = {"zip": Hierarchy([["130", "13*"], ["131", "13*"], ["140", "14*"]], name="zip")}
>>> df = pl.DataFrame({"zip": ["130", "131", "140", "140"], "s": ["a", "b", "a", "a"]})
>>> efs = EncodedFrequencySet.from_frame(FrequencySet.build(df, "zip", "s").materialize(), h)
>>> r = efs.rollup((1,))
>>> efs.class_labels(r)["zip"].to_list(), r.class_size.tolist()
(['13*', '14*'], [2, 2])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.engines.base import fits_key
from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy
from ldiv_polars.search.encoding import (
    CLASS,
    EncodedBase,
    Encoding,
    encode_class_keys,
    encode_codes,
    encode_frame,
    encode_keys,
    model_rows,
    model_rows_many,
)
from ldiv_polars.search.grouping import group_keys, run_starts
from ldiv_polars.search.keys import KeyBuilder, combine
from ldiv_polars.search.rolling import Roller
from ldiv_polars.search.snapshot import ClassCodes, Rolled, Snapshot, places
from ldiv_polars.search.store import SnapshotStore
from ldiv_polars.search.tuning import TUNING

__all__ = ["CLASS", "EncodedFrequencySet"]


def _delegate(part: str, name: str, doc: str, *, settable: bool = False) -> Any:
    """A property reading (and with ``settable``, writing) ``self.<part>.<name>``."""

    def set_(self: Any, value: Any) -> None:
        setattr(getattr(self, part), name, value)

    return property(attrgetter(f"{part}.{name}"), set_ if settable else None, doc=doc)


class EncodedFrequencySet:
    """A materialized frequency set encoded against the QI hierarchies, with the machinery
    that rolls it up to any node of the generalization lattice.

    Build one with a named constructor: :meth:`from_frame` (a frequency set of values),
    :meth:`from_encoded_frame` (one whose QI columns hold raw indices already),
    :meth:`from_codes` (per-QI code arrays), :meth:`from_keys` (the mixed-radix keys of a
    QI-only frequency set). The constructor takes the same inputs by keyword (``encoded=``,
    ``arrays=``, ``sensitive_ids=``) and dispatches to the same encoders.

    Raises :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` (naming up to five
    values) when a QI value is not a raw value of its hierarchy, and
    :class:`~ldiv_polars.errors.InvalidParameterError` when a QI has no hierarchy or the
    arrays do not match the frequency set's columns.
    """

    qi = _delegate("encoding", "qi", "The QI columns, in order.")
    sensitive = _delegate("encoding", "sensitive", "The sensitive columns (empty: none).")
    hierarchies = _delegate("encoding", "hierarchies", "The hierarchy of each QI.")
    level_maps = _delegate("encoding", "level_maps", "Per QI and level: raw index -> code.")
    level_labels = _delegate("encoding", "level_labels", "Per QI and level: group labels.")
    cards = _delegate("encoding", "cards", "Per QI and level: the number of groups.")
    n_sensitive = _delegate("encoding", "n_sensitive", "Distinct sensitive tuples (>= 1).")
    sensitive_table = _delegate("encoding", "sensitive_table",
                                "The distinct sensitive tuples, in id order.")
    codes_only = _delegate("encoding", "codes_only", "Models read sensitive ids, not values.",
                           settable=True)
    row_budget = _delegate("store", "row_budget", "Most snapshot rows the store keeps (in the "
                           "cache, and in hubs).", settable=True)
    lazy_hubs = _delegate("store", "lazy_hubs", "Whether hub snapshots are made (pinned and "
                          "on demand).", settable=True)

    def __init__(self, fs: FrequencySet, hierarchies: Mapping[str, Hierarchy],
                 *, cache_size: int | None = None, encoded: bool = False,
                 arrays: tuple[np.ndarray, np.ndarray] | None = None,
                 sensitive_ids: tuple[np.ndarray, pl.DataFrame] | None = None) -> None:
        """``encoded``: as :meth:`from_encoded_frame`. ``arrays``: ``(codes, n)`` as
        :meth:`from_codes` takes them (with ``sensitive_ids``), or ``(keys, n)`` with 1-d keys
        as :meth:`from_keys` does. ``cache_size``: most snapshots cached (default
        ``TUNING.cache_size``)."""
        if arrays is None:
            eb = encode_frame(fs, hierarchies, encoded=encoded)
        elif arrays[0].ndim == 1:
            if sensitive_ids is not None or fs.sensitive:
                raise InvalidParameterError(
                    "keys (one row per class) take no sensitive ids: pass codes")
            eb = encode_keys(fs, hierarchies, *arrays)
        else:
            eb = encode_codes(fs, hierarchies, *arrays, sensitive_ids=sensitive_ids)
        self._assemble(eb, cache_size)

    @classmethod
    def from_frame(cls, fs: FrequencySet, hierarchies: Mapping[str, Hierarchy], *,
                   cache_size: int | None = None) -> EncodedFrequencySet:
        """From a frequency set whose QI columns hold values, validated against the
        hierarchies (see :func:`~ldiv_polars.search.encoding.encode_frame`)."""
        return cls._of(encode_frame(fs, hierarchies), cache_size)

    @classmethod
    def from_encoded_frame(cls, fs: FrequencySet, hierarchies: Mapping[str, Hierarchy], *,
                           cache_size: int | None = None) -> EncodedFrequencySet:
        """From a frequency set whose QI columns hold each value's (validated, non-negative)
        raw index, as the engine groups them (see
        :func:`~ldiv_polars.search.encoding.encode_frame`, ``encoded=True``)."""
        return cls._of(encode_frame(fs, hierarchies, encoded=True), cache_size)

    @classmethod
    def from_codes(cls, fs: FrequencySet, hierarchies: Mapping[str, Hierarchy],
                   codes: np.ndarray, n: np.ndarray, *,
                   sensitive_ids: tuple[np.ndarray, pl.DataFrame] | None = None,
                   cache_size: int | None = None) -> EncodedFrequencySet:
        """From ``(q, rows)`` raw-index codes and counts, ``fs`` naming the columns (see
        :func:`~ldiv_polars.search.encoding.encode_codes`)."""
        return cls._of(encode_codes(fs, hierarchies, codes, n, sensitive_ids=sensitive_ids),
                       cache_size)

    @classmethod
    def from_class_keys(cls, fs: FrequencySet, hierarchies: Mapping[str, Hierarchy],
                        class_keys: np.ndarray, n: np.ndarray,
                        sensitive_ids: tuple[np.ndarray, pl.DataFrame], *,
                        cache_size: int | None = None) -> EncodedFrequencySet:
        """From ``(QI, sensitive)`` cells in class order given by their class keys (see
        :func:`~ldiv_polars.search.encoding.encode_class_keys`): the class-ordered base is
        taken as it is, not derived again."""
        return cls._of(encode_class_keys(fs, hierarchies, class_keys, n, sensitive_ids),
                       cache_size)

    @classmethod
    def from_keys(cls, fs: FrequencySet, hierarchies: Mapping[str, Hierarchy],
                  keys: np.ndarray, n: np.ndarray, *, cache_size: int | None = None
                  ) -> EncodedFrequencySet:
        """From the mixed-radix keys of a QI-only frequency set and counts, ``fs`` naming the
        columns (see :func:`~ldiv_polars.search.encoding.encode_keys`)."""
        return cls._of(encode_keys(fs, hierarchies, keys, n), cache_size)

    @classmethod
    def _of(cls, eb: EncodedBase, cache_size: int | None) -> EncodedFrequencySet:
        self = cls.__new__(cls)
        self._assemble(eb, cache_size)
        return self

    def _assemble(self, eb: EncodedBase, cache_size: int | None) -> None:
        """Attach the store and the roll-up machinery to an encoded base."""
        self.encoding: Encoding = eb.encoding
        self.base: Snapshot = eb.base
        self.total = eb.total
        self.base_rows = eb.base.rows
        self.base_ordered = eb.ordered
        """Whether the base's rows are in key order (every roll-up's are): roll-ups that sort
        their keys then merge runs."""
        self.keys = KeyBuilder(self.encoding)
        self.store = SnapshotStore(len(self.qi), self.base_rows, cache_size,
                                   forget=self.keys.forget)
        self.roller = Roller(self.encoding, self.keys, self.total)
        self.known_raw_counts: list[np.ndarray] | None = None
        """Per QI, the rows of each raw value, when counted by the frequency set's builder
        or already summed by :meth:`raw_counts`."""
        self.rollups = 0
        """Roll-ups made (each node rolled up, each hub and pin, the class-ordered base)."""
        self.base_sorted = self.n_sensitive > 1 and \
            0 < self.base_rows <= TUNING.base_classes_max_rows
        """Whether the base was put in class order at encoding (counted as one roll-up), so
        that wide roll-ups from it can go through its classes."""
        if self.base_sorted:
            if eb.class_ordered:  # given in class order: the roll-up is read off
                self.rollups += 1
            else:
                self.base = self._class_ordered_base()
        elif eb.class_ordered:  # roll-ups from a base not class-ordered read its codes
            self.base = Snapshot(self.base.levels, self.base.codes, self.base.s, self.base.n)

    def _class_ordered_base(self) -> Snapshot:
        """The base in class order with its class structure, as the roll-up to its own levels
        makes it (counted as one roll-up): read off the rows when they are already in
        ``(class, sensitive id)`` order, each cell once (the sorted cells an engine may give),
        else rolled up."""
        base = self.base
        codes = base.codes
        cards = self.encoding.level_cards(base.levels)
        if codes is not None and fits_key([*cards, self.n_sensitive]):  # (no int64 wrap)
            radix = places(cards)
            ck = np.zeros(base.rows, dtype=np.int64)
            for i, p in enumerate(radix):
                ck += codes[i].astype(np.int64) * p
            key = ck * self.n_sensitive + base.s
            if bool(np.all(key[1:] > key[:-1])):
                self.rollups += 1
                new = run_starts(ck)
                row_class = np.cumsum(new, dtype=np.int64)
                row_class -= 1
                return Snapshot(base.levels, None, base.s, base.n,
                                (ClassCodes(ck[new], radix, cards), row_class))
        return self._roll(base, base.levels, cache=False, keep_codes=True).snapshot

    def without_sensitive(self) -> EncodedFrequencySet:
        """The same frequency set with the sensitive columns summed out (one row per distinct
        QI combination, in key order), for searches whose models and metric read only class
        sizes and codes: every class, class size and class code is the same, on fewer rows.
        Shares the encoding's lookups; its own store. Counts one roll-up (the grouping)."""
        if not self.sensitive:
            return self
        base = self.base
        q = len(self.qi)
        cols = [base.codes[i] for i in range(q)]
        key, span = combine(cols, [self.cards[i][0] for i in range(q)])
        first, n = group_keys(key, span, base.n) if base.rows else (
            np.zeros(0, np.int64), np.zeros(0, np.int64))
        codes = np.ascontiguousarray(base.codes[:, first]) if q else \
            np.zeros((0, first.shape[0]), np.int32)
        slim = Snapshot(base.levels, codes, np.zeros(first.shape[0], np.int32), n)
        out = self._of(EncodedBase(self.encoding.without_sensitive(), slim, True, self.total),
                       self.store.cache_size)
        out.known_raw_counts = self.known_raw_counts
        out.lazy_hubs = self.lazy_hubs
        out.rollups = 1
        return out

    def project(self, cols: Sequence[int]) -> EncodedFrequencySet:
        """The frequency set projected onto the QIs at positions ``cols`` (the other QIs summed
        out, the sensitive columns kept): one row per distinct (raw codes of ``cols``,
        sensitive id). A class of the projection at levels ``y`` is a union of the classes of
        every node of this set whose levels on ``cols`` are ``y`` (rows agreeing on ``cols``
        at ``y``, whatever the other QIs): the anytime search's decomposition bound reads
        that. Its own encoding (the hierarchies of ``cols``) and store; counts one roll-up.

        >>> import polars as pl
        >>> from ldiv_polars.core.frequency import FrequencySet
        >>> from ldiv_polars.hierarchy import Hierarchy
        >>> h = {c: Hierarchy([["a", "*"], ["b", "*"]], name=c) for c in ("x", "y")}
        >>> df = pl.DataFrame({"x": ["a", "a", "b"], "y": ["a", "b", "b"]})
        >>> efs = EncodedFrequencySet.from_frame(FrequencySet.build(df, ["x", "y"], None)
        ...                                      .materialize(), h)
        >>> p = efs.project([1])
        >>> p.qi, p.rollup((0,)).class_size.tolist(), p.total
        (('y',), [1, 2], 3)
        """
        cols = [int(i) for i in cols]
        base = self.base
        parts = [base.codes[i] for i in cols]
        cards = [self.cards[i][0] for i in cols]
        if self.n_sensitive > 1:
            parts, cards = parts + [base.s], cards + [self.n_sensitive]
        key, span = combine(parts, cards)
        first, n = group_keys(key, span, base.n) if base.rows else (
            np.zeros(0, np.int64), np.zeros(0, np.int64))
        codes = np.ascontiguousarray(base.codes[cols][:, first]) if cols else \
            np.zeros((0, first.shape[0]), np.int32)
        enc = Encoding([self.qi[i] for i in cols], self.sensitive,
                       [self.hierarchies[i] for i in cols], self.sensitive_table)
        enc.codes_only = self.codes_only
        snap = Snapshot(tuple(0 for _ in cols), codes, base.s[first], n)
        out = self._of(EncodedBase(enc, snap, self.n_sensitive == 1, self.total),
                       self.store.cache_size)
        if self.known_raw_counts is not None:
            out.known_raw_counts = [self.known_raw_counts[i] for i in cols]
        out.rollups = 1
        return out

    def raw_counts(self, i: int) -> np.ndarray:
        """Rows of each raw value of QI ``i`` (int64, indexed by its code): ``known_raw_counts``
        when the frequency set's builder counted them, else summed over the base rows (for a
        keyed base with grouped codes, from those: no per-QI decoding)."""
        if self.known_raw_counts is not None:
            return self.known_raw_counts[i]
        base = self.base
        if base.keyed and base.every_row_a_class:
            counts = self.keys.raw_marginals(base)
            if counts is not None:  # (a small keyed base has none: its decoded codes below)
                self.known_raw_counts = counts
                return counts[i]
        codes = base.codes
        assert codes is not None
        return np.bincount(codes[i], weights=base.n,
                           minlength=len(self.level_maps[i][0])).astype(np.int64)

    def release(self) -> None:
        """Drop the snapshot cache and the hubs (memory); roll-ups still work, from the base."""
        self.store.release()
        self.keys.forget_all()

    # --- roll-ups -----------------------------------------------------------------------------

    def rollup(self, levels: Sequence[int], *, cache: bool = True,
               keep_codes: bool = False) -> Rolled:
        """The roll-up of the frequency set to node ``levels`` (one level per QI), from the
        source the store picks; counts one roll-up. ``cache``: the store may keep the result
        as a later source. ``keep_codes``: the snapshot keeps its codes even if not cached
        (otherwise ``snapshot.codes`` is None for a snapshot not kept: a row's codes are its
        class's, ``class_codes[row_class]``)."""
        if type(levels) is not tuple:  # the lattice's levels are already a tuple of ints
            levels = tuple(int(v) for v in levels)
        src = self.store.source(levels, self.base, self._make_hub)
        return self._roll(src, levels, cache=cache, keep_codes=keep_codes)

    def rollup_many(self, levels_list: Sequence[Sequence[int]], *, cache: bool = True
                    ) -> list[Rolled]:
        """Roll-ups of several nodes (counted one each), the same as :meth:`rollup` node by
        node, except that a snapshot made for one node of a batch is not the source of
        another: nodes sharing a source and a small key space are rolled up together
        (:meth:`~ldiv_polars.search.rolling.Roller.roll_many`)."""
        todo = [tuple(int(v) for v in lv) for lv in levels_list]
        out: list[Rolled | None] = [None] * len(todo)
        batches: dict[int, tuple[Snapshot, list[int]]] = {}
        for idx, lv in enumerate(todo):
            src = self.store.source(lv, self.base, self._make_hub)
            if self.roller.batchable(src, lv):
                batches.setdefault(id(src), (src, []))[1].append(idx)
            else:
                out[idx] = self._roll(src, lv, cache=cache, keep_codes=False)
        for src, idxs in batches.values():
            levels = [todo[i] for i in idxs]
            rows = [self._cache_rows(lv, cache) for lv in levels]
            rolled = self.roller.roll_many(src, levels, rows, ordered=self._ordered(src))
            for i, cache_rows, r in zip(idxs, rows, rolled):
                self.rollups += 1
                self._keep(r, src, cache_rows)
                out[i] = r
        return [r for r in out if r is not None]

    def prime(self, min_rows: int | None = None) -> int:
        """Pin hub snapshots before a search when the base has at least ``min_rows`` rows
        (default ``TUNING.prime_min_rows``; see
        :meth:`~ldiv_polars.search.store.SnapshotStore.prime`). Returns the roll-ups made."""
        return self.store.prime(
            self.base.levels, self.base_rows, [h.height for h in self.hierarchies],
            lambda lv: self.rollup(lv, cache=False, keep_codes=True).snapshot, min_rows)

    def source_for(self, levels: Sequence[int]) -> Snapshot:
        """The smallest cached or pinned snapshot that specializes ``levels`` (or the base)."""
        return self.store.source_for(levels, self.base)

    def _make_hub(self, src: Snapshot, levels: tuple[int, ...]) -> Snapshot | None:
        """The hub ``levels`` rolled up from ``src``, or None (no roll-up made) when it could
        not be kept: a key space too wide to count (a sort, or the ``stepwise`` path: tens of
        times a counted roll-up) whose hashed class count
        (:meth:`~ldiv_polars.search.rolling.Roller.classes_floor`) already exceeds
        ``TUNING.keep_ratio`` of ``src``'s rows. With many QIs the frequency set is nearly
        unique, and so is every hub one level up: this skips that wasted roll-up."""
        cards = self.encoding.level_cards(levels)
        span = self.encoding.n_sensitive * math.prod(cards)
        if self.roller.path(src, cards, span) != "count" and src.codes is not None and \
                self.roller.classes_floor(src, levels) > TUNING.keep_ratio * src.rows:
            return None
        return self._roll(src, levels, cache=False, keep_codes=True).snapshot

    def _roll(self, src: Snapshot, levels: tuple[int, ...], *, cache: bool,
              keep_codes: bool) -> Rolled:
        """One roll-up (counted) from ``src``, offered to the cache when ``cache``."""
        self.rollups += 1
        cache_rows = self._cache_rows(levels, cache)
        rolled = self.roller.roll(src, levels, keep_codes=keep_codes, cache_rows=cache_rows,
                                  ordered=self._ordered(src))
        self._keep(rolled, src, cache_rows)
        return rolled

    def _cache_rows(self, levels: tuple[int, ...], cache: bool) -> int:
        """Most rows of a roll-up to ``levels`` the cache could take (-1: not cached; the
        base's own levels never are)."""
        return self.store.row_budget if cache and levels != self.base.levels else -1

    def _keep(self, rolled: Rolled, src: Snapshot, cache_rows: int) -> None:
        if cache_rows >= 0 and rolled.snapshot.kept:
            self.store.remember(rolled.snapshot, src)

    def _ordered(self, src: Snapshot) -> bool:
        """Whether ``src``'s rows are in key order (a roll-up's always are)."""
        return src is not self.base or self.base_ordered

    # --- frames for the models ----------------------------------------------------------------

    model_rows = staticmethod(model_rows)
    model_rows_many = staticmethod(model_rows_many)

    def frame_of(self, cls: np.ndarray, s: np.ndarray, n: np.ndarray, *,
                 class_col: str = CLASS, count: str = COUNT) -> pl.DataFrame:
        """``(class_col, sensitive..., count)`` frame of arrays from :meth:`model_rows` (see
        :meth:`~ldiv_polars.search.encoding.Encoding.frame_of`)."""
        return self.encoding.frame_of(cls, s, n, class_col=class_col, count=count)

    def class_labels(self, rolled: Rolled, which: np.ndarray | None = None) -> pl.DataFrame:
        """Generalized labels (one String column per QI) of the classes (or of ``which``)."""
        return self.encoding.class_labels(rolled, which)
