"""Table-level verdicts (:class:`~ldiv_polars.models.base.ModelResult`) from an evaluated
classes table (:func:`~ldiv_polars.models.evaluate_classes`): one small select for the
per-class models, the class sizes for a table-level one (:func:`table_level_result`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ldiv_polars.models.base import SIZE, Model, ModelResult
from ldiv_polars.models.table_level import classes_to_suppress


def table_results(classes: pl.DataFrame, models: Sequence[Model]) -> list[ModelResult]:
    """Table-level verdicts from an evaluated classes table (one small select); a table-level
    model (``table_level``) is asked on the class sizes (:func:`table_level_result`)."""
    per_class = [m for m in models if not m.table_level]
    exprs: list[pl.Expr] = []
    for m in per_class:
        ok = pl.col(f"pass_{m.key}")
        exprs += [
            m.achieved().alias(f"{m.key}::achieved"),
            (~ok).sum().alias(f"{m.key}::fc"),
            pl.col(SIZE).filter(~ok).sum().alias(f"{m.key}::fr"),
        ]
    row = classes.select(exprs).row(0, named=True) if exprs else {}
    sizes = classes.get_column(SIZE).to_numpy() if len(per_class) < len(models) else None
    out = []
    for m in models:
        if m.table_level:
            out.append(table_level_result(m, sizes))  # type: ignore[arg-type]
            continue
        fc = int(row[f"{m.key}::fc"] or 0)
        ach = row[f"{m.key}::achieved"]
        out.append(
            ModelResult(
                key=m.key,
                model=m.name,
                params=m.params(),
                passed=fc == 0,
                achieved=m.achieved_value(ach),
                failing_classes=fc,
                failing_rows=int(row[f"{m.key}::fr"] or 0),
            )
        )
    return out


def table_level_result(m: Model, sizes: Any) -> ModelResult:
    """The verdict of a table-level model on the class sizes ``sizes`` (a numpy array): its
    achieved figure, and, when it fails, as failing classes and rows the smallest classes
    whose suppression would make it hold (ARX's order, see
    :func:`~ldiv_polars.models.table_level.classes_to_suppress`; the whole table when none
    would)."""
    import numpy as np

    passed = m.table_holds(sizes)  # type: ignore[attr-defined]
    fc = fr = 0
    if not passed:
        total = int(np.sum(sizes))
        count = classes_to_suppress(m, sizes, total)  # type: ignore[arg-type]
        fc = len(sizes) if count is None else count
        fr = total if count is None else int(np.sort(sizes)[:count].sum())
    return ModelResult(key=m.key, model=m.name, params=m.params(), passed=passed,
                       achieved=m.achieved_value(m.table_value(sizes)),  # type: ignore[attr-defined]
                       failing_classes=fc, failing_rows=fr, details={"table_level": True})
