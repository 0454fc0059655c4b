"""Deterministic synthetic microdata with census-like skew and correlation.

Columns: ``age`` (17-90, skewed young), ``sex``, ``race`` (skewed), ``zip`` (5-digit string,
Zipf-distributed over 5,000 codes sharing 3-digit regions), ``education`` (16 levels, depends
on age), ``marital_status`` (depends on age), ``occupation`` (depends on education and sex),
``disease`` (20 values, depends on age and sex), ``income`` (integer, log-normal, depends on
education and age).

Rows are produced in chunks; chunk ``i`` draws from ``numpy.random.default_rng([seed, i])``,
so the same ``(rows, seed, chunk_rows)`` always gives the same table and ``write_synthetic``
holds one chunk in memory at a time (100M rows in bounded memory).

>>> df = synthesize(1000, seed=7)
>>> df.columns == list(SYNTH_COLUMNS)
True
>>> synthesize(1000, seed=7).equals(df)
True
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from ldiv_polars.core.output import PARQUET_SUFFIXES, atomic_output
from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError

SYNTH_COLUMNS = (
    "age",
    "sex",
    "race",
    "zip",
    "education",
    "marital_status",
    "occupation",
    "disease",
    "income",
)

MAX_ROWS = 2**32 - 1 if pl.get_index_type() == pl.UInt32 else 2**63 - 1
"""The most rows :func:`synthesize` and :func:`write_synthetic` make: the largest table Polars
holds (its row index: 32 bits by default). More is refused before anything is generated (it
was a MemoryError building the list of chunks)."""

SEXES = ("Male", "Female")
RACES = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")
RACE_P = (0.76, 0.13, 0.06, 0.02, 0.03)
EDUCATION = (
    "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
    "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate",
)
MARITAL = (
    "Never-married", "Married-civ-spouse", "Divorced", "Separated", "Widowed",
    "Married-spouse-absent", "Married-AF-spouse",
)
OCCUPATIONS = (
    "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
    "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
    "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces",
)
DISEASES = (
    "Flu", "Common cold", "Hypertension", "Diabetes", "Asthma", "Bronchitis", "Gastritis",
    "Migraine", "Arthritis", "Heart disease", "Back pain", "Allergy", "Depression", "Anxiety",
    "Pneumonia", "Stomach cancer", "Lung cancer", "Breast cancer", "HIV", "Hepatitis",
)
N_ZIPS = 5000


def _age_weights() -> np.ndarray:
    ages = np.arange(17, 91)
    w = np.exp(-((ages - 36.0) / 17.0) ** 2) + 0.25 * np.exp(-(ages - 17) / 30.0)
    return w / w.sum()


def _zip_table() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261122)  # fixed: the code list does not depend on the seed
    regions = rng.choice(np.arange(100, 1000), size=250, replace=False)
    region = np.repeat(regions, N_ZIPS // 250)
    suffix = rng.integers(0, 100, size=N_ZIPS)
    codes = np.char.add(region.astype(str), np.char.zfill(suffix.astype(str), 2))
    ranks = rng.permutation(N_ZIPS) + 1
    w = 1.0 / ranks**1.07
    return codes, w / w.sum()


def _categorical(rng: np.random.Generator, probs: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Draw one category per row from ``probs[group[row]]`` (rows x categories), vectorized."""
    cum = np.cumsum(probs, axis=1)
    cum[:, -1] = 1.0
    u = rng.random(group.shape[0])
    return (u[:, None] > cum[group]).sum(axis=1)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_AGE_P = _age_weights()
