"""The result of one population-uniqueness model: an estimate, or ``None`` and why."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Estimate:
    """Estimated number of population-unique records (``None`` when the model has no admissible
    solution, ``reason`` then says why), with the fitted parameters."""

    uniques: float | None
    reason: str | None = None
    params: dict[str, float] = field(default_factory=dict)
