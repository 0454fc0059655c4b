"""Models as JSON specs: how the DuckDB engine's exact step (a Python UDF) rebuilds the model
object a macro evaluates, so that its near-threshold classes are decided by the very routine
the Polars engine uses (``Model.decide``).

A spec is a JSON object ``{"model": <Model.name>, <constructor keyword>: <value>, ...}``;
an exact threshold is written ``{"__fraction__": "1/3"}`` (a plain JSON number is read as the
decimal it was written as). The class is found by its ``name`` among the subclasses of
:class:`Model` (no switch over model classes).

>>> from ldiv_polars.models import TCloseness
>>> m = from_spec(spec_json({"model": "t_closeness", "t": 0.2, "distance": "equal"}))
>>> m.describe()
't_closeness(t=0.2, distance=equal)'
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import Model
from ldiv_polars.models.spec_codec import FRACTION, decode, exact_number, spec_json

__all__ = ["FRACTION", "exact_number", "from_spec", "model_class", "spec_json"]


def model_class(name: str) -> type[Model]:
    """The :class:`Model` subclass whose ``name`` is ``name`` (library classes first). Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` when none is."""
    seen: list[type[Model]] = []
    stack = list(Model.__subclasses__())
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    found = [c for c in seen if c.__dict__.get("name") == name]
    found.sort(key=lambda c: not c.__module__.startswith("ldiv_polars."))
    if not found:
        raise InvalidParameterError(f"no privacy model named {name!r}")
    return found[0]


@lru_cache(maxsize=64)
def from_spec(text: str) -> Model:
    """The model a spec describes (cached: a UDF call per class reuses it)."""
    spec = json.loads(text, object_hook=decode)
    if not isinstance(spec, dict) or "model" not in spec:
        raise InvalidParameterError(f"not a model spec: {text!r}")
    name = spec.pop("model")
    return model_class(name)(**spec)
