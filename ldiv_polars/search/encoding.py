"""How the search numbers a frequency set, and how it reads the numbers back.

Every quasi-identifier value becomes the index of its raw value (level 0) in the QI's hierarchy;
at level ``j`` of the hierarchy a raw index maps to the code of its group (a *level map*), and
every distinct sensitive tuple becomes an integer id. :class:`Encoding` holds these maps, the
lookups that move a code from one level to another (the digits of the roll-ups' mixed-radix
keys), and the way back: class codes to generalized labels (:meth:`Encoding.class_labels`),
encoded rows to the frame the models read (:meth:`Encoding.frame_of`).

The three ways a frequency set arrives are three encoders, each returning an
:class:`EncodedBase` (the encoding plus the base snapshot):

- :func:`encode_frame`: a frequency set with string (or already encoded) QI columns, validated
  against the hierarchies;
- :func:`encode_codes`: per-QI code arrays already encoded (e.g. read from DuckDB), with the
  sensitive ids;
- :func:`encode_keys`: a QI-only frequency set as the mixed-radix keys of its codes (one key
  per row; the codes are read from the keys when a roll-up needs them).

>>> import polars as pl
>>> from ldiv_polars.core.frequency import FrequencySet
>>> from ldiv_polars.hierarchy import Hierarchy
>>> h = {"zip": Hierarchy([["130", "13*"], ["131", "13*"], ["140", "14*"]], name="zip")}
>>> fs = FrequencySet.build(pl.DataFrame({"zip": ["140", "130", "140"]}), "zip", None)
>>> eb = encode_frame(fs.materialize(), h)
>>> sorted(zip(eb.base.codes[0].tolist(), eb.base.n.tolist()))  # raw indices 2 and 0
[(0, 1), (2, 2)]
>>> eb.encoding.level_maps[0][1].tolist(), eb.encoding.level_labels[0][1]
([0, 0, 1], ['13*', '14*'])
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy, HierarchyValueMissingError
from ldiv_polars.search.grouping import run_starts
from ldiv_polars.search.snapshot import ClassCodes, Rolled, Snapshot, places
from ldiv_polars.search.tuning import TUNING

CLASS = "__ldiv_class"
"""The single class-key column of a rolled-up frequency set handed to the models."""


class Encoding:
    """The numbering of one frequency set: per QI and level, the raw index -> group code map
    (``level_maps[i][j]``, int32), the group labels (``level_labels[i][j]``) and their number
    (``cards[i][j]``); the distinct sensitive tuples in id order (``sensitive_table``, empty
    without a sensitive column; ``n_sensitive`` their number, at least 1).

    ``codes_only``: the models read only the identity of sensitive values, so
    :meth:`frame_of` hands them the integer ids instead of the values (set by the caller that
    knows the models)."""

    def __init__(self, qi: Sequence[str], sensitive: Sequence[str],
                 hierarchies: Sequence[Hierarchy], sensitive_table: pl.DataFrame) -> None:
        self.qi = tuple(qi)
        self.sensitive = tuple(sensitive)
        self.hierarchies = list(hierarchies)
        levels = [h.level_codes() for h in self.hierarchies]
        self.level_maps = [[m for m, _ in lv] for lv in levels]
        self.level_labels = [[lab for _, lab in lv] for lv in levels]
        self.cards = [[len(lab) for lab in labs] for labs in self.level_labels]
        self.sensitive_table = sensitive_table
        self._sensitive_cols = [sensitive_table.get_column(c) for c in self.sensitive]
        self.n_sensitive = max(int(sensitive_table.height), 1)
        self.codes_only = False
        self._rep: dict[tuple[int, int], np.ndarray] = {}  # (QI, level): made when first read
        self._up: dict[tuple[int, int, int], np.ndarray] = {}
        self._scaled: dict[tuple[int, int, int, int], np.ndarray] = {}
        self.memo: dict[object, object] = {}
        """Tables derived from this numbering by the modules above it (e.g. a population
        table encoded with it: :func:`~ldiv_polars.search.population.population_counts`),
        kept as long as the encoding; shared with :meth:`without_sensitive`'s copy."""

    def without_sensitive(self) -> Encoding:
        """The same QI numbering for the frequency set with its sensitive columns summed out
        (the level maps and lookups are shared, not copied)."""
        out = copy.copy(self)
        out.sensitive = ()
        out.sensitive_table = pl.DataFrame()
        out._sensitive_cols = []
        out.n_sensitive = 1
        out.codes_only = False
        return out

    # --- lookups between levels ---------------------------------------------------------------

    def up(self, q: int, a: int, b: int) -> np.ndarray:
        """Lookup array (int32): level-``a`` code of QI ``q`` -> its level-``b`` code
        (``a <= b``); built once, kept."""
        key = (q, a, b)
        arr = self._up.get(key)
        if arr is None:
            rep = self._rep.get((q, a))
            if rep is None:
                rep = self._rep[q, a] = _first_of_each_group(self.level_maps[q][a])
            arr = self.level_maps[q][b][rep].astype(np.int32)
            self._up[key] = arr
        return arr

    def scaled(self, q: int, a: int, b: int, place: int) -> np.ndarray:
        """Lookup (int64): level-``a`` code of QI ``q`` -> its level-``b`` code times
        ``place``, i.e. the QI's digit of a mixed-radix key (the last
        ``TUNING.digit_tables_max`` kept)."""
        key = (q, a, b, place)
        arr = self._scaled.get(key)
        if arr is None:
            arr = self.up(q, a, b).astype(np.int64) * place
            if len(self._scaled) >= TUNING.digit_tables_max:
                self._scaled.clear()
            self._scaled[key] = arr
        return arr

    def digit_tables(self, src_levels: Sequence[int], levels: Sequence[int],
                     radix: Sequence[int]) -> list[np.ndarray | None]:
        """Per QI, the lookup of its digit of the key at ``levels`` (:meth:`scaled`) from codes
        at ``src_levels``, or None where its level is unchanged (the digit is then the code
        times ``radix[i]``)."""
        return [None if src_levels[i] == levels[i] else
                self.scaled(i, src_levels[i], levels[i], radix[i])
                for i in range(len(levels))]

    def level_cards(self, levels: Sequence[int]) -> list[int]:
        """Number of groups of each QI at ``levels`` (at least 1: the digits' radices)."""
        return [max(self.cards[i][lv], 1) for i, lv in enumerate(levels)]

    def span(self, levels: Sequence[int]) -> int:
        """Number of ``(class, sensitive id)`` cells at ``levels``: the key space of a
        roll-up to that node."""
        span = self.n_sensitive
        for i, lv in enumerate(levels):
            span *= max(self.cards[i][lv], 1)
        return span

    # --- back to values -----------------------------------------------------------------------

    def frame_of(self, cls: np.ndarray, s: np.ndarray, n: np.ndarray, *,
                 class_col: str = CLASS, count: str = COUNT) -> pl.DataFrame:
        """``(class_col, sensitive..., count)`` frame of the arrays of :func:`model_rows`: the
        sensitive values gathered by id (or the ids themselves, under ``codes_only``)."""
        cols = [pl.Series(class_col, cls)]
        if self.sensitive:
            if self.codes_only:
                cols.append(pl.Series(self.sensitive[0], s))
            else:
                cols.extend(col.gather(s) for col in self._sensitive_cols)
        cols.append(pl.Series(count, n, dtype=pl.Int64))
        return pl.DataFrame(cols)

    def class_labels(self, rolled: Rolled, which: np.ndarray | None = None) -> pl.DataFrame:
        """Generalized labels (one String column per QI) of the classes of ``rolled`` (or of
        those ``which`` selects, a mask or indices), in class order."""
        codes = rolled.class_codes if which is None else rolled.class_codes[which]
        lv = rolled.snapshot.levels
        return pl.DataFrame(
            {q: pl.Series(q, self.level_labels[i][lv[i]], dtype=pl.String)[codes[:, i]]
             for i, q in enumerate(self.qi)},
            schema={q: pl.String for q in self.qi},
        )


