"""Work budgets for the computations that are not one group-by (wildcard matching, SUDA2)."""

from __future__ import annotations

from ldiv_polars.errors import InvalidParameterError

DEFAULT_BUDGET = 200_000_000
"""Default work bound, in row operations (a few seconds on a laptop)."""


class BudgetExceededError(InvalidParameterError):
    """A risk computation on this table would exceed its work budget; the message gives the
    estimated cost, the figures it comes from and the budget."""


def check_budget(cost: int, budget: int, what: str, hint: str) -> None:
    """Raise :class:`BudgetExceededError` when ``cost > budget``."""
    if cost > budget:
        raise BudgetExceededError(f"{what} would cost ~{cost:,} row operations (budget "
                                  f"{budget:,}): {hint}")
