"""Data-independent design (the paper's "locally trusted" mode, §IV.B and §V.C).

A central party runs MDAV (with ``n_min``) on a *model population* before the survey, and
publishes the partition; each respondent applies it locally and sends only the cell (or its
centroid). Two published forms:

* **intensional**: the MDAV reference points in selection order, each with the squared
  distance to the last point it took; a point belongs to the first cell whose ball holds it,
  else to the final "rest" cell. It reproduces the model population's cells exactly when no
  cell had records at exactly its radius left out by the tie-break (``boundary_ties == 0``,
  always the case on continuous data).
* **extensional**: the model points and their cells; a point takes the cell of its nearest
  model point (``scipy.spatial.cKDTree``).

>>> import numpy as np
>>> pop = np.random.default_rng(0).normal(size=(200, 2))
>>> spec = design_partition(pop, k=5, pi=0.75, p_bar=1e-3)
>>> spec.n_min, bool((assign(pop, spec) == spec.labels).all())
(13, True)
>>> spec2 = PartitionSpec.from_json(spec.to_json())
>>> bool((assign(pop[:7], spec2) == spec.labels[:7]).all())
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
from scipy.spatial import cKDTree

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.microagg.mdav import MdavResult, _as_matrix, mdav, sqdist
from ldiv_polars.microagg.participation import effective_anonymity

__all__ = ["PartitionSpec", "assign", "design_partition"]

AssignMethod = Literal["intensional", "extensional"]


@dataclass(frozen=True)
class PartitionSpec:
    """A published MDAV partition (see the module docstring).

    Attributes:
        columns: names of the quasi-identifiers, in order (may be empty for a bare matrix).
        k, n_min: requested anonymity and the cell size used (``n_min = k`` without ``pi``).
        mean, scale: standardization ``z = (x - mean) / scale``.
        references: standardized reference points in selection order (one per cell except
            the final rest cell).
        radii: squared standardized radius of each referenced cell.
        centroids: centroid of every cell in original units (row ``c`` = cell ``c``).
        points, labels: the model population (standardized) and its cells (extensional form).
        boundary_ties: see :class:`~ldiv_polars.microagg.mdav.MdavResult`.
    """

    columns: tuple[str, ...]
    k: int
    n_min: int
    mean: np.ndarray
    scale: np.ndarray
    references: np.ndarray
    radii: np.ndarray
    centroids: np.ndarray
    points: np.ndarray
    labels: np.ndarray
    boundary_ties: int
    pi: float | None = None
    p_bar: float | None = None

    @property
    def n_cells(self) -> int:
        """The number of cells (centroids)."""
        return int(self.centroids.shape[0])

    @property
    def rest_cell(self) -> int:
        """Id of the last cell, the one without a reference point."""
        return int(self.references.shape[0])

    def to_dict(self, *, extensional: bool = True) -> dict[str, object]:
        """JSON-ready dict; floats keep their exact value (``repr`` round-trips)."""
        out: dict[str, object] = {
            "format": "ldiv-mdav-partition/1",
            "columns": list(self.columns),
            "k": self.k,
            "n_min": self.n_min,
            "pi": self.pi,
            "p_bar": self.p_bar,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "references": self.references.tolist(),
            "radii": self.radii.tolist(),
            "centroids": self.centroids.tolist(),
            "boundary_ties": self.boundary_ties,
        }
        if extensional:
            out["points"] = self.points.tolist()
            out["labels"] = self.labels.tolist()
        return out

    def to_json(self, *, extensional: bool = True) -> str:
        """The spec as JSON text (see :meth:`to_dict`; read back by :meth:`from_json`)."""
        return json.dumps(self.to_dict(extensional=extensional))

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> PartitionSpec:
        """The spec from its dict form (:meth:`to_dict`); raises
        :class:`~ldiv_polars.errors.InvalidParameterError` for a dict of another format."""
        if d.get("format") != "ldiv-mdav-partition/1":
            raise InvalidParameterError(
                f"not an ldiv MDAV partition spec (format {d.get('format')!r})"
            )
        m = len(d["mean"])  # type: ignore[arg-type]
        return cls(
            columns=tuple(d["columns"]),  # type: ignore[arg-type]
            k=int(d["k"]),  # type: ignore[arg-type]
            n_min=int(d["n_min"]),  # type: ignore[arg-type]
            mean=np.asarray(d["mean"], dtype=np.float64),
            scale=np.asarray(d["scale"], dtype=np.float64),
            references=np.asarray(d["references"], dtype=np.float64).reshape(-1, m),
            radii=np.asarray(d["radii"], dtype=np.float64),
            centroids=np.asarray(d["centroids"], dtype=np.float64).reshape(-1, m),
            points=np.asarray(d.get("points", []), dtype=np.float64).reshape(-1, m),
            labels=np.asarray(d.get("labels", []), dtype=np.int64),
            boundary_ties=int(d["boundary_ties"]),  # type: ignore[arg-type]
            pi=None if d.get("pi") is None else float(d["pi"]),  # type: ignore[arg-type]
            p_bar=None if d.get("p_bar") is None else float(d["p_bar"]),  # type: ignore[arg-type]
        )

    @classmethod
    def from_json(cls, text: str) -> PartitionSpec:
        """The spec from its JSON text (:meth:`to_json`); unreadable text raises
        :class:`~ldiv_polars.errors.InvalidParameterError`."""
        try:
            return cls.from_dict(json.loads(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidParameterError(f"cannot read the partition spec: {exc}") from exc


def _matrix_from(data: object, columns: Sequence[str] | None) -> tuple[np.ndarray, tuple[str, ...]]:
    if isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        df = data.collect() if isinstance(data, pl.LazyFrame) else data
        cols = tuple(columns) if columns else tuple(df.columns)
        missing = [c for c in cols if c not in df.columns]
        if missing:
            from ldiv_polars.errors import UnknownColumnError

            raise UnknownColumnError(missing, df.columns)
        if df.select(pl.any_horizontal(pl.col(cols).is_null()).any()).item():
            raise InvalidParameterError(f"null values in the quasi-identifier columns {list(cols)}")
        return _as_matrix(df.select(cols).to_numpy()), cols
    return _as_matrix(data), tuple(columns or ())


def design_partition(
    population: object,
    columns: Sequence[str] | None = None,
    *,
    k: int,
    pi: float | None = None,
    p_bar: float | None = None,
) -> PartitionSpec:
    """Run MDAV with ``n_min`` (or ``k`` without ``pi``) on a model population and export it.

    ``population`` is an ``(N, m)`` matrix or a Polars frame (``columns`` select the QIs).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the population is smaller than
    one cell or ``pi`` comes without ``p_bar``.
    """
    x, cols = _matrix_from(population, columns)
    k = require_int_at_least("k", k, 1)
    n_min = k
    if pi is not None:
        if p_bar is None:
            raise InvalidParameterError("p_bar is required together with pi")
        n_min = effective_anonymity(k, pi, p_bar).n_min
    if x.shape[0] < n_min:
        raise InvalidParameterError(
            f"the model population has {x.shape[0]} record(s), fewer than the cell size {n_min}"
        )
    res: MdavResult = mdav(x, n_min)
    z = (x - res.mean) / res.scale
    refs = res.references[res.references >= 0]
    return PartitionSpec(
        columns=cols,
        k=k,
        n_min=n_min,
        mean=res.mean,
        scale=res.scale,
        references=z[refs],
        radii=res.radii[: refs.size],
        centroids=res.centroids,
        points=z,
        labels=res.labels,
        boundary_ties=res.boundary_ties,
        pi=pi,
        p_bar=p_bar,
    )


def assign(x: object, spec: PartitionSpec, *, method: AssignMethod = "intensional") -> np.ndarray:
    """Cell of each point of ``x`` under a published partition (the respondent's side).

    ``x``: one point (1-d), an ``(n, m)`` matrix, or a Polars frame holding ``spec.columns``.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` on points of another dimension than
    the spec's, an unknown ``method``, or ``extensional`` on a spec exported without its model
    points.
    """
    if isinstance(x, (pl.DataFrame, pl.LazyFrame)):
        xm, _ = _matrix_from(x, spec.columns or None)
    else:
        arr = np.asarray(x, dtype=np.float64)
        xm = _as_matrix(arr[None, :] if arr.ndim == 1 and spec.mean.size > 1 else arr)
    if xm.shape[1] != spec.mean.size:
        raise InvalidParameterError(
            f"points have {xm.shape[1]} coordinate(s), the spec has {spec.mean.size}"
        )
    z = (xm - spec.mean) / spec.scale
    if method == "extensional":
        if spec.points.shape[0] == 0:
            raise InvalidParameterError(
                "this spec was exported without its model points (extensional=False)"
            )
        _, nearest = cKDTree(spec.points).query(z, k=1)
        return spec.labels[np.asarray(nearest)]
    if method != "intensional":
        raise InvalidParameterError(
            f"method must be 'intensional' or 'extensional', got {method!r}"
        )
    out = np.full(z.shape[0], spec.rest_cell, dtype=np.int64)
    open_ = np.ones(z.shape[0], dtype=bool)
    for c in range(
        spec.references.shape[0]
    ):  # loop over cells (small state), vectorized over points
        idx = np.flatnonzero(open_)
        if idx.size == 0:
            break
        hit = idx[sqdist(z[idx], spec.references[c]) <= spec.radii[c]]
        out[hit] = c
        open_[hit] = False
    return out