_ZIPS, _ZIP_P = _zip_table()
_EDU_IDX = np.arange(len(EDUCATION))
_EDU_POP = np.array([1, 2, 3, 6, 5, 9, 11, 4, 100, 70, 13, 10, 52, 17, 6, 4], dtype=float)
# marital probabilities for age bands <25, 25-34, 35-54, 55-69, 70+
_MARITAL_P = np.array([
    [0.88, 0.08, 0.01, 0.01, 0.00, 0.01, 0.01],
    [0.45, 0.42, 0.07, 0.03, 0.00, 0.02, 0.01],
    [0.15, 0.58, 0.17, 0.04, 0.02, 0.03, 0.01],
    [0.06, 0.60, 0.16, 0.03, 0.12, 0.02, 0.01],
    [0.04, 0.45, 0.08, 0.01, 0.40, 0.01, 0.01],
])
_OCC_BASE = np.log(np.array([3, 13, 10, 12, 13, 13, 4, 6, 12, 3, 5, 0.5, 2, 0.05]))
# education band (low / mid / high) x sex shifts of the occupation log-weights
_OCC_SHIFT = np.zeros((3, 2, len(OCCUPATIONS)))
_OCC_SHIFT[0, :, [1, 2, 6, 7, 9, 10, 11]] += 1.2
_OCC_SHIFT[2, :, [0, 4, 5]] += 1.6
_OCC_SHIFT[:, 0, [1, 6, 9, 10, 12, 13]] += 0.9  # male
_OCC_SHIFT[:, 1, [2, 8, 11]] += 1.0  # female
_OCC_P = _softmax(_OCC_BASE[None, None, :] + _OCC_SHIFT).reshape(6, len(OCCUPATIONS))
_DIS_BASE = np.log(np.array(
    [20, 18, 10, 7, 6, 5, 5, 6, 5, 4, 8, 6, 4, 4, 2, 0.5, 0.6, 0.6, 0.3, 0.4]))
_DIS_SHIFT = np.zeros((4, 2, len(DISEASES)))
_DIS_SHIFT[0, :, [0, 1, 4, 11, 13]] += 0.8  # young
_DIS_SHIFT[2, :, [2, 3, 8, 9, 10]] += 0.9
_DIS_SHIFT[3, :, [2, 3, 8, 9, 14, 15, 16]] += 1.5  # old
_DIS_SHIFT[:, 1, [17, 7, 12]] += 1.3  # female
_DIS_SHIFT[:, 0, [17]] -= 4.0
_DIS_P = _softmax(_DIS_BASE[None, None, :] + _DIS_SHIFT).reshape(8, len(DISEASES))


def _chunk(rows: int, seed: int, index: int) -> pl.DataFrame:
    rng = np.random.default_rng([seed, index])
    age = rng.choice(np.arange(17, 91), size=rows, p=_AGE_P)
    sex = (rng.random(rows) < 0.33).astype(np.int64)  # 0 male (67%), 1 female, as in Adult
    race = rng.choice(len(RACES), size=rows, p=np.array(RACE_P))
    zip_idx = rng.choice(N_ZIPS, size=rows, p=_ZIP_P)
    # education: older cohorts and the very young have less formal education
    edu_mu = 9.2 + 0.5 * np.tanh((age - 22) / 6.0) - 0.02 * np.clip(age - 50, 0, None)
    edu_raw = np.log(_EDU_POP / _EDU_POP.sum())[None, :] - 0.08 * (
        (_EDU_IDX[None, :] - edu_mu[:, None]) ** 2
    )
    edu = _categorical_rows(rng, _softmax(edu_raw))
    band = np.digitize(age, [25, 35, 55, 70])
    marital = _categorical(rng, _MARITAL_P, band)
    edu_band = np.digitize(edu, [8, 12])
    occ = _categorical(rng, _OCC_P, edu_band * 2 + sex)
    age_band = np.digitize(age, [30, 45, 65])
    disease = _categorical(rng, _DIS_P, age_band * 2 + sex)
    log_income = (
        9.1 + 0.09 * edu + 0.025 * np.minimum(age, 55) - 0.2 * sex + rng.normal(0, 0.55, rows)
    )
    income = (np.round(np.exp(log_income) / 100.0) * 100).astype(np.int64)
    return pl.DataFrame(
        {
            "age": age.astype(np.int64),
            "sex": pl.Series(SEXES).gather(sex),
            "race": pl.Series(RACES).gather(race),
            "zip": pl.Series(_ZIPS.tolist()).gather(zip_idx),
            "education": pl.Series(EDUCATION).gather(edu),
            "marital_status": pl.Series(MARITAL).gather(marital),
            "occupation": pl.Series(OCCUPATIONS).gather(occ),
            "disease": pl.Series(DISEASES).gather(disease),
            "income": income,
        }
    )


