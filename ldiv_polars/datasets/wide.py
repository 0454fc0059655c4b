"""Deterministic wide synthetic microdata (15 to 50 quasi-identifiers) from a latent-class model.

Every row belongs to one of ``LATENT_CLASSES`` hidden classes (Zipf-distributed). Each
quasi-identifier ``q00``, ``q01``, ... is an ordinal code ``v000``, ``v001``, ... whose
distribution depends on the row's class: a Zipf marginal over the codes times a bump around a
class-specific centre, so columns are correlated through the class (not independent marginals),
and nearby codes, which the hierarchies group together, are alike. The sensitive column
``diagnosis`` (12 values) depends on the class as well. Cardinalities cycle through
``CARDINALITIES``; each column's hierarchy (:func:`wide_hierarchies`) groups consecutive codes
by 2 (up to 16 codes) or 4, level after level, then ``*`` (4 or 5 levels).

The model's parameters come from ``numpy.random.default_rng([seed, 0xC0DE])``; chunk ``i`` of
the rows draws from ``default_rng([seed, i])``, so the same ``(rows, qis, seed, chunk_rows)``
always gives the same table and :func:`write_wide` holds one chunk in memory at a time.

>>> df = synthesize_wide(1000, qis=15, seed=3)
>>> df.columns[:3], df.columns[-1], df.height
(['q00', 'q01', 'q02'], 'diagnosis', 1000)
>>> synthesize_wide(1000, qis=15, seed=3).equals(df)
True
>>> hs = wide_hierarchies(15)
>>> [hs["q00"].height, hs["q01"].height], hs["q00"].mapping(1)["v003"]
([4, 5], 'v002..v003')
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.datasets.synth import _chunks, write_chunks
from ldiv_polars.hierarchy import Hierarchy, ordered_hierarchy

LATENT_CLASSES = 24
CARDINALITIES = (8, 12, 16, 6, 10, 24, 40, 100, 5, 32)
"""Codes per quasi-identifier, cycled over the columns."""
DIAGNOSES = 12
MAX_QIS = 50


def wide_columns(qis: int) -> list[str]:
    """The quasi-identifier names of a table with ``qis`` of them."""
    return [f"q{j:02d}" for j in range(_qis(qis))]


def _qis(qis: int) -> int:
    qis = require_int_at_least("qis", qis, 1)
    if qis > MAX_QIS:
        from ldiv_polars.errors import InvalidParameterError
        raise InvalidParameterError(f"qis must be at most {MAX_QIS}, got {qis}")
    return qis


def _card(j: int) -> int:
    return CARDINALITIES[j % len(CARDINALITIES)]


def _labels(card: int) -> list[str]:
    return [f"v{v:03d}" for v in range(card)]


@lru_cache(maxsize=8)
def _model(qis: int, seed: int) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """(class weights, per-column cumulative tables ``classes x codes``, the sensitive's)."""
    rng = np.random.default_rng([seed, 0xC0DE])
    w = 1.0 / np.arange(1, LATENT_CLASSES + 1) ** 0.8
    tables = []
    for j in range(qis):
        d = _card(j)
        v = np.arange(d)
        zipf = -0.7 * np.log1p(rng.permutation(d) % max(d // 2, 1))
        centre = rng.uniform(0, d, LATENT_CLASSES)
        width = np.maximum(d * rng.uniform(0.04, 0.2, LATENT_CLASSES), 0.5)
        logits = zipf[None, :] - np.abs(v[None, :] - centre[:, None]) / width[:, None]
        tables.append(_cumulative(logits))
    sens = _cumulative(rng.normal(0, 1.3, (LATENT_CLASSES, DIAGNOSES)))
    return w / w.sum(), tables, sens


def _cumulative(logits: np.ndarray) -> np.ndarray:
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    cum = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    cum[:, -1] = 1.0
    return cum


def _draw(rng: np.random.Generator, z: np.ndarray, cum: np.ndarray) -> np.ndarray:
    """One code per row from its class's cumulative table (a search per class)."""
    u = rng.random(z.shape[0])
    out = np.empty(z.shape[0], dtype=np.int64)
    for k in range(cum.shape[0]):
        idx = np.flatnonzero(z == k)
        out[idx] = np.searchsorted(cum[k], u[idx], side="right")
    return np.minimum(out, cum.shape[1] - 1)


def _chunk(rows: int, qis: int, seed: int, index: int) -> pl.DataFrame:
    weights, tables, sens = _model(qis, seed)
    rng = np.random.default_rng([seed, index])
    z = rng.choice(LATENT_CLASSES, size=rows, p=weights)
    cols = {f"q{j:02d}": pl.Series(_labels(_card(j))).gather(_draw(rng, z, cum))
            for j, cum in enumerate(tables)}
    cols["diagnosis"] = pl.Series([f"d{v:02d}" for v in range(DIAGNOSES)]).gather(
        _draw(rng, z, sens))
    return pl.DataFrame(cols)


def synthesize_wide(rows: int, qis: int = 25, seed: int = 0, *,
                    chunk_rows: int = 1_000_000) -> pl.DataFrame:
    """The wide table (``qis`` quasi-identifiers, then ``diagnosis``) in memory; use
    :func:`write_wide` for large tables. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` for ``qis`` outside 1..50."""
    rows = require_int_at_least("rows", rows, 0)
    chunk_rows = require_int_at_least("chunk_rows", chunk_rows, 1)
    qis = _qis(qis)
    if rows == 0:
        return _chunk(1, qis, seed, 0).clear()
    return pl.concat([_chunk(n, qis, seed, i)
                      for i, n in enumerate(_chunks(rows, chunk_rows))])


def write_wide(path: str | Path, rows: int, qis: int = 25, seed: int = 0, *,
               chunk_rows: int = 1_000_000) -> Path:
    """Write the wide table to a Parquet file chunk by chunk (bounded memory), atomically; the
    same content as :func:`synthesize_wide` with the same arguments. Errors as
    :func:`~ldiv_polars.datasets.synth.write_synthetic`."""
    rows = require_int_at_least("rows", rows, 0)
    chunk_rows = require_int_at_least("chunk_rows", chunk_rows, 1)
    qis = _qis(qis)
    return write_chunks(path, rows, chunk_rows, lambda n, i: _chunk(n, qis, seed, i))


def wide_hierarchies(qis: int = 25) -> dict[str, Hierarchy]:
    """A hierarchy per quasi-identifier: consecutive codes grouped by 2 (up to 16 codes) or by
    4, level after level, until one group is left, then ``*``."""
    out = {}
    for j, name in enumerate(wide_columns(qis)):
        d = _card(j)
        f = 2 if d <= 16 else 4
        sizes, s = [], f
        while s < d:
            sizes.append(s)
            s *= f
        out[name] = ordered_hierarchy(_labels(d), sizes, name=name)
    return out
