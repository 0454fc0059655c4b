"""The grouped codes :class:`~ldiv_polars.search.keys.KeyBuilder` derives from a snapshot whose
codes are its class keys (``_from_keys``), against the digits decoded one by one with Python
integers: plain mixed-radix keys (the digits divided down from the least significant group,
int32 and int64 keys) and keys with other places (a division and a remainder per group), with
and without row classes, in every code dtype the roll-ups read."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ldiv_polars.search.keys import KeyBuilder
from ldiv_polars.search.snapshot import ClassCodes, Snapshot


@st.composite
def keyed_sources(draw):
    """Cards, places (plain or with a gap before some QI), QI groups (consecutive runs), class
    keys (sorted, distinct, within the span) and row classes (None or a gather)."""
    cards = draw(st.lists(st.sampled_from([1, 2, 3, 7, 255, 4096, 70_000]), min_size=1,
                          max_size=6))
    gap = draw(st.sampled_from([1, 1, 5]))  # 5: places not those of plain keys
    assume(math.prod(cards) * gap < 2**62)  # (int64 keys)
    div = [1] * len(cards)
    for i in range(len(cards) - 2, -1, -1):
        div[i] = div[i + 1] * cards[i + 1] * (gap if i == 0 else 1)
    cuts = draw(st.lists(st.booleans(), min_size=len(cards) - 1, max_size=len(cards) - 1))
    groups, cur = [], [0]
    for i, cut in enumerate(cuts, start=1):
        if cut:
            groups.append(tuple(cur))
            cur = []
        cur.append(i)
    groups.append(tuple(cur))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    classes = draw(st.integers(0, 300))
    digits = [rng.integers(0, c, classes) for c in cards]
    keys = np.unique(sum((d.astype(np.int64) * p for d, p in zip(digits, div)),
                         np.zeros(classes, np.int64)))
    rc = None if draw(st.booleans()) or not keys.shape[0] else \
        np.sort(rng.integers(0, keys.shape[0], draw(st.integers(0, 400))))
    return cards, div, groups, keys, rc


@settings(max_examples=150, deadline=None)
@given(keyed_sources(), st.sampled_from([np.uint16, np.int32, np.intp]))
def test_grouped_codes_from_keys_are_the_groups_digits(source, dt):
    cards, div, groups, keys, rc = source
    spans = [math.prod(cards[i] for i in g) for g in groups]
    plain = div == [math.prod(cards[i + 1:]) for i in range(len(cards))]
    if dt == np.uint16 and (max(spans) > 1 << 16 or not plain):
        dt = np.int32
    if max(spans) >= 1 << 31 or not plain:  # (the roll-ups' groups span at most 2**15)
        dt = np.intp
    snap = Snapshot(tuple(0 for _ in cards), None, np.zeros(0, np.int32),
                    np.zeros(0, np.int64), (ClassCodes(keys, div, cards), rc))
    got = KeyBuilder._from_keys(snap, groups, dt)
    rows = keys.tolist() if rc is None else keys[rc].tolist()
    assert len(got) == len(groups)
    for g, m, col in zip(groups, spans, got):
        # (with other places, the first group's value is the key's leading part, undivided)
        want = [k // div[g[-1]] % (m if g[0] or plain else 1 << 62) for k in rows]
        assert col.dtype == np.dtype(dt) and col.tolist() == want
        assert not np.shares_memory(col, keys)  # fresh arrays: the caller may keep them
