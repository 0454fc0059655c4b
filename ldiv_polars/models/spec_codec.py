"""The JSON text of model specs (:mod:`ldiv_polars.models.spec`), knowing no model: an exact
threshold is written ``{"__fraction__": "p/q"}``, a plain JSON number is read as the decimal
it was written as.

>>> from fractions import Fraction
>>> spec_json({"model": "alpha_k", "alpha": Fraction(1, 3), "k": 2})
'{"alpha": {"__fraction__": "1/3"}, "k": 2, "model": "alpha_k"}'
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

FRACTION = "__fraction__"


def exact_number(x: Fraction | float | int) -> object:
    """A threshold for a spec: a Fraction that is not its own float's decimal stays exact."""
    if isinstance(x, Fraction):
        return x.numerator if x.denominator == 1 else {FRACTION: f"{x.numerator}/{x.denominator}"}
    return x


def spec_json(spec: dict[str, Any]) -> str:
    """The JSON text of a spec (fractions encoded, see :func:`exact_number`)."""
    return json.dumps({k: exact_number(v) for k, v in spec.items()}, sort_keys=True)


def decode(obj: dict[str, Any]) -> Any:
    """The ``json.loads`` object hook of specs: ``{FRACTION: "p/q"}`` back to a Fraction, any
    other object as it is."""
    if set(obj) == {FRACTION}:
        return Fraction(obj[FRACTION])
    return obj
