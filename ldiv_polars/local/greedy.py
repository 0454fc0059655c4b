"""Greedy cell suppression over distinct keys (sdcMicro's ``localSuppression`` idea, batched).

Each round evaluates every pattern's class (:mod:`ldiv_polars.local.classes`) and, for each
failing pattern ``f`` (smallest first), scores its candidate moves in one batched evaluation:

- *push*: suppress one more QI ``i`` of ``f``'s records (cost ``w_i`` per record);
- *pull* (own-value semantics only): move one key whose values refine ``f`` into ``f`` by
  suppressing the positions it lacks (its old class must still pass, or be empty).

A move *resolves* ``f`` when the class ``f``'s records land in passes. The cheapest resolving
move is taken; with none, the push of the least important QI that leaves the largest class
(most progress), or, for a fully suppressed ``f``, the cheapest pull. Moves whose classes
were changed by an earlier move of the same round wait for the next round. Every move adds
suppressed cells, so the loop ends; the fully suppressed release passes whenever the whole
table does (checked first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ldiv_polars.local.classes import (
    STAR,
    Semantics,
    class_verdicts,
    compatible_sum,
    group_sum,
    mask_array,
    masks_of,
    release_verdicts,
    unique_rows,
)
from ldiv_polars.local.keys import KeyTable
from ldiv_polars.models.base import Model

PULLS_PER_PATTERN = 8
"""Pull candidates scored per failing pattern (the cheapest ones)."""


@dataclass
class _Move:
    f: int
    cost: float
    kind: str  # "push" | "pull"
    qi: int = -1  # push: the QI suppressed
    key: int = -1  # pull: the key moved
    merged: int = -1  # row of the merged class in the batch
    side: int = -1  # pull: row of the key's old class after the move


def greedy_masks(table: KeyTable, models: Sequence[Model], weights: np.ndarray,
                 semantics: Semantics) -> tuple[np.ndarray, int]:
    """(mask per key, rounds) of the greedy release: under own-value semantics the grouping
    phase (:func:`group_by_masks`) first, then the repair rounds."""
    start = group_by_masks(table, models, weights) if semantics == "value" else None
    return repair(table, models, weights, semantics, masks=start)


def group_by_masks(table: KeyTable, models: Sequence[Model], weights: np.ndarray
                   ) -> np.ndarray:
    """Own-value grouping phase: masks in increasing cost; at each cost, repeatedly the mask
    whose patterns resolve the most records of unsafe keys (the keys still unresolved, with
    any records already released at that pattern, form a passing class) is applied to them.
    Keys unresolved at the end keep mask 0 (the repair rounds take them)."""
    key_hist = table.histogram()
    ref, sv = table.reference(), table.s_values
    q = len(table.qi)
    cost = mask_costs(weights)
    masks = np.zeros(table.keys, dtype=np.int64)
    open_ = ~class_verdicts(key_hist, models, sv, ref)
    levels = sorted({round(float(c), 9) for c in cost[1:]})
    for level in levels:
        pool = [int(b) for b in range(1, 1 << q) if round(float(cost[b]), 9) == level]
        while open_.any() and pool:
            best, best_rows, best_keys = -1, 0, None
            for b in pool:
                keys = _resolved_at(table, masks, open_, b, models)
                rows = int(table.n[keys].sum())
                if rows > best_rows:
                    best, best_rows, best_keys = b, rows, keys
            if best < 0:
                break
            masks[best_keys] = best
            open_[best_keys] = False
            pool.remove(best)
    return masks


def _resolved_at(table: KeyTable, masks: np.ndarray, open_: np.ndarray, b: int,
                 models: Sequence[Model]) -> np.ndarray:
    """The open keys whose pattern under mask ``b`` forms a passing class with the other open
    keys and the records already released there."""
    open_keys = np.flatnonzero(open_)
    done = np.flatnonzero(~open_ & (masks == b))
    rows = mask_array(table.codes[np.concatenate([open_keys, done])], np.full(
        open_keys.size + done.size, b, dtype=np.int64))
    _, inv = unique_rows(rows)
    hist = group_sum(inv, table.histogram()[np.concatenate([open_keys, done])],
                     int(inv.max()) + 1 if inv.size else 0)
    ok = class_verdicts(hist, models, table.s_values, table.reference())
    return open_keys[ok[inv[: open_keys.size]]]


def repair(table: KeyTable, models: Sequence[Model], weights: np.ndarray,
           semantics: Semantics, *, masks: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """(mask per key, rounds): push/pull rounds from ``masks`` (default: none suppressed)
    until every class passes."""
    codes, key_hist = table.codes, table.histogram()
    ref, sv = table.reference(), table.s_values
    m = np.zeros(table.keys, dtype=np.int64) if masks is None else masks.astype(np.int64)
    rounds = 0
    while True:
        pcodes, kp, phist, ok = release_verdicts(codes, m, key_hist, models, sv, ref, semantics)
        if ok.all():
            return m, rounds
        rounds += 1
        psize = phist.sum(axis=1)
        failing = np.flatnonzero(~ok)
        failing = failing[np.argsort(psize[failing], kind="stable")]
        moves, hists = _candidates(table, m, pcodes, kp, phist, failing, weights, semantics)
        passes = class_verdicts(hists, models, sv, ref)
        _apply(table, m, pcodes, kp, ok, failing, moves, passes, hists, semantics)


def _candidates(table: KeyTable, m: np.ndarray, pcodes: np.ndarray, kp: np.ndarray,
                phist: np.ndarray, failing: np.ndarray, weights: np.ndarray,
                semantics: Semantics) -> tuple[list[_Move], np.ndarray]:
    """Every failing pattern's moves and the histograms of the classes they produce."""
    q = pcodes.shape[1]
    moves: list[_Move] = []
    pushed: list[np.ndarray] = []
    psize = phist.sum(axis=1)
    for f in failing:
        for i in range(q):
            if pcodes[f, i] != STAR:
                row = pcodes[f].copy()
                row[i] = STAR
                pushed.append(row)
                moves.append(_Move(int(f), float(weights[i] * psize[f]), "push", qi=i))
    new = np.array(pushed, dtype=pcodes.dtype).reshape(-1, q)
    if semantics == "wildcard":
        merged = compatible_sum(new, pcodes, phist)
    else:
        # the pushed records join the pattern's existing class, if any
        _, inv = unique_rows(np.concatenate([pcodes, new]))
        where = np.full(int(inv.max()) + 1 if inv.size else 0, -1, dtype=np.int64)
        where[inv[: pcodes.shape[0]]] = np.arange(pcodes.shape[0])
        target = where[inv[pcodes.shape[0]:]]
        merged = np.array([phist[mv.f] for mv in moves]).reshape(-1, phist.shape[1]) \
            + np.where(target[:, None] >= 0, phist[np.maximum(target, 0)], 0)
    for j, mv in enumerate(moves):
        mv.merged = j
    rows = [merged]
    if semantics == "value":
        rows += _pulls(table, m, pcodes, kp, phist, failing, weights, moves, len(moves))
    return moves, np.concatenate(rows) if rows else np.zeros((0, phist.shape[1]), np.int64)


