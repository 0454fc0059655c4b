"""The data of one rolled-up lattice node: its encoded frequency set (:class:`Snapshot`), its
class structure (:class:`Rolled`) and class codes decoded on demand (:class:`ClassCodes`), plus
the mixed-radix place values (:func:`~ldiv_polars.core.engines.base.places`) every class key of the search is built with.

>>> import numpy as np
>>> codes = ClassCodes(np.array([0, 5, 7]), div=[3, 1], cards=[4, 3])  # keys = a * 3 + b
>>> codes.full().tolist()
[[0, 0], [1, 2], [2, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldiv_polars.core.engines.base import decode_keys, places  # noqa: F401 - places re-exported
from ldiv_polars.search.tuning import TUNING

_SHARED: dict[str, np.ndarray] = {}


def _shared(name: str, rows: int, make: Any) -> np.ndarray:
    buf = _SHARED.get(name)
    if buf is None or buf.shape[0] < rows:
        buf = make(max(rows, 1024, 0 if buf is None else 2 * buf.shape[0]))
        buf.flags.writeable = False
        _SHARED[name] = buf
    return buf[:rows]


def zero_ids(rows: int) -> np.ndarray:
    """A read-only int32 array of ``rows`` zeros (the sensitive ids of a frequency set without
    a sensitive column): a view of one shared buffer, not a fresh array per roll-up."""
    return _shared("zeros", rows, lambda m: np.zeros(m, dtype=np.int32))


def row_ids(rows: int) -> np.ndarray:
    """A read-only int64 ``arange(rows)`` (each row its own class), a view of a shared one."""
    return _shared("arange", rows, lambda m: np.arange(m, dtype=np.int64))


class Snapshot:
    """Encoded frequency set of one lattice node: one row per (class, sensitive tuple).

    ``codes`` (``(q, rows)`` int32, or uint16 for a large base read from DuckDB,
    C-contiguous) are the per-row QI codes a roll-up *from* this snapshot reads. A snapshot
    made by a roll-up keeps them implicitly, as its class codes and each row's class, and
    builds them on first use (most cached snapshots are never used as a source); ``codes`` is
    None when the snapshot was not kept.

    ``s`` (``(rows,)`` int32) is each row's sensitive-tuple id (all zero without a sensitive
    column) and ``n`` (``(rows,)`` int64) its count. ``classes`` is ``(class codes, each row's
    class)``: the class codes as :class:`ClassCodes` or a ``(classes, q)`` int32 array, the
    row classes None when every row is its own class (rows sorted by class either way)."""

    __slots__ = ("levels", "s", "n", "_codes", "_classes", "_weights", "_n32")

    def __init__(self, levels: tuple[int, ...], codes: np.ndarray | None, s: np.ndarray,
                 n: np.ndarray, classes: tuple[Any, np.ndarray | None] | None = None
                 ) -> None:
        self.levels = levels
        self._codes = codes
        self._classes = classes  # (class codes (classes, q) F-ordered, row class or None)
        self.s = s  # (rows,) int32: sensitive tuple id
        self.n = n  # (rows,) int64
        self._weights: np.ndarray | None = None
        self._n32: np.ndarray | None = None

    def weights(self) -> np.ndarray:
        """``n`` as float64, the weights of ``np.bincount`` (which would convert the int64
        counts on every roll-up from this snapshot): converted once and kept, for sources of
        ``TUNING.weights_min_rows`` to ``TUNING.weights_max_rows`` rows; ``n`` itself for
        others."""
        if not TUNING.weights_min_rows <= self.n.shape[0] <= TUNING.weights_max_rows:
            return self.n
        if self._weights is None:
            self._weights = self.n.astype(np.float64)
        return self._weights

    def narrow_counts(self) -> np.ndarray:
        """The compiled kernel's weights: ``n`` as int32 (half the bytes to stream; the
        frequency set's total below 2**31 is the caller's to know), converted once and kept,
        for sources of ``TUNING.weights_min_rows`` to ``TUNING.weights_max_rows`` rows; ``n``
        itself for others (a small one costs less to read than to convert; a large one would
        hold 4 bytes a row more, or a fresh copy per roll-up)."""
        if not TUNING.weights_min_rows <= self.n.shape[0] <= TUNING.weights_max_rows:
            return self.n
        if self._n32 is None:
            self._n32 = self.n.astype(np.int32)
        return self._n32

    @property
    def codes(self) -> np.ndarray | None:
        """``(q, rows)`` per-row QI codes (C-contiguous), built from the class structure on
        first read and kept; None when the snapshot keeps neither."""
        if self._codes is None and self._classes is not None:
            cc, rc = self._classes
            if isinstance(cc, ClassCodes):
                cc = cc.full()
            # the F-ordered class codes transposed are (q, classes) C-contiguous (int32)
            self._codes = np.ascontiguousarray(cc.T, dtype=np.int32) if rc is None else \
                np.take(cc.T, rc, axis=1).astype(np.int32, copy=False)
        return self._codes

    def class_structure(self) -> tuple[np.ndarray, np.ndarray | None] | None:
        """``(class codes (classes, q), each row's class)`` when known (a snapshot made by a
        roll-up; rows sorted by class); the row classes are None when every row is a class."""
        if self._classes is None:
            return None
        cc, rc = self._classes
        if isinstance(cc, ClassCodes):
            # decoded once, as int32 (F-ordered): a roll-up casts to intp only the columns it
            # generalizes (an intp copy of every column cost twice the memory, and the
            # fresh pages of a large one more than the casts it saved)
            cc = cc.full()
            self._classes = (cc, rc)
        return cc, rc

    @property
    def keyed(self) -> bool:
        """Whether the per-row codes exist only as the class keys (:class:`ClassCodes`, not yet
        decoded): a group of QIs' codes is then a run of each key's digits."""
        return self._codes is None and self._classes is not None and isinstance(
            self._classes[0], ClassCodes)

    @property
    def every_row_a_class(self) -> bool:
        """Whether the class structure is known and each row is its own class (no sensitive
        column)."""
        return self._classes is not None and self._classes[1] is None

    @property
    def class_count(self) -> int | None:
        """Number of classes when the class structure is known (without decoding it)."""
        if self._classes is None:
            return None
        cc = self._classes[0]
        return int(cc.keys.shape[0] if isinstance(cc, ClassCodes) else cc.shape[0])

    @property
    def kept(self) -> bool:
        """Whether the per-row codes are available (materialized or implicit)."""
        return self._codes is not None or self._classes is not None

    @property
    def rows(self) -> int:
        """Number of rows (``(class, sensitive tuple)`` cells)."""
        return int(self.n.shape[0])


class ClassCodes:
    """Class codes ``(classes, q)`` decoded on demand from the classes' mixed-radix keys
    (``code_i = key // div[i] % cards[i]``): most roll-ups are only judged, never read for
    their codes."""

    __slots__ = ("keys", "div", "cards", "_full")

    def __init__(self, keys: np.ndarray, div: Sequence[int], cards: Sequence[int]) -> None:
        self.keys = keys
        self.div = list(div)
        self.cards = list(cards)
        self._full: np.ndarray | None = None

    def full(self) -> np.ndarray:
        """Every class's codes, ``(classes, q)`` int32 in Fortran order (decoded once, kept)."""
        if self._full is None:
            self._full = self._decode(self.keys)
        return self._full

    def subset(self, which: np.ndarray) -> np.ndarray:
        """The codes of the classes ``which`` (a mask or indices) selects, decoded alone."""
        if self._full is not None:
            return self._full[which]
        return self._decode(self.keys[which])

    def _decode(self, keys: np.ndarray) -> np.ndarray:
        # (classes, q) in Fortran order: each QI's column is written (and read by the
        # metrics) contiguously. ``v % c`` as ``v - v // c * c`` (numpy divides by a scalar
        # with libdivide but not its remainder), written straight into the int32 column.
        q = len(self.div)
        out = np.empty((keys.shape[0], q), np.int32, order="F")
        if not q:
            return out
        if self.div[-1] == 1 and all(self.div[i] == self.div[i + 1] * self.cards[i + 1]
                                     for i in range(q - 1)):
            return decode_keys(keys, self.cards)
        t = np.empty(keys.shape[0], np.int64)
        v = np.empty(keys.shape[0], np.int64)
        for i, (d, c) in enumerate(zip(self.div, self.cards)):
            src = np.floor_divide(keys, d, out=v) if d > 1 else keys
            if not i:
                out[:, i] = src
                continue
            np.floor_divide(src, c, out=t)
            np.multiply(t, c, out=t)
            np.subtract(src, t, out=out[:, i], casting="unsafe")  # < c: fits int32
        return out


class Rolled:
    """A node's roll-up: its snapshot plus the class structure (rows sorted by class)."""

    __slots__ = ("snapshot", "row_class", "class_size", "_codes")

    def __init__(self, snapshot: Snapshot, row_class: np.ndarray,
                 class_codes: np.ndarray | ClassCodes, class_size: np.ndarray) -> None:
        self.snapshot = snapshot
        self.row_class = row_class  # (rows,) int64 class index of each row
        self._codes = class_codes
        self.class_size = class_size  # (classes,) int64

    @property
    def class_codes(self) -> np.ndarray:
        """(classes, q) int32 group codes of each class."""
        c = self._codes
        return c.full() if isinstance(c, ClassCodes) else c

    def codes_of(self, which: np.ndarray) -> np.ndarray:
        """Codes of the classes selected by ``which`` (a mask or indices)."""
        c = self._codes
        return c.subset(which) if isinstance(c, ClassCodes) else c[which]

    @property
    def classes(self) -> int:
        """Number of classes."""
        return int(self.class_size.shape[0])