def model_rows(rolled: Rolled, keep: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rolled-up frequency set as arrays ``(class, sensitive id, n)``, rows sorted by
    class; ``keep`` optionally masks the rows to retain."""
    snap = rolled.snapshot
    cls, s, n = rolled.row_class, snap.s, snap.n
    if keep is not None:
        cls, s, n = cls[keep], s[keep], n[keep]
    return cls, s, n


def model_rows_many(rolleds: Sequence[Rolled], offsets: Sequence[int]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The roll-ups of several nodes stacked as arrays ``(class, sensitive id, n)``, the
    class ids of ``rolleds[i]`` shifted by ``offsets[i]`` (disjoint ids per node)."""
    cls = np.concatenate([r.row_class + int(off) for r, off in zip(rolleds, offsets)])
    s = np.concatenate([r.snapshot.s for r in rolleds])
    n = np.concatenate([r.snapshot.n for r in rolleds])
    return cls, s, n


def _first_of_each_group(level_map: np.ndarray) -> np.ndarray:
    """The smallest raw index of each group of a level map (group code -> raw index): a
    representative from which the lookups to higher levels are read."""
    first = np.full(int(level_map.max()) + 1, -1, dtype=np.int64)
    # reverse order, so the smallest index is written last
    first[level_map[::-1]] = np.arange(level_map.shape[0] - 1, -1, -1)
    return first


# --- the encoders -----------------------------------------------------------------------------


@dataclass
class EncodedBase:
    """An encoded frequency set: its :class:`Encoding`, the base snapshot (every QI at level
    0), whether the base's rows are in key order (``ordered``) and its total count."""

    encoding: Encoding
    base: Snapshot
    ordered: bool
    total: int
    class_ordered: bool = False
    """Whether the base is already in class order with its class structure
    (:func:`encode_class_keys`)."""


def hierarchies_of(qi: Sequence[str], hierarchies: Mapping[str, Hierarchy]) -> list[Hierarchy]:
    """The hierarchy of each QI, in QI order; :class:`~ldiv_polars.errors.InvalidParameterError`
    naming the QIs without one."""
    missing = [q for q in qi if q not in hierarchies]
    if missing:
        raise InvalidParameterError(
            f"no hierarchy for quasi-identifier(s) {', '.join(map(repr, missing))}")
    return [hierarchies[q] for q in qi]


def encode_frame(fs: FrequencySet, hierarchies: Mapping[str, Hierarchy], *,
                 encoded: bool = False) -> EncodedBase:
    """Encode a materialized (or lazy: collected here) frequency set. ``encoded``: its QI
    columns already hold each value's (validated, non-negative) raw index; otherwise they are
    read as strings and looked up among the hierarchy's raw values. Each distinct sensitive
    tuple gets an id in sorted order (ascending, nulls first, as Polars sorts), so the ids of
    one sensitive column are in the order the ordered distance reads.

    Raises :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` (naming up to five
    values) when a QI value is not a raw value of its hierarchy, and
    :class:`~ldiv_polars.errors.InvalidParameterError` when a QI has no hierarchy."""
    qi, sensitive = tuple(fs.qi), tuple(fs.sensitive)
    hs = hierarchies_of(qi, hierarchies)
    df = fs.frame.collect() if isinstance(fs.frame, pl.LazyFrame) else fs.frame
    total = int(df.get_column(fs.count).sum()) if df.height else 0
    codes = np.empty((len(qi), df.height), dtype=np.int32)
    counts = (df.get_column(fs.count).to_numpy().astype(np.int64) if df.height
              else np.zeros(0, np.int64))
    for i, (q, h) in enumerate(zip(qi, hs)):
        codes[i] = _raw_codes(df.get_column(q), q, h, encoded)
    if sensitive:
        sid, table = _sensitive_ids(df, sensitive)
    else:
        sid, table = np.zeros(df.height, dtype=np.int32), pl.DataFrame()
    enc = Encoding(qi, sensitive, hs, table)
    return EncodedBase(enc, Snapshot(tuple(0 for _ in qi), codes, sid, counts), False, total)


def encode_codes(fs: FrequencySet, hierarchies: Mapping[str, Hierarchy], codes: np.ndarray,
                 n: np.ndarray, *, sensitive_ids: tuple[np.ndarray, pl.DataFrame] | None = None
                 ) -> EncodedBase:
    """A frequency set already encoded, used as it is: ``codes`` a ``(q, rows)`` array (int32,
    or uint16) of raw indices, ``n`` the int64 counts (rows in any order); ``fs`` only names
    the columns. With a sensitive column, ``sensitive_ids`` is each row's sensitive id
    (int32) and the table of the distinct sensitive tuples in id order; without one, it must
    be None (:class:`~ldiv_polars.errors.InvalidParameterError` otherwise)."""
    qi, sensitive = tuple(fs.qi), tuple(fs.sensitive)
    hs = hierarchies_of(qi, hierarchies)
    if bool(sensitive) != (sensitive_ids is not None):
        raise InvalidParameterError(
            "codes of a frequency set with a sensitive column need sensitive_ids (and only "
            "those)")
    if sensitive_ids is not None:
        sid, table = sensitive_ids
    else:
        sid, table = np.zeros(int(n.shape[0]), dtype=np.int32), pl.DataFrame()
    enc = Encoding(qi, sensitive, hs, table)
    base = Snapshot(tuple(0 for _ in qi), codes, sid, n)
    return EncodedBase(enc, base, False, int(n.sum()))


def encode_class_keys(fs: FrequencySet, hierarchies: Mapping[str, Hierarchy],
                      class_keys: np.ndarray, n: np.ndarray,
                      sensitive_ids: tuple[np.ndarray, pl.DataFrame]) -> EncodedBase:
    """The ``(QI, sensitive)`` cells of an engine that gives them in ``(class, sensitive
    id)`` order as their class keys (ascending int64 mixed-radix keys of the raw indices,
    first QI most significant, each QI's radix its number of raw values), the sensitive ids
    and table as in :func:`encode_codes`, and the counts: the base keeps them as its class
    structure (class codes and each row's class, the codes decoded on first read), as the
    roll-up to the base's own levels makes it (``class_ordered``).

    >>> import numpy as np
    >>> import polars as pl
    >>> from ldiv_polars.hierarchy import Hierarchy
    >>> h = {"x": Hierarchy([["a", "*"], ["b", "*"]], name="x")}
    >>> fs = FrequencySet(pl.LazyFrame(), ("x",), ("s",), "n")
    >>> eb = encode_class_keys(fs, h, np.array([0, 0, 1]), np.array([2, 1, 4]),
    ...                        (np.array([0, 1, 1], np.int32), pl.DataFrame({"s": ["u", "v"]})))
    >>> eb.base.codes.tolist(), eb.base.class_structure()[1].tolist(), eb.total
    ([[0, 0, 1]], [0, 0, 1], 7)
    """
    qi = tuple(fs.qi)
    sid, table = sensitive_ids
    enc = Encoding(qi, tuple(fs.sensitive), hierarchies_of(qi, hierarchies), table)
    raw = [c[0] for c in enc.cards]
    new = run_starts(class_keys)
    row_class = np.cumsum(new, dtype=np.int64)
    row_class -= 1
    base = Snapshot(tuple(0 for _ in qi), None, sid, n,
                    (ClassCodes(class_keys[new], places(raw), raw), row_class))
    return EncodedBase(enc, base, False, int(n.sum()), class_ordered=True)


def encode_keys(fs: FrequencySet, hierarchies: Mapping[str, Hierarchy], keys: np.ndarray,
                n: np.ndarray) -> EncodedBase:
    """A QI-only frequency set as the ``(rows,)`` int64 mixed-radix keys of its raw indices
    (first QI most significant, each QI's radix its number of raw values; rows in any order)
    and int64 counts ``n``; ``fs`` only names the columns (it must have no sensitive column:
    :class:`~ldiv_polars.errors.InvalidParameterError`).

    The keys are kept as they are: roll-ups read grouped codes made from them, and per-QI
    codes are decoded only if one asks (or at once for a base of more than
    ``TUNING.group_max_rows`` rows, whose roll-ups read per-QI codes)."""
    qi = tuple(fs.qi)
    if fs.sensitive:
        raise InvalidParameterError("keys (one row per class) take no sensitive column: "
                                    "pass codes")
    hs = hierarchies_of(qi, hierarchies)
    enc = Encoding(qi, (), hs, pl.DataFrame())
    rows = int(n.shape[0])
    ordered = bool((keys[1:] >= keys[:-1]).all())
    raw = [c[0] for c in enc.cards]
    base_codes = ClassCodes(keys, places(raw), raw)
    sid = np.zeros(rows, dtype=np.int32)
    levels = tuple(0 for _ in qi)
    if rows <= TUNING.group_max_rows:
        # every row a class: the codes implicit in the keys
        base = Snapshot(levels, None, sid, n, classes=(base_codes, None))
    else:
        # too large for grouped codes: per-QI codes decoded once, the keys not kept beside
        base = Snapshot(levels, base_codes.full().T, sid, n)
    return EncodedBase(enc, base, ordered, int(n.sum()))


def _raw_codes(col: pl.Series, q: str, h: Hierarchy, encoded: bool) -> np.ndarray:
    """Each value's index among the raw values of ``h`` (int32); ``encoded``: the column holds
    them already."""
    if encoded:
        return col.cast(pl.Int32).to_numpy()
    col = col.cast(pl.String)
    known = h.column(0)
    bad = col.filter(~col.is_in(known.implode()) | col.is_null()).unique().sort()
    if bad.len():
        shown = bad.head(5).fill_null("<null>").to_list()
        raise HierarchyValueMissingError(q, shown, bad.len())
    return col.replace_strict(
        known, pl.arange(0, known.len(), eager=True), return_dtype=pl.Int32
    ).to_numpy()


def _sensitive_ids(df: pl.DataFrame, sensitive: tuple[str, ...]
                   ) -> tuple[np.ndarray, pl.DataFrame]:
    """Each row's sensitive-tuple id (int32) and the distinct tuples in id order (sorted,
    nulls first; nulls are values)."""
    table = df.select(sensitive).unique().sort(list(sensitive), nulls_last=False,
                                               maintain_order=True)
    sid = (
        df.select(sensitive)
        .with_row_index("__row")
        .join(table.with_row_index("__s"), on=list(sensitive), how="left", nulls_equal=True)
        .sort("__row")
        .get_column("__s")
        .to_numpy()
        .astype(np.int32)
    )
    return sid, table