def _pulls(table: KeyTable, m: np.ndarray, pcodes: np.ndarray, kp: np.ndarray,
           phist: np.ndarray, failing: np.ndarray, weights: np.ndarray, moves: list[_Move],
           offset: int) -> list[np.ndarray]:
    """Pull moves (appended to ``moves``) and their (merged, side) histograms."""
    key_hist = table.histogram()
    mask_cost = mask_costs(weights)
    fmask = masks_of(pcodes)
    merged, side = [], []
    for f in failing:
        fixed = pcodes[f] != STAR
        cand = np.flatnonzero(
            (kp != f) & ((m & ~fmask[f]) == 0)
            & np.all(table.codes[:, fixed] == pcodes[f, fixed], axis=1))
        if not cand.size:
            continue
        cost = table.n[cand] * mask_cost[fmask[f] & ~m[cand]]
        best = cand[np.argsort(cost, kind="stable")[:PULLS_PER_PATTERN]]
        for k in best:
            moves.append(_Move(int(f), float(table.n[k] * mask_cost[fmask[f] & ~m[k]]), "pull",
                               key=int(k), merged=offset + len(merged),
                               side=-1))
            merged.append(phist[f] + key_hist[k])
            side.append(phist[kp[k]] - key_hist[k])
    if not merged:
        return []
    n_pull = len(merged)
    for j, mv in enumerate(moves[-n_pull:]):
        mv.side = offset + n_pull + j
    return [np.array(merged), np.array(side)]


def mask_costs(weights: np.ndarray) -> np.ndarray:
    """The cost of suppressing each mask's cells in one record (indexed by mask)."""
    q = weights.shape[0]
    bits = (np.arange(1 << q)[:, None] >> np.arange(q)) & 1
    return bits @ weights


def _apply(table: KeyTable, m: np.ndarray, pcodes: np.ndarray, kp: np.ndarray,
           ok: np.ndarray, failing: np.ndarray, moves: list[_Move], passes: np.ndarray,
           hists: np.ndarray, semantics: Semantics) -> None:
    """Choose and apply one move per failing pattern (skipping patterns already touched)."""
    by_f: dict[int, list[_Move]] = {}
    for mv in moves:
        by_f.setdefault(mv.f, []).append(mv)
    sizes = hists.sum(axis=1)
    touched = np.zeros(pcodes.shape[0], dtype=bool)
    applied = 0
    for f in failing:
        f = int(f)
        if touched[f] or f not in by_f:
            continue
        cands = by_f[f]

        def fine(mv: _Move) -> bool:
            if not passes[mv.merged]:
                return False
            return mv.side < 0 or passes[mv.side] or sizes[mv.side] == 0 or not ok[kp[mv.key]]

        good = [mv for mv in cands if fine(mv)]
        if good:
            choice = min(good, key=lambda mv: (mv.cost, mv.kind != "push"))
        else:
            pushes = [mv for mv in cands if mv.kind == "push"]
            pool = pushes or cands
            choice = min(pool, key=lambda mv: (-sizes[mv.merged], mv.cost))
        if choice.kind == "pull" and touched[kp[choice.key]]:
            continue
        members = np.flatnonzero(kp == f)
        if choice.kind == "push":
            m[members] |= 1 << choice.qi
            row = pcodes[f].copy()
            row[choice.qi] = STAR
            _touch(touched, pcodes, row, semantics)
        else:
            touched[kp[choice.key]] = True
            m[choice.key] = masks_of(pcodes[f:f + 1])[0]
        touched[f] = True
        applied += 1
    assert applied, "a greedy round must apply a move"


def _touch(touched: np.ndarray, pcodes: np.ndarray, row: np.ndarray, semantics: Semantics
           ) -> None:
    """Mark the patterns whose class changes when records take the pattern ``row``."""
    if semantics == "value":
        touched |= np.all(pcodes == row, axis=1)
        return
    both = (pcodes != STAR) & (row != STAR)
    touched |= np.all(~both | (pcodes == row), axis=1)