def _categorical_rows(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    cum = np.cumsum(probs, axis=1)
    cum[:, -1] = 1.0
    u = rng.random(probs.shape[0])
    return (u[:, None] > cum).sum(axis=1)


def _chunks(rows: int, chunk_rows: int) -> list[int]:
    sizes = [chunk_rows] * (rows // chunk_rows)
    if rows % chunk_rows:
        sizes.append(rows % chunk_rows)
    return sizes


def _check_rows(rows: object) -> int:
    """``rows`` as an int in ``[0, MAX_ROWS]``; :class:`InvalidParameterError` otherwise."""
    n = require_int_at_least("rows", rows, 0)
    if n > MAX_ROWS:
        raise InvalidParameterError(f"rows must be at most {MAX_ROWS:,} (the largest table "
                                    f"Polars holds), got {n:,}")
    return n


def synthesize(rows: int, seed: int = 0, *, chunk_rows: int = 1_000_000) -> pl.DataFrame:
    """The synthetic table as a DataFrame (in memory; use :func:`write_synthetic` for large
    tables)."""
    rows = _check_rows(rows)
    chunk_rows = require_int_at_least("chunk_rows", chunk_rows, 1)
    seed = require_int_at_least("seed", seed, 0)  # numpy's seeds are non-negative
    if rows == 0:
        return _chunk(1, seed, 0).clear()
    return pl.concat([_chunk(n, seed, i) for i, n in enumerate(_chunks(rows, chunk_rows))])


def write_synthetic(
    path: str | Path, rows: int, seed: int = 0, *, chunk_rows: int = 1_000_000
) -> Path:
    """Write the synthetic table to a Parquet file chunk by chunk (bounded memory); return the
    path. Same content as :func:`synthesize` with the same arguments.

    ``path`` must end in ``.parquet`` or ``.pq`` and its directory must exist
    (:class:`~ldiv_polars.errors.OutputPathError` otherwise, before anything is generated); the
    file is written atomically (:func:`~ldiv_polars.core.output.atomic_output`): an interrupted
    run leaves no partial file and an existing file at ``path`` is replaced only once the new
    one is complete.
    """
    rows = _check_rows(rows)
    chunk_rows = require_int_at_least("chunk_rows", chunk_rows, 1)
    seed = require_int_at_least("seed", seed, 0)  # numpy's seeds are non-negative
    return write_chunks(path, rows, chunk_rows, lambda n, i: _chunk(n, seed, i))


def write_chunks(path: str | Path, rows: int, chunk_rows: int,
                 make: Callable[[int, int], pl.DataFrame]) -> Path:
    """Write ``make(n, i)`` for the chunks of ``rows`` (at most ``chunk_rows`` each; chunk
    ``i`` has ``n`` rows) to the Parquet file ``path``, one chunk in memory at a time, atomically
    (see :func:`write_synthetic`); return the path."""
    path = Path(path)
    sizes = _chunks(rows, chunk_rows) or [0]
    with atomic_output(path, suffixes=PARQUET_SUFFIXES) as out:
        writer: pq.ParquetWriter | None = None
        try:
            for i, n in enumerate(sizes):
                table = (make(n, i) if n else make(1, 0).clear()).to_arrow()
                if writer is None:
                    writer = pq.ParquetWriter(out.path, table.schema, compression="zstd")
                writer.write_table(table, row_group_size=min(max(n, 1), 1_000_000))
        finally:
            if writer is not None:
                writer.close()
        out.check_rows(rows)
    return path
