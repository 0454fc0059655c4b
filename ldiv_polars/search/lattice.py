"""The full-domain generalization lattice: one node per vector of hierarchy levels.

Nodes are numbered in mixed radix (the last quasi-identifier varies fastest); the whole lattice
is held as a small ``(size, q)`` numpy array, and seen as a ``heights``-shaped grid "every
generalization of this node" is a box of that grid (one slice assignment), never a Python loop
over nodes.

>>> lat = Lattice([2, 3])          # two QIs: levels 0..1 and 0..2
>>> lat.size, lat.levels(lat.top), lat.height(lat.top)
(6, (1, 2), 3)
>>> [lat.levels(i) for i in lat.successors(lat.id_of((0, 1)))]
[(1, 1), (0, 2)]
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ldiv_polars.errors import InvalidParameterError

MAX_NODES = 50_000_000
"""Largest lattice accepted (its ``(size, q)`` level array and tags are held in memory)."""


class Lattice:
    """Full-domain generalization lattice over ``heights`` (number of levels per QI).

    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when a QI has no level or the
    lattice has more than :data:`MAX_NODES` nodes."""

    def __init__(self, heights: Sequence[int]) -> None:
        hs = [int(h) for h in heights]
        if not hs or any(h < 1 for h in hs):
            raise InvalidParameterError(f"every hierarchy needs at least one level, got {hs}")
        size = int(np.prod(hs, dtype=np.float64))
        if size > MAX_NODES:
            raise InvalidParameterError(
                f"the lattice has {size:,} nodes (more than {MAX_NODES:,}); use fewer "
                f"quasi-identifiers or shorter hierarchies"
            )
        self.heights = tuple(hs)
        self.size = size
        self.radix = np.array(
            [int(np.prod(hs[i + 1:], dtype=np.int64)) for i in range(len(hs))], dtype=np.int64
        )
        # node id = the levels as a mixed-radix number, first QI most significant: the
        # C-order grid of the levels, one column per QI
        grid = np.indices(hs, dtype=np.int16).reshape(len(hs), size)
        self.nodes = np.ascontiguousarray(grid.T)
        self.node_height = grid.sum(axis=0, dtype=np.int32)
        self._radix = self.radix.tolist()
        self._succ: dict[int, list[int]] = {}
        self.bottom = 0
        self.top = size - 1

    @property
    def max_height(self) -> int:
        """Height of the top node (the sum of the highest levels)."""
        return int(sum(self.heights) - len(self.heights))

    def id_of(self, levels: Sequence[int]) -> int:
        """The node id of a level vector; :class:`~ldiv_polars.errors.InvalidParameterError`
        for a wrong length or a level out of range."""
        if len(levels) != len(self.heights):
            raise InvalidParameterError(
                f"a node needs {len(self.heights)} levels, got {len(levels)}"
            )
        for lv, h in zip(levels, self.heights):
            if not 0 <= int(lv) < h:
                raise InvalidParameterError(f"level {lv} out of range 0..{h - 1}")
        return int(np.dot(np.asarray(levels, dtype=np.int64), self.radix))

    def levels(self, node: int) -> tuple[int, ...]:
        """The level of each QI at ``node``."""
        return tuple(self.nodes[node].tolist())

    def height(self, node: int) -> int:
        """The sum of the node's levels."""
        return int(self.node_height[node])

    def successors(self, node: int) -> list[int]:
        """Direct generalizations (one QI one level up); computed once per node (the searches'
        paths walk the same nodes again and again)."""
        succ = self._succ.get(node)
        if succ is None:
            lv = self.nodes[node].tolist()
            succ = [node + r for r, v, h in zip(self._radix, lv, self.heights) if v + 1 < h]
            self._succ[node] = succ
        return succ

    def predecessors(self, node: int) -> list[int]:
        """Direct specializations (one QI one level down)."""
        lv = self.nodes[node]
        return [node - int(self.radix[i]) for i in range(len(self.heights)) if lv[i] > 0]

    def above(self, node: int) -> np.ndarray:
        """Boolean mask of the node and all its generalizations: on the lattice as a
        ``heights``-shaped grid, the box from the node's levels up (one slice assignment)."""
        m = np.zeros(self.heights, dtype=bool)
        m[self.box_above(node)] = True
        return m.reshape(-1)

    def below(self, node: int) -> np.ndarray:
        """Boolean mask of the node and all its specializations (the box up to its levels)."""
        m = np.zeros(self.heights, dtype=bool)
        m[self.box_below(node)] = True
        return m.reshape(-1)

    def box_above(self, node: int) -> tuple[slice, ...]:
        """The node and all its generalizations as a slice of the ``heights``-shaped grid."""
        return tuple(slice(v, None) for v in self.nodes[node].tolist())

    def box_below(self, node: int) -> tuple[slice, ...]:
        """The node and all its specializations as a slice of the ``heights``-shaped grid."""
        return tuple(slice(0, v + 1) for v in self.nodes[node].tolist())

    def tag(self, tags: np.ndarray, box: tuple[slice, ...], value: int) -> None:
        """Set the still-zero entries of ``tags`` (one per node, each -1, 0 or 1) inside
        ``box`` to ``value``: in place, on the box's view of the grid (no lattice-sized mask).

        >>> lat = Lattice([2, 3])
        >>> tags = np.zeros(lat.size, dtype=np.int8)
        >>> tags[lat.id_of((1, 2))] = -1
        >>> lat.tag(tags, lat.box_above(lat.id_of((0, 1))), 1)
        >>> [lat.levels(i) for i in np.flatnonzero(tags == 1)]
        [(0, 1), (0, 2), (1, 1)]
        """
        view = tags.reshape(self.heights)[box]
        if value == 1 and tags.dtype == np.int8:  # tags of -1, 0, 1: 0 | 1 == 1, the others
            view |= 1  # kept (-1 | 1 == -1), in one pass without a mask (several times faster)
        else:
            view[view == 0] = value

    def minimal_of(self, mask: np.ndarray, *, upward: bool = False) -> list[int]:
        """Nodes of ``mask`` with no other node of ``mask`` below them (the minimal elements).
        ``upward``: the caller knows ``mask`` holds every generalization of its nodes (Flash's
        passing nodes, a monotone predicate's): a node then has one of ``mask`` strictly below
        it iff one of its direct specializations is in ``mask`` (the same nodes, found
        without the cumulative pass of :meth:`strictly_above`).

        >>> lat = Lattice([2, 3])
        >>> m = np.zeros(lat.size, dtype=bool)
        >>> m[[lat.id_of((0, 2)), lat.id_of((1, 1)), lat.id_of((1, 2))]] = True
        >>> [lat.levels(i) for i in lat.minimal_of(m)], lat.minimal_of(m, upward=True)
        ([(0, 2), (1, 1)], [2, 4])
        """
        mask = np.asarray(mask, dtype=bool)
        above = self._directly_above(mask.reshape(self.heights)) if upward \
            else self.strictly_above(mask)
        return [int(i) for i in np.flatnonzero(mask & ~above)]

    def strictly_above(self, mask: np.ndarray) -> np.ndarray:
        """Boolean mask of the nodes with a node of ``mask`` strictly below them.

        On the lattice as a ``heights``-shaped grid, a cumulative OR along every axis marks
        the nodes with a node of ``mask`` at or below them; a node has one strictly below iff
        one of its direct specializations is so marked."""
        grid = np.asarray(mask, dtype=bool).reshape(self.heights)
        at_or_below = grid.copy()
        for axis in range(grid.ndim):  # (one OR per level: numpy's accumulate along a
            along = np.moveaxis(at_or_below, axis, 0)  # strided axis is slower)
            for i in range(1, along.shape[0]):
                along[i] |= along[i - 1]
        return self._directly_above(at_or_below)

    @staticmethod
    def _directly_above(grid: np.ndarray) -> np.ndarray:
        """Boolean mask (flat) of the nodes with a direct specialization marked in ``grid``
        (the lattice as a ``heights``-shaped boolean grid)."""
        strictly = np.zeros_like(grid)
        for axis in range(grid.ndim):
            if grid.shape[axis] > 1:
                lower = [slice(None)] * grid.ndim
                upper = [slice(None)] * grid.ndim
                lower[axis] = slice(0, -1)
                upper[axis] = slice(1, None)
                strictly[tuple(upper)] |= grid[tuple(lower)]
        return strictly.reshape(-1)


SHARED_MAX_NODES = 1 << 17
"""Lattices of at most this many nodes are built once per ``heights`` and shared between
searches (:func:`lattice_of`); larger ones, whose arrays are large, are built per search."""


def lattice_of(heights: Sequence[int]) -> Lattice:
    """The :class:`Lattice` over ``heights``: a small one (at most :data:`SHARED_MAX_NODES`
    nodes) built once and shared (its arrays read-only; its only state, the successors'
    memo, depends on ``heights`` alone), a larger one built anew. Errors as :class:`Lattice`.

    >>> lattice_of([2, 3]) is lattice_of((2, 3)), lattice_of([2, 3]).size
    (True, 6)
    """
    hs = tuple(int(h) for h in heights)
    if hs and min(hs) >= 1 and float(np.prod(hs, dtype=np.float64)) <= SHARED_MAX_NODES:
        return _shared(hs)
    return Lattice(hs)


@functools.lru_cache(maxsize=16)
def _shared(heights: tuple[int, ...]) -> Lattice:
    lat = Lattice(heights)
    for a in (lat.radix, lat.nodes, lat.node_height):
        a.flags.writeable = False
    return lat
