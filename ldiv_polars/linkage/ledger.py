"""Composition ledger for (l,delta)-diverse releases (Theorem 4.5).

If t releases come from Mech-(l,delta) with the *same broadcast classes*, the overall
post-linkage dataset is (l, t delta)-diverse. The proof is a union bound over the releases, so
releases with different parameters (l_i, delta_i) over the same classes compose to
(min_i l_i, sum_i delta_i): each release contains, with probability >= 1 - delta_i, the top
l_i >= min l values of every class, hence all of the top (min l). Releases over different
classes are outside the theorem: the ledger reports no guarantee for them (pure l-diversity can
collapse to 1 under linkage, Prop. 3.1).

>>> led = CompositionLedger()
>>> _ = led.record("hospital A 2024", l=10, delta=0.01, classes="plan-1")
>>> _ = led.record("hospital B 2024", l=10, delta=0.01, classes="plan-1")
>>> g = led.guarantee()
>>> g.l, round(g.delta, 6), g.applies
(10, 0.02, True)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.linkage.distribution import as_fraction


def classes_fingerprint(plan: Any) -> str:
    """A short digest of a plan's broadcast classes (QI order and class bounds), so that the
    ledger can tell whether two releases used the same classes."""
    if isinstance(plan, str):
        return plan
    bounds = plan.class_bounds()
    payload = json.dumps({"qi": list(plan.qi), "bounds": bounds, "n": plan.dist.n_qi},
                         default=str, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LedgerEntry:
    name: str
    l: int
    delta: float
    classes: str


@dataclass(frozen=True)
class Guarantee:
    """The composed guarantee: (l, delta) over ``releases`` linked releases; ``applies`` is False
    when Theorem 4.5 does not cover them (``reason`` says why); ``vacuous`` when delta >= 1."""

    l: int | None
    delta: float | None
    releases: int
    applies: bool
    reason: str = ""

    @property
    def vacuous(self) -> bool:
        """Whether the guarantee says nothing: its failure probability bound reached 1."""
        return self.delta is not None and self.delta >= 1

    def to_dict(self) -> dict[str, Any]:
        """The guarantee as a JSON-ready dict, with :attr:`vacuous`."""
        return {**asdict(self), "vacuous": self.vacuous}


@dataclass
class CompositionLedger:
    """Record each release's (l, delta) and the classes it used; :meth:`guarantee` composes."""

    entries: list[LedgerEntry] = field(default_factory=list)

    def record(self, name: str, *, l: int, delta: float, classes: Any = "default") -> LedgerEntry:
        """Add a release. ``classes`` is a plan (:class:`~.mechanism.MechanismPlan`, hashed) or
        any string naming the broadcast classes.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` on an empty name or one already
        recorded."""
        if not isinstance(name, str) or not name:
            raise InvalidParameterError("a ledger entry needs a non-empty name")
        if any(e.name == name for e in self.entries):
            raise InvalidParameterError(f"release {name!r} is already in the ledger")
        l = require_int_at_least("l", l, 1)
        delta = require_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        entry = LedgerEntry(name=name, l=l, delta=delta, classes=classes_fingerprint(classes))
        self.entries.append(entry)
        return entry

    def record_plan(self, name: str, plan: Any) -> LedgerEntry:
        """Add a release made under ``plan`` (its l, delta and classes)."""
        return self.record(name, l=plan.l, delta=plan.delta, classes=plan)

    def guarantee(self, names: list[str] | None = None) -> Guarantee:
        """(min l, sum delta) over the chosen releases (default: all) by Theorem 4.5.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` on a release not in the ledger."""
        chosen = self.entries if names is None else [e for e in self.entries if e.name in names]
        if names is not None:
            unknown = sorted(set(names) - {e.name for e in chosen})
            if unknown:
                raise InvalidParameterError(f"unknown release(s) {unknown}")
        if not chosen:
            return Guarantee(l=None, delta=None, releases=0, applies=False,
                             reason="no release recorded")
        delta = float(sum((as_fraction("delta", e.delta) for e in chosen), Fraction(0)))
        l = min(e.l for e in chosen)
        fingerprints = {e.classes for e in chosen}
        if len(fingerprints) > 1:
            return Guarantee(l=None, delta=None, releases=len(chosen), applies=False,
                             reason="releases use different classes; Theorem 4.5 needs the same "
                                    "broadcast classes (pure l-diversity can collapse, Prop. 3.1)")
        reason = "Theorem 4.5: union bound over the linked releases"
        if delta >= 1:
            reason += "; the summed delta is >= 1, so the guarantee is vacuous"
        return Guarantee(l=l, delta=delta, releases=len(chosen), applies=True, reason=reason)

    def releases_within(self, delta_budget: float) -> int:
        """How many more releases like the last one fit before the summed delta exceeds
        ``delta_budget``.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the ledger is empty."""
        budget = as_fraction("delta_budget", delta_budget)
        if not self.entries:
            raise InvalidParameterError("the ledger is empty")
        spent = sum((as_fraction("delta", e.delta) for e in self.entries), Fraction(0))
        step = as_fraction("delta", self.entries[-1].delta)
        left = budget - spent
        return max(0, int(left // step))

    def to_json(self) -> str:
        """The entries as a JSON list (read back by :meth:`from_json`)."""
        return json.dumps([asdict(e) for e in self.entries])

    @classmethod
    def from_json(cls, text: str) -> CompositionLedger:
        """The ledger recorded in ``text`` (the output of :meth:`to_json`), entries in
        order."""
        led = cls()
        for e in json.loads(text):
            led.record(e["name"], l=e["l"], delta=e["delta"], classes=e["classes"])
        return led
